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
 * A pair for `owner`, both records with valid = 1 (the rest of their bytes
 * are whatever they held before), or NULL when no memory can be mapped.
 * No lock, no malloc: a compare-and-swap on the free list, or mmap().
 * Async-signal-safe.
 */
struct otel__pair *otel__pool_take(struct otel__thread *owner);

/* Gives a pair back.  Nothing may lead to its records any more.
 * Async-signal-safe. */
void otel__pool_give(struct otel__pair *pair);

/* In the child of fork(): gives back every pair that belongs to a thread
 * other than `self`, which the child does not have. */
void otel__pool_reclaim_after_fork(const struct otel__thread *self);

#endif /* OTEL_POOL_H */
