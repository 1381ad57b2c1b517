/* SPDX-License-Identifier: Apache-2.0 */
/* Every API path and every error.  A call that fails must change nothing:
 * not the slot, not the published bytes, not the draft (a failed edit on a
 * clean context leaves it attachable without EPENDING). */
#include <errno.h>
#include <stdint.h>

#include "common.h"
#include "holder.h"

static const uint8_t trace_a[16] = { 0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6,
				     0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36 };
static const uint8_t span_a[8] = { 0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7 };
static const uint8_t span_b[8] = { 0x53, 0x99, 0x5c, 0x3f, 0x42, 0xcd, 0x8a, 0xd8 };
static const uint8_t zero[16];

/* A context attached, with ids and one attribute, on the calling thread. */
static otel_thread_ctx *attached_ctx(void)
{
	otel_thread_ctx *ctx = new_ctx(), *prev = NULL;

	ck_assert_ok(otel_thread_ctx_set_ids(ctx, trace_a, span_a, 1));
	ck_assert_ok(otel_thread_ctx_set_attr(ctx, 5, "GET /", 5));
	ck_assert_ok(otel_thread_ctx_update_attach(ctx, &prev));
	ck_assert_ptr_null(prev);
	return ctx;
}

static void detach_destroy(otel_thread_ctx *ctx)
{
	otel_thread_ctx *prev = NULL;

	ck_assert_ok(otel_thread_ctx_detach(&prev));
	ck_assert_ptr_eq(prev, ctx);
	ck_assert_ok(otel_thread_ctx_destroy(ctx));
}

/* The failed call changed neither what is published nor the draft. */
static void assert_unchanged(otel_thread_ctx *ctx, const struct published *before)
{
	struct published now = read_published();
	otel_thread_ctx *prev = NULL;

	ck_assert_msg(published_equal(before, &now), "the published record changed");
	/* Not dirty: attaching again is allowed and changes nothing. */
	ck_assert_ok(otel_thread_ctx_attach(ctx, &prev));
	ck_assert_ptr_eq(prev, ctx);
	now = read_published();
	ck_assert(published_equal(before, &now));
}

START_TEST(create_and_destroy)
{
	otel_thread_ctx *ctx = NULL;

	ck_assert_otel(otel_thread_ctx_create(NULL), OTEL_THREAD_CTX_ENULL);
	ck_assert_ok(otel_thread_ctx_create(&ctx));
	ck_assert_ptr_nonnull(ctx);
	ck_assert_ok(otel_thread_ctx_destroy(ctx));
	ck_assert_ok(otel_thread_ctx_destroy(NULL));
}
END_TEST

START_TEST(null_arguments)
{
	otel_thread_ctx *ctx = attached_ctx(), *prev;
	struct published before = read_published();

	ck_assert_otel(otel_thread_ctx_set_ids(NULL, trace_a, span_a, 0), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_set_ids(ctx, NULL, span_a, 0), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_set_ids(ctx, trace_a, NULL, 0), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_set_span_id(NULL, span_b), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_set_span_id(ctx, NULL), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_set_trace_flags(NULL, 0), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_clear_ids(NULL), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_set_attr(NULL, 1, "a", 1), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_set_attr(ctx, 1, NULL, 1), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_remove_attr(NULL, 1), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_clear_attrs(NULL), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_clear(NULL), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_attach(NULL, &prev), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_attach(ctx, NULL), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_update_attach(NULL, &prev), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_update_attach(ctx, NULL), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_update(NULL), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_detach(NULL), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_invalidate(NULL), OTEL_THREAD_CTX_ENULL);
	assert_unchanged(ctx, &before);
	detach_destroy(ctx);
}
END_TEST

START_TEST(ids_half_set_are_refused)
{
	otel_thread_ctx *ctx = attached_ctx();
	struct published before = read_published();

	ck_assert_otel(otel_thread_ctx_set_ids(ctx, trace_a, zero, 1), OTEL_THREAD_CTX_EIDS);
	ck_assert_otel(otel_thread_ctx_set_ids(ctx, zero, span_a, 1), OTEL_THREAD_CTX_EIDS);
	ck_assert_otel(otel_thread_ctx_set_ids(ctx, zero, zero, 1), OTEL_THREAD_CTX_EIDS);
	ck_assert_otel(otel_thread_ctx_set_span_id(ctx, zero), OTEL_THREAD_CTX_EIDS);
	assert_unchanged(ctx, &before);
	detach_destroy(ctx);
}
END_TEST

