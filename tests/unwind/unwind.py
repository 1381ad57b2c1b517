#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Unwinding from inside the TLSDESC resolver reaches main.

The x86-64 access moves %rsp while it calls the resolver; its CFI names
the CFA through a register meanwhile (arch/x86_64/tlsdesc.h).  gdb runs the
probe, steps into otel_thread_ctx_attach until the resolver call, steps
into the resolver, and prints the backtrace: it must show probe_inner,
probe_outer and main.  Without that CFI rule the backtrace ends in garbage.

usage: unwind.py GDB PROBE
"""
import os
import subprocess
import sys
import tempfile

SCRIPT = r'''
import gdb
gdb.execute("set pagination off")
gdb.execute("break otel_thread_ctx_attach")
gdb.execute("run")
arch = gdb.selected_frame().architecture().name()
call = "call   *(%rax)" if "x86-64" in arch else "blr\tx1"
for _ in range(400):
    insn = gdb.execute("x/i $pc", to_string=True)
    if call in insn:
        break
    gdb.execute("stepi", to_string=True)
else:
    print("UNWIND-TEST: no resolver call found")
    raise SystemExit(1)
gdb.execute("stepi", to_string=True)
print("UNWIND-TEST: in " + gdb.execute("x/i $pc", to_string=True).strip())
print(gdb.execute("bt", to_string=True))
print("UNWIND-TEST: done")
gdb.execute("kill")
'''


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    gdb, probe = sys.argv[1:]
    if not gdb:
        print("skip: gdb is not installed")
        return 77
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(SCRIPT)
    try:
        p = subprocess.run([gdb, "-q", "-nx", "-batch", "-x", f.name, probe],
                           capture_output=True, text=True, timeout=120)
    finally:
        os.unlink(f.name)
    out = p.stdout + p.stderr
    if "UNWIND-TEST: done" not in out:
        if "ptrace" in out.lower() and "not permitted" in out.lower():
            print("skip: gdb may not trace processes here:\n" + out)
            return 77
        print("FAIL: gdb did not get inside the resolver:\n" + out)
        return 1
    print(out)
    frames = [l for l in out.splitlines() if l.startswith("#")]
    missing = [f for f in ("probe_inner", "probe_outer", "main") if not any(f in l for l in frames)]
    if missing:
        print("FAIL: the backtrace from inside the resolver lacks " + ", ".join(missing))
        return 1
    print("ok: unwound from the resolver to main")
    return 0


if __name__ == "__main__":
    sys.exit(main())
