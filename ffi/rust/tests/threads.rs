// SPDX-License-Identifier: Apache-2.0
//! Threads and contexts: each thread publishes its own copy, many threads
//! attach one context at once and keep publishing it after it is dropped,
//! threads exit while publishing, and a forked child keeps publishing.
use otel_thread_ctx::{read, register_key, update_span_id, Context, Error};
use std::sync::{Arc, Barrier};

const THREADS: u8 = 8;
const ROUNDS: u32 = 2000;

/// Readers honour the key map: index 0 must name a key.
fn name_key() {
    register_key("rust.threads.worker").unwrap();
}

#[test]
// The threads must all start before any is joined: the collect is needed
// (clippy 1.63 says otherwise).
#[allow(clippy::needless_collect)]
fn each_thread_reads_its_own_context() {
    name_key();
    let barrier = Arc::new(Barrier::new(THREADS as usize));
    let handles: Vec<_> = (1..=THREADS)
        .map(|t| {
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                let name = format!("worker-{}", t);
                let mut ctx = Context::new().unwrap();
                ctx.set_ids(&[t; 16], &[t; 8], 1).unwrap();
                ctx.set_attr(0, &name).unwrap();
                let span = ctx.attach().unwrap();
                barrier.wait();
                for round in 0..ROUNDS {
                    let mut span_id = [t; 8];
                    span_id[..4].copy_from_slice(&round.to_ne_bytes());
                    update_span_id(&span_id).unwrap();
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
// The threads must all start before any is joined: the collect is needed
// (clippy 1.63 says otherwise).
#[allow(clippy::needless_collect)]
fn many_threads_attach_one_context_and_keep_publishing_after_it_is_dropped() {
    name_key();
    let mut ctx = Context::new().unwrap();
    ctx.set_ids(&[0x4b; 16], &[0x77; 8], 1).unwrap();
    ctx.set_attr(0, "shared").unwrap();
    let ctx = Arc::new(ctx);
    let expected = ctx.record().unwrap();
    let attached = Arc::new(Barrier::new(THREADS as usize + 1));
    let dropped = Arc::new(Barrier::new(THREADS as usize + 1));
    let handles: Vec<_> = (1..=THREADS)
        .map(|t| {
            let (ctx, attached, dropped) = (ctx.clone(), attached.clone(), dropped.clone());
            std::thread::spawn(move || {
                // All attach at once, from one shared reference each.
                attached.wait();
                let guard = ctx.attach().unwrap();
                assert_eq!(read().unwrap(), expected);
                drop(ctx);
                attached.wait();
                dropped.wait();
                // The context is freed: each thread publishes its copy.
                assert_eq!(read().unwrap(), expected);
                update_span_id(&[t; 8]).unwrap();
                let rec = read().unwrap();
                assert_eq!((rec.span_id(), rec.attr(0)), ([t; 8], Some(&b"shared"[..])));
                drop(guard);
                assert_eq!(read().unwrap_err(), Error::ENOCTX);
            })
        })
        .collect();
    attached.wait();
    attached.wait();
    // Every thread has attached it and let its reference go: this is the
    // last one, and dropping it frees the context.
    let ctx = Arc::try_unwrap(ctx).expect("the last reference");
    drop(ctx);
    dropped.wait();
    for h in handles {
        h.join().unwrap();
    }
}

#[test]
fn threads_exit_while_publishing() {
    name_key();
    // No guard: each thread exits publishing, and the library unpublishes
    // and takes its records back; later threads publish again.
    for round in 0..4u8 {
        let handles: Vec<_> = (1..=THREADS)
            .map(|t| {
                std::thread::spawn(move || {
                    let mut ctx = Context::new().unwrap();
                    ctx.set_ids(&[t; 16], &[round + 1; 8], 1).unwrap();
                    ctx.update().unwrap();
                    drop(ctx);
                    assert_eq!(read().unwrap().span_id(), [round + 1; 8]);
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
    }
    assert_eq!(read().unwrap_err(), Error::ENOCTX, "this thread published nothing");
}

extern "C" {
    fn fork() -> i32;
    fn waitpid(pid: i32, status: *mut i32, options: i32) -> i32;
    fn _exit(status: i32) -> !;
}

#[test]
fn a_forked_child_keeps_publishing_what_the_forking_thread_did() {
    name_key();
    let mut ctx = Context::new().unwrap();
    ctx.set_ids(&[0x4b; 16], &[0x5c; 8], 1).unwrap();
    ctx.set_attr(0, "forked").unwrap();
    let guard = ctx.attach().unwrap();
    let expected = read().unwrap();
    // Other threads publishing at the fork: their records are the child's
    // to take back.
    let stop = Arc::new(Barrier::new(3));
    let others: Vec<_> = (0..2)
        .map(|_| {
            let (ctx, stop) = (ctx.try_clone().unwrap(), stop.clone());
            std::thread::spawn(move || {
                let _g = ctx.attach().unwrap();
                stop.wait();
                stop.wait();
            })
        })
        .collect();
    stop.wait();
    // The child runs only what is async-signal-safe in a process forked
    // from a multithreaded one: reads and the fast paths, no allocation.
    let pid = unsafe { fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let code = match read() {
            Ok(rec) if rec == expected => match update_span_id(&[0x99; 8]) {
                Ok(()) => match read() {
                    Ok(rec) if rec.span_id() == [0x99; 8] && rec.attr(0) == Some(&b"forked"[..]) => 0,
                    _ => 3,
                },
                Err(_) => 2,
            },
            _ => 1,
        };
        unsafe { _exit(code) };
    }
    stop.wait();
    for h in others {
        h.join().unwrap();
    }
    let mut status = 0;
    assert_eq!(unsafe { waitpid(pid, &mut status, 0) }, pid);
    // WIFEXITED and WEXITSTATUS.
    assert_eq!(status & 0x7f, 0, "the child was killed by signal {}", status & 0x7f);
    let code = (status >> 8) & 0xff;
    assert_eq!(code, 0, "child: 1 lost the record, 2 cannot update it, 3 published the wrong one");
    assert_eq!(read().unwrap(), expected, "the parent is unchanged");
    drop(guard);
}
