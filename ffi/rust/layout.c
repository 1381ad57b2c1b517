/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Prints the size, alignment and field offsets of the public structs as the
 * C compiler lays them out, one "name value" per line, for the Rust crate's
 * layout test (tests/layout.rs) to compare with its #[repr(C)] declarations.
 */
#include <otel_thread_ctx.h>
#include <stdalign.h>
#include <stdio.h>

#define SIZE(type, name) \
	printf("%s.size %zu\n%s.align %zu\n", name, sizeof(type), name, alignof(type))
#define FIELD(type, name, field) printf("%s.%s %zu\n", name, #field, offsetof(type, field))

int main(void)
{
	SIZE(struct otel_thread_ctx_record, "record");
	FIELD(struct otel_thread_ctx_record, "record", trace_id);
	FIELD(struct otel_thread_ctx_record, "record", span_id);
	FIELD(struct otel_thread_ctx_record, "record", valid);
	FIELD(struct otel_thread_ctx_record, "record", trace_flags);
	FIELD(struct otel_thread_ctx_record, "record", attrs_data_size);
	FIELD(struct otel_thread_ctx_record, "record", attrs_data);

	SIZE(struct otel_thread_ctx_attr, "attr");
	FIELD(struct otel_thread_ctx_attr, "attr", key);
	FIELD(struct otel_thread_ctx_attr, "attr", len);
	FIELD(struct otel_thread_ctx_attr, "attr", value);

	SIZE(struct otel_thread_ctx_attr_iter, "attr_iter");
	FIELD(struct otel_thread_ctx_attr_iter, "attr_iter", rec);
	FIELD(struct otel_thread_ctx_attr_iter, "attr_iter", pos);
	FIELD(struct otel_thread_ctx_attr_iter, "attr_iter", keys);
	FIELD(struct otel_thread_ctx_attr_iter, "attr_iter", unmapped);

	SIZE(struct otel_thread_ctx_self_check, "self_check");
	FIELD(struct otel_thread_ctx_self_check, "self_check", status);
	FIELD(struct otel_thread_ctx_self_check, "self_check", slot);
	FIELD(struct otel_thread_ctx_self_check, "self_check", own_slot);
	FIELD(struct otel_thread_ctx_self_check, "self_check", slot_is_own);
	FIELD(struct otel_thread_ctx_self_check, "self_check", exported);
	FIELD(struct otel_thread_ctx_self_check, "self_check", module);
	FIELD(struct otel_thread_ctx_self_check, "self_check", exported_module);
	FIELD(struct otel_thread_ctx_self_check, "self_check", exporting_modules);
	FIELD(struct otel_thread_ctx_self_check, "self_check", reason);

	printf("error.EOPTIONS %d\n", OTEL_THREAD_CTX_EOPTIONS);
	SIZE(struct otel_thread_ctx_options, "options");
	printf("options.size_field %zu\n", offsetof(struct otel_thread_ctx_options, size));
	FIELD(struct otel_thread_ctx_options, "options", flags);
	FIELD(struct otel_thread_ctx_options, "options", attrs_capacity);
	printf("key_max %u\nattrs_max %u\nvalue_max %u\nrecord_size %u\n",
	       OTEL_THREAD_CTX_KEY_MAX, OTEL_THREAD_CTX_ATTRS_MAX, OTEL_THREAD_CTX_VALUE_MAX,
	       OTEL_THREAD_CTX_RECORD_SIZE);
	return ferror(stdout) ? 1 : 0;
}
