/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The inspector against a live target (target.c), started here as a child:
 *
 *   inspect [--skip REASON] MODE MODEL TARGET [TARGET ARGS...]
 *
 * MODE is the target's mode (values, manual, storm, hostile, churn, vfork),
 * `reaper` (values, read while another thread reaps every child) or
 * `errors`; MODEL the access model the inspector must find for the first
 * module ("-": any), with ",far" for a static one more than 1 MiB from the
 * thread pointer.  Every mode ends by letting the target check that all
 * its threads kept running, and the target's exit status must be 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "expected.h"
#include "check-lite.h"
#include "otel_thread_ctx_inspect.h"
#include "testenv.h"

struct target {
	pid_t pid;
	int in, out; /* its stdin (ours to write), its stdout (ours to read) */
	int n;
	pid_t tid[EXPECTED_MAX_THREADS];
	uint64_t slot[EXPECTED_MAX_THREADS];
};

/* One line the target printed, without its newline (cut at size - 1
 * bytes); false when its output ended before a newline. */
static bool read_line(int fd, char *line, size_t size)
{
	size_t len = 0;
	bool whole = true;

	while (len < size - 1) {
		ssize_t got = read(fd, line + len, 1);

		if (got < 0 && errno == EINTR)
			continue;
		if (got != 1) {
			whole = false;
			break;
		}
		if (line[len] == '\n')
			break;
		len++;
	}
	line[len] = '\0';
	return whole;
}

static void start_target(struct target *t, char **argv, const char *mode)
{
	int in[2], out[2];
	char line[1024], *p;
	int argc = 0;
	char *args[16];

	while (argv[argc] != NULL && argc < 13) {
		args[argc] = argv[argc];
		argc++;
	}
	if (mode != NULL)
		args[argc++] = (char *)mode;
	args[argc] = NULL;
	ck_assert_msg(pipe(in) == 0 && pipe(out) == 0, "pipe");
	fflush(NULL);
	t->pid = fork();
	ck_assert_msg(t->pid >= 0, "fork");
	if (t->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[0]), close(in[1]), close(out[0]), close(out[1]);
		execv(args[0], args);
		perror("execv");
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	t->in = in[1];
	t->out = out[0];
	ck_assert_msg(read_line(t->out, line, sizeof(line)),
	      "the target ended before it was ready (see its stderr)");
	ck_assert_msg(strncmp(line, "ready", 5) == 0, "target said \"%s\"", line);
	t->n = 0;
	p = line + 5;
	while (*p == ' ' && t->n < EXPECTED_MAX_THREADS) {
		char *end;

		t->tid[t->n] = (pid_t)strtol(p + 1, &end, 10);
		ck_assert_msg(*end == ':', "bad ready line \"%s\"", line);
		t->slot[t->n] = strtoull(end + 1, &p, 16);
		t->n++;
	}
}

/* Lets the target check its threads and end; its status must be 0.  With
 * `last`, the line it prints at its end is stored there ("" if none). */
static void end_target(struct target *t, char *last, size_t size)
{
	int status;

	close(t->in);
	if (last != NULL)
		(void)read_line(t->out, last, size);
	ck_assert_msg(waitpid(t->pid, &status, 0) == t->pid, "waitpid: %s", strerror(errno));
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "the target did not end well after the inspection (status 0x%x)", status);
	close(t->out);
}

static void finish_target(struct target *t)
{
	end_target(t, NULL, 0);
}

static otel_thread_ctx_inspector *open_checked(const struct target *t, const char *model)
{
	otel_thread_ctx_inspector *insp = NULL;
	const struct otel_thread_ctx_inspect_info *info;
	int rc = otel_thread_ctx_inspect_open(t->pid, &insp);

	ck_assert_msg(rc == 0, "inspect_open: %s", otel_thread_ctx_strerror(rc));
	info = otel_thread_ctx_inspect_info(insp);
	ck_assert_msg(info != NULL && info->pid == t->pid && info->module_count >= 1, "info");
	printf("slot in %s: %s", info->modules[0].path,
	       otel_thread_ctx_inspect_model_name(info->modules[0].model));
	if (info->modules[0].model == OTEL_THREAD_CTX_INSPECT_TLSDESC_DYNAMIC ||
	    info->modules[0].model == OTEL_THREAD_CTX_INSPECT_GENERAL_DYNAMIC)
		printf(" (module %llu, offset %llu)\n", (unsigned long long)info->modules[0].module_id,
		       (unsigned long long)info->modules[0].dtv_offset);
	else
		printf(" (thread pointer %+lld)\n", (long long)info->modules[0].tp_offset);
	if (strcmp(model, "-") != 0) {
		size_t n = strcspn(model, ",");

		ck_assert_msg(strlen(otel_thread_ctx_inspect_model_name(info->modules[0].model)) == n &&
			      strncmp(otel_thread_ctx_inspect_model_name(info->modules[0].model), model,
				      n) == 0,
		      "model %s, expected %s",
		      otel_thread_ctx_inspect_model_name(info->modules[0].model), model);
		/* ",far": the static offset is more than 1 MiB from the thread
		 * pointer (the executable's 2 MiB of TLS lie in between). */
		if (strcmp(model + n, ",far") == 0)
			ck_assert_msg(info->modules[0].tp_offset > (1 << 20) ||
				      info->modules[0].tp_offset < -(1 << 20),
			      "the slot is %+lld bytes from the thread pointer, not beyond 1 MiB",
			      (long long)info->modules[0].tp_offset);
	}
	return insp;
}

