/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The library on musl, without Check (which Debian builds against glibc
 * only): attach, update, detach, save, the fast paths and what a reader
 * sees after each; errors that change nothing; thread exit while
 * publishing (the slot NULL after the library's cleanup, a later
 * destructor's publication refused with ETHREAD, and no heap block or
 * thread record left behind: only contexts
 * come from the heap, measured by the counting allocator); and the signal
 * storm of the Check suite (storm-run.h).  Built twice, against the shared
 * and the static library.
 *
 * usage: test-musl [api|thread-exit|storm]...   (no argument: all three)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "counting-malloc.h"
#include "minitest.h"
#include "otel_thread_ctx.h"
#include "storm-run.h"
#include "testenv.h"

#define CHECK_ERR(call, err)                                                   \
	do {                                                                   \
		int rc_ = (call);                                              \
		CHECK(rc_ == (err), "%s returned %d (%s), expected %s", #call, rc_, \
		      otel_thread_ctx_strerror(rc_), #err);                    \
	} while (0)

/* A reader's view: record n, complete, through the slot. */
static void check_published(uint64_t n)
{
	uint64_t seq = 0;
	enum storm_read r = storm_classify(otel_thread_ctx_v1, &seq);

	CHECK(r == STORM_READ_OK && seq == n,
	      "reader sees read kind %d (sequence %llu), expected the complete record %llu",
	      (int)r, (unsigned long long)seq, (unsigned long long)n);
}

/* Makes ctx hold record n of storm.h, through the setters. */
static int put(otel_thread_ctx *ctx, uint64_t n)
{
	struct otel_thread_ctx_record r;
	struct otel_thread_ctx_attr attrs[4];
	size_t k = 0, at = 0;
	int rc;

	storm_expected(n, &r);
	while (at < r.attrs_data_size && k < 4) {
		attrs[k].key = r.attrs_data[at];
		attrs[k].len = r.attrs_data[at + 1];
		attrs[k].value = r.attrs_data + at + 2;
		at += 2u + r.attrs_data[at + 1];
		k++;
	}
	rc = otel_thread_ctx_set_ids(ctx, r.trace_id, r.span_id, r.trace_flags);
	return rc != 0 ? rc : otel_thread_ctx_set_attrs(ctx, attrs, k);
}

/* ctx holds record n. */
static void check_holds(const otel_thread_ctx *ctx, uint64_t n, const char *what)
{
	struct otel_thread_ctx_record want, got;

	storm_expected(n, &want);
	CHECK_OK(otel_thread_ctx_get(ctx, &got));
	CHECK(memcmp(&got, &want, offsetof(struct otel_thread_ctx_record, attrs_data)) == 0 &&
	      memcmp(got.attrs_data, want.attrs_data, want.attrs_data_size) == 0,
	      "%s: the context does not hold record %llu", what, (unsigned long long)n);
}

/* --- api --- */

static void test_api(void)
{
	static const uint8_t trace[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
	static const uint8_t zero_span[8] = { 0 };
	struct otel_thread_ctx_options small_opts = OTEL_THREAD_CTX_OPTIONS_INIT;
	struct otel_thread_ctx_record r;
	char big[OTEL_THREAD_CTX_VALUE_MAX + 1];
	otel_thread_ctx *a, *b, *small;
	const struct otel_thread_ctx_record *was;

	CHECK(otel_thread_ctx_v1 == NULL, "a new thread publishes nothing");
	CHECK_OK(otel_thread_ctx_create(&a));
	CHECK_OK(otel_thread_ctx_create(&b));
	small_opts.flags = OTEL_THREAD_CTX_OPTION_IDS_ONLY;
	CHECK_OK(otel_thread_ctx_create_with(&small, &small_opts));

	/* attach publishes a copy of what the context holds. */
	CHECK_OK(put(a, 10));
	CHECK_OK(otel_thread_ctx_attach(a, NULL));
	check_published(10);
	CHECK((const void *)otel_thread_ctx_v1 != (const void *)a, "the slot leads to the context");

	/* Edits change the context only; update publishes them, moving the
	 * slot to the thread's other record. */
	was = otel_thread_ctx_v1;
	CHECK_OK(put(a, 11));
	check_published(10);
	CHECK_OK(otel_thread_ctx_update(a));
	check_published(11);
	CHECK(otel_thread_ctx_v1 != was, "update moves the slot to the other record");

	/* attach with saved: what was published comes back as a value. */
	CHECK_OK(put(b, 20));
	CHECK_OK(otel_thread_ctx_attach(b, a));
	check_published(20);
	check_holds(a, 11, "attach's saved");

	/* Bad input: an error, and nothing published or held changes. */
	memset(big, 'x', sizeof(big));
	CHECK_ERR(otel_thread_ctx_set_ids(b, trace, zero_span, 1), OTEL_THREAD_CTX_EIDS);
	CHECK_ERR(otel_thread_ctx_set_attr(b, 3, big, sizeof(big)), OTEL_THREAD_CTX_EVALUE);
	CHECK_ERR(otel_thread_ctx_set_attr(b, 256, "v", 1), OTEL_THREAD_CTX_EKEY);
	CHECK_ERR(otel_thread_ctx_set_attr(b, 3, "\xff", 1), OTEL_THREAD_CTX_EUTF8);
	CHECK_ERR(otel_thread_ctx_set_attr(NULL, 3, "v", 1), OTEL_THREAD_CTX_ENULL);
	CHECK_ERR(otel_thread_ctx_update_span_id(zero_span), OTEL_THREAD_CTX_EIDS);
	was = otel_thread_ctx_v1;
	/* A saved too small for what the thread publishes: ENOSPC. */
	CHECK_ERR(otel_thread_ctx_attach(a, small), OTEL_THREAD_CTX_ENOSPC);
	CHECK_ERR(otel_thread_ctx_detach(small), OTEL_THREAD_CTX_ENOSPC);
	CHECK(otel_thread_ctx_v1 == was, "a refused call moved the slot");
	check_published(20);
	check_holds(b, 20, "after the refusals");
	check_holds(a, 11, "after the refusals");

	/* The scope ends: what attach saved, back. */
	CHECK_OK(otel_thread_ctx_update(a));
	check_published(11);

	/* detach unpublishes, saving what was published; a saved "nothing
	 * published" unpublishes when attached. */
	CHECK_OK(otel_thread_ctx_detach(b));
	CHECK(otel_thread_ctx_v1 == NULL, "detach");
	check_holds(b, 11, "detach's saved");
	CHECK_ERR(otel_thread_ctx_update_span_id(trace), OTEL_THREAD_CTX_ENOCTX);
	CHECK_ERR(otel_thread_ctx_update_trace_flags(0), OTEL_THREAD_CTX_ENOCTX);
	CHECK_OK(otel_thread_ctx_save(a));
	CHECK_ERR(otel_thread_ctx_get(a, &r), OTEL_THREAD_CTX_ENOCTX);
	CHECK_OK(otel_thread_ctx_update(b));
	check_published(11);
	CHECK_OK(otel_thread_ctx_update(a));
	CHECK(otel_thread_ctx_v1 == NULL, "the update of \"nothing published\"");

	/* The fast paths: a request in one call, then its span and flags. */
	storm_expected(30, &r);
	{
		struct otel_thread_ctx_attr attrs[4];
		size_t k = 0, at = 0;

		while (at < r.attrs_data_size && k < 4) {
			attrs[k].key = r.attrs_data[at];
			attrs[k].len = r.attrs_data[at + 1];
			attrs[k].value = r.attrs_data + at + 2;
			at += 2u + r.attrs_data[at + 1];
			k++;
		}
		CHECK_OK(otel_thread_ctx_update_all(r.trace_id, r.span_id, r.trace_flags, attrs, k));
	}
	check_published(30);
	CHECK_OK(otel_thread_ctx_update_span_id(trace)); /* its first 8 bytes */
	CHECK(memcmp(otel_thread_ctx_v1->span_id, trace, 8) == 0 &&
	      memcmp(otel_thread_ctx_v1->trace_id, r.trace_id, 16) == 0 &&
	      otel_thread_ctx_v1->attrs_data_size == r.attrs_data_size,
	      "update_span_id changed more than the span id");
	CHECK_OK(otel_thread_ctx_update_span_id(r.span_id));
	CHECK_OK(otel_thread_ctx_update_trace_flags(r.trace_flags));
	check_published(30);

	/* Contexts destroyed while the thread publishes a copy. */
	otel_thread_ctx_destroy(a);
	otel_thread_ctx_destroy(b);
	otel_thread_ctx_destroy(small);
	check_published(30);
	CHECK_OK(otel_thread_ctx_detach(NULL));
	CHECK(otel_thread_ctx_v1 == NULL, "detach");
	printf("api: attach, update, detach, save, saved scopes, the fast paths and errors as "
	       "documented\n");
}

/* --- thread exit --- */

/* The executable segment holding the library's code: the library's own
 * with the shared library, the executable's with the static one (there the
 * test's code is counted too, and it allocates nothing). */
struct text_query {
	uintptr_t addr, lo, hi;
	const char *name;
};

static int text_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct text_query *q = arg;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && q->addr >= lo &&
		    q->addr < lo + ph->p_memsz) {
			q->lo = lo;
			q->hi = lo + ph->p_memsz;
			q->name = info->dlpi_name;
			return 1;
		}
	}
	return 0;
}

