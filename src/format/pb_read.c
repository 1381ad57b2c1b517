/* SPDX-License-Identifier: Apache-2.0 */
/* The protobuf wire format, decoder (protobuf.h), for the reading side.
 * Written from the encoding rules (varints of 7-bit groups, least
 * significant first; tag = field number << 3 | wire type; fixed fields
 * little-endian). */
#include <string.h>

#include "protobuf.h"

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
