/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every API path and every error, one behaviour per test.  Contexts are
 * values: the setters edit them and nothing else; attach publishes a copy;
 * the update_* fast paths change the calling thread's own record.  A call
 * that fails changes nothing (test-refusals.c checks that byte for byte on
 * every path; here on the paths of each test).
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>

#include "common.h"

static const uint8_t trace_a[16] = { 0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6,
				     0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36 };
static const uint8_t trace_b[16] = { 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
				     0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0x01 };
static const uint8_t span_a[8] = { 0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7 };
static const uint8_t span_b[8] = { 0x53, 0x99, 0x5c, 0x3f, 0x42, 0xcd, 0x8a, 0xd8 };
static const uint8_t zero[16];

/* A context with ids and one attribute. */
static otel_thread_ctx *full_ctx(void)
{
	otel_thread_ctx *ctx = new_ctx();

	ck_assert_ok(otel_thread_ctx_set_ids(ctx, trace_a, span_a, 1));
	ck_assert_ok(otel_thread_ctx_set_attr(ctx, 5, "GET /", 5));
	return ctx;
}

/* The calling thread publishes what ctx holds, byte for byte. */
static void assert_publishes(const otel_thread_ctx *ctx)
{
	struct held h = held_by(ctx);
	struct otel_thread_ctx_record r;

	ck_assert_ok(h.rc);
	ck_assert_ptr_nonnull(otel_thread_ctx_v1);
	ck_assert_msg(same_record(otel_thread_ctx_v1, &h.rec), "the slot's record is not ctx's");
	ck_assert_ok(otel_thread_ctx_read(&r));
	ck_assert(same_record(&r, &h.rec));
}

/* Nothing changed: neither what the thread publishes nor ctx, byte for
 * byte. */
static void assert_unchanged(const struct published *before, const otel_thread_ctx *ctx,
			     const struct ctx_bytes *ctx_before)
{
	struct published now = read_published();
	struct ctx_bytes b;

	ck_assert_msg(published_equal(before, &now), "the published record changed");
	if (ctx != NULL) {
		ctx_bytes_of(ctx, &b);
		ck_assert_msg(ctx_bytes_equal(ctx_before, &b), "the context changed");
	}
}

START_TEST(create_and_destroy)
{
	otel_thread_ctx *ctx = NULL;
	struct held h;

	ck_assert_otel(otel_thread_ctx_create(NULL), OTEL_THREAD_CTX_ENULL);
	ck_assert_ok(otel_thread_ctx_create(&ctx));
	ck_assert_ptr_nonnull(ctx);
	/* A new context holds an empty, valid record. */
	h = held_by(ctx);
	ck_assert_ok(h.rc);
	ck_assert_uint_eq(h.rec.valid, 1);
	ck_assert_mem_eq(h.rec.trace_id, zero, 16);
	ck_assert_mem_eq(h.rec.span_id, zero, 8);
	ck_assert_uint_eq(h.rec.trace_flags, 0);
	ck_assert_uint_eq(h.rec.attrs_data_size, 0);
	otel_thread_ctx_destroy(ctx);
	otel_thread_ctx_destroy(NULL);
	/* Creating and destroying publishes nothing. */
	ck_assert_ptr_null(otel_thread_ctx_v1);
}
END_TEST

/* The capacity a context was created with: set_attrs of exactly that many
 * bytes fits, one more does not. */
static unsigned int capacity_of(otel_thread_ctx *ctx)
{
	static const uint8_t v[255] = { 'c' };
	struct otel_thread_ctx_attr a[4];
	unsigned int fits = 0;

	/* Every size from 0 up: entries of 2..257 bytes, never a lone byte. */
	for (unsigned int total = 0; total <= OTEL_THREAD_CTX_ATTRS_MAX + 1; total++) {
		size_t n = 0, left = total;

		if (total == 1)
			continue;
		while (left > 0) {
			size_t take = left > 257 ? 257 : left;

			if (left - take == 1)
				take--;
			a[n].key = (unsigned int)n;
			a[n].len = (unsigned int)(take - 2);
			a[n].value = v;
			left -= take;
			n++;
		}
		if (otel_thread_ctx_set_attrs(ctx, a, n) != OTEL_THREAD_CTX_OK)
			break;
		fits = total;
	}
	ck_assert_ok(otel_thread_ctx_clear_attrs(ctx));
	return fits;
}

