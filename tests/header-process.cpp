// SPDX-License-Identifier: Apache-2.0
// The process context header compiles as C++ and gives C linkage.
#include <otel_process_ctx.h>

int main()
{
	otel_process_ctx_attr a = { "service.name", OTEL_PROCESS_CTX_STRING, "x", 0, 0, 0.0, 0 };
	otel_process_ctx_snapshot *snap = nullptr;
	unsigned int idx = 0;

	static_assert(sizeof(otel_process_ctx_header) == 32, "header size");
	if (otel_thread_ctx_key_register("k", &idx) != OTEL_THREAD_CTX_OK)
		return 1;
	if (otel_process_ctx_decode("", 0, &snap) != OTEL_THREAD_CTX_OK)
		return 1;
	otel_process_ctx_snapshot_free(snap);
	return a.type == OTEL_PROCESS_CTX_STRING ? 0 : 1;
}
