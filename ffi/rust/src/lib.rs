// SPDX-License-Identifier: Apache-2.0
//! Rust bindings of otel-thread-ctx: publish, per OS thread, which trace and
//! span the thread runs, in the OpenTelemetry thread-context format (OTEP
//! 4947), where profilers find it.  The C library reaches the thread-local
//! slot through the TLSDESC dialect, which Rust cannot choose; linking it
//! gives Rust programs that access.
//!
//! Two layers: [`sys`], the C declarations as they are, and this module, a
//! safe wrapper with the ownership rules of the C API in its types:
//!
//! - a [`Context`] is owned and detached; dropping it destroys it;
//! - [`Context::attach`] (or [`Context::update_attach`]) moves it into an
//!   [`Attached`] guard, which publishes it on the calling thread.  It
//!   cannot be freed while attached, and the guard is neither `Send` nor
//!   `Sync`: the slot is the thread's.  Dropping the guard attaches the
//!   context that was attached before (the C attach hands it back) and
//!   destroys ours; [`Attached::detach`] does the same but returns ours;
//! - every failure is an [`Error`]: the library's code and its
//!   `otel_thread_ctx_strerror()` text.  Nothing is truncated or adjusted on
//!   the way: a value the library refuses is refused;
//! - a [`SharedContext`] is frozen and published by any number of threads
//!   at once: a task's context, which [`task::WithContext`] publishes on
//!   whichever thread polls the task;
//! - [`process`] publishes the process context, which names the attribute
//!   keys for readers; with the cargo feature `inspect`, the module
//!   `inspect` reads the process and thread contexts of another process
//!   (libotel-thread-ctx-inspect).
//!
//! ```
//! use otel_thread_ctx::{read, register_key, Context};
//!
//! let route = register_key("http.route")?; // its index in the key map
//! let mut ctx = Context::new()?;
//! ctx.set_ids(&[0x11; 16], &[0x22; 8], 0x01)?;
//! ctx.set_attr(route, "GET /users/{id}")?;
//! let mut span = ctx.update_attach()?;
//! assert_eq!(read()?.attr(route), Some(&b"GET /users/{id}"[..]));
//! span.update_span_id(&[0x33; 8])?; // a child span
//! assert_eq!(read()?.span_id(), [0x33; 8]);
//! drop(span); // the thread publishes what it did before: nothing
//! assert_eq!(read().unwrap_err(), otel_thread_ctx::Error::ENOCTX);
//! # Ok::<(), otel_thread_ctx::Error>(())
//! ```
//!
//! An attached context cannot be sent to another thread:
//!
//! ```compile_fail,E0277
//! let span = otel_thread_ctx::Context::new().unwrap().attach().unwrap();
//! std::thread::spawn(move || drop(span));
//! ```
//!
//! nor used as a detached one once it is attached (it has moved):
//!
//! ```compile_fail,E0382
//! let ctx = otel_thread_ctx::Context::new().unwrap();
//! let span = ctx.attach().unwrap();
//! drop(ctx);
//! ```
//!
//! Linking: `build.rs` asks `pkg-config --libs otel-thread-ctx` (or takes
//! the directory in `OTEL_THREAD_CTX_LIB_DIR`) and puts the library's
//! directory in the rpath of the programs it links.  Doctests get no rpath:
//! for them, put the directory in `LD_LIBRARY_PATH` unless it is a system one.

use std::cell::Cell;
use std::ffi::{CStr, CString};
use std::fmt;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::os::raw::{c_int, c_uint, c_void};
use std::ptr::{self, NonNull};
use std::sync::Arc;

#[cfg(feature = "inspect")]
pub mod inspect;
pub mod process;
pub mod sys;
pub mod task;

/// A failure of the library: its error code (negative, `sys::OTEL_THREAD_CTX_E*`)
/// and the library's description of it.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Error {
    code: i32,
}

