/* SPDX-License-Identifier: Apache-2.0 */
/* What the inspector test target (target.c) publishes, so that the runner
 * (inspect.c) knows exactly what it must read. */
#ifndef OTEL_TESTS_INSPECT_EXPECTED_H
#define OTEL_TESTS_INSPECT_EXPECTED_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "otel_thread_ctx.h"

#define EXPECTED_MAX_THREADS 16
#define EXPECTED_MAX_ATTRS 3
/* Threads of the values and manual modes; the last publishes nothing. */
#define EXPECTED_THREADS 5
#define EXPECTED_IDLE (EXPECTED_THREADS - 1)
/* The process context's key map. */
#define EXPECTED_KEYS 4

/* How long the vfork() child of the target's mode vfork sleeps: longer
 * than OTEL_THREAD_CTX_INSPECT_STOP_TIMEOUT_MS by a margin. */
#define VFORK_CHILD_NS 2000000000L

static inline const char *expected_key_name(unsigned int k)
{
	static const char *const names[EXPECTED_KEYS] = {
		"worker.index", "http.route", "unused", "tenant.name",
	};
	return k < EXPECTED_KEYS ? names[k] : NULL;
}

struct expected_attr {
	unsigned int key;
	const char *value;
};

struct expected_thread {
	uint8_t trace_id[16];
	uint8_t span_id[8];
	uint8_t flags;
	unsigned int nattrs;
	struct expected_attr attrs[EXPECTED_MAX_ATTRS];
};

static inline void expected_name(int i, char name[16])
{
	snprintf(name, 16, "%s-%u", i == EXPECTED_IDLE ? "idle" : "values", (unsigned)i % 100u);
}

/* Thread i's record: distinct ids, flags 0 or 1, a few attributes, one
 * of them near the longest value. */
static inline void expected_for(int i, struct expected_thread *e)
{
	static const char *const indexes[] = { "0", "1", "2", "3", "4", "5", "6", "7" };
	static const char *const routes[] = { "GET /a", "POST /orders/{id}", "", "PUT /cart" };
#define EXPECTED_X10 "xxxxxxxxxx"
#define EXPECTED_X50 EXPECTED_X10 EXPECTED_X10 EXPECTED_X10 EXPECTED_X10 EXPECTED_X10
	/* 250 bytes; constant, as threads of the target share it. */
	static const char tenant[] = EXPECTED_X50 EXPECTED_X50 EXPECTED_X50 EXPECTED_X50
		EXPECTED_X50;

	for (int b = 0; b < 16; b++)
		e->trace_id[b] = (uint8_t)(0x10 * (i + 1) + b);
	for (int b = 0; b < 8; b++)
		e->span_id[b] = (uint8_t)(0xa0 + 8 * i + b);
	e->flags = (uint8_t)(i % 2);
	e->nattrs = 0;
	e->attrs[e->nattrs++] = (struct expected_attr){ 0, indexes[i % 8] };
	e->attrs[e->nattrs++] = (struct expected_attr){ 1, routes[i % 4] };
	if (i == 1)
		e->attrs[e->nattrs++] = (struct expected_attr){ 3, tenant };
}

/* The same, as the record a writer builds by hand. */
static inline void expected_record(int i, struct otel_thread_ctx_record *r)
{
	struct expected_thread e;
	size_t at = 0;

	expected_for(i, &e);
	memset(r, 0, sizeof(*r));
	memcpy(r->trace_id, e.trace_id, 16);
	memcpy(r->span_id, e.span_id, 8);
	r->trace_flags = e.flags;
	for (unsigned k = 0; k < e.nattrs; k++) {
		size_t len = strlen(e.attrs[k].value);

		r->attrs_data[at] = (uint8_t)e.attrs[k].key;
		r->attrs_data[at + 1] = (uint8_t)len;
		memcpy(r->attrs_data + at + 2, e.attrs[k].value, len);
		at += 2 + len;
	}
	r->attrs_data_size = (uint16_t)at;
	r->valid = 1;
}

/* The storm: record n has trace id n:n, span id n (little-endian bytes)
 * and attribute STORM_KEY = n in decimal: fields that must agree. */
#define STORM_KEY 1u

static inline void storm_fill(uint64_t n, uint8_t trace[16], uint8_t span[8], char value[24])
{
	for (int b = 0; b < 8; b++) {
		trace[b] = trace[8 + b] = (uint8_t)(n >> (8 * b));
		span[b] = (uint8_t)(n >> (8 * b));
	}
	snprintf(value, 24, "%" PRIu64, n);
}

/* Broken records, one thread each. */
enum {
	HOSTILE_OVERSIZED,  /* attrs_data_size 2000: read as 612 */
	HOSTILE_TRUNCATED,  /* the second entry runs past attrs_data_size */
	HOSTILE_DUPLICATE,  /* key 1 twice: the last wins */
	HOSTILE_INVALID,    /* valid = 7 */
	HOSTILE_UNMAPPED,   /* the slot points to memory that cannot be read */
	HOSTILE_MISALIGNED, /* the slot points to an odd address */
	HOSTILE_HALF_IDS,   /* a trace id without a span id */
	HOSTILE_COUNT
};

static inline const char *hostile_name(int kind)
{
	static const char *const names[HOSTILE_COUNT] = {
		"h-oversized", "h-truncated", "h-duplicate", "h-invalid",
		"h-unmapped", "h-misaligned", "h-half-ids",
	};
	return names[kind];
}

/* Fills the bytes of broken record `kind` (r has room for more than one
 * record: the oversized one claims more). */
static inline void hostile_record(int kind, struct otel_thread_ctx_record *r)
{
	memset(r, 0, sizeof(*r));
	memset(r->trace_id, 0x77, 16);
	memset(r->span_id, 0x55, 8);
	r->valid = 1;
	r->trace_flags = 1;
	switch (kind) {
	case HOSTILE_OVERSIZED:
		/* 612 bytes of entries [1][253]"yyy..." [2][...], then more
		 * claimed than a record holds. */
		r->attrs_data[0] = 1;
		r->attrs_data[1] = 253;
		memset(r->attrs_data + 2, 'y', 253);
		r->attrs_data[255] = 2;
		r->attrs_data[256] = 200;
		memset(r->attrs_data + 257, 'z', 200);
		r->attrs_data_size = 2000;
		break;
	case HOSTILE_TRUNCATED:
		memcpy(r->attrs_data, "\x01\x03" "abc" "\x02\x0a" "xy", 9);
		r->attrs_data_size = 9;
		break;
	case HOSTILE_DUPLICATE:
		memcpy(r->attrs_data, "\x01\x05" "first" "\x00\x01" "k" "\x01\x04" "last", 16);
		r->attrs_data_size = 16;
		break;
	case HOSTILE_INVALID:
		r->valid = 7;
		break;
	case HOSTILE_HALF_IDS:
		memset(r->span_id, 0, 8);
		break;
	default:
		break;
	}
}

#endif /* OTEL_TESTS_INSPECT_EXPECTED_H */
