# SPDX-License-Identifier: Apache-2.0
"""The Python binding against the library named by $OTEL_THREAD_CTX_LIBRARY
(meson test sets it to the build's shared library)."""

import copy
import ctypes
import dataclasses
import gc
import os
import shutil
import struct
import subprocess
import sys
import threading
import unittest
import weakref

import otel_thread_ctx as otc
from otel_thread_ctx import Error, ThreadCtxError, _lib

TRACE = bytes.fromhex("4bf92f3577b34da6a3ce929d0e0e4736")
OTHER_TRACE = bytes.fromhex("0af7651916cd43dd8448eb211c80319c")
SPAN = bytes.fromhex("00f067aa0ba902b7")
CHILD = bytes.fromhex("1111111111111111")
GRANDCHILD = bytes.fromhex("2222222222222222")

_names = iter(range(10**6))


def fresh_key():
    """A key name no other test registers."""
    return otc.key_register("test.key.%d" % next(_names))


def value(rec):
    """A Record as a plain tuple: (trace id, span id, flags, raw attributes)."""
    return rec.trace_id, rec.span_id, rec.flags, dict(rec.raw_attrs)


EMPTY = (bytes(16), bytes(8), 0, {})


class Clean(unittest.TestCase):
    """Every test starts and ends with nothing published on this thread."""

    def setUp(self):
        self.assertPublishesNothing("a test left this thread publishing")

    def tearDown(self):
        otc.detach()

    def assertPublishesNothing(self, msg=None):
        with self.assertRaises(ThreadCtxError, msg=msg) as cm:
            otc.read()
        self.assertEqual(cm.exception.code, Error.ENOCTX, msg)

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
        ctx = otc.Context()
        e = self.assertError(Error.EIDS, ctx.set_ids, TRACE, bytes(8))
        self.assertIsInstance(e, OSError)
        self.assertEqual(e.errno, -4002)
        self.assertEqual(e.name, "EIDS")
        self.assertEqual(e.function, "set_ids")
        text = _lib.lib.otel_thread_ctx_strerror(-4002).decode()
        self.assertEqual(e.strerror, text)
        self.assertIn(text, str(e))
        ctx.destroy()

    def test_every_code_has_a_text(self):
        texts = {otc.strerror(code) for code in Error}
        self.assertEqual(len(texts), len(Error))
        self.assertNotIn(otc.strerror(-999), texts, "a code of Error the library does not know")

    def test_the_codes_are_the_librarys(self):
        # Every code the library describes is in Error, and Error has no
        # other: those of claims, drafts and frozen contexts are gone.
        unknown = otc.strerror(-999)
        described = {code for code in list(range(-300, 1)) + list(range(-4200, -4000))
                     if otc.strerror(code) != unknown}
        self.assertEqual(described, {int(code) for code in Error})
        for gone in ("EBUSY", "EPENDING", "EFROZEN"):
            self.assertFalse(hasattr(Error, gone), gone)

    def test_unknown_code_keeps_its_number(self):
        e = ThreadCtxError(-999)
        self.assertIsNone(e.name)
        self.assertEqual(e.errno, -999)
        self.assertTrue(e.strerror)


