/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the eBPF tests' target (target.c) publishes, so that the checkers
 * (storm-check.c, cli.py) know what each sample must hold.
 *
 * Storm records.  Writer thread `index` publishes sequence numbers
 * base(index) + 1, + 2, ...; record n is derived from n alone: trace id n
 * and ~n, a span id derived from n, flags n & 1, and (unless 7 divides n)
 * attributes whose count and lengths vary with n, from 0 to 575 bytes of
 * attribute data, so that every sample can be checked against the record
 * of the sequence number it carries, and against the thread it was taken
 * on (the index is in the high bits).
 *
 * Value records (CLI tests): thread i publishes a fixed record (values_for)
 * with attribute keys named in the process context (VALUES_KEYS).
 */
#ifndef OTEL_TESTS_BPF_RECORDS_H
#define OTEL_TESTS_BPF_RECORDS_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "otel_thread_ctx.h"

#define STORM_INDEX_SHIFT 40
#define STORM_SPAN_FACTOR UINT64_C(0x9e3779b97f4a7c15)

static inline uint64_t storm_base(unsigned int index)
{
	return (uint64_t)(index + 1) << STORM_INDEX_SHIFT;
}

/* The writer index a sequence number belongs to, or -1. */
static inline int storm_index_of(uint64_t n)
{
	uint64_t hi = n >> STORM_INDEX_SHIFT;

	return hi >= 1 && hi <= 1024 ? (int)(hi - 1) : -1;
}

/* The attributes of record n, as (key, length, first letter) triples. */
struct storm_attr_spec {
	unsigned int key;
	size_t len;
	char first;
};

static inline size_t storm_attr_specs(uint64_t n, struct storm_attr_spec out[3])
{
	if (n % 7 == 0)
		return 0;
	out[0] = (struct storm_attr_spec){ 2, (size_t)(n % 256), 'a' };
	out[1] = (struct storm_attr_spec){ 3, (size_t)((n / 7) % 200), 'A' };
	out[2] = (struct storm_attr_spec){ 4, (size_t)((n / 3) % 100), '0' };
	return 3;
}

/* The value bytes of one attribute of record n. */
static inline void storm_attr_value(uint64_t n, const struct storm_attr_spec *s, uint8_t *v)
{
	unsigned int range = s->first == '0' ? 10 : 26, c = (unsigned int)(n % range);

	/* Letter (n + i) % range, without a division per byte: the checker
	 * builds a record per sample. */
	for (size_t i = 0; i < s->len; i++) {
		v[i] = (uint8_t)(s->first + c);
		if (++c == range)
			c = 0;
	}
}

/* Record n, byte by byte. */
static inline void storm_record(uint64_t n, struct otel_thread_ctx_record *r)
{
	uint64_t inv = ~n, span = (n * STORM_SPAN_FACTOR) | 1;
	struct storm_attr_spec specs[3];
	size_t k = storm_attr_specs(n, specs), at = 0;
	char seq[24];
	int len;

	memset(r, 0, sizeof(*r));
	memcpy(r->trace_id, &n, 8);
	memcpy(r->trace_id + 8, &inv, 8);
	memcpy(r->span_id, &span, 8);
	r->valid = 1;
	r->trace_flags = (uint8_t)(n & 1);
	if (k > 0) {
		len = snprintf(seq, sizeof(seq), "%llu", (unsigned long long)n);
		r->attrs_data[at++] = 1;
		r->attrs_data[at++] = (uint8_t)len;
		memcpy(r->attrs_data + at, seq, (size_t)len);
		at += (size_t)len;
	}
	for (size_t i = 0; i < k; i++) {
		r->attrs_data[at++] = (uint8_t)specs[i].key;
		r->attrs_data[at++] = (uint8_t)specs[i].len;
		storm_attr_value(n, &specs[i], r->attrs_data + at);
		at += specs[i].len;
	}
	r->attrs_data_size = (uint16_t)at;
}

/* The sequence number `r` carries, and whether `r` (a copy of a header and
 * attrs_data_size bytes of attributes) is exactly record n. */
static inline int storm_matches(const struct otel_thread_ctx_record *r, uint64_t *seq)
{
	struct otel_thread_ctx_record want;
	uint64_t n;

	memcpy(&n, r->trace_id, 8);
	*seq = n;
	storm_record(n, &want);
	return memcmp(r, &want, offsetof(struct otel_thread_ctx_record, attrs_data)) == 0 &&
	       memcmp(r->attrs_data, want.attrs_data, want.attrs_data_size) == 0;
}

/*
 * Foreign records.  The storm's foreign writer (target.c) writes the slot
 * itself, as a writer with bugs would, never through the library: its
 * sequence number n selects, by n % 8, record n as above or record n
 * broken one way.  Each kind is what a reader must tell apart:
 */
