/* SPDX-License-Identifier: Apache-2.0 */
/* The process context header stands alone and compiles as strict C11 with
 * every warning (built with -std=c11 -Wpedantic -Werror). */
#include <otel_thread_ctx_process.h>

int main(void)
{
	struct otel_thread_ctx_process_attr a = { "service.name", OTEL_THREAD_CTX_PROCESS_STRING, "x", 0, 0, 0.0, 0 };
	struct otel_thread_ctx_process_info info;
	unsigned int idx = 0;
	int rc = otel_thread_ctx_key_register("k", &idx);

	if (rc == OTEL_THREAD_CTX_OK)
		rc = otel_thread_ctx_process_query(&info);
	return rc == OTEL_THREAD_CTX_OK && info.published == 0 && a.length == 0 &&
			       sizeof(struct otel_thread_ctx_process_header) == 32 ?
		       0 :
		       1;
}
