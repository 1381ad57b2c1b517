/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The signal storm (storm_run()), shared by the Check suite
 * (test-signal-storm.c) and the musl program: a writer thread commits
 * records (storm.h) by every path the API has, naming each commit before it
 * makes it, while another thread interrupts it with signals; the handler,
 * on the writer's thread, checks each sample of the slot against what the
 * writer committed last and what it is committing, and then runs every
 * async-signal-safe function on a context of its own with allocation
 * forbidden (counting-malloc.h, which a program running the storm links).
 *
 * The API calls go through STORM_CALL() (storm.h); the slot is read as
 * STORM_SLOT.
 */
#ifndef OTEL_TESTS_STORM_RUN_H
#define OTEL_TESTS_STORM_RUN_H

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "counting-malloc.h"
#include "storm.h"

/* The calling thread's slot, as a reader loads it. */
#ifndef STORM_SLOT
#define STORM_SLOT otel_thread_ctx_v1
#endif

/* --- The storm ----------------------------------------------------------- */

/*
 * The commit paths the writer takes in turn.  Each names a window: from the
 * first call of the step to the return of its last, during which the
 * handler's samples count for that path.
 */
enum storm_path {
	STORM_UPDATE,           /* setters, then update of the attached context */
	STORM_UPDATE_SPAN_ID,   /* update_span_id of the attached context */
	STORM_UPDATE_ALL,       /* update_all of the attached context */
	STORM_SET_ATTRS,        /* set_ids + set_attrs, then update */
	STORM_UPDATE_ATTACH,    /* setters on another context, update_attach of it */
	STORM_UPDATE_THEN_ATTACH, /* update of a detached context, then attach */
	STORM_DETACH,           /* detach, setters, update_attach */
	STORM_INVALIDATE,       /* invalidate, setters, update */
	STORM_TRACE_FLAGS,      /* update_trace_flags of the attached context */
	STORM_FROZEN,           /* freeze a new context, attach it, let it go */
	STORM_PATHS
};

static const char *const storm_path_names[STORM_PATHS] = {
	"update", "update_span_id", "update_all", "set_attrs+update", "update_attach",
	"update+attach", "detach+update_attach", "invalidate+update", "update_trace_flags",
	"freeze+attach",
};

/* What the slot may show: a record, or nothing. */
struct storm_image {
	int null;
	struct otel_thread_ctx_record rec;
};

/* Samples in any window of a path before the storm may end. */
#define STORM_WINDOW_SAMPLES 3u
/* Frozen contexts the writer makes at most (about 300 bytes each). */
#define STORM_FROZEN_MAX 100000u
/* Commits before the storm may end (see storm_done()). */
#define STORM_MIN_RECORDS 1000u

/*
 * The writer's state, which the handler reads on the same thread: what it
 * committed last (images[committed]) and, during a call that changes what
 * the thread publishes, what it commits (images[committing], else -1).  A
 * sample must match one of the two: never an older record, a draft, or a
 * mix.  The writer prepares an image in a third entry before it names it.
 */
struct storm {
	struct storm_image images[3];
	int committed, committing, path;
	/* Control, between the sender and the writer. */
	int stop, done, rc;
	uint64_t records;
	/* Counted by the handler. */
	unsigned long handled, null, ok, wrong, spare_calls;
	unsigned long in_window[STORM_PATHS];
	int spare_rc;         /* the first failure of the spare-context work */
	unsigned int spare_line; /* where it was found */
	int alloc_checked;    /* the handler ran with allocation forbidden */
	char wrong_what[200]; /* the first wrong sample, described */
	otel_thread_ctx *spare;
	uint64_t spare_seq;
};

static inline const struct storm_image *storm_image_at(const struct storm *s, int i)
{
	return i >= 0 ? &s->images[i] : NULL;
}

/* Does what p points to (a sample of the slot) match image m? */
static inline int storm_matches(const struct otel_thread_ctx_record *p,
				const struct storm_image *m)
{
	struct otel_thread_ctx_record copy;

	if (m == NULL)
		return 0;
	if (m->null || p == NULL)
		return m->null && p == NULL;
	memcpy(&copy, p, offsetof(struct otel_thread_ctx_record, attrs_data));
	if (memcmp(&copy, &m->rec, offsetof(struct otel_thread_ctx_record, attrs_data)) != 0)
		return 0;
	return memcmp(p->attrs_data, m->rec.attrs_data, m->rec.attrs_data_size) == 0;
}

