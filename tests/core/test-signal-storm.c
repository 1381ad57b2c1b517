/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The signal storm.  One thread publishes a new record in a tight loop, by
 * every path the API has (update of the attached context, update_attach of
 * another, update then attach, detach then update_attach); each record
 * describes its own sequence number.  Another thread interrupts it with
 * signals many thousands of times; the handler reads the record through
 * otel_thread_ctx_v1, exactly as a sampling profiler does, and checks that it
 * is either absent or the complete record of one sequence number.  The
 * records, the writer and the check are in storm.h (the musl test runs the
 * same storm without Check).
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "common.h"
#include "storm.h"

/* Counted by the handler, on the writer thread; polled by the sender. */
static struct storm_counts reads;

static void on_signal(int sig)
{
	(void)sig;
	storm_sample(&reads, otel_thread_ctx_v1);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

START_TEST(no_torn_reads_under_a_signal_storm)
{
	unsigned long want = env_count("OTEL_TEST_SIGNALS", 100000);
	struct storm_writer res = { 0, 0, -1, 0 };
	struct sigaction sa;
	unsigned long sent = 0;
	pthread_t t;
	double start;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);

	ck_assert_int_eq(pthread_create(&t, NULL, storm_writer, &res), 0);
	start = now_s();
	while (!storm_done(&res, &reads, want) && now_s() - start <= 120) {
		ck_assert_int_eq(pthread_kill(t, SIGUSR1), 0);
		sent++;
	}
	__atomic_store_n(&res.stop, 1, __ATOMIC_RELAXED);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	signal(SIGUSR1, SIG_DFL);

	printf("signal-storm: %lu signals sent, %lu reads: %lu complete, %lu empty, "
	       "%lu invalid, %lu torn; %llu records published\n",
	       sent, reads.ok + reads.null + reads.invalid + reads.torn, reads.ok, reads.null,
	       reads.invalid, reads.torn, (unsigned long long)res.records);
	ck_assert_msg(res.rc == 0, "writer failed: %s", otel_thread_ctx_strerror(res.rc));
	ck_assert_msg(reads.torn == 0, "%lu torn reads (last: sequence %llu)", reads.torn,
		      (unsigned long long)reads.last_torn_seq);
	/* Pointer swap with two records: a reader never finds valid != 1. */
	ck_assert_uint_eq(reads.invalid, 0);
	/* The storm must have landed inside the writer's work. */
	ck_assert_uint_ge(reads.ok, want / 4);
	ck_assert_uint_gt(res.records, STORM_MIN_RECORDS);
}
END_TEST

Suite *test_suite(void)
{
	const struct test_case cases[] = {
		{ "storm", no_torn_reads_under_a_signal_storm },
	};

	return MAKE_SUITE("signal-storm", cases, 300);
}
