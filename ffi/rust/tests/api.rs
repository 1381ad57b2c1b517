// SPDX-License-Identifier: Apache-2.0
//! The safe wrapper against the library: publishing, errors, guards.  Each
//! test runs on its own thread (libtest's), so each has its own slot.
use otel_thread_ctx::{
    find_key, key_count, key_name, read, register_key, self_check, sys, thread_has_context,
    Context, ContextOptions, Error, Record, SelfCheckStatus, SharedContext,
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

fn published(trace: [u8; 16], span: [u8; 8]) -> Context {
    name_keys();
    let mut ctx = Context::new().unwrap();
    ctx.set_ids(&trace, &span, 1).unwrap();
    ctx.update().unwrap();
    ctx
}

#[test]
fn attach_publishes_and_drop_unpublishes() {
    name_keys();
    assert_eq!(read().unwrap_err(), Error::ENOCTX);
    assert!(!thread_has_context());
    let mut ctx = Context::new().unwrap();
    ctx.set_ids(&TRACE, &SPAN, 0x01).unwrap();
    ctx.set_attr(3, "GET /users/{id}").unwrap();
    ctx.set_attr(7, b"GET").unwrap();
    let span = ctx.update_attach().unwrap();
    assert!(thread_has_context());
    assert!(!span.has_previous());
    let rec = read().unwrap();
    assert_eq!(rec.trace_id(), TRACE);
    assert_eq!(rec.span_id(), SPAN);
    assert_eq!(rec.trace_flags(), 1);
    assert!(rec.has_ids());
    assert_eq!(rec.attr(3), Some(&b"GET /users/{id}"[..]));
    assert_eq!(rec.attr(4), None);
    let attrs: Vec<(u32, &[u8])> = rec.attrs().collect();
    assert_eq!(attrs, vec![(3, &b"GET /users/{id}"[..]), (7, &b"GET"[..])]);
    drop(span);
    assert_eq!(read().unwrap_err(), Error::ENOCTX);
}

#[test]
fn edits_through_the_guard_publish_on_commit() {
    name_keys();
    let mut span = published(TRACE, SPAN).attach().unwrap();
    span.set_attr(1, "draft").unwrap();
    assert_eq!(read().unwrap().attr(1), None, "not committed yet");
    span.update().unwrap();
    assert_eq!(read().unwrap().attr(1), Some(&b"draft"[..]));
    span.update_span_id(&[0x33; 8]).unwrap();
    assert_eq!(read().unwrap().span_id(), [0x33; 8]);
    span.update_all(&[0x44; 16], &[0x55; 8], 0, &[(9, "POST"), (2, "/orders")]).unwrap();
    let rec = read().unwrap();
    assert_eq!((rec.trace_id(), rec.span_id(), rec.trace_flags()), ([0x44; 16], [0x55; 8], 0));
    assert_eq!(rec.attrs().collect::<Vec<_>>(), vec![(9, &b"POST"[..]), (2, &b"/orders"[..])]);
    span.invalidate().unwrap();
    assert_eq!(read().unwrap_err(), Error::ENOCTX, "withdrawn until the next commit");
    span.remove_attr(9).unwrap();
    span.update().unwrap();
    assert_eq!(read().unwrap().attrs().collect::<Vec<_>>(), vec![(2, &b"/orders"[..])]);
    span.clear().unwrap();
    span.update().unwrap();
    let rec = read().unwrap();
    assert!(!rec.has_ids());
    assert_eq!(rec.attrs().count(), 0);
    let ctx = span.detach().unwrap();
    assert!(!thread_has_context());
    // A detached context attaches again.
    let again = ctx.attach().unwrap();
    assert!(thread_has_context());
    drop(again);
}

#[test]
fn attach_refuses_uncommitted_edits_and_gives_the_context_back() {
    name_keys();
    let mut ctx = Context::new().unwrap();
    ctx.set_attr(0, "x").unwrap();
    let err = ctx.attach().unwrap_err();
    assert_eq!(err.error, Error::EPENDING);
    assert_eq!(read().unwrap_err(), Error::ENOCTX, "nothing published");
    let ctx = err.into_context();
    let span = ctx.update_attach().unwrap();
    assert_eq!(read().unwrap().attr(0), Some(&b"x"[..]));
    drop(span);
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
    let span = ctx.update_attach().unwrap();
    let rec = read().unwrap();
    assert_eq!(rec.attrs().map(|(k, v)| (k, v.len())).collect::<Vec<_>>(), vec![(0, 255), (1, 255)]);
    assert!(!rec.has_ids());
    drop(span);
}

#[test]
fn errors_carry_the_code_and_the_library_text() {
    name_keys();
    let e = Context::new().unwrap().set_attr(999, "x").unwrap_err();
    assert_eq!(e.code(), sys::OTEL_THREAD_CTX_EKEY);
    let c_text = unsafe { std::ffi::CStr::from_ptr(sys::otel_thread_ctx_strerror(e.code())) };
    assert_eq!(e.message(), c_text.to_str().unwrap());
    assert!(!e.message().is_empty());
    assert_eq!(e.to_string(), format!("{} (otel-thread-ctx error -4003)", e.message()));
    let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(e);
    assert!(boxed.to_string().contains("error -4003"));
    assert_eq!(Error::from_code(-16), Error::EBUSY);
    assert_ne!(Error::EBUSY.message(), Error::EKEY.message());
}

#[test]
fn nested_guards_restore_the_previous_context() {
    name_keys();
    let outer = published([1; 16], [1; 8]).attach().unwrap();
    let inner = published([2; 16], [2; 8]).attach().unwrap();
    assert!(inner.has_previous());
    assert_eq!(read().unwrap().trace_id(), [2; 16]);
    drop(inner);
    assert_eq!(read().unwrap().trace_id(), [1; 16]);
    drop(outer);
    assert_eq!(read().unwrap_err(), Error::ENOCTX);
}

#[test]
fn the_previous_context_is_restored_with_its_latest_edits() {
    name_keys();
    // The outer context is detached while the inner one runs; its owner
    // (the outer guard) may edit it meanwhile.
    let mut outer = published([1; 16], [1; 8]).attach().unwrap();
    let inner = published([2; 16], [2; 8]).attach().unwrap();
    outer.set_attr(4, "edited meanwhile").unwrap();
    drop(inner);
    let rec = read().unwrap();
    assert_eq!(rec.trace_id(), [1; 16]);
    assert_eq!(rec.attr(4), Some(&b"edited meanwhile"[..]));
    drop(outer);
}

#[test]
fn guards_dropped_out_of_order_free_nothing_in_use() {
    name_keys();
    // On a thread of its own: the context left behind is freed by the
    // library when the thread exits.
    std::thread::spawn(|| {
        let outer = published([1; 16], [1; 8]).attach().unwrap();
        let inner = published([2; 16], [2; 8]).attach().unwrap();
        // The outer context is not the attached one: detach refuses and
        // leaves it to the inner guard.
        assert_eq!(outer.detach().unwrap_err(), Error::EBUSY);
        assert_eq!(read().unwrap().trace_id(), [2; 16], "unchanged");
        drop(inner);
        // The inner guard attached the outer context again, which the
        // thread now publishes until it exits.
        assert_eq!(read().unwrap().trace_id(), [1; 16]);
    })
    .join()
    .unwrap();
}

#[test]
fn a_detached_context_moves_between_threads() {
    name_keys();
    let mut ctx = Context::new().unwrap();
    ctx.set_ids(&TRACE, &SPAN, 1).unwrap();
    let ctx = std::thread::spawn(move || {
        let span = ctx.update_attach().unwrap();
        assert_eq!(read().unwrap().trace_id(), TRACE);
        span.detach().unwrap()
    })
    .join()
    .unwrap();
    assert_eq!(read().unwrap_err(), Error::ENOCTX, "this thread publishes nothing");
    let span = ctx.attach().unwrap();
    assert_eq!(read().unwrap().span_id(), SPAN);
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
    let span = ctx.update_attach().unwrap();
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
    let mut ctx = Context::with_options(ContextOptions { attrs_capacity: 10, ..Default::default() }).unwrap();
    ctx.set_attr(0, "x".repeat(8)).unwrap(); // 2 + 8 bytes: fits
    assert_eq!(ctx.set_attr(0, "x".repeat(9)).unwrap_err(), Error::ENOSPC);
    let span = ctx.update_attach().unwrap();
    assert_eq!(read().unwrap().attr(0), Some("x".repeat(8).as_bytes()));
    drop(span);
    let mut ids_only = Context::with_options(ContextOptions { attrs_capacity: 0, free_with_thread: false }).unwrap();
    assert_eq!(ids_only.set_attr(0, "").unwrap_err(), Error::ENOSPC);
    ids_only.set_ids(&TRACE, &SPAN, 1).unwrap();
    let err = Context::with_options(ContextOptions { attrs_capacity: 613, ..Default::default() }).unwrap_err();
    assert_eq!(err, Error::EOPTIONS);
    assert_eq!(ContextOptions::default(), ContextOptions { attrs_capacity: 612, free_with_thread: true });
}

#[test]
fn committed_and_update_trace_flags() {
    name_keys();
    let mut ctx = Context::new().unwrap();
    ctx.set_ids(&TRACE, &SPAN, 0).unwrap();
    ctx.set_attr(2, "v1").unwrap();
    assert!(!ctx.committed().unwrap().has_ids(), "nothing committed yet");
    ctx.update().unwrap();
    ctx.set_attr(2, "draft").unwrap();
    assert_eq!(ctx.committed().unwrap().attr(2), Some(&b"v1"[..]));
    let mut span = ctx.attach().unwrap_err().into_context().update_attach().unwrap();
    span.update_trace_flags(1).unwrap();
    assert_eq!(read().unwrap().trace_flags(), 1);
    assert_eq!(span.committed().unwrap().attr(2), Some(&b"draft"[..]));
    span.invalidate().unwrap();
    assert_eq!(span.committed().unwrap().trace_flags(), 1, "even while invalidated");
    drop(span);
    let mut no_ids = Context::new().unwrap();
    assert_eq!(no_ids.update_trace_flags(1).unwrap_err(), Error::EIDS);
}

#[test]
fn freeze_needs_a_context_not_freed_with_its_thread() {
    name_keys();
    let err = Context::new().unwrap().freeze().unwrap_err();
    assert_eq!(err.error, Error::EOPTIONS);
    // The context comes back, usable.
    let span = err.into_context().update_attach().unwrap();
    drop(span);
    let mut ctx = Context::with_options(ContextOptions { free_with_thread: false, ..Default::default() }).unwrap();
    ctx.set_ids(&TRACE, &SPAN, 1).unwrap();
    ctx.set_attr(5, "task").unwrap();
    let shared = ctx.freeze().unwrap();
    let rec = shared.committed().unwrap();
    assert_eq!((rec.span_id(), rec.attr(5)), (SPAN, Some(&b"task"[..])), "freeze commits");
    let guard = shared.attach().unwrap();
    assert!(!guard.has_previous());
    assert_eq!(guard.context().as_ptr(), shared.as_ptr());
    assert_eq!(read().unwrap().attr(5), Some(&b"task"[..]));
    drop(guard);
    assert_eq!(read().unwrap_err(), Error::ENOCTX);
}

#[test]
// The threads must all start before any is joined: the collect is needed
// (clippy 1.63 says otherwise).
#[allow(clippy::needless_collect)]
fn a_shared_context_is_published_by_many_threads_at_once() {
    name_keys();
    let shared = SharedContext::new(&TRACE, &[0x77; 8], 1, &[(6, "shared")]).unwrap();
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(5));
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let shared = shared.clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let guard = shared.attach().unwrap();
                barrier.wait(); // all publish it at once
                barrier.wait(); // and the caller's clone is gone
                let rec = read().unwrap();
                assert_eq!((rec.span_id(), rec.attr(6)), ([0x77; 8], Some(&b"shared"[..])));
                assert_eq!(shared.committed().unwrap().span_id(), [0x77; 8]);
                drop(guard);
                assert_eq!(read().unwrap_err(), Error::ENOCTX);
            })
        })
        .collect();
    barrier.wait();
    drop(shared);
    barrier.wait();
    for h in handles {
        h.join().unwrap();
    }
}