START_TEST(span_and_flags_need_a_trace)
{
	otel_thread_ctx *ctx = new_ctx(), *prev;
	struct published before;

	ck_assert_ok(otel_thread_ctx_attach(ctx, &prev));
	before = read_published();
	ck_assert_otel(otel_thread_ctx_set_span_id(ctx, span_a), OTEL_THREAD_CTX_EIDS);
	ck_assert_otel(otel_thread_ctx_set_trace_flags(ctx, 1), OTEL_THREAD_CTX_EIDS);
	assert_unchanged(ctx, &before);
	/* Flags 0 without ids is fine, and so is clearing what is clear. */
	ck_assert_ok(otel_thread_ctx_set_trace_flags(ctx, 0));
	ck_assert_ok(otel_thread_ctx_set_ids(ctx, zero, zero, 0));
	ck_assert_ok(otel_thread_ctx_update(ctx));
	ck_assert_mem_eq(otel_thread_ctx_v1->trace_id, zero, 16);
	detach_destroy(ctx);
}
END_TEST

START_TEST(span_and_flags_change_alone)
{
	otel_thread_ctx *ctx = attached_ctx();
	const struct otel_thread_ctx_record *r;

	ck_assert_ok(otel_thread_ctx_set_span_id(ctx, span_b));
	ck_assert_ok(otel_thread_ctx_set_trace_flags(ctx, 0));
	ck_assert_ok(otel_thread_ctx_update(ctx));
	r = otel_thread_ctx_v1;
	ck_assert_mem_eq(r->trace_id, trace_a, 16);
	ck_assert_mem_eq(r->span_id, span_b, 8);
	ck_assert_uint_eq(r->trace_flags, 0);
	ck_assert_uint_eq(r->attrs_data_size, 7);

	ck_assert_ok(otel_thread_ctx_clear_ids(ctx));
	ck_assert_ok(otel_thread_ctx_update(ctx));
	r = otel_thread_ctx_v1;
	ck_assert_mem_eq(r->trace_id, zero, 16);
	ck_assert_mem_eq(r->span_id, zero, 8);
	ck_assert_uint_eq(r->attrs_data_size, 7); /* attributes stay */
	detach_destroy(ctx);
}
END_TEST

START_TEST(bad_attributes_are_refused)
{
	otel_thread_ctx *ctx = attached_ctx();
	struct published before = read_published();
	uint8_t big[256];

	memset(big, 'a', sizeof(big));
	ck_assert_otel(otel_thread_ctx_set_attr(ctx, 256, "a", 1), OTEL_THREAD_CTX_EKEY);
	ck_assert_otel(otel_thread_ctx_set_attr(ctx, ~0u, "a", 1), OTEL_THREAD_CTX_EKEY);
	ck_assert_otel(otel_thread_ctx_remove_attr(ctx, 256), OTEL_THREAD_CTX_EKEY);
	ck_assert_otel(otel_thread_ctx_set_attr(ctx, 1, big, 256), OTEL_THREAD_CTX_EVALUE);
	ck_assert_otel(otel_thread_ctx_set_attr(ctx, 1, big, SIZE_MAX), OTEL_THREAD_CTX_EVALUE);
	ck_assert_otel(otel_thread_ctx_set_attr(ctx, 1, "\xc3", 1), OTEL_THREAD_CTX_EUTF8);
	for (unsigned k = 0; k < 2; k++)
		ck_assert_ok(otel_thread_ctx_set_attr(ctx, 10 + k, big, 255));
	ck_assert_otel(otel_thread_ctx_set_attr(ctx, 12, big, 100), OTEL_THREAD_CTX_ENOSPC);
	/* The refused entry is not in the draft: commit and look. */
	ck_assert_ok(otel_thread_ctx_update(ctx));
	ck_assert_uint_eq(otel_thread_ctx_v1->attrs_data_size, 7 + 2 * 257);
	ck_assert_ptr_ne(otel_thread_ctx_v1, before.slot);
	detach_destroy(ctx);

	/* The same refusals on a clean context leave it clean. */
	ctx = attached_ctx();
	before = read_published();
	ck_assert_otel(otel_thread_ctx_set_attr(ctx, 256, "a", 1), OTEL_THREAD_CTX_EKEY);
	ck_assert_otel(otel_thread_ctx_set_attr(ctx, 1, big, 256), OTEL_THREAD_CTX_EVALUE);
	ck_assert_otel(otel_thread_ctx_set_attr(ctx, 1, "\xff", 1), OTEL_THREAD_CTX_EUTF8);
	assert_unchanged(ctx, &before);
	detach_destroy(ctx);
}
END_TEST

