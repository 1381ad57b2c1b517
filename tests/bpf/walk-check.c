/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Both readers, one rule: the inspector and the BPF reader (through the
 * sampler, tools/sample/sampler.h) read the same threads of walk-target.c,
 * a process with two modules that define the slot, where in some threads
 * one module's slot cannot be read, and must each give every thread the
 * result the rule of otel_thread_ctx_inspect_bpf.h gives it:
 *
 *   case               module A     module B       inspector  BPF reader
 *   null-unreadable    slot NULL    unreadable     EFAULT     UNREADABLE
 *   notls-unreadable   no block     unreadable     EFAULT     UNREADABLE
 *   record-unreadable  a record     unreadable     the record OK, the record
 *   null-notls         slot NULL    no block       ENOCTX     NO_CONTEXT
 *   notls-notls        no block     no block       ENOCTX     NO_TLS
 *   record-null        a record     slot NULL      the record OK, the record
 *
 * musl's dlopen() gives every running thread a block for the new module at
 * once, so there no thread is without one: notls-notls is two NULL slots,
 * NO_CONTEXT for the BPF reader.
 *
 *   walk-check [--skip REASON] WALK-TARGET LIB_A LIB_B
 *
 * Exits 77 where BPF is refused (and the inspector's half is not run
 * alone: the test is about the two agreeing), 0 when both agree with the
 * rule on every thread, 1 otherwise.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "otel_thread_ctx.h"
#include "sampler.h"
#include "start.h"

#define NCASES 6

static struct {
	const char *name;
	int inspector;  /* the inspector's code */
	uint32_t bpf;   /* the BPF reader's status */
} expect[NCASES] = {
	{ "null-unreadable", OTEL_THREAD_CTX_EFAULT, OTEL_THREAD_CTX_BPF_UNREADABLE },
	{ "notls-unreadable", OTEL_THREAD_CTX_EFAULT, OTEL_THREAD_CTX_BPF_UNREADABLE },
	{ "record-unreadable", OTEL_THREAD_CTX_OK, OTEL_THREAD_CTX_BPF_OK },
	{ "null-notls", OTEL_THREAD_CTX_ENOCTX, OTEL_THREAD_CTX_BPF_NO_CONTEXT },
	{ "notls-notls", OTEL_THREAD_CTX_ENOCTX, OTEL_THREAD_CTX_BPF_NO_TLS },
	{ "record-null", OTEL_THREAD_CTX_OK, OTEL_THREAD_CTX_BPF_OK },
};

static struct {
	pid_t tid;
	int c; /* index in expect[] */
	uint64_t samples, wrong;
	uint32_t last_wrong;
} th[NCASES];
static int nth, failures;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The trace id's first byte walk-target.c gives case c's record. */
static int record_ok(const uint8_t *trace_id, int c)
{
	return trace_id[0] == (uint8_t)(c + 1);
}

static void on_event(void *arg, const struct otel_thread_ctx_bpf_event *ev, size_t size)
{
	(void)arg;
	(void)size;
	for (int i = 0; i < nth; i++) {
		int c = th[i].c;

		if ((pid_t)ev->tid != th[i].tid)
			continue;
		th[i].samples++;
		if (ev->status != expect[c].bpf ||
		    (ev->status == OTEL_THREAD_CTX_BPF_OK && !record_ok(ev->record.trace_id, c))) {
			th[i].wrong++;
			th[i].last_wrong = ev->status;
		}
	}
}

