/* SPDX-License-Identifier: Apache-2.0 */
/* The record: its layout and the bytes the setters produce, read through
 * otel_thread_ctx_v1 as a reader reads them. */
#include <stddef.h>
#include <stdint.h>

#include "common.h"

static const uint8_t trace_a[16] = { 0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6,
				     0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36 };
static const uint8_t span_a[8] = { 0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7 };

/* Attaches ctx, returns what the thread publishes. */
static const struct otel_thread_ctx_record *publish(otel_thread_ctx *ctx)
{
	ck_assert_ok(otel_thread_ctx_attach(ctx, NULL));
	ck_assert_ptr_nonnull(otel_thread_ctx_v1);
	return otel_thread_ctx_v1;
}

static void release(otel_thread_ctx *ctx)
{
	ck_assert_ok(otel_thread_ctx_detach(NULL));
	ck_assert_ptr_null(otel_thread_ctx_v1);
	otel_thread_ctx_destroy(ctx);
}

static void assert_attrs(const struct otel_thread_ctx_record *r, const void *bytes, size_t n)
{
	ck_assert_uint_eq(r->attrs_data_size, n);
	ck_assert_mem_eq(r->attrs_data, bytes, n);
}

START_TEST(layout_matches_otep_4947)
{
	ck_assert_uint_eq(sizeof(struct otel_thread_ctx_record), 640);
	ck_assert_uint_eq(offsetof(struct otel_thread_ctx_record, trace_id), 0);
	ck_assert_uint_eq(offsetof(struct otel_thread_ctx_record, span_id), 16);
	ck_assert_uint_eq(offsetof(struct otel_thread_ctx_record, valid), 24);
	ck_assert_uint_eq(offsetof(struct otel_thread_ctx_record, trace_flags), 25);
	ck_assert_uint_eq(offsetof(struct otel_thread_ctx_record, attrs_data_size), 26);
	ck_assert_uint_eq(offsetof(struct otel_thread_ctx_record, attrs_data), 28);
	ck_assert_uint_eq(sizeof(((struct otel_thread_ctx_record *)0)->attrs_data), 612);
	ck_assert_uint_eq(OTEL_THREAD_CTX_RECORD_SIZE, 640);
	ck_assert_uint_eq(OTEL_THREAD_CTX_ATTRS_MAX, 612);
	ck_assert_uint_eq(OTEL_THREAD_CTX_VALUE_MAX, 255);
	ck_assert_uint_eq(OTEL_THREAD_CTX_KEY_MAX, 255);
	ck_assert_uint_eq(sizeof(otel_thread_ctx_v1), 8);
}
END_TEST

START_TEST(fresh_context_is_valid_and_empty)
{
	otel_thread_ctx *ctx = new_ctx();
	const struct otel_thread_ctx_record *r;
	static const uint8_t zero[640];

	ck_assert_ptr_null(otel_thread_ctx_v1);
	ck_assert_ok(otel_thread_ctx_attach(ctx, NULL));
	r = otel_thread_ctx_v1;
	ck_assert_ptr_nonnull(r);
	ck_assert_uint_eq(r->valid, 1);
	ck_assert_mem_eq(r->trace_id, zero, 16);
	ck_assert_mem_eq(r->span_id, zero, 8);
	ck_assert_uint_eq(r->trace_flags, 0);
	ck_assert_uint_eq(r->attrs_data_size, 0);
	release(ctx);
	ck_assert_ptr_null(otel_thread_ctx_v1);
}
END_TEST

/* Both records of a thread start 16-byte aligned, whatever the capacity of
 * the context it attaches (doc/api.md; the format asks for 2). */
