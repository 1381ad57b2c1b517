# SPDX-License-Identifier: Apache-2.0
"""Python binding of libotel-thread-ctx: publish, per OS thread, which trace
and span the thread runs (OpenTelemetry thread context, OTEP 4947), and the
process context that names its attributes (OTEP 4719).

Uses only the standard library (ctypes).  The shared library is found through
$OTEL_THREAD_CTX_LIBRARY, then pkg-config, then the dynamic loader (see
_lib.find_library).  The model is the C API's (include/otel_thread_ctx.h):

    route = key_register("http.route")          # at start-up
    process.publish({"service.name": "checkout"})
    ctx = Context(trace_id=..., span_id=..., flags=1, attrs={route: "GET /"})
    with ctx:                                   # this thread runs that span
        ctx.update_span_id(child_span_id)       # a child span
    ctx.destroy()

The submodule `process` publishes the process context (imported with this
package); `inspect` reads other processes (libotel-thread-ctx-inspect, loaded
only when `otel_thread_ctx.inspect` is imported).

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
the library as the OS thread exits) and the Context stays usable; one made
with free_with_thread=True is destroyed then instead.  A frozen context
(freeze()) may be attached by any number of threads at once.
"""

import ctypes
import enum
import threading
import types
import weakref
from dataclasses import dataclass, field
from typing import (Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple,
                    Union, cast)

from . import _lib
from ._lib import ATTRS_MAX, KEY_MAX, KEY_NAME_MAX, RECORD_SIZE, VALUE_MAX

__version__ = "1.0.0"

__all__ = [
    "ATTRS_MAX", "KEY_MAX", "KEY_NAME_MAX", "RECORD_SIZE", "VALUE_MAX",
    "AttrKey", "AttrValue", "Attrs", "Context", "Error", "Id", "Record",
    "SelfCheck", "SelfCheckStatus", "ThreadCtxError", "current", "detach",
    "key_count", "key_find", "key_name", "key_register", "library_path",
    "process", "read", "record_decode", "self_check", "strerror",
]

_c = _lib.lib
# The path the library was loaded from (or the name the loader resolved).
library_path: str = _lib.path

_UINT_MAX = 0xFFFFFFFF

# What the API takes.
Id = Union[str, bytes, bytearray, memoryview]
"""A trace or span id: its bytes, or their hexadecimal text."""
AttrKey = Union[int, str, bytes]
"""An attribute key: its index, or a registered key name."""
AttrValue = Union[str, bytes, bytearray, memoryview]
"""An attribute value: text, or its UTF-8 bytes."""
Attrs = Union[Mapping[Any, AttrValue], Iterable[Tuple[AttrKey, AttrValue]]]
"""Attributes: a mapping, or (key, value) pairs."""


class Error(enum.IntEnum):
    """enum otel_thread_ctx_error (otel_thread_ctx.h).  Codes named after an
    errno equal its negation.  The inspector's own codes are
    otel_thread_ctx.inspect.Error."""

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
    EFROZEN = -4022


def strerror(code: int) -> str:
    """The library's English description of an error code."""
    text = cast(bytes, _c.otel_thread_ctx_strerror(int(code)))
    return text.decode("utf-8", "replace")


# Names of codes the binding knows, beyond Error (the inspector adds its own).
_code_names: Dict[int, str] = {int(e): e.name for e in Error}


class ThreadCtxError(OSError):
    """A call into the library failed.

    `errno` and `code` hold the library's (negative) error code, `strerror`
    its description, `name` the code's name ("EBUSY"), or None for a code
    this binding does not know, and `function` the call that failed.
    """

    code: int
    name: Optional[str]
    function: Optional[str]

    def __init__(self, code: int, function: Optional[str] = None,
                 text: Optional[str] = None) -> None:
        code = int(code)
        super().__init__(code, strerror(code) if text is None else text)
        self.code = code
        self.name = _code_names.get(code)
        self.function = function

    def __str__(self) -> str:
        where = "%s: " % self.function if self.function else ""
        return "%s%s (%s)" % (where, self.strerror, self.name or self.code)


def _check(rc: int, function: str) -> None:
    if rc != 0:
        raise ThreadCtxError(rc, function)


