/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Two threads attach one detached context at the same moment, round after
 * round: exactly one must succeed and the other get EBUSY, never both (two
 * slots leading to one record, two owners editing it, and a double free if
 * both exited with it) and never neither.  The winner keeps it attached
 * until both have tried, then detaches it for the next round.
 *
 *   usage: race [rounds]   (default OTEL_TEST_RACE_ROUNDS, else 1000000)
 */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "minitest.h"
#include "otel_thread_ctx.h"
#include "testenv.h"

static otel_thread_ctx *ctx;
static unsigned long rounds;
static unsigned long arrived, tried, released; /* atomics */
static int rc[2];
static unsigned long wins[2], both, neither;

static void wait_for(const unsigned long *counter, unsigned long value)
{
	unsigned int spins = 0;

	while (__atomic_load_n(counter, __ATOMIC_ACQUIRE) < value)
		if (++spins % 64 == 0)
			sched_yield(); /* valgrind and qemu run one thread at a time */
}

static void *racer(void *arg)
{
	int me = (int)(intptr_t)arg;

	for (unsigned long r = 0; r < rounds; r++) {
		otel_thread_ctx *prev;
		int got;

		/* Both leave this wait together: the last to arrive frees
		 * both. */
		__atomic_fetch_add(&arrived, 1, __ATOMIC_ACQ_REL);
		wait_for(&arrived, 2 * (r + 1));
		got = otel_thread_ctx_attach(ctx, &prev);
		CHECK(got == OTEL_THREAD_CTX_OK || got == OTEL_THREAD_CTX_EBUSY,
		      "attach returned %d (%s)", got, otel_thread_ctx_strerror(got));
		rc[me] = got;
		__atomic_fetch_add(&tried, 1, __ATOMIC_ACQ_REL);
		wait_for(&tried, 2 * (r + 1));
		if (got == OTEL_THREAD_CTX_OK) {
			CHECK(prev == NULL, "the winner had something attached");
			CHECK(otel_thread_ctx_current() == ctx, "current() is not the context");
			CHECK_OK(otel_thread_ctx_detach(&prev));
			CHECK(prev == ctx, "detach did not hand the context back");
		}
		__atomic_fetch_add(&released, 1, __ATOMIC_ACQ_REL);
		/* Thread 0 tallies the round before anyone starts the next. */
		wait_for(&released, 2 * (r + 1));
		if (me == 0) {
			if (rc[0] == OTEL_THREAD_CTX_OK && rc[1] == OTEL_THREAD_CTX_OK)
				both++;
			else if (rc[0] != OTEL_THREAD_CTX_OK && rc[1] != OTEL_THREAD_CTX_OK)
				neither++;
			else
				wins[rc[1] == OTEL_THREAD_CTX_OK]++;
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	static const uint8_t trace[16] = { 0x99, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
	static const uint8_t span[8] = { 0x98, 1, 2, 3, 4, 5, 6, 7 };
	pthread_t t[2];

	rounds = argc > 1 ? strtoul(argv[1], NULL, 10) : env_count("OTEL_TEST_RACE_ROUNDS", 1000000);
	CHECK_OK(otel_thread_ctx_create(&ctx));
	CHECK_OK(otel_thread_ctx_set_ids(ctx, trace, span, 1));
	CHECK_OK(otel_thread_ctx_update(ctx));
	for (int i = 0; i < 2; i++)
		CHECK(pthread_create(&t[i], NULL, racer, (void *)(intptr_t)i) == 0, "pthread_create");
	for (int i = 0; i < 2; i++)
		CHECK(pthread_join(t[i], NULL) == 0, "pthread_join");
	printf("%lu rounds: thread 0 won %lu, thread 1 won %lu, both %lu, neither %lu\n", rounds,
	       wins[0], wins[1], both, neither);
	CHECK(both == 0, "%lu rounds with two owners", both);
	CHECK(neither == 0, "%lu rounds with no owner", neither);
	CHECK(wins[0] + wins[1] == rounds, "rounds miscounted");
	CHECK_OK(otel_thread_ctx_destroy(ctx));
	return 0;
}