START_TEST(attach_hands_back_the_previous_context)
{
	otel_thread_ctx *a = new_ctx(), *b = new_ctx(), *prev = (otel_thread_ctx *)1;
	const struct otel_thread_ctx_record *ra;

	ck_assert_ptr_null(otel_thread_ctx_current());
	ck_assert_ok(otel_thread_ctx_attach(a, &prev));
	ck_assert_ptr_null(prev);
	ck_assert_ptr_eq(otel_thread_ctx_current(), a);
	ra = otel_thread_ctx_v1;
	ck_assert_ok(otel_thread_ctx_attach(a, &prev)); /* again: no change */
	ck_assert_ptr_eq(prev, a);
	ck_assert_ptr_eq(otel_thread_ctx_v1, ra);
	ck_assert_ok(otel_thread_ctx_attach(b, &prev));
	ck_assert_ptr_eq(prev, a);
	ck_assert_ptr_eq(otel_thread_ctx_current(), b);
	ck_assert_ptr_ne(otel_thread_ctx_v1, ra);
	/* a is detached now: it can be destroyed. */
	ck_assert_ok(otel_thread_ctx_destroy(a));
	ck_assert_ptr_nonnull(otel_thread_ctx_v1);
	ck_assert_ok(otel_thread_ctx_detach(&prev));
	ck_assert_ptr_eq(prev, b);
	ck_assert_ptr_null(otel_thread_ctx_v1);
	ck_assert_ptr_null(otel_thread_ctx_current());
	ck_assert_ok(otel_thread_ctx_detach(&prev)); /* nothing attached */
	ck_assert_ptr_null(prev);
	ck_assert_ok(otel_thread_ctx_destroy(b));
}
END_TEST

START_TEST(destroy_on_the_owning_thread_unpublishes_first)
{
	otel_thread_ctx *a = attached_ctx(), *prev;

	ck_assert_ptr_nonnull(otel_thread_ctx_v1);
	ck_assert_ok(otel_thread_ctx_destroy(a));
	ck_assert_ptr_null(otel_thread_ctx_v1);
	ck_assert_ptr_null(otel_thread_ctx_current());
	ck_assert_ok(otel_thread_ctx_detach(&prev));
	ck_assert_ptr_null(prev);
}
END_TEST

START_TEST(attach_refuses_uncommitted_edits)
{
	otel_thread_ctx *a = attached_ctx(), *b = new_ctx(), *prev;
	struct published before = read_published();

	ck_assert_ok(otel_thread_ctx_set_span_id(a, span_b));
	ck_assert_otel(otel_thread_ctx_attach(a, &prev), OTEL_THREAD_CTX_EPENDING);
	ck_assert_ok(otel_thread_ctx_set_ids(b, trace_a, span_b, 0));
	ck_assert_otel(otel_thread_ctx_attach(b, &prev), OTEL_THREAD_CTX_EPENDING);
	{
		struct published now = read_published();

		ck_assert(published_equal(&before, &now));
	}
	ck_assert_ptr_eq(otel_thread_ctx_current(), a);
	/* update_attach publishes b's edits with one store. */
	ck_assert_ok(otel_thread_ctx_update_attach(b, &prev));
	ck_assert_ptr_eq(prev, a);
	ck_assert_mem_eq(otel_thread_ctx_v1->span_id, span_b, 8);
	ck_assert_uint_eq(otel_thread_ctx_v1->trace_flags, 0);
	ck_assert_ok(otel_thread_ctx_destroy(a));
	detach_destroy(b);
}
END_TEST

START_TEST(update_swaps_records_and_keeps_the_old_one_whole)
{
	otel_thread_ctx *ctx = attached_ctx();
	struct published before = read_published(), after;

	ck_assert_ok(otel_thread_ctx_set_span_id(ctx, span_b));
	ck_assert_ok(otel_thread_ctx_set_attr(ctx, 6, "more", 4));
	/* Edits are invisible until committed. */
	after = read_published();
	ck_assert(published_equal(&before, &after));
	ck_assert_ok(otel_thread_ctx_update(ctx));
	after = read_published();
	ck_assert_ptr_ne(after.slot, before.slot);
	ck_assert_mem_eq(after.rec.span_id, span_b, 8);
	ck_assert_uint_eq(after.rec.attrs_data_size, 7 + 6);
	ck_assert_uint_eq(after.rec.valid, 1);
	/* A reader that loaded the old pointer just before the store still
	 * finds the old record, complete and valid. */
	ck_assert_mem_eq(before.slot, &before.rec, sizeof(before.rec));
	/* Nothing to commit: the slot stays. */
	ck_assert_ok(otel_thread_ctx_update(ctx));
	ck_assert_ptr_eq(otel_thread_ctx_v1, after.slot);
	/* The next commit goes back to the first record. */
	ck_assert_ok(otel_thread_ctx_set_span_id(ctx, span_a));
	ck_assert_ok(otel_thread_ctx_update(ctx));
	ck_assert_ptr_eq(otel_thread_ctx_v1, before.slot);
	ck_assert_mem_eq(otel_thread_ctx_v1->span_id, span_a, 8);
	ck_assert_uint_eq(otel_thread_ctx_v1->attrs_data_size, 7 + 6);
	detach_destroy(ctx);
}
END_TEST

