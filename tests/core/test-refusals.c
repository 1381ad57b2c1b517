/* SPDX-License-Identifier: Apache-2.0 */
/*
 * "A call that fails changes nothing: no context, no record, no slot"
 * (otel_thread_ctx.h, Errors), byte for byte, and the attribute budget to
 * the byte on every path that writes attributes.
 *
 * Every refusal runs from every state of the calling thread where it is a
 * refusal: publishing a record (just attached, or after the fast paths
 * changed it, so that the thread's draft is behind), publishing a record
 * without ids, detached, and never having published at all (a new thread).
 * Before and after the call, the slot, every byte of the record it leads
 * to, and every byte of the heap block of every context involved are
 * compared.  Then the thread publishes once more by a fast path, which
 * copies only what changed since its last publication: what it publishes
 * must be exactly the record before plus that change, so a refused call
 * left nothing in the draft either.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common.h"

static const uint8_t trace_a[16] = { 0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6,
				     0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36 };
static const uint8_t span_a[8] = { 0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7 };
static const uint8_t span_b[8] = { 0x53, 0x99, 0x5c, 0x3f, 0x42, 0xcd, 0x8a, 0xd8 };
static const uint8_t span_c[8] = { 0xc3, 0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xca };
static const uint8_t zero[16];
static uint8_t filler[256];

#define SIZED_CAPACITY 100u
#define SMALL_CAPACITY 10u

enum state { PUBLISHING, BEHIND, NO_IDS, DETACHED, FRESH, STATES };
static const char *const state_names[STATES] = {
	"publishing", "publishing after the fast paths", "publishing a record without ids",
	"detached", "a thread that never published",
};

/* What a refused call may touch. */
struct fixture {
	unsigned int capacity;
	otel_thread_ctx *ctx;   /* ids and 53 bytes of attributes; `capacity` */
	otel_thread_ctx *small; /* one attribute; SMALL_CAPACITY */
	otel_thread_ctx *none;  /* holds no record */
	otel_thread_ctx *made;  /* what create_with() stores: nothing */
	struct otel_thread_ctx_record out; /* what get() writes: nothing */
	char why[300];          /* the first failure */
};

/* Everything the fixture and the thread show. */
struct snapshot {
	struct published pub;
	struct ctx_bytes ctx, small, none;
	otel_thread_ctx *made;
	struct otel_thread_ctx_record out;
};

/* No Check here: refusals run on other threads too, where a failed check
 * cannot unwind.  The first failure is kept, and reported by the caller. */
__attribute__((format(printf, 2, 3))) static int refusal_failed(struct fixture *f, const char *fmt, ...)
{
	va_list ap;

	if (f->why[0] == '\0') {
		va_start(ap, fmt);
		vsnprintf(f->why, sizeof(f->why), fmt, ap);
		va_end(ap);
	}
	return -1;
}

static void bytes_of(const otel_thread_ctx *ctx, struct ctx_bytes *out)
{
	memset(out, 0, sizeof(*out));
	out->size = malloc_usable_size((void *)(uintptr_t)ctx);
	if (out->size > sizeof(out->bytes))
		out->size = sizeof(out->bytes);
	memcpy(out->bytes, ctx, out->size);
}

static void take(struct snapshot *s, const struct fixture *f)
{
	memset(s, 0, sizeof(*s));
	s->pub = read_published();
	bytes_of(f->ctx, &s->ctx);
	bytes_of(f->small, &s->small);
	bytes_of(f->none, &s->none);
	s->made = f->made;
	memcpy(&s->out, &f->out, sizeof(s->out));
}

/* What differs between two snapshots, or NULL. */
static const char *difference(const struct snapshot *a, const struct snapshot *b)
{
	if (a->pub.slot != b->pub.slot)
		return "the slot";
	if (memcmp(&a->pub.rec, &b->pub.rec, sizeof(a->pub.rec)) != 0)
		return "a byte of the published record";
	if (!ctx_bytes_equal(&a->ctx, &b->ctx))
		return "a byte of the context";
	if (!ctx_bytes_equal(&a->small, &b->small))
		return "a byte of the small context";
	if (!ctx_bytes_equal(&a->none, &b->none))
		return "a byte of the context that holds nothing";
	if (a->made != b->made)
		return "create_with()'s output";
	if (memcmp(&a->out, &b->out, sizeof(a->out)) != 0)
		return "get()'s output";
	return NULL;
}

