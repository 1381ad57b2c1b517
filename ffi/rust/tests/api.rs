// SPDX-License-Identifier: Apache-2.0
//! The safe wrapper against the library: contexts as values, scopes that
//! put back what they replaced, the fast paths, errors.  Each test runs on
//! its own thread (libtest's), so each has its own slot.
use otel_thread_ctx::{
    detach, find_key, key_count, key_name, read, register_key, save, save_into, self_check, sys,
    thread_has_context, update_all, update_span_id, update_trace_flags, Context, ContextOptions,
    Error, Record, SelfCheckStatus,
};

const TRACE: [u8; 16] = [0xa1; 16];
const SPAN: [u8; 8] = [0xb2; 8];

/// Readers honour the key map: name indices 0-15 before any test reads
/// attributes back (registration order across tests does not matter, only
/// that there are at least 16 names).
fn name_keys() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        for i in 0..16 {
            register_key(&format!("rust.test.key.{}", i)).unwrap();
        }
    });
}

/// A context with these ids, flags 1 and attribute 0 = `label`.
fn context(trace: [u8; 16], span: [u8; 8], label: &str) -> Context {
    name_keys();
    let mut ctx = Context::new().unwrap();
    ctx.set_ids(&trace, &span, 1).unwrap();
    ctx.set_attr(0, label).unwrap();
    ctx
}

/// What the calling thread publishes: (span id, attribute 0), or None.
fn published() -> Option<([u8; 8], Vec<u8>)> {
    match read() {
        Ok(rec) => Some((rec.span_id(), rec.attr(0).unwrap_or_default().to_vec())),
        Err(e) => {
            assert_eq!(e, Error::ENOCTX);
            None
        }
    }
}

fn span_and(span: [u8; 8], label: &str) -> Option<([u8; 8], Vec<u8>)> {
    Some((span, label.as_bytes().to_vec()))
}

#[test]
fn attach_publishes_a_copy_and_drop_puts_back_nothing() {
    name_keys();
    assert_eq!(read().unwrap_err(), Error::ENOCTX);
    assert!(!thread_has_context());
    let mut ctx = Context::new().unwrap();
    ctx.set_ids(&TRACE, &SPAN, 0x01).unwrap();
    ctx.set_attr(3, "GET /users/{id}").unwrap();
    ctx.set_attr(7, b"GET").unwrap();
    let span = ctx.attach().unwrap();
    assert!(thread_has_context());
    assert!(!span.has_previous());
    assert!(!span.saved().holds_record(), "it saved \"nothing published\"");
    let rec = read().unwrap();
    assert_eq!(rec.trace_id(), TRACE);
    assert_eq!(rec.span_id(), SPAN);
    assert_eq!(rec.trace_flags(), 1);
    assert!(rec.has_ids());
    assert_eq!(rec.attr(3), Some(&b"GET /users/{id}"[..]));
    assert_eq!(rec.attr(4), None);
    let attrs: Vec<(u32, &[u8])> = rec.attrs().collect();
    assert_eq!(attrs, vec![(3, &b"GET /users/{id}"[..]), (7, &b"GET"[..])]);
    assert_eq!(rec, ctx.record().unwrap(), "the record is what the context holds");
    drop(span);
    assert_eq!(read().unwrap_err(), Error::ENOCTX);
    assert!(!thread_has_context());
}

#[test]
fn a_context_is_a_value_published_again_only_on_update() {
    let mut ctx = context(TRACE, SPAN, "v1");
    let span = ctx.attach().unwrap();
    // Edits change the context, not what the thread publishes.
    ctx.set_attr(0, "v2").unwrap();
    ctx.set_span_id(&[0x33; 8]).unwrap();
    assert_eq!(published(), span_and(SPAN, "v1"));
    assert_eq!(ctx.record().unwrap().attr(0), Some(&b"v2"[..]));
    // update publishes what it holds now.
    ctx.update().unwrap();
    assert_eq!(published(), span_and([0x33; 8], "v2"));
    // Dropping the context changes nothing the thread publishes.
    drop(ctx);
    assert_eq!(published(), span_and([0x33; 8], "v2"));
    drop(span);
    assert_eq!(published(), None);
}

