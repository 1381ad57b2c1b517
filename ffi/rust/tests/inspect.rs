// SPDX-License-Identifier: Apache-2.0
//! The inspector (feature `inspect`) against a live child: this test
//! program started again as a service (the test `service`, which does
//! nothing unless OTEL_TEST_SERVICE is set) that publishes a process
//! context and, on worker threads, thread contexts; this process, its
//! parent, reads them from outside.
//!
//! ptrace does not work under qemu-user: when OTEL_TEST_NO_PTRACE gives
//! that reason, the tests return at once (meson test reports the run SKIP:
//! cargo-test.sh).
#![cfg(feature = "inspect")]

use otel_thread_ctx::inspect::{maps_signature, read_process, AnyValue, Inspector, Libc, Model};
use otel_thread_ctx::process::{self, Value};
use otel_thread_ctx::{register_key, update_all, Context, Error};
use std::collections::BTreeMap;
use std::ffi::{CStr, CString};
use std::io::{BufRead, BufReader, Write};
use std::os::raw::{c_char, c_int, c_void};
use std::process::{Child, ChildStdout, Command, Stdio};

const WORKERS: u8 = 4;

/// Waits until process `pid` runs program `name` and sleeps in it: its
/// exec is over.  spawn() may return before (the vfork parent is let go as
/// the exec begins), while the child still shows this process's memory and
/// libraries.  False if it ends first.
fn exec_done(pid: i32, name: &str) -> bool {
    loop {
        let stat = match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(s) => s,
            Err(_) => return false,
        };
        let (open, close) = match (stat.find('('), stat.rfind(')')) {
            (Some(open), Some(close)) if open < close => (open, close),
            _ => return false,
        };
        let comm = &stat[open + 1..close];
        let state = stat[close + 1..].split_whitespace().next().unwrap_or("X");
        if matches!(state, "Z" | "X" | "x") {
            return false;
        }
        if comm == name && state == "S" {
            return true;
        }
        std::thread::yield_now();
    }
}

fn no_ptrace() -> bool {
    match std::env::var("OTEL_TEST_NO_PTRACE") {
        Ok(reason) if !reason.is_empty() => {
            eprintln!("skipped: {}", reason);
            true
        }
        _ => false,
    }
}

extern "C" {
    fn dlopen(filename: *const c_char, flags: c_int) -> *mut c_void;
    fn dlerror() -> *const c_char;
}

const RTLD_NOW: c_int = 2;

/// The paths of the files process `pid` maps.
fn mapped_files(pid: i32) -> Vec<String> {
    std::fs::read_to_string(format!("/proc/{pid}/maps"))
        .unwrap()
        .lines()
        .filter_map(|line| line.splitn(6, char::is_whitespace).nth(5))
        .map(|path| path.trim_start().to_string())
        .filter(|path| path.starts_with('/'))
        .collect()
}

