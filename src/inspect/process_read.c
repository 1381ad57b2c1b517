/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The reader side of the process context: finding the OTEL_CTX mapping of a
 * process and copying it by the reading protocol; the payload is decoded
 * by the format layer (src/format/process_decode.c).
 * Every byte read from the mapping or the payload is treated as hostile.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "inspect.h"
#include "remote.h"

#define PROCESS_HEADER_SIZE sizeof(struct otel_thread_ctx_process_header)
#define PUBLISHED_AT_OFFSET offsetof(struct otel_thread_ctx_process_header, monotonic_published_at_ns)

OTEL_EXPORT int otel_thread_ctx_inspect_process_decode(const void *payload, size_t size,
					struct otel_thread_ctx_inspect_process_snapshot **out)
{
	return otel__process_decode(payload, size, out);
}

OTEL_EXPORT void otel_thread_ctx_inspect_process_snapshot_free(struct otel_thread_ctx_inspect_process_snapshot *snap)
{
	otel__process_snapshot_free(snap);
}

/* --- Finding the mapping ---------------------------------------------------- */

void otel__inspect_process_candidate(struct otel__process_candidates *c,
				     const struct otel__maps_entry *e)
{
	static const char *const prefixes[] = {
		("[anon_shmem:" OTEL_THREAD_CTX_PROCESS_MAPPING_NAME "]"),
		("[anon:" OTEL_THREAD_CTX_PROCESS_MAPPING_NAME "]"),
		("/memfd:" OTEL_THREAD_CTX_PROCESS_MAPPING_NAME),
	};

	if (e->perms[0] != 'r' || e->end - e->start < PROCESS_HEADER_SIZE ||
	    c->n == OTEL__PROCESS_CANDIDATES_MAX)
		return;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		if (strncmp(e->name, prefixes[i], strlen(prefixes[i])) == 0) {
			c->c[c->n].start = e->start;
			c->c[c->n++].end = e->end;
			return;
		}
	}
}

static int add_candidate(const struct otel__maps_entry *e, void *arg)
{
	otel__inspect_process_candidate(arg, e);
	return 0;
}

/* --- Copying ---------------------------------------------------------------- */

/* Gives the publisher time to finish an update. */
static void back_off(unsigned int attempt)
{
	if (attempt < 8) {
		sched_yield();
	} else {
		struct timespec ts = { 0, 50000 };

		nanosleep(&ts, NULL);
	}
}

static void fill_header_fields(struct otel_thread_ctx_inspect_process_snapshot *snap, uint64_t mapping,
			       const struct otel_thread_ctx_process_header *h, unsigned int retries)
{
	snap->mapping_address = mapping;
	snap->payload_address = h->payload;
	snap->monotonic_published_at_ns = h->monotonic_published_at_ns;
	snap->version = h->version;
	snap->retries = retries;
}

static int check_header(const struct otel_thread_ctx_process_header *h)
{
	if (memcmp(h->signature, OTEL_THREAD_CTX_PROCESS_SIGNATURE, sizeof(h->signature)) != 0 ||
	    h->version != OTEL_THREAD_CTX_PROCESS_VERSION)
		return OTEL_THREAD_CTX_EFORMAT;
	return OTEL_THREAD_CTX_OK;
}

static bool payload_plausible(const struct otel_thread_ctx_process_header *h)
{
	return h->payload_size != 0 && h->payload_size <= OTEL_THREAD_CTX_PROCESS_PAYLOAD_MAX &&
	       h->payload != 0;
}

/*
 * The writer's publisher, if this process has one: weak references, so that
 * this library does not need libotel-thread-ctx (no NEEDED entry, none of
 * its code runs in a profiler that only reads), yet finds the publisher of
 * a process that has loaded it globally or linked it in.
 */
extern int otel_thread_ctx_process_query(struct otel_thread_ctx_process_info *info)
	__attribute__((weak));
extern int otel_thread_ctx_process_copy(struct otel_thread_ctx_process_header *header,
					void **payload) __attribute__((weak));