macro_rules! error_consts {
    ($($name:ident = $code:path),* $(,)?) => {
        impl Error {
            $(
                #[doc = concat!("`", stringify!($code), "`.")]
                pub const $name: Error = Error { code: $code };
            )*
        }
    };
}
error_consts!(
    ENULL = sys::OTEL_THREAD_CTX_ENULL,
    EIDS = sys::OTEL_THREAD_CTX_EIDS,
    EKEY = sys::OTEL_THREAD_CTX_EKEY,
    EVALUE = sys::OTEL_THREAD_CTX_EVALUE,
    EUTF8 = sys::OTEL_THREAD_CTX_EUTF8,
    ENOSPC = sys::OTEL_THREAD_CTX_ENOSPC,
    EBUSY = sys::OTEL_THREAD_CTX_EBUSY,
    EPENDING = sys::OTEL_THREAD_CTX_EPENDING,
    ENOMEM = sys::OTEL_THREAD_CTX_ENOMEM,
    ETHREAD = sys::OTEL_THREAD_CTX_ETHREAD,
    ENOCTX = sys::OTEL_THREAD_CTX_ENOCTX,
    EINVALID = sys::OTEL_THREAD_CTX_EINVALID,
    ETRUNCATED = sys::OTEL_THREAD_CTX_ETRUNCATED,
    ESLOT = sys::OTEL_THREAD_CTX_ESLOT,
    ENAME = sys::OTEL_THREAD_CTX_ENAME,
    EKEYS = sys::OTEL_THREAD_CTX_EKEYS,
    EUNKNOWNKEY = sys::OTEL_THREAD_CTX_EUNKNOWNKEY,
    EDUPKEY = sys::OTEL_THREAD_CTX_EDUPKEY,
    EOPTIONS = sys::OTEL_THREAD_CTX_EOPTIONS,
    EFROZEN = sys::OTEL_THREAD_CTX_EFROZEN,
    E2BIG = sys::OTEL_THREAD_CTX_E2BIG,
    EPUBLISHED = sys::OTEL_THREAD_CTX_EPUBLISHED,
    ENOTPUBLISHED = sys::OTEL_THREAD_CTX_ENOTPUBLISHED,
    EATTR = sys::OTEL_THREAD_CTX_EATTR,
    EMAP = sys::OTEL_THREAD_CTX_EMAP,
    ESYS = sys::OTEL_THREAD_CTX_ESYS,
    EPERM = sys::OTEL_THREAD_CTX_EPERM,
    ENOENT = sys::OTEL_THREAD_CTX_ENOENT,
    ESRCH = sys::OTEL_THREAD_CTX_ESRCH,
    EAGAIN = sys::OTEL_THREAD_CTX_EAGAIN,
    EFAULT = sys::OTEL_THREAD_CTX_EFAULT,
    EFORMAT = sys::OTEL_THREAD_CTX_EFORMAT,
    EDECODE = sys::OTEL_THREAD_CTX_EDECODE,
    ENOSLOT = sys::OTEL_THREAD_CTX_ENOSLOT,
    EMODEL = sys::OTEL_THREAD_CTX_EMODEL,
);

impl Error {
    /// The error of a library code (any non-zero `enum otel_thread_ctx_error`).
    pub fn from_code(code: i32) -> Error {
        Error { code }
    }

    /// The library's code: `sys::OTEL_THREAD_CTX_E*`.
    pub fn code(&self) -> i32 {
        self.code
    }

    /// `otel_thread_ctx_strerror(code)`: a static English description.  With
    /// the feature `inspect`, `otel_thread_ctx_inspect_strerror(code)`,
    /// which also knows the reading side's codes (`EPERM`, `ENOSLOT`, ...).
    pub fn message(&self) -> &'static str {
        #[cfg(feature = "inspect")]
        let text = unsafe { sys::inspect::otel_thread_ctx_inspect_strerror(self.code) };
        #[cfg(not(feature = "inspect"))]
        let text = unsafe { sys::otel_thread_ctx_strerror(self.code) };
        // SAFETY: the library returns a static NUL-terminated string, never NULL.
        let text = unsafe { CStr::from_ptr(text) };
        text.to_str().unwrap_or("(description not UTF-8)")
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (otel-thread-ctx error {})", self.message(), self.code)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Error({}: {})", self.code, self.message())
    }
}

impl std::error::Error for Error {}

/// The crate's result type.
pub type Result<T> = std::result::Result<T, Error>;

fn check(rc: c_int) -> Result<()> {
    if rc == sys::OTEL_THREAD_CTX_OK {
        Ok(())
    } else {
        Err(Error { code: rc })
    }
}

/// Calls `f` with the attributes as C structs, on the stack for the up to
/// 256 a record can hold (more have a repeated key, which the library
/// refuses).  A value whose length does not fit the C `unsigned int` is over
/// the 255-byte limit: EVALUE, without calling the library.
fn with_c_attrs<V: AsRef<[u8]>>(
    attrs: &[(u32, V)],
    f: impl FnOnce(*const sys::otel_thread_ctx_attr, usize) -> c_int,
) -> Result<()> {
    const EMPTY: sys::otel_thread_ctx_attr =
        sys::otel_thread_ctx_attr { key: 0, len: 0, value: ptr::null() };
    let convert = |(key, value): &(u32, V)| -> Result<sys::otel_thread_ctx_attr> {
        let value = value.as_ref();
        let len = c_uint::try_from(value.len()).map_err(|_| Error::EVALUE)?;
        Ok(sys::otel_thread_ctx_attr { key: *key, len, value: value.as_ptr() })
    };
    let mut stack = [EMPTY; 256];
    let heap: Vec<sys::otel_thread_ctx_attr>;
    let c_attrs: &[sys::otel_thread_ctx_attr] = if attrs.len() <= stack.len() {
        for (slot, attr) in stack.iter_mut().zip(attrs) {
            *slot = convert(attr)?;
        }
        &stack[..attrs.len()]
    } else {
        heap = attrs.iter().map(convert).collect::<Result<_>>()?;
        &heap
    };
    check(f(c_attrs.as_ptr(), c_attrs.len()))
}

