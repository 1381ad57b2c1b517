/* SPDX-License-Identifier: Apache-2.0 */
/* The protobuf wire format, encoder (protobuf.h), for the publisher.
 * Written from the encoding
 * rules (varints of 7-bit groups, least significant first; tag = field
 * number << 3 | wire type; fixed fields little-endian). */
#include <string.h>

#include "protobuf.h"

size_t otel__pb_varint_size(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

size_t otel__pb_tag_size(uint32_t field)
{
	return otel__pb_varint_size((uint64_t)field << 3);
}

size_t otel__pb_len_field_size(uint32_t field, size_t n)
{
	return otel__pb_tag_size(field) + otel__pb_varint_size(n) + n;
}

void otel__pb_put_raw(struct otel__pb_writer *w, const void *data, size_t n)
{
	if (w->buf != NULL) {
		if (n > w->cap - w->len) {
			w->overflow = true;
			return;
		}
		if (n != 0)
			memcpy(w->buf + w->len, data, n);
	}
	w->len += n;
}

void otel__pb_put_varint(struct otel__pb_writer *w, uint64_t v)
{
	uint8_t tmp[10];
	size_t n = 0;

	while (v >= 0x80) {
		tmp[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	tmp[n++] = (uint8_t)v;
	otel__pb_put_raw(w, tmp, n);
}

void otel__pb_put_tag(struct otel__pb_writer *w, uint32_t field, unsigned int wire)
{
	otel__pb_put_varint(w, (uint64_t)field << 3 | wire);
}

void otel__pb_put_varint_field(struct otel__pb_writer *w, uint32_t field, uint64_t v)
{
	otel__pb_put_tag(w, field, OTEL__PB_VARINT);
	otel__pb_put_varint(w, v);
}

void otel__pb_put_i64_field(struct otel__pb_writer *w, uint32_t field, uint64_t v)
{
	uint8_t le[8];

	for (int i = 0; i < 8; i++)
		le[i] = (uint8_t)(v >> (8 * i));
	otel__pb_put_tag(w, field, OTEL__PB_I64);
	otel__pb_put_raw(w, le, sizeof(le));
}

void otel__pb_put_len_header(struct otel__pb_writer *w, uint32_t field, size_t n)
{
	otel__pb_put_tag(w, field, OTEL__PB_LEN);
	otel__pb_put_varint(w, n);
}

void otel__pb_put_len_field(struct otel__pb_writer *w, uint32_t field, const void *data,
			    size_t n)
{
	otel__pb_put_len_header(w, field, n);
	otel__pb_put_raw(w, data, n);
}
