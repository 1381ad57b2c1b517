/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target for the record reader (src/reader.c): any bytes as a record
 * read from another process, decoded (otel_thread_ctx_record_decode()) and
 * its attributes walked (the iterator, with this process's key map and with
 * a smaller one) and looked up (otel_thread_ctx_record_attr()).
 *
 * Every result is compared with a model of the format's rules written here
 * apart from the library: the decoded size is attrs_data_size clamped to the
 * bytes given and to 612; nothing else of the output changes; entries are
 * read up to the first that does not fit; a key comes out once, with its
 * last entry, in the order of the last entries; an index outside the key
 * map is skipped and counted.  The input and the decoded record each sit in
 * a heap block of their exact size, so that a read past either is a heap
 * overflow AddressSanitizer (or valgrind) reports; the input is decoded a
 * second time from an odd address, as bytes read into a buffer at any
 * offset may be.
 *
 * Built two ways (tests/inspect/meson.build): with clang, as a libFuzzer
 * program that compiles the reader's sources itself with
 * -fsanitize=fuzzer,address,undefined; with any compiler, with
 * tests/elf/replay.c, as a program that runs the seed corpus
 * (corpus-record/) through the library the build made.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otel_thread_ctx.h"

#define HEADER 28u
#define SIZE_AT 26u
#define VALID_AT 24u
#define KEYS (OTEL_THREAD_CTX_KEY_MAX + 1)
#define FILL 0xee

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond, const char *what, int line)
{
	if (!cond) {
		fprintf(stderr, "fuzz-record.c:%d: %s does not hold\n", line, what);
		abort();
	}
}

#define require(cond) check(!!(cond), #cond, __LINE__)

/* An entry as the model reads it: key, length, offset of the value. */
struct entry {
	unsigned int key, len;
	size_t at;
};

/* The model: the entries of attrs[0, n), up to the first that does not fit
 * in n bytes.  At most 306 (612 / 2). */
static size_t model_entries(const uint8_t *attrs, size_t n, struct entry *e)
{
	size_t count = 0, at = 0;

	while (n - at >= 2 && n - at - 2 >= attrs[at + 1]) {
		e[count].key = attrs[at];
		e[count].len = attrs[at + 1];
		e[count].at = at + 2;
		at += 2u + e[count].len;
		count++;
	}
	return count;
}

/* Every key index named, so that the lookup and the walk with this
 * process's map see every entry. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	for (unsigned int k = 0; k < KEYS; k++) {
		char name[16];
		unsigned int index;

		snprintf(name, sizeof(name), "fuzz.key%u", k);
		require(otel_thread_ctx_key_register(name, &index) == OTEL_THREAD_CTX_OK);
		require(index == k);
	}
	return 0;
}

/* The walk with a key map of `keys` names against the model. */
static void check_walk(const struct otel_thread_ctx_record *rec, const struct entry *e,
		       size_t count, const int *last, unsigned int keys, int own_map)
{
	struct otel_thread_ctx_attr_iter it;
	struct otel_thread_ctx_attr a;
	unsigned int skipped = 0;
	size_t i = 0;

	if (own_map)
		otel_thread_ctx_attr_iter_init(&it, rec);
	else
		otel_thread_ctx_attr_iter_init_map(&it, rec, keys);
	while (otel_thread_ctx_attr_iter_next(&it, &a) == 0) {
		/* The next last entry of a key the map names. */
		while (i < count && (!last[i] || e[i].key >= keys)) {
			skipped += last[i];
			i++;
		}
		require(i < count);
		require(a.key == e[i].key && a.len == e[i].len);
		require(a.value == rec->attrs_data + e[i].at);
		i++;
	}
	for (; i < count; i++) {
		require(!last[i] || e[i].key >= keys);
		skipped += last[i];
	}
	require(it.unmapped == skipped);
	/* The end of a walk stays the end. */
	require(otel_thread_ctx_attr_iter_next(&it, &a) == OTEL_THREAD_CTX_ENOATTR);
}

/* Decodes the `size` bytes at `bytes` into a record of its own, checks it
 * against the model, and returns it (the caller frees it). */
