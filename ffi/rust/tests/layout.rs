// SPDX-License-Identifier: Apache-2.0
//! The #[repr(C)] declarations of `sys` against the C header: the values the
//! header states, and, when OTEL_THREAD_CTX_C_LAYOUT is the command line of
//! the program ffi/rust/layout.c built by Meson (`meson test` sets it; in a
//! cross build, through the exe wrapper), every size,
//! alignment and offset as the C compiler lays them out.
use otel_thread_ctx::sys;
use std::collections::BTreeMap;
use std::mem::{align_of, size_of, MaybeUninit};
use std::process::Command;

macro_rules! offset {
    ($type:ty, $field:ident) => {{
        let value = MaybeUninit::<$type>::uninit();
        let base = value.as_ptr();
        // SAFETY: only the address of the field is taken, nothing is read.
        let field = unsafe { std::ptr::addr_of!((*base).$field) };
        field as usize - base as usize
    }};
}

/// The Rust side, named as layout.c names the C side.
fn rust_layout() -> BTreeMap<String, i64> {
    let mut m = BTreeMap::new();
    let mut put = |k: &str, v: usize| {
        m.insert(k.to_string(), v as i64);
    };
    put("record.size", size_of::<sys::otel_thread_ctx_record>());
    put("record.align", align_of::<sys::otel_thread_ctx_record>());
    put("record.trace_id", offset!(sys::otel_thread_ctx_record, trace_id));
    put("record.span_id", offset!(sys::otel_thread_ctx_record, span_id));
    put("record.valid", offset!(sys::otel_thread_ctx_record, valid));
    put("record.trace_flags", offset!(sys::otel_thread_ctx_record, trace_flags));
    put("record.attrs_data_size", offset!(sys::otel_thread_ctx_record, attrs_data_size));
    put("record.attrs_data", offset!(sys::otel_thread_ctx_record, attrs_data));
    put("attr.size", size_of::<sys::otel_thread_ctx_attr>());
    put("attr.align", align_of::<sys::otel_thread_ctx_attr>());
    put("attr.key", offset!(sys::otel_thread_ctx_attr, key));
    put("attr.len", offset!(sys::otel_thread_ctx_attr, len));
    put("attr.value", offset!(sys::otel_thread_ctx_attr, value));
    put("attr_iter.size", size_of::<sys::otel_thread_ctx_attr_iter>());
    put("attr_iter.align", align_of::<sys::otel_thread_ctx_attr_iter>());
    put("attr_iter.rec", offset!(sys::otel_thread_ctx_attr_iter, rec));
    put("attr_iter.pos", offset!(sys::otel_thread_ctx_attr_iter, pos));
    put("attr_iter.keys", offset!(sys::otel_thread_ctx_attr_iter, keys));
    put("attr_iter.unmapped", offset!(sys::otel_thread_ctx_attr_iter, unmapped));
    put("self_check.size", size_of::<sys::otel_thread_ctx_self_check>());
    put("self_check.align", align_of::<sys::otel_thread_ctx_self_check>());
    put("self_check.status", offset!(sys::otel_thread_ctx_self_check, status));
    put("self_check.slot", offset!(sys::otel_thread_ctx_self_check, slot));
    put("self_check.own_slot", offset!(sys::otel_thread_ctx_self_check, own_slot));
    put("self_check.slot_is_own", offset!(sys::otel_thread_ctx_self_check, slot_is_own));
    put("self_check.exported", offset!(sys::otel_thread_ctx_self_check, exported));
    put("self_check.module", offset!(sys::otel_thread_ctx_self_check, module));
    put("self_check.exported_module", offset!(sys::otel_thread_ctx_self_check, exported_module));
    put("self_check.exporting_modules", offset!(sys::otel_thread_ctx_self_check, exporting_modules));
    put("self_check.reason", offset!(sys::otel_thread_ctx_self_check, reason));
    put("options.size", size_of::<sys::otel_thread_ctx_options>());
    put("options.align", align_of::<sys::otel_thread_ctx_options>());
    put("options.size_field", offset!(sys::otel_thread_ctx_options, size));
    put("options.attrs_capacity", offset!(sys::otel_thread_ctx_options, attrs_capacity));
    put("options.flags", offset!(sys::otel_thread_ctx_options, flags));
    put("process_attr.size", size_of::<sys::otel_thread_ctx_process_attr>());
    put("process_attr.align", align_of::<sys::otel_thread_ctx_process_attr>());
    put("process_attr.key", offset!(sys::otel_thread_ctx_process_attr, key));
    put("process_attr.type", offset!(sys::otel_thread_ctx_process_attr, type_));
    put("process_attr.string", offset!(sys::otel_thread_ctx_process_attr, string));
    put("process_attr.length", offset!(sys::otel_thread_ctx_process_attr, length));
    put("process_attr.int_value", offset!(sys::otel_thread_ctx_process_attr, int_value));
    put("process_attr.double_value", offset!(sys::otel_thread_ctx_process_attr, double_value));
    put("process_attr.bool_value", offset!(sys::otel_thread_ctx_process_attr, bool_value));
    put("process_options.size", size_of::<sys::otel_thread_ctx_process_options>());
    put("process_options.align", align_of::<sys::otel_thread_ctx_process_options>());
    put("process_options.size_field", offset!(sys::otel_thread_ctx_process_options, size));
    put("process_options.schema", offset!(sys::otel_thread_ctx_process_options, schema));
    put("process_options.on_fork", offset!(sys::otel_thread_ctx_process_options, on_fork));
    put("process_options.attributes", offset!(sys::otel_thread_ctx_process_options, attributes));
    put("process_options.attribute_count", offset!(sys::otel_thread_ctx_process_options, attribute_count));
    put("process_info.size", size_of::<sys::otel_thread_ctx_process_info>());
    put("process_info.align", align_of::<sys::otel_thread_ctx_process_info>());
    put("process_info.published", offset!(sys::otel_thread_ctx_process_info, published));
    put("process_info.memfd", offset!(sys::otel_thread_ctx_process_info, memfd));
    put("process_info.mapping", offset!(sys::otel_thread_ctx_process_info, mapping));
    put("process_info.mapping_size", offset!(sys::otel_thread_ctx_process_info, mapping_size));
    put(
        "process_info.monotonic_published_at_ns",
        offset!(sys::otel_thread_ctx_process_info, monotonic_published_at_ns),
    );
    put("process_info.payload_size", offset!(sys::otel_thread_ctx_process_info, payload_size));
    put("process_info.payload", offset!(sys::otel_thread_ctx_process_info, payload));
    #[cfg(feature = "inspect")]
    inspect_layout(&mut put);
    put("key_max", sys::OTEL_THREAD_CTX_KEY_MAX as usize);
    put("attrs_max", sys::OTEL_THREAD_CTX_ATTRS_MAX);
    put("value_max", sys::OTEL_THREAD_CTX_VALUE_MAX);
    put("record_size", sys::OTEL_THREAD_CTX_RECORD_SIZE);
    let init = sys::otel_thread_ctx_options::default();
    m.insert("options_init.size".to_string(), init.size as i64);
    m.insert("options_init.attrs_capacity".to_string(), i64::from(init.attrs_capacity));
    m.insert("options_init.flags".to_string(), i64::from(init.flags));
    for (name, code) in errors() {
        m.insert(format!("error.{}", name), i64::from(code));
    }
    m
}

