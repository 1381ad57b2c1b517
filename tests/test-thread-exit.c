/* SPDX-License-Identifier: Apache-2.0 */
/* A thread that exits with a context attached leaves nothing behind, and its
 * slot is NULL before the context is freed. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "common.h"
#include "counting-malloc.h"

static const uint8_t trace_a[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
static const uint8_t span_a[8] = { 8, 7, 6, 5, 4, 3, 2, 1 };

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

static void *attach_and_exit(void *arg)
{
	otel_thread_ctx *ctx = NULL, *prev;
	int rc = otel_thread_ctx_create(&ctx);

	(void)arg;
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
	printf("thread-exit: %lu threads exited with a context attached; heap in use "
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

Suite *test_suite(void)
{
	const struct test_case cases[] = {
		{ "no-leak", exiting_threads_leak_nothing },
		{ "slot-null-first", slot_is_null_before_the_context_is_freed },
		{ "attach-during-exit", attach_during_thread_exit_is_cleaned_up_too },
		{ "detached-survives", a_detached_context_survives_its_thread },
	};

	return MAKE_SUITE("thread-exit", cases, 600);
}