static void check_keys(otel_thread_ctx_inspector *insp)
{
	const struct otel_thread_ctx_inspect_info *info = otel_thread_ctx_inspect_info(insp);

	ck_assert_msg(info->process_ctx_status == 0, "process context: %s",
	      otel_thread_ctx_strerror(info->process_ctx_status));
	for (unsigned k = 0; k < EXPECTED_KEYS; k++) {
		const char *name = otel_thread_ctx_inspect_key_name(insp, k);

		ck_assert_msg(name != NULL && strcmp(name, expected_key_name(k)) == 0,
		      "key %u is \"%s\", expected \"%s\"", k, name ? name : "(none)",
		      expected_key_name(k));
	}
	ck_assert_msg(otel_thread_ctx_inspect_key_name(insp, EXPECTED_KEYS) == NULL, "a key too many");
}

static const struct otel_thread_ctx_inspect_thread *
find(const struct otel_thread_ctx_inspect_thread *th, size_t n, pid_t tid)
{
	for (size_t i = 0; i < n; i++)
		if (th[i].tid == tid)
			return &th[i];
	ck_abort_msg("thread %d not listed", (int)tid);
}

/* The effective value of `key` in a record as published, every index (the
 * library's raw_attr() honours this process's key map,
 * which has no names here). */
static int raw_attr(const struct otel_thread_ctx_record *r, unsigned int key,
		    struct otel_thread_ctx_attr *out)
{
	struct otel_thread_ctx_attr_iter it;
	struct otel_thread_ctx_attr a;

	otel_thread_ctx_attr_iter_init_map(&it, r, OTEL_THREAD_CTX_KEY_MAX + 1);
	while (otel_thread_ctx_attr_iter_next(&it, &a) == 0) {
		if (a.key == key) {
			*out = a;
			return 1;
		}
	}
	return 0;
}

/* The attribute walk of a thread's record gives exactly e's. */
static void check_record(const struct otel_thread_ctx_inspect_thread *t, int i)
{
	struct expected_thread e;
	struct otel_thread_ctx_attr_iter it;
	struct otel_thread_ctx_attr a;
	unsigned k = 0;

	expected_for(i, &e);
	ck_assert_msg(t->status == 0, "thread %d (%s): %s", (int)t->tid, t->name,
	      otel_thread_ctx_strerror(t->status));
	ck_assert_msg(memcmp(t->record.trace_id, e.trace_id, 16) == 0, "thread %d: trace id", i);
	ck_assert_msg(memcmp(t->record.span_id, e.span_id, 8) == 0, "thread %d: span id", i);
	ck_assert_msg(t->record.trace_flags == e.flags, "thread %d: flags %u", i, t->record.trace_flags);
	ck_assert_msg(t->anomalies == 0, "thread %d: anomalies 0x%x", i, t->anomalies);
	/* The record as published, every index (the key map's rule is the
	 * CLI's, checked by cli.py). */
	otel_thread_ctx_attr_iter_init_map(&it, &t->record, OTEL_THREAD_CTX_KEY_MAX + 1);
	while (otel_thread_ctx_attr_iter_next(&it, &a) == 0) {
		ck_assert_msg(k < e.nattrs, "thread %d: more attributes than published", i);
		ck_assert_msg(a.key == e.attrs[k].key && a.len == strlen(e.attrs[k].value) &&
			      memcmp(a.value, e.attrs[k].value, a.len) == 0,
		      "thread %d: attribute %u differs (key %u, %u bytes)", i, k, a.key, a.len);
		k++;
	}
	ck_assert_msg(k == e.nattrs, "thread %d: %u attributes, expected %u", i, k, e.nattrs);
}

/* The inspector's own attribute walk (no writer needed) names what the
 * process's key map names and counts the rest; without an inspector,
 * nothing is named. */
