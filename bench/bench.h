/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the parts of the benchmark share.  bench.c says what is measured and
 * has main; the parts:
 *
 *   ops.c           the fixtures, the operations, their table and timing
 *   stats.c         median and quantiles of the samples
 *   machine.c       the machine: pinning, cpu, kernel, libc, load, memory
 *   instructions.c  instructions per operation, under callgrind
 *   scaling.c       the operations on 1, 2, 8 and 64 threads at once
 *   memory.c        memory per publishing thread and per context
 *   churn.c         resident memory after a churn of publishing threads
 *   report.c        the tables, on stdout and as csv, json and markdown
 *
 * bench-readers, a program of its own (readers.c, readers-target.c,
 * readers.h: what reading another process costs), uses stats.c and
 * machine.c.
 *
 * Every file defines _GNU_SOURCE before it includes this one.
 */
#ifndef OTEL_BENCH_BENCH_H
#define OTEL_BENCH_BENCH_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <otel_thread_ctx.h>

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
/* Options (bench.c)                                                    */

struct options {
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
};
extern struct options opt;

/* Threads of the scaling runs: at most MAX_SCALE_THREADS. */
#define MAX_SCALE_THREADS 64
static const unsigned scale_threads[] = {1, 2, 8, MAX_SCALE_THREADS};
#define N_SCALE (sizeof(scale_threads) / sizeof(scale_threads[0]))

/* Prints "bench: " and the message on stderr and exits with status 1. */
_Noreturn void die(const char *fmt, ...);

/* ------------------------------------------------------------------ */
/* What every operation works on (ops.c)                                */

/*
 * One thread's objects: two contexts to switch between, the context a
 * scope replaces and the one it saves it in, two pointer values for the
 * baselines, a record for the reader.  Contexts without attributes are
 * span-only (OTEL_THREAD_CTX_OPTION_IDS_ONLY); those with attributes have the default
 * capacity, as has `saved`, which must hold whatever it replaces.
 */
struct fixture {
	otel_thread_ctx *ctx[2];
	otel_thread_ctx *outer, *saved;
	bool borrowed; /* ctx[] belong to the caller of fixture_init */
	void *val[2];
	struct otel_thread_ctx_record rec;
};

extern const uint8_t trace_ids[2][16];
extern const uint8_t span_ids[2][8];
#define N_ATTRS 4
#define ATTR_LEN 16
extern const char attr_values[2][N_ATTRS][ATTR_LEN + 1];

#define CHECK(call)                                                        \
	do {                                                               \
		int check_err_ = (call);                                   \
		if (__builtin_expect(check_err_ != 0, 0))                  \
			die("%s: %s", #call, otel_thread_ctx_strerror(check_err_)); \
	} while (0)

otel_thread_ctx *make_ctx(unsigned k, const uint8_t span[8], bool attrs);
void fixture_init(struct fixture *fx, bool attrs, otel_thread_ctx *one);
void fixture_fini(struct fixture *fx);

/* The thread publishes a record with this span id (and trace flags, unless
 * flags < 0).  Static, as in one file, so that the compiler sees every
 * caller of each copy: the runs in ops.c stay as they were. */
static inline void expect_span(const uint8_t span[8], int flags, const char *what)
{
	struct otel_thread_ctx_record got;

	CHECK(otel_thread_ctx_read(&got));
	if (memcmp(got.span_id, span, 8) != 0 || (flags >= 0 && got.trace_flags != flags))
		die("%s: the thread publishes the wrong span id or trace flags", what);
}

/* ------------------------------------------------------------------ */
/* The operations (ops.c)                                               */

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

/* The rows of ops[]: ops.c checks the count. */
#define N_OPS ((size_t)23)
extern struct op ops[];
/* The baselines of the ratios, (a), (b) and (c): set by main. */
extern const struct op *base_a, *base_b, *base_c;

struct op *op_by_id(const char *id);

static inline uint64_t now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Calibrates every operation, then times the repetitions of them all,
 * interleaved; the medians, quartiles and ratios into ops[]. */
void run_operations(void);
/* The share of the wall time the timed runs had the CPU. */
double cpu_share(void);

/* ------------------------------------------------------------------ */
/* Statistics (stats.c)                                                 */

int cmp_double(const void *a, const void *b);
double quantile(const double *s, size_t n, double q);
void summarize(double *s, size_t n, double *median, double *min, double *max,
	       double *q1, double *q3);

/* ------------------------------------------------------------------ */
/* Machine (machine.c)                                                  */

extern cpu_set_t all_cpus;
extern int pinned_cpu;
extern char cpu_model[];
extern char kernel[];
extern char libc_version[];
extern double load_start[3], load_end[3];
extern long online_cpus;

void pin(void);
void read_loadavg(double load[3]);
void read_machine(void);
long rss_kib(void);
long long heap_in_use(void);

/* ------------------------------------------------------------------ */
/* Instruction counts (instructions.c)                                  */

#if OTEL_BENCH_CALLGRIND
void instr_child(void);
#endif
bool count_instructions(char *why, size_t why_len);

/* ------------------------------------------------------------------ */
/* Scaling (scaling.c)                                                  */

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

/* The rows of scale_ops[]: scaling.c checks the count. */
#define N_SCALE_OPS ((size_t)7)
extern const struct scale_op scale_ops[];

struct scale_result {
	double cpu_median, cpu_max; /* thread CPU ns per op, across threads */
	double wall;                /* wall ns per op, all threads together */
};
extern struct scale_result scaling[N_SCALE_OPS][N_SCALE];
extern bool scaling_done;

void run_scaling(void);

/* ------------------------------------------------------------------ */
/* Memory (memory.c)                                                    */

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

struct mem_results {
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
};
extern struct mem_results mem;

/* fn(arg) in a fresh child process, which writes `len` bytes to `out`. */
void in_child(void (*fn)(void *arg, void *out), void *arg, void *out, size_t len);
void run_memory(void);

/* ------------------------------------------------------------------ */
/* Churn (churn.c)                                                      */

struct churn_result {
	unsigned threads, warm_threads;
	long rss_start, rss_warm, rss_end;       /* KiB */
	long long heap_start, heap_warm, heap_end; /* bytes */
	double seconds;
};
/* Threads that publish, and the control: threads that only use malloc
 * once. */
extern struct churn_result churn, churn_control;
extern bool churn_done;

void run_churn(void);

/* ------------------------------------------------------------------ */
/* Reporting (report.c)                                                 */

extern bool instr_counted;
extern char instr_why[256];

bool is_x86_64(void);
void print_table(FILE *f, bool markdown);
void print_scaling(FILE *f, bool markdown);
void print_memory(FILE *f, bool markdown);
void print_machine(FILE *f, bool markdown);
void print_targets(FILE *f, bool markdown);
void write_csv(const char *path);
void write_json(const char *path);
void write_markdown(const char *path);

#endif /* OTEL_BENCH_BENCH_H */
