/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The project's inspector names a thread's attributes with the key map a
 * process published through libotel-thread-ctx-compat: the library
 * (otel_thread_ctx_inspect_open() and the rest) and the command
 * (otel-thread-ctx-inspect --json), both reading inspect-target from
 * outside with ptrace.
 *
 *   test-compat-inspect [--skip REASON] TARGET INSPECT_COMMAND
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check-lite.h"
#include "otel_thread_ctx_inspect.h"

static const char *const names[2] = { "http.route", "user.id" };
static const char *const values[2] = { "/users/:id", "42" };

/* Starts argv[0] with a pipe to its stdin (returned in *in) and its stdout
 * read into out[0 .. cap) until it closes or, with stop_at, until a line
 * equal to stop_at arrives. */
static pid_t start(char **argv, int *in, char *out, size_t cap, const char *stop_at)
{
	int to[2], from[2];
	size_t len = 0;
	pid_t pid;

	ck_assert_msg(pipe(to) == 0 && pipe(from) == 0, "pipe");
	fflush(NULL);
	pid = fork();
	ck_assert_msg(pid >= 0, "fork");
	if (pid == 0) {
		dup2(to[0], 0);
		dup2(from[1], 1);
		close(to[0]), close(to[1]), close(from[0]), close(from[1]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	for (;;) {
		ssize_t n = read(from[0], out + len, cap - 1 - len);

		if (n <= 0)
			break;
		len += (size_t)n;
		out[len] = '\0';
		if (stop_at != NULL && strstr(out, stop_at) != NULL)
			break;
		ck_assert_msg(len < cap - 1, "too much output");
	}
	out[len] = '\0';
	close(from[0]);
	*in = to[1];
	return pid;
}

static void check_library(pid_t pid)
{
	const struct otel_thread_ctx_inspect_info *info;
	struct otel_thread_ctx_inspect_thread th;
	struct otel_thread_ctx_attr_iter it;
	struct otel_thread_ctx_attr a;
	otel_thread_ctx_inspector *insp;
	unsigned int seen = 0;
	int rc = otel_thread_ctx_inspect_open(pid, &insp);

	ck_assert_msg(rc == OTEL_THREAD_CTX_OK, "inspect_open: %s", otel_thread_ctx_inspect_strerror(rc));
	info = otel_thread_ctx_inspect_info(insp);
	ck_assert_msg(info->process_ctx_status == OTEL_THREAD_CTX_OK, "process context: %s",
	      otel_thread_ctx_inspect_strerror(info->process_ctx_status));
	ck_assert_msg(info->process_ctx->key_count == 2, "%zu keys", info->process_ctx->key_count);
	ck_assert_msg(otel_thread_ctx_inspect_key_count(insp) == 2, "key count");
	for (unsigned int i = 0; i < 2; i++)
		ck_assert_msg(strcmp(otel_thread_ctx_inspect_key_name(insp, i), names[i]) == 0,
		      "key %u is %s", i, otel_thread_ctx_inspect_key_name(insp, i));
	rc = otel_thread_ctx_inspect_thread(insp, pid, &th);
	ck_assert_msg(rc == OTEL_THREAD_CTX_OK, "inspect_thread: %s", otel_thread_ctx_inspect_strerror(rc));
	otel_thread_ctx_attr_iter_init_map(&it, &th.record, otel_thread_ctx_inspect_key_count(insp));
	while (otel_thread_ctx_attr_iter_next(&it, &a) == 0) {
		ck_assert_msg(a.key < 2, "key index %u", a.key);
		ck_assert_msg(strcmp(otel_thread_ctx_inspect_key_name(insp, a.key), names[a.key]) == 0 &&
			      a.len == strlen(values[a.key]) &&
			      memcmp(a.value, values[a.key], a.len) == 0,
		      "attribute %u", a.key);
		seen |= 1u << a.key;
	}
	ck_assert_msg(seen == 3 && it.unmapped == 0, "both attributes, named");
	otel_thread_ctx_inspect_close(insp);
	printf("ok: the inspector library names http.route and user.id\n");
}

static void check_command(const char *command, pid_t target)
{
	static char out[65536];
	char pid[16], *argv[] = { (char *)command, (char *)"--json", pid, NULL };
	int in, status;
	pid_t p;

	snprintf(pid, sizeof(pid), "%d", (int)target);
	p = start(argv, &in, out, sizeof(out), NULL);
	close(in);
	ck_assert_msg(waitpid(p, &status, 0) == p, "waitpid");
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s --json failed (%#x):\n%s", command,
	      status, out);
	for (unsigned int i = 0; i < 2; i++) {
		char want[128];

		snprintf(want, sizeof(want), "{\"index\":%u,\"key\":\"%s\",\"value\":\"%s\"}", i,
			 names[i], values[i]);
		ck_assert_msg(strstr(out, want) != NULL, "%s not in:\n%s", want, out);
	}
	printf("ok: otel-thread-ctx-inspect --json names them too\n");
}

int main(int argc, char **argv)
{
	char ready[256], *target_argv[2];
	int in, status;
	pid_t target;

	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc > 2 && strcmp(argv[1], "--skip") == 0)
		skip("%s", argv[2]);
	ck_assert_msg(argc == 3, "usage: test-compat-inspect [--skip REASON] TARGET INSPECT_COMMAND");
	target_argv[0] = argv[1];
	target_argv[1] = NULL;
	target = start(target_argv, &in, ready, sizeof(ready), "ready\n");
	ck_assert_msg(strcmp(ready, "ready\n") == 0, "the target did not start: \"%s\"", ready);
	check_library(target);
	check_command(argv[2], target);
	close(in);
	ck_assert_msg(waitpid(target, &status, 0) == target, "waitpid");
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the target failed (%#x)", status);
	return 0;
}
