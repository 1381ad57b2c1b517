// SPDX-License-Identifier: Apache-2.0
//! Rust bindings of otel-thread-ctx: publish, per OS thread, which trace and
//! span the thread runs, in the OpenTelemetry thread-context format (OTEP
//! 4947), where profilers find it.  The C library reaches the thread-local
//! slot through the TLSDESC dialect, which Rust cannot choose; linking it
//! gives Rust programs that access.
//!
//! Two layers: [`sys`], the C declarations as they are, and this module, a
//! safe wrapper:
//!
//! - a [`Context`] is a value (ids, trace flags, attributes), owned like a
//!   `Vec`: its setters take `&mut self`, dropping it frees it, and nothing
//!   of any thread is in it.  [`Context::attach`] takes `&self` and copies
//!   what it holds into the calling thread's own record, which the thread
//!   then publishes; so any number of threads may attach one context at once
//!   (it is `Send` and `Sync`: share it in an `Arc`), and a context may be
//!   edited, moved or dropped at any time without changing what any thread
//!   publishes until that thread publishes again;
//! - the [`Attached`] guard that `attach` returns holds what the thread
//!   published before (a [`Context`] of its own) and puts exactly that back
//!   when dropped, whatever happened meanwhile to the contexts involved.  It
//!   is neither `Send` nor `Sync`: it restores on the thread that attached;
//! - the fast paths of a tracer change what the calling thread publishes
//!   without a context: [`update_span_id`] (a child span),
//!   [`update_trace_flags`] (the sampling decision) and [`update_all`] (a
//!   new request);
//! - every failure is an [`Error`]: the library's code and its
//!   `otel_thread_ctx_strerror()` text.  Nothing is truncated or adjusted on
//!   the way: a value the library refuses is refused;
//! - [`task::WithContext`] publishes a task's context on whichever thread
//!   polls the task;
//! - [`process`] publishes the process context, which names the attribute
//!   keys for readers; with the cargo feature `inspect`, the module
//!   `inspect` reads the process and thread contexts of another process
//!   (libotel-thread-ctx-inspect).
//!
//! ```
//! use otel_thread_ctx::{read, register_key, update_span_id, Context};
//!
//! let route = register_key("http.route")?; // its index in the key map
//! let mut ctx = Context::new()?;
//! ctx.set_ids(&[0x11; 16], &[0x22; 8], 0x01)?;
//! ctx.set_attr(route, "GET /users/{id}")?;
//! let span = ctx.attach()?; // this thread publishes a copy of ctx
//! assert_eq!(read()?.attr(route), Some(&b"GET /users/{id}"[..]));
//! update_span_id(&[0x33; 8])?; // a child span, on this thread only
//! assert_eq!(read()?.span_id(), [0x33; 8]);
//! assert_eq!(ctx.record()?.span_id(), [0x22; 8], "the context is unchanged");
//! drop(span); // the thread publishes what it did before: nothing
//! assert_eq!(read().unwrap_err(), otel_thread_ctx::Error::ENOCTX);
//! # Ok::<(), otel_thread_ctx::Error>(())
//! ```
//!
//! The guard restores on the thread that attached, so it cannot be sent to
//! another thread:
//!
//! ```compile_fail,E0277
//! let ctx = otel_thread_ctx::Context::new().unwrap();
//! let span = ctx.attach().unwrap();
//! std::thread::spawn(move || drop(span));
//! ```
//!
//! and a context shared between threads is read-only: the setters need the
//! only reference to it.
//!
//! ```compile_fail,E0596
//! let ctx = std::sync::Arc::new(otel_thread_ctx::Context::new().unwrap());
//! ctx.set_span_id(&[1; 8]).unwrap();
//! ```
//!
//! Linking: `build.rs` asks `pkg-config --libs otel-thread-ctx` (or takes
//! the directory in `OTEL_THREAD_CTX_LIB_DIR`) and puts the library's
//! directory in the rpath of the programs it links.  Doctests get no rpath:
//! for them, put the directory in `LD_LIBRARY_PATH` unless it is a system one.

