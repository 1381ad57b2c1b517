#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The tables of doc/dotnet.md's "Numbers", made from bench/results/dotnet.json.

usage: tables.py [--check] [--print] [RESULTS [DOC]]

RESULTS defaults to bench/results/dotnet.json and DOC to doc/dotnet.md, both
in the repository this file is in.  The tables replace what DOC holds
between the line BEGIN and the line END (below).  --check changes nothing
and exits 1 when DOC's tables differ from what RESULTS gives; --print
prints the tables only.  run.py bench writes RESULTS (with
OTEL_DOTNET_BENCH_RESULTS) and prints the same tables.  Python's standard
library only.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
BEGIN = "<!-- tables: made by ffi/dotnet/bench/tables.py from bench/results/dotnet.json; do not edit by hand -->"
END = "<!-- end of the tables -->"


def ns(v, digits=1):
    return "-" if v is None else f"{v:.{digits}f}"


def ratio(v, base):
    if v is None or not base:
        return ""
    return f" ({v / base:.2f}x)"


def interval(lo, hi):
    if lo is None or hi is None:
        return "-"
    return f"{lo:.1f} to {hi:.1f}"


def calls_table(d):
    out = [
        "| call | C | .NET JIT: mean +- CI | C | .NET NativeAOT: median (CI) |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for r in d["calls"]:
        j, a = r["jit"], r["aot"]
        jit = "-" if j["ns"] is None else (
            f"{ns(j['ns'])} +- {ns(j['ci_ns'])}{ratio(j['ns'], j['c_ns'])}")
        aot = "-" if a["ns"] is None else (
            f"{ns(a['ns'])}{ratio(a['ns'], a['c_ns'])} ({interval(a['ci_low'], a['ci_high'])})")
        out.append(f"| {r['label']} | {ns(j['c_ns'])} | {jit} | {ns(a['c_ns'])} | {aot} |")
    return "\n".join(out)


def switches_table(d):
    out = [
        "| | .NET JIT: mean +- CI | per switch | bytes | .NET NativeAOT: median (CI) | per switch (CI) | bytes |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    base = d["switches"][0]
    for r in d["switches"]:
        j, a = r["jit"], r["aot"]
        first = r is base
        jit = "-" if j["ns"] is None else (
            f"{ns(j['ns'])} +- {ns(j['ci_ns'])}" + ("" if first else ratio(j["ns"], base["jit"]["ns"])))
        aot = "-" if a["ns"] is None else (
            f"{ns(a['ns'])}" + ("" if first else ratio(a["ns"], base["aot"]["ns"]))
            + f" ({interval(a['ci_low'], a['ci_high'])})")
        per_j = "" if first else ns(j.get("per_switch"))
        per_a = "" if first else (
            f"{ns(a.get('per_switch'))} ({interval(a.get('per_switch_low'), a.get('per_switch_high'))})")
        out.append(f"| {r['label']} | {jit} | {per_j} | {ns(j.get('bytes'), 0)} | {aot} | {per_a} "
                   f"| {ns(a.get('bytes'), 0)} |")
    return "\n".join(out)


def instructions(a, base):
    v = a.get("instructions")
    if v is None:
        return "-"
    text = f"{v:,}"
    if a is not base and base.get("instructions"):
        text += ratio(v, base["instructions"])
    return text + f" ({a['instructions_low']:,} to {a['instructions_high']:,})"


def hops_table(d, group="hops"):
    out = [
        "| | .NET NativeAOT: median (CI) | awaits resumed on another thread | instructions (lowest to highest) |",
        "| --- | ---: | ---: | ---: |",
    ]
    base = d[group][0]
    for r in d[group]:
        a = r["aot"]
        pct = a.get("resumed_elsewhere_pct")
        out.append(f"| {r['label']} | {ns(a['ns'])}" + ("" if r is base else ratio(a["ns"], base["aot"]["ns"]))
                   + f" ({interval(a['ci_low'], a['ci_high'])}) | "
                   + ("-" if pct is None else f"{pct:.1f} %") + f" | {instructions(a, base['aot'])} |")
    return "\n".join(out)


def goals_table(d):
    out = ["| goal | measured | met |", "| --- | ---: | --- |"]
    for g in d["goals"]:
        met = "not judged" if g["met"] is None else "yes" if g["met"] else "no"
        out.append(f"| {g['goal']} | {g['measured']} | {met} |")
    return "\n".join(out)


def render(d):
    m = d["machine"]
    head = (f"Run {d['date']} on {m['cpu']} ({m['online_cpus']} CPUs), {m['kernel']}, .NET SDK "
            f"{m['dotnet']}; load average {d['loadavg_start'][0]:.2f} before the run and "
            f"{d['loadavg_end'][0]:.2f} after it; {d['seconds']:.0f} s.  BenchmarkDotNet: "
            f"{d['settings']['bdn_job']}.")
    return "\n\n".join([
        head,
        "Nanoseconds per call; in brackets, against C measured right before (the C figure of its column); "
        "CI: for BenchmarkDotNet, half the width of the 99.9 % confidence interval of the mean; for C and "
        "the Stopwatch loop, the 6th and 16th of 21 sorted runs, between which the median lies with a "
        "confidence of 97 %:",
        calls_table(d),
        "An activity's start + stop (two switches of `Activity.Current`), in nanoseconds; in brackets, "
        "against the same without the integration; per switch, half the difference the integration makes "
        "(its CI from the two intervals); bytes: allocated per start + stop on the calling thread:",
        switches_table(d),
        "Per `await Task.Yield()` in an activity, in nanoseconds (each resumes on a thread pool thread, "
        "the one it left or another: the share of the latter is the third column), and in instructions: "
        f"{d['settings'].get('aot_instructions', 'not counted')}:",
        hops_table(d),
        "The same flow, each `await` resuming on another thread-pool thread (the awaiting thread "
        "queues the continuation and waits until another thread has taken it, as when an I/O "
        "completes on another thread); its instructions include the threads' spinning and waiting "
        "for each other, which change with the order in which callgrind runs them:",
        hops_table(d, "hops_other"),
        "The goals, measured in this run:",
        goals_table(d),
    ])


def update(doc_text, tables):
    try:
        start = doc_text.index(BEGIN) + len(BEGIN)
        end = doc_text.index(END, start)
    except ValueError:
        sys.exit(f"tables.py: the document lacks the lines\n{BEGIN}\n{END}")
    return doc_text[:start] + "\n\n" + tables + "\n\n" + doc_text[end:]


def main(argv):
    check = "--check" in argv
    only_print = "--print" in argv
    args = [a for a in argv if not a.startswith("--")]
    results = args[0] if args else os.path.join(ROOT, "bench", "results", "dotnet.json")
    doc = args[1] if len(args) > 1 else os.path.join(ROOT, "doc", "dotnet.md")
    with open(results) as f:
        tables = render(json.load(f))
    if only_print:
        print(tables)
        return 0
    with open(doc) as f:
        text = f.read()
    new = update(text, tables)
    if check:
        if new != text:
            print(f"{doc}: its tables are not those of {results} (run ffi/dotnet/bench/tables.py)")
            return 1
        return 0
    if new != text:
        with open(doc, "w") as f:
            f.write(new)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
