/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The process test-compat-inspect.c reads from outside: it publishes its
 * process context through libotel-thread-ctx-compat with a key map, then
 * publishes a thread record on its main thread with the project's API,
 * using the map's indices (a copy of a context, destroyed at once); prints
 * "ready" and waits for its stdin to close.
 */
#include <stdio.h>

#include "check-lite.h"
#include "otel_thread_ctx.h"
#include "otel_thread_ctx_compat.h"

int main(void)
{
	static const char *key_map[] = { "http.route", "user.id", NULL };
	const otel_thread_ctx_config_data config = { "tlsdesc_v1_dev", key_map };
	const otel_process_ctx_data data = {
		"test", "00000000-0000-4000-8000-000000000003", "inspected", "1.0.0", "c", "0.1.0",
		"compat-test", NULL, NULL, &config,
	};
	otel_thread_ctx *ctx;
	otel_process_ctx_result r;
	char buf[64];

	r = otel_process_ctx_publish(&data);
	ck_assert_msg(r.success, "publish: %s", r.error_message);
	ck_assert_int_eq(otel_thread_ctx_create(&ctx), 0);
	ck_assert_int_eq(otel_thread_ctx_set_attr(ctx, 0, "/users/:id", 10), 0);
	ck_assert_int_eq(otel_thread_ctx_set_attr(ctx, 1, "42", 2), 0);
	ck_assert_int_eq(otel_thread_ctx_attach(ctx, NULL), 0);
	otel_thread_ctx_destroy(ctx);
	printf("ready\n");
	fflush(stdout);
	while (fread(buf, 1, sizeof(buf), stdin) > 0)
		;
	ck_assert_int_eq(otel_thread_ctx_detach(NULL), 0);
	ck_assert_msg(otel_process_ctx_drop_current(), "drop");
	return 0;
}