use std::ffi::{CStr, CString};
use std::fmt;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::os::raw::{c_int, c_uint, c_void};
use std::ptr::{self, NonNull};

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
    ENOMEM = sys::OTEL_THREAD_CTX_ENOMEM,
    ENESTED = sys::OTEL_THREAD_CTX_ENESTED,
    EFULL = sys::OTEL_THREAD_CTX_EFULL,
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
    EUNSUPPORTED = sys::OTEL_THREAD_CTX_EUNSUPPORTED,
    ENOATTR = sys::OTEL_THREAD_CTX_ENOATTR,
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
    ETIMEDOUT = sys::OTEL_THREAD_CTX_ETIMEDOUT,
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

/// A context: trace and span ids, trace flags and attributes, as the record
/// a thread attaching it publishes.  A value, owned: dropping it frees it.
///
/// The setters change the context and nothing else: a thread that attached
/// it publishes the change only when it publishes the context again
/// ([`Context::update`] or [`Context::attach`]).  No thread's slot ever
/// leads into a context: attaching copies it.
///
/// It is `Send` and `Sync`.  The library reads a context in `attach`,
/// `update`, `copy` (its source) and `get`, and writes it only in the
/// setters, `copy` (its destination), `save` and `detach` (their `saved`),
/// and no thread keeps a pointer to it after a call returns; like any value,
/// it may be read by several threads at once and written by one while no
/// other uses it.  Here every call that reads takes `&self` and every call
/// that writes takes `&mut self`, so the borrow rules give exactly that:
/// share one context between threads in an `Arc` and each may attach it at
/// once; to change it, own it.
pub struct Context {
    raw: NonNull<sys::otel_thread_ctx>,
    // The capacity it was created with (the library does not say).
    capacity: u32,
}

// SAFETY: a context is plain memory that no thread's state refers to (see
// the type's comment); Context owns it exclusively, reads it only through
// &self and writes it only through &mut self.
unsafe impl Send for Context {}
unsafe impl Sync for Context {}

impl Context {
    /// `otel_thread_ctx_create()`: an empty context (a valid record with no
    /// ids and no attributes), with room for 612 bytes of attributes.
    /// Errors: ENOMEM.
    pub fn new() -> Result<Context> {
        Context::with_options(ContextOptions::default())
    }

    /// `otel_thread_ctx_create_with()`: an empty context with room for
    /// `attrs_capacity` bytes of attribute entries.  Errors: EOPTIONS (a
    /// capacity above 612), ENOMEM.
    pub fn with_options(options: ContextOptions) -> Result<Context> {
        let mut raw = ptr::null_mut();
        // The C options' zero is the default capacity: ids only is a flag.
        let c_options = sys::otel_thread_ctx_options {
            attrs_capacity: options.attrs_capacity,
            flags: if options.attrs_capacity == 0 { sys::OTEL_THREAD_CTX_OPTION_IDS_ONLY } else { 0 },
            ..Default::default()
        };
        check(unsafe { sys::otel_thread_ctx_create_with(&mut raw, &c_options) })?;
        let raw = NonNull::new(raw).ok_or(Error::ENULL)?;
        Ok(Context { raw, capacity: options.attrs_capacity })
    }

    /// Bytes of attribute entries it can hold (`attrs_capacity`).
    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// Sets both ids and the trace flags (all-zero ids with flags 0 clear
    /// them).  Errors: EIDS when exactly one id is all zero, or flags are
    /// set without ids.
    pub fn set_ids(&mut self, trace_id: &[u8; 16], span_id: &[u8; 8], trace_flags: u8) -> Result<()> {
        check(unsafe { sys::otel_thread_ctx_set_ids(self.as_mut_ptr(), trace_id, span_id, trace_flags) })
    }

    /// Changes the span id.  Errors: EIDS when it is all zero or there is
    /// no trace id.
    pub fn set_span_id(&mut self, span_id: &[u8; 8]) -> Result<()> {
        check(unsafe { sys::otel_thread_ctx_set_span_id(self.as_mut_ptr(), span_id) })
    }

    /// Changes the trace flags.  Errors: EIDS when they are non-zero and
    /// there are no ids.
    pub fn set_trace_flags(&mut self, trace_flags: u8) -> Result<()> {
        check(unsafe { sys::otel_thread_ctx_set_trace_flags(self.as_mut_ptr(), trace_flags) })
    }

