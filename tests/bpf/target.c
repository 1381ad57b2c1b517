/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The process the eBPF tests sample.  Built linked with the shared or the
 * static library (-DTARGET_LINKED), or loading it with dlopen() from the
 * path given with --lib.
 *
 *   target [--lib PATH] MODE [THREADS]
 *
 * MODE:
 *   storm    THREADS writers (default 3) publish records records.h derives
 *            from sequence numbers, as fast as they can, by every path the
 *            API has: update of a context, attach with `saved` (another
 *            context, or the attached one itself), update_all, update_all
 *            then the update_span_id and update_trace_flags fast paths
 *            republishing the same fields, detach with `saved` then the
 *            update of what was saved, save then update; and (storm, not
 *            late) one foreign writer more, which writes records.h's foreign records (records
 *            broken in every way a reader must tell apart) to the slot
 *            itself, never through the library
 *   values   THREADS threads (default 3) each publish one fixed record
 *            (records.h, values_record), a copy of a context they then
 *            destroy (even threads) or with update_all (odd ones), and spin
 *   hostile  one spinning thread per case: "edge" (a valid record that
 *            ends 2 bytes before an inaccessible page), "invalid" (valid
 *            0), "oversized" (attrs_data_size 700), "unmapped" (a pointer
 *            to an inaccessible page), "misaligned" (an odd pointer),
 *            "truncated" (the last attribute cut by a byte), "half-ids"
 *            (a trace id and no span id), "idle" (publishes nothing,
 *            never touches the library)
 *   late     like storm, but the library is loaded (--lib) only when the
 *            line "load" arrives on stdin; it prints "waiting" before (and
 *            exits at the end of stdin without loading it)
 *
 * Every mode registers the value keys and publishes a process context.  It
 * prints "ready TID:INDEX ..." once its threads run (storm: the library's
 * writers, then a line "foreign TID:INDEX ADDRESS", the foreign writer and
 * its inaccessible page), and stops them at the
 * line "stop" or at the end of stdin; then it prints "records TID:N ..."
 * (the last sequence number each storm writer published) and exits 0, or 1
 * if an API call failed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "otel_thread_ctx_process.h"
#include "otel_thread_ctx.h"
#include "records.h"

#define MAX_THREADS 16

/* The API through pointers: a dlopen()ed library has no link-time
 * symbols. */
static struct {
	int (*create)(otel_thread_ctx **);
	void (*destroy)(otel_thread_ctx *);
	int (*set_ids)(otel_thread_ctx *, const uint8_t[16], const uint8_t[8], uint8_t);
	int (*set_attrs)(otel_thread_ctx *, const struct otel_thread_ctx_attr *, size_t);
	int (*attach)(const otel_thread_ctx *, otel_thread_ctx *);
	int (*update)(const otel_thread_ctx *);
	int (*detach)(otel_thread_ctx *);
	int (*save)(otel_thread_ctx *);
	int (*update_span_id)(const uint8_t[8]);
	int (*update_trace_flags)(uint8_t);
	int (*update_all)(const uint8_t[16], const uint8_t[8], uint8_t,
			  const struct otel_thread_ctx_attr *, size_t);
	int (*key_register)(const char *, unsigned int *);
	int (*publish)(const struct otel_thread_ctx_process_attr *, size_t);
} api;

static void *handle;

struct thread {
	pthread_t t;
	unsigned int index;
	pid_t tid;
	uint64_t last; /* storm: last sequence number published (atomic) */
	int rc;
};

static struct thread threads[MAX_THREADS];
static unsigned int nthreads;
static pthread_barrier_t ready;
static int stopping; /* atomic */
static int failed;   /* atomic */

static void die(const char *what)
{
	fprintf(stderr, "target: %s\n", what);
	exit(1);
}

static void *sym(const char *name)
{
	void *p = dlsym(handle, name);

	if (p == NULL)
		die(dlerror());
	return p;
}