static inline void storm_put(char *out, size_t cap, size_t *at, const char *text)
{
	while (*text != '\0' && *at + 1 < cap)
		out[(*at)++] = *text++;
	out[*at] = '\0';
}

static inline void storm_put_number(char *out, size_t cap, size_t *at, uint64_t n)
{
	char digits[25];
	int len = storm_decimal(n, digits);

	digits[len] = '\0';
	storm_put(out, cap, at, digits);
}

/* Describes a wrong sample, once (async-signal-safe). */
static inline void storm_describe(struct storm *s, const struct otel_thread_ctx_record *p)
{
	size_t at = 0;
	uint64_t seq = 0, span;

	if (s->wrong_what[0] != '\0')
		return;
	storm_put(s->wrong_what, sizeof(s->wrong_what), &at, "during ");
	storm_put(s->wrong_what, sizeof(s->wrong_what), &at,
		  s->path >= 0 ? storm_path_names[s->path] : "no call");
	if (p == NULL) {
		storm_put(s->wrong_what, sizeof(s->wrong_what), &at,
			  ": the slot was NULL where a record was due");
		return;
	}
	if (p->valid != 1) {
		storm_put(s->wrong_what, sizeof(s->wrong_what), &at, ": a record with valid != 1");
		return;
	}
	memcpy(&seq, p->trace_id, 8);
	memcpy(&span, p->span_id, 8);
	storm_put(s->wrong_what, sizeof(s->wrong_what), &at, ": a record of trace sequence ");
	storm_put_number(s->wrong_what, sizeof(s->wrong_what), &at, seq);
	storm_put(s->wrong_what, sizeof(s->wrong_what), &at,
		  storm_classify(p, &seq) == STORM_READ_OK ? " (complete: an older or unfinished one)"
							   : " (not the writer's)");
	storm_put(s->wrong_what, sizeof(s->wrong_what), &at, "; committed sequence ");
	memcpy(&seq, s->images[s->committed].rec.trace_id, 8);
	storm_put_number(s->wrong_what, sizeof(s->wrong_what), &at,
			 s->images[s->committed].null ? 0 : seq);
}

/* The attributes of record r as an array for set_attrs / update_all. */
static inline size_t storm_attrs_of(const struct otel_thread_ctx_record *r,
				    struct otel_thread_ctx_attr out[4])
{
	size_t n = 0;

	for (size_t at = 0; at + 2 <= r->attrs_data_size && n < 4; n++) {
		out[n].key = r->attrs_data[at];
		out[n].len = r->attrs_data[at + 1];
		out[n].value = r->attrs_data + at + 2;
		at += 2u + r->attrs_data[at + 1];
	}
	return n;
}

/* Fails the spare-context work at `line` with rc (or -1 for a wrong
 * result), once. */
#define STORM_SPARE_CHECK(s, cond, rc)                                                 \
	do {                                                                           \
		if (!(cond)) {                                                         \
			if ((s)->spare_rc == 0) {                                      \
				(s)->spare_rc = (rc) != 0 ? (rc) : -1;                 \
				(s)->spare_line = __LINE__;                            \
			}                                                              \
			return;                                                        \
		}                                                                      \
	} while (0)

/* committed(spare) is exactly `want`. */
static inline int storm_spare_is(struct storm *s, const struct otel_thread_ctx_record *want)
{
	struct otel_thread_ctx_record out;

	memset(&out, 0xa5, sizeof(out));
	if (STORM_CALL(otel_thread_ctx_committed)(s->spare, &out) != 0)
		return 0;
	return memcmp(&out, want, offsetof(struct otel_thread_ctx_record, attrs_data)) == 0 &&
	       memcmp(out.attrs_data, want->attrs_data, want->attrs_data_size) == 0 &&
	       (want->attrs_data_size == OTEL_THREAD_CTX_ATTRS_MAX ||
		out.attrs_data[want->attrs_data_size] == 0xa5);
}

