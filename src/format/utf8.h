/* SPDX-License-Identifier: Apache-2.0 */
/* Internal to the library: UTF-8 validation, for attribute values, key names
 * and protobuf strings.  Inline: set_attr runs it on its hot path. */
#ifndef OTEL_UTF8_H
#define OTEL_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF
 * (what the thread-context format and a proto3 string require).  Out of
 * line: the inline check below handles the common, ASCII case. */
__attribute__((noinline, unused)) static bool otel__utf8_valid_slow(const void *str, size_t n)
{
	const uint8_t *s = str;
	size_t i = 0;

	while (i < n) {
		uint8_t c;
		uint32_t cp, min;
		size_t more;

		/* Eight ASCII bytes at a time, the common case. */
		if (n - i >= 8) {
			uint64_t w;

			memcpy(&w, s + i, sizeof(w));
			if ((w & UINT64_C(0x8080808080808080)) == 0) {
				i += 8;
				continue;
			}
		}
		c = s[i];
		if (c < 0x80) {
			i++;
			continue;
		}
		if ((c & 0xe0) == 0xc0) {
			more = 1, cp = c & 0x1f, min = 0x80;
		} else if ((c & 0xf0) == 0xe0) {
			more = 2, cp = c & 0x0f, min = 0x800;
		} else if ((c & 0xf8) == 0xf0) {
			more = 3, cp = c & 0x07, min = 0x10000;
		} else {
			return false;
		}
		if (n - i - 1 < more)
			return false;
		for (size_t k = 1; k <= more; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += 1 + more;
	}
	return true;
}

/*
 * The same answer.  Values are mostly ASCII: the bytes are ORed a word at a
 * time (the last word may overlap the one before it; nothing outside
 * [0, n) is read) and only a value with a byte above 0x7f is decoded.
 */
static inline bool otel__utf8_valid(const void *str, size_t n)
{
	const uint8_t *s = str;
	uint64_t acc = 0, w;

	if (n >= 8) {
		memcpy(&acc, s + n - 8, sizeof(acc));
		for (size_t i = 0; i + 8 < n; i += 8) {
			memcpy(&w, s + i, sizeof(w));
			acc |= w;
		}
	} else if (n >= 4) {
		uint32_t a, b;

		memcpy(&a, s, sizeof(a));
		memcpy(&b, s + n - 4, sizeof(b));
		acc = a | b;
	} else {
		for (size_t i = 0; i < n; i++)
			acc |= s[i];
	}
	return (acc & UINT64_C(0x8080808080808080)) == 0 || otel__utf8_valid_slow(s, n);
}

/*
 * Copies n bytes from src to dst (not overlapping), and returns them ORed
 * into one word: its high bits (0x80 of each byte) are clear exactly when
 * every byte is ASCII.  One pass: each word is stored as it is ORed.
 */
static inline uint64_t otel__copy_or(uint8_t *dst, const void *src, size_t n)
{
	const uint8_t *s = src;
	uint64_t acc = 0, w;

	if (n >= 8 && n <= 16) {
		/* The common size of a value, in two words that may overlap:
		 * no loop. */
		uint64_t v;

		memcpy(&w, s, sizeof(w));
		memcpy(&v, s + n - 8, sizeof(v));
		memcpy(dst, &w, sizeof(w));
		memcpy(dst + n - 8, &v, sizeof(v));
		acc = w | v;
	} else if (n >= 8) {
		for (size_t i = 0; i + 8 < n; i += 8) {
			memcpy(&w, s + i, sizeof(w));
			memcpy(dst + i, &w, sizeof(w));
			acc |= w;
		}
		memcpy(&w, s + n - 8, sizeof(w));
		memcpy(dst + n - 8, &w, sizeof(w));
		acc |= w;
	} else if (n >= 4) {
		uint32_t a, b;

		memcpy(&a, s, sizeof(a));
		memcpy(&b, s + n - 4, sizeof(b));
		memcpy(dst, &a, sizeof(a));
		memcpy(dst + n - 4, &b, sizeof(b));
		acc = a | b;
	} else {
		for (size_t i = 0; i < n; i++) {
			dst[i] = s[i];
			acc |= s[i];
		}
	}
	return acc;
}

#define OTEL__NOT_ASCII UINT64_C(0x8080808080808080)

/* otel__copy_or(), then the answer of otel__utf8_valid() for the bytes
 * (dst holds the copy either way). */
static inline bool otel__utf8_copy(uint8_t *dst, const void *src, size_t n)
{
	return (otel__copy_or(dst, src, n) & OTEL__NOT_ASCII) == 0 || otel__utf8_valid_slow(src, n);
}

#endif /* OTEL_UTF8_H */