static struct otel_thread_ctx_record *decode(const uint8_t *bytes, size_t size)
{
	struct otel_thread_ctx_record *rec = malloc(sizeof(*rec));
	uint8_t untouched[sizeof(*rec)];
	uint16_t claimed;
	size_t n;
	int rc;

	require(rec != NULL);
	memset(rec, FILL, sizeof(*rec));
	memset(untouched, FILL, sizeof(untouched));
	rc = otel_thread_ctx_record_decode(bytes, size, rec);
	if (size < HEADER) {
		require(rc == OTEL_THREAD_CTX_ETRUNCATED);
		require(memcmp(rec, untouched, sizeof(*rec)) == 0);
		return rec;
	}
	/* The header as given; attributes untouched. */
	if (bytes[VALID_AT] != 1) {
		require(rc == OTEL_THREAD_CTX_EINVALID);
		require(memcmp(rec, bytes, HEADER) == 0);
		require(memcmp(rec->attrs_data, untouched, sizeof(rec->attrs_data)) == 0);
		return rec;
	}
	memcpy(&claimed, bytes + SIZE_AT, sizeof(claimed)); /* native endianness */
	n = claimed;
	if (n > size - HEADER)
		n = size - HEADER;
	if (n > OTEL_THREAD_CTX_ATTRS_MAX)
		n = OTEL_THREAD_CTX_ATTRS_MAX;
	require(rc == OTEL_THREAD_CTX_OK);
	require(rec->attrs_data_size == n);
	require(memcmp(rec, bytes, SIZE_AT) == 0);
	require(memcmp(rec->attrs_data, bytes + HEADER, n) == 0);
	require(memcmp(rec->attrs_data + n, untouched, sizeof(rec->attrs_data) - n) == 0);
	return rec;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* Two copies, each ending where its heap block ends: one aligned as
	 * malloc() aligns, one at an odd address. */
	uint8_t *aligned = malloc(size ? size : 1), *odd_block = malloc(size + 1);
	struct otel_thread_ctx_record *rec, *again;
	struct entry e[OTEL_THREAD_CTX_ATTRS_MAX / 2];
	int last[OTEL_THREAD_CTX_ATTRS_MAX / 2] = { 0 }, seen[KEYS] = { 0 };
	struct otel_thread_ctx_attr a;
	size_t count;

	require(aligned != NULL && odd_block != NULL);
	memcpy(aligned, data, size);
	memcpy(odd_block + 1, data, size);
	rec = decode(aligned, size);
	again = decode(odd_block + 1, size);
	require(memcmp(rec, again, sizeof(*rec)) == 0);
	free(again);
	free(odd_block);
	if (size < HEADER || aligned[VALID_AT] != 1)
		goto out;

	count = model_entries(rec->attrs_data, rec->attrs_data_size, e);
	for (size_t i = count; i-- > 0;) {
		last[i] = !seen[e[i].key];
		seen[e[i].key] = 1;
	}
	/* This process's map names every index; the other map is as long as
	 * the first byte of the trace id says (0: no map, every entry is
	 * skipped). */
	require(otel_thread_ctx_key_count() == KEYS);
	check_walk(rec, e, count, last, KEYS, 1);
	check_walk(rec, e, count, last, aligned[0], 0);

	/* The lookup gives a key's last entry, and nothing for the others.
	 * Each lookup walks the record: the keys of the first and the last
	 * four entries are asked for, and one absent key. */
	for (size_t i = 0; i < count; i++) {
		if (!last[i] || (i >= 4 && i + 4 < count))
			continue;
		require(otel_thread_ctx_record_attr(rec, e[i].key, &a) == OTEL_THREAD_CTX_OK);
		require(a.key == e[i].key && a.len == e[i].len);
		require(a.value == rec->attrs_data + e[i].at);
	}
	for (unsigned int k = 0; k < KEYS; k++) {
		if (!seen[k]) {
			require(otel_thread_ctx_record_attr(rec, k, &a) == OTEL_THREAD_CTX_ENOATTR);
			break;
		}
	}
out:
	free(rec);
	free(aligned);
	return 0;
}
