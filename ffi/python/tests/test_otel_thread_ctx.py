# SPDX-License-Identifier: Apache-2.0
"""The Python binding against the library named by $OTEL_THREAD_CTX_LIBRARY
(meson test sets it to the build's shared library)."""

import ctypes
import dataclasses
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import unittest

import otel_thread_ctx as otc
from otel_thread_ctx import Error, ThreadCtxError, _lib

TRACE = bytes.fromhex("4bf92f3577b34da6a3ce929d0e0e4736")
SPAN = bytes.fromhex("00f067aa0ba902b7")
CHILD = bytes.fromhex("1111111111111111")

_names = iter(range(10**6))


def fresh_key():
    """A key name no other test registers."""
    return otc.key_register("test.key.%d" % next(_names))


def _destroy_attached_elsewhere():
    """destroy() of a Context attached to another thread; then cleans up."""
    ctx = otc.Context(TRACE, SPAN)
    attached, release = threading.Event(), threading.Event()

    def hold():
        ctx.update_attach()
        attached.set()
        release.wait()
        otc.detach()

    t = threading.Thread(target=hold)
    t.start()
    attached.wait()
    try:
        ctx.destroy()
    finally:
        release.set()
        t.join()
        ctx.destroy()


class Clean(unittest.TestCase):
    """Every test starts and ends with nothing attached to this thread."""

    def setUp(self):
        self.assertIsNone(otc.current(), "a test left a context attached")

    def tearDown(self):
        otc.detach()

    def assertError(self, code, function, *args, **kwargs):
        with self.assertRaises(ThreadCtxError) as cm:
            function(*args, **kwargs)
        self.assertEqual(cm.exception.code, code)
        return cm.exception


