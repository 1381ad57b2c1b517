/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: any bytes as a record read from another process.  The
 * decoder and the attribute walk must never read past what they were given
 * (ASan, which -fsanitize=fuzzer brings, sees it) and must hold the format's
 * rules: a decoded size within the bytes and the 612; every attribute inside
 * it; each key once, with the value of its last complete entry.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "otel_thread_ctx.h"

#define HEADER 28u

static void require(int cond)
{
	if (!cond)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct otel_thread_ctx_record rec;
	struct otel_thread_ctx_attr_iter it;
	struct otel_thread_ctx_attr a, b;
	/* The input in a buffer of its own size, so that a read past it is
	 * a heap overflow ASan reports. */
	uint8_t *copy = malloc(size ? size : 1);
	unsigned seen[256] = { 0 };
	int rc;

	require(copy != NULL);
	memcpy(copy, data, size);
	memset(&rec, 0xee, sizeof(rec));
	rc = otel_thread_ctx_record_decode(copy, size, &rec);
	if (size < HEADER) {
		require(rc == OTEL_THREAD_CTX_ETRUNCATED);
	} else if (copy[24] != 1) {
		require(rc == OTEL_THREAD_CTX_EINVALID);
	} else {
		uint16_t claimed;

		memcpy(&claimed, copy + 26, sizeof(claimed)); /* native endianness */
		require(rc == OTEL_THREAD_CTX_OK);
		require(rec.attrs_data_size <= OTEL_THREAD_CTX_ATTRS_MAX);
		require(rec.attrs_data_size <= size - HEADER);
		require(rec.attrs_data_size <= claimed);
		require(memcmp(&rec, copy, 24) == 0);
		require(memcmp(rec.attrs_data, copy + HEADER, rec.attrs_data_size) == 0);
		otel_thread_ctx_attr_iter_init(&it, &rec);
		while (otel_thread_ctx_attr_iter_next(&it, &a)) {
			require(a.key <= 255 && a.len <= 255);
			require(a.value >= rec.attrs_data &&
				a.value + a.len <= rec.attrs_data + rec.attrs_data_size);
			require(seen[a.key]++ == 0);
			/* The lookup agrees with the walk: the last entry. */
			require(otel_thread_ctx_record_attr(&rec, a.key, &b));
			require(b.value == a.value && b.len == a.len);
		}
	}
	free(copy);
	return 0;
}