static void load(const char *lib)
{
	if (lib != NULL) {
		handle = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
		if (handle == NULL)
			die(dlerror());
	} else {
		handle = RTLD_DEFAULT;
	}
#ifdef TARGET_LINKED
	if (lib == NULL) {
		api.create = otel_thread_ctx_create;
		api.destroy = otel_thread_ctx_destroy;
		api.set_ids = otel_thread_ctx_set_ids;
		api.set_attrs = otel_thread_ctx_set_attrs;
		api.attach = otel_thread_ctx_attach;
		api.update = otel_thread_ctx_update;
		api.detach = otel_thread_ctx_detach;
		api.save = otel_thread_ctx_save;
		api.update_span_id = otel_thread_ctx_update_span_id;
		api.update_trace_flags = otel_thread_ctx_update_trace_flags;
		api.update_all = otel_thread_ctx_update_all;
		api.key_register = otel_thread_ctx_key_register;
		api.publish = otel_thread_ctx_process_publish;
		return;
	}
#endif
	*(void **)&api.create = sym("otel_thread_ctx_create");
	*(void **)&api.destroy = sym("otel_thread_ctx_destroy");
	*(void **)&api.set_ids = sym("otel_thread_ctx_set_ids");
	*(void **)&api.set_attrs = sym("otel_thread_ctx_set_attrs");
	*(void **)&api.attach = sym("otel_thread_ctx_attach");
	*(void **)&api.update = sym("otel_thread_ctx_update");
	*(void **)&api.detach = sym("otel_thread_ctx_detach");
	*(void **)&api.save = sym("otel_thread_ctx_save");
	*(void **)&api.update_span_id = sym("otel_thread_ctx_update_span_id");
	*(void **)&api.update_trace_flags = sym("otel_thread_ctx_update_trace_flags");
	*(void **)&api.update_all = sym("otel_thread_ctx_update_all");
	*(void **)&api.key_register = sym("otel_thread_ctx_key_register");
	*(void **)&api.publish = sym("otel_thread_ctx_process_publish");
}

/* The calling thread's slot, as the loader resolves the symbol. */
static const struct otel_thread_ctx_record **slot(void)
{
	return (const struct otel_thread_ctx_record **)sym("otel_thread_ctx_v1");
}

static int stopped(void)
{
	return __atomic_load_n(&stopping, __ATOMIC_RELAXED);
}

/* --- storm --------------------------------------------------------------- */

/* The attribute entries of record r, as the list the API takes. */
static size_t attrs_of(const struct otel_thread_ctx_record *r, struct otel_thread_ctx_attr attrs[4])
{
	size_t k = 0, at = 0;

	while (at < r->attrs_data_size && k < 4) {
		attrs[k].key = r->attrs_data[at];
		attrs[k].len = r->attrs_data[at + 1];
		attrs[k].value = r->attrs_data + at + 2;
		at += 2u + r->attrs_data[at + 1];
		k++;
	}
	return k;
}

/* Makes ctx hold record n, through the setters. */
static int put(otel_thread_ctx *ctx, uint64_t n)
{
	struct otel_thread_ctx_record r;
	struct otel_thread_ctx_attr attrs[4];
	size_t k;
	int rc;

	storm_record(n, &r);
	k = attrs_of(&r, attrs);
	rc = api.set_ids(ctx, r.trace_id, r.span_id, r.trace_flags);
	if (rc == 0)
		rc = api.set_attrs(ctx, attrs, k);
	return rc;
}

/* The calling thread publishes record n with update_all; with `fast`, it
 * then publishes the same span id and flags again through the fast paths,
 * which copy the other fields from the record they replace. */
static int publish_all(uint64_t n, int fast)
{
	struct otel_thread_ctx_record r;
	struct otel_thread_ctx_attr attrs[4];
	size_t k;
	int rc;

	storm_record(n, &r);
	k = attrs_of(&r, attrs);
	rc = api.update_all(r.trace_id, r.span_id, r.trace_flags, attrs, k);
	if (rc == 0 && fast)
		rc = api.update_span_id(r.span_id);
	if (rc == 0 && fast)
		rc = api.update_trace_flags(r.trace_flags);
	return rc;
}

