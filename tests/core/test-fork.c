/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fork(): in the child, the thread that called fork() keeps publishing what
 * it published, from the same record, and publishes on as before; the
 * records of the parent's other threads, which the child does not have, go
 * back to the pool there: N new threads of the child publish from exactly
 * the records the parent's N other threads hold.  Nothing a child does
 * reaches the parent.
 */
#include <stdio.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

static const uint8_t trace_a[16] = { 0xaa, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
static const uint8_t span_a[8] = { 0xbb, 1, 2, 3, 4, 5, 6, 7 };
static const uint8_t span_b[8] = { 0xcc, 1, 2, 3, 4, 5, 6, 7 };
static const uint8_t span_c[8] = { 0xdd, 1, 2, 3, 4, 5, 6, 7 };

/* Runs `child` in a forked child and returns its exit status (0: all
 * checks passed; otherwise the number of the check that failed). */
static int in_child(int (*child)(void *), void *arg)
{
	int status = -1;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(child(arg));
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status), "child did not exit normally");
	return WEXITSTATUS(status);
}

/* ------------------------------------------------------------------------ */
/* Threads that publish from both their records, and hold them.               */

#define OTHERS 8

struct pairer {
	/* All pairers of a group hold their records at once. */
	pthread_barrier_t *all;
	sem_t *release; /* or, when not NULL, until released */
	uint8_t tag;
	int rc;
	uintptr_t base; /* the lower address of the thread's two records */
	struct published seen;
};

static void pairer_init(struct pairer *p, pthread_barrier_t *all, sem_t *release, uint8_t tag)
{
	memset(p, 0, sizeof(*p));
	p->all = all;
	p->release = release;
	p->tag = tag;
	p->rc = -1;
}

static void *publish_from_both(void *arg)
{
	struct pairer *p = arg;
	const struct otel_thread_ctx_record *first;
	uint8_t span[8] = { 0xee, 0, 0, 0, 0, 0, 0, 1 };
	struct otel_thread_ctx_attr a = { 1, 1, &p->tag };
	struct published now;

	span[1] = p->tag;
	p->rc = otel_thread_ctx_update_all(trace_a, span_a, 1, &a, 1);
	first = otel_thread_ctx_v1;
	if (p->rc == 0)
		p->rc = otel_thread_ctx_update_span_id(span);
	if (p->rc == 0 && (first == NULL || first == otel_thread_ctx_v1))
		p->rc = -1000;
	if (p->rc == 0)
		p->base = (uintptr_t)(first < otel_thread_ctx_v1 ? first : otel_thread_ctx_v1);
	p->seen = read_published();
	if (p->all != NULL)
		pthread_barrier_wait(p->all);
	if (p->release != NULL) {
		sem_wait(p->release);
		now = read_published();
		if (p->rc == 0 && !published_equal(&p->seen, &now))
			p->rc = -1001;
	}
	return NULL;
}

static int by_value(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;

	return x < y ? -1 : x > y;
}

/* ------------------------------------------------------------------------ */
/* The forking thread.                                                        */

struct expect {
	const struct otel_thread_ctx_record *slot;
	struct otel_thread_ctx_record rec;
};

static int child_keeps_publishing(void *arg)
{
	struct expect *e = arg;
	const struct otel_thread_ctx_record *r = otel_thread_ctx_v1;
	struct otel_thread_ctx_record want, got;
	otel_thread_ctx *other = NULL, *saved = NULL;
	struct pairer p;
	pthread_t t;

	if (r != e->slot)
		return 1;
	if (!same_record(r, &e->rec))
		return 2;
	if (otel_thread_ctx_read(&got) != 0 || !same_record(&got, &e->rec))
		return 3;
	/* The fast paths go on from the record the parent published. */
	want = e->rec;
	memcpy(want.span_id, span_c, 8);
	if (otel_thread_ctx_update_span_id(span_c) != 0 || otel_thread_ctx_v1 == r ||
	    !same_record(otel_thread_ctx_v1, &want))
		return 4;
	want.trace_flags = 0;
	if (otel_thread_ctx_update_trace_flags(0) != 0 || !same_record(otel_thread_ctx_v1, &want))
		return 5;
	/* A scope. */
	if (otel_thread_ctx_create(&other) || otel_thread_ctx_create(&saved) ||
	    otel_thread_ctx_set_ids(other, trace_a, span_b, 0) ||
	    otel_thread_ctx_attach(other, saved))
		return 6;
	if (otel_thread_ctx_get(saved, &got) != 0 || !same_record(&got, &want) ||
	    memcmp(otel_thread_ctx_v1->span_id, span_b, 8) != 0)
		return 7;
	if (otel_thread_ctx_update(saved) != 0 || !same_record(otel_thread_ctx_v1, &want))
		return 8;
	otel_thread_ctx_destroy(other);
	otel_thread_ctx_destroy(saved);
	if (otel_thread_ctx_detach(NULL) != 0 || otel_thread_ctx_v1 != NULL)
		return 9;
	/* And a new thread of the child publishes. */
	pairer_init(&p, NULL, NULL, 7);
	if (pthread_create(&t, NULL, publish_from_both, &p) != 0 || pthread_join(t, NULL) != 0)
		return 10;
	if (p.rc != 0 || p.seen.slot == NULL || p.seen.rec.attrs_data[2] != 7)
		return 11;
	return 0;
}

