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
 *   pool shortage         mmap() fails (an interposed mmap, below) at each
 *                         of the first slabs' growth steps, 140,000 times at
 *                         one of them, more than the pool has pairs: every
 *                         take fails with ENOMEM, and once mmap() works
 *                         again the next take gets exactly the next index,
 *                         so a failure took nothing; the pairs in use count
 *                         only the takes that succeeded.
 *   pool full             the pool driven to its last pairs (the test hook
 *                         otel__pool_test_set_fresh, then to 2^32 - 1, where
 *                         a counter that wrapped would hand out pair 0 while
 *                         its owner holds it): takes past the last pair fail
 *                         with EFULL, a million of them leave the counter
 *                         where it was, and a pair given back is taken
 *                         again.
 *   pool fork             pairs taken for three owners, then fork(): in the
 *                         child, the reclaim of the fork gives back the
 *                         pairs of the two owners the child does not have,
 *                         and keeps the forking one's: new takes get exactly
 *                         the two pairs given back, never the kept one.
 *
 * Plain program (tests/lib/check-lite.h); under ThreadSanitizer the race also checks
 * that the pool orders a pair's records written by one holder before the
 * next holder's writes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check-lite.h"
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

/*
 * mmap() for the whole process: the system call, or ENOMEM while
 * `maps_fail` is set.  Defined in the executable, it is the one the pool
 * (compiled in) calls.  Counted only while failing.
 */
static int maps_fail;
static unsigned long maps_refused;

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	long r;

	if (__atomic_load_n(&maps_fail, __ATOMIC_RELAXED)) {
		__atomic_fetch_add(&maps_refused, 1, __ATOMIC_RELAXED);
		errno = ENOMEM;
		return MAP_FAILED;
	}
	r = syscall(SYS_mmap, addr, len, prot, flags, fd, off);
	if (r < 0 && r > -4096) {
		errno = (int)-r;
		return MAP_FAILED;
	}
	return (void *)r;
}

static struct otel__pair *take(struct otel__thread *me)
{
	struct otel__pair *p = NULL;
	int err = otel__pool_take(me, &p);

	ck_assert_msg(err == 0 && p != NULL, "the pool gave no pair (%d)", err);
	ck_assert_msg(p->index < MAX_PAIRS, "pair index %u", p->index);
	/* Relaxed: only the pool may order one holder's writes before the
	 * next one's (ThreadSanitizer checks that it does). */
	ck_assert_msg(__atomic_exchange_n(&held[p->index], 1, __ATOMIC_RELAXED) == 0,
	      "pair %u handed to owner %d while another owner holds it", p->index, me->id);
	ck_assert_msg(p->owner == me, "pair %u: owner is not its taker", p->index);
	ck_assert_msg(p->rec[0].valid == 1 && p->rec[1].valid == 1,
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
		ck_assert_msg(p->rec[0].trace_id[i] == (uint8_t)me->id,
		      "pair %u: another owner wrote it while owner %d held it", p->index, me->id);
	for (size_t i = 0; i < sizeof(p->rec[1].span_id); i++)
		ck_assert_msg(p->rec[1].span_id[i] == (uint8_t)me->id,
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
		ck_assert_msg(pthread_create(&t[i], NULL, racer, &owners[i]) == 0, "pthread_create");
	}
	while (now_s() < end)
		usleep(10000);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < THREADS; i++) {
		ck_assert_msg(pthread_join(t[i], NULL) == 0, "pthread_join");
		total += rounds[i];
	}
	ck_assert_msg(total > 0, "no round was run");
	for (unsigned i = 0; i < MAX_PAIRS; i++)
		ck_assert_msg(held[i] == 0, "pair %u still held", i);
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
	ck_assert_msg(pid >= 0, "fork");
	if (pid == 0) {
		struct otel__pair *a, *b;

		otel__pool_reclaim_after_fork(self);
		ck_assert_msg(mine->owner == self, "the forking owner's pair was given back");
		ck_assert_msg(p1->owner == NULL && p2->owner == NULL,
		      "the pairs of owners the child does not have were not given back");
		memset(held, 0, sizeof(held));
		held[mine->index] = 1;
		a = take(gone1);
		b = take(gone2);
		ck_assert_msg((a == p1 && b == p2) || (a == p2 && b == p1),
		      "the child's new takes got pairs %u and %u, not the reclaimed %u and %u",
		      a->index, b->index, p1->index, p2->index);
		ck_assert_msg(mine->owner == self && mine->rec[0].trace_id[0] == 103,
		      "the forking owner's pair changed");
		_exit(0);
	}
	ck_assert_msg(waitpid(pid, &status, 0) == pid, "waitpid");
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child failed (status %#x)",
	      status);
	give(gone1, p1);
	give(self, mine);
	give(gone2, p2);
	printf("pool fork: the child got back the pairs of the owners it does not have, and "
	       "kept the forking one's\n");
	return 0;
}

/* The pool's own figures (src/pool.c). */
#define SLAB_PAIRS 63u
#define POOL_PAIRS 129024u

