/* SPDX-License-Identifier: Apache-2.0 */
/* The reader side: copying the calling thread's record, checking records
 * from elsewhere, and decoding attributes by the format's rules. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common.h"

static const uint8_t trace_a[16] = { 0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6,
				     0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36 };
static const uint8_t span_a[8] = { 0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7 };

/* The walks below honour this process's key map: name indices 0-15 first
 * (a constructor, so that it holds with and without Check's fork). */
__attribute__((constructor)) static void name_keys(void)
{
	char name[32];
	unsigned int index;

	for (unsigned int i = 0; i < 16; i++) {
		snprintf(name, sizeof(name), "test.reader.%u", i);
		if (otel_thread_ctx_key_register(name, &index) != OTEL_THREAD_CTX_OK || index != i)
			abort();
	}
}

/* A raw record with the given attribute bytes. */
static void raw_record(struct otel_thread_ctx_record *r, const void *attrs, size_t n,
		       uint16_t size)
{
	memset(r, 0, sizeof(*r));
	memcpy(r->trace_id, trace_a, 16);
	memcpy(r->span_id, span_a, 8);
	r->valid = 1;
	r->trace_flags = 1;
	memcpy(r->attrs_data, attrs, n);
	r->attrs_data_size = size;
}

/* "key=value;" for every effective attribute, in iteration order. */
static void effective(const struct otel_thread_ctx_record *r, char *out, size_t cap)
{
	struct otel_thread_ctx_attr_iter it;
	struct otel_thread_ctx_attr a;
	size_t used = 0;

	out[0] = '\0';
	otel_thread_ctx_attr_iter_init(&it, r);
	while (otel_thread_ctx_attr_iter_next(&it, &a) == 0) {
		int n = snprintf(out + used, cap - used, "%u=%.*s;", a.key, (int)a.len,
				 (const char *)a.value);

		ck_assert_int_gt(n, 0);
		used += (size_t)n;
		ck_assert_uint_lt(used, cap);
	}
}

START_TEST(read_copies_what_the_thread_publishes)
{
	otel_thread_ctx *ctx = new_ctx(), *none = new_ctx();
	struct otel_thread_ctx_record out;

	ck_assert_otel(otel_thread_ctx_read(NULL), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_read(&out), OTEL_THREAD_CTX_ENOCTX);
	ck_assert_ok(otel_thread_ctx_save(none)); /* nothing published */
	ck_assert_ok(otel_thread_ctx_set_ids(ctx, trace_a, span_a, 1));
	ck_assert_ok(otel_thread_ctx_set_attr(ctx, 3, "GET /users", 10));
	ck_assert_ok(otel_thread_ctx_attach(ctx, NULL));

	memset(&out, 0xee, sizeof(out));
	ck_assert_ok(otel_thread_ctx_read(&out));
	ck_assert_mem_eq(&out, otel_thread_ctx_v1, 28 + 12);
	/* Nothing past attrs_data_size is written. */
	ck_assert_uint_eq(out.attrs_data[12], 0xee);

	/* A saved "nothing" attached: nothing to read. */
	ck_assert_ok(otel_thread_ctx_update(none));
	ck_assert_otel(otel_thread_ctx_read(&out), OTEL_THREAD_CTX_ENOCTX);
	ck_assert_ok(otel_thread_ctx_update(ctx));
	ck_assert_ok(otel_thread_ctx_read(&out));
	ck_assert_ok(otel_thread_ctx_detach(NULL));
	ck_assert_otel(otel_thread_ctx_read(&out), OTEL_THREAD_CTX_ENOCTX);
	otel_thread_ctx_destroy(ctx);
	otel_thread_ctx_destroy(none);

	/* A record another writer marked invalid: the header only. */
	{
		static struct otel_thread_ctx_record foreign;

		memset(&foreign, 0, sizeof(foreign));
		foreign.valid = 2;
		foreign.attrs_data_size = 4;
		otel_thread_ctx_v1 = &foreign;
		memset(&out, 0xee, sizeof(out));
		ck_assert_otel(otel_thread_ctx_read(&out), OTEL_THREAD_CTX_EINVALID);
		ck_assert_uint_eq(out.valid, 2);
		ck_assert_uint_eq(out.attrs_data[0], 0xee);
		otel_thread_ctx_v1 = NULL;
	}
}
END_TEST

