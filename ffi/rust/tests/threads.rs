// SPDX-License-Identifier: Apache-2.0
//! Threads each publishing their own context: every thread reads back its
//! own ids and attributes, never another thread's, while all of them change
//! theirs.
use otel_thread_ctx::{read, register_key, Context, Error};
use std::sync::{Arc, Barrier};

const THREADS: u8 = 8;
const ROUNDS: u32 = 2000;

#[test]
// The threads must all start before any is joined: the collect is needed
// (clippy 1.63 says otherwise).
#[allow(clippy::needless_collect)]
fn each_thread_reads_its_own_context() {
    // Readers honour the key map: index 0 must name a key.
    register_key("rust.threads.worker").unwrap();
    let barrier = Arc::new(Barrier::new(THREADS as usize));
    let handles: Vec<_> = (1..=THREADS)
        .map(|t| {
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                let name = format!("worker-{}", t);
                let mut ctx = Context::new().unwrap();
                ctx.set_ids(&[t; 16], &[t; 8], 1).unwrap();
                ctx.set_attr(0, &name).unwrap();
                let mut span = ctx.update_attach().unwrap();
                barrier.wait();
                for round in 0..ROUNDS {
                    let mut span_id = [t; 8];
                    span_id[..4].copy_from_slice(&round.to_ne_bytes());
                    span.update_span_id(&span_id).unwrap();
                    let rec = read().unwrap();
                    assert_eq!(rec.trace_id(), [t; 16]);
                    assert_eq!(rec.span_id(), span_id);
                    assert_eq!(rec.attr(0), Some(name.as_bytes()));
                }
                drop(span);
                assert_eq!(read().unwrap_err(), Error::ENOCTX);
                ROUNDS
            })
        })
        .collect();
    let total: u32 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(total, THREADS as u32 * ROUNDS);
}

#[test]
fn a_thread_exiting_with_a_context_attached_leaves_it_to_the_library() {
    // The guard is forgotten: the library unpublishes and frees the context
    // at thread exit, and Rust never touches it again.
    for t in 1..=THREADS {
        std::thread::spawn(move || {
            let span = Context::new().unwrap().update_attach().unwrap();
            assert!(read().is_ok());
            std::mem::forget(span);
            let _ = t;
        })
        .join()
        .unwrap();
    }
    assert_eq!(read().unwrap_err(), Error::ENOCTX);
}