static void check_inspect_walk(const otel_thread_ctx_inspector *insp,
			       const struct otel_thread_ctx_inspect_thread *t, int i)
{
	struct expected_thread e;
	struct otel_thread_ctx_attr_iter it;
	struct otel_thread_ctx_attr a;
	unsigned int kc = otel_thread_ctx_inspect_key_count(insp), k = 0, named = 0;

	expected_for(i, &e);
	otel_thread_ctx_inspect_attr_iter_init(&it, insp, &t->record);
	while (otel_thread_ctx_inspect_attr_iter_next(&it, &a) == 0) {
		while (k < e.nattrs && e.attrs[k].key >= kc)
			k++;
		ck_assert_msg(k < e.nattrs, "thread %d: the inspector's walk gives more than was named", i);
		ck_assert_msg(a.key == e.attrs[k].key && a.len == strlen(e.attrs[k].value) &&
			      memcmp(a.value, e.attrs[k].value, a.len) == 0,
		      "thread %d: the inspector's walk: attribute %u differs", i, k);
		k++;
		named++;
	}
	for (unsigned int j = 0; j < e.nattrs; j++)
		if (e.attrs[j].key < kc)
			named--;
	ck_assert_msg(named == 0, "thread %d: the inspector's walk missed a named attribute", i);
	for (unsigned int j = 0; j < e.nattrs; j++)
		if (e.attrs[j].key >= kc)
			named++;
	ck_assert_msg(it.unmapped == named, "thread %d: %u unmapped, expected %u", i, it.unmapped, named);
	otel_thread_ctx_inspect_attr_iter_init(&it, NULL, &t->record);
	ck_assert_msg(otel_thread_ctx_inspect_attr_iter_next(&it, &a) == OTEL_THREAD_CTX_ENOATTR &&
		      it.unmapped == e.nattrs,
	      "thread %d: without an inspector every entry is unmapped", i);
	ck_assert_msg(otel_thread_ctx_inspect_attr_iter_next(&it, NULL) == OTEL_THREAD_CTX_ENULL,
	      "the walk: NULL out is ENULL");
}

static void run_values(char **argv, const char *model, const char *mode)
{
	struct target t;
	struct otel_thread_ctx_inspect_thread th[64];
	otel_thread_ctx_inspector *insp;
	size_t n = 0;
	char name[16];

	start_target(&t, argv, mode);
	ck_assert_msg(t.n == EXPECTED_THREADS, "%d threads reported", t.n);
	insp = open_checked(&t, model);
	if (strcmp(mode, "values") == 0)
		check_keys(insp);
	ck_assert_msg(otel_thread_ctx_inspect_threads(insp, th, 64, &n) == 0, "inspect_threads");
	/* (and, under TSan, its background thread) */
	ck_assert_msg(n >= EXPECTED_THREADS + 1, "%zu threads listed", n);
	for (int i = 0; i < t.n; i++) {
		const struct otel_thread_ctx_inspect_thread *r = find(th, n, t.tid[i]);

		expected_name(i, name);
		ck_assert_msg(strcmp(r->name, name) == 0, "thread %d named \"%s\"", i, r->name);
		if (i == EXPECTED_IDLE) {
			ck_assert_msg(r->status == OTEL_THREAD_CTX_ENOCTX, "idle thread: %s",
			      otel_thread_ctx_strerror(r->status));
			continue;
		}
		check_record(r, i);
		check_inspect_walk(insp, r, i);
		ck_assert_msg(r->slot_address == t.slot[i], "thread %d: slot at 0x%llx, the loader says 0x%llx",
		      i, (unsigned long long)r->slot_address, (unsigned long long)t.slot[i]);
	}
	/* The main thread publishes nothing. */
	ck_assert_msg(find(th, n, t.pid)->status == OTEL_THREAD_CTX_ENOCTX, "main thread");
	otel_thread_ctx_inspect_close(insp);
	finish_target(&t);
	printf("%d threads read exactly as published\n", EXPECTED_THREADS - 1);
}

/*
 * One thread of the target commits records derived from one counter as fast
 * as it can; each read must be one of them, whole.  The inspector stops the
 * thread for the read, so the slot and the record it points to are read at
 * one instant.  OTEP 4947 lets a writer that updates a record in place show
 * valid 0 meanwhile, but this library never writes a published record: both
 * records of a context have valid 1 from its creation on, and a commit
 * publishes the other one (src/thread_ctx.c, swap_records()).  So a record
 * read invalid here is a bug, like a torn one.
 */
static void run_storm(char **argv, const char *model)
{
	unsigned long samples = env_count("OTEL_TEST_INSPECT_SAMPLES", 5000);
	unsigned long ok = 0, torn = 0, invalid = 0, noctx = 0, backwards = 0, distinct = 0;
	uint64_t last = 0;
	struct target t;
	struct otel_thread_ctx_inspect_thread th;
	otel_thread_ctx_inspector *insp;

	start_target(&t, argv, "storm");
	insp = open_checked(&t, model);
	for (unsigned long s = 0; s < samples; s++) {
		int rc = otel_thread_ctx_inspect_thread(insp, t.tid[0], &th);
		struct otel_thread_ctx_attr a;
		uint8_t trace[16], span[8];
		char value[24];
		uint64_t n = 0;

		/* Room for the writer to run between two reads. */
		usleep(20);
		if (rc == OTEL_THREAD_CTX_EINVALID) {
			invalid++;
			continue;
		}
		if (rc == OTEL_THREAD_CTX_ENOCTX && ok == 0) {
			noctx++; /* before its first commit */
			continue;
		}
		ck_assert_msg(rc == 0, "sample %lu: %s", s, otel_thread_ctx_strerror(rc));
		for (int b = 7; b >= 0; b--)
			n = n << 8 | th.record.span_id[b];
		storm_fill(n, trace, span, value);
		if (memcmp(th.record.trace_id, trace, 16) != 0 ||
		    memcmp(th.record.span_id, span, 8) != 0 ||
		    !raw_attr(&th.record, STORM_KEY, &a) ||
		    a.len != strlen(value) || memcmp(a.value, value, a.len) != 0) {
			torn++;
			continue;
		}
		ok++;
		if (n < last)
			backwards++;
		if (n != last)
			distinct++;
		last = n;
	}
	otel_thread_ctx_inspect_close(insp);
	finish_target(&t);
	printf("storm: %lu samples: %lu consistent (%lu distinct records, last %llu), %lu torn, "
	       "%lu invalid, %lu before the first commit, %lu going backwards\n",
	       samples, ok, distinct, (unsigned long long)last, torn, invalid, noctx, backwards);
	ck_assert_msg(torn == 0, "%lu torn records", torn);
	ck_assert_msg(invalid == 0, "%lu records read with valid != 1, which this library never publishes",
	      invalid);
	ck_assert_msg(backwards == 0, "%lu records older than one read before", backwards);
	ck_assert_msg(ok > 0 && distinct >= 2, "the storm thread was not seen making progress");
}