/*
 * In the handler: every function documented as async-signal-safe that may
 * run there, on a context of the handler's own (attached nowhere), each
 * result checked.  Not the writer's attachment: a handler must not change
 * the interrupted thread's.
 */
static inline void storm_spare_work(struct storm *s, const struct otel_thread_ctx_record *sample)
{
	struct otel_thread_ctx_record want, empty, got;
	struct otel_thread_ctx_attr attrs[4];
	struct otel_thread_ctx_attr_iter it;
	struct otel_thread_ctx_attr a;
	uint64_t n = s->spare_seq += 3;
	uint8_t span[8];
	size_t na, seen;
	int rc;

	s->spare_calls++;
	/* The setters, update, committed. */
	rc = storm_write_draft(s->spare, n);
	STORM_SPARE_CHECK(s, rc == 0, rc);
	rc = STORM_CALL(otel_thread_ctx_update)(s->spare);
	STORM_SPARE_CHECK(s, rc == 0, rc);
	storm_expected(n, &want);
	STORM_SPARE_CHECK(s, storm_spare_is(s, &want), 0);
	/* update_span_id, update_trace_flags. */
	memset(span, 0x5a, sizeof(span));
	rc = STORM_CALL(otel_thread_ctx_update_span_id)(s->spare, span);
	STORM_SPARE_CHECK(s, rc == 0, rc);
	memcpy(want.span_id, span, 8);
	STORM_SPARE_CHECK(s, storm_spare_is(s, &want), 0);
	rc = STORM_CALL(otel_thread_ctx_update_trace_flags)(s->spare, (uint8_t)(want.trace_flags ^ 1));
	STORM_SPARE_CHECK(s, rc == 0, rc);
	want.trace_flags ^= 1;
	STORM_SPARE_CHECK(s, storm_spare_is(s, &want), 0);
	/* set_ids + set_attrs, update. */
	storm_expected(n + 1, &want);
	na = storm_attrs_of(&want, attrs);
	rc = STORM_CALL(otel_thread_ctx_set_ids)(s->spare, want.trace_id, want.span_id,
						 want.trace_flags);
	if (rc == 0)
		rc = STORM_CALL(otel_thread_ctx_set_attrs)(s->spare, attrs, na);
	if (rc == 0)
		rc = STORM_CALL(otel_thread_ctx_update)(s->spare);
	STORM_SPARE_CHECK(s, rc == 0, rc);
	STORM_SPARE_CHECK(s, storm_spare_is(s, &want), 0);
	/* update_all; a refused one changes nothing. */
	storm_expected(n + 2, &want);
	na = storm_attrs_of(&want, attrs);
	rc = STORM_CALL(otel_thread_ctx_update_all)(s->spare, want.trace_id, want.span_id,
						    want.trace_flags, attrs, na);
	STORM_SPARE_CHECK(s, rc == 0, rc);
	STORM_SPARE_CHECK(s, storm_spare_is(s, &want), 0);
	attrs[na] = attrs[0]; /* a duplicate key */
	rc = STORM_CALL(otel_thread_ctx_update_all)(s->spare, want.trace_id, want.span_id,
						    want.trace_flags, attrs, na + 1);
	STORM_SPARE_CHECK(s, rc == OTEL_THREAD_CTX_EDUPKEY, rc);
	STORM_SPARE_CHECK(s, storm_spare_is(s, &want), 0);
	/* invalidate keeps what was committed. */
	rc = STORM_CALL(otel_thread_ctx_invalidate)(s->spare);
	STORM_SPARE_CHECK(s, rc == 0, rc);
	STORM_SPARE_CHECK(s, storm_spare_is(s, &want), 0);
	/* The other setters, down to an empty record. */
	rc = STORM_CALL(otel_thread_ctx_set_span_id)(s->spare, span);
	if (rc == 0)
		rc = STORM_CALL(otel_thread_ctx_set_trace_flags)(s->spare, 0);
	if (rc == 0)
		rc = STORM_CALL(otel_thread_ctx_remove_attr)(s->spare, STORM_KEY_SEQ);
	if (rc == 0)
		rc = STORM_CALL(otel_thread_ctx_clear_attrs)(s->spare);
	if (rc == 0)
		rc = STORM_CALL(otel_thread_ctx_clear_ids)(s->spare);
	if (rc == 0)
		rc = STORM_CALL(otel_thread_ctx_clear)(s->spare);
	if (rc == 0)
		rc = STORM_CALL(otel_thread_ctx_update)(s->spare);
	STORM_SPARE_CHECK(s, rc == 0, rc);
	memset(&empty, 0, sizeof(empty));
	empty.valid = 1;
	STORM_SPARE_CHECK(s, storm_spare_is(s, &empty), 0);
	/* The readers, on what this thread publishes and on a record. */
	rc = STORM_CALL(otel_thread_ctx_read)(&got);
	if (sample == NULL)
		STORM_SPARE_CHECK(s, rc == OTEL_THREAD_CTX_ENOCTX, rc);
	else
		STORM_SPARE_CHECK(s, rc == 0 && memcmp(&got, sample, 28) == 0 &&
					     memcmp(got.attrs_data, sample->attrs_data,
						    got.attrs_data_size) == 0, rc);
	storm_expected(n, &want);
	seen = 0;
	STORM_CALL(otel_thread_ctx_attr_iter_init_map)(&it, &want, 256);
	while (STORM_CALL(otel_thread_ctx_attr_iter_next)(&it, &a))
		seen++;
	STORM_SPARE_CHECK(s, seen == (n % 3 == 0 ? 3u : 2u), 0);
	STORM_SPARE_CHECK(s, STORM_CALL(otel_thread_ctx_record_attr)(&want, STORM_KEY_SEQ, &a) == 1 &&
				     a.len == want.attrs_data[1] &&
				     memcmp(a.value, want.attrs_data + 2, a.len) == 0, 0);
	(void)STORM_CALL(otel_thread_ctx_key_count)();
	(void)STORM_CALL(otel_thread_ctx_key_name)(0);
	(void)STORM_CALL(otel_thread_ctx_current)();
}

