/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The key registry under concurrency, while the process context is
 * published.  Registrar threads register names that succeed and names that
 * are refused (empty, over 255 bytes, invalid UTF-8; long names until the
 * key map would make the payload exceed its bound, E2BIG; then short ones
 * until the 256th, EKEYS), while reader threads read
 * otel_thread_ctx_key_count() and the published key map (read from the
 * OTEL_CTX mapping by the format's protocol, without the library's lock,
 * and decoded here, by hand):
 *
 * - the count never goes down;
 * - it never runs ahead of the published map: every index below a count
 *   read before the copy is in the map, with the registry's name;
 * - the map is never more than one name ahead of a count read after it
 *   (the name being registered);
 * - a refused name leaves nothing behind: it is not found, and is in no
 *   map, during the run or after it.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "otel_thread_ctx.h"
#include "otel_thread_ctx_process.h"

#define REGISTRARS 3
#define READERS 2

static atomic_int failures;
static atomic_bool done;
static atomic_int saw_e2big; /* registrars refused with E2BIG */

#define CHECK(cond, ...)                                                         \
	do {                                                                     \
		if (!(cond)) {                                                   \
			fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                            \
			fputc('\n', stderr);                                     \
			if (atomic_fetch_add(&failures, 1) > 50)                 \
				exit(1);                                         \
		}                                                                \
	} while (0)

/* --- a minimal protobuf reader ------------------------------------------ */

struct pb {
	const uint8_t *p, *end;
};

static bool varint(struct pb *b, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 64 && b->p < b->end; shift += 7) {
		uint8_t c = *b->p++;

		*v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return true;
	}
	return false;
}

/* The next field: its number, and for LEN fields its bytes.  false at the
 * end or on a malformed message. */
static bool field(struct pb *b, unsigned *num, struct pb *len)
{
	uint64_t tag, v;

	if (b->p >= b->end || !varint(b, &tag))
		return false;
	*num = (unsigned)(tag >> 3);
	len->p = len->end = NULL;
	switch (tag & 7) {
	case 0:
		return varint(b, &v);
	case 1:
		if (b->end - b->p < 8)
			return false;
		b->p += 8;
		return true;
	case 5:
		if (b->end - b->p < 4)
			return false;
		b->p += 4;
		return true;
	case 2:
		if (!varint(b, &v) || v > (uint64_t)(b->end - b->p))
			return false;
		len->p = b->p;
		len->end = b->p + v;
		b->p += v;
		return true;
	default:
		return false;
	}
}

struct keymap {
	unsigned n;
	const uint8_t *name[300];
	size_t len[300];
};

/* ProcessContext.attributes (2) -> KeyValue { key (1), value (2) } ->
 * AnyValue.array_value (5) -> ArrayValue.values (1) -> AnyValue.string_value (1). */
static bool decode_key_map(const uint8_t *payload, size_t size, struct keymap *m)
{
	struct pb msg = {payload, payload + size}, f;
	unsigned num;
	static const char want[] = "threadlocal.attribute_key_map";

	m->n = 0;
	while (field(&msg, &num, &f)) {
		struct pb kv = f, g, key = {0}, value = {0};

		if (num != 2 || f.p == NULL)
			continue;
		while (field(&kv, &num, &g)) {
			if (num == 1)
				key = g;
			else if (num == 2)
				value = g;
		}
		if (key.p == NULL || (size_t)(key.end - key.p) != sizeof(want) - 1 ||
		    memcmp(key.p, want, sizeof(want) - 1) != 0)
			continue;
		while (value.p != NULL && field(&value, &num, &g)) {
			struct pb arr = g, h;

			if (num != 5 || g.p == NULL)
				continue;
			while (field(&arr, &num, &h)) {
				struct pb any = h, s;

				if (num != 1 || h.p == NULL)
					continue;
				while (field(&any, &num, &s)) {
					if (num == 1 && s.p != NULL && m->n < 300) {
						m->name[m->n] = s.p;
						m->len[m->n] = (size_t)(s.end - s.p);
						m->n++;
					}
				}
			}
		}
		return true;
	}
	return false;
}

/* --- names ------------------------------------------------------------- */

/* Refused names, kept to check that they left nothing behind. */
static char refused[4096][300];
static atomic_int refused_n;
/* Set (release) once refused[i] is written: a reader looks at no other. */
static atomic_int refused_ready[4096];

static void note_refused(const char *name)
{
	int i = atomic_fetch_add(&refused_n, 1);

	if (i < 4096) {
		size_t len = strnlen(name, sizeof(refused[i]) - 1);

		memcpy(refused[i], name, len);
		refused[i][len] = '\0';
		atomic_store_explicit(&refused_ready[i], 1, memory_order_release);
	}
}