// The draft setters and commits, the same on a detached Context and on an
// Attached one.
macro_rules! editing_methods {
    () => {
        /// Sets both ids and the trace flags of the draft (all-zero ids with
        /// flags 0 clear them).  Errors: EIDS when exactly one id is all
        /// zero, or flags are set without ids.
        pub fn set_ids(&mut self, trace_id: &[u8; 16], span_id: &[u8; 8], trace_flags: u8) -> Result<()> {
            check(unsafe { sys::otel_thread_ctx_set_ids(self.raw(), trace_id, span_id, trace_flags) })
        }

        /// Changes the span id of the draft.  Errors: EIDS when it is all
        /// zero or there is no trace id.
        pub fn set_span_id(&mut self, span_id: &[u8; 8]) -> Result<()> {
            check(unsafe { sys::otel_thread_ctx_set_span_id(self.raw(), span_id) })
        }

        /// Changes the trace flags of the draft.  Errors: EIDS when they are
        /// non-zero and there are no ids.
        pub fn set_trace_flags(&mut self, trace_flags: u8) -> Result<()> {
            check(unsafe { sys::otel_thread_ctx_set_trace_flags(self.raw(), trace_flags) })
        }

        /// Removes the ids and flags from the draft.
        pub fn clear_ids(&mut self) -> Result<()> {
            check(unsafe { sys::otel_thread_ctx_clear_ids(self.raw()) })
        }

        /// Sets attribute `key` (0..=255) of the draft to `value` (UTF-8, at
        /// most 255 bytes).  Errors: EKEY, EVALUE, EUTF8, ENOSPC.
        pub fn set_attr(&mut self, key: u32, value: impl AsRef<[u8]>) -> Result<()> {
            let value = value.as_ref();
            check(unsafe {
                sys::otel_thread_ctx_set_attr(self.raw(), key, value.as_ptr() as *const c_void, value.len())
            })
        }

        /// Removes attribute `key` from the draft (absent is no error).
        /// Errors: EKEY.
        pub fn remove_attr(&mut self, key: u32) -> Result<()> {
            check(unsafe { sys::otel_thread_ctx_remove_attr(self.raw(), key) })
        }

        /// Removes every attribute from the draft.
        pub fn clear_attrs(&mut self) -> Result<()> {
            check(unsafe { sys::otel_thread_ctx_clear_attrs(self.raw()) })
        }

        /// Removes ids, flags and attributes from the draft.
        pub fn clear(&mut self) -> Result<()> {
            check(unsafe { sys::otel_thread_ctx_clear(self.raw()) })
        }

        /// Replaces all attributes of the draft, in this order; keys must
        /// be distinct.  Errors: EKEY, EVALUE, EUTF8, EDUPKEY, ENOSPC.
        pub fn set_attrs<V: AsRef<[u8]>>(&mut self, attrs: &[(u32, V)]) -> Result<()> {
            let ctx = self.raw();
            with_c_attrs(attrs, |p, n| unsafe { sys::otel_thread_ctx_set_attrs(ctx, p, n) })
        }

        /// Commits the draft: it becomes the published record (on this
        /// thread at once, when attached).
        pub fn update(&mut self) -> Result<()> {
            check(unsafe { sys::otel_thread_ctx_update(self.raw()) })
        }

        /// A child span: sets the span id and commits, in one call.
        /// Errors: EIDS.
        pub fn update_span_id(&mut self, span_id: &[u8; 8]) -> Result<()> {
            check(unsafe { sys::otel_thread_ctx_update_span_id(self.raw(), span_id) })
        }

        /// A new request: ids, flags and all attributes, checked together
        /// and committed in one call.  Errors: those of `set_ids` and
        /// `set_attrs`; nothing changes on error.
        pub fn update_all<V: AsRef<[u8]>>(
            &mut self,
            trace_id: &[u8; 16],
            span_id: &[u8; 8],
            trace_flags: u8,
            attrs: &[(u32, V)],
        ) -> Result<()> {
            let ctx = self.raw();
            with_c_attrs(attrs, |p, n| unsafe {
                sys::otel_thread_ctx_update_all(ctx, trace_id, span_id, trace_flags, p, n)
            })
        }

        /// The sampling decision arrived: sets the trace flags and commits,
        /// in one call.  Errors: EIDS when they are non-zero and there are
        /// no ids.
        pub fn update_trace_flags(&mut self, trace_flags: u8) -> Result<()> {
            check(unsafe { sys::otel_thread_ctx_update_trace_flags(self.raw(), trace_flags) })
        }

        /// What the context has committed (its published record, even while
        /// invalidated), read back: to restore a parent span, or to copy a
        /// context to a new task.
        pub fn committed(&self) -> Result<Record> {
            committed(self.raw())
        }

        /// Withdraws what the context publishes (a thread that has it
        /// attached publishes nothing) until the next commit.
        pub fn invalidate(&mut self) -> Result<()> {
            check(unsafe { sys::otel_thread_ctx_invalidate(self.raw()) })
        }

        /// The C context, for calls into other C code that takes one.  It
        /// stays owned by `self`.
        pub fn as_ptr(&self) -> *mut sys::otel_thread_ctx {
            self.raw.as_ptr()
        }

        fn raw(&self) -> *mut sys::otel_thread_ctx {
            self.raw.as_ptr()
        }
    };
}

