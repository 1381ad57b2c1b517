// SPDX-License-Identifier: Apache-2.0
//! Async tasks: a task's context published by whichever thread polls it.
//!
//! An executor may poll a task on any of its threads, and between two polls
//! the thread runs other tasks.  [`WithContext`] wraps a future: for the
//! length of each poll the polling thread publishes the task's
//! [`SharedContext`], and when the poll returns it publishes again what it
//! published before.  It needs no particular executor: anything that polls
//! futures will do.
//!
//! ```
//! use otel_thread_ctx::{read, task::WithContextExt, SharedContext};
//!
//! let ctx = SharedContext::new(&[0x4b; 16], &[0x5c; 8], 1, &[] as &[(u32, &str)])?;
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

use crate::SharedContext;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

/// A future whose polls publish a [`SharedContext`] on the polling thread
/// ([`WithContextExt::with_context`]).
#[derive(Debug)]
#[must_use = "futures do nothing unless polled"]
pub struct WithContext<F> {
    context: SharedContext,
    future: F,
}

impl<F> WithContext<F> {
    /// `future`, publishing `context` while it is polled.
    pub fn new(context: SharedContext, future: F) -> Self {
        WithContext { context, future }
    }

    /// The context its polls publish.
    pub fn context(&self) -> &SharedContext {
        &self.context
    }

    /// The wrapped future.
    pub fn into_inner(self) -> F {
        self.future
    }
}

impl<F: Future> Future for WithContext<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<F::Output> {
        // SAFETY: `future` is pinned structurally: it is never moved out of
        // a pinned WithContext (into_inner takes it unpinned), WithContext
        // has no Drop of its own, and it is Unpin only when F is.
        let this = unsafe { self.get_unchecked_mut() };
        let future = unsafe { Pin::new_unchecked(&mut this.future) };
        // Published for this poll only; if the thread cannot publish
        // (ETHREAD), the task still runs.
        let _published = this.context.attach();
        future.poll(cx)
    }
}

/// [`WithContext`] for any future: `future.with_context(ctx)`.
pub trait WithContextExt: Future + Sized {
    /// This future, publishing `context` on the thread that polls it, for
    /// the length of each poll.
    fn with_context(self, context: SharedContext) -> WithContext<Self> {
        WithContext::new(context, self)
    }
}

impl<F: Future> WithContextExt for F {}