/// The service, in the child: workers 1..=WORKERS publish their own span
/// with two attributes, t1 and t2 each a copy of one shared context, idle
/// nothing.  Prints "ready" and name=tid pairs, then until stdin closes
/// takes commands from it: "load LIBRARY" loads a shared library (dlopen)
/// and prints "loaded".
#[test]
// The threads must all start before any is joined: the collect is needed
// (clippy 1.63 says otherwise).
#[allow(clippy::needless_collect)]
fn service() {
    if std::env::var_os("OTEL_TEST_SERVICE").is_none() {
        return;
    }
    let route = register_key("http.route").unwrap();
    let method = register_key("http.method").unwrap();
    process::publish(&[("service.name", Value::Str("inspect-live"))]).unwrap();
    let mut shared = Context::new().unwrap();
    shared.set_ids(&[0x4b; 16], &[0xee; 8], 1).unwrap();
    shared.set_attr(route, "task").unwrap();
    let shared = std::sync::Arc::new(shared);
    let (tx, rx) = std::sync::mpsc::channel();
    let mut names: Vec<String> = (1..=WORKERS).map(|i| format!("w{}", i)).collect();
    names.extend(["t1", "t2", "idle"].iter().map(|s| s.to_string()));
    let threads: Vec<_> = names
        .into_iter()
        .enumerate()
        .map(|(i, name)| {
            let (tx, shared) = (tx.clone(), shared.clone());
            std::thread::spawn(move || {
                let tid = std::fs::read_link("/proc/thread-self").unwrap();
                let tid = tid.file_name().unwrap().to_str().unwrap().to_string();
                let _guard = if name.starts_with('w') {
                    let path = format!("/w/{}", i + 1);
                    update_all(&[0x4b; 16], &[i as u8 + 1; 8], 1, &[(route, path.as_str()), (method, "GET")])
                        .unwrap();
                    None
                } else if name.starts_with('t') {
                    Some(shared.attach().unwrap())
                } else {
                    None
                };
                drop(shared);
                tx.send(format!("{}={}", name, tid)).unwrap();
                loop {
                    std::thread::park();
                }
            })
        })
        .collect();
    let pairs: Vec<String> = threads.iter().map(|_| rx.recv().unwrap()).collect();
    println!("ready {}", pairs.join(" "));
    for line in std::io::stdin().lock().lines() {
        if let Some(library) = line.unwrap().strip_prefix("load ") {
            let name = CString::new(library).unwrap();
            // SAFETY: a NUL-terminated name; the library stays loaded.
            if unsafe { dlopen(name.as_ptr(), RTLD_NOW) }.is_null() {
                panic!("dlopen {library}: {:?}", unsafe { CStr::from_ptr(dlerror()) });
            }
            println!("loaded");
        }
    }
    std::process::exit(0);
}

struct Service {
    child: Child,
    out: BufReader<ChildStdout>,
    tids: BTreeMap<String, i32>,
}

impl Service {
    fn start() -> Service {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "service", "--nocapture", "--test-threads=1"])
            .env("OTEL_TEST_SERVICE", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        // libtest prints "test service ... " before the test's own output,
        // on the same line.
        let mut line = String::new();
        let ready = loop {
            line.clear();
            assert_ne!(out.read_line(&mut line).unwrap(), 0, "the service ended before it was ready");
            if let Some(at) = line.find("ready ") {
                break &line[at..];
            }
        };
        let tids = ready
            .split_whitespace()
            .skip(1)
            .map(|w| {
                let (k, v) = w.split_once('=').unwrap();
                (k.to_string(), v.parse().unwrap())
            })
            .collect();
        Service { child, out, tids }
    }

    fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Has the service load the shared library `library` (a path, or a
    /// name the dynamic loader looks for).
    fn load(&mut self, library: &str) {
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "load {library}").unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        self.out.read_line(&mut line).unwrap();
        assert_eq!(line, "loaded\n", "the service did not load {library}");
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let status = self.child.wait().unwrap();
        if !std::thread::panicking() {
            assert!(status.success(), "the service exited {}", status);
        }
    }
}