/* The libbpf rule: `size` says what the caller knows. */
START_TEST(create_with_follows_the_size_rule)
{
	struct otel_thread_ctx_options o = OTEL_THREAD_CTX_OPTIONS_INIT;
	struct {
		struct otel_thread_ctx_options o;
		unsigned char tail[24];
	} newer;
	otel_thread_ctx *ctx = (otel_thread_ctx *)1;

	ck_assert_uint_eq(o.size, sizeof(o));
	ck_assert_uint_eq(o.attrs_capacity, 0);
	ck_assert_uint_eq(o.flags, 0);
	ck_assert_otel(otel_thread_ctx_create_with(NULL, &o), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_create_with(NULL, NULL), OTEL_THREAD_CTX_ENULL);

	/* NULL options: the defaults. */
	ck_assert_ok(otel_thread_ctx_create_with(&ctx, NULL));
	ck_assert_uint_eq(capacity_of(ctx), OTEL_THREAD_CTX_ATTRS_MAX);
	otel_thread_ctx_destroy(ctx);
	/* Every field zero: the defaults too (libbpf's rule), for
	 * OTEL_THREAD_CTX_OPTIONS_INIT and a zeroed struct alike. */
	ck_assert_ok(otel_thread_ctx_create_with(&ctx, &o));
	ck_assert_uint_eq(capacity_of(ctx), OTEL_THREAD_CTX_ATTRS_MAX);
	otel_thread_ctx_destroy(ctx);
	{
		struct otel_thread_ctx_options zero;

		memset(&zero, 0, sizeof(zero));
		zero.size = sizeof(zero);
		ck_assert_ok(otel_thread_ctx_create_with(&ctx, &zero));
		ck_assert_uint_eq(capacity_of(ctx), OTEL_THREAD_CTX_ATTRS_MAX);
		otel_thread_ctx_destroy(ctx);
	}

	/* Exactly sizeof: every field is read. */
	o.attrs_capacity = 40;
	ck_assert_ok(otel_thread_ctx_create_with(&ctx, &o));
	ck_assert_uint_eq(capacity_of(ctx), 40);
	otel_thread_ctx_destroy(ctx);

	/* An older caller that knows size and attrs_capacity only: what lies
	 * past them is not read (here, flags that would be refused). */
	o.size = offsetof(struct otel_thread_ctx_options, flags);
	o.attrs_capacity = 30;
	o.flags = 0xdeadbeef;
	ck_assert_ok(otel_thread_ctx_create_with(&ctx, &o));
	ck_assert_uint_eq(capacity_of(ctx), 30);
	otel_thread_ctx_destroy(ctx);

	/* An older caller that knows size only: the default capacity. */
	o.size = sizeof(size_t);
	o.attrs_capacity = 7;
	ck_assert_ok(otel_thread_ctx_create_with(&ctx, &o));
	ck_assert_uint_eq(capacity_of(ctx), OTEL_THREAD_CTX_ATTRS_MAX);
	otel_thread_ctx_destroy(ctx);
	/* ... and one that knows part of attrs_capacity only: the default. */
	o.size = sizeof(size_t) + 1;
	ck_assert_ok(otel_thread_ctx_create_with(&ctx, &o));
	ck_assert_uint_eq(capacity_of(ctx), OTEL_THREAD_CTX_ATTRS_MAX);
	otel_thread_ctx_destroy(ctx);

	/* A newer caller whose extra bytes are all zero: accepted. */
	memset(&newer, 0, sizeof(newer));
	newer.o.size = sizeof(newer);
	newer.o.attrs_capacity = 50;
	ck_assert_ok(otel_thread_ctx_create_with(&ctx, &newer.o));
	ck_assert_uint_eq(capacity_of(ctx), 50);
	otel_thread_ctx_destroy(ctx);

	/* ... with any non-zero byte past the known fields: refused, and
	 * nothing is stored. */
	ctx = (otel_thread_ctx *)1;
	for (size_t i = 0; i < sizeof(newer.tail); i++) {
		newer.tail[i] = 0x01;
		ck_assert_msg(otel_thread_ctx_create_with(&ctx, &newer.o) == OTEL_THREAD_CTX_EOPTIONS,
			      "a non-zero byte %zu past the known fields was accepted", i);
		newer.tail[i] = 0x80;
		ck_assert_otel(otel_thread_ctx_create_with(&ctx, &newer.o),
			       OTEL_THREAD_CTX_EOPTIONS);
		newer.tail[i] = 0;
	}
	/* A non-zero byte past `size` is not the caller's: ignored. */
	newer.o.size = sizeof(newer) - 1;
	newer.tail[sizeof(newer.tail) - 1] = 0xff;
	ck_assert_ok(otel_thread_ctx_create_with(&ctx, &newer.o));
	otel_thread_ctx_destroy(ctx);

	/* Flags this version does not know are refused; so is ids only with
	 * a capacity for attributes. */
	ctx = (otel_thread_ctx *)1;
	o.size = sizeof(o);
	o.attrs_capacity = 0;
	for (unsigned int bit = 1; bit < 32; bit++) {
		o.flags = 1u << bit;
		ck_assert_otel(otel_thread_ctx_create_with(&ctx, &o), OTEL_THREAD_CTX_EOPTIONS);
	}
	o.attrs_capacity = 10;
	o.flags = OTEL_THREAD_CTX_OPTION_IDS_ONLY;
	ck_assert_otel(otel_thread_ctx_create_with(&ctx, &o), OTEL_THREAD_CTX_EOPTIONS);
	o.flags = 0;
	/* size below sizeof(size_t). */
	for (size_t size = 0; size < sizeof(size_t); size++) {
		o.size = size;
		ck_assert_otel(otel_thread_ctx_create_with(&ctx, &o), OTEL_THREAD_CTX_EOPTIONS);
	}
	o.size = sizeof(o);
	/* attrs_capacity out of range. */
	o.attrs_capacity = OTEL_THREAD_CTX_ATTRS_MAX + 1;
	ck_assert_otel(otel_thread_ctx_create_with(&ctx, &o), OTEL_THREAD_CTX_EOPTIONS);
	o.attrs_capacity = UINT_MAX;
	ck_assert_otel(otel_thread_ctx_create_with(&ctx, &o), OTEL_THREAD_CTX_EOPTIONS);
	ck_assert_ptr_eq(ctx, (otel_thread_ctx *)1); /* refusals store nothing */

	/* The bounds themselves: ids only (no room at all), 1, and the
	 * largest. */
	o.attrs_capacity = 0;
	o.flags = OTEL_THREAD_CTX_OPTION_IDS_ONLY;
	ck_assert_ok(otel_thread_ctx_create_with(&ctx, &o));
	ck_assert_uint_eq(capacity_of(ctx), 0);
	otel_thread_ctx_destroy(ctx);
	o.flags = 0;
	o.attrs_capacity = 1;
	ck_assert_ok(otel_thread_ctx_create_with(&ctx, &o));
	ck_assert_uint_eq(capacity_of(ctx), 0); /* no entry fits in 1 byte */
	otel_thread_ctx_destroy(ctx);
	o.attrs_capacity = OTEL_THREAD_CTX_ATTRS_MAX;
	ck_assert_ok(otel_thread_ctx_create_with(&ctx, &o));
	ck_assert_uint_eq(capacity_of(ctx), OTEL_THREAD_CTX_ATTRS_MAX);
	otel_thread_ctx_destroy(ctx);
}
END_TEST