/// A detached context, owned: dropping it destroys it.
///
/// It may move to another thread (`Send`); it is not `Sync`.
pub struct Context {
    raw: NonNull<sys::otel_thread_ctx>,
    _not_sync: PhantomData<Cell<()>>,
}

// SAFETY: a detached context is plain memory the library lets any one
// thread at a time edit; Context owns it exclusively.
unsafe impl Send for Context {}

impl Context {
    /// `otel_thread_ctx_create_with()`: a context whose published record is
    /// valid and empty.  It is created with
    /// `OTEL_THREAD_CTX_FREE_WITH_THREAD`: a context a guard left attached
    /// (see [`Attached`]) is freed by its thread when the thread exits.
    /// Errors: ENOMEM.
    pub fn new() -> Result<Context> {
        Context::with_options(ContextOptions::default())
    }

    /// `otel_thread_ctx_create_with()`: a context with room for
    /// `attrs_capacity` bytes of attribute entries, freed by its thread or
    /// not (see [`ContextOptions`]).  Errors: EOPTIONS (a capacity above
    /// 612), ENOMEM.
    pub fn with_options(options: ContextOptions) -> Result<Context> {
        let mut raw = ptr::null_mut();
        let c_options = sys::otel_thread_ctx_options {
            flags: if options.free_with_thread { sys::OTEL_THREAD_CTX_FREE_WITH_THREAD } else { 0 },
            attrs_capacity: options.attrs_capacity,
            ..Default::default()
        };
        check(unsafe { sys::otel_thread_ctx_create_with(&mut raw, &c_options) })?;
        let raw = NonNull::new(raw).ok_or(Error::ENULL)?;
        Ok(Context { raw, _not_sync: PhantomData })
    }

    editing_methods!();

    /// `otel_thread_ctx_freeze()`: commits what the context holds and makes
    /// it an immutable [`SharedContext`], which any number of threads may
    /// publish at once (a task that runs on several threads).  Errors:
    /// EOPTIONS for a context freed with its thread (the default of
    /// [`Context::new`]: create it with `free_with_thread: false`); the
    /// context then comes back in the [`AttachError`].
    pub fn freeze(self) -> std::result::Result<SharedContext, AttachError> {
        if let Err(error) = check(unsafe { sys::otel_thread_ctx_freeze(self.raw()) }) {
            return Err(AttachError { error, context: self });
        }
        let this = ManuallyDrop::new(self);
        Ok(SharedContext { inner: Arc::new(Frozen { raw: this.raw }) })
    }

    /// Publishes the context on the calling thread, which runs its span
    /// until the guard is dropped.  Errors: EPENDING when the draft has
    /// edits not committed (use [`Context::update_attach`]); ETHREAD.  On
    /// error the context comes back in the [`AttachError`].
    pub fn attach(self) -> std::result::Result<Attached, AttachError> {
        self.attach_with(sys::otel_thread_ctx_attach)
    }

    /// Commits the draft and publishes the context on the calling thread,
    /// with one store to the slot.  Errors: ETHREAD.
    pub fn update_attach(self) -> std::result::Result<Attached, AttachError> {
        self.attach_with(sys::otel_thread_ctx_update_attach)
    }

    fn attach_with(
        self,
        f: unsafe extern "C" fn(*mut sys::otel_thread_ctx, *mut *mut sys::otel_thread_ctx) -> c_int,
    ) -> std::result::Result<Attached, AttachError> {
        let mut prev = ptr::null_mut();
        if let Err(error) = check(unsafe { f(self.raw(), &mut prev) }) {
            return Err(AttachError { error, context: self });
        }
        let this = ManuallyDrop::new(self);
        Ok(Attached { raw: this.raw, prev, _not_send: PhantomData })
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // A Context is never attached (attaching moves it into Attached), so
        // this does not fail.
        unsafe { sys::otel_thread_ctx_destroy(self.raw()) };
    }
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context").field("ptr", &self.raw).finish()
    }
}

/// How [`Context::with_options`] creates a context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContextOptions {
    /// Bytes of attribute entries its records hold, 0 (ids only) to 612
    /// (the default); setters that would need more fail with ENOSPC.
    pub attrs_capacity: u32,
    /// `OTEL_THREAD_CTX_FREE_WITH_THREAD` (the default): a context an
    /// [`Attached`] guard left attached (forgotten, or dropped out of
    /// order) is freed by its thread when the thread exits.  Without it
    /// such a context is never freed; with it, it cannot be frozen.
    pub free_with_thread: bool,
}

impl Default for ContextOptions {
    fn default() -> Self {
        ContextOptions {
            attrs_capacity: sys::OTEL_THREAD_CTX_ATTRS_MAX as u32,
            free_with_thread: true,
        }
    }
}

