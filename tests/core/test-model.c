/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The API against a model.  Long random sequences of every editing,
 * committing and attaching call, on two contexts, with valid and invalid
 * arguments; a simple model of each context (what it publishes, what its
 * edits hold) predicts every return code, and after every call the record
 * the thread publishes must be byte for byte the model's.  This is what
 * proves that the library brings a draft up to date right after any sequence
 * of commits (it copies only the fields the last commit changed).
 */
#include <stdint.h>
#include <stdio.h>

#include "common.h"

#define MAX_ATTRS 64

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
	struct model_rec pub, draft; /* draft: meaningful when dirty */
	int dirty, attached;
	int valid; /* 0 after invalidate, until the next commit: publishes nothing */
};

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
	out->trace_flags = r->flags;
	for (unsigned i = 0; i < r->n; i++) {
		out->attrs_data[at++] = (uint8_t)r->attr[i].key;
		out->attrs_data[at++] = (uint8_t)r->attr[i].len;
		memcpy(out->attrs_data + at, r->attr[i].value, r->attr[i].len);
		at += r->attr[i].len;
	}
	out->attrs_data_size = (uint16_t)at;
}

/* What an edit changes: the draft, made from the published record first. */
static struct model_rec *edit(struct model_ctx *m)
{
	if (!m->dirty) {
		m->draft = m->pub;
		m->dirty = 1;
	}
	return &m->draft;
}

static const struct model_rec *view(const struct model_ctx *m)
{
	return m->dirty ? &m->draft : &m->pub;
}