START_TEST(update_of_a_detached_context_shows_on_attach)
{
	otel_thread_ctx *ctx = new_ctx(), *prev;

	ck_assert_ok(otel_thread_ctx_set_ids(ctx, trace_a, span_a, 1));
	ck_assert_ok(otel_thread_ctx_update(ctx));
	ck_assert_ptr_null(otel_thread_ctx_v1);
	ck_assert_ok(otel_thread_ctx_attach(ctx, &prev));
	ck_assert_mem_eq(otel_thread_ctx_v1->trace_id, trace_a, 16);
	detach_destroy(ctx);
}
END_TEST

START_TEST(invalidate_and_revalidate)
{
	otel_thread_ctx *ctx = attached_ctx();
	const struct otel_thread_ctx_record *r = otel_thread_ctx_v1;

	/* Withdrawn by pointer: the slot is NULL, the record untouched. */
	ck_assert_ok(otel_thread_ctx_invalidate(ctx));
	ck_assert_ptr_null(otel_thread_ctx_v1);
	ck_assert_uint_eq(r->valid, 1);
	ck_assert_ptr_eq(otel_thread_ctx_current(), ctx); /* still attached */
	/* update, even without edits, publishes the record again */
	ck_assert_ok(otel_thread_ctx_update(ctx));
	ck_assert_ptr_eq(otel_thread_ctx_v1, r);
	ck_assert_uint_eq(otel_thread_ctx_v1->valid, 1);
	ck_assert_mem_eq(otel_thread_ctx_v1->trace_id, trace_a, 16);
	ck_assert_uint_eq(otel_thread_ctx_v1->attrs_data_size, 7);
	/* so does update_attach, with the edits made meanwhile */
	{
		static const uint8_t span_c[8] = { 0xc0, 1, 2, 3, 4, 5, 6, 7 };
		otel_thread_ctx *prev = NULL;

		ck_assert_ok(otel_thread_ctx_invalidate(ctx));
		ck_assert_ok(otel_thread_ctx_set_span_id(ctx, span_c));
		ck_assert_ptr_null(otel_thread_ctx_v1);
		ck_assert_ok(otel_thread_ctx_update_attach(ctx, &prev));
		ck_assert_ptr_eq(prev, ctx);
		ck_assert_ptr_ne(otel_thread_ctx_v1, r);
		ck_assert_uint_eq(otel_thread_ctx_v1->valid, 1);
		ck_assert_mem_eq(otel_thread_ctx_v1->trace_id, trace_a, 16);
		ck_assert_mem_eq(otel_thread_ctx_v1->span_id, span_c, 8);
		ck_assert_uint_eq(otel_thread_ctx_v1->attrs_data_size, 7);
		ck_assert_mem_eq(otel_thread_ctx_v1->attrs_data, "\x05\x05" "GET /", 7);
		/* no record ever had valid != 1 */
		ck_assert_uint_eq(r->valid, 1);
	}
	/* invalidate a detached context: attach publishes nothing until the
	 * next commit */
	{
		otel_thread_ctx *prev, *b = new_ctx();

		ck_assert_ok(otel_thread_ctx_invalidate(b));
		ck_assert_ok(otel_thread_ctx_attach(b, &prev));
		ck_assert_ptr_eq(prev, ctx);
		ck_assert_ptr_null(otel_thread_ctx_v1);
		ck_assert_ptr_eq(otel_thread_ctx_current(), b);
		ck_assert_ok(otel_thread_ctx_update_attach(b, &prev));
		ck_assert_ptr_nonnull(otel_thread_ctx_v1);
		ck_assert_uint_eq(otel_thread_ctx_v1->valid, 1);
		ck_assert_ok(otel_thread_ctx_attach(ctx, &prev));
		ck_assert_ptr_eq(prev, b);
		ck_assert_ok(otel_thread_ctx_destroy(b));
	}
	detach_destroy(ctx);
}
END_TEST

