/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The protobuf wire format, as far as the process context needs it: an
 * encoder that writes fields into a caller's buffer (or only measures them),
 * and a decoder that walks the fields of a message without trusting a byte.
 * Schema-free: process_ctx.c (the publisher, with pb_write.c) and
 * process_decode.c (the decoder, with pb_read.c) know the messages.
 * Internal to the format layer.
 */
#ifndef OTEL_PROTOBUF_H
#define OTEL_PROTOBUF_H

#include "utf8.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Wire types (the low three bits of a tag). */
enum {
	OTEL__PB_VARINT = 0,
	OTEL__PB_I64 = 1,
	OTEL__PB_LEN = 2,
	OTEL__PB_SGROUP = 3, /* groups: deprecated, rejected by the decoder */
	OTEL__PB_EGROUP = 4,
	OTEL__PB_I32 = 5,
};

/* Highest field number the format allows (2^29 - 1). */
#define OTEL__PB_FIELD_MAX 536870911u

/*
 * Encoder.  With buf == NULL it only counts, so one function serves to size
 * a message and then to write it.  Writing past `cap` is never done: the
 * writer records the overflow instead (callers size first, so an overflow
 * is a bug they can check for).
 */
struct otel__pb_writer {
	uint8_t *buf;
	size_t cap;
	size_t len;
	bool overflow;
};

static inline struct otel__pb_writer otel__pb_measure(void)
{
	struct otel__pb_writer w = { NULL, 0, 0, false };

	return w;
}

static inline struct otel__pb_writer otel__pb_into(uint8_t *buf, size_t cap)
{
	struct otel__pb_writer w = { buf, cap, 0, false };

	return w;
}

/* Bytes of a varint / of a tag / of a whole length-delimited field. */
size_t otel__pb_varint_size(uint64_t v);
size_t otel__pb_tag_size(uint32_t field);
size_t otel__pb_len_field_size(uint32_t field, size_t n);

void otel__pb_put_raw(struct otel__pb_writer *w, const void *data, size_t n);
void otel__pb_put_varint(struct otel__pb_writer *w, uint64_t v);
void otel__pb_put_tag(struct otel__pb_writer *w, uint32_t field, unsigned int wire);
/* A varint field: tag, value (int64 goes as its two's complement). */
void otel__pb_put_varint_field(struct otel__pb_writer *w, uint32_t field, uint64_t v);
/* A 64-bit fixed field (double: its IEEE-754 bits), little-endian. */
void otel__pb_put_i64_field(struct otel__pb_writer *w, uint32_t field, uint64_t v);
/* The start of a length-delimited field: tag and length; the caller writes
 * exactly n bytes next. */
void otel__pb_put_len_header(struct otel__pb_writer *w, uint32_t field, size_t n);
/* A whole length-delimited field (string, bytes, an encoded message). */
void otel__pb_put_len_field(struct otel__pb_writer *w, uint32_t field, const void *data,
			    size_t n);

/*
 * Decoder.  otel__pb_next() reads one field of the message between p and
 * end and returns 1 with *f filled in, 0 at the end of the message, or -1 on
 * malformed input: a truncated or over-long varint (more than 10 bytes, or a
 * 10th byte above 1), a tag above 32 bits, field number 0, a group or an
 * undefined wire type, a fixed field or a length running past the end.  On
 * -1 the reader stays where it failed.  Never reads outside [p, end).
 */
struct otel__pb_reader {
	const uint8_t *p;
	const uint8_t *end;
};

struct otel__pb_field {
	uint32_t number;
	unsigned int wire;
	uint64_t value;      /* VARINT, I64, I32 */
	const uint8_t *data; /* LEN: the bytes, inside the message */
	size_t len;          /* LEN */
};

static inline struct otel__pb_reader otel__pb_read_from(const void *data, size_t n)
{
	struct otel__pb_reader r;

	r.p = (const uint8_t *)data;
	r.end = r.p + n;
	return r;
}

int otel__pb_next(struct otel__pb_reader *r, struct otel__pb_field *f);


#endif /* OTEL_PROTOBUF_H */
