/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The signal-storm workload, shared by the suite test-signal-storm.c and by
 * the plain programs that storm (the loading paths, the inspector's
 * target): the self-describing record of a sequence number, its writer
 * through the API, the reader's check.  The storm itself is in storm-run.h.
 *
 * Record n is built byte by byte here, independently of the library, so a
 * reader that copies whatever otel_thread_ctx_v1 points to can tell a
 * complete record of one sequence number from anything else.
 *
 * The API calls go through STORM_CALL(name), which is the function itself
 * unless the includer defines it (a program that dlopen()s the library calls
 * through pointers).
 */
#ifndef OTEL_TESTS_STORM_H
#define OTEL_TESTS_STORM_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "otel_thread_ctx.h"

#ifndef STORM_CALL
#define STORM_CALL(name) name
#endif
#define STORM_KEY_SEQ 1
#define STORM_KEY_PAD 2
#define STORM_KEY_EXTRA 9

static inline uint64_t storm_span_of(uint64_t n)
{
	return (n * 0x9e3779b97f4a7c15u) | 1;
}

/* n in decimal, in seq (no NUL); returns the length.  Async-signal-safe,
 * unlike snprintf(). */
static inline int storm_decimal(uint64_t n, char seq[24])
{
	char rev[24];
	int len = 0;

	do
		rev[len++] = (char)('0' + n % 10);
	while ((n /= 10) != 0);
	for (int i = 0; i < len; i++)
		seq[i] = rev[len - 1 - i];
	return len;
}

/* The record for sequence number n: trace id n and ~n, a span id derived
 * from n, flags n & 1, then attributes "n" (decimal), a pad of n % 97
 * letters, and "third" when 3 divides n. */
static inline void storm_expected(uint64_t n, struct otel_thread_ctx_record *r)
{
	uint64_t inv = ~n, span = storm_span_of(n);
	char seq[24];
	int len = storm_decimal(n, seq);
	size_t at = 0, pad = n % 97;

	memset(r, 0, sizeof(*r));
	memcpy(r->trace_id, &n, 8);
	memcpy(r->trace_id + 8, &inv, 8);
	memcpy(r->span_id, &span, 8);
	r->valid = 1;
	r->trace_flags = n & 1;
	r->attrs_data[at++] = STORM_KEY_SEQ;
	r->attrs_data[at++] = (uint8_t)len;
	memcpy(r->attrs_data + at, seq, (size_t)len);
	at += (size_t)len;
	r->attrs_data[at++] = STORM_KEY_PAD;
	r->attrs_data[at++] = (uint8_t)pad;
	for (size_t i = 0; i < pad; i++)
		r->attrs_data[at++] = (uint8_t)('a' + (n + i) % 26);
	if (n % 3 == 0) {
		r->attrs_data[at++] = STORM_KEY_EXTRA;
		r->attrs_data[at++] = 5;
		memcpy(r->attrs_data + at, "third", 5);
		at += 5;
	}
	r->attrs_data_size = (uint16_t)at;
}

/* The same record, through the setters, into ctx (whatever it held
 * before): what a thread that attaches ctx then publishes.  Returns the
 * first error. */
static inline int storm_write_draft(otel_thread_ctx *ctx, uint64_t n)
{
	struct otel_thread_ctx_record r;
	int rc;

	storm_expected(n, &r);
	rc = STORM_CALL(otel_thread_ctx_set_ids)(ctx, r.trace_id, r.span_id, r.trace_flags);
	if (rc == 0)
		rc = STORM_CALL(otel_thread_ctx_set_attr)(ctx, STORM_KEY_SEQ, r.attrs_data + 2,
							   r.attrs_data[1]);
	if (rc == 0) {
		size_t at = 2u + r.attrs_data[1];

		rc = STORM_CALL(otel_thread_ctx_set_attr)(ctx, STORM_KEY_PAD, r.attrs_data + at + 2,
							   r.attrs_data[at + 1]);
	}
	if (rc == 0)
		rc = n % 3 == 0 ? STORM_CALL(otel_thread_ctx_set_attr)(ctx, STORM_KEY_EXTRA,
								       "third", 5)
				: STORM_CALL(otel_thread_ctx_remove_attr)(ctx, STORM_KEY_EXTRA);
	return rc;
}

enum storm_read {
	STORM_READ_NULL,    /* no record published */
	STORM_READ_INVALID, /* a record with valid != 1 */
	STORM_READ_OK,      /* the complete record of one sequence number */
	STORM_READ_TORN,    /* anything else */
};

/*
 * What a reader makes of `r`, the value it loaded from otel_thread_ctx_v1:
 * it copies the header, checks valid, copies the attributes the header
 * announces (never more than the record holds), and compares everything
 * with the record of the sequence number in the trace id, stored in *seq.
 * Async-signal-safe.
 */
static inline enum storm_read storm_classify(const struct otel_thread_ctx_record *r,
					     uint64_t *seq)
{
	struct otel_thread_ctx_record copy, want;
	uint64_t n;

	if (r == NULL)
		return STORM_READ_NULL;
	memcpy(&copy, r, offsetof(struct otel_thread_ctx_record, attrs_data));
	if (copy.valid != 1)
		return STORM_READ_INVALID;
	if (copy.attrs_data_size > OTEL_THREAD_CTX_ATTRS_MAX)
		return STORM_READ_TORN;
	memcpy(copy.attrs_data, r->attrs_data, copy.attrs_data_size);
	memcpy(&n, copy.trace_id, 8);
	*seq = n;
	storm_expected(n, &want);
	if (memcmp(&copy, &want, offsetof(struct otel_thread_ctx_record, attrs_data)) != 0 ||
	    memcmp(copy.attrs_data, want.attrs_data, want.attrs_data_size) != 0)
		return STORM_READ_TORN;
	return STORM_READ_OK;
}

#endif /* OTEL_TESTS_STORM_H */