START_TEST(null_arguments)
{
	otel_thread_ctx *ctx = full_ctx();
	static const struct otel_thread_ctx_attr one = { 1, 1, (const uint8_t *)"a" };
	struct otel_thread_ctx_record r;
	struct published before;
	struct ctx_bytes cb;

	ck_assert_ok(otel_thread_ctx_attach(ctx, NULL));
	before = read_published();
	ctx_bytes_of(ctx, &cb);
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
	ck_assert_otel(otel_thread_ctx_set_attrs(NULL, &one, 1), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_set_attrs(ctx, NULL, 1), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_copy(NULL, ctx), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_copy(ctx, NULL), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_get(NULL, &r), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_get(ctx, NULL), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_attach(NULL, NULL), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_attach(NULL, ctx), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_update(NULL), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_save(NULL), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_update_span_id(NULL), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_update_all(NULL, span_a, 0, NULL, 0), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_update_all(trace_a, NULL, 0, NULL, 0), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_update_all(trace_a, span_a, 0, NULL, 1),
		       OTEL_THREAD_CTX_ENULL);
	/* ENULL comes before every other check. */
	ck_assert_otel(otel_thread_ctx_set_ids(ctx, NULL, zero, 1), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_set_attr(ctx, 999, NULL, 300), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_update_all(NULL, zero, 1, NULL, 0), OTEL_THREAD_CTX_ENULL);
	assert_unchanged(&before, ctx, &cb);
	ck_assert_ok(otel_thread_ctx_detach(NULL));
	otel_thread_ctx_destroy(ctx);
}
END_TEST

START_TEST(ids_half_set_are_refused)
{
	otel_thread_ctx *ctx = full_ctx();
	struct published before;
	struct ctx_bytes cb;

	ck_assert_ok(otel_thread_ctx_attach(ctx, NULL));
	before = read_published();
	ctx_bytes_of(ctx, &cb);
	ck_assert_otel(otel_thread_ctx_set_ids(ctx, trace_a, zero, 1), OTEL_THREAD_CTX_EIDS);
	ck_assert_otel(otel_thread_ctx_set_ids(ctx, zero, span_a, 1), OTEL_THREAD_CTX_EIDS);
	ck_assert_otel(otel_thread_ctx_set_ids(ctx, trace_a, zero, 0), OTEL_THREAD_CTX_EIDS);
	ck_assert_otel(otel_thread_ctx_set_ids(ctx, zero, zero, 1), OTEL_THREAD_CTX_EIDS);
	ck_assert_otel(otel_thread_ctx_set_span_id(ctx, zero), OTEL_THREAD_CTX_EIDS);
	assert_unchanged(&before, ctx, &cb);
	/* Both zero with flags 0 clears the ids, and only them. */
	ck_assert_ok(otel_thread_ctx_set_ids(ctx, zero, zero, 0));
	ck_assert_ok(otel_thread_ctx_update(ctx));
	ck_assert_mem_eq(otel_thread_ctx_v1->trace_id, zero, 16);
	ck_assert_mem_eq(otel_thread_ctx_v1->span_id, zero, 8);
	ck_assert_uint_eq(otel_thread_ctx_v1->attrs_data_size, 7);
	ck_assert_ok(otel_thread_ctx_detach(NULL));
	otel_thread_ctx_destroy(ctx);
}
END_TEST

START_TEST(span_and_flags_need_a_trace)
{
	otel_thread_ctx *ctx = new_ctx();
	struct published nothing = read_published();
	struct ctx_bytes cb;

	ctx_bytes_of(ctx, &cb);
	ck_assert_otel(otel_thread_ctx_set_span_id(ctx, span_a), OTEL_THREAD_CTX_EIDS);
	ck_assert_otel(otel_thread_ctx_set_trace_flags(ctx, 1), OTEL_THREAD_CTX_EIDS);
	assert_unchanged(&nothing, ctx, &cb);
	/* Flags 0 without ids is fine, and so is clearing what is clear. */
	ck_assert_ok(otel_thread_ctx_set_trace_flags(ctx, 0));
	ck_assert_ok(otel_thread_ctx_clear_ids(ctx));
	ck_assert_ok(otel_thread_ctx_set_ids(ctx, zero, zero, 0));
	ck_assert_ok(otel_thread_ctx_attach(ctx, NULL));
	ck_assert_mem_eq(otel_thread_ctx_v1->trace_id, zero, 16);
	ck_assert_ok(otel_thread_ctx_detach(NULL));
	otel_thread_ctx_destroy(ctx);
}
END_TEST

START_TEST(span_and_flags_change_alone)
{
	otel_thread_ctx *ctx = full_ctx();
	struct held h;

	ck_assert_ok(otel_thread_ctx_set_span_id(ctx, span_b));
	ck_assert_ok(otel_thread_ctx_set_trace_flags(ctx, 0));
	h = held_by(ctx);
	ck_assert_mem_eq(h.rec.trace_id, trace_a, 16);
	ck_assert_mem_eq(h.rec.span_id, span_b, 8);
	ck_assert_uint_eq(h.rec.trace_flags, 0);
	ck_assert_uint_eq(h.rec.attrs_data_size, 7);
	ck_assert_ok(otel_thread_ctx_attach(ctx, NULL));
	assert_publishes(ctx);

	ck_assert_ok(otel_thread_ctx_clear_ids(ctx));
	h = held_by(ctx);
	ck_assert_mem_eq(h.rec.trace_id, zero, 16);
	ck_assert_mem_eq(h.rec.span_id, zero, 8);
	ck_assert_uint_eq(h.rec.attrs_data_size, 7); /* attributes stay */
	/* Published only when attached again. */
	ck_assert_mem_eq(otel_thread_ctx_v1->trace_id, trace_a, 16);
	ck_assert_ok(otel_thread_ctx_update(ctx));
	assert_publishes(ctx);
	ck_assert_ok(otel_thread_ctx_detach(NULL));
	otel_thread_ctx_destroy(ctx);
}
END_TEST