START_TEST(a_context_attached_elsewhere_is_busy)
{
	struct holder h;
	otel_thread_ctx *mine = attached_ctx(), *prev, *theirs = new_ctx();
	struct published before;

	ck_assert_ok(otel_thread_ctx_set_ids(theirs, trace_a, span_b, 1));
	holder_start(&h, theirs);

	before = read_published();
	ck_assert_otel(otel_thread_ctx_attach(h.ctx, &prev), OTEL_THREAD_CTX_EBUSY);
	ck_assert_otel(otel_thread_ctx_update_attach(h.ctx, &prev), OTEL_THREAD_CTX_EBUSY);
	ck_assert_otel(otel_thread_ctx_update(h.ctx), OTEL_THREAD_CTX_EBUSY);
	ck_assert_otel(otel_thread_ctx_invalidate(h.ctx), OTEL_THREAD_CTX_EBUSY);
	ck_assert_otel(otel_thread_ctx_destroy(h.ctx), OTEL_THREAD_CTX_EBUSY);
	/* The setters too: the holder may be committing the draft. */
	{
		static const struct otel_thread_ctx_attr one = { 9, 1, (const uint8_t *)"z" };

		ck_assert_otel(otel_thread_ctx_set_ids(h.ctx, trace_a, span_a, 0), OTEL_THREAD_CTX_EBUSY);
		ck_assert_otel(otel_thread_ctx_set_span_id(h.ctx, span_a), OTEL_THREAD_CTX_EBUSY);
		ck_assert_otel(otel_thread_ctx_set_trace_flags(h.ctx, 0), OTEL_THREAD_CTX_EBUSY);
		ck_assert_otel(otel_thread_ctx_clear_ids(h.ctx), OTEL_THREAD_CTX_EBUSY);
		ck_assert_otel(otel_thread_ctx_set_attr(h.ctx, 9, "z", 1), OTEL_THREAD_CTX_EBUSY);
		ck_assert_otel(otel_thread_ctx_set_attrs(h.ctx, &one, 1), OTEL_THREAD_CTX_EBUSY);
		ck_assert_otel(otel_thread_ctx_remove_attr(h.ctx, 9), OTEL_THREAD_CTX_EBUSY);
		ck_assert_otel(otel_thread_ctx_clear_attrs(h.ctx), OTEL_THREAD_CTX_EBUSY);
		ck_assert_otel(otel_thread_ctx_clear(h.ctx), OTEL_THREAD_CTX_EBUSY);
		ck_assert_otel(otel_thread_ctx_update_all(h.ctx, trace_a, span_a, 0, NULL, 0),
			       OTEL_THREAD_CTX_EBUSY);
	}
	assert_unchanged(mine, &before);

	holder_finish(&h);
	/* Handed back by the detach: now it is ours to attach or destroy;
	 * none of the refused setters left an edit behind. */
	ck_assert_ok(otel_thread_ctx_attach(h.ctx, &prev));
	ck_assert_ptr_eq(prev, mine);
	ck_assert_mem_eq(otel_thread_ctx_v1->span_id, span_b, 8);
	ck_assert_uint_eq(otel_thread_ctx_v1->trace_flags, 1);
	ck_assert_uint_eq(otel_thread_ctx_v1->attrs_data_size, 0);
	ck_assert_ok(otel_thread_ctx_destroy(mine));
	detach_destroy(h.ctx);
}
END_TEST