/* --- The refused calls ------------------------------------------------------ */

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

static int ids_null(struct fixture *f) { return otel_thread_ctx_set_ids(f->ctx, NULL, span_a, 0); }
static int ids_half(struct fixture *f) { return otel_thread_ctx_set_ids(f->ctx, trace_a, zero, 1); }
static int ids_half_trace(struct fixture *f)
{
	return otel_thread_ctx_set_ids(f->ctx, zero, span_a, 0);
}
static int ids_flags_alone(struct fixture *f)
{
	return otel_thread_ctx_set_ids(f->ctx, zero, zero, 1);
}
static int span_zero(struct fixture *f) { return otel_thread_ctx_set_span_id(f->ctx, zero); }
static int span_null(struct fixture *f) { return otel_thread_ctx_set_span_id(f->ctx, NULL); }
static int span_no_trace(struct fixture *f) { return otel_thread_ctx_set_span_id(f->none, span_a); }
static int flags_no_ids(struct fixture *f) { return otel_thread_ctx_set_trace_flags(f->none, 1); }
static int attr_key(struct fixture *f) { return otel_thread_ctx_set_attr(f->ctx, 256, "v", 1); }
static int attr_len(struct fixture *f) { return otel_thread_ctx_set_attr(f->ctx, 4, filler, 256); }
static int attr_utf8(struct fixture *f) { return otel_thread_ctx_set_attr(f->ctx, 4, "ok\xc3", 3); }
static int attr_null(struct fixture *f) { return otel_thread_ctx_set_attr(f->ctx, 4, NULL, 2); }
static int attr_nospc(struct fixture *f) { return otel_thread_ctx_set_attr(f->small, 2, "abcdefg", 7); }
static int attr_on_none(struct fixture *f) { return otel_thread_ctx_set_attr(f->none, 4, "\xff", 1); }
static int remove_key(struct fixture *f) { return otel_thread_ctx_remove_attr(f->ctx, 300); }
static int remove_on_none(struct fixture *f) { return otel_thread_ctx_remove_attr(f->none, 256); }

static int attrs_dup(struct fixture *f)
{
	struct otel_thread_ctx_attr a[3] = { { 1, 1, (const uint8_t *)"a" },
					     { 2, 1, (const uint8_t *)"b" },
					     { 1, 1, (const uint8_t *)"c" } };

	return otel_thread_ctx_set_attrs(f->ctx, a, 3);
}

/* A bad entry after good ones: none of them may stay. */
static int attrs_bad_last(struct fixture *f)
{
	struct otel_thread_ctx_attr a[3] = { { 1, 1, (const uint8_t *)"a" },
					     { 2, 1, (const uint8_t *)"b" },
					     { 3, 2, (const uint8_t *)"\xff\xfe" } };

	return otel_thread_ctx_set_attrs(f->ctx, a, 3);
}

static int attrs_key(struct fixture *f)
{
	struct otel_thread_ctx_attr a[2] = { { 1, 1, (const uint8_t *)"a" },
					     { 999, 1, (const uint8_t *)"b" } };

	return otel_thread_ctx_set_attrs(f->ctx, a, 2);
}

static int attrs_null(struct fixture *f) { return otel_thread_ctx_set_attrs(f->ctx, NULL, 2); }

static int attrs_too_big(struct fixture *f)
{
	struct otel_thread_ctx_attr a[4];

	return otel_thread_ctx_set_attrs(f->ctx, a, entries_of(a, f->capacity + 1, 1));
}

static int copy_nospc(struct fixture *f) { return otel_thread_ctx_copy(f->small, f->ctx); }
static int copy_null(struct fixture *f) { return otel_thread_ctx_copy(NULL, f->ctx); }
static int get_none(struct fixture *f) { return otel_thread_ctx_get(f->none, &f->out); }

