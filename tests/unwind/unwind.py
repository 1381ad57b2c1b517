#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Unwinding from anywhere inside the TLSDESC resolver reaches the caller.

The x86-64 access moves %rsp while it calls the resolver; its CFI names the
CFA through %r12 meanwhile (arch/x86_64/tlsdesc.h), a register no resolver
touches.  gdb runs the probe (tests/unwind/probe.c), stops in probe_inner,
and single-steps the whole otel_thread_ctx_attach() call, the thread's first:
every instruction of the library, of every resolver it calls and of what
they call in turn (on glibc's dynamic path, __tls_get_addr, which allocates
the thread's block).  At each one it unwinds, and the chain must reach
probe_inner and probe_outer.  A rule naming a register that a resolver
changes while it runs (%rsi and %rdi in glibc's _dl_tlsdesc_dynamic, %rcx
and %rdx in musl's) loses the stack there.

musl's resolver (__tlsdesc_dynamic, used for every dlopen()ed library) has
no unwind information at all, nor has the rest of musl's C library (built
without unwind tables: the mmap() of a thread's first publication runs
there), so no unwinder gets out of them whatever their caller does: with
--resolver-without-cfi, instructions in the C library where gdb cannot even
unwind frame 0 (the next frame is unknown) are counted apart and allowed.

usage: unwind.py GDB PROBE [LIBRARY] [--slow-path] [--resolver-without-cfi]

  LIBRARY      the probe dlopen()s it and attaches from a new thread
  --slow-path  the resolver must have taken a path of more than 100
               instructions outside the probe and the library (glibc's
               dynamic TLS: run with GLIBC_TUNABLES=
               glibc.rtld.optional_static_tls=0)
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import gdb_batch  # noqa: E402

SCRIPT = r'''
import gdb

gdb.execute("set pagination off")
gdb.execute("set confirm off")
gdb.execute("break probe_inner")
gdb.execute("run")
probe = gdb.selected_inferior().progspace.filename
steps = outside = bad = opaque = 0
entered = False
while steps < 50000:
    gdb.execute("stepi", to_string=True)
    steps += 1
    frame = gdb.newest_frame()
    if frame.name() == "probe_inner":
        if entered:
            break
        continue
    entered = True
    pc = frame.pc()
    lib = gdb.solib_name(pc)
    if lib is not None and "otel-thread-ctx" not in os.path.basename(lib):
        outside += 1
    chain = []
    while frame is not None and len(chain) < 64:
        chain.append(frame.name() or "??")
        try:
            frame = frame.older()
        except gdb.error:
            break
    if "probe_inner" not in chain or "probe_outer" not in chain:
        if lib is not None and len(chain) > 1 and chain[1] == "??":
            opaque += 1
            continue
        bad += 1
        if bad <= 5:
            print("UNWIND-TEST: lost at %#x in %s: %s" % (pc, lib or probe, " <- ".join(chain[:8])))
else:
    print("UNWIND-TEST: the call did not return within %d instructions" % steps)
print("UNWIND-TEST: steps %d outside %d lost %d opaque %d" % (steps, outside, bad, opaque))
gdb.execute("kill")
'''.replace("import gdb", "import gdb\nimport os", 1)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--") or a.startswith("--skip=")]
    slow = "--slow-path" in sys.argv[1:]
    no_cfi = "--resolver-without-cfi" in sys.argv[1:]
    if len(args) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    gdb, probe = args[:2]
    skip = [a for a in sys.argv[1:] if a.startswith("--skip=")]
    rc, lines = gdb_batch.run(skip[0] if skip else gdb, SCRIPT, [probe] + args[2:],
                              "UNWIND-TEST", 600)
    if rc:
        print(lines)
        return rc
    result = [l for l in lines if l.startswith("UNWIND-TEST: steps")]
    if not result:
        print("FAIL: gdb did not step through the call:\n" + "\n".join(lines))
        return 1
    print("\n".join(lines))
    steps, outside, lost, opaque = (int(x) for x in result[0].split()[2::2])
    if opaque and not no_cfi:
        lost += opaque
    if lost:
        print("FAIL: at %d of %d instructions the unwinder lost probe_inner/probe_outer" % (lost, steps))
        return 1
    if outside == 0:
        print("FAIL: no instruction was stepped outside the probe and the library: "
              "the resolver was not entered")
        return 1
    if slow and outside <= 100:
        print("FAIL: %d instructions outside the library: the resolver's slow path "
              "(dynamic TLS) was not taken" % outside)
        return 1
    if opaque:
        print("note: at %d instructions, inside the C library's resolver, which has no "
              "unwind information, gdb could not unwind frame 0" % opaque)
    print("ok: unwound at all %d other instructions, %d of them in the loader and the C "
          "library" % (steps - opaque, outside - opaque))
    return 0


if __name__ == "__main__":
    sys.exit(main())
