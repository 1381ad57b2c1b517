/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench-readers: what reading another process costs a profiler, against
 * the size of the process read.  The readers of libotel-thread-ctx-inspect,
 * timed on target processes this program starts (readers-target.c) and
 * ends:
 *
 *   discovery    otel_thread_ctx_inspect_open(): the scan of
 *                /proc/PID/maps and the modules that define the slot;
 *   description  what the eBPF reader's user space does for a process
 *                (tools/sample, describe()): otel_thread_ctx_inspect_open(),
 *                otel_thread_ctx_inspect_signature() (the maps signature
 *                open() took), otel_thread_ctx_inspect_bpf_proc();
 *   signature    otel_thread_ctx_inspect_maps_signature() alone, which the
 *                eBPF reader repeats for every process it watches to learn
 *                when to describe it again: one pass over its maps;
 *
 * each against processes with 100, 10,000 and 60,000 mappings (small
 * anonymous regions that cannot merge; and again, mappings of a file that is
 * no ELF file), and
 *
 *   threads      otel_thread_ctx_inspect_threads() on one inspector: every
 *                thread attached, stopped, read and detached in turn;
 *
 * against processes with 10, 1,000 and 10,000 threads, each publishing a
 * record, which every read must find (the record of that thread: its span
 * id names it).
 *
 * Each row is timed --reps times (wall clock, and the CPU time of this
 * process, its inspector's tracer thread included) after one warm-up, the
 * repetitions of all sizes interleaved, so that a change of load falls on
 * all of them alike; reported are the median with min–max and quartiles,
 * the cost per mapping (per 1,000 threads), and the cost of each mapping
 * (thread) added from one size to the next, which shows whether the cost
 * grows linearly.  Then the goals, met or missed.
 *
 * Needs root (attaching to any process, /proc/PID/map_files): exit 77
 * otherwise, and where ptrace is refused, or the machine's limits cannot
 * hold the targets.  Exit 0 when everything ran (whether or not the goals
 * are met: the report says), 1 on a failure.  Every target is killed on
 * every path, an interrupt included; a target whose reader dies kills
 * itself (PR_SET_PDEATHSIG).
 *
 * Run with --help for the options.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <otel_thread_ctx_inspect.h>
#include <otel_thread_ctx_inspect_bpf.h>

#include "bench.h"
#include "readers.h"

/* The goals (the performance issue's): discovery in a process with
 * 60,000 mappings, reading 10,000 threads, and costs that grow linearly:
 * the cost of each thread (mapping) added between the two largest sizes at
 * most LINEAR_TOLERANCE times that between the two smallest. */
#define GOAL_MAPS 60000ul
#define GOAL_MAPS_MS 50.0
#define GOAL_THREADS 10000ul
#define GOAL_THREADS_MS 1000.0
#define LINEAR_TOLERANCE 1.25

#define MAX_SIZES 6

struct sizes {
	unsigned long n[MAX_SIZES];
	size_t count;
};

static struct {
	struct sizes maps, threads;
	unsigned int reps;
	bool files;
	const char *json, *markdown;
} conf = {
	.maps = { { 100, 10000, 60000 }, 3 },
	.threads = { { 10, 1000, 10000 }, 3 },
	.reps = 9,
	.files = true,
};

/* ------------------------------------------------------------------ */
/* Targets                                                              */

struct target {
	char spec[48];
	pid_t pid;
	int in;    /* its stdin: closing it ends the target */
	FILE *out; /* its stdout, the "ready" line */
	long maps, threads; /* as it counted them */
};

/* The targets alive, by pid, for the signal handler too. */
#define MAX_TARGETS MAX_SIZES
static volatile pid_t live[MAX_TARGETS];

static void kill_all(void)
{
	for (size_t i = 0; i < MAX_TARGETS; i++) {
		pid_t pid = live[i];

		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			live[i] = 0;
		}
	}
}

static void on_signal(int sig)
{
	/* kill() and waitpid() are async-signal-safe. */
	kill_all();
	signal(sig, SIG_DFL);
	raise(sig);
}