/// Every error code `sys` declares, by the header's name.
fn errors() -> Vec<(&'static str, i32)> {
    vec![
        ("OK", sys::OTEL_THREAD_CTX_OK),
        ("E2BIG", sys::OTEL_THREAD_CTX_E2BIG),
        ("ENOMEM", sys::OTEL_THREAD_CTX_ENOMEM),
        ("ENESTED", sys::OTEL_THREAD_CTX_ENESTED),
        ("ENOSPC", sys::OTEL_THREAD_CTX_ENOSPC),
        ("ENULL", sys::OTEL_THREAD_CTX_ENULL),
        ("EIDS", sys::OTEL_THREAD_CTX_EIDS),
        ("EKEY", sys::OTEL_THREAD_CTX_EKEY),
        ("EVALUE", sys::OTEL_THREAD_CTX_EVALUE),
        ("EUTF8", sys::OTEL_THREAD_CTX_EUTF8),
        ("ETHREAD", sys::OTEL_THREAD_CTX_ETHREAD),
        ("ENOCTX", sys::OTEL_THREAD_CTX_ENOCTX),
        ("EINVALID", sys::OTEL_THREAD_CTX_EINVALID),
        ("ETRUNCATED", sys::OTEL_THREAD_CTX_ETRUNCATED),
        ("ESLOT", sys::OTEL_THREAD_CTX_ESLOT),
        ("ENAME", sys::OTEL_THREAD_CTX_ENAME),
        ("EKEYS", sys::OTEL_THREAD_CTX_EKEYS),
        ("EUNKNOWNKEY", sys::OTEL_THREAD_CTX_EUNKNOWNKEY),
        ("EPUBLISHED", sys::OTEL_THREAD_CTX_EPUBLISHED),
        ("ENOTPUBLISHED", sys::OTEL_THREAD_CTX_ENOTPUBLISHED),
        ("EATTR", sys::OTEL_THREAD_CTX_EATTR),
        ("EMAP", sys::OTEL_THREAD_CTX_EMAP),
        ("ESYS", sys::OTEL_THREAD_CTX_ESYS),
        ("EDUPKEY", sys::OTEL_THREAD_CTX_EDUPKEY),
        ("EOPTIONS", sys::OTEL_THREAD_CTX_EOPTIONS),
        ("EUNSUPPORTED", sys::OTEL_THREAD_CTX_EUNSUPPORTED),
        ("ENOATTR", sys::OTEL_THREAD_CTX_ENOATTR),
        ("EFULL", sys::OTEL_THREAD_CTX_EFULL),
        ("EPERM", sys::OTEL_THREAD_CTX_EPERM),
        ("ENOENT", sys::OTEL_THREAD_CTX_ENOENT),
        ("ESRCH", sys::OTEL_THREAD_CTX_ESRCH),
        ("EAGAIN", sys::OTEL_THREAD_CTX_EAGAIN),
        ("EFAULT", sys::OTEL_THREAD_CTX_EFAULT),
        ("EFORMAT", sys::OTEL_THREAD_CTX_EFORMAT),
        ("EDECODE", sys::OTEL_THREAD_CTX_EDECODE),
        ("ENOSLOT", sys::OTEL_THREAD_CTX_ENOSLOT),
        ("EMODEL", sys::OTEL_THREAD_CTX_EMODEL),
        ("ETIMEDOUT", sys::OTEL_THREAD_CTX_ETIMEDOUT),
    ]
}