START_TEST(bad_attributes_are_refused)
{
	otel_thread_ctx *ctx = full_ctx();
	struct published before;
	struct ctx_bytes cb;
	uint8_t big[256];

	memset(big, 'a', sizeof(big));
	ck_assert_ok(otel_thread_ctx_attach(ctx, NULL));
	before = read_published();
	ctx_bytes_of(ctx, &cb);
	ck_assert_otel(otel_thread_ctx_set_attr(ctx, 256, "a", 1), OTEL_THREAD_CTX_EKEY);
	ck_assert_otel(otel_thread_ctx_set_attr(ctx, ~0u, "a", 1), OTEL_THREAD_CTX_EKEY);
	ck_assert_otel(otel_thread_ctx_remove_attr(ctx, 256), OTEL_THREAD_CTX_EKEY);
	ck_assert_otel(otel_thread_ctx_set_attr(ctx, 1, big, 256), OTEL_THREAD_CTX_EVALUE);
	ck_assert_otel(otel_thread_ctx_set_attr(ctx, 1, big, SIZE_MAX), OTEL_THREAD_CTX_EVALUE);
	ck_assert_otel(otel_thread_ctx_set_attr(ctx, 1, "\xc3", 1), OTEL_THREAD_CTX_EUTF8);
	assert_unchanged(&before, ctx, &cb);

	for (unsigned k = 0; k < 2; k++)
		ck_assert_ok(otel_thread_ctx_set_attr(ctx, 10 + k, big, 255));
	ctx_bytes_of(ctx, &cb);
	ck_assert_otel(otel_thread_ctx_set_attr(ctx, 12, big, 100), OTEL_THREAD_CTX_ENOSPC);
	assert_unchanged(&before, ctx, &cb);
	ck_assert_ok(otel_thread_ctx_update(ctx));
	ck_assert_uint_eq(otel_thread_ctx_v1->attrs_data_size, 7 + 2 * 257);
	assert_publishes(ctx);
	ck_assert_ok(otel_thread_ctx_detach(NULL));
	otel_thread_ctx_destroy(ctx);
}
END_TEST

START_TEST(set_attrs_refusals_change_nothing)
{
	otel_thread_ctx *ctx = full_ctx();
	struct ctx_bytes cb;
	uint8_t big[256];
	struct otel_thread_ctx_attr a[2] = { { 1, 1, (const uint8_t *)"a" },
					     { 2, 1, (const uint8_t *)"b" } };
	struct published nothing = read_published();

	memset(big, 'z', sizeof(big));
	ctx_bytes_of(ctx, &cb);
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
	assert_unchanged(&nothing, ctx, &cb);
	otel_thread_ctx_destroy(ctx);
}
END_TEST

/* attach copies: the slot leads to the thread's own record, never into the
 * context, and holds the context's bytes. */
START_TEST(attach_publishes_a_copy)
{
	otel_thread_ctx *ctx = full_ctx();
	const struct otel_thread_ctx_record *first;

	ck_assert_ptr_null(otel_thread_ctx_v1);
	ck_assert_ok(otel_thread_ctx_attach(ctx, NULL));
	first = otel_thread_ctx_v1;
	ck_assert_msg(!points_into_ctx(first, ctx), "the slot leads into the context");
	assert_publishes(ctx);
	ck_assert_uint_eq((uintptr_t)first % 16, 0);
	/* Again: the other record of the thread, with the same bytes. */
	ck_assert_ok(otel_thread_ctx_attach(ctx, NULL));
	ck_assert_ptr_ne(otel_thread_ctx_v1, first);
	ck_assert(!points_into_ctx(otel_thread_ctx_v1, ctx));
	assert_publishes(ctx);
	/* And back: a thread has two records, used in turn. */
	ck_assert_ok(otel_thread_ctx_update(ctx));
	ck_assert_ptr_eq(otel_thread_ctx_v1, first);
	ck_assert_ok(otel_thread_ctx_detach(NULL));
	ck_assert_ptr_null(otel_thread_ctx_v1);
	otel_thread_ctx_destroy(ctx);
}
END_TEST

/* A reader that loaded the slot just before a publication still finds the
 * old record there, whole, until the thread publishes once more. */
START_TEST(a_publication_leaves_the_old_record_whole)
{
	otel_thread_ctx *a = full_ctx(), *b = new_ctx();
	struct published before, after;

	ck_assert_ok(otel_thread_ctx_set_ids(b, trace_b, span_b, 0));
	ck_assert_ok(otel_thread_ctx_set_attr(b, 6, "more", 4));
	ck_assert_ok(otel_thread_ctx_attach(a, NULL));
	before = read_published();
	ck_assert_ok(otel_thread_ctx_attach(b, NULL));
	after = read_published();
	ck_assert_ptr_ne(after.slot, before.slot);
	ck_assert_mem_eq(before.slot, &before.rec, sizeof(before.rec));
	ck_assert_mem_eq(after.rec.span_id, span_b, 8);
	ck_assert_uint_eq(after.rec.valid, 1);
	/* The same with the fast paths. */
	before = after;
	ck_assert_ok(otel_thread_ctx_update_span_id(span_a));
	ck_assert_mem_eq(before.slot, &before.rec, sizeof(before.rec));
	before = read_published();
	ck_assert_ok(otel_thread_ctx_update_trace_flags(1));
	ck_assert_mem_eq(before.slot, &before.rec, sizeof(before.rec));
	before = read_published();
	ck_assert_ok(otel_thread_ctx_update_all(trace_a, span_a, 0, NULL, 0));
	ck_assert_mem_eq(before.slot, &before.rec, sizeof(before.rec));
	ck_assert_ok(otel_thread_ctx_detach(NULL));
	otel_thread_ctx_destroy(a);
	otel_thread_ctx_destroy(b);
}
END_TEST