class Values(Clean):
    """A Context is a value: setters edit it, attach publishes a copy."""

    def test_a_new_context_holds_an_empty_record(self):
        ctx = otc.Context()
        self.assertTrue(ctx.holds_record)
        self.assertEqual(ctx.capacity, otc.ATTRS_MAX)
        self.assertEqual(value(ctx.get()), EMPTY)
        self.assertPublishesNothing("creating publishes nothing")
        ctx.update()
        self.assertEqual(value(otc.read()), EMPTY, "an empty record, not nothing")
        ctx.destroy()

    def test_setters_edit_the_value_and_publish_nothing(self):
        key, other = fresh_key(), fresh_key()
        ctx = otc.Context()
        ctx.set_ids(TRACE, SPAN, 1)
        ctx.set_attr(key, "GET /users")
        self.assertEqual(value(ctx.get()), (TRACE, SPAN, 1, {key: b"GET /users"}))
        ctx.set_span_id(CHILD)
        ctx.set_trace_flags(0)
        ctx.set_attr(other, b"b")
        self.assertEqual(value(ctx.get()), (TRACE, CHILD, 0, {key: b"GET /users", other: b"b"}))
        ctx.remove_attr(key)
        ctx.remove_attr(key)  # absent: nothing
        self.assertEqual(value(ctx.get()), (TRACE, CHILD, 0, {other: b"b"}))
        ctx.clear_ids()
        self.assertEqual(value(ctx.get()), (bytes(16), bytes(8), 0, {other: b"b"}))
        ctx.set_ids(TRACE, SPAN, 1)
        ctx.clear_attrs()
        self.assertEqual(value(ctx.get()), (TRACE, SPAN, 1, {}))
        ctx.set_attrs([(key, "x"), (other, "y")])
        ctx.clear()
        self.assertEqual(value(ctx.get()), EMPTY)
        self.assertPublishesNothing("no setter publishes")
        ctx.destroy()

    def test_attach_publishes_a_copy(self):
        key = fresh_key()
        ctx = otc.Context(TRACE, SPAN, 1, {key: "v1"})
        self.assertIsNone(ctx.attach())
        self.assertEqual(value(otc.read()), (TRACE, SPAN, 1, {key: b"v1"}))
        ctx.set_attr(key, "v2")
        ctx.set_span_id(CHILD)
        self.assertEqual(value(otc.read()), (TRACE, SPAN, 1, {key: b"v1"}),
                         "an edit is not published")
        ctx.update()
        self.assertEqual(value(otc.read()), (TRACE, CHILD, 1, {key: b"v2"}))
        ctx.destroy()
        self.assertEqual(value(otc.read()), (TRACE, CHILD, 1, {key: b"v2"}),
                         "destroying the context changes nothing published")
        self.assertIsNone(otc.detach())
        self.assertPublishesNothing()

    def test_named_attrs_and_hex_ids(self):
        name = "test.named.%d" % next(_names)
        key = otc.key_register(name)
        ctx = otc.Context(TRACE.hex(), bytearray(SPAN), 1, attrs={name: "a"})
        ctx.update()
        rec = otc.read()
        self.assertEqual((rec.trace_id, rec.span_id), (TRACE, SPAN))
        self.assertEqual(dict(rec.attrs), {key: "a"})
        self.assertEqual(dict(rec.named_attrs()), {name: "a"})
        ctx.remove_attr(name)
        self.assertEqual(dict(ctx.get().attrs), {})
        ctx.destroy()

    def test_values_are_counted_bytes(self):
        # A NUL inside a value and an empty value pass through whole: values
        # go to C with their length, never as NUL-terminated strings.
        k1, k2 = fresh_key(), fresh_key()
        ctx = otc.Context(attrs={k1: "a\0b", k2: ""})
        with ctx:
            self.assertEqual(dict(otc.read().raw_attrs), {k1: b"a\0b", k2: b""})
        ctx.set_attr(k1, "x\0" * 127 + "y")  # 255 bytes
        ctx.update()
        self.assertEqual(otc.read().attrs[k1], "x\0" * 127 + "y")
        ctx.destroy()

    def test_a_destroyed_context_refuses_everything_but_destroy(self):
        ctx = otc.Context(TRACE, SPAN)
        other = otc.Context()
        ctx.destroy()
        self.assertIsNone(ctx.address)
        self.assertIn("destroyed", repr(ctx))
        for call in (ctx.update, ctx.attach, lambda: other.attach(ctx), ctx.get, ctx.copy,
                     lambda: ctx.holds_record, lambda: ctx.set_span_id(CHILD),
                     lambda: other.copy_from(ctx), lambda: otc.save(ctx),
                     lambda: otc.detach(ctx)):
            with self.assertRaises(ValueError):
                call()
        with self.assertRaises(ValueError):
            with ctx:
                pass
        self.assertPublishesNothing()
        ctx.destroy()  # again: nothing left to free
        ctx.close()
        other.close()
        self.assertIsNone(other.address)

    def test_copy(self):
        key = fresh_key()
        ctx = otc.Context(TRACE, SPAN, 1, {key: "a"}, capacity=20)
        for dup in (ctx.copy(), copy.copy(ctx), copy.deepcopy(ctx)):
            self.assertIsInstance(dup, otc.Context)
            self.assertNotEqual(dup.address, ctx.address)
            self.assertEqual(dup.capacity, 20)
            self.assertEqual(dup.get(), ctx.get())
            dup.set_attr(key, "b")
            self.assertEqual(dict(ctx.get().attrs), {key: "a"}, "copies are independent")
            dup.destroy()
        bigger = ctx.copy(capacity=otc.ATTRS_MAX)
        self.assertEqual((bigger.capacity, bigger.get()), (otc.ATTRS_MAX, ctx.get()))
        self.assertError(Error.ENOSPC, ctx.copy, 2)  # 2 + 1 bytes of attributes
        small = otc.Context(TRACE, CHILD, capacity=2)
        self.assertError(Error.ENOSPC, small.copy_from, ctx)
        self.assertEqual(value(small.get()), (TRACE, CHILD, 0, {}),
                         "a refused copy changes nothing")
        small.copy_from(otc.Context(OTHER_TRACE, SPAN))
        self.assertEqual(value(small.get()), (OTHER_TRACE, SPAN, 0, {}))
        with self.assertRaises(TypeError):
            small.copy_from(ctx.get())
        for c in (ctx, bigger, small):
            c.destroy()

    def test_repr_shows_the_value(self):
        key = fresh_key()
        ctx = otc.Context(TRACE, SPAN, 1, {key: "v"})
        self.assertEqual(repr(ctx), "<otel_thread_ctx.Context trace_id=%s, span_id=%s, "
                         "flags=0x01, attrs={%d: 'v'}>" % (TRACE.hex(), SPAN.hex(), key))
        ctx.destroy()


