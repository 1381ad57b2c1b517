// SPDX-License-Identifier: Apache-2.0
//! Finds the C library for the linker, and takes the README's Rust example
//! so that `cargo test` compiles and runs it as printed.
//!
//! The library: the directory in OTEL_THREAD_CTX_LIB_DIR if set, otherwise
//! what `pkg-config --libs otel-thread-ctx` says (PKG_CONFIG names another
//! pkg-config; PKG_CONFIG_PATH is respected, and finds the uninstalled .pc of
//! a Meson build directory, `BUILD/meson-uninstalled`).  Every directory is
//! also put in the run-time search path (rpath) of the programs linked, so
//! tests and examples find the library without LD_LIBRARY_PATH.
use std::env;
use std::fs;
use std::path::PathBuf;
use std::process::Command;

const LIBRARY: &str = "otel-thread-ctx";

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

    let (dirs, libs) = match env::var_os("OTEL_THREAD_CTX_LIB_DIR") {
        Some(dir) => (vec![PathBuf::from(dir)], vec![LIBRARY.to_string()]),
        None => pkg_config(),
    };
    for dir in &dirs {
        println!("cargo:rustc-link-search=native={}", dir.display());
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
    }
    for lib in &libs {
        println!("cargo:rustc-link-lib=dylib={}", lib);
    }

    readme_example();
}

/// The -L directories and -l libraries of `pkg-config --libs`.
fn pkg_config() -> (Vec<PathBuf>, Vec<String>) {
    let program = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".to_string());
    let output = Command::new(&program)
        .args(["--libs", LIBRARY])
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run `{} --libs {}`: {} (install pkg-config, or set \
                 OTEL_THREAD_CTX_LIB_DIR to the directory of libotel-thread-ctx.so)",
                program, LIBRARY, e
            )
        });
    if !output.status.success() {
        panic!(
            "`{} --libs {}` failed ({}): {}(install the library, or point \
             PKG_CONFIG_PATH at the directory of its .pc file, or set \
             OTEL_THREAD_CTX_LIB_DIR)",
            program,
            LIBRARY,
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
    if !libs.iter().any(|l| l == LIBRARY) {
        panic!("`{} --libs {}` does not name -l{}: {}", program, LIBRARY, LIBRARY, text);
    }
    (dirs, libs)
}

/// Writes OUT_DIR/readme_rust.md, the example of doc/bindings.md under "### Rust" as
/// a doctest (src/lib.rs includes it).  OTEL_THREAD_CTX_README names that
/// file (Meson sets it; then it must hold the example); by default the
/// repository's, which a copy of the crate alone does not have: then there
/// is no such doctest.
fn readme_example() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR")).join("readme_rust.md");
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
            fs::write(&out, "").expect("writing readme_rust.md");
            return;
        }
        Err(e) => panic!("cannot read {}: {}", path.display(), e),
    };
    let code = extract_rust_example(&text)
        .unwrap_or_else(|why| panic!("{}: {}", path.display(), why));
    fs::write(&out, format!("```rust\n{}```\n", code)).expect("writing readme_rust.md");
}

/// The first ```rust block of the "### Rust" subsection of
/// "## Bindings: Python and Rust", unchanged.
fn extract_rust_example(text: &str) -> Result<String, String> {
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
    for line in lines.by_ref() {
        if line == "```rust" {
            let mut code = String::new();
            for line in lines.by_ref() {
                if line == "```" {
                    if code.trim().is_empty() {
                        return Err("the ```rust block of \"### Rust\" is empty".into());
                    }
                    return Ok(code);
                }
                code.push_str(line);
                code.push('\n');
            }
            return Err("the ```rust block of \"### Rust\" does not end".into());
        }
        if line.starts_with("#") {
            break;
        }
    }
    Err("no ```rust block in \"### Rust\"".into())
}
