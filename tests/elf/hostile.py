#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Truncated, corrupt and hostile ELF files for the reader and the checker.

From a real ELF file (the built shared library), writes a few hundred broken
variants -- cut at every interesting offset, with header and table fields
pointed past the end or at absurd values, with random bytes flipped (fixed
seed) -- plus files that are not ELF or not supported.  Then:

  - the fuzz target's replay program reads them all in one process and must
    exit 0 (a crash, an abort or a sanitizer report is a failure);
  - otel-thread-ctx-check must judge each one with a documented exit code
    (0, 1, 3, 4, 5), never a signal, and its JSON must parse;
  - the crafted cases must get the right class of error (not-elf,
    unsupported, truncated, malformed).

usage: hostile.py SEED_ELF REPLAY CHECKER WORKDIR [WRAPPER...]
"""
import json
import os
import random
import shutil
import struct
import subprocess
import sys

EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
SHDR = struct.Struct("<IIQQQQIIQQ")
PHDR = struct.Struct("<IIQQQQQQ")
COUNT = int(os.environ.get("OTEL_TEST_HOSTILE_RANDOM", "300"))


def ehdr(b):
    return list(EHDR.unpack_from(b, 0))


def with_ehdr(b, **changes):
    names = ["ident", "type", "machine", "version", "entry", "phoff", "shoff", "flags",
             "ehsize", "phentsize", "phnum", "shentsize", "shnum", "shstrndx"]
    f = ehdr(b)
    for k, v in changes.items():
        f[names.index(k)] = v
    out = bytearray(b)
    EHDR.pack_into(out, 0, *f)
    return bytes(out)


def variants(seed):
    """(name, bytes, expected error code or None for 'any documented outcome')."""
    v = []
    e = ehdr(seed)
    ident, phoff, shoff, phnum, shnum = e[0], e[5], e[6], e[10], e[12]

    # Not ELF, or not supported.
    v.append(("empty", b"", "not-elf"))
    v.append(("text", b"#!/bin/sh\necho hello\n", "not-elf"))
    v.append(("magic-1", b"\x7f", "truncated"))
    v.append(("magic-4", b"\x7fELF", "truncated"))
    v.append(("ident-only", seed[:16], "truncated"))
    v.append(("header-63", seed[:63], "truncated"))
    v.append(("elf32", bytes([*seed[:4], 1]) + seed[5:], "unsupported"))
    v.append(("big-endian", seed[:5] + b"\x02" + seed[6:], "unsupported"))
    v.append(("bad-class", seed[:4] + b"\x07" + seed[5:], "malformed"))
    v.append(("bad-version", seed[:6] + b"\x00" + seed[7:], "unsupported"))
    v.append(("arm32", with_ehdr(seed, machine=40), "unsupported"))
    v.append(("riscv", with_ehdr(seed, machine=243), "unsupported"))
    v.append(("relocatable", with_ehdr(seed, type=1), "unsupported"))

    # Cuts: every header and table boundary, and a spread of offsets.
    cuts = {64, phoff + 1, phoff + 56 * phnum - 1, shoff, shoff + 1, shoff + 64 * shnum - 1,
            len(seed) - 1, len(seed) // 2}
    cuts |= set(range(0, len(seed), max(1, len(seed) // 48)))
    for n in sorted(c for c in cuts if 0 < c < len(seed)):
        v.append((f"cut-{n}", seed[:n], None))

    # Header fields pointed at nonsense.
    huge = 0xFFFFFFFFFFFFFFF0
    v.append(("phoff-huge", with_ehdr(seed, phoff=huge), "truncated"))
    v.append(("shoff-huge", with_ehdr(seed, shoff=huge), "truncated"))
    v.append(("shoff-eof", with_ehdr(seed, shoff=len(seed) - 10), "truncated"))
    v.append(("phentsize", with_ehdr(seed, phentsize=32), "malformed"))
    v.append(("shentsize", with_ehdr(seed, shentsize=40), "malformed"))
    v.append(("phnum-xnum", with_ehdr(seed, phnum=0xFFFF), None))
    v.append(("shnum-0", with_ehdr(seed, shnum=0), None))
    v.append(("shstrndx-big", with_ehdr(seed, shstrndx=0xFFF0), "malformed"))
    v.append(("shstrndx-xindex", with_ehdr(seed, shstrndx=0xFFFF), None))
    v.append(("ehsize", with_ehdr(seed, ehsize=12), "malformed"))

    # Each section header, each field, set to something hostile.
    for i in range(1, shnum):
        at = shoff + 64 * i
        if at + 64 > len(seed):
            break
        for field, value in ((4, huge), (5, huge), (5, 1 << 40), (6, 0xFFFF), (9, 7), (4, len(seed) - 3)):
            b = bytearray(seed)
            f = list(SHDR.unpack_from(b, at))
            f[field] = value
            SHDR.pack_into(b, at, *f)
            v.append((f"shdr{i}-f{field}-{value:x}", bytes(b), None))

    # Each program header: offsets, sizes and alignments.
    for i in range(phnum):
        at = phoff + 56 * i
        for field, value in ((2, huge), (4, huge), (5, 0), (6, huge), (7, 3), (3, huge)):
            b = bytearray(seed)
            f = list(PHDR.unpack_from(b, at))
            f[field] = value
            PHDR.pack_into(b, at, *f)
            v.append((f"phdr{i}-f{field}-{value:x}", bytes(b), None))

    # Without section headers, everything comes from the dynamic section:
    # corrupt each of its entries in turn.
    noshdr = with_ehdr(seed, shoff=0, shnum=0, shstrndx=0)
    v.append(("no-section-headers", noshdr, None))
    dyn = None
    for i in range(phnum):
        f = PHDR.unpack_from(seed, phoff + 56 * i)
        if f[0] == 2:
            dyn = (f[2], f[5])
    if dyn is not None:
        off, size = dyn
        for k in range(size // 16):
            for value in (huge, 0, 1 << 33, 0x7):
                b = bytearray(noshdr)
                tag, _ = struct.unpack_from("<qQ", b, off + 16 * k)
                if tag == 0:
                    break
                struct.pack_into("<qQ", b, off + 16 * k, tag, value)
                v.append((f"dyn{k}-tag{tag:x}-{value:x}", bytes(b), None))

    # Random damage, reproducible.
    rnd = random.Random(4947)
    for k in range(COUNT):
        b = bytearray(seed if k % 2 else noshdr)
        for _ in range(rnd.randint(1, 16)):
            at = rnd.randrange(len(b)) if rnd.random() < 0.3 else rnd.randrange(min(len(b), 8192))
            b[at] = rnd.randrange(256)
        v.append((f"random-{k}", bytes(b), None))
    return v


def main(argv):
    if len(argv) < 5:
        print(__doc__, file=sys.stderr)
        return 2
    seed_path, replay, checker, work = argv[1:5]
    wrapper = argv[5:]
    seed = open(seed_path, "rb").read()
    if seed[:4] != b"\x7fELF":
        print(f"FAIL: {seed_path} is not an ELF file")
        return 1
    if os.path.isdir(work):
        shutil.rmtree(work)
    os.makedirs(work)
    cases = variants(seed)
    paths = []
    for i, (name, data, _) in enumerate(cases):
        p = os.path.join(work, f"{i:04d}-{name}")
        with open(p, "wb") as f:
            f.write(data)
        paths.append(p)
    failures = 0

    # 1. The reader, in one process, on every file.
    r = subprocess.run(wrapper + [replay] + paths, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    print(f"replay: exit {r.returncode}: {r.stdout.strip()} {r.stderr.strip()[-2000:]}")
    if r.returncode != 0:
        failures += 1

    # 2. The checker, in batches.
    outcomes = {}
    for start in range(0, len(paths), 64):
        batch = paths[start:start + 64]
        c = subprocess.run(wrapper + [checker, "--json", *batch], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        if c.returncode not in (0, 1, 3, 4, 5):
            print(f"FAIL: the checker exited {c.returncode} on files {start}..: {c.stderr[-500:]}")
            failures += 1
            continue
        try:
            doc = json.loads(c.stdout)
        except json.JSONDecodeError as e:
            print(f"FAIL: checker JSON does not parse ({e}) for files {start}..")
            failures += 1
            continue
        for f in doc["files"]:
            outcomes[f["file"]] = f
    counts = {}
    for p, (name, _, want) in zip(paths, cases):
        f = outcomes.get(p)
        if f is None:
            continue
        key = f["verdict"] if f["verdict"] != "error" else "error:" + f["error"]["code"]
        counts[key] = counts.get(key, 0) + 1
        if want is not None and (f["verdict"] != "error" or f["error"]["code"] != want):
            got = f["error"]["code"] if f["error"] else f["verdict"]
            print(f"FAIL: {name}: expected error {want}, got {got}: {f['summary']}")
            failures += 1
    print(f"{len(cases)} files: " + ", ".join(f"{k} {n}" for k, n in sorted(counts.items())))
    for name in ("empty", "elf32", "arm32", "shoff-huge", "phentsize"):
        i = [c[0] for c in cases].index(name)
        f = outcomes.get(paths[i])
        if f:
            print(f"  {name}: {f['summary']}")
    if failures:
        print(f"FAIL: {failures} problems")
        return 1
    shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