START_TEST(records_are_16_aligned)
{
	uint8_t span[8] = { 1 };

	for (unsigned int cap = 0; cap <= OTEL_THREAD_CTX_ATTRS_MAX; cap++) {
		otel_thread_ctx *ctx = new_ctx_sized(cap);

		ck_assert_ok(otel_thread_ctx_set_ids(ctx, trace_a, span_a, 1));
		ck_assert_ok(otel_thread_ctx_attach(ctx, NULL));
		ck_assert_msg((uintptr_t)otel_thread_ctx_v1 % 16 == 0, "capacity %u: %p", cap,
			      (const void *)otel_thread_ctx_v1);
		/* The thread's other record, after one more publication. */
		span[0] = (uint8_t)(cap | 1);
		ck_assert_ok(otel_thread_ctx_update_span_id(span));
		ck_assert_msg((uintptr_t)otel_thread_ctx_v1 % 16 == 0, "capacity %u: %p", cap,
			      (const void *)otel_thread_ctx_v1);
		otel_thread_ctx_destroy(ctx);
	}
	ck_assert_ok(otel_thread_ctx_detach(NULL));
}
END_TEST

START_TEST(ids_and_flags_are_copied_exactly)
{
	otel_thread_ctx *ctx = new_ctx();
	const struct otel_thread_ctx_record *r;

	ck_assert_ok(otel_thread_ctx_set_ids(ctx, trace_a, span_a, 0x03));
	r = publish(ctx);
	ck_assert_mem_eq(r->trace_id, trace_a, 16);
	ck_assert_mem_eq(r->span_id, span_a, 8);
	ck_assert_uint_eq(r->trace_flags, 0x03);
	ck_assert_uint_eq(r->valid, 1);
	release(ctx);
}
END_TEST

START_TEST(attribute_entries_are_key_len_bytes)
{
	otel_thread_ctx *ctx = new_ctx();
	uint8_t big[255];
	uint8_t expect[2 + 3 + 2 + 0 + 2 + 255];

	memset(big, 'v', sizeof(big));
	ck_assert_ok(otel_thread_ctx_set_attr(ctx, 1, "abc", 3));
	ck_assert_ok(otel_thread_ctx_set_attr(ctx, 7, NULL, 0));
	ck_assert_ok(otel_thread_ctx_set_attr(ctx, 255, big, sizeof(big)));
	memcpy(expect, "\x01\x03" "abc" "\x07\x00" "\xff\xff", 9);
	memcpy(expect + 9, big, sizeof(big));
	assert_attrs(publish(ctx), expect, sizeof(expect));
	release(ctx);
}
END_TEST

START_TEST(replacing_a_key_keeps_one_entry_in_place)
{
	otel_thread_ctx *ctx = new_ctx();
	const struct otel_thread_ctx_record *r;

	ck_assert_ok(otel_thread_ctx_set_attr(ctx, 1, "abc", 3));
	ck_assert_ok(otel_thread_ctx_set_attr(ctx, 2, "xy", 2));
	ck_assert_ok(otel_thread_ctx_set_attr(ctx, 3, "q", 1));
	ck_assert_ok(otel_thread_ctx_set_attr(ctx, 2, "longer", 6));
	r = publish(ctx);
	assert_attrs(r, "\x01\x03" "abc" "\x02\x06" "longer" "\x03\x01" "q", 16);

	ck_assert_ok(otel_thread_ctx_set_attr(ctx, 2, "", 0));
	ck_assert_ok(otel_thread_ctx_update(ctx));
	assert_attrs(otel_thread_ctx_v1, "\x01\x03" "abc" "\x02\x00" "\x03\x01" "q", 10);

	ck_assert_ok(otel_thread_ctx_set_attr(ctx, 1, "z", 1));
	ck_assert_ok(otel_thread_ctx_update(ctx));
	assert_attrs(otel_thread_ctx_v1, "\x01\x01" "z" "\x02\x00" "\x03\x01" "q", 8);

	/* the same length: the entries around it do not move */
	ck_assert_ok(otel_thread_ctx_set_attr(ctx, 2, "lo", 2));
	ck_assert_ok(otel_thread_ctx_set_attr(ctx, 2, "hi", 2));
	ck_assert_ok(otel_thread_ctx_set_attr(ctx, 3, "r", 1));
	ck_assert_ok(otel_thread_ctx_update(ctx));
	assert_attrs(otel_thread_ctx_v1, "\x01\x01" "z" "\x02\x02" "hi" "\x03\x01" "r", 10);
	release(ctx);
}
END_TEST