class Saved(Clean):
    """What a thread published, given back as a value (saved)."""

    def test_attach_saves_what_was_published(self):
        a, b = otc.Context(TRACE, SPAN, 1), otc.Context(TRACE, CHILD)
        saved_nothing, saved_a = otc.Context(TRACE, GRANDCHILD), otc.Context()
        self.assertIs(a.attach(saved_nothing), saved_nothing)
        self.assertFalse(saved_nothing.holds_record)
        self.assertError(Error.ENOCTX, saved_nothing.get)
        self.assertIn("no record", repr(saved_nothing))
        self.assertIs(b.attach(saved_a), saved_a)
        self.assertTrue(saved_a.holds_record)
        self.assertEqual(saved_a.get(), a.get())
        self.assertEqual(otc.read(), b.get())
        saved_a.update()
        self.assertEqual(otc.read(), a.get())
        saved_nothing.update()
        self.assertPublishesNothing("a saved nothing unpublishes")
        saved_nothing.attach()
        self.assertPublishesNothing()
        for c in (a, b, saved_nothing, saved_a):
            c.destroy()

    def test_saved_may_be_the_context_itself(self):
        a, b = otc.Context(TRACE, SPAN), otc.Context(TRACE, CHILD)
        a.update()
        self.assertIs(b.attach(b), b)
        self.assertEqual(otc.read().span_id, CHILD)
        self.assertEqual(b.get().span_id, SPAN, "b now holds what it replaced")
        a.destroy()
        b.destroy()

    def test_a_saved_nothing_is_a_value_too(self):
        nothing = otc.save()
        self.assertFalse(nothing.holds_record)
        dup = nothing.copy()
        self.assertFalse(dup.holds_record, "a copy holds no record either")
        target = otc.Context(TRACE, SPAN)
        target.copy_from(nothing)
        self.assertFalse(target.holds_record)
        nothing.set_ids(TRACE, SPAN)
        self.assertTrue(nothing.holds_record, "a setter gives it a record")
        dup.clear()
        self.assertEqual(value(dup.get()), EMPTY)
        for c in (nothing, dup, target):
            c.destroy()

    def test_a_saved_context_too_small_is_refused(self):
        key = fresh_key()
        ctx = otc.Context(TRACE, SPAN, 1, {key: "x" * 50})
        ctx.update()
        small = otc.Context(TRACE, CHILD, capacity=10)
        other = otc.Context(OTHER_TRACE, CHILD)
        for name, call in (("attach", lambda: other.attach(small)),
                           ("detach", lambda: otc.detach(small)),
                           ("save", lambda: otc.save(small))):
            e = self.assertError(Error.ENOSPC, call)
            self.assertEqual(e.function, name)
            self.assertEqual(otc.read(), ctx.get(), "%s changed what is published" % name)
            self.assertEqual(value(small.get()), (TRACE, CHILD, 0, {}), "%s changed saved" % name)
        exact = otc.save(otc.Context(capacity=52))  # 2 + 50 bytes: fits
        self.assertEqual(exact.get(), ctx.get())
        with self.assertRaises(TypeError):
            other.attach("saved")
        with self.assertRaises(TypeError):
            otc.save(ctx.get())
        for c in (ctx, small, other, exact):
            c.destroy()