static int create_bad(struct fixture *f)
{
	struct otel_thread_ctx_options o = OTEL_THREAD_CTX_OPTIONS_INIT;

	o.flags = 2; /* a flag this version does not know */
	return otel_thread_ctx_create_with(&f->made, &o);
}

static int create_big(struct fixture *f)
{
	struct otel_thread_ctx_options o = OTEL_THREAD_CTX_OPTIONS_INIT;

	o.attrs_capacity = OTEL_THREAD_CTX_ATTRS_MAX + 1;
	return otel_thread_ctx_create_with(&f->made, &o);
}

static int attach_null(struct fixture *f) { return otel_thread_ctx_attach(NULL, f->small); }
static int attach_small(struct fixture *f) { return otel_thread_ctx_attach(f->ctx, f->small); }
static int attach_self_small(struct fixture *f)
{
	return otel_thread_ctx_attach(f->small, f->small);
}
static int attach_none_small(struct fixture *f) { return otel_thread_ctx_attach(f->none, f->small); }
static int update_null(struct fixture *f) { (void)f; return otel_thread_ctx_update(NULL); }
static int detach_small(struct fixture *f) { return otel_thread_ctx_detach(f->small); }
static int save_small(struct fixture *f) { return otel_thread_ctx_save(f->small); }
static int save_null(struct fixture *f) { (void)f; return otel_thread_ctx_save(NULL); }
static int span_update_zero(struct fixture *f) { (void)f; return otel_thread_ctx_update_span_id(zero); }
static int span_update_null(struct fixture *f) { (void)f; return otel_thread_ctx_update_span_id(NULL); }
static int span_update(struct fixture *f) { (void)f; return otel_thread_ctx_update_span_id(span_c); }
static int flags_update(struct fixture *f) { (void)f; return otel_thread_ctx_update_trace_flags(1); }
static int flags_update_zero(struct fixture *f)
{
	(void)f;
	return otel_thread_ctx_update_trace_flags(0);
}

static int all_bad_ids(struct fixture *f)
{
	struct otel_thread_ctx_attr a[1] = { { 1, 1, (const uint8_t *)"a" } };

	(void)f;
	return otel_thread_ctx_update_all(trace_a, zero, 0, a, 1);
}

static int all_flags_alone(struct fixture *f)
{
	(void)f;
	return otel_thread_ctx_update_all(zero, zero, 1, NULL, 0);
}

static int all_dup(struct fixture *f)
{
	struct otel_thread_ctx_attr a[2] = { { 1, 1, (const uint8_t *)"a" },
					     { 1, 1, (const uint8_t *)"b" } };

	(void)f;
	return otel_thread_ctx_update_all(trace_a, span_b, 1, a, 2);
}

/* Good entries written first, then a bad one. */
static int all_bad_last(struct fixture *f)
{
	struct otel_thread_ctx_attr a[4];
	size_t n = entries_of(a, 300, 1);

	(void)f;
	a[n].key = 77;
	a[n].len = 2;
	a[n].value = (const uint8_t *)"\xc3(";
	return otel_thread_ctx_update_all(trace_a, span_b, 1, a, n + 1);
}

static int all_key(struct fixture *f)
{
	struct otel_thread_ctx_attr a[2] = { { 1, 1, (const uint8_t *)"a" },
					     { 256, 1, (const uint8_t *)"b" } };

	(void)f;
	return otel_thread_ctx_update_all(trace_a, span_b, 1, a, 2);
}

static int all_too_big(struct fixture *f)
{
	struct otel_thread_ctx_attr a[4];

	(void)f;
	return otel_thread_ctx_update_all(trace_a, span_b, 1, a,
					  entries_of(a, OTEL_THREAD_CTX_ATTRS_MAX + 1, 1));
}

static int all_null_trace(struct fixture *f)
{
	(void)f;
	return otel_thread_ctx_update_all(NULL, span_b, 0, NULL, 0);
}

static int all_null_attrs(struct fixture *f)
{
	(void)f;
	return otel_thread_ctx_update_all(trace_a, span_b, 0, NULL, 1);
}

