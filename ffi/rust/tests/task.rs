// SPDX-License-Identifier: Apache-2.0
//! task::WithContext under a minimal executor written here: worker threads
//! take tasks from one queue, so every task is polled on several threads,
//! one poll at a time.  Inside each poll the polling thread must publish
//! that task's context, with the span the task itself published last;
//! between polls it publishes its own (each worker runs under a context of
//! its own, which a poll must give back).
use otel_thread_ctx::task::{WithContext, WithContextExt};
use otel_thread_ctx::{read, register_key, update_span_id, Context, ContextOptions, Error};
use std::collections::{HashSet, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context as TaskContext, Poll, Wake, Waker};

const WORKERS: usize = 4;
const TASKS: u8 = 12;
const POLLS: usize = 50;

type BoxedTask = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The run queue: tasks ready to be polled, and how many are not done.
struct Executor {
    queue: Mutex<VecDeque<Arc<Task>>>,
    ready: Condvar,
    pending: AtomicUsize,
}

struct Task {
    future: Mutex<Option<BoxedTask>>,
    executor: Arc<Executor>,
}

impl Wake for Task {
    fn wake(self: Arc<Self>) {
        let executor = self.executor.clone();
        executor.queue.lock().unwrap().push_back(self);
        executor.ready.notify_one();
    }
}

impl Executor {
    fn spawn(self: &Arc<Self>, future: impl Future<Output = ()> + Send + 'static) {
        self.pending.fetch_add(1, Ordering::SeqCst);
        let task = Arc::new(Task { future: Mutex::new(Some(Box::pin(future))), executor: self.clone() });
        Waker::from(task).wake();
    }

    /// A worker: polls tasks until none is left.
    fn run(self: &Arc<Self>) {
        loop {
            let task = {
                let mut queue = self.queue.lock().unwrap();
                loop {
                    if let Some(task) = queue.pop_front() {
                        break task;
                    }
                    if self.pending.load(Ordering::SeqCst) == 0 {
                        return;
                    }
                    queue = self.ready.wait(queue).unwrap();
                }
            };
            let waker = Waker::from(task.clone());
            let mut cx = TaskContext::from_waker(&waker);
            let mut slot = task.future.lock().unwrap();
            if let Some(mut future) = slot.take() {
                if future.as_mut().poll(&mut cx).is_pending() {
                    *slot = Some(future);
                    drop(slot);
                    // Let the other workers take the next tasks, so that
                    // each task moves between threads.
                    std::thread::sleep(std::time::Duration::from_millis(1));
                } else if self.pending.fetch_sub(1, Ordering::SeqCst) == 1 {
                    // The last task: wake the idle workers, under the lock
                    // they check `pending` with, so that none misses it.
                    drop(slot);
                    let _queue = self.queue.lock().unwrap();
                    self.ready.notify_all();
                }
            }
        }
    }
}

/// Returns Pending once (waking itself at once), so that the task goes
/// back to the queue and some worker polls it again.
struct YieldNow(bool);