#[test]
fn setters_edit_the_value() {
    name_keys();
    let mut ctx = Context::new().unwrap();
    assert!(ctx.holds_record());
    let empty = ctx.record().unwrap();
    assert!(!empty.has_ids());
    assert_eq!(empty.attrs().count(), 0);
    ctx.set_ids(&TRACE, &SPAN, 0).unwrap();
    ctx.set_trace_flags(1).unwrap();
    ctx.set_attrs(&[(9, "POST"), (2, "/orders")]).unwrap();
    let rec = ctx.record().unwrap();
    assert_eq!((rec.trace_id(), rec.span_id(), rec.trace_flags()), (TRACE, SPAN, 1));
    assert_eq!(rec.attrs().collect::<Vec<_>>(), vec![(9, &b"POST"[..]), (2, &b"/orders"[..])]);
    ctx.set_attr(9, "PUT").unwrap(); // replaced in place
    ctx.remove_attr(2).unwrap();
    ctx.remove_attr(2).unwrap(); // absent: no error
    assert_eq!(ctx.record().unwrap().attrs().collect::<Vec<_>>(), vec![(9, &b"PUT"[..])]);
    ctx.clear_attrs().unwrap();
    assert_eq!(ctx.record().unwrap().attrs().count(), 0);
    assert!(ctx.record().unwrap().has_ids());
    ctx.clear_ids().unwrap();
    assert!(!ctx.record().unwrap().has_ids());
    ctx.set_ids(&TRACE, &SPAN, 1).unwrap();
    ctx.set_attr(1, "x").unwrap();
    ctx.clear().unwrap();
    assert_eq!(ctx.record().unwrap(), Context::new().unwrap().record().unwrap());
    // Publishing an empty context publishes an empty record, not nothing.
    ctx.update().unwrap();
    assert!(!read().unwrap().has_ids());
    detach().unwrap();
    assert!(!thread_has_context());
}

#[test]
fn copy_clone_and_equality() {
    let src = context(TRACE, SPAN, "copied");
    let mut dst = Context::new().unwrap();
    assert_ne!(dst, src);
    dst.copy_from(&src).unwrap();
    assert_eq!(dst, src);
    assert_eq!(dst.record().unwrap().attr(0), Some(&b"copied"[..]));
    let mut clone = src.clone();
    assert_eq!(clone, src);
    clone.set_attr(0, "changed").unwrap();
    assert_ne!(clone, src, "a clone is a value of its own");
    assert_eq!(src.record().unwrap().attr(0), Some(&b"copied"[..]));
    let small = Context::with_options(ContextOptions { attrs_capacity: 4 }).unwrap();
    let copy = small.try_clone().unwrap();
    assert_eq!(copy.capacity(), 4);
    let mut small = small;
    assert_eq!(small.copy_from(&src).unwrap_err(), Error::ENOSPC, "8 bytes of attributes");
    assert_eq!(small, copy, "a failed copy changes nothing");
    small.clone_from(&src); // does not fit: a new context
    assert_eq!(small, src);
    assert!(format!("{:?}", src).contains("copied"));
}

#[test]
fn scopes_nest_three_deep() {
    let (a, b, c) = (context(TRACE, [1; 8], "a"), context(TRACE, [2; 8], "b"), context(TRACE, [3; 8], "c"));
    let ga = a.attach().unwrap();
    assert!(!ga.has_previous());
    let gb = b.attach().unwrap();
    assert!(gb.has_previous());
    assert_eq!(gb.saved(), &a);
    let gc = c.attach().unwrap();
    assert_eq!(gc.saved(), &b);
    assert_eq!(published(), span_and([3; 8], "c"));
    drop(gc);
    assert_eq!(published(), span_and([2; 8], "b"));
    drop(gb);
    assert_eq!(published(), span_and([1; 8], "a"));
    drop(ga);
    assert_eq!(published(), None);
}

#[test]
fn a_scope_puts_back_the_outer_context_after_it_was_dropped() {
    let outer = context(TRACE, [1; 8], "outer");
    let g_outer = outer.attach().unwrap();
    let inner = context(TRACE, [2; 8], "inner");
    let g_inner = inner.attach().unwrap();
    // The outer context is gone, and so is the inner one: the guards hold
    // copies of what they replaced, the thread a copy of what it publishes.
    drop(outer);
    drop(inner);
    assert_eq!(published(), span_and([2; 8], "inner"));
    drop(g_inner);
    assert_eq!(published(), span_and([1; 8], "outer"));
    drop(g_outer);
    assert_eq!(published(), None);
}

