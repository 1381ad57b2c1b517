/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Thread exit and the holder of a context, in every order.  A thread that
 * exits with a context attached unpublishes it (its slot is NULL before
 * anything else happens) and hands it back to its holder, who may destroy it
 * before (from a pthread-key destructor that runs first), after (one that
 * runs later, or a finalizer on another thread), or while the thread exits;
 * a context created with OTEL_THREAD_CTX_FREE_WITH_THREAD is freed by the
 * thread.  Either way nothing stays behind.  Use-after-free and double free
 * show under valgrind and the sanitizer builds.
 */
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>

#include "common.h"
#include "counting-malloc.h"

static const uint8_t trace_a[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
static const uint8_t span_a[8] = { 8, 7, 6, 5, 4, 3, 2, 1 };

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

static void say_how_the_heap_is_counted(void)
{
	static const char *const how[] = {
		[COUNTING_MALLOC_BLOCKS] = "counting allocator",
		[COUNTING_MALLOC_SANITIZER] = "sanitizer's allocator",
		[COUNTING_MALLOC_REPLACED] = "not here: valgrind replaced malloc and checks leaks",
	};

	printf("thread-exit: heap counted by the %s\n", how[counting_malloc_mode()]);
}

/* A context given to its thread: the thread frees it when it exits. */
static void *attach_and_exit(void *arg)
{
	struct otel_thread_ctx_options o = OTEL_THREAD_CTX_OPTIONS_INIT;
	otel_thread_ctx *ctx = NULL, *prev;
	int rc;

	(void)arg;
	o.flags = OTEL_THREAD_CTX_FREE_WITH_THREAD;
	rc = otel_thread_ctx_create_with(&ctx, &o);
	if (rc == 0)
		rc = otel_thread_ctx_set_ids(ctx, trace_a, span_a, 1);
	if (rc == 0)
		rc = otel_thread_ctx_set_attr(ctx, 3, "worker", 6);
	if (rc == 0)
		rc = otel_thread_ctx_update_attach(ctx, &prev);
	return (void *)(intptr_t)rc;
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

START_TEST(exiting_threads_leak_nothing)
{
	unsigned long n = env_count("OTEL_TEST_THREADS", 4000);
	size_t before, after;

	say_how_the_heap_is_counted();
	/* Warm up: thread stacks, arenas and the library's key. */
	run_threads(attach_and_exit, NULL, 64, 8);
	before = heap_in_use();
	run_threads(attach_and_exit, NULL, n, 8);
	after = heap_in_use();
	printf("thread-exit: %lu threads exited with a FREE_WITH_THREAD context attached; heap in use "
	       "%zu -> %zu bytes\n", n, before, after);
	/* A leak would be n * sizeof(context) (over 1.2 KiB each). */
	ck_assert_msg(after <= before + 64 * 1024, "heap grew by %zu bytes over %lu threads",
		      after - before, n);
}
END_TEST

/* A later pthread key destructor of the exiting thread looks at the slot. */
static pthread_key_t probe_key;
static int probe_slot_null = -1, probe_current_null = -1;

static void probe(void *arg)
{
	(void)arg;
	probe_slot_null = otel_thread_ctx_v1 == NULL;
	probe_current_null = otel_thread_ctx_current() == NULL;
}

static void *attach_then_probe(void *arg)
{
	pthread_setspecific(probe_key, (void *)1);
	return attach_and_exit(arg);
}

START_TEST(slot_is_null_before_the_context_is_freed)
{
	pthread_t t;
	void *ret;

	/* Created after the library's key, so glibc and musl run it after. */
	ck_assert_int_eq(pthread_key_create(&probe_key, probe), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, attach_then_probe, NULL), 0);
	ck_assert_int_eq(pthread_join(t, &ret), 0);
	ck_assert_ptr_null(ret);
	ck_assert_int_eq(probe_slot_null, 1);
	ck_assert_int_eq(probe_current_null, 1);
	pthread_key_delete(probe_key);
}
END_TEST

/* A destructor that runs after the library's cleanup attaches again. */
static pthread_key_t late_key;

static void late_attach(void *arg)
{
	(void)arg;
	attach_and_exit(NULL);
}

static void *attach_and_reattach_late(void *arg)
{
	pthread_setspecific(late_key, (void *)1);
	return attach_and_exit(arg);
}

START_TEST(attach_during_thread_exit_is_cleaned_up_too)
{
	unsigned long n = env_count("OTEL_TEST_THREADS", 4000) / 4;
	size_t before, after;

	ck_assert_int_eq(pthread_key_create(&late_key, late_attach), 0);
	run_threads(attach_and_reattach_late, NULL, 64, 8);
	before = heap_in_use();
	run_threads(attach_and_reattach_late, NULL, n, 8);
	after = heap_in_use();
	ck_assert_msg(after <= before + 64 * 1024, "heap grew by %zu bytes over %lu threads",
		      after - before, n);
	pthread_key_delete(late_key);
}
END_TEST

/* A context detached before exit belongs to whoever holds it: not freed. */
static void *detach_and_hand_over(void *arg)
{
	otel_thread_ctx **out = arg, *ctx = NULL, *prev;

	if (otel_thread_ctx_create(&ctx) || otel_thread_ctx_set_ids(ctx, trace_a, span_a, 1) ||
	    otel_thread_ctx_update_attach(ctx, &prev) || otel_thread_ctx_detach(&prev) ||
	    prev != ctx)
		return (void *)1;
	*out = ctx;
	return NULL;
}

START_TEST(a_detached_context_survives_its_thread)
{
	otel_thread_ctx *ctx = NULL, *prev;
	pthread_t t;
	void *ret;

	ck_assert_int_eq(pthread_create(&t, NULL, detach_and_hand_over, &ctx), 0);
	ck_assert_int_eq(pthread_join(t, &ret), 0);
	ck_assert_ptr_null(ret);
	ck_assert_ptr_nonnull(ctx);
	ck_assert_ok(otel_thread_ctx_attach(ctx, &prev));
	ck_assert_mem_eq(otel_thread_ctx_v1->trace_id, trace_a, 16);
	ck_assert_ok(otel_thread_ctx_detach(&prev));
	ck_assert_ok(otel_thread_ctx_destroy(ctx));
}
END_TEST

/* ------------------------------------------------------------------ */
/* The holder keeps its context across thread exit.                     */

/* What a thread is given: a context to attach, created by the holder. */
struct lent {
	otel_thread_ctx *ctx;
	int rc;
};

static void *attach_lent_and_exit(void *arg)
{
	struct lent *l = arg;
	otel_thread_ctx *prev;

	l->rc = otel_thread_ctx_attach(l->ctx, &prev);
	return NULL;
}

/* A holder's context, committed with ids that name it. */
static otel_thread_ctx *lendable(unsigned long i)
{
	otel_thread_ctx *ctx = new_ctx();
	uint8_t span[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };

	memcpy(span, &i, sizeof(i) < 8 ? sizeof(i) : 8);
	span[7] |= 0x80;
	ck_assert_ok(otel_thread_ctx_set_ids(ctx, trace_a, span, 1));
	ck_assert_ok(otel_thread_ctx_update(ctx));
	return ctx;
}

START_TEST(the_holder_destroys_after_thread_exit)
{
	unsigned long n = env_count("OTEL_TEST_THREADS", 4000) / 4, batch = 8;
	size_t before = 0, after;

	for (unsigned long round = 0; round < n + 8; round += batch) {
		struct lent l[8];
		pthread_t t[8];

		if (round == 8)
			before = heap_in_use(); /* after a warm-up */
		for (unsigned long k = 0; k < batch; k++) {
			l[k].ctx = lendable(round + k);
			l[k].rc = -1000;
			ck_assert_int_eq(pthread_create(&t[k], NULL, attach_lent_and_exit, &l[k]), 0);
		}
		for (unsigned long k = 0; k < batch; k++) {
			otel_thread_ctx *prev;
			struct otel_thread_ctx_record rec;

			ck_assert_int_eq(pthread_join(t[k], NULL), 0);
			ck_assert_ok(l[k].rc);
			/* Still the holder's, whole: attachable and readable. */
			ck_assert_ok(otel_thread_ctx_attach(l[k].ctx, &prev));
			ck_assert_ok(otel_thread_ctx_read(&rec));
			ck_assert_mem_eq(rec.trace_id, trace_a, 16);
			ck_assert_ok(otel_thread_ctx_detach(&prev));
			ck_assert_ptr_eq(prev, l[k].ctx);
			ck_assert_ok(otel_thread_ctx_destroy(l[k].ctx));
		}
	}
	after = heap_in_use();
	ck_assert_msg(after <= before + 64 * 1024, "heap grew by %zu bytes over %lu threads",
		      after - before, n);
}
END_TEST

/*
 * The holder's own cleanup runs as a pthread-key destructor of the exiting
 * thread.  glibc and musl run destructors in the order of the keys: one key
 * older than the library's (made by a constructor that runs before the
 * library's: in the executable, with the static library), one younger (made
 * here).  With the shared library, both are younger.
 */
static pthread_key_t early_key, late_key_destroy;
static int early_key_ok;
static unsigned long destroyed_ok, destroyed_busy, destroyed_attached;
static pthread_mutex_t tally_lock = PTHREAD_MUTEX_INITIALIZER;

static void destroy_in_destructor(void *arg)
{
	/* Still attached: this destructor runs before the library's. */
	int attached = otel_thread_ctx_current() == arg;
	int rc = otel_thread_ctx_destroy(arg);

	pthread_mutex_lock(&tally_lock);
	destroyed_attached += (unsigned long)attached;
	if (rc == OTEL_THREAD_CTX_OK)
		destroyed_ok++;
	else
		destroyed_busy++;
	pthread_mutex_unlock(&tally_lock);
}

__attribute__((constructor(101))) static void make_early_key(void)
{
	early_key_ok = pthread_key_create(&early_key, destroy_in_destructor) == 0;
}

struct keyed {
	pthread_key_t key;
	int rc;
};

static void *attach_own_and_exit(void *arg)
{
	struct keyed *k = arg;
	otel_thread_ctx *ctx = NULL, *prev;

	k->rc = otel_thread_ctx_create(&ctx);
	if (k->rc == 0)
		k->rc = otel_thread_ctx_set_ids(ctx, trace_a, span_a, 1);
	if (k->rc == 0)
		k->rc = otel_thread_ctx_update_attach(ctx, &prev);
	if (k->rc == 0)
		k->rc = pthread_setspecific(k->key, ctx) == 0 ? 0 : -1000;
	return NULL;
}

static void holder_cleanup_in_a_key(pthread_key_t key, const char *which)
{
	unsigned long n = env_count("OTEL_TEST_THREADS", 4000) / 4;
	size_t before = 0, after;

	destroyed_ok = destroyed_busy = destroyed_attached = 0;
	for (unsigned long i = 0; i < n + 8; i++) {
		struct keyed k = { key, -1000 };
		pthread_t t;

		if (i == 8)
			before = heap_in_use();
		ck_assert_int_eq(pthread_create(&t, NULL, attach_own_and_exit, &k), 0);
		ck_assert_int_eq(pthread_join(t, NULL), 0);
		ck_assert_ok(k.rc);
	}
	after = heap_in_use();
	printf("thread-exit: holder's destructor (%s key): %lu destroyed (%lu still attached, "
	       "before the library's cleanup), %lu refused\n", which, destroyed_ok, destroyed_attached,
	       destroyed_busy);
	ck_assert_uint_eq(destroyed_ok, n + 8);
	ck_assert_uint_eq(destroyed_busy, 0);
	ck_assert_msg(after <= before + 64 * 1024, "heap grew by %zu bytes over %lu threads",
		      after - before, n);
}

START_TEST(the_holder_destroys_in_an_older_key)
{
	ck_assert_msg(early_key_ok, "the early key could not be made");
	holder_cleanup_in_a_key(early_key, "older");
}
END_TEST

START_TEST(the_holder_destroys_in_a_younger_key)
{
	ck_assert_int_eq(pthread_key_create(&late_key_destroy, destroy_in_destructor), 0);
	holder_cleanup_in_a_key(late_key_destroy, "younger");
	pthread_key_delete(late_key_destroy);
}
END_TEST

/*
 * A finalizer on another thread destroys the context while its thread
 * exits: destroy is refused (EBUSY, nothing changes) while the context is
 * attached, and succeeds once the thread has handed it back; never both,
 * never a use after free.
 */
struct race {
	otel_thread_ctx *ctx;
	sem_t go;
	int attach_rc;
};

static void *attach_wait_exit(void *arg)
{
	struct race *r = arg;
	otel_thread_ctx *prev;

	r->attach_rc = otel_thread_ctx_attach(r->ctx, &prev);
	sem_post(&r->go);
	return NULL;
}

START_TEST(a_finalizer_races_thread_exit)
{
	unsigned long n = env_count("OTEL_TEST_THREADS", 4000) / 4, busy = 0;

	for (unsigned long i = 0; i < n; i++) {
		struct race r;
		pthread_t t;
		int rc;

		r.ctx = lendable(i);
		r.attach_rc = -1000;
		sem_init(&r.go, 0, 0);
		ck_assert_int_eq(pthread_create(&t, NULL, attach_wait_exit, &r), 0);
		sem_wait(&r.go);
		ck_assert_ok(r.attach_rc);
		/* The thread is on its way out: destroy until it lets go. */
		while ((rc = otel_thread_ctx_destroy(r.ctx)) == OTEL_THREAD_CTX_EBUSY) {
			busy++;
			sched_yield();
		}
		ck_assert_ok(rc);
		ck_assert_int_eq(pthread_join(t, NULL), 0);
		sem_destroy(&r.go);
	}
	printf("thread-exit: finalizer race: %lu contexts, %lu refusals while attached\n", n, busy);
}
END_TEST

/* Without FREE_WITH_THREAD, a context outlives the thread it was attached
 * to when the thread exits. */
START_TEST(a_lent_context_survives_thread_exit)
{
	struct lent l = { lendable(7), -1000 };
	otel_thread_ctx *prev;
	pthread_t t;

	ck_assert_int_eq(pthread_create(&t, NULL, attach_lent_and_exit, &l), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_ok(l.rc);
	/* Detached by the exit: attach, edit and commit it here. */
	ck_assert_ok(otel_thread_ctx_set_span_id(l.ctx, span_a));
	ck_assert_ok(otel_thread_ctx_update_attach(l.ctx, &prev));
	ck_assert_ptr_null(prev);
	ck_assert_mem_eq(otel_thread_ctx_v1->span_id, span_a, 8);
	ck_assert_ok(otel_thread_ctx_destroy(l.ctx));
	ck_assert_ptr_null(otel_thread_ctx_v1);
}
END_TEST

Suite *test_suite(void)
{
	const struct test_case cases[] = {
		{ "no-leak", exiting_threads_leak_nothing },
		{ "slot-null-first", slot_is_null_before_the_context_is_freed },
		{ "attach-during-exit", attach_during_thread_exit_is_cleaned_up_too },
		{ "detached-survives", a_detached_context_survives_its_thread },
		{ "lent-survives", a_lent_context_survives_thread_exit },
		{ "holder-destroys-after", the_holder_destroys_after_thread_exit },
		{ "holder-older-key", the_holder_destroys_in_an_older_key },
		{ "holder-younger-key", the_holder_destroys_in_a_younger_key },
		{ "finalizer-race", a_finalizer_races_thread_exit },
	};

	return MAKE_SUITE("thread-exit", cases, 600);
}
