// SPDX-License-Identifier: Apache-2.0
//! The process context (OTEP 4719) this process publishes
//! (`include/otel_thread_ctx_process.h`): the resource attributes given here
//! (`service.name`, ...), the schema version, and the key map, the names
//! registered with [`register_key`](crate::register_key), which the library
//! keeps up to date.  Readers skip a process's thread records until it
//! publishes one.  Publishing, updating and unpublishing take a process-wide
//! lock: start-up work.
//!
//! ```
//! use otel_thread_ctx::process::{self, Value};
//!
//! process::publish(&[("service.name", Value::Str("checkout")), ("process.pid", Value::Int(4242))])?;
//! process::update(&[("service.name", Value::Str("checkout")), ("canary", Value::Bool(true))])?;
//! assert!(process::query()?.published);
//! process::unpublish()?;
//! # Ok::<(), otel_thread_ctx::Error>(())
//! ```
//!
//! Reading a process context back, from this process or another one, is
//! `inspect::read_process` (the feature `inspect`).

use crate::{check, sys, Error, Result};
use std::ffi::CString;
use std::os::raw::c_char;
use std::ptr;

/// A resource attribute's value, of a type the library publishes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value<'a> {
    /// A string (UTF-8; it may hold NUL bytes).
    Str(&'a str),
    Bool(bool),
    Int(i64),
    Double(f64),
}

/// `threadlocal.schema_version`: what readers are told the thread records
/// follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schema {
    /// `"tlsdesc_v1_dev"`, the draft's name, which today's readers expect
    /// (the default).
    TlsdescV1Dev,
    /// `"tls_v1"`, the name once the OTEP is merged.
    TlsV1,
}

/// What a child made by `fork()` publishes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnFork {
    /// Nothing, until it publishes itself (the default).
    Drop,
    /// The parent's payload, in a mapping of its own.
    Republish,
}

/// The options of [`publish_with`]; they hold until the context is
/// unpublished.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    pub schema: Schema,
    pub on_fork: OnFork,
}

impl Default for Options {
    fn default() -> Self {
        Options { schema: Schema::TlsdescV1Dev, on_fork: OnFork::Drop }
    }
}

