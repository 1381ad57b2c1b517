/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cost of every write and of the in-process read, side by side with the
 * least a shared library can do to publish a thread-local pointer, in one
 * process and one run:
 *
 *   (0) a call into a shared library that does nothing;
 *   (a) a pointer swap on an initial-exec variable, the limit;
 *   (b) the same swap on a TLS-descriptor variable compiled by the compiler
 *       (-mtls-dialect=gnu2 on x86-64), the ideal TLSDESC writer;
 *   (c) the same swap on a general-dynamic variable, through __tls_get_addr;
 *   (d) the same swap on otel_thread_ctx_v1 through the library's own access
 *       sequence, a yardstick that splits the cost of an API function into
 *       the access and the rest.
 *
 * The baselines are functions of shared libraries (bench/baseline.c) called
 * through the PLT, as this program calls the library, so that every row pays
 * the same kind of call.  Each row is timed as the median of repetitions of
 * a fixed number of iterations, calibrated to a duration, on a pinned CPU,
 * repetitions of all rows interleaved so that a change of load affects them
 * alike.  Under valgrind (callgrind) the program counts the instructions per
 * operation, which a loaded machine does not change.  Then: per-thread cost
 * with 1, 2, 8 and 64 threads (among them one context attached by every
 * thread at once), memory per publishing thread and per context, and
 * resident memory after a churn of threads that each published.
 *
 * Built twice: `bench` calls the shared library; `bench-archive`
 * (OTEL_BENCH_ARCHIVE) links the static library into the executable, where
 * the linker relaxes the library's TLS descriptor accesses to local-exec and
 * calls to it are direct; there (d) is compiled into the executable too, and
 * the target of attach is a ratio to (a).
 *
 * Run with --help for the options.  Exit status: 0 when everything ran
 * (whether or not the targets are met: the tables say), 1 on a failure.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <link.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef __GLIBC__
#include <gnu/libc-version.h>
#endif
#if OTEL_BENCH_CALLGRIND
#include <valgrind/callgrind.h>
#endif

#include <otel_thread_ctx.h>

#include "baseline.h"

#ifndef OTEL_BENCH_COMPILER
#define OTEL_BENCH_COMPILER "unknown compiler"
#endif
#ifndef OTEL_BENCH_DESC_FLAG
#define OTEL_BENCH_DESC_FLAG "?"
#endif
#ifndef OTEL_BENCH_NO_VALGRIND
#define OTEL_BENCH_NO_VALGRIND "valgrind was not available when the benchmark was configured"
#endif
#ifndef OTEL_BENCH_GD_FLAG
#define OTEL_BENCH_GD_FLAG "?"
#endif

#ifdef OTEL_BENCH_ARCHIVE
#define ARCHIVE 1
#define LIBRARY_KIND "the static library (libotel-thread-ctx.a) linked into this " \
	"executable: direct calls, TLS accesses relaxed to local-exec"
#else
#define ARCHIVE 0
#define LIBRARY_KIND "the shared library (libotel-thread-ctx.so), called through the PLT"
#endif

/* ------------------------------------------------------------------ */
/* Options                                                              */

static struct {
	unsigned reps;            /* repetitions per operation */
	double rep_ms;            /* duration of one repetition */
	unsigned scale_reps;      /* repetitions per thread count */
	double scale_ms;          /* per-thread duration, scaling runs */
	unsigned mem_threads;     /* threads alive at once, memory test */
	unsigned churn;           /* threads created and exited, churn test */
	unsigned churn_batch;     /* of which alive at once */
	unsigned long instr_iters; /* iterations counted under callgrind */
	const char *csv, *json, *markdown;
	bool instructions;        /* count instructions under callgrind */
	bool instr_child;         /* this process is the one valgrind runs */
	bool ops_only;            /* no scaling, memory or churn */
} opt = {
	.reps = 11,
	.rep_ms = 20,
	.scale_reps = 3,
	.scale_ms = 10,
	.mem_threads = 1000,
	.churn = 100000,
	.churn_batch = 32,
	.instr_iters = 10000,
	.instructions = true,
};

/* Threads of the scaling runs: at most MAX_SCALE_THREADS. */
#define MAX_SCALE_THREADS 64
static const unsigned scale_threads[] = {1, 2, 8, MAX_SCALE_THREADS};
#define N_SCALE (sizeof(scale_threads) / sizeof(scale_threads[0]))