class Loading(unittest.TestCase):
    def test_override_variable_is_what_was_loaded(self):
        self.assertEqual(otc.library_path, os.environ["OTEL_THREAD_CTX_LIBRARY"])

    def run_python(self, code, env):
        base = {k: v for k, v in os.environ.items()
                if k not in ("OTEL_THREAD_CTX_LIBRARY", "OTEL_THREAD_CTX_INSPECT_LIBRARY")}
        base.update(env)
        # OTEL_TEST_PYTHON: how meson test started this interpreter (under
        # an emulator in a cross build).
        python = os.environ.get("OTEL_TEST_PYTHON", "").split() or [sys.executable]
        return subprocess.run(python + ["-c", code], env=base,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, timeout=60)

    def test_pkg_config_finds_the_build_tree(self):
        pc_dir = os.environ.get("OTEL_TEST_PKG_CONFIG_PATH")
        if not pc_dir or shutil.which("pkg-config") is None:
            self.skipTest("no pkg-config, or OTEL_TEST_PKG_CONFIG_PATH not set")
        r = self.run_python("import otel_thread_ctx as o; print(o.library_path)",
                            {"PKG_CONFIG_PATH": pc_dir})
        self.assertEqual(r.returncode, 0, r.stderr)
        loaded = r.stdout.strip()
        self.assertTrue(os.path.isabs(loaded), loaded)
        self.assertEqual(os.path.realpath(loaded),
                         os.path.realpath(os.environ["OTEL_THREAD_CTX_LIBRARY"]))

    def test_pkg_config_finds_the_inspector(self):
        pc_dir = os.environ.get("OTEL_TEST_PKG_CONFIG_PATH")
        if not pc_dir or shutil.which("pkg-config") is None:
            self.skipTest("no pkg-config, or OTEL_TEST_PKG_CONFIG_PATH not set")
        r = self.run_python("import otel_thread_ctx.inspect as i; print(i.library_path)",
                            {"PKG_CONFIG_PATH": pc_dir})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(os.path.realpath(r.stdout.strip()),
                         os.path.realpath(os.environ["OTEL_THREAD_CTX_INSPECT_LIBRARY"]))

    def test_the_inspector_is_loaded_only_when_used(self):
        code = ("import otel_thread_ctx\n"
                "def loaded():\n"
                "    with open('/proc/self/maps') as f:\n"
                "        return 'libotel-thread-ctx-inspect' in f.read()\n"
                "print(loaded())\n"
                "import otel_thread_ctx.inspect\n"
                "print(loaded())\n")
        r = self.run_python(code, {"OTEL_THREAD_CTX_LIBRARY": os.environ["OTEL_THREAD_CTX_LIBRARY"],
                                   "OTEL_THREAD_CTX_INSPECT_LIBRARY":
                                       os.environ["OTEL_THREAD_CTX_INSPECT_LIBRARY"]})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split(), ["False", "True"])

    def test_bad_inspector_override_fails_only_the_inspector(self):
        r = self.run_python(
            "import otel_thread_ctx\nprint('writer loaded')\nimport otel_thread_ctx.inspect",
            {"OTEL_THREAD_CTX_LIBRARY": os.environ["OTEL_THREAD_CTX_LIBRARY"],
             "OTEL_THREAD_CTX_INSPECT_LIBRARY": "/nonexistent/libotel-thread-ctx-inspect.so.1"})
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("writer loaded", r.stdout)
        self.assertIn("ImportError", r.stderr)
        self.assertIn("OTEL_THREAD_CTX_INSPECT_LIBRARY=/nonexistent/", r.stderr)

    def test_bad_override_fails_without_fallback(self):
        r = self.run_python("import otel_thread_ctx",
                            {"OTEL_THREAD_CTX_LIBRARY": "/nonexistent/libotel-thread-ctx.so.1"})
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("ImportError", r.stderr)
        self.assertIn("/nonexistent/libotel-thread-ctx.so.1", r.stderr)

    def test_nothing_found_says_what_was_tried(self):
        r = self.run_python("import otel_thread_ctx",
                            {"PKG_CONFIG_PATH": "/nonexistent", "PKG_CONFIG_LIBDIR": "/nonexistent",
                             "LD_LIBRARY_PATH": ""})
        if r.returncode == 0:
            self.skipTest("the library is installed on this machine")
        self.assertIn("OTEL_THREAD_CTX_LIBRARY", r.stderr)
        self.assertIn("libotel-thread-ctx.so.1", r.stderr)

    def test_structs_match_the_header(self):
        # The values of the header's _Static_asserts.
        self.assertEqual(ctypes.sizeof(_lib.Record), 640)
        for field, offset in [("trace_id", 0), ("span_id", 16), ("valid", 24),
                              ("trace_flags", 25), ("attrs_data_size", 26),
                              ("attrs_data", 28)]:
            self.assertEqual(getattr(_lib.Record, field).offset, offset, field)
        self.assertEqual(ctypes.sizeof(_lib.Attr), 16)
        self.assertEqual(_lib.Attr.value.offset, 8)
        self.assertEqual(_lib.SelfCheck.reason.offset, 60)
        self.assertEqual(ctypes.sizeof(_lib.SelfCheck), 448)

    def test_structs_match_the_c_compiler(self):
        # OTEL_THREAD_CTX_C_LAYOUT: the command line of ffi/rust/layout.c as
        # Meson built it (through the exe wrapper in a cross build).
        command = os.environ.get("OTEL_THREAD_CTX_C_LAYOUT", "").split()
        if not command:
            self.skipTest("OTEL_THREAD_CTX_C_LAYOUT not set: no C layout to compare")
        env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
        out = subprocess.run(command, stdout=subprocess.PIPE, check=True, env=env,
                             text=True, timeout=60).stdout
        c = dict((k, int(v)) for k, v in (line.split(" ") for line in out.splitlines()))
        structs = {
            "record": _lib.Record, "attr": _lib.Attr, "attr_iter": _lib.AttrIter,
            "self_check": _lib.SelfCheck, "options": _lib.Options,
            "process_attr": _lib.ProcessAttr, "process_options": _lib.ProcessOptions,
            "process_info": _lib.ProcessInfo, "snapshot": _lib.Snapshot,
            "inspect_module": _lib.InspectModule, "inspect_info": _lib.InspectInfo,
            "inspect_thread": _lib.InspectThread,
        }
        for name, struct in structs.items():
            self.assertEqual(ctypes.sizeof(struct), c[name + ".size"], name)
            self.assertEqual(ctypes.alignment(struct), c[name + ".align"], name)
            for fname, _ in struct._fields_:
                key = "%s.%s" % (name, "size_field" if fname == "size" else fname)
                self.assertEqual(getattr(struct, fname).offset, c[key], key)

    def test_every_function_is_declared(self):
        for name in _lib._prototypes:
            f = getattr(_lib.lib, name)
            self.assertIsNotNone(f.argtypes, name)


class Errors(Clean):
    def test_error_carries_code_and_library_text(self):
        e = self.assertError(Error.EBUSY, _destroy_attached_elsewhere)
        self.assertIsInstance(e, OSError)
        self.assertEqual(e.errno, -16)
        self.assertEqual(e.name, "EBUSY")
        self.assertEqual(e.function, "destroy")
        text = _lib.lib.otel_thread_ctx_strerror(-16).decode()
        self.assertEqual(e.strerror, text)
        self.assertIn(text, str(e))

    def test_every_code_has_a_text(self):
        texts = {otc.strerror(code) for code in Error}
        self.assertEqual(len(texts), len(Error))
        self.assertNotIn("unknown", otc.strerror(Error.EFROZEN).lower())

    def test_unknown_code_keeps_its_number(self):
        e = ThreadCtxError(-999)
        self.assertIsNone(e.name)
        self.assertEqual(e.errno, -999)
        self.assertTrue(e.strerror)