class FastPaths(Clean):
    """The module's functions that change the calling thread's record."""

    def test_update_span_id(self):
        self.assertError(Error.ENOCTX, otc.update_span_id, CHILD)
        key = fresh_key()
        ctx = otc.Context(TRACE, SPAN, 1, {key: "a"})
        with ctx:
            otc.update_span_id(CHILD)
            self.assertEqual(value(otc.read()), (TRACE, CHILD, 1, {key: b"a"}))
            self.assertEqual(ctx.get().span_id, SPAN, "the context is not the thread's record")
            self.assertError(Error.EIDS, otc.update_span_id, bytes(8))
            with self.assertRaises(ValueError):
                otc.update_span_id(CHILD[:7])
            otc.update_span_id(GRANDCHILD.hex())
            self.assertEqual(otc.read().span_id, GRANDCHILD)
        with otc.Context():
            self.assertError(Error.EIDS, otc.update_span_id, CHILD)
        ctx.destroy()

    def test_update_trace_flags(self):
        self.assertError(Error.ENOCTX, otc.update_trace_flags, 1)
        ctx = otc.Context(TRACE, SPAN, 0)
        with ctx:
            otc.update_trace_flags(1)
            self.assertEqual(otc.read().flags, 1)
            self.assertEqual(ctx.get().flags, 0)
            for bad in (256, -1):
                with self.assertRaises(ValueError):
                    otc.update_trace_flags(bad)
            with self.assertRaises(TypeError):
                otc.update_trace_flags(True)
            self.assertEqual(otc.read().flags, 1)
        with otc.Context():
            self.assertError(Error.EIDS, otc.update_trace_flags, 1)
            otc.update_trace_flags(0)
            self.assertEqual(value(otc.read()), EMPTY)
        ctx.destroy()

    def test_update_all_publishes_even_when_detached(self):
        k1, k2 = fresh_key(), fresh_key()
        otc.update_all(TRACE, SPAN, 1, [(k1, "x"), (k2, b"y")])
        self.assertEqual(value(otc.read()), (TRACE, SPAN, 1, {k1: b"x", k2: b"y"}))
        otc.update_all(OTHER_TRACE.hex(), CHILD)
        self.assertEqual(value(otc.read()), (OTHER_TRACE, CHILD, 0, {}), "attributes replaced")
        otc.update_all(TRACE, SPAN, 1, {otc.key_name(k1): "by name"})
        self.assertEqual(value(otc.read()), (TRACE, SPAN, 1, {k1: b"by name"}))

    def test_update_all_refused_changes_nothing(self):
        key = fresh_key()
        otc.update_all(TRACE, SPAN, 1, {key: "v"})
        before = otc.read()
        self.assertError(Error.EDUPKEY, otc.update_all, TRACE, CHILD, 1,
                         [(key, "a"), (key, "b")])
        self.assertError(Error.ENOSPC, otc.update_all, TRACE, CHILD, 1,
                         {k: "v" * 200 for k in (key, 100, 101, 102)})  # 808 bytes
        self.assertError(Error.EIDS, otc.update_all, TRACE, bytes(8))
        self.assertError(Error.EKEY, otc.update_all, TRACE, CHILD, 1, {256: "x"})
        self.assertError(Error.EVALUE, otc.update_all, TRACE, CHILD, 1, {key: "x" * 256})
        self.assertError(Error.EUTF8, otc.update_all, TRACE, CHILD, 1, {key: b"\xff"})
        with self.assertRaises(ValueError):
            otc.update_all(TRACE[:15], CHILD)
        self.assertEqual(otc.read(), before)
        # The next publications start from what is published, not from
        # what a refused call left behind.
        otc.update_span_id(CHILD)
        self.assertEqual(value(otc.read()), (TRACE, CHILD, 1, {key: b"v"}))
        otc.update_trace_flags(0)
        self.assertEqual(value(otc.read()), (TRACE, CHILD, 0, {key: b"v"}))

    def test_detach_and_save(self):
        ctx = otc.Context(TRACE, SPAN, 1)
        ctx.update()
        saved = otc.save()
        self.assertEqual(saved.get(), ctx.get())
        self.assertEqual(saved.capacity, otc.ATTRS_MAX)
        self.assertEqual(otc.read(), ctx.get(), "save changes nothing")
        into = otc.Context()
        self.assertIs(otc.save(into), into)
        self.assertEqual(into.get(), ctx.get())
        held = otc.detach(otc.Context())
        self.assertEqual(held.get(), ctx.get())
        self.assertPublishesNothing()
        self.assertIsNone(otc.detach(), "nothing to detach: nothing happens")
        nothing = otc.detach(otc.Context(TRACE, SPAN))
        self.assertFalse(nothing.holds_record)
        held.update()
        self.assertEqual(otc.read(), ctx.get())
        for c in (ctx, saved, into, held, nothing):
            c.destroy()


class Options(Clean):
    def test_capacity_bounds_the_attributes(self):
        key = fresh_key()
        ctx = otc.Context(capacity=10)
        self.assertEqual(ctx.capacity, 10)
        ctx.set_attr(key, "x" * 8)  # 2 + 8 bytes: fits
        self.assertError(Error.ENOSPC, ctx.set_attr, key, "x" * 9)
        self.assertEqual(dict(ctx.get().attrs), {key: "x" * 8}, "a refusal changes nothing")
        ctx.update()
        self.assertEqual(dict(otc.read().attrs), {key: "x" * 8})
        ctx.destroy()
        ids_only = otc.Context(TRACE, SPAN, 1, capacity=0)
        self.assertError(Error.ENOSPC, ids_only.set_attr, key, "")
        ids_only.update()
        self.assertEqual(value(otc.read()), (TRACE, SPAN, 1, {}))
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
        with self.assertRaises(TypeError):
            otc.Context(free_with_thread=True)  # pylint: disable=unexpected-keyword-arg
        self.assertError(Error.EIDS, otc.Context, flags=1)


