/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otel-thread-ctx-compat: the process-context API of the OpenTelemetry
 * reference implementation for C/C++ (the otel_process_ctx_* functions, in
 * the generation with resource_attributes, extra_attributes and
 * thread_ctx_config), served by libotel-thread-ctx.
 *
 * A tracer written against the reference includes this header instead of
 * otel_process_ctx.h and links -lotel-thread-ctx-compat (pkg-config
 * otel-thread-ctx-compat); nothing else in its code changes.  The types, the
 * functions and their arguments are the reference's.  What is published is
 * what otel_thread_ctx_process_publish() publishes (otel_thread_ctx_process.h,
 * doc/process-context.md): one OTEL_CTX mapping per process, shared with the
 * project's own API and with the key registry, so that the thread records
 * written with otel_thread_ctx.h and the key map published here agree.
 * doc/compat.md says where the behaviour differs from the reference and
 * what happens when the reference itself is in the same process.
 *
 * Build flags, as in the reference:
 *   OTEL_PROCESS_CTX_NOOP    defined nonzero (or empty), or any platform but
 *                            Linux: the functions below are static inline
 *                            no-ops (publish fails with a static message,
 *                            drop_current returns true, read fails,
 *                            read_drop returns false); nothing is linked.
 *   OTEL_PROCESS_CTX_NO_READ defined: the read API is left out.
 *
 * Include either this header or the reference's, never both: they define
 * the same types.
 *
 * Return values follow the reference API, not the rule of the project's
 * other headers (0 or a negative code): publish returns a result struct
 * (success flag and a static error message), drop_current and read_drop
 * return true on success, read returns a result struct.
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

/*
 * The thread-context configuration (OTEP 4947), published in
 * ProcessContext.attributes.  schema_version: "tlsdesc_v1_dev" or "tls_v1"
 * (libotel-thread-ctx publishes no other).  attribute_key_map: the key
 * names of indices 0, 1, ..., NULL-terminated, or NULL; the names are
 * registered in libotel-thread-ctx's key registry (otel_thread_ctx.h), which
 * must not already hold other names at those indices.
 */
typedef struct {
	const char *schema_version;
	const char **attribute_key_map;
} otel_thread_ctx_config_data;

/*
 * What otel_process_ctx_publish() publishes.  The strings are copied; they
 * need to live only for the call.  The seven fields are NUL-terminated
 * UTF-8, not NULL, possibly empty, published as the resource attributes
 * deployment.environment.name, service.instance.id, service.name,
 * service.version, telemetry.sdk.language, telemetry.sdk.version and
 * telemetry.sdk.name, in that order.
 */
typedef struct {
	const char *deployment_environment_name;
	const char *service_instance_id;
	const char *service_name;
	const char *service_version;
	const char *telemetry_sdk_language;
	const char *telemetry_sdk_version;
	const char *telemetry_sdk_name;
	/* More resource attributes: key, value, key, value, ..., NULL; or
	 * NULL for none.  Keys must differ from each other and from the seven
	 * above. */
	const char **resource_attributes;
	/* ProcessContext.attributes, in the same layout, or NULL: published
	 * after libotel-thread-ctx's own threadlocal.* entries.  Keys must be
	 * non-empty, distinct, valid UTF-8 and not start with "threadlocal."
	 * (doc/compat.md). */
	const char **extra_attributes;
	/* NULL: the schema version "tlsdesc_v1_dev" and the key registry as
	 * it is are published (libotel-thread-ctx always publishes both). */
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
/* What otel_process_ctx_read() returns.  On success every string of data
 * and the arrays holding them are malloc()ed; otel_process_ctx_read_drop()
 * frees them. */
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

/*
 * Publishes the process context, or replaces the one this process
 * publishes, in place, with libotel-thread-ctx's update protocol (same
 * mapping, new payload, new timestamp), a change of schema version
 * included: readers never see it withdrawn.  In a child made by fork(),
 * which inherits no context, publishes a new one.  On failure,
 * error_message says why and the context stays as it was; key names
 * registered before a late failure (memory, size, mapping) stay
 * registered, since the registry never forgets a name.
 * Thread-safe (libotel-thread-ctx's lock), not async-signal-safe.
 */
otel_process_ctx_result otel_process_ctx_publish(const otel_process_ctx_data *data);

/* Withdraws the context (otel_thread_ctx_process_unpublish()); true also
 * when nothing was published.  Registered key names stay. */
bool otel_process_ctx_drop_current(void);

#ifndef OTEL_PROCESS_CTX_NO_READ
/*
 * Decodes the context libotel-thread-ctx publishes in this process (taken
 * with otel_thread_ctx_process_copy(), decoded by the decoder the project's
 * readers use, compiled into this library).
 * Fails when nothing is published, or when the published context is not one
 * this API can express (a missing one of the seven fields, a value that is
 * not a string: possible when it was published with the project's own
 * API).  On success, resource_attributes and extra_attributes are arrays
 * (possibly just NULL), and thread_ctx_config is set when the context has
 * a schema version or a key map.
 */
otel_process_ctx_read_result otel_process_ctx_read(void);

/* Frees what a successful otel_process_ctx_read() returned and marks the
 * result as dropped; false (and nothing done) for NULL or a failed
 * result. */
bool otel_process_ctx_read_drop(otel_process_ctx_read_result *result);
#endif

#endif /* OTEL_PROCESS_CTX_NOOP */

#ifdef __cplusplus
}
#endif

#endif /* OTEL_THREAD_CTX_COMPAT_H */
