# SPDX-License-Identifier: Apache-2.0
"""Python binding of libotel-thread-ctx: publish, per OS thread, which trace
and span the thread runs (OpenTelemetry thread context, OTEP 4947).

Uses only the standard library (ctypes).  The shared library is found through
$OTEL_THREAD_CTX_LIBRARY, then pkg-config, then the dynamic loader (see
_lib.find_library).  The model is the C API's (include/otel_thread_ctx.h):

    route = key_register("http.route")          # at start-up
    ctx = Context(trace_id=..., span_id=..., flags=1, attrs={route: "GET /"})
    with ctx:                                   # this thread runs that span
        ctx.update_span_id(child_span_id)       # a child span
    ctx.destroy()

Errors of the library raise ThreadCtxError (an OSError whose errno is the
library's negative code and whose strerror is otel_thread_ctx_strerror()).
Values that cannot be passed to C unchanged (an id of the wrong length, flags
over 255, a name with a NUL byte) raise TypeError or ValueError before any
call: nothing is truncated or wrapped.

Threads.  A context attached to a thread belongs to that thread (the C rule):
other threads get EBUSY.  A Context keeps its C context until destroy() or
until it is collected, and an attached one is kept alive by the binding until
it is detached.  When a Python thread ends with a context attached, the
context is detached (by the binding as the thread's state is cleared, or by
the library as the OS thread exits) and the Context stays usable.
"""

import ctypes
import enum
import threading
import types
import weakref
from dataclasses import dataclass

from . import _lib
from ._lib import ATTRS_MAX, KEY_MAX, KEY_NAME_MAX, RECORD_SIZE, VALUE_MAX

__all__ = [
    "ATTRS_MAX", "KEY_MAX", "KEY_NAME_MAX", "RECORD_SIZE", "VALUE_MAX",
    "Context", "Error", "Record", "SelfCheck", "SelfCheckStatus",
    "ThreadCtxError", "current", "detach", "key_count", "key_find",
    "key_name", "key_register", "library_path", "read", "record_decode",
    "self_check", "strerror",
]

_c = _lib.lib
# The path the library was loaded from (or the name the loader resolved).
library_path = _lib.path

_UINT_MAX = 0xFFFFFFFF


class Error(enum.IntEnum):
    """enum otel_thread_ctx_error (otel_thread_ctx.h).  Codes named after an
    errno equal its negation."""

    OK = 0
    E2BIG = -7
    ENOMEM = -12
    EBUSY = -16
    ENOSPC = -28
    ENULL = -4001
    EIDS = -4002
    EKEY = -4003
    EVALUE = -4004
    EUTF8 = -4005
    EPENDING = -4006
    ETHREAD = -4007
    ENOCTX = -4008
    EINVALID = -4009
    ETRUNCATED = -4010
    ESLOT = -4011
    ENAME = -4012
    EKEYS = -4013
    EUNKNOWNKEY = -4014
    EPUBLISHED = -4015
    ENOTPUBLISHED = -4016
    EATTR = -4017
    EMAP = -4018
    ESYS = -4019
    EDUPKEY = -4020
    EOPTIONS = -4021


def strerror(code):
    """The library's English description of an error code."""
    return _c.otel_thread_ctx_strerror(int(code)).decode("utf-8", "replace")


class ThreadCtxError(OSError):
    """A call into the library failed.

    `errno` and `code` hold the library's (negative) error code, `strerror`
    its description, `name` the code's name ("EBUSY"), or None for a code
    this binding does not know yet.
    """

    def __init__(self, code, function=None):
        super().__init__(code, strerror(code))
        self.code = code
        try:
            self.name = Error(code).name
        except ValueError:
            self.name = None
        self.function = function

    def __str__(self):
        where = "%s: " % self.function if self.function else ""
        return "%s%s (%s)" % (where, self.strerror, self.name or self.code)


def _check(rc, function):
    if rc != 0:
        raise ThreadCtxError(rc, function)


