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
 *       the access and the rest;
 *   (e) (d) by compare-and-swap: one locked instruction, the price of an
 *       attach that claims its context atomically.
 *
 * The baselines are functions of shared libraries (bench/baseline.c) called
 * through the PLT, as this program calls the library, so that every row pays
 * the same kind of call.  Each row is timed as the median of repetitions of
 * a fixed number of iterations, calibrated to a duration, on a pinned CPU,
 * repetitions of all rows interleaved so that a change of load affects them
 * alike.  Under valgrind (callgrind) the program counts the instructions per
 * operation, which a loaded machine does not change.  Then: per-thread cost
 * with 1, 2, 8 and 64 threads, memory per thread, and resident memory after
 * a churn of threads that each attached a context.
 *
 * Run with --help for the options.  Exit status: 0 when everything ran
 * (whether or not the targets are met: the table says), 1 on a failure.
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

static const unsigned scale_threads[] = {1, 2, 8, 64};
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

/* One thread's objects: two contexts, two pointer values for the
 * baselines, a record for the reader. */
struct fixture {
	otel_thread_ctx *ctx[2];
	otel_thread_ctx *shared[2]; /* frozen: shared contexts */
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
#define N_ATTRS 4
#define ATTR_LEN 16
static const char attr_values[2][N_ATTRS][ATTR_LEN + 1] = {
	{"GET /api/v1/user", "checkout-worker1", "tenant-000000042", "region-eu-west-1"},
	{"POST /api/v1/ord", "checkout-worker2", "tenant-000000043", "region-us-east-2"},
};

/* Contexts given to their thread, which frees them when it exits. */
static const struct otel_thread_ctx_options given_to_thread = {
	sizeof(struct otel_thread_ctx_options), OTEL_THREAD_CTX_FREE_WITH_THREAD,
	OTEL_THREAD_CTX_ATTRS_MAX,
};

/* The same attributes as one list, for otel_thread_ctx_set_attrs(). */
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

/* Both contexts get ids (and, when asked, the four attributes),
 * committed, nothing attached. */
static void fixture_init(struct fixture *fx, bool attrs)
{
	for (unsigned k = 0; k < 2; k++) {
		CHECK(otel_thread_ctx_create(&fx->ctx[k]));
		CHECK(otel_thread_ctx_set_ids(fx->ctx[k], trace_ids[k], span_ids[k], 1));
		if (attrs)
			set_attrs(fx->ctx[k], k);
		CHECK(otel_thread_ctx_update(fx->ctx[k]));
		fx->val[k] = &fx->ctx[k];
		CHECK(otel_thread_ctx_create(&fx->shared[k]));
		CHECK(otel_thread_ctx_set_ids(fx->shared[k], trace_ids[k], span_ids[k], 1));
		if (attrs)
			set_attrs(fx->shared[k], k);
		CHECK(otel_thread_ctx_freeze(fx->shared[k]));
	}
}

static void fixture_fini(struct fixture *fx)
{
	otel_thread_ctx *prev;

	CHECK(otel_thread_ctx_detach(&prev));
	for (unsigned k = 0; k < 2; k++) {
		CHECK(otel_thread_ctx_destroy(fx->ctx[k]));
		CHECK(otel_thread_ctx_destroy(fx->shared[k]));
	}
}

static void attach_first(struct fixture *fx)
{
	otel_thread_ctx *prev;

	CHECK(otel_thread_ctx_attach(fx->ctx[0], &prev));
}

/* ------------------------------------------------------------------ */
/* The operations: each run_* performs n of them                        */

#define LOOP for (uint64_t i = 0; i < n; i++)
#define K ((unsigned)(i & 1))

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
SWAP_RUN(own_cas)

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
	otel_thread_ctx *prev;

	CHECK(otel_thread_ctx_attach(fx->ctx[1], &prev));
	LOOP {
		CHECK(otel_thread_ctx_attach(fx->ctx[K], &prev));
		if (__builtin_expect(prev != fx->ctx[K ^ 1], 0))
			die("attach: wrong previous context");
	}
}

/* detach on a thread that has nothing attached. */
static void run_detach_empty(struct fixture *fx, uint64_t n)
{
	otel_thread_ctx *prev;

	(void)fx;
	LOOP {
		CHECK(otel_thread_ctx_detach(&prev));
		if (__builtin_expect(prev != NULL, 0))
			die("detach: wrong previous context");
	}
}

static void run_attach_detach(struct fixture *fx, uint64_t n)
{
	otel_thread_ctx *prev;

	LOOP {
		CHECK(otel_thread_ctx_attach(fx->ctx[K], &prev));
		if (__builtin_expect(prev != NULL, 0))
			die("attach: wrong previous context");
		CHECK(otel_thread_ctx_detach(&prev));
		if (__builtin_expect(prev != fx->ctx[K], 0))
			die("detach: wrong previous context");
	}
}

/* The same with shared (frozen) contexts: a reference taken and dropped. */
static void run_attach_shared(struct fixture *fx, uint64_t n)
{
	otel_thread_ctx *prev;

	CHECK(otel_thread_ctx_attach(fx->shared[1], &prev));
	LOOP {
		CHECK(otel_thread_ctx_attach(fx->shared[K], &prev));
		if (__builtin_expect(prev != fx->shared[K ^ 1], 0))
			die("attach: wrong previous context");
	}
}

