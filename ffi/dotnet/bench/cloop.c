/* SPDX-License-Identifier: Apache-2.0 */
/* The calls the .NET benchmark makes through P/Invoke, made from C against
 * the same shared library, measured as bench/bench.c measures: on a pinned
 * CPU, the median of repetitions of a fixed number of iterations, the
 * repetitions of all rows interleaved so that a change of load affects them
 * alike.  Prints "C <row> <median ns> <low> <high>" lines (run.py bench
 * reads them): the median, and the 6th and 16th of the 21 sorted figures,
 * which hold the median between them with a confidence of 97 %. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <otel_thread_ctx.h>

#define N 200000
#define REPS 21
#define ROWS 4

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Pin to the first CPU this process may use, as bench.c does. */
static void pin(void)
{
	cpu_set_t all, one;
	if (sched_getaffinity(0, sizeof(all), &all) != 0)
		return;
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (CPU_ISSET(c, &all)) {
			CPU_ZERO(&one);
			CPU_SET(c, &one);
			sched_setaffinity(0, sizeof(one), &one);
			return;
		}
	}
}

int main(void)
{
	static const uint8_t trace[16] = { 0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6,
					   0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36 };
	static const char *const names[ROWS] = {
		"attach(ctx, saved) + update(saved)",
		"update_span_id",
		"update_all (no attributes)",
		"update_all (one attribute)",
	};
	static const char route[] = "GET /users/{id}";
	unsigned int key;
	uint8_t span[8] = { 0, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7 };
	otel_thread_ctx *ctx, *saved;
	double t[ROWS][REPS];

	pin();
	if (otel_thread_ctx_create(&ctx) || otel_thread_ctx_create(&saved) ||
	    otel_thread_ctx_set_ids(ctx, trace, span, 1) ||
	    otel_thread_ctx_key_register("http.route", &key))
		return 1;
	struct otel_thread_ctx_attr attr = { .key = key, .len = sizeof(route) - 1, .value = (const uint8_t *)route };
	for (int rep = -1; rep < REPS; rep++) { /* -1: a warm-up */
		double t0 = now();
		for (int i = 0; i < N; i++) {
			otel_thread_ctx_attach(ctx, saved);
			otel_thread_ctx_update(saved);
		}
		double t1 = now();
		otel_thread_ctx_update(ctx);
		for (int i = 0; i < N; i++) {
			span[7] = (uint8_t)(i | 1);
			otel_thread_ctx_update_span_id(span);
		}
		double t2 = now();
		for (int i = 0; i < N; i++) {
			span[7] = (uint8_t)(i | 1);
			otel_thread_ctx_update_all(trace, span, 1, NULL, 0);
		}
		double t3 = now();
		for (int i = 0; i < N; i++) {
			span[7] = (uint8_t)(i | 1);
			otel_thread_ctx_update_all(trace, span, 1, &attr, 1);
		}
		double t4 = now();
		otel_thread_ctx_detach(NULL);
		if (rep >= 0) {
			t[0][rep] = (t1 - t0) / N;
			t[1][rep] = (t2 - t1) / N;
			t[2][rep] = (t3 - t2) / N;
			t[3][rep] = (t4 - t3) / N;
		}
	}
	for (int r = 0; r < ROWS; r++) {
		qsort(t[r], REPS, sizeof(double), cmp);
		printf("C %s %.2f %.2f %.2f\n", names[r], t[r][REPS / 2], t[r][5], t[r][15]);
	}
	otel_thread_ctx_destroy(ctx);
	otel_thread_ctx_destroy(saved);
	return 0;
}
