/* SPDX-License-Identifier: Apache-2.0 */
/* The public header stands alone and compiles as strict C11 with every
 * warning (built with -std=c11 -Wpedantic -Werror). */
#include <otel_thread_ctx.h>

int main(void)
{
	struct otel_thread_ctx_options o = OTEL_THREAD_CTX_OPTIONS_INIT;
	otel_thread_ctx *ctx = 0;
	int rc = otel_thread_ctx_create_with(&ctx, &o);

	if (rc == OTEL_THREAD_CTX_OK)
		rc = otel_thread_ctx_attach(ctx, ctx);
	if (rc == OTEL_THREAD_CTX_OK)
		rc = otel_thread_ctx_update(ctx);
	otel_thread_ctx_destroy(ctx);
	return rc == OTEL_THREAD_CTX_OK && otel_thread_ctx_v1 == 0 ? 0 : 1;
}
