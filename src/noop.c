/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The no-op build (meson option noop; the default off Linux and on CPUs
 * without a TLSDESC access here): every function of the thread-context and
 * process-context API is there, so that a tracer built for several
 * platforms includes the header and links the library with no #ifdef of its
 * own, and every function that would publish returns
 * OTEL_THREAD_CTX_EUNSUPPORTED and changes nothing.  The slot is defined and
 * stays NULL, so the readers (src/reader.c) report nothing; the key registry
 * and the record decoders are plain C and work as everywhere.
 */
#include "internal.h"
#include "otel_thread_ctx_process.h"

OTEL_EXPORT __thread const struct otel_thread_ctx_record *otel_thread_ctx_v1;

#define UNSUPPORTED OTEL_THREAD_CTX_EUNSUPPORTED

/* Every stub below ignores its arguments: that is the whole point of it. */
#pragma GCC diagnostic ignored "-Wunused-parameter"

OTEL_EXPORT int otel_thread_ctx_create(otel_thread_ctx **ctx)
{
	return UNSUPPORTED;
}

OTEL_EXPORT int otel_thread_ctx_create_with(otel_thread_ctx **ctx,
					    const struct otel_thread_ctx_options *options)
{
	return UNSUPPORTED;
}

/* No context can exist: nothing to free. */
OTEL_EXPORT void otel_thread_ctx_destroy(otel_thread_ctx *ctx)
{
}

OTEL_EXPORT int otel_thread_ctx_set_ids(otel_thread_ctx *ctx, const uint8_t trace_id[16],
					const uint8_t span_id[8], uint8_t trace_flags)
{
	return UNSUPPORTED;
}

OTEL_EXPORT int otel_thread_ctx_set_span_id(otel_thread_ctx *ctx, const uint8_t span_id[8])
{
	return UNSUPPORTED;
}

OTEL_EXPORT int otel_thread_ctx_set_trace_flags(otel_thread_ctx *ctx, uint8_t trace_flags)
{
	return UNSUPPORTED;
}

OTEL_EXPORT int otel_thread_ctx_clear_ids(otel_thread_ctx *ctx)
{
	return UNSUPPORTED;
}

OTEL_EXPORT int otel_thread_ctx_set_attr(otel_thread_ctx *ctx, unsigned int key,
					 const void *value, size_t len)
{
	return UNSUPPORTED;
}

OTEL_EXPORT int otel_thread_ctx_remove_attr(otel_thread_ctx *ctx, unsigned int key)
{
	return UNSUPPORTED;
}

OTEL_EXPORT int otel_thread_ctx_clear_attrs(otel_thread_ctx *ctx)
{
	return UNSUPPORTED;
}

OTEL_EXPORT int otel_thread_ctx_clear(otel_thread_ctx *ctx)
{
	return UNSUPPORTED;
}

OTEL_EXPORT int otel_thread_ctx_set_attrs(otel_thread_ctx *ctx,
					  const struct otel_thread_ctx_attr *attrs, size_t n)
{
	return UNSUPPORTED;
}

OTEL_EXPORT int otel_thread_ctx_copy(otel_thread_ctx *dst, const otel_thread_ctx *src)
{
	return UNSUPPORTED;
}

OTEL_EXPORT int otel_thread_ctx_get(const otel_thread_ctx *ctx, struct otel_thread_ctx_record *out)
{
	return UNSUPPORTED;
}

OTEL_EXPORT int otel_thread_ctx_attach(const otel_thread_ctx *ctx, otel_thread_ctx *saved)
{
	return UNSUPPORTED;
}

OTEL_EXPORT int otel_thread_ctx_update(const otel_thread_ctx *ctx)
{
	return UNSUPPORTED;
}

OTEL_EXPORT int otel_thread_ctx_detach(otel_thread_ctx *saved)
{
	return UNSUPPORTED;
}

OTEL_EXPORT int otel_thread_ctx_save(otel_thread_ctx *saved)
{
	return UNSUPPORTED;
}

OTEL_EXPORT int otel_thread_ctx_update_span_id(const uint8_t span_id[8])
{
	return UNSUPPORTED;
}

OTEL_EXPORT int otel_thread_ctx_update_trace_flags(uint8_t trace_flags)
{
	return UNSUPPORTED;
}

OTEL_EXPORT int otel_thread_ctx_update_all(const uint8_t trace_id[16], const uint8_t span_id[8],
					   uint8_t trace_flags,
					   const struct otel_thread_ctx_attr *attrs, size_t n)
{
	return UNSUPPORTED;
}

OTEL_EXPORT int otel_thread_ctx_thread_records(unsigned int *in_use, unsigned int *limit)
{
	return UNSUPPORTED;
}

OTEL_EXPORT int otel_thread_ctx_self_check(struct otel_thread_ctx_self_check *result)
{
	static const char reason[] =
		"otel-thread-ctx was built without thread-context support for this platform "
		"(Linux on x86-64 or aarch64 only): nothing is published";

	if (result == NULL)
		return OTEL_THREAD_CTX_ENULL;
	*result = (struct otel_thread_ctx_self_check){ 0 };
	result->status = OTEL_THREAD_CTX_SELF_CHECK_NOT_EXPORTED;
	for (size_t i = 0; i < sizeof(reason); i++)
		result->reason[i] = reason[i];
	return UNSUPPORTED;
}

OTEL_EXPORT int otel_thread_ctx_process_publish(const struct otel_thread_ctx_process_attr *resource,
						size_t count)
{
	return UNSUPPORTED;
}

OTEL_EXPORT int otel_thread_ctx_process_publish_with(
	const struct otel_thread_ctx_process_attr *resource, size_t count,
	const struct otel_thread_ctx_process_options *options)
{
	return UNSUPPORTED;
}

OTEL_EXPORT int otel_thread_ctx_process_update(const struct otel_thread_ctx_process_attr *resource,
					       size_t count)
{
	return UNSUPPORTED;
}

OTEL_EXPORT int otel_thread_ctx_process_update_with(
	const struct otel_thread_ctx_process_attr *resource, size_t count,
	const struct otel_thread_ctx_process_options *options)
{
	return UNSUPPORTED;
}

OTEL_EXPORT int otel_thread_ctx_process_unpublish(void)
{
	return UNSUPPORTED;
}

OTEL_EXPORT int otel_thread_ctx_process_query(struct otel_thread_ctx_process_info *info)
{
	return UNSUPPORTED;
}

OTEL_EXPORT int otel_thread_ctx_process_copy(struct otel_thread_ctx_process_header *header,
					     void **payload)
{
	return UNSUPPORTED;
}
