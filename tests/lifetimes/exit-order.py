#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A thread's records go back to the pool only once its slot is NULL.

gdb runs tests/lifetimes/exit-order.c (the static library linked in) and
stops at every call of otel__pool_give(), the function that gives a pair of
records back to the pool on thread exit (a late destructor's publication
after it is refused, and takes none).  At each stop it reads otel_thread_ctx_v1 in the
stopped thread, which must be NULL: were it not, a reader of that thread
could follow it into records another thread already took.  The program exits
0, and gdb must have stopped once per record pair the program's threads gave
back (4).  gdb also stops where the program has just published (4 times) and
reads the slot there: it must be what the program says it published, which
shows the reading is right.

usage: exit-order.py GDB PROGRAM   (GDB empty, or --skip=REASON: skip)
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import gdb_batch  # noqa: E402

SCRIPT = r'''
import gdb

gdb.execute("set pagination off")
gdb.execute("set confirm off")
gdb.execute("break otel__pool_give")
gdb.execute("break exit_order_published")
gdb.execute("run")
hits = 0
while True:
    try:
        frame = gdb.selected_frame()
    except gdb.error:
        break
    if frame.name() not in ("otel__pool_give", "exit_order_published"):
        break
    try:
        slot = int(gdb.parse_and_eval("*(void **)&otel_thread_ctx_v1"))
    except gdb.error as e:
        print("EXIT-ORDER: unreadable slot: %s" % e)
        slot = None
    thread = gdb.selected_thread().num
    if slot is not None and frame.name() == "otel__pool_give":
        hits += 1
        print("EXIT-ORDER: give %d thread %d slot %#x" % (hits, thread, slot))
    elif slot is not None:
        record = int(gdb.parse_and_eval("(unsigned long)record"))
        print("EXIT-ORDER: published thread %d slot %#x record %#x" % (thread, slot, record))
    gdb.execute("continue")
status = gdb.parse_and_eval("$_exitcode")
print("EXIT-ORDER: exit %s after %d gives" % (status, hits))
'''


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    gdb, program = sys.argv[1:]
    rc, lines = gdb_batch.run(gdb, SCRIPT, [program], "EXIT-ORDER", 300)
    if rc:
        print(lines)
        return rc
    if not any(l.startswith("EXIT-ORDER: exit") for l in lines):
        print("FAIL: gdb did not run the program to its end:\n" + "\n".join(lines))
        return 1
    print("\n".join(lines))
    if any("unreadable" in l for l in lines):
        print("FAIL: gdb could not read the slot of the stopped thread")
        return 1
    seen = [l.split() for l in lines if l.startswith("EXIT-ORDER: published")]
    if len(seen) != 4 or any(w[5] == "0x0" or w[5] != w[7] for w in seen):
        print("FAIL: where the program says what it publishes, gdb read another slot value "
              "(or the program did not publish 4 times)")
        return 1
    late = [l for l in lines if l.startswith("EXIT-ORDER: give") and not l.endswith(" slot 0x0")]
    if late:
        print("FAIL: records went back to the pool while the thread's slot still led to "
              "them:\n" + "\n".join(late))
        return 1
    gives = sum(l.startswith("EXIT-ORDER: give") for l in lines)
    exit_line = [l for l in lines if l.startswith("EXIT-ORDER: exit")][0]
    if not exit_line.startswith("EXIT-ORDER: exit 0 "):
        print("FAIL: the program failed: " + exit_line)
        return 1
    if gives != 4:
        print("FAIL: %d gives, expected 4 (one per thread; the late destructor's "
              "publication is refused)" % gives)
        return 1
    print("ok: every pair went back to the pool with its thread's slot NULL (%d)" % gives)
    return 0


if __name__ == "__main__":
    sys.exit(main())
