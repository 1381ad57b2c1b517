#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Write the golden TLSDESC access windows, tests/tlsdesc/golden/tlsdesc-ARCH.txt.

Compiles a one-function C file that takes the address of an extern __thread
otel_thread_ctx_v1 with the pinned compiler, clang 19 (Debian 12's clang-19,
19.1.7), finds the access in the unlinked object by its relocations, and
writes its window (bytes, instructions, relocations, SHA-256) with the
compiler's --version line and the command.  tests/tlsdesc/check-tlsdesc.py compares
the library's objects with these files.

Run it rarely, only when the canonical sequence is changed on purpose: the
pin moves to another compiler, or the probe below changes (README, "The
golden TLSDESC test").  The library's accessors in arch/ must then be made to
match the new files.  Ordinary builds and tests never need it or clang.

usage: tools/gen-tlsdesc-golden.py [--arch x86_64|aarch64]... [--clang CLANG]
                                   [--force] [--check] [--output-dir DIR]

  --arch        an architecture to write (repeatable; default: both)
  --clang       the compiler (default: clang-19)
  --force       accept a clang other than major version 19
  --check       write nothing; exit 1 if a checked-in file differs from what
                the compiler emits now (the compiler line aside)
  --output-dir  where to write (default: tests/tlsdesc/golden of this source tree)

Exit status: 0 written (or unchanged), 1 differs (--check), 2 refused or
failed; nothing is written unless every architecture succeeds.
"""
import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "tlsdesc"))
import tlsdesc_golden as tg  # noqa: E402

PINNED_MAJOR = 19
PINNED_VERSION = "19.1.7"

SOURCE = [
    "/* The address of the slot, the way a C program takes it. */",
    "extern __thread void *%s;" % tg.SLOT,
    "",
    "void **otel_tlsdesc_probe(void)",
    "{",
    "\treturn &%s;" % tg.SLOT,
    "}",
]

# The flags of the comparison: PIC code, as in a shared library; the TLS
# descriptor dialect (the default on aarch64, where clang has no
# -mtls-dialect); no frame pointer to spread the access.
FLAGS = {
    "x86_64": ["--target=x86_64-linux-gnu", "-O2", "-fPIC", "-fomit-frame-pointer",
               "-mtls-dialect=gnu2"],
    "aarch64": ["--target=aarch64-linux-gnu", "-O2", "-fPIC", "-fomit-frame-pointer"],
}


class Refused(Exception):
    pass


def clang_version(clang):
    try:
        proc = subprocess.run([clang, "--version"], capture_output=True, text=True)
    except OSError as exc:
        raise Refused("cannot run %s: %s" % (clang, exc.strerror or exc))
    first = proc.stdout.splitlines()[0] if proc.stdout else ""
    m = re.search(r"\bclang version (\d+)\.(\d+)\.(\d+)", first)
    if proc.returncode != 0 or not m:
        raise Refused("%s is not clang (its --version says %r)" % (clang, first))
    return first, tuple(int(x) for x in m.groups())


def window_from_probe(arch, obj):
    """The one access window in the probe object, as a Golden."""
    text = [s for s in obj.sections if s.flags & tg.SHF_EXECINSTR and s.index in obj.relocs]
    accesses = []
    for sec in text:
        for r in obj.relocs[sec.index]:
            if r.symbol.name != tg.SLOT:
                continue
            if r.type not in arch.tlsdesc:
                raise Refused("the probe accesses %s with %s, not TLSDESC: wrong flags?"
                              % (tg.SLOT, arch.reloc_name(r.type)))
            accesses.append((sec, r))
    if not accesses:
        raise Refused("no TLSDESC relocation against %s in the probe object" % tg.SLOT)
    sec, first = accesses[0]
    start = first.offset - arch.tlsdesc[first.type]
    calls = [r for s, r in accesses if r.type == arch.call_type]
    if len(calls) != 1 or any(s is not sec for s, _ in accesses):
        raise Refused("expected one access with one %s in one section, found %d relocations"
                      % (arch.reloc_name(arch.call_type), len(accesses)))
    end = tg.access_end(arch, sec.data, calls[0].offset, strict=True)
    if end is None:
        raise Refused("no instruction adding the thread pointer after the call at 0x%x; this "
                      "tool does not understand what the compiler emitted" % calls[0].offset)
    g = tg.Golden(arch)
    for insn in tg.decode_range(arch, sec.data, start, end):
        if not insn.known:
            raise Refused("an instruction in the window is unknown to the decoder: %s"
                          % insn.hex(arch.name))
        g.insns.append((insn.offset - start, insn.raw, insn.text))
    for s, r in accesses:
        if not start <= r.offset < end:
            raise Refused("a TLSDESC relocation lies outside the window [0x%x, 0x%x)" % (start, end))
        g.relocs.append((r.offset - start, r.type, r.addend))
    for r in obj.relocs[sec.index]:
        if start <= r.offset < end and r.symbol.name != tg.SLOT:
            raise Refused("a relocation against %s lies inside the window" % r.symbol.name)
    return g


def generate(arch, clang, version_line):
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "probe.c"), "w") as f:
            f.write("\n".join(SOURCE) + "\n")
        cmd = [clang] + FLAGS[arch.name] + ["-c", "probe.c", "-o", "probe.o"]
        proc = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True)
        if proc.returncode != 0:
            raise Refused("%s failed:\n%s" % (shlex.join(cmd), proc.stderr))
        obj = tg.load_input(os.path.join(tmp, "probe.o"), "probe.o")[0]
    if obj.machine != arch.e_machine:
        raise Refused("the probe object has e_machine %d, not %d" % (obj.machine, arch.e_machine))
    g = window_from_probe(arch, obj)
    g.compiler = version_line
    g.command = shlex.join(cmd)
    g.source = SOURCE
    return g


def comparable(text):
    return [l for l in text.splitlines() if l.split(" ", 1)[0] in ("insn", "reloc", "length",
                                                                   "sha256", "arch")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--arch", action="append", choices=sorted(tg.ARCHES))
    ap.add_argument("--clang", default="clang-19")
    ap.add_argument("--force", action="store_true")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--output-dir", default=os.path.join(ROOT, "tests", "tlsdesc", "golden"))
    args = ap.parse_args()
    arches = [tg.ARCHES[a] for a in (args.arch or ["x86_64", "aarch64"])]
    try:
        version_line, version = clang_version(args.clang)
        if version[0] != PINNED_MAJOR:
            if not args.force:
                raise Refused(
                    "%s is clang %d.%d.%d (%s).\nThe golden sequences are pinned to clang %d "
                    "(Debian 12's clang-19, %s): another major version may emit another, "
                    "equally valid sequence, and the golden files would change for a reason "
                    "that is not the library's.  Install clang-19, or pass --force to "
                    "generate with this compiler anyway (the files will name it)."
                    % ((args.clang,) + version + (version_line, PINNED_MAJOR, PINNED_VERSION)))
            print("warning: --force: generating with clang %d.%d.%d, not the pinned %s"
                  % (version + (PINNED_VERSION,)), file=sys.stderr)
        elif "%d.%d.%d" % version != PINNED_VERSION:
            print("note: clang %d.%d.%d, the pinned release is %s"
                  % (version + (PINNED_VERSION,)), file=sys.stderr)
        results = [(arch, generate(arch, args.clang, version_line)) for arch in arches]
    except (Refused, tg.CheckError) as exc:
        print("gen-tlsdesc-golden: refused: %s" % exc, file=sys.stderr)
        return 2
    status = 0
    for arch, g in results:
        path = os.path.join(args.output_dir, arch.golden_name())
        new = g.render()
        try:
            with open(path, encoding="utf-8") as f:
                old = f.read()
        except FileNotFoundError:
            old = None
        same_window = old is not None and comparable(old) == comparable(new)
        summary = "%s: %d bytes, %d instructions, relocations %s" % (
            arch.name, g.length, len(g.insns),
            ", ".join("%s at +%d" % (arch.reloc_name(t), o) for o, t, _ in g.relocs))
        if args.check:
            print("%s %s (%s)" % ("same" if same_window else "DIFFERS", path, summary))
            status |= 0 if same_window else 1
            continue
        if old == new:
            print("unchanged %s (%s)" % (path, summary))
            continue
        os.makedirs(args.output_dir, exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(new)
        print("%s %s (%s)" % ("wrote" if old is None else
                              "rewrote, same window," if same_window else "rewrote, NEW WINDOW,",
                              path, summary))
    return status


if __name__ == "__main__":
    sys.exit(main())