    /// Removes the ids and flags.
    pub fn clear_ids(&mut self) -> Result<()> {
        check(unsafe { sys::otel_thread_ctx_clear_ids(self.as_mut_ptr()) })
    }

    /// Sets attribute `key` (0..=255) to `value` (UTF-8, at most 255
    /// bytes), in place of its value if it has one.  Errors: EKEY, EVALUE,
    /// EUTF8, ENOSPC.
    pub fn set_attr(&mut self, key: u32, value: impl AsRef<[u8]>) -> Result<()> {
        let value = value.as_ref();
        check(unsafe {
            sys::otel_thread_ctx_set_attr(self.as_mut_ptr(), key, value.as_ptr() as *const c_void, value.len())
        })
    }

    /// Removes attribute `key` (absent is no error).  Errors: EKEY.
    pub fn remove_attr(&mut self, key: u32) -> Result<()> {
        check(unsafe { sys::otel_thread_ctx_remove_attr(self.as_mut_ptr(), key) })
    }

    /// Removes every attribute.
    pub fn clear_attrs(&mut self) -> Result<()> {
        check(unsafe { sys::otel_thread_ctx_clear_attrs(self.as_mut_ptr()) })
    }

    /// Removes ids, flags and attributes: the context holds an empty
    /// record.
    pub fn clear(&mut self) -> Result<()> {
        check(unsafe { sys::otel_thread_ctx_clear(self.as_mut_ptr()) })
    }

    /// Replaces all the attributes, in this order; keys must be distinct.
    /// Errors: EKEY, EVALUE, EUTF8, EDUPKEY, ENOSPC.
    pub fn set_attrs<V: AsRef<[u8]>>(&mut self, attrs: &[(u32, V)]) -> Result<()> {
        let ctx = self.as_mut_ptr();
        with_c_attrs(attrs, |p, n| unsafe { sys::otel_thread_ctx_set_attrs(ctx, p, n) })
    }

    /// `otel_thread_ctx_copy()`: makes this context hold what `src` holds
    /// (a task that inherits its parent's context), without allocating.
    /// Errors: ENOSPC when src's attributes do not fit in this capacity.
    pub fn copy_from(&mut self, src: &Context) -> Result<()> {
        check(unsafe { sys::otel_thread_ctx_copy(self.as_mut_ptr(), src.as_ptr()) })
    }

    /// A new context of the same capacity holding the same value.  Errors:
    /// ENOMEM.  ([`Clone`] does the same and panics when out of memory.)
    pub fn try_clone(&self) -> Result<Context> {
        let mut copy = Context::with_options(ContextOptions { attrs_capacity: self.capacity })?;
        copy.copy_from(self)?;
        Ok(copy)
    }

    /// `otel_thread_ctx_get()`: what it holds, as the record a thread
    /// attaching it publishes.  Errors: ENOCTX when it holds no record (it
    /// saved "nothing published": see [`Attached::saved`]).
    pub fn record(&self) -> Result<Record> {
        let mut rec = Record { raw: EMPTY_RECORD };
        check(unsafe { sys::otel_thread_ctx_get(self.as_ptr(), &mut rec.raw) })?;
        Ok(rec)
    }

    /// Whether it holds a record: false only for a saved "nothing
    /// published", which a setter turns into an empty record.
    pub fn holds_record(&self) -> bool {
        self.record().is_ok()
    }

    /// `otel_thread_ctx_attach()`: the calling thread publishes a copy of
    /// this context until the guard is dropped, which puts back what the
    /// thread published before.  The guard holds a context of its own for
    /// that (allocated here; [`Context::attach_with`] takes one instead).
    /// Attaching a context that holds no record unpublishes.  Errors:
    /// ENOMEM, ETHREAD (the first publication of a thread only).
    pub fn attach(&self) -> Result<Attached> {
        self.attach_with(Context::new()?)
    }

    /// [`Context::attach`], with `saved` receiving what the thread
    /// published before: no allocation.  Whatever `saved` held is
    /// overwritten; [`Attached::restore`] gives it back, to use again.
    /// Errors: ENOSPC when `saved`'s capacity is smaller than the attributes
    /// the thread publishes; ENOMEM, ETHREAD.  On error nothing changes and
    /// `saved` is dropped.
    pub fn attach_with(&self, mut saved: Context) -> Result<Attached> {
        check(unsafe { sys::otel_thread_ctx_attach(self.as_ptr(), saved.as_mut_ptr()) })?;
        Ok(Attached { saved: ManuallyDrop::new(saved), _not_send: PhantomData })
    }

