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
    put("options.flags", offset!(sys::otel_thread_ctx_options, flags));
    put("options.attrs_capacity", offset!(sys::otel_thread_ctx_options, attrs_capacity));
    put("key_max", sys::OTEL_THREAD_CTX_KEY_MAX as usize);
    put("attrs_max", sys::OTEL_THREAD_CTX_ATTRS_MAX);
    put("value_max", sys::OTEL_THREAD_CTX_VALUE_MAX);
    put("record_size", sys::OTEL_THREAD_CTX_RECORD_SIZE);
    m.insert("error.EOPTIONS".to_string(), sys::OTEL_THREAD_CTX_EOPTIONS as i64);
    m
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
        .collect();
    let rust = rust_layout();
    assert_eq!(c.keys().collect::<Vec<_>>(), rust.keys().collect::<Vec<_>>(), "the same names");
    assert_eq!(c, rust);
}