/// The structs of otel_thread_ctx_inspect.h (the cargo feature `inspect`).
#[cfg(feature = "inspect")]
fn inspect_layout(put: &mut impl FnMut(&str, usize)) {
    use sys::inspect::{
        otel_thread_ctx_inspect_info as Info, otel_thread_ctx_inspect_module as Module,
        otel_thread_ctx_inspect_thread as Thread, otel_thread_ctx_inspect_process_snapshot as Snapshot,
    };
    put("snapshot.size", size_of::<Snapshot>());
    put("snapshot.align", align_of::<Snapshot>());
    put("snapshot.mapping_address", offset!(Snapshot, mapping_address));
    put("snapshot.payload_address", offset!(Snapshot, payload_address));
    put("snapshot.monotonic_published_at_ns", offset!(Snapshot, monotonic_published_at_ns));
    put("snapshot.version", offset!(Snapshot, version));
    put("snapshot.retries", offset!(Snapshot, retries));
    put("snapshot.payload", offset!(Snapshot, payload));
    put("snapshot.payload_size", offset!(Snapshot, payload_size));
    put("snapshot.schema_version", offset!(Snapshot, schema_version));
    put("snapshot.key_map_present", offset!(Snapshot, key_map_present));
    put("snapshot.key_count", offset!(Snapshot, key_count));
    put("snapshot.keys", offset!(Snapshot, keys));
    put("snapshot.resource_count", offset!(Snapshot, resource_count));
    put("snapshot.resource", offset!(Snapshot, resource));
    put("snapshot.attribute_count", offset!(Snapshot, attribute_count));
    put("snapshot.attributes", offset!(Snapshot, attributes));
    put("inspect_module.size", size_of::<Module>());
    put("inspect_module.align", align_of::<Module>());
    put("inspect_module.path", offset!(Module, path));
    put("inspect_module.base", offset!(Module, base));
    put("inspect_module.st_value", offset!(Module, st_value));
    put("inspect_module.model", offset!(Module, model));
    put("inspect_module.tp_offset", offset!(Module, tp_offset));
    put("inspect_module.module_id", offset!(Module, module_id));
    put("inspect_module.dtv_offset", offset!(Module, dtv_offset));
    put("inspect_info.size", size_of::<Info>());
    put("inspect_info.align", align_of::<Info>());
    put("inspect_info.pid", offset!(Info, pid));
    put("inspect_info.libc", offset!(Info, libc));
    put("inspect_info.module_count", offset!(Info, module_count));
    put("inspect_info.modules", offset!(Info, modules));
    put("inspect_info.process_ctx_status", offset!(Info, process_ctx_status));
    put("inspect_info.process_ctx", offset!(Info, process_ctx));
    put("inspect_thread.size", size_of::<Thread>());
    put("inspect_thread.align", align_of::<Thread>());
    put("inspect_thread.tid", offset!(Thread, tid));
    put("inspect_thread.name", offset!(Thread, name));
    put("inspect_thread.status", offset!(Thread, status));
    put("inspect_thread.sys_errno", offset!(Thread, sys_errno));
    put("inspect_thread.anomalies", offset!(Thread, anomalies));
    put("inspect_thread.module", offset!(Thread, module));
    put("inspect_thread.thread_pointer", offset!(Thread, thread_pointer));
    put("inspect_thread.slot_address", offset!(Thread, slot_address));
    put("inspect_thread.record_address", offset!(Thread, record_address));
    put("inspect_thread.attrs_data_size", offset!(Thread, attrs_data_size));
    put("inspect_thread.record", offset!(Thread, record));
}