# -- Argument conversion: reject what C would truncate or wrap. --

def _id_bytes(value, size, what):
    if isinstance(value, str):
        try:
            data = bytes.fromhex(value)
        except ValueError:
            raise ValueError("%s: not a hexadecimal string: %r" % (what, value)) from None
    elif isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
    else:
        raise TypeError("%s must be bytes or a hex string, not %s"
                        % (what, type(value).__name__))
    if len(data) != size:
        raise ValueError("%s must be %d bytes, got %d" % (what, size, len(data)))
    return data


def _flags(value):
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError("trace flags must be an int, not %s" % type(value).__name__)
    if not 0 <= value <= 0xFF:
        raise ValueError("trace flags must be 0..255, got %d" % value)
    return value


def _name_bytes(name):
    if isinstance(name, str):
        data = name.encode("utf-8")
    elif isinstance(name, (bytes, bytearray, memoryview)):
        data = bytes(name)
    else:
        raise TypeError("key name must be str or bytes, not %s" % type(name).__name__)
    if b"\0" in data:
        raise ValueError("key name contains a NUL byte: %r" % (name,))
    return data


def _uint(value, what):
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError("%s must be an int, not %s" % (what, type(value).__name__))
    if not 0 <= value <= _UINT_MAX:
        raise ValueError("%s out of range: %d" % (what, value))
    return value


def _key_index(key):
    """A key index, or a registered key name (looked up, never registered)."""
    if isinstance(key, (str, bytes, bytearray, memoryview)):
        return key_find(key)
    return _uint(key, "key index")


def _value_bytes(value):
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError("attribute value must be str or bytes, not %s" % type(value).__name__)


def _attr_array(attrs):
    """(ctypes array of struct otel_thread_ctx_attr, count, keep-alive list)."""
    items = list(attrs.items()) if hasattr(attrs, "items") else list(attrs)
    array = (_lib.Attr * max(len(items), 1))()
    keep = []
    for i, item in enumerate(items):
        try:
            key, value = item
        except (TypeError, ValueError):
            raise TypeError("attributes must be a mapping or (key, value) pairs") from None
        data = _value_bytes(value)
        if len(data) > _UINT_MAX:
            raise ValueError("attribute value of %d bytes" % len(data))
        buf = ctypes.c_char_p(data)
        keep.append(buf)
        array[i].key = _key_index(key)
        array[i].len = len(data)
        array[i].value = ctypes.cast(buf, ctypes.c_void_p).value
    return array, len(items), keep


# -- Keys --

def key_register(name):
    """The index of key `name`, registering it if new (takes a lock)."""
    index = ctypes.c_uint()
    _check(_c.otel_thread_ctx_key_register(_name_bytes(name), ctypes.byref(index)),
           "key_register")
    return index.value


def key_find(name):
    """The index of a registered key; ThreadCtxError EUNKNOWNKEY if there is none."""
    index = ctypes.c_uint()
    _check(_c.otel_thread_ctx_key_find(_name_bytes(name), ctypes.byref(index)),
           "key_find")
    return index.value


def key_name(index):
    """The name of key `index`, or None if no key has that index."""
    name = _c.otel_thread_ctx_key_name(_uint(index, "key index"))
    return None if name is None else name.decode("utf-8")


def key_count():
    """How many keys are registered (the next index handed out)."""
    return _c.otel_thread_ctx_key_count()


# -- Contexts --

# Context objects by the address of their C context, so that attach and
# detach can hand back the object that was replaced.
_live = weakref.WeakValueDictionary()
# Contexts attached to some thread: kept alive while the library holds them.
_attached = {}
_registry_lock = threading.RLock()
_thread = threading.local()