START_TEST(update_is_attach_without_saved)
{
	otel_thread_ctx *a = full_ctx(), *b = new_ctx();

	ck_assert_ok(otel_thread_ctx_set_ids(b, trace_b, span_b, 0));
	ck_assert_ok(otel_thread_ctx_update(a));
	assert_publishes(a);
	ck_assert_ok(otel_thread_ctx_update(b));
	assert_publishes(b);
	ck_assert_ok(otel_thread_ctx_set_attr(a, 9, "x", 1));
	ck_assert_ok(otel_thread_ctx_update(a));
	assert_publishes(a);
	ck_assert_ok(otel_thread_ctx_detach(NULL));
	otel_thread_ctx_destroy(a);
	otel_thread_ctx_destroy(b);
}
END_TEST

START_TEST(detach_and_save)
{
	otel_thread_ctx *a = full_ctx(), *saved = new_ctx(), *other = new_ctx();
	struct published before, now;
	struct held h;

	/* Nothing published: detach and save give "nothing". */
	ck_assert_ok(otel_thread_ctx_detach(NULL));
	ck_assert_ok(otel_thread_ctx_detach(saved));
	ck_assert_otel(otel_thread_ctx_get(saved, &h.rec), OTEL_THREAD_CTX_ENOCTX);
	ck_assert_ok(otel_thread_ctx_copy(saved, a));
	ck_assert_ok(otel_thread_ctx_save(saved));
	ck_assert_otel(otel_thread_ctx_get(saved, &h.rec), OTEL_THREAD_CTX_ENOCTX);
	ck_assert_ptr_null(otel_thread_ctx_v1);

	/* save copies what is published and changes nothing else. */
	ck_assert_ok(otel_thread_ctx_attach(a, NULL));
	before = read_published();
	ck_assert_ok(otel_thread_ctx_save(saved));
	now = read_published();
	ck_assert(published_equal(&before, &now));
	h = held_by(saved);
	ck_assert_ok(h.rc);
	ck_assert(same_record(&h.rec, &before.rec));

	/* detach saves it too, and unpublishes. */
	ck_assert_ok(otel_thread_ctx_detach(other));
	ck_assert_ptr_null(otel_thread_ctx_v1);
	h = held_by(other);
	ck_assert_ok(h.rc);
	ck_assert(same_record(&h.rec, &before.rec));
	/* The record the slot led to is still whole. */
	ck_assert_mem_eq(before.slot, &before.rec, sizeof(before.rec));
	ck_assert_otel(otel_thread_ctx_read(&h.rec), OTEL_THREAD_CTX_ENOCTX);
	otel_thread_ctx_destroy(a);
	otel_thread_ctx_destroy(saved);
	otel_thread_ctx_destroy(other);
}
END_TEST

/* A saved "nothing published" is a context that holds no record. */
START_TEST(a_context_that_holds_nothing)
{
	otel_thread_ctx *none = full_ctx(), *a = full_ctx(), *dst = full_ctx();
	struct otel_thread_ctx_record out;
	struct held h;

	ck_assert_ok(otel_thread_ctx_save(none)); /* nothing is published */
	memset(&out, 0xee, sizeof(out));
	ck_assert_otel(otel_thread_ctx_get(none, &out), OTEL_THREAD_CTX_ENOCTX);
	ck_assert_uint_eq(out.valid, 0xee); /* nothing written */
	/* Copied, it makes another context hold nothing. */
	ck_assert_ok(otel_thread_ctx_copy(dst, none));
	ck_assert_otel(otel_thread_ctx_get(dst, &out), OTEL_THREAD_CTX_ENOCTX);
	/* Attached, it unpublishes, and saves what was published. */
	ck_assert_ok(otel_thread_ctx_attach(a, NULL));
	ck_assert_ok(otel_thread_ctx_attach(none, dst));
	ck_assert_ptr_null(otel_thread_ctx_v1);
	h = held_by(dst);
	ck_assert_ok(h.rc);
	ck_assert_mem_eq(h.rec.trace_id, trace_a, 16);
	/* Attached when nothing is published: still nothing. */
	ck_assert_ok(otel_thread_ctx_attach(none, dst));
	ck_assert_ptr_null(otel_thread_ctx_v1);
	ck_assert_otel(otel_thread_ctx_get(dst, &out), OTEL_THREAD_CTX_ENOCTX);
	/* Any setter that succeeds makes it hold an empty record, changed. */
	ck_assert_ok(otel_thread_ctx_set_attr(none, 3, "x", 1));
	h = held_by(none);
	ck_assert_ok(h.rc);
	ck_assert_mem_eq(h.rec.trace_id, zero, 16);
	ck_assert_mem_eq(h.rec.span_id, zero, 8);
	ck_assert_uint_eq(h.rec.trace_flags, 0);
	ck_assert_uint_eq(h.rec.valid, 1);
	ck_assert_uint_eq(h.rec.attrs_data_size, 3);
	ck_assert_mem_eq(h.rec.attrs_data, "\x03\x01x", 3);
	ck_assert_ok(otel_thread_ctx_attach(none, NULL));
	assert_publishes(none);
	/* One after another: each setter's success makes a record of it. */
	{
		int (*const setters[])(otel_thread_ctx *) = {
			otel_thread_ctx_clear_ids, otel_thread_ctx_clear_attrs, otel_thread_ctx_clear,
		};

		ck_assert_ok(otel_thread_ctx_detach(NULL));
		for (size_t i = 0; i < sizeof(setters) / sizeof(setters[0]); i++) {
			ck_assert_ok(otel_thread_ctx_save(none)); /* nothing, again */
			ck_assert_otel(otel_thread_ctx_get(none, &out), OTEL_THREAD_CTX_ENOCTX);
			ck_assert_ok(setters[i](none));
			h = held_by(none);
			ck_assert_ok(h.rc);
			ck_assert_uint_eq(h.rec.attrs_data_size, 0);
			ck_assert_mem_eq(h.rec.trace_id, zero, 16);
		}
		ck_assert_ok(otel_thread_ctx_save(none));
		ck_assert_ok(otel_thread_ctx_set_trace_flags(none, 0));
		ck_assert_ok(held_by(none).rc);
		ck_assert_ok(otel_thread_ctx_save(none));
		ck_assert_ok(otel_thread_ctx_set_ids(none, trace_a, span_a, 1));
		ck_assert_ok(held_by(none).rc);
		ck_assert_ok(otel_thread_ctx_save(none));
		ck_assert_ok(otel_thread_ctx_remove_attr(none, 4));
		ck_assert_ok(held_by(none).rc);
		ck_assert_ok(otel_thread_ctx_save(none));
		ck_assert_ok(otel_thread_ctx_set_attrs(none, NULL, 0));
		ck_assert_ok(held_by(none).rc);
		/* A refused setter leaves it holding nothing. */
		ck_assert_ok(otel_thread_ctx_save(none));
		ck_assert_otel(otel_thread_ctx_set_span_id(none, span_a), OTEL_THREAD_CTX_EIDS);
		ck_assert_otel(otel_thread_ctx_set_trace_flags(none, 1), OTEL_THREAD_CTX_EIDS);
		ck_assert_otel(otel_thread_ctx_set_attr(none, 300, "x", 1), OTEL_THREAD_CTX_EKEY);
		ck_assert_otel(otel_thread_ctx_get(none, &out), OTEL_THREAD_CTX_ENOCTX);
	}
	otel_thread_ctx_destroy(none);
	otel_thread_ctx_destroy(a);
	otel_thread_ctx_destroy(dst);
}
END_TEST