static void run_hostile(char **argv)
{
	struct target t;
	struct otel_thread_ctx_inspect_thread th[64];
	const struct otel_thread_ctx_inspect_thread *r;
	struct otel_thread_ctx_attr a;
	otel_thread_ctx_inspector *insp;
	size_t n = 0;

	start_target(&t, argv, "hostile");
	ck_assert_msg(t.n == HOSTILE_COUNT, "%d threads", t.n);
	insp = open_checked(&t, "-");
	ck_assert_msg(otel_thread_ctx_inspect_threads(insp, th, 64, &n) == 0, "inspect_threads");

	r = find(th, n, t.tid[HOSTILE_OVERSIZED]);
	ck_assert_msg(r->status == 0 && (r->anomalies & OTEL_THREAD_CTX_INSPECT_OVERSIZED) &&
		      r->attrs_data_size == 2000 && r->record.attrs_data_size == 612,
	      "oversized: status %d anomalies 0x%x size %u", r->status, r->anomalies,
	      r->attrs_data_size);
	ck_assert_msg(raw_attr(&r->record, 1, &a) && a.len == 253 && a.value[252] == 'y',
	      "oversized: key 1");
	ck_assert_msg(raw_attr(&r->record, 2, &a) && a.len == 200 && a.value[199] == 'z',
	      "oversized: key 2");

	r = find(th, n, t.tid[HOSTILE_TRUNCATED]);
	ck_assert_msg(r->status == 0 && r->anomalies == OTEL_THREAD_CTX_INSPECT_TRUNCATED_ENTRY,
	      "truncated: status %d anomalies 0x%x", r->status, r->anomalies);
	ck_assert_msg(raw_attr(&r->record, 1, &a) && a.len == 3 &&
		      memcmp(a.value, "abc", 3) == 0, "truncated: key 1");
	ck_assert_msg(!raw_attr(&r->record, 2, &a), "truncated: key 2 decoded");

	r = find(th, n, t.tid[HOSTILE_DUPLICATE]);
	ck_assert_msg(r->status == 0 && r->anomalies == 0, "duplicate: status %d", r->status);
	ck_assert_msg(raw_attr(&r->record, 1, &a) && a.len == 4 &&
		      memcmp(a.value, "last", 4) == 0, "duplicate: the last entry does not win");

	r = find(th, n, t.tid[HOSTILE_INVALID]);
	ck_assert_msg(r->status == OTEL_THREAD_CTX_EINVALID, "invalid: status %d", r->status);
	r = find(th, n, t.tid[HOSTILE_UNMAPPED]);
	ck_assert_msg(r->status == OTEL_THREAD_CTX_EFAULT && r->record_address != 0,
	      "unmapped: status %d", r->status);
	r = find(th, n, t.tid[HOSTILE_MISALIGNED]);
	ck_assert_msg(r->status == OTEL_THREAD_CTX_EFORMAT && r->record_address % 2 == 1,
	      "misaligned: status %d", r->status);
	r = find(th, n, t.tid[HOSTILE_HALF_IDS]);
	ck_assert_msg(r->status == 0 && r->anomalies == OTEL_THREAD_CTX_INSPECT_HALF_IDS,
	      "half ids: status %d anomalies 0x%x", r->status, r->anomalies);
	otel_thread_ctx_inspect_close(insp);
	finish_target(&t);
	printf("%d broken records reported as such; the target kept running\n", HOSTILE_COUNT);
}