START_TEST(decode_checks_and_clamps)
{
	struct otel_thread_ctx_record raw, out;

	raw_record(&raw, "\x01\x02" "ab", 4, 4);
	ck_assert_otel(otel_thread_ctx_record_decode(NULL, 640, &out), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_record_decode(&raw, 640, NULL), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_record_decode(&raw, 27, &out), OTEL_THREAD_CTX_ETRUNCATED);
	ck_assert_ok(otel_thread_ctx_record_decode(&raw, 640, &out));
	ck_assert_mem_eq(&out, &raw, 28 + 4);

	/* Fewer bytes than attrs_data_size claims: clamped to what is there. */
	ck_assert_ok(otel_thread_ctx_record_decode(&raw, 28 + 3, &out));
	ck_assert_uint_eq(out.attrs_data_size, 3);

	/* A size past the record: clamped to 612, never read beyond 640. */
	raw.attrs_data_size = 0xffff;
	ck_assert_ok(otel_thread_ctx_record_decode(&raw, sizeof(raw), &out));
	ck_assert_uint_eq(out.attrs_data_size, 612);

	for (unsigned v = 0; v < 256; v++) {
		raw.valid = (uint8_t)v;
		ck_assert_otel(otel_thread_ctx_record_decode(&raw, sizeof(raw), &out),
			       v == 1 ? OTEL_THREAD_CTX_OK : OTEL_THREAD_CTX_EINVALID);
	}
}
END_TEST

/* Every attribute size, from a record whose bytes end at an unreadable page:
 * exactly the bytes there are copied, nothing after them is read, nothing
 * after attrs_data_size is written. */
START_TEST(decode_copies_every_size_exactly)
{
	long page = sysconf(_SC_PAGESIZE);
	uint8_t *map = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct otel_thread_ctx_record out;

	ck_assert_ptr_ne(map, MAP_FAILED);
	ck_assert_int_eq(mprotect(map + page, (size_t)page, PROT_NONE), 0);
	for (size_t n = 0; n <= 612; n++) {
		/* Records start 2-aligned: an odd length leaves one byte. */
		size_t len = 28 + n;
		uint8_t *end = map + page - (len & 1), *bytes = end - len;
		struct otel_thread_ctx_record hdr;

		raw_record(&hdr, "", 0, (uint16_t)n);
		memcpy(bytes, &hdr, 28);
		for (size_t i = 0; i < n; i++)
			bytes[28 + i] = (uint8_t)(i * 7 + 3);
		for (int claim = 0; claim < 2; claim++) {
			/* The size field says n, or more than the bytes hold. */
			uint16_t size = claim ? 612 : (uint16_t)n;

			memcpy(bytes + 26, &size, 2);
			memset(&out, 0xee, sizeof(out));
			ck_assert_ok(otel_thread_ctx_record_decode(bytes, len, &out));
			ck_assert_uint_eq(out.attrs_data_size, n);
			ck_assert_mem_eq(out.trace_id, trace_a, 16);
			ck_assert_mem_eq(out.attrs_data, bytes + 28, n);
			size_t untouched = n;

			while (untouched < 612 && out.attrs_data[untouched] == 0xee)
				untouched++;
			ck_assert_msg(untouched == 612, "size %zu: byte %zu written", n,
				      untouched);
		}
	}
	ck_assert_int_eq(munmap(map, (size_t)page * 2), 0);
}
END_TEST

START_TEST(last_duplicate_wins)
{
	struct otel_thread_ctx_record r;
	struct otel_thread_ctx_attr a;
	char got[256];
	static const char attrs[] = "\x01\x01" "a" "\x02\x01" "b" "\x01\x02" "aa" "\x03\x00"
				    "\x02\x01" "B";

	raw_record(&r, attrs, sizeof(attrs) - 1, sizeof(attrs) - 1);
	effective(&r, got, sizeof(got));
	ck_assert_str_eq(got, "1=aa;3=;2=B;");
	ck_assert_int_eq(otel_thread_ctx_record_attr(&r, 1, &a), OTEL_THREAD_CTX_OK);
	ck_assert_uint_eq(a.len, 2);
	ck_assert_mem_eq(a.value, "aa", 2);
	ck_assert_int_eq(otel_thread_ctx_record_attr(&r, 3, &a), OTEL_THREAD_CTX_OK);
	ck_assert_uint_eq(a.len, 0);
	ck_assert_int_eq(otel_thread_ctx_record_attr(&r, 4, &a), OTEL_THREAD_CTX_ENOATTR);
}
END_TEST

