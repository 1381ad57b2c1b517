/* SPDX-License-Identifier: Apache-2.0 */
/* A plugin built from the static library, for fast-path.c: the API under
 * names of its own, and the offset of its thread-pointer shortcut. */
#include <stdint.h>

#include "otel_thread_ctx.h"

#define EXPORT __attribute__((visibility("default")))

intptr_t otel__thread_state_offset(void);

EXPORT int plugin_create(otel_thread_ctx **ctx)
{
	return otel_thread_ctx_create(ctx);
}

EXPORT void plugin_destroy(otel_thread_ctx *ctx)
{
	otel_thread_ctx_destroy(ctx);
}

EXPORT int plugin_set_ids(otel_thread_ctx *ctx, const uint8_t *trace, const uint8_t *span,
			  uint8_t flags)
{
	return otel_thread_ctx_set_ids(ctx, trace, span, flags);
}

EXPORT int plugin_attach(const otel_thread_ctx *ctx, otel_thread_ctx *saved)
{
	return otel_thread_ctx_attach(ctx, saved);
}

EXPORT int plugin_update_span_id(const uint8_t *span)
{
	return otel_thread_ctx_update_span_id(span);
}

EXPORT int plugin_detach(otel_thread_ctx *saved)
{
	return otel_thread_ctx_detach(saved);
}

/* Reads the plugin's own slot: the reader of the plugin's copy. */
EXPORT int plugin_read(struct otel_thread_ctx_record *out)
{
	return otel_thread_ctx_read(out);
}

EXPORT intptr_t plugin_offset(void)
{
	return otel__thread_state_offset();
}