static int all_null_value(struct fixture *f)
{
	struct otel_thread_ctx_attr a[2] = { { 1, 1, (const uint8_t *)"a" }, { 2, 3, NULL } };

	(void)f;
	return otel_thread_ctx_update_all(trace_a, span_b, 0, a, 2);
}

/* The code a call returns from a state, or 0 where it is not a refusal. */
typedef int (*expect_fn)(enum state st);

static int shown(enum state st) { return st == PUBLISHING || st == BEHIND || st == NO_IDS; }
static int when_shown_enospc(enum state st) { return shown(st) ? OTEL_THREAD_CTX_ENOSPC : 0; }

static int span_update_expect(enum state st)
{
	return st == NO_IDS ? OTEL_THREAD_CTX_EIDS : shown(st) ? 0 : OTEL_THREAD_CTX_ENOCTX;
}

static int flags_update_zero_expect(enum state st) { return shown(st) ? 0 : OTEL_THREAD_CTX_ENOCTX; }

struct refusal {
	const char *name;
	int (*call)(struct fixture *f);
	int always;       /* the code, in every state */
	expect_fn expect; /* or the code by state */
};

static const struct refusal refusals[] = {
	{ "set_ids NULL", ids_null, OTEL_THREAD_CTX_ENULL, NULL },
	{ "set_ids span zero", ids_half, OTEL_THREAD_CTX_EIDS, NULL },
	{ "set_ids trace zero", ids_half_trace, OTEL_THREAD_CTX_EIDS, NULL },
	{ "set_ids flags alone", ids_flags_alone, OTEL_THREAD_CTX_EIDS, NULL },
	{ "set_span_id zero", span_zero, OTEL_THREAD_CTX_EIDS, NULL },
	{ "set_span_id NULL", span_null, OTEL_THREAD_CTX_ENULL, NULL },
	{ "set_span_id without a trace", span_no_trace, OTEL_THREAD_CTX_EIDS, NULL },
	{ "set_trace_flags without ids", flags_no_ids, OTEL_THREAD_CTX_EIDS, NULL },
	{ "set_attr key 256", attr_key, OTEL_THREAD_CTX_EKEY, NULL },
	{ "set_attr 256 bytes", attr_len, OTEL_THREAD_CTX_EVALUE, NULL },
	{ "set_attr bad UTF-8", attr_utf8, OTEL_THREAD_CTX_EUTF8, NULL },
	{ "set_attr NULL value", attr_null, OTEL_THREAD_CTX_ENULL, NULL },
	{ "set_attr past the capacity", attr_nospc, OTEL_THREAD_CTX_ENOSPC, NULL },
	{ "set_attr on nothing", attr_on_none, OTEL_THREAD_CTX_EUTF8, NULL },
	{ "remove_attr key 300", remove_key, OTEL_THREAD_CTX_EKEY, NULL },
	{ "remove_attr on nothing", remove_on_none, OTEL_THREAD_CTX_EKEY, NULL },
	{ "set_attrs duplicate", attrs_dup, OTEL_THREAD_CTX_EDUPKEY, NULL },
	{ "set_attrs bad last", attrs_bad_last, OTEL_THREAD_CTX_EUTF8, NULL },
	{ "set_attrs key 999", attrs_key, OTEL_THREAD_CTX_EKEY, NULL },
	{ "set_attrs NULL", attrs_null, OTEL_THREAD_CTX_ENULL, NULL },
	{ "set_attrs capacity + 1 bytes", attrs_too_big, OTEL_THREAD_CTX_ENOSPC, NULL },
	{ "copy into a small context", copy_nospc, OTEL_THREAD_CTX_ENOSPC, NULL },
	{ "copy NULL", copy_null, OTEL_THREAD_CTX_ENULL, NULL },
	{ "get of nothing", get_none, OTEL_THREAD_CTX_ENOCTX, NULL },
	{ "create_with reserved", create_bad, OTEL_THREAD_CTX_EOPTIONS, NULL },
	{ "create_with capacity 613", create_big, OTEL_THREAD_CTX_EOPTIONS, NULL },
	{ "attach NULL", attach_null, OTEL_THREAD_CTX_ENULL, NULL },
	{ "attach, saved too small", attach_small, 0, when_shown_enospc },
	{ "attach(small, small)", attach_self_small, 0, when_shown_enospc },
	{ "attach nothing, saved too small", attach_none_small, 0, when_shown_enospc },
	{ "update NULL", update_null, OTEL_THREAD_CTX_ENULL, NULL },
	{ "detach, saved too small", detach_small, 0, when_shown_enospc },
	{ "save, saved too small", save_small, 0, when_shown_enospc },
	{ "save NULL", save_null, OTEL_THREAD_CTX_ENULL, NULL },
	{ "update_span_id zero", span_update_zero, OTEL_THREAD_CTX_EIDS, NULL },
	{ "update_span_id NULL", span_update_null, OTEL_THREAD_CTX_ENULL, NULL },
	{ "update_span_id", span_update, 0, span_update_expect },
	{ "update_trace_flags 1", flags_update, 0, span_update_expect },
	{ "update_trace_flags 0", flags_update_zero, 0, flags_update_zero_expect },
	{ "update_all bad ids", all_bad_ids, OTEL_THREAD_CTX_EIDS, NULL },
	{ "update_all flags alone", all_flags_alone, OTEL_THREAD_CTX_EIDS, NULL },
	{ "update_all duplicate", all_dup, OTEL_THREAD_CTX_EDUPKEY, NULL },
	{ "update_all bad last", all_bad_last, OTEL_THREAD_CTX_EUTF8, NULL },
	{ "update_all key 256", all_key, OTEL_THREAD_CTX_EKEY, NULL },
	{ "update_all 613 bytes", all_too_big, OTEL_THREAD_CTX_ENOSPC, NULL },
	{ "update_all NULL trace", all_null_trace, OTEL_THREAD_CTX_ENULL, NULL },
	{ "update_all NULL attrs", all_null_attrs, OTEL_THREAD_CTX_ENULL, NULL },
	{ "update_all NULL value", all_null_value, OTEL_THREAD_CTX_ENULL, NULL },
};

