/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the tasks of examples/mn-scheduler.c publish (its comment "What the
 * tasks publish"), rebuilt here byte by byte without the library or the
 * example's code, and the readers' check: a record is exactly the one of a
 * request task at one request, span and sampling state, or the one of a
 * batch job, or it is none of theirs (torn, mixed, foreign).
 *
 * Async-signal-safe: the in-process test calls mn_identify() in its signal
 * handler.
 */
#ifndef OTEL_TESTS_MN_RECORD_H
#define OTEL_TESTS_MN_RECORD_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "otel_thread_ctx.h"

/* The key indices of task.name, request.round and job.name. */
struct mn_keys {
	unsigned task, round, job;
};

enum mn_kind {
	MN_TASK = 1, /* a request task's own context */
	MN_JOB = 2,  /* a job's context, shared by its batch tasks */
};

struct mn_who {
	int kind;        /* enum mn_kind */
	unsigned number; /* task T, or job J */
	uint64_t round;  /* request R (tasks) */
	unsigned span;   /* S: 1 the root span, 2 and 3 the child spans (tasks) */
};

/* How the example lays out its tasks: T % 3 == 2 are batch tasks, of job
 * (T / 3) % 2. */
static inline int mn_is_batch(unsigned task)
{
	return task % 3 == 2;
}

static inline unsigned mn_job_of(unsigned task)
{
	return (task / 3) % 2;
}

/* The sampling decision of request R of task T. */
static inline uint8_t mn_decision(unsigned task, uint64_t round)
{
	return (task + round) % 4 != 0 ? 1 : 0;
}

static inline uint64_t mn_get_be(const uint8_t *p, unsigned bytes)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < bytes; i++)
		v = v << 8 | p[i];
	return v;
}

static inline void mn_put_be(uint8_t *p, uint64_t v, unsigned bytes)
{
	for (unsigned i = 0; i < bytes; i++)
		p[bytes - 1 - i] = (uint8_t)(v >> (8 * i));
}

/* "prefix" then v in decimal, without NUL; returns the length. */
static inline size_t mn_format(char *out, const char *prefix, uint64_t v)
{
	char digits[20];
	size_t n = 0, len = strlen(prefix);

	memcpy(out, prefix, len);
	do {
		digits[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	while (n > 0)
		out[len++] = digits[--n];
	return len;
}

/* Appends the attribute entry [key][len][value] at r's attrs_data_size. */
static inline void mn_add_attr(struct otel_thread_ctx_record *r, unsigned key, const char *value,
			       size_t len)
{
	uint8_t *at = r->attrs_data + r->attrs_data_size;

	at[0] = (uint8_t)key;
	at[1] = (uint8_t)len;
	memcpy(at + 2, value, len);
	r->attrs_data_size = (uint16_t)(r->attrs_data_size + 2 + len);
}

/* The record of task T, request R, span S, with these flags. */
static inline void mn_task_record(const struct mn_keys *k, unsigned task, uint64_t round,
				  unsigned span, uint8_t flags, struct otel_thread_ctx_record *r)
{
	char value[32];

	memset(r, 0, offsetof(struct otel_thread_ctx_record, attrs_data));
	memcpy(r->trace_id, "task", 4);
	mn_put_be(r->trace_id + 4, task, 4);
	mn_put_be(r->trace_id + 8, round, 8);
	mn_put_be(r->span_id, round & 0xffffffffu, 4);
	mn_put_be(r->span_id + 4, task, 2);
	mn_put_be(r->span_id + 6, span, 2);
	r->valid = 1;
	r->trace_flags = flags;
	mn_add_attr(r, k->task, value, mn_format(value, "task-", task));
	mn_add_attr(r, k->round, value, mn_format(value, "", round));
}

/* The record of job J. */
static inline void mn_job_record(const struct mn_keys *k, unsigned job,
				 struct otel_thread_ctx_record *r)
{
	char value[32];

	memset(r, 0, offsetof(struct otel_thread_ctx_record, attrs_data));
	memcpy(r->trace_id, "job ", 4);
	mn_put_be(r->trace_id + 4, job, 4);
	mn_put_be(r->span_id, (uint64_t)job + 1, 8);
	r->valid = 1;
	r->trace_flags = 1;
	mn_add_attr(r, k->job, value, mn_format(value, "job-", job));
}

/*
 * Whose record `r` is: returns 1 and fills *who when r is exactly the
 * record of one task (at one request, span and sampling state: before the
 * decision the root span has flags 0) or of one job, 0 for anything else.
 * Reads r's header, then as many attribute bytes as the expected record
 * has, and only if the header announces that many.
 */
static inline int mn_identify(const struct otel_thread_ctx_record *r, const struct mn_keys *k,
			      struct mn_who *who)
{
	struct otel_thread_ctx_record want;
	const size_t header = offsetof(struct otel_thread_ctx_record, attrs_data);

	if (r->valid != 1)
		return 0;
	memset(who, 0, sizeof(*who));
	if (memcmp(r->trace_id, "task", 4) == 0) {
		unsigned task = (unsigned)mn_get_be(r->trace_id + 4, 4);
		uint64_t round = mn_get_be(r->trace_id + 8, 8);
		unsigned span = (unsigned)mn_get_be(r->span_id + 6, 2);
		uint8_t decided = mn_decision(task, round);

		if (round == 0 || span < 1 || span > 3)
			return 0;
		/* Only the root span is published before the decision. */
		if (r->trace_flags != decided && !(span == 1 && r->trace_flags == 0))
			return 0;
		mn_task_record(k, task, round, span, r->trace_flags, &want);
		who->kind = MN_TASK;
		who->number = task;
		who->round = round;
		who->span = span;
	} else if (memcmp(r->trace_id, "job ", 4) == 0) {
		unsigned job = (unsigned)mn_get_be(r->trace_id + 4, 4);

		mn_job_record(k, job, &want);
		who->kind = MN_JOB;
		who->number = job;
	} else {
		return 0;
	}
	return memcmp(r, &want, header) == 0 &&
	       memcmp(r->attrs_data, want.attrs_data, want.attrs_data_size) == 0;
}

#endif /* OTEL_TESTS_MN_RECORD_H */