static void die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("bench: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* ------------------------------------------------------------------ */
/* What every operation works on                                        */

/*
 * One thread's objects: two contexts to switch between, the context a
 * scope replaces and the one it saves it in, two pointer values for the
 * baselines, a record for the reader.  Contexts without attributes are
 * span-only (attrs_capacity 0); those with attributes have the default
 * capacity, as has `saved`, which must hold whatever it replaces.
 */
struct fixture {
	otel_thread_ctx *ctx[2];
	otel_thread_ctx *outer, *saved;
	bool borrowed; /* ctx[] belong to the caller of fixture_init */
	void *val[2];
	struct otel_thread_ctx_record rec;
};

static const uint8_t trace_ids[2][16] = {
	{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6,
	 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
	{0x0a, 0xf7, 0x65, 0x19, 0x16, 0xcd, 0x43, 0xdd,
	 0x84, 0x48, 0xeb, 0x21, 0x1c, 0x80, 0x31, 0x9c},
};
static const uint8_t span_ids[2][8] = {
	{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
	{0xb7, 0xad, 0x6b, 0x71, 0x69, 0x20, 0x33, 0x31},
};
/* The span of the context a scope replaces. */
static const uint8_t outer_span_id[8] = {0x53, 0xc0, 0x9e, 0x12, 0x44, 0x7d, 0xa1, 0x06};
#define N_ATTRS 4
#define ATTR_LEN 16
static const char attr_values[2][N_ATTRS][ATTR_LEN + 1] = {
	{"GET /api/v1/user", "checkout-worker1", "tenant-000000042", "region-eu-west-1"},
	{"POST /api/v1/ord", "checkout-worker2", "tenant-000000043", "region-us-east-2"},
};

/* A context with ids only: no room for attributes at all. */
static const struct otel_thread_ctx_options span_only = {
	sizeof(struct otel_thread_ctx_options), 0, 0,
};

/* The same attributes as one list, for otel_thread_ctx_set_attrs() and
 * otel_thread_ctx_update_all(). */
#define ATTR(k, a) { (a) + 1, ATTR_LEN, (const uint8_t *)attr_values[k][a] }
static const struct otel_thread_ctx_attr attr_lists[2][N_ATTRS] = {
	{ ATTR(0, 0), ATTR(0, 1), ATTR(0, 2), ATTR(0, 3) },
	{ ATTR(1, 0), ATTR(1, 1), ATTR(1, 2), ATTR(1, 3) },
};
#undef ATTR

#define CHECK(call)                                                        \
	do {                                                               \
		int check_err_ = (call);                                   \
		if (__builtin_expect(check_err_ != 0, 0))                  \
			die("%s: %s", #call, otel_thread_ctx_strerror(check_err_)); \
	} while (0)

static void set_attrs(otel_thread_ctx *ctx, unsigned k)
{
	for (unsigned a = 0; a < N_ATTRS; a++)
		CHECK(otel_thread_ctx_set_attr(ctx, a + 1, attr_values[k][a], ATTR_LEN));
}

/* A context with trace k's ids and `span`, and, when asked, its four
 * attributes; span-only (capacity 0) without them. */
static otel_thread_ctx *make_ctx(unsigned k, const uint8_t span[8], bool attrs)
{
	otel_thread_ctx *ctx;

	CHECK(otel_thread_ctx_create_with(&ctx, attrs ? NULL : &span_only));
	CHECK(otel_thread_ctx_set_ids(ctx, trace_ids[k], span, 1));
	if (attrs)
		set_attrs(ctx, k);
	return ctx;
}

/*
 * The fixture of one operation, nothing published.  With `one` the two
 * contexts to switch between are that one context, which the caller owns
 * (the scaling runs: every thread attaches it at once, or each its own).
 */
static void fixture_init(struct fixture *fx, bool attrs, otel_thread_ctx *one)
{
	for (unsigned k = 0; k < 2; k++) {
		fx->ctx[k] = one != NULL ? one : make_ctx(k, span_ids[k], attrs);
		fx->val[k] = &fx->ctx[k];
	}
	fx->borrowed = one != NULL;
	fx->outer = make_ctx(0, outer_span_id, attrs);
	CHECK(otel_thread_ctx_create(&fx->saved));
}

static void fixture_fini(struct fixture *fx)
{
	CHECK(otel_thread_ctx_detach(NULL));
	if (!fx->borrowed)
		for (unsigned k = 0; k < 2; k++)
			otel_thread_ctx_destroy(fx->ctx[k]);
	otel_thread_ctx_destroy(fx->outer);
	otel_thread_ctx_destroy(fx->saved);
}

static void attach_first(struct fixture *fx)
{
	CHECK(otel_thread_ctx_attach(fx->ctx[0], NULL));
}

/*
 * The checks of a run, once after its loop: the thread publishes exactly
 * what `ctx` holds (header and attributes), or a record with this span id
 * (and trace flags), or nothing.
 */
static void expect_published(const otel_thread_ctx *ctx, const char *what)
{
	struct otel_thread_ctx_record want, got;

	CHECK(otel_thread_ctx_get(ctx, &want));
	CHECK(otel_thread_ctx_read(&got));
	if (memcmp(&want, &got, offsetof(struct otel_thread_ctx_record, attrs_data)) != 0 ||
	    memcmp(want.attrs_data, got.attrs_data, want.attrs_data_size) != 0)
		die("%s: the thread publishes another record than the context's", what);
}

static void expect_span(const uint8_t span[8], int flags, const char *what)
{
	struct otel_thread_ctx_record got;

	CHECK(otel_thread_ctx_read(&got));
	if (memcmp(got.span_id, span, 8) != 0 || (flags >= 0 && got.trace_flags != flags))
		die("%s: the thread publishes the wrong span id or trace flags", what);
}

static void expect_nothing(const char *what)
{
	struct otel_thread_ctx_record got;

	if (otel_thread_ctx_read(&got) != OTEL_THREAD_CTX_ENOCTX)
		die("%s: the thread still publishes a record", what);
}

/* ------------------------------------------------------------------ */
/* The operations: each run_* performs n of them (n >= 1)               */

#define LOOP for (uint64_t i = 0; i < n; i++)
#define K ((unsigned)(i & 1))
/* K of the last iteration. */
#define LAST ((unsigned)((n - 1) & 1))

#define SWAP_RUN(model)                                                    \
	static void run_##model##_swap(struct fixture *fx, uint64_t n)     \
	{                                                                  \
		bench_##model##_swap(fx->val[1]);                          \
		LOOP {                                                     \
			if (__builtin_expect(bench_##model##_swap(fx->val[K]) != \
					     fx->val[K ^ 1], 0))           \
				die("baseline " #model ": wrong old value"); \
		}                                                          \
		bench_##model##_swap(NULL);                                \
	}
SWAP_RUN(ie)
SWAP_RUN(desc)
SWAP_RUN(gd)
SWAP_RUN(own)

static void run_nop(struct fixture *fx, uint64_t n)
{
	LOOP {
		if (__builtin_expect(bench_ie_nop(fx->val[K]) != fx->val[K], 0))
			die("baseline nop: wrong value");
	}
}

/* attach replacing another context: A, B, A, B ... */
static void run_attach(struct fixture *fx, uint64_t n)
{
	CHECK(otel_thread_ctx_attach(fx->ctx[1], NULL));
	LOOP {
		CHECK(otel_thread_ctx_attach(fx->ctx[K], NULL));
	}
	expect_published(fx->ctx[LAST], "attach");
}

/* detach on a thread that publishes nothing. */
static void run_detach_empty(struct fixture *fx, uint64_t n)
{
	(void)fx;
	LOOP {
		CHECK(otel_thread_ctx_detach(NULL));
	}
	expect_nothing("detach");
}

static void run_attach_detach(struct fixture *fx, uint64_t n)
{
	LOOP {
		CHECK(otel_thread_ctx_attach(fx->ctx[K], NULL));
		CHECK(otel_thread_ctx_detach(NULL));
	}
	expect_nothing("attach + detach");
}

/* attach that saves what it replaces: the first half of a scope. */
static void run_attach_saved(struct fixture *fx, uint64_t n)
{
	CHECK(otel_thread_ctx_attach(fx->ctx[1], NULL));
	LOOP {
		CHECK(otel_thread_ctx_attach(fx->ctx[K], fx->saved));
	}
	expect_published(fx->ctx[LAST], "attach with saved");
	CHECK(otel_thread_ctx_update(fx->saved));
	expect_published(fx->ctx[LAST ^ 1], "attach with saved: the saved context");
}

/* The scope pattern, inside an outer context: enter with
 * attach(ctx, saved), which saves what was published, and restore it with
 * update(saved). */
static void run_scope(struct fixture *fx, uint64_t n)
{
	CHECK(otel_thread_ctx_attach(fx->outer, NULL));
	LOOP {
		CHECK(otel_thread_ctx_attach(fx->ctx[K], fx->saved));
		CHECK(otel_thread_ctx_update(fx->saved));
	}
	expect_published(fx->outer, "scope");
}

/* A child span: the thread's own record, no context. */
static void run_update_span_id(struct fixture *fx, uint64_t n)
{
	attach_first(fx);
	LOOP {
		CHECK(otel_thread_ctx_update_span_id(span_ids[K]));
	}
	expect_span(span_ids[LAST], 1, "update_span_id");
}

/* The sampling decision, after the span was published. */
static void run_update_trace_flags(struct fixture *fx, uint64_t n)
{
	attach_first(fx);
	LOOP {
		CHECK(otel_thread_ctx_update_trace_flags((uint8_t)K));
	}
	expect_span(span_ids[0], (int)LAST, "update_trace_flags");
}

/* A new request in one call: ids and four attributes. */
static void run_update_all(struct fixture *fx, uint64_t n)
{
	attach_first(fx);
	LOOP {
		CHECK(otel_thread_ctx_update_all(trace_ids[K], span_ids[K], 1, attr_lists[K],
						 N_ATTRS));
	}
	expect_span(span_ids[LAST], 1, "update_all");
}

/* The same changes made to a context, which is then published again. */
static void run_update_span(struct fixture *fx, uint64_t n)
{
	attach_first(fx);
	LOOP {
		CHECK(otel_thread_ctx_set_span_id(fx->ctx[0], span_ids[K]));
		CHECK(otel_thread_ctx_update(fx->ctx[0]));
	}
	expect_published(fx->ctx[0], "set_span_id + update");
}

static void run_update_ids(struct fixture *fx, uint64_t n)
{
	attach_first(fx);
	LOOP {
		CHECK(otel_thread_ctx_set_ids(fx->ctx[0], trace_ids[K], span_ids[K], 1));
		CHECK(otel_thread_ctx_update(fx->ctx[0]));
	}
	expect_published(fx->ctx[0], "set_ids + update");
}

static void run_update_attrs(struct fixture *fx, uint64_t n)
{
	attach_first(fx);
	LOOP {
		CHECK(otel_thread_ctx_set_ids(fx->ctx[0], trace_ids[K], span_ids[K], 1));
		for (unsigned a = 0; a < N_ATTRS; a++)
			CHECK(otel_thread_ctx_set_attr(fx->ctx[0], a + 1,
						       attr_values[K][a], ATTR_LEN));
		CHECK(otel_thread_ctx_update(fx->ctx[0]));
	}
	expect_published(fx->ctx[0], "set_ids + set_attr + update");
}

/* The same with the attributes as one list. */
static void run_update_attr_list(struct fixture *fx, uint64_t n)
{
	attach_first(fx);
	LOOP {
		CHECK(otel_thread_ctx_set_ids(fx->ctx[0], trace_ids[K], span_ids[K], 1));
		CHECK(otel_thread_ctx_set_attrs(fx->ctx[0], attr_lists[K], N_ATTRS));
		CHECK(otel_thread_ctx_update(fx->ctx[0]));
	}
	expect_published(fx->ctx[0], "set_ids + set_attrs + update");
}

static void run_read(struct fixture *fx, uint64_t n)
{
	attach_first(fx);
	LOOP {
		CHECK(otel_thread_ctx_read(&fx->rec));
	}
	if (memcmp(fx->rec.span_id, span_ids[0], 8) != 0)
		die("read: wrong record");
}

#undef LOOP
#undef K
#undef LAST

enum group { BASELINE, LIBRARY };

struct op {
	const char *id;
	const char *label;
	enum group group;
	/* Pointer swaps a writer must do for one operation (the ratio is to
	 * this many times (b)); 0 for the call-only row. */
	unsigned swaps;
	bool attrs;          /* fixture with four attributes */
	/* x86-64: highest ratio to (b), judged in `bench`, and to (a),
	 * judged in `bench-archive`; 0: none. */
	double target_b, target_a;
	bool vs_gd;          /* compared with (c) */
	void (*run)(struct fixture *fx, uint64_t n);
	/* Measured. */
	uint64_t iters;
	double *ns;          /* reps samples */
	double median, min, max, q1, q3;
	/* Median over the repetitions of the ratio to (b) (to (a), to (c))
	 * in the same repetition (which ran a moment before or after). */
	double ratio;
	double ratio_a;
	double ratio_c;      /* the same to (c), per swap */
	double instr;        /* per op, < 0: not counted */
};

#define OP(id_, label_, group_, swaps_, attrs_, target_b_, target_a_, vs_gd_, run_) \
	{.id = id_, .label = label_, .group = group_, .swaps = swaps_,        \
	 .attrs = attrs_, .target_b = target_b_, .target_a = target_a_,       \
	 .vs_gd = vs_gd_, .run = run_}

static struct op ops[] = {
	OP("call", "(0) call via PLT, no TLS access", BASELINE, 0, false, 0, 0, false, run_nop),
	OP("ie", "(a) swap, initial-exec TLS", BASELINE, 1, false, 0, 0, false, run_ie_swap),
	OP("desc", "(b) swap, TLSDESC (compiler)", BASELINE, 1, false, 0, 0, false, run_desc_swap),
	OP("gd", "(c) swap, __tls_get_addr", BASELINE, 1, false, 0, 0, false, run_gd_swap),
#if ARCHIVE
	OP("own", "(d) swap, the library's local-exec access", BASELINE, 1, false, 0, 0, false,
	   run_own_swap),
#else
	OP("own", "(d) swap, the library's TLSDESC access", BASELINE, 1, false, 0, 0, false,
	   run_own_swap),
#endif
	OP("attach", "attach, span-only context (capacity 0)", LIBRARY, 1, false, 1.3, 1.1, true,
	   run_attach),
	OP("attach_attrs", "attach, 4 x 16 B attributes", LIBRARY, 1, true, 1.6, 0, true,
	   run_attach),
	OP("detach_empty", "detach (nothing attached)", LIBRARY, 1, false, 1.15, 0, true,
	   run_detach_empty),
	OP("attach_detach", "attach + detach (pair), span-only", LIBRARY, 2, false, 0, 0, true,
	   run_attach_detach),
	OP("attach_saved", "attach with saved, span-only", LIBRARY, 1, false, 0, 0, true,
	   run_attach_saved),
	OP("scope", "scope: attach + restore, span-only", LIBRARY, 2, false,
	   0, 0, true, run_scope),
	OP("scope_attrs", "scope: attach + restore, 4 attributes", LIBRARY, 2,
	   true, 0, 0, true, run_scope),
	OP("update_span_id", "update_span_id", LIBRARY, 1, false, 1.0, 0, true,
	   run_update_span_id),
	OP("update_span_id_attrs", "update_span_id, 4 attributes", LIBRARY, 1, true, 0, 0, true,
	   run_update_span_id),
	OP("update_trace_flags", "update_trace_flags", LIBRARY, 1, false, 0, 0, true,
	   run_update_trace_flags),
	OP("update_all", "update_all (ids + 4 x 16 B attributes)", LIBRARY, 1, true, 4, 0, true,
	   run_update_all),
	OP("update_span", "set_span_id + update", LIBRARY, 1, false, 0, 0, true, run_update_span),
	OP("update_span_attrs", "set_span_id + update, 4 attributes", LIBRARY, 1, true, 0, 0,
	   true, run_update_span),
	OP("update_ids", "set_ids + update", LIBRARY, 1, false, 0, 0, true, run_update_ids),
	OP("update_attr_list", "set_ids + set_attrs(4 x 16 B) + update", LIBRARY, 1, true, 0, 0,
	   true, run_update_attr_list),
	OP("update_attrs", "set_ids + 4 set_attr(16 B) + update", LIBRARY, 1, true, 0, 0, true,
	   run_update_attrs),
	OP("read", "read (ids)", LIBRARY, 1, false, 2, 0, true, run_read),
	OP("read_attrs", "read (ids + 4 attributes)", LIBRARY, 1, true, 2, 0, true, run_read),
};
#undef OP
#define N_OPS (sizeof(ops) / sizeof(ops[0]))

static struct op *op_by_id(const char *id)
{
	for (size_t i = 0; i < N_OPS; i++)
		if (strcmp(ops[i].id, id) == 0)
			return &ops[i];
	die("no operation %s", id);
	return NULL;
}

static uint64_t now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Time of the timed runs: on the thread's CPU clock, which stops while
 * other processes have the CPU, and on the wall clock; their ratio says how
 * much of the CPU this thread got. */
static double cpu_total_ns, wall_total_ns;

/*
 * One timed run of n operations, with a fresh fixture: ns per op, as the
 * thread's CPU time, so that time slices of other processes on a loaded
 * machine are not counted (their effect on caches and predictors is).
 */
static double time_op(const struct op *op, uint64_t n)
{
	struct fixture fx;
	uint64_t t0, t1, w0, w1;

	fixture_init(&fx, op->attrs, NULL);
	op->run(&fx, n / 16 + 1); /* warm-up: caches, branch predictors */
	w0 = now_ns(CLOCK_MONOTONIC);
	t0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
	op->run(&fx, n);
	t1 = now_ns(CLOCK_THREAD_CPUTIME_ID);
	w1 = now_ns(CLOCK_MONOTONIC);
	fixture_fini(&fx);
	cpu_total_ns += (double)(t1 - t0);
	wall_total_ns += (double)(w1 - w0);
	return (double)(t1 - t0) / (double)n;
}

/* Iterations that take about `ms` milliseconds. */
static uint64_t calibrate(const struct op *op, double ms)
{
	uint64_t n = 1000;

	for (;;) {
		double per_op = time_op(op, n);
		double total_ms = per_op * (double)n / 1e6;

		if (total_ms >= 2 || n >= (UINT64_C(1) << 40)) {
			double want = ms * 1e6 / per_op;

			return want < 1000 ? 1000 : (uint64_t)want;
		}
		n *= 8;
	}
}

/* ------------------------------------------------------------------ */
/* Statistics                                                           */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Quantile q of sorted samples, linear between neighbours. */
static double quantile(const double *s, size_t n, double q)
{
	double pos = q * (double)(n - 1);
	size_t lo = (size_t)pos;

	if (lo + 1 >= n)
		return s[n - 1];
	return s[lo] + (s[lo + 1] - s[lo]) * (pos - (double)lo);
}

static void summarize(double *s, size_t n, double *median, double *min, double *max,
		      double *q1, double *q3)
{
	qsort(s, n, sizeof(*s), cmp_double);
	*median = quantile(s, n, 0.5);
	*min = s[0];
	*max = s[n - 1];
	*q1 = quantile(s, n, 0.25);
	*q3 = quantile(s, n, 0.75);
}

/* ------------------------------------------------------------------ */
/* Machine                                                              */

static cpu_set_t all_cpus;
static int pinned_cpu = -1;

static void pin(void)
{
	cpu_set_t one;

	if (sched_getaffinity(0, sizeof(all_cpus), &all_cpus) != 0)
		return;
	for (int c = CPU_SETSIZE - 1; c >= 0; c--) {
		if (CPU_ISSET(c, &all_cpus)) {
			CPU_ZERO(&one);
			CPU_SET(c, &one);
			if (sched_setaffinity(0, sizeof(one), &one) == 0)
				pinned_cpu = c;
			return;
		}
	}
}

static char cpu_model[128] = "unknown";
static char kernel[sizeof(((struct utsname *)0)->release) * 3 + 8] = "unknown";
static char libc_version[128] = "unknown";
static double load_start[3], load_end[3];
static long online_cpus;

static void read_loadavg(double load[3])
{
	FILE *f = fopen("/proc/loadavg", "r");

	load[0] = load[1] = load[2] = -1;
	if (f == NULL)
		return;
	if (fscanf(f, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3)
		load[0] = load[1] = load[2] = -1;
	fclose(f);
}

static void read_machine(void)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	struct utsname u;
	char line[512];

	if (f != NULL) {
		while (fgets(line, sizeof(line), f) != NULL) {
			char *colon = strchr(line, ':');

			/* x86: "model name"; aarch64 kernels give no name. */
			if (colon != NULL && strncmp(line, "model name", 10) == 0) {
				snprintf(cpu_model, sizeof(cpu_model), "%s", colon + 2);
				cpu_model[strcspn(cpu_model, "\n")] = '\0';
				break;
			}
		}
		fclose(f);
	}
	if (uname(&u) == 0)
		snprintf(kernel, sizeof(kernel), "%s %s %s", u.sysname, u.release, u.machine);
#ifdef __GLIBC__
	snprintf(libc_version, sizeof(libc_version), "glibc %s", gnu_get_libc_version());
#else
	snprintf(libc_version, sizeof(libc_version), "not glibc (musl?)");
#endif
	online_cpus = sysconf(_SC_NPROCESSORS_ONLN);
	read_loadavg(load_start);
}

/* Resident memory in KiB.  smaps_rollup walks the page tables, so it is
 * exact at the moment it is read; statm, the fallback, is from counters
 * that older kernels update lazily per thread. */
static long rss_kib(void)
{
	char line[256];
	long kib = -1;
	FILE *f = fopen("/proc/self/smaps_rollup", "r");

	if (f != NULL) {
		while (fgets(line, sizeof(line), f) != NULL)
			if (sscanf(line, "Rss: %ld kB", &kib) == 1)
				break;
		fclose(f);
		if (kib >= 0)
			return kib;
	}
	f = fopen("/proc/self/statm", "r");
	if (f != NULL) {
		long size, resident;

		if (fscanf(f, "%ld %ld", &size, &resident) == 2)
			kib = resident * (sysconf(_SC_PAGESIZE) / 1024);
		fclose(f);
	}
	return kib;
}

/* Bytes the allocator has handed out and not got back; -1 if unknown. */
static long long heap_in_use(void)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
	struct mallinfo2 mi = mallinfo2();

	return (long long)(mi.uordblks + mi.hblkhd);
#else
	return -1;
#endif
}


/* ------------------------------------------------------------------ */
/* Instruction counts: this program again, under callgrind              */

#if OTEL_BENCH_CALLGRIND
/* In the process valgrind runs: every operation, counted between a reset
 * and a dump of callgrind's counters. */
static void instr_child(void)
{
	for (size_t i = 0; i < N_OPS; i++) {
		struct fixture fx;

		fixture_init(&fx, ops[i].attrs, NULL);
		ops[i].run(&fx, 100);
		CALLGRIND_ZERO_STATS;
		ops[i].run(&fx, opt.instr_iters);
		CALLGRIND_DUMP_STATS_AT(ops[i].id);
		fixture_fini(&fx);
	}
}
#endif

/* Runs the instruction child under valgrind and reads its dumps.  Returns
 * false, with the reason in `why`, when it cannot. */
static bool count_instructions(char *why, size_t why_len)
{
#if OTEL_BENCH_CALLGRIND && defined(OTEL_BENCH_VALGRIND)
	char dir[] = "/tmp/otel-bench-XXXXXX", out[PATH_MAX], self[PATH_MAX], iters[32];
	char opt_out[PATH_MAX + 32];
	pid_t pid;
	int status;
	ssize_t len;
	size_t found = 0;
	extern char **environ;

	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len < 0 || mkdtemp(dir) == NULL) {
		snprintf(why, why_len, "not counted: cannot prepare: %s", strerror(errno));
		return false;
	}
	self[len] = '\0';
	snprintf(out, sizeof(out), "%s/cg.out", dir);
	snprintf(opt_out, sizeof(opt_out), "--callgrind-out-file=%s", out);
	snprintf(iters, sizeof(iters), "%lu", opt.instr_iters);
	char *argv[] = {
		(char *)OTEL_BENCH_VALGRIND, (char *)"--tool=callgrind", (char *)"-q",
		opt_out, self, (char *)"--instructions-child", iters, NULL,
	};
	if (posix_spawn(&pid, argv[0], NULL, NULL, argv, environ) != 0 ||
	    waitpid(pid, &status, 0) != pid) {
		snprintf(why, why_len, "not counted: cannot run %s", argv[0]);
		return false;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		snprintf(why, why_len, "not counted: %s exited with status %d", argv[0], status);
		return false;
	}
	for (unsigned k = 1; k <= N_OPS + 1; k++) {
		char path[PATH_MAX + 16], line[512], id[64] = "";
		unsigned long long total = 0;
		bool have_total = false;
		FILE *f;

		snprintf(path, sizeof(path), "%s.%u", out, k);
		f = fopen(path, "r");
		if (f == NULL)
			continue;
		while (fgets(line, sizeof(line), f) != NULL) {
			if (sscanf(line, "desc: Trigger: Client Request: %63s", id) == 1)
				continue;
			if (sscanf(line, "totals: %llu", &total) == 1)
				have_total = true;
		}
		fclose(f);
		unlink(path);
		if (id[0] != '\0' && have_total) {
			op_by_id(id)->instr = (double)total / (double)opt.instr_iters;
			found++;
		}
	}
	unlink(out);
	rmdir(dir);
	if (found != N_OPS) {
		snprintf(why, why_len, "not counted: callgrind gave %zu of %zu counts", found, N_OPS);
		return false;
	}
	return true;
#else
	snprintf(why, why_len, "not counted: %s", OTEL_BENCH_NO_VALGRIND);
	return false;
#endif
}


/* ------------------------------------------------------------------ */
/* Scaling: the same operations on 1, 2, 8, 64 threads at once          */

/*
 * What runs on every thread.  The attach rows come in pairs that differ
 * only in whose context is attached: each thread its own, or one context
 * that every thread attaches at once (a context is a value that threads
 * only read); in both, each iteration attaches the same context again.
 * So that the two differ in nothing else, the own contexts all lie at the
 * shared one's offset in its cache line (a copy's 16-byte blocks straddle
 * lines alike), and run_scaling() places and interleaves both rows alike.
 */
enum scale_ctx {
	SCALE_FIXTURE, /* the operation's own fixture */
	SCALE_OWN,     /* one context per thread */
	SCALE_ONE,     /* one context for all the threads */
};

struct scale_op {
	const char *op;
	enum scale_ctx ctx;
	const char *label;
	/* Index of the row it is judged against (same thread count), or -1. */
	int versus;
};

/* A context attached on many threads at once costs what attach costs:
 * the highest ratio of a SCALE_ONE row to its SCALE_OWN row. */
#define ONE_CTX_TARGET 1.10

static const struct scale_op scale_ops[] = {
	{"desc", SCALE_FIXTURE, NULL, -1},
	{"attach", SCALE_OWN, "attach, span-only: each thread its own context", -1},
	{"attach", SCALE_ONE, "attach, span-only: one context, every thread", 1},
	{"attach_attrs", SCALE_OWN, "attach, 4 attributes: each thread its own context", -1},
	{"attach_attrs", SCALE_ONE, "attach, 4 attributes: one context, every thread", 3},
	{"update_span_id", SCALE_FIXTURE, NULL, -1},
	{"read", SCALE_FIXTURE, NULL, -1},
};
#define N_SCALE_OPS (sizeof(scale_ops) / sizeof(scale_ops[0]))

struct scale_result {
	double cpu_median, cpu_max; /* thread CPU ns per op, across threads */
	double wall;                /* wall ns per op, all threads together */
};
static struct scale_result scaling[N_SCALE_OPS][N_SCALE];
static bool scaling_done;

static const char *scale_label(size_t o)
{
	return scale_ops[o].label ? scale_ops[o].label : op_by_id(scale_ops[o].op)->label;
}

/* Row o against the row it is judged against, at thread count s. */
static double scale_versus(size_t o, size_t s)
{
	return scaling[o][s].cpu_median / scaling[scale_ops[o].versus][s].cpu_median;
}

/*
 * `count` contexts like make_ctx(0, span_ids[0], attrs), all at the same
 * offset in their cache line.  Of 64 * (count - 1) + 1 contexts, some
 * `count` share one of the 64 offsets; with glibc's 16-byte alignment, of
 * 4 * (count - 1) + 1 already, and the loop stops as soon as it has them.
 */
static void make_ctxs_alike(otel_thread_ctx **out, unsigned count, bool attrs)
{
	size_t total = 64 * ((size_t)count - 1) + 1, made = 0;
	otel_thread_ctx **all = calloc(total, sizeof(*all));
	unsigned in_class[64] = {0}, cls = 0;

	if (all == NULL)
		die("out of memory");
	while (made < total) {
		all[made] = make_ctx(0, span_ids[0], attrs);
		cls = (unsigned)((uintptr_t)all[made++] & 63);
		if (++in_class[cls] == count)
			break;
	}
	for (size_t i = 0, k = 0; i < made; i++) {
		if (((uintptr_t)all[i] & 63) == cls && k < count)
			out[k++] = all[i];
		else
			otel_thread_ctx_destroy(all[i]);
	}
	free(all);
}

struct scale_arg {
	const struct op *op;
	enum scale_ctx ctx;
	otel_thread_ctx *ctx_of; /* SCALE_ONE: the context of every thread;
				  * SCALE_OWN: this thread's */
	uint64_t n;
	pthread_barrier_t *barrier;
	double cpu_ns;
	uint64_t start, end; /* CLOCK_MONOTONIC */
};

static void *scale_thread(void *p)
{
	struct scale_arg *a = p;
	struct fixture fx;
	uint64_t t0, t1;

	fixture_init(&fx, a->op->attrs, a->ctx_of);
	a->op->run(&fx, a->n / 16 + 1);
	pthread_barrier_wait(a->barrier);
	a->start = now_ns(CLOCK_MONOTONIC);
	t0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
	a->op->run(&fx, a->n);
	t1 = now_ns(CLOCK_THREAD_CPUTIME_ID);
	a->end = now_ns(CLOCK_MONOTONIC);
	fixture_fini(&fx);
	a->cpu_ns = (double)(t1 - t0) / (double)a->n;
	return NULL;
}

/*
 * One run of row o on t threads at once: each thread's CPU ns per op into
 * cpu[0 .. t-1], the wall ns per op of them all into *wall.  Thread k runs
 * on the k-th of the CPUs this program may use, round robin, so that every
 * row places its threads alike.
 */
static void scale_once(size_t o, unsigned t, uint64_t n, otel_thread_ctx *const *own,
		       otel_thread_ctx *one, double *cpu, double *wall)
{
	const struct op *op = op_by_id(scale_ops[o].op);
	struct scale_arg args[MAX_SCALE_THREADS];
	pthread_t tids[MAX_SCALE_THREADS];
	pthread_barrier_t barrier;
	uint64_t first = UINT64_MAX, last = 0;
	int cpus = CPU_COUNT(&all_cpus);

	if (t > MAX_SCALE_THREADS)
		die("scaling: more than %d threads", MAX_SCALE_THREADS);
	pthread_barrier_init(&barrier, NULL, t + 1);
	for (unsigned k = 0; k < t; k++) {
		enum scale_ctx c = scale_ops[o].ctx;
		pthread_attr_t attr;

		args[k] = (struct scale_arg){op, c, c == SCALE_OWN ? own[k] : c == SCALE_ONE ? one : NULL,
					     n, &barrier, 0, 0, 0};
		pthread_attr_init(&attr);
		if (pinned_cpu >= 0 && cpus > 0) {
			cpu_set_t set;
			int want = (int)(k % (unsigned)cpus);

			CPU_ZERO(&set);
			for (int c2 = 0; c2 < CPU_SETSIZE; c2++)
				if (CPU_ISSET(c2, &all_cpus) && want-- == 0) {
					CPU_SET(c2, &set);
					break;
				}
			pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
		}
		if (pthread_create(&tids[k], &attr, scale_thread, &args[k]) != 0)
			die("pthread_create failed");
		pthread_attr_destroy(&attr);
	}
	pthread_barrier_wait(&barrier);
	for (unsigned k = 0; k < t; k++)
		pthread_join(tids[k], NULL);
	pthread_barrier_destroy(&barrier);
	/* From the first thread's start to the last one's end: the threads'
	 * own clocks, since this one may be scheduled late. */
	for (unsigned k = 0; k < t; k++) {
		cpu[k] = args[k].cpu_ns;
		first = args[k].start < first ? args[k].start : first;
		last = args[k].end > last ? args[k].end : last;
	}
	*wall = (double)(last - first) / ((double)n * t);
}

/* Every row at 1, 2, 8 and 64 threads; at each count, the repetitions of
 * all rows interleaved, as in the operations table. */
static void run_scaling(void)
{
	/* The contexts of each SCALE_OWN row; its SCALE_ONE row gives the
	 * first of them to every thread.  At one thread the two rows run on
	 * the same context. */
	static otel_thread_ctx *alike[N_SCALE_OPS][MAX_SCALE_THREADS];
	double *cpu[N_SCALE_OPS], *wall[N_SCALE_OPS], dummy;
	uint64_t n[N_SCALE_OPS];

	for (size_t o = 0; o < N_SCALE_OPS; o++) {
		const struct op *op = op_by_id(scale_ops[o].op);

		n[o] = (uint64_t)((double)op->iters * opt.scale_ms / opt.rep_ms) + 1;
		if (scale_ops[o].ctx == SCALE_OWN)
			make_ctxs_alike(alike[o], MAX_SCALE_THREADS, op->attrs);
	}
	for (size_t s = 0; s < N_SCALE; s++) {
		unsigned t = scale_threads[s];

		for (size_t o = 0; o < N_SCALE_OPS; o++) {
			cpu[o] = calloc((size_t)t * opt.scale_reps, sizeof(double));
			wall[o] = calloc(opt.scale_reps, sizeof(double));
			if (cpu[o] == NULL || wall[o] == NULL)
				die("out of memory");
		}
		for (unsigned r = 0; r < opt.scale_reps; r++)
			for (size_t o = 0; o < N_SCALE_OPS; o++)
				scale_once(o, t, n[o], alike[o],
					   scale_ops[o].ctx == SCALE_ONE ? alike[scale_ops[o].versus][0]
									 : NULL,
					   &cpu[o][(size_t)r * t], &wall[o][r]);
		for (size_t o = 0; o < N_SCALE_OPS; o++) {
			summarize(cpu[o], (size_t)t * opt.scale_reps, &scaling[o][s].cpu_median,
				  &dummy, &scaling[o][s].cpu_max, &dummy, &dummy);
			summarize(wall[o], opt.scale_reps, &scaling[o][s].wall, &dummy, &dummy,
				  &dummy, &dummy);
			free(cpu[o]);
			free(wall[o]);
		}
	}
	for (size_t o = 0; o < N_SCALE_OPS; o++)
		for (unsigned k = 0; k < MAX_SCALE_THREADS; k++)
			otel_thread_ctx_destroy(alike[o][k]);
	scaling_done = true;
}

/* ------------------------------------------------------------------ */
/* Memory per publishing thread and per context                         */

/* What the threads of a memory run do before they wait: nothing; use the
 * allocator once (glibc then gives the thread its malloc cache, and maybe an
 * arena); the same, then attach a context with 4 attributes, one for all of
 * them (the thread publishes: the library gives it its records). */
enum mem_kind { MEM_BARE, MEM_MALLOC, MEM_PUB, N_MEM_KINDS };
/* How the threads start: all at once (each starts as soon as it is made),
 * or one after another (each is made when the one before has done its
 * part).  The library's pool grows when a thread first publishes and finds
 * no free records, so the two can differ. */
enum mem_start { AT_ONCE, ONE_BY_ONE, N_MEM_STARTS };

struct mem_sample {
	long rss_kib;    /* RSS growth with the threads alive */
	long long heap;  /* heap growth, bytes; -1: unknown */
};

/* Heap per context by content: 0, 1 and 4 attributes of 16 bytes, in a
 * context of the default capacity and in one sized to them (0 attributes,
 * sized: a span-only context). */
static const unsigned sized_attrs[] = {0, 1, 4};
#define N_SIZED (sizeof(sized_attrs) / sizeof(sized_attrs[0]))
#define SIZED_COUNT 1000
/* What a span-only context holds: a record header (ids, flags, valid and
 * attrs_data_size). */
#define HEADER_BYTES offsetof(struct otel_thread_ctx_record, attrs_data)

/* Memory the targets are judged on (x86-64). */
#define PUB_THREAD_TARGET 1384 /* bytes per publishing thread: the old design's */
#define CHURN_TARGET_KIB 1024  /* RSS growth after the churn */

static struct {
	size_t tls_bytes;       /* the library's PT_TLS segment */
	unsigned threads;
	struct mem_sample s[N_MEM_STARTS][N_MEM_KINDS];
	/* [attributes][0: default, 1: sized]: heap bytes per context over
	 * SIZED_COUNT contexts (-1: unknown), and malloc_usable_size. */
	double sized_heap[N_SIZED][2];
	size_t sized_usable[N_SIZED][2];
	/* The same for malloc(HEADER_BYTES): the content alone. */
	double header_heap;
	size_t header_usable;
	bool done;
} mem;

/* SIZED_COUNT contexts of one kind (or, with attrs < 0, as many blocks of
 * a record header's size): heap growth per context. */
static void measure_sized(int attrs, bool sized, double *heap, size_t *usable)
{
	static void *blocks[SIZED_COUNT];
	struct otel_thread_ctx_options o = OTEL_THREAD_CTX_OPTIONS_INIT;
	long long before = heap_in_use(), after;

	if (sized)
		o.attrs_capacity = (unsigned)attrs * (2 + ATTR_LEN);
	for (unsigned i = 0; i < SIZED_COUNT; i++) {
		otel_thread_ctx *ctx;

		if (attrs < 0) {
			blocks[i] = malloc(HEADER_BYTES);
			if (blocks[i] == NULL)
				die("out of memory");
			memset(blocks[i], 0, HEADER_BYTES);
			continue;
		}
		CHECK(otel_thread_ctx_create_with(&ctx, &o));
		CHECK(otel_thread_ctx_set_ids(ctx, trace_ids[0], span_ids[0], 1));
		for (int a = 0; a < attrs; a++)
			CHECK(otel_thread_ctx_set_attr(ctx, (unsigned)a + 1, attr_values[0][a],
						       ATTR_LEN));
		blocks[i] = ctx;
	}
	after = heap_in_use();
	*heap = before < 0 ? -1 : (double)(after - before) / SIZED_COUNT;
	*usable = malloc_usable_size(blocks[0]);
	for (unsigned i = 0; i < SIZED_COUNT; i++) {
		if (attrs < 0)
			free(blocks[i]);
		else
			otel_thread_ctx_destroy(blocks[i]);
	}
}

static int find_tls(struct dl_phdr_info *info, size_t size, void *data)
{
	Dl_info *lib = data;

	(void)size;
	if ((void *)info->dlpi_addr != lib->dli_fbase)
		return 0;
	for (unsigned i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_TLS)
			mem.tls_bytes = info->dlpi_phdr[i].p_memsz;
	return 1;
}

struct mem_arg {
	enum mem_kind kind;
	otel_thread_ctx *ctx;
	sem_t *ready;  /* ONE_BY_ONE: posted when the thread has done its part */
	pthread_barrier_t *alive, *done;
};

static void *mem_thread(void *arg)
{
	struct mem_arg *a = arg;

	if (a->kind != MEM_BARE) {
		void *volatile p = malloc(1); /* volatile: not optimized away */

		free(p);
	}
	if (a->kind == MEM_PUB)
		CHECK(otel_thread_ctx_attach(a->ctx, NULL));
	if (a->ready != NULL)
		sem_post(a->ready);
	pthread_barrier_wait(a->alive);
	pthread_barrier_wait(a->done);
	/* Exits publishing: the library unpublishes and takes the records
	 * back. */
	return NULL;
}

/* RSS and heap growth while `threads` threads of one kind are alive.  The
 * stacks are this program's own mapping, so that every run touches fresh
 * stack pages alike and the C library's cache of thread stacks plays no
 * part.  The context the publishing threads attach exists before. */
static struct mem_sample threads_alive(unsigned threads, enum mem_kind kind,
				       enum mem_start start)
{
	const size_t stack = 128 * 1024;
	pthread_barrier_t alive, done;
	sem_t ready;
	struct mem_arg arg = {kind, NULL, start == ONE_BY_ONE ? &ready : NULL, &alive, &done};
	pthread_t *tids = calloc(threads, sizeof(*tids));
	char *stacks = mmap(NULL, stack * threads, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	struct mem_sample r;
	long rss0;
	long long heap0;

	if (tids == NULL || stacks == MAP_FAILED)
		die("out of memory for %u threads", threads);
	arg.ctx = make_ctx(0, span_ids[0], true);
	sem_init(&ready, 0, 0);
	pthread_barrier_init(&alive, NULL, threads + 1);
	pthread_barrier_init(&done, NULL, threads + 1);
	rss0 = rss_kib();
	heap0 = heap_in_use();
	for (unsigned k = 0; k < threads; k++) {
		pthread_attr_t attr;

		pthread_attr_init(&attr);
		pthread_attr_setstack(&attr, stacks + (size_t)k * stack, stack);
		if (pthread_create(&tids[k], &attr, mem_thread, &arg) != 0)
			die("pthread_create failed");
		pthread_attr_destroy(&attr);
		while (start == ONE_BY_ONE && sem_wait(&ready) != 0)
			;
	}
	pthread_barrier_wait(&alive);
	r.rss_kib = rss_kib() - rss0;
	r.heap = heap0 < 0 ? -1 : heap_in_use() - heap0;
	pthread_barrier_wait(&done);
	for (unsigned k = 0; k < threads; k++)
		pthread_join(tids[k], NULL);
	pthread_barrier_destroy(&alive);
	pthread_barrier_destroy(&done);
	sem_destroy(&ready);
	otel_thread_ctx_destroy(arg.ctx);
	munmap(stacks, stack * threads);
	free(tids);
	return r;
}

/* Runs fn(arg) in a child process made now, which writes `len` bytes of
 * results to `out`: every measurement starts from the same fresh heap. */
static void in_child(void (*fn)(void *arg, void *out), void *arg, void *out, size_t len)
{
	int fds[2], status;
	pid_t pid = -1;
	size_t got = 0;

	fflush(stdout);
	if (pipe(fds) != 0 || (pid = fork()) < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		close(fds[0]);
		fn(arg, out);
		for (size_t put = 0; put < len;) {
			ssize_t w = write(fds[1], (char *)out + put, len - put);

			if (w <= 0)
				_exit(1);
			put += (size_t)w;
		}
		_exit(0);
	}
	close(fds[1]);
	while (got < len) {
		ssize_t r = read(fds[0], (char *)out + got, len - got);

		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fds[0]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0 || got != len)
		die("measuring child failed");
}

struct mem_run {
	enum mem_kind kind;
	enum mem_start start;
};

static void mem_child(void *arg, void *out)
{
	const struct mem_run *run = arg;

	*(struct mem_sample *)out = threads_alive(mem.threads, run->kind, run->start);
}

static void run_memory(void)
{
	Dl_info lib;

	if (dladdr((void *)(uintptr_t)otel_thread_ctx_attach, &lib) == 0)
		die("dladdr failed");
	dl_iterate_phdr(find_tls, &lib);
	mem.threads = opt.mem_threads;
	for (enum mem_start st = 0; st < N_MEM_STARTS; st++) {
		for (enum mem_kind k = 0; k < N_MEM_KINDS; k++) {
			struct mem_run run = {k, st};

			in_child(mem_child, &run, &mem.s[st][k], sizeof(mem.s[st][k]));
		}
	}
	for (size_t a = 0; a < N_SIZED; a++)
		for (int sized = 0; sized < 2; sized++)
			measure_sized((int)sized_attrs[a], sized, &mem.sized_heap[a][sized],
				      &mem.sized_usable[a][sized]);
	measure_sized(-1, false, &mem.header_heap, &mem.header_usable);
	mem.done = true;
}

/* Growth per thread that publishing accounts for, threads started one way:
 * the RSS (the thread's records, from the library's pool) and the heap
 * (none expected). */
static double mem_rss_per_thread(enum mem_start st)
{
	return (double)(mem.s[st][MEM_PUB].rss_kib - mem.s[st][MEM_MALLOC].rss_kib) * 1024.0 /
	       mem.threads;
}

static double mem_heap_per_thread(enum mem_start st)
{
	if (mem.s[st][MEM_PUB].heap < 0)
		return -1;
	return (double)(mem.s[st][MEM_PUB].heap - mem.s[st][MEM_MALLOC].heap) / mem.threads;
}

/* Bytes per publishing thread the target is judged on: RSS and heap growth,
 * plus the library's TLS. */
static double mem_per_thread(enum mem_start st)
{
	double heap = mem_heap_per_thread(st);

	return mem_rss_per_thread(st) + (heap > 0 ? heap : 0) + (double)mem.tls_bytes;
}

static const char *const mem_start_name[N_MEM_STARTS] = {
	"started all at once", "started one after another",
};
/* One after another first: the footprint of the design; at once: what a
 * burst of new threads costs. */
static const enum mem_start mem_report_order[N_MEM_STARTS] = {ONE_BY_ONE, AT_ONCE};

/* A span-only context, with ids: heap per context, and against a block of
 * its content's size. */
static double span_only_heap(void)
{
	return mem.sized_heap[0][1];
}

/* ------------------------------------------------------------------ */
/* Churn: many threads each publish and exit                            */

struct churn_result {
	unsigned threads, warm_threads;
	long rss_start, rss_warm, rss_end;       /* KiB */
	long long heap_start, heap_warm, heap_end; /* bytes */
	double seconds;
};
/* Threads that publish, and the control: threads that only use malloc
 * once. */
static struct churn_result churn, churn_control;
static bool churn_done;

/* Each thread makes a context, attaches it, destroys it (the thread keeps
 * publishing its copy) and exits publishing. */
static void *churn_thread(void *arg)
{
	otel_thread_ctx *ctx;

	if (arg == NULL) {
		void *volatile p = malloc(1); /* volatile: not optimized away */

		free(p);
		return NULL;
	}
	ctx = make_ctx(1, span_ids[1], true);
	CHECK(otel_thread_ctx_attach(ctx, NULL));
	otel_thread_ctx_destroy(ctx);
	expect_span(span_ids[1], 1, "churn");
	return NULL;
}

static void churn_threads(unsigned count, bool publish)
{
	unsigned batch = opt.churn_batch;
	pthread_t *tids = calloc(batch, sizeof(*tids));

	if (tids == NULL)
		die("out of memory");
	for (unsigned done = 0; done < count;) {
		unsigned now = count - done < batch ? count - done : batch;

		for (unsigned k = 0; k < now; k++)
			if (pthread_create(&tids[k], NULL, churn_thread,
					   publish ? &churn : NULL) != 0)
				die("pthread_create failed");
		for (unsigned k = 0; k < now; k++)
			pthread_join(tids[k], NULL);
		done += now;
	}
	free(tids);
}

/* In a fresh child: RSS and heap at the start, after the first 1% of the
 * threads (the allocator's arenas, the cache of thread stacks and the
 * library's pool are set up by then), and at the end. */
static void churn_child(void *arg, void *out)
{
	struct churn_result *r = out;
	bool publish = *(bool *)arg;
	uint64_t t0 = now_ns(CLOCK_MONOTONIC);

	r->threads = opt.churn;
	r->warm_threads = opt.churn / 100 ? opt.churn / 100 : 1;
	r->rss_start = rss_kib();
	r->heap_start = heap_in_use();
	churn_threads(r->warm_threads, publish);
	r->rss_warm = rss_kib();
	r->heap_warm = heap_in_use();
	churn_threads(r->threads - r->warm_threads, publish);
	r->rss_end = rss_kib();
	r->heap_end = heap_in_use();
	r->seconds = (double)(now_ns(CLOCK_MONOTONIC) - t0) / 1e9;
}

static void run_churn(void)
{
	bool publish = true;

	in_child(churn_child, &publish, &churn, sizeof(churn));
	publish = false;
	in_child(churn_child, &publish, &churn_control, sizeof(churn_control));
	churn_done = true;
}

/* ------------------------------------------------------------------ */
/* Reporting                                                            */

static const struct op *base_a, *base_b, *base_c;
static bool instr_counted;
static char instr_why[256];

static bool is_x86_64(void)
{
#if defined(__x86_64__)
	return true;
#else
	return false;
#endif
}

/* The targets are for x86-64. */
static const char *judge(bool met)
{
	return !is_x86_64() ? "not judged on this architecture" : met ? "met" : "missed";
}

/* The target this build judges a row on, as a ratio to the baseline named
 * in *base ('a' or 'b'); 0 when there is none.  `bench` judges the ratios
 * to (b), `bench-archive` those to (a). */
static double op_target(const struct op *op, char *base)
{
	*base = ARCHIVE ? 'a' : 'b';
	if (op->group == BASELINE)
		return 0;
	return ARCHIVE ? op->target_a : op->target_b;
}

static double op_ratio(const struct op *op, char base)
{
	return base == 'a' ? op->ratio_a : op->ratio;
}

static const struct op *op_base(char base)
{
	return base == 'a' ? base_a : base_b;
}

static double instr_ratio_b(const struct op *op)
{
	unsigned swaps = op->swaps ? op->swaps : 1;

	return op->instr / (swaps * base_b->instr);
}

/* What the row says about its targets. */
static void verdict(const struct op *op, char *buf, size_t len)
{
	char base;
	double t = op_target(op, &base);
	size_t used = 0;

	buf[0] = '\0';
	if (op->group == BASELINE || !is_x86_64())
		return;
	if (t > 0) {
		double r = op_ratio(op, base);

		if (r <= t)
			used += (size_t)snprintf(buf, len, "met");
		else
			used += (size_t)snprintf(buf, len, "missed by %.0f%%", (r / t - 1) * 100);
	}
	if (op->vs_gd && used < len)
		snprintf(buf + used, len - used, "%s%s", used ? "; " : "",
			 op->ratio_c < 1 ? "faster than (c)" : "slower than (c)");
}

static void fmt_target(const struct op *op, char *buf, size_t len)
{
	char base;
	double t = op_target(op, &base);

	if (t > 0)
		snprintf(buf, len, "%s%.2fx (%c)", op->swaps == 2 ? "2 swaps, " : "", t, base);
	else if (op->swaps == 2)
		snprintf(buf, len, "2 swaps");
	else
		snprintf(buf, len, "-");
}

static void fmt_instr(const struct op *op, char *ir, size_t irl, char *irr, size_t irrl)
{
	if (!instr_counted) {
		snprintf(ir, irl, "-");
		snprintf(irr, irrl, "-");
		return;
	}
	snprintf(ir, irl, "%.1f", op->instr);
	snprintf(irr, irrl, "%.2f", instr_ratio_b(op));
}

static void print_table(FILE *f, bool markdown)
{
	const char *row_fmt = markdown ?
		"| %s | %.2f | %.2f – %.2f | %.2f – %.2f | %.2f | %.2f | %s | %s | %s | %s |\n" :
		"%-42s %7.2f %7.2f-%-7.2f %7.2f-%-7.2f %6.2f %6.2f %8s %6s  %-18s %s\n";

	if (markdown) {
		fprintf(f, "| operation | ns/op (median) | min – max | IQR | × (b) | × (a) | "
			   "instr/op | instr × (b) | target | result |\n");
		fprintf(f, "|---|---:|---:|---:|---:|---:|---:|---:|---|---|\n");
	} else {
		fprintf(f, "%-42s %7s %15s %15s %6s %6s %8s %6s  %-18s %s\n", "operation",
			"ns/op", "min-max", "IQR", "x(b)", "x(a)", "instr/op", "x(b)", "target",
			"result");
	}
	for (size_t i = 0; i < N_OPS; i++) {
		const struct op *op = &ops[i];
		char res[96], tgt[48], ir[32], irr[32];

		verdict(op, res, sizeof(res));
		fmt_target(op, tgt, sizeof(tgt));
		fmt_instr(op, ir, sizeof(ir), irr, sizeof(irr));
		fprintf(f, row_fmt, op->label, op->median, op->min, op->max, op->q1, op->q3,
			op->ratio, op->ratio_a, ir, irr, tgt, res);
	}
}

static void print_scaling(FILE *f, bool markdown)
{
	if (markdown) {
		fprintf(f, "| operation | threads | thread CPU ns/op (median) | (max) | "
			   "× (b) at the same count | × own context | wall ns/op, all threads |\n");
		fprintf(f, "|---|---:|---:|---:|---:|---:|---:|\n");
	} else {
		fprintf(f, "%-50s %7s %10s %9s %7s %9s %11s\n", "operation", "threads",
			"cpu ns/op", "(max)", "x(b)", "x own", "wall ns/op");
	}
	for (size_t o = 0; o < N_SCALE_OPS; o++) {
		for (size_t s = 0; s < N_SCALE; s++) {
			const struct scale_result *r = &scaling[o][s];
			char vs[32] = "-";

			if (scale_ops[o].versus >= 0)
				snprintf(vs, sizeof(vs), "%.2f", scale_versus(o, s));
			fprintf(f, markdown ? "| %s | %u | %.2f | %.2f | %.2f | %s | %.2f |\n" :
					      "%-50s %7u %10.2f %9.2f %7.2f %9s %11.2f\n",
				scale_label(o), scale_threads[s], r->cpu_median, r->cpu_max,
				r->cpu_median / scaling[0][s].cpu_median, vs, r->wall);
		}
	}
}

/* Every SCALE_ONE row, at every thread count, within ONE_CTX_TARGET of its
 * SCALE_OWN row. */
static bool one_ctx_met(size_t o)
{
	for (size_t s = 0; s < N_SCALE; s++)
		if (scale_versus(o, s) > ONE_CTX_TARGET)
			return false;
	return true;
}

static double kib(long long bytes)
{
	return (double)bytes / 1024.0;
}

static long churn_growth(void)
{
	return churn.rss_end - churn.rss_start;
}

/* RSS the publishing churn gained after its warm-up beyond what the
 * control gained: what records left behind would show as. */
static long churn_extra_rss(void)
{
	return (churn.rss_end - churn.rss_warm) - (churn_control.rss_end - churn_control.rss_warm);
}

static long long churn_extra_heap(void)
{
	return (churn.heap_end - churn.heap_warm) -
	       (churn_control.heap_end - churn_control.heap_warm);
}

static void print_memory(FILE *f, bool markdown)
{
	const char *li = markdown ? "- " : "  ";

	for (size_t a = 0; a < N_SIZED; a++)
		fprintf(f, "%sheap per context with ids and %u attribute%s of %u B: %.0f B with the "
			   "default capacity (usable %zu B), %.0f B sized to them (capacity %u B, "
			   "usable %zu B)\n",
			li, sized_attrs[a], sized_attrs[a] == 1 ? "" : "s", ATTR_LEN,
			mem.sized_heap[a][0], mem.sized_usable[a][0], mem.sized_heap[a][1],
			sized_attrs[a] * (2 + ATTR_LEN), mem.sized_usable[a][1]);
	fprintf(f, "%sspan-only context (attrs_capacity 0, ids set): %.0f B of heap (usable %zu B); "
		   "a malloc(%zu) of its content, a record header, takes %.0f B (usable %zu B) "
		   "(target: no more than that: %s)\n",
		li, span_only_heap(), mem.sized_usable[0][1], (size_t)HEADER_BYTES, mem.header_heap,
		mem.header_usable, judge(span_only_heap() <= mem.header_heap));
	for (size_t i = 0; i < N_MEM_STARTS; i++) {
		enum mem_start st = mem_report_order[i];
		const struct mem_sample *s = mem.s[st];
		double per_thread = mem_per_thread(st);

		fprintf(f, "%smemory per publishing thread, threads %s: %.0f B = %.2f KiB "
			   "(target <= %u B: %s): RSS %.0f B (its two records, from the library's "
			   "pool) + heap %.0f B + %zu B of TLS (the library's PT_TLS)\n",
			li, mem_start_name[st], per_thread, per_thread / 1024, PUB_THREAD_TARGET,
			judge(per_thread <= PUB_THREAD_TARGET), mem_rss_per_thread(st),
			mem_heap_per_thread(st), mem.tls_bytes);
		fprintf(f, "%s%u threads alive at once, %s, growth of RSS / heap: bare "
			   "threads %+ld KiB / %+.1f KiB; threads that used malloc %+ld KiB / "
			   "%+.1f KiB; the same publishing (all attach one context with 4 "
			   "attributes) %+ld KiB / %+.1f KiB\n",
			li, mem.threads, mem_start_name[st], s[MEM_BARE].rss_kib,
			kib(s[MEM_BARE].heap), s[MEM_MALLOC].rss_kib, kib(s[MEM_MALLOC].heap),
			s[MEM_PUB].rss_kib, kib(s[MEM_PUB].heap));
	}
	if (!churn_done)
		return;
	fprintf(f, "%s%u threads created and exited (%u alive at a time), each exiting while it "
		   "publishes a copy of a context it made and destroyed: RSS %ld KiB at the start, "
		   "%ld KiB after %u threads, %ld KiB at the end: %+ld KiB (target < %u KiB: %s; "
		   "%+ld KiB after the first %u); heap in use %+lld B (%+lld B after the first %u); "
		   "%.1f s\n",
		li, churn.threads, opt.churn_batch, churn.rss_start, churn.rss_warm,
		churn.warm_threads, churn.rss_end, churn_growth(), CHURN_TARGET_KIB,
		judge(churn_growth() < CHURN_TARGET_KIB), churn.rss_end - churn.rss_warm,
		churn.warm_threads, churn.heap_end - churn.heap_start,
		churn.heap_end - churn.heap_warm, churn.warm_threads, churn.seconds);
	fprintf(f, "%sthe same churn, threads that only call malloc once: RSS %ld, %ld, %ld KiB: "
		   "%+ld KiB; heap in use %+lld B (%+lld B after the first %u)\n",
		li, churn_control.rss_start, churn_control.rss_warm, churn_control.rss_end,
		churn_control.rss_end - churn_control.rss_start,
		churn_control.heap_end - churn_control.heap_start,
		churn_control.heap_end - churn_control.heap_warm, churn_control.warm_threads);
	fprintf(f, "%sleft behind by the churn, after the first %u threads, beyond the control: "
		   "%+ld KiB of RSS (a thread's two records are %u B), %+lld B of heap\n",
		li, churn.warm_threads, churn_extra_rss(), 2 * OTEL_THREAD_CTX_RECORD_SIZE,
		churn_extra_heap());
}

static double cpu_share(void)
{
	return wall_total_ns > 0 ? cpu_total_ns / wall_total_ns : 0;
}

static void print_machine(FILE *f, bool markdown)
{
	const char *li = markdown ? "- " : "  ";

	fprintf(f, "%scpu: %s; %ld online; measured on cpu %d (pinned%s)\n", li, cpu_model,
		online_cpus, pinned_cpu, pinned_cpu < 0 ? ": failed" : "");
	fprintf(f, "%skernel: %s; %s; compiler: %s (library and baselines); "
		   "(b) built with %s, (c) with %s\n",
		li, kernel, libc_version, OTEL_BENCH_COMPILER, OTEL_BENCH_DESC_FLAG,
		OTEL_BENCH_GD_FLAG);
	fprintf(f, "%slibrary: %s; the baselines (0), (a), (b), (c): shared libraries called "
		   "through the PLT\n", li, LIBRARY_KIND);
	fprintf(f, "%sload average: %.2f %.2f %.2f at the start, %.2f %.2f %.2f at the end\n",
		li, load_start[0], load_start[1], load_start[2], load_end[0], load_end[1],
		load_end[2]);
	fprintf(f, "%s%u repetitions of about %.0f ms per operation, interleaved, timed on "
		   "the thread's CPU clock; it had the CPU %.0f%% of the wall time; "
		   "instructions: %s\n",
		li, opt.reps, opt.rep_ms, cpu_share() * 100,
		instr_counted ? "callgrind, per op including the loop" : instr_why);
}

/* Every target of this build, measured (x86-64). */
static void print_targets(FILE *f, bool markdown)
{
	const char *li = markdown ? "- " : "  ";

	for (size_t i = 0; i < N_OPS; i++) {
		const struct op *op = &ops[i];
		char base, ir[64] = "";
		double t = op_target(op, &base);

		if (t <= 0)
			continue;
		if (instr_counted)
			snprintf(ir, sizeof(ir), ", %.0f instructions against %.0f", op->instr,
				 op_base(base)->instr * (op->swaps ? op->swaps : 1));
		fprintf(f, "%s%s: %.2f x (%c)%s (target <= %.2f x (%c)): %s\n", li, op->label,
			op_ratio(op, base), base, ir, t, base, judge(op_ratio(op, base) <= t));
	}
	if (scaling_done) {
		for (size_t o = 0; o < N_SCALE_OPS; o++) {
			if (scale_ops[o].ctx != SCALE_ONE)
				continue;
			fprintf(f, "%s%s: ", li, scale_label(o));
			for (size_t s = 0; s < N_SCALE; s++)
				fprintf(f, "%s%.2f", s ? ", " : "", scale_versus(o, s));
			fprintf(f, " x each thread its own context, at ");
			for (size_t s = 0; s < N_SCALE; s++)
				fprintf(f, "%s%u", s ? ", " : "", scale_threads[s]);
			fprintf(f, " threads (target <= %.2f x at every count): %s\n", ONE_CTX_TARGET,
				judge(one_ctx_met(o)));
		}
	}
	if (mem.done) {
		for (size_t i = 0; i < N_MEM_STARTS; i++) {
			enum mem_start st = mem_report_order[i];

			fprintf(f, "%smemory per publishing thread, %u threads %s: %.0f B "
				   "(target <= %u B): %s\n",
				li, mem.threads, mem_start_name[st], mem_per_thread(st),
				PUB_THREAD_TARGET, judge(mem_per_thread(st) <= PUB_THREAD_TARGET));
		}
		fprintf(f, "%sa span-only context: %.0f B of heap, a malloc of its %zu-byte content "
			   "%.0f B (target: no more): %s\n",
			li, span_only_heap(), (size_t)HEADER_BYTES, mem.header_heap,
			judge(span_only_heap() <= mem.header_heap));
	}
	if (churn_done)
		fprintf(f, "%sRSS growth after %u threads: %+ld KiB (target < %u KiB): %s\n", li,
			churn.threads, churn_growth(), CHURN_TARGET_KIB,
			judge(churn_growth() < CHURN_TARGET_KIB));
}

static void write_csv(const char *path)
{
	FILE *f = fopen(path, "w");

	if (f == NULL)
		die("%s: %s", path, strerror(errno));
	/* Columns 1-18 as they always were (bench/plot.gp reads them by
	 * number); new ones at the end. */
	fprintf(f, "id,label,group,swaps,reps,iterations,ns_median,ns_min,ns_q1,ns_q3,"
		   "ns_max,ratio_b,target_ratio_b,target_ns,result,instr_per_op,instr_ratio_b,"
		   "ratio_c,ratio_a,target_ratio_a\n");
	for (size_t i = 0; i < N_OPS; i++) {
		const struct op *op = &ops[i];
		char res[96], base;
		unsigned swaps = op->swaps ? op->swaps : 1;
		double t = op_target(op, &base);

		verdict(op, res, sizeof(res));
		fprintf(f, "%s,\"%s\",%s,%u,%u,%" PRIu64 ",%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,",
			op->id, op->label, op->group == BASELINE ? "baseline" : "library",
			op->swaps, opt.reps, op->iters, op->median, op->min, op->q1, op->q3,
			op->max, op->ratio);
		if (t > 0 && base == 'b')
			fprintf(f, "%.2f,", t);
		else
			fprintf(f, ",");
		if (t > 0)
			fprintf(f, "%.3f,", t * swaps * op_base(base)->median);
		else
			fprintf(f, ",");
		fprintf(f, "\"%s\",", res);
		if (instr_counted)
			fprintf(f, "%.2f,%.3f,", op->instr, instr_ratio_b(op));
		else
			fprintf(f, ",,");
		fprintf(f, "%.3f,%.3f,", op->ratio_c, op->ratio_a);
		if (t > 0 && base == 'a')
			fprintf(f, "%.2f\n", t);
		else
			fprintf(f, "\n");
	}
	if (fclose(f) != 0)
		die("%s: write failed", path);
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", *s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}


static void write_json(const char *path)
{
	FILE *f = fopen(path, "w");

	if (f == NULL)
		die("%s: %s", path, strerror(errno));
	fprintf(f, "{\n  \"machine\": {\"cpu\": ");
	json_str(f, cpu_model);
	fprintf(f, ", \"online_cpus\": %ld, \"pinned_cpu\": %d, \"kernel\": ", online_cpus,
		pinned_cpu);
	json_str(f, kernel);
	fprintf(f, ", \"libc\": ");
	json_str(f, libc_version);
	fprintf(f, ", \"compiler\": ");
	json_str(f, OTEL_BENCH_COMPILER);
	fprintf(f, ", \"desc_flag\": ");
	json_str(f, OTEL_BENCH_DESC_FLAG);
	fprintf(f, ", \"gd_flag\": ");
	json_str(f, OTEL_BENCH_GD_FLAG);
	fprintf(f, ",\n    \"loadavg_start\": [%.2f, %.2f, %.2f], \"loadavg_end\": "
		   "[%.2f, %.2f, %.2f]},\n",
		load_start[0], load_start[1], load_start[2], load_end[0], load_end[1],
		load_end[2]);
	fprintf(f, "  \"library\": {\"build\": \"%s\", \"description\": ",
		ARCHIVE ? "archive" : "shared");
	json_str(f, LIBRARY_KIND);
	fprintf(f, "},\n");
	fprintf(f, "  \"settings\": {\"reps\": %u, \"rep_ms\": %.1f, \"scale_reps\": %u, "
		   "\"scale_ms\": %.1f, \"instr_iters\": %lu, \"cpu_share\": %.3f, "
		   "\"instructions\": ",
		opt.reps, opt.rep_ms, opt.scale_reps, opt.scale_ms, opt.instr_iters,
		cpu_share());
	json_str(f, instr_counted ? "callgrind" : instr_why);
	fprintf(f, "},\n  \"ops\": [\n");
	for (size_t i = 0; i < N_OPS; i++) {
		const struct op *op = &ops[i];
		char res[96], base;
		double t = op_target(op, &base);

		verdict(op, res, sizeof(res));
		fprintf(f, "    {\"id\": \"%s\", \"label\": ", op->id);
		json_str(f, op->label);
		fprintf(f, ", \"group\": \"%s\", \"swaps\": %u, \"iterations\": %" PRIu64
			   ", \"ns\": [",
			op->group == BASELINE ? "baseline" : "library", op->swaps, op->iters);
		for (unsigned r = 0; r < opt.reps; r++)
			fprintf(f, "%s%.3f", r ? ", " : "", op->ns[r]);
		fprintf(f, "], \"ns_median\": %.3f, \"ratio_b\": %.3f, \"ratio_a\": %.3f, "
			   "\"ratio_c\": %.3f, \"target_ratio_b\": ",
			op->median, op->ratio, op->ratio_a, op->ratio_c);
		if (t > 0 && base == 'b')
			fprintf(f, "%.2f", t);
		else
			fprintf(f, "null");
		fprintf(f, ", \"target_ratio_a\": ");
		if (t > 0 && base == 'a')
			fprintf(f, "%.2f", t);
		else
			fprintf(f, "null");
		fprintf(f, ", \"result\": ");
		json_str(f, res);
		if (instr_counted)
			fprintf(f, ", \"instr_per_op\": %.2f}", op->instr);
		else
			fprintf(f, ", \"instr_per_op\": null}");
		fprintf(f, "%s\n", i + 1 < N_OPS ? "," : "");
	}
	fprintf(f, "  ],\n  \"scaling\": ");
	if (scaling_done) {
		fprintf(f, "{\"one_ctx_target\": %.2f, \"rows\": [\n", ONE_CTX_TARGET);
		for (size_t o = 0; o < N_SCALE_OPS; o++) {
			for (size_t s = 0; s < N_SCALE; s++) {
				fprintf(f, "    {\"op\": \"%s\", \"contexts\": \"%s\", \"label\": ",
					scale_ops[o].op,
					scale_ops[o].ctx == SCALE_ONE ? "one" :
					scale_ops[o].ctx == SCALE_OWN ? "own" : "fixture");
				json_str(f, scale_label(o));
				fprintf(f, ", \"threads\": %u, \"cpu_ns_median\": %.3f, "
					   "\"cpu_ns_max\": %.3f, \"wall_ns\": %.3f, "
					   "\"ratio_own\": ",
					scale_threads[s], scaling[o][s].cpu_median,
					scaling[o][s].cpu_max, scaling[o][s].wall);
				if (scale_ops[o].versus >= 0)
					fprintf(f, "%.3f}", scale_versus(o, s));
				else
					fprintf(f, "null}");
				fprintf(f, "%s\n",
					o + 1 == N_SCALE_OPS && s + 1 == N_SCALE ? "" : ",");
			}
		}
		fprintf(f, "  ]},\n");
	} else {
		fprintf(f, "null,\n");
	}
	fprintf(f, "  \"memory\": ");
	if (mem.done) {
		fprintf(f, "{\"tls_bytes\": %zu, \"per_publishing_thread_target_bytes\": %u, "
			   "\"threads\": %u,\n",
			mem.tls_bytes, PUB_THREAD_TARGET, mem.threads);
		for (enum mem_start st = 0; st < N_MEM_STARTS; st++) {
			fprintf(f, "    \"%s\": {\"per_publishing_thread_bytes\": %.0f, "
				   "\"pub_rss_bytes_per_thread\": %.0f, "
				   "\"pub_heap_bytes_per_thread\": %.0f",
				st == AT_ONCE ? "threads_at_once" : "threads_one_by_one",
				mem_per_thread(st), mem_rss_per_thread(st), mem_heap_per_thread(st));
			for (enum mem_kind k = 0; k < N_MEM_KINDS; k++)
				fprintf(f, ",\n      \"%s\": {\"rss_kib\": %ld, \"heap_bytes\": %lld}",
					k == MEM_BARE ? "bare_threads" :
					k == MEM_MALLOC ? "malloc_threads" : "publishing_threads",
					mem.s[st][k].rss_kib, mem.s[st][k].heap);
			fprintf(f, "},\n");
		}
		fprintf(f, "    \"contexts\": [");
		for (size_t a = 0; a < N_SIZED; a++)
			for (int sized = 0; sized < 2; sized++)
				fprintf(f, "%s{\"attrs\": %u, \"capacity\": %u, \"heap_bytes\": %.0f, "
					   "\"usable_bytes\": %zu}",
					a || sized ? ", " : "", sized_attrs[a],
					sized ? sized_attrs[a] * (2 + ATTR_LEN) : OTEL_THREAD_CTX_ATTRS_MAX,
					mem.sized_heap[a][sized], mem.sized_usable[a][sized]);
		fprintf(f, "],\n    \"span_only_ctx_heap_bytes\": %.0f, \"header_malloc\": "
			   "{\"bytes\": %zu, \"heap_bytes\": %.0f, \"usable_bytes\": %zu}},\n",
			span_only_heap(), (size_t)HEADER_BYTES, mem.header_heap, mem.header_usable);
	} else {
		fprintf(f, "null,\n");
	}
	for (int c = 0; c < 2; c++) {
		const struct churn_result *r = c ? &churn_control : &churn;

		fprintf(f, "  \"%s\": ", c ? "churn_malloc_only" : "churn");
		if (churn_done)
			fprintf(f, "{\"threads\": %u, \"concurrent\": %u, \"warm_threads\": %u, "
				   "\"rss_kib\": [%ld, %ld, %ld], \"heap_bytes\": [%lld, %lld, %lld], "
				   "\"seconds\": %.2f}",
				r->threads, opt.churn_batch, r->warm_threads, r->rss_start,
				r->rss_warm, r->rss_end, r->heap_start, r->heap_warm, r->heap_end,
				r->seconds);
		else
			fprintf(f, "null");
		fprintf(f, "%s\n", c ? "\n}" : ",");
	}
	if (fclose(f) != 0)
		die("%s: write failed", path);
}

static void write_markdown(const char *path)
{
	FILE *f = fopen(path, "w");

	if (f == NULL)
		die("%s: %s", path, strerror(errno));
	print_table(f, true);
	fputc('\n', f);
	print_machine(f, true);
	if (scaling_done) {
		fprintf(f, "\nScaling (thread CPU time per op; × (b): to (b) at the same thread "
			   "count; × own context: one context attached by every thread, to the "
			   "same with each thread's own):\n\n");
		print_scaling(f, true);
	}
	if (mem.done) {
		fprintf(f, "\nMemory:\n\n");
		print_memory(f, true);
	}
	fprintf(f, "\nTargets%s:\n\n", is_x86_64() ? "" : " (for x86-64; not judged here)");
	print_targets(f, true);
	if (fclose(f) != 0)
		die("%s: write failed", path);
}

/* ------------------------------------------------------------------ */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bench [options]\n"
		"  --reps N          repetitions per operation (default %u)\n"
		"  --rep-ms MS       duration of one repetition (default %.0f)\n"
		"  --scale-reps N    repetitions per thread count (default %u)\n"
		"  --scale-ms MS     per-thread duration in the scaling runs (default %.0f)\n"
		"  --mem-threads N   threads alive at once in the memory test (default %u)\n"
		"  --churn N         threads created and exited in the churn test (default %u)\n"
		"  --churn-batch N   of which alive at once (default %u)\n"
		"  --instr-iters N   iterations counted under callgrind (default %lu)\n"
		"  --no-instructions do not run callgrind\n"
		"  --operations-only the operations only: no scaling, memory or churn\n"
		"  --quick           a smoke run: tiny counts everywhere\n"
		"  --csv FILE, --json FILE, --markdown FILE   write the results there\n",
		opt.reps, opt.rep_ms, opt.scale_reps, opt.scale_ms, opt.mem_threads,
		opt.churn, opt.churn_batch, opt.instr_iters);
}

static unsigned long parse_num(const char *s, const char *name)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v == 0 || v > UINT_MAX)
		die("%s: not a positive integer: %s", name, s);
	return v;
}

static void parse_args(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		bool takes = true;

		if (strcmp(a, "--help") == 0) {
			usage(stdout);
			exit(0);
		} else if (strcmp(a, "--quick") == 0) {
			opt.reps = 3;
			opt.rep_ms = 1;
			opt.scale_reps = 1;
			opt.scale_ms = 1;
			opt.mem_threads = 64;
			opt.churn = 1000;
			opt.instr_iters = 1000;
			takes = false;
		} else if (strcmp(a, "--no-instructions") == 0) {
			opt.instructions = false;
			takes = false;
		} else if (strcmp(a, "--operations-only") == 0) {
			opt.ops_only = true;
			takes = false;
		} else if (v == NULL) {
			usage(stderr);
			die("%s: unknown option or missing value", a);
		} else if (strcmp(a, "--reps") == 0) {
			opt.reps = (unsigned)parse_num(v, a);
		} else if (strcmp(a, "--rep-ms") == 0) {
			opt.rep_ms = (double)parse_num(v, a);
		} else if (strcmp(a, "--scale-reps") == 0) {
			opt.scale_reps = (unsigned)parse_num(v, a);
		} else if (strcmp(a, "--scale-ms") == 0) {
			opt.scale_ms = (double)parse_num(v, a);
		} else if (strcmp(a, "--mem-threads") == 0) {
			opt.mem_threads = (unsigned)parse_num(v, a);
		} else if (strcmp(a, "--churn") == 0) {
			opt.churn = (unsigned)parse_num(v, a);
		} else if (strcmp(a, "--churn-batch") == 0) {
			opt.churn_batch = (unsigned)parse_num(v, a);
		} else if (strcmp(a, "--instr-iters") == 0 ||
			   strcmp(a, "--instructions-child") == 0) {
			opt.instr_iters = parse_num(v, a);
			opt.instr_child = strcmp(a, "--instructions-child") == 0;
		} else if (strcmp(a, "--csv") == 0) {
			opt.csv = v;
		} else if (strcmp(a, "--json") == 0) {
			opt.json = v;
		} else if (strcmp(a, "--markdown") == 0) {
			opt.markdown = v;
		} else {
			usage(stderr);
			die("%s: unknown option", a);
		}
		if (takes)
			i++;
	}
}


