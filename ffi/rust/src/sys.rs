// SPDX-License-Identifier: Apache-2.0
//! The C API of `include/otel_thread_ctx.h`, as declared there: the record,
//! attribute and self-check structs (`#[repr(C)]`, the same layout: checked
//! below and by the tests against the C compiler), the error codes, and the
//! functions.  Everything here is `unsafe` to call; the crate root wraps it.
//!
//! The thread-local slot `otel_thread_ctx_v1` itself is not declared: Rust
//! has no stable way to name a foreign thread-local, and cannot choose how it
//! would reach it (the TLSDESC dialect), which is why the library exists.
//! Read it with [`otel_thread_ctx_read`].
//!
//! The process context's publisher (`otel_thread_ctx_process.h`) is here
//! too; the reading side (`otel_thread_ctx_inspect.h`, another library) is
//! in `sys::inspect`, there only with the cargo feature `inspect`.
#![allow(non_camel_case_types)]

use std::marker::{PhantomData, PhantomPinned};
use std::os::raw::{c_char, c_int, c_uint, c_void};

/// `pid_t` on Linux.
pub type pid_t = i32;

pub const OTEL_THREAD_CTX_VERSION_MAJOR: u32 = 1;
pub const OTEL_THREAD_CTX_VERSION_MINOR: u32 = 0;
pub const OTEL_THREAD_CTX_VERSION_PATCH: u32 = 0;

pub const OTEL_THREAD_CTX_RECORD_SIZE: usize = 640;
pub const OTEL_THREAD_CTX_ATTRS_MAX: usize = 612;
pub const OTEL_THREAD_CTX_VALUE_MAX: usize = 255;
pub const OTEL_THREAD_CTX_KEY_MAX: u32 = 255;
pub const OTEL_THREAD_CTX_KEY_NAME_MAX: usize = 255;

/// `struct otel_thread_ctx_record`: what the slot points to.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct otel_thread_ctx_record {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    pub valid: u8,
    pub trace_flags: u8,
    pub attrs_data_size: u16,
    pub attrs_data: [u8; OTEL_THREAD_CTX_ATTRS_MAX],
}

// The header's own _Static_asserts, for the Rust declaration.
const _: () = assert!(std::mem::size_of::<otel_thread_ctx_record>() == OTEL_THREAD_CTX_RECORD_SIZE);

/// `enum otel_thread_ctx_error` (otel_thread_ctx.h).  Codes named after an
/// errno equal its negation.
pub const OTEL_THREAD_CTX_OK: c_int = 0;
pub const OTEL_THREAD_CTX_E2BIG: c_int = -7;
pub const OTEL_THREAD_CTX_ENOMEM: c_int = -12;
pub const OTEL_THREAD_CTX_ENOSPC: c_int = -28;
pub const OTEL_THREAD_CTX_ENULL: c_int = -4001;
pub const OTEL_THREAD_CTX_EIDS: c_int = -4002;
pub const OTEL_THREAD_CTX_EKEY: c_int = -4003;
pub const OTEL_THREAD_CTX_EVALUE: c_int = -4004;
pub const OTEL_THREAD_CTX_EUTF8: c_int = -4005;
pub const OTEL_THREAD_CTX_ETHREAD: c_int = -4007;
pub const OTEL_THREAD_CTX_ENOCTX: c_int = -4008;
pub const OTEL_THREAD_CTX_EINVALID: c_int = -4009;
pub const OTEL_THREAD_CTX_ETRUNCATED: c_int = -4010;
pub const OTEL_THREAD_CTX_ESLOT: c_int = -4011;
pub const OTEL_THREAD_CTX_ENAME: c_int = -4012;
pub const OTEL_THREAD_CTX_EKEYS: c_int = -4013;
pub const OTEL_THREAD_CTX_EUNKNOWNKEY: c_int = -4014;
pub const OTEL_THREAD_CTX_EPUBLISHED: c_int = -4015;
pub const OTEL_THREAD_CTX_ENOTPUBLISHED: c_int = -4016;
pub const OTEL_THREAD_CTX_EATTR: c_int = -4017;
pub const OTEL_THREAD_CTX_EMAP: c_int = -4018;
pub const OTEL_THREAD_CTX_ESYS: c_int = -4019;
pub const OTEL_THREAD_CTX_EDUPKEY: c_int = -4020;
pub const OTEL_THREAD_CTX_EOPTIONS: c_int = -4021;
pub const OTEL_THREAD_CTX_EUNSUPPORTED: c_int = -4023;
pub const OTEL_THREAD_CTX_ENOATTR: c_int = -4024;
pub const OTEL_THREAD_CTX_ENESTED: c_int = -4025;
pub const OTEL_THREAD_CTX_EFULL: c_int = -4026;

