/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otel-thread-ctx-inspect: print what every thread of a running process
 * publishes in its OpenTelemetry thread context, read from outside with
 * ptrace (include/otel_thread_ctx_inspect.h).  README, "Reading from
 * outside: the inspector", documents options, output and exit codes.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <otel_thread_ctx_inspect.h>

#include "print.h"

static const char *status_name(int status)
{
	switch (status) {
	case OTEL_THREAD_CTX_OK:
		return "ok";
	case OTEL_THREAD_CTX_ENOCTX:
		return "no-context";
	case OTEL_THREAD_CTX_EINVALID:
		return "invalid";
	case OTEL_THREAD_CTX_EFAULT:
		return "unreadable";
	case OTEL_THREAD_CTX_EFORMAT:
		return "misaligned";
	case OTEL_THREAD_CTX_ESRCH:
		return "exited";
	case OTEL_THREAD_CTX_EPERM:
		return "denied";
	case OTEL_THREAD_CTX_ETIMEDOUT:
		return "not-stopped";
	}
	return "error";
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: otel-thread-ctx-inspect [--json] [--count N] [--interval SECONDS]\n"
		"                               [--max-threads N] PID\n"
		"Prints the OpenTelemetry thread context of every thread of process PID,\n"
		"read from outside with ptrace.  --count N reads N times (0: until\n"
		"interrupted), --interval SECONDS apart (default 1); --max-threads N reads\n"
		"at most N threads (default: all).  Exit status 9: some thread not read.\n");
}

static void explain_permission(pid_t pid)
{
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
	int scope = -1;

	fprintf(stderr,
		"otel-thread-ctx-inspect: not permitted to trace process %d: reading thread\n"
		"contexts needs the right to ptrace-attach to it (the same user, or\n"
		"CAP_SYS_PTRACE; a process already traced by a debugger cannot be read).\n",
		(int)pid);
	if (f != NULL) {
		if (fscanf(f, "%d", &scope) != 1)
			scope = -1;
		fclose(f);
	}
	if (scope == 1)
		fprintf(stderr,
			"/proc/sys/kernel/yama/ptrace_scope is 1: only a parent of the process may\n"
			"attach, unless it allows this one with prctl(PR_SET_PTRACER).  Run as root,\n"
			"give the inspector CAP_SYS_PTRACE, or (as root) echo 0 > that file.\n");
	else if (scope == 2)
		fprintf(stderr,
			"/proc/sys/kernel/yama/ptrace_scope is 2: only CAP_SYS_PTRACE may attach.\n");
	else if (scope == 3)
		fprintf(stderr,
			"/proc/sys/kernel/yama/ptrace_scope is 3: no process may attach (until reboot).\n");
}

/* Maps an open() error to an exit code, with a message. */
static int open_failed(pid_t pid, int rc)
{
	switch (rc) {
	case OTEL_THREAD_CTX_ESRCH:
		fprintf(stderr, "otel-thread-ctx-inspect: no such process: %d\n", (int)pid);
		return EXIT_NO_PROCESS;
	case OTEL_THREAD_CTX_EPERM:
		explain_permission(pid);
		return EXIT_NOT_PERMITTED;
	case OTEL_THREAD_CTX_ENOSLOT:
		fprintf(stderr,
			"otel-thread-ctx-inspect: process %d publishes no thread context: no loaded\n"
			"module defines otel_thread_ctx_v1 in its .dynsym (is the library linked, and\n"
			"the symbol exported by a static executable?)\n", (int)pid);
		return EXIT_NO_SLOT;
	case OTEL_THREAD_CTX_EMODEL:
		fprintf(stderr, "otel-thread-ctx-inspect: process %d: %s\n", (int)pid,
			otel_thread_ctx_inspect_strerror(rc));
		return EXIT_MODEL;
	}
	fprintf(stderr, "otel-thread-ctx-inspect: process %d: %s\n", (int)pid,
		otel_thread_ctx_inspect_strerror(rc));
	return EXIT_FAILED;
}

static int bad_thread(const struct otel_thread_ctx_inspect_thread *t)
{
	return t->status == OTEL_THREAD_CTX_EFAULT || t->status == OTEL_THREAD_CTX_EFORMAT ||
	       t->anomalies != 0;
}

