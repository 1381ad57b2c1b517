// SPDX-License-Identifier: Apache-2.0
// The process context headers (publisher, and the reader in the inspect
// header) compile as C++ and give C linkage.
#include <otel_thread_ctx_inspect.h>

int main()
{
	otel_thread_ctx_process_attr a = { "service.name", OTEL_THREAD_CTX_PROCESS_STRING, "x", 0, 0, 0.0, 0 };
	otel_thread_ctx_inspect_process_snapshot *snap = nullptr;
	unsigned int idx = 0;

	static_assert(sizeof(otel_thread_ctx_process_header) == 32, "header size");
	if (otel_thread_ctx_key_register("k", &idx) != OTEL_THREAD_CTX_OK)
		return 1;
	if (otel_thread_ctx_inspect_process_decode("", 0, &snap) != OTEL_THREAD_CTX_OK)
		return 1;
	otel_thread_ctx_inspect_process_snapshot_free(snap);
	return a.type == OTEL_THREAD_CTX_PROCESS_STRING ? 0 : 1;
}