#[test]
fn inspect_a_live_service() {
    if no_ptrace() {
        return;
    }
    let service = Service::start();
    let ctx = read_process(service.pid()).unwrap();
    assert_eq!(ctx.resource, vec![("service.name".to_string(), AnyValue::Str("inspect-live".into()))]);
    assert_eq!(ctx.key_map, Some(vec!["http.route".to_string(), "http.method".to_string()]));

    let mut insp = Inspector::open(service.pid()).unwrap();
    assert_eq!(insp.pid(), service.pid());
    assert_eq!(insp.libc(), Libc::Glibc);
    let module = &insp.modules()[0];
    assert!(module.path.contains("libotel-thread-ctx"), "{}", module.path);
    assert!(matches!(module.model, Model::TlsdescStatic | Model::TlsdescDynamic), "{:?}", module.model);
    assert!(module.model_name.starts_with("tlsdesc"));
    assert_eq!(insp.key_names(), ["http.route", "http.method"]);
    assert_eq!(insp.key_name(1), Some("http.method"));
    assert_eq!(insp.key_name(2), None);
    assert_eq!(insp.process_context().unwrap().resource_value("service.name"),
        Some(&AnyValue::Str("inspect-live".into())));

    let threads: BTreeMap<i32, _> = insp.threads().unwrap().into_iter().map(|t| (t.tid, t)).collect();
    for i in 1..=WORKERS {
        let t = &threads[&service.tids[&format!("w{}", i)]];
        let rec = t.record().unwrap();
        assert_eq!((rec.trace_id(), rec.span_id(), rec.trace_flags()), ([0x4b; 16], [i; 8], 1));
        assert_eq!(
            t.named_attrs(),
            vec![
                ("http.route".to_string(), format!("/w/{}", i)),
                ("http.method".to_string(), "GET".to_string())
            ]
        );
        assert_eq!(t.attrs().count(), 2);
        assert_ne!(t.record_address, 0);
        assert_eq!(t.anomalies, 0);
        assert!(format!("{:?}", t).contains("http.route"));
    }
    let (t1, t2) = (&threads[&service.tids["t1"]], &threads[&service.tids["t2"]]);
    assert_ne!(t1.record_address, t2.record_address, "each thread publishes a copy of its own");
    for t in [t1, t2] {
        let rec = t.record().unwrap();
        assert_eq!((rec.trace_id(), rec.span_id(), rec.trace_flags()), ([0x4b; 16], [0xee; 8], 1));
        assert_eq!(t.named_attrs(), vec![("http.route".to_string(), "task".to_string())]);
    }
    let idle = &threads[&service.tids["idle"]];
    assert_eq!(idle.record().unwrap_err(), Error::ENOCTX);
    assert_eq!(idle.attrs().count(), 0);

    let one = insp.thread(service.tids["w2"]);
    assert_eq!(one.record().unwrap().span_id(), [2; 8]);
    assert_eq!(insp.thread(std::process::id() as i32).status.unwrap_err(), Error::ESRCH);
}

#[test]
fn inspect_signature_of_a_live_service() {
    if no_ptrace() {
        return;
    }
    let service = Service::start();
    let signature = maps_signature(service.pid()).unwrap();
    let insp = Inspector::open(service.pid()).unwrap();
    assert_eq!(insp.signature(), signature, "open()'s signature, the maps signature");
    assert_eq!(maps_signature(service.pid()).unwrap(), signature, "the service loaded nothing meanwhile");
}

/// A library of glibc that no test program links, for the service to load
/// (the file maps shows may be named libresolv-2.NN.so).
const LIBRARY: &str = "libresolv.so.2";

#[test]
fn inspect_signature_after_a_module_is_loaded() {
    if no_ptrace() {
        return;
    }
    let mut service = Service::start();
    let pid = service.pid();
    let has_library = |pid| mapped_files(pid).iter().any(|p| p.contains("/libresolv"));
    assert!(!has_library(pid), "the service has {LIBRARY} already");
    let before = maps_signature(pid).unwrap();
    let old = Inspector::open(pid).unwrap();
    assert_eq!(old.signature(), before);
    service.load(LIBRARY);
    assert!(has_library(pid), "the service did not map {LIBRARY}");
    let after = maps_signature(pid).unwrap();
    assert_ne!(after, before, "a module loaded, the same signature");
    assert_eq!(Inspector::open(pid).unwrap().signature(), after);
    assert_eq!(old.signature(), before, "the signature as the old inspector was opened");
}

#[test]
fn inspect_maps_signature_errors() {
    // Neither call needs ptrace here: no process, no maps to read.
    let mut gone = Command::new("true").spawn().unwrap();
    let pid = gone.id() as i32;
    gone.wait().unwrap();
    assert_eq!(maps_signature(pid).unwrap_err(), Error::ESRCH);
    // 0 and below name no process, as for Inspector::open.
    for bad in [0, -1, i32::MIN] {
        assert_eq!(maps_signature(bad).unwrap_err(), Error::ESRCH, "pid {bad}");
        assert_eq!(Inspector::open(bad).unwrap_err(), Error::ESRCH, "pid {bad}");
    }
}

#[test]
fn inspect_errors() {
    if no_ptrace() {
        return;
    }
    let mut sleeper = Command::new("sleep").arg("60").spawn().unwrap();
    let pid = sleeper.id() as i32;
    assert!(exec_done(pid, "sleep"), "sleep never ran");
    let e = Inspector::open(pid).unwrap_err();
    sleeper.kill().unwrap();
    sleeper.wait().unwrap();
    assert_eq!(e, Error::ENOSLOT);
    assert!(e.to_string().contains("-4103"));
    assert!(!e.message().to_lowercase().contains("unknown"), "{}", e.message());
    let gone = Command::new("true").status().map(|_| pid).unwrap();
    assert_eq!(Inspector::open(gone).unwrap_err(), Error::ESRCH);
    assert_eq!(read_process(gone).unwrap_err(), Error::ESRCH);
}

