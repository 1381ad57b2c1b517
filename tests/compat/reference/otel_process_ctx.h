/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A stand-in for the header of the OpenTelemetry reference process-context
 * implementation for C/C++ (otel_process_ctx.h, the generation with
 * resource_attributes, extra_attributes and thread_ctx_config): its types
 * and its four exported functions, declared here from its documentation so
 * that the tests can put the reference's names in one process with this
 * project's libraries (standin.c).  Test-only: never installed.
 */
#ifndef TESTS_COMPAT_REFERENCE_OTEL_PROCESS_CTX_H
#define TESTS_COMPAT_REFERENCE_OTEL_PROCESS_CTX_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
	const char *schema_version;
	const char **attribute_key_map;
} otel_thread_ctx_config_data;

typedef struct {
	const char *deployment_environment_name;
	const char *service_instance_id;
	const char *service_name;
	const char *service_version;
	const char *telemetry_sdk_language;
	const char *telemetry_sdk_version;
	const char *telemetry_sdk_name;
	const char **resource_attributes;
	const char **extra_attributes;
	const otel_thread_ctx_config_data *thread_ctx_config;
} otel_process_ctx_data;

typedef struct {
	bool success;
	const char *error_message;
} otel_process_ctx_result;

otel_process_ctx_result otel_process_ctx_publish(const otel_process_ctx_data *data);
bool otel_process_ctx_drop_current(void);

typedef struct {
	bool success;
	const char *error_message;
	otel_process_ctx_data data;
} otel_process_ctx_read_result;

otel_process_ctx_read_result otel_process_ctx_read(void);
bool otel_process_ctx_read_drop(otel_process_ctx_read_result *result);

#ifdef __cplusplus
}
#endif

#endif
