/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Instructions per operation, which a loaded machine does not change: this
 * program runs itself under valgrind's callgrind (--instructions-child),
 * which counts every operation between a reset and a dump of its counters;
 * the parent reads the dumps into ops[].instr.  Without valgrind, or
 * without valgrind/callgrind.h, it says why nothing was counted.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#if OTEL_BENCH_CALLGRIND
#include <valgrind/callgrind.h>
#endif

#include "bench.h"

#if OTEL_BENCH_CALLGRIND
/* In the process valgrind runs: every operation, counted between a reset
 * and a dump of callgrind's counters. */
void instr_child(void)
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
bool count_instructions(char *why, size_t why_len)
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
