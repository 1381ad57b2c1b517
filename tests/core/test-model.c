/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The API against a model.  Long random sequences of every call on four
 * contexts (two of the full capacity, one of 100 bytes, one for ids only)
 * and on the calling thread: the setters, copy, attach with and without a
 * saved context (which may be the context itself), update, detach, save,
 * and the fast paths update_span_id, update_trace_flags and update_all,
 * with valid and invalid arguments.  A model of each context (what it
 * holds, or that it holds nothing) and of the thread (what it publishes, or
 * nothing) predicts every return code; after every call, the record the
 * thread publishes and what every context holds must be byte for byte the
 * model's, so a refused call is seen to change nothing.  This is also what
 * proves that the library brings the thread's draft up to date after any
 * sequence of publications (it copies only the fields that changed since).
 */
#include <stdint.h>
#include <stdio.h>

#include "common.h"

#define MAX_ATTRS 64
#define CONTEXTS 4

struct model_attr {
	unsigned key, len;
	uint8_t value[255];
};

struct model_rec {
	uint8_t trace[16], span[8], flags;
	unsigned n;
	struct model_attr attr[MAX_ATTRS];
};

struct model_ctx {
	otel_thread_ctx *ctx;
	unsigned capacity;
	int none; /* holds no record (rec is then empty) */
	struct model_rec rec;
};

/* The contexts, and what the thread publishes. */
static struct model_ctx ctxs[CONTEXTS];
static const unsigned capacities[CONTEXTS] = { OTEL_THREAD_CTX_ATTRS_MAX,
					       OTEL_THREAD_CTX_ATTRS_MAX, 100, 0 };
static struct {
	int shown;
	struct model_rec rec;
} thread;

static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * UINT64_C(2685821657736338717);
}

static unsigned pick(unsigned n)
{
	return (unsigned)(rnd() % n);
}

static int all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

static size_t attrs_size(const struct model_rec *r)
{
	size_t size = 0;

	for (unsigned i = 0; i < r->n; i++)
		size += 2 + r->attr[i].len;
	return size;
}

static void encode(const struct model_rec *r, struct otel_thread_ctx_record *out)
{
	size_t at = 0;

	memset(out, 0, sizeof(*out));
	memcpy(out->trace_id, r->trace, 16);
	memcpy(out->span_id, r->span, 8);
	out->valid = 1;
	out->trace_flags = r->flags;
	for (unsigned i = 0; i < r->n; i++) {
		out->attrs_data[at++] = (uint8_t)r->attr[i].key;
		out->attrs_data[at++] = (uint8_t)r->attr[i].len;
		memcpy(out->attrs_data + at, r->attr[i].value, r->attr[i].len);
		at += r->attr[i].len;
	}
	out->attrs_data_size = (uint16_t)at;
}

/* What a setter edits: a context that held nothing holds an empty record
 * from then on. */
static struct model_rec *edit(struct model_ctx *m)
{
	if (m->none) {
		memset(&m->rec, 0, sizeof(m->rec));
		m->none = 0;
	}
	return &m->rec;
}

/* What the thread publishes, into a saved context. */
static void save_into(struct model_ctx *saved)
{
	if (thread.shown) {
		saved->rec = thread.rec;
		saved->none = 0;
	} else {
		memset(&saved->rec, 0, sizeof(saved->rec));
		saved->none = 1;
	}
}

/* Random argument makers: mostly valid, sometimes not. */
static void random_id(uint8_t *id, size_t n)
{
	if (pick(8) == 0) {
		memset(id, 0, n);
		return;
	}
	for (size_t i = 0; i < n; i++)
		id[i] = (uint8_t)rnd();
	id[0] |= 1;
}

static unsigned random_key(void)
{
	return pick(40) == 0 ? 256 + pick(10) : pick(12); /* few keys: replacements */
}

