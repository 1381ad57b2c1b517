#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Print the tests that failed in a `meson test` log, with the end of their output.

Usage: tools/test-failures.py CONFIG TESTLOG.json [LINES]

tools/run calls it for a configuration whose `meson test` failed, so that the
end of a long run (often all a CI page keeps) names the failing tests and what
they printed last.  The log is Meson's JSON one (a JSON object per line).
"""
import json
import sys

PASSED = {"OK", "SKIP", "EXPECTEDFAIL"}


def main(argv):
    if len(argv) not in (3, 4):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    config, path = argv[1], argv[2]
    keep = int(argv[3]) if len(argv) == 4 else 30
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.readlines()
    except OSError as e:
        print(f"{config}: no test log ({e.strerror}): the build itself failed, see above")
        return 0
    failed = 0
    for line in lines:
        try:
            test = json.loads(line)
        except ValueError:
            continue
        if test.get("result") in PASSED:
            continue
        failed += 1
        print(f"--- {config}: {test.get('name')}: {test.get('result')}"
              f" (exit {test.get('returncode')}, {test.get('duration', 0):.1f}s)")
        out = (test.get("stdout") or "") + (test.get("stderr") or "")
        tail = out.rstrip("\n").splitlines()[-keep:]
        for text in tail:
            print(f"    {text}")
    if failed == 0:
        print(f"{config}: every test in {path} passed: the build or the setup failed, see above")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