START_TEST(every_error_has_its_own_text)
{
	static const int codes[] = {
		OTEL_THREAD_CTX_OK,      OTEL_THREAD_CTX_ENULL,   OTEL_THREAD_CTX_EIDS,
		OTEL_THREAD_CTX_EKEY,    OTEL_THREAD_CTX_EVALUE,  OTEL_THREAD_CTX_EUTF8,
		OTEL_THREAD_CTX_ENOSPC,  OTEL_THREAD_CTX_EBUSY,   OTEL_THREAD_CTX_EPENDING,
		OTEL_THREAD_CTX_ENOMEM,  OTEL_THREAD_CTX_ETHREAD,  OTEL_THREAD_CTX_ENOCTX,
		OTEL_THREAD_CTX_EINVALID, OTEL_THREAD_CTX_ETRUNCATED, OTEL_THREAD_CTX_ESLOT,
		OTEL_THREAD_CTX_ENAME,   OTEL_THREAD_CTX_EKEYS,   OTEL_THREAD_CTX_EUNKNOWNKEY,
		OTEL_THREAD_CTX_EPUBLISHED, OTEL_THREAD_CTX_ENOTPUBLISHED, OTEL_THREAD_CTX_E2BIG,
		OTEL_THREAD_CTX_EATTR,   OTEL_THREAD_CTX_EMAP,    OTEL_THREAD_CTX_ESYS,
		OTEL_THREAD_CTX_EDUPKEY, OTEL_THREAD_CTX_EOPTIONS,
	};
	const char *unknown = otel_thread_ctx_strerror(12345);
	size_t n = sizeof(codes) / sizeof(codes[0]);

	ck_assert_ptr_nonnull(unknown);
	ck_assert_str_eq(otel_thread_ctx_strerror(1), unknown);
	for (size_t i = 0; i < n; i++) {
		const char *s = otel_thread_ctx_strerror(codes[i]);

		ck_assert_ptr_nonnull(s);
		ck_assert_uint_gt(strlen(s), 0);
		ck_assert_str_ne(s, unknown);
		for (size_t j = 0; j < i; j++)
			ck_assert_str_ne(s, otel_thread_ctx_strerror(codes[j]));
	}
}
END_TEST

/* Codes named after an errno are its negation; the others are the
 * library's own, from -4001 down, and no errno's. */
START_TEST(errno_named_codes_equal_the_errno)
{
	ck_assert_int_eq(OTEL_THREAD_CTX_EBUSY, -EBUSY);
	ck_assert_int_eq(OTEL_THREAD_CTX_ENOMEM, -ENOMEM);
	ck_assert_int_eq(OTEL_THREAD_CTX_ENOSPC, -ENOSPC);
	ck_assert_int_eq(OTEL_THREAD_CTX_E2BIG, -E2BIG);
	ck_assert_int_le(OTEL_THREAD_CTX_ENULL, -4001);
	ck_assert_int_le(OTEL_THREAD_CTX_EOPTIONS, -4001);
	ck_assert_int_gt(OTEL_THREAD_CTX_EOPTIONS, -4100);
}
END_TEST

START_TEST(update_span_id_commits_in_one_call)
{
	otel_thread_ctx *ctx = attached_ctx(), *other = new_ctx(), *prev;
	struct published before = read_published(), after;

	ck_assert_ok(otel_thread_ctx_update_span_id(ctx, span_b));
	after = read_published();
	ck_assert_ptr_ne(after.slot, before.slot);
	ck_assert_mem_eq(after.rec.span_id, span_b, 8);
	ck_assert_mem_eq(after.rec.trace_id, trace_a, 16);
	ck_assert_uint_eq(after.rec.trace_flags, 1);
	ck_assert_uint_eq(after.rec.attrs_data_size, 7);
	ck_assert_uint_eq(after.rec.valid, 1);
	/* Pending edits are committed with it. */
	ck_assert_ok(otel_thread_ctx_set_attr(ctx, 6, "x", 1));
	ck_assert_ok(otel_thread_ctx_update_span_id(ctx, span_a));
	ck_assert_uint_eq(otel_thread_ctx_v1->attrs_data_size, 10);
	ck_assert_ok(otel_thread_ctx_attach(ctx, &prev)); /* nothing pending */

	/* Refusals change nothing. */
	before = read_published();
	ck_assert_otel(otel_thread_ctx_update_span_id(NULL, span_b), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_update_span_id(ctx, NULL), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_update_span_id(ctx, zero), OTEL_THREAD_CTX_EIDS);
	ck_assert_otel(otel_thread_ctx_update_span_id(other, span_b), OTEL_THREAD_CTX_EIDS);
	assert_unchanged(ctx, &before);

	/* A detached context is committed; the thread's slot is not touched. */
	ck_assert_ok(otel_thread_ctx_set_ids(other, trace_a, span_a, 0));
	ck_assert_ok(otel_thread_ctx_update(other));
	ck_assert_ok(otel_thread_ctx_update_span_id(other, span_b));
	after = read_published();
	ck_assert(published_equal(&before, &after));
	ck_assert_ok(otel_thread_ctx_attach(other, &prev));
	ck_assert_mem_eq(otel_thread_ctx_v1->span_id, span_b, 8);
	ck_assert_ok(otel_thread_ctx_destroy(ctx));
	detach_destroy(other);
}
END_TEST