static void run_churn(char **argv, const char *model)
{
	unsigned long rounds = env_count("OTEL_TEST_INSPECT_ROUNDS", 300);
	unsigned long ok = 0, noctx = 0, exited = 0;
	struct otel_thread_ctx_inspect_thread th[64];
	otel_thread_ctx_inspector *insp;
	struct target t;

	start_target(&t, argv, "churn");
	insp = open_checked(&t, model);
	for (unsigned long round = 0; round < rounds; round++) {
		size_t n = 0;

		ck_assert_msg(otel_thread_ctx_inspect_threads(insp, th, 64, &n) == 0, "inspect_threads");
		for (size_t i = 0; i < n && i < 64; i++) {
			if (th[i].status == OTEL_THREAD_CTX_ENOCTX) {
				noctx++;
			} else if (th[i].status == OTEL_THREAD_CTX_ESRCH) {
				exited++;
			} else {
				check_record(&th[i], 0);
				ok++;
			}
		}
	}
	otel_thread_ctx_inspect_close(insp);
	finish_target(&t);
	printf("churn: %lu rounds: %lu records read, %lu threads without context, "
	       "%lu exited while being read\n", rounds, ok, noctx, exited);
	ck_assert_msg(noctx > 0, "the main and the churning threads were never seen");
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A thread's state letter in /proc/PID/task/TID/stat ('?' if unreadable):
 * the field after the name in parentheses (the last ')'). */
static char thread_state(pid_t pid, pid_t tid)
{
	char path[64], line[512] = "", *close_paren;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	if ((f = fopen(path, "r")) == NULL)
		return '?';
	if (fgets(line, sizeof(line), f) == NULL)
		line[0] = '\0';
	fclose(f);
	close_paren = strrchr(line, ')');
	return close_paren != NULL && close_paren[1] == ' ' && close_paren[2] != '\0' ?
		       close_paren[2] : '?';
}

/* Waits up to `seconds` for the thread's state to be (want) or not to be
 * (!want) `state`; returns the last state seen. */
static char wait_state(pid_t pid, pid_t tid, char state, int want, double seconds)
{
	double end = now_s() + seconds;
	char c;

	while (((c = thread_state(pid, tid)) == state) != want && now_s() < end)
		usleep(200);
	return c;
}

static void on_alarm(int sig)
{
	static const char msg[] = "FAIL: a read did not return within 30 s (a wait that never ends)\n";

	(void)sig;
	(void)!write(2, msg, sizeof(msg) - 1);
	_exit(1);
}

/*
 * A profiler with a thread that reaps every child (waitpid(-1, __WALL)):
 * it collects the stop reports of the inspector's tracees too.  Every read
 * must still return, with the thread's record, and leave the thread
 * running ('t' or 'T' in /proc/TID/stat would be a thread left stopped).
 */
static pid_t reaper_target;
static int reaper_status = -1;
static unsigned long reaper_stolen;

static void *reaper(void *arg)
{
	(void)arg;
	for (;;) {
		int st;
		pid_t p = waitpid(-1, &st, __WALL);

		if (p < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p == reaper_target && (WIFEXITED(st) || WIFSIGNALED(st))) {
			__atomic_store_n(&reaper_status, st, __ATOMIC_RELEASE);
			break;
		}
		if (WIFSTOPPED(st))
			__atomic_fetch_add(&reaper_stolen, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void run_reaper(char **argv)
{
	unsigned long rounds = env_count("OTEL_TEST_INSPECT_ROUNDS", 300) / 10;
	struct otel_thread_ctx_inspect_thread th[64];
	otel_thread_ctx_inspector *insp;
	double worst = 0;
	struct target t;
	pthread_t r;
	int status;

	start_target(&t, argv, "values");
	insp = open_checked(&t, "-");
	reaper_target = t.pid;
	ck_assert_msg(pthread_create(&r, NULL, reaper, NULL) == 0, "pthread_create");
	signal(SIGALRM, on_alarm);
	alarm(30);
	for (unsigned long round = 0; round < rounds; round++) {
		double t0 = now_s();
		size_t n = 0;

		ck_assert_msg(otel_thread_ctx_inspect_threads(insp, th, 64, &n) == 0, "inspect_threads");
		if (now_s() - t0 > worst)
			worst = now_s() - t0;
		for (int i = 0; i < t.n; i++) {
			const struct otel_thread_ctx_inspect_thread *th_i = find(th, n, t.tid[i]);
			char state = thread_state(t.pid, t.tid[i]);

			ck_assert_msg(state != 't' && state != 'T',
			      "round %lu: thread %d left stopped (state %c, read: %s)", round, i, state,
			      otel_thread_ctx_strerror(th_i->status));
			if (i == EXPECTED_IDLE)
				ck_assert_msg(th_i->status == OTEL_THREAD_CTX_ENOCTX, "idle thread: %s",
				      otel_thread_ctx_strerror(th_i->status));
			else
				check_record(th_i, i);
		}
	}
	alarm(0);
	otel_thread_ctx_inspect_close(insp);
	close(t.in);
	ck_assert_msg(pthread_join(r, NULL) == 0, "pthread_join");
	status = __atomic_load_n(&reaper_status, __ATOMIC_ACQUIRE);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "the target did not end well after the inspection (status 0x%x)", status);
	close(t.out);
	printf("reaper: %lu rounds of %d threads read exactly, the slowest in %.3f s; the reaper "
	       "took %lu stop reports; no thread left stopped\n",
	       rounds, t.n, worst, __atomic_load_n(&reaper_stolen, __ATOMIC_RELAXED));
	ck_assert_msg(__atomic_load_n(&reaper_stolen, __ATOMIC_RELAXED) > 0,
	      "the reaper took no stop report: the case was not exercised");
}

/* TracerPid in /proc/PID/task/TID/status (-1 when it cannot be read). */
static long tracer_pid(pid_t pid, pid_t tid)
{
	char path[64], line[256];
	long tracer = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	f = fopen(path, "re");
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "TracerPid: %ld", &tracer) == 1)
			break;
	fclose(f);
	return tracer;
}

/*
 * A thread that cannot stop for the read (in vfork(), waiting for a child
 * that sleeps VFORK_CHILD_NS): the read gives up after
 * OTEL_THREAD_CTX_INSPECT_STOP_TIMEOUT_MS with ETIMEDOUT, and returns with
 * the thread detached (TracerPid 0 at once).  When vfork() returns, the
 * thread must not stop for the interrupt it never took ('t'), and a next
 * read, from the same inspector (pass 0) or after close() and a new one
 * (pass 1, as a watch does), must read it, not find it still attached
 * (EPERM, "denied").
 */
static void run_vfork(char **argv)
{
	struct otel_thread_ctx_inspect_thread th;
	otel_thread_ctx_inspector *insp;
	struct target t;
	pid_t tid;

	start_target(&t, argv, "vfork");
	insp = open_checked(&t, "-");
	tid = t.tid[0];
	for (int pass = 0; pass < 2; pass++) {
		double t0, took, end;
		long tracer;
		char c;
		int rc;

		/* The start of a vfork(): out of one (100 ms running), into
		 * the next. */
		c = wait_state(t.pid, tid, 'D', 0, 5);
		ck_assert_msg(c != 'D', "the vforking thread never left vfork() (state %c)", c);
		c = wait_state(t.pid, tid, 'D', 1, 5);
		ck_assert_msg(c == 'D', "the vforking thread never entered vfork() (state %c)", c);
		t0 = now_s();
		rc = otel_thread_ctx_inspect_thread(insp, tid, &th);
		took = now_s() - t0;
		tracer = tracer_pid(t.pid, tid);
		ck_assert_msg(rc == OTEL_THREAD_CTX_ETIMEDOUT && th.status == rc,
		      "a thread in vfork(): %s after %.3f s (state now %c)",
		      otel_thread_ctx_strerror(rc), took, thread_state(t.pid, tid));
		ck_assert_msg(took >= OTEL_THREAD_CTX_INSPECT_STOP_TIMEOUT_MS / 1000.0 * 0.99 &&
			      took < OTEL_THREAD_CTX_INSPECT_STOP_TIMEOUT_MS / 1000.0 + 0.5,
		      "ETIMEDOUT after %.3f s", took);
		ck_assert_msg(tracer == 0, "the read returned ETIMEDOUT with the thread still attached "
				   "(TracerPid %ld)", tracer);
		if (pass == 1) {
			otel_thread_ctx_inspect_close(insp);
			insp = open_checked(&t, "-");
		}
		/* The child ends, vfork() returns: the thread runs on, never
		 * in tracing stop, until it is in its next vfork(). */
		c = wait_state(t.pid, tid, 'D', 0, 5);
		ck_assert_msg(c != 'D', "the vforking thread never left vfork() (state %c)", c);
		end = now_s() + 0.05;
		while ((c = thread_state(t.pid, tid)) != 'D' && now_s() < end) {
			ck_assert_msg(c != 't', "the thread stopped for the interrupt after vfork() returned "
					"(state t, TracerPid %ld)", tracer_pid(t.pid, tid));
			usleep(200);
		}
		rc = otel_thread_ctx_inspect_thread(insp, tid, &th);
		ck_assert_msg(rc == OTEL_THREAD_CTX_ENOCTX || rc == OTEL_THREAD_CTX_ETIMEDOUT,
		      "the thread read again after vfork(): %s (EPERM: still attached)",
		      otel_thread_ctx_strerror(rc));
		tracer = tracer_pid(t.pid, tid);
		ck_assert_msg(tracer == 0, "a read left the thread attached (TracerPid %ld)", tracer);
		printf("a thread in vfork(): ETIMEDOUT after %.3f s, detached at once; read "
		       "again %s: %s\n", took, pass == 0 ? "by the same inspector" : "after close()",
		       otel_thread_ctx_strerror(rc));
	}
	otel_thread_ctx_inspect_close(insp);
	finish_target(&t);
}

/* Errors the inspector must report without harm. */

/* A kernel thread's id (PF_KTHREAD in /proc/PID/stat's flags), or 0. */
static pid_t kernel_thread(void)
{
	for (pid_t pid = 2; pid < 400; pid++) {
		char path[64], buf[1024], *p;
		unsigned long flags = 0;
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
		f = fopen(path, "r");
		if (f == NULL)
			continue;
		p = fgets(buf, sizeof(buf), f) != NULL ? strrchr(buf, ')') : NULL;
		fclose(f);
		/* ") S ppid pgrp session tty tpgid flags" */
		if (p != NULL && sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %lu", &flags) == 1 &&
		    (flags & 0x00200000ul) != 0)
			return pid;
	}
	return 0;
}
static void run_errors(char **argv)
{
	otel_thread_ctx_inspector *insp = NULL;
	struct otel_thread_ctx_inspect_thread th;
	struct target t;
	pid_t gone, plain;
	int status, rc;

	ck_assert_msg(otel_thread_ctx_inspect_open(1, NULL) == OTEL_THREAD_CTX_ENULL, "NULL out");
	ck_assert_msg(otel_thread_ctx_inspect_open(0, &insp) == OTEL_THREAD_CTX_ESRCH && insp == NULL,
	      "pid 0");
	/* A process that has exited (and been reaped). */
	gone = fork();
	ck_assert_msg(gone >= 0, "fork");
	if (gone == 0)
		_exit(0);
	ck_assert_msg(waitpid(gone, &status, 0) == gone, "waitpid");
	rc = otel_thread_ctx_inspect_open(gone, &insp);
	ck_assert_msg(rc == OTEL_THREAD_CTX_ESRCH && insp == NULL, "exited process: %d", rc);
	/* A process without the slot: a shell, once it has said so (then
	 * the exec is done). */
	{
		char *sh[] = { "/bin/sh", "-c", "echo ready 0:0; read x", NULL };
		struct target shell;

		start_target(&shell, sh, NULL);
		plain = shell.pid;
		rc = otel_thread_ctx_inspect_open(plain, &insp);
		ck_assert_msg(rc == OTEL_THREAD_CTX_ENOSLOT && insp == NULL,
		      "a process without the slot: %d", rc);
		close(shell.in);
		close(shell.out);
	}
	kill(plain, SIGKILL);
	waitpid(plain, &status, 0);
	/* A kernel thread (no memory at all): no slot, and its maps have a
	 * signature (both read differently where the kernel answers maps
	 * queries: src/inspect/remote.c). */
	{
		pid_t kt = kernel_thread();
		uint64_t sig = 1;

		if (kt > 0) {
			rc = otel_thread_ctx_inspect_open(kt, &insp);
			ck_assert_msg(rc == OTEL_THREAD_CTX_ENOSLOT && insp == NULL, "kernel thread %d: %d",
			      (int)kt, rc);
			ck_assert_msg(otel_thread_ctx_inspect_maps_signature(kt, &sig) == OTEL_THREAD_CTX_OK,
			      "kernel thread %d: maps signature", (int)kt);
		} else {
			printf("no kernel thread in this PID namespace: not tried\n");
		}
	}

	start_target(&t, argv, "values");
	insp = open_checked(&t, "-");
	/* A thread id that is not one of the target's. */
	ck_assert_msg(otel_thread_ctx_inspect_thread(insp, getpid(), &th) == OTEL_THREAD_CTX_ESRCH,
	      "a thread of another process");
	ck_assert_msg(otel_thread_ctx_inspect_thread(insp, t.tid[0], NULL) == OTEL_THREAD_CTX_ENULL, "NULL");
	ck_assert_msg(otel_thread_ctx_inspect_thread(insp, t.tid[0], &th) == 0, "thread 0");
	/* Its name, with and without the inspector, as /proc says it. */
	{
		char name[17] = "x", comm[64] = "", path[64];
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)t.pid, (int)t.tid[0]);
		f = fopen(path, "r");
		ck_assert_msg(f != NULL && fgets(comm, sizeof(comm), f) != NULL, "%s", path);
		fclose(f);
		comm[strcspn(comm, "\n")] = '\0';
		ck_assert_msg(comm[0] != '\0' && strcmp(th.name, comm) == 0, "thread 0's name: \"%s\", not \"%s\"",
		      th.name, comm);
		ck_assert_msg(otel_thread_ctx_inspect_thread_name(t.pid, t.tid[0], name) == OTEL_THREAD_CTX_OK &&
			      strcmp(name, comm) == 0,
		      "thread_name(): \"%s\", not \"%s\"", name, comm);
		ck_assert_msg(otel_thread_ctx_inspect_thread_name(t.pid, gone, name) == OTEL_THREAD_CTX_ESRCH &&
			      name[0] == '\0',
		      "thread_name() of a thread that is gone");
		ck_assert_msg(otel_thread_ctx_inspect_thread_name(t.pid, 0, name) == OTEL_THREAD_CTX_ESRCH &&
			      name[0] == '\0',
		      "thread_name() of tid 0");
		ck_assert_msg(otel_thread_ctx_inspect_thread_name(t.pid, t.tid[0], NULL) == OTEL_THREAD_CTX_ENULL,
		      "thread_name(NULL)");
	}
	/* Without the right to ptrace it: an unprivileged child tries. */
	if (geteuid() == 0) {
		pid_t child = fork();

		ck_assert_msg(child >= 0, "fork");
		if (child == 0) {
			otel_thread_ctx_inspector *other = NULL;
			int r;

			if (setgid(65534) != 0 || setuid(65534) != 0)
				_exit(3);
			r = otel_thread_ctx_inspect_open(t.pid, &other);
			_exit(r == OTEL_THREAD_CTX_EPERM && other == NULL ? 0 : 4);
		}
		ck_assert_msg(waitpid(child, &status, 0) == child && WIFEXITED(status),
		      "unprivileged child");
		ck_assert_msg(WEXITSTATUS(status) == 0, "an unprivileged reader did not get EPERM (%d)",
		      WEXITSTATUS(status));
		printf("an unprivileged reader gets EPERM\n");
	} else {
		printf("not root: the EPERM case is not tried here\n");
	}
	otel_thread_ctx_inspect_close(insp);
	finish_target(&t);
	otel_thread_ctx_inspect_close(NULL);
	ck_assert_msg(otel_thread_ctx_inspect_info(NULL) == NULL, "info(NULL)");
	ck_assert_msg(otel_thread_ctx_inspect_key_name(NULL, 0) == NULL, "key_name(NULL)");
	ck_assert_msg(strcmp(otel_thread_ctx_inspect_model_name(99), "unknown") == 0, "model name");
	printf("ESRCH, ENOSLOT, ENULL as documented; the target kept running\n");
}

