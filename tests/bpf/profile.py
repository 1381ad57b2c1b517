#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""otel-thread-ctx-sample's profile against a workload whose answer is known
(workload.c): one thread burns 6, 3 and 1 ms of its CPU time in requests of
three routes (60/30/10 % of the CPU in requests) and 2 ms with no context,
per cycle, so of the process's samples:

    GET /users/{id} 50 %, POST /orders 25 %, GET /health 8.3 %, no context 16.7 %

One run of the tool (about 2.5 s at up to 999 Hz) checks:
- the shares by http.route and by trace_id, within a tolerance of 5
  percentage points or 4 standard errors of a share (sqrt(p(1-p)/n)),
  whichever is larger; the no-context group; the JSON and --top;
and a second short run checks the table form and --top with span_id groups.

usage: profile.py TOOL WORKLOAD
Exits 77 when BPF is refused here.
"""
import json
import math
import os
import subprocess
import sys
import tempfile

TOOL, WORKLOAD = sys.argv[1:3]
ROUTES = {"GET /users/{id}": 0.50, "POST /orders": 0.25, "GET /health": 1 / 12}
NO_CONTEXT = 1 / 6
TRACES = {"11" * 16: "GET /users/{id}", "22" * 16: "POST /orders", "33" * 16: "GET /health"}
LOOPS = {"GET /users/{id}": "burn_users", "POST /orders": "burn_orders",
         "GET /health": "burn_health", None: "burn_idle"}
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def tolerance(p, n):
    return max(0.05, 4 * math.sqrt(p * (1 - p) / max(n, 1)))


def frequency():
    try:
        with open("/proc/sys/kernel/perf_event_max_sample_rate") as f:
            return max(1, min(999, int(f.read())))
    except OSError:
        return 999


def run(args, timeout=60):
    r = subprocess.run([TOOL] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=timeout)
    if r.returncode == 4:
        print("skip:", r.stderr.strip())
        raise SystemExit(77)
    return r


def main():
    hz = frequency()
    w = subprocess.Popen([WORKLOAD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    tmp = tempfile.mkdtemp(prefix="otel-profile-")
    try:
        line = w.stdout.readline().split()
        check(line[:1] == ["ready"], f"workload started: {line}")
        pid = str(w.pid)

        r = run(["--json", "--duration", "2.5", "--frequency", str(hz),
                 "--by", "http.route", "--top", "0", pid])
        check(r.returncode == 0, f"--by http.route exit {r.returncode}: {r.stderr}")
        objs = [json.loads(x) for x in r.stdout.splitlines() if x.strip()]
        summary = [o for o in objs if o["type"] == "summary"][0]
        groups = [o for o in objs if o["type"] == "group"]
        n = summary["samples"]
        print(f"{n} samples at {hz} Hz; groups: " +
              ", ".join(f"{g['values'] and g['values']['http.route']}: {g['share']:.3f}"
                        for g in groups))
        check(n >= 200, f"at least 200 samples ({n})")
        check(sum(g["samples"] for g in groups) == n, "the groups add up to the samples")
        check(not any(o["type"] == "thread" for o in objs), "no thread lines with --by")
        check([g["rank"] for g in groups] == list(range(1, len(groups) + 1)), "ranks 1..n")
        check(all(groups[i]["samples"] >= groups[i + 1]["samples"]
                  for i in range(len(groups) - 1)), "largest group first")
        by_route = {}
        for g in groups:
            if g["kind"] == "context":
                by_route[g["values"]["http.route"]] = g
            else:
                by_route[g["kind"]] = g
        for route, share in ROUTES.items():
            g = by_route.get(route)
            check(g is not None, f"a group for {route}")
            if g is not None:
                check(abs(g["share"] - share) <= tolerance(share, n),
                      f"{route}: share {g['share']:.3f}, expected {share:.3f}")
                check(abs(g["samples"] / n - g["share"]) < 0.001, f"{route}: share = samples / n")
        g = by_route.get("no-context")
        check(g is not None and g["values"] is None, "a no-context group without values")
        if g is not None:
            check(abs(g["share"] - NO_CONTEXT) <= tolerance(NO_CONTEXT, n),
                  f"no context: share {g['share']:.3f}, expected {NO_CONTEXT:.3f}")
        in_requests = sum(by_route[x]["samples"] for x in ROUTES if x in by_route)
        for route, share in ROUTES.items():
            if route in by_route and in_requests:
                s = by_route[route]["samples"] / in_requests
                check(abs(s - share / (1 - NO_CONTEXT)) <= tolerance(share / (1 - NO_CONTEXT), in_requests),
                      f"{route}: {s:.3f} of the samples in requests")
        check(set(by_route) <= set(ROUTES) | {"no-context"}, f"no other group: {sorted(by_route, key=str)}")

        # The same by trace_id, with --top 2: the two largest, the rest as one.
        r = run(["--json", "--duration", "1", "--frequency", str(hz),
                 "--by", "trace_id", "--top", "2", pid])
        check(r.returncode == 0, f"--by trace_id exit {r.returncode}: {r.stderr}")
        objs = [json.loads(x) for x in r.stdout.splitlines() if x.strip()]
        groups = [o for o in objs if o["type"] == "group"]
        n2 = [o for o in objs if o["type"] == "summary"][0]["samples"]
        check(len(groups) == 3, f"--top 2: two groups and the rest ({len(groups)})")
        if len(groups) == 3:
            check(TRACES.get(groups[0]["values"]["trace_id"]) == "GET /users/{id}",
                  f"the largest trace is that of GET /users/{{id}}: {groups[0]}")
            check(groups[2]["kind"] == "other" and groups[2]["groups"] == 2,
                  f"the rest: the other trace and no context: {groups[2]}")
            check(sum(g["samples"] for g in groups) == n2, "the groups add up with --top")
            check(abs(groups[0]["share"] - 0.5) <= tolerance(0.5, n2),
                  f"trace of GET /users/{{id}}: {groups[0]['share']:.3f}")

        # The table: one line per span (each request is a span), --top 3.
        r = run(["--duration", "0.5", "--frequency", str(hz), "--by", "span_id,http.route",
                 "--top", "3", pid])
        check(r.returncode == 0, f"table exit {r.returncode}: {r.stderr}")
        lines = r.stdout.splitlines()
        head = [i for i, x in enumerate(lines) if x.split()[:3] == ["SAMPLES", "SHARE", "GROUP"]]
        check(len(head) == 1 and "(by span_id http.route)" in lines[head[0]],
              f"the table's header: {lines}")
        if head:
            rows = lines[head[0] + 1:]
            check(len(rows) == 4 and "other groups)" in rows[3], f"three rows and the rest: {rows}")
            check(all(" span_id=" in x and " http.route=" in x or "(no context)" in x
                      for x in rows[:3]), f"rows name span_id and http.route: {rows}")
        check("TRACE ID" not in r.stdout, "no thread table with --by")

        # Usage errors.
        for bad in (["--by", ",", pid], ["--top", "-1", "--by", "span_id", pid],
                    ["--by", "a,b,c,d,e,f,g,h,i", pid]):
            r = run(bad)
            check(r.returncode == 2 and r.stderr.startswith("otel-thread-ctx-sample: "),
                  f"{bad}: exit {r.returncode}, {r.stderr!r}")
    finally:
        w.stdin.close()
        w.wait(timeout=30)
    check(w.returncode == 0, f"the workload ended well ({w.returncode})")
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
