#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every reader against hostile targets (target.c): what it leaves behind.

usage: hostile.py SCENARIO --inspector CLI --target TARGET --reader READ
                  [--python PYTHON | --no-python REASON] [--skip REASON]

The readers: the command line once and watching (--count 0, ended by
SIGINT or SIGTERM), the C library (read.c) and the Python Inspector
(pyread.py).  After each, no thread of the target may be in tracing stop
('t' in /proc/PID/task/TID/stat), every thread's TracerPid must be 0, and
the target must run on (each of its threads makes progress: target.c's
"check").  The scenarios:

  vfork     a thread that spends 3.5 s of every 3.6 s in vfork() (it cannot
            stop for a read; longer than a read's 1 s and a close's 1 s
            together): watches and repeated reads must never find it still
            attached ("denied") nor hold it in tracing stop for a second
  sigstop   a process stopped by SIGSTOP: read, it stays stopped ('T', not
            't') and runs on after SIGCONT
  churn     threads created and exiting during the reads
  blocksig  threads that block every signal
  kill      a reader killed with SIGKILL in the middle of its reads: the
            kernel detaches (asserted)
  many      4,200 threads: the command line's --json reads them all, says
            how many there were and how many it read, --max-threads 10
            reads 10 and exits 9; the Python Inspector the same
            (threads().total, .partial)

Exit status 77 (skip) with a reason where ptrace is not permitted.
"""
import argparse
import json
import os
import random
import signal
import subprocess
import sys
import time


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def skip(reason):
    print("skip:", reason)
    sys.exit(77)


class Target:
    def __init__(self, path, *kinds):
        self.p = subprocess.Popen([path, *kinds], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True)
        line = self.p.stdout.readline()
        check(line.startswith("ready"), f"the target said {line!r}")
        self.pid = self.p.pid
        self.tids = {name: int(tid) for tid, name in
                     (x.split(":", 1) for x in line.split()[1:])}

    def tasks(self):
        try:
            return [int(t) for t in os.listdir(f"/proc/{self.pid}/task")]
        except FileNotFoundError:
            return []

    def state(self, tid):
        """(state letter, TracerPid) of a thread, or None when it is gone."""
        try:
            with open(f"/proc/{self.pid}/task/{tid}/stat") as f:
                stat = f.read()
            with open(f"/proc/{self.pid}/task/{tid}/status") as f:
                tracer = next(int(line.split()[1]) for line in f
                              if line.startswith("TracerPid:"))
        except (FileNotFoundError, ProcessLookupError, StopIteration):
            return None
        return stat[stat.rindex(")") + 2], tracer

    def assert_clean(self, after):
        """No thread in tracing stop, none traced."""
        for tid in self.tasks():
            s = self.state(tid)
            if s is None:
                continue  # exited meanwhile (churn)
            check(s[0] != "t", f"after {after}: thread {tid} is in tracing stop (TracerPid {s[1]})")
            check(s[1] == 0, f"after {after}: thread {tid} is traced by {s[1]} (state {s[0]})")

    def assert_runs(self, after):
        self.p.stdin.write("check\n")
        self.p.stdin.flush()
        answer = self.p.stdout.readline().strip()
        check(answer == "ok", f"after {after}: the target does not run on: {answer!r}")

    def finish(self):
        self.p.stdin.close()
        rc = self.p.wait(timeout=60)
        check(rc == 0, f"the target ended with {rc}")

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


class Readers:
    def __init__(self, args):
        self.a = args

    def cli(self, pid, *opts):
        r = subprocess.run([self.a.inspector, "--json", *map(str, opts), str(pid)],
                           capture_output=True, text=True, timeout=300)
        return r.returncode, [json.loads(line) for line in r.stdout.splitlines() if line]

    def watch(self, target, sig, seconds, watched=None):
        """The command line watching (--count 0 --interval 0.2) for
        `seconds`, then sent `sig`.  Meanwhile the thread `watched` must
        never stay in tracing stop for a second."""
        p = subprocess.Popen([self.a.inspector, "--json", "--count", "0", "--interval", "0.2",
                              str(target.pid)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        end = time.monotonic() + seconds
        stopped_since = None
        while time.monotonic() < end:
            s = target.state(watched) if watched else None
            now = time.monotonic()
            if s is not None and s[0] == "t":
                stopped_since = stopped_since or now
                check(now - stopped_since < 1.0,
                      f"watching: thread {watched} held in tracing stop for "
                      f"{now - stopped_since:.1f} s")
            else:
                stopped_since = None
            time.sleep(0.01)
        p.send_signal(sig)
        out, err = p.communicate(timeout=60)
        check(p.returncode == -sig, f"the watch did not end by {signal.Signals(sig).name}: "
              f"exit {p.returncode}: {err}")
        # The last line may be cut off by the signal.
        rounds = []
        for line in out.splitlines():
            try:
                rounds.append(json.loads(line))
            except json.JSONDecodeError:
                pass
        return rounds

    def c(self, pid, rounds, interval_ms=0):
        return self._run([self.a.reader, str(pid), str(rounds), str(interval_ms)])

    def python(self, pid, rounds, interval_ms=0):
        return self._run([*self.a.python.split(), self.a.pyread, str(pid), str(rounds),
                          str(interval_ms)])

    @staticmethod
    def _run(cmd):
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        check(r.returncode == 0, f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr}")
        return r.stdout

    def statuses(self, out, tid):
        """The statuses thread `tid` had, round by round, in read.c's or
        pyread.py's output."""
        return [int(line.split()[1]) for line in out.splitlines()
                if line.split()[:1] == [str(tid)]]