/// `otel_thread_ctx_committed()` of a context the caller may read.
fn committed(raw: *mut sys::otel_thread_ctx) -> Result<Record> {
    let mut rec = Record { raw: EMPTY_RECORD };
    check(unsafe { sys::otel_thread_ctx_committed(raw, &mut rec.raw) })?;
    Ok(rec)
}

/// A failed [`Context::attach`] or [`Context::freeze`]: the error and the
/// context, still detached.
pub struct AttachError {
    pub error: Error,
    pub context: Context,
}

impl AttachError {
    /// The context, to try again or drop.
    pub fn into_context(self) -> Context {
        self.context
    }
}

impl From<AttachError> for Error {
    fn from(e: AttachError) -> Error {
        e.error
    }
}

impl fmt::Debug for AttachError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.error, f)
    }
}

impl fmt::Display for AttachError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.error, f)
    }
}

impl std::error::Error for AttachError {}

/// A context attached to the calling thread: "this thread runs span X".
///
/// Edits and commits go through the guard (commits publish at once).  Drop
/// it, or call [`Attached::detach`], on the thread that attached it (it is
/// neither `Send` nor `Sync`), in the reverse order of attaching, as scopes
/// do: the thread then publishes again the context that was attached before.
///
/// If a guard is dropped while another context attached after it is still
/// attached, nothing is changed and its context is left to the later guard,
/// which will attach it when it ends: the thread then keeps publishing it,
/// and the library frees it when the thread exits.  No memory is freed that
/// the thread may still use.
pub struct Attached {
    raw: NonNull<sys::otel_thread_ctx>,
    // What the attach replaced (NULL: nothing), handed back by the library.
    prev: *mut sys::otel_thread_ctx,
    _not_send: PhantomData<*mut ()>,
}

impl Attached {
    editing_methods!();

    /// Ends the span: the thread publishes what it published before, and
    /// the context, detached, comes back.  Errors: EBUSY when a context
    /// attached later is still attached (the context is then left to it,
    /// as for drop); an error of re-attaching the previous context (ours
    /// is then left attached).
    pub fn detach(self) -> Result<Context> {
        let this = ManuallyDrop::new(self);
        this.restore()?;
        Ok(Context { raw: this.raw, _not_sync: PhantomData })
    }

    /// Whether a context was attached before this one (and will be again).
    pub fn has_previous(&self) -> bool {
        !self.prev.is_null()
    }

    fn restore(&self) -> Result<()> {
        restore(self.raw(), self.prev)
    }
}

/// Ends what an attach of `raw` began on the calling thread: it publishes
/// `prev` (NULL: nothing) again.  EBUSY, changing nothing, when `raw` is not
/// the attached context (a context attached later still is).
fn restore(raw: *mut sys::otel_thread_ctx, prev: *mut sys::otel_thread_ctx) -> Result<()> {
    if unsafe { sys::otel_thread_ctx_current() } != raw {
        return Err(Error::EBUSY);
    }
    let mut out = ptr::null_mut();
    if prev.is_null() {
        check(unsafe { sys::otel_thread_ctx_detach(&mut out) })
    } else {
        // The previous context may have been edited meanwhile (its
        // owner may edit a detached context): publish what it holds.
        let rc = unsafe { sys::otel_thread_ctx_attach(prev, &mut out) };
        if rc == sys::OTEL_THREAD_CTX_EPENDING {
            check(unsafe { sys::otel_thread_ctx_update_attach(prev, &mut out) })
        } else {
            check(rc)
        }
    }
}

impl Drop for Attached {
    fn drop(&mut self) {
        if self.restore().is_ok() {
            unsafe { sys::otel_thread_ctx_destroy(self.raw()) };
        }
    }
}

impl fmt::Debug for Attached {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Attached").field("ptr", &self.raw).field("prev", &self.prev).finish()
    }
}

/// A frozen context: immutable, and shared by any number of threads at
/// once (`otel_thread_ctx_freeze()`), for a task that an async runtime runs
/// on several threads ([`task::WithContext`] publishes it while the task's
/// future is polled).
///
/// Cloning is cheap: the clones share the caller's reference, which the
/// last one dropped gives up; each thread that publishes it holds a
/// reference of its own, so it outlives the clones while a thread still
/// publishes it.  It is `Send` and `Sync`.  To change what a task
/// publishes, freeze a new context.
#[derive(Clone)]
pub struct SharedContext {
    inner: Arc<Frozen>,
}

struct Frozen {
    raw: NonNull<sys::otel_thread_ctx>,
}

// SAFETY: a frozen context is immutable; the library lets any thread
// attach it, read it back and give up a reference to it.
unsafe impl Send for Frozen {}
unsafe impl Sync for Frozen {}

impl Drop for Frozen {
    fn drop(&mut self) {
        // The caller's reference; threads that publish it keep theirs.
        unsafe { sys::otel_thread_ctx_destroy(self.raw.as_ptr()) };
    }
}