void die(const char *fmt, ...)
{
	va_list ap;

	kill_all();
	fflush(stdout);
	fputs("bench-readers: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* The machine cannot run the benchmark: exit 77 (skipped). */
_Noreturn static void skip(const char *fmt, ...)
{
	va_list ap;

	kill_all();
	fflush(stdout);
	fputs("bench-readers: skipped: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(77);
}

/* Starts this program as the target `kind`=n. */
static void spawn(struct target *t, const char *kind, unsigned long n)
{
	pid_t parent = getpid();
	size_t slot = 0;
	int in[2], out[2];

	while (slot < MAX_TARGETS && live[slot] != 0)
		slot++;
	if (slot == MAX_TARGETS)
		die("more than %d targets at once", MAX_TARGETS);
	memset(t, 0, sizeof(*t));
	snprintf(t->spec, sizeof(t->spec), "%s=%lu", kind, n);
	if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0)
		die("pipe2: %s", strerror(errno));
	fflush(stdout);
	t->pid = fork();
	if (t->pid < 0)
		die("fork: %s", strerror(errno));
	if (t->pid == 0) {
		/* Dies with the reader, even when it is killed. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		if (dup2(in[0], STDIN_FILENO) < 0 || dup2(out[1], STDOUT_FILENO) < 0)
			_exit(1);
		execl("/proc/self/exe", "bench-readers", "--target", t->spec, (char *)NULL);
		_exit(127);
	}
	live[slot] = t->pid;
	close(in[0]);
	close(out[1]);
	t->in = in[1];
	t->out = fdopen(out[0], "r");
	if (t->out == NULL)
		die("fdopen: %s", strerror(errno));
}

/* Waits for target t to be built; its counts in t. */
static void ready(struct target *t)
{
	char line[512];

	if (fgets(line, sizeof(line), t->out) == NULL)
		die("target %s: ended before it was ready", t->spec);
	line[strcspn(line, "\n")] = '\0';
	if (sscanf(line, "ready %ld %ld", &t->maps, &t->threads) != 2)
		die("target %s: %s", t->spec, line);
}

static void end(struct target *t)
{
	for (size_t i = 0; i < MAX_TARGETS; i++)
		if (live[i] == t->pid)
			live[i] = 0;
	close(t->in);
	fclose(t->out);
	kill(t->pid, SIGKILL);
	waitpid(t->pid, NULL, 0);
}

/* ------------------------------------------------------------------ */
/* The rows                                                             */

enum reading { OP_SIGNATURE, OP_OPEN, OP_DESCRIBE, OP_THREADS };

/* One reading on one target: a line of the tables. */
struct cell {
	unsigned long size;   /* asked for */
	long maps, threads;   /* as the target counted them */
	double *wall, *cpu;   /* ms, one per repetition, in order */
	double median, min, max, q1, q3, cpu_median;
};

/* One reading against one kind of target, a cell per size. */
struct series {
	const char *id;
	const char *label;
	const char *kind; /* the target: anon, file or threads */
	enum reading op;
	size_t n;
	struct cell c[MAX_SIZES];
	bool done;
};

static struct series rows[] = {
	{ "signature", "maps signature", "anon", OP_SIGNATURE, 0, {{0}}, false },
	{ "open", "discovery: inspect_open", "anon", OP_OPEN, 0, {{0}}, false },
	{ "describe", "BPF description", "anon", OP_DESCRIBE, 0, {{0}}, false },
	{ "signature", "maps signature", "file", OP_SIGNATURE, 0, {{0}}, false },
	{ "open", "discovery: inspect_open", "file", OP_OPEN, 0, {{0}}, false },
	{ "describe", "BPF description", "file", OP_DESCRIBE, 0, {{0}}, false },
	{ "threads", "read every thread", "threads", OP_THREADS, 0, {{0}}, false },
};
#define N_SERIES (sizeof(rows) / sizeof(rows[0]))

static const char *kind_label(const char *kind)
{
	return strcmp(kind, "anon") == 0 ? "anonymous mappings" :
	       strcmp(kind, "file") == 0 ? "file mappings" : "threads";
}

static bool per_thread(const struct series *g)
{
	return g->op == OP_THREADS;
}

/* The units of a cell: its threads, or its mappings. */
static double units(const struct series *g, const struct cell *c)
{
	return per_thread(g) ? (double)c->threads : (double)c->maps;
}

/* Cost per unit: ns per mapping, or ms per 1,000 threads. */
static double scale(const struct series *g)
{
	return per_thread(g) ? 1000.0 : 1e6;
}

static double per_unit(const struct series *g, const struct cell *c)
{
	return c->median * scale(g) / units(g, c);
}

/* The cost of each unit added from cell i - 1 to cell i, in the same
 * scale; NAN for the first cell. */
static double marginal(const struct series *g, size_t i)
{
	const struct cell *a, *b;

	if (i == 0)
		return NAN;
	a = &g->c[i - 1];
	b = &g->c[i];
	if (units(g, b) <= units(g, a))
		return NAN;
	return (b->median - a->median) * scale(g) / (units(g, b) - units(g, a));
}

/* The cost per unit added between the two largest sizes, over that
 * between the two smallest; NAN with fewer than three sizes or an
 * interval that took no time. */
static double linearity(const struct series *g)
{
	double first, last;

	if (g->n < 3)
		return NAN;
	first = marginal(g, 1);
	last = marginal(g, g->n - 1);
	return first > 0 ? last / first : NAN;
}

static void cell_init(struct series *g, size_t i, const struct target *t, unsigned long size)
{
	struct cell *c = &g->c[i];

	c->size = size;
	c->maps = t->maps;
	c->threads = t->threads;
	c->wall = calloc(conf.reps, sizeof(double));
	c->cpu = calloc(conf.reps, sizeof(double));
	if (c->wall == NULL || c->cpu == NULL)
		die("out of memory");
	if (i + 1 > g->n)
		g->n = i + 1;
}

static void cell_summarize(struct cell *c)
{
	double *s = malloc(conf.reps * sizeof(double)), ignore;

	if (s == NULL)
		die("out of memory");
	/* summarize() sorts: the samples stay in their order for the JSON. */
	memcpy(s, c->wall, conf.reps * sizeof(double));
	summarize(s, conf.reps, &c->median, &c->min, &c->max, &c->q1, &c->q3);
	memcpy(s, c->cpu, conf.reps * sizeof(double));
	summarize(s, conf.reps, &c->cpu_median, &ignore, &ignore, &ignore, &ignore);
	free(s);
}

/* ------------------------------------------------------------------ */
/* Timing                                                               */

struct clocks {
	uint64_t wall, cpu;
};

static struct clocks clocks_now(void)
{
	return (struct clocks){ now_ns(CLOCK_MONOTONIC), now_ns(CLOCK_PROCESS_CPUTIME_ID) };
}

/* ms since `t0` into c's sample `rep` (none for the warm-up, rep < 0). */
static void record(struct cell *c, int rep, struct clocks t0)
{
	struct clocks t1 = clocks_now();

	if (rep < 0)
		return;
	c->wall[rep] = (double)(t1.wall - t0.wall) / 1e6;
	c->cpu[rep] = (double)(t1.cpu - t0.cpu) / 1e6;
}

/* A code of the inspector: EPERM means this process may not read others
 * (no CAP_SYS_PTRACE, a seccomp filter, an emulator without ptrace). */
static void check(int rc, const struct target *t, const char *what)
{
	if (rc == OTEL_THREAD_CTX_EPERM)
		skip("%s of target %s: %s: reading other processes is not permitted here",
		     what, t->spec, otel_thread_ctx_inspect_strerror(rc));
	if (rc != OTEL_THREAD_CTX_OK)
		die("%s of target %s: %s", what, t->spec, otel_thread_ctx_inspect_strerror(rc));
}

/* One discovery row, once, on target t. */
static void time_discovery(struct series *g, struct cell *c, int rep, const struct target *t)
{
	otel_thread_ctx_inspector *insp = NULL;
	struct otel_thread_ctx_bpf_proc d;
	uint64_t sig;
	struct clocks t0 = clocks_now();
	int rc;

	memset(&d, 0, sizeof(d));
	switch (g->op) {
	case OP_SIGNATURE:
		rc = otel_thread_ctx_inspect_maps_signature(t->pid, &sig);
		break;
	case OP_OPEN:
		rc = otel_thread_ctx_inspect_open(t->pid, &insp);
		break;
	case OP_DESCRIBE:
		rc = otel_thread_ctx_inspect_open(t->pid, &insp);
		if (rc == OTEL_THREAD_CTX_OK)
			rc = otel_thread_ctx_inspect_signature(insp, &sig);
		if (rc == OTEL_THREAD_CTX_OK)
			rc = otel_thread_ctx_inspect_bpf_proc(insp, &d);
		break;
	default:
		rc = OTEL_THREAD_CTX_ESYS;
	}
	record(c, rep, t0);
	check(rc, t, g->label);
	/* What a profiler needs of it: the slot, and the key map. */
	if (insp != NULL) {
		const struct otel_thread_ctx_inspect_info *info = otel_thread_ctx_inspect_info(insp);

		if (info->module_count < 1 || info->process_ctx_status != OTEL_THREAD_CTX_OK)
			die("target %s: %zu modules, process context: %s", t->spec,
			    info->module_count, otel_thread_ctx_inspect_strerror(info->process_ctx_status));
	}
	if (g->op == OP_DESCRIBE && d.module_count < 1)
		die("target %s: a BPF description without modules", t->spec);
	otel_thread_ctx_inspect_close(insp);
}

/* One read of every thread of target t, each record checked. */
static void time_threads(struct cell *c, int rep, const struct target *t,
			 otel_thread_ctx_inspector *insp, struct otel_thread_ctx_inspect_thread *out,
			 size_t cap)
{
	size_t count = 0;
	struct clocks t0 = clocks_now();
	int rc = otel_thread_ctx_inspect_threads(insp, out, cap, &count);

	record(c, rep, t0);
	check(rc, t, "inspect_threads");
	if (count != (size_t)t->threads)
		die("target %s: %zu threads read, %ld expected", t->spec, count, t->threads);
	for (size_t i = 0; i < count; i++) {
		const struct otel_thread_ctx_inspect_thread *th = &out[i];
		uint8_t span[8];

		check(th->status, t, "a thread's read");
		target_span_id(span, th->tid);
		if (memcmp(th->record.span_id, span, 8) != 0 ||
		    memcmp(th->record.trace_id, TARGET_TRACE_ID, 16) != 0 ||
		    th->record.attrs_data_size != 2 + strlen(TARGET_VALUE))
			die("target %s: thread %d: not the record it published", t->spec,
			    (int)th->tid);
	}
}

/* Every discovery row of one kind of target (anon, file), the sizes of
 * --maps interleaved. */
static void run_discovery(const char *kind)
{
	struct target t[MAX_SIZES];
	size_t n = conf.maps.count;

	printf("readers: %s: discovery, BPF description, signature ...\n", kind_label(kind));
	for (size_t i = 0; i < n; i++)
		spawn(&t[i], kind, conf.maps.n[i]);
	for (size_t i = 0; i < n; i++) {
		ready(&t[i]);
		if (t[i].maps != (long)conf.maps.n[i])
			die("target %s has %ld mappings", t[i].spec, t[i].maps);
		for (size_t k = 0; k < N_SERIES; k++)
			if (strcmp(rows[k].kind, kind) == 0)
				cell_init(&rows[k], i, &t[i], conf.maps.n[i]);
	}
	for (int rep = -1; rep < (int)conf.reps; rep++)
		for (size_t i = 0; i < n; i++)
			for (size_t k = 0; k < N_SERIES; k++)
				if (strcmp(rows[k].kind, kind) == 0)
					time_discovery(&rows[k], &rows[k].c[i], rep, &t[i]);
	for (size_t i = 0; i < n; i++)
		end(&t[i]);
	for (size_t k = 0; k < N_SERIES; k++)
		if (strcmp(rows[k].kind, kind) == 0)
			rows[k].done = true;
}

static void run_threads(void)
{
	struct series *g = &rows[N_SERIES - 1];
	struct target t[MAX_SIZES];
	otel_thread_ctx_inspector *insp[MAX_SIZES];
	struct otel_thread_ctx_inspect_thread *out[MAX_SIZES];
	size_t n = conf.threads.count, cap[MAX_SIZES];

	printf("readers: threads: every thread read ...\n");
	for (size_t i = 0; i < n; i++)
		spawn(&t[i], "threads", conf.threads.n[i]);
	for (size_t i = 0; i < n; i++) {
		ready(&t[i]);
		if (t[i].threads != (long)conf.threads.n[i])
			die("target %s has %ld threads", t[i].spec, t[i].threads);
		cell_init(g, i, &t[i], conf.threads.n[i]);
		/* One inspector per process, as a profiler keeps it. */
		check(otel_thread_ctx_inspect_open(t[i].pid, &insp[i]), &t[i], "inspect_open");
		cap[i] = conf.threads.n[i] + 16;
		out[i] = calloc(cap[i], sizeof(*out[i]));
		if (out[i] == NULL)
			die("out of memory");
	}
	for (int rep = -1; rep < (int)conf.reps; rep++)
		for (size_t i = 0; i < n; i++)
			time_threads(&g->c[i], rep, &t[i], insp[i], out[i], cap[i]);
	for (size_t i = 0; i < n; i++) {
		otel_thread_ctx_inspect_close(insp[i]);
		free(out[i]);
		end(&t[i]);
	}
	g->done = true;
}

/* ------------------------------------------------------------------ */
/* The machine's limits                                                 */

static struct {
	long max_map_count, threads_max, pid_max;
	rlim_t nproc;
} limits;

static long read_long(const char *path)
{
	FILE *f = fopen(path, "re");
	long v = -1;

	if (f != NULL) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static unsigned long largest(const struct sizes *s)
{
	unsigned long m = 0;

	for (size_t i = 0; i < s->count; i++)
		if (s->n[i] > m)
			m = s->n[i];
	return m;
}

static unsigned long total(const struct sizes *s)
{
	unsigned long m = 0;

	for (size_t i = 0; i < s->count; i++)
		m += s->n[i];
	return m;
}

/* The targets fit in the machine's limits, or exit 77 saying which to
 * raise.  A thread takes two mappings (its stack and guard page); the
 * thread targets all run at once. */
static void check_limits(void)
{
	struct rlimit rl;
	unsigned long maps = largest(&conf.maps), threads = total(&conf.threads);
	unsigned long need = maps > 2 * largest(&conf.threads) + 100 ? maps :
								      2 * largest(&conf.threads) + 100;

	limits.max_map_count = read_long("/proc/sys/vm/max_map_count");
	limits.threads_max = read_long("/proc/sys/kernel/threads-max");
	limits.pid_max = read_long("/proc/sys/kernel/pid_max");
	limits.nproc = getrlimit(RLIMIT_NPROC, &rl) == 0 ? rl.rlim_cur : RLIM_INFINITY;
	if (limits.max_map_count >= 0 && (unsigned long)limits.max_map_count < need)
		skip("vm.max_map_count is %ld; the targets need %lu mappings: raise it for the run "
		     "(sysctl vm.max_map_count=%lu)", limits.max_map_count, need, need + 1000);
	if (limits.threads_max >= 0 && (unsigned long)limits.threads_max < threads + 1000)
		skip("kernel.threads-max is %ld; the targets need %lu threads and some to spare",
		     limits.threads_max, threads);
	if (limits.pid_max >= 0 && (unsigned long)limits.pid_max < threads + 1000)
		skip("kernel.pid_max is %ld; the targets need %lu thread ids and some to spare",
		     limits.pid_max, threads);
	if (limits.nproc != RLIM_INFINITY && limits.nproc < threads + 1000)
		skip("RLIMIT_NPROC is %lu; the targets need %lu threads (ulimit -u)",
		     (unsigned long)limits.nproc, threads);
}

/* ------------------------------------------------------------------ */
/* The report                                                           */

static void fmt_num(char *buf, size_t len, double v, int decimals)
{
	if (isnan(v))
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.*f", decimals, v);
}

/* 60,000 */
static void fmt_count(char *buf, size_t len, long v)
{
	if (v >= 1000)
		snprintf(buf, len, "%ld,%03ld", v / 1000, v % 1000);
	else
		snprintf(buf, len, "%ld", v);
}

static void print_row(FILE *f, bool md, const char *cols[], const int widths[], size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (md)
			fprintf(f, "| %s ", cols[i]);
		else
			fprintf(f, "%-*s%s", widths[i], cols[i], i + 1 < n ? "  " : "");
	}
	fprintf(f, md ? "|\n" : "\n");
}

/* A discovery row's time over that of one pass over the same target's
 * maps (the signature row, which is nothing else): how many passes the
 * row's time is worth.  NAN for the threads. */
static double in_passes(const struct series *g, size_t i)
{
	for (size_t k = 0; k < N_SERIES; k++)
		if (rows[k].op == OP_SIGNATURE && strcmp(rows[k].kind, g->kind) == 0 &&
		    rows[k].done && i < rows[k].n)
			return g->c[i].median / rows[k].c[i].median;
	return NAN;
}

/* The rows of the discovery series (threads false) or of the threads
 * series, one line per size. */
static void print_kind(FILE *f, bool md, bool threads)
{
	static const char *const map_head[] = { "reading", "target", "mappings", "ms (median)",
						"min - max", "IQR", "reader CPU ms", "ns/mapping",
						"ns per added mapping", "x signature" };
	static const char *const thr_head[] = { "reading", "target", "threads", "ms (median)",
						"min - max", "IQR", "reader CPU ms",
						"ms/1,000 threads", "per 1,000 added threads" };
	static const int widths[] = { 23, 18, 8, 11, 17, 17, 13, 16, 23, 11 };
	const char *const *head = threads ? thr_head : map_head;
	/* Columns are counted in bytes on stdout: a plain dash there. */
	const char *dash = md ? " – " : " - ";
	size_t ncol = threads ? sizeof(thr_head) / sizeof(thr_head[0]) :
				sizeof(map_head) / sizeof(map_head[0]);
	const char *top[10];

	memcpy(top, head, ncol * sizeof(top[0]));
	if (md) {
		top[4] = "min – max";
		top[9] = "× signature";
	}
	print_row(f, md, top, widths, ncol);
	if (md)
		fprintf(f, "|---|---|---:|---:|---:|---:|---:|---:|---:|%s\n", threads ? "" : "---:|");
	for (size_t k = 0; k < N_SERIES; k++) {
		const struct series *g = &rows[k];

		if (!g->done || per_thread(g) != threads)
			continue;
		for (size_t i = 0; i < g->n; i++) {
			const struct cell *c = &g->c[i];
			char size[24], med[24], range[64], iqr[64], cpu[24], unit[24], added[24];
			char passes[24], a[24], b[24];
			const char *cols[10];
			int d = c->median < 10 ? 3 : c->median < 100 ? 2 : 1;

			fmt_count(size, sizeof(size), threads ? c->threads : c->maps);
			fmt_num(med, sizeof(med), c->median, d);
			fmt_num(a, sizeof(a), c->min, d);
			fmt_num(b, sizeof(b), c->max, d);
			snprintf(range, sizeof(range), "%s%s%s", a, dash, b);
			fmt_num(a, sizeof(a), c->q1, d);
			fmt_num(b, sizeof(b), c->q3, d);
			snprintf(iqr, sizeof(iqr), "%s%s%s", a, dash, b);
			fmt_num(cpu, sizeof(cpu), c->cpu_median, d);
			fmt_num(unit, sizeof(unit), per_unit(g, c), threads ? 1 : 0);
			fmt_num(added, sizeof(added), marginal(g, i), threads ? 1 : 0);
			fmt_num(passes, sizeof(passes), in_passes(g, i), 2);
			cols[0] = g->label;
			cols[1] = kind_label(g->kind);
			cols[2] = size;
			cols[3] = med;
			cols[4] = range;
			cols[5] = iqr;
			cols[6] = cpu;
			cols[7] = unit;
			cols[8] = added;
			cols[9] = passes;
			print_row(f, md, cols, widths, ncol);
		}
	}
}

static const struct series *find_series(const char *id, const char *kind)
{
	for (size_t k = 0; k < N_SERIES; k++)
		if (strcmp(rows[k].id, id) == 0 && strcmp(rows[k].kind, kind) == 0 &&
		    rows[k].done)
			return &rows[k];
	return NULL;
}

static const struct cell *find_cell(const struct series *g, unsigned long size)
{
	for (size_t i = 0; g != NULL && i < g->n; i++)
		if (g->c[i].size == size)
			return &g->c[i];
	return NULL;
}

struct goal {
	char text[160], measured[96];
	const char *result;
};

#define MAX_GOALS 16
static struct goal goals[MAX_GOALS];
static size_t n_goals;

static void add_goal(const char *result, const char *measured_fmt, double v, const char *fmt, ...)
{
	struct goal *g;
	va_list ap;

	if (n_goals == MAX_GOALS)
		return;
	g = &goals[n_goals++];
	va_start(ap, fmt);
	vsnprintf(g->text, sizeof(g->text), fmt, ap);
	va_end(ap);
	snprintf(g->measured, sizeof(g->measured), measured_fmt, v);
	g->result = result;
}

static void judge_time(const char *id, const char *kind, unsigned long size, double goal_ms,
		       const char *what)
{
	const struct cell *c = find_cell(find_series(id, kind), size);
	char n[24];

	fmt_count(n, sizeof(n), (long)size);
	if (c == NULL)
		return;
	add_goal(c->median <= goal_ms ? "met" : "missed", "%.1f ms (median)", c->median,
		 "%s, %s %s: at most %.0f ms", what, n, kind_label(kind), goal_ms);
}

static void judge_linear(const char *id, const char *kind, const char *what)
{
	const struct series *g = find_series(id, kind);
	double r;
	char lo[24], mid[24], hi[24];

	if (g == NULL || g->n < 3)
		return;
	r = linearity(g);
	fmt_count(lo, sizeof(lo), (long)units(g, &g->c[0]));
	fmt_count(mid, sizeof(mid), (long)units(g, &g->c[1]));
	fmt_count(hi, sizeof(hi), (long)units(g, &g->c[g->n - 1]));
	add_goal(isnan(r) ? "not judged" : r <= LINEAR_TOLERANCE ? "met" : "missed",
		 "%.2f x", r,
		 "%s, %s: linear (cost per %s added %s to %s at most %.2f x that from %s to %s)",
		 what, kind_label(kind), per_thread(g) ? "thread" : "mapping", mid, hi,
		 LINEAR_TOLERANCE, lo, mid);
}

static void judge(void)
{
	judge_time("open", "anon", GOAL_MAPS, GOAL_MAPS_MS, "discovery (inspect_open)");
	judge_time("describe", "anon", GOAL_MAPS, GOAL_MAPS_MS, "BPF description");
	judge_time("open", "file", GOAL_MAPS, GOAL_MAPS_MS, "discovery (inspect_open)");
	judge_time("describe", "file", GOAL_MAPS, GOAL_MAPS_MS, "BPF description");
	judge_time("threads", "threads", GOAL_THREADS, GOAL_THREADS_MS,
		   "reading every thread (inspect_threads)");
	judge_linear("threads", "threads", "reading every thread");
	judge_linear("open", "anon", "discovery");
	judge_linear("describe", "anon", "BPF description");
	judge_linear("open", "file", "discovery");
	judge_linear("describe", "file", "BPF description");
}

static void print_goals(FILE *f, bool md)
{
	if (md)
		fprintf(f, "| goal | measured | |\n|---|---|---|\n");
	for (size_t i = 0; i < n_goals; i++)
		fprintf(f, md ? "| %s | %s | %s |\n" : "  %s: %s: %s\n", goals[i].text,
			goals[i].measured, goals[i].result);
}

static void print_setting(FILE *f, bool md)
{
	const char *b = md ? "- " : "  ";

	fprintf(f, "%scpu: %s, %ld online\n", b, cpu_model, online_cpus);
	fprintf(f, "%skernel: %s; %s\n", b, kernel, libc_version);
	fprintf(f, "%sload average: %.2f %.2f %.2f at the start, %.2f %.2f %.2f at the end\n", b,
		load_start[0], load_start[1], load_start[2], load_end[0], load_end[1],
		load_end[2]);
	fprintf(f, "%slimits: vm.max_map_count %ld, kernel.threads-max %ld, kernel.pid_max %ld, "
		   "RLIMIT_NPROC ", b, limits.max_map_count, limits.threads_max, limits.pid_max);
	if (limits.nproc == RLIM_INFINITY)
		fprintf(f, "unlimited\n");
	else
		fprintf(f, "%lu\n", (unsigned long)limits.nproc);
	fprintf(f, "%s%u repetitions after a warm-up, sizes interleaved; ms: wall clock; "
		   "reader CPU: this process's, its tracer thread included\n", b, conf.reps);
}

static void print_report(FILE *f, bool md)
{
	fprintf(f, md ? "## Discovery against mappings\n\n" : "discovery against mappings:\n");
	print_kind(f, md, false);
	fprintf(f, md ? "\n## Reading threads\n\n" : "\nreading threads:\n");
	print_kind(f, md, true);
	fprintf(f, md ? "\n## Goals\n\n" : "\ngoals:\n");
	print_goals(f, md);
	fprintf(f, md ? "\n## Machine\n\n" : "\nmachine:\n");
	print_setting(f, md);
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s != '\0'; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

static void json_num(FILE *f, double v)
{
	if (isnan(v))
		fprintf(f, "null");
	else
		fprintf(f, "%.4f", v);
}

static void json_samples(FILE *f, const double *s)
{
	fputc('[', f);
	for (unsigned r = 0; r < conf.reps; r++)
		fprintf(f, "%s%.4f", r ? ", " : "", s[r]);
	fputc(']', f);
}

static void save_json(const char *path)
{
	FILE *f = fopen(path, "w");
	bool first = true;

	if (f == NULL)
		die("%s: %s", path, strerror(errno));
	fprintf(f, "{\n  \"machine\": {\"cpu\": ");
	json_str(f, cpu_model);
	fprintf(f, ", \"online_cpus\": %ld, \"kernel\": ", online_cpus);
	json_str(f, kernel);
	fprintf(f, ", \"libc\": ");
	json_str(f, libc_version);
	fprintf(f, ",\n    \"loadavg_start\": [%.2f, %.2f, %.2f], \"loadavg_end\": "
		   "[%.2f, %.2f, %.2f],\n",
		load_start[0], load_start[1], load_start[2], load_end[0], load_end[1], load_end[2]);
	fprintf(f, "    \"max_map_count\": %ld, \"threads_max\": %ld, \"pid_max\": %ld},\n",
		limits.max_map_count, limits.threads_max, limits.pid_max);
	fprintf(f, "  \"settings\": {\"reps\": %u, \"warmup\": 1, \"thread_stack_kib\": 64, "
		   "\"linear_tolerance\": %.2f},\n  \"rows\": [\n", conf.reps, LINEAR_TOLERANCE);
	for (size_t k = 0; k < N_SERIES; k++) {
		const struct series *g = &rows[k];

		if (!g->done)
			continue;
		for (size_t i = 0; i < g->n; i++) {
			const struct cell *c = &g->c[i];

			fprintf(f, "%s    {\"id\": \"%s\", \"label\": ", first ? "" : ",\n", g->id);
			first = false;
			json_str(f, g->label);
			fprintf(f, ", \"target\": \"%s\", \"size\": %lu, \"mappings\": %ld, "
				   "\"threads\": %ld,\n      \"wall_ms\": ", g->kind, c->size, c->maps,
				c->threads);
			json_samples(f, c->wall);
			fprintf(f, ",\n      \"cpu_ms\": ");
			json_samples(f, c->cpu);
			fprintf(f, ",\n      \"wall_ms_median\": %.4f, \"wall_ms_min\": %.4f, "
				   "\"wall_ms_max\": %.4f, \"wall_ms_q1\": %.4f, \"wall_ms_q3\": %.4f, "
				   "\"cpu_ms_median\": %.4f,\n      \"%s\": ",
				c->median, c->min, c->max, c->q1, c->q3, c->cpu_median,
				per_thread(g) ? "ms_per_1000_threads" : "ns_per_mapping");
			json_num(f, per_unit(g, c));
			fprintf(f, ", \"%s\": ", per_thread(g) ? "ms_per_1000_added_threads" :
								 "ns_per_added_mapping");
			json_num(f, marginal(g, i));
			if (!per_thread(g)) {
				fprintf(f, ", \"x_signature\": ");
				json_num(f, in_passes(g, i));
			}
			fprintf(f, "}");
		}
	}
	fprintf(f, "\n  ],\n  \"goals\": [\n");
	for (size_t i = 0; i < n_goals; i++) {
		fprintf(f, "    {\"goal\": ");
		json_str(f, goals[i].text);
		fprintf(f, ", \"measured\": ");
		json_str(f, goals[i].measured);
		fprintf(f, ", \"result\": \"%s\"}%s\n", goals[i].result,
			i + 1 < n_goals ? "," : "");
	}
	fprintf(f, "  ]\n}\n");
	if (fclose(f) != 0)
		die("%s: %s", path, strerror(errno));
}

static void save_markdown(const char *path)
{
	FILE *f = fopen(path, "w");

	if (f == NULL)
		die("%s: %s", path, strerror(errno));
	fprintf(f, "# Reader cost at scale (bench-readers)\n\n");
	print_report(f, true);
	if (fclose(f) != 0)
		die("%s: %s", path, strerror(errno));
}

/* ------------------------------------------------------------------ */
/* Options                                                              */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bench-readers [options]      (as root)\n"
		"  --maps N,N,...     mappings of the discovery targets (default 100,10000,60000)\n"
		"  --threads N,N,...  threads of the reading targets (default 10,1000,10000)\n"
		"  --reps N           repetitions of every row (default %u)\n"
		"  --no-file-maps     anonymous mappings only\n"
		"  --quick            a smoke run: small sizes, 3 repetitions\n"
		"  --json FILE, --markdown FILE   write the results there\n",
		conf.reps);
}

static unsigned long parse_num(const char *s, const char *name)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v == 0 || v > INT_MAX)
		die("%s: not a positive integer: %s", name, s);
	return v;
}

/* A rising list of sizes. */
static void parse_sizes(const char *s, const char *name, struct sizes *out)
{
	char buf[256], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", s);
	out->count = 0;
	for (char *tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		if (out->count == MAX_SIZES)
			die("%s: at most %d sizes", name, MAX_SIZES);
		out->n[out->count] = parse_num(tok, name);
		if (out->count > 0 && out->n[out->count] <= out->n[out->count - 1])
			die("%s: sizes must rise: %s", name, s);
		out->count++;
	}
	if (out->count == 0)
		die("%s: no size", name);
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
			conf.maps = (struct sizes){ { 100, 1000, 5000 }, 3 };
			conf.threads = (struct sizes){ { 10, 100, 500 }, 3 };
			conf.reps = 3;
			takes = false;
		} else if (strcmp(a, "--no-file-maps") == 0) {
			conf.files = false;
			takes = false;
		} else if (v == NULL) {
			usage(stderr);
			die("%s: unknown option or missing value", a);
		} else if (strcmp(a, "--target") == 0) {
			target_main(v);
		} else if (strcmp(a, "--maps") == 0) {
			parse_sizes(v, a, &conf.maps);
		} else if (strcmp(a, "--threads") == 0) {
			parse_sizes(v, a, &conf.threads);
		} else if (strcmp(a, "--reps") == 0) {
			conf.reps = (unsigned)parse_num(v, a);
		} else if (strcmp(a, "--json") == 0) {
			conf.json = v;
		} else if (strcmp(a, "--markdown") == 0) {
			conf.markdown = v;
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
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };

	parse_args(argc, argv);
	/* A failed run must not leave the files of an earlier one behind. */
	if (conf.json)
		unlink(conf.json);
	if (conf.markdown)
		unlink(conf.markdown);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (geteuid() != 0)
		skip("needs root: a profiler's rights (ptrace any process, /proc/PID/map_files)");
	check_limits();
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		signal(sigs[i], on_signal);
	atexit(kill_all);
	read_machine();

	run_discovery("anon");
	if (conf.files)
		run_discovery("file");
	run_threads();
	read_loadavg(load_end);

	for (size_t k = 0; k < N_SERIES; k++)
		for (size_t i = 0; rows[k].done && i < rows[k].n; i++)
			cell_summarize(&rows[k].c[i]);
	judge();
	printf("\n");
	print_report(stdout, false);
	if (conf.json)
		save_json(conf.json);
	if (conf.markdown)
		save_markdown(conf.markdown);
	return 0;
}