/// `struct otel_thread_ctx_options`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct otel_thread_ctx_options {
    /// `size_of::<otel_thread_ctx_options>()` as the caller knows it.
    pub size: usize,
    /// Bytes of attribute entries the context can hold, 1 to
    /// `OTEL_THREAD_CTX_ATTRS_MAX`; 0: the default (`OTEL_THREAD_CTX_ATTRS_MAX`).
    pub attrs_capacity: c_uint,
    /// `OTEL_THREAD_CTX_OPTION_*` bits; 0: none.
    pub flags: c_uint,
}

/// `otel_thread_ctx_options.flags`: a context for ids only (`attrs_capacity` 0).
pub const OTEL_THREAD_CTX_OPTION_IDS_ONLY: c_uint = 1;

impl Default for otel_thread_ctx_options {
    /// `OTEL_THREAD_CTX_OPTIONS_INIT`.
    fn default() -> Self {
        otel_thread_ctx_options {
            size: std::mem::size_of::<otel_thread_ctx_options>(),
            attrs_capacity: 0,
            flags: 0,
        }
    }
}

/// `otel_thread_ctx`: a context (a value: ids, flags, attributes and a
/// capacity), opaque, only ever behind a pointer.
#[repr(C)]
pub struct otel_thread_ctx {
    _opaque: [u8; 0],
    _not_send_sync_unpin: PhantomData<(*mut u8, PhantomPinned)>,
}

/// `struct otel_thread_ctx_attr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct otel_thread_ctx_attr {
    pub key: c_uint,
    pub len: c_uint,
    pub value: *const u8,
}

/// `struct otel_thread_ctx_attr_iter`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct otel_thread_ctx_attr_iter {
    pub rec: *const otel_thread_ctx_record,
    pub pos: usize,
    pub keys: c_uint,
    /// Effective entries skipped so far for an index outside the key map.
    pub unmapped: c_uint,
}

/// `enum otel_thread_ctx_self_check_status`.
pub const OTEL_THREAD_CTX_SELF_CHECK_OK: c_int = 0;
pub const OTEL_THREAD_CTX_SELF_CHECK_NOT_EXPORTED: c_int = 1;
pub const OTEL_THREAD_CTX_SELF_CHECK_MISMATCH: c_int = 2;
pub const OTEL_THREAD_CTX_SELF_CHECK_UNKNOWN: c_int = 3;

/// `struct otel_thread_ctx_self_check`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct otel_thread_ctx_self_check {
    pub status: c_int,
    pub slot: *const c_void,
    pub own_slot: *const c_void,
    pub slot_is_own: c_int,
    pub exported: *const c_void,
    pub module: *const c_char,
    pub exported_module: *const c_char,
    pub exporting_modules: c_uint,
    pub reason: [c_char; 384],
}