static struct storm *storm_active;

/* The handler: one sample of the slot, checked against the writer's
 * images, then the spare-context work with allocation forbidden. */
static inline void storm_on_signal(int sig)
{
	struct storm *s = storm_active;
	const struct otel_thread_ctx_record *p = STORM_SLOT;
	const struct storm_image *was = storm_image_at(s, s->committed);
	const struct storm_image *next = storm_image_at(s, s->committing);
	int path = s->path;
	int saved_errno = errno;

	(void)sig;
	__atomic_store_n(&s->handled, s->handled + 1, __ATOMIC_RELAXED);
	if (storm_matches(p, was) || storm_matches(p, next)) {
		if (p == NULL)
			s->null++;
		else
			s->ok++;
		if (path >= 0)
			__atomic_store_n(&s->in_window[path], s->in_window[path] + 1, __ATOMIC_RELAXED);
	} else {
		s->wrong++;
		storm_describe(s, p);
	}
	s->alloc_checked = counting_malloc_forbid(1);
	storm_spare_work(s, p);
	counting_malloc_forbid(0);
	errno = saved_errno;
}

/* Between the writer's steps: the handler sees each store as made. */
#define STORM_FENCE() __atomic_signal_fence(__ATOMIC_SEQ_CST)

/* The writer names what its next call commits: a record, or NULL. */
static inline void storm_expect(struct storm *s, int path,
				const struct otel_thread_ctx_record *rec)
{
	int k = 0;

	while (k == s->committed || k == s->committing)
		k++;
	s->images[k].null = rec == NULL;
	if (rec != NULL)
		s->images[k].rec = *rec;
	STORM_FENCE();
	s->path = path;
	s->committing = k;
	STORM_FENCE();
}

/* A step of `path` starts that does not change what the thread publishes
 * until storm_expect(). */
static inline void storm_begin(struct storm *s, int path)
{
	STORM_FENCE();
	s->path = path;
	STORM_FENCE();
}