static void *storm(void *arg)
{
	struct thread *t = arg;
	otel_thread_ctx *cur = NULL, *other = NULL, *saved = NULL;
	uint64_t n = storm_base(t->index) + 1;
	int rc;

	t->tid = (pid_t)syscall(SYS_gettid);
	rc = api.create(&cur);
	if (rc == 0)
		rc = api.create(&other);
	if (rc == 0)
		rc = api.create(&saved);
	if (rc == 0)
		rc = put(cur, n);
	if (rc == 0)
		rc = api.update(cur);
	__atomic_store_n(&t->last, n, __ATOMIC_RELAXED);
	pthread_barrier_wait(&ready);
	/* Sequence numbers only grow: no path puts an older record back. */
	while (rc == 0 && !stopped()) {
		n++;
		switch (n % 7) {
		case 0: /* a context's new record */
			rc = put(cur, n);
			if (rc == 0)
				rc = api.update(cur);
			break;
		case 1: /* another context, the record it replaces saved */
			rc = put(other, n);
			if (rc == 0)
				rc = api.attach(other, saved);
			break;
		case 2: /* everything in one call */
			rc = publish_all(n, 0);
			break;
		case 3: /* and the fast paths after it */
			rc = publish_all(n, 1);
			break;
		case 4: /* unpublish for a moment; what was saved, edited, back */
			rc = api.detach(saved);
			if (rc == 0)
				rc = put(saved, n);
			if (rc == 0)
				rc = api.update(saved);
			break;
		case 5: /* a context attached with itself as `saved` */
			rc = put(cur, n);
			if (rc == 0)
				rc = api.attach(cur, cur);
			break;
		case 6: /* save, then a context's new record */
			rc = api.save(saved);
			if (rc == 0)
				rc = put(other, n);
			if (rc == 0)
				rc = api.update(other);
			break;
		}
		/* Published (or failed) by now. */
		__atomic_store_n(&t->last, n, __ATOMIC_RELAXED);
	}
	if (rc == 0)
		rc = api.detach(NULL);
	api.destroy(cur);
	api.destroy(other);
	api.destroy(saved);
	t->rc = rc;
	if (rc != 0)
		__atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
	return NULL;
}

/* The foreign writer: records.h's foreign records, written to the slot
 * directly.  The reader reads a thread it interrupted, so a record is
 * whole to it when the compiler stores it before the pointer: each is
 * built in the buffer the slot does not point at. */
static void *unmapped_page;

static void *foreign(void *arg)
{
	struct thread *t = arg;
	static struct otel_thread_ctx_record buf[2];
	const struct otel_thread_ctx_record **s = slot();
	uint64_t n = storm_base(t->index);
	unsigned int b = 0;

	t->tid = (pid_t)syscall(SYS_gettid);
	__atomic_store_n(&t->last, n, __ATOMIC_RELAXED);
	pthread_barrier_wait(&ready);
	while (!stopped()) {
		const struct otel_thread_ctx_record *p = &buf[b];

		n++;
		foreign_record(n, &buf[b]);
		if (foreign_kind(n) == FOREIGN_MISALIGNED)
			p = (const struct otel_thread_ctx_record *)((const char *)p + 1);
		else if (foreign_kind(n) == FOREIGN_UNMAPPED)
			p = unmapped_page;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		__atomic_store_n(s, p, __ATOMIC_RELAXED);
		__atomic_store_n(&t->last, n, __ATOMIC_RELAXED);
		b ^= 1;
	}
	__atomic_store_n(s, NULL, __ATOMIC_RELAXED);
	return NULL;
}

/* --- values -------------------------------------------------------------- */

static void spin(void)
{
	while (!stopped())
		__asm__ volatile("" ::: "memory");
}

