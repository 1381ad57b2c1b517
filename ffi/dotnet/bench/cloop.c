/* SPDX-License-Identifier: Apache-2.0 */
/* The calls the .NET benchmark makes through P/Invoke, made from C against
 * the same shared library: nanoseconds per call, best of 5 runs. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdint.h>
#include <time.h>

#include <otel_thread_ctx.h>

#define N 2000000

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(void)
{
	static const uint8_t trace[16] = { 0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6,
					   0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36 };
	uint8_t span[8] = { 0, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7 };
	otel_thread_ctx *ctx, *saved;
	double best_attach = 1e30, best_span = 1e30, best_all = 1e30;

	if (otel_thread_ctx_create(&ctx) || otel_thread_ctx_create(&saved) ||
	    otel_thread_ctx_set_ids(ctx, trace, span, 1))
		return 1;
	for (int run = 0; run < 5; run++) {
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
		otel_thread_ctx_detach(NULL);
		if ((t1 - t0) / N < best_attach)
			best_attach = (t1 - t0) / N;
		if ((t2 - t1) / N < best_span)
			best_span = (t2 - t1) / N;
		if ((t3 - t2) / N < best_all)
			best_all = (t3 - t2) / N;
	}
	printf("C  attach(ctx, saved) + update(saved): %6.1f ns\n", best_attach);
	printf("C  update_span_id:                     %6.1f ns\n", best_span);
	printf("C  update_all (no attributes):         %6.1f ns\n", best_all);
	otel_thread_ctx_destroy(ctx);
	otel_thread_ctx_destroy(saved);
	return 0;
}
