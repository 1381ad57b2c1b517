/* SPDX-License-Identifier: Apache-2.0 */
/* A call chain down to the library's TLS access, for tests/unwind/unwind.py:
 * a debugger stopped inside the TLSDESC resolver must unwind back to main. */
#include <otel_thread_ctx.h>

__attribute__((noinline)) int probe_inner(otel_thread_ctx *ctx)
{
	otel_thread_ctx *prev;

	return otel_thread_ctx_attach(ctx, &prev);
}

__attribute__((noinline)) int probe_outer(otel_thread_ctx *ctx)
{
	return probe_inner(ctx) + 1;
}

int main(void)
{
	otel_thread_ctx *ctx;

	if (otel_thread_ctx_create(&ctx) != 0)
		return 2;
	return probe_outer(ctx) == 1 ? 0 : 1;
}
