#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Each function's error list in otel_thread_ctx.h is complete and true.

Runs tests/abi/errors.c (which fails by itself when a call returns another
code than the header's order says), then compares, for each function of the
thread-context API, the codes it returned with the codes its comment lists
after "Errors:": a listed code that no call produced, or a produced code
that is not listed, fails.  ENOMEM, ETHREAD and EFULL (resources the test
cannot take away; tests/lifetimes/pool.c makes the pool fail both ways) are
exempt from "produced".

usage: check-errors.py HEADER ERRORS_PROGRAM [WRAPPER...]   (a program for another
CPU runs through WRAPPER, the cross file's qemu)
"""
import re
import subprocess
import sys

EXEMPT = {"ENOMEM", "ETHREAD", "EFULL"}
# The functions errors.c must cover: contexts, publishing, readers.
COVERED = re.compile(r"otel_thread_ctx_(create|create_with|set_\w+|clear\w*|remove_attr|copy|get|"
                     r"attach|update\w*|detach|save|read|record_decode|attr_iter_next|record_attr)$")


def documented(header):
    text = open(header, encoding="utf-8").read()
    names = {}
    for m in re.finditer(r"enum otel_thread_ctx_error \{(.*?)\};", text, re.S):
        for c in re.finditer(r"OTEL_THREAD_CTX_(E\w+)\s*=\s*(-?\d+)", m.group(1)):
            names[int(c.group(2))] = c.group(1)
    lists = {}
    # A comment, then the prototype it documents.
    for m in re.finditer(r"/\*((?:(?!\*/).)*)\*/\s*\n(?:int|void)\s+(otel_thread_ctx_\w+)\(",
                         text, re.S):
        comment, fn = m.group(1), m.group(2)
        if not COVERED.match(fn):
            continue
        e = comment.find("Errors:")
        codes = set(re.findall(r"\b(E[A-Z0-9]+)\b", comment[e:])) if e >= 0 else set()
        lists[fn] = codes & set(names.values())
    return names, lists


def main():
    header, program, wrapper = sys.argv[1], sys.argv[2], sys.argv[3:]
    names, lists = documented(header)
    run = subprocess.run(wrapper + [program], capture_output=True, text=True)
    sys.stderr.write(run.stderr)
    if run.returncode != 0:
        print(f"FAIL: {program} exited {run.returncode}")
        return 1
    seen = {}
    for line in run.stdout.splitlines():
        if line.startswith("EXEMPT "):
            # A code this build cannot produce, with the program's reason.
            EXEMPT.add(line.split()[1])
            continue
        _, fn, code = line.split()
        seen.setdefault(fn, set()).add(names.get(int(code), code))
    problems = 0
    for fn, codes in sorted(lists.items()):
        got = seen.get(fn, set())
        for c in sorted(got - codes):
            print(f"FAIL: {fn} returned {c}, which its comment does not list")
            problems += 1
        for c in sorted(codes - got - EXEMPT):
            print(f"FAIL: {fn} lists {c}, which no call in errors.c produced")
            problems += 1
    if not lists:
        print("FAIL: no documented function found in the header")
        return 1
    print(f"{len(lists)} functions, {sum(len(v) for v in seen.values())} codes seen; "
          f"{problems} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
