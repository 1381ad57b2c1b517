/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The no-op build (include/otel_thread_ctx.h, "Platforms"): every function
 * is there; those that would create, change or publish return
 * OTEL_THREAD_CTX_EUNSUPPORTED and change nothing; the slot stays NULL and
 * the readers report nothing; the key registry and the decoders work.
 */
#include <string.h>

#include "check-lite.h"
#include "otel_thread_ctx.h"
#include "otel_thread_ctx_process.h"

#define UNSUPPORTED(call)                                                       \
	do {                                                                    \
		int rc_ = (call);                                               \
		ck_assert_msg(rc_ == OTEL_THREAD_CTX_EUNSUPPORTED, "%s returned %d (%s)", #call, rc_, \
		      otel_thread_ctx_strerror(rc_));                           \
	} while (0)

int main(void)
{
	static const uint8_t trace[16] = { 1 }, span[8] = { 2 };
	struct otel_thread_ctx_options o = OTEL_THREAD_CTX_OPTIONS_INIT;
	struct otel_thread_ctx_record rec, before;
	struct otel_thread_ctx_attr a = { 1, 2, (const uint8_t *)"ok" };
	struct otel_thread_ctx_self_check sc;
	struct otel_thread_ctx_process_info info;
	struct otel_thread_ctx_process_header hdr;
	void *payload = NULL;
	otel_thread_ctx *ctx = NULL;
	unsigned int key;

	UNSUPPORTED(otel_thread_ctx_create(&ctx));
	ck_assert_msg(ctx == NULL, "create stored a context");
	UNSUPPORTED(otel_thread_ctx_create_with(&ctx, &o));
	ck_assert_msg(ctx == NULL, "create_with stored a context");
	otel_thread_ctx_destroy(NULL);
	UNSUPPORTED(otel_thread_ctx_set_ids(ctx, trace, span, 1));
	UNSUPPORTED(otel_thread_ctx_set_span_id(ctx, span));
	UNSUPPORTED(otel_thread_ctx_set_trace_flags(ctx, 1));
	UNSUPPORTED(otel_thread_ctx_clear_ids(ctx));
	UNSUPPORTED(otel_thread_ctx_set_attr(ctx, 1, "v", 1));
	UNSUPPORTED(otel_thread_ctx_remove_attr(ctx, 1));
	UNSUPPORTED(otel_thread_ctx_clear_attrs(ctx));
	UNSUPPORTED(otel_thread_ctx_clear(ctx));
	UNSUPPORTED(otel_thread_ctx_set_attrs(ctx, &a, 1));
	UNSUPPORTED(otel_thread_ctx_copy(ctx, ctx));
	UNSUPPORTED(otel_thread_ctx_get(ctx, &rec));
	UNSUPPORTED(otel_thread_ctx_attach(ctx, NULL));
	UNSUPPORTED(otel_thread_ctx_update(ctx));
	UNSUPPORTED(otel_thread_ctx_detach(NULL));
	UNSUPPORTED(otel_thread_ctx_save(ctx));
	UNSUPPORTED(otel_thread_ctx_update_span_id(span));
	UNSUPPORTED(otel_thread_ctx_update_trace_flags(1));
	UNSUPPORTED(otel_thread_ctx_update_all(trace, span, 1, &a, 1));
	UNSUPPORTED(otel_thread_ctx_process_publish(NULL, 0));
	UNSUPPORTED(otel_thread_ctx_process_publish_with(NULL, 0, NULL));
	UNSUPPORTED(otel_thread_ctx_process_update(NULL, 0));
	UNSUPPORTED(otel_thread_ctx_process_update_with(NULL, 0, NULL));
	UNSUPPORTED(otel_thread_ctx_process_unpublish());
	UNSUPPORTED(otel_thread_ctx_process_query(&info));
	UNSUPPORTED(otel_thread_ctx_process_copy(&hdr, &payload));
	ck_assert_msg(payload == NULL, "process_copy stored a payload");
	UNSUPPORTED(otel_thread_ctx_self_check(&sc));
	ck_assert_msg(sc.status == OTEL_THREAD_CTX_SELF_CHECK_NOT_EXPORTED && sc.reason[0] != '\0',
	      "self-check status %d", sc.status);

	/* Nothing was published: the slot and the reader say so. */
	ck_assert_msg(otel_thread_ctx_v1 == NULL, "the slot is not NULL");
	memset(&rec, 0xab, sizeof(rec));
	before = rec;
	ck_assert_msg(otel_thread_ctx_read(&rec) == OTEL_THREAD_CTX_ENOCTX, "read found a record");
	ck_assert_msg(memcmp(&rec, &before, sizeof(rec)) == 0, "read wrote into its output");

	/* What is plain C works as everywhere. */
	ck_assert_msg(otel_thread_ctx_key_register("http.route", &key) == 0 && key == 0,
	      "the key registry does not work");
	memset(&rec, 0, sizeof(rec));
	rec.valid = 1;
	ck_assert_msg(otel_thread_ctx_record_decode(&rec, 28, &before) == 0, "decode refused a record");
	ck_assert_msg(strcmp(otel_thread_ctx_strerror(OTEL_THREAD_CTX_EUNSUPPORTED),
		     "unknown otel-thread-ctx error") != 0,
	      "EUNSUPPORTED has no text");
	return 0;
}