/// Whether the C program's name `k` is one this build of the crate has:
/// the inspector's structs only with the feature `inspect`.
fn declared(k: &str) -> bool {
    cfg!(feature = "inspect")
        || !(k.starts_with("snapshot.") || k.starts_with("inspect_"))
}

#[test]
fn record_matches_the_header_table() {
    // The offsets the header's _Static_asserts and the README state.
    let m = rust_layout();
    for (k, v) in [
        ("record.size", 640),
        ("record.trace_id", 0),
        ("record.span_id", 16),
        ("record.valid", 24),
        ("record.trace_flags", 25),
        ("record.attrs_data_size", 26),
        ("record.attrs_data", 28),
        ("attrs_max", 612),
        ("value_max", 255),
        ("key_max", 255),
    ] {
        assert_eq!(m[k], v, "{}", k);
    }
}

#[test]
fn every_struct_matches_the_c_compiler() {
    let program = match std::env::var_os("OTEL_THREAD_CTX_C_LAYOUT") {
        Some(p) => p,
        None => {
            // Outside `meson test` there is no C program to ask; the
            // header's own values are checked above.
            eprintln!("OTEL_THREAD_CTX_C_LAYOUT not set: C layout not compared");
            return;
        }
    };
    // A command line: in a cross build, the exe wrapper, its arguments and
    // the program.
    let program = program.into_string().expect("a UTF-8 command line");
    let mut words = program.split_whitespace();
    let first = words.next().expect("a program");
    // An instrumented C program brings its sanitizer runtime itself: a
    // preloaded copy (a sanitizer build's runner) would be a second one.
    let out = Command::new(first)
        .args(words)
        .env_remove("LD_PRELOAD")
        .output()
        .expect("running the C layout program");
    assert!(out.status.success(), "{:?} failed: {}", program, out.status);
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    let c: BTreeMap<String, i64> = text
        .lines()
        .map(|l| {
            let (k, v) = l.split_once(' ').expect("\"name value\" lines");
            (k.to_string(), v.parse().expect("a number"))
        })
        .filter(|(k, _)| declared(k))
        .collect();
    let rust = rust_layout();
    assert_eq!(c.keys().collect::<Vec<_>>(), rust.keys().collect::<Vec<_>>(), "the same names");
    assert_eq!(c, rust);
}
