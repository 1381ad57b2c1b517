#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""otel-thread-ctx-sample from the command line, against the eBPF tests'
target (target.c):

- values: every thread's record and its attribute key names, as JSON lines
  and as a table, with --interval reports; the library in dynamic TLS;
- hostile records: each counted where it belongs (an edge record is read
  whole, invalid, oversized, unreadable, misaligned, a truncated entry, one
  of the ids set, nothing), exit code 8;
- a library loaded while the tool watches; a process that never loads it
  (exit 5); --all;
- usage and missing processes (2, 3); the cycles event (works, or fails
  clearly); and, run as an unprivileged user, a refusal with exit code 4.

usage: cli.py TOOL TARGET_SHARED TARGET_DLOPEN LIBRARY
Exits 77 when BPF is refused here.
"""
import json
import os
import pwd
import shutil
import subprocess
import sys

TOOL, SHARED, DLOPEN, LIB = sys.argv[1:5]
DYNAMIC_TLS = {"GLIBC_TUNABLES": "glibc.rtld.optional_static_tls=0"}
KEYS = ["worker.name", "http.route", "tenant.name"]
ROUTES = ["GET /a", "POST /orders/{id}", "PUT /cart"]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def values_record(i):
    """records.h, values_record()."""
    attrs = [{"index": 0, "key": KEYS[0], "value": f"worker-{i}"},
             {"index": 1, "key": KEYS[1], "value": ROUTES[i % 3]}]
    if i == 1:
        attrs.append({"index": 2, "key": KEYS[2], "value": "x" * 250})
    return {
        "trace_id": bytes((0x10 * (i + 1) + b) & 0xFF for b in range(16)).hex(),
        "span_id": bytes(0xA0 + 8 * i + b for b in range(8)).hex(),
        "trace_flags": i % 2,
        "attributes": attrs,
    }


class Target:
    def __init__(self, argv, env=None, wait_ready=True):
        e = dict(os.environ)
        e.update(env or {})
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  env=e, text=True)
        self.pid = self.p.pid
        self.threads = {}
        if wait_ready:
            self.ready()

    def ready(self):
        line = self.p.stdout.readline().split()
        if not line or line[0] != "ready":
            raise SystemExit(f"the target did not start: {line}")
        for item in line[1:]:
            tid, index = item.split(":")
            self.threads[int(tid)] = int(index)

    def send(self, text):
        self.p.stdin.write(text + "\n")
        self.p.stdin.flush()

    def stop(self):
        try:
            self.send("stop")
        except BrokenPipeError:
            pass
        self.p.stdin.close()
        self.p.stdout.read()
        return self.p.wait(timeout=30)


def run(args, env=None, timeout=60):
    e = dict(os.environ)
    e.update(env or {})
    r = subprocess.run([TOOL] + args, capture_output=True, text=True, env=e, timeout=timeout)
    return r


def lines(r):
    out = []
    for line in r.stdout.splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            check(False, f"not JSON: {line!r}")
    return out


def threads_of(objs, pid):
    return {o["tid"]: o for o in objs if o.get("type") == "thread" and o["pid"] == pid}


def check_values(r, t, model):
    check(r.returncode == 0, f"values ({model}): exit {r.returncode}: {r.stderr}")
    objs = lines(r)
    procs = [o for o in objs if o.get("type") == "process" and o["pid"] == t.pid]
    check(procs and procs[-1]["modules"][0]["model"] == model,
          f"values: the model is {model}: {procs}")
    check(procs and procs[-1]["process_context"], "values: the process context is read")
    th = threads_of(objs, t.pid)
    for tid, index in t.threads.items():
        o = th.get(tid)
        check(o is not None, f"values ({model}): thread {index} was sampled")
        if o is None:
            continue
        check(o["samples"] > 0 and o["context"] == o["samples"],
              f"values ({model}): thread {index}: every sample has the context: {o}")
        check(o["name"] == f"values-{index}", f"values: thread name {o['name']}")
        rec = o.get("record", {})
        want = values_record(index)
        for k in ("trace_id", "span_id", "trace_flags", "attributes"):
            check(rec.get(k) == want[k], f"values ({model}): thread {index} {k}: "
                  f"{rec.get(k)!r}, expected {want[k]!r}")
    return objs


def main():
    # Refused here?  The tool says so with exit code 4.
    t = Target([SHARED, "values"])
    # Reports at 0.3 s or a little later, 0.3 s after that, and the last at
    # 1 s: room for a report that comes late on a busy machine (with 0.7 s,
    # a first report more than 0.1 s late left no room for the second).
    r = run(["--json", "--frequency", "4000", "--duration", "1", "--interval", "0.3",
             str(t.pid)])
    if r.returncode == 4:
        t.stop()
        print(f"skip: BPF is refused here: {r.stderr.strip()}")
        return 77
    objs = check_values(r, t, "tlsdesc-static")
    summaries = [o for o in objs if o.get("type") == "summary"]
    check(len(summaries) >= 3, f"--interval 0.3 --duration 1: {len(summaries)} reports")
    check(all(s["lost"] == 0 for s in summaries), "no sample lost")
    n = sum(o["samples"] for o in threads_of(objs, t.pid).values())
    print(f"values, library linked at start-up: {n} samples, every one with its record")

    r = run(["--frequency", "4000", "--duration", "0.4", str(t.pid)])
    check(r.returncode == 0, f"table: exit {r.returncode}")
    check("tlsdesc-static" in r.stdout and "process context with 3 attribute keys" in r.stdout,
          f"table: the process: {r.stdout[:300]}")
    check('worker.name="worker-1" http.route="POST /orders/{id}" tenant.name="' + "x" * 250
          + '"' in r.stdout, f"table: values with key names: {r.stdout}")
    print(r.stdout, end="")
    check(t.stop() == 0, "the values target exits cleanly")

    # The library in dynamic TLS: a DTV walk.
    t = Target([DLOPEN, "--lib", LIB, "values"], env=DYNAMIC_TLS)
    r = run(["--json", "--frequency", "4000", "--duration", "0.7", str(t.pid)])
    objs = check_values(r, t, "tlsdesc-dynamic")
    n = sum(o["samples"] for o in threads_of(objs, t.pid).values())
    print(f"values, library in dynamic TLS: {n} samples, every one with its record")
    check(t.stop() == 0, "the dynamic TLS target exits cleanly")

    # Broken records.
    t = Target([SHARED, "hostile"])
    r = run(["--json", "--frequency", "4000", "--duration", "0.7", str(t.pid)])
    check(r.returncode == 8, f"hostile: exit 8, got {r.returncode}: {r.stderr}")
    th = threads_of(lines(r), t.pid)
    names = {o["name"]: o for o in th.values()}
    expect = {"edge": "context", "invalid": "invalid", "oversized": "oversized",
              "unmapped": "unreadable", "misaligned": "misaligned",
              "truncated": "truncated_entry", "half-ids": "half_ids", "idle": "no_context"}
    for name, field in expect.items():
        o = names.get(name)
        check(o is not None and o["samples"] > 0 and o[field] == o["samples"],
              f"hostile: every sample of {name} counted as {field}: {o}")
    # A record read whole that breaks the format is counted with a record
    # and as its anomaly, and only so; one over 612 bytes of attributes is
    # read with 612 of them, as the format's readers read it (the bytes
    # after its entries may then read as an entry cut off).
    for name, field in (("truncated", "truncated_entry"), ("half-ids", "half_ids"),
                        ("oversized", "oversized")):
        o = names.get(name)
        others = ("truncated_entry", "half_ids", "oversized")
        if name == "oversized":
            others = ("half_ids",)
        check(o is not None and o["context"] == o["samples"] and
              all(o[f] == 0 for f in others if f != field),
              f"hostile: {name} read with a record and only that anomaly: {o}")
    check(all(o["truncated_entry"] == o["half_ids"] == o["oversized"] == 0
              for n, o in names.items() if n not in ("truncated", "half-ids", "oversized")),
          f"hostile: no anomaly counted elsewhere: {names}")
    if names.get("edge"):
        check(names["edge"].get("record", {}).get("attributes") ==
              [{"index": 0, "key": KEYS[0], "value": "edgecase"}],
              f"hostile: the edge record is read whole: {names['edge']}")
    print("hostile: " + ", ".join(f"{n} {names[n][f]}/{names[n]['samples']} {f}"
                                  for n, f in expect.items() if n in names))
    check(t.stop() == 0, "the hostile target exits cleanly")

    # A library loaded while the tool watches.
    t = Target([DLOPEN, "--lib", LIB, "late"], wait_ready=False)
    check(t.p.stdout.readline().strip() == "waiting", "late: the target waits")
    tool = subprocess.Popen([TOOL, "--json", "--frequency", "4000", "--duration", "2.5",
                             str(t.pid)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    # Its first message, that it waits, before the library is loaded (a
    # fixed second was not always enough for the tool to start when other
    # jobs took the CPUs); "" if it ends without one.
    first = tool.stderr.readline()
    t.send("load")
    t.ready()
    out, err = tool.communicate(timeout=60)
    err = first + err
    check(tool.returncode == 0, f"late: exit {tool.returncode}: {err}")
    check("publishes no thread context yet" in err, f"late: the tool says it waits: {err}")
    objs = [json.loads(line) for line in out.splitlines()]
    th = threads_of(objs, t.pid)
    n = sum(o["context"] for tid, o in th.items() if tid in t.threads)
    check(n > 0, f"late: samples with a record after the load: {th}")
    check(all(o["invalid"] == o["oversized"] == o["unreadable"] == 0 for o in th.values()),
          f"late: nothing broken: {th}")
    print(f"a library loaded while watching: {n} samples with a record after the load")
    check(t.stop() == 0, "the late target exits cleanly")

    # A process that never loads it.
    t = Target([DLOPEN, "--lib", LIB, "late"], wait_ready=False)
    t.p.stdout.readline()
    r = run(["--duration", "0.5", str(t.pid)])
    check(r.returncode == 5, f"no slot: exit 5, got {r.returncode}: {r.stderr}")
    t.p.stdin.close()
    t.p.wait(timeout=30)

    # --all finds a process that publishes.
    t = Target([SHARED, "values"])
    r = run(["--all", "--json", "--frequency", "4000", "--duration", "1.2"])
    check(r.returncode in (0, 8), f"--all: exit {r.returncode}: {r.stderr}")
    objs = lines(r)
    check(any(o.get("type") == "process" and o["pid"] == t.pid for o in objs),
          "--all: the target is found")
    th = threads_of(objs, t.pid)
    check(any(o["context"] > 0 for o in th.values()), f"--all: its threads are sampled: {th}")
    print(f"--all: {len([o for o in objs if o.get('type') == 'process'])} processes publish")

    # Usage, and a process that does not exist.
    check(run(["not-a-pid"]).returncode == 2, "usage: exit 2")
    check(run(["--frequency", "0", "1"]).returncode == 2, "a zero frequency: exit 2")
    gone = subprocess.Popen(["true"])
    gone.wait()
    r = run(["--duration", "1", str(gone.pid)])
    check(r.returncode == 3 and "no such process" in r.stderr,
          f"no such process: exit 3, got {r.returncode}: {r.stderr}")

    # Hardware cycles: sampled, or a clear refusal where the machine has
    # no counter (a virtual machine).
    r = run(["--event", "cycles", "--duration", "0.5", str(t.pid)])
    check(r.returncode == 0 or (r.returncode == 7 and "no hardware CPU cycles counter" in r.stderr),
          f"--event cycles: exit {r.returncode}: {r.stderr}")
    print(f"--event cycles: exit {r.returncode} {r.stderr.strip()}")

    # Without privileges: refused, exit 4, and the message says why.
    setpriv = shutil.which("setpriv")
    if os.geteuid() == 0 and setpriv:
        nobody = pwd.getpwnam("nobody")
        r = subprocess.run([setpriv, "--reuid", str(nobody.pw_uid), "--regid",
                            str(nobody.pw_gid), "--clear-groups", "--inh-caps=-all",
                            TOOL, "--duration", "1", str(t.pid)],
                           capture_output=True, text=True, timeout=60)
        if r.returncode in (126, 127):
            print(f"(the unprivileged run is left out: nobody cannot run {TOOL})")
        else:
            check(r.returncode == 4 and "run as root" in r.stderr,
                  f"unprivileged: exit 4 with the reason, got {r.returncode}: {r.stderr}")
            print(f"unprivileged: exit {r.returncode}: {r.stderr.strip()}")
    else:
        print("(the unprivileged run is left out: not root, or no setpriv)")
    check(t.stop() == 0, "the values target exits cleanly")

    if failures:
        print(f"{len(failures)} failures")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
