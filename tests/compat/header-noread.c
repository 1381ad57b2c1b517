/* SPDX-License-Identifier: Apache-2.0 */
/*
 * include/otel_thread_ctx_compat.h with OTEL_PROCESS_CTX_NO_READ defined
 * (and OTEL_PROCESS_CTX_NOOP defined 0, which keeps the real functions):
 * the read API is not declared, so this file may use its names for
 * something else; publish and drop_current are the library's.
 */
#include "check-lite.h"
#include "otel_thread_ctx_compat.h"

/* Each of these would clash with a declaration of the read API. */
typedef int otel_process_ctx_read_result;
static int otel_process_ctx_read(void)
{
	return 7;
}
static int otel_process_ctx_read_drop(int x)
{
	return x;
}

int main(void)
{
	const otel_process_ctx_data data = {
		"env", "id", "service", "1.0", "c", "0.1.0", "compat-test", NULL, NULL, NULL,
	};
	otel_process_ctx_read_result mine = otel_process_ctx_read();
	otel_process_ctx_result r = otel_process_ctx_publish(&data);

	ck_assert_msg(r.success, "publish: %s", r.error_message);
	ck_assert_msg(otel_process_ctx_drop_current(), "drop_current");
	ck_assert_msg(otel_process_ctx_read_drop(mine) == 7, "this file's own functions");
	return 0;
}