/* A value: ASCII of a random length, sometimes too long or not UTF-8. */
static unsigned random_value(uint8_t *v, int *utf8_ok)
{
	unsigned len = pick(10) == 0 ? pick(257) : pick(40);

	for (unsigned i = 0; i < len && i < 255; i++)
		v[i] = (uint8_t)('a' + pick(26));
	*utf8_ok = 1;
	if (len > 0 && len <= 255 && pick(30) == 0) {
		v[pick(len)] = 0xff;
		*utf8_ok = 0;
	}
	return len;
}

static int find(const struct model_rec *r, unsigned key)
{
	for (unsigned i = 0; i < r->n; i++)
		if (r->attr[i].key == key)
			return (int)i;
	return -1;
}

/* A context, or (one time in four) NULL: a saved argument. */
static struct model_ctx *random_saved(void)
{
	return pick(4) == 0 ? NULL : &ctxs[pick(CONTEXTS)];
}

static unsigned long ops, refusals, publications, nothing_held, nothing_published;

#define EXPECT(call, want)                                                     \
	do {                                                                   \
		int want_ = (want), got_ = (call);                             \
		ck_assert_msg(got_ == want_, "op %lu: %s returned %d (%s), the model says %d (%s)", \
			      ops, #call, got_, otel_thread_ctx_strerror(got_), want_, \
			      otel_thread_ctx_strerror(want_));                  \
		if (want_ != OTEL_THREAD_CTX_OK)                               \
			refusals++;                                            \
	} while (0)

/* --- Setters ---------------------------------------------------------------- */

static int ids_ok(const uint8_t trace[16], const uint8_t span[8], uint8_t flags)
{
	return all_zero(trace, 16) == all_zero(span, 8) && !(all_zero(trace, 16) && flags);
}

static void op_set_ids(struct model_ctx *m)
{
	uint8_t trace[16], span[8], flags = (uint8_t)pick(4);
	int ok;

	random_id(trace, 16);
	random_id(span, 8);
	ok = ids_ok(trace, span, flags);
	EXPECT(otel_thread_ctx_set_ids(m->ctx, trace, span, flags),
	       ok ? OTEL_THREAD_CTX_OK : OTEL_THREAD_CTX_EIDS);
	if (ok) {
		struct model_rec *d = edit(m);

		memcpy(d->trace, trace, 16);
		memcpy(d->span, span, 8);
		d->flags = flags;
	}
}

static void op_set_span(struct model_ctx *m)
{
	uint8_t span[8];
	int ok;

	random_id(span, 8);
	ok = !all_zero(span, 8) && !all_zero(m->rec.trace, 16);
	EXPECT(otel_thread_ctx_set_span_id(m->ctx, span),
	       ok ? OTEL_THREAD_CTX_OK : OTEL_THREAD_CTX_EIDS);
	if (ok)
		memcpy(edit(m)->span, span, 8);
}

static void op_set_flags(struct model_ctx *m)
{
	uint8_t flags = (uint8_t)pick(3);
	int ok = flags == 0 || !all_zero(m->rec.trace, 16);

	EXPECT(otel_thread_ctx_set_trace_flags(m->ctx, flags),
	       ok ? OTEL_THREAD_CTX_OK : OTEL_THREAD_CTX_EIDS);
	if (ok)
		edit(m)->flags = flags;
}

static void op_clear_ids(struct model_ctx *m)
{
	struct model_rec *d;

	EXPECT(otel_thread_ctx_clear_ids(m->ctx), OTEL_THREAD_CTX_OK);
	d = edit(m);
	memset(d->trace, 0, 16);
	memset(d->span, 0, 8);
	d->flags = 0;
}

static void op_set_attr(struct model_ctx *m)
{
	uint8_t v[257];
	int utf8_ok, at, want;
	unsigned key = random_key(), len = random_value(v, &utf8_ok);
	size_t size;

	at = key <= 255 ? find(&m->rec, key) : -1;
	size = attrs_size(&m->rec) - (at >= 0 ? 2 + m->rec.attr[at].len : 0) + 2 + len;
	want = key > 255 ? OTEL_THREAD_CTX_EKEY :
	       len > 255 ? OTEL_THREAD_CTX_EVALUE :
	       !utf8_ok ? OTEL_THREAD_CTX_EUTF8 :
	       size > m->capacity ? OTEL_THREAD_CTX_ENOSPC : OTEL_THREAD_CTX_OK;
	EXPECT(otel_thread_ctx_set_attr(m->ctx, key, v, len), want);
	if (want == OTEL_THREAD_CTX_OK) {
		struct model_rec *d = edit(m);

		if (at < 0)
			at = (int)d->n++;
		d->attr[at].key = key;
		d->attr[at].len = len;
		memcpy(d->attr[at].value, v, len);
	}
}