impl SharedContext {
    /// A frozen context publishing these ids, flags and attributes (created
    /// with room for them, not freed with a thread).  Errors: those of
    /// [`Context::update_all`].
    pub fn new<V: AsRef<[u8]>>(
        trace_id: &[u8; 16],
        span_id: &[u8; 8],
        trace_flags: u8,
        attrs: &[(u32, V)],
    ) -> Result<SharedContext> {
        let mut ctx = Context::with_options(ContextOptions { free_with_thread: false, ..Default::default() })?;
        ctx.update_all(trace_id, span_id, trace_flags, attrs)?;
        ctx.freeze().map_err(Error::from)
    }

    /// Publishes the context on the calling thread until the guard is
    /// dropped, which publishes again what the thread published before.
    /// Any number of threads may publish it at once.  Errors: ETHREAD.
    pub fn attach(&self) -> Result<SharedAttached> {
        let mut prev = ptr::null_mut();
        check(unsafe { sys::otel_thread_ctx_attach(self.as_ptr(), &mut prev) })?;
        Ok(SharedAttached { shared: self.clone(), prev, _not_send: PhantomData })
    }

    /// What it publishes, read back (from any thread).
    pub fn committed(&self) -> Result<Record> {
        committed(self.as_ptr())
    }

    /// The C context, for calls into other C code that takes one.
    pub fn as_ptr(&self) -> *mut sys::otel_thread_ctx {
        self.inner.raw.as_ptr()
    }
}

impl fmt::Debug for SharedContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedContext").field("ptr", &self.inner.raw).finish()
    }
}

/// A [`SharedContext`] published by the calling thread, until dropped.
///
/// Drop it on the thread that attached it (it is neither `Send` nor
/// `Sync`), in the reverse order of attaching: the thread then publishes
/// again what it published before.  A guard dropped while a context
/// attached after it still is changes nothing and keeps the shared context
/// alive, until the thread exits, for the later guard, which attaches it
/// again when it ends.
pub struct SharedAttached {
    shared: SharedContext,
    prev: *mut sys::otel_thread_ctx,
    _not_send: PhantomData<*mut ()>,
}

impl SharedAttached {
    /// The context it publishes.
    pub fn context(&self) -> &SharedContext {
        &self.shared
    }

    /// Whether a context was attached before this one (and will be again).
    pub fn has_previous(&self) -> bool {
        !self.prev.is_null()
    }
}

thread_local! {
    /// Shared contexts whose guard was dropped out of order on this thread:
    /// a later guard attaches them again, so they are kept until the thread
    /// exits.  (Clippy 1.63 mistakes the const initializer for a const
    /// item.)
    #[allow(clippy::declare_interior_mutable_const)]
    static KEPT: std::cell::RefCell<Vec<SharedContext>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Drop for SharedAttached {
    fn drop(&mut self) {
        if restore(self.shared.as_ptr(), self.prev).is_err() {
            // Out of order: a later guard will attach this context again.
            let kept = self.shared.clone();
            if KEPT.try_with(|k| k.borrow_mut().push(kept.clone())).is_err() {
                // The thread is exiting: never given up, rather than freed
                // while in use.
                std::mem::forget(kept);
            }
        }
    }
}

impl fmt::Debug for SharedAttached {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedAttached")
            .field("ptr", &self.shared.inner.raw)
            .field("prev", &self.prev)
            .finish()
    }
}

/// Whether the calling thread publishes a context (`otel_thread_ctx_current()`).
pub fn thread_has_context() -> bool {
    !unsafe { sys::otel_thread_ctx_current() }.is_null()
}

/// A copy of a record, as a reader sees it.
#[derive(Clone, Copy)]
pub struct Record {
    raw: sys::otel_thread_ctx_record,
}

const EMPTY_RECORD: sys::otel_thread_ctx_record = sys::otel_thread_ctx_record {
    trace_id: [0; 16],
    span_id: [0; 8],
    valid: 0,
    trace_flags: 0,
    attrs_data_size: 0,
    attrs_data: [0; sys::OTEL_THREAD_CTX_ATTRS_MAX],
};

/// `otel_thread_ctx_read()`: the record the calling thread publishes.
/// Errors: ENOCTX (nothing published), EINVALID (marked invalid).
pub fn read() -> Result<Record> {
    let mut rec = Record { raw: EMPTY_RECORD };
    check(unsafe { sys::otel_thread_ctx_read(&mut rec.raw) })?;
    Ok(rec)
}

impl Record {
    /// `otel_thread_ctx_record_decode()`: checks and copies a record
    /// obtained elsewhere (at most 640 bytes are read).  Errors: ETRUNCATED
    /// (fewer than 28 bytes), EINVALID.
    pub fn decode(bytes: &[u8]) -> Result<Record> {
        let mut rec = Record { raw: EMPTY_RECORD };
        check(unsafe {
            sys::otel_thread_ctx_record_decode(bytes.as_ptr() as *const c_void, bytes.len(), &mut rec.raw)
        })?;
        Ok(rec)
    }