int main(int argc, char **argv)
{
	struct otel_sampler_options o = { .frequency = 997 };
	struct otel_sampler *s = NULL;
	otel_thread_ctx_inspector *insp = NULL;
	char line[1024], *p;
	int to[2], from[2], rc, status;
	FILE *in, *out;
	double started;
	pid_t pid;

	if (argc >= 3 && strcmp(argv[1], "--skip") == 0) {
		printf("skip: %s\n", argv[2]);
		return 77;
	}
	if (argc != 4) {
		fprintf(stderr, "usage: walk-check [--skip REASON] WALK-TARGET LIB_A LIB_B\n");
		return 2;
	}
	rc = open_sampler(&o, on_event, &s, "walk-check");
	if (rc >= 0)
		return rc;
	if (pipe(to) != 0 || pipe(from) != 0)
		return perror("pipe"), 1;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		dup2(to[0], 0);
		dup2(from[1], 1);
		close(to[0]), close(to[1]), close(from[0]), close(from[1]);
		execv(argv[1], argv + 1);
		perror("execv");
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	in = fdopen(to[1], "w");
	out = fdopen(from[0], "r");
	if (pid < 0 || in == NULL || out == NULL || fgets(line, sizeof(line), out) == NULL ||
	    strncmp(line, "ready", 5) != 0) {
		fprintf(stderr, "walk-check: the target did not start (see its stderr)\n");
		return 1;
	}
	for (p = line + 5; *p == ' ' && nth < NCASES;) {
		char *end, *name;
		size_t n;

		th[nth].tid = (pid_t)strtol(p + 1, &end, 10);
		name = end + 1;
		n = strcspn(name, " \n");
		th[nth].c = -1;
		for (int c = 0; c < NCASES; c++)
			if (strlen(expect[c].name) == n && strncmp(expect[c].name, name, n) == 0)
				th[nth].c = c;
		if (*end != ':' || th[nth].c < 0) {
			fprintf(stderr, "walk-check: bad ready line: %s", line);
			return 1;
		}
		nth++;
		p = name + n;
	}

	/* The inspector. */
	rc = otel_thread_ctx_inspect_open(pid, &insp);
	if (rc != OTEL_THREAD_CTX_OK) {
		fprintf(stderr, "walk-check: inspect_open: %s\n", otel_thread_ctx_inspect_strerror(rc));
		return 1;
	}
	{
		const struct otel_thread_ctx_inspect_info *info = otel_thread_ctx_inspect_info(insp);

		printf("%zu modules define the slot:", info->module_count);
		for (size_t m = 0; m < info->module_count; m++)
			printf(" %s (%s)", info->modules[m].path,
			       otel_thread_ctx_inspect_model_name(info->modules[m].model));
		printf("\n");
		if (info->libc == OTEL_THREAD_CTX_INSPECT_LIBC_MUSL)
			expect[4].bpf = OTEL_THREAD_CTX_BPF_NO_CONTEXT; /* notls-notls */
		if (info->module_count != 2) {
			fprintf(stderr, "walk-check: expected 2 modules\n");
			failures++;
		}
	}
	for (int i = 0; i < nth; i++) {
		struct otel_thread_ctx_inspect_thread r;
		int c = th[i].c;

		rc = otel_thread_ctx_inspect_thread(insp, th[i].tid, &r);
		printf("inspector: %-18s %s\n", expect[c].name, otel_thread_ctx_inspect_strerror(rc));
		if (rc != expect[c].inspector ||
		    (rc == OTEL_THREAD_CTX_OK && !record_ok(r.record.trace_id, c))) {
			fprintf(stderr, "walk-check: inspector, %s: %s, expected %s\n", expect[c].name,
				otel_thread_ctx_inspect_strerror(rc),
				otel_thread_ctx_inspect_strerror(expect[c].inspector));
			failures++;
		}
	}
	otel_thread_ctx_inspect_close(insp);

	/* The BPF reader, until every thread was sampled 20 times (or 20 s). */
	rc = otel_sampler_watch(s, pid);
	if (rc != OTEL_THREAD_CTX_OK) {
		fprintf(stderr, "walk-check: describing the target: %s\n",
			otel_thread_ctx_inspect_strerror(rc));
		return 1;
	}
	rc = start_sampler(s, pid, "walk-check");
	if (rc >= 0)
		return rc;
	started = now_s();
	for (;;) {
		int enough = 1;

		for (int i = 0; i < nth; i++)
			enough &= th[i].samples >= 20;
		if (enough || now_s() - started > 20)
			break;
		if (otel_sampler_poll(s, 50) < 0) {
			fprintf(stderr, "walk-check: polling the ring buffer failed\n");
			failures++;
			break;
		}
	}
	fclose(in);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "walk-check: the target failed (status 0x%x)\n", status);
		failures++;
	}
	for (int i = 0; i < nth; i++) {
		int c = th[i].c;

		printf("BPF reader: %-18s %llu samples, %llu not %u\n", expect[c].name,
		       (unsigned long long)th[i].samples, (unsigned long long)th[i].wrong,
		       expect[c].bpf);
		if (th[i].samples == 0 || th[i].wrong != 0) {
			fprintf(stderr, "walk-check: BPF reader, %s: %llu samples, %llu wrong "
					"(the last with status %u), expected status %u\n",
				expect[c].name, (unsigned long long)th[i].samples,
				(unsigned long long)th[i].wrong, th[i].last_wrong, expect[c].bpf);
			failures++;
		}
	}
	otel_sampler_close(s);
	fclose(out);
	return failures == 0 ? 0 : 1;
}