static void watch_library(void)
{
	struct text_query q = { 0, 0, 0, NULL };
	int (*fn)(otel_thread_ctx **) = otel_thread_ctx_create;

	memcpy(&q.addr, &fn, sizeof(q.addr));
	CHECK(dl_iterate_phdr(text_cb, &q) == 1, "no module holds otel_thread_ctx_create");
#ifdef LINKED_SHARED
	CHECK(q.name != NULL && strstr(q.name, "libotel-thread-ctx.so") != NULL,
	      "otel_thread_ctx_create is in %s, not in the library", q.name ? q.name : "?");
#endif
	counting_malloc_watch(q.lo, q.hi);
}

static const uint8_t trace_a[16] = { 0xa1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
static const uint8_t span_a[8] = { 0xb1, 2, 3, 4, 5, 6, 7, 8 };

static pthread_barrier_t published, counted;

static void *attach_lent(void *arg)
{
	CHECK_OK(otel_thread_ctx_attach(arg, NULL));
	return NULL;
}

/* The calling thread publishes a copy of a context it destroys at once. */
static int publish_new(void)
{
	otel_thread_ctx *ctx = NULL;
	int rc = otel_thread_ctx_create(&ctx);

	if (rc == 0)
		rc = otel_thread_ctx_set_ids(ctx, trace_a, span_a, 1);
	if (rc == 0)
		rc = otel_thread_ctx_set_attr(ctx, 3, "worker", 6);
	if (rc == 0)
		rc = otel_thread_ctx_attach(ctx, NULL);
	otel_thread_ctx_destroy(ctx);
	if (rc == 0 && (otel_thread_ctx_v1 == NULL ||
			memcmp(otel_thread_ctx_v1->trace_id, trace_a, 16) != 0))
		rc = -1;
	return rc;
}

static void *publish_and_exit(void *arg)
{
	CHECK_OK(publish_new());
	if (arg != NULL) {
		pthread_barrier_wait(&published);
		pthread_barrier_wait(&counted);
	}
	return NULL;
}

/* Keys made after the library's (its key is made when it is loaded), so
 * their destructors run after its cleanup. */
static pthread_key_t probe_key, late_key, last_key;
static unsigned long slot_not_null, late_publish_failed, late_not_cleaned;

static void probe(void *arg)
{
	(void)arg;
	if (otel_thread_ctx_v1 != NULL)
		__atomic_fetch_add(&slot_not_null, 1, __ATOMIC_RELAXED);
}

static void *publish_then_probe(void *arg)
{
	pthread_setspecific(probe_key, (void *)1);
	return publish_and_exit(arg);
}

/* A destructor that runs after the library's cleanup tries to publish
 * again: refused with ETHREAD (records taken then could stay behind), the
 * slot left NULL. */
static void late_publish(void *arg)
{
	(void)arg;
	if (publish_new() != OTEL_THREAD_CTX_ETHREAD || otel_thread_ctx_v1 != NULL)
		__atomic_fetch_add(&late_publish_failed, 1, __ATOMIC_RELAXED);
}

/* The last key: its destructor sets itself again once, so that it runs in
 * the next round of destructors too, after the library's second cleanup,
 * and checks the slot then. */
static void last_check(void *arg)
{
	if (arg == (void *)1) {
		pthread_setspecific(last_key, (void *)2);
		return;
	}
	if (otel_thread_ctx_v1 != NULL)
		__atomic_fetch_add(&late_not_cleaned, 1, __ATOMIC_RELAXED);
}

static void *publish_and_publish_late(void *arg)
{
	pthread_setspecific(late_key, (void *)1);
	pthread_setspecific(last_key, (void *)1);
	return publish_and_exit(arg);
}

static void run_threads(void *(*fn)(void *), unsigned long n)
{
	pthread_t t[8];

	for (unsigned long done = 0; done < n; done += 8) {
		unsigned k = n - done < 8 ? (unsigned)(n - done) : 8;

		for (unsigned i = 0; i < k; i++)
			CHECK(pthread_create(&t[i], NULL, fn, NULL) == 0, "pthread_create");
		for (unsigned i = 0; i < k; i++)
			CHECK(pthread_join(t[i], NULL) == 0, "pthread_join");
	}
}

/*
 * Publishing allocates nothing: every block the library allocated is a
 * context.  Counted exactly with the shared library only: with the static
 * one the watched code is the executable's, which holds the counting
 * allocator's own pthread_create() too (it allocates for each thread it
 * watches).
 */
#ifdef LINKED_SHARED
#define CHECK_ONLY_CONTEXTS(contexts)                                          \
	CHECK(counting_malloc_total() == (long)(contexts),                     \
	      "%ld blocks allocated by the library for %lu contexts: publishing " \
	      "allocates", counting_malloc_total(), (unsigned long)(contexts))
#else
#define CHECK_ONLY_CONTEXTS(contexts) ((void)(contexts))
#endif

static void test_thread_exit(void)
{
	unsigned long n = env_count("OTEL_TEST_THREADS", 4000), contexts;
	otel_thread_ctx *ctx = NULL;
	pthread_t t[8];
	long live;
	unsigned int in_use0, in_use, limit;

	CHECK(counting_malloc_mode() == COUNTING_MALLOC_BLOCKS, "the counting allocator is not in use");
	watch_library();

	/* 8 threads publish, their contexts destroyed: nothing of the
	 * library's is on the heap. */
	CHECK(pthread_barrier_init(&published, NULL, 9) == 0, "barrier");
	CHECK(pthread_barrier_init(&counted, NULL, 9) == 0, "barrier");
	for (int i = 0; i < 8; i++)
		CHECK(pthread_create(&t[i], NULL, publish_and_exit, (void *)1) == 0,
		      "pthread_create");
	pthread_barrier_wait(&published);
	live = counting_malloc_live();
	CHECK(live == 0 && counting_malloc_total() >= 8,
	      "%ld live blocks (of %ld) from the library while 8 threads publish and hold no "
	      "context", live, counting_malloc_total());
	pthread_barrier_wait(&counted);
	for (int i = 0; i < 8; i++)
		CHECK(pthread_join(t[i], NULL) == 0, "pthread_join");

	/* Thousands of them, each exiting while it publishes. */
	run_threads(publish_and_exit, n);
	contexts = n + 8;
	live = counting_malloc_live();
	printf("thread-exit: %lu threads exited while they published; library blocks: "
	       "%ld allocated, %ld live\n", n + 8, counting_malloc_total(), live);
	CHECK(live == 0, "%ld blocks of the library live after the threads exited", live);
	CHECK_ONLY_CONTEXTS(contexts);

	/* The slot is NULL after the library's cleanup. */
	CHECK(pthread_key_create(&probe_key, probe) == 0, "pthread_key_create");
	run_threads(publish_then_probe, 64);
	contexts += 64;
	CHECK(slot_not_null == 0, "after the library's cleanup %lu threads still published a "
	      "record", slot_not_null);

	/* Publishing again during thread exit is refused, and leaves nothing. */
	CHECK(pthread_key_create(&late_key, late_publish) == 0, "pthread_key_create");
	CHECK(pthread_key_create(&last_key, last_check) == 0, "pthread_key_create");
	CHECK_OK(otel_thread_ctx_thread_records(&in_use0, &limit));
	run_threads(publish_and_publish_late, n / 4);
	contexts += 2 * (n / 4);
	CHECK(late_publish_failed == 0, "%lu publications in a late destructor were not refused "
	      "with ETHREAD", late_publish_failed);
	CHECK_OK(otel_thread_ctx_thread_records(&in_use, &limit));
	CHECK(in_use == in_use0, "%u thread records in use after the threads exited, %u before",
	      in_use, in_use0);
	CHECK(late_not_cleaned == 0, "%lu threads that published again during their exit still "
	      "published after the library's next cleanup", late_not_cleaned);
	live = counting_malloc_live();
	CHECK(live == 0, "%ld blocks of the library live after the threads exited", live);
	CHECK_ONLY_CONTEXTS(contexts);

	/* A context outlives the thread that published a copy of it, and
	 * stays its holder's. */
	CHECK_OK(otel_thread_ctx_create(&ctx));
	CHECK_OK(otel_thread_ctx_set_ids(ctx, trace_a, span_a, 1));
	CHECK(pthread_create(&t[0], NULL, attach_lent, ctx) == 0, "pthread_create");
	CHECK(pthread_join(t[0], NULL) == 0, "pthread_join");
	CHECK(counting_malloc_live() == 1, "the context was freed by the thread that published it");
	CHECK_OK(otel_thread_ctx_attach(ctx, NULL));
	CHECK(memcmp(otel_thread_ctx_v1->trace_id, trace_a, 16) == 0, "the context, attached here");
	otel_thread_ctx_destroy(ctx);
	CHECK(otel_thread_ctx_v1 != NULL && counting_malloc_live() == 0,
	      "destroy of a context a copy of which is published");
	CHECK_OK(otel_thread_ctx_detach(NULL));
	printf("thread-exit: slot NULL after the library's cleanup, a late publication refused; "
	       "only contexts on the heap; a context outlives the threads that published it\n");
}

/* --- storm --- */

static struct storm storm;

static void *const *own_slot(void)
{
	return (void *const *)&otel_thread_ctx_v1;
}

static void test_storm(void)
{
	char why[300];

	CHECK(storm_run(&storm, env_count("OTEL_TEST_SIGNALS", 100000), 240) == 0, "%s",
	      storm.wrong_what);
	CHECK(!storm_failed(&storm, why, sizeof(why)), "%s", why);
}

int main(int argc, char **argv)
{
	int all = argc < 2;

	for (int i = 1; i < argc; i++)
		CHECK(strcmp(argv[i], "api") == 0 || strcmp(argv[i], "thread-exit") == 0 ||
		      strcmp(argv[i], "storm") == 0, "usage: %s [api|thread-exit|storm]...",
		      argv[0]);
	/* Freeing what a thread's slot points into fails from here on. */
	CHECK(counting_malloc_check_slots(own_slot) == 1, "the counting allocator is in use");
	for (int i = all ? 0 : 1; i < (all ? 1 : argc); i++) {
		if (all || strcmp(argv[i], "api") == 0)
			test_api();
		if (all || strcmp(argv[i], "thread-exit") == 0)
			test_thread_exit();
		if (all || strcmp(argv[i], "storm") == 0)
			test_storm();
	}
	return 0;
}