/* The call returned: what it committed is what the thread publishes. */
static inline void storm_committed(struct storm *s)
{
	STORM_FENCE();
	if (s->committing >= 0)
		s->committed = s->committing;
	STORM_FENCE();
	s->committing = -1;
	STORM_FENCE();
}

static inline void storm_end(struct storm *s)
{
	STORM_FENCE();
	s->path = -1;
	STORM_FENCE();
}

/* The record the writer's attached context commits when only fields
 * change: the committed one, edited by the caller. */
static inline struct otel_thread_ctx_record storm_now(const struct storm *s)
{
	return s->images[s->committed].rec;
}

/* Writes record n into ctx's draft, and names it as what `path` commits
 * next (r: the record). */
static inline int storm_draft(struct storm *s, int path, otel_thread_ctx *ctx, uint64_t n,
			      struct otel_thread_ctx_record *r)
{
	int rc = storm_write_draft(ctx, n);

	storm_expected(n, r);
	storm_expect(s, path, r);
	return rc;
}

/*
 * The writer thread: commits a new record by each path in turn until
 * s->stop, naming each commit before it makes it.  `cur` is the context
 * attached; `other` one of the writer's own, detached (created with a
 * capacity just big enough for the storm's records, so that both sizes of
 * context take every path).  Leaves the thread detached and its contexts
 * destroyed.
 */
