/* SPDX-License-Identifier: Apache-2.0 */
/* The process context header stands alone and compiles as strict C11 with
 * every warning (built with -std=c11 -Wpedantic -Werror). */
#include <otel_process_ctx.h>

int main(void)
{
	struct otel_process_ctx_attr a = { "service.name", OTEL_PROCESS_CTX_STRING, "x", 0, 0, 0.0, 0 };
	struct otel_process_ctx_info info;
	unsigned int idx = 0;
	int rc = otel_thread_ctx_key_register("k", &idx);

	if (rc == OTEL_THREAD_CTX_OK)
		rc = otel_process_ctx_query(&info);
	return rc == OTEL_THREAD_CTX_OK && info.published == 0 && a.length == 0 &&
			       sizeof(struct otel_process_ctx_header) == 32 ?
		       0 :
		       1;
}