static void run_attach_detach_shared(struct fixture *fx, uint64_t n)
{
	otel_thread_ctx *prev;

	LOOP {
		CHECK(otel_thread_ctx_attach(fx->shared[K], &prev));
		if (__builtin_expect(prev != NULL, 0))
			die("attach: wrong previous context");
		CHECK(otel_thread_ctx_detach(&prev));
		if (__builtin_expect(prev != fx->shared[K], 0))
			die("detach: wrong previous context");
	}
}

/* The sampling decision, after the span was published. */
static void run_update_trace_flags(struct fixture *fx, uint64_t n)
{
	attach_first(fx);
	LOOP {
		CHECK(otel_thread_ctx_update_trace_flags(fx->ctx[0], (uint8_t)K));
	}
}

static void run_update_span(struct fixture *fx, uint64_t n)
{
	attach_first(fx);
	LOOP {
		CHECK(otel_thread_ctx_set_span_id(fx->ctx[0], span_ids[K]));
		CHECK(otel_thread_ctx_update(fx->ctx[0]));
	}
}

/* The same in one call. */
static void run_update_span_id(struct fixture *fx, uint64_t n)
{
	attach_first(fx);
	LOOP {
		CHECK(otel_thread_ctx_update_span_id(fx->ctx[0], span_ids[K]));
	}
}

static void run_update_ids(struct fixture *fx, uint64_t n)
{
	attach_first(fx);
	LOOP {
		CHECK(otel_thread_ctx_set_ids(fx->ctx[0], trace_ids[K], span_ids[K], 1));
		CHECK(otel_thread_ctx_update(fx->ctx[0]));
	}
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
}

/* All of it in one call. */
static void run_update_all(struct fixture *fx, uint64_t n)
{
	attach_first(fx);
	LOOP {
		CHECK(otel_thread_ctx_update_all(fx->ctx[0], trace_ids[K], span_ids[K], 1,
						 attr_lists[K], N_ATTRS));
	}
}

/* update_attach switching between two contexts that have no edits. */
static void run_update_attach(struct fixture *fx, uint64_t n)
{
	otel_thread_ctx *prev;

	CHECK(otel_thread_ctx_attach(fx->ctx[1], &prev));
	LOOP {
		CHECK(otel_thread_ctx_update_attach(fx->ctx[K], &prev));
		if (__builtin_expect(prev != fx->ctx[K ^ 1], 0))
			die("update_attach: wrong previous context");
	}
}