class Contexts(Clean):
    def test_attach_publishes_committed_record(self):
        key = fresh_key()
        ctx = otc.Context()
        ctx.set_ids(TRACE, SPAN, 1)
        ctx.set_attr(key, "GET /users")
        self.assertError(Error.EPENDING, ctx.attach)
        ctx.update()
        self.assertIsNone(ctx.attach())
        self.assertIs(otc.current(), ctx)
        rec = otc.read()
        self.assertEqual(rec.trace_id, TRACE)
        self.assertEqual(rec.span_id, SPAN)
        self.assertEqual(rec.flags, 1)
        self.assertEqual(dict(rec.attrs), {key: "GET /users"})
        self.assertIs(otc.detach(), ctx)
        self.assertError(Error.ENOCTX, otc.read)
        ctx.destroy()

    def test_update_span_id_and_attrs_by_name(self):
        name = "test.named.%d" % next(_names)
        key = otc.key_register(name)
        ctx = otc.Context(TRACE, SPAN, 1, attrs={name: "a"})
        self.assertIsNone(ctx.update_attach())
        self.assertEqual(dict(otc.read().attrs), {key: "a"})
        self.assertEqual(dict(otc.read().named_attrs()), {name: "a"})
        ctx.update_span_id(CHILD)
        self.assertEqual(otc.read().span_id, CHILD)
        ctx.remove_attr(name)
        self.assertEqual(dict(otc.read().attrs), {key: "a"}, "a draft edit is not published")
        ctx.update()
        self.assertEqual(dict(otc.read().attrs), {})
        otc.detach()
        ctx.destroy()

    def test_hex_strings_and_bytearrays_for_ids(self):
        ctx = otc.Context(TRACE.hex(), bytearray(SPAN))
        ctx.update_attach()
        self.assertEqual(otc.read().trace_id, TRACE)
        otc.detach()
        ctx.destroy()

    def test_values_are_counted_bytes(self):
        # A NUL inside a value and an empty value pass through whole: values
        # go to C with their length, never as NUL-terminated strings.
        k1, k2 = fresh_key(), fresh_key()
        ctx = otc.Context(attrs={k1: "a\0b", k2: ""})
        with ctx:
            self.assertEqual(dict(otc.read().raw_attrs), {k1: b"a\0b", k2: b""})
        ctx.set_attr(k1, "x\0" * 127 + "y")  # 255 bytes
        ctx.update_attach()
        self.assertEqual(otc.read().attrs[k1], "x\0" * 127 + "y")
        otc.detach()
        ctx.destroy()

    def test_update_all_and_clear(self):
        k1, k2 = fresh_key(), fresh_key()
        ctx = otc.Context()
        ctx.update_attach()
        ctx.update_all(TRACE, SPAN, 1, [(k1, "x"), (k2, b"y")])
        rec = otc.read()
        self.assertEqual((rec.trace_id, rec.flags, dict(rec.attrs)), (TRACE, 1, {k1: "x", k2: "y"}))
        ctx.clear()
        ctx.update()
        rec = otc.read()
        self.assertEqual((rec.trace_id, rec.span_id, rec.flags, dict(rec.attrs)),
                         (bytes(16), bytes(8), 0, {}))
        otc.detach()
        ctx.destroy()

    def test_invalidate(self):
        ctx = otc.Context(TRACE, SPAN)
        ctx.update_attach()
        ctx.invalidate()
        self.assertError(Error.ENOCTX, otc.read)
        self.assertIs(otc.current(), ctx)
        ctx.update()
        self.assertEqual(otc.read().trace_id, TRACE)
        otc.detach()
        ctx.destroy()

    def test_attach_hands_back_the_previous_context(self):
        a, b = otc.Context(TRACE, SPAN), otc.Context(TRACE, CHILD)
        self.assertIsNone(a.update_attach())
        self.assertIs(b.update_attach(), a)
        self.assertIs(b.attach(), b, "attaching the attached context changes nothing")
        self.assertEqual(otc.read().span_id, CHILD)
        a.destroy()  # detached again: the caller owns it
        self.assertIs(otc.detach(), b)
        b.destroy()

    def test_destroy_attached_elsewhere_raises_and_keeps_the_context(self):
        self.assertError(Error.EBUSY, _destroy_attached_elsewhere)

    def test_destroy_attached_here_unpublishes_first(self):
        ctx = otc.Context(TRACE, SPAN)
        ctx.update_attach()
        ctx.destroy()
        self.assertIsNone(otc.current())
        self.assertError(Error.ENOCTX, otc.read)
        self.assertIsNone(ctx.address)
        with self.assertRaises(ValueError):
            ctx.update()
        ctx.destroy()  # again: nothing left to free

    def test_collected_context_is_freed_and_attached_one_is_kept(self):
        ctx = otc.Context(TRACE, SPAN)
        ctx.update_attach()
        address = ctx.address
        del ctx
        self.assertEqual(otc.current().address, address)
        self.assertEqual(otc.read().trace_id, TRACE)
        otc.detach().destroy()


