/* SPDX-License-Identifier: Apache-2.0 */
/*
 * How the inspector finds the modules that define the slot, against
 * processes that place them as real ones do (modules-target.c):
 *
 *   modules [--skip REASON] MODE TARGET LIB [OTHER | EXPECT]
 *
 * selfmap  the library's file mapped again from offset 0 below the loaded
 *          image is not a module, and does not move the module's base
 * dlmopen  both copies of the library (two link-map namespaces) are modules,
 *          each with its own TLS; every thread reads back exactly
 * upgrade  a library replaced on disk while loaded (maps: "(deleted)") still
 *          reads, and the maps signature changes so that an eBPF reader
 *          describes the process again, successfully
 * many     5000 mapped files below the library do not hide it
 * hugetext the library's code copied onto anonymous memory (text on huge
 *          pages) does not hide it
 * hugehead nor does its code copied with the file's first page, which leaves
 *          no mapping of offset 0 (aarch64's layout)
 * fifo     a module path swapped for a FIFO between the reader's checks and
 *          its open: the open neither blocks nor reads the FIFO
 * stale    a thread whose DTV entry is left over from a module unloaded
 *          since, under the same module id: EXPECT "none" (glibc: it has
 *          published nothing through the module loaded now) or "record"
 *          (musl never unloads: its record is still published)
 *
 * Each mode ends by letting the target check that its threads kept running.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "expected.h"
#include "check-lite.h"
#include "modules-open.h"
#include "otel_thread_ctx_inspect.h"
#include "otel_thread_ctx_inspect_bpf.h"

struct target {
	pid_t pid;
	int in;   /* its stdin */
	FILE *out; /* its stdout */
	int n;
	pid_t tid[EXPECTED_MAX_THREADS];
	uint64_t slot[EXPECTED_MAX_THREADS];
};

static char dir[] = "/tmp/otel-modules-XXXXXX";

static void cleanup(void)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char path[4096];

	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(dir);
}

static void on_alarm(int sig)
{
	static const char msg[] = "FAIL: the inspector did not return within 20 s (blocked)\n";

	(void)sig;
	(void)!write(2, msg, sizeof(msg) - 1);
	_exit(1);
}

/* Reads the target's next line, "ready TID:SLOT ...". */
static void wait_ready(struct target *t)
{
	char *line = NULL, *p;
	size_t cap = 0;
	int status, at;

	if (getline(&line, &cap, t->out) <= 0) {
		ck_assert_msg(waitpid(t->pid, &status, 0) == t->pid, "waitpid");
		if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
			skip("the target cannot run here (its output says why)");
		ck_abort_msg("the target ended before it was ready (status 0x%x)",
			status);
	}
	if (strncmp(line, "skip:", 5) == 0) {
		waitpid(t->pid, &status, 0);
		skip("%s", line + 5);
	}
	ck_assert_msg(strncmp(line, "ready", 5) == 0, "target said \"%s\"", line);
	for (t->n = 0, p = line + 5; t->n < EXPECTED_MAX_THREADS; t->n++, p += at) {
		int tid;
		unsigned long long slot;

		if (sscanf(p, " %d:%llx%n", &tid, &slot, &at) != 2)
			break;
		t->tid[t->n] = (pid_t)tid;
		t->slot[t->n] = slot;
	}
	free(line);
}

/* Starts `exe MODE LIB DIR [OTHER]` with pipes for its stdin and stdout. */
static void start_target(struct target *t, const char *exe, const char *mode, const char *lib,
			 const char *other)
{
	char *argv[] = { (char *)exe, (char *)mode, (char *)lib, dir, (char *)other, NULL };
	posix_spawn_file_actions_t fa;
	int in[2], out[2];

	ck_assert_msg(pipe2(in, O_CLOEXEC) == 0 && pipe2(out, O_CLOEXEC) == 0, "pipe");
	ck_assert_msg(posix_spawn_file_actions_init(&fa) == 0 &&
		      posix_spawn_file_actions_adddup2(&fa, in[0], 0) == 0 &&
		      posix_spawn_file_actions_adddup2(&fa, out[1], 1) == 0,
	      "spawn actions");
	fflush(NULL);
	ck_assert_msg(posix_spawn(&t->pid, exe, &fa, NULL, argv, environ) == 0, "spawn %s", exe);
	posix_spawn_file_actions_destroy(&fa);
	close(in[0]);
	close(out[1]);
	t->in = in[1];
	t->out = fdopen(out[0], "r");
	ck_assert_msg(t->out != NULL, "fdopen");
	wait_ready(t);
}

