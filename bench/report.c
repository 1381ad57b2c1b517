/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The report: every row against its targets, on stdout and in the files
 * --csv, --json and --markdown name (results.csv, whose columns
 * bench/plot.gp reads by number, results.json, results.md): the operations
 * table, the machine, scaling, memory and churn, and the list of targets
 * with their verdicts.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"

/* The targets of the rows that are not operations (those of the operations
 * are in their table, ops.c). */

/* A context attached on many threads at once costs what attach costs:
 * the highest ratio of a SCALE_ONE row to its SCALE_OWN row. */
#define ONE_CTX_TARGET 1.10

/* Memory the targets are judged on (x86-64). */
#define PUB_THREAD_TARGET 1384 /* bytes per publishing thread: the old design's */
#define CHURN_TARGET_KIB 1024  /* RSS growth after the churn */

bool instr_counted;
char instr_why[256];

bool is_x86_64(void)
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

void print_table(FILE *f, bool markdown)
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

static const char *scale_label(size_t o)
{
	return scale_ops[o].label ? scale_ops[o].label : op_by_id(scale_ops[o].op)->label;
}

/* Row o against the row it is judged against, at thread count s. */
static double scale_versus(size_t o, size_t s)
{
	return scaling[o][s].cpu_median / scaling[scale_ops[o].versus][s].cpu_median;
}

void print_scaling(FILE *f, bool markdown)
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

void print_memory(FILE *f, bool markdown)
{
	const char *li = markdown ? "- " : "  ";

	for (size_t a = 0; a < N_SIZED; a++)
		fprintf(f, "%sheap per context with ids and %u attribute%s of %u B: %.0f B with the "
			   "default capacity (usable %zu B), %.0f B sized to them (capacity %u B, "
			   "usable %zu B)\n",
			li, sized_attrs[a], sized_attrs[a] == 1 ? "" : "s", ATTR_LEN,
			mem.sized_heap[a][0], mem.sized_usable[a][0], mem.sized_heap[a][1],
			sized_attrs[a] * (2 + ATTR_LEN), mem.sized_usable[a][1]);
	fprintf(f, "%sspan-only context (ids only, ids set): %.0f B of heap (usable %zu B); "
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

void print_machine(FILE *f, bool markdown)
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
void print_targets(FILE *f, bool markdown)
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

void write_csv(const char *path)
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


void write_json(const char *path)
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

void write_markdown(const char *path)
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