#[test]
fn shared_and_owned_guards_nest() {
    name_keys();
    let shared = SharedContext::new(&TRACE, &[0x11; 8], 1, &[] as &[(u32, &str)]).unwrap();
    let outer = shared.attach().unwrap();
    let inner = published(TRACE, [0x22; 8]).attach().unwrap();
    assert!(inner.has_previous());
    let innermost = shared.attach().unwrap();
    assert!(innermost.has_previous());
    assert_eq!(read().unwrap().span_id(), [0x11; 8]);
    drop(innermost);
    assert_eq!(read().unwrap().span_id(), [0x22; 8]);
    drop(inner);
    assert_eq!(read().unwrap().span_id(), [0x11; 8]);
    drop(outer);
    assert_eq!(read().unwrap_err(), Error::ENOCTX);
}

#[test]
fn a_shared_guard_dropped_out_of_order_keeps_its_context() {
    name_keys();
    std::thread::spawn(|| {
        let shared = SharedContext::new(&TRACE, &[0x33; 8], 1, &[] as &[(u32, &str)]).unwrap();
        let outer = shared.attach().unwrap();
        let inner = published(TRACE, [0x44; 8]).attach().unwrap();
        drop(outer); // out of order: changes nothing
        drop(shared); // the last clone; the context must stay for `inner`
        assert_eq!(read().unwrap().span_id(), [0x44; 8]);
        drop(inner); // attaches the shared context again
        assert_eq!(read().unwrap().span_id(), [0x33; 8]);
    })
    .join()
    .unwrap();
}

#[test]
fn frozen_contexts_refuse_edits_through_sys() {
    name_keys();
    let shared = SharedContext::new(&TRACE, &SPAN, 1, &[] as &[(u32, &str)]).unwrap();
    let rc = unsafe { sys::otel_thread_ctx_update(shared.as_ptr()) };
    assert_eq!(Error::from_code(rc), Error::EFROZEN);
    assert!(!Error::EFROZEN.message().to_lowercase().contains("unknown"));
}