    /// `otel_thread_ctx_update()`: the calling thread publishes a copy of
    /// what this context holds now, in place of whatever it published, and
    /// keeps nothing to put back (a guard that ends puts back what it
    /// replaced).  Errors: ENOMEM, ETHREAD (the first publication of a thread
    /// only).
    pub fn update(&self) -> Result<()> {
        check(unsafe { sys::otel_thread_ctx_update(self.as_ptr()) })
    }

    /// The C context, for calls into other C code that reads one.  It stays
    /// owned by `self`.
    pub fn as_ptr(&self) -> *const sys::otel_thread_ctx {
        self.raw.as_ptr()
    }

    /// The C context, for calls into other C code that writes one.
    pub fn as_mut_ptr(&mut self) -> *mut sys::otel_thread_ctx {
        self.raw.as_ptr()
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // Threads that attached it keep publishing their copies.
        unsafe { sys::otel_thread_ctx_destroy(self.raw.as_ptr()) };
    }
}

impl Clone for Context {
    /// [`Context::try_clone`].
    ///
    /// # Panics
    ///
    /// When out of memory.
    fn clone(&self) -> Context {
        self.try_clone().expect("otel-thread-ctx: cloning a context")
    }

    /// [`Context::copy_from`] when the value fits, without allocating.
    fn clone_from(&mut self, source: &Context) {
        if self.copy_from(source).is_err() {
            *self = source.clone();
        }
    }
}

/// Two contexts are equal when they hold the same record (the same
/// attribute entries, in the same order), or both hold none; the capacity
/// does not count.
impl PartialEq for Context {
    fn eq(&self, other: &Context) -> bool {
        self.record() == other.record()
    }
}

impl Eq for Context {}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Context");
        match self.record() {
            Ok(rec) => d.field("record", &rec),
            Err(_) => d.field("record", &format_args!("none")),
        };
        d.field("capacity", &self.capacity).finish()
    }
}

/// How [`Context::with_options`] creates a context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContextOptions {
    /// Bytes of attribute entries it holds, 0 (ids only: the context then
    /// takes 36 bytes) to 612 (the default); setters that would need more
    /// fail with ENOSPC.
    pub attrs_capacity: u32,
}

impl Default for ContextOptions {
    fn default() -> Self {
        ContextOptions { attrs_capacity: sys::OTEL_THREAD_CTX_ATTRS_MAX as u32 }
    }
}

/// What the calling thread published before an attach, put back when the
/// guard is dropped: a scope.
///
/// The guard owns a copy of what the attach replaced (a [`Context`], which
/// holds no record when the thread published nothing), so it puts back
/// exactly that, whatever happened meanwhile: the context attached may be
/// edited or dropped, and so may the one attached before, which the thread
/// publishes again as it was when it was replaced.
///
/// Drop it on the thread that attached (it is neither `Send` nor `Sync`).
/// Scopes nest: drop guards in the reverse order of attaching, as scopes
/// do.  Dropped in another order, each still puts back what its own attach
/// replaced, so the thread ends up publishing what the last one dropped
/// saved.
#[must_use = "dropping the guard at once puts back what the thread published before"]
pub struct Attached {
    saved: ManuallyDrop<Context>,
    _not_send: PhantomData<*const ()>,
}

impl Attached {
    /// What the guard puts back: what the thread published before the
    /// attach (a context that holds no record: nothing).
    pub fn saved(&self) -> &Context {
        &self.saved
    }

    /// Whether the thread published something before the attach.
    pub fn has_previous(&self) -> bool {
        self.saved.holds_record()
    }

    /// Ends the scope as dropping the guard does, and returns the context
    /// that held what was put back, for [`Context::attach_with`] to use
    /// again.  Errors: those of [`Context::update`], which cannot happen on
    /// a thread that attached before (its records are taken).
    pub fn restore(self) -> Result<Context> {
        let mut this = ManuallyDrop::new(self);
        // SAFETY: taken once; `this` is never dropped.
        let saved = unsafe { ManuallyDrop::take(&mut this.saved) };
        saved.update()?;
        Ok(saved)
    }
}