/* The copy the publisher of this process makes under its lock, when
 * process_vm_readv() is refused: only of the mapping it publishes, and
 * only when that publisher is this project's. */
static int read_own(uint64_t mapping, struct otel_thread_ctx_inspect_process_snapshot **out)
{
	struct otel_thread_ctx_process_info info;
	struct otel_thread_ctx_process_header h;
	void *copy = NULL;
	int err;

	if (otel_thread_ctx_process_query == NULL || otel_thread_ctx_process_copy == NULL)
		return OTEL_THREAD_CTX_EPERM; /* another publisher's mapping */
	if (otel_thread_ctx_process_query(&info) != OTEL_THREAD_CTX_OK || !info.published ||
	    (uint64_t)(uintptr_t)info.mapping != mapping)
		return OTEL_THREAD_CTX_EPERM; /* another publisher's mapping */
	err = otel_thread_ctx_process_copy(&h, &copy);
	if (err == OTEL_THREAD_CTX_ENOTPUBLISHED)
		return OTEL_THREAD_CTX_ENOENT; /* unpublished meanwhile */
	if (err)
		return err;
	err = check_header(&h);
	if (err == OTEL_THREAD_CTX_OK && !payload_plausible(&h))
		err = OTEL_THREAD_CTX_EFORMAT;
	if (err == OTEL_THREAD_CTX_OK)
		err = otel__process_decode(copy, h.payload_size, out);
	if (err == OTEL_THREAD_CTX_OK)
		fill_header_fields(*out, mapping, &h, 0);
	free(copy);
	return err;
}

/*
 * The reading protocol on one mapping.  The timestamp is read on its own
 * first: the header fields are read after it, never before, so a header
 * with a timestamp that is still the same at the end was complete before
 * the first read (reading the 32 bytes at once would not guarantee that:
 * payload_size lies before the timestamp).
 */
static int read_candidate(pid_t pid, bool self, const struct otel__process_candidate *c,
			  unsigned int attempts,
			  struct otel_thread_ctx_inspect_process_snapshot **out)
{
	struct otel_thread_ctx_process_header h;
	uint8_t *buf = NULL;
	size_t buf_cap = 0;
	unsigned int retries = 0;
	int err = OTEL_THREAD_CTX_EAGAIN;

	for (unsigned int attempt = 0; attempt < attempts; attempt++) {
		uint64_t before, after;
		int e, payload_error;

		if (attempt > 0) {
			retries++;
			back_off(attempt);
		}
		e = otel__remote_read(pid, c->start + PUBLISHED_AT_OFFSET, &before, sizeof(before));
		if (e != 0 && self && (e == -EPERM || e == -ENOSYS)) {
			free(buf);
			return read_own(c->start, out);
		}
		if (e != 0) {
			/* EFAULT: the mapping went away (unpublished). */
			err = e == -EFAULT ? OTEL_THREAD_CTX_ENOENT : otel__remote_error(e);
			break;
		}
		if (before == 0) {
			err = OTEL_THREAD_CTX_EAGAIN; /* being changed */
			continue;
		}
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		e = otel__remote_read(pid, c->start, &h, sizeof(h));
		if (e != 0) {
			err = e == -EFAULT ? OTEL_THREAD_CTX_ENOENT : otel__remote_error(e);
			break;
		}
		err = check_header(&h);
		if (err)
			break;
		if (h.monotonic_published_at_ns != before) {
			err = OTEL_THREAD_CTX_EAGAIN;
			continue;
		}
		payload_error = 0;
		if (payload_plausible(&h)) {
			if (h.payload_size > buf_cap) {
				uint8_t *bigger = realloc(buf, h.payload_size);

				if (bigger == NULL) {
					err = OTEL_THREAD_CTX_ENOMEM;
					break;
				}
				buf = bigger;
				buf_cap = h.payload_size;
			}
			payload_error = otel__remote_read(pid, h.payload, buf, h.payload_size);
		}
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		e = otel__remote_read(pid, c->start + PUBLISHED_AT_OFFSET, &after, sizeof(after));
		if (e != 0) {
			err = e == -EFAULT ? OTEL_THREAD_CTX_ENOENT : otel__remote_error(e);
			break;
		}
		if (after != before) {
			err = OTEL_THREAD_CTX_EAGAIN; /* torn: changed during the copy */
			continue;
		}
		/* A stable header: what it says is what the process publishes. */
		if (!payload_plausible(&h)) {
			err = OTEL_THREAD_CTX_EFORMAT;
			break;
		}
		if (payload_error != 0) {
			err = otel__remote_error(payload_error);
			break;
		}
		err = otel_thread_ctx_inspect_process_decode(buf, h.payload_size, out);
		if (err == OTEL_THREAD_CTX_OK)
			fill_header_fields(*out, c->start, &h, retries);
		break;
	}
	free(buf);
	return err;
}