class _ThreadEnd:
    """Lives in a thread's threading.local; dropped, on that thread, when the
    thread's state is cleared.  Detaches a Context still attached there and
    stops keeping it alive for the thread, so that it is freed when its
    object is collected."""

    def __init__(self):
        self.ident = threading.get_ident()

    def __del__(self):
        if threading.get_ident() != self.ident:
            return
        ptr = _c.otel_thread_ctx_current()
        if ptr is None:
            return
        with _registry_lock:
            if ptr not in _attached:
                return  # attached by C code: the library cleans it up
            prev = ctypes.c_void_p()
            if _c.otel_thread_ctx_detach(ctypes.byref(prev)) == 0:
                _attached.pop(ptr, None)


def _thread_setup():
    if getattr(_thread, "end", None) is None:
        _thread.end = _ThreadEnd()
        _thread.stack = []


def _object_for(ptr):
    """The Context of a C context address (None for NULL); one attached by C
    code gets a Context that does not free it when collected."""
    if ptr is None:
        return None
    obj = _live.get(ptr)
    if obj is None:
        obj = Context._wrap(ptr)
    return obj


def _released(ptr):
    """The Context of a C context the library handed back: taken out of
    _attached, and returned (which keeps it alive) before anything else."""
    if ptr is None:
        return None
    obj = _attached.pop(ptr, None)
    return obj if obj is not None else _object_for(ptr)


def _attached_now(ctx, prev_ptr):
    """Bookkeeping after ctx replaced prev_ptr on the calling thread."""
    with _registry_lock:
        _attached[ctx._ptr] = ctx
        if prev_ptr == ctx._ptr:
            return ctx
        return _released(prev_ptr)