class Options(Clean):
    def test_capacity_bounds_the_attributes(self):
        key = fresh_key()
        ctx = otc.Context(capacity=10)
        ctx.set_attr(key, "x" * 8)  # 2 + 8 bytes: fits
        self.assertError(Error.ENOSPC, ctx.set_attr, key, "x" * 9)
        ctx.update_attach()
        self.assertEqual(dict(otc.read().attrs), {key: "x" * 8})
        otc.detach()
        ctx.destroy()
        ids_only = otc.Context(TRACE, SPAN, 1, capacity=0)
        self.assertError(Error.ENOSPC, ids_only.set_attr, key, "")
        ids_only.destroy()

    def test_options_out_of_range(self):
        with self.assertRaises(ThreadCtxError) as cm:
            otc.Context(capacity=otc.ATTRS_MAX + 1)
        self.assertEqual(cm.exception.code, Error.EOPTIONS)
        self.assertEqual(cm.exception.function, "create_with")
        with self.assertRaises(ValueError):
            otc.Context(capacity=-1)
        with self.assertRaises(TypeError):
            otc.Context(TRACE)

    def test_free_with_thread_is_destroyed_with_its_thread(self):
        ctx = otc.Context(TRACE, SPAN, free_with_thread=True)
        self.assertTrue(ctx.free_with_thread)
        published = []

        def run():
            ctx.update_attach()
            published.append(otc.read().span_id)

        t = threading.Thread(target=run)
        t.start()
        t.join()
        self.assertEqual(published, [SPAN])
        self.assertIsNone(ctx.address, "its thread ended with it attached: destroyed")
        with self.assertRaises(ValueError):
            ctx.update()
        ctx.destroy()  # nothing left to free

    def test_free_with_thread_detached_stays_the_callers(self):
        ctx = otc.Context(TRACE, SPAN, free_with_thread=True)
        t = threading.Thread(target=lambda: (ctx.update_attach(), otc.detach()))
        t.start()
        t.join()
        with ctx:
            self.assertEqual(otc.read().span_id, SPAN)
        ctx.destroy()


class Frozen(Clean):
    def test_freeze_commits_and_refuses_edits(self):
        key = fresh_key()
        ctx = otc.Context(TRACE, SPAN, 1, attrs={key: "task"})
        self.assertFalse(ctx.frozen)
        ctx.freeze()
        ctx.freeze()  # again: nothing
        self.assertTrue(ctx.frozen)
        self.assertEqual(dict(ctx.committed().attrs), {key: "task"})
        for call in (lambda: ctx.set_attr(key, "x"), ctx.update, ctx.invalidate,
                     lambda: ctx.update_span_id(CHILD), lambda: ctx.update_trace_flags(0)):
            self.assertError(Error.EFROZEN, call)
        with ctx:
            self.assertEqual(otc.read().span_id, SPAN)
        ctx.destroy()

    def test_free_with_thread_cannot_be_frozen(self):
        ctx = otc.Context(TRACE, SPAN, free_with_thread=True)
        self.assertError(Error.EOPTIONS, ctx.freeze)
        self.assertFalse(ctx.frozen)
        ctx.destroy()

    def test_many_threads_publish_one_frozen_context(self):
        key = fresh_key()
        ctx = otc.Context(TRACE, SPAN, 1, attrs={key: "shared"})
        ctx.freeze()
        n = 6
        barrier = threading.Barrier(n + 1)
        seen, failures = [], []

        def task():
            try:
                # Read back from any thread, attached or not.
                seen.append((ctx.committed().span_id, {}, True))
                with ctx:
                    barrier.wait(30)  # all attached at once
                    barrier.wait(30)  # and the caller's reference is gone
                    rec = otc.read()
                    seen.append((rec.span_id, dict(rec.attrs), otc.current() is ctx))
            except Exception as e:  # reported below
                failures.append(e)
                barrier.abort()

        threads = [threading.Thread(target=task) for _ in range(n)]
        for t in threads:
            t.start()
        try:
            barrier.wait(30)
            # The caller's reference may go while threads hold theirs.
            ctx.destroy()
            self.assertIsNone(ctx.address)
            barrier.wait(30)
        except threading.BrokenBarrierError:
            pass  # a thread failed: reported below
        for t in threads:
            t.join()
        self.assertEqual(failures, [])
        self.assertEqual(len(seen), 2 * n)
        for span, attrs, same in seen:
            self.assertEqual(span, SPAN)
            self.assertIn(attrs, ({key: "shared"}, {}))
            self.assertTrue(same)

    def test_frozen_context_replaced_and_restored(self):
        shared = otc.Context(TRACE, SPAN)
        shared.freeze()
        own = otc.Context(TRACE, CHILD)
        with shared:
            with own:
                self.assertEqual(otc.read().span_id, CHILD)
            self.assertIs(otc.current(), shared)
            self.assertEqual(otc.read().span_id, SPAN)
        self.assertIsNone(otc.current())
        shared.destroy()
        own.destroy()


class ReadBack(Clean):
    def test_committed_is_what_was_committed(self):
        key = fresh_key()
        ctx = otc.Context(TRACE, SPAN, 1, attrs={key: "v1"})
        rec = ctx.committed()
        self.assertEqual((rec.trace_id, rec.span_id, rec.flags, dict(rec.attrs)),
                         (bytes(16), bytes(8), 0, {}), "nothing committed yet")
        ctx.update()
        ctx.set_attr(key, "draft")
        self.assertEqual(dict(ctx.committed().attrs), {key: "v1"})
        ctx.update_attach()
        ctx.invalidate()
        self.assertEqual(dict(ctx.committed().attrs), {key: "draft"}, "even while invalidated")
        otc.detach()
        ctx.destroy()

    def test_committed_of_a_context_attached_elsewhere_is_busy(self):
        ctx = otc.Context(TRACE, SPAN)
        attached, release = threading.Event(), threading.Event()

        def owner():
            with ctx:
                attached.set()
                release.wait(30)

        t = threading.Thread(target=owner)
        t.start()
        try:
            self.assertTrue(attached.wait(30))
            self.assertError(Error.EBUSY, ctx.committed)
        finally:
            release.set()
            t.join()
        ctx.destroy()

    def test_update_trace_flags(self):
        ctx = otc.Context(TRACE, SPAN, 0)
        with ctx:
            ctx.update_trace_flags(1)
            self.assertEqual(otc.read().flags, 1)
        no_ids = otc.Context()
        self.assertError(Error.EIDS, no_ids.update_trace_flags, 1)
        with self.assertRaises(ValueError):
            no_ids.update_trace_flags(256)
        ctx.destroy()
        no_ids.destroy()