/* Ends the target's input; it then checks that its threads kept running
 * and exits 0. */
static void finish_target(struct target *t)
{
	int status = -1;

	close(t->in);
	fclose(t->out);
	while (waitpid(t->pid, &status, 0) < 0 && errno == EINTR)
		;
	ck_assert_msg(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "the target ended with status 0x%x after the inspection", status);
}

static otel_thread_ctx_inspector *open_ok(pid_t pid)
{
	otel_thread_ctx_inspector *insp = NULL;
	const struct otel_thread_ctx_inspect_info *info;
	struct timespec a, b;
	int rc;

	clock_gettime(CLOCK_MONOTONIC, &a);
	rc = otel_thread_ctx_inspect_open(pid, &insp);
	clock_gettime(CLOCK_MONOTONIC, &b);
	ck_assert_msg(rc == 0, "inspect_open: %s", otel_thread_ctx_inspect_strerror(rc));
	info = otel_thread_ctx_inspect_info(insp);
	printf("opened in %.1f ms: %zu module(s)\n",
	       (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6,
	       info->module_count);
	for (size_t i = 0; i < info->module_count; i++) {
		const struct otel_thread_ctx_inspect_module *m = &info->modules[i];

		printf("  %s at 0x%llx: %s", m->path, (unsigned long long)m->base,
		       otel_thread_ctx_inspect_model_name(m->model));
		if (m->model == OTEL_THREAD_CTX_INSPECT_TLSDESC_DYNAMIC ||
		    m->model == OTEL_THREAD_CTX_INSPECT_GENERAL_DYNAMIC)
			printf(" (module %llu, offset %llu)\n", (unsigned long long)m->module_id,
			       (unsigned long long)m->dtv_offset);
		else
			printf(" (thread pointer %+lld)\n", (long long)m->tp_offset);
	}
	return insp;
}

/* Every thread of the target reads back as published, at the loader's
 * address; returns the module each publishing thread was read from. */
static void check_values(otel_thread_ctx_inspector *insp, const struct target *t,
			 unsigned int module[])
{
	for (int i = 0; i < t->n; i++) {
		struct otel_thread_ctx_inspect_thread th;
		struct expected_thread e;
		struct otel_thread_ctx_attr_iter it;
		struct otel_thread_ctx_attr a;
		unsigned k = 0;
		int rc = otel_thread_ctx_inspect_thread(insp, t->tid[i], &th);

		if (i == EXPECTED_IDLE) {
			ck_assert_msg(rc == OTEL_THREAD_CTX_ENOCTX, "idle thread: %s",
			      otel_thread_ctx_inspect_strerror(rc));
			continue;
		}
		ck_assert_msg(rc == 0, "thread %d: %s", i, otel_thread_ctx_inspect_strerror(rc));
		expected_for(i, &e);
		ck_assert_msg(memcmp(th.record.trace_id, e.trace_id, 16) == 0 &&
			      memcmp(th.record.span_id, e.span_id, 8) == 0 &&
			      th.record.trace_flags == e.flags,
		      "thread %d: ids or flags differ", i);
		otel_thread_ctx_attr_iter_init_map(&it, &th.record, OTEL_THREAD_CTX_KEY_MAX + 1);
		while (otel_thread_ctx_attr_iter_next(&it, &a) == 0) {
			ck_assert_msg(k < e.nattrs && a.key == e.attrs[k].key &&
				      a.len == strlen(e.attrs[k].value) &&
				      memcmp(a.value, e.attrs[k].value, a.len) == 0,
			      "thread %d: attribute %u differs", i, k);
			k++;
		}
		ck_assert_msg(k == e.nattrs, "thread %d: %u attributes", i, k);
		ck_assert_msg(th.slot_address == t->slot[i],
		      "thread %d: slot at 0x%llx, the loader says 0x%llx", i,
		      (unsigned long long)th.slot_address, (unsigned long long)t->slot[i]);
		if (module != NULL)
			module[i] = th.module;
	}
}

static void run_values(const char *mode, const char *exe, const char *lib)
{
	unsigned int module[EXPECTED_MAX_THREADS] = { 0 };
	otel_thread_ctx_inspector *insp;
	const struct otel_thread_ctx_inspect_info *info;
	struct target t;

	start_target(&t, exe, mode, lib, NULL);
	ck_assert_msg(t.n == EXPECTED_THREADS, "%d threads reported", t.n);
	insp = open_ok(t.pid);
	info = otel_thread_ctx_inspect_info(insp);
	check_values(insp, &t, module);
	if (strcmp(mode, "selfmap") == 0) {
		ck_assert_msg(info->module_count == 1, "%zu modules: the file's own mapping taken for one",
		      info->module_count);
	} else if (strcmp(mode, "dlmopen") == 0) {
		ck_assert_msg(info->module_count == 2, "%zu modules, expected the two copies",
		      info->module_count);
		ck_assert_msg(strcmp(info->modules[0].path, info->modules[1].path) == 0 &&
			      info->modules[0].base != info->modules[1].base,
		      "the two copies: same file, two places");
		/* Even threads published through one copy, odd through the
		 * other. */
		ck_assert_msg(module[0] == module[2] && module[1] == module[3] && module[0] != module[1],
		      "threads read from modules %u %u %u %u", module[0], module[1], module[2],
		      module[3]);
	}
	otel_thread_ctx_inspect_close(insp);
	finish_target(&t);
	printf("%s: %d threads read exactly as published\n", mode, EXPECTED_THREADS - 1);
}

static void run_upgrade(const char *exe, const char *lib, const char *other)
{
	otel_thread_ctx_inspector *insp;
	struct otel_thread_ctx_bpf_proc d;
	uint64_t before, after, at_open;
	struct target t;

	start_target(&t, exe, "upgrade", lib, other);
	ck_assert_msg(otel_thread_ctx_inspect_maps_signature(t.pid, &before) == 0, "signature");
	insp = open_ok(t.pid);
	/* The signature open() took is the maps signature, before and after
	 * the file is replaced (its path then ends in " (deleted)"). */
	ck_assert_int_eq(otel_thread_ctx_inspect_signature(insp, &at_open), OTEL_THREAD_CTX_OK);
	ck_assert_msg(at_open == before, "open()'s signature %#llx, the maps signature %#llx",
		      (unsigned long long)at_open, (unsigned long long)before);
	ck_assert_int_eq(otel_thread_ctx_inspect_signature(NULL, &at_open), OTEL_THREAD_CTX_ENULL);
	ck_assert_int_eq(otel_thread_ctx_inspect_signature(insp, NULL), OTEL_THREAD_CTX_ENULL);
	check_values(insp, &t, NULL);
	otel_thread_ctx_inspect_close(insp);
	/* The package manager replaces the file. */
	ck_assert_msg(write(t.in, "\n", 1) == 1, "write");
	wait_ready(&t);
	ck_assert_msg(otel_thread_ctx_inspect_maps_signature(t.pid, &after) == 0, "signature");
	ck_assert_msg(after != before, "the maps signature did not change when the file was replaced");
	insp = open_ok(t.pid);
	ck_assert_msg(strstr(otel_thread_ctx_inspect_info(insp)->modules[0].path, " (deleted)") != NULL,
	      "the module's path does not say it was deleted: %s",
	      otel_thread_ctx_inspect_info(insp)->modules[0].path);
	ck_assert_int_eq(otel_thread_ctx_inspect_signature(insp, &at_open), OTEL_THREAD_CTX_OK);
	ck_assert_msg(at_open == after, "after the upgrade: open()'s signature %#llx, the maps "
		      "signature %#llx", (unsigned long long)at_open, (unsigned long long)after);
	check_values(insp, &t, NULL);
	ck_assert_msg(otel_thread_ctx_inspect_bpf_proc(insp, &d) == 0 && d.module_count == 1,
	      "the eBPF description after the upgrade");
	otel_thread_ctx_inspect_close(insp);
	finish_target(&t);
	printf("upgrade: read before and after the file was replaced; the signature changed\n");
}

static void run_fifo(const char *exe, const char *lib)
{
	otel_thread_ctx_inspector *insp = NULL;
	struct target t;
	int rc;

	start_target(&t, exe, "fifo", lib, NULL);
	modules_open_swap = "/libotel-copy.so";
	signal(SIGALRM, on_alarm);
	alarm(20);
	rc = otel_thread_ctx_inspect_open(t.pid, &insp);
	alarm(0);
	modules_open_swap = NULL;
	ck_assert_msg(modules_open_swapped, "the file was never opened by path, so never swapped");
	ck_assert_msg(modules_open_map_files_refused > 0, "/proc/PID/map_files was not tried first");
	ck_assert_msg(rc == OTEL_THREAD_CTX_ENOSLOT && insp == NULL,
	      "open with the module's file swapped for a FIFO: %s (expected ENOSLOT)",
	      otel_thread_ctx_inspect_strerror(rc));
	finish_target(&t);
	printf("fifo: the swapped file was refused without blocking (ENOSLOT)\n");
}

static void run_stale(const char *exe, const char *lib, const char *expect)
{
	otel_thread_ctx_inspector *insp;
	struct otel_thread_ctx_inspect_thread th;
	struct target t;
	int rc;

	start_target(&t, exe, "stale", lib, NULL);
	insp = open_ok(t.pid);
	rc = otel_thread_ctx_inspect_thread(insp, t.tid[0], &th);
	if (strcmp(expect, "none") == 0) {
		ck_assert_msg(rc == OTEL_THREAD_CTX_ENOCTX,
		      "a thread that never touched the reloaded module: %s (record at 0x%llx "
		      "through the DTV entry of the module unloaded)",
		      otel_thread_ctx_inspect_strerror(rc), (unsigned long long)th.record_address);
	} else {
		struct expected_thread e;

		expected_for(0, &e);
		ck_assert_msg(rc == 0 && memcmp(th.record.trace_id, e.trace_id, 16) == 0,
		      "the record published before dlclose() (never unloaded): %s",
		      otel_thread_ctx_inspect_strerror(rc));
	}
	otel_thread_ctx_inspect_close(insp);
	finish_target(&t);
	printf("stale: %s after dlclose() and dlopen() under the same module id\n",
	       otel_thread_ctx_inspect_strerror(rc));
}

static bool values_mode(const char *mode)
{
	static const char *const modes[] = { "selfmap", "dlmopen", "many", "hugetext", "hugehead" };

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (strcmp(mode, modes[i]) == 0)
			return true;
	return false;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "", *last = argc > 4 ? argv[4] : NULL;

	if (strcmp(mode, "--skip") == 0)
		skip("%s", argc > 2 ? argv[2] : "(no reason given)");
	ck_assert_msg(argc == 4 || argc == 5,
	      "usage: modules [--skip REASON] MODE TARGET LIB [OTHER | EXPECT]");
	ck_assert_msg(mkdtemp(dir) != NULL, "mkdtemp");
	atexit(cleanup);
	if (strcmp(mode, "upgrade") == 0 && last != NULL)
		run_upgrade(argv[2], argv[3], last);
	else if (strcmp(mode, "stale") == 0 && last != NULL)
		run_stale(argv[2], argv[3], last);
	else if (strcmp(mode, "fifo") == 0)
		run_fifo(argv[2], argv[3]);
	else if (values_mode(mode))
		run_values(mode, argv[2], argv[3]);
	else
		ck_assert_msg(0, "unknown mode %s", mode);
	return 0;
}
