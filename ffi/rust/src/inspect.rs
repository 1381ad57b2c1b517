// SPDX-License-Identifier: Apache-2.0
//! Reading other processes (`include/otel_thread_ctx_inspect.h`): the
//! process context a process publishes, and the thread contexts of its
//! threads, read from outside the way a ptrace-based profiler does.  This
//! module is there with the cargo feature `inspect`, which links
//! libotel-thread-ctx-inspect (build.rs: `pkg-config --libs
//! otel-thread-ctx-inspect`).
//!
//! - [`read_process`] reads and decodes the process context of a process;
//!   [`decode_process`] decodes a payload obtained some other way.
//! - [`Inspector::open`] examines a process; [`Inspector::threads`] and
//!   [`Inspector::thread`] then read its threads, each stopped for the read
//!   only.  That needs the right to ptrace-attach to the process: the same
//!   user, and under Yama's `ptrace_scope` 1 an ancestor of it (a parent
//!   reads its child).
//! - [`maps_signature`] is a signature of the modules a process has
//!   loaded, and [`Inspector::signature`] the same as the inspector was
//!   opened: while the two are equal, the process has loaded and unloaded
//!   no module since, and the modules and slots the inspector found still
//!   hold (its key map and process context are as they were at open).
//!
//! Errors are the crate's [`Error`], whose code may be one the reading side
//! adds (`EPERM`, `ENOENT`, `ESRCH`, `EAGAIN`, `EFAULT`, `EFORMAT`,
//! `EDECODE`, `ENOSLOT`, `EMODEL`) and whose message is
//! `otel_thread_ctx_inspect_strerror()`'s.

use crate::{check, sys, Error, Record, Result};
use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_void};
use std::ptr;
use sys::inspect as si;

/// A decoded attribute value of a process context.
#[derive(Clone, Debug, PartialEq)]
pub enum AnyValue {
    /// No value set.
    Empty,
    Str(String),
    Bool(bool),
    Int(i64),
    Double(f64),
    Bytes(Vec<u8>),
    /// An ArrayValue message, undecoded.
    Array(Vec<u8>),
    /// A KeyValueList message, undecoded.
    KvList(Vec<u8>),
    /// A type this version does not know: its number and its bytes.
    Other(i32, Vec<u8>),
}

/// A process context, decoded (a copy of
/// `struct otel_thread_ctx_inspect_process_snapshot`).
#[derive(Clone, Debug, PartialEq)]
pub struct ProcessContext {
    /// `threadlocal.schema_version`, if present.
    pub schema_version: Option<String>,
    /// `threadlocal.attribute_key_map`: `key_map[i]` names key index `i`;
    /// None when the payload has none.
    pub key_map: Option<Vec<String>>,
    /// `ProcessContext.resource.attributes`, in payload order.
    pub resource: Vec<(String, AnyValue)>,
    /// `ProcessContext.attributes` but the two `threadlocal.*` ones.
    pub attributes: Vec<(String, AnyValue)>,
    /// The payload's bytes.
    pub payload: Vec<u8>,
    /// Where the header is in the process (0 for [`decode_process`]).
    pub mapping_address: u64,
    pub payload_address: u64,
    /// CLOCK_BOOTTIME of the last change.
    pub published_at_ns: u64,
    pub version: u32,
    /// Copies that came out torn or during an update and were retried.
    pub retries: u32,
}