static void *values(void *arg)
{
	struct thread *t = arg;
	struct otel_thread_ctx_record r;
	struct otel_thread_ctx_attr attrs[VALUES_KEYS];
	otel_thread_ctx *ctx;
	size_t k = 0, at = 0;
	char name[16];

	t->tid = (pid_t)syscall(SYS_gettid);
	snprintf(name, sizeof(name), "values-%u", t->index);
	pthread_setname_np(pthread_self(), name);
	values_record(t->index, &r);
	while (at < r.attrs_data_size) {
		attrs[k].key = r.attrs_data[at];
		attrs[k].len = r.attrs_data[at + 1];
		attrs[k].value = r.attrs_data + at + 2;
		at += 2u + r.attrs_data[at + 1];
		k++;
	}
	if (t->index % 2 == 1) {
		t->rc = api.update_all(r.trace_id, r.span_id, r.trace_flags, attrs, k);
	} else {
		/* A copy of the context is published; the context goes. */
		t->rc = api.create(&ctx);
		if (t->rc == 0)
			t->rc = api.set_ids(ctx, r.trace_id, r.span_id, r.trace_flags);
		if (t->rc == 0)
			t->rc = api.set_attrs(ctx, attrs, k);
		if (t->rc == 0)
			t->rc = api.attach(ctx, NULL);
		api.destroy(ctx);
	}
	if (t->rc != 0)
		__atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
	pthread_barrier_wait(&ready);
	spin();
	if (t->rc == 0 && api.detach(NULL) != 0)
		__atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
	return NULL;
}

/* --- hostile ------------------------------------------------------------- */

static const char *const hostile_names[] = { "edge", "invalid", "oversized", "unmapped",
					      "misaligned", "truncated", "half-ids", "idle" };
#define HOSTILE_COUNT 8

/* Storage for the broken records, aligned. */
static struct otel_thread_ctx_record hostile_recs[HOSTILE_COUNT][2];