static inline void *storm_writer(void *arg)
{
	struct storm *s = arg;
	struct otel_thread_ctx_options small = OTEL_THREAD_CTX_OPTIONS_INIT;
	struct otel_thread_ctx_record r;
	struct otel_thread_ctx_attr attrs[4];
	otel_thread_ctx *cur = NULL, *other = NULL, *prev, *frozen;
	uint64_t n = 1, step = 0, frozen_made = 0;
	size_t na;
	int rc;

	small.attrs_capacity = 24 + 98 + 7;
	rc = STORM_CALL(otel_thread_ctx_create)(&cur);
	if (rc == 0)
		rc = STORM_CALL(otel_thread_ctx_create_with)(&other, &small);
	if (rc == 0)
		rc = storm_draft(s, STORM_UPDATE_ATTACH, cur, n, &r);
	if (rc == 0)
		rc = STORM_CALL(otel_thread_ctx_update_attach)(cur, &prev);
	storm_committed(s);
	storm_end(s);
	while (rc == 0 && !__atomic_load_n(&s->stop, __ATOMIC_RELAXED)) {
		/* A frozen context is a new allocation each time, which the
		 * counting allocator never reuses: one round in 16, and at
		 * most STORM_FROZEN_MAX in all. */
		int path = (int)(step++ % (STORM_PATHS - 1));

		if (step % 16 == 0 && frozen_made < STORM_FROZEN_MAX) {
			path = STORM_FROZEN;
			frozen_made++;
		}

		n++;
		__atomic_store_n(&s->records, n, __ATOMIC_RELAXED);
		storm_begin(s, path);
		switch (path) {
		case STORM_UPDATE:
			rc = storm_draft(s, path, cur, n, &r);
			if (rc == 0)
				rc = STORM_CALL(otel_thread_ctx_update)(cur);
			break;
		case STORM_UPDATE_SPAN_ID: {
			uint64_t span = storm_span_of(n);

			r = storm_now(s);
			memcpy(r.span_id, &span, 8);
			storm_expect(s, path, &r);
			rc = STORM_CALL(otel_thread_ctx_update_span_id)(cur, r.span_id);
			break;
		}
		case STORM_UPDATE_ALL:
			storm_expected(n, &r);
			na = storm_attrs_of(&r, attrs);
			storm_expect(s, path, &r);
			rc = STORM_CALL(otel_thread_ctx_update_all)(cur, r.trace_id, r.span_id,
								    r.trace_flags, attrs, na);
			break;
		case STORM_SET_ATTRS:
			storm_expected(n, &r);
			na = storm_attrs_of(&r, attrs);
			rc = STORM_CALL(otel_thread_ctx_set_ids)(cur, r.trace_id, r.span_id,
								 r.trace_flags);
			if (rc == 0)
				rc = STORM_CALL(otel_thread_ctx_set_attrs)(cur, attrs, na);
			storm_expect(s, path, &r);
			if (rc == 0)
				rc = STORM_CALL(otel_thread_ctx_update)(cur);
			break;
		case STORM_UPDATE_ATTACH:
			rc = storm_draft(s, path, other, n, &r);
			if (rc == 0)
				rc = STORM_CALL(otel_thread_ctx_update_attach)(other, &prev);
			if (rc == 0)
				other = prev, cur = STORM_CALL(otel_thread_ctx_current)();
			break;
		case STORM_UPDATE_THEN_ATTACH:
			rc = storm_write_draft(other, n);
			if (rc == 0)
				rc = STORM_CALL(otel_thread_ctx_update)(other);
			storm_expected(n, &r);
			storm_expect(s, path, &r);
			if (rc == 0)
				rc = STORM_CALL(otel_thread_ctx_attach)(other, &prev);
			if (rc == 0)
				other = prev, cur = STORM_CALL(otel_thread_ctx_current)();
			break;
		case STORM_DETACH:
			storm_expect(s, path, NULL);
			rc = STORM_CALL(otel_thread_ctx_detach)(&prev);
			storm_committed(s);
			if (rc == 0)
				rc = storm_draft(s, path, cur, n, &r);
			if (rc == 0)
				rc = STORM_CALL(otel_thread_ctx_update_attach)(cur, &prev);
			break;
		case STORM_INVALIDATE:
			storm_expect(s, path, NULL);
			rc = STORM_CALL(otel_thread_ctx_invalidate)(cur);
			storm_committed(s);
			if (rc == 0)
				rc = storm_draft(s, path, cur, n, &r);
			if (rc == 0)
				rc = STORM_CALL(otel_thread_ctx_update)(cur);
			break;
		case STORM_TRACE_FLAGS:
			r = storm_now(s);
			r.trace_flags ^= 1;
			storm_expect(s, path, &r);
			rc = STORM_CALL(otel_thread_ctx_update_trace_flags)(cur, r.trace_flags);
			break;
		case STORM_FROZEN:
			/* A new context, frozen and attached in place of cur,
			 * then given up: the thread's reference goes when cur
			 * is attached again, and the context with it. */
			rc = STORM_CALL(otel_thread_ctx_create_with)(&frozen, &small);
			if (rc != 0)
				break;
			rc = storm_write_draft(frozen, n);
			if (rc == 0)
				rc = STORM_CALL(otel_thread_ctx_freeze)(frozen);
			storm_expected(n, &r);
			storm_expect(s, path, &r);
			if (rc == 0)
				rc = STORM_CALL(otel_thread_ctx_attach)(frozen, &prev);
			storm_committed(s);
			if (rc == 0)
				rc = STORM_CALL(otel_thread_ctx_destroy)(frozen);
			if (rc != 0)
				break;
			n++;
			rc = storm_draft(s, path, cur, n, &r);
			if (rc == 0)
				rc = STORM_CALL(otel_thread_ctx_update_attach)(cur, &prev);
			break;
		}
		storm_committed(s);
		storm_end(s);
	}
	storm_expect(s, -1, NULL);
	if (rc == 0)
		rc = STORM_CALL(otel_thread_ctx_detach)(&prev);
	storm_committed(s);
	if (rc == 0)
		rc = STORM_CALL(otel_thread_ctx_destroy)(cur);
	if (rc == 0)
		rc = STORM_CALL(otel_thread_ctx_destroy)(other);
	__atomic_store_n(&s->records, n, __ATOMIC_RELAXED);
	s->rc = rc;
	__atomic_store_n(&s->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Whether the sender may stop: `want` samples, enough commits, and every
 * path sampled inside its window; or the writer stopped by itself (on an
 * error, which the test then reports). */
static inline int storm_done(const struct storm *s, unsigned long want)
{
	if (__atomic_load_n(&s->done, __ATOMIC_ACQUIRE))
		return 1;
	if (__atomic_load_n(&s->handled, __ATOMIC_RELAXED) < want ||
	    __atomic_load_n(&s->records, __ATOMIC_RELAXED) <= STORM_MIN_RECORDS)
		return 0;
	for (int i = 0; i < STORM_PATHS; i++) {
		if (__atomic_load_n(&s->in_window[i], __ATOMIC_RELAXED) < STORM_WINDOW_SAMPLES)
			return 0;
	}
	return 1;
}

static inline double storm_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * The storm: starts the writer, interrupts it with SIGUSR1 until
 * storm_done() or `limit_s` seconds, then stops it.  The spare context the
 * handler works on is created here.  Returns 0, or -1 when the storm could
 * not be set up (what failed is in s->wrong_what).
 */
static inline int storm_run(struct storm *s, unsigned long want, double limit_s)
{
	struct sigaction sa;
	unsigned long sent = 0;
	pthread_t t;
	double start;

	memset(s, 0, sizeof(*s));
	s->committed = 0;
	s->images[0].null = 1;
	s->committing = s->path = -1;
	s->rc = -1;
	s->spare_seq = UINT64_C(1) << 40;
	if (STORM_CALL(otel_thread_ctx_create)(&s->spare) != 0) {
		snprintf(s->wrong_what, sizeof(s->wrong_what), "cannot create the spare context");
		return -1;
	}
	/* The handler's otel_thread_ctx_record_attr() finds only keys the
	 * registry names. */
	while (STORM_CALL(otel_thread_ctx_key_count)() <= STORM_KEY_EXTRA) {
		char name[32];
		unsigned int idx;

		snprintf(name, sizeof(name), "storm.key.%u", STORM_CALL(otel_thread_ctx_key_count)());
		if (STORM_CALL(otel_thread_ctx_key_register)(name, &idx) != 0) {
			snprintf(s->wrong_what, sizeof(s->wrong_what), "cannot register keys");
			return -1;
		}
	}
	storm_active = s;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = storm_on_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL) != 0 ||
	    pthread_create(&t, NULL, storm_writer, s) != 0) {
		snprintf(s->wrong_what, sizeof(s->wrong_what), "cannot start the storm");
		return -1;
	}
	start = storm_now_s();
	while (!storm_done(s, want) && storm_now_s() - start <= limit_s) {
		if (pthread_kill(t, SIGUSR1) != 0)
			break;
		sent++;
	}
	__atomic_store_n(&s->stop, 1, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	signal(SIGUSR1, SIG_DFL);
	STORM_CALL(otel_thread_ctx_destroy)(s->spare);
	printf("signal-storm: %lu signals sent, %lu handled: %lu records, %lu empty as due, "
	       "%lu wrong; %llu commits; samples inside each path's calls:",
	       sent, s->handled, s->ok, s->null, s->wrong, (unsigned long long)s->records);
	for (int i = 0; i < STORM_PATHS; i++)
		printf(" %s %lu", storm_path_names[i], s->in_window[i]);
	printf("; the handler's own work %lu times, allocation %s\n", s->spare_calls,
	       s->alloc_checked ? "forbidden (counting allocator)" :
				  "not checked (another allocator is in use)");
	return 0;
}

/* The storm's verdict: 0, or 1 with the reason in why. */
static inline int storm_failed(const struct storm *s, char *why, size_t cap)
{
	if (s->rc != 0)
		snprintf(why, cap, "the writer failed: %s", otel_thread_ctx_strerror(s->rc));
	else if (s->wrong != 0)
		snprintf(why, cap, "%lu samples were neither the committed record nor the one "
			 "being committed; first: %s", s->wrong, s->wrong_what);
	else if (s->spare_rc != 0)
		snprintf(why, cap, "the handler's own work failed at storm-run.h:%u (%d)", s->spare_line,
			 s->spare_rc);
	else if (s->records <= STORM_MIN_RECORDS)
		snprintf(why, cap, "only %llu commits", (unsigned long long)s->records);
	else {
		for (int i = 0; i < STORM_PATHS; i++) {
			if (s->in_window[i] < STORM_WINDOW_SAMPLES) {
				snprintf(why, cap, "no sample landed inside %s: the storm did not "
					 "test it", storm_path_names[i]);
				return 1;
			}
		}
		return 0;
	}
	return 1;
}

#endif /* OTEL_TESTS_STORM_RUN_H */