    pub fn trace_id(&self) -> [u8; 16] {
        self.raw.trace_id
    }

    pub fn span_id(&self) -> [u8; 8] {
        self.raw.span_id
    }

    pub fn trace_flags(&self) -> u8 {
        self.raw.trace_flags
    }

    /// Whether the record carries ids (a trace id not all zero).
    pub fn has_ids(&self) -> bool {
        self.raw.trace_id != [0; 16]
    }

    /// The effective attributes: each key once, with its last value, in the
    /// order of those last entries.  Entries whose key index this process's
    /// key map does not name (not registered) are skipped, as readers must.
    pub fn attrs(&self) -> Attrs<'_> {
        let mut it =
            sys::otel_thread_ctx_attr_iter { rec: ptr::null(), pos: 0, keys: 0, unmapped: 0 };
        unsafe { sys::otel_thread_ctx_attr_iter_init(&mut it, &self.raw) };
        Attrs { it, _record: PhantomData }
    }

    /// The effective attributes by another process's key map of
    /// `key_count` names (`otel_thread_ctx_attr_iter_init_map()`): entries
    /// whose index is `key_count` or more are skipped.
    pub fn attrs_in(&self, key_count: u32) -> Attrs<'_> {
        let mut it =
            sys::otel_thread_ctx_attr_iter { rec: ptr::null(), pos: 0, keys: 0, unmapped: 0 };
        unsafe { sys::otel_thread_ctx_attr_iter_init_map(&mut it, &self.raw, key_count) };
        Attrs { it, _record: PhantomData }
    }

    /// The effective value of attribute `key` (None also when the key map
    /// does not name it).
    pub fn attr(&self, key: u32) -> Option<&[u8]> {
        let mut out = sys::otel_thread_ctx_attr { key: 0, len: 0, value: ptr::null() };
        if unsafe { sys::otel_thread_ctx_record_attr(&self.raw, key, &mut out) } == 1 {
            Some(unsafe { attr_value(&out) })
        } else {
            None
        }
    }

    /// The C record.
    pub fn as_raw(&self) -> &sys::otel_thread_ctx_record {
        &self.raw
    }
}

/// The bytes of an attribute the library returned, pointing into a record.
unsafe fn attr_value<'a>(attr: &sys::otel_thread_ctx_attr) -> &'a [u8] {
    if attr.value.is_null() {
        &[]
    } else {
        std::slice::from_raw_parts(attr.value, attr.len as usize)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|x| format!("{:02x}", x)).collect()
}

impl fmt::Debug for Record {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let attrs: Vec<(u32, String)> =
            self.attrs().map(|(k, v)| (k, String::from_utf8_lossy(v).into_owned())).collect();
        f.debug_struct("Record")
            .field("trace_id", &hex(&self.raw.trace_id))
            .field("span_id", &hex(&self.raw.span_id))
            .field("trace_flags", &self.raw.trace_flags)
            .field("attrs", &attrs)
            .finish()
    }
}

/// A record's ids and flags, for the Debug of a record whose attributes
/// another key map names.
#[cfg(feature = "inspect")]
struct RecordIds<'a>(&'a Record);

#[cfg(feature = "inspect")]
impl fmt::Debug for RecordIds<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Record")
            .field("trace_id", &hex(&self.0.raw.trace_id))
            .field("span_id", &hex(&self.0.raw.span_id))
            .field("trace_flags", &self.0.raw.trace_flags)
            .finish()
    }
}

#[cfg(feature = "inspect")]
impl Record {
    fn raw_debug(&self) -> RecordIds<'_> {
        RecordIds(self)
    }
}

/// The effective attributes of a [`Record`]: `(key index, value bytes)`.
pub struct Attrs<'a> {
    it: sys::otel_thread_ctx_attr_iter,
    _record: PhantomData<&'a Record>,
}

impl<'a> Iterator for Attrs<'a> {
    type Item = (u32, &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        let mut out = sys::otel_thread_ctx_attr { key: 0, len: 0, value: ptr::null() };
        // SAFETY: the iterator points into the record borrowed for 'a.
        if unsafe { sys::otel_thread_ctx_attr_iter_next(&mut self.it, &mut out) } == 1 {
            Some((out.key, unsafe { attr_value(&out) }))
        } else {
            None
        }
    }
}

fn key_cstring(name: &str) -> Result<CString> {
    // A NUL inside cannot be part of a C key name: the library's ENAME.
    CString::new(name).map_err(|_| Error::ENAME)
}

/// `otel_thread_ctx_key_register()`: the index of attribute key `name`,
/// registered if new.  Errors: ENAME (empty, over 255 bytes, or a NUL),
/// EKEYS (256 keys registered), and when the process context is published,
/// E2BIG or ENOMEM.
pub fn register_key(name: &str) -> Result<u32> {
    let name = key_cstring(name)?;
    let mut index: c_uint = 0;
    check(unsafe { sys::otel_thread_ctx_key_register(name.as_ptr(), &mut index) })?;
    Ok(index)
}

