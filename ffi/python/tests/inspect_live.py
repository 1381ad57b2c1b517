#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The reading side of the Python binding (otel_thread_ctx.inspect) against
a live child: a Python process that publishes a process context and, on
worker threads, thread contexts, read from outside by this one (its
parent, which ptrace allows under Yama's ptrace_scope 1 too).

Exits 77 (SKIP) when OTEL_TEST_NO_PTRACE gives a reason the inspector
cannot work (meson test sets it under qemu-user, where ptrace does not).

usage: inspect_live.py [unittest arguments]
"""

import os
import subprocess
import sys
import unittest

REASON = os.environ.get("OTEL_TEST_NO_PTRACE")
if REASON and __name__ == "__main__":
    print("skip: " + REASON)
    sys.exit(77)

import otel_thread_ctx as otc  # noqa: E402
from otel_thread_ctx import inspect  # noqa: E402


def exec_done(pid: int, name: str) -> bool:
    """Waits until process `pid` runs program `name` and sleeps in it (its
    exec is over: the kernel names the process after the program, and it
    sleeps in no exec); False if it ends first."""
    while True:
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
                stat = f.read()
        except OSError:
            return False
        comm, _, rest = stat.partition("(")[2].rpartition(")")
        state = rest.split()[0] if rest.split() else "X"
        if state in "ZXx":
            return False
        if comm == name and state == "S":
            return True
        os.sched_yield()


def mapped_files(pid: int) -> "set[str]":
    """The paths of the files process `pid` maps."""
    with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as f:
        return {fields[5].rstrip("\n") for fields in (line.split(None, 5) for line in f)
                if len(fields) == 6 and fields[5].startswith("/")}


TRACE = bytes.fromhex("4bf92f3577b34da6a3ce929d0e0e4736")

# The child.  Workers 1..N each publish their own span, with the route
# attribute; two more attach one context, which the main thread then
# destroys (they keep publishing their copies); one publishes nothing.  It
# prints "ready" and the thread ids, then until stdin closes takes commands
# from it: "load PATH" loads the shared library PATH (dlopen) and prints
# "loaded".
CHILD = r"""
import ctypes, os, sys, threading
import otel_thread_ctx as otc
route = otc.key_register("http.route")
method = otc.key_register("http.method")
otc.process.publish({"service.name": "inspect-live", "process.pid": os.getpid()})
n = int(sys.argv[1])
trace = bytes.fromhex("4bf92f3577b34da6a3ce929d0e0e4736")
shared = otc.Context(trace, bytes([0xee]) * 8, 1, {route: "task"})
ready = threading.Barrier(n + 4)
done = threading.Event()
tids = {}

def worker(i):
    ctx = otc.Context(trace, bytes([i]) * 8, 1, {route: "/w/%d" % i, method: "GET"})
    with ctx:
        tids["w%d" % i] = threading.get_native_id()
        ready.wait()
        done.wait()

def task(name):
    with shared:
        tids[name] = threading.get_native_id()
        ready.wait()
        done.wait()

def idle():
    tids["idle"] = threading.get_native_id()
    ready.wait()
    done.wait()

threads = [threading.Thread(target=worker, args=(i,)) for i in range(1, n + 1)]
threads += [threading.Thread(target=task, args=(n,)) for n in ("t1", "t2")]
threads += [threading.Thread(target=idle)]
for t in threads:
    t.start()
ready.wait()
shared.destroy()
print("ready", " ".join("%s=%d" % kv for kv in sorted(tids.items())), flush=True)
loaded = []
for line in sys.stdin:
    command, _, path = line.rstrip("\n").partition(" ")
    if command == "load":
        loaded.append(ctypes.CDLL(path))
        print("loaded", flush=True)
done.set()
for t in threads:
    t.join()
"""

WORKERS = 4


class Child:
    def __init__(self):
        python = os.environ.get("OTEL_TEST_PYTHON", "").split() or [sys.executable]
        self.proc = subprocess.Popen(python + ["-c", CHILD, str(WORKERS)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True)
        line = self.proc.stdout.readline().split()
        if not line or line[0] != "ready":
            self.proc.kill()
            raise RuntimeError("the child did not start: %r" % line)
        self.tids = {k: int(v) for k, v in (w.split("=") for w in line[1:])}

    def load(self, path):
        """Has the child load the shared library `path`."""
        self.proc.stdin.write("load %s\n" % path)
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if line != "loaded\n":
            raise RuntimeError("the child did not load %s: %r" % (path, line))

    def close(self):
        self.proc.stdin.close()
        rc = self.proc.wait(60)
        self.proc.stdout.close()
        if rc != 0:
            raise RuntimeError("the child exited %d" % rc)


class Live(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.child = Child()
        cls.pid = cls.child.proc.pid

    @classmethod
    def tearDownClass(cls):
        cls.child.close()

    def test_process_context_of_the_child(self):
        ctx = inspect.read_process(self.pid)
        self.assertEqual(ctx.resource, {"service.name": "inspect-live", "process.pid": self.pid})
        self.assertEqual(ctx.schema_version, "tlsdesc_v1_dev")
        self.assertEqual(ctx.key_map, ("http.route", "http.method"))
        self.assertNotEqual(ctx.mapping_address, 0)
        again = inspect.read_process_at(self.pid, ctx.mapping_address)
        self.assertEqual(again.payload, ctx.payload)

    def test_open_finds_the_module_and_the_key_map(self):
        with inspect.Inspector(self.pid) as insp:
            self.assertEqual(insp.pid, self.pid)
            self.assertEqual(insp.libc, inspect.Libc.GLIBC)
            self.assertGreaterEqual(len(insp.modules), 1)
            module = insp.modules[0]
            self.assertIn("libotel-thread-ctx", module.path)
            self.assertIsInstance(module.model, inspect.Model)
            self.assertIn(module.model_name, ("tlsdesc-static", "tlsdesc-dynamic"))
            self.assertEqual(insp.key_names, ("http.route", "http.method"))
            self.assertEqual(insp.key_count(), 2)
            self.assertEqual(insp.key_name(1), "http.method")
            self.assertIsNone(insp.key_name(2))
            self.assertIsNone(insp.process_context_error)
            assert insp.process_context is not None
            self.assertEqual(insp.process_context.resource["service.name"], "inspect-live")

    def test_every_thread_as_published(self):
        with inspect.Inspector(self.pid) as insp:
            threads = {t.tid: t for t in insp.threads()}
        self.assertTrue(set(self.child.tids.values()) <= set(threads), threads.keys())
        for i in range(1, WORKERS + 1):
            t = threads[self.child.tids["w%d" % i]]
            self.assertEqual(t.status, 0, t.error)
            self.assertIsNone(t.error)
            rec = t.record
            assert rec is not None
            self.assertEqual((rec.trace_id, rec.span_id, rec.flags), (TRACE, bytes([i]) * 8, 1))
            self.assertEqual(dict(rec.named_attrs()),
                             {"http.route": "/w/%d" % i, "http.method": "GET"})
            self.assertEqual(dict(rec.attrs), {0: "/w/%d" % i, 1: "GET"})
            self.assertIn("'http.route': '/w/%d'" % i, repr(rec))
            self.assertNotEqual(t.record_address, 0)
            self.assertNotEqual(t.slot_address, 0)
            self.assertEqual(t.anomalies, 0)
        shared = [threads[self.child.tids[n]].record for n in ("t1", "t2")]
        self.assertEqual(shared[0], shared[1])
        self.assertNotEqual(threads[self.child.tids["t1"]].record_address,
                            threads[self.child.tids["t2"]].record_address,
                            "one context, destroyed since: each thread publishes its copy")
        assert shared[0] is not None
        self.assertEqual(dict(shared[0].named_attrs()), {"http.route": "task"})
        idle = threads[self.child.tids["idle"]]
        self.assertEqual(idle.status, otc.Error.ENOCTX)
        self.assertIsNone(idle.record)
        assert idle.error is not None
        self.assertEqual(idle.error.name, "ENOCTX")

    def test_one_thread(self):
        tid = self.child.tids["w2"]
        with inspect.Inspector(self.pid) as insp:
            t = insp.thread(tid)
            self.assertEqual(t.tid, tid)
            assert t.record is not None
            self.assertEqual(t.record.span_id, bytes([2]) * 8)
            self.assertEqual(insp.thread(os.getpid()).status, inspect.Error.ESRCH,
                             "not a thread of the child")
        with self.assertRaises(ValueError):
            insp.threads()  # closed

    def test_a_fresh_inspector_has_the_maps_signature(self):
        signature = inspect.maps_signature(self.pid)
        self.assertIsInstance(signature, int)
        self.assertTrue(0 <= signature < 1 << 64, signature)
        with inspect.Inspector(self.pid) as insp:
            self.assertEqual(insp.signature, signature)
        self.assertEqual(inspect.maps_signature(self.pid), signature,
                         "the child loaded nothing meanwhile")
        with self.assertRaises(ValueError):
            _ = insp.signature  # closed


class ModuleLoaded(unittest.TestCase):
    """The maps signature of a child (its own, not Live's) that loads a
    library it did not have: libotel-thread-ctx-inspect, which it never
    imports."""

    def test_a_library_loaded_changes_the_signature(self):
        library = [p for p in mapped_files(os.getpid()) if "libotel-thread-ctx-inspect" in p]
        self.assertEqual(len(library), 1, library)
        child = Child()
        pid = child.proc.pid
        try:
            self.assertNotIn(library[0], mapped_files(pid))
            before = inspect.maps_signature(pid)
            with inspect.Inspector(pid) as old:
                self.assertEqual(old.signature, before)
                child.load(library[0])
                self.assertIn(library[0], mapped_files(pid))
                after = inspect.maps_signature(pid)
                self.assertNotEqual(after, before, "a module loaded, the same signature")
                with inspect.Inspector(pid) as new:
                    self.assertEqual(new.signature, after)
                self.assertEqual(old.signature, before, "the signature as the old one was opened")
        finally:
            child.close()


class Errors(unittest.TestCase):
    def assertCode(self, code, function, *args):
        with self.assertRaises(inspect.InspectError) as cm:
            function(*args)
        self.assertEqual(cm.exception.code, code)
        self.assertEqual(cm.exception.errno, code)
        self.assertEqual(cm.exception.strerror, inspect.strerror(code))
        return cm.exception

    def test_a_process_without_the_library(self):
        sleeper = subprocess.Popen(["sleep", "60"])
        try:
            # Popen may return while the child is still a fork of this
            # process, with this process's memory and libraries (seen in the
            # aarch64 machine: 35 times in 300); it is "a process without
            # the library" once it runs sleep.
            self.assertTrue(exec_done(sleeper.pid, "sleep"), "sleep never ran")
            e = self.assertCode(inspect.Error.ENOSLOT, inspect.Inspector, sleeper.pid)
            self.assertEqual(e.name, "ENOSLOT")
            self.assertIn("ENOSLOT", str(e))
            self.assertCode(inspect.Error.ENOENT, inspect.read_process, sleeper.pid)
        finally:
            sleeper.kill()
            sleeper.wait()

    def test_no_such_process(self):
        gone = subprocess.Popen(["true"])
        gone.wait()
        self.assertCode(inspect.Error.ESRCH, inspect.Inspector, gone.pid)
        self.assertCode(inspect.Error.ESRCH, inspect.read_process, gone.pid)
        with self.assertRaises(ValueError):
            inspect.Inspector(-1)

    def test_maps_signature_of_no_process(self):
        gone = subprocess.Popen(["true"])
        gone.wait()
        e = self.assertCode(inspect.Error.ESRCH, inspect.maps_signature, gone.pid)
        self.assertEqual((e.name, e.function), ("ESRCH", "maps_signature"))
        # 0 is not this process here (as for Inspector, unlike read_process).
        self.assertCode(inspect.Error.ESRCH, inspect.maps_signature, 0)
        with self.assertRaises(ValueError):
            inspect.maps_signature(-1)
        with self.assertRaises(TypeError):
            inspect.maps_signature(str(os.getpid()))


class HostileRecords(unittest.TestCase):
    """Records no careful writer publishes (tests/inspect/expected.h, the
    "hostile" mode of the C inspector tests' target, which meson test names
    in OTEL_TEST_HOSTILE_TARGET): each thread's reading says what is wrong
    with its record, and none fails the others or the Inspector."""

    def test_each_broken_record_read_as_what_it_is(self):
        target = os.environ.get("OTEL_TEST_HOSTILE_TARGET")
        if not target:
            self.skipTest("OTEL_TEST_HOSTILE_TARGET: the C tests' inspect-target-shared "
                          "(meson test sets it where they are built)")
        child = subprocess.Popen([target, "hostile"], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True)
        try:
            line = child.stdout.readline().split()
            # "ready TID:SLOT ..." in the order of expected.h's HOSTILE_* kinds.
            self.assertEqual(line[:1], ["ready"])
            tids = [int(w.split(":")[0]) for w in line[1:]]
            self.assertEqual(len(tids), 7, line)
            with inspect.Inspector(child.pid) as insp:
                (oversized, truncated, duplicate, invalid, unmapped, misaligned,
                 half_ids) = [insp.thread(t) for t in tids]
        finally:
            child.stdin.close()
            ended = child.wait()
        # The target exits 0 only if every thread kept going.
        self.assertEqual(ended, 0, "the target did not end well after the reading")

        self.assertEqual(oversized.status, 0)
        # (Read as 612 bytes, it cuts an entry too.)
        self.assertTrue(oversized.anomalies & inspect.OVERSIZED, oversized.anomalies)
        self.assertEqual(oversized.attrs_data_size, 2000)
        self.assertEqual(oversized.record.raw_attrs[1], b"y" * 253)
        self.assertEqual(oversized.record.raw_attrs[2], b"z" * 200)

        self.assertEqual(truncated.status, 0)
        self.assertEqual(truncated.anomalies, inspect.TRUNCATED_ENTRY)
        self.assertEqual(dict(truncated.record.raw_attrs), {1: b"abc"})

        self.assertEqual(duplicate.status, 0)
        self.assertEqual(duplicate.anomalies, 0)
        self.assertEqual(duplicate.record.raw_attrs[1], b"last")  # the last wins
        self.assertEqual(duplicate.record.raw_attrs[0], b"k")

        for t, code in ((invalid, otc.Error.EINVALID), (unmapped, inspect.Error.EFAULT),
                        (misaligned, inspect.Error.EFORMAT)):
            self.assertEqual(t.status, code, t)
            self.assertIsNone(t.record)
            self.assertEqual(t.error.code, code)
        self.assertNotEqual(unmapped.record_address, 0)
        self.assertEqual(misaligned.record_address % 2, 1)

        self.assertEqual(half_ids.status, 0)
        self.assertEqual(half_ids.anomalies, inspect.HALF_IDS)
        self.assertEqual(half_ids.record.span_id, bytes(8))
        self.assertNotEqual(half_ids.record.trace_id, bytes(16))


if __name__ == "__main__":
    unittest.main()