#[test]
fn a_scope_puts_back_exactly_what_it_replaced() {
    // The outer context is edited while the inner scope runs: the inner
    // guard puts back what the thread published when it began, not the
    // edited context.
    let mut outer = context(TRACE, [1; 8], "outer");
    let g_outer = outer.attach().unwrap();
    let g_inner = context(TRACE, [2; 8], "inner").attach().unwrap();
    outer.set_attr(0, "edited meanwhile").unwrap();
    drop(g_inner);
    assert_eq!(published(), span_and([1; 8], "outer"));
    // A fast path inside a scope is part of what the next scope saves.
    update_span_id(&[0x11; 8]).unwrap();
    let g = context(TRACE, [3; 8], "inner").attach().unwrap();
    drop(g);
    assert_eq!(published(), span_and([0x11; 8], "outer"));
    drop(g_outer);
    assert_eq!(published(), None);
}

#[test]
fn guards_dropped_out_of_order_each_put_back_their_own() {
    let a = context(TRACE, [1; 8], "a");
    let b = context(TRACE, [2; 8], "b");
    let ga = a.attach().unwrap(); // saves nothing
    let gb = b.attach().unwrap(); // saves a
    drop(ga);
    assert_eq!(published(), None, "ga puts back nothing");
    drop(gb);
    assert_eq!(published(), span_and([1; 8], "a"), "gb puts back a");
    detach().unwrap();
}

#[test]
fn attach_with_and_restore_reuse_one_saved_context() {
    let a = context(TRACE, [1; 8], "a");
    let b = context(TRACE, [2; 8], "b");
    let base = a.attach().unwrap();
    let mut saved = Context::new().unwrap();
    for _ in 0..3 {
        let g = b.attach_with(saved).unwrap();
        assert_eq!(published(), span_and([2; 8], "b"));
        saved = g.restore().unwrap();
        assert_eq!(published(), span_and([1; 8], "a"));
        assert_eq!(saved, a, "it held what was put back");
    }
    // A saved context too small for what the thread publishes: ENOSPC,
    // and nothing changes.
    let tiny = Context::with_options(ContextOptions { attrs_capacity: 0 }).unwrap();
    assert_eq!(b.attach_with(tiny).unwrap_err(), Error::ENOSPC);
    assert_eq!(published(), span_and([1; 8], "a"));
    drop(base);
}

#[test]
fn save_detach_and_a_context_that_holds_no_record() {
    let a = context(TRACE, [1; 8], "a");
    // Nothing published: saved as a context that holds no record.
    let mut nothing = save().unwrap();
    assert!(!nothing.holds_record());
    assert_eq!(nothing.record().unwrap_err(), Error::ENOCTX);
    assert!(format!("{:?}", nothing).contains("none"));
    a.update().unwrap();
    let saved = save().unwrap();
    assert_eq!(saved, a, "save copies what the thread publishes");
    assert_eq!(published(), span_and([1; 8], "a"), "and changes nothing");
    // Attaching "nothing" unpublishes, and its guard puts back a.
    let g = nothing.attach().unwrap();
    assert_eq!(published(), None);
    drop(g);
    assert_eq!(published(), span_and([1; 8], "a"));
    // save_into needs the capacity.
    let mut tiny = Context::with_options(ContextOptions { attrs_capacity: 2 }).unwrap();
    assert_eq!(save_into(&mut tiny).unwrap_err(), Error::ENOSPC);
    assert!(tiny.holds_record());
    save_into(&mut nothing).unwrap();
    assert_eq!(nothing, a);
    detach().unwrap();
    assert_eq!(published(), None);
    detach().unwrap(); // detached already: no error
    save_into(&mut nothing).unwrap();
    assert!(!nothing.holds_record());
    // A setter gives a context that holds no record an empty one.
    nothing.set_attr(0, "x").unwrap();
    assert_eq!(nothing.record().unwrap().attr(0), Some(&b"x"[..]));
    saved.update().unwrap();
    assert_eq!(published(), span_and([1; 8], "a"), "a saved context publishes again");
    detach().unwrap();
}