static int shortage(unsigned long attempts)
{
	static struct otel__pair *taken[5 * SLAB_PAIRS];
	struct otel__thread *me = &owners[0];
	unsigned int in_use0 = otel__pool_in_use();

	me->id = 1;
	for (unsigned i = 0; i < 5 * SLAB_PAIRS; i++) {
		if (i % SLAB_PAIRS == 0) {
			/* A growth step: the slab of pair i is not mapped. */
			unsigned long n = i == 2 * SLAB_PAIRS ? attempts : 1000;

			__atomic_store_n(&maps_fail, 1, __ATOMIC_RELAXED);
			for (unsigned long k = 0; k < n; k++) {
				struct otel__pair *p = NULL;
				int err = otel__pool_take(me, &p);

				ck_assert_msg(err == -ENOMEM && p == NULL,
				      "pair %u, mmap() failing: attempt %lu got %d", i, k, err);
			}
			__atomic_store_n(&maps_fail, 0, __ATOMIC_RELAXED);
			ck_assert_msg(otel__pool_in_use() == in_use0 + i,
			      "pair %u: %u pairs in use after failed takes, not %u", i,
			      otel__pool_in_use(), in_use0 + i);
		}
		taken[i] = take(me);
		ck_assert_msg(taken[i]->index == i, "after failed takes the pool handed out pair %u, not %u: "
		      "a failure took an index", taken[i]->index, i);
	}
	ck_assert_msg(otel__pool_in_use() == in_use0 + 5 * SLAB_PAIRS, "%u pairs in use",
	      otel__pool_in_use());
	for (unsigned i = 0; i < 5 * SLAB_PAIRS; i++)
		give(me, taken[i]);
	ck_assert_msg(otel__pool_in_use() == in_use0, "%u pairs in use after every give",
	      otel__pool_in_use());
	printf("pool shortage: %lu takes refused with ENOMEM at 5 growth steps (%lu at one), none "
	       "took an index; the %u takes after them got pairs 0 to %u in order\n",
	       maps_refused, attempts, 5 * SLAB_PAIRS, 5 * SLAB_PAIRS - 1);
	return 0;
}

/* Takes that must fail with EFULL, n times. */
static void refused_full(struct otel__thread *me, unsigned long n, const char *when)
{
	for (unsigned long k = 0; k < n; k++) {
		struct otel__pair *p = NULL;
		int err = otel__pool_take(me, &p);

		ck_assert_msg(err == OTEL_THREAD_CTX_EFULL && p == NULL, "%s: take %lu got %d (pair %u), not EFULL", when, k,
		      err, p != NULL ? p->index : 0);
	}
}

static int full(unsigned long attempts)
{
	struct otel__thread *me = &owners[0], *other = &owners[1];
	struct otel__pair *first, *a, *b, *again;

	me->id = 1;
	other->id = 2;
	/* Pair 0 is held throughout: a wrapped counter would hand it out. */
	first = take(other);
	ck_assert_msg(first->index == 0, "the first pair is %u", first->index);
	otel__pool_test_set_fresh(POOL_PAIRS - 2);
	a = b = NULL;
	ck_assert_msg(otel__pool_take(me, &a) == 0 && otel__pool_take(me, &b) == 0,
	      "no pair for the last two");
	ck_assert_msg(a != NULL && b != NULL && a->index == POOL_PAIRS - 2 && b->index == POOL_PAIRS - 1,
	      "the last two pairs were not handed out");
	ck_assert_msg(a->owner == me && b->owner == me && a->rec[0].valid == 1 && b->rec[1].valid == 1,
	      "the last pairs are not set up");
	refused_full(me, attempts, "a full pool");
	/* The counter saturated: the hook, told 2^32 - 1, keeps it there. */
	otel__pool_test_set_fresh(UINT32_MAX);
	refused_full(me, 1000, "a counter told 2^32 - 1");
	/* A pair given back serves the next take, then the pool is full again. */
	otel__pool_give(a);
	again = NULL;
	ck_assert_msg(otel__pool_take(me, &again) == 0 && again == a,
	      "a pair given back to a full pool was not taken again");
	refused_full(me, 1000, "full again");
	otel__pool_give(again);
	otel__pool_give(b);
	give(other, first);
	printf("pool full: pairs %u and %u handed out last; %lu takes after them refused with "
	       "EFULL, and 1,000 more with the counter at 2^32 - 1; a pair given back was "
	       "taken again\n", POOL_PAIRS - 2, POOL_PAIRS - 1, attempts);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "shortage") == 0)
		return shortage(env_count("OTEL_TEST_POOL_ATTEMPTS", 140000));
	if (argc == 2 && strcmp(argv[1], "full") == 0)
		return full(env_count("OTEL_TEST_POOL_ATTEMPTS", 1000000));
	if (argc >= 2 && strcmp(argv[1], "race") == 0)
		return race(argc > 2 ? strtod(argv[2], NULL) :
				       (double)env_count("OTEL_TEST_POOL_SECONDS", 2));
	if (argc == 2 && strcmp(argv[1], "fork") == 0)
		return fork_reclaim();
	fprintf(stderr, "usage: pool race [seconds] | pool shortage | pool full | pool fork\n");
	return 2;
}