#define N_REFUSALS (sizeof(refusals) / sizeof(refusals[0]))

/* --- One refusal from one state ------------------------------------------------ */

/* The record the contexts start from: ids and 53 bytes of attributes (or
 * the attributes only). */
static int fill(otel_thread_ctx *ctx, int ids)
{
	int rc = ids ? otel_thread_ctx_set_ids(ctx, trace_a, span_a, 1) : 0;

	if (rc == 0)
		rc = otel_thread_ctx_set_attr(ctx, 3, "GET /cart", 9);
	if (rc == 0)
		rc = otel_thread_ctx_set_attr(ctx, 7, filler, 40);
	return rc;
}

static otel_thread_ctx *create(unsigned int capacity)
{
	struct otel_thread_ctx_options o = OTEL_THREAD_CTX_OPTIONS_INIT;
	otel_thread_ctx *ctx = NULL;

	o.attrs_capacity = capacity;
	o.flags = capacity == 0 ? OTEL_THREAD_CTX_OPTION_IDS_ONLY : 0;
	return otel_thread_ctx_create_with(&ctx, &o) == 0 ? ctx : NULL;
}

/* Brings the calling thread to state st (nothing is published on entry). */
static int enter(struct fixture *f, enum state st)
{
	otel_thread_ctx *base = create(OTEL_THREAD_CTX_ATTRS_MAX);
	int rc = base != NULL ? fill(base, st != NO_IDS) : OTEL_THREAD_CTX_ENOMEM;

	if (st != FRESH) {
		if (rc == 0)
			rc = otel_thread_ctx_attach(base, NULL);
		if (rc == 0 && st == BEHIND)
			rc = otel_thread_ctx_update_span_id(span_b);
		if (rc == 0 && st == BEHIND)
			rc = otel_thread_ctx_update_trace_flags(0);
		if (rc == 0 && st == DETACHED)
			rc = otel_thread_ctx_detach(NULL);
	}
	otel_thread_ctx_destroy(base);
	if (rc != 0)
		return refusal_failed(f, "%s: cannot get there: %s", state_names[st],
			    otel_thread_ctx_strerror(rc));
	return 0;
}