/// Records no careful writer publishes (tests/inspect/expected.h, the
/// "hostile" mode of the C inspector tests' target, which meson test names
/// in OTEL_TEST_HOSTILE_TARGET): each thread's reading says what is wrong
/// with its record, through this crate's types, and none fails the others.
#[test]
fn inspect_hostile_records() {
    use otel_thread_ctx::sys::inspect::{
        OTEL_THREAD_CTX_INSPECT_HALF_IDS, OTEL_THREAD_CTX_INSPECT_OVERSIZED,
        OTEL_THREAD_CTX_INSPECT_TRUNCATED_ENTRY,
    };
    if no_ptrace() {
        return;
    }
    let target = std::env::var("OTEL_TEST_HOSTILE_TARGET")
        .expect("OTEL_TEST_HOSTILE_TARGET: the C tests' inspect-target-shared (meson test sets it)");
    let mut child = Command::new(&target)
        .arg("hostile")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{target}: {e}"));
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
    // "ready TID:SLOT ..." in the order of expected.h's HOSTILE_* kinds.
    let tids: Vec<i32> = line
        .trim_end()
        .strip_prefix("ready")
        .unwrap_or_else(|| panic!("the target said {line:?}"))
        .split_whitespace()
        .map(|w| w.split(':').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(tids.len(), 7, "{line}");
    let mut insp = Inspector::open(child.id() as i32).unwrap();
    let [oversized, truncated, duplicate, invalid, unmapped, misaligned, half_ids] =
        [0, 1, 2, 3, 4, 5, 6].map(|i| insp.thread(tids[i]));
    drop(insp);

    assert_eq!(oversized.status, Ok(()), "{oversized:?}");
    assert_ne!(oversized.anomalies & OTEL_THREAD_CTX_INSPECT_OVERSIZED, 0);
    assert_eq!(oversized.attrs_data_size, 2000);
    // (Record::attr looks keys up in this process's registry: the target's
    // key map is Thread::attrs'.)
    let attr = |t: &otel_thread_ctx::inspect::Thread, key: u32| {
        t.attrs().filter(|(k, _)| *k == key).map(|(_, v)| v.to_vec()).last()
    };
    assert_eq!(attr(&oversized, 1), Some(vec![b'y'; 253]));
    assert_eq!(attr(&oversized, 2), Some(vec![b'z'; 200]));

    assert_eq!(truncated.status, Ok(()), "{truncated:?}");
    assert_eq!(truncated.anomalies, OTEL_THREAD_CTX_INSPECT_TRUNCATED_ENTRY);
    assert_eq!(truncated.attrs().collect::<Vec<_>>(), vec![(1, &b"abc"[..])]);

    assert_eq!(duplicate.status, Ok(()), "{duplicate:?}");
    assert_eq!(duplicate.anomalies, 0);
    assert_eq!(attr(&duplicate, 1), Some(b"last".to_vec()), "the last entry wins");
    assert_eq!(attr(&duplicate, 0), Some(b"k".to_vec()));

    assert_eq!(invalid.status, Err(Error::EINVALID));
    assert!(invalid.record().is_err() && invalid.attrs().next().is_none());
    assert_eq!(unmapped.status, Err(Error::EFAULT));
    assert_ne!(unmapped.record_address, 0);
    assert_eq!(misaligned.status, Err(Error::EFORMAT));
    assert_eq!(misaligned.record_address % 2, 1);

    assert_eq!(half_ids.status, Ok(()), "{half_ids:?}");
    assert_eq!(half_ids.anomalies, OTEL_THREAD_CTX_INSPECT_HALF_IDS);

    // The target runs on: it exits 0 only if every thread kept going.
    drop(child.stdin.take());
    assert!(child.wait().unwrap().success(), "the target did not end well after the reading");
}