impl ProcessContext {
    /// The value of resource attribute `key` (the last, if repeated).
    pub fn resource_value(&self, key: &str) -> Option<&AnyValue> {
        self.resource.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

unsafe fn c_string(p: *const c_char) -> Option<String> {
    if p.is_null() {
        None
    } else {
        Some(CStr::from_ptr(p).to_string_lossy().into_owned())
    }
}

unsafe fn c_bytes(p: *const c_void, len: usize) -> Vec<u8> {
    if p.is_null() || len == 0 {
        Vec::new()
    } else {
        std::slice::from_raw_parts(p as *const u8, len).to_vec()
    }
}

unsafe fn value(a: &sys::otel_thread_ctx_process_attr) -> AnyValue {
    let bytes = || c_bytes(a.string as *const c_void, a.length);
    match a.type_ {
        sys::OTEL_THREAD_CTX_PROCESS_EMPTY => AnyValue::Empty,
        sys::OTEL_THREAD_CTX_PROCESS_STRING => AnyValue::Str(String::from_utf8_lossy(&bytes()).into_owned()),
        sys::OTEL_THREAD_CTX_PROCESS_BOOL => AnyValue::Bool(a.bool_value != 0),
        sys::OTEL_THREAD_CTX_PROCESS_INT => AnyValue::Int(a.int_value),
        sys::OTEL_THREAD_CTX_PROCESS_DOUBLE => AnyValue::Double(a.double_value),
        sys::OTEL_THREAD_CTX_PROCESS_BYTES => AnyValue::Bytes(bytes()),
        sys::OTEL_THREAD_CTX_PROCESS_ARRAY => AnyValue::Array(bytes()),
        sys::OTEL_THREAD_CTX_PROCESS_KVLIST => AnyValue::KvList(bytes()),
        other => AnyValue::Other(other, bytes()),
    }
}

unsafe fn attrs(p: *const sys::otel_thread_ctx_process_attr, n: usize) -> Vec<(String, AnyValue)> {
    if p.is_null() {
        return Vec::new();
    }
    std::slice::from_raw_parts(p, n)
        .iter()
        .map(|a| (c_string(a.key).unwrap_or_default(), value(a)))
        .collect()
}

/// A copy of what a snapshot holds.
unsafe fn snapshot(s: &si::otel_thread_ctx_inspect_process_snapshot) -> ProcessContext {
    let key_map = if s.key_map_present != 0 && !s.keys.is_null() {
        Some(std::slice::from_raw_parts(s.keys, s.key_count).iter().map(|&k| c_string(k).unwrap_or_default()).collect())
    } else {
        None
    };
    ProcessContext {
        schema_version: c_string(s.schema_version),
        key_map,
        resource: attrs(s.resource, s.resource_count),
        attributes: attrs(s.attributes, s.attribute_count),
        payload: c_bytes(s.payload, s.payload_size as usize),
        mapping_address: s.mapping_address,
        payload_address: s.payload_address,
        published_at_ns: s.monotonic_published_at_ns,
        version: s.version,
        retries: s.retries,
    }
}

/// Checks `rc`, then copies and frees the snapshot.
fn take(rc: c_int, out: *mut si::otel_thread_ctx_inspect_process_snapshot) -> Result<ProcessContext> {
    check(rc)?;
    if out.is_null() {
        return Err(Error::ENULL);
    }
    // SAFETY: the library returned a valid snapshot, freed right after.
    let ctx = unsafe { snapshot(&*out) };
    unsafe { si::otel_thread_ctx_inspect_process_snapshot_free(out) };
    Ok(ctx)
}

/// `otel_thread_ctx_inspect_process_read()`: the process context process `pid` (0:
/// this one) publishes, copied by the format's reading protocol.  Errors:
/// ENOENT (it publishes none), ESRCH, EPERM, EFORMAT, EAGAIN, EFAULT,
/// EDECODE.
pub fn read_process(pid: i32) -> Result<ProcessContext> {
    let mut out = ptr::null_mut();
    let rc = unsafe { si::otel_thread_ctx_inspect_process_read(pid, 0, &mut out) };
    take(rc, out)
}

/// `otel_thread_ctx_inspect_process_read_at()`: [`read_process`] of the mapping a
/// [`ProcessContext`] came from (`mapping_address`), without searching the
/// process's maps again.  ENOENT once nothing is mapped there.
pub fn read_process_at(pid: i32, mapping_address: u64) -> Result<ProcessContext> {
    let mut out = ptr::null_mut();
    let rc = unsafe { si::otel_thread_ctx_inspect_process_read_at(pid, mapping_address, 0, &mut out) };
    take(rc, out)
}

/// `otel_thread_ctx_inspect_process_decode()`: decodes a ProcessContext payload
/// obtained some other way (any bytes are safe).  Errors: EDECODE, E2BIG.
pub fn decode_process(payload: &[u8]) -> Result<ProcessContext> {
    let mut out = ptr::null_mut();
    let rc = unsafe {
        si::otel_thread_ctx_inspect_process_decode(payload.as_ptr() as *const c_void, payload.len(), &mut out)
    };
    take(rc, out)
}

/// `otel_thread_ctx_inspect_maps_signature()`: a signature (a 64-bit hash)
/// of the files process `pid` maps from their start, read from
/// /proc/PID/maps.  It changes when the process loads or unloads a module,
/// and not when it maps anonymous memory, starts threads or changes the
/// protection of a mapping: a reader compares it with
/// [`Inspector::signature`] to know when to open an inspector again.
/// Errors: ESRCH (also for a `pid` of 0 or below), EPERM, EFAULT, ENOMEM,
/// ESYS.
pub fn maps_signature(pid: i32) -> Result<u64> {
    let mut signature = 0;
    check(unsafe { si::otel_thread_ctx_inspect_maps_signature(pid, &mut signature) })?;
    Ok(signature)
}

/// How a module's code reaches the slot, and so how it is found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Model {
    TlsdescStatic,
    TlsdescDynamic,
    GeneralDynamic,
    InitialExec,
    LocalExec,
    /// A model this version does not know.
    Other(i32),
}

/// The C library of the inspected process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Libc {
    Unknown,
    Glibc,
    Musl,
    Other(i32),
}