/* Values of every length, bytes that differ from each other, stored
 * exactly; and copied exactly into the thread's draft by the next fast
 * path, which does not touch them, whatever the size of the attributes. */
START_TEST(values_of_every_length_are_stored_and_kept)
{
	uint8_t value[255], expect[2 + 255 + 2 + 255];

	for (size_t len = 0; len <= 255; len++) {
		otel_thread_ctx *ctx = new_ctx();
		size_t n = 0;

		for (size_t i = 0; i < sizeof(value); i++)
			value[i] = (uint8_t)(0x20 + (i * 7 + len) % 0x5f); /* ASCII */
		ck_assert_ok(otel_thread_ctx_set_attr(ctx, 9, value, len));
		expect[n++] = 9;
		expect[n++] = (uint8_t)len;
		memcpy(expect + n, value, len);
		n += len;
		if (len % 2) {
			/* A second entry: sizes up to 514 bytes. */
			ck_assert_ok(otel_thread_ctx_set_attr(ctx, 10, value, 255 - len / 2));
			expect[n++] = 10;
			expect[n++] = (uint8_t)(255 - len / 2);
			memcpy(expect + n, value, 255 - len / 2);
			n += 255 - len / 2;
		}
		assert_attrs(publish(ctx), expect, n);
		/* A change of the flags only: the attributes are copied. */
		ck_assert_ok(otel_thread_ctx_update_trace_flags(0));
		assert_attrs(otel_thread_ctx_v1, expect, n);
		ck_assert_ok(otel_thread_ctx_update_trace_flags(0));
		assert_attrs(otel_thread_ctx_v1, expect, n);
		release(ctx);
	}
}
END_TEST

START_TEST(remove_and_clear)
{
	otel_thread_ctx *ctx = new_ctx();

	ck_assert_ok(otel_thread_ctx_set_ids(ctx, trace_a, span_a, 1));
	ck_assert_ok(otel_thread_ctx_set_attr(ctx, 1, "abc", 3));
	ck_assert_ok(otel_thread_ctx_set_attr(ctx, 2, "xy", 2));
	ck_assert_ok(otel_thread_ctx_set_attr(ctx, 3, "q", 1));
	ck_assert_ok(otel_thread_ctx_remove_attr(ctx, 2));
	ck_assert_ok(otel_thread_ctx_remove_attr(ctx, 200)); /* absent */
	assert_attrs(publish(ctx), "\x01\x03" "abc" "\x03\x01" "q", 8);

	ck_assert_ok(otel_thread_ctx_clear_attrs(ctx));
	ck_assert_ok(otel_thread_ctx_update(ctx));
	ck_assert_uint_eq(otel_thread_ctx_v1->attrs_data_size, 0);
	ck_assert_mem_eq(otel_thread_ctx_v1->trace_id, trace_a, 16);

	ck_assert_ok(otel_thread_ctx_set_attr(ctx, 9, "k", 1));
	ck_assert_ok(otel_thread_ctx_clear(ctx));
	ck_assert_ok(otel_thread_ctx_update(ctx));
	{
		static const uint8_t zero[24];
		const struct otel_thread_ctx_record *r = otel_thread_ctx_v1;

		ck_assert_mem_eq(r->trace_id, zero, 24);
		ck_assert_uint_eq(r->trace_flags, 0);
		ck_assert_uint_eq(r->attrs_data_size, 0);
		ck_assert_uint_eq(r->valid, 1);
	}
	release(ctx);
}
END_TEST

