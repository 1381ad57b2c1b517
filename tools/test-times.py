#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Print where a configuration's test time goes, from its `meson test` log.

Usage: tools/test-times.py [-n TOP] TESTLOG.json...

For each log (a build's meson-logs/testlog*.json, one JSON object per test
and line): the sum of the tests' durations, the wall time from the first
start to the last end, the time per suite (the first suite a test's name
shows: its folder of tests/), and the TOP slowest tests with their result.
Tests run two at a time on 2 cores, so the sum is about twice the wall
time; on a busy machine compare tests with each other, not with a clock.
tools/run test chooses what each configuration runs (doc/testing.md,
"Platforms and CI"): this is how to see what a choice costs.
"""
import json
import sys


def suite_of(name):
    """'otel-thread-ctx:core+shared / api-shared' -> 'core' (the folder of
    tests/); the VM logs name tests 'SUITE / NAME' too."""
    head = name.split(" / ", 1)[0] if " / " in name else "?"
    return head.split(":", 1)[-1].split("+")[0]


def report(path, top):
    tests = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            try:
                tests.append(json.loads(line))
            except ValueError:
                continue
    if not tests:
        print(f"== {path}: no tests")
        return
    total = sum(t.get("duration", 0) for t in tests)
    first = min(t.get("starttime", 0) for t in tests)
    last = max(t.get("starttime", 0) + t.get("duration", 0) for t in tests)
    results = {}
    for t in tests:
        results[t.get("result")] = results.get(t.get("result"), 0) + 1
    counts = ", ".join(f"{n} {r}" for r, n in sorted(results.items()))
    print(f"== {path}: {len(tests)} tests ({counts}), sum {total:.0f}s, wall {last - first:.0f}s")
    per = {}
    for t in tests:
        s = suite_of(t["name"])
        per[s] = per.get(s, 0) + t.get("duration", 0)
    print("  by suite: " + ", ".join(f"{s} {d:.0f}" for s, d in
                                     sorted(per.items(), key=lambda x: -x[1]) if d >= 1))
    for t in sorted(tests, key=lambda t: -t.get("duration", 0))[:top]:
        print(f"  {t.get('duration', 0):7.1f}s  {t.get('result'):5}  {t['name']}")


def main(argv):
    top = 15
    args = argv[1:]
    if len(args) >= 2 and args[0] == "-n":
        top = int(args[1])
        args = args[2:]
    if not args:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    for path in args:
        report(path, top)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