START_TEST(truncated_entry_stops_decoding)
{
	struct otel_thread_ctx_record r;
	struct otel_thread_ctx_attr a;
	char got[1024];
	/* the third entry claims 9 bytes; only 3 are inside attrs_data_size */
	static const char attrs[] = "\x01\x01" "a" "\x02\x01" "b" "\x01\x09" "xyz";

	raw_record(&r, attrs, sizeof(attrs) - 1, sizeof(attrs) - 1);
	effective(&r, got, sizeof(got));
	ck_assert_str_eq(got, "1=a;2=b;"); /* the truncated entry does not override */
	ck_assert_int_eq(otel_thread_ctx_record_attr(&r, 1, &a), OTEL_THREAD_CTX_OK);
	ck_assert_mem_eq(a.value, "a", 1);

	/* A lone key byte at the end. */
	raw_record(&r, "\x05\x01" "z" "\x07", 4, 4);
	effective(&r, got, sizeof(got));
	ck_assert_str_eq(got, "5=z;");

	/* attrs_data_size beyond 612: entries past 612 are not seen. */
	memset(&r, 0, sizeof(r));
	memset(r.attrs_data, 'x', sizeof(r.attrs_data));
	r.valid = 1;
	r.attrs_data[0] = 9;
	r.attrs_data[1] = 200; /* ends at 202 */
	r.attrs_data[202] = 8;
	r.attrs_data[203] = 255; /* ends at 459 */
	r.attrs_data[459] = 7;
	r.attrs_data[460] = 255; /* would end at 716: past 612 */
	r.attrs_data_size = 0xffff;
	effective(&r, got, sizeof(got));
	ck_assert_uint_eq(strlen(got), 2 + 200 + 1 + 2 + 255 + 1);
	ck_assert_int_eq(otel_thread_ctx_record_attr(&r, 7, &a), OTEL_THREAD_CTX_ENOATTR);
	ck_assert_int_eq(otel_thread_ctx_record_attr(&r, 8, &a), OTEL_THREAD_CTX_OK);
	ck_assert_uint_eq(a.len, 255);

	/* Empty. */
	raw_record(&r, "", 0, 0);
	effective(&r, got, sizeof(got));
	ck_assert_str_eq(got, "");
}
END_TEST

/* Readers ignore an entry whose index the key map does not name. */
START_TEST(indices_outside_the_key_map_are_ignored)
{
	struct otel_thread_ctx_attr_iter it;
	struct otel_thread_ctx_record r;
	struct otel_thread_ctx_attr a;
	char got[256];
	static const char attrs[] = "\x01\x01" "a" "\xc8\x01" "x" "\x02\x01" "b" "\x10\x00";

	raw_record(&r, attrs, sizeof(attrs) - 1, sizeof(attrs) - 1);
	effective(&r, got, sizeof(got));
	ck_assert_str_eq(got, "1=a;2=b;");
	ck_assert_int_eq(otel_thread_ctx_record_attr(&r, 200, &a), OTEL_THREAD_CTX_ENOATTR);
	ck_assert_int_eq(otel_thread_ctx_record_attr(&r, 16, &a), OTEL_THREAD_CTX_ENOATTR);
	ck_assert_int_eq(otel_thread_ctx_record_attr(&r, 2, &a), OTEL_THREAD_CTX_OK);

	/* Counted apart. */
	otel_thread_ctx_attr_iter_init(&it, &r);
	while (otel_thread_ctx_attr_iter_next(&it, &a) == 0)
		;
	ck_assert_uint_eq(it.unmapped, 2);

	/* Another process's map: 2 names; none at all. */
	otel_thread_ctx_attr_iter_init_map(&it, &r, 2);
	ck_assert_int_eq(otel_thread_ctx_attr_iter_next(&it, &a), OTEL_THREAD_CTX_OK);
	ck_assert_uint_eq(a.key, 1);
	ck_assert_int_eq(otel_thread_ctx_attr_iter_next(&it, &a), OTEL_THREAD_CTX_ENOATTR);
	ck_assert_uint_eq(it.unmapped, 3);
	otel_thread_ctx_attr_iter_init_map(&it, &r, 0);
	ck_assert_int_eq(otel_thread_ctx_attr_iter_next(&it, &a), OTEL_THREAD_CTX_ENOATTR);
	ck_assert_uint_eq(it.unmapped, 4);
}
END_TEST

