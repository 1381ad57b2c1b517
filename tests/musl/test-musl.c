/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The library on musl, without Check (which Debian builds against glibc
 * only): attach, update and detach and what a reader sees after each; errors
 * that change nothing; thread exit with a context attached (no block left
 * behind, measured by the counting allocator, and the slot NULL before the
 * context is freed); and the signal storm of the Check suite (storm.h).
 * Built twice, against the shared and the static library.
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

/* --- api --- */

static void test_api(void)
{
	static const uint8_t trace[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
	static const uint8_t zero_span[8] = { 0 };
	char big[OTEL_THREAD_CTX_VALUE_MAX + 1];
	otel_thread_ctx *a, *b, *prev;
	const struct otel_thread_ctx_record *was;

	CHECK(otel_thread_ctx_v1 == NULL, "a new thread publishes nothing");
	CHECK_OK(otel_thread_ctx_create(&a));
	CHECK_OK(otel_thread_ctx_create(&b));

	/* update_attach publishes the draft at once. */
	CHECK_OK(storm_write_draft(a, 10));
	CHECK_OK(otel_thread_ctx_update_attach(a, &prev));
	CHECK(prev == NULL && otel_thread_ctx_current() == a, "update_attach");
	check_published(10);

	/* Edits are invisible until committed; update swaps the record. */
	was = otel_thread_ctx_v1;
	CHECK_OK(storm_write_draft(a, 11));
	check_published(10);
	CHECK_OK(otel_thread_ctx_update(a));
	check_published(11);
	CHECK(otel_thread_ctx_v1 != was, "update moves the slot to the other record");

	/* attach refuses a context with uncommitted edits, changing nothing. */
	CHECK_OK(storm_write_draft(b, 20));
	CHECK_ERR(otel_thread_ctx_attach(b, &prev), OTEL_THREAD_CTX_EPENDING);
	check_published(11);
	CHECK_OK(otel_thread_ctx_update(b));
	CHECK_OK(otel_thread_ctx_attach(b, &prev));
	CHECK(prev == a && otel_thread_ctx_current() == b, "attach hands back the old context");
	check_published(20);

	/* Bad input: an error, and nothing published or drafted changes. */
	memset(big, 'x', sizeof(big));
	CHECK_ERR(otel_thread_ctx_set_ids(b, trace, zero_span, 1), OTEL_THREAD_CTX_EIDS);
	CHECK_ERR(otel_thread_ctx_set_attr(b, 3, big, sizeof(big)), OTEL_THREAD_CTX_EVALUE);
	CHECK_ERR(otel_thread_ctx_set_attr(b, 256, "v", 1), OTEL_THREAD_CTX_EKEY);
	CHECK_ERR(otel_thread_ctx_set_attr(b, 3, "\xff", 1), OTEL_THREAD_CTX_EUTF8);
	CHECK_ERR(otel_thread_ctx_set_attr(NULL, 3, "v", 1), OTEL_THREAD_CTX_ENULL);
	CHECK_OK(otel_thread_ctx_update(b));
	check_published(20);

	/* invalidate: withdrawn (NULL), the record untouched; update shows it
	 * again. */
	was = otel_thread_ctx_v1;
	CHECK_OK(otel_thread_ctx_invalidate(b));
	CHECK(otel_thread_ctx_v1 == NULL && was->valid == 1, "invalidate");
	CHECK_OK(otel_thread_ctx_update(b));
	CHECK(otel_thread_ctx_v1 == was, "update after invalidate");
	check_published(20);

	/* detach unpublishes and hands the context back. */
	CHECK_OK(otel_thread_ctx_detach(&prev));
	CHECK(prev == b && otel_thread_ctx_v1 == NULL && otel_thread_ctx_current() == NULL,
	      "detach");
	CHECK_OK(otel_thread_ctx_detach(&prev));
	CHECK(prev == NULL, "detach of nothing");
	CHECK_OK(otel_thread_ctx_destroy(a));
	CHECK_OK(otel_thread_ctx_destroy(b));
	printf("api: attach, update, update_attach, detach, invalidate and errors as documented\n");
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

static pthread_barrier_t attached, counted;

static void *attach_lent(void *arg)
{
	otel_thread_ctx *prev;

	CHECK_OK(otel_thread_ctx_attach(arg, &prev));
	return NULL;
}

/* A context given to the thread (FREE_WITH_THREAD): freed when it exits. */
static int attach_new(void)
{
	struct otel_thread_ctx_options o = OTEL_THREAD_CTX_OPTIONS_INIT;
	otel_thread_ctx *ctx = NULL, *prev;
	int rc;

	o.flags = OTEL_THREAD_CTX_FREE_WITH_THREAD;
	rc = otel_thread_ctx_create_with(&ctx, &o);

	if (rc == 0)
		rc = otel_thread_ctx_set_ids(ctx, trace_a, span_a, 1);
	if (rc == 0)
		rc = otel_thread_ctx_set_attr(ctx, 3, "worker", 6);
	if (rc == 0)
		rc = otel_thread_ctx_update_attach(ctx, &prev);
	return rc;
}

static void *attach_and_exit(void *arg)
{
	CHECK_OK(attach_new());
	if (arg != NULL) {
		pthread_barrier_wait(&attached);
		pthread_barrier_wait(&counted);
	}
	return NULL;
}

/* Keys made after the library's (its key is made when it is loaded), so
 * their destructors run after its cleanup. */
static pthread_key_t probe_key, late_key;
static unsigned long slot_not_null, current_not_null, late_attach_failed;

static void probe(void *arg)
{
	(void)arg;
	if (otel_thread_ctx_v1 != NULL)
		__atomic_fetch_add(&slot_not_null, 1, __ATOMIC_RELAXED);
	if (otel_thread_ctx_current() != NULL)
		__atomic_fetch_add(&current_not_null, 1, __ATOMIC_RELAXED);
}

static void *attach_then_probe(void *arg)
{
	pthread_setspecific(probe_key, (void *)1);
	return attach_and_exit(arg);
}

/* A destructor that runs after the library's cleanup attaches again: the
 * library must register again and clean that up too. */
static void late_attach(void *arg)
{
	(void)arg;
	if (attach_new() != 0)
		__atomic_fetch_add(&late_attach_failed, 1, __ATOMIC_RELAXED);
}

static void *attach_and_reattach_late(void *arg)
{
	pthread_setspecific(late_key, (void *)1);
	return attach_and_exit(arg);
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

static void *detach_and_hand_over(void *arg)
{
	otel_thread_ctx **out = arg, *ctx = NULL, *prev;

	CHECK_OK(otel_thread_ctx_create(&ctx));
	CHECK_OK(otel_thread_ctx_set_ids(ctx, trace_a, span_a, 1));
	CHECK_OK(otel_thread_ctx_update_attach(ctx, &prev));
	CHECK_OK(otel_thread_ctx_detach(&prev));
	*out = ctx;
	return NULL;
}

static void test_thread_exit(void)
{
	unsigned long n = env_count("OTEL_TEST_THREADS", 4000);
	otel_thread_ctx *ctx = NULL, *prev;
	pthread_t t[8];
	long live;

	CHECK(counting_malloc_mode() == COUNTING_MALLOC_BLOCKS, "the counting allocator is not in use");
	watch_library();

	/* The counter sees the library's contexts: 8 threads hold one each. */
	CHECK(pthread_barrier_init(&attached, NULL, 9) == 0, "barrier");
	CHECK(pthread_barrier_init(&counted, NULL, 9) == 0, "barrier");
	for (int i = 0; i < 8; i++)
		CHECK(pthread_create(&t[i], NULL, attach_and_exit, (void *)1) == 0, "pthread_create");
	pthread_barrier_wait(&attached);
	live = counting_malloc_live();
	CHECK(live == 8, "%ld live blocks from the library while 8 threads hold a context", live);
	pthread_barrier_wait(&counted);
	for (int i = 0; i < 8; i++)
		CHECK(pthread_join(t[i], NULL) == 0, "pthread_join");
	CHECK(counting_malloc_live() == 0, "%ld blocks left by 8 exited threads",
	      counting_malloc_live());

	/* Thousands of them. */
	run_threads(attach_and_exit, n);
	live = counting_malloc_live();
	printf("thread-exit: %lu threads exited with a context attached; library blocks: "
	       "%ld allocated, %ld live\n", n + 8, counting_malloc_total(), live);
	CHECK(live == 0, "%ld contexts of exited threads were not freed", live);

	/* The slot is NULL before the context is freed. */
	CHECK(pthread_key_create(&probe_key, probe) == 0, "pthread_key_create");
	run_threads(attach_then_probe, 64);
	CHECK(slot_not_null == 0 && current_not_null == 0,
	      "after the library's cleanup %lu threads still published a record, %lu had a "
	      "context", slot_not_null, current_not_null);

	/* Attaching again during thread exit is cleaned up as well. */
	CHECK(pthread_key_create(&late_key, late_attach) == 0, "pthread_key_create");
	run_threads(attach_and_reattach_late, n / 4);
	CHECK(late_attach_failed == 0, "%lu attaches in a late destructor failed",
	      late_attach_failed);
	live = counting_malloc_live();
	CHECK(live == 0, "%ld contexts attached during thread exit were not freed", live);

	/* A context the holder lent to a thread outlives the thread, attached
	 * when it exits, until the holder destroys it. */
	CHECK_OK(otel_thread_ctx_create(&ctx));
	CHECK_OK(otel_thread_ctx_set_ids(ctx, trace_a, span_a, 1));
	CHECK_OK(otel_thread_ctx_update(ctx));
	CHECK(pthread_create(&t[0], NULL, attach_lent, ctx) == 0, "pthread_create");
	CHECK(pthread_join(t[0], NULL) == 0, "pthread_join");
	CHECK(counting_malloc_live() == 1, "the lent context was freed by its thread");
	CHECK_OK(otel_thread_ctx_attach(ctx, &prev));
	CHECK(prev == NULL && memcmp(otel_thread_ctx_v1->trace_id, trace_a, 16) == 0,
	      "the lent context, back");
	CHECK_OK(otel_thread_ctx_destroy(ctx));
	CHECK(otel_thread_ctx_v1 == NULL && counting_malloc_live() == 0,
	      "destroy of the attached context");
	ctx = NULL;

	/* A detached context belongs to whoever holds it. */
	CHECK(pthread_create(&t[0], NULL, detach_and_hand_over, &ctx) == 0, "pthread_create");
	CHECK(pthread_join(t[0], NULL) == 0, "pthread_join");
	CHECK(ctx != NULL && counting_malloc_live() == 1, "the detached context was freed");
	CHECK_OK(otel_thread_ctx_attach(ctx, &prev));
	CHECK(memcmp(otel_thread_ctx_v1->trace_id, trace_a, 16) == 0, "adopted context");
	CHECK_OK(otel_thread_ctx_detach(&prev));
	CHECK_OK(otel_thread_ctx_destroy(ctx));
	CHECK(counting_malloc_live() == 0, "destroy did not free");
	printf("thread-exit: slot NULL before the free; late attaches cleaned up; a detached "
	       "context survives its thread\n");
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
