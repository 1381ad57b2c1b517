#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the seed corpus of the ELF reader's fuzz target (corpus-elf/).

The seeds are small, so that the fuzzer spends its mutations on headers and
tables rather than on padding: a few kilobytes each, linked without the C
library's start files, with small page alignment and no unwind tables.  For
x86-64 (gcc) and aarch64 (aarch64-linux-gnu-gcc), each way a module reaches
the slot:

  desc.so    defines the slot, TLSDESC, a version script (GNU version
             definitions), DT_NEEDED libc with a version it needs, DT_GNU_HASH
  gd.so      imports the slot, legacy general-dynamic, DT_HASH only
  ie.so      defines it, initial-exec (DF_STATIC_TLS), both hash tables
  pie        a PIE with PT_INTERP that exports its slot: local-exec
  static     a static non-PIE executable: PT_TLS, no dynamic section

and each of those again without section headers (so that every table comes
from the dynamic section) and stripped of .symtab.  Then broken files made
from the x86-64 desc.so by hostile.py's recipes: not ELF, ELF32, big-endian,
cut short, header fields and dynamic entries pointed at nonsense.

The corpus is committed: the fuzz targets and the replay tests read it in
every configuration, cross builds included, without a cross compiler.  Run
this again (it needs both compilers) after changing it, and commit the
result:

  tests/elf/make-corpus-elf.py tests/elf/corpus-elf
"""
import os
import shutil
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostile  # noqa: E402

SLOT_DEF = """
__thread void *otel_thread_ctx_v1;
"""
SLOT_USE = """
extern __thread void *otel_thread_ctx_v1;
"""
FUNCS = """
unsigned long strlen(const char *s);
void *otel_get(void) { return otel_thread_ctx_v1; }
void otel_set(void *p) { otel_thread_ctx_v1 = p; }
unsigned long otel_len(const char *s) { return strlen(s); }
"""
# An executable's entry point that reaches the slot and never returns to
# anything (the program is never run).
START = """
__thread void *otel_thread_ctx_v1;
void *otel_get(void) { return otel_thread_ctx_v1; }
void _start(void) { otel_thread_ctx_v1 = (void *)otel_get; for (;;) ; }
"""
VERSION_SCRIPT = "OTEL_1 { global: otel_thread_ctx_v1; otel_get; otel_set; otel_len; local: *; };\n"

SMALL = ["-Os", "-fno-asynchronous-unwind-tables", "-fno-ident", "-Wl,--build-id=none",
         "-Wl,-z,noseparate-code", "-Wl,-z,max-page-size=0x100", "-Wl,-z,common-page-size=0x100",
         "-Wl,-z,noexecstack", "-Wl,--no-eh-frame-hdr"]

MACHINES = {
    # name: compiler, strip, flags for TLSDESC, flags for legacy general-dynamic
    "x86_64": ("gcc", "strip", ["-mtls-dialect=gnu2"], ["-mtls-dialect=gnu"]),
    "aarch64": ("aarch64-linux-gnu-gcc", "aarch64-linux-gnu-strip", ["-mtls-dialect=desc"],
                ["-mtls-dialect=trad"]),
}


def modules(desc, trad, vscript):
    """(name, source, flags)"""
    return [
        ("desc.so", SLOT_DEF + FUNCS,
         ["-shared", "-fPIC", "-nostartfiles", *desc, "-Wl,-soname,libdesc.so.1",
          "-Wl,--version-script=" + vscript, "-Wl,--hash-style=gnu"]),
        ("gd.so", SLOT_USE + FUNCS,
         ["-shared", "-fPIC", "-nostartfiles", *trad, "-Wl,--hash-style=sysv"]),
        ("ie.so", SLOT_DEF + FUNCS,
         ["-shared", "-fPIC", "-nostartfiles", "-ftls-model=initial-exec",
          "-Wl,-soname,libie.so.1", "-Wl,--hash-style=both"]),
        ("pie", START,
         ["-pie", "-fPIE", "-nostdlib", "-Wl,--export-dynamic-symbol=otel_thread_ctx_v1"]),
        ("static", START, ["-static", "-no-pie", "-fno-PIE", "-nostdlib"]),
    ]


def without_section_headers(b):
    """The same file with e_shoff, e_shnum and e_shstrndx 0, cut before the
    section headers when they come last."""
    b = bytearray(b)
    shoff = struct.unpack_from("<Q", b, 0x28)[0]
    struct.pack_into("<Q", b, 0x28, 0)
    struct.pack_into("<HH", b, 0x3c, 0, 0)
    return bytes(b[:shoff] if 0 < shoff <= len(b) else b)


# The broken files kept from hostile.py's variants of one seed, by name or
# name prefix, ending in "-" (the first variant matching each).
HOSTILE = ["empty", "text", "magic-4", "header-63", "elf32", "big-endian", "bad-class",
           "arm32", "relocatable", "phoff-huge", "shoff-eof", "phentsize", "phnum-xnum",
           "shstrndx-big", "shstrndx-xindex", "cut-", "phdr0-f4-", "shdr1-f5-", "dyn0-", "dyn3-",
           "dyn6-"]


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = argv[1]
    for arch, tools in MACHINES.items():
        for tool in tools[:2]:
            if shutil.which(tool) is None:
                print(f"make-corpus-elf.py: {tool} (for {arch}) not found", file=sys.stderr)
                return 1
    os.makedirs(out, exist_ok=True)
    for name in os.listdir(out):
        os.unlink(os.path.join(out, name))
    seeds = {}
    with tempfile.TemporaryDirectory() as work:
        vscript = os.path.join(work, "version.map")
        with open(vscript, "w") as f:
            f.write(VERSION_SCRIPT)
        for arch, (cc, strip, desc, trad) in MACHINES.items():
            for name, src, flags in modules(desc, trad, vscript):
                c = os.path.join(work, "m.c")
                binary = os.path.join(work, "m.out")
                with open(c, "w") as f:
                    f.write(src)
                subprocess.run([cc, *SMALL, *flags, c, "-o", binary], check=True)
                with open(binary, "rb") as f:
                    image = f.read()
                seeds[f"{arch}-{name}"] = image
                seeds[f"{arch}-{name}-noshdr"] = without_section_headers(image)
                subprocess.run([strip, "--strip-all", binary], check=True)
                with open(binary, "rb") as f:
                    seeds[f"{arch}-{name}-stripped"] = f.read()
    variants = hostile.variants(seeds["x86_64-desc.so"])
    for want in HOSTILE:
        match = [(n, b) for n, b, _ in variants
                 if n == want or (want.endswith("-") and n.startswith(want))]
        if not match:
            print(f"make-corpus-elf.py: hostile.py made no variant {want}", file=sys.stderr)
            return 1
        seeds["hostile-" + match[0][0]] = match[0][1]
    total = 0
    for name, data in sorted(seeds.items()):
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
        total += len(data)
    print(f"{len(seeds)} files, {total} bytes in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