int main(int argc, char **argv)
{
	parse_args(argc, argv);
	if (opt.instr_child) {
#if OTEL_BENCH_CALLGRIND
		instr_child();
		return 0;
#else
		die("built without valgrind/callgrind.h");
#endif
	}
	/* A failed run must not leave the files of an earlier one behind. */
	if (opt.csv)
		unlink(opt.csv);
	if (opt.json)
		unlink(opt.json);
	if (opt.markdown)
		unlink(opt.markdown);
	setvbuf(stdout, NULL, _IOLBF, 0);
	read_machine();
	base_a = op_by_id("ie");
	base_b = op_by_id("desc");
	base_c = op_by_id("gd");
	printf("library: %s\n", LIBRARY_KIND);

	if (!opt.ops_only) {
		/* Memory first, while no thread but this one has used the
		 * allocator or published. */
		printf("memory: %u threads alive at once ...\n", opt.mem_threads);
		run_memory();
		printf("churn: %u threads ...\n", opt.churn);
		run_churn();
	}

	pin();
	printf("operations: calibrating to %.0f ms per repetition ...\n", opt.rep_ms);
	for (size_t i = 0; i < N_OPS; i++) {
		ops[i].iters = calibrate(&ops[i], opt.rep_ms);
		ops[i].ns = calloc(opt.reps, sizeof(double));
		ops[i].instr = -1;
		if (ops[i].ns == NULL)
			die("out of memory");
	}
	printf("operations: %u repetitions ...\n", opt.reps);
	for (unsigned r = 0; r < opt.reps; r++)
		for (size_t i = 0; i < N_OPS; i++)
			ops[i].ns[r] = time_op(&ops[i], ops[i].iters);
	for (size_t i = 0; i < N_OPS; i++) {
		const struct op *bases[3] = {base_b, base_a, base_c};
		double *ratios[3] = {&ops[i].ratio, &ops[i].ratio_a, &ops[i].ratio_c};
		double *copy = malloc(opt.reps * sizeof(double));

		if (copy == NULL)
			die("out of memory");
		memcpy(copy, ops[i].ns, opt.reps * sizeof(double));
		summarize(copy, opt.reps, &ops[i].median, &ops[i].min, &ops[i].max,
			  &ops[i].q1, &ops[i].q3);
		for (int b = 0; b < 3; b++) {
			for (unsigned r = 0; r < opt.reps; r++)
				copy[r] = ops[i].ns[r] /
					  ((ops[i].swaps ? ops[i].swaps : 1) * bases[b]->ns[r]);
			qsort(copy, opt.reps, sizeof(*copy), cmp_double);
			*ratios[b] = quantile(copy, opt.reps, 0.5);
		}
		free(copy);
	}

	if (!opt.ops_only) {
		printf("scaling: 1, 2, 8, 64 threads ...\n");
		run_scaling();
	}

	if (opt.instructions) {
#ifdef OTEL_BENCH_VALGRIND
		printf("instructions: this program under callgrind ...\n");
#endif
		instr_counted = count_instructions(instr_why, sizeof(instr_why));
		if (!instr_counted)
			printf("instructions: %s\n", instr_why);
	} else {
		snprintf(instr_why, sizeof(instr_why), "not counted (--no-instructions)");
	}
	read_loadavg(load_end);

	printf("\n");
	print_table(stdout, false);
	printf("\n");
	print_machine(stdout, false);
	if (scaling_done) {
		printf("\nscaling (thread CPU time per op; x(b): to (b) at the same thread count; "
		       "x own: one context on every thread, to each thread its own):\n");
		print_scaling(stdout, false);
	}
	if (mem.done) {
		printf("\nmemory:\n");
		print_memory(stdout, false);
	}
	printf("\ntargets%s:\n", is_x86_64() ? "" : " (for x86-64; not judged on this machine)");
	print_targets(stdout, false);

	if (opt.csv)
		write_csv(opt.csv);
	if (opt.json)
		write_json(opt.json);
	if (opt.markdown)
		write_markdown(opt.markdown);
	return 0;
}