# -- Argument conversion: reject what C would truncate or wrap. --

def _id_bytes(value: Id, size: int, what: str) -> bytes:
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


def _flags(value: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError("trace flags must be an int, not %s" % type(value).__name__)
    if not 0 <= value <= 0xFF:
        raise ValueError("trace flags must be 0..255, got %d" % value)
    return value


def _name_bytes(name: Union[str, bytes, bytearray, memoryview]) -> bytes:
    if isinstance(name, str):
        data = name.encode("utf-8")
    elif isinstance(name, (bytes, bytearray, memoryview)):
        data = bytes(name)
    else:
        raise TypeError("key name must be str or bytes, not %s" % type(name).__name__)
    if b"\0" in data:
        raise ValueError("key name contains a NUL byte: %r" % (name,))
    return data


def _uint(value: int, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError("%s must be an int, not %s" % (what, type(value).__name__))
    if not 0 <= value <= _UINT_MAX:
        raise ValueError("%s out of range: %d" % (what, value))
    return value


def _key_index(key: AttrKey) -> int:
    """A key index, or a registered key name (looked up, never registered)."""
    if isinstance(key, (str, bytes, bytearray, memoryview)):
        return key_find(key)
    return _uint(key, "key index")


def _value_bytes(value: AttrValue) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError("attribute value must be str or bytes, not %s" % type(value).__name__)


def _attr_array(attrs: Attrs) -> Tuple["ctypes.Array[_lib.Attr]", int, List[Any]]:
    """(ctypes array of struct otel_thread_ctx_attr, count, keep-alive list)."""
    if isinstance(attrs, Mapping):
        items: List[Any] = list(attrs.items())
    else:
        items = list(attrs)
    array = (_lib.Attr * max(len(items), 1))()
    keep: List[Any] = []
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

def key_register(name: Union[str, bytes]) -> int:
    """The index of key `name`, registering it if new (takes a lock)."""
    index = ctypes.c_uint()
    _check(_c.otel_thread_ctx_key_register(_name_bytes(name), ctypes.byref(index)),
           "key_register")
    return index.value


def key_find(name: Union[str, bytes, bytearray, memoryview]) -> int:
    """The index of a registered key; ThreadCtxError EUNKNOWNKEY if there is none."""
    index = ctypes.c_uint()
    _check(_c.otel_thread_ctx_key_find(_name_bytes(name), ctypes.byref(index)),
           "key_find")
    return index.value


def key_name(index: int) -> Optional[str]:
    """The name of key `index`, or None if no key has that index."""
    name = cast(Optional[bytes], _c.otel_thread_ctx_key_name(_uint(index, "key index")))
    return None if name is None else name.decode("utf-8")


def key_count() -> int:
    """How many keys are registered (the next index handed out)."""
    return int(_c.otel_thread_ctx_key_count())


# -- Contexts --

# Context objects by the address of their C context, so that attach and
# detach can hand back the object that was replaced.
_live: "weakref.WeakValueDictionary[int, Context]" = weakref.WeakValueDictionary()
# Contexts attached to some thread: kept alive while the library holds them,
# with how many threads hold each (more than one only for a frozen context).
_attached: Dict[int, "Context"] = {}
_holds: Dict[int, int] = {}
_registry_lock = threading.RLock()
_thread = threading.local()


def _hold(ctx: "Context") -> None:
    assert ctx._ptr is not None
    _attached[ctx._ptr] = ctx
    _holds[ctx._ptr] = _holds.get(ctx._ptr, 0) + 1


def _unhold(ptr: int) -> Optional["Context"]:
    """One thread let go of `ptr`: the Context, no longer kept alive by the
    binding once no thread holds it."""
    obj = _attached.get(ptr)
    left = _holds.get(ptr, 1) - 1
    if left <= 0:
        _attached.pop(ptr, None)
        _holds.pop(ptr, None)
    else:
        _holds[ptr] = left
    return obj


class _ThreadEnd:
    """Lives in a thread's threading.local; dropped, on that thread, when the
    thread's state is cleared.  Detaches a Context still attached there and
    stops keeping it alive for the thread, so that it is freed when its
    object is collected; one created with free_with_thread=True is
    destroyed there, as its thread ends."""

    def __init__(self) -> None:
        self.ident = threading.get_ident()

    def __del__(self) -> None:
        if threading.get_ident() != self.ident:
            return
        ptr = cast(Optional[int], _c.otel_thread_ctx_current())
        if ptr is None:
            return
        with _registry_lock:
            obj = _attached.get(ptr)
            if obj is None:
                return  # attached by C code: the library cleans it up
            if obj._free_with_thread:
                if _c.otel_thread_ctx_destroy(ptr) == 0:
                    _unhold(ptr)
                    _live.pop(ptr, None)
                    obj._ptr = None
                return
            prev = ctypes.c_void_p()
            if _c.otel_thread_ctx_detach(ctypes.byref(prev)) == 0:
                _unhold(ptr)


def _thread_setup() -> None:
    if getattr(_thread, "end", None) is None:
        _thread.end = _ThreadEnd()
        _thread.stack = []


def _object_for(ptr: Optional[int]) -> Optional["Context"]:
    """The Context of a C context address (None for NULL); one attached by C
    code gets a Context that does not free it when collected."""
    if ptr is None:
        return None
    # A frozen context whose caller gave up its reference (destroy()) is in
    # _attached only, while threads publish it.
    obj = _live.get(ptr) or _attached.get(ptr)
    if obj is None:
        obj = Context._wrap(ptr)
    return obj


def _released(ptr: Optional[int]) -> Optional["Context"]:
    """The Context of a C context the library handed back on this thread:
    one hold fewer, and returned (which keeps it alive) before anything
    else."""
    if ptr is None:
        return None
    obj = _unhold(ptr) if ptr in _attached else None
    return obj if obj is not None else _object_for(ptr)


def _attached_now(ctx: "Context", prev_ptr: Optional[int]) -> Optional["Context"]:
    """Bookkeeping after ctx replaced prev_ptr on the calling thread."""
    with _registry_lock:
        if prev_ptr == ctx._ptr:
            return ctx
        _hold(ctx)
        return _released(prev_ptr)


class Context:
    """An otel_thread_ctx: a draft and a published record.

    The setters edit the draft; update() commits it, and a thread that has
    the context attached publishes the commit.  `with ctx:` publishes ctx on
    the calling thread (update_attach) and, on exit, puts back the context
    the thread published before (or none).
    """

    __slots__ = ("_ptr", "_owned", "_free_with_thread", "_frozen", "__weakref__")

    _ptr: Optional[int]
    _owned: bool
    _free_with_thread: bool
    _frozen: bool

    def __init__(self, trace_id: Optional[Id] = None, span_id: Optional[Id] = None,
                 flags: int = 0, attrs: Optional[Attrs] = None, *,
                 capacity: Optional[int] = None, free_with_thread: bool = False) -> None:
        """A new context; ids, flags and attributes given here go to its
        draft (the published record stays empty until a commit).

        `capacity`: bytes of attribute entries its records hold (0 to
        ATTRS_MAX, the default; 0 for ids only): setters that would need
        more raise ENOSPC.  `free_with_thread`: the context belongs to the
        thread it is attached to when that thread ends, which destroys it
        (OTEL_THREAD_CTX_FREE_WITH_THREAD); it cannot be frozen."""
        self._ptr = None
        self._owned = True
        self._free_with_thread = bool(free_with_thread)
        self._frozen = False
        options = _lib.Options(ctypes.sizeof(_lib.Options),
                               _lib.FREE_WITH_THREAD if free_with_thread else 0,
                               ATTRS_MAX if capacity is None else _uint(capacity, "capacity"))
        ptr = ctypes.c_void_p()
        _check(_c.otel_thread_ctx_create_with(ctypes.byref(ptr), ctypes.byref(options)),
               "create_with")
        assert ptr.value is not None
        self._ptr = ptr.value
        _live[self._ptr] = self
        try:
            if trace_id is not None or span_id is not None:
                if trace_id is None or span_id is None:
                    raise TypeError("give both trace_id and span_id, or neither")
                self.set_ids(trace_id, span_id, flags)
            elif flags:
                self.set_trace_flags(flags)
            if attrs:
                self.set_attrs(attrs)
        except BaseException:
            self.destroy()
            raise

    @classmethod
    def _wrap(cls, ptr: int) -> "Context":
        obj = cls.__new__(cls)
        obj._ptr = ptr
        obj._owned = False
        obj._free_with_thread = False
        obj._frozen = False
        _live[ptr] = obj
        return obj

    def _handle(self) -> int:
        if self._ptr is None:
            raise ValueError("the context is destroyed")
        return self._ptr

    @property
    def address(self) -> Optional[int]:
        """The C context's address (None once destroyed)."""
        return self._ptr

    @property
    def frozen(self) -> bool:
        """Whether freeze() made this context immutable and shared."""
        return self._frozen

    @property
    def free_with_thread(self) -> bool:
        """Whether it was created with free_with_thread=True."""
        return self._free_with_thread

    def destroy(self) -> None:
        """Frees the context; attached to the calling thread, it is
        unpublished first.  ThreadCtxError EBUSY while it is attached to
        another thread (the context is then unchanged and still usable).
        A frozen context: gives up this object's reference; threads that
        have it attached keep theirs."""
        if self._ptr is None:
            return
        with _registry_lock:
            ptr = self._ptr
            _check(_c.otel_thread_ctx_destroy(ptr), "destroy")
            if not self._frozen:
                _attached.pop(ptr, None)
                _holds.pop(ptr, None)
            _live.pop(ptr, None)
            self._ptr = None

    close = destroy

    def __del__(self) -> None:
        # Attached contexts are held by _attached, so this one is detached,
        # unless the interpreter is shutting down; then EBUSY leaves it be.
        # A free_with_thread context left attached by a thread that ended
        # without the binding seeing it stays in _attached: its thread freed
        # it, so it must not be destroyed here.
        try:
            if self._owned and self._ptr is not None and self._ptr not in _attached:
                _c.otel_thread_ctx_destroy(self._ptr)
        except Exception:  # pylint: disable=broad-except
            pass  # a partly constructed object, or interpreter shutdown

    # Draft setters.

    def set_ids(self, trace_id: Id, span_id: Id, flags: int = 0) -> None:
        """Sets trace id (16 bytes), span id (8 bytes) and trace flags."""
        _check(_c.otel_thread_ctx_set_ids(
            self._handle(), _id_bytes(trace_id, 16, "trace_id"),
            _id_bytes(span_id, 8, "span_id"), _flags(flags)), "set_ids")

    def set_span_id(self, span_id: Id) -> None:
        _check(_c.otel_thread_ctx_set_span_id(
            self._handle(), _id_bytes(span_id, 8, "span_id")), "set_span_id")

    def set_trace_flags(self, flags: int) -> None:
        _check(_c.otel_thread_ctx_set_trace_flags(self._handle(), _flags(flags)),
               "set_trace_flags")

    def clear_ids(self) -> None:
        _check(_c.otel_thread_ctx_clear_ids(self._handle()), "clear_ids")

    def set_attr(self, key: AttrKey, value: AttrValue) -> None:
        """Sets attribute `key` (an index, or a registered name) to `value`
        (str, or bytes of UTF-8; at most 255 bytes)."""
        data = _value_bytes(value)
        _check(_c.otel_thread_ctx_set_attr(self._handle(), _key_index(key), data, len(data)),
               "set_attr")

    def remove_attr(self, key: AttrKey) -> None:
        _check(_c.otel_thread_ctx_remove_attr(self._handle(), _key_index(key)), "remove_attr")

    def clear_attrs(self) -> None:
        _check(_c.otel_thread_ctx_clear_attrs(self._handle()), "clear_attrs")

    def clear(self) -> None:
        _check(_c.otel_thread_ctx_clear(self._handle()), "clear")

    def set_attrs(self, attrs: Attrs) -> None:
        """Replaces all attributes: a mapping, or (key, value) pairs."""
        array, n, keep = _attr_array(attrs)
        _check(_c.otel_thread_ctx_set_attrs(self._handle(), array, n), "set_attrs")
        del keep

    # Commits and publication.

    def update(self) -> None:
        """Commits the draft (published at once if attached here)."""
        _check(_c.otel_thread_ctx_update(self._handle()), "update")

    def update_span_id(self, span_id: Id) -> None:
        """A child span: sets the span id and commits, in one call."""
        _check(_c.otel_thread_ctx_update_span_id(
            self._handle(), _id_bytes(span_id, 8, "span_id")), "update_span_id")

    def update_trace_flags(self, flags: int) -> None:
        """The sampling decision arrived: sets the trace flags and commits,
        in one call."""
        _check(_c.otel_thread_ctx_update_trace_flags(self._handle(), _flags(flags)),
               "update_trace_flags")

    def update_all(self, trace_id: Id, span_id: Id, flags: int = 0,
                   attrs: Attrs = ()) -> None:
        """A new request: ids, flags and all attributes, checked and
        committed in one call."""
        array, n, keep = _attr_array(attrs)
        _check(_c.otel_thread_ctx_update_all(
            self._handle(), _id_bytes(trace_id, 16, "trace_id"),
            _id_bytes(span_id, 8, "span_id"), _flags(flags), array, n), "update_all")
        del keep

    def invalidate(self) -> None:
        """Withdraws what the context publishes (a thread that has it
        attached publishes nothing) until the next commit."""
        _check(_c.otel_thread_ctx_invalidate(self._handle()), "invalidate")

    def freeze(self) -> None:
        """Commits what the context holds and makes it immutable and shared:
        any number of threads may attach it at once (a task that runs on
        several threads).  Setters, commits and invalidate then raise
        EFROZEN; freezing again does nothing.  ThreadCtxError EOPTIONS for a
        free_with_thread context, EBUSY while attached to another thread."""
        _check(_c.otel_thread_ctx_freeze(self._handle()), "freeze")
        self._frozen = True

    def committed(self) -> "Record":
        """What the context has committed (its published record, even while
        invalidated), read back: to restore a parent span, or copy a
        context to a new task."""
        rec = _lib.Record()
        _check(_c.otel_thread_ctx_committed(self._handle(), ctypes.byref(rec)), "committed")
        return _record_from(rec)

    def attach(self) -> Optional["Context"]:
        """Publishes the context on the calling thread; returns the Context
        it replaces (or None), which the caller owns again.  ThreadCtxError
        EPENDING when the draft has uncommitted edits."""
        return self._attach(_c.otel_thread_ctx_attach, "attach")

    def update_attach(self) -> Optional["Context"]:
        """update() and attach() with one store to the slot."""
        return self._attach(_c.otel_thread_ctx_update_attach, "update_attach")

    def _attach(self, function: Callable[..., int], name: str) -> Optional["Context"]:
        _thread_setup()
        prev = ctypes.c_void_p()
        _check(function(self._handle(), ctypes.byref(prev)), name)
        return _attached_now(self, prev.value)

    def __enter__(self) -> "Context":
        prev = self.update_attach()
        _thread.stack.append(prev)
        return self

    def __exit__(self, *exc: object) -> None:
        prev = _thread.stack.pop()
        if prev is self:
            return  # it was attached already: nothing to put back
        if prev is None:
            detach()
        else:
            prev.attach()

    def __repr__(self) -> str:
        if self._ptr is None:
            return "<otel_thread_ctx.Context destroyed>"
        return "<otel_thread_ctx.Context%s at 0x%x>" % (
            " frozen" if self._frozen else "", self._ptr)


def detach() -> Optional[Context]:
    """Unpublishes the calling thread's context; returns it (or None)."""
    prev = ctypes.c_void_p()
    _check(_c.otel_thread_ctx_detach(ctypes.byref(prev)), "detach")
    with _registry_lock:
        return _released(prev.value)


def current() -> Optional[Context]:
    """The Context attached to the calling thread, or None."""
    with _registry_lock:
        return _object_for(cast(Optional[int], _c.otel_thread_ctx_current()))


# -- Readers --

@dataclass(frozen=True)
class Record:
    """A copy of a record.  `raw_attrs` maps key index to the stored bytes
    (the effective attributes: the last duplicate wins, and entries whose
    index the key map does not name are left out); `attrs` to their text,
    decoded as UTF-8 (strictly).  `key_names` is the key map the record was
    read with when it is another process's (otel_thread_ctx.inspect); None
    for this process's registry."""

    trace_id: bytes
    span_id: bytes
    flags: int
    raw_attrs: Mapping[int, bytes]
    key_names: Optional[Tuple[str, ...]] = field(default=None, repr=False, compare=False)

    @property
    def attrs(self) -> Mapping[int, str]:
        return types.MappingProxyType(
            {k: v.decode("utf-8") for k, v in self.raw_attrs.items()})

    def named_attrs(self) -> Mapping[Union[int, str], str]:
        """The attributes keyed by name (index where unnamed): from the key
        map the record was read with, else this process's registry."""
        out: Dict[Union[int, str], str] = {}
        for k, v in self.attrs.items():
            if self.key_names is not None:
                name = self.key_names[k] if k < len(self.key_names) else None
            else:
                name = key_name(k)
            out[k if name is None else name] = v
        return types.MappingProxyType(out)

    def __repr__(self) -> str:
        # Another process's record: its attributes by name.
        attrs: Mapping[Any, str] = self.attrs
        if self.key_names is not None:
            attrs = self.named_attrs()
        return "Record(trace_id=%s, span_id=%s, flags=0x%02x, attrs=%r)" % (
            self.trace_id.hex(), self.span_id.hex(), self.flags, dict(attrs))


def _record_from(rec: _lib.Record, key_names: Optional[Tuple[str, ...]] = None) -> Record:
    """A Record of a C record, with this process's key map, or another's."""
    it = _lib.AttrIter()
    attr = _lib.Attr()
    if key_names is None:
        _c.otel_thread_ctx_attr_iter_init(ctypes.byref(it), ctypes.byref(rec))
    else:
        _c.otel_thread_ctx_attr_iter_init_map(ctypes.byref(it), ctypes.byref(rec),
                                              len(key_names))
    attrs: Dict[int, bytes] = {}
    while _c.otel_thread_ctx_attr_iter_next(ctypes.byref(it), ctypes.byref(attr)):
        attrs[attr.key] = ctypes.string_at(attr.value, attr.len) if attr.len else b""
    return Record(bytes(rec.trace_id), bytes(rec.span_id), int(rec.trace_flags),
                  types.MappingProxyType(attrs), key_names)


def read() -> Record:
    """The record the calling thread publishes.  ThreadCtxError ENOCTX when
    it publishes none, EINVALID when the record is marked invalid."""
    rec = _lib.Record()
    _check(_c.otel_thread_ctx_read(ctypes.byref(rec)), "read")
    return _record_from(rec)


def record_decode(data: Union[bytes, bytearray, memoryview]) -> Record:
    """Checks and decodes the bytes of a record obtained elsewhere."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError("record_decode needs bytes, not %s" % type(data).__name__)
    raw = bytes(data)
    rec = _lib.Record()
    _check(_c.otel_thread_ctx_record_decode(raw, len(raw), ctypes.byref(rec)),
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
    slot: Optional[int]
    own_slot: Optional[int]
    slot_is_own: bool
    exported: Optional[int]
    module: Optional[str]
    exported_module: Optional[str]
    exporting_modules: int
    reason: str

    @property
    def ok(self) -> bool:
        return self.status == SelfCheckStatus.OK


def self_check() -> SelfCheck:
    """Is the slot this library writes the one a profiler finds?  Returns a
    SelfCheck whatever the answer (look at .ok and .reason); not
    async-signal-safe (it walks the loaded modules)."""
    res = _lib.SelfCheck()
    rc = int(_c.otel_thread_ctx_self_check(ctypes.byref(res)))
    if rc not in (Error.OK, Error.ESLOT):
        raise ThreadCtxError(rc, "self_check")

    def text(b: Optional[bytes]) -> Optional[str]:
        return None if b is None else b.decode("utf-8", "replace")

    status: int = res.status
    try:
        status = SelfCheckStatus(res.status)
    except ValueError:
        pass
    return SelfCheck(status, res.slot, res.own_slot, bool(res.slot_is_own), res.exported,
                     text(res.module), text(res.exported_module),
                     int(res.exporting_modules),
                     cast(bytes, res.reason).decode("utf-8", "replace"))


# The process context's publisher (no other library).  Imported last: it
# uses what is defined above.
from . import process  # noqa: E402  pylint: disable=wrong-import-position
