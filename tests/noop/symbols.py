#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The no-op library exports exactly what the real one does
(tests/elf/symbols.txt): a program linked against one runs against the
other.  usage: symbols.py NM LIBRARY SYMBOLS_TXT"""
import subprocess
import sys


def main():
    nm, lib, listing = sys.argv[1:4]
    want = {l.strip() for l in open(listing) if l.strip() and not l.startswith("#")}
    out = subprocess.run([nm, "-D", "--defined-only", lib], check=True, capture_output=True,
                         text=True).stdout
    have = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2].startswith("otel_"):
            have.add(parts[2])
    if not want:
        print(f"FAIL: no symbols listed in {listing}")
        return 1
    missing, extra = sorted(want - have), sorted(have - want)
    for s in missing:
        print(f"FAIL: the no-op library lacks {s}")
    for s in extra:
        print(f"FAIL: the no-op library exports {s}, which the real one does not")
    print(f"{len(have)} symbols exported, {len(want)} expected")
    return 1 if missing or extra else 0


if __name__ == "__main__":
    sys.exit(main())
