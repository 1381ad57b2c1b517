/* SPDX-License-Identifier: Apache-2.0 */
/*
 * examples/mn-scheduler read from outside while it runs, by
 * libotel-thread-ctx-inspect (ptrace, as a profiler or debugger does): the
 * program is started here, and every thread of it is read over and over
 * with otel_thread_ctx_inspect_threads() while its tasks move between
 * workers.  Every record read must be exactly the record of one task at
 * one request, span and sampling state, or of one job (mn-record.h): never
 * torn, never ids of one task with attributes of another; it must name a
 * task or job the program has (a request task for a task's own context),
 * and it must be on a worker thread.  The same task or job found on two
 * workers in one pass is no error: a job's context is published by every
 * worker that runs one of its tasks, and a task resumed on one worker may
 * still be published by the worker it left (counted, and reported).
 *
 * Why not the stricter check of test-mn-signal.c, "the record names the
 * task that thread runs or ran last": from outside it cannot be made sound.
 * The inspector stops one thread at a time, reads its slot and record, and
 * lets it go; what the worker names lives in the target's memory, and
 * reading it is a second read at another instant.  In process, the handler
 * runs on the interrupted worker itself, where both reads see the same
 * instant of that thread.
 *
 * The scheduler prints its first line once every worker has named its
 * thread: the inspector reads a thread's name before it stops the thread,
 * and a worker that had not named itself yet when its name was read but
 * published a record by the time it was stopped would look like a thread
 * that is no worker.  Every failure says what was read, and from which
 * thread.
 *
 *   test-mn-inspect [--skip REASON] MN_SCHEDULER
 *
 *   OTEL_TEST_INSPECT_SAMPLES   records to read (1,000)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check-lite.h"
#include "mn-record.h"
#include "otel_thread_ctx_inspect.h"
#include "testenv.h"

#define WORKERS "3"
#define TASKS 16u
#define MAX_THREADS 64

static pid_t target;
static int target_out = -1;

/* Starts the scheduler with its stdout on a pipe and waits for its first
 * line, printed once its workers run and its process context is out. */
static void start_target(const char *path)
{
	char tasks[16], line[256];
	size_t len = 0;
	int out[2];

	snprintf(tasks, sizeof(tasks), "%u", TASKS);
	ck_assert_msg(pipe(out) == 0, "pipe: %s", strerror(errno));
	fflush(NULL);
	target = fork();
	ck_assert_msg(target >= 0, "fork: %s", strerror(errno));
	if (target == 0) {
		/* Ends with this test, whatever happens to it. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(out[1], 1);
		close(out[0]);
		close(out[1]);
		/* Runs until SIGTERM (or a minute). */
		execl(path, path, WORKERS, tasks, "60", (char *)NULL);
		perror("execl");
		_exit(127);
	}
	close(out[1]);
	target_out = out[0];
	while (len < sizeof(line) - 1) {
		ssize_t got = read(target_out, line + len, 1);

		if (got < 0 && errno == EINTR)
			continue;
		if (got != 1) {
			int status = 0;
			pid_t w = waitpid(target, &status, 0);

			ck_abort_msg("the scheduler ended before it ran (%s; see its stderr): %s 0x%x",
				got < 0 ? strerror(errno) : "end of its output",
				w == target ? "exit status" : "not reaped, waitpid", w == target ? status : errno);
		}
		if (line[len] == '\n')
			break;
		len++;
	}
	line[len] = '\0';
	printf("%s\n", line);
	ck_assert_msg(strncmp(line, "mn-scheduler: pid ", 18) == 0, "the scheduler said \"%s\"", line);
}

/* Ends the scheduler with SIGTERM: it prints its summary (shown here) and
 * must exit 0. */
static void stop_target(void)
{
	char buf[1024];
	ssize_t got;
	int status;

	ck_assert_msg(kill(target, SIGTERM) == 0, "kill: %s", strerror(errno));
	while ((got = read(target_out, buf, sizeof(buf))) != 0) {
		if (got < 0 && errno == EINTR)
			continue;
		ck_assert_msg(got > 0, "read: %s", strerror(errno));
		fwrite(buf, 1, (size_t)got, stdout);
	}
	close(target_out);
	ck_assert_msg(waitpid(target, &status, 0) == target, "waitpid: %s", strerror(errno));
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "the scheduler did not end well after the inspection (status 0x%x)", status);
}