class Validation(Clean):
    """Nothing is truncated: what does not fit raises, and changes nothing."""

    def setUp(self):
        super().setUp()
        self.key = fresh_key()
        self.ctx = otc.Context(TRACE, SPAN, 1, attrs={self.key: "v"})
        self.ctx.update_attach()
        self.before = otc.read()

    def tearDown(self):
        self.ctx.update()  # the draft too must be unchanged
        self.assertEqual(otc.read(), self.before)
        otc.detach()
        self.ctx.destroy()
        super().tearDown()

    def test_ids_of_the_wrong_size(self):
        for bad in (TRACE[:15], TRACE + b"\0", b"", "abc", "zz" * 16):
            with self.assertRaises(ValueError, msg=repr(bad)):
                self.ctx.set_ids(bad, SPAN)
        for bad in (SPAN[:7], SPAN + b"\0"):
            with self.assertRaises(ValueError):
                self.ctx.set_span_id(bad)
            with self.assertRaises(ValueError):
                self.ctx.update_span_id(bad)
        with self.assertRaises(TypeError):
            self.ctx.set_ids(12345, SPAN)

    def test_half_ids_are_the_librarys_error(self):
        self.assertError(Error.EIDS, self.ctx.set_ids, TRACE, bytes(8))
        self.assertError(Error.EIDS, self.ctx.update_span_id, bytes(8))

    def test_flags_out_of_range(self):
        for bad in (256, -1, 1 << 40):
            with self.assertRaises(ValueError):
                self.ctx.set_trace_flags(bad)
        with self.assertRaises(TypeError):
            self.ctx.set_trace_flags(True)

    def test_values_that_do_not_fit(self):
        self.assertError(Error.EVALUE, self.ctx.set_attr, self.key, "x" * 256)
        self.assertError(Error.EUTF8, self.ctx.set_attr, self.key, b"\xff")
        with self.assertRaises(UnicodeEncodeError):
            self.ctx.set_attr(self.key, "\ud800")
        with self.assertRaises(TypeError):
            self.ctx.set_attr(self.key, 42)
        # 255 bytes is the limit, and it fits.
        other = otc.Context()
        other.set_attr(self.key, "x" * 255)
        other.destroy()

    def test_key_indices_out_of_range(self):
        self.assertError(Error.EKEY, self.ctx.set_attr, 256, "x")
        self.assertError(Error.EKEY, self.ctx.remove_attr, 256)
        for bad in (-1, 1 << 32):
            with self.assertRaises(ValueError):
                self.ctx.set_attr(bad, "x")
        self.assertError(Error.EUNKNOWNKEY, self.ctx.set_attr, "test.never.registered", "x")

    def test_attributes_over_612_bytes(self):
        attrs = {k: "v" * 200 for k in range(100, 103)}  # 3 * 202 = 606: fits
        self.ctx.set_attrs(attrs)
        attrs[103] = "v" * 10
        self.assertError(Error.ENOSPC, self.ctx.set_attrs, attrs)
        self.ctx.set_attrs({self.key: "v"})  # back to what was committed

    def test_duplicate_keys(self):
        self.assertError(Error.EDUPKEY, self.ctx.set_attrs, [(1, "a"), (1, "b")])
        self.assertError(Error.EDUPKEY, self.ctx.update_all, TRACE, CHILD, 1,
                         [(self.key, "a"), (self.key, "b")])


class ContextManager(Clean):
    def test_with_publishes_and_restores_nothing(self):
        ctx = otc.Context(TRACE, SPAN, 1)
        with ctx as entered:
            self.assertIs(entered, ctx)
            self.assertEqual(otc.read().span_id, SPAN)
        self.assertIsNone(otc.current())
        self.assertError(Error.ENOCTX, otc.read)
        ctx.destroy()

    def test_nested_spans_restore_the_previous_context(self):
        outer, inner = otc.Context(TRACE, SPAN), otc.Context(TRACE, CHILD)
        with outer:
            with inner:
                self.assertEqual(otc.read().span_id, CHILD)
                with inner:  # already attached: exit leaves it attached
                    pass
                self.assertIs(otc.current(), inner)
            self.assertIs(otc.current(), outer)
            self.assertEqual(otc.read().span_id, SPAN)
        self.assertIsNone(otc.current())
        outer.destroy()
        inner.destroy()

    def test_restores_on_exception(self):
        outer, inner = otc.Context(TRACE, SPAN), otc.Context(TRACE, CHILD)
        with outer:
            with self.assertRaises(KeyError):
                with inner:
                    raise KeyError("boom")
            self.assertIs(otc.current(), outer)
        outer.destroy()
        inner.destroy()

    def test_enter_commits_pending_edits(self):
        ctx = otc.Context()
        ctx.set_ids(TRACE, SPAN, 1)
        with ctx:
            self.assertEqual(otc.read().trace_id, TRACE)
        ctx.destroy()