class Context:
    """An otel_thread_ctx: a draft and a published record.

    The setters edit the draft; update() commits it, and a thread that has
    the context attached publishes the commit.  `with ctx:` publishes ctx on
    the calling thread (update_attach) and, on exit, puts back the context
    the thread published before (or none).
    """

    __slots__ = ("_ptr", "_owned", "__weakref__")

    def __init__(self, trace_id=None, span_id=None, flags=0, attrs=None):
        """A new context; ids, flags and attributes given here go to its
        draft (the published record stays empty until a commit)."""
        ptr = ctypes.c_void_p()
        _check(_c.otel_thread_ctx_create(ctypes.byref(ptr)), "create")
        self._ptr = ptr.value
        self._owned = True
        _live[self._ptr] = self
        try:
            if trace_id is not None or span_id is not None:
                self.set_ids(trace_id, span_id, flags)
            elif flags:
                self.set_trace_flags(flags)
            if attrs:
                self.set_attrs(attrs)
        except BaseException:
            self.destroy()
            raise

    @classmethod
    def _wrap(cls, ptr):
        obj = cls.__new__(cls)
        obj._ptr = ptr
        obj._owned = False
        _live[ptr] = obj
        return obj

    def _handle(self):
        if self._ptr is None:
            raise ValueError("the context is destroyed")
        return self._ptr

    @property
    def address(self):
        """The C context's address (None once destroyed)."""
        return self._ptr

    def destroy(self):
        """Frees the context; attached to the calling thread, it is
        unpublished first.  ThreadCtxError EBUSY while it is attached to
        another thread (the context is then unchanged and still usable)."""
        if self._ptr is None:
            return
        with _registry_lock:
            _check(_c.otel_thread_ctx_destroy(self._ptr), "destroy")
            _attached.pop(self._ptr, None)
            _live.pop(self._ptr, None)
            self._ptr = None

    close = destroy

    def __del__(self):
        # Attached contexts are held by _attached, so this one is detached,
        # unless the interpreter is shutting down; then EBUSY leaves it be.
        try:
            if self._owned and self._ptr is not None:
                _c.otel_thread_ctx_destroy(self._ptr)
        except Exception:  # pylint: disable=broad-except
            pass  # a partly constructed object, or interpreter shutdown

    # Draft setters.

    def set_ids(self, trace_id, span_id, flags=0):
        """Sets trace id (16 bytes), span id (8 bytes) and trace flags."""
        _check(_c.otel_thread_ctx_set_ids(
            self._handle(), _id_bytes(trace_id, 16, "trace_id"),
            _id_bytes(span_id, 8, "span_id"), _flags(flags)), "set_ids")

    def set_span_id(self, span_id):
        _check(_c.otel_thread_ctx_set_span_id(
            self._handle(), _id_bytes(span_id, 8, "span_id")), "set_span_id")

    def set_trace_flags(self, flags):
        _check(_c.otel_thread_ctx_set_trace_flags(self._handle(), _flags(flags)),
               "set_trace_flags")

    def clear_ids(self):
        _check(_c.otel_thread_ctx_clear_ids(self._handle()), "clear_ids")

    def set_attr(self, key, value):
        """Sets attribute `key` (an index, or a registered name) to `value`
        (str, or bytes of UTF-8; at most 255 bytes)."""
        data = _value_bytes(value)
        _check(_c.otel_thread_ctx_set_attr(self._handle(), _key_index(key), data, len(data)),
               "set_attr")

    def remove_attr(self, key):
        _check(_c.otel_thread_ctx_remove_attr(self._handle(), _key_index(key)), "remove_attr")

    def clear_attrs(self):
        _check(_c.otel_thread_ctx_clear_attrs(self._handle()), "clear_attrs")

    def clear(self):
        _check(_c.otel_thread_ctx_clear(self._handle()), "clear")

    def set_attrs(self, attrs):
        """Replaces all attributes: a mapping, or (key, value) pairs."""
        array, n, keep = _attr_array(attrs)
        _check(_c.otel_thread_ctx_set_attrs(self._handle(), array, n), "set_attrs")
        del keep

    # Commits and publication.

    def update(self):
        """Commits the draft (published at once if attached here)."""
        _check(_c.otel_thread_ctx_update(self._handle()), "update")

    def update_span_id(self, span_id):
        """A child span: sets the span id and commits, in one call."""
        _check(_c.otel_thread_ctx_update_span_id(
            self._handle(), _id_bytes(span_id, 8, "span_id")), "update_span_id")

    def update_all(self, trace_id, span_id, flags=0, attrs=()):
        """A new request: ids, flags and all attributes, checked and
        committed in one call."""
        array, n, keep = _attr_array(attrs)
        _check(_c.otel_thread_ctx_update_all(
            self._handle(), _id_bytes(trace_id, 16, "trace_id"),
            _id_bytes(span_id, 8, "span_id"), _flags(flags), array, n), "update_all")
        del keep

    def invalidate(self):
        """Withdraws what the context publishes (a thread that has it
        attached publishes nothing) until the next commit."""
        _check(_c.otel_thread_ctx_invalidate(self._handle()), "invalidate")

    def attach(self):
        """Publishes the context on the calling thread; returns the Context
        it replaces (or None), which the caller owns again.  ThreadCtxError
        EPENDING when the draft has uncommitted edits."""
        return self._attach(_c.otel_thread_ctx_attach, "attach")

    def update_attach(self):
        """update() and attach() with one store to the slot."""
        return self._attach(_c.otel_thread_ctx_update_attach, "update_attach")

    def _attach(self, function, name):
        _thread_setup()
        prev = ctypes.c_void_p()
        _check(function(self._handle(), ctypes.byref(prev)), name)
        return _attached_now(self, prev.value)

    def __enter__(self):
        prev = self.update_attach()
        _thread.stack.append(prev)
        return self

    def __exit__(self, *exc):
        prev = _thread.stack.pop()
        if prev is self:
            return False  # it was attached already: nothing to put back
        if prev is None:
            detach()
        else:
            prev.attach()
        return False

    def __repr__(self):
        if self._ptr is None:
            return "<otel_thread_ctx.Context destroyed>"
        return "<otel_thread_ctx.Context at 0x%x>" % self._ptr


