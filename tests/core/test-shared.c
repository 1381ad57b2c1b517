/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Contexts are values.  attach publishes a copy: editing or destroying the
 * context afterwards does not change what any thread publishes; any number
 * of threads may attach one context at once, each publishing its own copy;
 * a context is as small as what it may hold.  Freeing a block that a
 * thread's slot points into fails at once (the counting allocator's
 * free-time check), so every destroy here also proves that no slot leads
 * into a context.
 */
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>

#include "common.h"
#include "counting-malloc.h"
#include "holder.h"

static void *const *own_slot(void)
{
	return (void *const *)&otel_thread_ctx_v1;
}

__attribute__((constructor)) static void check_frees(void)
{
	counting_malloc_check_slots(own_slot);
}

static const uint8_t trace_a[16] = { 0x5a, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
static const uint8_t trace_b[16] = { 0x5b, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
static const uint8_t span_a[8] = { 0x6b, 1, 2, 3, 4, 5, 6, 7 };
static const uint8_t span_b[8] = { 0x7c, 1, 2, 3, 4, 5, 6, 7 };

START_TEST(editing_or_destroying_does_not_change_what_is_published)
{
	otel_thread_ctx *ctx = new_ctx(), *reuse;
	static const struct otel_thread_ctx_attr two[] = {
		{ 1, 3, (const uint8_t *)"one" }, { 2, 3, (const uint8_t *)"two" },
	};
	struct published was, now;
	struct held h;

	ck_assert_ok(otel_thread_ctx_set_ids(ctx, trace_a, span_a, 1));
	ck_assert_ok(otel_thread_ctx_set_attr(ctx, 1, "task-7", 6));
	ck_assert_ok(otel_thread_ctx_attach(ctx, NULL));
	was = read_published();
	ck_assert_msg(!points_into_ctx(was.slot, ctx), "the slot leads into the context");
	h = held_by(ctx);
	ck_assert(same_record(&was.rec, &h.rec));

	/* Every setter, and copy into it: nothing published changes. */
	ck_assert_ok(otel_thread_ctx_set_span_id(ctx, span_b));
	ck_assert_ok(otel_thread_ctx_set_trace_flags(ctx, 0));
	ck_assert_ok(otel_thread_ctx_set_attr(ctx, 1, "task-8", 6));
	ck_assert_ok(otel_thread_ctx_set_attrs(ctx, two, 2));
	ck_assert_ok(otel_thread_ctx_remove_attr(ctx, 2));
	ck_assert_ok(otel_thread_ctx_set_ids(ctx, trace_b, span_b, 1));
	now = read_published();
	ck_assert_msg(published_equal(&was, &now), "an edit of the context was published");
	ck_assert_ok(otel_thread_ctx_clear_attrs(ctx));
	ck_assert_ok(otel_thread_ctx_clear_ids(ctx));
	ck_assert_ok(otel_thread_ctx_clear(ctx));
	ck_assert_ok(otel_thread_ctx_save(ctx)); /* ctx: what is published */
	ck_assert_ok(otel_thread_ctx_clear(ctx));
	now = read_published();
	ck_assert(published_equal(&was, &now));

	/* Destroyed; its memory given to a new context with other bytes. */
	otel_thread_ctx_destroy(ctx);
	for (int i = 0; i < 4; i++) {
		reuse = new_ctx();
		ck_assert_ok(otel_thread_ctx_set_ids(reuse, trace_b, span_b, 0));
		ck_assert_ok(otel_thread_ctx_set_attr(reuse, 1, "not this", 8));
		now = read_published();
		ck_assert_msg(published_equal(&was, &now), "destroying the context changed the record");
		otel_thread_ctx_destroy(reuse);
	}
	/* What the thread publishes is its own, and reads as it was. */
	{
		struct otel_thread_ctx_record r;

		ck_assert_ok(otel_thread_ctx_read(&r));
		ck_assert(same_record(&r, &was.rec));
	}
	ck_assert_ok(otel_thread_ctx_update_span_id(span_b));
	ck_assert_mem_eq(otel_thread_ctx_v1->trace_id, trace_a, 16);
	ck_assert_mem_eq(otel_thread_ctx_v1->attrs_data, "\x01\x06task-7", 8);
	ck_assert_ok(otel_thread_ctx_detach(NULL));
}
END_TEST

/* Other threads publish copies of one context; it is edited, destroyed and
 * its memory reused here; each of them still publishes what it attached. */
START_TEST(a_context_destroyed_while_threads_publish_copies)
{
	struct holder h[4];
	otel_thread_ctx *ctx = new_ctx();

	ck_assert_ok(otel_thread_ctx_set_ids(ctx, trace_a, span_a, 1));
	ck_assert_ok(otel_thread_ctx_set_attr(ctx, 1, "shared", 6));
	for (int i = 0; i < 4; i++) {
		holder_start(&h[i], ctx);
		ck_assert(!points_into_ctx(h[i].seen.slot, ctx));
		for (int j = 0; j < i; j++)
			ck_assert_ptr_ne(h[i].seen.slot, h[j].seen.slot);
		ck_assert(same_record(&h[i].seen.rec, &h[0].seen.rec));
	}
	/* This thread too. */
	ck_assert_ok(otel_thread_ctx_attach(ctx, NULL));
	ck_assert(same_record(otel_thread_ctx_v1, &h[0].seen.rec));
	ck_assert_ok(otel_thread_ctx_set_span_id(ctx, span_b));
	otel_thread_ctx_destroy(ctx);
	for (int i = 0; i < 8; i++) {
		ctx = new_ctx();
		ck_assert_ok(otel_thread_ctx_set_ids(ctx, trace_b, span_b, 0));
		otel_thread_ctx_destroy(ctx);
	}
	for (int i = 0; i < 4; i++)
		holder_finish(&h[i]); /* each checks its slot and bytes */
	ck_assert(same_record(otel_thread_ctx_v1, &h[0].seen.rec));
	ck_assert_ok(otel_thread_ctx_detach(NULL));
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Many threads, one context at a time.                                        */

#define SHARERS 32
#define CHANGED (-1000)

struct rounds {
	pthread_barrier_t made, attached, verified;
	otel_thread_ctx *ctx; /* the round's context, the creator's */
	int creator_done;     /* the creator has destroyed and recreated */
	unsigned long n;
};

struct sharer {
	struct rounds *rs;
	unsigned int index;
	int rc;
	unsigned long checks;
	/* This round: where the slot led, and the bytes it led to. */
	const struct otel_thread_ctx_record *slot;
	struct otel_thread_ctx_record copy;
	/* What the thread's own context held (a copy of the round's, and one
	 * attribute of its own), and what it published from it. */
	struct otel_thread_ctx_record own_want, own_seen;
};

/* One round of a thread: a copy of the round's context in a context of its
 * own, published and destroyed at once; then the round's context itself,
 * at the same moment as every other thread. */
static int share_round(struct sharer *s, otel_thread_ctx *shared, unsigned long round)
{
	otel_thread_ctx *own = NULL, *saved = NULL;
	char name[16];
	int len = snprintf(name, sizeof(name), "t%u", s->index), rc;

	rc = otel_thread_ctx_create(&own);
	if (rc == 0)
		rc = otel_thread_ctx_copy(own, shared);
	if (rc == 0)
		rc = otel_thread_ctx_set_attr(own, 9, name, (size_t)len);
	if (rc == 0)
		rc = otel_thread_ctx_get(own, &s->own_want);
	if (rc == 0)
		rc = otel_thread_ctx_attach(own, NULL);
	if (rc != 0)
		return rc;
	otel_thread_ctx_destroy(own);
	memcpy(&s->own_seen, otel_thread_ctx_v1, sizeof(s->own_seen));
	/* Every other round through attach with a saved context. */
	if (round % 2 == 1) {
		rc = otel_thread_ctx_create(&saved);
		if (rc == 0)
			rc = otel_thread_ctx_attach(shared, saved);
		otel_thread_ctx_destroy(saved);
	} else {
		rc = otel_thread_ctx_attach(shared, NULL);
	}
	s->slot = otel_thread_ctx_v1;
	if (s->slot != NULL)
		memcpy(&s->copy, s->slot, sizeof(s->copy));
	return rc;
}

static void *sharer_main(void *arg)
{
	struct sharer *s = arg;
	struct rounds *rs = s->rs;

	for (unsigned long r = 0; r < rs->n; r++) {
		pthread_barrier_wait(&rs->made);
		if (s->rc == 0)
			s->rc = share_round(s, rs->ctx, r);
		pthread_barrier_wait(&rs->attached);
		/* The creator destroys and recreates contexts meanwhile. */
		do {
			const struct otel_thread_ctx_record *now = otel_thread_ctx_v1;

			if (s->rc == 0 && (now != s->slot || memcmp(now, &s->copy, sizeof(s->copy)) != 0))
				s->rc = CHANGED;
			s->checks++;
			sched_yield();
		} while (!__atomic_load_n(&rs->creator_done, __ATOMIC_ACQUIRE));
		pthread_barrier_wait(&rs->verified);
	}
	/* Half of them exit publishing.  (The result goes back through
	 * pthread_join(): the creator may still be reading s->rc.) */
	if (s->rc == 0 && s->index % 2 == 0)
		return (void *)(intptr_t)otel_thread_ctx_detach(NULL);
	return NULL;
}

/* The round's context: ids and attributes that name the round; the full
 * capacity one round, a small one the next. */
static otel_thread_ctx *round_ctx(unsigned long r, int variant)
{
	otel_thread_ctx *ctx = new_ctx_sized(r % 2 ? 48 : OTEL_THREAD_CTX_ATTRS_MAX);
	uint8_t trace[16], span[8];
	char value[32];
	int len = snprintf(value, sizeof(value), "round %lu/%d", r, variant);

	memset(trace, 0x11, sizeof(trace));
	memcpy(trace, &r, sizeof(r));
	memset(span, 0x22, sizeof(span));
	span[0] = (uint8_t)variant;
	ck_assert_ok(otel_thread_ctx_set_ids(ctx, trace, span, (uint8_t)(r & 1)));
	ck_assert_ok(otel_thread_ctx_set_attr(ctx, 1, value, (size_t)len));
	return ctx;
}

static int by_address(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t) * (const void *const *)a, y = (uintptr_t) * (const void *const *)b;

	return x < y ? -1 : x > y;
}

START_TEST(many_threads_attach_one_context_at_once)
{
	unsigned long rounds = env_count("OTEL_TEST_THREADS", 4000) / 40;
	static struct sharer s[SHARERS];
	static struct rounds rs;
	pthread_t t[SHARERS];
	size_t before, after;
	unsigned long checks = 0;

	if (rounds < 2)
		rounds = 2;
	before = counting_malloc_heap_bytes();
	memset(&rs, 0, sizeof(rs));
	rs.n = rounds;
	pthread_barrier_init(&rs.made, NULL, SHARERS + 1);
	pthread_barrier_init(&rs.attached, NULL, SHARERS + 1);
	pthread_barrier_init(&rs.verified, NULL, SHARERS + 1);
	for (unsigned int i = 0; i < SHARERS; i++) {
		memset(&s[i], 0, sizeof(s[i]));
		s[i].rs = &rs;
		s[i].index = i;
		ck_assert_int_eq(pthread_create(&t[i], NULL, sharer_main, &s[i]), 0);
	}
	for (unsigned long r = 0; r < rounds; r++) {
		const void *slots[SHARERS];
		struct held want;

		rs.ctx = round_ctx(r, 0);
		__atomic_store_n(&rs.creator_done, 0, __ATOMIC_RELEASE);
		pthread_barrier_wait(&rs.made);
		pthread_barrier_wait(&rs.attached);
		want = held_by(rs.ctx);
		ck_assert_ok(want.rc);
		for (unsigned int i = 0; i < SHARERS; i++) {
			ck_assert_msg(s[i].rc == 0, "round %lu, thread %u: %d (%s)", r, i, s[i].rc,
				      otel_thread_ctx_strerror(s[i].rc));
			ck_assert_msg(s[i].slot != NULL, "round %lu, thread %u: nothing published", r, i);
			ck_assert_msg(!points_into_ctx(s[i].slot, rs.ctx),
				      "round %lu, thread %u: the slot leads into the context", r, i);
			ck_assert_msg(same_record(&s[i].copy, &want.rec),
				      "round %lu, thread %u: not the context's bytes", r, i);
			ck_assert_msg(same_record(&s[i].own_seen, &s[i].own_want),
				      "round %lu, thread %u: its own context's copy is wrong", r, i);
			slots[i] = s[i].slot;
		}
		/* Each its own copy. */
		qsort(slots, SHARERS, sizeof(slots[0]), by_address);
		for (unsigned int i = 1; i < SHARERS; i++)
			ck_assert_msg(slots[i] != slots[i - 1], "round %lu: two threads share a record", r);
		/* While they check theirs: destroy, recreate, reuse the memory. */
		otel_thread_ctx_destroy(rs.ctx);
		for (int k = 1; k <= 4; k++)
			otel_thread_ctx_destroy(round_ctx(r, k));
		__atomic_store_n(&rs.creator_done, 1, __ATOMIC_RELEASE);
		pthread_barrier_wait(&rs.verified);
		for (unsigned int i = 0; i < SHARERS; i++)
			ck_assert_msg(s[i].rc == 0, "round %lu, thread %u: the published record changed "
				      "while contexts were destroyed", r, i);
	}
	for (unsigned int i = 0; i < SHARERS; i++) {
		void *detached;

		ck_assert_int_eq(pthread_join(t[i], &detached), 0);
		ck_assert_ok(s[i].rc);
		ck_assert_ok((int)(intptr_t)detached);
		checks += s[i].checks;
	}
	pthread_barrier_destroy(&rs.made);
	pthread_barrier_destroy(&rs.attached);
	pthread_barrier_destroy(&rs.verified);
	after = counting_malloc_heap_bytes();
	printf("shared: %lu rounds of %d threads attaching one context (%lu checks of their "
	       "records while contexts were destroyed); heap %zu -> %zu bytes (%s)\n",
	       rounds, SHARERS, checks, before, after,
	       counting_malloc_mode() == COUNTING_MALLOC_REPLACED ? "valgrind checks leaks" :
								     "counted");
	/* Each round made 32 contexts of the threads' and 5 of its own: a
	 * leak of them would be over 20 KiB a round. */
	ck_assert_msg(after <= before + 64 * 1024, "heap grew by %zu bytes", after - before);
}
END_TEST

/* ------------------------------------------------------------------------ */

/* Bytes of heap a context takes, by the allocator's count (or, where a
 * tool replaced the allocator, what it says the block's size is). */
static size_t heap_of(unsigned int capacity, size_t *usable)
{
	size_t before = counting_malloc_heap_bytes(), after;
	otel_thread_ctx *ctx = new_ctx_sized(capacity);

	after = counting_malloc_heap_bytes();
	*usable = malloc_usable_size(ctx);
	otel_thread_ctx_destroy(ctx);
	return counting_malloc_mode() == COUNTING_MALLOC_REPLACED ? *usable : after - before;
}

START_TEST(a_context_is_as_small_as_its_content)
{
	static const unsigned int capacities[] = { 0, 1, 20, 100, 300, OTEL_THREAD_CTX_ATTRS_MAX };
	size_t usable, heap = heap_of(0, &usable);
	otel_thread_ctx *ctx = new_ctx_sized(0);

	/* Span only: 28 bytes of record and its bookkeeping. */
	printf("shared: a span-only context takes %zu bytes of heap (%zu usable)\n", heap, usable);
	ck_assert_msg(heap <= 48, "a span-only context takes %zu bytes", heap);
	ck_assert_msg(usable <= 48, "a span-only context's block is %zu bytes", usable);
	ck_assert_uint_ge(usable, 28);
	for (size_t i = 0; i < sizeof(capacities) / sizeof(capacities[0]); i++) {
		/* No bigger a block than the allocator gives for the content and
		 * 8 bytes of bookkeeping (whatever the allocator: glibc's, or a
		 * sanitizer's, which rounds differently). */
		void *control = malloc(8 + 28 + capacities[i]);
		size_t control_usable = malloc_usable_size(control);

		free(control);
		heap = heap_of(capacities[i], &usable);
		ck_assert_msg(usable <= control_usable,
			      "capacity %u takes %zu bytes (%zu usable), a block of its content %zu",
			      capacities[i], heap, usable, control_usable);
		ck_assert_uint_ge(usable, 28 + capacities[i]);
	}
	/* And it works as any other. */
	ck_assert_otel(otel_thread_ctx_set_attr(ctx, 1, "", 0), OTEL_THREAD_CTX_ENOSPC);
	ck_assert_ok(otel_thread_ctx_set_ids(ctx, trace_a, span_a, 1));
	ck_assert_ok(otel_thread_ctx_attach(ctx, NULL));
	ck_assert_mem_eq(otel_thread_ctx_v1->trace_id, trace_a, 16);
	ck_assert_uint_eq(otel_thread_ctx_v1->attrs_data_size, 0);
	otel_thread_ctx_destroy(ctx);
	ck_assert_mem_eq(otel_thread_ctx_v1->span_id, span_a, 8);
	ck_assert_ok(otel_thread_ctx_detach(NULL));
}
END_TEST

START_TEST(a_sized_context_holds_its_capacity_exactly)
{
	otel_thread_ctx *ctx = new_ctx_sized(20);
	static const char value[] = "0123456789abcdefgh";
	static const struct otel_thread_ctx_attr two[] = {
		{ 1, 8, (const uint8_t *)"01234567" }, { 2, 8, (const uint8_t *)"89abcdef" },
	};
	struct ctx_bytes before, after;

	/* 20 bytes: two 8-byte values fit exactly, nothing more. */
	ck_assert_ok(otel_thread_ctx_set_attrs(ctx, two, 2));
	ctx_bytes_of(ctx, &before);
	ck_assert_otel(otel_thread_ctx_set_attr(ctx, 3, "", 0), OTEL_THREAD_CTX_ENOSPC);
	ck_assert_otel(otel_thread_ctx_set_attr(ctx, 1, value, 9), OTEL_THREAD_CTX_ENOSPC);
	ctx_bytes_of(ctx, &after);
	ck_assert(ctx_bytes_equal(&before, &after));
	ck_assert_ok(otel_thread_ctx_set_attr(ctx, 1, value, 8)); /* same size: fits */
	ck_assert_ok(otel_thread_ctx_set_ids(ctx, trace_a, span_a, 1));
	ck_assert_ok(otel_thread_ctx_attach(ctx, NULL));
	ck_assert_uint_eq(otel_thread_ctx_v1->attrs_data_size, 20);
	/* The thread's record is not the context's size: update_all may
	 * publish more than the context could hold. */
	{
		static const struct otel_thread_ctx_attr three[] = {
			{ 1, 8, (const uint8_t *)"01234567" }, { 2, 8, (const uint8_t *)"89abcdef" },
			{ 3, 0, NULL },
		};

		ck_assert_ok(otel_thread_ctx_update_all(trace_a, span_b, 1, three, 3));
		ck_assert_uint_eq(otel_thread_ctx_v1->attrs_data_size, 22);
	}
	ck_assert_ok(otel_thread_ctx_detach(NULL));
	otel_thread_ctx_destroy(ctx);
}
END_TEST

Suite *test_suite(void)
{
	const struct test_case cases[] = {
		{ "value-after-attach", editing_or_destroying_does_not_change_what_is_published },
		{ "destroyed-under-threads", a_context_destroyed_while_threads_publish_copies },
		{ "many-threads", many_threads_attach_one_context_at_once },
		{ "span-only-small", a_context_is_as_small_as_its_content },
		{ "sized", a_sized_context_holds_its_capacity_exactly },
	};

	return MAKE_SUITE("shared", cases, 300);
}