EPERM = -1
ETIMEDOUT = -110


def every_reader(readers, target, what, python):
    """One-shot CLI, watch (SIGINT), C library, Python: clean after each."""
    rc, docs = readers.cli(target.pid)
    check(rc in (0, 9), f"{what}: the command line exited {rc}")
    target.assert_clean(f"{what}: the command line")
    readers.watch(target, signal.SIGINT, 1.5)
    target.assert_clean(f"{what}: a watch ended by SIGINT")
    readers.watch(target, signal.SIGTERM, 1.5)
    target.assert_clean(f"{what}: a watch ended by SIGTERM")
    readers.c(target.pid, 3)
    target.assert_clean(f"{what}: the C library")
    if python:
        readers.python(target.pid, 3)
        target.assert_clean(f"{what}: the Python Inspector")


def scenario_vfork(readers, a):
    t = Target(a.target, "vfork=3500", "busy")
    try:
        tid = t.tids["vforker"]
        for sig in (signal.SIGINT, signal.SIGTERM):
            rounds = readers.watch(t, sig, 8.0, watched=tid)
            seen = [next((x["status"] for x in r["threads"] if x["tid"] == tid), None)
                    for r in rounds]
            check("denied" not in seen,
                  f"watch: the vforking thread was left attached by an earlier round: {seen}")
            check(len(rounds) >= 3, f"watch: only {len(rounds)} readings in 8 s: {seen}")
            t.assert_clean(f"a watch ended by {signal.Signals(sig).name}")
            t.assert_runs(f"a watch ended by {signal.Signals(sig).name}")
            print(f"watch ({signal.Signals(sig).name}): the vforking thread read as {seen}")
        for name, run in (("the C library", readers.c),
                          ("the Python Inspector", readers.python if a.python else None)):
            if run is None:
                continue
            out = run(t.pid, 5, 300)
            seen = readers.statuses(out, tid)
            check(EPERM not in seen, f"{name}: the vforking thread was left attached by an "
                  f"earlier round: {seen}")
            t.assert_clean(name)
            t.assert_runs(name)
            print(f"{name}: the vforking thread read as {seen}")
        rc, docs = readers.cli(t.pid)
        check(rc in (0, 9), f"the command line exited {rc}")
        doc = docs[0]
        status = next(x["status"] for x in doc["threads"] if x["tid"] == tid)
        check((rc == 9) == (status == "not-stopped") and
              doc["partial"] == (status == "not-stopped") and
              doc["threads_not_stopped"] == (status == "not-stopped"),
              f"one reading: exit {rc}, vforker {status}, partial {doc['partial']}")
        t.assert_clean("the command line")
        t.assert_runs("the command line")
        print(f"one reading: vforker {status}, exit {rc}")
        t.finish()
    finally:
        t.kill()


def scenario_sigstop(readers, a):
    t = Target(a.target, "busy", "blocksig")
    try:
        os.kill(t.pid, signal.SIGSTOP)
        end = time.monotonic() + 10
        while any((t.state(x) or "T")[0] != "T" for x in t.tasks()) and time.monotonic() < end:
            time.sleep(0.01)
        rc, docs = readers.cli(t.pid)
        check(rc == 0, f"the command line exited {rc} on a stopped process")
        check(all(x["status"] in ("ok", "no-context") for x in docs[0]["threads"]),
              f"statuses {[x['status'] for x in docs[0]['threads']]}")
        readers.c(t.pid, 2)
        if a.python:
            readers.python(t.pid, 2)
        t.assert_clean("reading a stopped process")
        states = {t.state(x)[0] for x in t.tasks()}
        check(states == {"T"}, f"the stopped process's threads are now {states}, not all T")
        os.kill(t.pid, signal.SIGCONT)
        t.assert_runs("SIGCONT")
        print("a process stopped by SIGSTOP: read, still stopped (T), runs on after SIGCONT")
        t.finish()
    finally:
        t.kill()


def scenario_churn(readers, a):
    t = Target(a.target, "churn", "busy")
    try:
        every_reader(readers, t, "churn", a.python)
        t.assert_runs("the readers")
        print("threads created and exiting during the reads: nothing left behind")
        t.finish()
    finally:
        t.kill()


