/* SPDX-License-Identifier: Apache-2.0 */
/* Internal: the pool the threads' records come from (src/pool.c). */
#ifndef OTEL_POOL_H
#define OTEL_POOL_H

#include "otel_thread_ctx.h"

struct otel__thread;

/* A publishing thread's two records, and what the pool keeps beside them. */
struct otel__pair {
	struct otel_thread_ctx_record rec[2];
	/* The thread the pair belongs to; NULL while it is in the pool. */
	struct otel__thread *owner;
	/* In the pool: 1 + the index of the next free pair, 0 at the end. */
	uint32_t next;
	/* Its own index in the pool. */
	uint32_t index;
};

/*
 * Stores in *out a pair for `owner`, both records with valid = 1 (the rest
 * of their bytes are whatever they held before).  Returns OK, or ENOMEM when
 * no memory can be mapped, or EFULL when OTEL_THREAD_CTX_THREADS_MAX pairs
 * belong to threads; a failure changes nothing.  No lock, no malloc:
 * compare-and-swaps, or mmap().  Async-signal-safe.
 */
int otel__pool_take(struct otel__thread *owner, struct otel__pair **out);

/* Gives a pair back.  Nothing may lead to its records any more.
 * Async-signal-safe. */
void otel__pool_give(struct otel__pair *pair);

/* In the child of fork(): gives back every pair that belongs to a thread
 * other than `self`, which the child does not have. */
void otel__pool_reclaim_after_fork(const struct otel__thread *self);

/* How many pairs belong to threads now. */
unsigned int otel__pool_in_use(void);

#ifdef OTEL__POOL_TEST_HOOKS
/* Tests only (tests/lifetimes/pool.c compiles the pool in with
 * OTEL__POOL_TEST_HOOKS): the index of the next pair never handed out, as if
 * `index` pairs had been (capped at the pool's size), to reach a full pool
 * without 129,024 threads.  Its slabs are mapped as usual when their pairs
 * are taken. */
void otel__pool_test_set_fresh(uint32_t index);
#endif

#endif /* OTEL_POOL_H */