static void print_table(const otel_thread_ctx_inspector *insp,
			const struct otel_thread_ctx_inspect_thread *th, size_t n, size_t total)
{
	const struct otel_thread_ctx_inspect_info *info = otel_thread_ctx_inspect_info(insp);

	printf("process %d", (int)info->pid);
	if (info->process_ctx != NULL)
		printf(", process context with %zu attribute keys", info->process_ctx->key_count);
	else
		printf(", no process context (%s)", otel_thread_ctx_inspect_strerror(info->process_ctx_status));
	printf("\n");
	tool_modules_table(info);
	printf("%-8s %-16s %-32s %-16s %-2s %s\n", "TID", "NAME", "TRACE ID", "SPAN ID", "FL",
	       "ATTRIBUTES");
	for (size_t i = 0; i < n; i++) {
		const struct otel_thread_ctx_inspect_thread *t = &th[i];
		const struct otel_thread_ctx_record *r = &t->record;

		printf("%-8d ", (int)t->tid);
		tool_text_cell(t->name, 16);
		putchar(' ');
		if (t->status != OTEL_THREAD_CTX_OK) {
			printf("(%s", status_name(t->status));
			if (t->status == OTEL_THREAD_CTX_EFAULT || t->status == OTEL_THREAD_CTX_EFORMAT)
				printf(": record at 0x%" PRIx64, t->record_address);
			else if (t->status == OTEL_THREAD_CTX_ESYS)
				printf(": %s", strerror(t->sys_errno));
			printf(")\n");
			continue;
		}
		tool_hex(r->trace_id, 16);
		putchar(' ');
		tool_hex(r->span_id, 8);
		printf(" %02x", r->trace_flags);
		tool_attrs_table(insp, r);
		if (t->anomalies & OTEL_THREAD_CTX_INSPECT_OVERSIZED)
			printf(" (attrs_data_size %u > 612)", t->attrs_data_size);
		if (t->anomalies & OTEL_THREAD_CTX_INSPECT_TRUNCATED_ENTRY)
			printf(" (truncated entry)");
		if (t->anomalies & OTEL_THREAD_CTX_INSPECT_HALF_IDS)
			printf(" (only one of the ids set)");
		putchar('\n');
	}
	if (total > n)
		printf("(%zu more threads not read)\n", total - n);
}

static void print_json(const otel_thread_ctx_inspector *insp,
		       const struct otel_thread_ctx_inspect_thread *th, size_t n, size_t total,
		       size_t not_stopped)
{
	const struct otel_thread_ctx_inspect_info *info = otel_thread_ctx_inspect_info(insp);
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	printf("{\"pid\":%d,\"time_ns\":%lld,\"libc\":\"%s\",\"process_context\":%s,\"modules\":",
	       (int)info->pid, (long long)now.tv_sec * 1000000000LL + now.tv_nsec,
	       info->libc == OTEL_THREAD_CTX_INSPECT_LIBC_GLIBC ? "glibc" :
	       info->libc == OTEL_THREAD_CTX_INSPECT_LIBC_MUSL ? "musl" : "unknown",
	       info->process_ctx != NULL ? "true" : "false");
	tool_modules_json(info);
	/* threads_total: the threads /proc/PID/task listed during the reading;
	 * threads_read: those read (the array); partial: some thread was not
	 * read, beyond --max-threads or not stopped in time. */
	printf(",\"threads_total\":%zu,\"threads_read\":%zu,\"threads_not_stopped\":%zu,"
	       "\"partial\":%s,\"threads\":[",
	       total, n, not_stopped, n < total || not_stopped > 0 ? "true" : "false");
	for (size_t i = 0; i < n; i++) {
		const struct otel_thread_ctx_inspect_thread *t = &th[i];
		const struct otel_thread_ctx_record *r = &t->record;

		printf("%s{\"tid\":%d,\"name\":", i ? "," : "", (int)t->tid);
		tool_json_string(t->name, strlen(t->name));
		printf(",\"status\":\"%s\"", status_name(t->status));
		if (t->status == OTEL_THREAD_CTX_OK || t->status == OTEL_THREAD_CTX_EFAULT ||
		    t->status == OTEL_THREAD_CTX_EFORMAT || t->status == OTEL_THREAD_CTX_EINVALID)
			printf(",\"record_address\":%" PRIu64, t->record_address);
		if (t->status == OTEL_THREAD_CTX_OK) {
			int first = 1;

			printf(",\"trace_id\":\"");
			tool_hex(r->trace_id, 16);
			printf("\",\"span_id\":\"");
			tool_hex(r->span_id, 8);
			printf("\",\"trace_flags\":%u,\"attrs_data_size\":%u,\"anomalies\":[",
			       r->trace_flags, t->attrs_data_size);
			if (t->anomalies & OTEL_THREAD_CTX_INSPECT_OVERSIZED)
				printf("%s\"oversized\"", first ? "" : ","), first = 0;
			if (t->anomalies & OTEL_THREAD_CTX_INSPECT_TRUNCATED_ENTRY)
				printf("%s\"truncated-entry\"", first ? "" : ","), first = 0;
			if (t->anomalies & OTEL_THREAD_CTX_INSPECT_HALF_IDS)
				printf("%s\"half-ids\"", first ? "" : ","), first = 0;
			printf("],\"attributes\":");
			tool_attrs_json(insp, r);
		}
		putchar('}');
	}
	printf("]}\n");
}

/* How many entries /proc/PID/task has now (0 when it cannot be read). */
static size_t task_count(pid_t pid)
{
	char path[64];
	struct dirent *de;
	size_t n = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (dir == NULL)
		return 0;
	while ((de = readdir(dir)) != NULL)
		if (de->d_name[0] != '.')
			n++;
	closedir(dir);
	return n;
}

/*
 * Reads the threads of the process into *th (grown as needed, *cap its
 * size): all of them, or the first `limit` (0: no limit).  A process that
 * starts threads between the count and the read gets a larger array and
 * is read again, so that no thread is dropped for want of room.
 */
