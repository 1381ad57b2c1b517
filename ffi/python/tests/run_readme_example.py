#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs a Python example of doc/bindings.md exactly as printed.

In doc/bindings.md, under "## Bindings: Python and Rust", the subsection
"### Python" holds ```python blocks (the examples), each followed by a plain
``` block (what it prints).  This writes example N (1: the first, five
lines, read back in the same thread; 2: the second, at most ten lines, read
back by the inspector from a second process) to a file unchanged, runs it
with this interpreter (the environment as meson test sets it:
OTEL_THREAD_CTX_LIBRARY, PYTHONPATH), and fails unless it exits 0 and prints
exactly the block after it.  A README without them fails too.

Example 2 needs ptrace: it exits 77 (SKIP) when OTEL_TEST_NO_PTRACE gives a
reason it cannot work (qemu-user).  tests/install.py imports this file to
run the examples where the package is installed.

usage: run_readme_example.py doc/bindings.md [N]
"""
import os
import subprocess
import sys
import tempfile


def fail(message):
    print("run_readme_example: " + message, file=sys.stderr)
    sys.exit(1)


def section(lines, heading):
    """The lines under `heading` up to the next heading of its level or above."""
    level = heading.split(" ", 1)[0]
    try:
        start = lines.index(heading) + 1
    except ValueError:
        fail("README has no line %r" % heading)
    end = start
    while end < len(lines):
        mark = lines[end].split(" ", 1)[0]
        if mark and set(mark) == {"#"} and len(mark) <= len(level):
            break
        end += 1
    return lines[start:end]


def fence(lines, opening, start):
    """(body, index after the closing fence) of the first fence `opening`."""
    for i in range(start, len(lines)):
        if lines[i] == opening:
            for j in range(i + 1, len(lines)):
                if lines[j] == "```":
                    return lines[i + 1:j], j + 1
            fail("unterminated %s block" % opening)
    fail("no %s block in the README's Python section after line %d" % (opening, start))


# Example N: (how many lines it may have, and whether exactly that many).
LINES = {1: (5, True), 2: (10, False)}


def extract(path, which):
    """(code lines, expected output lines) of example `which`."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    python = section(section(lines, "## Bindings: Python and Rust"), "### Python")
    after = 0
    for _ in range(which):
        code, after = fence(python, "```python", after)
        expected, after = fence(python, "```", after)
    limit, exact = LINES[which]
    if len(code) > limit or (exact and len(code) != limit):
        fail("example %d has %d lines, not %s %d"
             % (which, len(code), "exactly" if exact else "at most", limit))
    if not expected:
        fail("the README shows no output for example %d" % which)
    return code, expected


def run(code, expected, interpreter, env=None, cwd=None):
    """Runs the example with `interpreter` (a command line) and fails unless
    it prints `expected`."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "example.py")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(code) + "\n")
        r = subprocess.run(interpreter + [path], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=120, check=False,
                           env=env, cwd=cwd or tmp)
    print("example:\n" + "\n".join(code))
    print("printed:\n" + r.stdout, end="")
    if r.returncode != 0:
        fail("the example exited %d:\n%s" % (r.returncode, r.stderr))
    if r.stdout.split("\n")[:-1] != expected:
        fail("the example printed something else than the README shows:\n%s"
             % "\n".join(expected))


def main():
    if len(sys.argv) not in (2, 3) or sys.argv[2:] not in ([], ["1"], ["2"]):
        fail("usage: run_readme_example.py doc/bindings.md [1|2]")
    which = int(sys.argv[2]) if len(sys.argv) == 3 else 1
    code, expected = extract(sys.argv[1], which)
    if which == 2 and os.environ.get("OTEL_TEST_NO_PTRACE"):
        print("skip: " + os.environ["OTEL_TEST_NO_PTRACE"])
        sys.exit(77)
    # OTEL_TEST_PYTHON: how meson test started this interpreter (under an
    # emulator in a cross build).
    interpreter = os.environ.get("OTEL_TEST_PYTHON", "").split() or [sys.executable]
    run(code, expected, interpreter)
    print("the README's Python example %d runs and prints what the README shows" % which)


if __name__ == "__main__":
    main()
