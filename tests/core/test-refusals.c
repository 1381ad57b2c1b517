/* SPDX-License-Identifier: Apache-2.0 */
/*
 * "A call that fails changes nothing: neither the published record, nor the
 * draft, nor any thread's slot" (otel_thread_ctx.h, Errors), byte for byte,
 * and the attribute budget to the byte on every path that writes
 * attributes.
 *
 * Twins: two contexts get the same successful calls; one of them also gets
 * the refused call.  The slot and every byte of the published record of
 * the one attached are compared before and after; then both commit, and
 * the records they publish must be the same bytes: the refused call left
 * no trace in the draft.  Each refusal runs from five states: attached and
 * clean, attached with uncommitted edits (of attributes, or of an id only),
 * detached with uncommitted edits, attached and invalidated with
 * uncommitted edits; for a context of the full 612-byte capacity and a
 * sized one.
 */
#include <stdint.h>
#include <string.h>

#include "common.h"

static const uint8_t trace_a[16] = { 0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6,
				     0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36 };
static const uint8_t span_a[8] = { 0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7 };
static const uint8_t span_b[8] = { 0x53, 0x99, 0x5c, 0x3f, 0x42, 0xcd, 0x8a, 0xd8 };
static const uint8_t zero[16];
static uint8_t filler[256];

#define SIZED_CAPACITY 100u

enum state { CLEAN, EDITED, EDITED_IDS, DETACHED, INVALIDATED, STATES };
static const char *const state_names[STATES] = { "attached", "attached with edits",
						  "attached with an ids edit",
						  "detached with edits",
						  "invalidated with edits" };

static otel_thread_ctx *create(unsigned int capacity)
{
	struct otel_thread_ctx_options o = OTEL_THREAD_CTX_OPTIONS_INIT;
	otel_thread_ctx *ctx = NULL;

	o.attrs_capacity = capacity;
	ck_assert_ok(otel_thread_ctx_create_with(&ctx, &o));
	return ctx;
}

/* The committed record both twins start from: ids and two attributes. */
static void commit_base(otel_thread_ctx *ctx)
{
	ck_assert_ok(otel_thread_ctx_set_ids(ctx, trace_a, span_a, 1));
	ck_assert_ok(otel_thread_ctx_set_attr(ctx, 3, "GET /cart", 9));
	ck_assert_ok(otel_thread_ctx_set_attr(ctx, 7, filler, 40));
	ck_assert_ok(otel_thread_ctx_update(ctx));
	/* A commit of the span alone: the draft's attributes are then a
	 * current copy, which a refused call must not leave changed. */
	ck_assert_ok(otel_thread_ctx_set_span_id(ctx, span_b));
	ck_assert_ok(otel_thread_ctx_update(ctx));
}

/* Edits both twins leave uncommitted. */
static void edit(otel_thread_ctx *ctx)
{
	ck_assert_ok(otel_thread_ctx_set_span_id(ctx, span_a));
	ck_assert_ok(otel_thread_ctx_set_attr(ctx, 3, "POST /cart", 10));
	ck_assert_ok(otel_thread_ctx_set_attr(ctx, 9, "x", 1));
	ck_assert_ok(otel_thread_ctx_remove_attr(ctx, 7));
}

/* Puts `a` (attached or not) and its twin `b` (never attached) in state
 * st by the same calls. */
static void prepare(otel_thread_ctx *a, otel_thread_ctx *b, enum state st)
{
	otel_thread_ctx *prev;

	commit_base(a);
	commit_base(b);
	if (st != DETACHED)
		ck_assert_ok(otel_thread_ctx_attach(a, &prev));
	if (st == INVALIDATED) {
		ck_assert_ok(otel_thread_ctx_invalidate(a));
		ck_assert_ok(otel_thread_ctx_invalidate(b));
	}
	if (st == EDITED_IDS) {
		ck_assert_ok(otel_thread_ctx_set_span_id(a, span_a));
		ck_assert_ok(otel_thread_ctx_set_span_id(b, span_a));
	} else if (st != CLEAN) {
		edit(a);
		edit(b);
	}
}

/* What the calling thread publishes: the slot and 28 + capacity bytes. */
struct shown {
	const struct otel_thread_ctx_record *slot;
	uint8_t bytes[sizeof(struct otel_thread_ctx_record)];
};