class Threads(Clean):
    N = 8
    ROUNDS = 2000

    def test_each_thread_reads_back_its_own_context(self):
        key = fresh_key()
        barrier = threading.Barrier(self.N)
        failures = []
        contexts = []

        def worker(i):
            trace = bytes([i + 1]) * 16
            span = bytes([i + 1]) * 8
            ctx = otc.Context(trace, span, 1, attrs={key: "worker-%d" % i})
            contexts.append(ctx)
            try:
                with ctx:
                    barrier.wait()
                    for n in range(self.ROUNDS):
                        child = struct.pack(">Q", (i << 32) | (n + 1))
                        ctx.update_span_id(child)
                        rec = otc.read()
                        if (rec.trace_id, rec.span_id, dict(rec.attrs)) != (
                                trace, child, {key: "worker-%d" % i}):
                            failures.append((i, n, rec))
                            return
                    barrier.wait()
                if otc.current() is not None:
                    failures.append((i, "still attached"))
            except Exception as e:  # reported below, with the thread's index
                failures.append((i, e))
                barrier.abort()

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(self.N)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(failures, [])
        self.assertEqual(len(contexts), self.N)
        for ctx in contexts:
            ctx.destroy()
        self.assertError(Error.ENOCTX, otc.read)

    def test_a_context_attached_to_another_thread_is_busy(self):
        ctx = otc.Context(TRACE, SPAN)
        attached, release = threading.Event(), threading.Event()

        def owner():
            with ctx:
                attached.set()
                release.wait(30)

        t = threading.Thread(target=owner)
        t.start()
        try:
            self.assertTrue(attached.wait(30))
            self.assertError(Error.EBUSY, ctx.destroy)
            self.assertError(Error.EBUSY, ctx.attach)
            self.assertError(Error.EBUSY, ctx.update)
            with self.assertRaises(ThreadCtxError):
                with ctx:
                    pass
            self.assertIsNone(otc.current())
        finally:
            release.set()
            t.join()
        ctx.destroy()

    def test_thread_ending_attached_leaves_a_usable_context(self):
        ctxs = [otc.Context(bytes([9]) * 16, bytes([i + 1]) * 8) for i in range(4)]

        def leave_attached(ctx):
            ctx.update_attach()
            if otc.read().span_id != ctx_span(ctx):
                raise AssertionError("not published")

        def ctx_span(ctx):
            return bytes([ctxs.index(ctx) + 1]) * 8

        for ctx in ctxs:
            t = threading.Thread(target=leave_attached, args=(ctx,))
            t.start()
            t.join()
        for ctx in ctxs:
            # Detached when its thread ended, not freed by the library.
            ctx.update_attach()
            self.assertEqual(otc.read().span_id, ctx_span(ctx))
            otc.detach()
            ctx.destroy()


def read_own_process():
    """This process's context, read back by libotel-thread-ctx-inspect."""
    from otel_thread_ctx import inspect  # pylint: disable=import-outside-toplevel
    return inspect.read_process(0)


