// SPDX-License-Identifier: Apache-2.0
// The public header compiles as C++ and gives C linkage.
#include <otel_thread_ctx.h>

int main()
{
	otel_thread_ctx_options o = OTEL_THREAD_CTX_OPTIONS_INIT;
	otel_thread_ctx *ctx = nullptr;
	int rc = otel_thread_ctx_create_with(&ctx, &o);

	static_assert(sizeof(otel_thread_ctx_record) == OTEL_THREAD_CTX_RECORD_SIZE, "size");
	if (rc == OTEL_THREAD_CTX_OK)
		rc = otel_thread_ctx_attach(ctx, ctx);
	if (rc == OTEL_THREAD_CTX_OK)
		rc = otel_thread_ctx_update(ctx);
	otel_thread_ctx_destroy(ctx);
	return rc == OTEL_THREAD_CTX_OK && otel_thread_ctx_v1 == nullptr ? 0 : 1;
}
