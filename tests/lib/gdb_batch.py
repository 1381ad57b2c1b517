# SPDX-License-Identifier: Apache-2.0
"""Running a program under gdb with a Python script, for the tests that stop
a real process where the library is at work (lifetimes/exit-order.py,
unwind/unwind.py).

run(gdb, script, command, marker, timeout) returns (0, lines) with the lines
of gdb's output that start with `marker`, once the script printed at least
one; otherwise (77, message) when gdb is missing or may not trace here, or
(1, message) with the end of gdb's output.
"""
import os
import subprocess
import tempfile


def run(gdb, script, command, marker, timeout):
    if gdb.startswith("--skip="):
        return 77, "skip: " + gdb[len("--skip="):]
    if not gdb:
        return 77, "skip: gdb is not installed"
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(script)
    try:
        p = subprocess.run([gdb, "-q", "-nx", "-batch", "-x", f.name, "--args"] + command,
                           capture_output=True, text=True, timeout=timeout)
    finally:
        os.unlink(f.name)
    out = p.stdout + p.stderr
    lines = [l for l in out.splitlines() if l.startswith(marker)]
    if lines:
        return 0, lines
    if "ptrace" in out.lower() and "not permitted" in out.lower():
        return 77, "skip: gdb may not trace processes here:\n" + out[-2000:]
    return 1, "FAIL: gdb did not run the program to its end:\n" + out[-4000:]
