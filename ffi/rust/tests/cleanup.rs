// SPDX-License-Identifier: Apache-2.0
//! Contexts are freed whatever the threads that published them did: threads
//! that end while they publish a context (with its guard alive in a
//! thread-local, or after `update` with no guard at all), and a context
//! dropped while threads still publish copies of it.  A weak reference to
//! the context dies, and the C heap does not grow with the number of
//! threads (glibc's mallinfo2(); under AddressSanitizer, which reads 0
//! there, its leak check at exit does the same).
use otel_thread_ctx::{read, register_key, Attached, Context, Error};
use std::cell::RefCell;
use std::sync::{Arc, Barrier, Mutex};

const THREADS: usize = 200;

/// One test at a time: the heap is the process's.
static SERIAL: Mutex<()> = Mutex::new(());

thread_local! {
    static SCOPE: RefCell<Option<Attached>> = const { RefCell::new(None) };
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn heap_in_use() -> Option<usize> {
    #[repr(C)]
    struct MallInfo2 {
        _arena: usize,
        _ordblks: usize,
        _smblks: usize,
        _hblks: usize,
        hblkhd: usize,
        _usmblks: usize,
        _fsmblks: usize,
        uordblks: usize,
        _fordblks: usize,
        _keepcost: usize,
    }
    extern "C" {
        fn mallinfo2() -> MallInfo2;
    }
    // SAFETY: a plain C call that returns a struct by value.
    let m = unsafe { mallinfo2() };
    let used = m.uordblks + m.hblkhd;
    // A sanitizer's allocator reports nothing here.
    if used == 0 {
        None
    } else {
        Some(used)
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn heap_in_use() -> Option<usize> {
    None
}

fn traced() -> Context {
    let mut ctx = Context::new().unwrap();
    ctx.set_ids(&[7; 16], &[8; 8], 1).unwrap();
    let key = register_key("rust.cleanup.key").unwrap();
    ctx.set_attr(key, "cleanup").unwrap();
    ctx
}

/// Runs `scenario` once to warm up, then measures the heap around a second
/// run: it may not keep a context's worth of memory per thread.
fn heap_stays_flat(what: &str, scenario: impl Fn()) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    scenario();
    let before = heap_in_use();
    scenario();
    let after = heap_in_use();
    if let (Some(before), Some(after)) = (before, after) {
        // A context with room for 612 bytes of attributes is over 600
        // bytes: one kept per thread would grow the heap by 120 KB.
        assert!(
            after <= before + THREADS * 64,
            "{}: the heap grew by {} bytes over {} threads",
            what,
            after - before,
            THREADS
        );
    }
}

#[test]
fn thread_ends_with_its_guard_in_a_thread_local() {
    heap_stays_flat("guards in thread-locals", || {
        let ctx = Arc::new(traced());
        let weak = Arc::downgrade(&ctx);
        for _ in 0..THREADS {
            let ctx = Arc::clone(&ctx);
            std::thread::spawn(move || {
                let guard = ctx.attach().unwrap();
                SCOPE.with(|s| *s.borrow_mut() = Some(guard));
                assert_eq!(read().unwrap().span_id(), [8; 8]);
                // The thread ends here: its thread-local drops the guard.
            })
            .join()
            .unwrap();
        }
        drop(ctx);
        assert!(weak.upgrade().is_none(), "the context outlives the threads");
        assert_eq!(read().unwrap_err(), Error::ENOCTX);
    });
}

#[test]
fn thread_ends_publishing_with_no_guard() {
    heap_stays_flat("threads that end publishing", || {
        let ctx = Arc::new(traced());
        let weak = Arc::downgrade(&ctx);
        for _ in 0..THREADS {
            let ctx = Arc::clone(&ctx);
            std::thread::spawn(move || {
                ctx.update().unwrap();
                // Nested scopes left open by the thread's end.
                let outer = Context::new().unwrap().attach().unwrap();
                let inner = ctx.attach().unwrap();
                SCOPE.with(|s| *s.borrow_mut() = Some(inner));
                std::mem::drop(outer);
            })
            .join()
            .unwrap();
        }
        drop(ctx);
        assert!(weak.upgrade().is_none(), "the context outlives the threads");
    });
}

#[test]
fn context_dropped_while_threads_publish_it() {
    heap_stays_flat("a context dropped while published", || {
        const N: usize = 8;
        let holder = Arc::new(Mutex::new(Some(Arc::new(traced()))));
        let weak = Arc::downgrade(holder.lock().unwrap().as_ref().unwrap());
        let barrier = Arc::new(Barrier::new(N + 1));
        let threads: Vec<_> = (0..N)
            .map(|_| {
                let holder = Arc::clone(&holder);
                let barrier = Arc::clone(&barrier);
                std::thread::spawn(move || {
                    let ctx = holder.lock().unwrap().as_ref().map(Arc::clone).unwrap();
                    let _guard = ctx.attach().unwrap();
                    drop(ctx);
                    barrier.wait(); // 1: all publish copies
                    barrier.wait(); // 2: the context is gone
                    assert_eq!(read().unwrap().span_id(), [8; 8]);
                })
            })
            .collect();
        barrier.wait();
        holder.lock().unwrap().take();
        assert!(weak.upgrade().is_none(), "the threads' copies keep the context alive");
        barrier.wait();
        for t in threads {
            t.join().unwrap();
        }
    });
}
