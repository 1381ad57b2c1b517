#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What the compiler and linker made of the plain-C writers (plain-slot.c).

usage: writer-elf.py READELF [FILE SPEC]...

SPEC is a comma-separated list of what FILE must show:
  desc        the dynamic relocations against otel_thread_ctx_v1 are TLSDESC
  gd          they are DTPMOD64 and DTPOFF64 (general-dynamic)
  tpoff       they are TPOFF64 / TLS_TPREL (initial-exec)
  none        there is none (local-exec, or an access that does not name the
              exported symbol: local-dynamic)
  static-tls  DF_STATIC_TLS is set
  big         the 64 KiB block plain_big lies wholly before the slot in the
              module's TLS block

Each file's relocations and flags are printed, so that the test log says
what the toolchain of the configuration produced.
"""
import re
import subprocess
import sys

SLOT = "otel_thread_ctx_v1"
KINDS = {
    "desc": {"desc"},
    "gd": {"dtpmod", "dtpoff"},
    "tpoff": {"tpoff"},
    "none": set(),
}


def readelf(tool, *args):
    return subprocess.run([tool, "-W", *args], check=True, capture_output=True,
                          text=True).stdout


def kind_of(rtype):
    if "TLSDESC" in rtype:
        return "desc"
    if "DTPMOD" in rtype:
        return "dtpmod"
    if "DTPOFF" in rtype or "DTPREL" in rtype:
        return "dtpoff"
    if "TPOFF" in rtype or "TPREL" in rtype:
        return "tpoff"
    return "other"


def slot_relocations(tool, path):
    """(type, kind) of every dynamic relocation against the slot."""
    found = []
    for line in readelf(tool, "-r", path).splitlines():
        f = line.split()
        # offset info type value name[@version] + addend
        if len(f) >= 5 and f[0] != "Offset" and re.fullmatch(r"[0-9a-f]+", f[0]) \
                and f[4].split("@")[0] == SLOT:
            found.append((f[2], kind_of(f[2])))
    return found


def static_tls(tool, path):
    for line in readelf(tool, "-d", path).splitlines():
        if "(FLAGS)" in line and "STATIC_TLS" in line:
            return True
    return False


def tls_symbols(tool, path):
    """name: (value, size) of the TLS symbols of .symtab (or .dynsym)."""
    syms = {}
    for line in readelf(tool, "-s", path).splitlines():
        f = line.split()
        # Num: Value Size Type Bind Vis Ndx Name
        if len(f) >= 8 and f[3] == "TLS" and f[6] != "UND":
            syms[f[7].split("@")[0]] = (int(f[1], 16), int(f[2], 0))
    return syms


def check(tool, path, spec):
    want = spec.split(",")
    errors = []
    relocs = slot_relocations(tool, path)
    kinds = {k for _, k in relocs}
    flags = static_tls(tool, path)
    print(f"{path}: {', '.join(t for t, _ in relocs) or 'no relocation'} against {SLOT}"
          f"{'; DF_STATIC_TLS' if flags else ''}")
    for w in want:
        if w in KINDS:
            if kinds != KINDS[w]:
                errors.append(f"relocations {sorted(kinds)}, expected {sorted(KINDS[w])} ({w})")
        elif w == "static-tls":
            if not flags:
                errors.append("no DF_STATIC_TLS")
        elif w == "big":
            syms = tls_symbols(tool, path)
            if SLOT not in syms or "plain_big" not in syms:
                errors.append("plain_big or the slot missing from the symbol table")
            else:
                big, slot = syms["plain_big"], syms[SLOT]
                print(f"  plain_big at TLS offset {big[0]:#x} ({big[1]} bytes), "
                      f"{SLOT} at {slot[0]:#x}")
                if big[1] != 65536 or big[0] + big[1] > slot[0]:
                    errors.append("plain_big does not lie before the slot")
        else:
            errors.append(f"unknown spec {w}")
    for e in errors:
        print(f"  FAIL: {e}")
    return not errors


def main():
    if len(sys.argv) < 2 or len(sys.argv) % 2 != 0:
        print(__doc__, file=sys.stderr)
        return 2
    tool = sys.argv[1]
    ok = True
    for path, spec in zip(sys.argv[2::2], sys.argv[3::2]):
        ok = check(tool, path, spec) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