static void op_remove_attr(struct model_ctx *m)
{
	unsigned key = random_key();
	int at = key <= 255 ? find(&m->rec, key) : -1;

	EXPECT(otel_thread_ctx_remove_attr(m->ctx, key),
	       key > 255 ? OTEL_THREAD_CTX_EKEY : OTEL_THREAD_CTX_OK);
	if (key <= 255) {
		struct model_rec *d = edit(m);

		if (at >= 0) {
			memmove(&d->attr[at], &d->attr[at + 1],
				(d->n - (unsigned)at - 1) * sizeof(d->attr[0]));
			d->n--;
		}
	}
}

static void op_clear_attrs(struct model_ctx *m)
{
	EXPECT(otel_thread_ctx_clear_attrs(m->ctx), OTEL_THREAD_CTX_OK);
	edit(m)->n = 0;
}

static void op_clear(struct model_ctx *m)
{
	EXPECT(otel_thread_ctx_clear(m->ctx), OTEL_THREAD_CTX_OK);
	memset(edit(m), 0, sizeof(m->rec));
}

/* A list for set_attrs / update_all, and the return code the model expects
 * of its checks against `capacity`: the first entry that is wrong decides. */
static int random_list(struct otel_thread_ctx_attr *list, uint8_t vals[][257], unsigned *n,
		       unsigned capacity)
{
	int want = OTEL_THREAD_CTX_OK;
	size_t size = 0;
	unsigned seen[300] = { 0 };

	*n = pick(6);
	for (unsigned i = 0; i < *n; i++) {
		int utf8_ok;
		unsigned len = random_value(vals[i], &utf8_ok), key = random_key();

		list[i].key = key;
		list[i].len = len;
		list[i].value = vals[i];
		if (want)
			continue;
		if (key > 255)
			want = OTEL_THREAD_CTX_EKEY;
		else if (len > 255)
			want = OTEL_THREAD_CTX_EVALUE;
		else if (!utf8_ok)
			want = OTEL_THREAD_CTX_EUTF8;
		else if (seen[key]++)
			want = OTEL_THREAD_CTX_EDUPKEY;
		else if ((size += 2 + len) > capacity)
			want = OTEL_THREAD_CTX_ENOSPC;
	}
	return want;
}

static void put_list(struct model_rec *d, const struct otel_thread_ctx_attr *list, unsigned n)
{
	d->n = n;
	for (unsigned i = 0; i < n; i++) {
		d->attr[i].key = list[i].key;
		d->attr[i].len = list[i].len;
		memcpy(d->attr[i].value, list[i].value, list[i].len);
	}
}

static void op_set_attrs(struct model_ctx *m)
{
	struct otel_thread_ctx_attr list[6];
	uint8_t vals[6][257];
	unsigned n;
	int want = random_list(list, vals, &n, m->capacity);

	EXPECT(otel_thread_ctx_set_attrs(m->ctx, list, n), want);
	if (want == OTEL_THREAD_CTX_OK)
		put_list(edit(m), list, n);
}

static void op_copy(struct model_ctx *dst, struct model_ctx *src)
{
	int want = dst != src && attrs_size(&src->rec) > dst->capacity ? OTEL_THREAD_CTX_ENOSPC
									: OTEL_THREAD_CTX_OK;

	EXPECT(otel_thread_ctx_copy(dst->ctx, src->ctx), want);
	if (want == OTEL_THREAD_CTX_OK && dst != src) {
		dst->rec = src->rec;
		dst->none = src->none;
	}
}

/* --- The thread --------------------------------------------------------------- */