/*
 * After the refusal: one more publication by a fast path, which must
 * publish the record before with that one change (where nothing is
 * published, an attach first, then the fast path).
 */
static int publish_once_more(struct fixture *f, const struct snapshot *before, const char *what)
{
	struct otel_thread_ctx_record want;
	int rc;

	if (before->pub.slot == NULL) {
		otel_thread_ctx *base = create(OTEL_THREAD_CTX_ATTRS_MAX);

		if (base == NULL || fill(base, 1) != 0 || otel_thread_ctx_get(base, &want) != 0 ||
		    otel_thread_ctx_attach(base, NULL) != 0)
			return refusal_failed(f, "%s: cannot attach afterwards", what);
		otel_thread_ctx_destroy(base);
	} else {
		want = before->pub.rec;
	}
	if (memcmp(want.trace_id, zero, 16) != 0) {
		rc = otel_thread_ctx_update_span_id(span_c);
		memcpy(want.span_id, span_c, 8);
	} else {
		rc = otel_thread_ctx_update_trace_flags(0);
	}
	if (rc != 0)
		return refusal_failed(f, "%s: the fast path afterwards failed: %s", what,
			    otel_thread_ctx_strerror(rc));
	if (otel_thread_ctx_v1 == NULL || !same_record(otel_thread_ctx_v1, &want))
		return refusal_failed(f, "%s: the next publication is not the record before with its change: "
			    "the refusal left something in the draft", what);
	return 0;
}

static int refuse(struct fixture *f, const struct refusal *r, enum state st, int expect)
{
	struct snapshot before, after;
	const char *diff;
	char what[200];
	int rc;

	snprintf(what, sizeof(what), "%s, %s, capacity %u", r->name, state_names[st], f->capacity);
	if (enter(f, st) != 0)
		return -1;
	take(&before, f);
	rc = r->call(f);
	take(&after, f);
	if (rc != expect)
		return refusal_failed(f, "%s: %s, not %s", what, otel_thread_ctx_strerror(rc),
			    otel_thread_ctx_strerror(expect));
	diff = difference(&before, &after);
	if (diff != NULL)
		return refusal_failed(f, "%s: refused, but %s changed", what, diff);
	if (publish_once_more(f, &before, what) != 0)
		return -1;
	rc = otel_thread_ctx_detach(NULL);
	return rc == 0 ? 0 : refusal_failed(f, "%s: detach: %s", what, otel_thread_ctx_strerror(rc));
}

/* The fixture's contexts (on the thread that runs the refusal). */
static int setup(struct fixture *f, unsigned int capacity)
{
	int rc;

	memset(f, 0, sizeof(*f));
	f->capacity = capacity;
	f->made = (otel_thread_ctx *)(uintptr_t)0x1;
	memset(&f->out, 0xee, sizeof(f->out));
	f->ctx = create(capacity);
	f->small = create(SMALL_CAPACITY);
	f->none = create(OTEL_THREAD_CTX_ATTRS_MAX);
	if (f->ctx == NULL || f->small == NULL || f->none == NULL)
		return refusal_failed(f, "cannot create the contexts");
	rc = fill(f->ctx, 1);
	if (rc == 0)
		rc = otel_thread_ctx_set_attr(f->small, 1, "ab", 2);
	if (rc == 0 && otel_thread_ctx_v1 != NULL)
		rc = otel_thread_ctx_detach(NULL);
	/* Nothing is published: save makes `none` hold nothing. */
	if (rc == 0)
		rc = otel_thread_ctx_save(f->none);
	if (rc == 0 && otel_thread_ctx_get(f->none, &f->out) != OTEL_THREAD_CTX_ENOCTX)
		return refusal_failed(f, "save with nothing published gave a record");
	return rc == 0 ? 0 : refusal_failed(f, "setup: %s", otel_thread_ctx_strerror(rc));
}

static void teardown(struct fixture *f)
{
	otel_thread_ctx_destroy(f->ctx);
	otel_thread_ctx_destroy(f->small);
	otel_thread_ctx_destroy(f->none);
}

