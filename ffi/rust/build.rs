// SPDX-License-Identifier: Apache-2.0
//! Finds the C libraries for the linker, and takes the Rust examples of
//! doc/bindings.md so that `cargo test` compiles and runs them as printed.
//!
//! The library: the directory in OTEL_THREAD_CTX_LIB_DIR if set, otherwise
//! what `pkg-config --libs otel-thread-ctx` says (PKG_CONFIG names another
//! pkg-config; PKG_CONFIG_PATH is respected, and finds the uninstalled .pc of
//! a Meson build directory, `BUILD/meson-uninstalled`).  With the feature
//! `inspect`, libotel-thread-ctx-inspect too, the same way (pkg-config
//! otel-thread-ctx-inspect).  Every directory is also put in the run-time
//! search path (rpath) of the programs linked, so tests and examples find
//! the libraries without LD_LIBRARY_PATH.
use std::env;
use std::fs;
use std::path::PathBuf;
use std::process::Command;

const LIBRARY: &str = "otel-thread-ctx";
const INSPECT_LIBRARY: &str = "otel-thread-ctx-inspect";

fn main() {
    for var in [
        "OTEL_THREAD_CTX_LIB_DIR",
        "OTEL_THREAD_CTX_README",
        "PKG_CONFIG",
        "PKG_CONFIG_PATH",
        "PKG_CONFIG_LIBDIR",
        "PKG_CONFIG_SYSROOT_DIR",
    ] {
        println!("cargo:rerun-if-env-changed={}", var);
    }
    println!("cargo:rerun-if-changed=build.rs");

    let inspect = env::var_os("CARGO_FEATURE_INSPECT").is_some();
    let wanted: &[&str] = if inspect { &[INSPECT_LIBRARY, LIBRARY] } else { &[LIBRARY] };
    let (mut dirs, mut libs) = (Vec::new(), Vec::new());
    for library in wanted {
        let (d, l) = match env::var_os("OTEL_THREAD_CTX_LIB_DIR") {
            Some(dir) => (vec![PathBuf::from(dir)], vec![library.to_string()]),
            None => pkg_config(library),
        };
        for dir in d {
            if !dirs.contains(&dir) {
                dirs.push(dir);
            }
        }
        for lib in l {
            if !libs.contains(&lib) {
                libs.push(lib);
            }
        }
    }
    for dir in &dirs {
        println!("cargo:rustc-link-search=native={}", dir.display());
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
    }
    for lib in &libs {
        println!("cargo:rustc-link-lib=dylib={}", lib);
    }

    readme_examples();
}

/// The -L directories and -l libraries of `pkg-config --libs LIBRARY`.
fn pkg_config(library: &str) -> (Vec<PathBuf>, Vec<String>) {
    let program = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".to_string());
    let output = Command::new(&program)
        .args(["--libs", library])
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run `{} --libs {}`: {} (install pkg-config, or set \
                 OTEL_THREAD_CTX_LIB_DIR to the directory of lib{}.so)",
                program, library, e, library
            )
        });
    if !output.status.success() {
        panic!(
            "`{} --libs {}` failed ({}): {}(install the library, or point \
             PKG_CONFIG_PATH at the directory of its .pc file, or set \
             OTEL_THREAD_CTX_LIB_DIR)",
            program,
            library,
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let text = String::from_utf8(output.stdout).expect("pkg-config printed non-UTF-8");
    let mut dirs = Vec::new();
    let mut libs = Vec::new();
    for word in text.split_whitespace() {
        if let Some(dir) = word.strip_prefix("-L") {
            dirs.push(PathBuf::from(dir));
        } else if let Some(lib) = word.strip_prefix("-l") {
            libs.push(lib.to_string());
        }
    }
    if !libs.iter().any(|l| l == library) {
        panic!("`{} --libs {}` does not name -l{}: {}", program, library, library, text);
    }
    (dirs, libs)
}

/// Writes OUT_DIR/readme_rust.md and OUT_DIR/readme_rust_inspect.md, the
/// first and second ```rust blocks of doc/bindings.md under "### Rust", as
/// doctests (src/lib.rs includes them; the second, which reads another
/// process, with the feature `inspect` only).  OTEL_THREAD_CTX_README names
/// that file (Meson sets it; then it must hold both); by default the
/// repository's, which a copy of the crate alone does not have: then there
/// are no such doctests.
fn readme_examples() {
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    let outs = [out_dir.join("readme_rust.md"), out_dir.join("readme_rust_inspect.md")];
    let (path, required) = match env::var_os("OTEL_THREAD_CTX_README") {
        Some(p) => (PathBuf::from(p), true),
        None => {
            let dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
            (dir.join("../../doc/bindings.md"), false)
        }
    };
    println!("cargo:rerun-if-changed={}", path.display());
    let text = match fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if !required => {
            println!("cargo:warning=no README example to test ({}: {})", path.display(), e);
            for out in &outs {
                fs::write(out, "").expect("writing the README's examples");
            }
            return;
        }
        Err(e) => panic!("cannot read {}: {}", path.display(), e),
    };
    let examples = extract_rust_examples(&text).unwrap_or_else(|why| panic!("{}: {}", path.display(), why));
    if examples.len() != 2 {
        panic!("{}: \"### Rust\" has {} ```rust blocks, not 2", path.display(), examples.len());
    }
    for (out, code) in outs.iter().zip(&examples) {
        fs::write(out, format!("```rust\n{}```\n", code)).expect("writing the README's examples");
    }
}

/// The ```rust blocks of the "### Rust" subsection of
/// "## Bindings: Python and Rust", unchanged.
fn extract_rust_examples(text: &str) -> Result<Vec<String>, String> {
    let mut lines = text.lines();
    lines
        .by_ref()
        .find(|l| *l == "## Bindings: Python and Rust")
        .ok_or("no section \"## Bindings: Python and Rust\"")?;
    for line in lines.by_ref() {
        if line == "### Rust" {
            break;
        }
        if line.starts_with("## ") {
            return Err("no subsection \"### Rust\" in \"## Bindings: Python and Rust\"".into());
        }
    }
    let mut examples = Vec::new();
    while let Some(line) = lines.next() {
        if line == "```rust" {
            let mut code = String::new();
            loop {
                match lines.next() {
                    Some("```") => break,
                    Some(line) => {
                        code.push_str(line);
                        code.push('\n');
                    }
                    None => return Err("a ```rust block of \"### Rust\" does not end".into()),
                }
            }
            if code.trim().is_empty() {
                return Err("a ```rust block of \"### Rust\" is empty".into());
            }
            examples.push(code);
        } else if line.starts_with("## ") || line.starts_with("### ") {
            break;
        }
    }
    if examples.is_empty() {
        return Err("no ```rust block in \"### Rust\"".into());
    }
    Ok(examples)
}