static bool in_map(const struct keymap *m, const char *name)
{
	size_t len = strlen(name);

	for (unsigned i = 0; i < m->n; i++)
		if (m->len[i] == len && memcmp(m->name[i], name, len) == 0)
			return true;
	return false;
}

/* A name of `len` bytes: tag, thread, number, then filler. */
static void fill_name(char *name, size_t len, char tag, int id, unsigned i)
{
	char head[32];
	int n = snprintf(head, sizeof(head), "%c%d.%u.", tag, id, i);

	memset(name, 'a' + id, len);
	memcpy(name, head, (size_t)n);
	name[len] = '\0';
}

static void *registrar(void *arg)
{
	int id = (int)(intptr_t)arg;
	char name[300];
	unsigned idx;
	int rc;
	bool big = false, full = false;

	for (unsigned i = 0; !full && i < 1000; i++) {
		/* A refused name of each kind, every few names. */
		if (i % 4 == 0) {
			CHECK(otel_thread_ctx_key_register("", &idx) == OTEL_THREAD_CTX_ENAME, "empty");
			fill_name(name, 256, 'L', id, i);
			CHECK(otel_thread_ctx_key_register(name, &idx) == OTEL_THREAD_CTX_ENAME,
			      "256 bytes");
			note_refused(name);
			snprintf(name, sizeof(name), "bad%d.%u\xc3", id, i);
			CHECK(otel_thread_ctx_key_register(name, &idx) == OTEL_THREAD_CTX_ENAME,
			      "invalid UTF-8");
			note_refused(name);
		}
		if (!big) {
			/* 255 bytes: the payload's bound is reached before 256 names. */
			fill_name(name, 255, 'r', id, i);
		} else {
			snprintf(name, sizeof(name), "s%d.%u", id, i);
		}
		rc = otel_thread_ctx_key_register(name, &idx);
		if (rc == OTEL_THREAD_CTX_OK) {
			const char *n = otel_thread_ctx_key_name(idx);

			CHECK(n != NULL && strcmp(n, name) == 0, "index %u has another name", idx);
			CHECK(idx < otel_thread_ctx_key_count(), "index %u not counted", idx);
		} else if (rc == OTEL_THREAD_CTX_E2BIG && !big) {
			note_refused(name);
			big = true;
		} else if (rc == OTEL_THREAD_CTX_EKEYS) {
			note_refused(name);
			full = true;
		} else {
			CHECK(0, "%s refused with %d", name, rc);
		}
		if (rc != OTEL_THREAD_CTX_OK)
			CHECK(otel_thread_ctx_key_find(name, &idx) == OTEL_THREAD_CTX_EUNKNOWNKEY,
			      "a refused name is found");
	}
	CHECK(full, "registrar %d never reached the 256 names", id);
	if (big)
		atomic_fetch_add(&saw_e2big, 1);
	return NULL;
}

static void check_map_against(unsigned before, const struct keymap *m, unsigned after)
{
	CHECK(before <= m->n, "count %u runs ahead of the published map (%u names)", before, m->n);
	CHECK(m->n <= after + 1, "the map (%u names) is more than one ahead of the count %u",
	      m->n, after);
	for (unsigned i = 0; i < before && i < m->n; i++) {
		const char *n = otel_thread_ctx_key_name(i);

		CHECK(n != NULL && strlen(n) == m->len[i] && memcmp(n, m->name[i], m->len[i]) == 0,
		      "index %u: the map and the registry differ", i);
	}
}

static unsigned long reads, retries;
static const void *mapping;
static bool lockless = true;

/* Reads the published context as a profiler would, without the library's
 * lock (so that a reader sees the registry between its steps): the header,
 * timestamp 0 means retry, the payload, the timestamp again.  The payload
 * is read with process_vm_readv(), which tolerates memory freed meanwhile.
 * 1: a consistent copy; 0: retry. */
static int read_published(struct otel_thread_ctx_process_header *h, uint8_t *payload)
{
	struct iovec local = {h, sizeof(*h)};
	struct iovec remote = {(void *)mapping, sizeof(*h)};
	uint64_t ts;

	if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) != (ssize_t)sizeof(*h))
		return -1;
	if (h->monotonic_published_at_ns == 0 || h->payload_size > 65536)
		return 0;
	local = (struct iovec){payload, h->payload_size};
	remote = (struct iovec){(void *)(uintptr_t)h->payload, h->payload_size};
	if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) != (ssize_t)h->payload_size)
		return 0;
	ts = __atomic_load_n((const uint64_t *)((const char *)mapping + 16), __ATOMIC_ACQUIRE);
	return ts == h->monotonic_published_at_ns;
}

