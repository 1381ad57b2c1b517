#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""No name of this project's libraries clashes with the reference's.

The OpenTelemetry reference process-context implementation exports
otel_process_ctx_publish, _drop_current, _read and _read_drop (and, from its
source, otel_process_ctx_read_data_drop) and installs otel_process_ctx.h.

  names.py --nm NM --project LIB... [--compat LIB...]
           [--install MESON BUILD_ROOT]

--project: libraries that must define no symbol named otel_process_ctx_*
(shared: the dynamic symbols; static: the global ones).  --compat:
libotel-thread-ctx-compat, which must define exactly the reference's four
functions (shared: versioned OTEL_THREAD_CTX_COMPAT_1.0).  --install: run
`meson install --destdir` into a temporary directory and check the tree:
no file named like one of the reference's (otel_process_ctx.h), and every
installed library by the rules above.
"""
import argparse
import os
import subprocess
import sys
import tempfile

PREFIX = "otel_process_ctx_"
REFERENCE_API = {
    "otel_process_ctx_publish",
    "otel_process_ctx_drop_current",
    "otel_process_ctx_read",
    "otel_process_ctx_read_drop",
}
REFERENCE_FILES = {"otel_process_ctx.h", "otel_process_ctx.c"}
COMPAT_VERSION = "OTEL_THREAD_CTX_COMPAT_1.0"

failures = []


def fail(message):
    failures.append(message)
    print("FAIL: " + message)


def defined_symbols(nm, path):
    """{name: version or None} of what `path` defines: the dynamic symbols of
    a shared library, the global ones of an archive."""
    shared = ".so" in os.path.basename(path)
    args = [nm, "-D", "--defined-only", path] if shared else [nm, "-g", "--defined-only", path]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    names = {}
    for line in out.splitlines():
        fields = line.split()
        if len(fields) < 3 or fields[1] == "A":
            continue  # archive member headers, version definitions
        name, _, version = fields[2].partition("@")
        names[name] = version.lstrip("@") or None
    return names


def check_project(nm, path):
    names = defined_symbols(nm, path)
    clash = sorted(n for n in names if n.startswith(PREFIX))
    if clash:
        fail(f"{path} defines {', '.join(clash)}")
    else:
        print(f"ok: {os.path.basename(path)}: {len(names)} symbols, none named {PREFIX}*")


def check_compat(nm, path):
    names = defined_symbols(nm, path)
    shared = ".so" in os.path.basename(path)
    # Sanitizers may add globals of their own (__asan_*, ...); the static
    # archive carries the format layer's internals (otel__*, hidden in the
    # shared library).
    ours = {n: v for n, v in names.items()
            if not n.startswith((".", "__")) and not (not shared and n.startswith("otel__"))}
    if set(ours) != REFERENCE_API:
        fail(f"{path} defines {sorted(ours)}, not exactly {sorted(REFERENCE_API)}")
        return
    if shared:
        unversioned = sorted(n for n, v in ours.items() if v != COMPAT_VERSION)
        if unversioned:
            fail(f"{path}: not versioned {COMPAT_VERSION}: {unversioned}")
            return
    print(f"ok: {os.path.basename(path)}: exactly the reference's four functions")


def is_library(name):
    return name.startswith("lib") and (name.endswith(".a") or ".so" in name)


def check_install(nm, meson, build_root):
    with tempfile.TemporaryDirectory() as destdir:
        done = subprocess.run([meson, "install", "-C", build_root, "--no-rebuild",
                               "--destdir", destdir], capture_output=True, text=True)
        if done.returncode != 0:
            # A target meson.build does not list in the test's depends is
            # not built yet.
            fail("meson install --destdir failed:\n" + done.stdout[-2000:] + done.stderr)
            return
        files = []
        for root, _, names in os.walk(destdir):
            files += [os.path.join(root, n) for n in names]
        print(f"meson install --destdir: {len(files)} files")
        for path in files:
            rel = os.path.relpath(path, destdir)
            name = os.path.basename(path)
            if name in REFERENCE_FILES:
                fail(f"installed {rel}, a name of the reference's")
            if name.endswith(".h"):
                print(f"  header {rel}")
            if os.path.islink(path) or not is_library(name):
                continue
            if name.startswith("libotel-thread-ctx-compat"):
                check_compat(nm, path)
            else:
                check_project(nm, path)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--nm", required=True)
    parser.add_argument("--project", nargs="+", default=[])
    parser.add_argument("--compat", nargs="+", default=[])
    parser.add_argument("--install", nargs=2, metavar=("MESON", "BUILD_ROOT"))
    args = parser.parse_args()
    for path in args.project:
        check_project(args.nm, path)
    for path in args.compat:
        check_compat(args.nm, path)
    if args.install:
        check_install(args.nm, *args.install)
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