static int grandchild(void *arg)
{
	struct expect *e = arg;
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return 20;
	if (pid == 0)
		_exit(child_keeps_publishing(e));
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return 21;
	if (WEXITSTATUS(status) != 0)
		return 30 + WEXITSTATUS(status);
	/* And this child still has it too. */
	return child_keeps_publishing(e);
}

START_TEST(the_forking_thread_keeps_publishing)
{
	otel_thread_ctx *ctx = new_ctx();
	struct expect e;

	ck_assert_ok(otel_thread_ctx_set_ids(ctx, trace_a, span_a, 1));
	ck_assert_ok(otel_thread_ctx_set_attr(ctx, 2, "forked", 6));
	ck_assert_ok(otel_thread_ctx_attach(ctx, NULL));
	otel_thread_ctx_destroy(ctx);
	/* The thread's draft is behind its record after a fast path. */
	ck_assert_ok(otel_thread_ctx_update_span_id(span_b));
	e.slot = otel_thread_ctx_v1;
	memcpy(&e.rec, e.slot, sizeof(e.rec));

	ck_assert_int_eq(in_child(child_keeps_publishing, &e), 0);
	ck_assert_int_eq(in_child(grandchild, &e), 0);

	/* The children's changes stayed in the children. */
	ck_assert_ptr_eq(otel_thread_ctx_v1, e.slot);
	ck_assert_mem_eq(otel_thread_ctx_v1, &e.rec, sizeof(e.rec));
	ck_assert_ok(otel_thread_ctx_detach(NULL));
}
END_TEST

/* ------------------------------------------------------------------------ */
/* The other threads.                                                          */

struct others {
	uintptr_t bases[OTHERS]; /* of the parent's other threads, sorted */
	const struct otel_thread_ctx_record *slot; /* of the forking thread */
};

static int child_reuses_their_records(void *arg)
{
	struct others *o = arg;
	pthread_barrier_t all;
	struct pairer p[OTHERS];
	pthread_t t[OTHERS];
	uintptr_t bases[OTHERS];

	/* The forking thread still publishes its own. */
	if (otel_thread_ctx_v1 != o->slot)
		return 1;
	if (pthread_barrier_init(&all, NULL, OTHERS) != 0)
		return 2;
	for (int i = 0; i < OTHERS; i++) {
		pairer_init(&p[i], &all, NULL, (uint8_t)(100 + i));
		if (pthread_create(&t[i], NULL, publish_from_both, &p[i]) != 0)
			return 3;
	}
	for (int i = 0; i < OTHERS; i++) {
		if (pthread_join(t[i], NULL) != 0)
			return 4;
		if (p[i].rc != 0 || p[i].seen.rec.attrs_data[2] != 100 + i)
			return 5;
		bases[i] = p[i].base;
	}
	/* They published at once, from exactly the records the parent's
	 * other threads hold: those went back to the pool. */
	qsort(bases, OTHERS, sizeof(bases[0]), by_value);
	if (memcmp(bases, o->bases, sizeof(bases)) != 0)
		return 6;
	if (otel_thread_ctx_v1 != o->slot)
		return 7;
	return 0;
}