def detach():
    """Unpublishes the calling thread's context; returns it (or None)."""
    prev = ctypes.c_void_p()
    _check(_c.otel_thread_ctx_detach(ctypes.byref(prev)), "detach")
    with _registry_lock:
        return _released(prev.value)


def current():
    """The Context attached to the calling thread, or None."""
    with _registry_lock:
        return _object_for(_c.otel_thread_ctx_current())


# -- Readers --

@dataclass(frozen=True)
class Record:
    """A copy of a published record.  `raw_attrs` maps key index to the
    stored bytes (the effective attributes: the last duplicate wins);
    `attrs` to their text, decoded as UTF-8 (strictly)."""

    trace_id: bytes
    span_id: bytes
    flags: int
    raw_attrs: types.MappingProxyType

    @property
    def attrs(self):
        return types.MappingProxyType(
            {k: v.decode("utf-8") for k, v in self.raw_attrs.items()})

    def named_attrs(self):
        """The attributes keyed by registered name (index where unnamed)."""
        out = {}
        for k, v in self.attrs.items():
            name = key_name(k)
            out[k if name is None else name] = v
        return types.MappingProxyType(out)

    def __repr__(self):
        return "Record(trace_id=%s, span_id=%s, flags=0x%02x, attrs=%r)" % (
            self.trace_id.hex(), self.span_id.hex(), self.flags, dict(self.attrs))


def _record_from(rec):
    it = _lib.AttrIter()
    attr = _lib.Attr()
    _c.otel_thread_ctx_attr_iter_init(ctypes.byref(it), ctypes.byref(rec))
    attrs = {}
    while _c.otel_thread_ctx_attr_iter_next(ctypes.byref(it), ctypes.byref(attr)):
        attrs[attr.key] = ctypes.string_at(attr.value, attr.len) if attr.len else b""
    return Record(bytes(rec.trace_id), bytes(rec.span_id), rec.trace_flags,
                  types.MappingProxyType(attrs))


def read():
    """The record the calling thread publishes.  ThreadCtxError ENOCTX when
    it publishes none, EINVALID when the record is marked invalid."""
    rec = _lib.Record()
    _check(_c.otel_thread_ctx_read(ctypes.byref(rec)), "read")
    return _record_from(rec)


def record_decode(data):
    """Checks and decodes the bytes of a record obtained elsewhere."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError("record_decode needs bytes, not %s" % type(data).__name__)
    data = bytes(data)
    rec = _lib.Record()
    _check(_c.otel_thread_ctx_record_decode(data, len(data), ctypes.byref(rec)),
           "record_decode")
    return _record_from(rec)


# -- Self-check --

class SelfCheckStatus(enum.IntEnum):
    """enum otel_thread_ctx_self_check_status."""

    OK = 0
    NOT_EXPORTED = 1
    MISMATCH = 2
    UNKNOWN = 3


@dataclass(frozen=True)
class SelfCheck:
    """What otel_thread_ctx_self_check() found for the calling thread."""

    status: int
    slot: int
    own_slot: int
    slot_is_own: bool
    exported: int
    module: str
    exported_module: str
    exporting_modules: int
    reason: str

    @property
    def ok(self):
        return self.status == SelfCheckStatus.OK


def self_check():
    """Is the slot this library writes the one a profiler finds?  Returns a
    SelfCheck whatever the answer (look at .ok and .reason); not
    async-signal-safe (it walks the loaded modules)."""
    res = _lib.SelfCheck()
    rc = _c.otel_thread_ctx_self_check(ctypes.byref(res))
    if rc not in (Error.OK, Error.ESLOT):
        raise ThreadCtxError(rc, "self_check")

    def text(b):
        return None if b is None else b.decode("utf-8", "replace")

    try:
        status = SelfCheckStatus(res.status)
    except ValueError:
        status = res.status
    return SelfCheck(status, res.slot, res.own_slot, bool(res.slot_is_own), res.exported,
                     text(res.module),
                     text(res.exported_module), res.exporting_modules,
                     res.reason.decode("utf-8", "replace"))