class Validation(Clean):
    """Nothing is truncated: what does not fit raises, and changes neither
    the context nor what the thread publishes."""

    def setUp(self):
        super().setUp()
        self.key = fresh_key()
        self.ctx = otc.Context(TRACE, SPAN, 1, attrs={self.key: "v"})
        self.ctx.update()
        self.value = self.ctx.get()
        self.published = otc.read()

    def tearDown(self):
        self.assertEqual(self.ctx.get(), self.value)
        self.assertEqual(otc.read(), self.published)
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
                otc.update_span_id(bad)
        with self.assertRaises(TypeError):
            self.ctx.set_ids(12345, SPAN)

    def test_half_ids_are_the_librarys_error(self):
        self.assertError(Error.EIDS, self.ctx.set_ids, TRACE, bytes(8))
        self.assertError(Error.EIDS, self.ctx.set_span_id, bytes(8))
        self.assertError(Error.EIDS, otc.update_span_id, bytes(8))

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
        self.ctx.set_attrs({self.key: "v"})  # back to what it held

    def test_duplicate_keys(self):
        self.assertError(Error.EDUPKEY, self.ctx.set_attrs, [(1, "a"), (1, "b")])
        self.assertError(Error.EDUPKEY, otc.update_all, TRACE, CHILD, 1,
                         [(self.key, "a"), (self.key, "b")])


class Scopes(Clean):
    """`with ctx:` saves what the thread published and puts it back."""

    def setUp(self):
        super().setUp()
        self.key = fresh_key()
        self.a = otc.Context(TRACE, SPAN, 1, {self.key: "a"})
        self.b = otc.Context(TRACE, CHILD, 1, {self.key: "b"})
        self.c = otc.Context(OTHER_TRACE, GRANDCHILD, 0, {self.key: "c" * 200})

    def tearDown(self):
        for ctx in (self.a, self.b, self.c):
            ctx.destroy()
        super().tearDown()

    def test_with_publishes_and_restores_nothing(self):
        with self.a as entered:
            self.assertIs(entered, self.a)
            self.assertEqual(otc.read(), self.a.get())
        self.assertPublishesNothing()

    def test_three_deep(self):
        a, b, c = self.a, self.b, self.c
        with a:
            with b:
                with c:
                    self.assertEqual(otc.read(), c.get())
                self.assertEqual(otc.read(), b.get())
                with c:
                    self.assertEqual(otc.read(), c.get())
                self.assertEqual(otc.read(), b.get())
            self.assertEqual(otc.read(), a.get())
        self.assertPublishesNothing()

    def test_the_same_context_nested(self):
        with self.a:
            with self.a:
                otc.update_span_id(CHILD)
                with self.a:
                    self.assertEqual(otc.read(), self.a.get())
                self.assertEqual(otc.read().span_id, CHILD)
            self.assertEqual(otc.read(), self.a.get())
        self.assertPublishesNothing()

    def test_restores_the_record_not_a_context(self):
        # What was published by update_all and the fast paths, which no
        # Context holds, comes back whole.
        otc.update_all(OTHER_TRACE, SPAN, 1, {self.key: "request"})
        with self.a:
            otc.update_span_id(CHILD)
            inside = otc.read()
            with self.b:
                otc.update_trace_flags(0)
            self.assertEqual(otc.read(), inside)
        self.assertEqual(value(otc.read()), (OTHER_TRACE, SPAN, 1, {self.key: b"request"}))

    def test_a_full_record_is_saved_whole(self):
        # The scope's saved context has room for the largest record: 612
        # bytes of attributes (3 * 202 + 6).
        keys = [fresh_key() for _ in range(4)]
        otc.update_all(TRACE, SPAN, 1, {keys[0]: "a" * 200, keys[1]: "b" * 200,
                                        keys[2]: "c" * 200, keys[3]: "dddd"})
        full = otc.read()
        self.assertEqual(sum(2 + len(v) for v in full.raw_attrs.values()), otc.ATTRS_MAX)
        with self.a:
            with self.c:
                pass
            self.assertEqual(otc.read(), self.a.get())
        self.assertEqual(otc.read(), full)
        big = otc.Context(attrs=full.raw_attrs)
        with big:
            with self.b:
                pass
            self.assertEqual(otc.read(), big.get())
        big.destroy()

    def test_outer_context_edited_while_the_inner_scope_is_active(self):
        with self.a:
            published = otc.read()
            with self.b:
                self.a.set_span_id(GRANDCHILD)
                self.a.set_attr(self.key, "edited")
                self.a.clear_ids()
            self.assertEqual(otc.read(), published)
            self.assertNotEqual(self.a.get(), published)
        self.assertPublishesNothing()

    def test_outer_context_destroyed_while_the_inner_scope_is_active(self):
        with self.a:
            published = otc.read()
            with self.b:
                with self.c:
                    self.a.destroy()
                    self.assertEqual(otc.read(), self.c.get())
                self.assertEqual(otc.read(), self.b.get())
            self.assertEqual(otc.read(), published)
        self.assertPublishesNothing("the outer scope left without its context")

    def test_inner_context_destroyed_while_active(self):
        with self.a:
            with self.b:
                inner = self.b.get()
                self.b.destroy()
                self.assertEqual(otc.read(), inner, "its copy is still published")
            self.assertEqual(otc.read(), self.a.get())
        self.assertPublishesNothing()

    def test_inner_context_collected_after_its_scope(self):
        inner = otc.Context(TRACE, CHILD)
        gone = weakref.ref(inner)
        with self.a:
            with inner:
                pass
            del inner
            self.assertIsNone(gone(), "the scope keeps no reference once left")
            self.assertEqual(otc.read(), self.a.get())
        self.assertPublishesNothing()

    def test_exception_through_three_scopes(self):
        with self.assertRaises(KeyError):
            with self.a:
                with self.b:
                    with self.c:
                        raise KeyError("boom")
        self.assertPublishesNothing()

    def test_exception_caught_between_scopes(self):
        with self.a:
            with self.b:
                with self.assertRaises(KeyError):
                    with self.c:
                        raise KeyError("boom")
                self.assertEqual(otc.read(), self.b.get())
                with self.assertRaises(ValueError):
                    with self.c:
                        otc.update_span_id(SPAN)
                        self.c.destroy()
                        raise ValueError("after destroying the context")
                self.assertEqual(otc.read(), self.b.get())
            self.assertEqual(otc.read(), self.a.get())
        self.assertPublishesNothing()

    def test_detach_and_update_all_inside_a_scope(self):
        with self.a:
            with self.b:
                otc.detach()
            self.assertEqual(otc.read(), self.a.get())
            with self.b:
                otc.update_all(OTHER_TRACE, GRANDCHILD)
            self.assertEqual(otc.read(), self.a.get())
        with self.a:
            otc.detach()
        self.assertPublishesNothing()

    def test_leaving_a_scope_never_entered_here(self):
        with self.assertRaises(RuntimeError):
            self.a.__exit__(None, None, None)
        entered, leave = threading.Event(), threading.Event()
        after = []

        def other():
            with self.a:
                entered.set()
                leave.wait(30)
            after.append(otc.save().holds_record)

        t = threading.Thread(target=other)
        t.start()
        try:
            self.assertTrue(entered.wait(30))
            with self.assertRaises(RuntimeError):
                self.a.__exit__(None, None, None)
            self.assertPublishesNothing()
        finally:
            leave.set()
            t.join()
        self.assertEqual(after, [False], "the other thread's scope was still its own")

    def test_a_scope_that_could_not_enter_leaves_nothing(self):
        self.b.destroy()
        with self.a:
            with self.assertRaises(ValueError):
                with self.b:
                    pass
            with self.assertRaises(RuntimeError):
                self.b.__exit__(None, None, None)
            self.assertEqual(otc.read(), self.a.get())
        self.assertPublishesNothing()