START_TEST(attributes_fill_exactly_612_bytes)
{
	otel_thread_ctx *ctx = new_ctx();
	uint8_t v[255];
	struct published before;

	memset(v, 'x', sizeof(v));
	/* 257 + 257 + 98 = 612 */
	ck_assert_ok(otel_thread_ctx_set_attr(ctx, 0, v, 255));
	ck_assert_ok(otel_thread_ctx_set_attr(ctx, 1, v, 255));
	ck_assert_ok(otel_thread_ctx_set_attr(ctx, 2, v, 96));
	ck_assert_uint_eq(publish(ctx)->attrs_data_size, 612);
	before = read_published();
	/* Not even an empty entry fits, and growing an entry does not either. */
	ck_assert_otel(otel_thread_ctx_set_attr(ctx, 3, NULL, 0), OTEL_THREAD_CTX_ENOSPC);
	ck_assert_otel(otel_thread_ctx_set_attr(ctx, 2, v, 97), OTEL_THREAD_CTX_ENOSPC);
	/* Shrinking one does. */
	ck_assert_ok(otel_thread_ctx_set_attr(ctx, 2, v, 94));
	ck_assert_ok(otel_thread_ctx_set_attr(ctx, 3, NULL, 0));
	{
		struct published now = read_published();

		ck_assert(published_equal(&before, &now)); /* not attached again yet */
	}
	ck_assert_ok(otel_thread_ctx_update(ctx));
	ck_assert_uint_eq(otel_thread_ctx_v1->attrs_data_size, 612);
	release(ctx);
}
END_TEST

START_TEST(utf8_values)
{
	otel_thread_ctx *ctx = new_ctx();
	static const struct {
		const char *bytes;
		size_t len;
		int ok;
	} cases[] = {
		{ "plain", 5, 1 },
		{ "caf\xc3\xa9", 5, 1 },                 /* U+00E9 */
		{ "\xe2\x82\xac", 3, 1 },                /* U+20AC */
		{ "\xf0\x9f\x98\x80", 4, 1 },            /* U+1F600 */
		{ "\xf4\x8f\xbf\xbf", 4, 1 },            /* U+10FFFF */
		{ "\xc3", 1, 0 },                        /* truncated */
		{ "\xe2\x82", 2, 0 },                    /* truncated */
		{ "\xc0\xaf", 2, 0 },                    /* overlong '/' */
		{ "\xe0\x80\xaf", 3, 0 },                /* overlong */
		{ "\xf0\x80\x80\xaf", 4, 0 },            /* overlong */
		{ "\xed\xa0\x80", 3, 0 },                /* surrogate U+D800 */
		{ "\xf4\x90\x80\x80", 4, 0 },            /* U+110000 */
		{ "\x80", 1, 0 },                        /* stray continuation */
		{ "\xff", 1, 0 },
		{ "a\xc3(b", 4, 0 },                     /* bad continuation */
		/* Longer values, read 8 ASCII bytes at a time where they can be:
		 * what follows or interrupts a run of ASCII is still checked. */
		{ "12345678\xc3\xa9", 10, 1 },           /* after a full word */
		{ "1234567\xc3\xa9", 9, 1 },             /* across a word's end */
		{ "\xe2\x82\xac" "abcdefgh" "\xf0\x9f\x98\x80", 15, 1 },
		{ "abcdefgh\xff", 9, 0 },
		{ "abcdefg\xff" "abcdefgh", 16, 0 },     /* last byte of a word */
		{ "\x80" "bcdefgh" "abcdefgh", 16, 0 },  /* first byte of a word */
		{ "abcdefghijklmno\xc3", 16, 0 },        /* truncated at the end */
		{ "abcdefgh" "ijklmnop" "\xed\xa0\x80", 19, 0 }, /* surrogate */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = otel_thread_ctx_set_attr(ctx, 4, cases[i].bytes, cases[i].len);

		ck_assert_msg(rc == (cases[i].ok ? OTEL_THREAD_CTX_OK : OTEL_THREAD_CTX_EUTF8),
			      "case %zu returned %d", i, rc);
	}
	otel_thread_ctx_destroy(ctx);
}
END_TEST

START_TEST(set_attrs_writes_the_list_in_order)
{
	otel_thread_ctx *ctx = new_ctx();
	const struct otel_thread_ctx_attr list[] = {
		{ 9, 3, (const uint8_t *)"GET" },
		{ 2, 0, NULL },
		{ 200, 5, (const uint8_t *)"/user" },
	};

	/* What was there goes, whatever it was. */
	ck_assert_ok(otel_thread_ctx_set_attr(ctx, 2, "old", 3));
	ck_assert_ok(otel_thread_ctx_set_attr(ctx, 7, "gone", 4));
	ck_assert_ok(otel_thread_ctx_update(ctx));
	ck_assert_ok(otel_thread_ctx_set_attrs(ctx, list, 3));
	assert_attrs(publish(ctx), "\x09\x03" "GET" "\x02\x00" "\xc8\x05" "/user", 14);

	ck_assert_ok(otel_thread_ctx_set_attrs(ctx, NULL, 0));
	ck_assert_ok(otel_thread_ctx_update(ctx));
	ck_assert_uint_eq(otel_thread_ctx_v1->attrs_data_size, 0);
	release(ctx);
}
END_TEST

