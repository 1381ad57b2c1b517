/* SPDX-License-Identifier: Apache-2.0 */
/* A caller written against the reference's API (reference/otel_process_ctx.h),
 * the way its README uses it. */
#include <string.h>

#include "callers.h"
#include "compat-util.h"
#include "otel_process_ctx.h"
#include "standin.h"

int reference_caller_run(const char *service)
{
	static const char *keys[] = { "http.route", NULL };
	const otel_thread_ctx_config_data config = { "tlsdesc_v1_dev", keys };
	const otel_process_ctx_data data = {
		.deployment_environment_name = "test",
		.service_instance_id = "00000000-0000-4000-8000-000000000001",
		.service_name = service,
		.service_version = "1.0.0",
		.telemetry_sdk_language = "c",
		.telemetry_sdk_version = "0.1.0",
		.telemetry_sdk_name = "compat-test",
		.resource_attributes = NULL,
		.extra_attributes = NULL,
		.thread_ctx_config = &config,
	};
	int mappings = otel_ctx_mappings();
	int published = standin_calls(STANDIN_PUBLISH);
	int dropped = standin_calls(STANDIN_DROP_CURRENT);
	otel_process_ctx_read_result read;
	otel_process_ctx_result r;

	r = otel_process_ctx_publish(&data);
	if (!r.success)
		return __LINE__;
	if (standin_calls(STANDIN_PUBLISH) != published + 1 ||
	    strcmp(standin_service_name(), service) != 0)
		return __LINE__;
	/* The stand-in maps nothing: had libotel-thread-ctx answered, a
	 * mapping would have appeared. */
	if (otel_ctx_mappings() != mappings)
		return __LINE__;
	read = otel_process_ctx_read();
	if (!read.success || read.data.service_name == NULL ||
	    strcmp(read.data.service_name, service) != 0)
		return __LINE__;
	if (!otel_process_ctx_read_drop(&read))
		return __LINE__;
	if (!otel_process_ctx_drop_current() || standin_calls(STANDIN_DROP_CURRENT) != dropped + 1)
		return __LINE__;
	if (otel_ctx_mappings() != mappings)
		return __LINE__;
	return 0;
}
