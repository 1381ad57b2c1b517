/* SPDX-License-Identifier: Apache-2.0 */
/* The copy of a record by the format's rules, inline: the writer's
 * in-process reader runs it in signal handlers, on its hot path. */
#ifndef OTEL_FORMAT_RECORD_H
#define OTEL_FORMAT_RECORD_H

#include <string.h>

#include "copy.h"
#include "otel_thread_ctx.h"

/* Copies a header and what attrs_data_size says follows it, no more than
 * `avail` bytes of attributes and never more than the record holds.  `src`
 * is taken as bytes: a record to decode may lie at any address, and a
 * struct pointer to it would claim the struct's alignment. */
__attribute__((always_inline)) static inline int
otel__record_copy(const uint8_t *src, size_t avail, struct otel_thread_ctx_record *out)
{
	size_t size;

	memcpy(out, src, OTEL_THREAD_CTX_RECORD_HEADER_SIZE);
	if (out->valid != 1)
		return OTEL_THREAD_CTX_EINVALID;
	size = out->attrs_data_size;
	if (size > avail)
		size = avail;
	if (size > OTEL_THREAD_CTX_ATTRS_MAX)
		size = OTEL_THREAD_CTX_ATTRS_MAX;
	if (size != 0)
		otel__copy_bytes(out->attrs_data, src + OTEL_THREAD_CTX_RECORD_HEADER_SIZE, size);
	out->attrs_data_size = (uint16_t)size;
	return OTEL_THREAD_CTX_OK;
}

#endif /* OTEL_FORMAT_RECORD_H */