/// A loaded module of the process that defines the slot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Module {
    /// As in /proc/PID/maps.
    pub path: String,
    /// Load bias.
    pub base: u64,
    pub st_value: u64,
    pub model: Model,
    /// `otel_thread_ctx_inspect_model_name()`: "tlsdesc-static", ...
    pub model_name: String,
    /// Static models: slot = thread pointer + tp_offset.
    pub tp_offset: i64,
    /// Dynamic models: slot = `DTV[module_id] + dtv_offset`.
    pub module_id: u64,
    pub dtv_offset: u64,
}

/// One thread of the process, as read.
#[derive(Clone)]
pub struct Thread {
    pub tid: i32,
    /// /proc/PID/task/TID/comm ("" if unknown).
    pub name: String,
    /// Ok when `record` holds the thread's record; else ENOCTX (it
    /// publishes nothing), EINVALID, EFAULT, EFORMAT, ESRCH, EPERM, ESYS.
    pub status: Result<()>,
    /// errno of a failed ptrace call (ESYS).
    pub sys_errno: i32,
    /// `sys::inspect::OTEL_THREAD_CTX_INSPECT_*` bits: the writer broke the
    /// format.
    pub anomalies: u32,
    /// Index in [`Inspector::modules`] of the slot read.
    pub module: u32,
    pub thread_pointer: u64,
    pub slot_address: u64,
    pub record_address: u64,
    /// As found in the process, before clamping.
    pub attrs_data_size: u16,
    record: Record,
    key_names: std::sync::Arc<[String]>,
}

impl Thread {
    /// The thread's record when it publishes a valid one, else the status.
    /// Its attributes ([`Record::attrs_in`]) are those the process's key map
    /// names.
    pub fn record(&self) -> Result<&Record> {
        self.status.map(|()| &self.record)
    }

    /// The effective attributes of the record whose index the process's
    /// key map names (empty unless the status is Ok).
    pub fn attrs(&self) -> crate::Attrs<'_> {
        self.record.attrs_in(if self.status.is_ok() { self.key_count() } else { 0 })
    }

    /// The same, by name: (key name, value as text, lossily).
    pub fn named_attrs(&self) -> Vec<(String, String)> {
        self.attrs()
            .map(|(k, v)| {
                let name = self.key_names.get(k as usize).cloned().unwrap_or_default();
                (name, String::from_utf8_lossy(v).into_owned())
            })
            .collect()
    }

    fn key_count(&self) -> u32 {
        self.key_names.len() as u32
    }
}