extern "C" {
    pub fn otel_thread_ctx_strerror(error: c_int) -> *const c_char;

    pub fn otel_thread_ctx_create(ctx: *mut *mut otel_thread_ctx) -> c_int;
    pub fn otel_thread_ctx_create_with(
        ctx: *mut *mut otel_thread_ctx,
        options: *const otel_thread_ctx_options,
    ) -> c_int;
    pub fn otel_thread_ctx_destroy(ctx: *mut otel_thread_ctx);

    pub fn otel_thread_ctx_set_ids(
        ctx: *mut otel_thread_ctx,
        trace_id: *const [u8; 16],
        span_id: *const [u8; 8],
        trace_flags: u8,
    ) -> c_int;
    pub fn otel_thread_ctx_set_span_id(ctx: *mut otel_thread_ctx, span_id: *const [u8; 8]) -> c_int;
    pub fn otel_thread_ctx_set_trace_flags(ctx: *mut otel_thread_ctx, trace_flags: u8) -> c_int;
    pub fn otel_thread_ctx_clear_ids(ctx: *mut otel_thread_ctx) -> c_int;

    pub fn otel_thread_ctx_set_attr(
        ctx: *mut otel_thread_ctx,
        key: c_uint,
        value: *const c_void,
        len: usize,
    ) -> c_int;
    pub fn otel_thread_ctx_remove_attr(ctx: *mut otel_thread_ctx, key: c_uint) -> c_int;
    pub fn otel_thread_ctx_clear_attrs(ctx: *mut otel_thread_ctx) -> c_int;
    pub fn otel_thread_ctx_clear(ctx: *mut otel_thread_ctx) -> c_int;
    pub fn otel_thread_ctx_set_attrs(
        ctx: *mut otel_thread_ctx,
        attrs: *const otel_thread_ctx_attr,
        n: usize,
    ) -> c_int;

    pub fn otel_thread_ctx_copy(dst: *mut otel_thread_ctx, src: *const otel_thread_ctx) -> c_int;
    pub fn otel_thread_ctx_get(ctx: *const otel_thread_ctx, out: *mut otel_thread_ctx_record) -> c_int;

    pub fn otel_thread_ctx_attach(ctx: *const otel_thread_ctx, saved: *mut otel_thread_ctx) -> c_int;
    pub fn otel_thread_ctx_update(ctx: *const otel_thread_ctx) -> c_int;
    pub fn otel_thread_ctx_detach(saved: *mut otel_thread_ctx) -> c_int;
    pub fn otel_thread_ctx_save(saved: *mut otel_thread_ctx) -> c_int;
    pub fn otel_thread_ctx_update_span_id(span_id: *const [u8; 8]) -> c_int;
    pub fn otel_thread_ctx_update_trace_flags(trace_flags: u8) -> c_int;
    pub fn otel_thread_ctx_update_all(
        trace_id: *const [u8; 16],
        span_id: *const [u8; 8],
        trace_flags: u8,
        attrs: *const otel_thread_ctx_attr,
        n: usize,
    ) -> c_int;

    pub fn otel_thread_ctx_read(out: *mut otel_thread_ctx_record) -> c_int;
    pub fn otel_thread_ctx_record_decode(
        bytes: *const c_void,
        len: usize,
        out: *mut otel_thread_ctx_record,
    ) -> c_int;
    pub fn otel_thread_ctx_attr_iter_init(
        it: *mut otel_thread_ctx_attr_iter,
        rec: *const otel_thread_ctx_record,
    );
    pub fn otel_thread_ctx_attr_iter_init_map(
        it: *mut otel_thread_ctx_attr_iter,
        rec: *const otel_thread_ctx_record,
        key_count: c_uint,
    );
    pub fn otel_thread_ctx_attr_iter_next(
        it: *mut otel_thread_ctx_attr_iter,
        out: *mut otel_thread_ctx_attr,
    ) -> c_int;
    pub fn otel_thread_ctx_record_attr(
        rec: *const otel_thread_ctx_record,
        key: c_uint,
        out: *mut otel_thread_ctx_attr,
    ) -> c_int;

    pub fn otel_thread_ctx_self_check(result: *mut otel_thread_ctx_self_check) -> c_int;

    pub fn otel_thread_ctx_key_register(name: *const c_char, index: *mut c_uint) -> c_int;
    pub fn otel_thread_ctx_key_find(name: *const c_char, index: *mut c_uint) -> c_int;
    pub fn otel_thread_ctx_key_name(index: c_uint) -> *const c_char;
    pub fn otel_thread_ctx_key_count() -> c_uint;
}

// --- otel_thread_ctx_process.h --------------------------------------------