/// `otel_thread_ctx_key_find()`: the index of a registered key.  Errors:
/// EUNKNOWNKEY.
pub fn find_key(name: &str) -> Result<u32> {
    let name = key_cstring(name)?;
    let mut index: c_uint = 0;
    check(unsafe { sys::otel_thread_ctx_key_find(name.as_ptr(), &mut index) })?;
    Ok(index)
}

/// `otel_thread_ctx_key_name()`: the name of key `index`, if registered.
/// Names stay valid for the life of the process, and are UTF-8.
pub fn key_name(index: u32) -> Option<&'static str> {
    let p = unsafe { sys::otel_thread_ctx_key_name(index) };
    if p.is_null() {
        None
    } else {
        // SAFETY: registered names are never freed or changed.
        unsafe { CStr::from_ptr(p) }.to_str().ok()
    }
}

/// `otel_thread_ctx_key_count()`: how many keys are registered.
pub fn key_count() -> u32 {
    unsafe { sys::otel_thread_ctx_key_count() }
}

/// What [`self_check`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SelfCheckStatus {
    /// The slot this library writes is the one profilers find.
    Ok,
    /// No loaded module exports `otel_thread_ctx_v1`.
    NotExported,
    /// Modules export it, but not the slot this library writes.
    Mismatch,
    /// The exporting module's TLS block is not allocated in this thread.
    Unknown,
    /// A status this version of the crate does not know.
    Other(i32),
}

/// The result of `otel_thread_ctx_self_check()`.
#[derive(Clone, Debug)]
pub struct SelfCheck {
    pub status: SelfCheckStatus,
    /// One English sentence: what was found, and what to do if not OK.
    pub reason: String,
    /// Address of the slot the library writes (the slot in effect), in the
    /// calling thread.
    pub slot: usize,
    /// Address of the library's own definition of the slot; it is `slot`
    /// unless a module earlier in the lookup scope defines the symbol too.
    pub own_slot: usize,
    /// Whether the slot in effect is the library's own definition.
    pub slot_is_own: bool,
    /// Address the exported slot resolves to (0: none).
    pub exported: usize,
    /// Module holding `slot` ("" for the main program).
    pub module: Option<String>,
    /// Module `exported` belongs to.
    pub exported_module: Option<String>,
    /// How many loaded modules export the slot.
    pub exporting_modules: u32,
}

impl SelfCheck {
    /// `Ok(())` when the status is OK, else the library's ESLOT.
    pub fn result(&self) -> Result<()> {
        if self.status == SelfCheckStatus::Ok {
            Ok(())
        } else {
            Err(Error::ESLOT)
        }
    }
}

/// `otel_thread_ctx_self_check()` for the calling thread: will profilers
/// find what this library publishes?  Start-up work: not async-signal-safe.
pub fn self_check() -> SelfCheck {
    let mut r = sys::otel_thread_ctx_self_check {
        status: -1,
        slot: ptr::null(),
        own_slot: ptr::null(),
        slot_is_own: 0,
        exported: ptr::null(),
        module: ptr::null(),
        exported_module: ptr::null(),
        exporting_modules: 0,
        reason: [0; 384],
    };
    // OK or ESLOT, both with the result filled in (ENULL cannot happen).
    unsafe { sys::otel_thread_ctx_self_check(&mut r) };
    let string = |p: *const std::os::raw::c_char| {
        if p.is_null() {
            None
        } else {
            Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
        }
    };
    SelfCheck {
        status: match r.status {
            sys::OTEL_THREAD_CTX_SELF_CHECK_OK => SelfCheckStatus::Ok,
            sys::OTEL_THREAD_CTX_SELF_CHECK_NOT_EXPORTED => SelfCheckStatus::NotExported,
            sys::OTEL_THREAD_CTX_SELF_CHECK_MISMATCH => SelfCheckStatus::Mismatch,
            sys::OTEL_THREAD_CTX_SELF_CHECK_UNKNOWN => SelfCheckStatus::Unknown,
            other => SelfCheckStatus::Other(other),
        },
        reason: string(r.reason.as_ptr()).unwrap_or_default(),
        slot: r.slot as usize,
        own_slot: r.own_slot as usize,
        slot_is_own: r.slot_is_own != 0,
        exported: r.exported as usize,
        module: string(r.module),
        exported_module: string(r.exported_module),
        exporting_modules: r.exporting_modules,
    }
}

/// The README's first Rust example ("## Bindings: Python and Rust"),
/// compiled and run as printed by `cargo test` (build.rs copies it here).
#[doc(hidden)]
#[doc = include_str!(concat!(env!("OUT_DIR"), "/readme_rust.md"))]
pub mod readme_example {}

/// The README's second Rust example, which reads a second process with the
/// inspector: with the feature `inspect`.
#[cfg(feature = "inspect")]
#[doc(hidden)]
#[doc = include_str!(concat!(env!("OUT_DIR"), "/readme_rust_inspect.md"))]
pub mod readme_inspect_example {}
