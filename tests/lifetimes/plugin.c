/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A tracer shipped as a plugin: a shared object that links the static
 * library (with the flags `pkg-config --static` gives), loaded and unloaded
 * by its host (tests/lifetimes/plugin-host.c).
 */
#include <stdint.h>

#include "otel_thread_ctx.h"

#define PLUGIN_API __attribute__((visibility("default")))

/* What a tracer does for one request on the calling thread; 0 or the first
 * error. */
PLUGIN_API int plugin_request(unsigned int n)
{
	uint8_t trace[16] = { 0x77, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
	uint8_t span[8] = { 0x66, 1, 2, 3, 4, 5, 6, 7 };
	otel_thread_ctx *ctx, *prev;
	int rc;

	span[7] = (uint8_t)n;
	if ((rc = otel_thread_ctx_create(&ctx)) != 0)
		return rc;
	if ((rc = otel_thread_ctx_set_ids(ctx, trace, span, 1)) != 0 ||
	    (rc = otel_thread_ctx_update_attach(ctx, &prev)) != 0)
		goto out;
	span[6] = 0xee;
	if ((rc = otel_thread_ctx_update_span_id(ctx, span)) != 0)
		goto out;
	if (otel_thread_ctx_v1 == NULL || otel_thread_ctx_v1->span_id[6] != 0xee)
		rc = -1000;
	otel_thread_ctx_detach(&prev);
out:
	otel_thread_ctx_destroy(ctx);
	return rc;
}
