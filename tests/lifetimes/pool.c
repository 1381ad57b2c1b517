/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pool the threads' records come from (src/pool.c), compiled in here
 * and driven directly, harder than thread start and exit ever drive it.
 *
 *   pool race [seconds]   threads take and give back pairs as fast as they
 *                         can, two at a time, giving back the first while
 *                         they hold the second (the take, take, give that
 *                         lets a compare-and-swap on the free list's head
 *                         succeed on a stale `next` unless the head counts
 *                         its changes).  A pair must never be held by two
 *                         threads: each take marks the pair held (an atomic
 *                         exchange that must find it free) and writes the
 *                         taker into both records, and the taker checks its
 *                         marks are still there before it gives the pair
 *                         back.  Every pair taken has both records valid and
 *                         the taker as owner.
 *   pool fork             pairs taken for three owners, then fork(): in the
 *                         child, the reclaim of the fork gives back the
 *                         pairs of the two owners the child does not have,
 *                         and keeps the forking one's: new takes get exactly
 *                         the two pairs given back, never the kept one.
 *
 * Plain program (minitest.h); under ThreadSanitizer the race also checks
 * that the pool orders a pair's records written by one holder before the
 * next holder's writes.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "minitest.h"
#include "pool.h"
#include "testenv.h"

#define THREADS 6
#define MAX_PAIRS 4096

/* The pool knows owners only by address. */
struct otel__thread {
	int id;
};

static struct otel__thread owners[THREADS + 3];
static unsigned char held[MAX_PAIRS]; /* atomic: 1 while a thread holds the pair */
static int stop;                      /* atomic */
static unsigned long rounds[THREADS];

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static struct otel__pair *take(struct otel__thread *me)
{
	struct otel__pair *p = otel__pool_take(me);

	CHECK(p != NULL, "the pool gave no pair (no memory?)");
	CHECK(p->index < MAX_PAIRS, "pair index %u", p->index);
	/* Relaxed: only the pool may order one holder's writes before the
	 * next one's (ThreadSanitizer checks that it does). */
	CHECK(__atomic_exchange_n(&held[p->index], 1, __ATOMIC_RELAXED) == 0,
	      "pair %u handed to owner %d while another owner holds it", p->index, me->id);
	CHECK(p->owner == me, "pair %u: owner is not its taker", p->index);
	CHECK(p->rec[0].valid == 1 && p->rec[1].valid == 1,
	      "pair %u taken with records not valid (%u, %u)", p->index, p->rec[0].valid,
	      p->rec[1].valid);
	/* Mark both records as the taker's. */
	memset(p->rec[0].trace_id, me->id, sizeof(p->rec[0].trace_id));
	memset(p->rec[1].span_id, me->id, sizeof(p->rec[1].span_id));
	return p;
}

static void give(struct otel__thread *me, struct otel__pair *p)
{
	for (size_t i = 0; i < sizeof(p->rec[0].trace_id); i++)
		CHECK(p->rec[0].trace_id[i] == (uint8_t)me->id,
		      "pair %u: another owner wrote it while owner %d held it", p->index, me->id);
	for (size_t i = 0; i < sizeof(p->rec[1].span_id); i++)
		CHECK(p->rec[1].span_id[i] == (uint8_t)me->id,
		      "pair %u: another owner wrote it while owner %d held it", p->index, me->id);
	__atomic_store_n(&held[p->index], 0, __ATOMIC_RELAXED);
	otel__pool_give(p);
}

static void *racer(void *arg)
{
	struct otel__thread *me = arg;
	unsigned long n = 0;

	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		struct otel__pair *a = take(me), *b = take(me);

		give(me, a);
		if (++n % 3 == 0) {
			struct otel__pair *c = take(me);

			give(me, b);
			give(me, c);
		} else {
			give(me, b);
		}
	}
	rounds[me->id - 1] = n;
	return NULL;
}

static int race(double seconds)
{
	pthread_t t[THREADS];
	unsigned long total = 0;
	double end = now_s() + seconds;

	for (int i = 0; i < THREADS; i++) {
		owners[i].id = i + 1;
		CHECK(pthread_create(&t[i], NULL, racer, &owners[i]) == 0, "pthread_create");
	}
	while (now_s() < end)
		usleep(10000);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < THREADS; i++) {
		CHECK(pthread_join(t[i], NULL) == 0, "pthread_join");
		total += rounds[i];
	}
	CHECK(total > 0, "no round was run");
	for (unsigned i = 0; i < MAX_PAIRS; i++)
		CHECK(held[i] == 0, "pair %u still held", i);
	printf("pool race: %d threads, %lu rounds of take, take, give, give in %.1f s; no pair "
	       "ever held twice\n", THREADS, total, seconds);
	return 0;
}

static int fork_reclaim(void)
{
	struct otel__thread *gone1 = &owners[THREADS], *gone2 = &owners[THREADS + 1];
	struct otel__thread *self = &owners[THREADS + 2];
	struct otel__pair *p1, *p2, *mine;
	pid_t pid;
	int status;

	gone1->id = 101;
	gone2->id = 102;
	self->id = 103;
	p1 = take(gone1);
	mine = take(self);
	p2 = take(gone2);
	fflush(NULL);
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		struct otel__pair *a, *b;

		otel__pool_reclaim_after_fork(self);
		CHECK(mine->owner == self, "the forking owner's pair was given back");
		CHECK(p1->owner == NULL && p2->owner == NULL,
		      "the pairs of owners the child does not have were not given back");
		memset(held, 0, sizeof(held));
		held[mine->index] = 1;
		a = take(gone1);
		b = take(gone2);
		CHECK((a == p1 && b == p2) || (a == p2 && b == p1),
		      "the child's new takes got pairs %u and %u, not the reclaimed %u and %u",
		      a->index, b->index, p1->index, p2->index);
		CHECK(mine->owner == self && mine->rec[0].trace_id[0] == 103,
		      "the forking owner's pair changed");
		_exit(0);
	}
	CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child failed (status %#x)",
	      status);
	give(gone1, p1);
	give(self, mine);
	give(gone2, p2);
	printf("pool fork: the child got back the pairs of the owners it does not have, and "
	       "kept the forking one's\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "race") == 0)
		return race(argc > 2 ? strtod(argv[2], NULL) :
				       (double)env_count("OTEL_TEST_POOL_SECONDS", 2));
	if (argc == 2 && strcmp(argv[1], "fork") == 0)
		return fork_reclaim();
	fprintf(stderr, "usage: pool race [seconds] | pool fork\n");
	return 2;
}