impl Future for YieldNow {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

fn span_of(task: u8) -> [u8; 8] {
    [task + 1; 8]
}

/// The child span task `task` publishes in its poll `poll`.
fn child_span(task: u8, poll: usize) -> [u8; 8] {
    let mut span = span_of(task);
    span[..4].copy_from_slice(&(poll as u32 + 1).to_ne_bytes());
    span
}

fn task_context(span: [u8; 8], attrs: &[(u32, &str)]) -> Context {
    let mut ctx = Context::new().unwrap();
    ctx.set_ids(&[0x4b; 16], &span, 1).unwrap();
    ctx.set_attrs(attrs).unwrap();
    ctx
}

#[test]
// The threads must all start before any is joined: the collect is needed
// (clippy 1.63 says otherwise).
#[allow(clippy::needless_collect)]
fn each_poll_publishes_its_tasks_context() {
    let key = register_key("rust.task.name").unwrap();
    let executor = Arc::new(Executor {
        queue: Mutex::new(VecDeque::new()),
        ready: Condvar::new(),
        pending: AtomicUsize::new(0),
    });
    // Which threads polled each task: several, if the queue spread them.
    let pollers: Arc<Mutex<Vec<HashSet<std::thread::ThreadId>>>> =
        Arc::new(Mutex::new(vec![HashSet::new(); TASKS as usize]));
    for t in 0..TASKS {
        let name = format!("task-{}", t);
        let ctx = task_context(span_of(t), &[(key, name.as_str())]);
        let pollers = pollers.clone();
        executor.spawn(
            async move {
                let mut span = span_of(t);
                for poll in 0..POLLS {
                    // Inside the poll: this task's context, on whichever
                    // thread runs it, with the child span it published in
                    // its last poll.
                    let rec = read().expect("a poll publishes the task's context");
                    assert_eq!(rec.span_id(), span);
                    assert_eq!(rec.attr(key), Some(name.as_bytes()));
                    pollers.lock().unwrap()[t as usize].insert(std::thread::current().id());
                    span = child_span(t, poll);
                    update_span_id(&span).unwrap();
                    YieldNow(false).await;
                }
            }
            .with_context(ctx),
        );
    }
    let start = Arc::new(std::sync::Barrier::new(WORKERS));
    let workers: Vec<_> = (0..WORKERS)
        .map(|w| {
            let (executor, start) = (executor.clone(), start.clone());
            std::thread::spawn(move || {
                // The worker's own context, which every poll gives back.
                let mut own = Context::new().unwrap();
                own.set_ids(&[0x99; 16], &[w as u8 + 0x80; 8], 0).unwrap();
                let _own = own.attach().unwrap();
                start.wait();
                executor.run();
                assert_eq!(read().unwrap().span_id(), [w as u8 + 0x80; 8], "restored after the polls");
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let pollers = pollers.lock().unwrap();
    let spread = pollers.iter().filter(|threads| threads.len() > 1).count();
    assert!(spread > 0, "no task was polled on more than one thread: {:?}", *pollers);
}

#[test]
fn a_poll_restores_nothing_when_nothing_was_published() {
    let ctx = task_context([0x5c; 8], &[]);
    let mut future = Box::pin(async { read().map(|r| r.span_id()) }.with_context(ctx.clone()));
    let waker = Waker::from(Arc::new(Noop));
    let mut cx = TaskContext::from_waker(&waker);
    assert_eq!(future.as_mut().poll(&mut cx), Poll::Ready(Ok([0x5c; 8])));
    assert_eq!(read().unwrap_err(), Error::ENOCTX);
    let wrapped = WithContext::new(ctx, async { 7 });
    assert_eq!(wrapped.context().record().unwrap().span_id(), [0x5c; 8]);
    let (ctx, _inner) = wrapped.into_parts();
    assert_eq!(ctx.record().unwrap().span_id(), [0x5c; 8]);
}

/// Polls `future` once on the calling thread.
fn poll_once<F: std::future::Future>(future: Pin<&mut F>) -> Poll<F::Output> {
    let waker = Waker::from(Arc::new(Noop));
    let mut cx = TaskContext::from_waker(&waker);
    future.poll(&mut cx)
}

#[test]
fn the_task_keeps_what_it_published_between_polls() {
    let outer = task_context([0x01; 8], &[]);
    let _outer = outer.attach().unwrap();
    let task = async {
        update_span_id(&[0x22; 8]).unwrap();
        YieldNow(false).await;
        let resumed = read().unwrap().span_id();
        // Inside the task a thread may also publish nothing.
        otel_thread_ctx::detach().unwrap();
        YieldNow(false).await;
        (resumed, read().unwrap_err())
    };
    let mut task = Box::pin(task.with_context(task_context([0x11; 8], &[])));
    assert!(poll_once(task.as_mut()).is_pending());
    assert_eq!(read().unwrap().span_id(), [0x01; 8], "the poll put back the thread's own");
    assert_eq!(task.context().record().unwrap().span_id(), [0x22; 8], "the task's child span");
    assert!(poll_once(task.as_mut()).is_pending());
    assert!(!task.context().holds_record(), "the task published nothing");
    assert_eq!(read().unwrap().span_id(), [0x01; 8]);
    // Its last poll, on another thread, which publishes nothing itself.
    let (resumed, after) = std::thread::spawn(move || {
        let out = match poll_once(task.as_mut()) {
            Poll::Ready(out) => out,
            Poll::Pending => panic!("the task should end"),
        };
        assert_eq!(read().unwrap_err(), Error::ENOCTX, "put back: nothing");
        out
    })
    .join()
    .unwrap();
    assert_eq!(resumed, [0x22; 8]);
    assert_eq!(after, Error::ENOCTX);
    assert_eq!(read().unwrap().span_id(), [0x01; 8]);
}

#[test]
fn what_does_not_fit_the_tasks_context_is_not_kept() {
    let key = register_key("rust.task.big").unwrap();
    let mut small = Context::with_options(ContextOptions { attrs_capacity: 4 }).unwrap();
    small.set_ids(&[0x4b; 16], &[0x33; 8], 1).unwrap();
    let task = async move {
        let big = "b".repeat(100);
        otel_thread_ctx::update_all(&[0x4b; 16], &[0x44; 8], 1, &[(key, big.as_str())]).unwrap();
        YieldNow(false).await;
        read().unwrap().span_id()
    };
    let mut task = Box::pin(task.with_context(small));
    assert!(poll_once(task.as_mut()).is_pending());
    assert_eq!(read().unwrap_err(), Error::ENOCTX, "put back all the same");
    assert_eq!(task.context().record().unwrap().span_id(), [0x33; 8], "the context as it was");
    assert_eq!(poll_once(task.as_mut()), Poll::Ready([0x33; 8]));
}

#[test]
fn a_panicking_poll_puts_back_what_the_thread_published() {
    let own = task_context([0x01; 8], &[]);
    let _own = own.attach().unwrap();
    let mut task = Box::pin(async { panic!("in the task") }.with_context(task_context([0x02; 8], &[])));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| poll_once(task.as_mut())));
    assert!(result.is_err());
    assert_eq!(read().unwrap().span_id(), [0x01; 8]);
}

struct Noop;

impl Wake for Noop {
    fn wake(self: Arc<Self>) {}
}

#[test]
fn with_context_is_send_for_send_futures() {
    fn send<T: Send>(_: &T) {}
    fn sync<T: Sync>(_: &T) {}
    let ctx = task_context([1; 8], &[]);
    let fut = async {}.with_context(ctx.clone());
    send(&fut);
    send(&ctx);
    sync(&ctx);
}
