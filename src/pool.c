/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The records of publishing threads: pairs carved in order from slabs that
 * are mapped with mmap() when their first pair is taken and never unmapped,
 * and a free list of the pairs that exiting threads gave back, which threads
 * that publish for the first time take from before they take a new pair.
 *
 * No lock and no malloc, so that the first publication of a thread, maybe in
 * a signal handler, is async-signal-safe.  The free list is a stack whose
 * head word holds the index of its top pair (plus one; 0: empty) in the low
 * 32 bits and a count of changes in the high 32: a pop that read a pair which
 * was popped and pushed back meanwhile fails its compare-and-swap on the
 * count (the ABA problem), and since slabs are never unmapped, reading a
 * pair's `next` after another thread took it is harmless.
 *
 * A take that fails takes nothing: a pair's index is claimed (by a
 * compare-and-swap on `fresh`) only once its slab is mapped, and `fresh`
 * never passes the pool's size, so a shortage of memory, however long,
 * leaves the pool as it was, and a full pool serves again as soon as a
 * thread gives its pair back.
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <stdbool.h>
#include <sys/mman.h>

#include "pool.h"

/* 63 pairs of 1,296 bytes fill 20 pages of 4 KiB; 2,048 slabs hold 129,024
 * threads publishing at once (OTEL_THREAD_CTX_THREADS_MAX). */
#define PAIRS_PER_SLAB 63u
#define MAX_SLABS 2048u
#define MAX_PAIRS (MAX_SLABS * PAIRS_PER_SLAB)
_Static_assert(MAX_PAIRS == OTEL_THREAD_CTX_THREADS_MAX, "the header says how many");
#define SLAB_BYTES ((sizeof(struct otel__pair) * PAIRS_PER_SLAB + 4095u) & ~(size_t)4095u)

_Static_assert(sizeof(struct otel__pair) % 16 == 0, "records stay 16-byte aligned");

static struct otel__pair *slabs[MAX_SLABS];
/* Pairs never handed out start at this index: the pool takes them in order,
 * mapping a slab when the first of its pairs is taken.  At most MAX_PAIRS. */
static uint32_t fresh;
/* (changes << 32) | (1 + index of the top free pair). */
static uint64_t free_head;
/* Pairs that belong to a thread. */
static uint32_t in_use;

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
	__atomic_fetch_add(&in_use, 1, __ATOMIC_RELAXED);
	p->rec[0].valid = 1;
	p->rec[1].valid = 1;
	return p;
}

/*
 * The slab of pair `index`, mapped if it is not yet.  Threads that find it
 * missing at once each map one; the first to install its mapping wins and the
 * others unmap theirs, so that a burst of first publications maps no more
 * than it needs.  Untouched pages of a slab take no memory: only the pairs
 * handed out are ever written.
 */
static struct otel__pair *slab_for(uint32_t index)
{
	struct otel__pair **at = &slabs[index / PAIRS_PER_SLAB], *slab, *mine;
	void *m;

	slab = __atomic_load_n(at, __ATOMIC_ACQUIRE);
	if (slab != NULL)
		return slab;
	m = mmap(NULL, SLAB_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	mine = m;
	if (__atomic_compare_exchange_n(at, &slab, mine, false, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE))
		return mine;
	munmap(m, SLAB_BYTES);
	return slab;
}

/* A pair never handed out: its index is claimed only once its slab is
 * mapped, so a failure takes nothing. */
static int take_fresh(struct otel__thread *owner, struct otel__pair **out)
{
	uint32_t index = __atomic_load_n(&fresh, __ATOMIC_RELAXED);
	struct otel__pair *slab, *p;

	do {
		if (index >= MAX_PAIRS)
			return OTEL_THREAD_CTX_EFULL;
		slab = slab_for(index);
		if (slab == NULL)
			return OTEL_THREAD_CTX_ENOMEM;
	} while (!__atomic_compare_exchange_n(&fresh, &index, index + 1, true, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	p = slab + index % PAIRS_PER_SLAB;
	p->index = index;
	*out = claim(p, owner);
	return OTEL_THREAD_CTX_OK;
}

int otel__pool_take(struct otel__thread *owner, struct otel__pair **out)
{
	uint64_t head = __atomic_load_n(&free_head, __ATOMIC_ACQUIRE), want;
	struct otel__pair *p;

	do {
		uint32_t top = (uint32_t)head;

		if (top == 0)
			return take_fresh(owner, out);
		p = pair_at(top - 1);
		want = ((head >> 32) + 1) << 32 | __atomic_load_n(&p->next, __ATOMIC_RELAXED);
	} while (!__atomic_compare_exchange_n(&free_head, &head, want, true, __ATOMIC_ACQUIRE,
					      __ATOMIC_ACQUIRE));
	*out = claim(p, owner);
	return OTEL_THREAD_CTX_OK;
}

void otel__pool_give(struct otel__pair *pair)
{
	__atomic_store_n(&pair->owner, NULL, __ATOMIC_RELAXED);
	__atomic_fetch_sub(&in_use, 1, __ATOMIC_RELAXED);
	push_chain(pair, pair);
}

unsigned int otel__pool_in_use(void)
{
	return __atomic_load_n(&in_use, __ATOMIC_RELAXED);
}

#ifdef OTEL__POOL_TEST_HOOKS
void otel__pool_test_set_fresh(uint32_t index)
{
	__atomic_store_n(&fresh, index < MAX_PAIRS ? index : MAX_PAIRS, __ATOMIC_RELAXED);
}
#endif

void otel__pool_reclaim_after_fork(const struct otel__thread *self)
{
	uint32_t n = __atomic_load_n(&fresh, __ATOMIC_RELAXED);

	for (uint32_t s = 0; s * PAIRS_PER_SLAB < n; s++) {
		struct otel__pair *slab = __atomic_load_n(&slabs[s], __ATOMIC_ACQUIRE);

		if (slab == NULL)
			continue;
		for (uint32_t i = 0; i < PAIRS_PER_SLAB && s * PAIRS_PER_SLAB + i < n; i++) {
			struct otel__thread *owner =
				__atomic_load_n(&slab[i].owner, __ATOMIC_RELAXED);

			if (owner != NULL && owner != self)
				otel__pool_give(&slab[i]);
		}
	}
}
