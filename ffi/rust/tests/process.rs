// SPDX-License-Identifier: Apache-2.0
//! The process context this process publishes (otel_thread_ctx::process),
//! read back with the inspector's reader when the feature `inspect` is on.
//! One process context per process: the tests take turns (LOCK).
use otel_thread_ctx::process::{self, OnFork, Options, Schema, Value};
use otel_thread_ctx::{register_key, Error};
use std::sync::Mutex;

static LOCK: Mutex<()> = Mutex::new(());

fn turn() -> std::sync::MutexGuard<'static, ()> {
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn publish_update_query_unpublish() {
    let _turn = turn();
    let index = register_key("rust.process.key").unwrap();
    process::publish(&[
        ("service.name", Value::Str("checkout")),
        ("process.pid", Value::Int(i64::from(std::process::id()))),
        ("sampled", Value::Bool(true)),
        ("ratio", Value::Double(0.25)),
        ("empty", Value::Str("")),
        ("nul", Value::Str("a\0b")),
        ("min", Value::Int(i64::MIN)),
    ])
    .unwrap();
    let info = process::query().unwrap();
    assert!(info.published);
    assert!(info.mapping_size >= 32);
    assert!(info.published_at_ns > 0);
    #[cfg(feature = "inspect")]
    {
        use otel_thread_ctx::inspect::{read_process, AnyValue};
        let ctx = read_process(0).unwrap();
        assert_eq!(ctx.mapping_address, info.mapping as u64);
        assert_eq!(ctx.schema_version.as_deref(), Some("tlsdesc_v1_dev"));
        assert_eq!(ctx.key_map.as_ref().unwrap()[index as usize], "rust.process.key");
        assert_eq!(
            ctx.resource,
            vec![
                ("service.name".to_string(), AnyValue::Str("checkout".into())),
                ("process.pid".to_string(), AnyValue::Int(i64::from(std::process::id()))),
                ("sampled".to_string(), AnyValue::Bool(true)),
                ("ratio".to_string(), AnyValue::Double(0.25)),
                ("empty".to_string(), AnyValue::Str(String::new())),
                ("nul".to_string(), AnyValue::Str("a\0b".into())),
                ("min".to_string(), AnyValue::Int(i64::MIN)),
            ]
        );
        assert_eq!(ctx.payload.len(), info.payload_size as usize);
    }
    let _ = index;
    process::update(&[("service.name", Value::Str("checkout-2"))]).unwrap();
    let after = process::query().unwrap();
    assert_eq!(after.mapping, info.mapping, "the same mapping");
    assert!(after.published_at_ns > info.published_at_ns);
    #[cfg(feature = "inspect")]
    {
        use otel_thread_ctx::inspect::{read_process, read_process_at, AnyValue};
        let ctx = read_process_at(0, info.mapping as u64).unwrap();
        assert_eq!(ctx.resource_value("service.name"), Some(&AnyValue::Str("checkout-2".into())));
        process::unpublish().unwrap();
        assert_eq!(read_process(0).unwrap_err(), Error::ENOENT);
        assert!(!Error::ENOENT.message().to_lowercase().contains("unknown"));
    }
    process::unpublish().unwrap();
    assert!(!process::query().unwrap().published);
    process::unpublish().unwrap(); // again: nothing
}

#[test]
fn options_hold_until_unpublished() {
    let _turn = turn();
    process::publish_with(&[], Options { schema: Schema::TlsV1, on_fork: OnFork::Republish }).unwrap();
    process::update(&[("k", Value::Int(1))]).unwrap();
    #[cfg(feature = "inspect")]
    assert_eq!(otel_thread_ctx::inspect::read_process(0).unwrap().schema_version.as_deref(), Some("tls_v1"));
    process::unpublish().unwrap();
    assert_eq!(Options::default(), Options { schema: Schema::TlsdescV1Dev, on_fork: OnFork::Drop });
}

#[test]
fn attributes_are_published_kept_and_replaced() {
    let _turn = turn();
    process::publish_with_attributes(
        &[("service.name", Value::Str("checkout"))],
        &[("deployment.region", Value::Str("eu")), ("runtime.workers", Value::Int(4))],
        Options::default(),
    )
    .unwrap();
    let before = process::query().unwrap();
    #[cfg(feature = "inspect")]
    {
        use otel_thread_ctx::inspect::AnyValue;
        let s = otel_thread_ctx::inspect::read_process(0).unwrap();
        assert_eq!(
            s.attributes,
            vec![
                ("deployment.region".to_string(), AnyValue::Str("eu".to_string())),
                ("runtime.workers".to_string(), AnyValue::Int(4)),
            ]
        );
    }
    // update keeps them; update_with replaces them, and the schema.
    process::update(&[("service.name", Value::Str("renamed"))]).unwrap();
    #[cfg(feature = "inspect")]
    assert_eq!(otel_thread_ctx::inspect::read_process(0).unwrap().attributes.len(), 2);
    process::update_with(&[], &[("k", Value::Bool(true))], Options { schema: Schema::TlsV1, on_fork: OnFork::Drop })
        .unwrap();
    let after = process::query().unwrap();
    assert_eq!(after.mapping, before.mapping, "the same mapping");
    assert!(after.published_at_ns > before.published_at_ns);
    #[cfg(feature = "inspect")]
    {
        let s = otel_thread_ctx::inspect::read_process(0).unwrap();
        assert_eq!(s.attributes.len(), 1);
        assert_eq!(s.schema_version.as_deref(), Some("tls_v1"));
    }
    // The library's namespace is refused, and nothing changes.
    assert_eq!(
        process::update_with(&[], &[("threadlocal.schema_version", Value::Str("x"))], Options::default()).unwrap_err(),
        Error::EATTR
    );
    assert_eq!(process::query().unwrap().published_at_ns, after.published_at_ns);
    process::unpublish().unwrap();
    assert_eq!(process::update_with(&[], &[], Options::default()).unwrap_err(), Error::ENOTPUBLISHED);
}

#[test]
fn errors_are_the_librarys() {
    let _turn = turn();
    process::publish(&[("a", Value::Str("1"))]).unwrap();
    assert_eq!(process::publish(&[]).unwrap_err(), Error::EPUBLISHED);
    process::unpublish().unwrap();
    assert_eq!(process::update(&[]).unwrap_err(), Error::ENOTPUBLISHED);
    assert_eq!(process::publish(&[("a", Value::Int(1)), ("a", Value::Int(2))]).unwrap_err(), Error::EATTR);
    assert_eq!(process::publish(&[("", Value::Int(1))]).unwrap_err(), Error::EATTR);
    assert_eq!(process::publish(&[("a\0b", Value::Int(1))]).unwrap_err(), Error::EATTR);
    let big = "x".repeat(70_000);
    assert_eq!(process::publish(&[("big", Value::Str(&big))]).unwrap_err(), Error::E2BIG);
    assert!(!process::query().unwrap().published, "nothing published on error");
}

#[cfg(feature = "inspect")]
#[test]
fn decode_refuses_what_is_not_a_payload() {
    use otel_thread_ctx::inspect::decode_process;
    assert_eq!(decode_process(b"").unwrap().schema_version, None);
    let e = decode_process(b"\xff\xff\xff").unwrap_err();
    assert_eq!(e, Error::EDECODE);
    assert_eq!(e.code(), -4102);
    assert!(!e.message().to_lowercase().contains("unknown"), "{}", e.message());
    assert_eq!(decode_process(&vec![0u8; 70_000]).unwrap_err(), Error::E2BIG);
}