#[test]
fn fast_paths_change_the_thread_only() {
    let ctx = context(TRACE, SPAN, "a");
    // Nothing published: the span and flags fast paths have nothing to change.
    assert_eq!(update_span_id(&[0x33; 8]).unwrap_err(), Error::ENOCTX);
    assert_eq!(update_trace_flags(0).unwrap_err(), Error::ENOCTX);
    let g = ctx.attach().unwrap();
    update_span_id(&[0x33; 8]).unwrap();
    assert_eq!(published(), span_and([0x33; 8], "a"));
    update_trace_flags(0).unwrap();
    assert_eq!(read().unwrap().trace_flags(), 0);
    update_trace_flags(1).unwrap();
    assert_eq!(read().unwrap().trace_flags(), 1);
    assert_eq!(ctx.record().unwrap().span_id(), SPAN, "the context did not change");
    assert_eq!(update_span_id(&[0; 8]).unwrap_err(), Error::EIDS);
    update_all(&[0x44; 16], &[0x55; 8], 0, &[(9, "POST"), (2, "/orders")]).unwrap();
    let rec = read().unwrap();
    assert_eq!((rec.trace_id(), rec.span_id(), rec.trace_flags()), ([0x44; 16], [0x55; 8], 0));
    assert_eq!(rec.attrs().collect::<Vec<_>>(), vec![(9, &b"POST"[..]), (2, &b"/orders"[..])]);
    // A refused update_all changes nothing.
    assert_eq!(update_all(&[0x66; 16], &[0x66; 8], 1, &[(1, "a"), (1, "b")]).unwrap_err(), Error::EDUPKEY);
    assert_eq!(update_all(&[0x66; 16], &[0; 8], 1, &[] as &[(u32, &str)]).unwrap_err(), Error::EIDS);
    assert_eq!(update_all(&[0x66; 16], &[0x66; 8], 1, &[(300, "a")]).unwrap_err(), Error::EKEY);
    assert_eq!(read().unwrap(), rec);
    // Without ids the span and flags cannot change.
    update_all(&[0; 16], &[0; 8], 0, &[(1, "no ids")]).unwrap();
    assert_eq!(update_span_id(&[0x77; 8]).unwrap_err(), Error::EIDS);
    assert_eq!(update_trace_flags(1).unwrap_err(), Error::EIDS);
    update_trace_flags(0).unwrap();
    drop(g);
    assert_eq!(published(), None);
    // update_all publishes on a thread that publishes nothing.
    update_all(&TRACE, &SPAN, 1, &[(0, "fresh")]).unwrap();
    assert_eq!(published(), span_and(SPAN, "fresh"));
    detach().unwrap();
}

#[test]
fn values_that_do_not_fit_are_the_library_errors() {
    name_keys();
    let mut ctx = Context::new().unwrap();
    assert_eq!(ctx.set_attr(256, "x").unwrap_err(), Error::EKEY);
    assert_eq!(ctx.set_attr(u32::MAX, "x").unwrap_err(), Error::EKEY);
    assert_eq!(ctx.remove_attr(256).unwrap_err(), Error::EKEY);
    assert_eq!(ctx.set_attr(0, [b'v'; 256]).unwrap_err(), Error::EVALUE);
    ctx.set_attr(0, [b'v'; 255]).unwrap();
    assert_eq!(ctx.set_attr(1, b"\xff\xfe").unwrap_err(), Error::EUTF8);
    ctx.set_attr(1, [b'w'; 255]).unwrap();
    // 2 * 257 bytes used; a third 255-byte value needs 257 of the 98 left.
    assert_eq!(ctx.set_attr(2, [b'x'; 255]).unwrap_err(), Error::ENOSPC);
    assert_eq!(ctx.set_ids(&TRACE, &[0; 8], 1).unwrap_err(), Error::EIDS);
    assert_eq!(ctx.set_ids(&[0; 16], &[0; 8], 1).unwrap_err(), Error::EIDS);
    assert_eq!(ctx.set_span_id(&SPAN).unwrap_err(), Error::EIDS, "no trace id");
    assert_eq!(ctx.set_trace_flags(1).unwrap_err(), Error::EIDS);
    assert_eq!(ctx.set_attrs(&[(5, "a"), (5, "b")]).unwrap_err(), Error::EDUPKEY);
    assert_eq!(ctx.set_attrs(&[(5, "a"), (300, "b")]).unwrap_err(), Error::EKEY);
    // Failed calls changed nothing: the two good values are all there is.
    let rec = ctx.record().unwrap();
    assert_eq!(rec.attrs().map(|(k, v)| (k, v.len())).collect::<Vec<_>>(), vec![(0, 255), (1, 255)]);
    assert!(!rec.has_ids());
    let span = ctx.attach().unwrap();
    assert_eq!(read().unwrap(), rec);
    drop(span);
}