static void look(struct shown *s, unsigned int capacity)
{
	memset(s, 0, sizeof(*s));
	s->slot = otel_thread_ctx_v1;
	if (s->slot != NULL)
		memcpy(s->bytes, s->slot, 28 + capacity);
}

static int same_record(const struct otel_thread_ctx_record *a,
		       const struct otel_thread_ctx_record *b)
{
	return memcmp(a, b, 28) == 0 && memcmp(a->attrs_data, b->attrs_data, a->attrs_data_size) == 0;
}

struct refusal {
	const char *name;
	int (*call)(otel_thread_ctx *ctx);
	int expect;
	int needs_detached; /* EPENDING: the context must not be attached */
};

/* --- The refused calls ------------------------------------------------------ */

static int ids_null(otel_thread_ctx *c) { return otel_thread_ctx_set_ids(c, NULL, span_a, 0); }
static int ids_half(otel_thread_ctx *c) { return otel_thread_ctx_set_ids(c, trace_a, zero, 1); }
static int ids_half_trace(otel_thread_ctx *c) { return otel_thread_ctx_set_ids(c, zero, span_a, 0); }
static int ids_flags_alone(otel_thread_ctx *c) { return otel_thread_ctx_set_ids(c, zero, zero, 1); }
static int span_zero(otel_thread_ctx *c) { return otel_thread_ctx_set_span_id(c, zero); }
static int span_null(otel_thread_ctx *c) { return otel_thread_ctx_set_span_id(c, NULL); }
static int attr_key(otel_thread_ctx *c) { return otel_thread_ctx_set_attr(c, 256, "v", 1); }
static int attr_len(otel_thread_ctx *c) { return otel_thread_ctx_set_attr(c, 4, filler, 256); }
static int attr_utf8(otel_thread_ctx *c) { return otel_thread_ctx_set_attr(c, 4, "ok\xc3", 3); }
static int attr_null(otel_thread_ctx *c) { return otel_thread_ctx_set_attr(c, 4, NULL, 2); }
static int remove_key(otel_thread_ctx *c) { return otel_thread_ctx_remove_attr(c, 300); }

/* Entries whose bytes add up to `bytes` (2 + len each, at most 257). */
static size_t entries_of(struct otel_thread_ctx_attr *a, size_t bytes, unsigned int first_key)
{
	size_t n = 0;

	while (bytes > 0) {
		size_t take = bytes > 257 ? 257 : bytes;

		/* Never leave a remainder of 1, which no entry can take. */
		if (bytes - take == 1)
			take--;
		a[n].key = first_key + (unsigned int)n;
		a[n].len = (unsigned int)(take - 2);
		a[n].value = filler;
		bytes -= take;
		n++;
	}
	return n;
}

static int attrs_dup(otel_thread_ctx *c)
{
	struct otel_thread_ctx_attr a[3] = { { 1, 1, (const uint8_t *)"a" },
					     { 2, 1, (const uint8_t *)"b" },
					     { 1, 1, (const uint8_t *)"c" } };

	return otel_thread_ctx_set_attrs(c, a, 3);
}

/* A bad entry after good ones: none of them may stay. */
static int attrs_bad_last(otel_thread_ctx *c)
{
	struct otel_thread_ctx_attr a[3] = { { 1, 1, (const uint8_t *)"a" },
					     { 2, 1, (const uint8_t *)"b" },
					     { 3, 2, (const uint8_t *)"\xff\xfe" } };

	return otel_thread_ctx_set_attrs(c, a, 3);
}

static int attrs_key(otel_thread_ctx *c)
{
	struct otel_thread_ctx_attr a[2] = { { 1, 1, (const uint8_t *)"a" },
					     { 999, 1, (const uint8_t *)"b" } };

	return otel_thread_ctx_set_attrs(c, a, 2);
}

static int attrs_null(otel_thread_ctx *c) { return otel_thread_ctx_set_attrs(c, NULL, 2); }

static int attrs_too_big(otel_thread_ctx *c)
{
	struct otel_thread_ctx_attr a[4];

	return otel_thread_ctx_set_attrs(c, a, entries_of(a, OTEL_THREAD_CTX_ATTRS_MAX + 1, 1));
}