START_TEST(copy_makes_dst_hold_what_src_holds)
{
	otel_thread_ctx *src = full_ctx(), *dst = new_ctx(), *small = new_ctx_sized(6);
	struct ctx_bytes before, after;
	struct held hs, hd;

	ck_assert_ok(otel_thread_ctx_set_attr(dst, 9, "old value", 9));
	ck_assert_ok(otel_thread_ctx_copy(dst, src));
	hs = held_by(src);
	hd = held_by(dst);
	ck_assert_ok(hd.rc);
	ck_assert(same_record(&hd.rec, &hs.rec));
	/* They are two values: editing one leaves the other. */
	ck_assert_ok(otel_thread_ctx_set_span_id(dst, span_b));
	hd = held_by(src);
	ck_assert(same_record(&hd.rec, &hs.rec));
	/* Itself: nothing to do. */
	ck_assert_ok(otel_thread_ctx_copy(src, src));
	hd = held_by(src);
	ck_assert(same_record(&hd.rec, &hs.rec));
	/* src's 7 bytes of attributes do not fit in 6: refused, dst as it was. */
	ctx_bytes_of(small, &before);
	ck_assert_otel(otel_thread_ctx_copy(small, src), OTEL_THREAD_CTX_ENOSPC);
	ctx_bytes_of(small, &after);
	ck_assert(ctx_bytes_equal(&before, &after));
	/* The capacity counts the bytes src uses, not its capacity. */
	ck_assert_ok(otel_thread_ctx_remove_attr(dst, 5));
	ck_assert_ok(otel_thread_ctx_set_attr(dst, 1, "abcd", 4));
	ck_assert_ok(otel_thread_ctx_copy(small, dst));
	hs = held_by(small);
	hd = held_by(dst);
	ck_assert(same_record(&hs.rec, &hd.rec));
	otel_thread_ctx_destroy(src);
	otel_thread_ctx_destroy(dst);
	otel_thread_ctx_destroy(small);
}
END_TEST

START_TEST(get_copies_the_record_and_no_more)
{
	otel_thread_ctx *ctx = full_ctx();
	struct otel_thread_ctx_record r;

	memset(&r, 0xee, sizeof(r));
	ck_assert_ok(otel_thread_ctx_get(ctx, &r));
	ck_assert_mem_eq(r.trace_id, trace_a, 16);
	ck_assert_mem_eq(r.span_id, span_a, 8);
	ck_assert_uint_eq(r.valid, 1);
	ck_assert_uint_eq(r.trace_flags, 1);
	ck_assert_uint_eq(r.attrs_data_size, 7);
	ck_assert_mem_eq(r.attrs_data, "\x05\x05" "GET /", 7);
	for (size_t i = 7; i < sizeof(r.attrs_data); i++)
		ck_assert_uint_eq(r.attrs_data[i], 0xee);
	/* What a thread attaching it publishes. */
	ck_assert_ok(otel_thread_ctx_attach(ctx, NULL));
	ck_assert(same_record(otel_thread_ctx_v1, &r));
	ck_assert_ok(otel_thread_ctx_detach(NULL));
	otel_thread_ctx_destroy(ctx);
}
END_TEST