static const struct otel_thread_ctx_record *hostile_record(unsigned int kind)
{
	struct otel_thread_ctx_record *r = &hostile_recs[kind][0];
	long page = sysconf(_SC_PAGESIZE);
	char *pages;

	values_record(0, r);
	switch (kind) {
	case 0: { /* edge: 28 + 10 bytes, ending where an inaccessible page starts */
		size_t size = 28 + 10;
		struct otel_thread_ctx_record *e;

		pages = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (pages == MAP_FAILED || mprotect(pages + page, (size_t)page, PROT_NONE) != 0)
			die("mmap");
		e = (struct otel_thread_ctx_record *)(pages + page - size);
		memcpy(e, r, 28);
		e->attrs_data_size = 10;
		e->attrs_data[0] = 0;
		e->attrs_data[1] = 8;
		memcpy(e->attrs_data + 2, "edgecase", 8);
		return e;
	}
	case 1:
		r->valid = 0;
		return r;
	case 2:
		r->attrs_data_size = 700;
		return r;
	case 3:
		pages = mmap(NULL, (size_t)page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (pages == MAP_FAILED)
			die("mmap");
		return (const struct otel_thread_ctx_record *)pages;
	case 4:
		return (const struct otel_thread_ctx_record *)((const char *)r + 1);
	case 5: /* the last entry cut by a byte */
		r->attrs_data_size--;
		return r;
	case 6: /* a trace id, and no span id */
		memset(r->span_id, 0, sizeof(r->span_id));
		return r;
	}
	return NULL;
}

static void *hostile(void *arg)
{
	struct thread *t = arg;

	t->tid = (pid_t)syscall(SYS_gettid);
	pthread_setname_np(pthread_self(), hostile_names[t->index]);
	if (t->index != HOSTILE_COUNT - 1)
		__atomic_store_n(slot(), hostile_record(t->index), __ATOMIC_RELAXED);
	pthread_barrier_wait(&ready);
	spin();
	if (t->index != HOSTILE_COUNT - 1)
		__atomic_store_n(slot(), NULL, __ATOMIC_RELAXED);
	return NULL;
}

/* --- main ---------------------------------------------------------------- */

static int next_command(char *buf, size_t len)
{
	if (fgets(buf, (int)len, stdin) == NULL)
		return 0;
	buf[strcspn(buf, "\n")] = '\0';
	return 1;
}

int main(int argc, char **argv)
{
	const char *lib = NULL, *mode;
	void *(*fn)(void *) = storm;
	unsigned int nforeign = 0;
	char cmd[64];
	int a = 1;

	if (argc > 2 && strcmp(argv[1], "--lib") == 0) {
		lib = argv[2];
		a = 3;
	}
	if (a >= argc)
		die("usage: target [--lib PATH] storm|values|hostile|late [THREADS]");
	mode = argv[a];
	nthreads = a + 1 < argc ? (unsigned int)atoi(argv[a + 1]) : 3;
	if (strcmp(mode, "hostile") == 0)
		nthreads = HOSTILE_COUNT, fn = hostile;
	else if (strcmp(mode, "values") == 0)
		fn = values;
	else if (strcmp(mode, "late") == 0) {
		if (lib == NULL)
			die("late needs --lib");
		printf("waiting\n");
		fflush(stdout);
		if (!next_command(cmd, sizeof(cmd)))
			return 0; /* never asked to load it */
		if (strcmp(cmd, "load") != 0)
			die("expected the line \"load\"");
	} else if (strcmp(mode, "storm") != 0)
		die("unknown mode");
	if (nthreads == 0 || nthreads >= MAX_THREADS)
		die("bad thread count");
	if (strcmp(mode, "storm") == 0) {
		/* One foreign writer after the library's writers. */
		unmapped_page = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_NONE,
				     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (unmapped_page == MAP_FAILED)
			die("mmap");
		nforeign = 1;
	}
	load(lib);
	for (unsigned int k = 0; k < VALUES_KEYS; k++) {
		unsigned int idx;

		if (api.key_register(values_key_name(k), &idx) != 0 || idx != k)
			die("key registration failed");
	}
	if (api.publish(NULL, 0) != 0)
		die("process context publication failed");
	pthread_barrier_init(&ready, NULL, nthreads + nforeign + 1);
	for (unsigned int i = 0; i < nthreads + nforeign; i++) {
		threads[i].index = i;
		if (pthread_create(&threads[i].t, NULL, i < nthreads ? fn : foreign, &threads[i]) != 0)
			die("pthread_create");
	}
	pthread_barrier_wait(&ready);
	printf("ready");
	for (unsigned int i = 0; i < nthreads; i++)
		printf(" %d:%u", (int)threads[i].tid, threads[i].index);
	printf("\n");
	if (nforeign != 0)
		printf("foreign %d:%u %p\n", (int)threads[nthreads].tid, threads[nthreads].index,
		       unmapped_page);
	fflush(stdout);
	nthreads += nforeign;
	while (next_command(cmd, sizeof(cmd)) && strcmp(cmd, "stop") != 0)
		;
	__atomic_store_n(&stopping, 1, __ATOMIC_RELAXED);
	for (unsigned int i = 0; i < nthreads; i++)
		pthread_join(threads[i].t, NULL);
	printf("records");
	for (unsigned int i = 0; i < nthreads; i++)
		printf(" %d:%llu", (int)threads[i].tid,
		       (unsigned long long)__atomic_load_n(&threads[i].last, __ATOMIC_RELAXED));
	printf("\n");
	fflush(stdout);
	if (__atomic_load_n(&failed, __ATOMIC_RELAXED)) {
		for (unsigned int i = 0; i < nthreads; i++)
			if (threads[i].rc != 0)
				fprintf(stderr, "target: thread %u: API error %d\n", i, threads[i].rc);
		return 1;
	}
	return 0;
}
