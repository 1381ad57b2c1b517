/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The operations and their timed loop: the fixture every operation works
 * on, the run_* functions (n operations each, checked once after the loop),
 * the table of operations with their targets, and the timing: calibrated to
 * a duration, then the repetitions of all rows interleaved, each timed on
 * the thread's CPU clock; the median of each row and its ratios to the
 * baselines (0), (a), (b), (c), (d) in the same repetition.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "baseline.h"
#include "bench.h"

/* ------------------------------------------------------------------ */
/* What every operation works on                                        */

const uint8_t trace_ids[2][16] = {
	{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6,
	 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
	{0x0a, 0xf7, 0x65, 0x19, 0x16, 0xcd, 0x43, 0xdd,
	 0x84, 0x48, 0xeb, 0x21, 0x1c, 0x80, 0x31, 0x9c},
};
const uint8_t span_ids[2][8] = {
	{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
	{0xb7, 0xad, 0x6b, 0x71, 0x69, 0x20, 0x33, 0x31},
};
/* The span of the context a scope replaces. */
static const uint8_t outer_span_id[8] = {0x53, 0xc0, 0x9e, 0x12, 0x44, 0x7d, 0xa1, 0x06};
const char attr_values[2][N_ATTRS][ATTR_LEN + 1] = {
	{"GET /api/v1/user", "checkout-worker1", "tenant-000000042", "region-eu-west-1"},
	{"POST /api/v1/ord", "checkout-worker2", "tenant-000000043", "region-us-east-2"},
};

/* A context with ids only: no room for attributes at all. */
static const struct otel_thread_ctx_options span_only = {
	sizeof(struct otel_thread_ctx_options), 0, OTEL_THREAD_CTX_OPTION_IDS_ONLY,
};

/* The same attributes as one list, for otel_thread_ctx_set_attrs() and
 * otel_thread_ctx_update_all(). */
#define ATTR(k, a) { (a) + 1, ATTR_LEN, (const uint8_t *)attr_values[k][a] }
static const struct otel_thread_ctx_attr attr_lists[2][N_ATTRS] = {
	{ ATTR(0, 0), ATTR(0, 1), ATTR(0, 2), ATTR(0, 3) },
	{ ATTR(1, 0), ATTR(1, 1), ATTR(1, 2), ATTR(1, 3) },
};
#undef ATTR

static void set_attrs(otel_thread_ctx *ctx, unsigned k)
{
	for (unsigned a = 0; a < N_ATTRS; a++)
		CHECK(otel_thread_ctx_set_attr(ctx, a + 1, attr_values[k][a], ATTR_LEN));
}

/* A context with trace k's ids and `span`, and, when asked, its four
 * attributes; span-only (ids only) without them. */
otel_thread_ctx *make_ctx(unsigned k, const uint8_t span[8], bool attrs)
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
void fixture_init(struct fixture *fx, bool attrs, otel_thread_ctx *one)
{
	for (unsigned k = 0; k < 2; k++) {
		fx->ctx[k] = one != NULL ? one : make_ctx(k, span_ids[k], attrs);
		fx->val[k] = &fx->ctx[k];
	}
	fx->borrowed = one != NULL;
	fx->outer = make_ctx(0, outer_span_id, attrs);
	CHECK(otel_thread_ctx_create(&fx->saved));
}

void fixture_fini(struct fixture *fx)
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

#define OP(id_, label_, group_, swaps_, attrs_, target_b_, target_a_, vs_gd_, run_) \
	{.id = id_, .label = label_, .group = group_, .swaps = swaps_,        \
	 .attrs = attrs_, .target_b = target_b_, .target_a = target_a_,       \
	 .vs_gd = vs_gd_, .run = run_}

struct op ops[] = {
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
	OP("attach", "attach, span-only context (ids only)", LIBRARY, 1, false, 1.3, 1.1, true,
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
_Static_assert(sizeof(ops) / sizeof(ops[0]) == N_OPS, "N_OPS (bench.h): the rows of ops[]");

struct op *op_by_id(const char *id)
{
	for (size_t i = 0; i < N_OPS; i++)
		if (strcmp(ops[i].id, id) == 0)
			return &ops[i];
	die("no operation %s", id);
	return NULL;
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

double cpu_share(void)
{
	return wall_total_ns > 0 ? cpu_total_ns / wall_total_ns : 0;
}

const struct op *base_a, *base_b, *base_c;

void run_operations(void)
{
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
}