impl std::fmt::Debug for Thread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("Thread");
        d.field("tid", &self.tid).field("name", &self.name).field("status", &self.status);
        if self.status.is_ok() {
            d.field("record", &self.record.raw_debug()).field("attrs", &self.named_attrs());
        }
        d.finish()
    }
}

/// `otel_thread_ctx_inspector`: what [`Inspector::open`] found in a
/// process, and the way to read its threads.  Dropping it closes it.
pub struct Inspector {
    raw: ptr::NonNull<si::otel_thread_ctx_inspector>,
    pid: i32,
    libc: Libc,
    modules: Vec<Module>,
    process_context: Result<ProcessContext>,
    key_names: std::sync::Arc<[String]>,
}

// SAFETY: an inspector is plain memory that one thread at a time uses
// (&mut self for the reads); ptrace attachments do not outlive a call.
unsafe impl Send for Inspector {}

impl Inspector {
    /// `otel_thread_ctx_inspect_open()`: examines process `pid`, attaching
    /// to no thread.  Errors: ESRCH, EPERM, ENOSLOT (no loaded module
    /// defines the slot), EMODEL, EFAULT, ENOMEM.
    pub fn open(pid: i32) -> Result<Inspector> {
        let mut raw = ptr::null_mut();
        check(unsafe { si::otel_thread_ctx_inspect_open(pid, &mut raw) })?;
        let raw = ptr::NonNull::new(raw).ok_or(Error::ENULL)?;
        // SAFETY: info lives until close; everything is copied out.
        let info = unsafe { &*si::otel_thread_ctx_inspect_info(raw.as_ptr()) };
        let modules = if info.modules.is_null() {
            &[][..]
        } else {
            unsafe { std::slice::from_raw_parts(info.modules, info.module_count) }
        };
        let modules = modules
            .iter()
            .map(|m| Module {
                path: unsafe { c_string(m.path) }.unwrap_or_default(),
                base: m.base,
                st_value: m.st_value,
                model: match m.model {
                    si::OTEL_THREAD_CTX_INSPECT_TLSDESC_STATIC => Model::TlsdescStatic,
                    si::OTEL_THREAD_CTX_INSPECT_TLSDESC_DYNAMIC => Model::TlsdescDynamic,
                    si::OTEL_THREAD_CTX_INSPECT_GENERAL_DYNAMIC => Model::GeneralDynamic,
                    si::OTEL_THREAD_CTX_INSPECT_INITIAL_EXEC => Model::InitialExec,
                    si::OTEL_THREAD_CTX_INSPECT_LOCAL_EXEC => Model::LocalExec,
                    other => Model::Other(other),
                },
                model_name: unsafe { c_string(si::otel_thread_ctx_inspect_model_name(m.model)) }
                    .unwrap_or_default(),
                tp_offset: m.tp_offset,
                module_id: m.module_id,
                dtv_offset: m.dtv_offset,
            })
            .collect();
        let process_context = if info.process_ctx_status == sys::OTEL_THREAD_CTX_OK && !info.process_ctx.is_null() {
            Ok(unsafe { snapshot(&*info.process_ctx) })
        } else {
            Err(Error::from_code(info.process_ctx_status))
        };
        let count = unsafe { si::otel_thread_ctx_inspect_key_count(raw.as_ptr()) };
        let key_names: Vec<String> = (0..count)
            .map(|i| unsafe { c_string(si::otel_thread_ctx_inspect_key_name(raw.as_ptr(), i)) }.unwrap_or_default())
            .collect();
        Ok(Inspector {
            raw,
            pid: info.pid,
            libc: match info.libc {
                si::OTEL_THREAD_CTX_INSPECT_LIBC_UNKNOWN => Libc::Unknown,
                si::OTEL_THREAD_CTX_INSPECT_LIBC_GLIBC => Libc::Glibc,
                si::OTEL_THREAD_CTX_INSPECT_LIBC_MUSL => Libc::Musl,
                other => Libc::Other(other),
            },
            modules,
            process_context,
            key_names: key_names.into(),
        })
    }

    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// The C library of the process (which lays out the DTV).
    pub fn libc(&self) -> Libc {
        self.libc
    }