static int all_bad_ids(otel_thread_ctx *c)
{
	struct otel_thread_ctx_attr a[1] = { { 1, 1, (const uint8_t *)"a" } };

	return otel_thread_ctx_update_all(c, trace_a, zero, 0, a, 1);
}

static int all_bad_attrs(otel_thread_ctx *c)
{
	struct otel_thread_ctx_attr a[2] = { { 1, 1, (const uint8_t *)"a" },
					     { 1, 1, (const uint8_t *)"b" } };

	return otel_thread_ctx_update_all(c, trace_a, span_b, 1, a, 2);
}

static int all_too_big(otel_thread_ctx *c)
{
	struct otel_thread_ctx_attr a[4];

	return otel_thread_ctx_update_all(c, trace_a, span_b, 1, a,
					  entries_of(a, OTEL_THREAD_CTX_ATTRS_MAX + 1, 1));
}

static int span_update_zero(otel_thread_ctx *c) { return otel_thread_ctx_update_span_id(c, zero); }
static int span_update_null(otel_thread_ctx *c) { return otel_thread_ctx_update_span_id(c, NULL); }

static int attach_pending(otel_thread_ctx *c)
{
	otel_thread_ctx *prev = (otel_thread_ctx *)(uintptr_t)1;
	int rc = otel_thread_ctx_attach(c, &prev);

	/* *prev is not written either. */
	ck_assert_ptr_eq(prev, (otel_thread_ctx *)(uintptr_t)1);
	return rc;
}

static int attach_null_prev(otel_thread_ctx *c) { return otel_thread_ctx_attach(c, NULL); }
static int update_attach_null_prev(otel_thread_ctx *c)
{
	return otel_thread_ctx_update_attach(c, NULL);
}

static const struct refusal refusals[] = {
	{ "set_ids NULL", ids_null, OTEL_THREAD_CTX_ENULL, 0 },
	{ "set_ids span zero", ids_half, OTEL_THREAD_CTX_EIDS, 0 },
	{ "set_ids trace zero", ids_half_trace, OTEL_THREAD_CTX_EIDS, 0 },
	{ "set_ids flags alone", ids_flags_alone, OTEL_THREAD_CTX_EIDS, 0 },
	{ "set_span_id zero", span_zero, OTEL_THREAD_CTX_EIDS, 0 },
	{ "set_span_id NULL", span_null, OTEL_THREAD_CTX_ENULL, 0 },
	{ "set_attr key 256", attr_key, OTEL_THREAD_CTX_EKEY, 0 },
	{ "set_attr 256 bytes", attr_len, OTEL_THREAD_CTX_EVALUE, 0 },
	{ "set_attr bad UTF-8", attr_utf8, OTEL_THREAD_CTX_EUTF8, 0 },
	{ "set_attr NULL value", attr_null, OTEL_THREAD_CTX_ENULL, 0 },
	{ "remove_attr key 300", remove_key, OTEL_THREAD_CTX_EKEY, 0 },
	{ "set_attrs duplicate", attrs_dup, OTEL_THREAD_CTX_EDUPKEY, 0 },
	{ "set_attrs bad last", attrs_bad_last, OTEL_THREAD_CTX_EUTF8, 0 },
	{ "set_attrs key 999", attrs_key, OTEL_THREAD_CTX_EKEY, 0 },
	{ "set_attrs NULL", attrs_null, OTEL_THREAD_CTX_ENULL, 0 },
	{ "set_attrs 613 bytes", attrs_too_big, OTEL_THREAD_CTX_ENOSPC, 0 },
	{ "update_all bad ids", all_bad_ids, OTEL_THREAD_CTX_EIDS, 0 },
	{ "update_all duplicate", all_bad_attrs, OTEL_THREAD_CTX_EDUPKEY, 0 },
	{ "update_all 613 bytes", all_too_big, OTEL_THREAD_CTX_ENOSPC, 0 },
	{ "update_span_id zero", span_update_zero, OTEL_THREAD_CTX_EIDS, 0 },
	{ "update_span_id NULL", span_update_null, OTEL_THREAD_CTX_ENULL, 0 },
	{ "attach with edits", attach_pending, OTEL_THREAD_CTX_EPENDING, 1 },
	{ "attach NULL prev", attach_null_prev, OTEL_THREAD_CTX_ENULL, 0 },
	{ "update_attach NULL prev", update_attach_null_prev, OTEL_THREAD_CTX_ENULL, 0 },
};