/*
 * Signals sent to a thread while it is read are all delivered: a thread of
 * this program queues real-time signals (they queue, where two standard
 * ones of a kind would merge) to the first publishing thread of the target,
 * one every few microseconds, while this one reads that thread again and
 * again.  A read often finds a signal pending: the thread's first stop is
 * then that signal's, which the detach must hand back, or it is lost.  The
 * target counts what its handler ran.
 */
struct signal_sender {
	pid_t pid, tid;
	int done; /* atomic */
	unsigned long sent;
	int error;
};

static void *send_signals(void *arg)
{
	struct signal_sender *s = arg;

	while (!__atomic_load_n(&s->done, __ATOMIC_ACQUIRE)) {
		if (syscall(SYS_tgkill, s->pid, s->tid, SIGRTMIN) == 0)
			s->sent++;
		else if (errno != EAGAIN) /* the queue is full: send later */
			s->error = errno;
		usleep(20);
	}
	return NULL;
}

static void run_signals(char **argv, const char *model)
{
	unsigned long rounds = env_count("OTEL_TEST_INSPECT_SAMPLES", 5000) / 2, got = 0;
	struct otel_thread_ctx_inspect_thread th;
	struct signal_sender sender = { 0 };
	otel_thread_ctx_inspector *insp;
	pthread_t sending;
	struct target t;
	char line[64];

	start_target(&t, argv, "signals");
	ck_assert_msg(t.n == EXPECTED_THREADS, "%d threads reported", t.n);
	insp = open_checked(&t, model);
	sender.pid = t.pid;
	sender.tid = t.tid[0];
	ck_assert_msg(pthread_create(&sending, NULL, send_signals, &sender) == 0, "pthread_create");
	for (unsigned long r = 0; r < rounds; r++) {
		int rc = otel_thread_ctx_inspect_thread(insp, t.tid[0], &th);

		ck_assert_msg(rc == 0, "round %lu: %s", r, otel_thread_ctx_strerror(rc));
		check_record(&th, 0);
	}
	__atomic_store_n(&sender.done, 1, __ATOMIC_RELEASE);
	ck_assert_msg(pthread_join(sending, NULL) == 0, "pthread_join");
	ck_assert_msg(sender.error == 0, "tgkill: %s", strerror(sender.error));
	otel_thread_ctx_inspect_close(insp);
	end_target(&t, line, sizeof(line));
	ck_assert_msg(sscanf(line, "signals %lu", &got) == 1, "the target said \"%s\"", line);
	ck_assert_msg(sender.sent > 0 && got == sender.sent,
	      "%lu signals sent while the thread was read %lu times, %lu handled", sender.sent, rounds,
	      got);
	printf("%lu signals sent to a thread read %lu times: all handled\n", sender.sent, rounds);
}

