#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The publishing paths use no atomic read-modify-write instruction.

Disassembles each publishing function of the library (and the parts the
compiler split off it, `NAME.cold`) and fails when one holds an instruction
that locks the bus or a cache line: on x86-64 a `lock` prefix or an `xchg`
with memory (implicitly locked); on aarch64 an exclusive load or store
(ldxr, ldaxr, stxr, stlxr and their sizes and pairs) or an LSE atomic (cas,
casp, ldadd, ldclr, ldeor, ldset, ldsmax, ..., swp).  It also fails when
such a function calls anything but the TLS resolver (an indirect call
through the descriptor) and the out-of-line first publication of a thread
(first_publication, attach_first, update_all_first), which is where the
pool's compare-and-swap lives: a call to another function could hide an
atomic where this check does not look.

usage: check-no-atomics.py OBJDUMP FILE...   (shared libraries or archives)
"""
import re
import subprocess
import sys

HOT = [
    "otel_thread_ctx_attach",
    "otel_thread_ctx_update",
    "otel_thread_ctx_detach",
    "otel_thread_ctx_save",
    "otel_thread_ctx_update_span_id",
    "otel_thread_ctx_update_trace_flags",
    "otel_thread_ctx_update_all",
]
# Out-of-line code a hot function may call without this check following it:
# the first publication of a thread, where the pool's compare-and-swap is.
ALLOWED_CALLS = {"first_publication", "attach_first", "update_all_first"}
# (The NAME_call twins, which make the TLS call where the shortcut is off,
# are followed and scanned like the rest.)

X86_ATOMIC = re.compile(r"^\s*(lock\b|lock\s|xchg\w*\s+[^,]*\(|xchg\w*\s+%\w+,.*\()")
A64_ATOMIC = re.compile(
    r"^\s*(ld(a)?x[rp]\w*|st(l)?x[rp]\w*|cas\w*|ld(add|clr|eor|set|smax|smin|umax|umin)\w*|"
    r"st(add|clr|eor|set|smax|smin|umax|umin)\w*|swp\w*)\s")


def objects(text):
    """{object: {name: [instruction text, ...]}} from `objdump -d
    --no-show-raw-insn` (an archive has several objects, whose local
    functions may share names)."""
    out, name = {}, None
    funcs = out.setdefault("", {})
    for line in text.splitlines():
        m = re.match(r"^(\S+):\s+file format", line)
        if m:
            funcs, name = out.setdefault(m.group(1), {}), None
            continue
        m = re.match(r"^[0-9a-f]+ <([^>]+)>:$", line)
        if m:
            name = m.group(1)
            funcs.setdefault(name, [])
            continue
        m = re.match(r"^\s*[0-9a-f]+:\s+(.*)$", line)
        if m and name is not None:
            funcs[name].append(m.group(1).strip())
        elif not line.strip():
            name = None
    return out


def check(objdump, path):
    try:
        text = subprocess.run([objdump, "-d", "--no-show-raw-insn", path], check=True,
                              capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"FAIL: cannot disassemble {path}: {e}")
        return 1
    failures = 0
    scanned = 0
    found = set()
    for funcs in objects(text).values():
        todo = [n for n in funcs if n.split(".")[0] in HOT]
        found |= {n.split(".")[0] for n in todo}
        f, n = scan(path, funcs, todo)
        failures += f
        scanned += n
    missing = sorted(set(HOT) - found)
    if missing:
        print(f"FAIL: {path}: functions not found: {', '.join(missing)}")
        return 1
    print(f"{path}: {scanned} functions scanned, {failures} problems")
    return failures


def scan(path, funcs, todo):
    """Scans the functions in todo and what they reach; (problems, scanned)."""
    failures = 0
    scanned = 0
    seen = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        scanned += 1
        for insn in funcs[name]:
            parts = insn.split()
            mnemonic = parts[0] if parts else ""
            if X86_ATOMIC.match(insn) or A64_ATOMIC.match(insn):
                print(f"FAIL: {path}: {name}: atomic instruction: {insn}")
                failures += 1
            is_call = mnemonic.startswith("call") or mnemonic in ("bl", "blr")
            is_jump = mnemonic.startswith("j") or mnemonic == "b" or mnemonic.startswith("b.") \
                or mnemonic in ("cbz", "cbnz", "tbz", "tbnz", "br")
            if not (is_call or is_jump):
                continue
            if "*" in insn or mnemonic in ("blr", "br"):
                continue  # indirect: the TLS resolver, through the descriptor
            m = re.search(r"<([^>+]+)(\+0x[0-9a-f]+)?>", insn)
            if not m:
                print(f"FAIL: {path}: {name}: a branch this check cannot follow: {insn}")
                failures += 1
                continue
            target = m.group(1)
            if target == name:
                continue  # inside the function
            if target.split(".")[0] in ALLOWED_CALLS:
                continue
            if target in funcs:
                todo.append(target)  # followed: scanned as well
                continue
            print(f"FAIL: {path}: {name} reaches {target}, which this check cannot scan")
            failures += 1
    return failures, scanned


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    objdump, files = sys.argv[1], sys.argv[2:]
    return 1 if sum(check(objdump, f) for f in files) else 0


if __name__ == "__main__":
    sys.exit(main())
