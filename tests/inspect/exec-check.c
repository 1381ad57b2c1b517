/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A process that exec()s or exits while the inspector reads it, again and
 * again (doc/inspector.md, "A process that changes under the read"): each
 * round forks a child that publishes a record on two threads and then,
 * after a delay that differs from round to round, exec()s sleep (a program
 * without the library) or exits; meanwhile the parent opens an inspector
 * on it and reads its threads, over and over, until the child is gone or
 * shows the new program.  Every outcome must be a documented one:
 *
 *   otel_thread_ctx_inspect_open():   OK (the image before the exec), ENOSLOT
 *                                     (the new image), ESRCH (gone), EAGAIN
 *                                     (it changed during the look)
 *   otel_thread_ctx_inspect_thread(): OK with exactly the record the thread
 *                                     published, ESRCH (the thread is gone),
 *                                     EAGAIN (the process exec()ed since open),
 *                                     ENOCTX (exit only: the thread's exit
 *                                     cleanup ran, its slot is NULL; and a
 *                                     thread of the runtime's own, which
 *                                     never published: ThreadSanitizer's)
 *
 * never EFAULT, a record of another image or anything else.
 *
 * leader-exit: the child's main thread calls pthread_exit() while the other
 * thread runs on.  Its pid has no memory any more (/proc/PID/maps reads
 * empty, process_vm_readv(PID) fails), yet the process lives: open() must
 * find its modules through the thread that runs (OK), read that thread's
 * record (OK) and say the leader exited (ESRCH).  The same leader without
 * memory is what an exit_group() shows for a moment, the other threads not
 * yet marked exiting (the exit mode's rare ENOSLOT before this was kept).
 *
 *   inspect-exec-check [--skip REASON] exec|exit|leader-exit [ROUNDS]
 *
 * ROUNDS: default 100, or OTEL_TEST_INSPECT_SAMPLES / 5.  Exits 77 with the
 * reason given by --skip (qemu-user: no ptrace).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "otel_thread_ctx.h"
#include "otel_thread_ctx_inspect.h"

static const uint8_t trace_id[16] = { 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
				      0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xf0, 0x01 };
static const uint8_t span_id[8] = { 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08 };

enum { OPEN_OK, OPEN_ENOSLOT, OPEN_ESRCH, OPEN_EAGAIN, READ_OK, READ_ESRCH, READ_EAGAIN,
       READ_ENOCTX, READ_OTHER, KINDS };
static const char *const kind_names[KINDS] = { "open ok",   "open ENOSLOT", "open ESRCH",
					       "open EAGAIN", "thread ok", "thread ESRCH",
					       "thread EAGAIN", "thread ENOCTX (exiting)",
					       "thread ENOCTX (not a publisher)" };
static unsigned long counts[KINDS];
static int failures;

/* leader-exit: the pipe on which the second thread says it published. */
static int leader_ready = -1;
/* exec, exit: the second thread has published (atomic), and its id. */
static int published;
static pid_t publisher_tid;

static void *publisher(void *arg)
{
	(void)arg;
	if (otel_thread_ctx_update_all(trace_id, span_id, 1, NULL, 0) != 0)
		_exit(3);
	publisher_tid = gettid();
	__atomic_store_n(&published, 1, __ATOMIC_RELEASE);
	if (leader_ready >= 0) {
		pid_t self = gettid();

		if (write(leader_ready, &self, sizeof(self)) != (ssize_t)sizeof(self))
			_exit(4);
	}
	for (;;)
		pause();
	return NULL;
}

/* The child: a record on two threads, then, after `spins` rounds of a
 * loop, exec() or exit. */
static void child(int ready, int exec_it, unsigned long spins)
{
	pthread_t t;
	volatile unsigned long n = 0;

	if (otel_thread_ctx_update_all(trace_id, span_id, 1, NULL, 0) != 0 ||
	    pthread_create(&t, NULL, publisher, NULL) != 0)
		_exit(3);
	/* Ready once the other thread has published: a thread read before
	 * that has a NULL slot (ENOCTX), which is not what this test is
	 * about.  (A fixed wait here was not always enough on a busy
	 * machine.) */
	while (!__atomic_load_n(&published, __ATOMIC_ACQUIRE))
		sched_yield();
	/* The two threads that publish are this one and the publisher; a
	 * runtime may have threads of its own (ThreadSanitizer's background
	 * thread), which publish nothing. */
	if (write(ready, &publisher_tid, sizeof(publisher_tid)) != (ssize_t)sizeof(publisher_tid))
		_exit(4);
	for (n = 0; n < spins; n++)
		;
	if (exec_it) {
		execlp("sleep", "sleep", "0.3", (char *)NULL);
		_exit(5);
	}
	_exit(0);
}

static void bad(const char *what, int rc)
{
	if (failures++ < 20)
		fprintf(stderr, "inspect-exec-check: %s: %d (%s)\n", what, rc,
			otel_thread_ctx_inspect_strerror(rc));
}

/* Is the child past its exec (sleeping in the new program), or exited? */
static int settled(pid_t pid)
{
	char path[64], buf[256], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (f == NULL)
		return 1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (p == NULL || p[1] != ' ')
		return 1;
	return p[2] == 'Z' || p[2] == 'X' || (strstr(buf, "(sleep)") != NULL && p[2] == 'S');
}

/* leader-exit: the child's main thread publishes, starts the second
 * thread, which says when it has published, and ends itself. */
static void leader_child(int ready)
{
	pthread_t t;

	leader_ready = ready;
	if (otel_thread_ctx_update_all(trace_id, span_id, 1, NULL, 0) != 0 ||
	    pthread_create(&t, NULL, publisher, NULL) != 0)
		_exit(3);
	pthread_exit(NULL);
}

/* Has task `tid` of `pid` no memory any more (its statm all zero), or is
 * it gone? */
static int without_memory(pid_t pid, pid_t tid)
{
	char path[64];
	unsigned long size = 1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/statm", (int)pid, (int)tid);
	f = fopen(path, "r");
	if (f == NULL)
		return 1;
	if (fscanf(f, "%lu", &size) != 1)
		size = 0;
	fclose(f);
	return size == 0;
}

static int leader_round(void)
{
	otel_thread_ctx_inspector *insp = NULL;
	struct otel_thread_ctx_inspect_thread th[16];
	size_t n = 0;
	int p[2], status, rc, seen_ok = 0, seen_leader = 0;
	pid_t pid, runner;

	if (pipe(p) != 0 || (pid = fork()) < 0)
		return 1;
	if (pid == 0) {
		close(p[0]);
		leader_child(p[1]);
	}
	close(p[1]);
	if (read(p[0], &runner, sizeof(runner)) != (ssize_t)sizeof(runner)) {
		fprintf(stderr, "inspect-exec-check: the child did not start\n");
		return 1;
	}
	close(p[0]);
	/* The leader's pthread_exit() follows its pthread_create(): wait for
	 * it to be without memory (10 s at most: a child that never gets
	 * there is a failure of the test, said so). */
	for (int i = 0; !without_memory(pid, pid); i++) {
		struct timespec ms = { 0, 1000000 };

		if (i == 10000) {
			fprintf(stderr, "inspect-exec-check: the leader of %d did not exit\n", (int)pid);
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return 1;
		}
		nanosleep(&ms, NULL);
	}
	rc = otel_thread_ctx_inspect_open(pid, &insp);
	if (rc != OTEL_THREAD_CTX_OK) {
		bad("open of a process whose leader exited", rc);
	} else {
		if (otel_thread_ctx_inspect_info(insp)->pid != pid)
			bad("open: info.pid is not the process's", 0);
		rc = otel_thread_ctx_inspect_threads(insp, th, 16, &n);
		if (rc != OTEL_THREAD_CTX_OK)
			bad("threads of a process whose leader exited", rc);
		/* A sanitizer's runtime may add threads of its own, which
		 * publish nothing: only the leader and the runner are judged. */
		for (size_t i = 0; rc == 0 && i < n && i < 16; i++) {
			if (th[i].tid == pid) {
				seen_leader = 1;
				if (th[i].status != OTEL_THREAD_CTX_ESRCH)
					bad("the exited leader's read", th[i].status);
			} else if (th[i].tid != runner) {
				if (th[i].status != OTEL_THREAD_CTX_ENOCTX)
					bad("a thread of the runtime's read", th[i].status);
			} else if (th[i].status != OTEL_THREAD_CTX_OK) {
				bad("the running thread's read", th[i].status);
			} else if (memcmp(th[i].record.trace_id, trace_id, 16) != 0 ||
				   memcmp(th[i].record.span_id, span_id, 8) != 0) {
				bad("the running thread's record is not the one published", 0);
			} else {
				seen_ok = 1;
			}
		}
		if (rc == 0 && (!seen_ok || !seen_leader))
			bad("the two threads were not both read", 0);
		otel_thread_ctx_inspect_close(insp);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return 0;
}

static void read_round(pid_t pid, pid_t publisher, int exec_it)
{
	int after = 0;

	/* Until the child is past its exec (or gone), and a few looks after
	 * that. */
	for (int look = 0; look < 100000 && after < 3; look++) {
		otel_thread_ctx_inspector *insp = NULL;
		struct otel_thread_ctx_inspect_thread th[8];
		size_t n = 0;
		int rc;

		if (settled(pid))
			after++;
		rc = otel_thread_ctx_inspect_open(pid, &insp);
		switch (rc) {
		case OTEL_THREAD_CTX_OK:
			counts[OPEN_OK]++;
			break;
		case OTEL_THREAD_CTX_ENOSLOT:
			counts[OPEN_ENOSLOT]++;
			/* Only the new program has no library. */
			if (!exec_it)
				bad("open of a process that never exec()s: ENOSLOT", rc);
			continue;
		case OTEL_THREAD_CTX_ESRCH:
			counts[OPEN_ESRCH]++;
			continue;
		case OTEL_THREAD_CTX_EAGAIN:
			counts[OPEN_EAGAIN]++;
			continue;
		default:
			bad("open", rc);
			continue;
		}
		if (otel_thread_ctx_inspect_threads(insp, th, 8, &n) != 0)
			n = 0; /* gone: ESRCH */
		for (size_t i = 0; i < n && i < 8; i++) {
			switch (th[i].status) {
			case OTEL_THREAD_CTX_OK:
				counts[READ_OK]++;
				if (memcmp(th[i].record.trace_id, trace_id, 16) != 0 ||
				    memcmp(th[i].record.span_id, span_id, 8) != 0 ||
				    th[i].record.trace_flags != 1 || th[i].attrs_data_size != 0)
					bad("a record that is not the one published", th[i].status);
				break;
			case OTEL_THREAD_CTX_ESRCH:
				counts[READ_ESRCH]++;
				break;
			case OTEL_THREAD_CTX_EAGAIN:
				counts[READ_EAGAIN]++;
				break;
			case OTEL_THREAD_CTX_ENOCTX:
				/* A thread that never published (the runtime's own:
				 * ThreadSanitizer starts one in the child), or one of
				 * an exiting process past the library's exit cleanup:
				 * its slot is NULL (no exec() runs that cleanup). */
				if (th[i].tid != pid && th[i].tid != publisher) {
					counts[READ_OTHER]++;
					break;
				}
				counts[READ_ENOCTX]++;
				if (exec_it)
					bad("thread read of a process that exec()s: ENOCTX", th[i].status);
				break;
			default:
				bad("thread read", th[i].status);
			}
		}
		otel_thread_ctx_inspect_close(insp);
	}
}

int main(int argc, char **argv)
{
	int a = 1, exec_it, rounds = 100;
	const char *env = getenv("OTEL_TEST_INSPECT_SAMPLES");

	if (argc > 2 && strcmp(argv[1], "--skip") == 0) {
		printf("skip: %s\n", argv[2]);
		return 77;
	}
	/* Under valgrind the forked child runs on valgrind's emulated CPU: its
	 * threads' thread pointer, which the inspector reads from the kernel,
	 * is valgrind's own, not the program's, so no reader can find its
	 * slot from outside (the child of a plain run is what this checks). */
	if (getenv("LD_PRELOAD") != NULL && strstr(getenv("LD_PRELOAD"), "vgpreload") != NULL) {
		printf("skip: under valgrind the forked target runs on valgrind's CPU, whose "
		       "thread pointer no outside reader sees\n");
		return 77;
	}
	if (a >= argc || (strcmp(argv[a], "exec") != 0 && strcmp(argv[a], "exit") != 0 &&
			  strcmp(argv[a], "leader-exit") != 0)) {
		fprintf(stderr, "usage: inspect-exec-check [--skip REASON] exec|exit|leader-exit [ROUNDS]\n");
		return 2;
	}
	if (strcmp(argv[a], "leader-exit") == 0) {
		rounds = a + 1 < argc ? atoi(argv[a + 1]) : 5;
		for (int r = 0; r < rounds; r++)
			if (leader_round() != 0)
				return 1;
		if (failures) {
			fprintf(stderr, "inspect-exec-check: FAILED (%d reads of a process whose leader "
				"exited)\n", failures);
			return 1;
		}
		printf("leader-exit, %d rounds: ok\n", rounds);
		return 0;
	}
	exec_it = strcmp(argv[a], "exec") == 0;
	if (env != NULL && atoi(env) >= 5)
		rounds = atoi(env) / 5;
	if (a + 1 < argc)
		rounds = atoi(argv[a + 1]);
	for (int r = 0; r < rounds; r++) {
		int p[2], status;
		pid_t pid, publisher;

		if (pipe(p) != 0)
			return 1;
		pid = fork();
		if (pid < 0)
			return 1;
		if (pid == 0) {
			close(p[0]);
			/* From no delay to about a millisecond: the exec or exit
			 * falls at another step of the reads each round. */
			child(p[1], exec_it, (unsigned long)(r % 20) * 50000ul);
		}
		close(p[1]);
		if (read(p[0], &publisher, sizeof(publisher)) != (ssize_t)sizeof(publisher)) {
			fprintf(stderr, "inspect-exec-check: the child did not start\n");
			return 1;
		}
		close(p[0]);
		read_round(pid, publisher, exec_it);
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	printf("%s, %d rounds:", exec_it ? "exec" : "exit", rounds);
	for (int k = 0; k < KINDS; k++)
		printf(" %s %lu%s", kind_names[k], counts[k], k + 1 < KINDS ? "," : "\n");
	if (failures) {
		fprintf(stderr, "inspect-exec-check: FAILED (%d outcomes that are not documented)\n",
			failures);
		return 1;
	}
	printf("ok\n");
	return 0;
}
