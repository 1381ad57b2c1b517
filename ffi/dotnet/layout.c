/* SPDX-License-Identifier: Apache-2.0 */
/* The structs the .NET binding passes, as the C compiler lays them out: size
 * and the offset of one late field each (tests/OtelThreadCtx.Tests,
 * LayoutTests, compares them with the C# declarations). */
#include <stddef.h>
#include <stdio.h>

#include <otel_thread_ctx.h>
#include <otel_thread_ctx_process.h>

#define ROW(name, type, field) \
	printf("%s %zu %zu\n", name, sizeof(struct type), offsetof(struct type, field))

int main(void)
{
	ROW("record", otel_thread_ctx_record, attrs_data);
	ROW("attr", otel_thread_ctx_attr, value);
	ROW("options", otel_thread_ctx_options, attrs_capacity);
	ROW("iter", otel_thread_ctx_attr_iter, keys);
	ROW("self_check", otel_thread_ctx_self_check, reason);
	ROW("process_attr", otel_thread_ctx_process_attr, bool_value);
	ROW("process_options", otel_thread_ctx_process_options, attribute_count);
	ROW("process_info", otel_thread_ctx_process_info, payload);
	return 0;
}