static int expected(const struct refusal *r, enum state st)
{
	return r->expect != NULL ? r->expect(st) : r->always;
}

/* A new thread, which has never published, for state FRESH. */
struct fresh_run {
	const struct refusal *r;
	unsigned int capacity;
	struct fixture f;
	int rc;
};

static void *fresh_main(void *arg)
{
	struct fresh_run *run = arg;

	run->rc = setup(&run->f, run->capacity);
	if (run->rc == 0) {
		if (otel_thread_ctx_v1 != NULL)
			run->rc = refusal_failed(&run->f, "a new thread publishes something");
		else
			run->rc = refuse(&run->f, run->r, FRESH, expected(run->r, FRESH));
	}
	teardown(&run->f);
	return NULL;
}

static unsigned long refused_count;

static void refuse_everywhere(const struct refusal *r, unsigned int capacity)
{
	for (int st = 0; st < STATES; st++) {
		int expect = expected(r, (enum state)st);

		if (expect == 0)
			continue;
		refused_count++;
		if (st == FRESH) {
			struct fresh_run run = { r, capacity, { 0 }, -1 };
			pthread_t t;

			ck_assert_int_eq(pthread_create(&t, NULL, fresh_main, &run), 0);
			ck_assert_int_eq(pthread_join(t, NULL), 0);
			ck_assert_msg(run.rc == 0, "%s", run.f.why);
		} else {
			struct fixture f;
			int rc = setup(&f, capacity);

			if (rc == 0)
				rc = refuse(&f, r, (enum state)st, expect);
			teardown(&f);
			ck_assert_msg(rc == 0, "%s", f.why);
		}
	}
}

