#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What otel-thread-ctx-sample costs (doc/sampler.md, "Cost"); run as root.

1. The sampled process: the workload of the eBPF tests (tests/bpf/workload.c,
   --chunks N) burns a fixed amount of work in a span and reports its CPU
   time (user and system, CLOCK_THREAD_CPUTIME_ID), without the sampler and
   with it at 99 Hz, 999 Hz and 999 Hz with --stacks.  The runs of each
   setting are interleaved; the medians are compared.
2. The tool: its own CPU time (user and system, from wait4()) while it
   samples the workload's request loop at 999 Hz with --stacks --by
   http.route and writes --pprof and --folded (so symbolizing every frame),
   for a short and a long run; the difference per 10,000 samples.
3. The BPF program's own time per sample, which the sampled process pays
   (in the timer interrupt that took the sample): the kernel's run-time
   statistics of the program (kernel.bpf_stats_enabled, turned on for 1.5 s
   and then back to what it was) over the samples of those 1.5 s, with and
   without --stacks.  Skipped when another perf_event program of the same
   name is loaded (another sampler running).

usage: cost.py TOOL WORKLOAD [--runs N] [--chunks N]
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time


def tool_run(tool, args):
    """Starts the tool; returns the Popen."""
    return subprocess.Popen([tool] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def wait_cpu(p):
    """Waits for p; (its CPU seconds, stdout, stderr)."""
    out = p.stdout.read()
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return ru.ru_utime + ru.ru_stime, out, err


def fixed_work(tool, workload, chunks, setting):
    """The workload's CPU ns for `chunks` under `setting` (None: no sampler)."""
    w = subprocess.Popen([workload, "--chunks", str(chunks)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    line = w.stdout.readline().split()
    assert line[0] == "ready", line
    t = None
    if setting is not None:
        hz, stacks = setting
        t = tool_run(tool, ["--json", "--frequency", str(hz), "--by", "http.route", str(w.pid)]
                     + (["--stacks"] if stacks else []))
        time.sleep(3)  # the program loaded, the events open
    w.stdin.write("go\n")
    w.stdin.flush()
    out = w.stdout.readline().split()
    w.stdin.close()
    w.wait()
    samples = None
    if t is not None:
        _, o, e = wait_cpu(t)
        if t.returncode != 0:
            raise SystemExit(f"the tool failed ({t.returncode}): {e}")
        samples = [json.loads(x) for x in o.splitlines()][0]["samples"]
    return int(out[1]), samples


def perf_programs():
    r = subprocess.run(["bpftool", "prog", "show", "-j"], stdout=subprocess.PIPE, text=True)
    return {p["id"]: p for p in json.loads(r.stdout or "[]")
            if p.get("type") == "perf_event" and p.get("name") == "otel_thread_ctx_sample"}


def bpf_time(tool, pid, stacks):
    """ns per run of the program at 999 Hz, or None."""
    before = set(perf_programs())
    t = tool_run(tool, ["--frequency", "999", "--duration", "5", str(pid)] +
                 (["--stacks"] if stacks else []))
    time.sleep(2.5)
    mine = [i for i in perf_programs() if i not in before]
    result = None
    if len(mine) == 1 and len(perf_programs()) == 1:
        with open("/proc/sys/kernel/bpf_stats_enabled") as f:
            old = f.read().strip()
        try:
            with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
                f.write("1")
            a = perf_programs()[mine[0]]
            time.sleep(1.5)
            b = perf_programs()[mine[0]]
        finally:
            with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
                f.write(old)
        runs = b.get("run_cnt", 0) - a.get("run_cnt", 0)
        if runs > 0:
            result = ((b.get("run_time_ns", 0) - a.get("run_time_ns", 0)) / runs, runs)
    wait_cpu(t)
    return result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tool")
    ap.add_argument("workload")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--chunks", type=int, default=20000)
    a = ap.parse_args()
    settings = [None, (99, False), (999, False), (999, True)]
    cpu = {s: [] for s in settings}
    samples = {s: [] for s in settings}
    for _ in range(a.runs):
        for s in settings:
            c, n = fixed_work(a.tool, a.workload, a.chunks, s)
            cpu[s].append(c)
            samples[s].append(n)
    base = statistics.median(cpu[None])
    print(f"load average before the tool's part: {os.getloadavg()[0]:.1f}")
    for s in settings:
        name = "no sampler" if s is None else f"{s[0]} Hz" + (" --stacks" if s[1] else "")
        m = statistics.median(cpu[s])
        extra = "" if s is None else \
            f", {statistics.median(samples[s]):.0f} samples, {100 * (m / base - 1):+.2f} %"
        print(f"sampled process, {name}: median CPU {m / 1e6:.1f} ms over {a.runs} runs "
              f"(min {min(cpu[s]) / 1e6:.1f}, max {max(cpu[s]) / 1e6:.1f}){extra}")

    # The tool's CPU: a short and a long run on the request loop.
    w = subprocess.Popen([a.workload], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    w.stdout.readline()
    tmp = tempfile.mkdtemp(prefix="otel-cost-")
    res = {}
    try:
        for d in (1, 8):
            t = tool_run(a.tool, ["--json", "--frequency", "999", "--duration", str(d), "--stacks",
                                  "--by", "http.route", "--pprof", os.path.join(tmp, "p.pb"),
                                  "--folded", os.path.join(tmp, "f"), str(w.pid)])
            c, o, e = wait_cpu(t)
            if t.returncode != 0:
                raise SystemExit(f"the tool failed ({t.returncode}): {e}")
            n = [json.loads(x) for x in o.splitlines()][0]["samples"]
            res[d] = (c, n)
            print(f"tool, {d} s at 999 Hz with --stacks, --pprof, --folded: {n} samples, "
                  f"{c * 1000:.0f} ms of CPU")
    finally:
        w.stdin.close()
        w.wait()
        for f in os.listdir(tmp):
            os.unlink(os.path.join(tmp, f))
        os.rmdir(tmp)
    (c1, n1), (c8, n8) = res[1], res[8]
    if n8 > n1:
        print(f"tool: {1000 * (c8 - c1) / (n8 - n1) * 10000:.0f} ms of CPU per 10,000 samples "
              f"(the difference of the two runs)")

    w = subprocess.Popen([a.workload], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    w.stdout.readline()
    try:
        for stacks in (False, True):
            r = bpf_time(a.tool, w.pid, stacks)
            name = "with --stacks" if stacks else "without stacks"
            if r is None:
                print(f"BPF program {name}: not measured (another sampler's program is loaded)")
            else:
                print(f"BPF program {name}: {r[0]:.0f} ns per sample over {r[1]} runs "
                      f"(every process's samples; those of other processes end after a lookup)")
    finally:
        w.stdin.close()
        w.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
