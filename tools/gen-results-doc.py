#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Copies the benchmark's results into the documents that show them.

A document holds a generated block wherever it shows figures of a results
file:

    <!-- results: bench/results/results.md, Scaling -->
    ...
    <!-- end results -->

Between the two lines goes the part of that file the marker names, as the
file has it:

    operations   the first table (each operation against the baselines)
    Scaling      the table that follows the line "Scaling ..."
    Memory       the list that follows the line "Memory:"
    Targets      the list that follows the line "Targets:"
    ## TITLE     what follows the heading "## TITLE", to the next heading
    all          the whole file

A part named after a line runs to the next named part (or heading), its
blank lines at either end left out.

usage: gen-results-doc.py [--check] SOURCE_ROOT DOC...
  rewrites each DOC's blocks from the files they name; with --check,
  changes nothing and exits 1 (naming the blocks) when a DOC differs from
  what it would write, 2 when a marker is malformed or names a missing
  file or part.
"""
import os
import re
import sys

BEGIN = re.compile(r"^<!-- results: (\S+), (.+?) -->$")
END = "<!-- end results -->"
HEADS = {"Scaling": "Scaling", "Memory": "Memory:", "Targets": "Targets:"}


class Malformed(Exception):
    pass


def part(root, path, name):
    """The lines of part `name` of results file `path`."""
    if not path.startswith("bench/results/") or not path.endswith(".md"):
        raise Malformed(f"{path}: only Markdown files of bench/results/ are copied")
    try:
        with open(os.path.join(root, path), encoding="utf-8") as f:
            lines = f.read().rstrip("\n").split("\n")
    except OSError as e:
        raise Malformed(f"{path}: {e.strerror}")
    if name == "all":
        return lines
    if name == "operations":
        start = next((i for i, l in enumerate(lines) if l.startswith("| operation |")), None)
        if start is None:
            raise Malformed(f"{path}: no operations table")
        end = start
        while end < len(lines) and lines[end].startswith("|"):
            end += 1
        return lines[start:end]
    if name.startswith("## "):
        start = next((i for i, l in enumerate(lines) if l == name), None)
        if start is None:
            raise Malformed(f"{path}: no heading {name!r}")
        end = start + 1
        while end < len(lines) and not lines[end].startswith("#"):
            end += 1
    elif name in HEADS:
        start = next((i for i, l in enumerate(lines) if l.startswith(HEADS[name])), None)
        if start is None:
            raise Malformed(f"{path}: no part {name!r} (a line starting {HEADS[name]!r})")
        end = start + 1
        while end < len(lines) and not any(
                lines[end].startswith(h) for h in HEADS.values()):
            end += 1
    else:
        raise Malformed(f"{path}: unknown part {name!r}")
    out = lines[start + 1:end]
    while out and out[0] == "":
        out.pop(0)
    while out and out[-1] == "":
        out.pop()
    return out


def render(root, doc):
    """The document with every block rewritten, and the blocks' names."""
    with open(os.path.join(root, doc), encoding="utf-8") as f:
        lines = f.read().split("\n")
    out, names, i = [], [], 0
    while i < len(lines):
        m = BEGIN.match(lines[i])
        out.append(lines[i])
        i += 1
        if not m:
            continue
        end = next((j for j in range(i, len(lines)) if lines[j] == END), None)
        if end is None:
            raise Malformed(f"{doc}:{i}: no {END!r} after the marker")
        out.extend(part(root, m.group(1), m.group(2)))
        out.append(END)
        names.append(f"{doc}:{i} ({m.group(1)}, {m.group(2)})")
        i = end + 1
    if not names:
        raise Malformed(f"{doc}: no generated block")
    return "\n".join(out), names


def main(argv):
    check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    if len(args) < 2:
        print(__doc__.strip().split("\n\n")[-1], file=sys.stderr)
        return 2
    root, docs = args[0], args[1:]
    stale = []
    for doc in docs:
        try:
            text, names = render(root, doc)
        except Malformed as e:
            print(f"gen-results-doc: {e}", file=sys.stderr)
            return 2
        with open(os.path.join(root, doc), encoding="utf-8") as f:
            now = f.read()
        if text == now:
            continue
        if check:
            stale.append(doc)
        else:
            with open(os.path.join(root, doc), "w", encoding="utf-8") as f:
                f.write(text)
            print(f"gen-results-doc: rewrote {doc} ({len(names)} blocks)")
    for doc in stale:
        print(f"FAIL: {doc} shows figures other than bench/results/ holds: "
              f"run tools/gen-results-doc.py . {doc}", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