/* One refusal from one state: the slot and the published bytes stay, and
 * the draft is the twin's. */
static void refuse(const struct refusal *r, enum state st, unsigned int capacity)
{
	otel_thread_ctx *a = create(capacity), *b = create(capacity), *prev;
	struct otel_thread_ctx_record ra, rb;
	struct shown before, after;
	int rc;

	prepare(a, b, st);
	look(&before, capacity);
	rc = r->call(a);
	ck_assert_msg(rc == r->expect, "%s, %s, capacity %u: %s, not %s", r->name,
		      state_names[st], capacity, otel_thread_ctx_strerror(rc),
		      otel_thread_ctx_strerror(r->expect));
	look(&after, capacity);
	ck_assert_msg(before.slot == after.slot, "%s, %s: the slot changed", r->name,
		      state_names[st]);
	ck_assert_msg(memcmp(before.bytes, after.bytes, sizeof(before.bytes)) == 0,
		      "%s, %s: a published byte changed", r->name, state_names[st]);
	/* One more edit of another field, so that whatever the draft holds is
	 * committed, then the commit. */
	ck_assert_ok(otel_thread_ctx_set_trace_flags(a, 0));
	ck_assert_ok(otel_thread_ctx_set_trace_flags(b, 0));
	ck_assert_ok(otel_thread_ctx_update(a));
	ck_assert_ok(otel_thread_ctx_update(b));
	ck_assert_ok(otel_thread_ctx_committed(a, &ra));
	ck_assert_ok(otel_thread_ctx_committed(b, &rb));
	ck_assert_msg(same_record(&ra, &rb), "%s, %s, capacity %u: the draft changed", r->name,
		      state_names[st], capacity);
	if (otel_thread_ctx_v1 != NULL)
		ck_assert(same_record(otel_thread_ctx_v1, &rb));
	ck_assert_ok(otel_thread_ctx_detach(&prev));
	ck_assert_ok(otel_thread_ctx_destroy(a));
	ck_assert_ok(otel_thread_ctx_destroy(b));
}

START_TEST(refused_calls_change_no_byte)
{
	memset(filler, 'f', sizeof(filler));
	for (size_t i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++) {
		for (int st = 0; st < STATES; st++) {
			if (refusals[i].needs_detached && st != DETACHED)
				continue;
			refuse(&refusals[i], (enum state)st, OTEL_THREAD_CTX_ATTRS_MAX);
			refuse(&refusals[i], (enum state)st, SIZED_CAPACITY);
		}
	}
}
END_TEST

/* --- The attribute budget, to the byte ------------------------------------ */

/* The bytes entries a[0..n) take in a record. */
static size_t encode(const struct otel_thread_ctx_attr *a, size_t n, uint8_t *out)
{
	size_t at = 0;

	for (size_t i = 0; i < n; i++) {
		out[at] = (uint8_t)a[i].key;
		out[at + 1] = (uint8_t)a[i].len;
		memcpy(out + at + 2, a[i].value, a[i].len);
		at += 2 + a[i].len;
	}
	return at;
}

enum budget_path { BY_SET_ATTR, BY_REPLACING, BY_SET_ATTRS, BY_UPDATE_ALL, BUDGET_PATHS };
static const char *const budget_names[BUDGET_PATHS] = { "set_attr (new key)",
							"set_attr (longer value)", "set_attrs",
							"update_all" };

/*
 * Brings a context of `capacity` bytes to `total` bytes of attributes by
 * `path`: accepted, with exactly those bytes, up to the capacity; ENOSPC
 * one byte past it, with the context exactly as before.
 */