class Threads(Clean):
    N = 8
    ROUNDS = 2000

    def run_threads(self, target, n):
        """Runs target(i) in n threads; the exceptions they raised."""
        failures = []

        def run(i):
            try:
                target(i)
            except BaseException as e:  # pylint: disable=broad-except
                failures.append((i, e))

        threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return failures

    def test_each_thread_reads_back_its_own_context(self):
        key = fresh_key()
        barrier = threading.Barrier(self.N, timeout=60)

        def worker(i):
            trace = bytes([i + 1]) * 16
            ctx = otc.Context(trace, bytes([i + 1]) * 8, 1, attrs={key: "worker-%d" % i})
            try:
                with ctx:
                    barrier.wait()
                    for n in range(self.ROUNDS):
                        child = struct.pack(">Q", (i << 32) | (n + 1))
                        otc.update_span_id(child)
                        rec = otc.read()
                        if value(rec) != (trace, child, 1, {key: b"worker-%d" % i}):
                            raise AssertionError((n, rec))
                    barrier.wait()
                if otc.save().holds_record:
                    raise AssertionError("still publishing")
            except BaseException:
                barrier.abort()
                raise
            finally:
                ctx.destroy()

        self.assertEqual(self.run_threads(worker, self.N), [])

    def test_many_threads_attach_one_context_at_once(self):
        key = fresh_key()
        shared = otc.Context(TRACE, SPAN, 1, {key: "shared"})
        first = value(shared.get())
        barrier = threading.Barrier(self.N + 1, timeout=60)
        seen = {}

        def task(i):
            own = struct.pack(">Q", i + 1)
            try:
                with shared:
                    barrier.wait()  # 1: all publish the context at once
                    at_once = value(otc.read())
                    otc.update_span_id(own)  # its own record only
                    barrier.wait()  # 2: the caller edits the context
                    barrier.wait()  # 3: edited
                    after_edit = value(otc.read())
                    shared.update()
                    again = value(otc.read())
                seen[i] = (at_once, after_edit, again, otc.save().holds_record)
            except BaseException:
                barrier.abort()
                raise

        def caller():
            barrier.wait()
            barrier.wait()
            shared.set_attr(key, "edited")
            shared.set_span_id(CHILD)
            barrier.wait()

        helper = threading.Thread(target=caller)
        helper.start()
        self.assertEqual(self.run_threads(task, self.N), [])
        helper.join()
        edited = (TRACE, CHILD, 1, {key: b"edited"})
        for i in range(self.N):
            own = struct.pack(">Q", i + 1)
            self.assertEqual(seen[i], (first, (TRACE, own, 1, {key: b"shared"}), edited, False),
                             "thread %d" % i)
        self.assertEqual(value(shared.get()), edited)
        shared.destroy()

    def check_threads_keep_their_copies(self, drop):
        """Threads publish copies of a context; `drop(holder)` gets rid of
        it (holder[0] is the only reference left); they keep publishing
        their copies, until each puts back what it published before."""
        key = fresh_key()
        holder = [otc.Context(TRACE, SPAN, 1, {key: "kept"})]
        expected = value(holder[0].get())
        gone = weakref.ref(holder[0])
        barrier = threading.Barrier(self.N + 1, timeout=60)
        seen = {}

        def task(i):
            saved = otc.Context()
            try:
                holder[0].attach(saved)
                barrier.wait()  # 1: all publish it
                barrier.wait()  # 2: it is gone
                seen[i] = value(otc.read())
                saved.update()
                seen[i] = (seen[i], otc.save().holds_record)
            except BaseException:
                barrier.abort()
                raise

        def caller():
            barrier.wait()
            drop(holder)
            barrier.wait()

        helper = threading.Thread(target=caller)
        helper.start()
        self.assertEqual(self.run_threads(task, self.N), [])
        helper.join()
        self.assertEqual(seen, {i: (expected, False) for i in range(self.N)})
        return gone

    def test_context_closed_while_threads_publish_copies(self):
        def close(holder):
            holder[0].close()
            assert holder[0].address is None
        self.check_threads_keep_their_copies(close)

    def test_context_collected_while_threads_publish_copies(self):
        collected = []

        def collect(holder):
            gone = weakref.ref(holder[0])
            holder.clear()
            gc.collect()
            collected.append(gone() is None)
        gone = self.check_threads_keep_their_copies(collect)
        self.assertEqual(collected, [True], "collected while the threads published it")
        self.assertIsNone(gone())

    def test_no_leak_when_threads_that_attached_it_ended(self):
        ctx = otc.Context(TRACE, SPAN, 1)
        gone = weakref.ref(ctx)
        results = []

        def publish(c):
            with c:
                with c:
                    results.append(value(otc.read()))
            c.attach(otc.Context())
            results.append(value(otc.read()))
            # The thread ends publishing it.

        for _ in range(4):
            t = threading.Thread(target=publish, args=(ctx,))
            t.start()
            t.join()
            del t
        self.assertEqual(results, [(TRACE, SPAN, 1, {})] * 8)
        del ctx
        self.assertIsNone(gone(), "no reference left by the threads")
        gc.collect()
        self.assertIsNone(gone())

    def test_a_new_thread_publishes_nothing(self):
        # Threads that ended publishing gave their records back; a new one
        # starts with nothing, and publishes its own.
        def end_publishing(i):
            otc.update_all(TRACE, struct.pack(">Q", i + 1))

        self.assertEqual(self.run_threads(end_publishing, 16), [])
        seen = []

        def fresh(i):
            seen.append(otc.save().holds_record)
            otc.update_all(OTHER_TRACE, struct.pack(">Q", i + 100))
            seen.append(otc.read().span_id == struct.pack(">Q", i + 100))

        self.assertEqual(self.run_threads(fresh, 16), [])
        self.assertEqual(sorted(seen), [False] * 16 + [True] * 16)

    def test_edits_by_another_thread_are_never_seen_half_done(self):
        # Each call holds the GIL: attaching copies a whole value, never a
        # context halfway through copy_from() or the setters of one call.
        self.assertIsInstance(_lib.lib, ctypes.PyDLL)
        key = fresh_key()
        a = otc.Context(TRACE, SPAN, 1, {key: "a" * 10})
        b = otc.Context(OTHER_TRACE, CHILD, 0, {key: "b" * 250, 200: "x" * 250})
        values = [value(a.get()), value(b.get())]
        shared = a.copy()
        stop = threading.Event()

        def editor():
            n = 0
            while not stop.is_set():
                shared.copy_from(b if n % 2 else a)
                n += 1

        def reader(i):
            for _ in range(self.ROUNDS):
                shared.update()
                rec = value(otc.read())
                if rec not in values:
                    raise AssertionError(rec)
                copied = value(shared.copy().get())
                if copied not in values:
                    raise AssertionError(copied)

        t = threading.Thread(target=editor)
        t.start()
        try:
            self.assertEqual(self.run_threads(reader, 3), [])
        finally:
            stop.set()
            t.join()
        for c in (a, b, shared):
            c.destroy()

    @unittest.skipIf("tsan" in os.environ.get("LD_PRELOAD", ""),
                     "ThreadSanitizer ends the child of a multi-threaded fork (exit 66)")
    @unittest.skipIf(os.environ.get("OTEL_TEST_EMULATED"),
                     "qemu-user crashes when the child of a multi-threaded fork starts a thread")
    def test_fork_keeps_the_forking_threads_record(self):
        key = fresh_key()
        ctx = otc.Context(TRACE, SPAN, 1, {key: "parent"})
        inner = otc.Context(TRACE, CHILD, 1)
        started, stop = threading.Event(), threading.Event()

        def other():
            with otc.Context(OTHER_TRACE, GRANDCHILD):
                started.set()
                stop.wait(30)

        t = threading.Thread(target=other)
        t.start()
        self.assertTrue(started.wait(30))
        r, w = os.pipe()
        try:
            with ctx:
                pid = os.fork()
                if pid == 0:  # the child: report, and leave at once
                    code = 1
                    try:
                        ok = otc.read() == ctx.get()
                        with inner:
                            ok = ok and otc.read() == inner.get()
                        ok = ok and otc.read() == ctx.get()
                        threads = self.run_threads(
                            lambda i: otc.update_all(OTHER_TRACE, CHILD), 2)
                        ok = ok and threads == [] and otc.read() == ctx.get()
                        os.write(w, b"1" if ok else b"0")
                        code = 0
                    finally:
                        os._exit(code)
                os.close(w)
                w = -1
                answer = os.read(r, 1)
                _, status = os.waitpid(pid, 0)
                self.assertEqual(otc.read(), ctx.get(), "the parent's record")
            self.assertEqual(status, 0)
            self.assertEqual(answer, b"1", "the child's thread lost its record")
        finally:
            stop.set()
            t.join()
            os.close(r)
            if w >= 0:
                os.close(w)
        ctx.destroy()
        inner.destroy()


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

    def test_a_payload_of_the_maximum_size_reads_back(self):
        # 65,536 bytes, the eBPF profiler's limit: published, read back and
        # decoded whole; one byte more is refused and changes nothing.
        from otel_thread_ctx import _lib  # pylint: disable=import-outside-toplevel
        n = 32768
        otc.process.publish({"fill": "m" * n})
        n += _lib.PROCESS_PAYLOAD_MAX - otc.process.query().payload_size
        otc.process.update({"fill": "m" * n})
        info = otc.process.query()
        self.assertEqual(info.payload_size, _lib.PROCESS_PAYLOAD_MAX)
        ctx = read_own_process()
        self.assertEqual(len(ctx.payload), _lib.PROCESS_PAYLOAD_MAX)
        self.assertEqual(ctx.resource["fill"], "m" * n)
        from otel_thread_ctx import inspect  # pylint: disable=import-outside-toplevel
        self.assertEqual(inspect.decode_process(ctx.payload).resource["fill"], "m" * n)
        with self.assertRaises(ThreadCtxError) as cm:
            otc.process.update({"fill": "m" * (n + 1)})
        self.assertEqual(cm.exception.code, Error.E2BIG)
        self.assertEqual(read_own_process().payload, ctx.payload)

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

    def test_invalid_utf8_is_kept_as_bytes_and_escaped_as_text(self):
        # Another process may publish any bytes: no reader raises on them.
        rec = otc.record_decode(self.record(entries=bytes([5, 1, 0xFF])))
        self.assertEqual(dict(rec.raw_attrs), {5: b"\xff"})
        self.assertEqual(dict(rec.attrs), {5: "\\xff"})
        self.assertEqual(list(rec.named_attrs().values()), ["\\xff"])
        self.assertEqual(list(rec.named_raw_attrs().values()), [b"\xff"])
        self.assertIn("\\\\xff", repr(rec))
        self.assertEqual(otc.escape(b"\xff\x1b\x7f\\"), "\\xff\\x1b\\x7f\\x5c")
        self.assertEqual(otc.escape("\u00e9\u009b\n".encode()), "\u00e9\\xc2\\x9b\\x0a")

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
