// SPDX-License-Identifier: Apache-2.0
// include/otel_thread_ctx_compat.h compiles as C++ (with -Werror) and links
// against libotel-thread-ctx-compat.
#include <cstdio>

#include "otel_thread_ctx_compat.h"

int main()
{
	static const char *keys[] = { "http.route", nullptr };
	otel_thread_ctx_config_data config = { "tlsdesc_v1_dev", keys };
	otel_process_ctx_data data = { "env", "id", "service", "1.0", "cpp", "0.1.0",
				       "compat-test", nullptr, nullptr, &config };
	static_assert(OTEL_PROCESS_CTX_DATA_ENTRIES == 10, "ten pointers");
	otel_process_ctx_result r = otel_process_ctx_publish(&data);
	if (!r.success) {
		std::fprintf(stderr, "publish: %s\n", r.error_message);
		return 1;
	}
	otel_process_ctx_read_result rr = otel_process_ctx_read();
	bool ok = rr.success && otel_process_ctx_read_drop(&rr);
	return ok && otel_process_ctx_drop_current() ? 0 : 1;
}
