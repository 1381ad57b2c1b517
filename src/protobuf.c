/* SPDX-License-Identifier: Apache-2.0 */
/* The protobuf wire format: see protobuf.h.  Written from the encoding
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

/* A varint at r->p; false when truncated or longer than 64 bits. */
static bool get_varint(struct otel__pb_reader *r, uint64_t *out)
{
	const uint8_t *p = r->p;
	uint64_t v = 0;

	for (unsigned int shift = 0; shift < 70; shift += 7) {
		uint8_t b;

		if (p == r->end)
			return false;
		b = *p++;
		/* The 10th byte holds bit 63 only. */
		if (shift == 63 && b > 1)
			return false;
		v |= (uint64_t)(b & 0x7f) << shift;
		if ((b & 0x80) == 0) {
			r->p = p;
			*out = v;
			return true;
		}
	}
	return false;
}

static uint64_t get_le(const uint8_t *p, unsigned int n)
{
	uint64_t v = 0;

	for (unsigned int i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

int otel__pb_next(struct otel__pb_reader *r, struct otel__pb_field *f)
{
	struct otel__pb_reader at = *r;
	uint64_t tag, len;

	if (at.p == at.end)
		return 0;
	if (!get_varint(&at, &tag) || tag > UINT32_MAX || (tag >> 3) == 0)
		return -1;
	f->number = (uint32_t)(tag >> 3);
	f->wire = (unsigned int)(tag & 7);
	f->value = 0;
	f->data = NULL;
	f->len = 0;
	switch (f->wire) {
	case OTEL__PB_VARINT:
		if (!get_varint(&at, &f->value))
			return -1;
		break;
	case OTEL__PB_I64:
	case OTEL__PB_I32: {
		unsigned int n = f->wire == OTEL__PB_I64 ? 8 : 4;

		if ((size_t)(at.end - at.p) < n)
			return -1;
		f->value = get_le(at.p, n);
		at.p += n;
		break;
	}
	case OTEL__PB_LEN:
		if (!get_varint(&at, &len) || len > (uint64_t)(at.end - at.p))
			return -1;
		f->data = at.p;
		f->len = (size_t)len;
		at.p += len;
		break;
	default:
		/* Groups (3, 4) and the undefined types 6 and 7. */
		return -1;
	}
	*r = at;
	return 1;
}
