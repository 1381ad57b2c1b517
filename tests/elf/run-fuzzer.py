#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs a libFuzzer program for a bounded number of executions, from a seed
corpus, and fails on anything it reports.

  run-fuzzer.py FUZZER WORKDIR SEED_DIR... [-- LIBFUZZER_OPTION...]

The meson tests fuzz-record and fuzz-elf run it with -runs=N and a fixed
-seed, so that a run is the same every time; by hand, a longer run is e.g.

  tests/elf/run-fuzzer.py build-clang-19/tests/elf/fuzz-elf /tmp/fz \\
      tests/elf/corpus-elf -- -max_total_time=600

WORKDIR is emptied first.  libFuzzer reads the seed directories and writes
what it finds to WORKDIR/new (never to the seeds, which are in the source
tree) and a failing input to WORKDIR/crash-*, leak-*, timeout-* or oom-*,
named in the output, to be replayed with `FUZZER FILE` (or the replay
program of a build without libFuzzer).  Fails when libFuzzer exits with
anything but 0 (libFuzzer's own code for a bug is 77, Meson's code for a
skip, so it is changed to 1 here), when it leaves such a file, when a seed
directory is missing or empty or not all of its files were read, or when
fewer executions than -runs asked for were made.  On success, prints the
coverage and the speed and removes WORKDIR.
"""
import os
import re
import shutil
import subprocess
import sys
import time


def main(argv):
    args = argv[1:]
    options = []
    if "--" in args:
        options = args[args.index("--") + 1:]
        args = args[:args.index("--")]
    if len(args) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    fuzzer, work, seeds = args[0], args[1], args[2:]
    inputs = 0
    for d in seeds:
        files = [os.path.join(d, f) for f in os.listdir(d)] if os.path.isdir(d) else []
        if not files:
            print(f"FAIL: seed corpus {d} is missing or empty")
            return 1
        # libFuzzer leaves out empty files (it runs the empty input anyway).
        inputs += sum(1 for f in files if os.path.getsize(f) > 0)
    if os.path.isdir(work):
        shutil.rmtree(work)
    os.makedirs(os.path.join(work, "new"))
    cmd = [fuzzer, "-print_final_stats=1", "-error_exitcode=1", "-timeout_exitcode=1",
           "-artifact_prefix=" + os.path.join(work, ""), *options,
           os.path.join(work, "new"), *seeds]
    print(" ".join(cmd), flush=True)
    start = time.monotonic()
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       errors="replace")
    elapsed = time.monotonic() - start
    out = r.stdout
    # The lines worth keeping from a good run; all of a bad one.
    keep = re.compile(r"^(INFO: (Loaded|Seed|seed corpus|-max_len)|#\d+\s+(INITED|DONE)|"
                      r"stat::|Done )")
    failures = []
    if r.returncode != 0:
        failures.append(f"the fuzzer exited with {r.returncode}")
    found = sorted(f for f in os.listdir(work)
                   if f.startswith(("crash-", "leak-", "timeout-", "oom-", "slow-unit-")))
    if found:
        failures.append("it wrote " + ", ".join(os.path.join(work, f) for f in found))
    m = re.search(r"INFO: seed corpus: files: (\d+)", out)
    if m is None or int(m.group(1)) != inputs:
        failures.append(f"it read {m.group(1) if m else 'no'} seed files of {inputs}")
    stats = dict(re.findall(r"^stat::(\w+):\s+(\d+)", out, re.M))
    runs = [int(o.split("=", 1)[1]) for o in options if o.startswith("-runs=")]
    executed = int(stats.get("number_of_executed_units", 0))
    if runs and executed < runs[-1]:
        failures.append(f"it made {executed} executions of the {runs[-1]} asked for")
    if failures:
        print(out[-20000:])
        for f in failures:
            print("FAIL: " + f)
        return 1
    print("\n".join(line for line in out.splitlines() if keep.match(line)))
    done = re.findall(r"^#(\d+)\s+DONE\s+cov: (\d+) ft: (\d+) corp: (\S+)", out, re.M)
    inited = re.findall(r"^#\d+\s+INITED\s+cov: (\d+) ft: (\d+)", out, re.M)
    if done:
        execs, cov, ft, corp = done[-1]
        print(f"{os.path.basename(fuzzer)}: {execs} executions in {elapsed:.1f} s "
              f"({int(execs) / elapsed:.0f}/s), cov {cov} ft {ft} "
              f"(seeds alone: cov {inited[-1][0] if inited else '?'}), corpus {corp}")
    shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