def scenario_blocksig(readers, a):
    t = Target(a.target, "blocksig", "bytes")
    try:
        every_reader(readers, t, "blocksig", a.python)
        rc, docs = readers.cli(t.pid)
        for name in ("blocksig-0", "blocksig-1"):
            st = next(x["status"] for x in docs[0]["threads"] if x["tid"] == t.tids[name])
            check(st == "no-context", f"{name}: {st}")
        t.assert_runs("the readers")
        print("threads blocking every signal: read, nothing left behind")
        t.finish()
    finally:
        t.kill()


def scenario_kill(readers, a):
    t = Target(a.target, "churn", "vfork", "many=200", "busy")
    try:
        rng = random.Random(4947)
        for i in range(6):
            cmd = ([a.reader, str(t.pid), "0"] if i % 2 == 0 or not a.python else
                   [*a.python.split(), a.pyread, str(t.pid), "0"])
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            # Into its first reading, or a later one.
            seen = 0
            while seen < 1 + i // 2:
                line = p.stdout.readline()
                check(line != "", "the reader ended before it was killed")
                seen += line == "reading\n"
            time.sleep(rng.uniform(0, 0.03))
            traced = sum(1 for x in t.tasks() if (t.state(x) or ("", 0))[1] != 0)
            p.kill()
            p.wait()
            t.assert_clean(f"SIGKILL to {os.path.basename(cmd[-3])} (threads traced just "
                           f"before: {traced})")
            print(f"SIGKILL to {os.path.basename(cmd[-3])} in reading {1 + i // 2}: "
                  f"{traced} thread(s) traced just before, none after")
        t.assert_runs("readers killed mid-read")
        print("readers killed with SIGKILL mid-read: the kernel detached every thread")
        t.finish()
    finally:
        t.kill()


def scenario_many(readers, a):
    n = 4200
    t = Target(a.target, "many=%d" % n, "busy")
    try:
        rc, docs = readers.cli(t.pid)
        doc = docs[0]
        check("threads_total" in doc, "the JSON does not say how many threads there were")
        check(doc["threads_total"] >= n + 2 and doc["threads_read"] == doc["threads_total"] and
              len(doc["threads"]) == doc["threads_total"] and doc["partial"] is False and rc == 0,
              f"--json: exit {rc}, total {doc['threads_total']}, read {doc['threads_read']}, "
              f"{len(doc['threads'])} in the array, partial {doc['partial']}")
        print(f"--json: {doc['threads_read']} of {doc['threads_total']} threads read")
        rc, docs = readers.cli(t.pid, "--max-threads", 10)
        doc = docs[0]
        check(rc == 9 and doc["threads_read"] == 10 and len(doc["threads"]) == 10 and
              doc["threads_total"] >= n + 2 and doc["partial"] is True,
              f"--max-threads 10: exit {rc}, read {doc['threads_read']} of "
              f"{doc['threads_total']}, partial {doc['partial']}")
        print("--max-threads 10: 10 read, partial, exit 9")
        t.assert_clean("the command line")
        if a.python:
            code = ("import sys\nfrom otel_thread_ctx.inspect import Inspector\n"
                    "with Inspector(int(sys.argv[1])) as i:\n"
                    "    a = i.threads()\n    b = i.threads(max_threads=10)\n"
                    "    print(a.total, len(a), a.partial, b.total, len(b), b.partial)\n")
            out = subprocess.run([*a.python.split(), "-c", code, str(t.pid)], capture_output=True,
                                 text=True, timeout=300)
            check(out.returncode == 0, f"python: {out.stderr}")
            total, read, partial, total10, read10, partial10 = out.stdout.split()
            check(int(total) >= n + 2 and int(read) == int(total) and partial == "False" and
                  int(read10) == 10 and int(total10) >= n + 2 and partial10 == "True",
                  f"Inspector.threads(): {out.stdout}")
            print(f"Inspector.threads(): {read} of {total}; max_threads=10: partial")
            t.assert_clean("the Python Inspector")
        t.assert_runs("the readers")
        t.finish()
    finally:
        t.kill()


def ptrace_permitted(a):
    t = Target(a.target, "busy")
    try:
        r = subprocess.run([a.inspector, str(t.pid)], capture_output=True, text=True, timeout=60)
        if r.returncode == 4:
            return r.stderr.strip().splitlines()[0]
        check(r.returncode == 0, f"the inspector exited {r.returncode}: {r.stderr}")
        t.finish()
        return None
    finally:
        t.kill()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario")
    ap.add_argument("--inspector", required=True)
    ap.add_argument("--target", required=True)
    ap.add_argument("--reader", required=True)
    ap.add_argument("--python")
    ap.add_argument("--no-python")
    ap.add_argument("--skip")
    a = ap.parse_args()
    if a.skip:
        skip(a.skip)
    a.pyread = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pyread.py")
    if a.no_python:
        print(f"the Python Inspector left out: {a.no_python}")
        a.python = None
    why = ptrace_permitted(a)
    if why is not None:
        skip(f"ptrace is not permitted here: {why}")
    try:
        globals()["scenario_" + a.scenario](Readers(a), a)
    except Failure as e:
        print("FAIL:", e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