    /// The modules that define the slot, in address order (at least one).
    pub fn modules(&self) -> &[Module] {
        &self.modules
    }

    /// The process context read when it was opened, or why there is none.
    pub fn process_context(&self) -> std::result::Result<&ProcessContext, Error> {
        self.process_context.as_ref().map_err(|e| *e)
    }

    /// The process context's key map: the names of the key indices readers
    /// honour (empty without a process context).
    pub fn key_names(&self) -> &[String] {
        &self.key_names
    }

    /// The name of key `index` in that key map.
    pub fn key_name(&self, index: u32) -> Option<&str> {
        self.key_names.get(index as usize).map(String::as_str)
    }

    /// `otel_thread_ctx_inspect_signature()`: the [`maps_signature`] of the
    /// process as [`Inspector::open`] began to read it, taken in the same
    /// pass over its maps (no I/O here).  When `maps_signature(pid)`
    /// differs, the process has loaded or unloaded a module since: open
    /// another.
    pub fn signature(&self) -> u64 {
        let mut signature = 0;
        // SAFETY: the inspector is open until dropped; its one error,
        // ENULL, needs a null pointer.
        let rc = unsafe { si::otel_thread_ctx_inspect_signature(self.raw.as_ptr(), &mut signature) };
        debug_assert_eq!(rc, sys::OTEL_THREAD_CTX_OK);
        signature
    }

    fn thread_from(&self, t: &si::otel_thread_ctx_inspect_thread) -> Thread {
        let name = unsafe { CStr::from_ptr(t.name.as_ptr()) }.to_string_lossy().into_owned();
        Thread {
            tid: t.tid,
            name,
            status: check(t.status),
            sys_errno: t.sys_errno,
            anomalies: t.anomalies,
            module: t.module,
            thread_pointer: t.thread_pointer,
            slot_address: t.slot_address,
            record_address: t.record_address,
            attrs_data_size: t.attrs_data_size,
            record: Record { raw: t.record },
            key_names: self.key_names.clone(),
        }
    }

    /// `otel_thread_ctx_inspect_thread()`: reads thread `tid` of the
    /// process, stopping it for the read only.  How it went is the
    /// thread's `status` (ESRCH: not a thread of the process).
    pub fn thread(&mut self, tid: i32) -> Thread {
        let mut out = empty_thread();
        unsafe { si::otel_thread_ctx_inspect_thread(self.raw.as_ptr(), tid, &mut out) };
        self.thread_from(&out)
    }

    /// `otel_thread_ctx_inspect_threads()`: reads every thread of the
    /// process, one after another.  Errors: ESRCH (the process is gone).
    pub fn threads(&mut self) -> Result<Vec<Thread>> {
        let mut cap = std::fs::read_dir(format!("/proc/{}/task", self.pid)).map(|d| d.count() + 8).unwrap_or(64);
        loop {
            let mut out = vec![empty_thread(); cap];
            let mut count = 0usize;
            check(unsafe {
                si::otel_thread_ctx_inspect_threads(self.raw.as_ptr(), out.as_mut_ptr(), cap, &mut count)
            })?;
            if count <= cap {
                return Ok(out[..count].iter().map(|t| self.thread_from(t)).collect());
            }
            cap = count + 16;
        }
    }
}

fn empty_thread() -> si::otel_thread_ctx_inspect_thread {
    si::otel_thread_ctx_inspect_thread {
        tid: 0,
        name: [0; 17],
        status: 0,
        sys_errno: 0,
        anomalies: 0,
        module: 0,
        thread_pointer: 0,
        slot_address: 0,
        record_address: 0,
        attrs_data_size: 0,
        record: crate::EMPTY_RECORD,
    }
}

impl Drop for Inspector {
    fn drop(&mut self) {
        unsafe { si::otel_thread_ctx_inspect_close(self.raw.as_ptr()) };
    }
}

impl std::fmt::Debug for Inspector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inspector")
            .field("pid", &self.pid)
            .field("libc", &self.libc)
            .field("modules", &self.modules)
            .field("key_names", &self.key_names)
            .finish()
    }
}
