/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libotel-thread-ctx-compat: the process-context API of the OpenTelemetry
 * reference implementation for C/C++ (otel_process_ctx_*), served by
 * libotel-thread-ctx.  Include it instead of otel_process_ctx.h, never with
 * it, and link -lotel-thread-ctx-compat.  Reference: man 3
 * otel_process_ctx_publish, man 7 otel-thread-ctx; differences from the
 * reference: doc/compat.md.
 *
 * OTEL_PROCESS_CTX_NOOP defined nonzero (or empty), or a platform other than
 * Linux, makes the functions static inline no-ops; OTEL_PROCESS_CTX_NO_READ
 * leaves out the read API.  Return values are the reference's (a result
 * struct or a bool), not the project's error codes.
 */
#ifndef OTEL_THREAD_CTX_COMPAT_H
#define OTEL_THREAD_CTX_COMPAT_H

#include <stdbool.h>

/* The version of the reference API this header implements. */
#define OTEL_PROCESS_CTX_VERSION_MAJOR 0
#define OTEL_PROCESS_CTX_VERSION_MINOR 1
#define OTEL_PROCESS_CTX_VERSION_PATCH 0
#define OTEL_PROCESS_CTX_VERSION_STRING "0.1.0"

#ifdef __cplusplus
extern "C" {
#endif

/* The thread-context configuration (OTEP 4947); attribute_key_map is
 * registered in libotel-thread-ctx's key registry, at the same indices. */
typedef struct {
	const char *schema_version;     /* "tlsdesc_v1_dev" or "tls_v1" */
	const char **attribute_key_map; /* names of index 0, 1, ..., NULL */
} otel_thread_ctx_config_data;

/* What otel_process_ctx_publish() publishes (copied).  The seven strings
 * are UTF-8, not NULL, published as the resource attributes of their names. */
typedef struct {
	const char *deployment_environment_name;
	const char *service_instance_id;
	const char *service_name;
	const char *service_version;
	const char *telemetry_sdk_language;
	const char *telemetry_sdk_version;
	const char *telemetry_sdk_name;
	/* More resource attributes: key, value, ..., NULL; or NULL. */
	const char **resource_attributes;
	/* ProcessContext.attributes, the same way; keys not "threadlocal.*". */
	const char **extra_attributes;
	/* NULL: "tlsdesc_v1_dev" and the key registry as it is. */
	const otel_thread_ctx_config_data *thread_ctx_config;
} otel_process_ctx_data;

/* How many pointers otel_process_ctx_data holds. */
#define OTEL_PROCESS_CTX_DATA_ENTRIES sizeof(otel_process_ctx_data) / sizeof(char *)

/* success, or an error_message: a static string, never freed. */
typedef struct {
	bool success;
	const char *error_message;
} otel_process_ctx_result;

#ifndef OTEL_PROCESS_CTX_NO_READ
/* What otel_process_ctx_read() returns; otel_process_ctx_read_drop() frees
 * its data. */
typedef struct {
	bool success;
	const char *error_message;
	otel_process_ctx_data data;
} otel_process_ctx_read_result;
#endif

#if (defined(OTEL_PROCESS_CTX_NOOP) &&                                          \
     ((OTEL_PROCESS_CTX_NOOP + 0) != 0 || (0 - OTEL_PROCESS_CTX_NOOP - 1) == 1)) || \
	!defined(__linux__)

#define OTEL_THREAD_CTX_COMPAT_NOOP_MESSAGE                                     \
	"OTEL_PROCESS_CTX_NOOP: this build publishes no process context"

static inline otel_process_ctx_result otel_process_ctx_publish(const otel_process_ctx_data *data)
{
	otel_process_ctx_result r;

	(void)data;
	r.success = false;
	r.error_message = OTEL_THREAD_CTX_COMPAT_NOOP_MESSAGE;
	return r;
}

static inline bool otel_process_ctx_drop_current(void)
{
	return true;
}

#ifndef OTEL_PROCESS_CTX_NO_READ
static inline otel_process_ctx_read_result otel_process_ctx_read(void)
{
	otel_process_ctx_read_result r;
	const char *none = 0;

	r.success = false;
	r.error_message = OTEL_THREAD_CTX_COMPAT_NOOP_MESSAGE;
	r.data.deployment_environment_name = none;
	r.data.service_instance_id = none;
	r.data.service_name = none;
	r.data.service_version = none;
	r.data.telemetry_sdk_language = none;
	r.data.telemetry_sdk_version = none;
	r.data.telemetry_sdk_name = none;
	r.data.resource_attributes = 0;
	r.data.extra_attributes = 0;
	r.data.thread_ctx_config = 0;
	return r;
}

static inline bool otel_process_ctx_read_drop(otel_process_ctx_read_result *result)
{
	(void)result;
	return false;
}
#endif

#else

/* Publishes the process context, or replaces it in place.  On failure,
 * error_message says why and the context is unchanged.  Thread-safe, not
 * async-signal-safe. */
otel_process_ctx_result otel_process_ctx_publish(const otel_process_ctx_data *data);

/* Withdraws the context; true, also when nothing was published. */
bool otel_process_ctx_drop_current(void);

#ifndef OTEL_PROCESS_CTX_NO_READ
/* Reads back the context this process publishes; fails when nothing is
 * published or this API cannot express it. */
otel_process_ctx_read_result otel_process_ctx_read(void);

/* Frees what a successful otel_process_ctx_read() returned; false (and
 * nothing done) for NULL or a failed result. */
bool otel_process_ctx_read_drop(otel_process_ctx_read_result *result);
#endif

#endif /* OTEL_PROCESS_CTX_NOOP */

#ifdef __cplusplus
}
#endif

#endif /* OTEL_THREAD_CTX_COMPAT_H */
