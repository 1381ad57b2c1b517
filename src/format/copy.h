/* SPDX-License-Identifier: Apache-2.0 */
/* Internal to the library: the copy of attribute bytes on the hot paths. */
#ifndef OTEL_COPY_H
#define OTEL_COPY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
 * memcpy of attribute bytes, inline.  A tracer commits and a sampler reads
 * records all the time, and for the few dozen bytes of attributes a record
 * usually holds, the call into the C library costs as much as the copy.
 * Whole 16-byte blocks, then one block that ends at n and may overlap the
 * one before it (smaller sizes the same way with 8, 4 and 1 bytes): no byte
 * outside [0, n) is read or written.  The buffers must not overlap.
 */
static inline void otel__copy_bytes(uint8_t *dst, const uint8_t *src, size_t n)
{
	if (n >= 16) {
		for (size_t i = 0; i + 16 < n; i += 16)
			memcpy(dst + i, src + i, 16);
		memcpy(dst + n - 16, src + n - 16, 16);
	} else if (n >= 8) {
		memcpy(dst, src, 8);
		memcpy(dst + n - 8, src + n - 8, 8);
	} else if (n >= 4) {
		memcpy(dst, src, 4);
		memcpy(dst + n - 4, src + n - 4, 4);
	} else {
		for (size_t i = 0; i < n; i++)
			dst[i] = src[i];
	}
}

#endif /* OTEL_COPY_H */
