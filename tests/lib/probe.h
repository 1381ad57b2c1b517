/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Probes of what this machine can do, for the tests that skip (77) where it
 * cannot.  A skip must never stand for a failure of the library, so:
 *
 * - the probe's child is made without the library: probe_fork() is the bare
 *   clone() system call, which runs no fork handler (fork() runs the
 *   library's, pthread_atfork());
 * - a probe child killed by a signal crashed, which is not "this machine
 *   cannot": probe_wait() fails the program then, as it does when the child
 *   cannot be made or waited for.
 *
 * Needs _GNU_SOURCE (syscall()).
 */
#ifndef OTEL_TESTS_PROBE_H
#define OTEL_TESTS_PROBE_H

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/*
 * A child process, made like fork() but without running any fork handler:
 * 0 in the child, the child's id in the parent, -1 on failure.  The child
 * may make system calls (through libc's wrappers too) and must end with
 * _exit(); it runs no atexit() handler and flushes no stdio buffer.
 */
static inline pid_t probe_fork(void)
{
	/* Only the flags: the other arguments are 0, which reads the same in
	 * the x86-64 and the aarch64 argument orders. */
	return (pid_t)syscall(SYS_clone, (long)SIGCHLD, 0L, 0L, 0L, 0L);
}

/*
 * Waits for the probe child `pid` (from probe_fork(), -1 if that failed) and
 * returns its exit status: what the probe says, 0 conventionally for "this
 * machine can".  Ends the program with 1, saying why, if the child could not
 * be made or waited for, or was killed by a signal.
 */
static inline int probe_wait(pid_t pid, const char *what)
{
	int status;

	if (pid < 0) {
		fprintf(stderr, "FAIL: %s: cannot make the probe's child: %s\n", what,
			strerror(errno));
		exit(1);
	}
	while (waitpid(pid, &status, 0) != pid) {
		if (errno != EINTR) {
			fprintf(stderr, "FAIL: %s: waitpid: %s\n", what, strerror(errno));
			exit(1);
		}
	}
	if (!WIFEXITED(status)) {
		fprintf(stderr, "FAIL: %s: the probe's child was killed by signal %d: a crash, "
			"not something this machine cannot do\n", what,
			WIFSIGNALED(status) ? WTERMSIG(status) : 0);
		exit(1);
	}
	return WEXITSTATUS(status);
}

#endif /* OTEL_TESTS_PROBE_H */
