#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""otel-thread-ctx-check --pid against writers that are not this library.

usage: doctor.py CHECKER FOREIGN_WRITER FOREIGN_WRITER_UNEXPORTED SERVICE [--skip REASON]

Each mode of foreign-writer.c breaks one rule; the check must report it,
by its finding id, with the rule it cites, and exit 1 (a warning: exit 0).
The correct foreign writer and this project's own example service pass
with no finding above "info".  A process with no writer is "absent" (5), a
process the user may not trace an error (3) that says so, and processes
that exit during the check give a report or an error, never a crash or a
hang; every target must end well afterwards (no thread left stopped).
"""
import json
import os
import subprocess
import sys
import time

# mode: (finding id, its status, a word of the rule it cites, exit code)
BROKEN = {
    "misaligned": ("record-alignment", "fail", "OTEP 4947", 1),
    "valid0": ("record-valid", "fail", "OTEP 4947", 1),
    "span-only": ("record-ids", "fail", "OTEP 4947", 1),
    "attr-overrun": ("attrs-truncated", "fail", "OTEP 4947", 1),
    "key-past-map": ("attrs-key-index", "fail", "OTEP 4947", 1),
    "flags-no-ids": ("record-flags", "warn", "OTEP 4947", 0),
    "misnamed": ("pctx-mapping-name", "fail", "OTEP 4719", 1),
    "two-contexts": ("pctx-singleton", "warn", "OTEP 4719", 0),
    "big-payload": ("pctx-header", "fail", "OTEP 4719", 1),
}


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


class Target:
    def __init__(self, argv):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        line = self.p.stdout.readline().decode()
        check(line.startswith("ready"), f"{argv}: the target said {line!r}")

    def finish(self):
        self.p.stdin.close()
        rc = self.p.wait(timeout=60)
        check(rc == 0, f"the target did not end well after the check: {rc}")


def run(checker, pid, *args, user=None):
    kw = {"user": user, "group": user} if user is not None else {}
    r = subprocess.run([checker, *args, "--pid", str(pid)], capture_output=True, text=True,
                       timeout=120, **kw)
    return r.returncode, r.stdout, r.stderr


def report(checker, pid):
    rc, out, err = run(checker, pid, "--json")
    try:
        doc = json.loads(out)
    except json.JSONDecodeError as e:
        raise Failure(f"pid {pid}: not JSON ({e}): {out!r} {err!r}")
    check(doc["exit_code"] == rc, f"pid {pid}: exit {rc}, JSON says {doc['exit_code']}")
    return rc, doc


def above_info(doc):
    return [f for f in doc["findings"] if f["status"] in ("warn", "fail")]


def main(argv):
    if "--skip" in argv:
        print("SKIP:", argv[argv.index("--skip") + 1])
        return 77
    checker, writer, unexported, service = argv[:4]
    if os.geteuid() != 0:
        with open("/proc/sys/kernel/yama/ptrace_scope") as f:
            if f.read().strip() not in ("0",):
                print("SKIP: not root, and ptrace_scope forbids reading a child")
                return 77

    for mode, (fid, status, rule, code) in BROKEN.items():
        t = Target([writer, mode])
        rc, doc = report(checker, t.p.pid)
        found = [f for f in doc["findings"] if f["id"] == fid]
        check(found, f"{mode}: no finding {fid}: {doc['findings']}")
        check(found[0]["status"] == status, f"{mode}: {fid} is {found[0]['status']}")
        check(rule in (found[0]["rule"] or ""), f"{mode}: {fid} cites {found[0]['rule']!r}")
        check(found[0]["fix"], f"{mode}: {fid} says nothing of what to change")
        check(rc == code, f"{mode}: exit {rc}, expected {code}: {above_info(doc)}")
        # Nothing else above info, except what the broken rule entails.
        others = [f for f in above_info(doc) if f["id"] != fid]
        if mode == "misnamed":  # no context readers find: the threads' schema is missing
            others = [f for f in others if f["id"] != "pctx-missing"]
        check(not others, f"{mode}: other findings {others}")
        # The text form says the same.
        rc2, out, _ = run(checker, t.p.pid)
        check(rc2 == rc and fid in out and "rule:" in out, f"{mode}: text report {out!r}")
        t.finish()
        print(f"{mode}: {fid} ({status}), exit {rc}")

    # The slot defined but not exported: readers never find it.
    t = Target([unexported, "good"])
    rc, doc = report(checker, t.p.pid)
    ids = [f["id"] for f in above_info(doc)]
    check(rc == 1 and "slot-not-exported" in ids, f"unexported: exit {rc}, {ids}")
    check(not doc["slot"], "unexported: the slot is said to be found")
    t.finish()
    print("unexported: slot-not-exported, exit 1")

    # Correct writers, foreign and this project's: no finding above info.
    t = Target([writer, "good"])
    rc, doc = report(checker, t.p.pid)
    check(rc == 0 and not above_info(doc), f"good: exit {rc}, {above_info(doc)}")
    check(doc["threads_with_ids"] == 2 and doc["threads_with_attributes"] == 2 and
          doc["records_shown"], f"good: {doc['summary']}")
    pc = doc["process_context"]
    check(pc and pc["keys"] == ["http.route"] and pc["schema_version"] == "tlsdesc_v1_dev" and
          {"key": "service.name", "value": "foreign-service"} in pc["resource"],
          f"good: process context {pc}")
    # Three threads, and any the runtime adds (ThreadSanitizer's own).
    check(f"trace and span on 2 of {doc['threads']} threads" in doc["summary"] and
          doc["threads"] >= 3, doc["summary"])
    print("good:", doc["summary"])
    # Not permitted: a clear report (root can drop its rights).
    if os.geteuid() == 0:
        rc, out, err = run(checker, t.p.pid, user=65534)
        check(rc == 3 and "not permitted" in out, f"unprivileged: exit {rc}, {out!r}")
        rc, out, err = run(checker, t.p.pid, "--json", user=65534)
        check(rc == 3 and json.loads(out)["error"] == "not-permitted", f"unprivileged: {out!r}")
        print("unprivileged: exit 3, not permitted")
    t.finish()

    s = subprocess.Popen([service, "3", "30"], stdout=subprocess.PIPE)
    try:
        time.sleep(1.0)
        rc, doc = report(checker, s.pid)
        check(rc == 0 and not above_info(doc) and doc["records_shown"],
              f"service: exit {rc}, {above_info(doc)}")
        print("service:", doc["summary"])
    finally:
        s.kill()
        s.wait()

    # No writer at all.
    p = subprocess.Popen(["sleep", "60"])
    try:
        rc, doc = report(checker, p.pid)
        check(rc == 5 and doc["verdict"] == "absent" and not above_info(doc),
              f"no writer: exit {rc}, {doc}")
        print("no writer: absent, exit 5")
    finally:
        p.kill()
        p.wait()
    # No such process.
    gone = subprocess.Popen(["true"])
    gone.wait()
    rc, doc = report(checker, gone.pid)
    check(rc == 3 and doc["error"] == "no-process", f"gone: exit {rc}, {doc}")

    # Processes that exit while they are checked: a report or an error.
    codes = set()
    for i in range(8):
        t = Target([writer, "good"])
        c = subprocess.Popen([checker, "--json", "--pid", str(t.p.pid)], stdout=subprocess.PIPE,
                             text=True)
        time.sleep(0.002 * i)
        t.p.stdin.close()
        out, _ = c.communicate(timeout=120)
        check(c.returncode in (0, 1, 3, 5), f"exiting: exit {c.returncode}: {out!r}")
        json.loads(out)
        codes.add(c.returncode)
        check(t.p.wait(timeout=60) == 0, "exiting: the target did not end well")
    print("exiting during the check: exit codes", sorted(codes))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Failure as e:
        print("FAIL:", e)
        sys.exit(1)