START_TEST(iterators_refuse_null)
{
	struct otel_thread_ctx_attr_iter it;
	struct otel_thread_ctx_attr a;
	struct otel_thread_ctx_record r;

	raw_record(&r, "\x01\x01" "a", 3, 3);
	otel_thread_ctx_attr_iter_init(NULL, &r); /* no crash */
	otel_thread_ctx_attr_iter_init(&it, NULL);
	ck_assert_int_eq(otel_thread_ctx_attr_iter_next(&it, &a), OTEL_THREAD_CTX_ENULL);
	otel_thread_ctx_attr_iter_init(&it, &r);
	ck_assert_int_eq(otel_thread_ctx_attr_iter_next(NULL, &a), OTEL_THREAD_CTX_ENULL);
	ck_assert_int_eq(otel_thread_ctx_attr_iter_next(&it, NULL), OTEL_THREAD_CTX_ENULL);
	ck_assert_int_eq(otel_thread_ctx_attr_iter_next(&it, &a), OTEL_THREAD_CTX_OK);
	ck_assert_int_eq(otel_thread_ctx_record_attr(NULL, 1, &a), OTEL_THREAD_CTX_ENULL);
	ck_assert_int_eq(otel_thread_ctx_record_attr(&r, 1, NULL), OTEL_THREAD_CTX_ENULL);
}
END_TEST

/* Entries of the given lengths, keys 1, 2, ..., from the start of r's
 * attributes; returns the bytes they take. */
static size_t fill_entries(struct otel_thread_ctx_record *r, const unsigned int *lens, size_t n)
{
	size_t at = 0;

	for (size_t i = 0; i < n; i++) {
		r->attrs_data[at] = (uint8_t)(i + 1);
		r->attrs_data[at + 1] = (uint8_t)lens[i];
		memset(r->attrs_data + at + 2, 'a' + (int)i, lens[i]);
		at += 2 + lens[i];
	}
	return at;
}

/* The keys the walk finds, as "1,2,3," (each key's last entry wins). */
static void keys_seen(const struct otel_thread_ctx_record *r, char *out, size_t cap)
{
	struct otel_thread_ctx_attr_iter it;
	struct otel_thread_ctx_attr a;
	size_t used = 0;

	out[0] = '\0';
	otel_thread_ctx_attr_iter_init(&it, r);
	while (otel_thread_ctx_attr_iter_next(&it, &a) == 0 && used + 5 < cap)
		used += (size_t)snprintf(out + used, cap - used, "%u,", a.key);
}

/*
 * The bounds of the walk and of the copies, to the byte, on a record whose
 * 640 bytes end where an unreadable page starts: an entry that ends at
 * attrs_data_size (or at 612) is read, one that ends a byte later is not; a
 * key byte whose length byte would be past the end stops the walk without
 * reading it; attrs_data_size 613 or more is read as 612.
 */
