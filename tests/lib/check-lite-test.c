/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check-lite.h against itself: every assertion kind fails when it should
 * (status 1, "FAIL file:line:" and the values on stderr, nothing run after
 * it), passes when it should, a failure on another thread ends the process
 * too, and a suite runs its tests in order, CK_RUN_CASE and CK_RUN_SUITE
 * choosing.  The parent judges the children with plain code: a harness that
 * never fails would pass its own test otherwise.
 *
 * Each child is a fork() of this program (no exec: the same under
 * qemu-user and valgrind).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check-lite.h"

static int order[8], ran;

START_TEST(first)
{
	order[ran++] = 1;
	ck_assert_int_eq(1 + 1, 2);
}
END_TEST

START_TEST(second)
{
	order[ran++] = 2;
	ck_assert_str_eq("a", "a");
}
END_TEST

START_TEST(third)
{
	order[ran++] = 3;
	ck_assert_ptr_null(NULL);
}
END_TEST

static void *fail_on_thread(void *arg)
{
	(void)arg;
	ck_assert_msg(0, "from another thread");
	return NULL;
}

static int child(const char *mode)
{
	static const unsigned char a[3] = { 1, 2, 3 }, b[3] = { 1, 2, 4 };
	int x = 7;

	if (strcmp(mode, "pass") == 0) {
		ck_assert(1);
		ck_assert_msg(2 > 1, "never");
		ck_assert_int_eq(-3, -3);
		ck_assert_int_ne(-3, 3);
		ck_assert_int_lt(-3, 3);
		ck_assert_int_le(3, 3);
		ck_assert_int_gt(3, -3);
		ck_assert_int_ge(3, 3);
		ck_assert_uint_eq(5u, 5u);
		ck_assert_uint_ne(5u, 6u);
		ck_assert_uint_lt(5u, 6u);
		ck_assert_uint_le(6u, 6u);
		ck_assert_uint_gt(7u, 6u);
		ck_assert_uint_ge(7u, 7u);
		ck_assert_ptr_eq(&x, &x);
		ck_assert_ptr_ne(&x, NULL);
		ck_assert_ptr_nonnull(&x);
		ck_assert_str_eq("route", "route");
		ck_assert_str_ne("route", "method");
		ck_assert_mem_eq(a, a, sizeof(a));
		puts("all passed");
		return 0;
	}
	if (strcmp(mode, "suite") == 0) {
		Suite *s = suite_create("lite");
		TCase *c1 = tcase_create("c1"), *c2 = tcase_create("c2");
		SRunner *sr;

		tcase_add_test(c1, first);
		tcase_add_test(c1, second);
		tcase_add_test(c2, third);
		suite_add_tcase(s, c1);
		suite_add_tcase(s, c2);
		sr = srunner_create(s);
		srunner_run_all(sr, CK_ENV);
		printf("order");
		for (int i = 0; i < ran; i++)
			printf(" %d", order[i]);
		putchar('\n');
		srunner_free(sr);
		return 0;
	}
	if (strcmp(mode, "int") == 0)
		ck_assert_int_eq(x - 10, 4);
	else if (strcmp(mode, "uint") == 0)
		ck_assert_uint_ge(3u, 4u);
	else if (strcmp(mode, "str") == 0)
		ck_assert_str_eq("GET /a", "GET /b");
	else if (strcmp(mode, "strnull") == 0)
		ck_assert_str_ne(NULL, "x");
	else if (strcmp(mode, "ptr") == 0)
		ck_assert_ptr_null(&x);
	else if (strcmp(mode, "mem") == 0)
		ck_assert_mem_eq(a, b, sizeof(a));
	else if (strcmp(mode, "msg") == 0)
		ck_assert_msg(x == 8, "x is %d", x);
	else if (strcmp(mode, "abort") == 0)
		ck_abort_msg("stopped at %d", x);
	else if (strcmp(mode, "thread") == 0) {
		pthread_t t;

		if (pthread_create(&t, NULL, fail_on_thread, NULL) != 0)
			return 3;
		pthread_join(t, NULL);
	} else if (strcmp(mode, "skip") == 0)
		skip("no %s here", "kernel");
	else
		return 3;
	puts("ran past the failure");
	return 0;
}

/* Runs child(mode) in a child process with `env` (NAME=VALUE or NULL) set;
 * its status, and its stdout and stderr in out (NUL-terminated). */
static int run(const char *mode, const char *env, char *out, size_t size)
{
	int fd[2], status;
	size_t n = 0;
	ssize_t got;
	pid_t pid;

	if (pipe(fd) != 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		dup2(fd[1], 1);
		dup2(fd[1], 2);
		close(fd[0]);
		if (env != NULL)
			putenv((char *)env);
		fflush(NULL);
		exit(child(mode));
	}
	close(fd[1]);
	while (n + 1 < size && (got = read(fd[0], out + n, size - n - 1)) > 0)
		n += (size_t)got;
	out[n] = '\0';
	close(fd[0]);
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int failures;

static void expect(const char *mode, const char *env, int status, const char *const *texts,
		   size_t ntexts)
{
	char out[4096];
	int got = run(mode, env, out, sizeof(out));
	int ok = got == status;

	for (size_t i = 0; ok && i < ntexts; i++)
		ok = strstr(out, texts[i]) != NULL;
	if (ok && status == 1)
		ok = strstr(out, "ran past the failure") == NULL;
	printf("%-8s %-20s status %d: %s\n", mode, env != NULL ? env : "", got, ok ? "ok" : "WRONG");
	if (!ok) {
		printf("  expected status %d and every one of:", status);
		for (size_t i = 0; i < ntexts; i++)
			printf(" [%s]", texts[i]);
		printf("\n  output:\n%s\n", out);
		failures++;
	}
}

#define EXPECT(mode, env, status, ...)                                                   \
	do {                                                                             \
		static const char *const texts_[] = { __VA_ARGS__ };                   \
		expect((mode), (env), (status), texts_,                                  \
		       sizeof(texts_) / sizeof(texts_[0]));                              \
	} while (0)

int main(void)
{
	/* The children's output goes to the pipe, not to a copy of this
	 * process's buffer. */
	setvbuf(stdout, NULL, _IONBF, 0);
	EXPECT("pass", NULL, 0, "all passed");
	EXPECT("int", NULL, 1, "FAIL ", "check-lite-test.c:", "x - 10 == 4", "-3");
	EXPECT("uint", NULL, 1, "FAIL ", "3u >= 4u");
	EXPECT("str", NULL, 1, "FAIL ", "\"GET /a\"", "\"GET /b\"");
	EXPECT("strnull", NULL, 1, "FAIL ", "(null)");
	EXPECT("ptr", NULL, 1, "FAIL ", "Assertion '&x == ");
	EXPECT("mem", NULL, 1, "FAIL ", "3 bytes differ");
	EXPECT("msg", NULL, 1, "FAIL ", "x is 7");
	EXPECT("abort", NULL, 1, "FAIL ", "stopped at 7");
	EXPECT("thread", NULL, 1, "FAIL ", "from another thread");
	EXPECT("skip", NULL, 77, "SKIP: no kernel here");
	EXPECT("suite", NULL, 0, "lite: 3 tests passed", "order 1 2 3");
	EXPECT("suite", "CK_RUN_CASE=c2", 0, "lite: 1 tests passed", "order 3\n");
	EXPECT("suite", "CK_RUN_SUITE=other", 0, "order\n");
	printf("%d of 14 children as expected\n", 14 - failures);
	return failures != 0;
}
