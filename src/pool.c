/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The records of publishing threads: pairs carved from slabs that are mapped
 * with mmap() and never unmapped, and a free list that threads take from
 * when they first publish and give back to when they exit.
 *
 * No lock and no malloc, so that the first publication of a thread, maybe in
 * a signal handler, is async-signal-safe.  The free list is a stack whose
 * head word holds the index of its top pair (plus one; 0: empty) in the low
 * 32 bits and a count of changes in the high 32: a pop that read a pair which
 * was popped and pushed back meanwhile fails its compare-and-swap on the
 * count (the ABA problem), and since slabs are never unmapped, reading a
 * pair's `next` after another thread took it is harmless.
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <stdbool.h>
#include <sys/mman.h>

#include "pool.h"

/* 63 pairs of 1,296 bytes fill 20 pages of 4 KiB; 2,048 slabs hold 129,024
 * threads publishing at once. */
#define PAIRS_PER_SLAB 63u
#define MAX_SLABS 2048u
#define SLAB_BYTES ((sizeof(struct otel__pair) * PAIRS_PER_SLAB + 4095u) & ~(size_t)4095u)

_Static_assert(sizeof(struct otel__pair) % 16 == 0, "records stay 16-byte aligned");

static struct otel__pair *slabs[MAX_SLABS];
/* Slab indices handed out (some may have failed to map: NULL in slabs). */
static unsigned int slabs_claimed;
/* (changes << 32) | (1 + index of the top free pair). */
static uint64_t free_head;

static inline struct otel__pair *pair_at(uint32_t index)
{
	struct otel__pair *slab = __atomic_load_n(&slabs[index / PAIRS_PER_SLAB], __ATOMIC_ACQUIRE);

	return slab + index % PAIRS_PER_SLAB;
}

/* Pushes the chain first..last (linked through `next`) on the free list. */
static void push_chain(struct otel__pair *first, struct otel__pair *last)
{
	uint64_t head = __atomic_load_n(&free_head, __ATOMIC_RELAXED), want;

	do {
		__atomic_store_n(&last->next, (uint32_t)head, __ATOMIC_RELAXED);
		want = ((head >> 32) + 1) << 32 | (first->index + 1);
	} while (!__atomic_compare_exchange_n(&free_head, &head, want, true, __ATOMIC_RELEASE,
					      __ATOMIC_RELAXED));
}

static struct otel__pair *claim(struct otel__pair *p, struct otel__thread *owner)
{
	__atomic_store_n(&p->owner, owner, __ATOMIC_RELAXED);
	p->rec[0].valid = 1;
	p->rec[1].valid = 1;
	return p;
}

/* A new slab: its first pair for the caller, the others to the pool. */
static struct otel__pair *grow(struct otel__thread *owner)
{
	unsigned int s = __atomic_fetch_add(&slabs_claimed, 1, __ATOMIC_RELAXED);
	struct otel__pair *slab;
	void *m;

	if (s >= MAX_SLABS)
		return NULL;
	m = mmap(NULL, SLAB_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	slab = m;
	for (uint32_t i = 0; i < PAIRS_PER_SLAB; i++) {
		slab[i].index = s * PAIRS_PER_SLAB + i;
		/* The chain 1 .. last; the last one's link is set when pushed. */
		slab[i].next = slab[i].index + 2;
	}
	__atomic_store_n(&slabs[s], slab, __ATOMIC_RELEASE);
	push_chain(&slab[1], &slab[PAIRS_PER_SLAB - 1]);
	return claim(&slab[0], owner);
}

struct otel__pair *otel__pool_take(struct otel__thread *owner)
{
	uint64_t head = __atomic_load_n(&free_head, __ATOMIC_ACQUIRE), want;
	struct otel__pair *p;

	do {
		uint32_t top = (uint32_t)head;

		if (top == 0)
			return grow(owner);
		p = pair_at(top - 1);
		want = ((head >> 32) + 1) << 32 | __atomic_load_n(&p->next, __ATOMIC_RELAXED);
	} while (!__atomic_compare_exchange_n(&free_head, &head, want, true, __ATOMIC_ACQUIRE,
					      __ATOMIC_ACQUIRE));
	return claim(p, owner);
}

void otel__pool_give(struct otel__pair *pair)
{
	__atomic_store_n(&pair->owner, NULL, __ATOMIC_RELAXED);
	push_chain(pair, pair);
}

void otel__pool_reclaim_after_fork(const struct otel__thread *self)
{
	unsigned int n = __atomic_load_n(&slabs_claimed, __ATOMIC_RELAXED);

	if (n > MAX_SLABS)
		n = MAX_SLABS;
	for (unsigned int s = 0; s < n; s++) {
		struct otel__pair *slab = __atomic_load_n(&slabs[s], __ATOMIC_ACQUIRE);

		if (slab == NULL)
			continue;
		for (uint32_t i = 0; i < PAIRS_PER_SLAB; i++) {
			struct otel__thread *owner =
				__atomic_load_n(&slab[i].owner, __ATOMIC_RELAXED);

			if (owner != NULL && owner != self)
				otel__pool_give(&slab[i]);
		}
	}
}
