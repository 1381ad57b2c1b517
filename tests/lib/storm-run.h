/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The signal storm (storm_run()), shared by the Check suite
 * (test-signal-storm.c) and the musl program: a writer thread publishes
 * records (storm.h) by every path the API has, naming each publication
 * before it makes it, while a timer of its own interrupts it with signals
 * every few microseconds of real time, at whatever instruction it is; the
 * handler, on the writer's thread, checks each sample of the slot (and what
 * otel_thread_ctx_save() gives there) against what the writer published
 * last and what it is publishing, and then runs every async-signal-safe
 * function that does not publish on a few contexts of its own, with
 * allocation and locks forbidden (counting-malloc.h, which a program running
 * the storm links).
 *
 * The first publication of a thread is a path too: every few rounds the
 * writer starts a new writer thread, which carries on from its first
 * publication while the storm moves to it, and exits while it publishes.
 *
 * The API calls go through STORM_CALL() (storm.h); the slot is read as
 * STORM_SLOT.
 */
#ifndef OTEL_TESTS_STORM_RUN_H
#define OTEL_TESTS_STORM_RUN_H

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "counting-malloc.h"
#include "storm.h"
#include "testenv.h"

/* The calling thread's slot, as a reader loads it. */
#ifndef STORM_SLOT
#define STORM_SLOT otel_thread_ctx_v1
#endif

/* --- The storm ----------------------------------------------------------- */

/*
 * The publication paths the writer takes.  Each names a window: from the
 * first call of the step to the return of its last, during which the
 * handler's samples count for that path.
 */
enum storm_path {
	STORM_FIRST,           /* a new thread's first publication: attach */
	STORM_ATTACH,          /* setters on a context, attach(ctx, NULL) */
	STORM_ATTACH_SAVED,    /* attach(ctx, saved): saved gets what was published */
	STORM_SWAP,            /* attach(ctx, ctx) */
	STORM_UPDATE,          /* set_ids + set_attrs on a context, update */
	STORM_RESTORE,         /* update(saved): a saved record back */
	STORM_RESTORE_NOTHING, /* update(saved) of a saved "nothing": unpublishes */
	STORM_DETACH,          /* detach(saved), detach(NULL) */
	STORM_UPDATE_SPAN_ID,  /* the thread's record, with a new span */
	STORM_TRACE_FLAGS,     /* the thread's record, with new flags */
	STORM_UPDATE_ALL,      /* a new record, published or not before */
	STORM_PATHS
};

static const char *const storm_path_names[STORM_PATHS] = {
	"first publication", "attach", "attach(ctx, saved)", "attach(ctx, ctx)", "update",
	"restore", "restore nothing", "detach", "update_span_id", "update_trace_flags",
	"update_all",
};

/* The contexts of the writer: values, handed from one writer thread to the
 * next. */
enum storm_ctx { STORM_A, STORM_B, STORM_C, STORM_S1, STORM_S2, STORM_S3, STORM_CTXS, STORM_NO_CTX };

/* One round of the writer: each step a path, with the context it publishes
 * or saves into.  It starts and ends with nothing published. */
static const struct storm_step {
	int path;
	int ctx;
} storm_round[] = {
	{ STORM_ATTACH, STORM_A },          /* from nothing (a new writer: STORM_FIRST) */
	{ STORM_UPDATE_SPAN_ID, STORM_NO_CTX },
	{ STORM_ATTACH_SAVED, STORM_S1 },    /* s1: a record */
	{ STORM_TRACE_FLAGS, STORM_NO_CTX },
	{ STORM_RESTORE, STORM_S1 },
	{ STORM_UPDATE, STORM_A },
	{ STORM_SWAP, STORM_C },
	{ STORM_DETACH, STORM_S2 },          /* s2: a record */
	{ STORM_RESTORE, STORM_S2 },         /* from nothing */
	{ STORM_UPDATE_ALL, STORM_NO_CTX },
	{ STORM_DETACH, STORM_NO_CTX },
	{ STORM_UPDATE_ALL, STORM_NO_CTX },  /* from nothing */
	{ STORM_DETACH, STORM_NO_CTX },
	{ STORM_ATTACH_SAVED, STORM_S3 },    /* s3: nothing */
	{ STORM_RESTORE_NOTHING, STORM_S3 },
};

#define STORM_ROUND_STEPS (sizeof(storm_round) / sizeof(storm_round[0]))

/* What the slot may show: a record, or nothing. */
struct storm_image {
	int null;
	struct otel_thread_ctx_record rec;
};

/* Samples in any window of a path before the storm may end: 3, or
 * OTEL_TEST_WINDOW_SAMPLES.  The valgrind setup asks for 1: memcheck
 * delivers a signal at a system call or at the end of a time slice only, so
 * that the rarest path's third sample took most of the storm's 50 s there,
 * and what memcheck judges (the handler's reads inside each path) its
 * first sample already shows. */
#define STORM_WINDOW_SAMPLES 3u
/* Publications before the storm may end (see storm_done()). */
#define STORM_MIN_RECORDS 1000u
/* A new writer thread at the end of the first round in which the handler
 * sampled the current one inside a call so many times: the rate of
 * handovers follows that of the samples, whatever slows the process down.
 * Writer k is in writers[k % STORM_WRITER_RING]: storm_run() joins it before
 * writer k + STORM_WRITER_RING is made there. */
#define STORM_WRITER_SAMPLES 16u
#define STORM_WRITER_RING 8u
/* The period of a writer's timer, in nanoseconds: at least this, and at
 * least four times what the handler takes (valgrind makes it a hundred
 * times slower), so that the writer keeps most of its time.  The first
 * expiry comes at a random point of the first period, so that a new
 * writer's first publication is sampled as often as any other call of its
 * length. */