/// The attributes as C structs, with the key strings they point into.  A
/// key with a NUL byte cannot be a C string: EATTR, as the library answers
/// for a key it refuses, without calling it.
fn c_attrs(attrs: &[(&str, Value<'_>)]) -> Result<(Vec<CString>, Vec<sys::otel_thread_ctx_process_attr>)> {
    let keys = attrs
        .iter()
        .map(|(k, _)| CString::new(*k).map_err(|_| Error::EATTR))
        .collect::<Result<Vec<_>>>()?;
    let c: Vec<sys::otel_thread_ctx_process_attr> = attrs
        .iter()
        .zip(&keys)
        .map(|((_, value), key)| {
            let mut a = sys::otel_thread_ctx_process_attr {
                key: key.as_ptr(),
                type_: sys::OTEL_THREAD_CTX_PROCESS_EMPTY,
                string: ptr::null(),
                length: 0,
                int_value: 0,
                double_value: 0.0,
                bool_value: 0,
            };
            match *value {
                Value::Str(s) => {
                    a.type_ = sys::OTEL_THREAD_CTX_PROCESS_STRING;
                    // Length 0 means "NUL-terminated": an empty value
                    // points at a NUL.
                    a.string = if s.is_empty() { b"\0".as_ptr() as *const c_char } else { s.as_ptr() as *const c_char };
                    a.length = s.len();
                }
                Value::Bool(b) => {
                    a.type_ = sys::OTEL_THREAD_CTX_PROCESS_BOOL;
                    a.bool_value = b as i32;
                }
                Value::Int(i) => {
                    a.type_ = sys::OTEL_THREAD_CTX_PROCESS_INT;
                    a.int_value = i;
                }
                Value::Double(d) => {
                    a.type_ = sys::OTEL_THREAD_CTX_PROCESS_DOUBLE;
                    a.double_value = d;
                }
            }
            a
        })
        .collect();
    Ok((keys, c))
}

/// Calls `f` with the resource attributes and the options as C structs
/// (the options' attributes in them); all stay alive for the call.
fn with_c(
    resource: &[(&str, Value<'_>)],
    attributes: &[(&str, Value<'_>)],
    options: Options,
    f: impl FnOnce(*const sys::otel_thread_ctx_process_attr, usize, &sys::otel_thread_ctx_process_options) -> i32,
) -> Result<()> {
    let (_keys, c_resource) = c_attrs(resource)?;
    let (_attr_keys, c_attributes) = c_attrs(attributes)?;
    let c_options = sys::otel_thread_ctx_process_options {
        schema: match options.schema {
            Schema::TlsdescV1Dev => sys::OTEL_THREAD_CTX_PROCESS_SCHEMA_TLSDESC_V1_DEV,
            Schema::TlsV1 => sys::OTEL_THREAD_CTX_PROCESS_SCHEMA_TLS_V1,
        },
        on_fork: match options.on_fork {
            OnFork::Drop => sys::OTEL_THREAD_CTX_PROCESS_FORK_DROP,
            OnFork::Republish => sys::OTEL_THREAD_CTX_PROCESS_FORK_REPUBLISH,
        },
        attributes: c_attributes.as_ptr(),
        attribute_count: c_attributes.len(),
        ..Default::default()
    };
    check(f(c_resource.as_ptr(), c_resource.len(), &c_options))
}

/// `otel_thread_ctx_process_publish()`: publishes the process context with
/// these resource attributes (copied), the schema version and the key map.
/// Errors: EPUBLISHED (already published: use [`update`]), EATTR (an empty,
/// duplicate or NUL-holding key), E2BIG (over 64 KiB), EMAP, ENOMEM.
pub fn publish(resource: &[(&str, Value<'_>)]) -> Result<()> {
    publish_with(resource, Options::default())
}

/// [`publish`] with options: the schema version, what a forked child
/// publishes.
pub fn publish_with(resource: &[(&str, Value<'_>)], options: Options) -> Result<()> {
    publish_with_attributes(resource, &[], options)
}

/// [`publish_with`], and entries of `ProcessContext.attributes` of the
/// caller's own, published after the library's `threadlocal.*` ones (their
/// keys may not start with `threadlocal.`: EATTR).  They hold like the
/// options.
pub fn publish_with_attributes(
    resource: &[(&str, Value<'_>)],
    attributes: &[(&str, Value<'_>)],
    options: Options,
) -> Result<()> {
    with_c(resource, attributes, options, |p, n, o| unsafe { sys::otel_thread_ctx_process_publish_with(p, n, o) })
}

/// `otel_thread_ctx_process_update()`: replaces the resource attributes of
/// the published context (the same mapping, a new payload and timestamp);
/// the options and attributes of the publication hold.
/// Errors: those of [`publish`], ENOTPUBLISHED.
pub fn update(resource: &[(&str, Value<'_>)]) -> Result<()> {
    let (_keys, c) = c_attrs(resource)?;
    check(unsafe { sys::otel_thread_ctx_process_update(c.as_ptr(), c.len()) })
}

/// `otel_thread_ctx_process_update_with()`: replaces the resource
/// attributes, the options and the attributes in one update of the same
/// mapping.  Errors: those of [`update`]; nothing changes on error.
pub fn update_with(
    resource: &[(&str, Value<'_>)],
    attributes: &[(&str, Value<'_>)],
    options: Options,
) -> Result<()> {
    with_c(resource, attributes, options, |p, n, o| unsafe { sys::otel_thread_ctx_process_update_with(p, n, o) })
}

/// `otel_thread_ctx_process_unpublish()`: withdraws the context (nothing
/// published: nothing happens).
pub fn unpublish() -> Result<()> {
    check(unsafe { sys::otel_thread_ctx_process_unpublish() })
}

/// What this process publishes now (`struct otel_thread_ctx_process_info`);
/// all zero when nothing is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Published {
    pub published: bool,
    /// A memfd mapping ("/memfd:OTEL_CTX"), else anonymous memory.
    pub memfd: bool,
    /// Where the header is.
    pub mapping: usize,
    pub mapping_size: usize,
    /// CLOCK_BOOTTIME of the last change.
    pub published_at_ns: u64,
    pub payload_size: u32,
    pub payload: usize,
}

/// `otel_thread_ctx_process_query()`.
pub fn query() -> Result<Published> {
    let mut info = sys::otel_thread_ctx_process_info {
        published: 0,
        memfd: 0,
        mapping: ptr::null(),
        mapping_size: 0,
        monotonic_published_at_ns: 0,
        payload_size: 0,
        payload: ptr::null(),
    };
    check(unsafe { sys::otel_thread_ctx_process_query(&mut info) })?;
    Ok(Published {
        published: info.published != 0,
        memfd: info.memfd != 0,
        mapping: info.mapping as usize,
        mapping_size: info.mapping_size,
        published_at_ns: info.monotonic_published_at_ns,
        payload_size: info.payload_size,
        payload: info.payload as usize,
    })
}