static int read_threads(otel_thread_ctx_inspector *insp, pid_t pid, size_t limit,
			struct otel_thread_ctx_inspect_thread **th, size_t *cap, size_t *total)
{
	for (;;) {
		size_t want = limit != 0 ? limit : task_count(pid) + 16;
		int rc;

		if (want > *cap) {
			struct otel_thread_ctx_inspect_thread *n = realloc(*th, want * sizeof(**th));

			if (n == NULL)
				return OTEL_THREAD_CTX_ENOMEM;
			*th = n;
			*cap = want;
		}
		rc = otel_thread_ctx_inspect_threads(insp, *th, limit != 0 ? limit : *cap, total);
		if (rc != 0 || limit != 0 || *total <= *cap)
			return rc;
	}
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "count", required_argument, NULL, 'c' },
		{ "interval", required_argument, NULL, 'i' },
		{ "max-threads", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct otel_thread_ctx_inspect_thread *th = NULL;
	int json = 0, c, worst = EXIT_OK, partial = 0;
	unsigned long count = 1, max_threads = 0;
	size_t cap = 0;
	double interval = 1.0;
	char *end;
	long pid;

	while ((c = getopt_long(argc, argv, "jc:i:m:h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = 1;
			break;
		case 'c':
			errno = 0;
			count = strtoul(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || *optarg == '-') {
				fprintf(stderr, "otel-thread-ctx-inspect: bad --count: %s\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'i':
			interval = strtod(optarg, &end);
			if (*end != '\0' || !(interval >= 0) || interval > 86400) {
				fprintf(stderr, "otel-thread-ctx-inspect: bad --interval: %s\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'm':
			errno = 0;
			max_threads = strtoul(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || *optarg == '-' || *optarg == '\0' ||
			    max_threads == 0 || max_threads > 1000000000ul) {
				fprintf(stderr, "otel-thread-ctx-inspect: bad --max-threads: %s\n",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case 'h':
			usage(stdout);
			return EXIT_OK;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind + 1 != argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	pid = strtol(argv[optind], &end, 10);
	if (*argv[optind] == '\0' || *end != '\0' || pid <= 0 || pid > 0x7fffffff) {
		fprintf(stderr, "otel-thread-ctx-inspect: not a process id: %s\n", argv[optind]);
		return EXIT_USAGE;
	}
	for (unsigned long round = 0; count == 0 || round < count; round++) {
		otel_thread_ctx_inspector *insp = NULL;
		size_t total = 0, n, not_stopped = 0;
		int rc;

		if (round > 0 && interval > 0) {
			struct timespec ts = { (time_t)interval,
					       (long)((interval - (double)(time_t)interval) * 1e9) };

			while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
				;
		}
		/* Each round looks afresh: modules may have been loaded. */
		rc = otel_thread_ctx_inspect_open((pid_t)pid, &insp);
		if (rc != 0) {
			free(th);
			/* The process ending during a watch ends the watch. */
			if (rc == OTEL_THREAD_CTX_ESRCH && round > 0) {
				fprintf(stderr, "otel-thread-ctx-inspect: process %ld has exited\n", pid);
				return worst;
			}
			return open_failed((pid_t)pid, rc);
		}
		rc = read_threads(insp, (pid_t)pid, max_threads, &th, &cap, &total);
		if (rc != 0) {
			otel_thread_ctx_inspect_close(insp);
			free(th);
			if (rc == OTEL_THREAD_CTX_ESRCH && round > 0)
				return worst;
			return open_failed((pid_t)pid, rc);
		}
		n = total < cap ? total : cap;
		if (max_threads != 0 && n > max_threads)
			n = max_threads;
		if (n < total)
			partial = 1;
		for (size_t i = 0; i < n; i++) {
			if (th[i].status == OTEL_THREAD_CTX_ETIMEDOUT) {
				not_stopped++;
				partial = 1;
			}
			if (bad_thread(&th[i]))
				worst = EXIT_BAD_RECORD;
			else if (th[i].status == OTEL_THREAD_CTX_EPERM && worst == EXIT_OK)
				worst = EXIT_NOT_PERMITTED;
			else if (th[i].status == OTEL_THREAD_CTX_ESYS && worst == EXIT_OK)
				worst = EXIT_FAILED;
		}
		if (json)
			print_json(insp, th, n, total, not_stopped);
		else {
			if (round > 0)
				putchar('\n');
			print_table(insp, th, n, total);
		}
		fflush(stdout);
		otel_thread_ctx_inspect_close(insp);
	}
	if (worst == EXIT_BAD_RECORD)
		fprintf(stderr, "otel-thread-ctx-inspect: some records break the thread-context "
				"format (see above)\n");
	else if (worst == EXIT_NOT_PERMITTED)
		explain_permission((pid_t)pid);
	else if (worst == EXIT_OK && partial) {
		fprintf(stderr, "otel-thread-ctx-inspect: some threads were not read (beyond "
				"--max-threads, or not stopped in time)\n");
		worst = EXIT_PARTIAL;
	}
	free(th);
	return worst;
}
