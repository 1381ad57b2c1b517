/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A tracer shipped as a plugin: a shared object that links the static
 * library (with the flags `pkg-config --static` gives), loaded and unloaded
 * by its host (tests/lifetimes/plugin-host.c).
 */
#include <stdint.h>
#include <string.h>

#include "otel_thread_ctx.h"

#define PLUGIN_API __attribute__((visibility("default")))

/* What the calling thread publishes has span byte 6 == `mark`. */
static int shows(uint8_t mark)
{
	return otel_thread_ctx_v1 != NULL && otel_thread_ctx_v1->span_id[6] == mark;
}

/*
 * What a tracer does for one request on the calling thread: a request
 * published with update_all, a child span, the sampling decision, then a
 * scope on a context (attach with `saved`, put back with update), and the
 * thread detached at the end.  0 or the first error (-1000 and below: the
 * slot did not show what was published).
 */
PLUGIN_API int plugin_request(unsigned int n)
{
	uint8_t trace[16] = { 0x77, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
	uint8_t span[8] = { 0x66, 1, 2, 3, 4, 5, 6, 7 };
	struct otel_thread_ctx_attr attr = { 3, 6, (const uint8_t *)"plugin" };
	otel_thread_ctx *ctx = NULL, *saved = NULL;
	int rc;

	span[7] = (uint8_t)n;
	span[6] = 0x01;
	if ((rc = otel_thread_ctx_update_all(trace, span, 0, &attr, 1)) != 0)
		return rc;
	if (!shows(0x01))
		return -1000;
	span[6] = 0x02;
	if ((rc = otel_thread_ctx_update_span_id(span)) != 0 ||
	    (rc = otel_thread_ctx_update_trace_flags(1)) != 0)
		return rc;
	if (!shows(0x02) || otel_thread_ctx_v1->trace_flags != 1)
		return -1001;
	if ((rc = otel_thread_ctx_create(&ctx)) != 0 || (rc = otel_thread_ctx_create(&saved)) != 0)
		goto out;
	span[6] = 0xee;
	if ((rc = otel_thread_ctx_set_ids(ctx, trace, span, 1)) != 0 ||
	    (rc = otel_thread_ctx_attach(ctx, saved)) != 0)
		goto out;
	if (!shows(0xee)) {
		rc = -1002;
		goto out;
	}
	if ((rc = otel_thread_ctx_update(saved)) != 0)
		goto out;
	if (!shows(0x02) || otel_thread_ctx_v1->attrs_data_size != 8) {
		rc = -1003;
		goto out;
	}
	/* Every thread detaches before the plugin is unloaded. */
	if ((rc = otel_thread_ctx_detach(NULL)) == 0 && otel_thread_ctx_v1 != NULL)
		rc = -1004;
out:
	otel_thread_ctx_destroy(saved);
	otel_thread_ctx_destroy(ctx);
	return rc;
}