START_TEST(set_attrs_fills_exactly_612_bytes)
{
	otel_thread_ctx *ctx = new_ctx();
	uint8_t v[255];
	struct otel_thread_ctx_attr list[3] = {
		{ 0, 255, v }, { 1, 255, v }, { 2, 96, v }, /* 257 + 257 + 98 */
	};

	memset(v, 'y', sizeof(v));
	ck_assert_ok(otel_thread_ctx_set_attrs(ctx, list, 3));
	ck_assert_uint_eq(publish(ctx)->attrs_data_size, 612);
	list[2].len = 97;
	ck_assert_otel(otel_thread_ctx_set_attrs(ctx, list, 3), OTEL_THREAD_CTX_ENOSPC);
	release(ctx);
}
END_TEST

/* update_all copies and checks its values in a path of its own (a value
 * of 8 to 16 bytes as two words): values of every length stored exactly;
 * a byte that is not UTF-8, at each position of a short value, refused;
 * a two-byte character at each position kept. */
START_TEST(update_all_values_of_every_length)
{
	uint8_t value[255], expect[2 + 255];
	struct otel_thread_ctx_attr a = { 7, 0, value };

	for (size_t len = 0; len <= 255; len++) {
		for (size_t i = 0; i < sizeof(value); i++)
			value[i] = (uint8_t)(0x20 + (i * 11 + len) % 0x5f); /* ASCII */
		a.len = (unsigned int)len;
		ck_assert_ok(otel_thread_ctx_update_all(trace_a, span_a, 1, &a, 1));
		expect[0] = 7;
		expect[1] = (uint8_t)len;
		memcpy(expect + 2, value, len);
		assert_attrs(otel_thread_ctx_v1, expect, 2 + len);
	}
	for (size_t len = 1; len <= 24; len++) {
		for (size_t k = 0; k < len; k++) {
			memset(value, 'v', len);
			value[k] = 0xff;
			a.len = (unsigned int)len;
			ck_assert_msg(otel_thread_ctx_update_all(trace_a, span_a, 1, &a, 1) ==
					      OTEL_THREAD_CTX_EUTF8,
				      "0xff at %zu of %zu accepted", k, len);
			if (k + 1 < len) {
				value[k] = 0xc3; /* U+00E9 */
				value[k + 1] = 0xa9;
				ck_assert_ok(otel_thread_ctx_update_all(trace_a, span_a, 1, &a, 1));
				expect[1] = (uint8_t)len;
				memcpy(expect + 2, value, len);
				assert_attrs(otel_thread_ctx_v1, expect, 2 + len);
			}
		}
	}
	ck_assert_ok(otel_thread_ctx_detach(NULL));
}
END_TEST

Suite *test_suite(void)
{
	const struct test_case cases[] = {
		{ "layout", layout_matches_otep_4947 },
		{ "fresh", fresh_context_is_valid_and_empty },
		{ "alignment", records_are_16_aligned },
		{ "ids", ids_and_flags_are_copied_exactly },
		{ "attr-encoding", attribute_entries_are_key_len_bytes },
		{ "attr-replace", replacing_a_key_keeps_one_entry_in_place },
		{ "attr-every-length", values_of_every_length_are_stored_and_kept },
		{ "attr-remove-clear", remove_and_clear },
		{ "attr-budget", attributes_fill_exactly_612_bytes },
		{ "utf8", utf8_values },
		{ "set-attrs", set_attrs_writes_the_list_in_order },
		{ "set-attrs-budget", set_attrs_fills_exactly_612_bytes },
		{ "update-all-every-length", update_all_values_of_every_length },
	};

	return MAKE_SUITE("record", cases, 0);
}