pub const OTEL_THREAD_CTX_PROCESS_SIGNATURE: &[u8; 8] = b"OTEL_CTX";
pub const OTEL_THREAD_CTX_PROCESS_VERSION: u32 = 2;
pub const OTEL_THREAD_CTX_PROCESS_SCHEMA_VERSION: &str = "tlsdesc_v1_dev";
pub const OTEL_THREAD_CTX_PROCESS_SCHEMA_VERSION_TLS_V1: &str = "tls_v1";
pub const OTEL_THREAD_CTX_PROCESS_PAYLOAD_MAX: usize = 65536;

/// `enum otel_thread_ctx_process_type`: the AnyValue field numbers.
pub const OTEL_THREAD_CTX_PROCESS_EMPTY: c_int = 0;
pub const OTEL_THREAD_CTX_PROCESS_STRING: c_int = 1;
pub const OTEL_THREAD_CTX_PROCESS_BOOL: c_int = 2;
pub const OTEL_THREAD_CTX_PROCESS_INT: c_int = 3;
pub const OTEL_THREAD_CTX_PROCESS_DOUBLE: c_int = 4;
pub const OTEL_THREAD_CTX_PROCESS_ARRAY: c_int = 5;
pub const OTEL_THREAD_CTX_PROCESS_KVLIST: c_int = 6;
pub const OTEL_THREAD_CTX_PROCESS_BYTES: c_int = 7;

/// `struct otel_thread_ctx_process_attr`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct otel_thread_ctx_process_attr {
    pub key: *const c_char,
    /// `enum otel_thread_ctx_process_type`.
    pub type_: c_int,
    pub string: *const c_char,
    pub length: usize,
    pub int_value: i64,
    pub double_value: f64,
    pub bool_value: c_int,
}

/// `enum otel_thread_ctx_process_schema`.
pub const OTEL_THREAD_CTX_PROCESS_SCHEMA_TLSDESC_V1_DEV: c_int = 0;
pub const OTEL_THREAD_CTX_PROCESS_SCHEMA_TLS_V1: c_int = 1;
/// `enum otel_thread_ctx_process_fork`.
pub const OTEL_THREAD_CTX_PROCESS_FORK_DROP: c_int = 0;
pub const OTEL_THREAD_CTX_PROCESS_FORK_REPUBLISH: c_int = 1;

/// `struct otel_thread_ctx_process_options`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct otel_thread_ctx_process_options {
    pub size: usize,
    pub schema: c_int,
    pub on_fork: c_int,
    pub attributes: *const otel_thread_ctx_process_attr,
    pub attribute_count: usize,
}

impl Default for otel_thread_ctx_process_options {
    /// `OTEL_THREAD_CTX_PROCESS_OPTIONS_INIT`.
    fn default() -> Self {
        otel_thread_ctx_process_options {
            size: std::mem::size_of::<otel_thread_ctx_process_options>(),
            schema: OTEL_THREAD_CTX_PROCESS_SCHEMA_TLSDESC_V1_DEV,
            on_fork: OTEL_THREAD_CTX_PROCESS_FORK_DROP,
            attributes: std::ptr::null(),
            attribute_count: 0,
        }
    }
}

/// `struct otel_thread_ctx_process_info`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct otel_thread_ctx_process_info {
    pub published: c_int,
    pub memfd: c_int,
    pub mapping: *const c_void,
    pub mapping_size: usize,
    pub monotonic_published_at_ns: u64,
    pub payload_size: u32,
    pub payload: *const c_void,
}

/// `struct otel_thread_ctx_process_header`: the start of the OTEL_CTX mapping.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct otel_thread_ctx_process_header {
    pub signature: [c_char; 8],
    pub version: u32,
    pub payload_size: u32,
    pub monotonic_published_at_ns: u64,
    pub payload: u64,
}

const _: () = assert!(std::mem::size_of::<otel_thread_ctx_process_header>() == 32);

