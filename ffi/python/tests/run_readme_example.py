#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs the Python example of doc/bindings.md exactly as printed.

In doc/bindings.md, under "## Bindings: Python and Rust", the subsection
"### Python" holds a ```python block (the example) and, after it, a plain
``` block (what it prints).  This writes the example to a file unchanged,
runs it with this interpreter (the environment as meson test sets it:
OTEL_THREAD_CTX_LIBRARY, PYTHONPATH), and fails unless it exits 0 and prints
exactly the second block.  A README without them fails too.

usage: run_readme_example.py doc/bindings.md
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
    fail("no %s block in the README's Python section" % opening)


def main():
    if len(sys.argv) != 2:
        fail("usage: run_readme_example.py doc/bindings.md")
    with open(sys.argv[1], encoding="utf-8") as f:
        lines = f.read().split("\n")
    python = section(section(lines, "## Bindings: Python and Rust"), "### Python")
    code, after = fence(python, "```python", 0)
    expected, _ = fence(python, "```", after)
    if len(code) != 5:
        fail("the example has %d lines, not five" % len(code))
    if not expected:
        fail("the README shows no output for the example")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "example.py")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(code) + "\n")
        # OTEL_TEST_PYTHON: how meson test started this interpreter (under
        # an emulator in a cross build).
        interpreter = os.environ.get("OTEL_TEST_PYTHON", "").split() or [sys.executable]
        r = subprocess.run(interpreter + [path], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=60, check=False)
    print("example:\n" + "\n".join(code))
    print("printed:\n" + r.stdout, end="")
    if r.returncode != 0:
        fail("the example exited %d:\n%s" % (r.returncode, r.stderr))
    if r.stdout.split("\n")[:-1] != expected:
        fail("the example printed something else than the README shows:\n%s"
             % "\n".join(expected))
    print("the README's Python example runs and prints what the README shows")


if __name__ == "__main__":
    main()
