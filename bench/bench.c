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
 *
 * This file: the options and main; bench.h lists the other parts.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

/* ------------------------------------------------------------------ */
/* Options                                                              */

struct options opt = {
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

void die(const char *fmt, ...)
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
	run_operations();

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