START_TEST(bounds_are_exact_at_the_end_of_the_record)
{
	long page = sysconf(_SC_PAGESIZE);
	uint8_t *map = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct otel_thread_ctx_record *r, out;
	static const unsigned int fill612[] = { 255, 255, 96 }, over613[] = { 255, 255, 97 },
				  fill611[] = { 255, 255, 95 }, small[] = { 3, 2 };
	static const uint16_t past[] = { 612, 613, 614, 640, 0xffff };
	struct otel_thread_ctx_attr a;
	uint8_t big[1000 + 16];
	char got[64];

	ck_assert_ptr_ne(map, MAP_FAILED);
	ck_assert_int_eq(mprotect(map + page, (size_t)page, PROT_NONE), 0);
	r = (struct otel_thread_ctx_record *)(void *)(map + page - sizeof(*r));

	/* Entries that fill the 612 bytes exactly: all read, whatever size
	 * past 611 the header claims. */
	raw_record(r, "", 0, 0);
	ck_assert_uint_eq(fill_entries(r, fill612, 3), 612);
	for (size_t i = 0; i < sizeof(past) / sizeof(past[0]); i++) {
		r->attrs_data_size = past[i];
		keys_seen(r, got, sizeof(got));
		ck_assert_msg(strcmp(got, "1,2,3,") == 0, "size %u: %s", past[i], got);
		ck_assert_int_eq(otel_thread_ctx_record_attr(r, 3, &a), OTEL_THREAD_CTX_OK);
		ck_assert_uint_eq(a.len, 96);
		ck_assert_ptr_eq(a.value, r->attrs_data + 516);
		/* The copies stop at the record's end. */
		ck_assert_int_eq(otel_thread_ctx_record_decode(r, sizeof(*r), &out), 0);
		ck_assert_uint_eq(out.attrs_data_size, 612);
		ck_assert_mem_eq(out.attrs_data, r->attrs_data, 612);
		otel_thread_ctx_v1 = r;
		ck_assert_int_eq(otel_thread_ctx_read(&out), 0);
		otel_thread_ctx_v1 = NULL;
		ck_assert_uint_eq(out.attrs_data_size, 612);
		ck_assert_mem_eq(out.attrs_data, r->attrs_data, 612);
	}
	/* Size 611: the last entry ends a byte past it. */
	r->attrs_data_size = 611;
	keys_seen(r, got, sizeof(got));
	ck_assert_str_eq(got, "1,2,");

	/* An entry that would end at 613: not read. */
	raw_record(r, "", 0, 0);
	fill_entries(r, over613, 2);
	r->attrs_data[514] = 3;
	r->attrs_data[515] = 97;
	for (size_t i = 0; i < sizeof(past) / sizeof(past[0]); i++) {
		r->attrs_data_size = past[i];
		keys_seen(r, got, sizeof(got));
		ck_assert_msg(strcmp(got, "1,2,") == 0, "size %u: %s", past[i], got);
		ck_assert_int_eq(otel_thread_ctx_record_attr(r, 3, &a), OTEL_THREAD_CTX_ENOATTR);
	}

	/* A key byte at 611, its length byte past the record (in the
	 * unreadable page): the walk stops without reading it. */
	raw_record(r, "", 0, 0);
	ck_assert_uint_eq(fill_entries(r, fill611, 3), 611);
	r->attrs_data[611] = 4;
	for (size_t i = 0; i < sizeof(past) / sizeof(past[0]); i++) {
		r->attrs_data_size = past[i];
		keys_seen(r, got, sizeof(got));
		ck_assert_msg(strcmp(got, "1,2,3,") == 0, "size %u: %s", past[i], got);
		ck_assert_int_eq(otel_thread_ctx_record_attr(r, 4, &a), OTEL_THREAD_CTX_ENOATTR);
	}

	/* Small sizes: an entry is read only when it ends within the size. */
	raw_record(r, "", 0, 0);
	ck_assert_uint_eq(fill_entries(r, small, 2), 9);
	for (uint16_t size = 0; size <= 10; size++) {
		r->attrs_data_size = size;
		keys_seen(r, got, sizeof(got));
		ck_assert_msg(strcmp(got, size >= 9 ? "1,2," : size >= 5 ? "1," : "") == 0,
			      "size %u: %s", size, got);
	}

	/* decode() from more bytes than a record: still at most 612, and
	 * nothing written past *out. */
	memset(big, 'z', sizeof(big));
	memcpy(big, r, 28);
	big[26] = 0xff, big[27] = 0xff;
	{
		struct {
			struct otel_thread_ctx_record rec;
			uint8_t after[64];
		} guarded;

		memset(&guarded, 0xee, sizeof(guarded));
		ck_assert_int_eq(otel_thread_ctx_record_decode(big, 1000, &guarded.rec), 0);
		ck_assert_uint_eq(guarded.rec.attrs_data_size, 612);
		for (size_t i = 0; i < sizeof(guarded.after); i++)
			ck_assert_uint_eq(guarded.after[i], 0xee);
	}
	ck_assert_int_eq(munmap(map, (size_t)page * 2), 0);
}
END_TEST

Suite *test_suite(void)
{
	const struct test_case cases[] = {
		{ "read", read_copies_what_the_thread_publishes },
		{ "decode", decode_checks_and_clamps },
		{ "decode-every-size", decode_copies_every_size_exactly },
		{ "last-duplicate-wins", last_duplicate_wins },
		{ "truncated-entry", truncated_entry_stops_decoding },
		{ "null", iterators_refuse_null },
		{ "unmapped-keys", indices_outside_the_key_map_are_ignored },
		{ "bounds", bounds_are_exact_at_the_end_of_the_record },
	};

	return MAKE_SUITE("reader", cases, 0);
}