/* ENOSPC when saved cannot hold what the thread publishes. */
static int saved_fits(const struct model_ctx *saved)
{
	return saved == NULL || !thread.shown || attrs_size(&thread.rec) <= saved->capacity;
}

static void op_attach(struct model_ctx *m, struct model_ctx *saved, int update)
{
	int want = saved_fits(saved) ? OTEL_THREAD_CTX_OK : OTEL_THREAD_CTX_ENOSPC;
	int shows = !m->none;
	struct model_rec next = m->rec; /* read before saved, which may be m */

	if (update)
		EXPECT(otel_thread_ctx_update(m->ctx), want);
	else
		EXPECT(otel_thread_ctx_attach(m->ctx, saved ? saved->ctx : NULL), want);
	if (want != OTEL_THREAD_CTX_OK)
		return;
	if (saved != NULL)
		save_into(saved);
	thread.shown = shows;
	thread.rec = next;
	publications++;
}

static void op_detach(struct model_ctx *saved)
{
	int want = saved_fits(saved) ? OTEL_THREAD_CTX_OK : OTEL_THREAD_CTX_ENOSPC;

	EXPECT(otel_thread_ctx_detach(saved ? saved->ctx : NULL), want);
	if (want != OTEL_THREAD_CTX_OK)
		return;
	if (saved != NULL)
		save_into(saved);
	thread.shown = 0;
}

static void op_save(struct model_ctx *saved)
{
	int want = saved_fits(saved) ? OTEL_THREAD_CTX_OK : OTEL_THREAD_CTX_ENOSPC;

	EXPECT(otel_thread_ctx_save(saved->ctx), want);
	if (want == OTEL_THREAD_CTX_OK)
		save_into(saved);
}

static void op_update_span_id(void)
{
	uint8_t span[8];
	int want;

	random_id(span, 8);
	want = all_zero(span, 8) ? OTEL_THREAD_CTX_EIDS :
	       !thread.shown ? OTEL_THREAD_CTX_ENOCTX :
	       all_zero(thread.rec.trace, 16) ? OTEL_THREAD_CTX_EIDS : OTEL_THREAD_CTX_OK;
	EXPECT(otel_thread_ctx_update_span_id(span), want);
	if (want == OTEL_THREAD_CTX_OK) {
		memcpy(thread.rec.span, span, 8);
		publications++;
	}
}

static void op_update_trace_flags(void)
{
	uint8_t flags = (uint8_t)pick(3);
	int want = !thread.shown ? OTEL_THREAD_CTX_ENOCTX :
		   flags != 0 && all_zero(thread.rec.trace, 16) ? OTEL_THREAD_CTX_EIDS :
		   OTEL_THREAD_CTX_OK;

	EXPECT(otel_thread_ctx_update_trace_flags(flags), want);
	if (want == OTEL_THREAD_CTX_OK) {
		thread.rec.flags = flags;
		publications++;
	}
}

static void op_update_all(void)
{
	struct otel_thread_ctx_attr list[6];
	uint8_t vals[6][257], trace[16], span[8], flags = (uint8_t)pick(2);
	unsigned n;
	int want;

	random_id(trace, 16);
	random_id(span, 8);
	want = random_list(list, vals, &n, OTEL_THREAD_CTX_ATTRS_MAX);
	if (!ids_ok(trace, span, flags))
		want = OTEL_THREAD_CTX_EIDS;
	EXPECT(otel_thread_ctx_update_all(trace, span, flags, list, n), want);
	if (want == OTEL_THREAD_CTX_OK) {
		memcpy(thread.rec.trace, trace, 16);
		memcpy(thread.rec.span, span, 8);
		thread.rec.flags = flags;
		put_list(&thread.rec, list, n);
		thread.shown = 1;
		publications++;
	}
}

/* --- The check after every call ------------------------------------------------ */

static int record_is(const struct otel_thread_ctx_record *r, const struct model_rec *m)
{
	struct otel_thread_ctx_record want;

	encode(m, &want);
	return same_record(r, &want);
}