#[test]
fn errors_carry_the_code_and_the_library_text() {
    name_keys();
    let e = Context::new().unwrap().set_attr(999, "x").unwrap_err();
    assert_eq!(e, Error::EKEY);
    assert_eq!(e.code(), sys::OTEL_THREAD_CTX_EKEY);
    let c_text = unsafe { std::ffi::CStr::from_ptr(sys::otel_thread_ctx_strerror(e.code())) };
    assert_eq!(e.message(), c_text.to_str().unwrap());
    assert!(!e.message().is_empty());
    assert_eq!(e.to_string(), format!("{} (otel-thread-ctx error -4003)", e.message()));
    assert!(format!("{:?}", e).contains("-4003"));
    let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(e);
    assert!(boxed.to_string().contains("error -4003"));
    assert_eq!(Error::from_code(-4008), Error::ENOCTX);
    assert_ne!(Error::ENOCTX.message(), Error::EKEY.message());
    let unknown = Error::from_code(-9999).message();
    for known in [Error::ENOCTX, Error::ENOSPC, Error::EIDS, Error::EOPTIONS, Error::ETHREAD, Error::ENOMEM] {
        assert_ne!(known.message(), unknown, "{:?}", known);
    }
    // The codes of the claims and frozen contexts (EBUSY -16, EPENDING
    // -4006, EFROZEN -4022) are gone from the library: it does not know
    // them.
    for gone in [-16, -4006, -4022] {
        assert_eq!(Error::from_code(gone).message(), unknown, "{}", gone);
    }
}

#[test]
fn a_context_moves_between_threads() {
    let mut ctx = context(TRACE, SPAN, "moved");
    ctx.set_trace_flags(0).unwrap();
    let ctx = std::thread::spawn(move || {
        let span = ctx.attach().unwrap();
        assert_eq!(published(), span_and(SPAN, "moved"));
        drop(span);
        ctx
    })
    .join()
    .unwrap();
    assert_eq!(published(), None, "this thread publishes nothing");
    let span = ctx.attach().unwrap();
    assert_eq!(published(), span_and(SPAN, "moved"));
    drop(span);
}

#[test]
fn decode_checks_a_record_from_elsewhere() {
    name_keys();
    let mut bytes = vec![0u8; 640];
    bytes[..16].copy_from_slice(&TRACE);
    bytes[16..24].copy_from_slice(&SPAN);
    bytes[24] = 1; // valid
    bytes[25] = 1; // flags
    let entries = [3u8, 2, b'h', b'i', 3, 1, b'!'];
    bytes[26..28].copy_from_slice(&(entries.len() as u16).to_ne_bytes());
    bytes[28..28 + entries.len()].copy_from_slice(&entries);
    let rec = Record::decode(&bytes).unwrap();
    assert_eq!(rec.trace_id(), TRACE);
    assert_eq!(rec.attr(3), Some(&b"!"[..]), "the last duplicate wins");
    assert_eq!(rec.attrs().count(), 1);
    assert_eq!(Record::decode(&bytes[..27]).unwrap_err(), Error::ETRUNCATED);
    bytes[24] = 0;
    assert_eq!(Record::decode(&bytes).unwrap_err(), Error::EINVALID);
}

#[test]
fn keys_register_find_and_name() {
    name_keys();
    let a = register_key("rust.test.key.a").unwrap();
    let b = register_key("rust.test.key.b").unwrap();
    assert_ne!(a, b);
    assert_eq!(register_key("rust.test.key.a").unwrap(), a, "same name, same index");
    assert_eq!(find_key("rust.test.key.b").unwrap(), b);
    assert_eq!(key_name(a), Some("rust.test.key.a"));
    assert!(key_count() > a.max(b));
    assert_eq!(key_name(key_count()), None);
    assert_eq!(find_key("rust.test.never.registered").unwrap_err(), Error::EUNKNOWNKEY);
    assert_eq!(register_key("").unwrap_err(), Error::ENAME);
    assert_eq!(register_key(&"k".repeat(256)).unwrap_err(), Error::ENAME);
    assert_eq!(register_key("with\0nul").unwrap_err(), Error::ENAME);
    // The index is what a record uses.
    let mut ctx = Context::new().unwrap();
    ctx.set_attr(find_key("rust.test.key.a").unwrap(), "v").unwrap();
    let span = ctx.attach().unwrap();
    assert_eq!(read().unwrap().attr(a), Some(&b"v"[..]));
    drop(span);
}