/* A child span: the thread's own record, no context involved. */
START_TEST(update_span_id_changes_the_span_only)
{
	otel_thread_ctx *ctx = full_ctx();
	struct published before, after;
	struct ctx_bytes cb;

	ck_assert_otel(otel_thread_ctx_update_span_id(span_b), OTEL_THREAD_CTX_ENOCTX);
	ck_assert_ok(otel_thread_ctx_attach(ctx, NULL));
	ctx_bytes_of(ctx, &cb);
	before = read_published();
	ck_assert_ok(otel_thread_ctx_update_span_id(span_b));
	after = read_published();
	ck_assert_ptr_ne(after.slot, before.slot);
	ck_assert_mem_eq(after.rec.span_id, span_b, 8);
	memcpy(before.rec.span_id, span_b, 8);
	ck_assert_msg(same_record(&after.rec, &before.rec), "more than the span changed");
	/* Twice: the draft is brought up to date. */
	ck_assert_ok(otel_thread_ctx_update_span_id(span_a));
	memcpy(before.rec.span_id, span_a, 8);
	ck_assert(same_record(otel_thread_ctx_v1, &before.rec));
	/* The context was not touched. */
	assert_unchanged(&(struct published){ otel_thread_ctx_v1, *otel_thread_ctx_v1 }, ctx, &cb);

	/* Refusals change nothing. */
	before = read_published();
	ck_assert_otel(otel_thread_ctx_update_span_id(NULL), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_update_span_id(zero), OTEL_THREAD_CTX_EIDS);
	after = read_published();
	ck_assert(published_equal(&before, &after));
	/* A record without ids has no trace to put a span in. */
	ck_assert_ok(otel_thread_ctx_clear_ids(ctx));
	ck_assert_ok(otel_thread_ctx_update(ctx));
	before = read_published();
	ck_assert_otel(otel_thread_ctx_update_span_id(span_b), OTEL_THREAD_CTX_EIDS);
	after = read_published();
	ck_assert(published_equal(&before, &after));
	/* Detached: nothing to change. */
	ck_assert_ok(otel_thread_ctx_detach(NULL));
	ck_assert_otel(otel_thread_ctx_update_span_id(span_b), OTEL_THREAD_CTX_ENOCTX);
	/* Argument errors come before the state's. */
	ck_assert_otel(otel_thread_ctx_update_span_id(zero), OTEL_THREAD_CTX_EIDS);
	ck_assert_ptr_null(otel_thread_ctx_v1);
	otel_thread_ctx_destroy(ctx);
}
END_TEST

/* The sampling decision after the span was published. */
START_TEST(update_trace_flags_changes_the_flags_only)
{
	otel_thread_ctx *ctx = full_ctx();
	struct published before, after;

	ck_assert_otel(otel_thread_ctx_update_trace_flags(1), OTEL_THREAD_CTX_ENOCTX);
	ck_assert_otel(otel_thread_ctx_update_trace_flags(0), OTEL_THREAD_CTX_ENOCTX);
	ck_assert_ok(otel_thread_ctx_set_trace_flags(ctx, 0));
	ck_assert_ok(otel_thread_ctx_attach(ctx, NULL));
	before = read_published();
	ck_assert_ok(otel_thread_ctx_update_trace_flags(0x01));
	after = read_published();
	ck_assert_ptr_ne(after.slot, before.slot);
	ck_assert_uint_eq(after.rec.trace_flags, 1);
	before.rec.trace_flags = 1;
	ck_assert(same_record(&after.rec, &before.rec));
	ck_assert_uint_eq(held_by(ctx).rec.trace_flags, 0); /* the context's own */
	/* After a span change: both stay. */
	ck_assert_ok(otel_thread_ctx_update_span_id(span_b));
	ck_assert_ok(otel_thread_ctx_update_trace_flags(0x03));
	memcpy(before.rec.span_id, span_b, 8);
	before.rec.trace_flags = 3;
	ck_assert(same_record(otel_thread_ctx_v1, &before.rec));
	/* No ids: only 0 is allowed. */
	ck_assert_ok(otel_thread_ctx_clear_ids(ctx));
	ck_assert_ok(otel_thread_ctx_update(ctx));
	before = read_published();
	ck_assert_otel(otel_thread_ctx_update_trace_flags(1), OTEL_THREAD_CTX_EIDS);
	after = read_published();
	ck_assert(published_equal(&before, &after));
	ck_assert_ok(otel_thread_ctx_update_trace_flags(0));
	ck_assert(same_record(otel_thread_ctx_v1, &before.rec));
	ck_assert_ok(otel_thread_ctx_detach(NULL));
	ck_assert_otel(otel_thread_ctx_update_trace_flags(0), OTEL_THREAD_CTX_ENOCTX);
	otel_thread_ctx_destroy(ctx);
}
END_TEST

/* A new request: everything in one call, whatever was published. */
START_TEST(update_all_publishes_everything)
{
	otel_thread_ctx *ctx = full_ctx();
	const struct otel_thread_ctx_attr list[] = {
		{ 3, 4, (const uint8_t *)"PUT " },
		{ 4, 2, (const uint8_t *)"/x" },
	};
	struct otel_thread_ctx_attr bad[2] = { list[0], list[0] };
	struct published before, after;
	struct ctx_bytes cb;

	/* Detached: it publishes. */
	ck_assert_ok(otel_thread_ctx_update_all(trace_b, span_b, 0, list, 2));
	after = read_published();
	ck_assert_ptr_nonnull(after.slot);
	ck_assert_mem_eq(after.rec.trace_id, trace_b, 16);
	ck_assert_mem_eq(after.rec.span_id, span_b, 8);
	ck_assert_uint_eq(after.rec.trace_flags, 0);
	ck_assert_uint_eq(after.rec.valid, 1);
	ck_assert_uint_eq(after.rec.attrs_data_size, 10);
	ck_assert_mem_eq(after.rec.attrs_data, "\x03\x04" "PUT " "\x04\x02" "/x", 10);

	/* In place of an attached context's copy, which it does not touch. */
	ck_assert_ok(otel_thread_ctx_attach(ctx, NULL));
	ctx_bytes_of(ctx, &cb);
	before = read_published();
	ck_assert_ok(otel_thread_ctx_update_all(trace_a, span_b, 1, list, 1));
	after = read_published();
	ck_assert_ptr_ne(after.slot, before.slot);
	ck_assert_mem_eq(after.rec.trace_id, trace_a, 16);
	ck_assert_mem_eq(after.rec.span_id, span_b, 8);
	ck_assert_uint_eq(after.rec.trace_flags, 1);
	ck_assert_uint_eq(after.rec.attrs_data_size, 6);
	ck_assert_mem_eq(after.rec.attrs_data, "\x03\x04" "PUT ", 6);
	assert_unchanged(&after, ctx, &cb);
	/* No attributes, no ids. */
	ck_assert_ok(otel_thread_ctx_update_all(zero, zero, 0, NULL, 0));
	ck_assert_mem_eq(otel_thread_ctx_v1->trace_id, zero, 16);
	ck_assert_uint_eq(otel_thread_ctx_v1->attrs_data_size, 0);
	ck_assert_ok(otel_thread_ctx_update_all(trace_a, span_a, 1, list, 2));

	/* Every refusal changes nothing. */
	before = read_published();
	ck_assert_otel(otel_thread_ctx_update_all(NULL, span_a, 1, list, 2), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_update_all(trace_a, NULL, 1, list, 2), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_update_all(trace_a, span_a, 1, NULL, 2),
		       OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_update_all(trace_a, zero, 1, list, 2), OTEL_THREAD_CTX_EIDS);
	ck_assert_otel(otel_thread_ctx_update_all(zero, span_a, 0, list, 2), OTEL_THREAD_CTX_EIDS);
	ck_assert_otel(otel_thread_ctx_update_all(zero, zero, 1, list, 2), OTEL_THREAD_CTX_EIDS);
	ck_assert_otel(otel_thread_ctx_update_all(trace_a, span_a, 1, bad, 2),
		       OTEL_THREAD_CTX_EDUPKEY);
	after = read_published();
	ck_assert(published_equal(&before, &after));
	/* ... and left no trace in what the next fast path publishes. */
	ck_assert_ok(otel_thread_ctx_update_span_id(span_b));
	memcpy(before.rec.span_id, span_b, 8);
	ck_assert(same_record(otel_thread_ctx_v1, &before.rec));
	ck_assert_ok(otel_thread_ctx_detach(NULL));
	otel_thread_ctx_destroy(ctx);
}
END_TEST

