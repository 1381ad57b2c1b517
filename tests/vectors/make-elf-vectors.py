#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Builds the ELF vectors (elf/*) and writes elf.json (README.md).

    make-elf-vectors.py [--check] DIR

Each file defines (or imports) otel_thread_ctx_v1 in one TLS model and
access dialect, built with gcc 12 and GNU ld 2.40 (Debian 12), without the C
library (-nostdlib), so that each is a few kilobytes: they are read, never
run.  Their expected results are written here by hand from the rules: the
slot is the module's only .tbss variable, after 24 bytes of .tdata, so its
offset in the TLS block (st_value) is 24 and the block is 32 bytes, 8-aligned;
in an executable (local-exec), the slot is at thread pointer - 8 on x86-64
(variant II: the block ends at the thread pointer, rounded up to its
alignment) and thread pointer + 40 on aarch64 (variant I: a 16-byte TCB, then
the block).  Needs gcc, gcc-aarch64-linux-gnu and binutils; run it again
only to change the files (they are committed).
"""
import json
import os
import subprocess
import sys

TDATA = "__thread long otel_vector_tdata[3] = { 1, 2, 3 };\n"
SLOT = "__attribute__((visibility(\"default\"))) __thread void *otel_thread_ctx_v1;\n"
USE = ("void *otel_vector_get(void) { return otel_thread_ctx_v1; }\n"
       "long otel_vector_tdata_get(void) { return otel_vector_tdata[1]; }\n")
START = "void _start(void) { for (;;) otel_vector_get(); }\n"

SMALL = ["-O2", "-nostdlib", "-Wl,--build-id=none", "-Wl,-z,noseparate-code",
         "-Wl,-z,max-page-size=4096", "-Wl,--hash-style=gnu", "-s"]

X86, ARM = "gcc", "aarch64-linux-gnu-gcc"


def slot(value=24):
    return {"defined": True, "table": "dynsym", "value": value, "size": 8, "type": "TLS",
            "bind": "GLOBAL"}


IE_WHY = ("readers find the slot (through the R_*_TPOFF/TPREL GOT entry), but initial-exec "
          "in a shared library sets DF_STATIC_TLS: dlopen() of it fails once static TLS is "
          "used up, so this project's checker fails it")

# name, compiler, source, flags, expectation
# (`verdict`: what otel-thread-ctx-check says: pass, fail or absent; the
# other fields are what a reader of the file must find.)
VECTORS = [
    ("x86_64-tlsdesc.so", X86, TDATA + SLOT + USE,
     ["-shared", "-fPIC", "-mtls-dialect=gnu2"],
     {"machine": "x86-64", "kind": "shared-library", "slot": slot(), "access_models":
      ["TLSDESC"], "relocations": ["R_X86_64_TLSDESC"], "main_program_tp_offset": None,
      "verdict": "pass"}),
    ("x86_64-general-dynamic.so", X86, TDATA + SLOT + USE,
     ["-shared", "-fPIC", "-mtls-dialect=gnu"],
     {"machine": "x86-64", "kind": "shared-library", "slot": slot(), "access_models":
      ["general-dynamic"], "relocations": ["R_X86_64_DTPMOD64", "R_X86_64_DTPOFF64"], "main_program_tp_offset": None,
      "verdict": "pass"}),
    ("x86_64-initial-exec.so", X86, TDATA + SLOT + USE,
     ["-shared", "-fPIC", "-ftls-model=initial-exec"],
     {"machine": "x86-64", "kind": "shared-library", "slot": slot(), "access_models":
      ["initial-exec"], "relocations": ["R_X86_64_TPOFF64"], "main_program_tp_offset": None,
      "verdict": "fail", "why": IE_WHY}),
    ("x86_64-local-exec-pie", X86, TDATA + SLOT + USE + START,
     ["-fPIE", "-pie", "-Wl,--export-dynamic-symbol=otel_thread_ctx_v1"],
     {"machine": "x86-64", "kind": "pie", "slot": slot(), "access_models":
      ["local-exec"], "relocations": [], "main_program_tp_offset": -8, "verdict": "pass"}),
    ("x86_64-local-exec-pie-unexported", X86, TDATA + SLOT + USE + START,
     ["-fPIE", "-pie"],
     {"machine": "x86-64", "kind": "pie", "slot": {"defined": False},
      "verdict": "absent",
      "why": "the slot is not in .dynsym (stripped: no .symtab either): a profiler cannot "
             "find it"}),
    ("x86_64-not-tls.so", X86, "__attribute__((visibility(\"default\"))) void "
     "*otel_thread_ctx_v1;\n" + "void *otel_vector_get(void) { return otel_thread_ctx_v1; }\n",
     ["-shared", "-fPIC"],
     {"machine": "x86-64", "kind": "shared-library", "slot": {"defined": True, "table":
                                                                "dynsym", "type": "OBJECT"},
      "access_models": [],
      "verdict": "fail", "why": "otel_thread_ctx_v1 is not a TLS symbol"}),
    ("aarch64-tlsdesc.so", ARM, TDATA + SLOT + USE, ["-shared", "-fPIC", "-mtls-dialect=desc"],
     {"machine": "aarch64", "kind": "shared-library", "slot": slot(), "access_models":
      ["TLSDESC"], "relocations": ["R_AARCH64_TLSDESC"], "main_program_tp_offset": None,
      "verdict": "pass"}),
    ("aarch64-initial-exec.so", ARM, TDATA + SLOT + USE,
     ["-shared", "-fPIC", "-ftls-model=initial-exec"],
     {"machine": "aarch64", "kind": "shared-library", "slot": slot(), "access_models":
      ["initial-exec"], "relocations": ["R_AARCH64_TLS_TPREL"], "main_program_tp_offset": None,
      "verdict": "fail", "why": IE_WHY}),
    ("aarch64-local-exec-pie", ARM, TDATA + SLOT + USE + START,
     ["-fPIE", "-pie", "-Wl,--export-dynamic-symbol=otel_thread_ctx_v1"],
     {"machine": "aarch64", "kind": "pie", "slot": slot(), "access_models":
      ["local-exec"], "relocations": [], "main_program_tp_offset": 40, "verdict": "pass"}),
]


def build(out_dir):
    src = os.path.join(out_dir, "vector.c")
    for name, cc, code, flags, _ in VECTORS:
        with open(src, "w") as f:
            f.write(code)
        subprocess.run([cc] + flags + SMALL + ["-o", os.path.join(out_dir, name), src],
                       check=True)
    os.unlink(src)


def render():
    doc = {"format": "otel-thread-ctx conformance vectors: ELF files that define the slot",
           "version": 1, "vectors": [
               {"file": "elf/" + name, "source": code,
                "build": " ".join([cc] + flags + SMALL + ["-o", name, "vector.c"]),
                "expect": expect} for name, cc, code, flags, expect in VECTORS]}
    return json.dumps(doc, indent=1) + "\n"


def main():
    """make-elf-vectors.py [--check] DIR: --check compares DIR/elf.json with
    what this script writes, without building."""
    check = sys.argv[1] == "--check"
    top = sys.argv[-1]
    path = os.path.join(top, "elf.json")
    if check:
        with open(path) as f:
            same = f.read() == render()
        print("make-elf-vectors: %s %s" % (path, "is what make-elf-vectors.py writes" if same
                                           else "differs from what make-elf-vectors.py writes"))
        return 0 if same else 1
    os.makedirs(os.path.join(top, "elf"), exist_ok=True)
    build(os.path.join(top, "elf"))
    with open(path, "w") as f:
        f.write(render())
    return 0


if __name__ == "__main__":
    sys.exit(main())
