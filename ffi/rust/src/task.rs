// SPDX-License-Identifier: Apache-2.0
//! Async tasks: a task's context published by whichever thread polls it.
//!
//! An executor may poll a task on any of its threads, and between two polls
//! the thread runs other tasks.  [`WithContext`] wraps a future: each poll
//! attaches the task's [`Context`] on the polling thread, and when the poll
//! returns the thread publishes again what it published before, as a scope
//! ([`Context::attach`]) would.  It needs no particular executor: anything
//! that polls futures will do.
//!
//! What the task published when a poll returned is what the next poll
//! publishes: a child span the task published with
//! [`update_span_id`](crate::update_span_id) (or a sampling decision, or a
//! new request) lasts across its `.await`s, whichever thread resumes it.
//! The task's context holds it between polls ([`WithContext::context`]),
//! when it fits: attributes beyond the context's capacity (see
//! [`ContextOptions`](crate::ContextOptions)) are not kept, and the next
//! poll then publishes the context as it was.
//!
//! ```
//! use otel_thread_ctx::{read, task::WithContextExt, Context};
//!
//! let mut ctx = Context::new()?;
//! ctx.set_ids(&[0x4b; 16], &[0x5c; 8], 1)?;
//! let request = async {
//!     // Inside the task, on whichever thread polls it:
//!     read().map(|rec| rec.span_id())
//! }
//! .with_context(ctx);
//! # let waker = std::sync::Arc::new(Noop).into();
//! # struct Noop;
//! # impl std::task::Wake for Noop { fn wake(self: std::sync::Arc<Self>) {} }
//! # let mut cx = std::task::Context::from_waker(&waker);
//! # let mut request = Box::pin(request);
//! # assert_eq!(request.as_mut().poll(&mut cx), std::task::Poll::Ready(Ok([0x5c; 8])));
//! # use std::future::Future;
//! # Ok::<(), otel_thread_ctx::Error>(())
//! ```

use crate::{sys, Context};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

/// A future whose polls publish a [`Context`] on the polling thread
/// ([`WithContextExt::with_context`]).
///
/// It is `Send` when the future is (a context is `Send`).
#[derive(Debug)]
#[must_use = "futures do nothing unless polled"]
pub struct WithContext<F> {
    context: Context,
    // What the polling thread published before the poll, put back after
    // it; allocated at the first poll, used again by every later one.
    saved: Option<Context>,
    future: F,
}

impl<F> WithContext<F> {
    /// `future`, publishing `context` while it is polled.
    pub fn new(context: Context, future: F) -> Self {
        WithContext { context, saved: None, future }
    }

    /// The context the next poll publishes: the one given, or what the
    /// task published when its last poll returned.
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// The wrapped future.
    pub fn into_inner(self) -> F {
        self.future
    }

    /// The task's context and the wrapped future.
    pub fn into_parts(self) -> (Context, F) {
        (self.context, self.future)
    }
}

/// Puts back, when a poll ends (returning or unwinding), what the thread
/// published before it, keeping what the task published in its context.
struct EndOfPoll<'a> {
    task: &'a mut Context,
    saved: &'a Context,
}

impl Drop for EndOfPoll<'_> {
    fn drop(&mut self) {
        // One call: the thread publishes `saved` again, and the task's
        // context receives what the thread published.  ENOSPC when that
        // does not fit the task's capacity (it then changed nothing): put
        // back without keeping it.  Neither can fail otherwise: the thread
        // has published, so its records are taken.
        let rc = unsafe { sys::otel_thread_ctx_attach(self.saved.as_ptr(), self.task.as_mut_ptr()) };
        if rc != sys::OTEL_THREAD_CTX_OK {
            let _ = self.saved.update();
        }
    }
}

impl<F: Future> Future for WithContext<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<F::Output> {
        // SAFETY: `future` is pinned structurally: it is never moved out of
        // a pinned WithContext (into_inner and into_parts take it
        // unpinned), WithContext has no Drop of its own, and it is Unpin
        // only when F is.  The contexts are not pinned.
        let this = unsafe { self.get_unchecked_mut() };
        let future = unsafe { Pin::new_unchecked(&mut this.future) };
        if this.saved.is_none() {
            // Full capacity: what any thread publishes fits.
            this.saved = Context::new().ok();
        }
        // Published for this poll only; if the thread cannot publish
        // (ENOMEM, ETHREAD), the task still runs.
        let _end = match &mut this.saved {
            Some(saved) => {
                let rc = unsafe { sys::otel_thread_ctx_attach(this.context.as_ptr(), saved.as_mut_ptr()) };
                if rc == sys::OTEL_THREAD_CTX_OK {
                    Some(EndOfPoll { task: &mut this.context, saved })
                } else {
                    None
                }
            }
            None => None,
        };
        future.poll(cx)
    }
}

/// [`WithContext`] for any future: `future.with_context(ctx)`.
pub trait WithContextExt: Future + Sized {
    /// This future, publishing `context` on the thread that polls it, for
    /// the length of each poll.
    fn with_context(self, context: Context) -> WithContext<Self> {
        WithContext::new(context, self)
    }
}

impl<F: Future> WithContextExt for F {}