static unsigned key_index(otel_thread_ctx_inspector *insp, const char *name)
{
	const struct otel_thread_ctx_inspect_info *info = otel_thread_ctx_inspect_info(insp);
	unsigned n = otel_thread_ctx_inspect_key_count(insp);

	for (unsigned i = 0; i < n; i++) {
		const char *k = otel_thread_ctx_inspect_key_name(insp, i);

		if (k != NULL && strcmp(k, name) == 0)
			return i;
	}
	/* What was read instead. */
	printf("process context: %s; %u keys:", otel_thread_ctx_inspect_strerror(info->process_ctx_status),
	       n);
	for (unsigned i = 0; i < n; i++)
		printf(" \"%s\"", otel_thread_ctx_inspect_key_name(insp, i));
	printf("\n");
	kill(target, SIGKILL);
	ck_abort_msg("the process context names no key \"%s\"", name);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void describe(const char *what, const struct otel_thread_ctx_inspect_thread *t)
{
	const struct otel_thread_ctx_record *r = &t->record;

	printf("%s: thread %d (%s): record at 0x%llx: trace %016llx%016llx span %016llx "
	       "flags %u, %u bytes of attributes, anomalies 0x%x\n",
	       what, (int)t->tid, t->name, (unsigned long long)t->record_address, (unsigned long long)mn_get_be(r->trace_id, 8),
	       (unsigned long long)mn_get_be(r->trace_id + 8, 8),
	       (unsigned long long)mn_get_be(r->span_id, 8), r->trace_flags, t->attrs_data_size,
	       t->anomalies);
}

int main(int argc, char **argv)
{
	unsigned long want = env_count("OTEL_TEST_INSPECT_SAMPLES", 1000);
	unsigned long task = 0, job = 0, none = 0, gone = 0, bad = 0, rounds = 0, shared = 0;
	unsigned long twice = 0;
	unsigned char seen[TASKS] = { 0 };
	unsigned distinct = 0, jobs = 0;
	static struct otel_thread_ctx_inspect_thread th[MAX_THREADS];
	otel_thread_ctx_inspector *insp = NULL;
	struct mn_keys keys;
	double start;
	int rc;

	if (argc == 4 && strcmp(argv[1], "--skip") == 0)
		skip("%s", argv[2]);
	ck_assert_msg(argc == 2, "usage: test-mn-inspect [--skip REASON] MN_SCHEDULER");
	for (unsigned t = 0; t < TASKS; t++)
		if (mn_is_batch(t) && mn_job_of(t) >= jobs)
			jobs = mn_job_of(t) + 1;
	start_target(argv[1]);

	rc = otel_thread_ctx_inspect_open(target, &insp);
	if (rc != 0) {
		kill(target, SIGKILL);
		ck_abort_msg("inspect_open: %s (%d)", otel_thread_ctx_inspect_strerror(rc),
			rc);
	}
	{
		const struct otel_thread_ctx_inspect_info *info = otel_thread_ctx_inspect_info(insp);

		for (size_t i = 0; i < info->module_count; i++)
			printf("slot in %s: %s\n", info->modules[i].path,
			       otel_thread_ctx_inspect_model_name(info->modules[i].model));
	}
	keys.task = key_index(insp, "task.name");
	keys.round = key_index(insp, "request.round");
	keys.job = key_index(insp, "job.name");

	start = now_s();
	while (task + job < want && now_s() - start < 30 && bad == 0) {
		unsigned jobs_here[2] = { 0, 0 };
		unsigned char tasks_here[TASKS] = { 0 };
		size_t n = 0;

		rc = otel_thread_ctx_inspect_threads(insp, th, MAX_THREADS, &n);
		if (rc != 0) {
			printf("round %lu, %.3f s in: inspect_threads: %s\n", rounds, now_s() - start,
			       otel_thread_ctx_inspect_strerror(rc));
			break;
		}
		rounds++;
		for (size_t i = 0; i < n && i < MAX_THREADS; i++) {
			const struct otel_thread_ctx_inspect_thread *t = &th[i];
			struct mn_who who;

			if (t->status == OTEL_THREAD_CTX_ENOCTX) {
				none++;
				continue;
			}
			if (t->status == OTEL_THREAD_CTX_ESRCH) {
				gone++;
				continue;
			}
			if (t->status != OTEL_THREAD_CTX_OK) {
				printf("round %lu, %.3f s in: thread %d (%s): %s (status %d, errno %d, "
				       "module %u, slot at 0x%llx, record at 0x%llx)\n",
				       rounds, now_s() - start, (int)t->tid, t->name,
				       otel_thread_ctx_inspect_strerror(t->status), t->status,
				       t->sys_errno, t->module, (unsigned long long)t->slot_address,
				       (unsigned long long)t->record_address);
				bad++;
			} else if (t->anomalies != 0 || !mn_identify(&t->record, &keys, &who)) {
				describe("not the record of one task or job", t);
				bad++;
			} else if (strncmp(t->name, "mn-worker-", 10) != 0) {
				describe("a record on a thread that is no worker", t);
				bad++;
			} else if (who.kind == MN_TASK) {
				if (who.number >= TASKS || mn_is_batch(who.number)) {
					describe("no such request task", t);
					bad++;
				} else {
					task++;
					distinct += !seen[who.number];
					seen[who.number] = 1;
					/* Resumed while its last worker
					 * still showed it. */
					if (++tasks_here[who.number] == 2)
						twice++;
				}
			} else if (who.number >= jobs) {
				describe("no such job", t);
				bad++;
			} else {
				job++;
				/* Two threads at once: the job's context
				 * published by both. */
				if (++jobs_here[who.number] == 2)
					shared++;
			}
		}
	}
	otel_thread_ctx_inspect_close(insp);
	stop_target();
	printf("mn-inspect: %lu reads of every thread in %.2f s: %lu records of a task's own "
	       "context (%u tasks; %lu times one task on two workers at once), %lu of a job's "
	       "shared one (%lu times on two workers at once), %lu without context, %lu threads "
	       "gone, %lu wrong\n",
	       rounds, now_s() - start, task, distinct, twice, job, shared, none, gone, bad);
	ck_assert_msg(rc == 0, "inspect_threads: %s", otel_thread_ctx_inspect_strerror(rc));
	ck_assert_msg(bad == 0, "%lu wrong reads", bad);
	ck_assert_msg(task + job >= want, "only %lu records in 30 s", task + job);
	ck_assert_msg(task > 0 && job > 0, "no record of a task's own context, or of a job's");
	return 0;
}