static void budget(enum budget_path path, unsigned int capacity, size_t total)
{
	struct otel_thread_ctx_attr a[8], last = { 200, 48, filler };
	otel_thread_ctx *ctx = create(capacity), *twin = create(capacity), *prev;
	struct otel_thread_ctx_record got, want;
	size_t n = 0;
	int rc, expect = total <= capacity ? OTEL_THREAD_CTX_OK : OTEL_THREAD_CTX_ENOSPC;

	memset(&want, 0, sizeof(want));
	want.valid = 1;
	memcpy(want.trace_id, trace_a, 16);
	memcpy(want.span_id, span_a, 8);
	ck_assert_ok(otel_thread_ctx_set_ids(ctx, trace_a, span_a, 0));
	ck_assert_ok(otel_thread_ctx_set_ids(twin, trace_a, span_a, 0));
	if (path == BY_SET_ATTR || path == BY_REPLACING) {
		/* What is there before: all but the last entry, which is
		 * new, or there with a 10-byte value. */
		size_t before = total - (2 + last.len);

		if (path == BY_REPLACING)
			before += 2 + 10;
		n = before >= 2 ? entries_of(a, before - (path == BY_REPLACING ? 12 : 0), 1) : 0;
		if (path == BY_REPLACING) {
			a[n] = last;
			a[n].len = 10;
			n++;
		}
		ck_assert_ok(otel_thread_ctx_set_attrs(ctx, a, n));
		ck_assert_ok(otel_thread_ctx_set_attrs(twin, a, n));
		ck_assert_ok(otel_thread_ctx_update(ctx));
		ck_assert_ok(otel_thread_ctx_update(twin));
		ck_assert_ok(otel_thread_ctx_attach(ctx, &prev));
		rc = otel_thread_ctx_set_attr(ctx, last.key, last.value, last.len);
		if (path == BY_REPLACING)
			a[n - 1] = last;
		else
			a[n++] = last;
		if (rc == 0)
			rc = otel_thread_ctx_update(ctx);
	} else {
		n = entries_of(a, total, 1);
		ck_assert_ok(otel_thread_ctx_update(ctx));
		ck_assert_ok(otel_thread_ctx_update(twin));
		ck_assert_ok(otel_thread_ctx_attach(ctx, &prev));
		if (path == BY_SET_ATTRS) {
			rc = otel_thread_ctx_set_attrs(ctx, a, n);
			if (rc == 0)
				rc = otel_thread_ctx_update(ctx);
		} else {
			rc = otel_thread_ctx_update_all(ctx, trace_a, span_a, 0, a, n);
		}
	}
	ck_assert_msg(rc == expect, "%s to %zu bytes of %u: %s", budget_names[path], total,
		      capacity, otel_thread_ctx_strerror(rc));
	ck_assert_ok(otel_thread_ctx_committed(ctx, &got));
	if (rc == 0) {
		want.attrs_data_size = (uint16_t)encode(a, n, want.attrs_data);
		ck_assert_uint_eq(want.attrs_data_size, total);
		ck_assert_msg(same_record(&got, &want), "%s to %zu bytes of %u: not the entries",
			      budget_names[path], total, capacity);
		ck_assert(same_record(otel_thread_ctx_v1, &want));
	} else {
		/* Refused: what the twin, which never tried, holds. */
		ck_assert_ok(otel_thread_ctx_set_trace_flags(ctx, 1));
		ck_assert_ok(otel_thread_ctx_set_trace_flags(twin, 1));
		ck_assert_ok(otel_thread_ctx_update(ctx));
		ck_assert_ok(otel_thread_ctx_update(twin));
		ck_assert_ok(otel_thread_ctx_committed(ctx, &got));
		ck_assert_ok(otel_thread_ctx_committed(twin, &want));
		ck_assert_msg(same_record(&got, &want), "%s to %zu bytes of %u: refused, but changed",
			      budget_names[path], total, capacity);
	}
	ck_assert_ok(otel_thread_ctx_detach(&prev));
	ck_assert_ok(otel_thread_ctx_destroy(ctx));
	ck_assert_ok(otel_thread_ctx_destroy(twin));
}

START_TEST(the_budget_is_exact_on_every_path)
{
	static const unsigned int capacities[] = { OTEL_THREAD_CTX_ATTRS_MAX, SIZED_CAPACITY };

	memset(filler, 'f', sizeof(filler));
	for (size_t c = 0; c < 2; c++) {
		for (int path = 0; path < BUDGET_PATHS; path++) {
			/* 611, 612, 613 for the full capacity. */
			for (size_t total = capacities[c] - 1; total <= capacities[c] + 1; total++)
				budget((enum budget_path)path, capacities[c], total);
		}
	}
}
END_TEST

Suite *test_suite(void)
{
	const struct test_case cases[] = {
		{ "refusals", refused_calls_change_no_byte },
		{ "budget", the_budget_is_exact_on_every_path },
	};

	return MAKE_SUITE("refusals", cases, 60);
}