START_TEST(update_span_id_of_a_context_attached_elsewhere_is_busy)
{
	struct holder h;
	otel_thread_ctx *theirs = new_ctx();
	struct otel_thread_ctx_record rec;

	ck_assert_ok(otel_thread_ctx_set_ids(theirs, trace_a, span_a, 1));
	holder_start(&h, theirs);
	ck_assert_otel(otel_thread_ctx_update_span_id(theirs, span_b), OTEL_THREAD_CTX_EBUSY);
	holder_finish(&h);
	/* Its record still has the first span, and nothing is pending. */
	{
		otel_thread_ctx *prev;

		ck_assert_ok(otel_thread_ctx_update_attach(theirs, &prev));
	}
	ck_assert_ok(otel_thread_ctx_read(&rec));
	ck_assert_mem_eq(rec.span_id, span_a, 8);
	detach_destroy(theirs);
}
END_TEST

START_TEST(set_attrs_refusals_change_nothing)
{
	otel_thread_ctx *ctx = attached_ctx();
	struct published before = read_published();
	uint8_t big[256];
	struct otel_thread_ctx_attr a[2] = { { 1, 1, (const uint8_t *)"a" },
					     { 2, 1, (const uint8_t *)"b" } };

	memset(big, 'z', sizeof(big));
	ck_assert_otel(otel_thread_ctx_set_attrs(NULL, a, 2), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_set_attrs(ctx, NULL, 1), OTEL_THREAD_CTX_ENULL);
	a[1].key = 256;
	ck_assert_otel(otel_thread_ctx_set_attrs(ctx, a, 2), OTEL_THREAD_CTX_EKEY);
	a[1].key = 1;
	ck_assert_otel(otel_thread_ctx_set_attrs(ctx, a, 2), OTEL_THREAD_CTX_EDUPKEY);
	a[1].key = 2;
	a[1].value = big;
	a[1].len = 256;
	ck_assert_otel(otel_thread_ctx_set_attrs(ctx, a, 2), OTEL_THREAD_CTX_EVALUE);
	a[1].value = NULL;
	a[1].len = 1;
	ck_assert_otel(otel_thread_ctx_set_attrs(ctx, a, 2), OTEL_THREAD_CTX_ENULL);
	a[1].value = (const uint8_t *)"\xc3";
	ck_assert_otel(otel_thread_ctx_set_attrs(ctx, a, 2), OTEL_THREAD_CTX_EUTF8);
	assert_unchanged(ctx, &before);
	detach_destroy(ctx);
}
END_TEST

START_TEST(update_all_replaces_everything_in_one_call)
{
	otel_thread_ctx *ctx = attached_ctx(), *other = new_ctx(), *prev;
	const struct otel_thread_ctx_attr list[] = {
		{ 3, 4, (const uint8_t *)"PUT " },
		{ 4, 2, (const uint8_t *)"/x" },
	};
	struct otel_thread_ctx_attr bad[2] = { list[0], list[0] };
	struct published before, after;

	ck_assert_ok(otel_thread_ctx_set_attr(ctx, 9, "pending", 7)); /* overwritten */
	before = read_published();
	ck_assert_ok(otel_thread_ctx_update_all(ctx, trace_a, span_b, 0, list, 2));
	after = read_published();
	ck_assert_ptr_ne(after.slot, before.slot);
	ck_assert_mem_eq(after.rec.trace_id, trace_a, 16);
	ck_assert_mem_eq(after.rec.span_id, span_b, 8);
	ck_assert_uint_eq(after.rec.trace_flags, 0);
	ck_assert_uint_eq(after.rec.attrs_data_size, 10);
	ck_assert_mem_eq(after.rec.attrs_data, "\x03\x04" "PUT " "\x04\x02" "/x", 10);
	ck_assert_ok(otel_thread_ctx_attach(ctx, &prev)); /* nothing pending */

	/* Every refusal changes nothing. */
	before = after;
	ck_assert_otel(otel_thread_ctx_update_all(NULL, trace_a, span_a, 1, list, 2),
		       OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_update_all(ctx, NULL, span_a, 1, list, 2),
		       OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_update_all(ctx, trace_a, NULL, 1, list, 2),
		       OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_update_all(ctx, trace_a, span_a, 1, NULL, 2),
		       OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_update_all(ctx, trace_a, zero, 1, list, 2),
		       OTEL_THREAD_CTX_EIDS);
	ck_assert_otel(otel_thread_ctx_update_all(ctx, trace_a, span_a, 1, bad, 2),
		       OTEL_THREAD_CTX_EDUPKEY);
	assert_unchanged(ctx, &before);

	/* Detached: committed, not published. */
	ck_assert_ok(otel_thread_ctx_update_all(other, trace_a, span_a, 1, NULL, 0));
	after = read_published();
	ck_assert(published_equal(&before, &after));
	ck_assert_ok(otel_thread_ctx_attach(other, &prev));
	ck_assert_mem_eq(otel_thread_ctx_v1->span_id, span_a, 8);
	ck_assert_uint_eq(otel_thread_ctx_v1->attrs_data_size, 0);
	ck_assert_ok(otel_thread_ctx_destroy(ctx));
	detach_destroy(other);
}
END_TEST