class Process(unittest.TestCase):
    """The process context this process publishes (one per process: each
    test unpublishes what it published)."""

    def tearDown(self):
        otc.process.unpublish()

    def test_publish_every_type_and_read_it_back(self):
        name = "test.process.%d" % next(_names)
        index = otc.key_register(name)
        otc.process.publish({"service.name": "checkout", "process.pid": os.getpid(),
                             "sampled": True, "ratio": 0.25, "empty": "", "nul": "a\0b",
                             "big": -(1 << 63)})
        info = otc.process.query()
        self.assertTrue(info.published)
        self.assertGreaterEqual(info.mapping_size, 32)
        self.assertGreater(info.published_at_ns, 0)
        self.assertGreater(info.payload_size, 0)
        ctx = read_own_process()
        self.assertEqual(ctx.schema_version, "tlsdesc_v1_dev")
        self.assertEqual(ctx.mapping_address, info.mapping)
        self.assertEqual(ctx.published_at_ns, info.published_at_ns)
        self.assertEqual(ctx.key_map[index], name)
        self.assertEqual(ctx.resource_items, (
            ("service.name", "checkout"), ("process.pid", os.getpid()), ("sampled", True),
            ("ratio", 0.25), ("empty", ""), ("nul", "a\0b"), ("big", -(1 << 63))))
        self.assertIsInstance(ctx.resource["sampled"], bool)
        self.assertEqual(len(ctx.payload), info.payload_size)

    def test_update_and_unpublish(self):
        otc.process.publish([("service.name", "a")])
        before = otc.process.query()
        otc.process.update([("service.name", "b"), ("deployment", "blue")])
        after = otc.process.query()
        self.assertEqual(after.mapping, before.mapping, "the same mapping")
        self.assertGreater(after.published_at_ns, before.published_at_ns)
        self.assertEqual(read_own_process().resource, {"service.name": "b", "deployment": "blue"})
        otc.process.unpublish()
        self.assertFalse(otc.process.query().published)
        otc.process.unpublish()  # again: nothing
        from otel_thread_ctx import inspect  # pylint: disable=import-outside-toplevel
        with self.assertRaises(inspect.InspectError) as cm:
            read_own_process()
        self.assertEqual(cm.exception.code, inspect.Error.ENOENT)
        self.assertEqual(cm.exception.name, "ENOENT")

    def test_options(self):
        otc.process.publish({}, schema=otc.process.Schema.TLS_V1)
        self.assertEqual(read_own_process().schema_version, "tls_v1")
        otc.process.update({"k": 1})  # the options hold
        self.assertEqual(read_own_process().schema_version, "tls_v1")
        otc.process.unpublish()
        with self.assertRaises(ThreadCtxError) as cm:
            otc.process.publish({}, schema=7)
        self.assertEqual(cm.exception.code, Error.EOPTIONS)
        self.assertFalse(otc.process.query().published)

    def test_attributes(self):
        otc.process.publish({"service.name": "a"},
                            attributes={"deployment.region": "eu", "runtime.workers": 4})
        snap = read_own_process()
        self.assertEqual(snap.attribute_items,
                         (("deployment.region", "eu"), ("runtime.workers", 4)))
        before = otc.process.query()
        otc.process.update({"service.name": "b"})  # the attributes hold
        self.assertEqual(len(read_own_process().attribute_items), 2)
        otc.process.update_with({"service.name": "c"}, schema=otc.process.Schema.TLS_V1,
                                attributes=[("k", True)])
        after = otc.process.query()
        self.assertEqual(after.mapping, before.mapping)
        snap = read_own_process()
        self.assertEqual(snap.attribute_items, (("k", True),))
        self.assertEqual(snap.schema_version, "tls_v1")
        with self.assertRaises(ThreadCtxError) as cm:
            otc.process.update_with({}, attributes={"threadlocal.x": "v"})
        self.assertEqual(cm.exception.code, Error.EATTR)
        self.assertEqual(otc.process.query().published_at_ns, after.published_at_ns)
        otc.process.unpublish()
        with self.assertRaises(ThreadCtxError) as cm:
            otc.process.update_with({})
        self.assertEqual(cm.exception.code, Error.ENOTPUBLISHED)

    def fork_published(self):
        """Whether a child made by fork() publishes a process context."""
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: report, and leave at once
            try:
                os.write(w, b"1" if otc.process.query().published else b"0")
            finally:
                os._exit(0)
        os.close(w)
        answer = os.read(r, 1)
        os.close(r)
        os.waitpid(pid, 0)
        return answer == b"1"

    def test_fork_policy(self):
        otc.process.publish({"service.name": "parent"})
        self.assertFalse(self.fork_published(), "by default a child publishes nothing")
        otc.process.unpublish()
        otc.process.publish({"service.name": "parent"}, on_fork=otc.process.OnFork.REPUBLISH)
        self.assertTrue(self.fork_published())
        self.assertTrue(otc.process.query().published, "the parent's stays")

    def test_errors(self):
        otc.process.publish({"a": "1"})
        with self.assertRaises(ThreadCtxError) as cm:
            otc.process.publish({"a": "1"})
        self.assertEqual((cm.exception.code, cm.exception.function),
                         (Error.EPUBLISHED, "process.publish"))
        otc.process.unpublish()
        with self.assertRaises(ThreadCtxError) as cm:
            otc.process.update({"a": "1"})
        self.assertEqual(cm.exception.code, Error.ENOTPUBLISHED)
        for bad in ([("a", "1"), ("a", "2")], {"": "x"}):
            with self.assertRaises(ThreadCtxError) as cm:
                otc.process.publish(bad)
            self.assertEqual(cm.exception.code, Error.EATTR)
        with self.assertRaises(ThreadCtxError) as cm:
            otc.process.publish({"big": "x" * 70000})
        self.assertEqual(cm.exception.code, Error.E2BIG)
        with self.assertRaises(TypeError):
            otc.process.publish({"b": b"bytes"})
        with self.assertRaises(TypeError):
            otc.process.publish({1: "x"})
        with self.assertRaises(ValueError):
            otc.process.publish({"n": 1 << 63})
        with self.assertRaises(ValueError):
            otc.process.publish({"a\0b": "x"})
        with self.assertRaises(UnicodeEncodeError):
            otc.process.publish({"s": "\ud800"})
        self.assertFalse(otc.process.query().published, "nothing published on error")


class Decode(unittest.TestCase):
    def test_decode_process_payloads(self):
        from otel_thread_ctx import inspect  # pylint: disable=import-outside-toplevel
        self.assertIsNone(inspect.decode_process(b"").schema_version)
        with self.assertRaises(inspect.InspectError) as cm:
            inspect.decode_process(b"\xff\xff\xff")
        e = cm.exception
        self.assertEqual((e.code, e.name), (inspect.Error.EDECODE, "EDECODE"))
        self.assertIsInstance(e, ThreadCtxError)
        self.assertEqual(e.strerror, inspect.strerror(inspect.Error.EDECODE))
        self.assertNotIn("unknown", e.strerror.lower())
        with self.assertRaises(inspect.InspectError) as cm:
            inspect.decode_process(bytes(70000))
        self.assertEqual(cm.exception.code, Error.E2BIG)

    def test_inspector_codes_have_texts(self):
        from otel_thread_ctx import inspect  # pylint: disable=import-outside-toplevel
        texts = {inspect.strerror(code) for code in list(inspect.Error) + list(Error)}
        self.assertEqual(len(texts), len(inspect.Error) + len(Error))


