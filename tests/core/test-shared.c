/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What runtimes with user-level tasks need: shared (frozen) contexts on many
 * threads at once, freed by their last holder; contexts sized to what they
 * hold; reading back what a context committed; changing the trace flags of
 * the published record in one call.
 */
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "common.h"
#include "counting-malloc.h"
#include "holder.h"

/* Freeing a block that a thread's slot points into fails at once, in every
 * test (the counting allocator's free-time check). */
static void *const *own_slot(void)
{
	return (void *const *)&otel_thread_ctx_v1;
}

__attribute__((constructor)) static void check_frees(void)
{
	counting_malloc_check_slots(own_slot);
}

static const uint8_t trace_a[16] = { 0x5a, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
static const uint8_t span_a[8] = { 0x6b, 1, 2, 3, 4, 5, 6, 7 };
static const uint8_t span_b[8] = { 0x7c, 1, 2, 3, 4, 5, 6, 7 };

/* Indices 0-7 are named in this process's key map (readers honour it). */
__attribute__((constructor)) static void name_keys(void)
{
	char name[32];
	unsigned int index;

	for (unsigned int i = 0; i < 8; i++) {
		snprintf(name, sizeof(name), "test.async.%u", i);
		if (otel_thread_ctx_key_register(name, &index) != OTEL_THREAD_CTX_OK)
			abort();
	}
}

static otel_thread_ctx *frozen_ctx(void)
{
	otel_thread_ctx *ctx = new_ctx();

	ck_assert_ok(otel_thread_ctx_set_ids(ctx, trace_a, span_a, 1));
	ck_assert_ok(otel_thread_ctx_set_attr(ctx, 1, "task-7", 6));
	ck_assert_ok(otel_thread_ctx_freeze(ctx));
	return ctx;
}

START_TEST(a_frozen_context_refuses_every_change)
{
	otel_thread_ctx *ctx = frozen_ctx(), *prev;
	static const struct otel_thread_ctx_attr one = { 2, 1, (const uint8_t *)"x" };
	struct otel_thread_ctx_record r;

	ck_assert_otel(otel_thread_ctx_set_ids(ctx, trace_a, span_b, 1), OTEL_THREAD_CTX_EFROZEN);
	ck_assert_otel(otel_thread_ctx_set_span_id(ctx, span_b), OTEL_THREAD_CTX_EFROZEN);
	ck_assert_otel(otel_thread_ctx_set_trace_flags(ctx, 0), OTEL_THREAD_CTX_EFROZEN);
	ck_assert_otel(otel_thread_ctx_clear_ids(ctx), OTEL_THREAD_CTX_EFROZEN);
	ck_assert_otel(otel_thread_ctx_set_attr(ctx, 2, "x", 1), OTEL_THREAD_CTX_EFROZEN);
	ck_assert_otel(otel_thread_ctx_set_attrs(ctx, &one, 1), OTEL_THREAD_CTX_EFROZEN);
	ck_assert_otel(otel_thread_ctx_remove_attr(ctx, 1), OTEL_THREAD_CTX_EFROZEN);
	ck_assert_otel(otel_thread_ctx_clear_attrs(ctx), OTEL_THREAD_CTX_EFROZEN);
	ck_assert_otel(otel_thread_ctx_clear(ctx), OTEL_THREAD_CTX_EFROZEN);
	ck_assert_otel(otel_thread_ctx_update(ctx), OTEL_THREAD_CTX_EFROZEN);
	ck_assert_otel(otel_thread_ctx_update_span_id(ctx, span_b), OTEL_THREAD_CTX_EFROZEN);
	ck_assert_otel(otel_thread_ctx_update_trace_flags(ctx, 0), OTEL_THREAD_CTX_EFROZEN);
	ck_assert_otel(otel_thread_ctx_update_all(ctx, trace_a, span_b, 0, NULL, 0),
		       OTEL_THREAD_CTX_EFROZEN);
	ck_assert_otel(otel_thread_ctx_invalidate(ctx), OTEL_THREAD_CTX_EFROZEN);
	ck_assert_ok(otel_thread_ctx_freeze(ctx)); /* again: nothing to do */
	/* What it held when frozen, unchanged. */
	ck_assert_ok(otel_thread_ctx_committed(ctx, &r));
	ck_assert_mem_eq(r.span_id, span_a, 8);
	ck_assert_uint_eq(r.attrs_data_size, 8);
	ck_assert_ok(otel_thread_ctx_update_attach(ctx, &prev));
	ck_assert_mem_eq(otel_thread_ctx_v1->span_id, span_a, 8);
	ck_assert_ok(otel_thread_ctx_detach(&prev));
	ck_assert_ptr_eq(prev, ctx);
	ck_assert_ok(otel_thread_ctx_destroy(ctx));
}
END_TEST

START_TEST(freeze_commits_and_refuses_what_cannot_be_shared)
{
	otel_thread_ctx *ctx = new_ctx(), *given, *prev;
	struct otel_thread_ctx_options o = OTEL_THREAD_CTX_OPTIONS_INIT;
	struct holder h;

	/* Pending edits are committed, and published here at once. */
	ck_assert_ok(otel_thread_ctx_set_ids(ctx, trace_a, span_a, 1));
	ck_assert_ok(otel_thread_ctx_update_attach(ctx, &prev));
	ck_assert_ok(otel_thread_ctx_set_span_id(ctx, span_b));
	ck_assert_ok(otel_thread_ctx_freeze(ctx));
	ck_assert_mem_eq(otel_thread_ctx_v1->span_id, span_b, 8);
	/* Still attached here; the caller and the thread hold it. */
	ck_assert_ok(otel_thread_ctx_destroy(ctx));
	ck_assert_ptr_eq(otel_thread_ctx_current(), ctx);
	ck_assert_mem_eq(otel_thread_ctx_v1->span_id, span_b, 8);
	ck_assert_ok(otel_thread_ctx_detach(&prev)); /* the last holder */
	ck_assert_ptr_null(otel_thread_ctx_v1);

	/* A context given to its thread belongs to one thread. */
	o.flags = OTEL_THREAD_CTX_FREE_WITH_THREAD;
	ck_assert_ok(otel_thread_ctx_create_with(&given, &o));
	ck_assert_otel(otel_thread_ctx_freeze(given), OTEL_THREAD_CTX_EOPTIONS);
	ck_assert_ok(otel_thread_ctx_destroy(given));

	/* One attached to another thread cannot be frozen from here. */
	ctx = new_ctx();
	ck_assert_ok(otel_thread_ctx_set_ids(ctx, trace_a, span_a, 1));
	holder_start(&h, ctx);
	ck_assert_otel(otel_thread_ctx_freeze(ctx), OTEL_THREAD_CTX_EBUSY);
	holder_finish(&h);
	ck_assert_ok(otel_thread_ctx_set_span_id(ctx, span_b)); /* not frozen */
	ck_assert_ok(otel_thread_ctx_destroy(ctx));
}
END_TEST

/* Threads of a pool that attach one frozen context together. */
struct sharer {
	otel_thread_ctx *ctx;
	pthread_barrier_t *all_attached, *creator_gone;
	const struct otel_thread_ctx_record *seen;
	int exit_attached;
	int rc;
};

static void *share(void *arg)
{
	struct sharer *s = arg;
	otel_thread_ctx *prev;

	s->rc = otel_thread_ctx_attach(s->ctx, &prev);
	s->seen = otel_thread_ctx_v1;
	pthread_barrier_wait(s->all_attached);
	pthread_barrier_wait(s->creator_gone);
	/* The creator let go: the record is still ours, whole. */
	if (s->rc == 0 && (otel_thread_ctx_v1 != s->seen ||
			   memcmp(otel_thread_ctx_v1->span_id, span_a, 8) != 0))
		s->rc = -1000;
	if (s->rc == 0 && !s->exit_attached)
		s->rc = otel_thread_ctx_detach(&prev);
	return NULL;
}

static void share_among(unsigned int n, int exit_attached)
{
	pthread_barrier_t all_attached, creator_gone;
	pthread_t t[16];
	struct sharer s[16];
	otel_thread_ctx *ctx = frozen_ctx(), *scratch;

	ck_assert_uint_le(n, 16);
	pthread_barrier_init(&all_attached, NULL, n + 1);
	pthread_barrier_init(&creator_gone, NULL, n + 1);
	for (unsigned int i = 0; i < n; i++) {
		s[i] = (struct sharer){ ctx, &all_attached, &creator_gone, NULL, exit_attached, -1000 };
		ck_assert_int_eq(pthread_create(&t[i], NULL, share, &s[i]), 0);
	}
	pthread_barrier_wait(&all_attached);
	/* Every thread publishes the same record at once. */
	for (unsigned int i = 0; i < n; i++) {
		ck_assert_ok(s[i].rc);
		ck_assert_ptr_eq(s[i].seen, s[0].seen);
	}
	ck_assert_ok(otel_thread_ctx_destroy(ctx)); /* the creator first */
	pthread_barrier_wait(&creator_gone);
	for (unsigned int i = 0; i < n; i++) {
		ck_assert_int_eq(pthread_join(t[i], NULL), 0);
		ck_assert_ok(s[i].rc);
	}
	pthread_barrier_destroy(&all_attached);
	pthread_barrier_destroy(&creator_gone);
	/* A context whose last reference went in detach is freed by the next
	 * create or destroy. */
	ck_assert_ok(otel_thread_ctx_create(&scratch));
	ck_assert_ok(otel_thread_ctx_destroy(scratch));
}

START_TEST(a_frozen_context_is_shared_and_freed_by_its_last_holder)
{
	unsigned long rounds = env_count("OTEL_TEST_THREADS", 4000) / 20;
	size_t before = 0, after;

	for (unsigned long i = 0; i < rounds + 4; i++) {
		if (i == 4)
			before = counting_malloc_heap_bytes();
		share_among(8, 0);
		share_among(8, 1); /* threads that exit with it attached */
	}
	after = counting_malloc_heap_bytes();
	printf("async: %lu rounds of 8 threads sharing a context; heap %zu -> %zu\n", rounds, before,
	       after);
	ck_assert_msg(after <= before + 64 * 1024, "heap grew by %zu bytes", after - before);
}
END_TEST

START_TEST(contexts_are_sized_to_their_content)
{
	struct otel_thread_ctx_options o = OTEL_THREAD_CTX_OPTIONS_INIT;
	otel_thread_ctx *ctx, *prev;
	static const char value[] = "0123456789abcdefgh";
	static const struct otel_thread_ctx_attr two[] = {
		{ 1, 8, (const uint8_t *)"01234567" }, { 2, 8, (const uint8_t *)"89abcdef" },
	};

	/* Ids only: two records of 28 bytes, at most 160 bytes of heap. */
	o.attrs_capacity = 0;
	ck_assert_ok(otel_thread_ctx_create_with(&ctx, &o));
#ifdef __GLIBC__
	ck_assert_uint_le(malloc_usable_size(ctx) + sizeof(size_t), 160);
#endif
	ck_assert_otel(otel_thread_ctx_set_attr(ctx, 1, "", 0), OTEL_THREAD_CTX_ENOSPC);
	ck_assert_ok(otel_thread_ctx_set_ids(ctx, trace_a, span_a, 1));
	ck_assert_ok(otel_thread_ctx_update_attach(ctx, &prev));
	ck_assert_mem_eq(otel_thread_ctx_v1->trace_id, trace_a, 16);
	ck_assert_uint_eq(otel_thread_ctx_v1->attrs_data_size, 0);
	ck_assert_ok(otel_thread_ctx_destroy(ctx));

	/* 20 bytes: two 8-byte values fit exactly, nothing more. */
	o.attrs_capacity = 20;
	ck_assert_ok(otel_thread_ctx_create_with(&ctx, &o));
	ck_assert_ok(otel_thread_ctx_set_attrs(ctx, two, 2));
	ck_assert_otel(otel_thread_ctx_set_attr(ctx, 3, "", 0), OTEL_THREAD_CTX_ENOSPC);
	ck_assert_otel(otel_thread_ctx_set_attr(ctx, 1, value, 9), OTEL_THREAD_CTX_ENOSPC);
	ck_assert_ok(otel_thread_ctx_set_attr(ctx, 1, value, 8)); /* same size: fits */
	ck_assert_otel(otel_thread_ctx_update_all(ctx, trace_a, span_a, 1, two, 2), OTEL_THREAD_CTX_OK);
	{
		static const struct otel_thread_ctx_attr three[] = {
			{ 1, 8, (const uint8_t *)"01234567" }, { 2, 8, (const uint8_t *)"89abcdef" },
			{ 3, 0, NULL },
		};
		struct otel_thread_ctx_record before, now;

		ck_assert_ok(otel_thread_ctx_committed(ctx, &before));
		ck_assert_otel(otel_thread_ctx_update_all(ctx, trace_a, span_b, 1, three, 3),
			       OTEL_THREAD_CTX_ENOSPC);
		ck_assert_ok(otel_thread_ctx_committed(ctx, &now));
		ck_assert_mem_eq(&now, &before, 28 + before.attrs_data_size);
	}
	ck_assert_ok(otel_thread_ctx_update_attach(ctx, &prev));
	ck_assert_uint_eq(otel_thread_ctx_v1->attrs_data_size, 20);
	ck_assert_ok(otel_thread_ctx_destroy(ctx));
}
END_TEST

START_TEST(committed_reads_back_what_was_committed)
{
	otel_thread_ctx *ctx = new_ctx(), *prev;
	struct otel_thread_ctx_record r;
	struct holder h;

	ck_assert_otel(otel_thread_ctx_committed(NULL, &r), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_committed(ctx, NULL), OTEL_THREAD_CTX_ENULL);
	ck_assert_ok(otel_thread_ctx_set_ids(ctx, trace_a, span_a, 1));
	ck_assert_ok(otel_thread_ctx_set_attr(ctx, 4, "GET /", 5));
	ck_assert_ok(otel_thread_ctx_update(ctx));
	/* Edits are not committed: not read back. */
	ck_assert_ok(otel_thread_ctx_set_span_id(ctx, span_b));
	memset(&r, 0xee, sizeof(r));
	ck_assert_ok(otel_thread_ctx_committed(ctx, &r));
	ck_assert_mem_eq(r.trace_id, trace_a, 16);
	ck_assert_mem_eq(r.span_id, span_a, 8);
	ck_assert_uint_eq(r.valid, 1);
	ck_assert_uint_eq(r.trace_flags, 1);
	ck_assert_uint_eq(r.attrs_data_size, 7);
	ck_assert_mem_eq(r.attrs_data, "\x04\x05" "GET /", 7);
	ck_assert_uint_eq(r.attrs_data[7], 0xee); /* nothing past the entries */
	/* Withdrawn: still what it committed. */
	ck_assert_ok(otel_thread_ctx_update_attach(ctx, &prev));
	ck_assert_ok(otel_thread_ctx_invalidate(ctx));
	ck_assert_ok(otel_thread_ctx_committed(ctx, &r));
	ck_assert_mem_eq(r.span_id, span_b, 8);
	ck_assert_ok(otel_thread_ctx_detach(&prev));
	/* Attached to another thread: refused. */
	holder_start(&h, ctx);
	ck_assert_otel(otel_thread_ctx_committed(ctx, &r), OTEL_THREAD_CTX_EBUSY);
	holder_finish(&h);
	ck_assert_ok(otel_thread_ctx_destroy(ctx));
}
END_TEST

START_TEST(update_trace_flags_commits_in_one_call)
{
	otel_thread_ctx *ctx = new_ctx(), *empty = new_ctx(), *prev;
	const struct otel_thread_ctx_record *before;
	struct holder h;

	ck_assert_ok(otel_thread_ctx_set_ids(ctx, trace_a, span_a, 0));
	ck_assert_ok(otel_thread_ctx_update_attach(ctx, &prev));
	before = otel_thread_ctx_v1;
	ck_assert_uint_eq(before->trace_flags, 0);
	/* The sampling decision arrives after the span was published. */
	ck_assert_ok(otel_thread_ctx_update_trace_flags(ctx, 0x01));
	ck_assert_ptr_ne(otel_thread_ctx_v1, before);
	ck_assert_uint_eq(otel_thread_ctx_v1->trace_flags, 0x01);
	ck_assert_mem_eq(otel_thread_ctx_v1->span_id, span_a, 8);
	ck_assert_uint_eq(before->trace_flags, 0); /* the old record, whole */
	/* Refusals change nothing. */
	before = otel_thread_ctx_v1;
	ck_assert_otel(otel_thread_ctx_update_trace_flags(NULL, 1), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_update_trace_flags(empty, 1), OTEL_THREAD_CTX_EIDS);
	ck_assert_ptr_eq(otel_thread_ctx_v1, before);
	ck_assert_ok(otel_thread_ctx_detach(&prev));
	holder_start(&h, ctx);
	ck_assert_otel(otel_thread_ctx_update_trace_flags(ctx, 0), OTEL_THREAD_CTX_EBUSY);
	holder_finish(&h);
	ck_assert_ok(otel_thread_ctx_update_attach(ctx, &prev));
	ck_assert_uint_eq(otel_thread_ctx_v1->trace_flags, 0x01);
	ck_assert_ok(otel_thread_ctx_destroy(ctx));
	ck_assert_ok(otel_thread_ctx_destroy(empty));
}
END_TEST

Suite *test_suite(void)
{
	const struct test_case cases[] = {
		{ "frozen-refuses", a_frozen_context_refuses_every_change },
		{ "freeze", freeze_commits_and_refuses_what_cannot_be_shared },
		{ "shared", a_frozen_context_is_shared_and_freed_by_its_last_holder },
		{ "sized", contexts_are_sized_to_their_content },
		{ "committed", committed_reads_back_what_was_committed },
		{ "update-trace-flags", update_trace_flags_commits_in_one_call },
	};

	return MAKE_SUITE("async", cases, 300);
}