extern "C" {
    pub fn otel_thread_ctx_process_publish(resource: *const otel_thread_ctx_process_attr, count: usize) -> c_int;
    pub fn otel_thread_ctx_process_publish_with(
        resource: *const otel_thread_ctx_process_attr,
        count: usize,
        options: *const otel_thread_ctx_process_options,
    ) -> c_int;
    pub fn otel_thread_ctx_process_update(resource: *const otel_thread_ctx_process_attr, count: usize) -> c_int;
    pub fn otel_thread_ctx_process_update_with(
        resource: *const otel_thread_ctx_process_attr,
        count: usize,
        options: *const otel_thread_ctx_process_options,
    ) -> c_int;
    pub fn otel_thread_ctx_process_unpublish() -> c_int;
    pub fn otel_thread_ctx_process_query(info: *mut otel_thread_ctx_process_info) -> c_int;
    pub fn otel_thread_ctx_process_copy(
        header: *mut otel_thread_ctx_process_header,
        payload: *mut *mut c_void,
    ) -> c_int;
}

/// `enum otel_thread_ctx_inspect_error` (otel_thread_ctx_inspect.h): the
/// codes only the reading side returns.
pub const OTEL_THREAD_CTX_EPERM: c_int = -1;
pub const OTEL_THREAD_CTX_ENOENT: c_int = -2;
pub const OTEL_THREAD_CTX_ESRCH: c_int = -3;
pub const OTEL_THREAD_CTX_EAGAIN: c_int = -11;
pub const OTEL_THREAD_CTX_EFAULT: c_int = -14;
pub const OTEL_THREAD_CTX_ETIMEDOUT: c_int = -110;
pub const OTEL_THREAD_CTX_EFORMAT: c_int = -4101;
pub const OTEL_THREAD_CTX_EDECODE: c_int = -4102;
pub const OTEL_THREAD_CTX_ENOSLOT: c_int = -4103;
pub const OTEL_THREAD_CTX_EMODEL: c_int = -4104;

/// `include/otel_thread_ctx_inspect.h`: libotel-thread-ctx-inspect, which
/// reads other processes, linked by build.rs with the cargo feature
/// `inspect`.
#[cfg(feature = "inspect")]
pub mod inspect {
    use super::{otel_thread_ctx_process_attr, otel_thread_ctx_record, pid_t};
    use std::os::raw::{c_char, c_int, c_uint, c_void};

    pub const OTEL_THREAD_CTX_INSPECT_PROCESS_READ_ATTEMPTS: c_uint = 100;

    /// `struct otel_thread_ctx_inspect_process_snapshot`.
    #[repr(C)]
    #[derive(Debug)]
    pub struct otel_thread_ctx_inspect_process_snapshot {
        pub mapping_address: u64,
        pub payload_address: u64,
        pub monotonic_published_at_ns: u64,
        pub version: u32,
        pub retries: c_uint,
        pub payload: *const c_void,
        pub payload_size: u32,
        pub schema_version: *const c_char,
        pub key_map_present: c_int,
        pub key_count: usize,
        pub keys: *const *const c_char,
        pub resource_count: usize,
        pub resource: *const otel_thread_ctx_process_attr,
        pub attribute_count: usize,
        pub attributes: *const otel_thread_ctx_process_attr,
    }

    /// `enum otel_thread_ctx_inspect_model`.
    pub const OTEL_THREAD_CTX_INSPECT_TLSDESC_STATIC: c_int = 1;
    pub const OTEL_THREAD_CTX_INSPECT_TLSDESC_DYNAMIC: c_int = 2;
    pub const OTEL_THREAD_CTX_INSPECT_GENERAL_DYNAMIC: c_int = 3;
    pub const OTEL_THREAD_CTX_INSPECT_INITIAL_EXEC: c_int = 4;
    pub const OTEL_THREAD_CTX_INSPECT_LOCAL_EXEC: c_int = 5;
    /// `enum otel_thread_ctx_inspect_libc`.
    pub const OTEL_THREAD_CTX_INSPECT_LIBC_UNKNOWN: c_int = 0;
    pub const OTEL_THREAD_CTX_INSPECT_LIBC_GLIBC: c_int = 1;
    pub const OTEL_THREAD_CTX_INSPECT_LIBC_MUSL: c_int = 2;

    /// `struct otel_thread_ctx_inspect_module`.
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct otel_thread_ctx_inspect_module {
        pub path: *const c_char,
        pub base: u64,
        pub st_value: u64,
        pub model: c_int,
        pub tp_offset: i64,
        pub module_id: u64,
        pub dtv_offset: u64,
    }