static void *reader(void *arg)
{
	unsigned last = 0;
	unsigned long mine = 0, again = 0;
	static __thread uint8_t buf[65536];

	(void)arg;
	while (!atomic_load(&done)) {
		struct otel_thread_ctx_process_header h;
		void *payload = NULL;
		struct keymap m;
		unsigned before = otel_thread_ctx_key_count(), after;
		int rc;

		if (lockless) {
			rc = read_published(&h, buf);
			if (rc == 0) {
				again++;
				continue;
			}
			CHECK(rc == 1, "process_vm_readv() of this process failed");
			payload = buf;
		} else {
			rc = otel_thread_ctx_process_copy(&h, &payload);
			CHECK(rc == OTEL_THREAD_CTX_OK, "copy: %d", rc);
			if (rc != OTEL_THREAD_CTX_OK)
				continue;
		}
		after = otel_thread_ctx_key_count();
		CHECK(before >= last && after >= before, "the count went down: %u, %u, %u", last,
		      before, after);
		last = after;
		CHECK(decode_key_map(payload, h.payload_size, &m), "no key map in the payload");
		check_map_against(before, &m, after);
		/* The refused names seen so far are in no map. */
		for (int i = 0, n = atomic_load(&refused_n); i < n && i < 4096; i += 7)
			if (atomic_load_explicit(&refused_ready[i], memory_order_acquire))
				CHECK(!in_map(&m, refused[i]), "a refused name is published: %.20s",
				      refused[i]);
		if (!lockless)
			free(payload);
		mine++;
	}
	__atomic_fetch_add(&reads, mine, __ATOMIC_RELAXED);
	__atomic_fetch_add(&retries, again, __ATOMIC_RELAXED);
	return NULL;
}

static int run(void)
{
	pthread_t r[READERS], w[REGISTRARS];
	struct otel_thread_ctx_process_header h;
	void *payload;
	struct keymap m;
	unsigned count;

	CHECK(otel_thread_ctx_process_publish(NULL, 0) == OTEL_THREAD_CTX_OK, "publish");
	{
		struct otel_thread_ctx_process_info info;
		struct otel_thread_ctx_process_header h;
		static uint8_t buf[65536];

		CHECK(otel_thread_ctx_process_query(&info) == OTEL_THREAD_CTX_OK && info.published,
		      "query");
		mapping = info.mapping;
		if (read_published(&h, buf) < 0) {
			/* qemu-user has no process_vm_readv(): the copy, under the
			 * lock, is all a reader has there. */
			lockless = false;
			printf("process_vm_readv() refused: maps read with "
			       "otel_thread_ctx_process_copy()\n");
		}
	}
	for (int i = 0; i < READERS; i++)
		pthread_create(&r[i], NULL, reader, NULL);
	for (int i = 0; i < REGISTRARS; i++)
		pthread_create(&w[i], NULL, registrar, (void *)(intptr_t)i);
	for (int i = 0; i < REGISTRARS; i++)
		pthread_join(w[i], NULL);
	atomic_store(&done, true);
	for (int i = 0; i < READERS; i++)
		pthread_join(r[i], NULL);

	/* After the run: the map is the registry, and holds no refused name. */
	CHECK(atomic_load(&saw_e2big) > 0, "no registration was refused for the payload's bound");
	count = otel_thread_ctx_key_count();
	CHECK(count == 256, "%u names registered, not 256", count);
	CHECK(otel_thread_ctx_process_copy(&h, &payload) == OTEL_THREAD_CTX_OK, "copy");
	CHECK(decode_key_map(payload, h.payload_size, &m), "no key map");
	CHECK(m.n == count, "the final map holds %u names, the registry %u", m.n, count);
	check_map_against(count, &m, count);
	for (int i = 0; i < atomic_load(&refused_n) && i < 4096; i++) {
		unsigned idx;

		CHECK(!in_map(&m, refused[i]), "a refused name is published");
		CHECK(otel_thread_ctx_key_find(refused[i], &idx) == OTEL_THREAD_CTX_EUNKNOWNKEY,
		      "a refused name is found");
	}
	free(payload);
	printf("256 names registered by %d threads, %d refused, %lu map reads (%lu retried)\n",
	       REGISTRARS, atomic_load(&refused_n), reads, retries);
	CHECK(otel_thread_ctx_process_unpublish() == OTEL_THREAD_CTX_OK, "unpublish");
	return atomic_load(&failures) != 0;
}

/* The registry never forgets a name: each round runs in a process of its
 * own. */
int main(void)
{
	for (int round = 0; round < 8; round++) {
		int status;
		pid_t pid;

		fflush(stdout);
		pid = fork();
		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0) {
			int rc = run();

			fflush(stdout);
			_exit(rc);
		}
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0) {
			printf("round %d failed (status %#x)\n", round, status);
			return 1;
		}
	}
	return 0;
}