enum foreign_kind {
	FOREIGN_WHOLE,      /* record n: read whole */
	FOREIGN_INVALID,    /* valid 0, 2 or 255: INVALID, its header read */
	FOREIGN_NO_SPAN,    /* span id all zero: read, one of the ids set */
	FOREIGN_NO_TRACE,   /* trace id all zero (n is odd: the span id is
			     * n times the constant, see foreign_seq): read,
			     * one of the ids set */
	FOREIGN_TRUNCATED,  /* attrs_data_size cuts the last entry: read, a
			     * truncated entry */
	FOREIGN_OVERSIZED,  /* attrs_data_size 613, 1613 or 2613: read with
			     * 612 bytes of attributes, an oversized record */
	FOREIGN_MISALIGNED, /* the pointer one byte past the record */
	FOREIGN_UNMAPPED,   /* the pointer to an inaccessible page */
	FOREIGN_KINDS
};

static inline unsigned int foreign_kind(uint64_t n)
{
	return (unsigned int)(n % FOREIGN_KINDS);
}

/* Foreign record n (the pointer kinds are record n itself). */
static inline void foreign_record(uint64_t n, struct otel_thread_ctx_record *r)
{
	static const uint8_t invalid[3] = { 0, 2, 255 };

	storm_record(n, r);
	switch (foreign_kind(n)) {
	case FOREIGN_INVALID:
		r->valid = invalid[(n / FOREIGN_KINDS) % 3];
		break;
	case FOREIGN_NO_SPAN:
		memset(r->span_id, 0, sizeof(r->span_id));
		break;
	case FOREIGN_NO_TRACE:
		memset(r->trace_id, 0, sizeof(r->trace_id));
		break;
	case FOREIGN_TRUNCATED:
		if (r->attrs_data_size > 0) {
			r->attrs_data_size--;
		} else {
			r->attrs_data[0] = 1; /* a key, and no length */
			r->attrs_data_size = 1;
		}
		break;
	case FOREIGN_OVERSIZED:
		r->attrs_data_size = (uint16_t)(OTEL_THREAD_CTX_ATTRS_MAX + 1 +
						1000 * ((n / FOREIGN_KINDS) % 3));
		break;
	}
}

/* The sequence number of a foreign record read (its header at least):
 * from the trace id, or from the span id when the trace id is zero. */
static inline uint64_t foreign_seq(const struct otel_thread_ctx_record *r)
{
	static const uint8_t zero[16];
	uint64_t n, inv = STORM_SPAN_FACTOR;

	if (memcmp(r->trace_id, zero, 16) != 0) {
		memcpy(&n, r->trace_id, 8);
		return n;
	}
	/* The inverse of the odd factor modulo 2^64 (Newton: each step
	 * doubles the correct low bits, from 3 to more than 64). */
	for (int i = 0; i < 5; i++)
		inv *= 2 - STORM_SPAN_FACTOR * inv;
	memcpy(&n, r->span_id, 8);
	return n * inv;
}

/* Value records: keys, and thread i's record. */
#define VALUES_KEYS 3
static inline const char *values_key_name(unsigned int k)
{
	static const char *const names[VALUES_KEYS] = { "worker.name", "http.route", "tenant.name" };

	return k < VALUES_KEYS ? names[k] : NULL;
}

static inline void values_record(unsigned int i, struct otel_thread_ctx_record *r)
{
	static const char *const routes[] = { "GET /a", "POST /orders/{id}", "PUT /cart" };
	char name[32];
	size_t at = 0;
	int len = snprintf(name, sizeof(name), "worker-%u", i);

	memset(r, 0, sizeof(*r));
	for (int b = 0; b < 16; b++)
		r->trace_id[b] = (uint8_t)(0x10 * (i + 1) + (unsigned)b);
	for (int b = 0; b < 8; b++)
		r->span_id[b] = (uint8_t)(0xa0 + 8 * i + (unsigned)b);
	r->valid = 1;
	r->trace_flags = (uint8_t)(i % 2);
	r->attrs_data[at++] = 0;
	r->attrs_data[at++] = (uint8_t)len;
	memcpy(r->attrs_data + at, name, (size_t)len);
	at += (size_t)len;
	r->attrs_data[at++] = 1;
	r->attrs_data[at++] = (uint8_t)strlen(routes[i % 3]);
	memcpy(r->attrs_data + at, routes[i % 3], strlen(routes[i % 3]));
	at += strlen(routes[i % 3]);
	if (i == 1) {
		/* Near the longest value. */
		r->attrs_data[at++] = 2;
		r->attrs_data[at++] = 250;
		memset(r->attrs_data + at, 'x', 250);
		at += 250;
	}
	r->attrs_data_size = (uint16_t)at;
}

#endif /* OTEL_TESTS_BPF_RECORDS_H */
