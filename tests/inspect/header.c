/* SPDX-License-Identifier: Apache-2.0 */
/* The inspector's public header alone, as strict C11 with every warning. */
#include "otel_thread_ctx_inspect.h"

#include <string.h>

int main(void)
{
	struct otel_thread_ctx_inspect_thread t;
	struct otel_thread_ctx_inspect_module m;

	memset(&t, 0, sizeof(t));
	memset(&m, 0, sizeof(m));
	/* The error codes the header documents exist, and name themselves. */
	return otel_thread_ctx_inspect_info(NULL) == NULL && t.status == 0 && m.model == 0 &&
			       strcmp(otel_thread_ctx_inspect_strerror(OTEL_THREAD_CTX_ENOSLOT),
				      otel_thread_ctx_inspect_strerror(OTEL_THREAD_CTX_EMODEL)) != 0 ?
		       0 :
		       1;
}
