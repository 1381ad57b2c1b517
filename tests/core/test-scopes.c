/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Scopes: otel_thread_ctx_attach(ctx, saved) ... otel_thread_ctx_update(saved)
 * puts back exactly what the attach replaced (a record, or nothing), however
 * deep the scopes nest, whatever happened meanwhile to the contexts
 * involved, and whether saved is a context of its own or ctx itself.  A
 * saved context too small for what the thread publishes is refused with
 * ENOSPC, and then nothing changes: not the slot, not a byte of the record,
 * not a byte of saved.
 */
#include <stdint.h>

#include "common.h"

static const uint8_t trace_a[16] = { 0xa1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
static const uint8_t trace_b[16] = { 0xb1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
static const uint8_t trace_c[16] = { 0xc1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
static const uint8_t span_a[8] = { 0xa2, 1, 2, 3, 4, 5, 6, 7 };
static const uint8_t span_b[8] = { 0xb2, 1, 2, 3, 4, 5, 6, 7 };
static const uint8_t span_c[8] = { 0xc2, 1, 2, 3, 4, 5, 6, 7 };
static const uint8_t span_x[8] = { 0xee, 1, 2, 3, 4, 5, 6, 7 };

static otel_thread_ctx *made(const uint8_t trace[16], const uint8_t span[8], const char *route)
{
	otel_thread_ctx *ctx = new_ctx();

	ck_assert_ok(otel_thread_ctx_set_ids(ctx, trace, span, 1));
	ck_assert_ok(otel_thread_ctx_set_attr(ctx, 1, route, strlen(route)));
	return ctx;
}

/* What the thread publishes now: a record, or nothing (ok = 0). */
struct shown {
	int ok;
	struct otel_thread_ctx_record rec;
};

static struct shown shown_now(void)
{
	struct shown s;

	memset(&s, 0, sizeof(s));
	s.ok = otel_thread_ctx_v1 != NULL;
	if (s.ok)
		memcpy(&s.rec, otel_thread_ctx_v1, sizeof(s.rec));
	return s;
}

static void assert_shown(const struct shown *want, const char *where)
{
	struct shown now = shown_now();

	if (!want->ok) {
		ck_assert_msg(!now.ok, "%s: something is published, nothing was due", where);
		return;
	}
	ck_assert_msg(now.ok, "%s: nothing is published", where);
	ck_assert_msg(same_record(&now.rec, &want->rec), "%s: not the record that was due", where);
}

/* saved holds exactly what `want` shows. */
static void assert_saved(const otel_thread_ctx *saved, const struct shown *want, const char *where)
{
	struct held h = held_by(saved);

	if (!want->ok) {
		ck_assert_msg(h.rc == OTEL_THREAD_CTX_ENOCTX, "%s: saved holds a record", where);
		return;
	}
	ck_assert_msg(h.rc == OTEL_THREAD_CTX_OK, "%s: saved holds nothing", where);
	ck_assert_msg(same_record(&h.rec, &want->rec), "%s: saved is not what was replaced", where);
}

/* Three scopes, one in another, from "nothing published" at the bottom;
 * inside them the contexts are edited and destroyed and the fast paths
 * change the record; each restore puts back exactly what its attach
 * replaced. */
START_TEST(nested_scopes_restore_what_they_replaced)
{
	otel_thread_ctx *a = made(trace_a, span_a, "GET /a"), *b = made(trace_b, span_b, "GET /b"),
			*c = made(trace_c, span_c, "GET /c");
	otel_thread_ctx *s1 = new_ctx(), *s2 = new_ctx(), *s3 = new_ctx();
	struct shown level0, level1, level2, level3;

	level0 = shown_now();
	ck_assert_int_eq(level0.ok, 0);
	ck_assert_ok(otel_thread_ctx_attach(a, s1));
	assert_saved(s1, &level0, "scope 1");
	level1 = shown_now();
	ck_assert_int_eq(level1.ok, 1);

	/* In scope 1, the fast path moves on to a child span. */
	ck_assert_ok(otel_thread_ctx_update_span_id(span_x));
	level1 = shown_now();
	ck_assert_ok(otel_thread_ctx_attach(b, s2));
	assert_saved(s2, &level1, "scope 2");
	level2 = shown_now();

	ck_assert_ok(otel_thread_ctx_update_trace_flags(0));
	level2 = shown_now();
	ck_assert_ok(otel_thread_ctx_attach(c, s3));
	assert_saved(s3, &level2, "scope 3");
	level3 = shown_now();
	{
		struct held hc = held_by(c);

		ck_assert(same_record(&level3.rec, &hc.rec));
	}

	/* Whatever happens to the contexts meanwhile. */
	ck_assert_ok(otel_thread_ctx_set_span_id(a, span_c));
	ck_assert_ok(otel_thread_ctx_clear(b));
	otel_thread_ctx_destroy(b);
	ck_assert_ok(otel_thread_ctx_set_attr(c, 2, "edited", 6));
	ck_assert_ok(otel_thread_ctx_update_all(trace_c, span_x, 0, NULL, 0));

	ck_assert_ok(otel_thread_ctx_update(s3));
	assert_shown(&level2, "after scope 3");
	ck_assert_ok(otel_thread_ctx_update(s2));
	assert_shown(&level1, "after scope 2");
	ck_assert_ok(otel_thread_ctx_update(s1));
	assert_shown(&level0, "after scope 1");
	ck_assert_ptr_null(otel_thread_ctx_v1);
	/* The saved contexts still hold what they saved: restoring twice
	 * restores the same. */
	ck_assert_ok(otel_thread_ctx_update(s2));
	assert_shown(&level1, "restored again");
	ck_assert_ok(otel_thread_ctx_update(s1));
	assert_shown(&level0, "restored again to nothing");
	otel_thread_ctx_destroy(a);
	otel_thread_ctx_destroy(c);
	otel_thread_ctx_destroy(s1);
	otel_thread_ctx_destroy(s2);
	otel_thread_ctx_destroy(s3);
}
END_TEST

/* The same scopes with attach(ctx, ctx): the context publishes what it
 * held and takes what it replaced, so one context per scope suffices. */
START_TEST(saved_may_be_the_context_itself)
{
	otel_thread_ctx *a = made(trace_a, span_a, "GET /a"), *b = made(trace_b, span_b, "GET /b"),
			*c = made(trace_c, span_c, "GET /c");
	struct shown level0 = shown_now(), level1, level2, want;

	want.ok = 1;
	want.rec = held_by(a).rec;
	ck_assert_ok(otel_thread_ctx_attach(a, a));
	assert_shown(&want, "scope 1");
	assert_saved(a, &level0, "scope 1");
	level1 = shown_now();

	want.rec = held_by(b).rec;
	ck_assert_ok(otel_thread_ctx_attach(b, b));
	assert_shown(&want, "scope 2");
	assert_saved(b, &level1, "scope 2");
	level2 = shown_now();

	want.rec = held_by(c).rec;
	ck_assert_ok(otel_thread_ctx_attach(c, c));
	assert_shown(&want, "scope 3");
	assert_saved(c, &level2, "scope 3");

	ck_assert_ok(otel_thread_ctx_update(c));
	assert_shown(&level2, "after scope 3");
	ck_assert_ok(otel_thread_ctx_update(b));
	assert_shown(&level1, "after scope 2");
	ck_assert_ok(otel_thread_ctx_update(a));
	assert_shown(&level0, "after scope 1");

	/* attach(x, x) twice swaps back and forth. */
	ck_assert_ok(otel_thread_ctx_update(b)); /* b holds level 1 */
	want = shown_now();
	ck_assert_ok(otel_thread_ctx_attach(c, c)); /* c held level 2 */
	assert_shown(&level2, "swap");
	assert_saved(c, &want, "swap");
	ck_assert_ok(otel_thread_ctx_attach(c, c));
	assert_shown(&want, "swap back");
	assert_saved(c, &level2, "swap back");
	ck_assert_ok(otel_thread_ctx_detach(NULL));
	otel_thread_ctx_destroy(a);
	otel_thread_ctx_destroy(b);
	otel_thread_ctx_destroy(c);
}
END_TEST

/* detach(saved) is a scope that ends in nothing; restoring puts back what
 * it unpublished. */
START_TEST(detach_is_a_scope_too)
{
	otel_thread_ctx *a = made(trace_a, span_a, "GET /a"), *saved = new_ctx();
	struct shown before;

	ck_assert_ok(otel_thread_ctx_attach(a, NULL));
	ck_assert_ok(otel_thread_ctx_update_span_id(span_x));
	before = shown_now();
	ck_assert_ok(otel_thread_ctx_detach(saved));
	ck_assert_ptr_null(otel_thread_ctx_v1);
	assert_saved(saved, &before, "detach");
	otel_thread_ctx_destroy(a);
	ck_assert_ok(otel_thread_ctx_update(saved));
	assert_shown(&before, "restored");
	ck_assert_ok(otel_thread_ctx_detach(NULL));
	otel_thread_ctx_destroy(saved);
}
END_TEST

/* The whole of the thread's state, to compare before and after a
 * refusal: the slot, every byte of its record, every byte of saved. */
struct everything {
	struct published pub;
	struct ctx_bytes saved;
};

static void look(struct everything *e, const otel_thread_ctx *saved)
{
	e->pub = read_published();
	ctx_bytes_of(saved, &e->saved);
}

static void assert_same(const struct everything *before, const otel_thread_ctx *saved,
			const char *what)
{
	struct everything now;

	look(&now, saved);
	ck_assert_msg(published_equal(&before->pub, &now.pub), "%s: the published record changed",
		      what);
	ck_assert_msg(ctx_bytes_equal(&before->saved, &now.saved), "%s: saved changed", what);
}

START_TEST(a_saved_context_too_small_is_refused)
{
	otel_thread_ctx *a = new_ctx(), *other = made(trace_b, span_b, "x");
	otel_thread_ctx *small = new_ctx_sized(49), *exact = new_ctx_sized(50);
	otel_thread_ctx *none_small = new_ctx_sized(0);
	struct everything before;
	struct otel_thread_ctx_record out;
	uint8_t v[48];

	memset(v, 'v', sizeof(v));
	ck_assert_ok(otel_thread_ctx_set_ids(a, trace_a, span_a, 1));
	ck_assert_ok(otel_thread_ctx_set_attr(a, 7, v, sizeof(v))); /* 50 bytes */
	/* Nothing published: any saved fits. */
	ck_assert_ok(otel_thread_ctx_attach(a, none_small));
	ck_assert_otel(otel_thread_ctx_get(none_small, &out),
		       OTEL_THREAD_CTX_ENOCTX);
	/* 50 bytes published: 49 is too small, for every call that saves. */
	ck_assert_ok(otel_thread_ctx_set_attr(small, 1, "keep", 4));
	look(&before, small);
	ck_assert_otel(otel_thread_ctx_attach(other, small), OTEL_THREAD_CTX_ENOSPC);
	assert_same(&before, small, "attach");
	ck_assert_otel(otel_thread_ctx_detach(small), OTEL_THREAD_CTX_ENOSPC);
	assert_same(&before, small, "detach");
	ck_assert_otel(otel_thread_ctx_save(small), OTEL_THREAD_CTX_ENOSPC);
	assert_same(&before, small, "save");
	/* saved is ctx: refused before anything is published. */
	ck_assert_otel(otel_thread_ctx_attach(small, small), OTEL_THREAD_CTX_ENOSPC);
	assert_same(&before, small, "attach(small, small)");
	/* A context that holds nothing, too small. */
	look(&before, none_small);
	ck_assert_otel(otel_thread_ctx_attach(none_small, none_small), OTEL_THREAD_CTX_ENOSPC);
	assert_same(&before, none_small, "attach(nothing, nothing)");
	/* Exactly the size fits. */
	ck_assert_ok(otel_thread_ctx_attach(other, exact));
	ck_assert_uint_eq(held_by(exact).rec.attrs_data_size, 50);
	ck_assert_ok(otel_thread_ctx_update(exact));
	ck_assert_uint_eq(otel_thread_ctx_v1->attrs_data_size, 50);
	/* The fast paths' records count the same way. */
	{
		struct otel_thread_ctx_attr one = { 3, 47, v }; /* 49 bytes */

		ck_assert_ok(otel_thread_ctx_update_all(trace_c, span_c, 0, &one, 1));
		ck_assert_ok(otel_thread_ctx_save(small));
		one.len = 48;
		ck_assert_ok(otel_thread_ctx_update_all(trace_c, span_c, 0, &one, 1));
		look(&before, small);
		ck_assert_otel(otel_thread_ctx_save(small), OTEL_THREAD_CTX_ENOSPC);
		assert_same(&before, small, "save after update_all");
	}
	ck_assert_ok(otel_thread_ctx_detach(NULL));
	otel_thread_ctx_destroy(a);
	otel_thread_ctx_destroy(other);
	otel_thread_ctx_destroy(small);
	otel_thread_ctx_destroy(exact);
	otel_thread_ctx_destroy(none_small);
}
END_TEST

/* A span-only saved context is enough where no attributes are published. */
START_TEST(a_span_only_saved_context_saves_ids)
{
	otel_thread_ctx *saved = new_ctx_sized(0), *a = new_ctx();
	struct shown before;

	ck_assert_ok(otel_thread_ctx_update_all(trace_a, span_a, 1, NULL, 0));
	before = shown_now();
	ck_assert_ok(otel_thread_ctx_set_ids(a, trace_b, span_b, 0));
	ck_assert_ok(otel_thread_ctx_attach(a, saved));
	assert_saved(saved, &before, "span-only saved");
	ck_assert_ok(otel_thread_ctx_update(saved));
	assert_shown(&before, "span-only restored");
	ck_assert_ok(otel_thread_ctx_detach(NULL));
	otel_thread_ctx_destroy(saved);
	otel_thread_ctx_destroy(a);
}
END_TEST

Suite *test_suite(void)
{
	const struct test_case cases[] = {
		{ "nested", nested_scopes_restore_what_they_replaced },
		{ "saved-is-ctx", saved_may_be_the_context_itself },
		{ "detach-scope", detach_is_a_scope_too },
		{ "saved-too-small", a_saved_context_too_small_is_refused },
		{ "span-only-saved", a_span_only_saved_context_saves_ids },
	};

	return MAKE_SUITE("scopes", cases, 0);
}
