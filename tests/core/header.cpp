// SPDX-License-Identifier: Apache-2.0
// The public header compiles as C++ and gives C linkage.
#include <otel_thread_ctx.h>

int main()
{
	otel_thread_ctx *ctx = nullptr;
	int rc = otel_thread_ctx_create(&ctx);

	static_assert(sizeof(otel_thread_ctx_record) == OTEL_THREAD_CTX_RECORD_SIZE, "size");
	if (rc == OTEL_THREAD_CTX_OK)
		rc = otel_thread_ctx_destroy(ctx);
	return rc == OTEL_THREAD_CTX_OK && otel_thread_ctx_v1 == nullptr ? 0 : 1;
}