/* The fiber switch: the context switched to has a new span id. */
static void run_update_attach_edit(struct fixture *fx, uint64_t n)
{
	otel_thread_ctx *prev;

	CHECK(otel_thread_ctx_attach(fx->ctx[1], &prev));
	LOOP {
		CHECK(otel_thread_ctx_set_span_id(fx->ctx[K], span_ids[K ^ (unsigned)(i >> 1 & 1)]));
		CHECK(otel_thread_ctx_update_attach(fx->ctx[K], &prev));
		if (__builtin_expect(prev != fx->ctx[K ^ 1], 0))
			die("update_attach: wrong previous context");
	}
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

enum group { BASELINE, LIBRARY };

struct op {
	const char *id;
	const char *label;
	enum group group;
	/* Pointer swaps a writer must do for one operation (the ratio is to
	 * this many times (b)); 0 for the call-only row. */
	unsigned swaps;
	bool attrs;          /* fixture with four attributes */
	double target;       /* x86-64: highest ratio to (b); 0: none */
	bool vs_gd;          /* must be faster than (c) */
	void (*run)(struct fixture *fx, uint64_t n);
	/* Measured. */
	uint64_t iters;
	double *ns;          /* reps samples */
	double median, min, max, q1, q3;
	/* Median over the repetitions of the ratio to (b) in the same
	 * repetition (which ran a moment before or after). */
	double ratio;
	double ratio_c;      /* the same to (c), per swap */
	double instr;        /* per op, < 0: not counted */
};

#define OP(id_, label_, group_, swaps_, attrs_, target_, vs_gd_, run_)      \
	{.id = id_, .label = label_, .group = group_, .swaps = swaps_,        \
	 .attrs = attrs_, .target = target_, .vs_gd = vs_gd_, .run = run_}

static struct op ops[] = {
	OP("call", "(0) call via PLT, no TLS access", BASELINE, 0, false, 0, false, run_nop),
	OP("ie", "(a) swap, initial-exec TLS", BASELINE, 1, false, 0, false, run_ie_swap),
	OP("desc", "(b) swap, TLSDESC (compiler)", BASELINE, 1, false, 0, false, run_desc_swap),
	OP("gd", "(c) swap, __tls_get_addr", BASELINE, 1, false, 0, false, run_gd_swap),
	OP("own", "(d) swap, the library's TLSDESC call", BASELINE, 1, false, 0, false, run_own_swap),
	OP("own_cas", "(e) the same swap by compare-and-swap", BASELINE, 1, false, 0, false, run_own_cas_swap),
	OP("attach", "attach (replacing another)", LIBRARY, 1, false, 1.15, true, run_attach),
	OP("detach_empty", "detach (nothing attached)", LIBRARY, 1, false, 1.15, true, run_detach_empty),
	OP("attach_detach", "attach + detach (pair)", LIBRARY, 2, false, 1.15, true, run_attach_detach),
	OP("attach_shared", "attach, shared context (replacing another)", LIBRARY, 1, false, 0, false, run_attach_shared),
	OP("attach_detach_shared", "attach + detach, shared context (pair)", LIBRARY, 2, false, 0, false, run_attach_detach_shared),
	OP("update_span_id", "update_span_id (span only, one call)", LIBRARY, 1, false, 1.5, true, run_update_span_id),
	OP("update_trace_flags", "update_trace_flags (one call)", LIBRARY, 1, false, 0, false, run_update_trace_flags),
	OP("update_span", "set_span_id + update", LIBRARY, 1, false, 0, true, run_update_span),
	OP("update_ids", "set_ids + update", LIBRARY, 1, false, 0, true, run_update_ids),
	OP("update_all", "update_all (ids + 4 x 16 B attributes, one call)", LIBRARY, 1, true, 4, true, run_update_all),
	OP("update_attr_list", "set_ids + set_attrs(4 x 16 B) + update", LIBRARY, 1, true, 0, true, run_update_attr_list),
	OP("update_attrs", "set_ids + 4 set_attr(16 B) + update", LIBRARY, 1, true, 0, true, run_update_attrs),
	OP("update_span_id_attrs", "update_span_id, 4 attributes", LIBRARY, 1, true, 0, true, run_update_span_id),
	OP("update_span_attrs", "set_span_id + update, 4 attributes", LIBRARY, 1, true, 0, true, run_update_span),
	OP("update_attach", "update_attach (switch, no edit)", LIBRARY, 1, false, 0, true, run_update_attach),
	OP("update_attach_edit", "set_span_id + update_attach (switch)", LIBRARY, 1, false, 0, true, run_update_attach_edit),
	OP("read", "read (ids)", LIBRARY, 1, false, 2, true, run_read),
	OP("read_attrs", "read (ids + 4 attributes)", LIBRARY, 1, true, 2, true, run_read),
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

	fixture_init(&fx, op->attrs);
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

static void unpin_thread(pthread_attr_t *attr)
{
	if (pinned_cpu >= 0)
		pthread_attr_setaffinity_np(attr, sizeof(all_cpus), &all_cpus);
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

		fixture_init(&fx, ops[i].attrs);
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

static const char *const scale_ops[] = {"desc", "attach", "update_span_id", "read"};
#define N_SCALE_OPS (sizeof(scale_ops) / sizeof(scale_ops[0]))

struct scale_result {
	double cpu_median, cpu_max; /* thread CPU ns per op, across threads */
	double wall;                /* wall ns per op, all threads together */
};
static struct scale_result scaling[N_SCALE_OPS][N_SCALE];

struct scale_arg {
	const struct op *op;
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

	fixture_init(&fx, a->op->attrs);
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

static void run_scaling(void)
{
	for (size_t o = 0; o < N_SCALE_OPS; o++) {
		const struct op *op = op_by_id(scale_ops[o]);
		uint64_t n = (uint64_t)((double)op->iters * opt.scale_ms / opt.rep_ms) + 1;

		for (size_t s = 0; s < N_SCALE; s++) {
			unsigned t = scale_threads[s];
			double *cpu = calloc((size_t)t * opt.scale_reps, sizeof(double));
			double *wall = calloc(opt.scale_reps, sizeof(double));
			struct scale_arg *args = calloc(t, sizeof(*args));
			pthread_t *tids = calloc(t, sizeof(*tids));
			pthread_barrier_t barrier;
			pthread_attr_t attr;
			double dummy;

			if (cpu == NULL || wall == NULL || args == NULL || tids == NULL)
				die("out of memory");
			pthread_attr_init(&attr);
			unpin_thread(&attr);
			for (unsigned r = 0; r < opt.scale_reps; r++) {
				uint64_t first = UINT64_MAX, last = 0;

				pthread_barrier_init(&barrier, NULL, t + 1);
				for (unsigned k = 0; k < t; k++) {
					args[k] = (struct scale_arg){op, n, &barrier, 0, 0, 0};
					if (pthread_create(&tids[k], &attr, scale_thread, &args[k]) != 0)
						die("pthread_create failed");
				}
				pthread_barrier_wait(&barrier);
				for (unsigned k = 0; k < t; k++)
					pthread_join(tids[k], NULL);
				pthread_barrier_destroy(&barrier);
				/* From the first thread's start to the last one's end:
				 * the threads' own clocks, since this one may be
				 * scheduled late. */
				for (unsigned k = 0; k < t; k++) {
					cpu[r * t + k] = args[k].cpu_ns;
					first = args[k].start < first ? args[k].start : first;
					last = args[k].end > last ? args[k].end : last;
				}
				wall[r] = (double)(last - first) / ((double)n * t);
			}
			pthread_attr_destroy(&attr);
			summarize(cpu, (size_t)t * opt.scale_reps, &scaling[o][s].cpu_median,
				  &dummy, &scaling[o][s].cpu_max, &dummy, &dummy);
			summarize(wall, opt.scale_reps, &scaling[o][s].wall, &dummy, &dummy,
				  &dummy, &dummy);
			free(cpu);
			free(wall);
			free(args);
			free(tids);
		}
	}
}

/* ------------------------------------------------------------------ */
/* Memory per thread                                                    */

/* What the threads of a memory run do before they wait: nothing; use the
 * allocator once (glibc then gives the thread its malloc cache, and maybe an
 * arena); the same and create and attach a context with 4 attributes. */
enum mem_kind { MEM_BARE, MEM_MALLOC, MEM_CTX, N_MEM_KINDS };

struct mem_sample {
	long rss_kib;    /* RSS growth with the threads alive */
	long long heap;  /* heap growth, bytes; -1: unknown */
};

/* Heap per context by content: 0, 1 and 4 attributes of 16 bytes, in a
 * context of the default capacity and in one sized to them. */
static const unsigned sized_attrs[] = {0, 1, 4};
#define N_SIZED (sizeof(sized_attrs) / sizeof(sized_attrs[0]))
#define SIZED_COUNT 1000

static struct {
	size_t ctx_usable;      /* malloc_usable_size of a context */
	size_t tls_bytes;       /* the library's PT_TLS segment */
	unsigned threads;
	struct mem_sample s[N_MEM_KINDS];
	/* [attributes][0: default, 1: sized]: heap bytes per context over
	 * SIZED_COUNT contexts (-1: unknown), and malloc_usable_size. */
	double sized_heap[N_SIZED][2];
	size_t sized_usable[N_SIZED][2];
} mem;

/* SIZED_COUNT contexts of one kind: heap growth per context. */
static void measure_sized(unsigned attrs, bool sized, double *heap, size_t *usable)
{
	static otel_thread_ctx *ctxs[SIZED_COUNT];
	struct otel_thread_ctx_options o = OTEL_THREAD_CTX_OPTIONS_INIT;
	long long before = heap_in_use(), after;

	if (sized)
		o.attrs_capacity = attrs * (2 + ATTR_LEN);
	for (unsigned i = 0; i < SIZED_COUNT; i++) {
		CHECK(otel_thread_ctx_create_with(&ctxs[i], &o));
		CHECK(otel_thread_ctx_set_ids(ctxs[i], trace_ids[0], span_ids[0], 1));
		for (unsigned a = 0; a < attrs; a++)
			CHECK(otel_thread_ctx_set_attr(ctxs[i], a + 1, attr_values[0][a], ATTR_LEN));
		CHECK(otel_thread_ctx_update(ctxs[i]));
	}
	after = heap_in_use();
	*heap = before < 0 ? -1 : (double)(after - before) / SIZED_COUNT;
	*usable = malloc_usable_size(ctxs[0]);
	for (unsigned i = 0; i < SIZED_COUNT; i++)
		CHECK(otel_thread_ctx_destroy(ctxs[i]));
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
	pthread_barrier_t *alive, *done;
};

static void *mem_thread(void *arg)
{
	struct mem_arg *a = arg;
	otel_thread_ctx *ctx, *prev;

	if (a->kind != MEM_BARE) {
		void *volatile p = malloc(1); /* volatile: not optimized away */

		free(p);
	}
	if (a->kind == MEM_CTX) {
		CHECK(otel_thread_ctx_create_with(&ctx, &given_to_thread));
		CHECK(otel_thread_ctx_set_ids(ctx, trace_ids[0], span_ids[0], 1));
		set_attrs(ctx, 0);
		CHECK(otel_thread_ctx_update_attach(ctx, &prev));
	}
	pthread_barrier_wait(a->alive);
	pthread_barrier_wait(a->done);
	/* Exits with the context attached: the library frees it
	 * (FREE_WITH_THREAD). */
	return NULL;
}

/* RSS and heap growth while `threads` threads of one kind are alive.  The
 * stacks are this program's own mapping, so that every run touches fresh
 * stack pages alike and the C library's cache of thread stacks plays no
 * part. */
static struct mem_sample threads_alive(unsigned threads, enum mem_kind kind)
{
	const size_t stack = 128 * 1024;
	pthread_barrier_t alive, done;
	struct mem_arg arg = {kind, &alive, &done};
	pthread_t *tids = calloc(threads, sizeof(*tids));
	char *stacks = mmap(NULL, stack * threads, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	struct mem_sample r;
	long rss0;
	long long heap0;

	if (tids == NULL || stacks == MAP_FAILED)
		die("out of memory for %u threads", threads);
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
	}
	pthread_barrier_wait(&alive);
	r.rss_kib = rss_kib() - rss0;
	r.heap = heap0 < 0 ? -1 : heap_in_use() - heap0;
	pthread_barrier_wait(&done);
	for (unsigned k = 0; k < threads; k++)
		pthread_join(tids[k], NULL);
	pthread_barrier_destroy(&alive);
	pthread_barrier_destroy(&done);
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

static void mem_child(void *arg, void *out)
{
	*(struct mem_sample *)out = threads_alive(mem.threads, *(enum mem_kind *)arg);
}

static void run_memory(void)
{
	otel_thread_ctx *ctx;
	Dl_info lib;

	CHECK(otel_thread_ctx_create(&ctx));
	mem.ctx_usable = malloc_usable_size(ctx);
	CHECK(otel_thread_ctx_destroy(ctx));
	if (dladdr((void *)(uintptr_t)otel_thread_ctx_attach, &lib) == 0)
		die("dladdr failed");
	dl_iterate_phdr(find_tls, &lib);
	mem.threads = opt.mem_threads;
	for (enum mem_kind k = 0; k < N_MEM_KINDS; k++)
		in_child(mem_child, &k, &mem.s[k], sizeof(mem.s[k]));
	for (size_t a = 0; a < N_SIZED; a++)
		for (int sized = 0; sized < 2; sized++)
			measure_sized(sized_attrs[a], sized, &mem.sized_heap[a][sized],
				      &mem.sized_usable[a][sized]);
}

/* Growth per thread that the contexts account for. */
static double mem_rss_per_thread(void)
{
	return (double)(mem.s[MEM_CTX].rss_kib - mem.s[MEM_MALLOC].rss_kib) * 1024.0 /
	       mem.threads;
}

static double mem_heap_per_thread(void)
{
	if (mem.s[MEM_CTX].heap < 0)
		return -1;
	return (double)(mem.s[MEM_CTX].heap - mem.s[MEM_MALLOC].heap) / mem.threads;
}

/* ------------------------------------------------------------------ */
/* Churn: many threads each attach a context and exit                   */

struct churn_result {
	unsigned threads, warm_threads;
	long rss_start, rss_warm, rss_end;       /* KiB */
	long long heap_start, heap_warm, heap_end; /* bytes */
	double seconds;
};
/* With contexts, and the control: threads that only use malloc once. */
static struct churn_result churn, churn_control;

static void *churn_thread(void *arg)
{
	otel_thread_ctx *ctx, *prev;

	if (arg == NULL) {
		void *volatile p = malloc(1); /* volatile: not optimized away */

		free(p);
		return NULL;
	}
	CHECK(otel_thread_ctx_create_with(&ctx, &given_to_thread));
	CHECK(otel_thread_ctx_set_ids(ctx, trace_ids[1], span_ids[1], 1));
	set_attrs(ctx, 1);
	CHECK(otel_thread_ctx_update_attach(ctx, &prev));
	if (otel_thread_ctx_v1 == NULL)
		die("churn: nothing published");
	/* Exits with the context attached: the library frees it
	 * (FREE_WITH_THREAD, the documented pattern for a context a thread
	 * keeps until it exits). */
	return NULL;
}

static void churn_threads(unsigned count, bool with_ctx)
{
	unsigned batch = opt.churn_batch;
	pthread_t *tids = calloc(batch, sizeof(*tids));

	if (tids == NULL)
		die("out of memory");
	for (unsigned done = 0; done < count;) {
		unsigned now = count - done < batch ? count - done : batch;

		for (unsigned k = 0; k < now; k++)
			if (pthread_create(&tids[k], NULL, churn_thread,
					   with_ctx ? &churn : NULL) != 0)
				die("pthread_create failed");
		for (unsigned k = 0; k < now; k++)
			pthread_join(tids[k], NULL);
		done += now;
	}
	free(tids);
}

/* In a fresh child: RSS and heap at the start, after the first 1% of the
 * threads (the allocator's arenas and the cache of thread stacks are set up
 * by then), and at the end. */
static void churn_child(void *arg, void *out)
{
	struct churn_result *r = out;
	bool with_ctx = *(bool *)arg;
	uint64_t t0 = now_ns(CLOCK_MONOTONIC);

	r->threads = opt.churn;
	r->warm_threads = opt.churn / 100 ? opt.churn / 100 : 1;
	r->rss_start = rss_kib();
	r->heap_start = heap_in_use();
	churn_threads(r->warm_threads, with_ctx);
	r->rss_warm = rss_kib();
	r->heap_warm = heap_in_use();
	churn_threads(r->threads - r->warm_threads, with_ctx);
	r->rss_end = rss_kib();
	r->heap_end = heap_in_use();
	r->seconds = (double)(now_ns(CLOCK_MONOTONIC) - t0) / 1e9;
}

static void run_churn(void)
{
	bool with_ctx = true;

	in_child(churn_child, &with_ctx, &churn, sizeof(churn));
	with_ctx = false;
	in_child(churn_child, &with_ctx, &churn_control, sizeof(churn_control));
}

/* ------------------------------------------------------------------ */
/* Reporting                                                            */

static const struct op *base_b, *base_c;
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

static double ratio_b(const struct op *op)
{
	return op->ratio;
}

static double instr_ratio_b(const struct op *op)
{
	unsigned swaps = op->swaps ? op->swaps : 1;

	return op->instr / (swaps * base_b->instr);
}

/* What the row says about its targets. */
static void verdict(const struct op *op, char *buf, size_t len)
{
	double r = ratio_b(op);
	size_t used = 0;

	buf[0] = '\0';
	if (op->group == BASELINE || !is_x86_64())
		return;
	if (op->target > 0 && is_x86_64()) {
		if (r <= op->target)
			used += (size_t)snprintf(buf, len, "met");
		else
			used += (size_t)snprintf(buf, len, "missed by %.0f%%",
						 (r / op->target - 1) * 100);
	}
	if (op->vs_gd && used < len) {
		bool faster = op->ratio_c < 1;

		snprintf(buf + used, len - used, "%s%s", used ? "; " : "",
			 faster ? "faster than (c)" : "slower than (c)");
	}
}

static void fmt_target(const struct op *op, char *buf, size_t len)
{
	if (op->target > 0)
		snprintf(buf, len, "%s%.2fx", op->swaps == 2 ? "2 swaps, " : "", op->target);
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
		"| %s | %.2f | %.2f – %.2f | %.2f – %.2f | %.2f | %s | %s | %s | %s |\n" :
		"%-38s %7.2f %7.2f-%-7.2f %7.2f-%-7.2f %6.2f %8s %6s  %-16s %s\n";

	if (markdown) {
		fprintf(f, "| operation | ns/op (median) | min – max | IQR | × (b) | "
			   "instr/op | instr × (b) | target (× (b)) | result |\n");
		fprintf(f, "|---|---:|---:|---:|---:|---:|---:|---|---|\n");
	} else {
		fprintf(f, "%-38s %7s %15s %15s %6s %8s %6s  %-16s %s\n", "operation",
			"ns/op", "min-max", "IQR", "x(b)", "instr/op", "x(b)", "target", "result");
	}
	for (size_t i = 0; i < N_OPS; i++) {
		const struct op *op = &ops[i];
		char res[96], tgt[48], ir[32], irr[32];

		verdict(op, res, sizeof(res));
		fmt_target(op, tgt, sizeof(tgt));
		fmt_instr(op, ir, sizeof(ir), irr, sizeof(irr));
		fprintf(f, row_fmt, op->label, op->median, op->min, op->max, op->q1, op->q3,
			ratio_b(op), ir, irr, tgt, res);
	}
}

static void print_scaling(FILE *f, bool markdown)
{
	if (markdown) {
		fprintf(f, "| operation | threads | thread CPU ns/op (median) | (max) | "
			   "× (b) at the same count | wall ns/op, all threads |\n");
		fprintf(f, "|---|---:|---:|---:|---:|---:|\n");
	} else {
		fprintf(f, "%-38s %7s %12s %9s %9s %12s\n", "operation", "threads",
			"cpu ns/op", "(max)", "x(b)", "wall ns/op");
	}
	for (size_t o = 0; o < N_SCALE_OPS; o++) {
		for (size_t s = 0; s < N_SCALE; s++) {
			const struct scale_result *r = &scaling[o][s];

			fprintf(f, markdown ? "| %s | %u | %.2f | %.2f | %.2f | %.2f |\n" :
					      "%-38s %7u %12.2f %9.2f %9.2f %12.2f\n",
				op_by_id(scale_ops[o])->label, scale_threads[s], r->cpu_median,
				r->cpu_max, r->cpu_median / scaling[0][s].cpu_median, r->wall);
		}
	}
}

static double kib(long long bytes)
{
	return (double)bytes / 1024.0;
}

/* Bytes per thread the targets are judged on: the measured heap growth per
 * context when the allocator tells, else its usable size; plus the TLS. */
static double mem_per_thread(void)
{
	double heap = mem_heap_per_thread();

	return (heap >= 0 ? heap : (double)mem.ctx_usable) + (double)mem.tls_bytes;
}

/* The targets are for x86-64. */
static const char *judge(bool met)
{
	return !is_x86_64() ? "not judged on this architecture" : met ? "met" : "missed";
}

/* Heap the churn with contexts kept after its warm-up beyond what the
 * control churn kept: what the contexts account for. */
static long long churn_extra_heap(void)
{
	return (churn.heap_end - churn.heap_warm) -
	       (churn_control.heap_end - churn_control.heap_warm);
}

static long long churn_leaked_contexts(void)
{
	long long extra = churn_extra_heap();

	return extra > 0 && mem.ctx_usable ? extra / (long long)mem.ctx_usable : 0;
}

static long churn_growth(void)
{
	return churn.rss_end - churn.rss_start;
}

static void print_memory(FILE *f, bool markdown)
{
	const struct mem_sample *s = mem.s;
	const char *li = markdown ? "- " : "  ";
	double per_thread = mem_per_thread();

	for (size_t a = 0; a < N_SIZED; a++)
		fprintf(f, "%sheap per context with ids and %u attribute%s of %u B: %.0f B with the "
			   "default capacity (usable %zu B), %.0f B sized to them (capacity %u B, "
			   "usable %zu B)\n",
			li, sized_attrs[a], sized_attrs[a] == 1 ? "" : "s", ATTR_LEN,
			mem.sized_heap[a][0], mem.sized_usable[a][0], mem.sized_heap[a][1],
			sized_attrs[a] * (2 + ATTR_LEN), mem.sized_usable[a][1]);
	fprintf(f, "%smemory per thread with a context attached: %.0f B = %.2f KiB "
		   "(target <= 1.5 KiB: %s): heap %.0f B per context (malloc_usable_size %zu B) "
		   "+ %zu B of TLS (the library's PT_TLS)\n",
		li, per_thread, per_thread / 1024, judge(per_thread <= 1536),
		mem_heap_per_thread(), mem.ctx_usable, mem.tls_bytes);
	fprintf(f, "%s%u threads alive at once, growth of RSS / heap: bare threads "
		   "%+ld KiB / %+.1f KiB; threads that used malloc %+ld KiB / %+.1f KiB; "
		   "threads with a context (4 attributes) attached %+ld KiB / %+.1f KiB; "
		   "the contexts: %.0f B RSS and %.0f B heap per thread\n",
		li, mem.threads, s[MEM_BARE].rss_kib, kib(s[MEM_BARE].heap),
		s[MEM_MALLOC].rss_kib, kib(s[MEM_MALLOC].heap), s[MEM_CTX].rss_kib,
		kib(s[MEM_CTX].heap), mem_rss_per_thread(), mem_heap_per_thread());
	fprintf(f, "%s%u threads created and exited (%u alive at a time), each exiting with "
		   "a context attached: RSS %ld KiB at the start, %ld KiB after %u threads, "
		   "%ld KiB at the end: %+ld KiB (target < 1024 KiB: %s; %+ld KiB after the "
		   "first %u); heap in use %+lld B (%+lld B after the first %u); %.1f s\n",
		li, churn.threads, opt.churn_batch, churn.rss_start, churn.rss_warm,
		churn.warm_threads, churn.rss_end, churn_growth(),
		judge(churn_growth() < 1024), churn.rss_end - churn.rss_warm,
		churn.warm_threads, churn.heap_end - churn.heap_start,
		churn.heap_end - churn.heap_warm, churn.warm_threads, churn.seconds);
	fprintf(f, "%sthe same churn, threads that only call malloc once: RSS %ld, %ld, %ld KiB: "
		   "%+ld KiB; heap in use %+lld B (%+lld B after the first %u)\n",
		li, churn_control.rss_start, churn_control.rss_warm, churn_control.rss_end,
		churn_control.rss_end - churn_control.rss_start,
		churn_control.heap_end - churn_control.heap_start,
		churn_control.heap_end - churn_control.heap_warm, churn_control.warm_threads);
	fprintf(f, "%scontexts left behind by the churn: %lld (heap growth after the first %u "
		   "threads beyond the control's, %+lld B, in contexts of %zu B)\n",
		li, churn_leaked_contexts(), churn.warm_threads, churn_extra_heap(),
		mem.ctx_usable);
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
	fprintf(f, "%sload average: %.2f %.2f %.2f at the start, %.2f %.2f %.2f at the end\n",
		li, load_start[0], load_start[1], load_start[2], load_end[0], load_end[1],
		load_end[2]);
	fprintf(f, "%s%u repetitions of about %.0f ms per operation, interleaved, timed on "
		   "the thread's CPU clock; it had the CPU %.0f%% of the wall time; "
		   "instructions: %s\n",
		li, opt.reps, opt.rep_ms, cpu_share() * 100,
		instr_counted ? "callgrind, per op including the loop" : instr_why);
	{
		const struct op *e = op_by_id("own_cas"), *a = op_by_id("attach");

		fprintf(f, "%sattach claims its context with one compare-and-swap, so that of "
			   "two threads attaching one context exactly one wins: its floor is (e), "
			   "%.2fx (b) here; attach costs %.2fx (e)\n",
			li, ratio_b(e), a->median / e->median);
	}
}

static void write_csv(const char *path)
{
	FILE *f = fopen(path, "w");

	if (f == NULL)
		die("%s: %s", path, strerror(errno));
	fprintf(f, "id,label,group,swaps,reps,iterations,ns_median,ns_min,ns_q1,ns_q3,"
		   "ns_max,ratio_b,target_ratio_b,target_ns,result,instr_per_op,instr_ratio_b,"
		   "ratio_c\n");
	for (size_t i = 0; i < N_OPS; i++) {
		const struct op *op = &ops[i];
		char res[96];
		unsigned swaps = op->swaps ? op->swaps : 1;
		bool t = op->target > 0;

		verdict(op, res, sizeof(res));
		fprintf(f, "%s,\"%s\",%s,%u,%u,%" PRIu64 ",%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,",
			op->id, op->label, op->group == BASELINE ? "baseline" : "library",
			op->swaps, opt.reps, op->iters, op->median, op->min, op->q1, op->q3,
			op->max, ratio_b(op));
		if (t)
			fprintf(f, "%.2f,%.3f,", op->target, op->target * swaps * base_b->median);
		else
			fprintf(f, ",,");
		fprintf(f, "\"%s\",", res);
		if (instr_counted)
			fprintf(f, "%.2f,%.3f,", op->instr, instr_ratio_b(op));
		else
			fprintf(f, ",,");
		fprintf(f, "%.3f\n", op->ratio_c);
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
	fprintf(f, "  \"settings\": {\"reps\": %u, \"rep_ms\": %.1f, \"scale_reps\": %u, "
		   "\"scale_ms\": %.1f, \"instr_iters\": %lu, \"cpu_share\": %.3f, "
		   "\"instructions\": ",
		opt.reps, opt.rep_ms, opt.scale_reps, opt.scale_ms, opt.instr_iters,
		cpu_share());
	json_str(f, instr_counted ? "callgrind" : instr_why);
	fprintf(f, "},\n  \"ops\": [\n");
	for (size_t i = 0; i < N_OPS; i++) {
		const struct op *op = &ops[i];
		char res[96];

		verdict(op, res, sizeof(res));
		fprintf(f, "    {\"id\": \"%s\", \"label\": ", op->id);
		json_str(f, op->label);
		fprintf(f, ", \"group\": \"%s\", \"swaps\": %u, \"iterations\": %" PRIu64
			   ", \"ns\": [",
			op->group == BASELINE ? "baseline" : "library", op->swaps, op->iters);
		for (unsigned r = 0; r < opt.reps; r++)
			fprintf(f, "%s%.3f", r ? ", " : "", op->ns[r]);
		fprintf(f, "], \"ns_median\": %.3f, \"ratio_b\": %.3f, \"ratio_c\": %.3f, "
			   "\"target_ratio_b\": ",
			op->median, ratio_b(op), op->ratio_c);
		if (op->target > 0)
			fprintf(f, "%.2f", op->target);
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
	fprintf(f, "  ],\n  \"scaling\": [\n");
	for (size_t o = 0; o < N_SCALE_OPS; o++)
		for (size_t s = 0; s < N_SCALE; s++)
			fprintf(f, "    {\"op\": \"%s\", \"threads\": %u, \"cpu_ns_median\": %.3f, "
				   "\"cpu_ns_max\": %.3f, \"wall_ns\": %.3f}%s\n",
				scale_ops[o], scale_threads[s], scaling[o][s].cpu_median,
				scaling[o][s].cpu_max, scaling[o][s].wall,
				o + 1 == N_SCALE_OPS && s + 1 == N_SCALE ? "" : ",");
	fprintf(f, "  ],\n  \"memory\": {\"ctx_usable_bytes\": %zu, \"tls_bytes\": %zu, "
		   "\"per_thread_bytes\": %.0f, \"threads\": %u,\n",
		mem.ctx_usable, mem.tls_bytes, mem_per_thread(), mem.threads);
	for (enum mem_kind k = 0; k < N_MEM_KINDS; k++)
		fprintf(f, "    \"%s\": {\"rss_kib\": %ld, \"heap_bytes\": %lld},\n",
			k == MEM_BARE ? "bare_threads" : k == MEM_MALLOC ? "malloc_threads" :
			"ctx_threads", mem.s[k].rss_kib, mem.s[k].heap);
	fprintf(f, "    \"ctx_rss_bytes_per_thread\": %.0f, \"ctx_heap_bytes_per_thread\": "
		   "%.0f},\n", mem_rss_per_thread(), mem_heap_per_thread());
	for (int c = 0; c < 2; c++) {
		const struct churn_result *r = c ? &churn_control : &churn;

		fprintf(f, "  \"%s\": {\"threads\": %u, \"concurrent\": %u, \"warm_threads\": %u, "
			   "\"rss_kib\": [%ld, %ld, %ld], \"heap_bytes\": [%lld, %lld, %lld], "
			   "\"seconds\": %.2f}%s\n",
			c ? "churn_malloc_only" : "churn", r->threads, opt.churn_batch,
			r->warm_threads, r->rss_start, r->rss_warm, r->rss_end, r->heap_start,
			r->heap_warm, r->heap_end, r->seconds, c ? "\n}" : ",");
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
	fprintf(f, "\nScaling (each thread runs the operation on its own contexts):\n\n");
	print_scaling(f, true);
	fprintf(f, "\nMemory:\n\n");
	print_memory(f, true);
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
	base_b = op_by_id("desc");
	base_c = op_by_id("gd");

	/* Memory first, while no thread but this one has used the allocator. */
	printf("memory: %u threads alive at once ...\n", opt.mem_threads);
	run_memory();
	printf("churn: %u threads ...\n", opt.churn);
	run_churn();

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
		double *copy = malloc(opt.reps * sizeof(double));

		if (copy == NULL)
			die("out of memory");
		memcpy(copy, ops[i].ns, opt.reps * sizeof(double));
		summarize(copy, opt.reps, &ops[i].median, &ops[i].min, &ops[i].max,
			  &ops[i].q1, &ops[i].q3);
		for (unsigned r = 0; r < opt.reps; r++)
			copy[r] = ops[i].ns[r] /
				  ((ops[i].swaps ? ops[i].swaps : 1) * base_b->ns[r]);
		qsort(copy, opt.reps, sizeof(*copy), cmp_double);
		ops[i].ratio = quantile(copy, opt.reps, 0.5);
		for (unsigned r = 0; r < opt.reps; r++)
			copy[r] = ops[i].ns[r] /
				  ((ops[i].swaps ? ops[i].swaps : 1) * base_c->ns[r]);
		qsort(copy, opt.reps, sizeof(*copy), cmp_double);
		ops[i].ratio_c = quantile(copy, opt.reps, 0.5);
		free(copy);
	}

	printf("scaling: 1, 2, 8, 64 threads ...\n");
	run_scaling();

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
	printf("\nscaling (thread CPU time per op; x(b): to (b) at the same thread count):\n");
	print_scaling(stdout, false);
	printf("\nmemory:\n");
	print_memory(stdout, false);
	if (!is_x86_64())
		printf("\nThe targets are for x86-64; on this machine they are not judged.\n");

	if (opt.csv)
		write_csv(opt.csv);
	if (opt.json)
		write_json(opt.json);
	if (opt.markdown)
		write_markdown(opt.markdown);
	return 0;
}
