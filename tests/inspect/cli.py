#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The otel-thread-ctx-inspect command line against a live target.

usage: cli.py INSPECTOR TARGET DLOPEN_TARGET NOACCESS_MODULE LIBRARY [--skip REASON]

Table and --json output carry exactly the values the target published
(tests/inspect/expected.h, mirrored below); --count repeats; the exit
codes of the README: 2 usage, 3 no such process, 4 permission, 5 no slot,
6 unsupported model, 8 broken records.  Names the process chose (a thread
name, a key name, the path of the module, LIBRARY copied under a hostile
name) reach the output escaped: no control byte in the table or the JSON,
and the JSON gives each name back (a name that is not UTF-8 byte by byte,
as U+00XX).  The targets must still end well afterwards.
"""
import shutil
import tempfile
import json
import os
import subprocess
import sys

EXPECTED_THREADS = 5
IDLE = EXPECTED_THREADS - 1
KEYS = ["worker.index", "http.route", "unused", "tenant.name"]
ROUTES = ["GET /a", "POST /orders/{id}", "", "PUT /cart"]


def expected(i):
    attrs = [(0, str(i % 8)), (1, ROUTES[i % 4])]
    if i == 1:
        attrs.append((3, "x" * 250))
    return {
        "trace_id": bytes((0x10 * (i + 1) + b) & 0xff for b in range(16)).hex(),
        "span_id": bytes((0xa0 + 8 * i + b) & 0xff for b in range(8)).hex(),
        "trace_flags": i % 2,
        "attributes": [{"index": k, "key": KEYS[k], "value": v} for k, v in attrs],
    }


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


class Target:
    def __init__(self, path, mode, *args):
        self.p = subprocess.Popen([path, *args, mode], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        line = self.p.stdout.readline().decode()
        check(line.startswith("ready"), f"target said {line!r}")
        self.tids = [int(x.split(":")[0]) for x in line.split()[1:]]

    def finish(self):
        self.p.stdin.close()
        rc = self.p.wait(timeout=60)
        check(rc == 0, f"the target did not end well after the inspection: {rc}")


def run(inspector, *args, user=None):
    kw = {"user": user, "group": user} if user is not None else {}
    r = subprocess.run([inspector, *map(str, args)], capture_output=True, text=True,
                       timeout=60, **kw)
    return r.returncode, r.stdout, r.stderr


# Mirrors NAMES_THREAD and NAMES_KEY of target.c; the module's file name
# carries the same kinds of bytes (a newline the kernel writes as "\012"
# in /proc/PID/maps, which the inspector turns back into the newline).
NAMES_THREAD = b'\x1b]0;X\x07\n"\\\xff\xc2\x9bab'
NAMES_KEY = b'k\x1b[31m\n"\\\xc2\x9b\xc3\xa9'
NAMES_FILE = b'lib\x1b[1m"q\\\xc2\x9b\xc3\xa9\n.so'


def controls(text):
    """The C0 (but the line ends), DEL and C1 characters in text."""
    return [c for c in text if (ord(c) < 0x20 and c != "\n") or 0x7f <= ord(c) <= 0x9f]


def check_names(inspector, dlopen_target, library):
    d = tempfile.mkdtemp()
    try:
        path = os.path.join(os.fsencode(d), NAMES_FILE)
        shutil.copy(library, path)
        t = Target(dlopen_target, "names", "--lib", os.fsdecode(path))
        for args in ([], ["--json"]):
            r = subprocess.run([inspector, *args, str(t.p.pid)], capture_output=True, timeout=60)
            check(r.returncode == 0, f"names {args}: exit {r.returncode}: {r.stderr!r}")
            out = r.stdout.decode("utf-8")  # fails on a byte that is not UTF-8
            bad = controls(out)
            check(not bad, f"names {args}: control characters {bad!r} in\n{out}")
            if args:
                doc = json.loads(out)
                th = {x["tid"]: x for x in doc["threads"]}[t.tids[0]]
                check(th["name"] == NAMES_THREAD.decode("latin-1"),
                      f"thread name {th['name']!r}")
                check(th["attributes"] == [{"index": 0, "key": NAMES_KEY.decode(), "value": "v"}],
                      f"key {th['attributes']!r}")
                check(doc["modules"][0]["path"] == os.fsdecode(path),
                      f"module path {doc['modules'][0]['path']!r}")
            else:
                line = [l for l in out.splitlines() if l.startswith(f"{t.tids[0]} ")]
                check(len(line) == 1 and
                      "\\x1b]0;X\\x07\\x0a\\x22\\x5c\\xff\\xc2\\x9bab" in line[0] and
                      'k\\x1b[31m\\x0a\\x22\\x5c\\xc2\\x9b\u00e9="v"' in line[0],
                      f"names table line: {line}")
                check('lib\\x1b[1m\\x22q\\x5c\\xc2\\x9b\u00e9\\x0a.so' in out,
                      f"module path in the table:\n{out}")
        t.finish()
    finally:
        shutil.rmtree(d)
    print("hostile thread, key and module names: escaped in the table, "
          "given back by the JSON; no control byte printed")


def main(argv):
    if len(argv) >= 8 and argv[6] == "--skip":
        print(f"SKIP: {argv[7]}")
        return 77
    if len(argv) != 6:
        print(__doc__, file=sys.stderr)
        return 2
    inspector, target, dlopen_target, noaccess, library = argv[1:6]
    for f in (inspector, target, dlopen_target):
        check(os.access(f, os.X_OK), f"{f} is not an executable")

    t = Target(target, "values")
    # JSON: one object per read, exactly the published values.
    rc, out, err = run(inspector, "--json", t.p.pid)
    check(rc == 0, f"--json exited {rc}: {err}")
    doc = json.loads(out)
    check(doc["pid"] == t.p.pid and doc["process_context"] is True, "header fields")
    check(doc["modules"][0]["model"] == "tlsdesc-static", f"model {doc['modules'][0]}")
    by_tid = {th["tid"]: th for th in doc["threads"]}
    check(len(by_tid) >= EXPECTED_THREADS + 1, f"{len(by_tid)} threads")
    check(by_tid[t.p.pid]["status"] == "no-context", "main thread")
    for i, tid in enumerate(t.tids):
        th = by_tid[tid]
        if i == IDLE:
            check(th["status"] == "no-context" and th["name"] == f"idle-{i}", f"idle: {th}")
            continue
        check(th["status"] == "ok" and th["name"] == f"values-{i}", f"thread {i}: {th}")
        want = expected(i)
        for k, v in want.items():
            check(th[k] == v, f"thread {i}: {k} is {th[k]!r}, expected {v!r}")
        check(th["anomalies"] == [], f"thread {i}: anomalies {th['anomalies']}")
        # Every index the target uses is in its key map: nothing ignored.
        check(th["unmapped"] == 0, f"thread {i}: unmapped {th['unmapped']}")
    print(f"--json: {EXPECTED_THREADS - 1} records exactly as published")

    # The table: one line per thread, keys by name.
    rc, out, err = run(inspector, t.p.pid)
    check(rc == 0, f"table exited {rc}: {err}")
    line = [l for l in out.splitlines() if f" values-0 " in l]
    check(len(line) == 1, f"no line for values-0 in:\n{out}")
    e = expected(0)
    check(e["trace_id"] in line[0] and e["span_id"] in line[0] and
          'http.route="GET /a"' in line[0] and 'worker.index="0"' in line[0],
          f"table line: {line[0]}")
    check("(no-context)" in out, "no-context threads shown")

    # Repeat.
    rc, out, err = run(inspector, "--json", "--count", 3, "--interval", "0.05", t.p.pid)
    lines = out.splitlines()
    check(rc == 0 and len(lines) == 3, f"--count 3: exit {rc}, {len(lines)} lines")
    check(all(json.loads(l)["pid"] == t.p.pid for l in lines), "--count 3 output")
    print("table and --count 3 as expected")

    # No permission (root can drop it; others cannot test it here).
    if os.geteuid() == 0:
        rc, out, err = run(inspector, t.p.pid, user=65534)
        check(rc == 4 and "ptrace" in err, f"unprivileged: exit {rc}, stderr {err!r}")
        print("unprivileged: exit 4 with an explanation")
    else:
        print("not root: the permission case is not tried here")
    t.finish()

    # Usage errors, a process that does not exist, one without the slot.
    for args in ([], ["abc"], ["--count", "x", "1"], ["--bogus", "1"], ["1", "2"]):
        rc, _, _ = run(inspector, *args)
        check(rc == 2, f"{args}: exit {rc}, expected 2")
    gone = subprocess.Popen(["true"])
    gone.wait()
    rc, _, err = run(inspector, gone.pid)
    check(rc == 3 and "no such process" in err, f"exited process: exit {rc}, {err!r}")
    rc, _, err = run(inspector, os.getpid())
    check(rc == 5 and "otel_thread_ctx_v1" in err, f"no slot: exit {rc}, {err!r}")
    t = Target(dlopen_target, "manual", "--lib", noaccess)
    rc, _, err = run(inspector, t.p.pid)
    check(rc == 6 and "access model" in err, f"unsupported model: exit {rc}, {err!r}")
    t.finish()
    print("exit codes 2, 3, 5 and 6 as documented")

    # Broken records: reported, exit 8, the target unharmed.
    t = Target(target, "hostile")
    rc, out, err = run(inspector, "--json", t.p.pid)
    check(rc == 8 and "break" in err, f"hostile: exit {rc}, {err!r}")
    doc = json.loads(out)
    status = sorted(th["status"] for th in doc["threads"])
    check(status.count("unreadable") == 1 and status.count("misaligned") == 1 and
          status.count("invalid") == 1, f"hostile statuses {status}")
    rc, out, err = run(inspector, t.p.pid)
    check(rc == 8 and "attrs_data_size 2000 > 612" in out and "truncated entry" in out,
          f"hostile table: exit {rc}\n{out}")
    t.finish()
    print("broken records: exit 8, each one named; the target kept running")
    check_names(inspector, dlopen_target, library)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except (Failure, subprocess.TimeoutExpired, KeyError, ValueError) as e:
        print(f"FAIL: {e}", file=sys.stderr)
        sys.exit(1)
