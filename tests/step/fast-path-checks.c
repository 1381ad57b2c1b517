/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The fast paths check what the thread publishes at that moment, not what
 * its other record (the draft, which holds the publication before) or a
 * context says: update_span_id and update_trace_flags refuse (EIDS) a
 * thread whose record has no ids, even right after it published one that
 * had them, and accept one whose record has ids, even right after one that
 * had none.  Every refusal changes nothing.
 */
#include <stdio.h>
#include <string.h>

#include "check-lite.h"
#include "otel_thread_ctx.h"

static const uint8_t trace[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
static const uint8_t span[8] = {1, 1, 2, 3, 5, 8, 13, 21};
static const uint8_t span2[8] = {9, 9, 9, 9, 9, 9, 9, 9};

static void same_as_before(const struct otel_thread_ctx_record *before)
{
	struct otel_thread_ctx_record now;

	ck_assert(otel_thread_ctx_read(&now) == OTEL_THREAD_CTX_OK);
	ck_assert(memcmp(&now, before, 28u + before->attrs_data_size) == 0);
}

int main(void)
{
	otel_thread_ctx *traced, *plain;
	struct otel_thread_ctx_record before, now;

	ck_assert(otel_thread_ctx_create(&traced) == OTEL_THREAD_CTX_OK);
	ck_assert(otel_thread_ctx_create(&plain) == OTEL_THREAD_CTX_OK);
	ck_assert(otel_thread_ctx_set_ids(traced, trace, span, 1) == OTEL_THREAD_CTX_OK);

	/* Ids, then none: the draft holds the record with ids. */
	for (int round = 0; round < 2; round++) {
		ck_assert(otel_thread_ctx_attach(traced, NULL) == OTEL_THREAD_CTX_OK);
		ck_assert(otel_thread_ctx_update(plain) == OTEL_THREAD_CTX_OK);
		ck_assert(otel_thread_ctx_read(&before) == OTEL_THREAD_CTX_OK);
		ck_assert(otel_thread_ctx_update_trace_flags(1) == OTEL_THREAD_CTX_EIDS);
		same_as_before(&before);
		ck_assert(otel_thread_ctx_update_span_id(span2) == OTEL_THREAD_CTX_EIDS);
		same_as_before(&before);
		/* Flags 0 need no ids. */
		ck_assert(otel_thread_ctx_update_trace_flags(0) == OTEL_THREAD_CTX_OK);
	}

	/* None, then ids: the draft holds the record without. */
	for (int round = 0; round < 2; round++) {
		ck_assert(otel_thread_ctx_update(plain) == OTEL_THREAD_CTX_OK);
		ck_assert(otel_thread_ctx_update(traced) == OTEL_THREAD_CTX_OK);
		ck_assert(otel_thread_ctx_update_trace_flags(0) == OTEL_THREAD_CTX_OK);
		ck_assert(otel_thread_ctx_update_trace_flags(1) == OTEL_THREAD_CTX_OK);
		ck_assert(otel_thread_ctx_read(&now) == OTEL_THREAD_CTX_OK && now.trace_flags == 1);
		ck_assert(otel_thread_ctx_update(plain) == OTEL_THREAD_CTX_OK);
		ck_assert(otel_thread_ctx_update(traced) == OTEL_THREAD_CTX_OK);
		ck_assert(otel_thread_ctx_update_span_id(span2) == OTEL_THREAD_CTX_OK);
		ck_assert(otel_thread_ctx_read(&now) == OTEL_THREAD_CTX_OK &&
		      memcmp(now.span_id, span2, 8) == 0 && memcmp(now.trace_id, trace, 16) == 0);
	}

	/* The context that was attached changes afterwards: the checks follow
	 * the thread's record, not the context. */
	ck_assert(otel_thread_ctx_attach(traced, NULL) == OTEL_THREAD_CTX_OK);
	ck_assert(otel_thread_ctx_clear_ids(traced) == OTEL_THREAD_CTX_OK);
	ck_assert(otel_thread_ctx_update_trace_flags(1) == OTEL_THREAD_CTX_OK);
	ck_assert(otel_thread_ctx_update_span_id(span2) == OTEL_THREAD_CTX_OK);
	ck_assert(otel_thread_ctx_update(plain) == OTEL_THREAD_CTX_OK);
	ck_assert(otel_thread_ctx_set_ids(plain, trace, span, 0) == OTEL_THREAD_CTX_OK);
	ck_assert(otel_thread_ctx_update_trace_flags(1) == OTEL_THREAD_CTX_EIDS);
	ck_assert(otel_thread_ctx_update_span_id(span2) == OTEL_THREAD_CTX_EIDS);

	/* Detached: nothing to change. */
	ck_assert(otel_thread_ctx_detach(NULL) == OTEL_THREAD_CTX_OK);
	ck_assert(otel_thread_ctx_update_trace_flags(0) == OTEL_THREAD_CTX_ENOCTX);
	ck_assert(otel_thread_ctx_update_span_id(span2) == OTEL_THREAD_CTX_ENOCTX);

	otel_thread_ctx_destroy(traced);
	otel_thread_ctx_destroy(plain);
	return 0;
}