START_TEST(other_threads_records_go_back_to_the_pool_in_the_child)
{
	pthread_barrier_t all;
	sem_t release;
	struct pairer p[OTHERS];
	pthread_t t[OTHERS];
	struct others o;
	otel_thread_ctx *ctx = new_ctx();

	/* This thread publishes too: it keeps its records in the child. */
	ck_assert_ok(otel_thread_ctx_set_ids(ctx, trace_a, span_b, 0));
	ck_assert_ok(otel_thread_ctx_attach(ctx, NULL));
	o.slot = otel_thread_ctx_v1;
	pthread_barrier_init(&all, NULL, OTHERS + 1);
	sem_init(&release, 0, 0);
	for (int i = 0; i < OTHERS; i++) {
		pairer_init(&p[i], &all, &release, (uint8_t)i);
		ck_assert_int_eq(pthread_create(&t[i], NULL, publish_from_both, &p[i]), 0);
	}
	pthread_barrier_wait(&all);
	for (int i = 0; i < OTHERS; i++) {
		ck_assert_ok(p[i].rc);
		o.bases[i] = p[i].base;
	}
	qsort(o.bases, OTHERS, sizeof(o.bases[0]), by_value);
	for (int i = 1; i < OTHERS; i++)
		ck_assert(o.bases[i] != o.bases[i - 1]);

	/* Twice: each child reclaims them for itself. */
	ck_assert_int_eq(in_child(child_reuses_their_records, &o), 0);
	ck_assert_int_eq(in_child(child_reuses_their_records, &o), 0);

	/* In the parent they are still the threads', unchanged. */
	for (int i = 0; i < OTHERS; i++)
		sem_post(&release);
	for (int i = 0; i < OTHERS; i++) {
		ck_assert_int_eq(pthread_join(t[i], NULL), 0);
		ck_assert_msg(p[i].rc == 0, "thread %d: %d", i, p[i].rc);
	}
	ck_assert_ptr_eq(otel_thread_ctx_v1, o.slot);
	ck_assert_ok(otel_thread_ctx_detach(NULL));
	otel_thread_ctx_destroy(ctx);
	pthread_barrier_destroy(&all);
	sem_destroy(&release);
}
END_TEST

/* A child made while nothing is published on the forking thread, which
 * never published: it starts like any process. */
static int child_starts_empty(void *arg)
{
	otel_thread_ctx *ctx = NULL;

	(void)arg;
	if (otel_thread_ctx_v1 != NULL)
		return 1;
	if (otel_thread_ctx_update_span_id(span_a) != OTEL_THREAD_CTX_ENOCTX)
		return 2;
	if (otel_thread_ctx_create(&ctx) || otel_thread_ctx_set_ids(ctx, trace_a, span_a, 0) ||
	    otel_thread_ctx_attach(ctx, NULL))
		return 3;
	if (otel_thread_ctx_v1 == NULL || memcmp(otel_thread_ctx_v1->trace_id, trace_a, 16) != 0)
		return 4;
	otel_thread_ctx_destroy(ctx);
	return otel_thread_ctx_detach(NULL) == 0 ? 0 : 5;
}

static void *fork_from_a_new_thread(void *arg)
{
	int *status = arg;
	pid_t pid = fork();

	if (pid == 0)
		_exit(child_starts_empty(NULL));
	if (pid < 0 || waitpid(pid, status, 0) != pid)
		*status = -1;
	return NULL;
}

START_TEST(a_thread_that_never_published_forks_a_clean_child)
{
	pthread_t t;
	int status = -1;

	ck_assert_int_eq(pthread_create(&t, NULL, fork_from_a_new_thread, &status), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
}
END_TEST

/* ThreadSanitizer refuses to start a thread in the child of a
 * multi-threaded process, which others-reclaimed must do. */
#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif

Suite *test_suite(void)
{
	/* qemu-user (the emulated setup says so) crashes when the child of
	 * a multi-threaded fork starts a thread. */
	const char *emulated = getenv("OTEL_TEST_EMULATED");
	int threads_in_child = !(emulated != NULL && *emulated != '\0');
	struct test_case cases[3];
	size_t n = 0;

#ifdef UNDER_TSAN
	threads_in_child = 0;
#endif
	cases[n++] = (struct test_case){ "forking-thread-keeps", the_forking_thread_keeps_publishing };
	if (threads_in_child)
		cases[n++] = (struct test_case){ "others-reclaimed",
						 other_threads_records_go_back_to_the_pool_in_the_child };
	else
		printf("fork: others-reclaimed left out: neither ThreadSanitizer nor qemu-user "
		       "starts a thread in the child of a multi-threaded fork (the native "
		       "configurations run it)\n");
	cases[n++] = (struct test_case){ "never-published-forks",
					 a_thread_that_never_published_forks_a_clean_child };
	return make_suite("fork", cases, n, 0);
}
