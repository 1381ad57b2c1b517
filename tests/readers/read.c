/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The C library as a profiler uses it, for hostile.py:
 *
 *   readers-read PID ROUNDS [INTERVAL_MS]
 *
 * Each round opens an inspector, prints "reading", reads every thread
 * (otel_thread_ctx_inspect_threads(), with room for all of them), prints
 * "round R total T read N" and one line "TID STATUS" per thread, and
 * closes it; ROUNDS 0 reads until killed.  Exit status 0, or 1 when a call
 * failed otherwise than by the process ending.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "otel_thread_ctx_inspect.h"

int main(int argc, char **argv)
{
	struct otel_thread_ctx_inspect_thread *th = NULL;
	unsigned long rounds;
	long interval_ms;
	size_t cap = 0;
	pid_t pid;

	if (argc < 3) {
		fprintf(stderr, "usage: readers-read PID ROUNDS [INTERVAL_MS]\n");
		return 2;
	}
	pid = (pid_t)atoi(argv[1]);
	rounds = strtoul(argv[2], NULL, 10);
	interval_ms = argc > 3 ? atol(argv[3]) : 0;
	for (unsigned long r = 0; rounds == 0 || r < rounds; r++) {
		otel_thread_ctx_inspector *insp;
		size_t total = 0;
		int rc = otel_thread_ctx_inspect_open(pid, &insp);

		if (rc != 0) {
			fprintf(stderr, "readers-read: open: %s\n", otel_thread_ctx_inspect_strerror(rc));
			return rc == OTEL_THREAD_CTX_ESRCH && r > 0 ? 0 : 1;
		}
		printf("reading\n");
		fflush(stdout);
		for (;;) {
			rc = otel_thread_ctx_inspect_threads(insp, th, cap, &total);
			if (rc != 0 || total <= cap)
				break;
			/* Room for all of them, and for some started meanwhile. */
			cap = total + 64;
			free(th);
			th = calloc(cap, sizeof(*th));
			if (th == NULL) {
				fprintf(stderr, "readers-read: out of memory\n");
				return 1;
			}
		}
		if (rc != 0) {
			otel_thread_ctx_inspect_close(insp);
			fprintf(stderr, "readers-read: threads: %s\n",
				otel_thread_ctx_inspect_strerror(rc));
			return rc == OTEL_THREAD_CTX_ESRCH ? 0 : 1;
		}
		printf("round %lu total %zu read %zu\n", r, total, total);
		for (size_t i = 0; i < total; i++)
			printf("%d %d\n", (int)th[i].tid, th[i].status);
		fflush(stdout);
		otel_thread_ctx_inspect_close(insp);
		if (interval_ms > 0) {
			struct timespec ts = { interval_ms / 1000, interval_ms % 1000 * 1000000 };

			nanosleep(&ts, NULL);
		}
	}
	free(th);
	return 0;
}