/* A module that defines the slot but never reaches it: no relocation says
 * where it is, so the inspector must refuse it (EMODEL), harmlessly. */
static void run_unsupported(char **argv)
{
	otel_thread_ctx_inspector *insp = NULL;
	struct target t;
	int rc;

	start_target(&t, argv, "manual");
	rc = otel_thread_ctx_inspect_open(t.pid, &insp);
	ck_assert_msg(rc == OTEL_THREAD_CTX_EMODEL && insp == NULL, "open: %d (%s)", rc,
	      otel_thread_ctx_strerror(rc));
	finish_target(&t);
	printf("a slot without accesses: EMODEL; the target kept running\n");
}

int main(int argc, char **argv)
{
	const char *mode, *model;

	if (argc >= 3 && strcmp(argv[1], "--skip") == 0)
		skip("%s", argv[2]);
	if (argc < 4) {
		fprintf(stderr, "usage: inspect [--skip REASON] MODE MODEL TARGET [ARGS...]\n");
		return 2;
	}
	mode = argv[1];
	model = argv[2];
	if (strcmp(mode, "values") == 0 || strcmp(mode, "manual") == 0)
		run_values(argv + 3, model, mode);
	else if (strcmp(mode, "storm") == 0)
		run_storm(argv + 3, model);
	else if (strcmp(mode, "hostile") == 0)
		run_hostile(argv + 3);
	else if (strcmp(mode, "churn") == 0)
		run_churn(argv + 3, model);
	else if (strcmp(mode, "reaper") == 0)
		run_reaper(argv + 3);
	else if (strcmp(mode, "vfork") == 0)
		run_vfork(argv + 3);
	else if (strcmp(mode, "signals") == 0)
		run_signals(argv + 3, model);
	else if (strcmp(mode, "errors") == 0)
		run_errors(argv + 3);
	else if (strcmp(mode, "unsupported") == 0)
		run_unsupported(argv + 3);
	else
		ck_assert_msg(0, "unknown mode %s", mode);
	return 0;
}