START_TEST(every_error_has_its_own_text)
{
	static const int codes[] = {
		OTEL_THREAD_CTX_OK,      OTEL_THREAD_CTX_ENULL,   OTEL_THREAD_CTX_EIDS,
		OTEL_THREAD_CTX_EKEY,    OTEL_THREAD_CTX_EVALUE,  OTEL_THREAD_CTX_EUTF8,
		OTEL_THREAD_CTX_ENOSPC,  OTEL_THREAD_CTX_ENOMEM,  OTEL_THREAD_CTX_ETHREAD,
		OTEL_THREAD_CTX_ENOCTX,  OTEL_THREAD_CTX_EINVALID, OTEL_THREAD_CTX_ETRUNCATED,
		OTEL_THREAD_CTX_ESLOT,   OTEL_THREAD_CTX_ENAME,   OTEL_THREAD_CTX_EKEYS,
		OTEL_THREAD_CTX_EUNKNOWNKEY, OTEL_THREAD_CTX_EPUBLISHED,
		OTEL_THREAD_CTX_ENOTPUBLISHED, OTEL_THREAD_CTX_E2BIG, OTEL_THREAD_CTX_EATTR,
		OTEL_THREAD_CTX_EMAP,    OTEL_THREAD_CTX_ESYS,    OTEL_THREAD_CTX_EDUPKEY,
		OTEL_THREAD_CTX_EOPTIONS, OTEL_THREAD_CTX_ENESTED, OTEL_THREAD_CTX_EFULL,
	};
	/* Codes no function returns (among them those of conditions the API
	 * no longer has: -16, -4006, -4022). */
	static const int unused[] = { 1, -1, -16, -4000, -4006, -4022, -4100, 12345 };
	const char *unknown = otel_thread_ctx_strerror(12345);
	size_t n = sizeof(codes) / sizeof(codes[0]);

	ck_assert_ptr_nonnull(unknown);
	for (size_t i = 0; i < sizeof(unused) / sizeof(unused[0]); i++)
		ck_assert_str_eq(otel_thread_ctx_strerror(unused[i]), unknown);
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
	ck_assert_int_eq(OTEL_THREAD_CTX_ENOMEM, -ENOMEM);
	ck_assert_int_eq(OTEL_THREAD_CTX_ENOSPC, -ENOSPC);
	ck_assert_int_eq(OTEL_THREAD_CTX_E2BIG, -E2BIG);
	ck_assert_int_le(OTEL_THREAD_CTX_ENULL, -4001);
	ck_assert_int_le(OTEL_THREAD_CTX_ENOCTX, -4001);
	ck_assert_int_le(OTEL_THREAD_CTX_EOPTIONS, -4001);
	ck_assert_int_gt(OTEL_THREAD_CTX_EOPTIONS, -4100);
}
END_TEST

Suite *test_suite(void)
{
	const struct test_case cases[] = {
		{ "create-destroy", create_and_destroy },
		{ "create-with-options", create_with_follows_the_size_rule },
		{ "null-arguments", null_arguments },
		{ "ids-half-set", ids_half_set_are_refused },
		{ "span-flags-need-trace", span_and_flags_need_a_trace },
		{ "span-flags-alone", span_and_flags_change_alone },
		{ "bad-attributes", bad_attributes_are_refused },
		{ "set-attrs-refusals", set_attrs_refusals_change_nothing },
		{ "attach-copies", attach_publishes_a_copy },
		{ "old-record-whole", a_publication_leaves_the_old_record_whole },
		{ "update", update_is_attach_without_saved },
		{ "detach-save", detach_and_save },
		{ "holds-nothing", a_context_that_holds_nothing },
		{ "copy", copy_makes_dst_hold_what_src_holds },
		{ "get", get_copies_the_record_and_no_more },
		{ "update-span-id", update_span_id_changes_the_span_only },
		{ "update-trace-flags", update_trace_flags_changes_the_flags_only },
		{ "update-all", update_all_publishes_everything },
		{ "strerror", every_error_has_its_own_text },
		{ "errno-codes", errno_named_codes_equal_the_errno },
	};

	return MAKE_SUITE("api", cases, 0);
}