/* The target of a read: 0 and the caller's own PID mean this process.
 * False for a negative PID. */
static bool resolve_target(pid_t *pid, bool *self)
{
	if (*pid < 0)
		return false;
	*self = *pid == 0 || *pid == getpid();
	if (*self)
		*pid = getpid();
	else
		*pid = otel__remote_memory_task(*pid);
	return true;
}

OTEL_EXPORT int otel_thread_ctx_inspect_process_read_at(pid_t pid, uint64_t mapping, unsigned int attempts,
					 struct otel_thread_ctx_inspect_process_snapshot **out)
{
	struct otel__process_candidate c = { mapping, mapping + PROCESS_HEADER_SIZE };
	bool self;

	if (out == NULL)
		return OTEL_THREAD_CTX_ENULL;
	if (!resolve_target(&pid, &self))
		return OTEL_THREAD_CTX_ESRCH;
	if (mapping == 0 || mapping > UINT64_MAX - PROCESS_HEADER_SIZE)
		return OTEL_THREAD_CTX_ENOENT;
	return read_candidate(pid, self, &c, attempts ? attempts : OTEL_THREAD_CTX_INSPECT_PROCESS_READ_ATTEMPTS,
			      out);
}

/* Reads the first candidate that holds a process context. */
static int read_candidates(pid_t pid, bool self, const struct otel__process_candidates *c,
			   unsigned int attempts,
			   struct otel_thread_ctx_inspect_process_snapshot **out)
{
	int err = OTEL_THREAD_CTX_ENOENT;

	for (size_t i = 0; i < c->n; i++) {
		err = read_candidate(pid, self, &c->c[i], attempts, out);
		/* EPERM may hold for one mapping only (another publisher's, in
		 * this process, when the direct copy is all there is). */
		if (err == OTEL_THREAD_CTX_OK || err == OTEL_THREAD_CTX_ESRCH ||
		    err == OTEL_THREAD_CTX_ENOMEM)
			break;
	}
	return err;
}

int otel__inspect_process_read_candidates(pid_t pid, const struct otel__process_candidates *c,
					  struct otel_thread_ctx_inspect_process_snapshot **out)
{
	bool self;

	if (!resolve_target(&pid, &self))
		return OTEL_THREAD_CTX_ESRCH;
	return read_candidates(pid, self, c, OTEL_THREAD_CTX_INSPECT_PROCESS_READ_ATTEMPTS, out);
}

OTEL_EXPORT int otel_thread_ctx_inspect_process_read(pid_t pid, unsigned int attempts,
				      struct otel_thread_ctx_inspect_process_snapshot **out)
{
	struct otel__process_candidates c = { 0 };
	bool self;
	int err;

	if (out == NULL)
		return OTEL_THREAD_CTX_ENULL;
	if (!resolve_target(&pid, &self))
		return OTEL_THREAD_CTX_ESRCH;
	err = otel__remote_maps(self ? 0 : pid, add_candidate, &c);
	if (err)
		return err;
	return read_candidates(pid, self, &c,
			       attempts ? attempts : OTEL_THREAD_CTX_INSPECT_PROCESS_READ_ATTEMPTS, out);
}