static void commit(struct model_ctx *m)
{
	if (m->dirty)
		m->pub = m->draft;
	m->dirty = 0;
	m->valid = 1;
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

static unsigned long ops, commits, refusals;

#define EXPECT(call, want)                                                     \
	do {                                                                   \
		int want_ = (want), got_ = (call);                             \
		ck_assert_msg(got_ == want_, "op %lu: %s returned %d (%s), the model says %d", \
			      ops, #call, got_, otel_thread_ctx_strerror(got_), want_); \
		if (want_ != OTEL_THREAD_CTX_OK)                               \
			refusals++;                                            \
	} while (0)

static void op_set_ids(struct model_ctx *m)
{
	uint8_t trace[16], span[8], flags = (uint8_t)pick(4);
	int ok;

	random_id(trace, 16);
	random_id(span, 8);
	ok = all_zero(trace, 16) == all_zero(span, 8) && !(all_zero(trace, 16) && flags);
	EXPECT(otel_thread_ctx_set_ids(m->ctx, trace, span, flags),
	       ok ? OTEL_THREAD_CTX_OK : OTEL_THREAD_CTX_EIDS);
	if (ok) {
		struct model_rec *d = edit(m);

		memcpy(d->trace, trace, 16);
		memcpy(d->span, span, 8);
		d->flags = flags;
	}
}

static int span_ok(const struct model_ctx *m, const uint8_t span[8])
{
	return !all_zero(span, 8) && !all_zero(view(m)->trace, 16);
}

static void op_set_span(struct model_ctx *m, int and_update)
{
	uint8_t span[8];
	int ok;

	random_id(span, 8);
	ok = span_ok(m, span);
	if (and_update)
		EXPECT(otel_thread_ctx_update_span_id(m->ctx, span),
		       ok ? OTEL_THREAD_CTX_OK : OTEL_THREAD_CTX_EIDS);
	else
		EXPECT(otel_thread_ctx_set_span_id(m->ctx, span),
		       ok ? OTEL_THREAD_CTX_OK : OTEL_THREAD_CTX_EIDS);
	if (ok) {
		memcpy(edit(m)->span, span, 8);
		if (and_update) {
			commit(m);
			commits++;
		}
	}
}

static void op_set_flags(struct model_ctx *m)
{
	uint8_t flags = (uint8_t)pick(3);
	int ok = flags == 0 || !all_zero(view(m)->trace, 16);

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
	const struct model_rec *r = view(m);
	size_t size;

	at = key <= 255 ? find(r, key) : -1;
	size = attrs_size(r) - (at >= 0 ? 2 + r->attr[at].len : 0) + 2 + len;
	want = key > 255 ? OTEL_THREAD_CTX_EKEY :
	       len > 255 ? OTEL_THREAD_CTX_EVALUE :
	       !utf8_ok ? OTEL_THREAD_CTX_EUTF8 :
	       size > 612 ? OTEL_THREAD_CTX_ENOSPC : OTEL_THREAD_CTX_OK;
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
	int at = key <= 255 ? find(view(m), key) : -1;

	EXPECT(otel_thread_ctx_remove_attr(m->ctx, key),
	       key > 255 ? OTEL_THREAD_CTX_EKEY : OTEL_THREAD_CTX_OK);
	if (at >= 0) {
		struct model_rec *d = edit(m);

		memmove(&d->attr[at], &d->attr[at + 1], (d->n - (unsigned)at - 1) * sizeof(d->attr[0]));
		d->n--;
	}
}

static void op_clear_attrs(struct model_ctx *m)
{
	EXPECT(otel_thread_ctx_clear_attrs(m->ctx), OTEL_THREAD_CTX_OK);
	if (view(m)->n)
		edit(m)->n = 0;
}

/* A list for set_attrs / update_all, and the return code the model expects
 * of its checks. */
static int random_list(struct otel_thread_ctx_attr *list, uint8_t vals[][257], unsigned *n)
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
		else if ((size += 2 + len) > 612)
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
	int want = random_list(list, vals, &n);

	EXPECT(otel_thread_ctx_set_attrs(m->ctx, list, n), want);
	if (want == OTEL_THREAD_CTX_OK)
		put_list(edit(m), list, n);
}

static void op_update_all(struct model_ctx *m)
{
	struct otel_thread_ctx_attr list[6];
	uint8_t vals[6][257], trace[16], span[8], flags = (uint8_t)pick(2);
	unsigned n;
	int want, ids_ok;

	random_id(trace, 16);
	random_id(span, 8);
	ids_ok = all_zero(trace, 16) == all_zero(span, 8) && !(all_zero(trace, 16) && flags);
	want = random_list(list, vals, &n);
	if (!ids_ok)
		want = OTEL_THREAD_CTX_EIDS;
	EXPECT(otel_thread_ctx_update_all(m->ctx, trace, span, flags, list, n), want);
	if (want == OTEL_THREAD_CTX_OK) {
		struct model_rec *d = edit(m);

		memcpy(d->trace, trace, 16);
		memcpy(d->span, span, 8);
		d->flags = flags;
		put_list(d, list, n);
		commit(m);
		commits++;
	}
}

/* The two contexts; at most one is attached, to this thread. */
static struct model_ctx ctxs[2];

static struct model_ctx *attached_one(void)
{
	return ctxs[0].attached ? &ctxs[0] : ctxs[1].attached ? &ctxs[1] : NULL;
}

static void attach_to(struct model_ctx *m, int update)
{
	struct model_ctx *old = attached_one();
	otel_thread_ctx *prev = NULL;
	int want = !update && m->dirty ? OTEL_THREAD_CTX_EPENDING : OTEL_THREAD_CTX_OK;

	if (update)
		EXPECT(otel_thread_ctx_update_attach(m->ctx, &prev), want);
	else
		EXPECT(otel_thread_ctx_attach(m->ctx, &prev), want);
	if (want)
		return;
	ck_assert_ptr_eq(prev, old ? old->ctx : NULL);
	if (update) {
		commit(m);
		commits++;
	}
	if (old)
		old->attached = 0;
	m->attached = 1;
}

/* The published bytes are the model's. */
static void check_published(void)
{
	const struct model_ctx *m = attached_one();
	const struct otel_thread_ctx_record *r = otel_thread_ctx_v1;
	struct otel_thread_ctx_record want;

	/* Nothing attached, or the attached context withdrawn by invalidate:
	 * nothing is published. */
	if (m == NULL || !m->valid) {
		ck_assert_msg(r == NULL, "op %lu: something is published", ops);
		return;
	}
	ck_assert_msg(r != NULL, "op %lu: nothing is published", ops);
	ck_assert_msg(r->valid == 1, "op %lu: valid is %u", ops, r->valid);
	encode(&m->pub, &want);
	ck_assert_msg(memcmp(r, &want, 24) == 0 && r->trace_flags == want.trace_flags &&
			      r->attrs_data_size == want.attrs_data_size &&
			      memcmp(r->attrs_data, want.attrs_data, want.attrs_data_size) == 0,
		      "op %lu: the published record differs from the model's", ops);
}

static void step(void)
{
	struct model_ctx *m = &ctxs[pick(2)];
	otel_thread_ctx *prev;

	switch (pick(17)) {
	case 0: case 1: op_set_ids(m); break;
	case 2: case 3: op_set_span(m, 0); break;
	case 4: op_set_span(m, 1); break;
	case 5: op_set_flags(m); break;
	case 6: op_clear_ids(m); break;
	case 7: case 8: op_set_attr(m); break;
	case 9: op_remove_attr(m); break;
	case 10: op_clear_attrs(m); break;
	case 11: op_set_attrs(m); break;
	case 12: op_update_all(m); break;
	case 13:
		EXPECT(otel_thread_ctx_update(m->ctx), OTEL_THREAD_CTX_OK);
		commit(m);
		commits++;
		break;
	case 14: attach_to(m, (int)pick(2)); break;
	case 15:
		EXPECT(otel_thread_ctx_detach(&prev), OTEL_THREAD_CTX_OK);
		ck_assert_ptr_eq(prev, attached_one() ? attached_one()->ctx : NULL);
		if (attached_one())
			attached_one()->attached = 0;
		break;
	case 16:
		EXPECT(otel_thread_ctx_invalidate(m->ctx), OTEL_THREAD_CTX_OK);
		m->valid = 0;
		break;
	}
	ops++;
	check_published();
}

START_TEST(random_sequences_match_the_model)
{
	unsigned long n = env_count("OTEL_TEST_MODEL_OPS", 200000);
	otel_thread_ctx *prev;

	rng_state = UINT64_C(0x9e3779b97f4a7c15) ^ (uint64_t)_i;
	for (int k = 0; k < 2; k++) {
		memset(&ctxs[k], 0, sizeof(ctxs[k]));
		ctxs[k].ctx = new_ctx();
		ctxs[k].valid = 1;
	}
	for (unsigned long i = 0; i < n; i++)
		step();
	printf("model: %lu calls (%lu refused as the model predicted), %lu commits\n", ops,
	       refusals, commits);
	ck_assert_ok(otel_thread_ctx_detach(&prev));
	for (int k = 0; k < 2; k++)
		ck_assert_ok(otel_thread_ctx_destroy(ctxs[k].ctx));
	ck_assert_uint_gt(commits, n / 10);
	ck_assert_uint_gt(refusals, n / 100);
}
END_TEST

Suite *test_suite(void)
{
	const struct test_case cases[] = {
		{ "random-sequences", random_sequences_match_the_model },
	};

	return MAKE_SUITE("model", cases, 120);
}