impl Drop for Attached {
    fn drop(&mut self) {
        // Cannot fail: the thread published (its records are taken) or
        // `saved` holds no record.
        let _ = self.saved.update();
        // SAFETY: dropped once, here.
        unsafe { ManuallyDrop::drop(&mut self.saved) };
    }
}

impl fmt::Debug for Attached {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Attached").field("saved", &*self.saved).finish()
    }
}

/// `otel_thread_ctx_detach()`: the calling thread publishes nothing.
pub fn detach() -> Result<()> {
    check(unsafe { sys::otel_thread_ctx_detach(ptr::null_mut()) })
}

/// `otel_thread_ctx_save()`: a new context holding what the calling thread
/// publishes (none when it publishes nothing); nothing else changes.
/// [`Context::update`] of it publishes that again.  Errors: ENOMEM.
pub fn save() -> Result<Context> {
    let mut saved = Context::new()?;
    save_into(&mut saved)?;
    Ok(saved)
}

/// `otel_thread_ctx_save()` into a context of the caller's, without
/// allocating.  Errors: ENOSPC when its capacity is smaller than the
/// attributes the thread publishes (it is then unchanged).
pub fn save_into(saved: &mut Context) -> Result<()> {
    check(unsafe { sys::otel_thread_ctx_save(saved.as_mut_ptr()) })
}

/// `otel_thread_ctx_update_span_id()`: a child span.  The calling thread
/// publishes what it did with this span id; no context changes.  Errors:
/// EIDS when it is all zero or the thread's record has no trace id; ENOCTX
/// when the thread publishes nothing.
pub fn update_span_id(span_id: &[u8; 8]) -> Result<()> {
    check(unsafe { sys::otel_thread_ctx_update_span_id(span_id) })
}

/// `otel_thread_ctx_update_trace_flags()`: the sampling decision, after
/// the span was published.  The calling thread publishes what it did with
/// these flags.  Errors: ENOCTX when the thread publishes nothing; EIDS
/// when they are non-zero and its record has no ids.
pub fn update_trace_flags(trace_flags: u8) -> Result<()> {
    check(unsafe { sys::otel_thread_ctx_update_trace_flags(trace_flags) })
}

/// `otel_thread_ctx_update_all()`: a new request.  The calling thread
/// publishes these ids, flags and attributes, whatever it published before,
/// checked together (against a capacity of 612 bytes).  Errors: those of
/// [`Context::set_ids`] and [`Context::set_attrs`]; ENOMEM, ETHREAD (the
/// first publication of a thread only); nothing changes on error.
pub fn update_all<V: AsRef<[u8]>>(
    trace_id: &[u8; 16],
    span_id: &[u8; 8],
    trace_flags: u8,
    attrs: &[(u32, V)],
) -> Result<()> {
    with_c_attrs(attrs, |p, n| unsafe { sys::otel_thread_ctx_update_all(trace_id, span_id, trace_flags, p, n) })
}

/// Whether the calling thread publishes a record.
pub fn thread_has_context() -> bool {
    !matches!(read(), Err(Error::ENOCTX))
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
        if unsafe { sys::otel_thread_ctx_record_attr(&self.raw, key, &mut out) } == 0 {
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

/// Records are equal when their headers and used attribute bytes are (the
/// same entries in the same order).
impl PartialEq for Record {
    fn eq(&self, other: &Record) -> bool {
        let (a, b) = (&self.raw, &other.raw);
        let used = usize::from(a.attrs_data_size).min(sys::OTEL_THREAD_CTX_ATTRS_MAX);
        (a.trace_id, a.span_id, a.valid, a.trace_flags, a.attrs_data_size)
            == (b.trace_id, b.span_id, b.valid, b.trace_flags, b.attrs_data_size)
            && a.attrs_data[..used] == b.attrs_data[..used]
    }
}

impl Eq for Record {}

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
        if unsafe { sys::otel_thread_ctx_attr_iter_next(&mut self.it, &mut out) } == 0 {
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

/// The crate's README.md, whose example `cargo test` runs too.
#[doc(hidden)]
#[doc = include_str!("../README.md")]
pub mod crate_readme {}
