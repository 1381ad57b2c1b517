#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""An unsupported architecture or OS fails the build with exactly one clear
#error, not a cascade.  Compiles src/tls.h with clang for foreign targets.

usage: unsupported-target.py CLANG SOURCE_ROOT
"""
import subprocess
import sys

CASES = [
    ("riscv64-unknown-linux-gnu", "supports x86-64 (LP64) and little-endian aarch64 (LP64) only"),
    ("i686-unknown-linux-gnu", "supports x86-64 (LP64) and little-endian aarch64 (LP64) only"),
    ("x86_64-unknown-linux-gnux32", "supports x86-64 (LP64) and little-endian aarch64 (LP64) only"),
    ("aarch64_be-unknown-linux-gnu", "supports x86-64 (LP64) and little-endian aarch64 (LP64) only"),
    ("x86_64-unknown-freebsd", "supports Linux only"),
]


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    clang, root = sys.argv[1], sys.argv[2]
    if not clang:
        print("skip: no clang to compile for foreign targets")
        return 77
    failures = 0
    for target, message in CASES:
        cmd = [clang, f"--target={target}", "-ffreestanding", "-fsyntax-only", "-x", "c",
               f"-I{root}/arch", f"-I{root}/src", "-include", "tls.h", "/dev/null"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        errors = [l for l in proc.stderr.splitlines() if ": error:" in l]
        ok = proc.returncode != 0 and len(errors) == 1 and message in errors[0]
        print(f"{'ok ' if ok else 'BAD'} {target}: {errors if errors else proc.stderr.strip()}")
        failures += not ok
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