    /// `struct otel_thread_ctx_inspect_info`.
    #[repr(C)]
    #[derive(Debug)]
    pub struct otel_thread_ctx_inspect_info {
        pub pid: pid_t,
        pub libc: c_int,
        pub module_count: usize,
        pub modules: *const otel_thread_ctx_inspect_module,
        pub process_ctx_status: c_int,
        pub process_ctx: *const otel_thread_ctx_inspect_process_snapshot,
    }

    /// Per-thread anomalies (`otel_thread_ctx_inspect_thread::anomalies`).
    pub const OTEL_THREAD_CTX_INSPECT_OVERSIZED: c_uint = 1;
    pub const OTEL_THREAD_CTX_INSPECT_TRUNCATED_ENTRY: c_uint = 2;
    pub const OTEL_THREAD_CTX_INSPECT_HALF_IDS: c_uint = 4;

    /// `struct otel_thread_ctx_inspect_thread`.
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub struct otel_thread_ctx_inspect_thread {
        pub tid: pid_t,
        pub name: [c_char; 17],
        pub status: c_int,
        pub sys_errno: c_int,
        pub anomalies: c_uint,
        pub module: c_uint,
        pub thread_pointer: u64,
        pub slot_address: u64,
        pub record_address: u64,
        pub attrs_data_size: u16,
        pub record: otel_thread_ctx_record,
    }

    /// `otel_thread_ctx_inspector`: opaque.
    #[repr(C)]
    pub struct otel_thread_ctx_inspector {
        _opaque: [u8; 0],
        _not_send_sync_unpin: std::marker::PhantomData<(*mut u8, std::marker::PhantomPinned)>,
    }

    extern "C" {
        pub fn otel_thread_ctx_inspect_strerror(error: c_int) -> *const c_char;

        pub fn otel_thread_ctx_inspect_process_read(
            pid: pid_t,
            attempts: c_uint,
            out: *mut *mut otel_thread_ctx_inspect_process_snapshot,
        ) -> c_int;
        pub fn otel_thread_ctx_inspect_process_read_at(
            pid: pid_t,
            mapping: u64,
            attempts: c_uint,
            out: *mut *mut otel_thread_ctx_inspect_process_snapshot,
        ) -> c_int;
        pub fn otel_thread_ctx_inspect_process_decode(
            payload: *const c_void,
            size: usize,
            out: *mut *mut otel_thread_ctx_inspect_process_snapshot,
        ) -> c_int;
        pub fn otel_thread_ctx_inspect_process_snapshot_free(snap: *mut otel_thread_ctx_inspect_process_snapshot);

        pub fn otel_thread_ctx_inspect_model_name(model: c_int) -> *const c_char;
        pub fn otel_thread_ctx_inspect_open(pid: pid_t, out: *mut *mut otel_thread_ctx_inspector) -> c_int;
        pub fn otel_thread_ctx_inspect_info(
            insp: *const otel_thread_ctx_inspector,
        ) -> *const otel_thread_ctx_inspect_info;
        pub fn otel_thread_ctx_inspect_key_count(insp: *const otel_thread_ctx_inspector) -> c_uint;
        pub fn otel_thread_ctx_inspect_key_name(
            insp: *const otel_thread_ctx_inspector,
            index: c_uint,
        ) -> *const c_char;
        pub fn otel_thread_ctx_inspect_thread(
            insp: *mut otel_thread_ctx_inspector,
            tid: pid_t,
            out: *mut otel_thread_ctx_inspect_thread,
        ) -> c_int;
        pub fn otel_thread_ctx_inspect_threads(
            insp: *mut otel_thread_ctx_inspector,
            out: *mut otel_thread_ctx_inspect_thread,
            cap: usize,
            count: *mut usize,
        ) -> c_int;
        pub fn otel_thread_ctx_inspect_close(insp: *mut otel_thread_ctx_inspector);

        pub fn otel_thread_ctx_inspect_maps_signature(pid: pid_t, signature: *mut u64) -> c_int;
        pub fn otel_thread_ctx_inspect_signature(
            insp: *const otel_thread_ctx_inspector,
            signature: *mut u64,
        ) -> c_int;
    }
}