class Keys(unittest.TestCase):
    def test_register_find_name_count(self):
        count = otc.key_count()
        name = "test.registry.%d" % next(_names)
        index = otc.key_register(name)
        self.assertEqual(index, count)
        self.assertEqual(otc.key_count(), count + 1)
        self.assertEqual(otc.key_register(name), index)
        self.assertEqual(otc.key_count(), count + 1)
        self.assertEqual(otc.key_find(name), index)
        self.assertEqual(otc.key_name(index), name)
        self.assertIsNone(otc.key_name(otc.key_count()))
        self.assertIsNone(otc.key_name(256))

    def test_names_that_do_not_fit(self):
        count = otc.key_count()
        with self.assertRaises(ThreadCtxError) as cm:
            otc.key_register("")
        self.assertEqual(cm.exception.code, Error.ENAME)
        with self.assertRaises(ThreadCtxError) as cm:
            otc.key_register("k" * 256)
        self.assertEqual(cm.exception.code, Error.ENAME)
        with self.assertRaises(ThreadCtxError) as cm:
            otc.key_register(b"\xff")
        self.assertEqual(cm.exception.code, Error.ENAME)
        with self.assertRaises(ValueError):
            otc.key_register("a\0b")
        with self.assertRaises(ValueError):
            otc.key_name(-1)
        with self.assertRaises(ThreadCtxError) as cm:
            otc.key_find("test.never.registered")
        self.assertEqual(cm.exception.code, Error.EUNKNOWNKEY)
        self.assertEqual(otc.key_count(), count)
        self.assertEqual(otc.key_name(otc.key_register("k" * 255)), "k" * 255)


class RecordDecode(unittest.TestCase):
    @staticmethod
    def record(valid=1, entries=b"", size=None):
        size = len(entries) if size is None else size
        return TRACE + SPAN + struct.pack("=BBH", valid, 1, size) + entries

    def test_decode_last_duplicate_wins(self):
        entries = bytes([3, 1]) + b"a" + bytes([4, 2]) + b"bc" + bytes([3, 1]) + b"d"
        rec = otc.record_decode(self.record(entries=entries))
        self.assertEqual((rec.trace_id, rec.span_id, rec.flags), (TRACE, SPAN, 1))
        self.assertEqual(dict(rec.raw_attrs), {4: b"bc", 3: b"d"})

    def test_truncated_entry_stops_the_walk(self):
        entries = bytes([3, 1]) + b"a" + bytes([4, 9]) + b"bc"
        rec = otc.record_decode(self.record(entries=entries))
        self.assertEqual(dict(rec.attrs), {3: "a"})

    def test_decode_errors(self):
        with self.assertRaises(ThreadCtxError) as cm:
            otc.record_decode(self.record()[:27])
        self.assertEqual(cm.exception.code, Error.ETRUNCATED)
        with self.assertRaises(ThreadCtxError) as cm:
            otc.record_decode(self.record(valid=0))
        self.assertEqual(cm.exception.code, Error.EINVALID)
        with self.assertRaises(TypeError):
            otc.record_decode("not bytes")

    def test_invalid_utf8_is_kept_as_bytes_and_refused_as_text(self):
        rec = otc.record_decode(self.record(entries=bytes([5, 1, 0xFF])))
        self.assertEqual(dict(rec.raw_attrs), {5: b"\xff"})
        with self.assertRaises(UnicodeDecodeError):
            rec.attrs  # pylint: disable=pointless-statement

    def test_records_are_immutable(self):
        rec = otc.record_decode(self.record(entries=bytes([5, 1]) + b"x"))
        with self.assertRaises(dataclasses.FrozenInstanceError):
            rec.flags = 0
        with self.assertRaises(TypeError):
            rec.attrs[5] = "y"
        self.assertIn(TRACE.hex(), repr(rec))


class SelfCheck(Clean):
    def test_the_slot_is_the_exported_one(self):
        res = otc.self_check()
        self.assertTrue(res.ok, res.reason)
        self.assertEqual(res.status, otc.SelfCheckStatus.OK)
        self.assertEqual(res.slot, res.exported)
        self.assertGreaterEqual(res.exporting_modules, 1)
        self.assertIn("libotel-thread-ctx", res.exported_module)
        self.assertTrue(res.reason)

    def test_in_a_new_thread(self):
        results = []
        t = threading.Thread(target=lambda: results.append(otc.self_check()))
        t.start()
        t.join()
        self.assertTrue(results[0].ok, results[0].reason)
        self.assertNotEqual(results[0].slot, otc.self_check().slot)


if __name__ == "__main__":
    unittest.main()
