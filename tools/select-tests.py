#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Print the names of a build's tests that a configuration of tools/run runs.

Usage: tools/select-tests.py BUILD [--memcheck] [--suite SUITE]...
                                   [--no-suite SUITE]... [--no-test NAME]...
                                   [--leave-out-vm CONFIG.ini]
       tools/select-tests.py BUILD --artefacts [--suite SUITE]...
                                   [--no-suite SUITE]... [--no-test NAME]...

For the configurations where a suite is too coarse (tools/run, "What each
configuration runs"): the names go to `meson test -C BUILD NAME...`.

  --memcheck           only the tests whose program tests/lib/valgrind.sh
                       runs under memcheck: a dynamically linked executable
                       of the build.  Under `meson test --setup valgrind` the
                       others (python3 scripts, gdb, compilers, sh) run as
                       they are, and would only repeat the gcc configuration.
  --suite SUITE        only the tests of these suites (as `meson test
                       --suite`).
  --no-suite SUITE     leave out the tests of SUITE (as `meson test
                       --no-suite`).
  --no-test NAME       leave out the test NAME.
  --leave-out-vm INI   leave out the tests that the VM configuration INI
                       (tools/configs/aarch64-vm.ini) names in `also`: it
                       runs them in its kernel, so under qemu-user they would
                       only repeat it (or skip).

  --artefacts          instead of tests, the files (relative to BUILD, for
                       ninja) of every target not defined under tests/:
                       the libraries, tools, examples, benchmark and the
                       bindings' helpers; and those of the targets the
                       tests that the other options select depend on (their
                       programs).  A configuration that runs only some
                       suites builds these: the test programs of the other
                       suites are built where those suites run.  So the
                       whole build is one step, which tools/run makes ahead,
                       beside the tests of the configurations before it.

Exits 1, printing nothing, when no test is left: `meson test` given no name
would run them all.
"""
import configparser
import json
import os
import subprocess
import sys


def dynamic_executable(path):
    """Whether PATH is an ELF executable with a program interpreter (PT_INTERP),
    which is what tests/lib/valgrind.sh runs under memcheck."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if head[:4] != b"\x7fELF" or head[4] != 2:
                return False
            order = "little" if head[5] == 1 else "big"
            phoff = int.from_bytes(head[32:40], order)
            phentsize = int.from_bytes(head[54:56], order)
            phnum = int.from_bytes(head[56:58], order)
            f.seek(phoff)
            table = f.read(phentsize * phnum)
    except OSError:
        return False
    for i in range(phnum):
        if int.from_bytes(table[i * phentsize:i * phentsize + 4], order) == 3:  # PT_INTERP
            return True
    return False


def artefacts(build, tests):
    """The outputs of every target not defined under tests/, and of those
    the selected `tests` depend on."""
    targets = json.loads(subprocess.run(["meson", "introspect", "--targets", build], check=True,
                                        capture_output=True, text=True).stdout)
    tests_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "tests")
    tests_dir = os.path.realpath(tests_dir) + os.sep
    needed = {d for t in tests for d in t["depends"]}
    files = [os.path.relpath(f, build) for t in targets
             if t["id"] in needed or not os.path.realpath(t["defined_in"]).startswith(tests_dir)
             for f in t["filename"]]
    if not files:
        return 1
    print("\n".join(files))
    return 0


def main(argv):
    args = argv[1:]
    if not args or args[0].startswith("-"):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    build = os.path.abspath(args.pop(0))
    memcheck, want_artefacts, suites_in, no_suites, leave = False, False, set(), set(), set()
    while args:
        opt = args.pop(0)
        if opt == "--memcheck":
            memcheck = True
        elif opt == "--artefacts":
            want_artefacts = True
        elif opt == "--suite" and args:
            suites_in.add(args.pop(0))
        elif opt == "--no-suite" and args:
            no_suites.add(args.pop(0))
        elif opt == "--no-test" and args:
            leave.add(args.pop(0))
        elif opt == "--leave-out-vm" and args:
            ini = configparser.ConfigParser()
            if not ini.read(args.pop(0)):
                print("select-tests.py: cannot read the VM configuration", file=sys.stderr)
                return 2
            leave |= set(ini["vm"].get("also", "").split())
        else:
            print(f"select-tests.py: bad argument {opt}", file=sys.stderr)
            return 2
    tests = json.loads(subprocess.run(["meson", "introspect", "--tests", build], check=True,
                                      capture_output=True, text=True).stdout)
    chosen = []
    for t in tests:
        suites = {s.split(":", 1)[-1] for s in t["suite"]}
        # 'core+shared' is in the suites 'core' and 'shared' too.
        suites |= {p for s in list(suites) for p in s.split("+")}
        if suites & no_suites or t["name"] in leave or (suites_in and not suites & suites_in):
            continue
        if memcheck and not (t["cmd"][0].startswith(build + os.sep) and
                             dynamic_executable(t["cmd"][0])):
            continue
        chosen.append(t)
    if want_artefacts:
        return artefacts(build, chosen)
    if not chosen:
        return 1
    print("\n".join(t["name"] for t in chosen))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