static void check_everything(void)
{
	const struct otel_thread_ctx_record *r = otel_thread_ctx_v1;

	if (!thread.shown) {
		ck_assert_msg(r == NULL, "op %lu: something is published", ops);
		nothing_published++;
	} else {
		ck_assert_msg(r != NULL, "op %lu: nothing is published", ops);
		ck_assert_msg(record_is(r, &thread.rec),
			      "op %lu: the published record differs from the model's", ops);
	}
	for (int k = 0; k < CONTEXTS; k++) {
		struct otel_thread_ctx_record got;
		int rc;

		memset(&got, 0xa5, sizeof(got));
		rc = otel_thread_ctx_get(ctxs[k].ctx, &got);
		if (ctxs[k].none) {
			ck_assert_msg(rc == OTEL_THREAD_CTX_ENOCTX,
				      "op %lu: context %d holds a record, the model says nothing", ops, k);
			nothing_held++;
			continue;
		}
		ck_assert_msg(rc == OTEL_THREAD_CTX_OK, "op %lu: context %d: %s", ops, k,
			      otel_thread_ctx_strerror(rc));
		ck_assert_msg(record_is(&got, &ctxs[k].rec),
			      "op %lu: context %d differs from the model's", ops, k);
		ck_assert_msg(got.attrs_data_size == OTEL_THREAD_CTX_ATTRS_MAX ||
				      got.attrs_data[got.attrs_data_size] == 0xa5,
			      "op %lu: get wrote past the attributes", ops);
	}
}

static void step(void)
{
	struct model_ctx *m = &ctxs[pick(CONTEXTS)];

	switch (pick(22)) {
	case 0: case 1: op_set_ids(m); break;
	case 2: case 3: op_set_span(m); break;
	case 4: op_set_flags(m); break;
	case 5: op_clear_ids(m); break;
	case 6: case 7: op_set_attr(m); break;
	case 8: op_remove_attr(m); break;
	case 9: op_clear_attrs(m); break;
	case 10: op_clear(m); break;
	case 11: op_set_attrs(m); break;
	case 12: op_copy(m, &ctxs[pick(CONTEXTS)]); break;
	case 13: case 14: op_attach(m, random_saved(), 0); break;
	case 15: op_attach(m, m, 0); break;
	case 16: op_attach(m, NULL, 1); break;
	case 17: op_detach(random_saved()); break;
	case 18: op_save(m); break;
	case 19: op_update_span_id(); break;
	case 20: op_update_trace_flags(); break;
	case 21: op_update_all(); break;
	}
	ops++;
	check_everything();
}

START_TEST(random_sequences_match_the_model)
{
	unsigned long n = env_count("OTEL_TEST_MODEL_OPS", 200000);

	rng_state = UINT64_C(0x9e3779b97f4a7c15) ^ (uint64_t)_i;
	ops = refusals = publications = nothing_held = nothing_published = 0;
	ck_assert_ptr_null(otel_thread_ctx_v1);
	memset(&thread, 0, sizeof(thread));
	for (int k = 0; k < CONTEXTS; k++) {
		memset(&ctxs[k], 0, sizeof(ctxs[k]));
		ctxs[k].capacity = capacities[k];
		ctxs[k].ctx = new_ctx_sized(capacities[k]);
	}
	for (unsigned long i = 0; i < n; i++)
		step();
	printf("model: %lu calls (%lu refused as the model predicted), %lu publications; "
	       "nothing published after %lu calls, a context held nothing %lu times\n",
	       ops, refusals, publications, nothing_published, nothing_held);
	ck_assert_ok(otel_thread_ctx_detach(NULL));
	for (int k = 0; k < CONTEXTS; k++)
		otel_thread_ctx_destroy(ctxs[k].ctx);
	/* The sequences reach every kind of state. */
	ck_assert_uint_gt(publications, n / 10);
	ck_assert_uint_gt(refusals, n / 100);
	ck_assert_uint_gt(nothing_published, n / 100);
	ck_assert_uint_gt(nothing_held, n / 100);
}
END_TEST

Suite *test_suite(void)
{
	const struct test_case cases[] = {
		{ "random-sequences", random_sequences_match_the_model },
	};

	return MAKE_SUITE("model", cases, 120);
}
