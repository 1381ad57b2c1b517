/* SPDX-License-Identifier: Apache-2.0 */
/*
 * include/otel_thread_ctx_compat.h with OTEL_PROCESS_CTX_NOOP defined
 * nonzero or empty (meson.build compiles it both ways): the header alone
 * gives the reference's no-op functions, and this program links no library
 * of the project (a call to the real functions would not link).
 */
#include <string.h>

#include "check-lite.h"
#include "otel_thread_ctx_compat.h"

int main(void)
{
	const otel_process_ctx_data data = {
		"env", "id", "service", "1.0", "c", "0.1.0", "compat-test", NULL, NULL, NULL,
	};
	otel_process_ctx_result r = otel_process_ctx_publish(&data);
	otel_process_ctx_read_result rr;

	ck_assert_msg(!r.success && r.error_message != NULL &&
		      strstr(r.error_message, "OTEL_PROCESS_CTX_NOOP") != NULL,
	      "publish fails with a static message: %s", r.error_message);
	ck_assert_msg(!otel_process_ctx_publish(NULL).success, "publish(NULL) fails too");
	ck_assert_msg(otel_process_ctx_drop_current(), "drop_current succeeds");
	rr = otel_process_ctx_read();
	ck_assert_msg(!rr.success && rr.error_message != NULL, "read fails");
	ck_assert_msg(rr.data.service_name == NULL && rr.data.resource_attributes == NULL &&
		      rr.data.extra_attributes == NULL && rr.data.thread_ctx_config == NULL,
	      "read returns empty data");
	ck_assert_msg(!otel_process_ctx_read_drop(&rr), "read_drop fails");
	ck_assert_msg(!otel_process_ctx_read_drop(NULL), "read_drop(NULL) fails");
	return 0;
}
