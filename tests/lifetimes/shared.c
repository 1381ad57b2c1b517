/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Many threads attach one context at the same moment, round after round,
 * and every one succeeds: a context is a value, and each thread publishes
 * its own copy of it in its own record.  (An owned context once let exactly
 * one of them win; nothing may refuse now.)
 *
 * Each round the main thread writes the round's record into a new context
 * and opens the gate; the threads, spinning on it, attach the context at
 * once, each with `saved` receiving what it published before (the last
 * round's record).  Every thread then checks:
 *
 * - attach returned OK, its slot leads to exactly the round's record
 *   (built here byte by byte), and `saved` holds exactly the last round's;
 * - its record is its own: no two threads' slots lead to one record, and
 *   none leads into the context;
 * - what it publishes does not change when the main thread then edits the
 *   context and destroys it while every thread still publishes its copy
 *   (the counting allocator, where it is in use, also stops the program if
 *   memory a slot leads to is freed).
 *
 * Between rounds the threads wait: the context is written by the main
 * thread only while no thread reads it.
 *
 *   usage: shared [rounds [threads]]   (default: OTEL_TEST_RACE_ROUNDS / 50,
 *                                       else 20,000 rounds; 4 threads)
 */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "counting-malloc.h"
#include "check-lite.h"
#include "otel_thread_ctx.h"
#include "testenv.h"

#define MAX_THREADS 16
#define HEADER offsetof(struct otel_thread_ctx_record, attrs_data)

static unsigned long rounds;
static unsigned nthreads;
static otel_thread_ctx *ctx; /* the round's context */
/* Atomics: the last round whose attach may start, and whose check may
 * start (the context edited and destroyed); the threads that attached,
 * and that checked, in all rounds so far. */
static unsigned long attach_gate, check_gate, attached, checked;
static const struct otel_thread_ctx_record *slots[MAX_THREADS];
static unsigned long records_seen_shared;

static void wait_for(const unsigned long *counter, unsigned long value)
{
	unsigned int spins = 0;

	while (__atomic_load_n(counter, __ATOMIC_ACQUIRE) < value)
		if (++spins % 64 == 0)
			sched_yield(); /* valgrind and qemu run one thread at a time */
}

/* The record of round r: ids from r, flags r & 1, one attribute whose
 * length varies with r. */
static void expected(unsigned long r, struct otel_thread_ctx_record *rec)
{
	uint64_t v = r, w = ~(uint64_t)r;
	size_t len = 1 + r % 40;

	memset(rec, 0, sizeof(*rec));
	memcpy(rec->trace_id, &v, 8);
	memcpy(rec->trace_id + 8, &w, 8);
	v = r * 0x9e3779b97f4a7c15u | 1;
	memcpy(rec->span_id, &v, 8);
	rec->valid = 1;
	rec->trace_flags = r & 1;
	rec->attrs_data[0] = 7;
	rec->attrs_data[1] = (uint8_t)len;
	for (size_t i = 0; i < len; i++)
		rec->attrs_data[2 + i] = (uint8_t)('a' + (r + i) % 26);
	rec->attrs_data_size = (uint16_t)(2 + len);
}

static int same_record(const struct otel_thread_ctx_record *a,
		       const struct otel_thread_ctx_record *b)
{
	return memcmp(a, b, HEADER) == 0 &&
	       memcmp(a->attrs_data, b->attrs_data, b->attrs_data_size) == 0;
}

static void *attacher(void *arg)
{
	unsigned me = (unsigned)(uintptr_t)arg;
	struct otel_thread_ctx_record want, before, got;
	otel_thread_ctx *saved;

	ck_assert_int_eq(otel_thread_ctx_create(&saved), 0);
	for (unsigned long r = 1; r <= rounds; r++) {
		const struct otel_thread_ctx_record *mine;
		int rc;

		wait_for(&attach_gate, r);
		/* All threads at once, on one context. */
		rc = otel_thread_ctx_attach(ctx, saved);
		ck_assert_msg(rc == OTEL_THREAD_CTX_OK, "round %lu, thread %u: attach returned %d (%s)", r,
		      me, rc, otel_thread_ctx_strerror(rc));
		mine = otel_thread_ctx_v1;
		expected(r, &want);
		ck_assert_msg(mine != NULL && same_record(mine, &want),
		      "round %lu, thread %u: the slot does not lead to the context's record", r, me);
		rc = otel_thread_ctx_get(saved, &got);
		if (r == 1) {
			ck_assert_msg(rc == OTEL_THREAD_CTX_ENOCTX, "round 1, thread %u: saved holds a "
			      "record (%d), but nothing was published before", me, rc);
		} else {
			expected(r - 1, &before);
			ck_assert_msg(rc == OTEL_THREAD_CTX_OK && same_record(&got, &before),
			      "round %lu, thread %u: saved is not the last round's record (%d)", r,
			      me, rc);
		}
		slots[me] = mine;
		__atomic_fetch_add(&attached, 1, __ATOMIC_ACQ_REL);

		/* The main thread edits the context and destroys it. */
		wait_for(&check_gate, r);
		ck_assert_msg(otel_thread_ctx_v1 == mine && same_record(mine, &want),
		      "round %lu, thread %u: the record changed when the context was edited and "
		      "destroyed", r, me);
		__atomic_fetch_add(&checked, 1, __ATOMIC_ACQ_REL);
	}
	ck_assert_int_eq(otel_thread_ctx_detach(NULL), 0);
	otel_thread_ctx_destroy(saved);
	return NULL;
}

static void *const *own_slot(void)
{
	return (void *const *)&otel_thread_ctx_v1;
}

int main(int argc, char **argv)
{
	static const uint8_t other_trace[16] = { 0xee, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13 };
	static const uint8_t other_span[8] = { 0xdd, 1, 2, 3, 4, 5, 6, 7 };
	pthread_t t[MAX_THREADS];
	int slot_check;

	rounds = argc > 1 ? strtoul(argv[1], NULL, 10) :
			    env_count("OTEL_TEST_RACE_ROUNDS", 1000000) / 50;
	nthreads = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 4;
	ck_assert_msg(rounds > 0 && nthreads >= 2 && nthreads <= MAX_THREADS,
	      "usage: shared [rounds [threads 2-%d]]", MAX_THREADS);
	slot_check = counting_malloc_check_slots(own_slot);
	for (unsigned i = 0; i < nthreads; i++)
		ck_assert_msg(pthread_create(&t[i], NULL, attacher, (void *)(uintptr_t)i) == 0,
		      "pthread_create");
	for (unsigned long r = 1; r <= rounds; r++) {
		struct otel_thread_ctx_record rec;
		struct otel_thread_ctx_attr attr;

		expected(r, &rec);
		attr.key = rec.attrs_data[0];
		attr.len = rec.attrs_data[1];
		attr.value = rec.attrs_data + 2;
		ck_assert_int_eq(otel_thread_ctx_create(&ctx), 0);
		ck_assert_int_eq(otel_thread_ctx_set_ids(ctx, rec.trace_id, rec.span_id, rec.trace_flags), 0);
		ck_assert_int_eq(otel_thread_ctx_set_attrs(ctx, &attr, 1), 0);
		__atomic_store_n(&attach_gate, r, __ATOMIC_RELEASE);
		wait_for(&attached, r * nthreads);

		/* Every thread published: each its own record, none in the
		 * context. */
		for (unsigned i = 0; i < nthreads; i++) {
			const unsigned char *p = (const unsigned char *)slots[i];
			const unsigned char *c = (const unsigned char *)ctx;

			for (unsigned k = 0; k < i; k++)
				if (slots[k] == slots[i])
					records_seen_shared++;
			/* (A context takes less than 1 KiB.) */
			ck_assert_msg(p + sizeof(struct otel_thread_ctx_record) <= c || p >= c + 1024,
			      "round %lu: thread %u's slot leads into the context", r, i);
		}
		ck_assert_msg(records_seen_shared == 0, "round %lu: two threads publish one record", r);
		/* The context is a value: edited and destroyed while copies
		 * of it are published. */
		ck_assert_int_eq(otel_thread_ctx_set_ids(ctx, other_trace, other_span, 1), 0);
		ck_assert_int_eq(otel_thread_ctx_clear_attrs(ctx), 0);
		otel_thread_ctx_destroy(ctx);
		ctx = NULL;
		__atomic_store_n(&check_gate, r, __ATOMIC_RELEASE);
		wait_for(&checked, r * nthreads);
	}
	for (unsigned i = 0; i < nthreads; i++)
		ck_assert_msg(pthread_join(t[i], NULL) == 0, "pthread_join");
	printf("%lu rounds: %u threads attached one context at once, every attach succeeded, "
	       "each thread published its own copy, unchanged when the context was edited and "
	       "destroyed%s\n", rounds, nthreads,
	       slot_check ? " (and no memory a slot led to was freed)" : "");
	return 0;
}