#define STORM_PERIOD_NS 20000L
#define STORM_PERIOD_EMULATED_NS 250000L
#define STORM_PERIOD_MAX_NS 50000000L
/* Signals in a row that find the writer where the last one left it: it
 * gets no time between them, and the period doubles (storm_slow_down()). */
#define STORM_STALLED_SIGNALS 64u

/* glibc before 2.38 names the target thread of SIGEV_THREAD_ID so only. */
#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif
/* The writer's contexts of the small size: just big enough for the
 * storm's records, so that both sizes of context take the paths. */
#define STORM_SMALL_CAPACITY (24u + 98u + 7u)

/*
 * The state of the storm.  The writer's part, which the handler reads on
 * the same thread: what it published last (images[committed]) and, during
 * a call that changes what the thread publishes, what it publishes
 * (images[committing], else -1).  A sample must match one of the two: never
 * an older record, a draft, or a mix.  The writer prepares an image in a
 * third entry before it names it.
 */
struct storm {
	struct storm_image images[3];
	int committed, committing, path;
	/* What the writer's saved contexts should hold (its own checks). */
	struct storm_image saved[STORM_CTXS];
	otel_thread_ctx *ctx[STORM_CTXS];
	/* Where the writer is: the step of its round, and the sequence. */
	uint64_t step, n;
	/* Samples inside a call, of the current writer. */
	unsigned long writer_samples;
	/* Whether the storm can sample the first publication of a thread: not
	 * under valgrind, which delivers a signal at a system call or at the
	 * end of a thread's time slice only, never in the few instructions
	 * after a new thread's first system call. */
	int first_sampled;
	/* STORM_WINDOW_SAMPLES, or OTEL_TEST_WINDOW_SAMPLES. */
	unsigned long window_samples;
	/* Writer threads: number `writer` is the current one; the one
	 * before it starts the next and exits, once `go` lets the next one
	 * run.  storm_run() has joined the writers below `joined`. */
	pthread_t writers[STORM_WRITER_RING];
	unsigned int writer, writers_made, joined;
	sem_t go;
	/* The current writer's timer, its period, where its first expiries
	 * fall, and what the handler takes (an average, in nanoseconds). */
	timer_t timer;
	long period_ns, handler_ns;
	uint64_t phase;
	/* What storm_slow_down() has shown the period must be at least, the
	 * writer's count of publications the handler saw last, and the
	 * signals in a row that saw it unchanged. */
	long period_floor_ns;
	uint64_t seen_records;
	unsigned int stalled;
	/* Control, between storm_run() and the writer. */
	int stop, done, rc;
	uint64_t records;
	char writer_what[200]; /* what the writer found wrong, when rc is -1 */
	/* Counted by the handler: samples of the slot, and of save(). */
	unsigned long handled, null, ok, wrong, spare_calls, saves_checked, saves_wrong;
	/* save() refused (ENESTED: the signal came inside a publishing call),
	 * and publications the handler made and put back. */
	unsigned long saves_nested, handler_published;
	unsigned long in_window[STORM_PATHS];
	int spare_rc;            /* the first failure of the spare-context work */
	unsigned int spare_line; /* where it was found */
	int alloc_checked;       /* the handler ran with allocation forbidden */
	char wrong_what[200];    /* the first wrong sample, described */
	char save_what[200];     /* the first wrong save(), described */
	/* The handler's own contexts. */
	otel_thread_ctx *spare, *spare_copy, *spare_small, *spare_saved;
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

/* Describes a wrong sample into out[200], once (async-signal-safe).
 * `how`: what gave it ("the slot", or "save"). */
static inline void storm_describe(struct storm *s, char *out, const char *how,
				  const struct otel_thread_ctx_record *p)
{
	const size_t cap = 200;
	size_t at = 0;
	uint64_t seq = 0;

	if (out[0] != '\0')
		return;
	storm_put(out, cap, &at, "during ");
	storm_put(out, cap, &at, s->path >= 0 ? storm_path_names[s->path] : "no call");
	storm_put(out, cap, &at, ", ");
	storm_put(out, cap, &at, how);
	if (p == NULL) {
		storm_put(out, cap, &at, " showed nothing where a record was due");
		return;
	}
	if (p->valid != 1) {
		storm_put(out, cap, &at, " showed a record with valid != 1");
		return;
	}
	memcpy(&seq, p->trace_id, 8);
	storm_put(out, cap, &at, " showed a record of sequence ");
	storm_put_number(out, cap, &at, seq);
	storm_put(out, cap, &at,
		  storm_classify(p, &seq) == STORM_READ_OK ? " (whole: an older one)"
							   : " (not a record the writer made whole)");
	storm_put(out, cap, &at, "; published last: ");
	if (s->images[s->committed].null) {
		storm_put(out, cap, &at, "nothing");
	} else {
		memcpy(&seq, s->images[s->committed].rec.trace_id, 8);
		storm_put(out, cap, &at, "sequence ");
		storm_put_number(out, cap, &at, seq);
	}
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

/* ctx holds exactly `want`, and get() writes nothing past it. */
static inline int storm_holds(otel_thread_ctx *ctx, const struct otel_thread_ctx_record *want)
{
	struct otel_thread_ctx_record out;

	memset(&out, 0xa5, sizeof(out));
	if (STORM_CALL(otel_thread_ctx_get)(ctx, &out) != 0)
		return 0;
	return memcmp(&out, want, offsetof(struct otel_thread_ctx_record, attrs_data)) == 0 &&
	       memcmp(out.attrs_data, want->attrs_data, want->attrs_data_size) == 0 &&
	       (want->attrs_data_size == OTEL_THREAD_CTX_ATTRS_MAX ||
		out.attrs_data[want->attrs_data_size] == 0xa5);
}

/* ctx holds what image m shows (a record, or nothing). */
static inline int storm_holds_image(otel_thread_ctx *ctx, const struct storm_image *m)
{
	struct otel_thread_ctx_record out;

	if (m->null)
		return STORM_CALL(otel_thread_ctx_get)(ctx, &out) == OTEL_THREAD_CTX_ENOCTX;
	return storm_holds(ctx, &m->rec);
}

/*
 * In the handler: every function documented as async-signal-safe, on
 * contexts of the handler's own, each result checked; and save(), which
 * must give what the slot may show, or, when the signal came inside a
 * publishing call (the writer had named a publication), be refused with
 * ENESTED and leave its context as it was.  After a save that went through,
 * every fourth time, the handler publishes a record of its own on the
 * thread it interrupted and puts back what it saved, as a profiler tagging
 * its sample would: both must go through (no call of the thread's was
 * running), and the slot must then show what was saved.
 */
static inline void storm_spare_work(struct storm *s, const struct otel_thread_ctx_record *sample,
				    const struct storm_image *was, const struct storm_image *next)
{
	struct otel_thread_ctx_record want, empty, got, small_had;
	struct otel_thread_ctx_attr attrs[5];
	struct otel_thread_ctx_attr_iter it;
	struct otel_thread_ctx_attr a;
	uint64_t n = s->spare_seq += 3;
	uint8_t span[8];
	uint64_t span_n = storm_span_of(n + 7);
	unsigned int seen, index;
	size_t na;
	int rc;

	s->spare_calls++;
	/* save: what the thread publishes, the whole of what it published
	 * last or of what it is publishing; nothing else. */
	rc = STORM_CALL(otel_thread_ctx_get)(s->spare_saved, &small_had);
	STORM_SPARE_CHECK(s, rc == 0 || rc == OTEL_THREAD_CTX_ENOCTX, rc);
	rc = STORM_CALL(otel_thread_ctx_save)(s->spare_saved);
	if (rc == OTEL_THREAD_CTX_ENESTED) {
		/* Only inside a publication, and nothing changed. */
		struct otel_thread_ctx_record now;
		int rc2 = STORM_CALL(otel_thread_ctx_get)(s->spare_saved, &now);

		STORM_SPARE_CHECK(s, next != NULL, rc);
		STORM_SPARE_CHECK(s, rc2 == OTEL_THREAD_CTX_ENOCTX ||
					     (rc2 == 0 && memcmp(&now, &small_had,
								 28 + small_had.attrs_data_size) == 0),
				  rc2);
		s->saves_nested++;
	} else {
		STORM_SPARE_CHECK(s, rc == 0, rc);
	}
	if (rc == 0 && sample != NULL && n % 4 == 1) {
		/* Publish, then put back what was saved. */
		struct otel_thread_ctx_record mine, had;
		int had_rc = STORM_CALL(otel_thread_ctx_get)(s->spare_saved, &had);

		rc = storm_write_draft(s->spare, n + 1);
		STORM_SPARE_CHECK(s, rc == 0, rc);
		storm_expected(n + 1, &mine);
		rc = STORM_CALL(otel_thread_ctx_update)(s->spare);
		STORM_SPARE_CHECK(s, rc == 0, rc);
		STORM_SPARE_CHECK(s, STORM_SLOT != NULL &&
					     memcmp(STORM_SLOT, &mine, 28 + mine.attrs_data_size) == 0,
				  0);
		rc = STORM_CALL(otel_thread_ctx_update)(s->spare_saved);
		STORM_SPARE_CHECK(s, rc == 0, rc);
		STORM_SPARE_CHECK(s, had_rc == OTEL_THREAD_CTX_ENOCTX ? STORM_SLOT == NULL :
					     STORM_SLOT != NULL &&
						     memcmp(STORM_SLOT, &had,
							    28 + had.attrs_data_size) == 0,
				  0);
		s->handler_published++;
	}
	if (rc != 0) {
		/* Refused: nothing saved to check. */
	} else if (!storm_holds_image(s->spare_saved, was) &&
	    !(next != NULL && storm_holds_image(s->spare_saved, next))) {
		s->saves_wrong++;
		rc = STORM_CALL(otel_thread_ctx_get)(s->spare_saved, &got);
		storm_describe(s, s->save_what, "save", rc == 0 ? &got : NULL);
	}
	if (rc == 0)
		s->saves_checked++;
	/* The setters, record n. */
	rc = storm_write_draft(s->spare, n);
	STORM_SPARE_CHECK(s, rc == 0, rc);
	storm_expected(n, &want);
	STORM_SPARE_CHECK(s, storm_holds(s->spare, &want), 0);
	memcpy(span, &span_n, 8);
	rc = STORM_CALL(otel_thread_ctx_set_span_id)(s->spare, span);
	STORM_SPARE_CHECK(s, rc == 0, rc);
	memcpy(want.span_id, span, 8);
	rc = STORM_CALL(otel_thread_ctx_set_trace_flags)(s->spare, (uint8_t)(want.trace_flags ^ 1));
	STORM_SPARE_CHECK(s, rc == 0, rc);
	want.trace_flags ^= 1;
	STORM_SPARE_CHECK(s, storm_holds(s->spare, &want), 0);
	/* set_ids + set_attrs; a refused set_attrs changes nothing. */
	storm_expected(n + 1, &want);
	na = storm_attrs_of(&want, attrs);
	rc = STORM_CALL(otel_thread_ctx_set_ids)(s->spare, want.trace_id, want.span_id,
						 want.trace_flags);
	if (rc == 0)
		rc = STORM_CALL(otel_thread_ctx_set_attrs)(s->spare, attrs, na);
	STORM_SPARE_CHECK(s, rc == 0, rc);
	STORM_SPARE_CHECK(s, storm_holds(s->spare, &want), 0);
	attrs[na] = attrs[0]; /* a duplicate key */
	rc = STORM_CALL(otel_thread_ctx_set_attrs)(s->spare, attrs, na + 1);
	STORM_SPARE_CHECK(s, rc == OTEL_THREAD_CTX_EDUPKEY, rc);
	STORM_SPARE_CHECK(s, storm_holds(s->spare, &want), 0);
	/* copy, and a copy into a context too small for it, refused. */
	rc = STORM_CALL(otel_thread_ctx_copy)(s->spare_copy, s->spare);
	STORM_SPARE_CHECK(s, rc == 0, rc);
	STORM_SPARE_CHECK(s, storm_holds(s->spare_copy, &want), 0);
	rc = STORM_CALL(otel_thread_ctx_get)(s->spare_small, &small_had);
	STORM_SPARE_CHECK(s, rc == 0, rc);
	rc = STORM_CALL(otel_thread_ctx_copy)(s->spare_small, s->spare);
	STORM_SPARE_CHECK(s, rc == OTEL_THREAD_CTX_ENOSPC, rc);
	STORM_SPARE_CHECK(s, storm_holds(s->spare_small, &small_had), 0);
	/* The other setters, down to an empty record. */
	rc = STORM_CALL(otel_thread_ctx_remove_attr)(s->spare, STORM_KEY_SEQ);
	if (rc == 0)
		rc = STORM_CALL(otel_thread_ctx_set_attr)(s->spare, STORM_KEY_EXTRA, "x", 1);
	if (rc == 0)
		rc = STORM_CALL(otel_thread_ctx_clear_attrs)(s->spare);
	if (rc == 0)
		rc = STORM_CALL(otel_thread_ctx_clear_ids)(s->spare);
	if (rc == 0)
		rc = STORM_CALL(otel_thread_ctx_set_attr)(s->spare, STORM_KEY_PAD, "y", 1);
	if (rc == 0)
		rc = STORM_CALL(otel_thread_ctx_clear)(s->spare);
	STORM_SPARE_CHECK(s, rc == 0, rc);
	memset(&empty, 0, sizeof(empty));
	empty.valid = 1;
	STORM_SPARE_CHECK(s, storm_holds(s->spare, &empty), 0);
	/* The readers, on what this thread publishes and on a record. */
	rc = STORM_CALL(otel_thread_ctx_read)(&got);
	if (sample == NULL)
		STORM_SPARE_CHECK(s, rc == OTEL_THREAD_CTX_ENOCTX, rc);
	else
		STORM_SPARE_CHECK(s, rc == 0 && memcmp(&got, sample, 28) == 0 &&
					     memcmp(got.attrs_data, sample->attrs_data,
						    got.attrs_data_size) == 0, rc);
	storm_expected(n, &want);
	memset(&got, 0, sizeof(got));
	rc = STORM_CALL(otel_thread_ctx_record_decode)(&want, sizeof(want), &got);
	STORM_SPARE_CHECK(s, rc == 0 && memcmp(&got, &want, 28 + want.attrs_data_size) == 0, rc);
	seen = 0;
	STORM_CALL(otel_thread_ctx_attr_iter_init_map)(&it, &want, 256);
	while (STORM_CALL(otel_thread_ctx_attr_iter_next)(&it, &a) == 0)
		seen++;
	STORM_SPARE_CHECK(s, seen == (n % 3 == 0 ? 3u : 2u), 0);
	STORM_SPARE_CHECK(s, STORM_CALL(otel_thread_ctx_record_attr)(&want, STORM_KEY_SEQ, &a) == 0 &&
				     a.len == want.attrs_data[1] &&
				     memcmp(a.value, want.attrs_data + 2, a.len) == 0, 0);
	STORM_SPARE_CHECK(s, STORM_CALL(otel_thread_ctx_key_count)() > STORM_KEY_EXTRA, 0);
	STORM_SPARE_CHECK(s, STORM_CALL(otel_thread_ctx_key_name)(STORM_KEY_SEQ) != NULL, 0);
	rc = STORM_CALL(otel_thread_ctx_key_find)(STORM_CALL(otel_thread_ctx_key_name)(STORM_KEY_SEQ),
						  &index);
	STORM_SPARE_CHECK(s, rc == 0 && index == STORM_KEY_SEQ, rc);
}

static struct storm *storm_active;

/*
 * The period doubles, now and for the writers after this one: the handler
 * finds the writer where it left it signal after signal.  The period is
 * four times the handler's own time, but the delivery of each signal is not
 * part of that, and where it takes the whole period (valgrind or qemu-user
 * on a loaded machine) the writer would get no time at all and the storm
 * would never end.  timer_settime() is async-signal-safe, and allocates
 * nothing.
 */
static inline void storm_slow_down(struct storm *s)
{
	struct itimerspec when;

	s->period_ns = s->period_ns * 2 > STORM_PERIOD_MAX_NS ? STORM_PERIOD_MAX_NS : s->period_ns * 2;
	s->period_floor_ns = s->period_ns;
	memset(&when, 0, sizeof(when));
	when.it_value.tv_nsec = s->period_ns;
	when.it_interval.tv_nsec = s->period_ns;
	timer_settime(s->timer, 0, &when, NULL);
}

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
	struct timespec t0, t1;

	(void)sig;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	__atomic_store_n(&s->handled, s->handled + 1, __ATOMIC_RELAXED);
	if (storm_matches(p, was) || storm_matches(p, next)) {
		if (p == NULL)
			s->null++;
		else
			s->ok++;
		if (path >= 0) {
			__atomic_store_n(&s->in_window[path], s->in_window[path] + 1, __ATOMIC_RELAXED);
			s->writer_samples++;
		}
	} else {
		s->wrong++;
		storm_describe(s, s->wrong_what, "the slot", p);
	}
	s->alloc_checked = counting_malloc_forbid(1);
	storm_spare_work(s, p, was, next);
	counting_malloc_forbid(0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	s->handler_ns = (s->handler_ns * 7 + (long)((t1.tv_sec - t0.tv_sec) * 1000000000L +
						    (t1.tv_nsec - t0.tv_nsec))) / 8;
	/* The timer's signals go to the writer, so the handler runs on its
	 * thread, and `records` is the writer's own progress. */
	if (__atomic_load_n(&s->records, __ATOMIC_RELAXED) != s->seen_records) {
		s->seen_records = __atomic_load_n(&s->records, __ATOMIC_RELAXED);
		s->stalled = 0;
	} else if (++s->stalled >= STORM_STALLED_SIGNALS) {
		s->stalled = 0;
		storm_slow_down(s);
	}
	errno = saved_errno;
}

/* Between the writer's steps: the handler sees each store as made. */
#define STORM_FENCE() __atomic_signal_fence(__ATOMIC_SEQ_CST)

/* The writer names what its next call publishes: a record, or NULL. */
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

/* The same, with an image. */
static inline void storm_expect_image(struct storm *s, int path, const struct storm_image *m)
{
	storm_expect(s, path, m->null ? NULL : &m->rec);
}

/* A step of `path` starts that does not change what the thread publishes
 * until storm_expect(). */
static inline void storm_begin(struct storm *s, int path)
{
	STORM_FENCE();
	s->path = path;
	STORM_FENCE();
}

/* The call returned: what it published is what the thread publishes. */
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

/* What the thread publishes, as the writer named it last. */
static inline struct storm_image storm_now(const struct storm *s)
{
	return s->images[s->committed];
}

/* Writes record n into ctx, and names it as what `path` publishes next
 * (r: the record). */
static inline int storm_draft(struct storm *s, int path, otel_thread_ctx *ctx, uint64_t n,
			      struct otel_thread_ctx_record *r)
{
	int rc = storm_write_draft(ctx, n);

	storm_expected(n, r);
	storm_expect(s, path, r);
	return rc;
}

/* The writer's own check of a saved context: -1 with the reason. */
static inline int storm_writer_check(struct storm *s, otel_thread_ctx *ctx,
				     const struct storm_image *m, const char *what)
{
	if (storm_holds_image(ctx, m))
		return 0;
	snprintf(s->writer_what, sizeof(s->writer_what), "%s: the saved context does not hold what "
		 "the thread published before (%s)", what, m->null ? "nothing" : "a record");
	return -1;
}

/* One step of the round: a publication by `path`, named before it is made. */
static inline int storm_take_step(struct storm *s, int path, int which, uint64_t n)
{
	otel_thread_ctx *ctx = which != STORM_NO_CTX ? s->ctx[which] : NULL;
	struct otel_thread_ctx_record r;
	struct otel_thread_ctx_attr attrs[4];
	struct storm_image before = storm_now(s), img;
	size_t na;
	int rc = 0;

	storm_begin(s, path);
	switch (path) {
	case STORM_FIRST:
	case STORM_ATTACH:
		rc = storm_draft(s, path, ctx, n, &r);
		if (rc == 0)
			rc = STORM_CALL(otel_thread_ctx_attach)(ctx, NULL);
		break;
	case STORM_ATTACH_SAVED:
		rc = storm_draft(s, path, s->ctx[STORM_B], n, &r);
		if (rc == 0)
			rc = STORM_CALL(otel_thread_ctx_attach)(s->ctx[STORM_B], ctx);
		s->saved[which] = before;
		if (rc == 0)
			rc = storm_writer_check(s, ctx, &before, "attach(ctx, saved)");
		break;
	case STORM_SWAP:
		rc = storm_draft(s, path, ctx, n, &r);
		if (rc == 0)
			rc = STORM_CALL(otel_thread_ctx_attach)(ctx, ctx);
		if (rc == 0)
			rc = storm_writer_check(s, ctx, &before, "attach(ctx, ctx)");
		break;
	case STORM_UPDATE:
		storm_expected(n, &r);
		na = storm_attrs_of(&r, attrs);
		rc = STORM_CALL(otel_thread_ctx_set_ids)(ctx, r.trace_id, r.span_id, r.trace_flags);
		if (rc == 0)
			rc = STORM_CALL(otel_thread_ctx_set_attrs)(ctx, attrs, na);
		storm_expect(s, path, &r);
		if (rc == 0)
			rc = STORM_CALL(otel_thread_ctx_update)(ctx);
		break;
	case STORM_RESTORE:
	case STORM_RESTORE_NOTHING:
		img = s->saved[which];
		storm_expect_image(s, path, &img);
		rc = STORM_CALL(otel_thread_ctx_update)(ctx);
		break;
	case STORM_DETACH:
		storm_expect(s, path, NULL);
		rc = STORM_CALL(otel_thread_ctx_detach)(ctx);
		if (ctx != NULL) {
			s->saved[which] = before;
			if (rc == 0)
				rc = storm_writer_check(s, ctx, &before, "detach(saved)");
		}
		break;
	case STORM_UPDATE_SPAN_ID: {
		uint64_t span = storm_span_of(n);

		r = before.rec;
		memcpy(r.span_id, &span, 8);
		storm_expect(s, path, &r);
		rc = STORM_CALL(otel_thread_ctx_update_span_id)(r.span_id);
		break;
	}
	case STORM_TRACE_FLAGS:
		r = before.rec;
		r.trace_flags ^= 1;
		storm_expect(s, path, &r);
		rc = STORM_CALL(otel_thread_ctx_update_trace_flags)(r.trace_flags);
		break;
	case STORM_UPDATE_ALL:
		storm_expected(n, &r);
		na = storm_attrs_of(&r, attrs);
		storm_expect(s, path, &r);
		rc = STORM_CALL(otel_thread_ctx_update_all)(r.trace_id, r.span_id, r.trace_flags,
							    attrs, na);
		break;
	}
	storm_committed(s);
	storm_end(s);
	return rc;
}

/* The calling writer's timer: SIGUSR1 to this thread every
 * STORM_PERIOD_NS, the first one at a random point of the first period.
 * Returns 0, or -1 with the reason. */
static inline int storm_arm(struct storm *s)
{
	struct sigevent ev;
	struct itimerspec when;

	memset(&ev, 0, sizeof(ev));
	ev.sigev_notify = SIGEV_THREAD_ID;
	ev.sigev_signo = SIGUSR1;
	ev.sigev_notify_thread_id = (pid_t)syscall(SYS_gettid);
	if (timer_create(CLOCK_MONOTONIC, &ev, &s->timer) != 0) {
		snprintf(s->writer_what, sizeof(s->writer_what), "timer_create: %s", strerror(errno));
		return -1;
	}
	/* xorshift64 */
	s->phase ^= s->phase << 13;
	s->phase ^= s->phase >> 7;
	s->phase ^= s->phase << 17;
	s->period_ns = 4 * s->handler_ns;
	if (s->period_ns < STORM_PERIOD_NS)
		s->period_ns = STORM_PERIOD_NS;
	/* Under qemu-user the delivery of a signal, which the handler's own
	 * time does not count, can take longer than STORM_PERIOD_NS: the
	 * writer would spend all its time in handlers (seen: 10 publications
	 * in 278 s). */
	if (getenv("OTEL_TEST_EMULATED") != NULL && s->period_ns < STORM_PERIOD_EMULATED_NS)
		s->period_ns = STORM_PERIOD_EMULATED_NS;
	if (s->period_ns < s->period_floor_ns)
		s->period_ns = s->period_floor_ns;
	if (s->period_ns > STORM_PERIOD_MAX_NS)
		s->period_ns = STORM_PERIOD_MAX_NS;
	memset(&when, 0, sizeof(when));
	when.it_value.tv_nsec = 1 + (long)(s->phase % (uint64_t)s->period_ns);
	when.it_interval.tv_nsec = s->period_ns;
	if (timer_settime(s->timer, 0, &when, NULL) != 0) {
		snprintf(s->writer_what, sizeof(s->writer_what), "timer_settime: %s", strerror(errno));
		timer_delete(s->timer);
		return -1;
	}
	return 0;
}

/* No more signals for the calling writer: blocked (what is pending stays
 * pending and goes with the thread), and its timer deleted. */
static inline void storm_disarm(struct storm *s)
{
	sigset_t block;

	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &block, NULL);
	timer_delete(s->timer);
}

static void *storm_writer_main(void *arg);

/*
 * The storm moves to a new writer thread, which carries on with the next
 * step, its first publication; this one publishes once more and exits
 * while it publishes.  Returns 1 when it handed over, 0 when it goes on
 * itself.
 */
static inline int storm_hand_over(struct storm *s, uint64_t n)
{
	unsigned int next = s->writers_made;
	struct otel_thread_ctx_record r;
	int rc;

	/* The writer that had this entry of the ring is joined. */
	if (__atomic_load_n(&s->joined, __ATOMIC_ACQUIRE) + STORM_WRITER_RING <= next)
		return 0; /* not yet: this one goes on */
	if (pthread_create(&s->writers[next % STORM_WRITER_RING], NULL, storm_writer_main, s) != 0)
		return 0;
	__atomic_store_n(&s->writers_made, next + 1, __ATOMIC_RELEASE);
	/* No more samples here: the images are the next writer's from now
	 * on (nothing published, as here now). */
	storm_disarm(s);
	storm_expected(n, &r);
	rc = STORM_CALL(otel_thread_ctx_update_all)(r.trace_id, r.span_id, r.trace_flags, NULL, 0);
	if (rc != 0) {
		/* The next writer stops at once, and reports this. */
		s->rc = rc;
		__atomic_store_n(&s->stop, 1, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&s->writer, next, __ATOMIC_RELEASE);
	sem_post(&s->go);
	return 1;
}

/*
 * A writer thread: publishes by each step of the round in turn until
 * s->stop, naming each publication before it makes it.  Its first step
 * is its first publication.  At the end of a round in which it was sampled
 * STORM_WRITER_SAMPLES times inside its calls, it hands the storm over to a
 * new writer thread and exits.  The last one detaches and reports.
 */
static void *storm_writer_main(void *arg)
{
	struct storm *s = arg;
	int rc = 0, first = 1;

	while (sem_wait(&s->go) != 0 && errno == EINTR)
		;
	s->writer_samples = 0;
	if (storm_arm(s) != 0) {
		s->rc = -1;
		__atomic_store_n(&s->done, 1, __ATOMIC_RELEASE);
		return NULL;
	}
	while (rc == 0 && !__atomic_load_n(&s->stop, __ATOMIC_RELAXED)) {
		const struct storm_step *st = &storm_round[s->step % STORM_ROUND_STEPS];
		int path = first ? STORM_FIRST : st->path;

		first = 0;
		s->n++;
		__atomic_store_n(&s->records, s->n, __ATOMIC_RELAXED);
		rc = storm_take_step(s, path, st->ctx, s->n);
		s->step++;
		if (rc == 0 && s->step % STORM_ROUND_STEPS == 0 &&
		    s->writer_samples >= STORM_WRITER_SAMPLES &&
		    !__atomic_load_n(&s->stop, __ATOMIC_RELAXED) && storm_hand_over(s, ++s->n))
			return NULL;
	}
	storm_expect(s, -1, NULL);
	if (rc == 0)
		rc = STORM_CALL(otel_thread_ctx_detach)(NULL);
	storm_committed(s);
	storm_disarm(s);
	if (rc != 0)
		s->rc = rc;
	__atomic_store_n(&s->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Whether the storm may stop: `want` samples, enough publications, and
 * every path sampled inside its window; or the writer stopped by itself (on
 * an error, which the test then reports). */
static inline int storm_done(const struct storm *s, unsigned long want)
{
	if (__atomic_load_n(&s->done, __ATOMIC_ACQUIRE))
		return 1;
	if (__atomic_load_n(&s->handled, __ATOMIC_RELAXED) < want ||
	    __atomic_load_n(&s->records, __ATOMIC_RELAXED) <= STORM_MIN_RECORDS)
		return 0;
	for (int i = 0; i < STORM_PATHS; i++) {
		if (i == STORM_FIRST && !s->first_sampled)
			continue;
		if (__atomic_load_n(&s->in_window[i], __ATOMIC_RELAXED) < s->window_samples)
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

static inline int storm_create(otel_thread_ctx **ctx, unsigned int capacity)
{
	struct otel_thread_ctx_options o = OTEL_THREAD_CTX_OPTIONS_INIT;

	o.attrs_capacity = capacity;
	o.flags = capacity == 0 ? OTEL_THREAD_CTX_OPTION_IDS_ONLY : 0;
	return STORM_CALL(otel_thread_ctx_create_with)(ctx, &o);
}

static inline void storm_destroy_all(struct storm *s)
{
	for (int i = 0; i < STORM_CTXS; i++)
		STORM_CALL(otel_thread_ctx_destroy)(s->ctx[i]);
	STORM_CALL(otel_thread_ctx_destroy)(s->spare);
	STORM_CALL(otel_thread_ctx_destroy)(s->spare_copy);
	STORM_CALL(otel_thread_ctx_destroy)(s->spare_small);
	STORM_CALL(otel_thread_ctx_destroy)(s->spare_saved);
}

/*
 * The storm: starts the first writer, which (like each one after it)
 * interrupts itself with its timer, until storm_done() or `limit_s`
 * seconds, then stops it.  The contexts the writers and the handler work on are created here.
 * Returns 0, or -1 when the storm could not be set up (what failed is in
 * s->wrong_what).
 */
static inline int storm_run(struct storm *s, unsigned long want, double limit_s)
{
	static const unsigned int capacities[STORM_CTXS] = {
		[STORM_A] = OTEL_THREAD_CTX_ATTRS_MAX, [STORM_B] = STORM_SMALL_CAPACITY,
		[STORM_C] = STORM_SMALL_CAPACITY,     [STORM_S1] = OTEL_THREAD_CTX_ATTRS_MAX,
		[STORM_S2] = STORM_SMALL_CAPACITY,    [STORM_S3] = OTEL_THREAD_CTX_ATTRS_MAX,
	};
	struct sigaction sa;
	double start;
	int rc = 0;

	memset(s, 0, sizeof(*s));
	s->committed = 0;
	s->images[0].null = 1;
	s->committing = s->path = -1;
	s->rc = 0;
	s->spare_seq = UINT64_C(1) << 40;
	s->first_sampled = counting_malloc_mode() != COUNTING_MALLOC_REPLACED;
	s->window_samples = env_count("OTEL_TEST_WINDOW_SAMPLES", STORM_WINDOW_SAMPLES);
	s->phase = UINT64_C(0x9e3779b97f4a7c15);
	for (int i = 0; i < STORM_CTXS && rc == 0; i++)
		rc = storm_create(&s->ctx[i], capacities[i]);
	if (rc == 0)
		rc = storm_create(&s->spare, OTEL_THREAD_CTX_ATTRS_MAX);
	if (rc == 0)
		rc = storm_create(&s->spare_copy, OTEL_THREAD_CTX_ATTRS_MAX);
	if (rc == 0)
		rc = storm_create(&s->spare_saved, OTEL_THREAD_CTX_ATTRS_MAX);
	if (rc == 0)
		rc = storm_create(&s->spare_small, 4);
	if (rc == 0)
		rc = STORM_CALL(otel_thread_ctx_set_attr)(s->spare_small, 1, "ab", 2);
	if (rc != 0) {
		snprintf(s->wrong_what, sizeof(s->wrong_what), "cannot create the contexts");
		storm_destroy_all(s);
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
			storm_destroy_all(s);
			return -1;
		}
	}
	storm_active = s;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = storm_on_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sem_init(&s->go, 0, 0) != 0 || sigaction(SIGUSR1, &sa, NULL) != 0 ||
	    pthread_create(&s->writers[0], NULL, storm_writer_main, s) != 0) {
		snprintf(s->wrong_what, sizeof(s->wrong_what), "cannot start the storm");
		storm_destroy_all(s);
		return -1;
	}
	s->writers_made = 1;
	sem_post(&s->go);
	start = storm_now_s();
	while (!storm_done(s, want) && storm_now_s() - start <= limit_s) {
		struct timespec pause = { 0, 1000000 };
		unsigned int w = __atomic_load_n(&s->writer, __ATOMIC_ACQUIRE);

		/* The writers that handed over have exited, or are about to. */
		while (s->joined < w) {
			pthread_join(s->writers[s->joined % STORM_WRITER_RING], NULL);
			__atomic_store_n(&s->joined, s->joined + 1, __ATOMIC_RELEASE);
		}
		nanosleep(&pause, NULL);
	}
	__atomic_store_n(&s->stop, 1, __ATOMIC_RELAXED);
	/* Every writer ends: the last one (which may still hand over to
	 * one that stops at once) reports. */
	while (!__atomic_load_n(&s->done, __ATOMIC_ACQUIRE)) {
		struct timespec pause = { 0, 1000000 };

		nanosleep(&pause, NULL);
	}
	while (s->joined < __atomic_load_n(&s->writers_made, __ATOMIC_ACQUIRE)) {
		pthread_join(s->writers[s->joined % STORM_WRITER_RING], NULL);
		__atomic_store_n(&s->joined, s->joined + 1, __ATOMIC_RELEASE);
	}
	signal(SIGUSR1, SIG_DFL);
	sem_destroy(&s->go);
	storm_destroy_all(s);
	printf("signal-storm: a signal every %ld us (the last writer's timer): %lu handled: "
	       "%lu records, %lu empty as due, "
	       "%lu wrong; %llu publications by %u writer threads; save() %lu times, %lu wrong, "
	       "%lu refused inside a publication (ENESTED); %lu publications by the handler, put "
	       "back; samples inside each path's calls:",
	       s->period_ns / 1000, s->handled, s->ok, s->null, s->wrong,
	       (unsigned long long)s->records,
	       s->writers_made, s->saves_checked, s->saves_wrong, s->saves_nested,
	       s->handler_published);
	for (int i = 0; i < STORM_PATHS; i++)
		printf(" %s %lu;", storm_path_names[i], s->in_window[i]);
	printf(" the handler's own work %lu times, allocation and locks %s\n", s->spare_calls,
	       s->alloc_checked ? "forbidden (counting allocator)" :
				  "not checked (another allocator is in use)");
	if (!s->first_sampled)
		printf("signal-storm: the first publication of a thread is not required to be "
		       "sampled here: valgrind delivers signals at system calls and at the end "
		       "of time slices only\n");
	fflush(stdout);
	return 0;
}

/* What a verdict looks at. */
#define STORM_CHECK_SLOT 1 /* the slot, the handler's own work, the writer, coverage */
#define STORM_CHECK_SAVE 2 /* what save() gives in the handler */
#define STORM_CHECK_ALL (STORM_CHECK_SLOT | STORM_CHECK_SAVE)

/* The storm's verdict on `what`: 0, or 1 with the reason in why. */
static inline int storm_verdict(const struct storm *s, int what, char *why, size_t cap)
{
	if (s->rc == -1)
		snprintf(why, cap, "the writer failed: %s", s->writer_what);
	else if (s->rc != 0)
		snprintf(why, cap, "the writer failed: %s", otel_thread_ctx_strerror(s->rc));
	else if ((what & STORM_CHECK_SLOT) && s->wrong != 0)
		snprintf(why, cap, "%lu samples neither the last record nor the next; first: %s",
			 s->wrong, s->wrong_what);
	else if ((what & STORM_CHECK_SAVE) && s->saves_wrong != 0)
		snprintf(why, cap, "%lu of %lu save() calls in the handler neither the last record "
			 "nor the next; first: %s", s->saves_wrong, s->saves_checked, s->save_what);
	else if ((what & STORM_CHECK_SAVE) && s->saves_checked == 0)
		snprintf(why, cap, "save() was never called in the handler");
	else if ((what & STORM_CHECK_SLOT) && s->spare_rc != 0)
		snprintf(why, cap, "the handler's own work failed at storm-run.h:%u (%d)", s->spare_line,
			 s->spare_rc);
	else if (s->records <= STORM_MIN_RECORDS)
		snprintf(why, cap, "only %llu publications", (unsigned long long)s->records);
	else {
		for (int i = 0; i < STORM_PATHS; i++) {
			if (i == STORM_FIRST && !s->first_sampled)
				continue;
			if (s->in_window[i] < s->window_samples) {
				snprintf(why, cap, "no sample landed inside %s: the storm did not "
					 "test it", storm_path_names[i]);
				return 1;
			}
		}
		return 0;
	}
	return 1;
}

/* The whole verdict: 0, or 1 with the reason in why. */
static inline int storm_failed(const struct storm *s, char *why, size_t cap)
{
	return storm_verdict(s, STORM_CHECK_ALL, why, cap);
}

#endif /* OTEL_TESTS_STORM_RUN_H */