START_TEST(update_all_of_a_context_attached_elsewhere_is_busy)
{
	struct holder h;
	otel_thread_ctx *theirs = new_ctx(), *prev;

	ck_assert_ok(otel_thread_ctx_set_ids(theirs, trace_a, span_a, 1));
	holder_start(&h, theirs);
	ck_assert_otel(otel_thread_ctx_update_all(theirs, trace_a, span_b, 1, NULL, 0),
		       OTEL_THREAD_CTX_EBUSY);
	holder_finish(&h);
	ck_assert_ok(otel_thread_ctx_attach(theirs, &prev)); /* nothing pending */
	ck_assert_mem_eq(otel_thread_ctx_v1->span_id, span_a, 8);
	detach_destroy(theirs);
}
END_TEST

START_TEST(create_with_checks_its_options)
{
	struct otel_thread_ctx_options o = OTEL_THREAD_CTX_OPTIONS_INIT;
	otel_thread_ctx *ctx = (otel_thread_ctx *)1, *prev;

	ck_assert_uint_eq(o.size, sizeof(o));
	ck_assert_uint_eq(o.flags, 0);
	ck_assert_uint_eq(o.attrs_capacity, OTEL_THREAD_CTX_ATTRS_MAX);
	ck_assert_otel(otel_thread_ctx_create_with(NULL, &o), OTEL_THREAD_CTX_ENULL);
	o.size = sizeof(o) - 1;
	ck_assert_otel(otel_thread_ctx_create_with(&ctx, &o), OTEL_THREAD_CTX_EOPTIONS);
	o.size = sizeof(o);
	o.flags = 0x2;
	ck_assert_otel(otel_thread_ctx_create_with(&ctx, &o), OTEL_THREAD_CTX_EOPTIONS);
	o.flags = 0;
	o.attrs_capacity = OTEL_THREAD_CTX_ATTRS_MAX + 1;
	ck_assert_otel(otel_thread_ctx_create_with(&ctx, &o), OTEL_THREAD_CTX_EOPTIONS);
	ck_assert_ptr_eq(ctx, (otel_thread_ctx *)1); /* refusals store nothing */

	/* NULL options: create()'s defaults. */
	ck_assert_ok(otel_thread_ctx_create_with(&ctx, NULL));
	ck_assert_ok(otel_thread_ctx_set_ids(ctx, trace_a, span_a, 1));
	ck_assert_ok(otel_thread_ctx_update_attach(ctx, &prev));
	ck_assert_mem_eq(otel_thread_ctx_v1->trace_id, trace_a, 16);
	detach_destroy(ctx);
}
END_TEST

Suite *test_suite(void)
{
	const struct test_case cases[] = {
		{ "create-destroy", create_and_destroy },
		{ "null-arguments", null_arguments },
		{ "ids-half-set", ids_half_set_are_refused },
		{ "span-flags-need-trace", span_and_flags_need_a_trace },
		{ "span-flags-alone", span_and_flags_change_alone },
		{ "bad-attributes", bad_attributes_are_refused },
		{ "attach-prev", attach_hands_back_the_previous_context },
		{ "destroy-attached-here", destroy_on_the_owning_thread_unpublishes_first },
		{ "create-with", create_with_checks_its_options },
		{ "attach-pending", attach_refuses_uncommitted_edits },
		{ "update-swap", update_swaps_records_and_keeps_the_old_one_whole },
		{ "update-detached", update_of_a_detached_context_shows_on_attach },
		{ "invalidate", invalidate_and_revalidate },
		{ "busy-elsewhere", a_context_attached_elsewhere_is_busy },
		{ "strerror", every_error_has_its_own_text },
		{ "errno-codes", errno_named_codes_equal_the_errno },
		{ "update-span-id", update_span_id_commits_in_one_call },
		{ "update-span-id-busy", update_span_id_of_a_context_attached_elsewhere_is_busy },
		{ "set-attrs-refusals", set_attrs_refusals_change_nothing },
		{ "update-all", update_all_replaces_everything_in_one_call },
		{ "update-all-busy", update_all_of_a_context_attached_elsewhere_is_busy },
	};

	return MAKE_SUITE("api", cases, 0);
}
