/* SPDX-License-Identifier: Apache-2.0 */
/* A caller written against this project's process-context API. */
#include <string.h>

#include "callers.h"
#include "compat-util.h"
#include "otel_thread_ctx_inspect.h"

int native_publish(const char *service)
{
	struct otel_thread_ctx_process_attr a;

	memset(&a, 0, sizeof(a));
	a.key = "service.name";
	a.type = OTEL_THREAD_CTX_PROCESS_STRING;
	a.string = service;
	if (otel_thread_ctx_process_publish(&a, 1) != OTEL_THREAD_CTX_OK)
		return __LINE__;
	if (otel_ctx_mappings() != 1)
		return __LINE__;
	return 0;
}

int native_check(const char *service)
{
	struct otel_thread_ctx_inspect_process_snapshot *s = NULL;
	int found = 0;

	if (otel_ctx_mappings() != 1)
		return __LINE__;
	if (otel_thread_ctx_inspect_process_read(0, 0, &s) != OTEL_THREAD_CTX_OK)
		return __LINE__;
	for (size_t i = 0; i < s->resource_count; i++) {
		if (strcmp(s->resource[i].key, "service.name") == 0 &&
		    s->resource[i].type == OTEL_THREAD_CTX_PROCESS_STRING &&
		    strcmp(s->resource[i].string, service) == 0)
			found++;
	}
	otel_thread_ctx_inspect_process_snapshot_free(s);
	return found == 1 ? 0 : __LINE__;
}

int native_unpublish(void)
{
	if (otel_thread_ctx_process_unpublish() != OTEL_THREAD_CTX_OK)
		return __LINE__;
	return otel_ctx_mappings() == 0 ? 0 : __LINE__;
}
