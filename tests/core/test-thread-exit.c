/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Thread exit.  A thread that exits while it publishes unpublishes (its
 * slot is NULL before anything else of it goes) and gives its two records
 * back to the pool, so that an exiting thread leaves nothing behind: the
 * heap is as it was, and new threads publish from the records the old ones
 * gave back.  That holds too when a pthread-key destructor publishes before
 * the library's cleanup; one that publishes after it is refused (ETHREAD),
 * in every round of destructors the C library runs, so that no round, the
 * last included, can leave records behind.
 *
 * The pool takes and gives back records in last-in, first-out order, so the
 * records threads ever publish from, over any number of threads, are no
 * more than those in use at once: a thread that kept its records when it
 * exited would make the count grow with every thread.  That count is what
 * these tests watch.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "common.h"
#include "counting-malloc.h"

static const uint8_t trace_a[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
static const uint8_t span_a[8] = { 8, 7, 6, 5, 4, 3, 2, 1 };
static const uint8_t span_b[8] = { 9, 7, 6, 5, 4, 3, 2, 1 };

/* Freeing a block that a thread's slot points into fails at once, in every
 * test (the counting allocator's free-time check). */
static void *const *own_slot(void)
{
	return (void *const *)&otel_thread_ctx_v1;
}

__attribute__((constructor)) static void check_frees(void)
{
	counting_malloc_check_slots(own_slot);
}

/* Bytes allocated and not freed, by anyone in the process: the counting
 * allocator's count, or the sanitizer's.  Under valgrind, which replaces
 * malloc itself, this stays 0 and valgrind's own leak check decides. */
static size_t heap_in_use(void)
{
	return counting_malloc_heap_bytes();
}

static const char *how_the_heap_is_counted(void)
{
	static const char *const how[] = {
		[COUNTING_MALLOC_BLOCKS] = "counting allocator",
		[COUNTING_MALLOC_SANITIZER] = "sanitizer's allocator",
		[COUNTING_MALLOC_REPLACED] = "not counted: valgrind replaced malloc and checks leaks",
	};

	return how[counting_malloc_mode()];
}

/* ------------------------------------------------------------------------ */
/* The records threads publish from.                                          */

#define RECORDS_MAX 4096

static struct {
	pthread_mutex_t lock;
	const void *seen[RECORDS_MAX];
	size_t n;
	int overflow;
} records = { PTHREAD_MUTEX_INITIALIZER, { 0 }, 0, 0 };

static void records_reset(void)
{
	pthread_mutex_lock(&records.lock);
	records.n = 0;
	records.overflow = 0;
	pthread_mutex_unlock(&records.lock);
}

/* Notes the record the calling thread publishes. */
static void note_record(void)
{
	const void *r = otel_thread_ctx_v1;
	size_t i;

	if (r == NULL)
		return;
	pthread_mutex_lock(&records.lock);
	for (i = 0; i < records.n && records.seen[i] != r; i++)
		;
	if (i == records.n) {
		if (records.n < RECORDS_MAX)
			records.seen[records.n++] = r;
		else
			records.overflow = 1;
	}
	pthread_mutex_unlock(&records.lock);
}

static size_t records_seen(void)
{
	size_t n;

	pthread_mutex_lock(&records.lock);
	n = records.overflow ? RECORDS_MAX + 1 : records.n;
	pthread_mutex_unlock(&records.lock);
	return n;
}

/* Publishes a context of its own and then a child span, which shows both
 * of the thread's records; destroys the context; returns still publishing. */
static int publish_and_leave(void)
{
	otel_thread_ctx *ctx = NULL;
	int rc = otel_thread_ctx_create(&ctx);

	if (rc == 0)
		rc = otel_thread_ctx_set_ids(ctx, trace_a, span_a, 1);
	if (rc == 0)
		rc = otel_thread_ctx_set_attr(ctx, 3, "worker", 6);
	if (rc == 0)
		rc = otel_thread_ctx_attach(ctx, NULL);
	note_record();
	if (rc == 0)
		rc = otel_thread_ctx_update_span_id(span_b);
	note_record();
	otel_thread_ctx_destroy(ctx);
	if (rc == 0 && (otel_thread_ctx_v1 == NULL ||
			memcmp(otel_thread_ctx_v1->span_id, span_b, 8) != 0))
		rc = -1000;
	return rc;
}

static void *exit_publishing(void *arg)
{
	(void)arg;
	return (void *)(intptr_t)publish_and_leave();
}

/* Runs `n` threads of `fn`, `batch` at a time; every one must return 0. */
static void run_threads(void *(*fn)(void *), void *arg, unsigned long n, unsigned batch)
{
	pthread_t t[64];

	ck_assert_uint_le(batch, 64);
	for (unsigned long done = 0; done < n; done += batch) {
		unsigned k = n - done < batch ? (unsigned)(n - done) : batch;

		for (unsigned i = 0; i < k; i++)
			ck_assert_int_eq(pthread_create(&t[i], NULL, fn, arg), 0);
		for (unsigned i = 0; i < k; i++) {
			void *ret;

			ck_assert_int_eq(pthread_join(t[i], &ret), 0);
			ck_assert_msg(ret == NULL, "thread returned %d (%s)", (int)(intptr_t)ret,
				      otel_thread_ctx_strerror((int)(intptr_t)ret));
		}
	}
}

/* Threads run `batch` at a time hold at most `batch` pairs of records at
 * once: every record they published is one of 2 * batch. */
static void assert_records_reused(unsigned long threads, unsigned batch, const char *what)
{
	size_t seen = records_seen();

	printf("thread-exit: %s: %lu threads, %u at a time, published from %zu records\n", what,
	       threads, batch, seen);
	ck_assert_msg(seen <= 2u * batch,
		      "%s: %lu threads published from %zu records: exiting threads kept theirs",
		      what, threads, seen);
}

START_TEST(exiting_threads_leave_nothing)
{
	unsigned long n = env_count("OTEL_TEST_THREADS", 4000);
	size_t before, after;

	/* Warm up: thread stacks and the like. */
	run_threads(exit_publishing, NULL, 64, 8);
	records_reset();
	before = heap_in_use();
	run_threads(exit_publishing, NULL, n, 8);
	after = heap_in_use();
	printf("thread-exit: %lu threads exited publishing; heap in use %zu -> %zu bytes (%s)\n", n,
	       before, after, how_the_heap_is_counted());
	ck_assert_msg(after <= before + 64 * 1024, "heap grew by %zu bytes over %lu threads",
		      after - before, n);
	assert_records_reused(n, 8, "exit publishing");
}
END_TEST

/* ------------------------------------------------------------------------ */
/* The exact records: threads that exit give theirs back, and the next ones */
/* take exactly those.                                                        */

#define AT_ONCE 32

struct pair_probe {
	pthread_barrier_t *all;
	uintptr_t base; /* the lower address of the thread's two records */
	int detach_first;
	int rc;
};

static void *publish_both_records(void *arg)
{
	struct pair_probe *p = arg;
	const struct otel_thread_ctx_record *first;
	static const struct otel_thread_ctx_attr a = { 1, 2, (const uint8_t *)"ok" };

	p->rc = otel_thread_ctx_update_all(trace_a, span_a, 1, &a, 1);
	first = otel_thread_ctx_v1;
	if (p->rc == 0)
		p->rc = otel_thread_ctx_update_span_id(span_b);
	if (p->rc == 0 && (first == NULL || otel_thread_ctx_v1 == NULL || first == otel_thread_ctx_v1))
		p->rc = -1000;
	if (p->rc == 0)
		p->base = (uintptr_t)(first < otel_thread_ctx_v1 ? first : otel_thread_ctx_v1);
	/* All of them hold their records at once. */
	pthread_barrier_wait(p->all);
	if (p->rc == 0 && p->detach_first)
		p->rc = otel_thread_ctx_detach(NULL);
	return NULL;
}

static void pairs_of(uintptr_t bases[AT_ONCE])
{
	pthread_barrier_t all;
	struct pair_probe p[AT_ONCE];
	pthread_t t[AT_ONCE];

	pthread_barrier_init(&all, NULL, AT_ONCE);
	for (int i = 0; i < AT_ONCE; i++) {
		p[i] = (struct pair_probe){ &all, 0, i % 2, -1 };
		ck_assert_int_eq(pthread_create(&t[i], NULL, publish_both_records, &p[i]), 0);
	}
	for (int i = 0; i < AT_ONCE; i++) {
		ck_assert_int_eq(pthread_join(t[i], NULL), 0);
		ck_assert_ok(p[i].rc);
		bases[i] = p[i].base;
	}
	pthread_barrier_destroy(&all);
}

static int by_value(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;

	return x < y ? -1 : x > y;
}

START_TEST(new_threads_take_the_records_exited_threads_gave_back)
{
	uintptr_t first[AT_ONCE], second[AT_ONCE];

	pairs_of(first);
	pairs_of(second);
	qsort(first, AT_ONCE, sizeof(first[0]), by_value);
	qsort(second, AT_ONCE, sizeof(second[0]), by_value);
	for (int i = 0; i < AT_ONCE; i++) {
		ck_assert_msg(i == 0 || first[i] != first[i - 1], "two threads had the same records");
		ck_assert_uint_eq(first[i] % 16, 0);
	}
	ck_assert_msg(memcmp(first, second, sizeof(first)) == 0,
		      "%d new threads did not publish from the records %d exited threads gave back",
		      AT_ONCE, AT_ONCE);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* pthread-key destructors.                                                   */

/* Keys made here come after the library's, which it makes when it is
 * loaded: glibc and musl run destructors in the order of the keys. */
static pthread_key_t probe_key;
static struct {
	int calls, slot_null, read_nothing, saved_nothing;
} probe_saw;

static void probe(void *arg)
{
	otel_thread_ctx *saved = arg;
	struct otel_thread_ctx_record r;

	probe_saw.calls++;
	probe_saw.slot_null = otel_thread_ctx_v1 == NULL;
	probe_saw.read_nothing = otel_thread_ctx_read(&r) == OTEL_THREAD_CTX_ENOCTX;
	probe_saw.saved_nothing = otel_thread_ctx_save(saved) == OTEL_THREAD_CTX_OK &&
				  otel_thread_ctx_get(saved, &r) == OTEL_THREAD_CTX_ENOCTX;
}

static void *publish_then_probe(void *arg)
{
	pthread_setspecific(probe_key, arg);
	return (void *)(intptr_t)publish_and_leave();
}

START_TEST(a_later_destructor_finds_nothing_published)
{
	otel_thread_ctx *saved = new_ctx();
	pthread_t t;
	void *ret;

	ck_assert_int_eq(pthread_key_create(&probe_key, probe), 0);
	memset(&probe_saw, 0, sizeof(probe_saw));
	ck_assert_int_eq(pthread_create(&t, NULL, publish_then_probe, saved), 0);
	ck_assert_int_eq(pthread_join(t, &ret), 0);
	ck_assert_ptr_null(ret);
	ck_assert_int_eq(probe_saw.calls, 1);
	ck_assert_msg(probe_saw.slot_null, "the slot was not NULL after the library's cleanup");
	ck_assert_int_eq(probe_saw.read_nothing, 1);
	ck_assert_int_eq(probe_saw.saved_nothing, 1);
	pthread_key_delete(probe_key);
	otel_thread_ctx_destroy(saved);
}
END_TEST

/*
 * A destructor that runs after the library's cleanup (its key is younger)
 * tries to publish again, by update_all and by attach: both are refused
 * with ETHREAD and the slot stays NULL; one younger still looks at the slot
 * twice: right after that, and in the next round of destructors.
 */
static pthread_key_t late_key, later_key;
static unsigned long late_published, late_refused, later_saw_it, later_saw_null, later_calls;
static pthread_mutex_t tally_lock = PTHREAD_MUTEX_INITIALIZER;

static void late_publish(void *arg)
{
	static const struct otel_thread_ctx_attr a = { 2, 4, (const uint8_t *)"late" };
	int rc = otel_thread_ctx_update_all(trace_a, span_b, 0, &a, 1), rc2;
	otel_thread_ctx *ctx = NULL;

	(void)arg;
	note_record();
	rc2 = otel_thread_ctx_create(&ctx);
	if (rc2 == 0)
		rc2 = otel_thread_ctx_set_ids(ctx, trace_a, span_a, 1);
	if (rc2 == 0)
		rc2 = otel_thread_ctx_attach(ctx, NULL);
	otel_thread_ctx_destroy(ctx);
	pthread_mutex_lock(&tally_lock);
	late_published += rc == OTEL_THREAD_CTX_OK || otel_thread_ctx_v1 != NULL;
	late_refused += rc == OTEL_THREAD_CTX_ETHREAD && rc2 == OTEL_THREAD_CTX_ETHREAD;
	pthread_mutex_unlock(&tally_lock);
}

static void later_look(void *arg)
{
	pthread_mutex_lock(&tally_lock);
	later_calls++;
	if ((intptr_t)arg == 1) {
		later_saw_it += otel_thread_ctx_v1 != NULL;
		/* Once more, in the next round. */
		pthread_setspecific(later_key, (void *)2);
	} else {
		later_saw_null += otel_thread_ctx_v1 == NULL;
	}
	pthread_mutex_unlock(&tally_lock);
}

static void *publish_with_late_keys(void *arg)
{
	pthread_setspecific(late_key, (void *)1);
	pthread_setspecific(later_key, (void *)1);
	return exit_publishing(arg);
}

START_TEST(publishing_after_the_exit_cleanup_is_refused)
{
	unsigned long n = env_count("OTEL_TEST_THREADS", 4000) / 4;
	unsigned int in_use0, in_use, limit;
	size_t before, after;

	ck_assert_int_eq(pthread_key_create(&late_key, late_publish), 0);
	ck_assert_int_eq(pthread_key_create(&later_key, later_look), 0);
	run_threads(publish_with_late_keys, NULL, 64, 8);
	records_reset();
	late_published = late_refused = later_saw_it = later_saw_null = later_calls = 0;
	ck_assert_ok(otel_thread_ctx_thread_records(&in_use0, &limit));
	before = heap_in_use();
	run_threads(publish_with_late_keys, NULL, n, 8);
	after = heap_in_use();
	ck_assert_ok(otel_thread_ctx_thread_records(&in_use, &limit));
	printf("thread-exit: %lu threads tried to publish again in a later destructor: %lu were "
	       "refused, %lu published; %lu found nothing then, %lu in the next round\n", n,
	       late_refused, late_published, n - later_saw_it, later_saw_null);
	ck_assert_uint_eq(late_published, 0);
	ck_assert_uint_eq(late_refused, n);
	ck_assert_uint_eq(later_calls, 2 * n);
	ck_assert_uint_eq(later_saw_it, 0);
	ck_assert_msg(later_saw_null == n, "%lu of %lu threads still published after their last "
		      "destructors ran", n - later_saw_null, n);
	ck_assert_msg(in_use == in_use0, "threads hold %u records after the threads exited, %u "
		      "before", in_use, in_use0);
	ck_assert_msg(after <= before + 64 * 1024, "heap grew by %zu bytes over %lu threads",
		      after - before, n);
	pthread_key_delete(late_key);
	pthread_key_delete(later_key);
}
END_TEST

/*
 * A destructor that registers itself again in every round the C library
 * runs (four in glibc, PTHREAD_DESTRUCTOR_ITERATIONS) and publishes in each:
 * before the library's cleanup its publications go through, after it they
 * are refused, and in the last round, after which nothing runs again, they
 * take nothing either: the threads leave no record behind.
 */
static pthread_key_t round_key;
static unsigned long round_calls, round_published, round_refused, round_other;

static void publish_every_round(void *arg)
{
	uintptr_t round = (uintptr_t)arg;
	int rc = otel_thread_ctx_update_all(trace_a, span_b, 1, NULL, 0);

	pthread_mutex_lock(&tally_lock);
	round_calls++;
	round_published += rc == OTEL_THREAD_CTX_OK;
	round_refused += rc == OTEL_THREAD_CTX_ETHREAD;
	round_other += rc != OTEL_THREAD_CTX_OK && rc != OTEL_THREAD_CTX_ETHREAD;
	pthread_mutex_unlock(&tally_lock);
	pthread_setspecific(round_key, (void *)(round + 1));
}

static void *publish_in_every_round(void *arg)
{
	pthread_setspecific(round_key, (void *)1);
	return exit_publishing(arg);
}

/* ThreadSanitizer's runtime (see where UNDER_TSAN is used). */
#ifdef __SANITIZE_THREAD__
#define UNDER_TSAN 1
#endif
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif
START_TEST(publishing_in_every_round_of_destructors_leaks_nothing)
{
	unsigned long n = env_count("OTEL_TEST_THREADS", 4000) / 4;
	unsigned int in_use0, in_use, limit;

#ifdef UNDER_TSAN
	/* TSan's runtime does not survive instrumented code in the C library's
	 * later rounds of destructors (a read at 0xd0 in its thread state, seen
	 * in the tsan configuration); the other builds run this case. */
	printf("thread-exit: publish-every-round not run under ThreadSanitizer: its runtime "
	       "faults in the later rounds of destructors\n");
	return;
#endif
	ck_assert_int_eq(pthread_key_create(&round_key, publish_every_round), 0);
	round_calls = round_published = round_refused = round_other = 0;
	ck_assert_ok(otel_thread_ctx_thread_records(&in_use0, &limit));
	run_threads(publish_in_every_round, NULL, n, 8);
	ck_assert_ok(otel_thread_ctx_thread_records(&in_use, &limit));
	printf("thread-exit: %lu threads published in each of their rounds of destructors: %lu "
	       "calls, %lu published, %lu refused after the cleanup; %u records in use after, %u "
	       "before\n", n, round_calls, round_published, round_refused, in_use, in_use0);
	ck_assert_msg(round_calls >= 2 * n, "%lu calls: fewer than two rounds", round_calls);
	ck_assert_uint_eq(round_other, 0);
	ck_assert_uint_eq(round_published + round_refused, round_calls);
	ck_assert_msg(in_use == in_use0, "threads hold %u records after %lu threads exited, %u "
		      "before: %u leaked", in_use, n, in_use0, in_use - in_use0);
	ck_assert_uint_eq(limit, OTEL_THREAD_CTX_THREADS_MAX);
	pthread_key_delete(round_key);
}
END_TEST

/*
 * A key made by a constructor that runs before the library's (with the
 * static library, in this executable; with the shared library the library
 * is initialized first and the key is younger): its destructor destroys
 * the context the thread attached and publishes, which goes through when it
 * runs before the library's cleanup and is refused (ETHREAD) after it.
 */
static pthread_key_t early_key;
static int early_key_ok;
static unsigned long early_ran, early_published, early_refused, early_found_ours;

static void early_destructor(void *arg)
{
	otel_thread_ctx *ctx = arg;
	struct otel_thread_ctx_record r;
	int ours = otel_thread_ctx_v1 != NULL && otel_thread_ctx_get(ctx, &r) == 0 &&
		   same_record(otel_thread_ctx_v1, &r);
	int rc;

	otel_thread_ctx_destroy(ctx);
	rc = otel_thread_ctx_update_all(trace_a, span_a, 1, NULL, 0);
	note_record();
	pthread_mutex_lock(&tally_lock);
	early_ran++;
	early_found_ours += (unsigned long)ours;
	early_published += rc == OTEL_THREAD_CTX_OK && otel_thread_ctx_v1 != NULL;
	early_refused += rc == OTEL_THREAD_CTX_ETHREAD && otel_thread_ctx_v1 == NULL;
	pthread_mutex_unlock(&tally_lock);
}

__attribute__((constructor(101))) static void make_early_key(void)
{
	early_key_ok = pthread_key_create(&early_key, early_destructor) == 0;
}

static void *attach_for_the_early_key(void *arg)
{
	otel_thread_ctx *ctx = NULL;
	int rc = otel_thread_ctx_create(&ctx);

	(void)arg;
	if (rc == 0)
		rc = otel_thread_ctx_set_ids(ctx, trace_a, span_b, 0);
	if (rc == 0)
		rc = otel_thread_ctx_attach(ctx, NULL);
	note_record();
	if (rc == 0)
		rc = pthread_setspecific(early_key, ctx) == 0 ? 0 : -1000;
	return (void *)(intptr_t)rc;
}

START_TEST(a_destructor_in_either_order_publishes_and_destroys)
{
	unsigned long n = env_count("OTEL_TEST_THREADS", 4000) / 4;
	size_t before, after;

	ck_assert_msg(early_key_ok, "the early key could not be made");
	run_threads(attach_for_the_early_key, NULL, 64, 8);
	records_reset();
	early_ran = early_published = early_refused = early_found_ours = 0;
	before = heap_in_use();
	run_threads(attach_for_the_early_key, NULL, n, 8);
	after = heap_in_use();
	printf("thread-exit: a destructor of a key made before the library's: %lu ran, %lu of them "
	       "before the library's cleanup (the thread's record still published)\n",
	       early_ran, early_found_ours);
	ck_assert_uint_eq(early_ran, n);
	/* Before the cleanup it finds the record and publishes, after it
	 * nothing, and is refused: never something else. */
	ck_assert_msg(early_found_ours == 0 || early_found_ours == n,
		      "%lu of %lu destructors found the thread's record", early_found_ours, n);
	ck_assert_uint_eq(early_published, early_found_ours);
	ck_assert_uint_eq(early_refused, n - early_found_ours);
	ck_assert_msg(after <= before + 64 * 1024, "heap grew by %zu bytes over %lu threads",
		      after - before, n);
	assert_records_reused(n, 8, "publish in an early destructor");
}
END_TEST

/* A context is a value: it outlives the thread that made and attached it. */
static void *make_attach_and_hand_over(void *arg)
{
	otel_thread_ctx **out = arg, *ctx = NULL;

	if (otel_thread_ctx_create(&ctx) || otel_thread_ctx_set_ids(ctx, trace_a, span_a, 1) ||
	    otel_thread_ctx_attach(ctx, NULL))
		return (void *)1;
	*out = ctx;
	return NULL; /* exits publishing it */
}

START_TEST(a_context_outlives_the_thread_that_attached_it)
{
	otel_thread_ctx *ctx = NULL;
	pthread_t t;
	void *ret;

	ck_assert_int_eq(pthread_create(&t, NULL, make_attach_and_hand_over, &ctx), 0);
	ck_assert_int_eq(pthread_join(t, &ret), 0);
	ck_assert_ptr_null(ret);
	ck_assert_ptr_nonnull(ctx);
	ck_assert_ok(otel_thread_ctx_set_span_id(ctx, span_b));
	ck_assert_ok(otel_thread_ctx_attach(ctx, NULL));
	ck_assert_mem_eq(otel_thread_ctx_v1->trace_id, trace_a, 16);
	ck_assert_mem_eq(otel_thread_ctx_v1->span_id, span_b, 8);
	ck_assert_ok(otel_thread_ctx_detach(NULL));
	otel_thread_ctx_destroy(ctx);
}
END_TEST

Suite *test_suite(void)
{
	const struct test_case cases[] = {
		{ "no-leak", exiting_threads_leave_nothing },
		{ "records-reused", new_threads_take_the_records_exited_threads_gave_back },
		{ "slot-null-after-cleanup", a_later_destructor_finds_nothing_published },
		{ "publish-during-exit", publishing_after_the_exit_cleanup_is_refused },
		{ "publish-every-round", publishing_in_every_round_of_destructors_leaks_nothing },
		{ "destructor-either-order", a_destructor_in_either_order_publishes_and_destroys },
		{ "context-outlives-thread", a_context_outlives_the_thread_that_attached_it },
	};

	return MAKE_SUITE("thread-exit", cases, 600);
}
