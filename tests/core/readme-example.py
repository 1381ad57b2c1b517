#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the README's C example (the first ```c block under "## Example")
to OUTPUT unchanged, for tests/core/readme-main.c to call.  A README without
it fails the build.

usage: readme-example.py README.md OUTPUT
"""
import sys


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
    try:
        start = lines.index("## Example")
        begin = lines.index("```c", start) + 1
        end = lines.index("```", begin)
    except ValueError:
        print("readme-example: no ```c block under \"## Example\" in %s" % sys.argv[1],
              file=sys.stderr)
        return 1
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        f.write("\n".join(lines[begin:end]) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
