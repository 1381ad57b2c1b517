/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Prints the size, alignment and field offsets of the public structs as the
 * C compiler lays them out, the defaults of OTEL_THREAD_CTX_OPTIONS_INIT and
 * every error code, one "name value" per line, for the Rust crate's
 * layout test (tests/layout.rs) to compare with its #[repr(C)] declarations,
 * and the Python binding's (tests/test_otel_thread_ctx.py) with its ctypes
 * structures.  Only headers are used: nothing is linked.
 */
#include <otel_thread_ctx.h>
#include <otel_thread_ctx_inspect.h>
#include <otel_thread_ctx_process.h>
#include <stdalign.h>
#include <stdio.h>

#define SIZE(type, name) \
	printf("%s.size %zu\n%s.align %zu\n", name, sizeof(type), name, alignof(type))
#define FIELD(type, name, field) printf("%s.%s %zu\n", name, #field, offsetof(type, field))
#define ERROR(code) printf("error.%s %d\n", #code, OTEL_THREAD_CTX_##code)

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

	SIZE(struct otel_thread_ctx_options, "options");
	printf("options.size_field %zu\n", offsetof(struct otel_thread_ctx_options, size));
	FIELD(struct otel_thread_ctx_options, "options", attrs_capacity);
	FIELD(struct otel_thread_ctx_options, "options", flags);
	{
		/* What the bindings' defaults must equal. */
		struct otel_thread_ctx_options init = OTEL_THREAD_CTX_OPTIONS_INIT;

		printf("options_init.size %zu\noptions_init.attrs_capacity %u\n"
		       "options_init.flags %u\n",
		       init.size, init.attrs_capacity, init.flags);
	}

	SIZE(struct otel_thread_ctx_process_attr, "process_attr");
	FIELD(struct otel_thread_ctx_process_attr, "process_attr", key);
	FIELD(struct otel_thread_ctx_process_attr, "process_attr", type);
	FIELD(struct otel_thread_ctx_process_attr, "process_attr", string);
	FIELD(struct otel_thread_ctx_process_attr, "process_attr", length);
	FIELD(struct otel_thread_ctx_process_attr, "process_attr", int_value);
	FIELD(struct otel_thread_ctx_process_attr, "process_attr", double_value);
	FIELD(struct otel_thread_ctx_process_attr, "process_attr", bool_value);

	SIZE(struct otel_thread_ctx_process_options, "process_options");
	printf("process_options.size_field %zu\n",
	       offsetof(struct otel_thread_ctx_process_options, size));
	FIELD(struct otel_thread_ctx_process_options, "process_options", schema);
	FIELD(struct otel_thread_ctx_process_options, "process_options", on_fork);
	FIELD(struct otel_thread_ctx_process_options, "process_options", attributes);
	FIELD(struct otel_thread_ctx_process_options, "process_options", attribute_count);

	SIZE(struct otel_thread_ctx_process_info, "process_info");
	FIELD(struct otel_thread_ctx_process_info, "process_info", published);
	FIELD(struct otel_thread_ctx_process_info, "process_info", memfd);
	FIELD(struct otel_thread_ctx_process_info, "process_info", mapping);
	FIELD(struct otel_thread_ctx_process_info, "process_info", mapping_size);
	FIELD(struct otel_thread_ctx_process_info, "process_info", monotonic_published_at_ns);
	FIELD(struct otel_thread_ctx_process_info, "process_info", payload_size);
	FIELD(struct otel_thread_ctx_process_info, "process_info", payload);

	SIZE(struct otel_thread_ctx_inspect_process_snapshot, "snapshot");
	FIELD(struct otel_thread_ctx_inspect_process_snapshot, "snapshot", mapping_address);
	FIELD(struct otel_thread_ctx_inspect_process_snapshot, "snapshot", payload_address);
	FIELD(struct otel_thread_ctx_inspect_process_snapshot, "snapshot", monotonic_published_at_ns);
	FIELD(struct otel_thread_ctx_inspect_process_snapshot, "snapshot", version);
	FIELD(struct otel_thread_ctx_inspect_process_snapshot, "snapshot", retries);
	FIELD(struct otel_thread_ctx_inspect_process_snapshot, "snapshot", payload);
	FIELD(struct otel_thread_ctx_inspect_process_snapshot, "snapshot", payload_size);
	FIELD(struct otel_thread_ctx_inspect_process_snapshot, "snapshot", schema_version);
	FIELD(struct otel_thread_ctx_inspect_process_snapshot, "snapshot", key_map_present);
	FIELD(struct otel_thread_ctx_inspect_process_snapshot, "snapshot", key_count);
	FIELD(struct otel_thread_ctx_inspect_process_snapshot, "snapshot", keys);
	FIELD(struct otel_thread_ctx_inspect_process_snapshot, "snapshot", resource_count);
	FIELD(struct otel_thread_ctx_inspect_process_snapshot, "snapshot", resource);
	FIELD(struct otel_thread_ctx_inspect_process_snapshot, "snapshot", attribute_count);
	FIELD(struct otel_thread_ctx_inspect_process_snapshot, "snapshot", attributes);

	SIZE(struct otel_thread_ctx_inspect_module, "inspect_module");
	FIELD(struct otel_thread_ctx_inspect_module, "inspect_module", path);
	FIELD(struct otel_thread_ctx_inspect_module, "inspect_module", base);
	FIELD(struct otel_thread_ctx_inspect_module, "inspect_module", st_value);
	FIELD(struct otel_thread_ctx_inspect_module, "inspect_module", model);
	FIELD(struct otel_thread_ctx_inspect_module, "inspect_module", tp_offset);
	FIELD(struct otel_thread_ctx_inspect_module, "inspect_module", module_id);
	FIELD(struct otel_thread_ctx_inspect_module, "inspect_module", dtv_offset);

	SIZE(struct otel_thread_ctx_inspect_info, "inspect_info");
	FIELD(struct otel_thread_ctx_inspect_info, "inspect_info", pid);
	FIELD(struct otel_thread_ctx_inspect_info, "inspect_info", libc);
	FIELD(struct otel_thread_ctx_inspect_info, "inspect_info", module_count);
	FIELD(struct otel_thread_ctx_inspect_info, "inspect_info", modules);
	FIELD(struct otel_thread_ctx_inspect_info, "inspect_info", process_ctx_status);
	FIELD(struct otel_thread_ctx_inspect_info, "inspect_info", process_ctx);

	SIZE(struct otel_thread_ctx_inspect_thread, "inspect_thread");
	FIELD(struct otel_thread_ctx_inspect_thread, "inspect_thread", tid);
	FIELD(struct otel_thread_ctx_inspect_thread, "inspect_thread", name);
	FIELD(struct otel_thread_ctx_inspect_thread, "inspect_thread", status);
	FIELD(struct otel_thread_ctx_inspect_thread, "inspect_thread", sys_errno);
	FIELD(struct otel_thread_ctx_inspect_thread, "inspect_thread", anomalies);
	FIELD(struct otel_thread_ctx_inspect_thread, "inspect_thread", module);
	FIELD(struct otel_thread_ctx_inspect_thread, "inspect_thread", thread_pointer);
	FIELD(struct otel_thread_ctx_inspect_thread, "inspect_thread", slot_address);
	FIELD(struct otel_thread_ctx_inspect_thread, "inspect_thread", record_address);
	FIELD(struct otel_thread_ctx_inspect_thread, "inspect_thread", attrs_data_size);
	FIELD(struct otel_thread_ctx_inspect_thread, "inspect_thread", record);

	/* Every code of both headers: the bindings declare exactly these. */
	ERROR(OK);
	ERROR(E2BIG);
	ERROR(ENOMEM);
	ERROR(ENESTED);
	ERROR(ENOSPC);
	ERROR(ENULL);
	ERROR(EIDS);
	ERROR(EKEY);
	ERROR(EVALUE);
	ERROR(EUTF8);
	ERROR(ETHREAD);
	ERROR(ENOCTX);
	ERROR(EINVALID);
	ERROR(ETRUNCATED);
	ERROR(ESLOT);
	ERROR(ENAME);
	ERROR(EKEYS);
	ERROR(EUNKNOWNKEY);
	ERROR(EPUBLISHED);
	ERROR(ENOTPUBLISHED);
	ERROR(EATTR);
	ERROR(EMAP);
	ERROR(ESYS);
	ERROR(EDUPKEY);
	ERROR(EOPTIONS);
	ERROR(EUNSUPPORTED);
	ERROR(ENOATTR);
	ERROR(EFULL);
	ERROR(EPERM);
	ERROR(ENOENT);
	ERROR(ESRCH);
	ERROR(EAGAIN);
	ERROR(EFAULT);
	ERROR(ETIMEDOUT);
	ERROR(EFORMAT);
	ERROR(EDECODE);
	ERROR(ENOSLOT);
	ERROR(EMODEL);

	printf("key_max %u\nattrs_max %u\nvalue_max %u\nrecord_size %u\n",
	       OTEL_THREAD_CTX_KEY_MAX, OTEL_THREAD_CTX_ATTRS_MAX, OTEL_THREAD_CTX_VALUE_MAX,
	       OTEL_THREAD_CTX_RECORD_SIZE);
	return ferror(stdout) ? 1 : 0;
}