#[test]
fn self_check_finds_the_exported_slot() {
    name_keys();
    let r = self_check();
    assert_eq!(r.status, SelfCheckStatus::Ok, "{}", r.reason);
    assert!(r.result().is_ok());
    assert!(!r.reason.is_empty());
    assert_ne!(r.slot, 0);
    assert_eq!(r.slot, r.exported);
    assert!(r.exporting_modules >= 1);
    assert!(r.module.unwrap().contains("libotel-thread-ctx"));
}

#[test]
fn options_bound_the_attributes() {
    name_keys();
    let mut ctx = Context::with_options(ContextOptions { attrs_capacity: 10 }).unwrap();
    assert_eq!(ctx.capacity(), 10);
    ctx.set_attr(0, "x".repeat(8)).unwrap(); // 2 + 8 bytes: fits
    assert_eq!(ctx.set_attr(0, "x".repeat(9)).unwrap_err(), Error::ENOSPC);
    let span = ctx.attach().unwrap();
    assert_eq!(read().unwrap().attr(0), Some("x".repeat(8).as_bytes()));
    drop(span);
    let mut ids_only = Context::with_options(ContextOptions { attrs_capacity: 0 }).unwrap();
    assert_eq!(ids_only.set_attr(0, "").unwrap_err(), Error::ENOSPC);
    ids_only.set_ids(&TRACE, &SPAN, 1).unwrap();
    let err = Context::with_options(ContextOptions { attrs_capacity: 613 }).unwrap_err();
    assert_eq!(err, Error::EOPTIONS);
    assert_eq!(ContextOptions::default(), ContextOptions { attrs_capacity: 612 });
    assert_eq!(Context::new().unwrap().capacity(), 612);
}

#[test]
fn options_refuse_what_this_version_does_not_know() {
    // Through sys: the libbpf rule the safe wrapper relies on.
    let create = |bytes: &[u8]| {
        let mut raw = std::ptr::null_mut();
        // Eight-aligned, as the struct is.
        let mut buf = [0u64; 4];
        let view = unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr() as *mut u8, 32) };
        view[..bytes.len()].copy_from_slice(bytes);
        let rc = unsafe {
            sys::otel_thread_ctx_create_with(&mut raw, buf.as_ptr() as *const sys::otel_thread_ctx_options)
        };
        unsafe { sys::otel_thread_ctx_destroy(raw) };
        rc
    };
    let options = |size: usize, capacity: u32, flags: u32| {
        let mut b = size.to_ne_bytes().to_vec();
        b.extend_from_slice(&capacity.to_ne_bytes());
        b.extend_from_slice(&flags.to_ne_bytes());
        b
    };
    let known = std::mem::size_of::<sys::otel_thread_ctx_options>();
    assert_eq!(create(&options(known, 612, 0)), sys::OTEL_THREAD_CTX_OK);
    assert_eq!(create(&options(known, 0, 0)), sys::OTEL_THREAD_CTX_OK, "zero: the default");
    assert_eq!(create(&options(known, 0, 1)), sys::OTEL_THREAD_CTX_OK, "ids only");
    assert_eq!(create(&options(known, 612, 1)), sys::OTEL_THREAD_CTX_EOPTIONS, "ids only, with room");
    assert_eq!(create(&options(known, 0, 2)), sys::OTEL_THREAD_CTX_EOPTIONS, "an unknown flag");
    assert_eq!(create(&options(known, 613, 0)), sys::OTEL_THREAD_CTX_EOPTIONS);
    // A newer caller: zero bytes past the known ones are accepted, others not.
    let mut newer = options(known + 8, 10, 0);
    newer.extend_from_slice(&[0; 8]);
    assert_eq!(create(&newer), sys::OTEL_THREAD_CTX_OK);
    *newer.last_mut().unwrap() = 1;
    assert_eq!(create(&newer), sys::OTEL_THREAD_CTX_EOPTIONS);
    // An older one: the capacity it does not reach is the default.
    assert_eq!(create(&options(std::mem::size_of::<usize>(), 9999, 9999)), sys::OTEL_THREAD_CTX_OK);
    assert_eq!(create(&options(std::mem::size_of::<usize>() - 1, 0, 0)), sys::OTEL_THREAD_CTX_EOPTIONS);
    // NULL options are the defaults; destroy(NULL) does nothing.
    let mut raw = std::ptr::null_mut();
    assert_eq!(unsafe { sys::otel_thread_ctx_create_with(&mut raw, std::ptr::null()) }, sys::OTEL_THREAD_CTX_OK);
    unsafe { sys::otel_thread_ctx_destroy(raw) };
    unsafe { sys::otel_thread_ctx_destroy(std::ptr::null_mut()) };
}