START_TEST(refused_calls_change_no_byte)
{
	memset(filler, 'f', sizeof(filler));
	refused_count = 0;
	for (size_t i = 0; i < N_REFUSALS; i++) {
		refuse_everywhere(&refusals[i], OTEL_THREAD_CTX_ATTRS_MAX);
		refuse_everywhere(&refusals[i], SIZED_CAPACITY);
	}
	printf("refusals: %lu refused calls, each compared byte for byte\n", refused_count);
	ck_assert_uint_gt(refused_count, N_REFUSALS * 2 * 3);
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

enum budget_path {
	BY_SET_ATTR,
	BY_REPLACING,
	BY_SET_ATTRS,
	BY_COPY,
	BY_SAVE,
	BY_UPDATE_ALL,
	BUDGET_PATHS
};
static const char *const budget_names[BUDGET_PATHS] = {
	"set_attr (new key)", "set_attr (longer value)", "set_attrs",
	"copy into it", "save into it", "update_all",
};

/*
 * Brings a context of `capacity` bytes to `total` bytes of attributes by
 * `path` (update_all: the thread's record, of 612 bytes): accepted, with
 * exactly those bytes, up to the capacity; ENOSPC one byte past it, with
 * every byte as before.
 */
static void budget(enum budget_path path, unsigned int capacity, size_t total)
{
	struct otel_thread_ctx_attr a[8], last = { 200, 48, filler };
	otel_thread_ctx *ctx = new_ctx_sized(capacity), *src = new_ctx();
	struct otel_thread_ctx_record want;
	struct ctx_bytes before, after;
	struct published pub_before, pub_after;
	size_t n = 0;
	int rc, expect = total <= capacity ? OTEL_THREAD_CTX_OK : OTEL_THREAD_CTX_ENOSPC;

	memset(&want, 0, sizeof(want));
	want.valid = 1;
	memcpy(want.trace_id, trace_a, 16);
	memcpy(want.span_id, span_a, 8);
	ck_assert_ok(otel_thread_ctx_set_ids(ctx, trace_a, span_a, 0));
	ck_assert_ok(otel_thread_ctx_set_ids(src, trace_a, span_a, 0));
	if (path == BY_SET_ATTR || path == BY_REPLACING) {
		/* What is there before: all but the last entry, which is
		 * new, or there with a 10-byte value. */
		size_t there = total - (2 + last.len);

		n = there >= 2 ? entries_of(a, there, 1) : 0;
		if (path == BY_REPLACING) {
			a[n] = last;
			a[n].len = 10;
			n++;
		}
		ck_assert_ok(otel_thread_ctx_set_attrs(ctx, a, n));
		ctx_bytes_of(ctx, &before);
		rc = otel_thread_ctx_set_attr(ctx, last.key, last.value, last.len);
		if (path == BY_REPLACING)
			a[n - 1] = last;
		else
			a[n++] = last;
	} else {
		n = entries_of(a, total, 1);
		ck_assert_ok(otel_thread_ctx_set_attr(ctx, 1, "was", 3));
		ctx_bytes_of(ctx, &before);
		if (path == BY_SET_ATTRS) {
			rc = otel_thread_ctx_set_attrs(ctx, a, n);
		} else if (path == BY_COPY) {
			ck_assert_ok(otel_thread_ctx_set_attrs(src, a, n));
			rc = otel_thread_ctx_copy(ctx, src);
		} else if (path == BY_SAVE) {
			ck_assert_ok(otel_thread_ctx_set_attrs(src, a, n));
			ck_assert_ok(otel_thread_ctx_attach(src, NULL));
			pub_before = read_published();
			rc = otel_thread_ctx_save(ctx);
			pub_after = read_published();
			ck_assert(published_equal(&pub_before, &pub_after));
		} else {
			ck_assert_ok(otel_thread_ctx_update(src));
			pub_before = read_published();
			rc = otel_thread_ctx_update_all(trace_a, span_a, 0, a, n);
		}
	}
	ck_assert_msg(rc == expect, "%s to %zu bytes of %u: %s", budget_names[path], total,
		      capacity, otel_thread_ctx_strerror(rc));
	{
		uint8_t entries[OTEL_THREAD_CTX_ATTRS_MAX + 300];
		size_t size = encode(a, n, entries);

		ck_assert_uint_eq(size, total);
		want.attrs_data_size = (uint16_t)size;
		memcpy(want.attrs_data, entries,
		       size < OTEL_THREAD_CTX_ATTRS_MAX ? size : OTEL_THREAD_CTX_ATTRS_MAX);
	}
	if (path == BY_UPDATE_ALL) {
		pub_after = read_published();
		if (rc == 0)
			ck_assert_msg(same_record(otel_thread_ctx_v1, &want), "update_all to %zu bytes: "
				      "not the entries", total);
		else
			ck_assert_msg(published_equal(&pub_before, &pub_after),
				      "update_all to %zu bytes: refused, but changed", total);
	} else if (rc == 0) {
		struct held h = held_by(ctx);

		ck_assert_ok(h.rc);
		ck_assert_msg(same_record(&h.rec, &want), "%s to %zu bytes of %u: not the entries",
			      budget_names[path], total, capacity);
	} else {
		ctx_bytes_of(ctx, &after);
		ck_assert_msg(ctx_bytes_equal(&before, &after), "%s to %zu bytes of %u: refused, "
			      "but changed", budget_names[path], total, capacity);
	}
	ck_assert_ok(otel_thread_ctx_detach(NULL));
	otel_thread_ctx_destroy(ctx);
	otel_thread_ctx_destroy(src);
}

START_TEST(the_budget_is_exact_on_every_path)
{
	static const unsigned int capacities[] = { OTEL_THREAD_CTX_ATTRS_MAX, SIZED_CAPACITY };

	memset(filler, 'f', sizeof(filler));
	for (size_t c = 0; c < 2; c++) {
		for (int path = 0; path < BUDGET_PATHS; path++) {
			if (path == BY_UPDATE_ALL && capacities[c] != OTEL_THREAD_CTX_ATTRS_MAX)
				continue;
			/* 611, 612, 613 for the full capacity (where the source
			 * of a copy or save cannot hold 613: 611 and 612). */
			for (size_t total = capacities[c] - 1; total <= capacities[c] + 1; total++) {
				if ((path == BY_COPY || path == BY_SAVE) &&
				    total > OTEL_THREAD_CTX_ATTRS_MAX)
					continue;
				budget((enum budget_path)path, capacities[c], total);
			}
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
