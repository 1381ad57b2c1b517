/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What doc/compat.md says of a process that holds both the reference
 * implementation and libotel-thread-ctx-compat: they export the same four
 * names, so the first of the two in the loader's list serves every caller
 * of otel_process_ctx_*, and the other is never reached.
 *
 *   interpose standin|compat
 *
 * This program is linked with both (in the order meson.build gives, with
 * --no-as-needed so that neither is dropped); the argument names the one
 * that comes first, and must serve publish, read and drop_current.
 */
#include <string.h>

#include "compat-util.h"
#include "check-lite.h"
#include "otel_process_ctx.h"
#include "standin.h"

int main(int argc, char **argv)
{
	const otel_process_ctx_data data = {
		"test", "00000000-0000-4000-8000-000000000002", "interposed", "1.0.0",
		"c", "0.1.0", "compat-test", NULL, NULL, NULL,
	};
	int standin = link_position("libref-standin.so");
	int compat = link_position("libotel-thread-ctx-compat.so");
	otel_process_ctx_read_result read;
	int standin_first;

	setvbuf(stdout, NULL, _IONBF, 0);
	ck_assert_msg(argc == 2, "usage: interpose standin|compat");
	standin_first = strcmp(argv[1], "standin") == 0;
	ck_assert_msg(standin >= 0 && compat >= 0, "both are loaded (stand-in %d, compat %d)", standin,
	      compat);
	ck_assert_msg(standin_first ? standin < compat : compat < standin, "link order as expected");
	printf("loader order: stand-in at %d, compat at %d\n", standin, compat);

	ck_assert_msg(otel_process_ctx_publish(&data).success, "publish");
	read = otel_process_ctx_read();
	ck_assert_msg(read.success && strcmp(read.data.service_name, "interposed") == 0, "read back");
	ck_assert_msg(otel_process_ctx_read_drop(&read), "read_drop");
	if (standin_first) {
		ck_assert_msg(standin_calls(STANDIN_PUBLISH) == 1 && standin_calls(STANDIN_READ) == 1,
		      "the stand-in served publish and read");
		ck_assert_msg(otel_ctx_mappings() == 0, "libotel-thread-ctx published nothing");
	} else {
		ck_assert_msg(standin_calls(STANDIN_PUBLISH) == 0 && standin_calls(STANDIN_READ) == 0,
		      "the stand-in was never reached");
		ck_assert_msg(otel_ctx_mappings() == 1, "libotel-thread-ctx published the context");
	}
	ck_assert_msg(otel_process_ctx_drop_current(), "drop_current");
	ck_assert_msg(otel_ctx_mappings() == 0, "nothing published at the end");
	ck_assert_msg(standin_calls(STANDIN_DROP_CURRENT) == (standin_first ? 1 : 0),
	      "drop_current reached the first library only");
	printf("ok: %s served every otel_process_ctx_* call\n",
	       standin_first ? "the stand-in" : "libotel-thread-ctx-compat");
	return 0;
}
