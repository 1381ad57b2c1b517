#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The Python Inspector as a profiler uses it, for hostile.py:

    pyread.py PID ROUNDS [INTERVAL_MS]

Each round opens an Inspector, prints "reading", reads every thread, prints
"round R total T read N", one line "TID STATUS" per thread and, for each
record, its repr() and named_attrs() (which must never raise), then closes
it; ROUNDS 0 reads until killed.
"""
import sys
import time

from otel_thread_ctx.inspect import InspectError, Inspector


def main(argv):
    pid, rounds = int(argv[1]), int(argv[2])
    interval = int(argv[3]) / 1000 if len(argv) > 3 else 0
    r = 0
    while rounds == 0 or r < rounds:
        try:
            insp = Inspector(pid)
        except InspectError as e:
            print("pyread: open:", e, file=sys.stderr)
            return 0 if r > 0 else 1
        with insp:
            print("reading", flush=True)
            threads = insp.threads()
            total = getattr(threads, "total", len(threads))
            print("round %d total %d read %d" % (r, total, len(threads)))
            for t in threads:
                print(t.tid, t.status)
                if t.record is not None:
                    print("  %r %r" % (t.record, dict(t.record.named_attrs())))
            sys.stdout.flush()
        r += 1
        time.sleep(interval)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
