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
    with ctx:                                   # this thread publishes a copy
        update_span_id(child_span_id)           # a child span, on this thread
    # here the thread publishes again what it did before the `with`

A Context is a value: ids, flags, attributes.  Its setters edit it and
nothing else; attach() (or `with ctx:`) copies it into the calling thread's
own record and publishes that.  So any number of threads may publish one
Context at once, each its own copy, and the Context may be edited, copied or
destroyed at any time: what a thread publishes changes only when that thread
publishes again.  The module-level update_span_id(), update_trace_flags()
and update_all() change the calling thread's record without a Context;
detach() unpublishes and save() copies what the thread publishes into a
Context.  A thread's records go back to the library when it exits.

Every call into libotel-thread-ctx holds the GIL (it is loaded as a PyDLL;
none of its functions blocks): a Context may be used from any Python thread,
and a call never sees it half-edited or freed by another.  (A Python built
without the GIL loses that: there, do not edit or destroy a Context while
another thread uses it, as in C.)

The submodule `process` publishes the process context (imported with this
package); `inspect` reads other processes (libotel-thread-ctx-inspect, loaded
only when `otel_thread_ctx.inspect` is imported).

Errors of the library raise ThreadCtxError (an OSError whose errno is the
library's negative code and whose strerror is otel_thread_ctx_strerror()).
Values that cannot be passed to C unchanged (an id of the wrong length, flags
over 255, a name with a NUL byte) raise TypeError or ValueError before any
call: nothing is truncated or wrapped.
"""

import ctypes
import enum
import threading
import types
from dataclasses import dataclass, field
from typing import (Any, Dict, Iterable, List, Mapping, Optional, Tuple, Union, cast,
                    overload)

from . import _lib
from ._lib import ATTRS_MAX, KEY_MAX, KEY_NAME_MAX, RECORD_SIZE, VALUE_MAX

__version__ = "1.0.0"

__all__ = [
    "ATTRS_MAX", "KEY_MAX", "KEY_NAME_MAX", "RECORD_SIZE", "VALUE_MAX",
    "AttrKey", "AttrValue", "Attrs", "Context", "Error", "Id", "Record",
    "SelfCheck", "SelfCheckStatus", "ThreadCtxError", "detach", "escape", "key_count",
    "key_find", "key_name", "key_register", "library_path", "process", "read",
    "record_decode", "save", "self_check", "strerror", "update_all",
    "update_span_id", "update_trace_flags",
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
    ENOSPC = -28
    ENULL = -4001
    EIDS = -4002
    EKEY = -4003
    EVALUE = -4004
    EUTF8 = -4005
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
    EUNSUPPORTED = -4023
    ENOATTR = -4024
    ENESTED = -4025
    EFULL = -4026


def strerror(code: int) -> str:
    """The library's English description of an error code."""
    text = cast(bytes, _c.otel_thread_ctx_strerror(int(code)))
    return text.decode("utf-8", "replace")


# Names of codes the binding knows, beyond Error (the inspector adds its own).
_code_names: Dict[int, str] = {int(e): e.name for e in Error}


class ThreadCtxError(OSError):
    """A call into the library failed.

    `errno` and `code` hold the library's (negative) error code, `strerror`
    its description, `name` the code's name ("ENOSPC"), or None for a code
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

_thread = threading.local()


def _scopes() -> List[Tuple["Context", "Context"]]:
    """The calling thread's open `with ctx:` scopes: (context, saved)."""
    stack: Optional[List[Tuple[Context, Context]]] = getattr(_thread, "scopes", None)
    if stack is None:
        stack = _thread.scopes = []
    return stack


def _spares() -> List["Context"]:
    """The calling thread's saved contexts of closed scopes, kept for the
    next ones (freed with the thread's threading.local)."""
    spares: Optional[List[Context]] = getattr(_thread, "spares", None)
    if spares is None:
        spares = _thread.spares = []
    return spares


class Context:
    """An otel_thread_ctx: a value (trace id, span id, trace flags,
    attributes, and the capacity for attributes it was created with).

    The setters edit the value and nothing else.  attach() and update()
    publish a copy of it on the calling thread; any number of threads may
    publish copies of one Context at once, and the Context may then be
    edited, copied or destroyed without changing what they publish.
    `with ctx:` publishes it on the calling thread and, on exit, puts back
    exactly what the thread published before.

    A context may also hold no record: one that received "nothing was
    published" as `saved` (attach, detach, save).  get() raises ENOCTX for
    it, and attaching it unpublishes.
    """

    __slots__ = ("_ptr", "_capacity", "__weakref__")

    _ptr: Optional[int]
    _capacity: int

    def __init__(self, trace_id: Optional[Id] = None, span_id: Optional[Id] = None,
                 flags: int = 0, attrs: Optional[Attrs] = None, *,
                 capacity: Optional[int] = None) -> None:
        """A new context, holding an empty record (no ids, no attributes)
        then what is given here: both ids (16 and 8 bytes, or hex) or
        neither, trace flags, attributes.

        `capacity`: bytes of attribute entries it holds (0 to ATTRS_MAX, the
        default; 0 for ids only): setters that would need more raise
        ENOSPC (otel_thread_ctx_create_with)."""
        self._ptr = None
        self._capacity = ATTRS_MAX if capacity is None else _uint(capacity, "capacity")
        # The C options' zero is the default capacity: ids only is a flag.
        options = _lib.Options(ctypes.sizeof(_lib.Options), self._capacity,
                               _lib.OPTION_IDS_ONLY if self._capacity == 0 else 0)
        ptr = ctypes.c_void_p()
        _check(_c.otel_thread_ctx_create_with(ctypes.byref(ptr), ctypes.byref(options)),
               "create_with")
        assert ptr.value is not None
        self._ptr = ptr.value
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

    def _handle(self) -> int:
        if self._ptr is None:
            raise ValueError("the context is destroyed")
        return self._ptr

    @property
    def address(self) -> Optional[int]:
        """The C context's address (None once destroyed)."""
        return self._ptr

    @property
    def capacity(self) -> int:
        """Bytes of attribute entries the context can hold."""
        return self._capacity

    def destroy(self) -> None:
        """Frees the C context (once; again does nothing).  Threads that
        published copies of it keep publishing them.  Afterwards every
        method but destroy() raises ValueError."""
        ptr, self._ptr = self._ptr, None
        if ptr is not None:
            _c.otel_thread_ctx_destroy(ptr)

    close = destroy

    def __del__(self) -> None:
        try:
            self.destroy()
        except Exception:  # pylint: disable=broad-except
            pass  # a partly constructed object, or interpreter shutdown

    # Setters: they edit the value.

    def set_ids(self, trace_id: Id, span_id: Id, flags: int = 0) -> None:
        """Sets trace id (16 bytes), span id (8 bytes) and trace flags."""
        _check(_c.otel_thread_ctx_set_ids(
            self._handle(), _id_bytes(trace_id, 16, "trace_id"),
            _id_bytes(span_id, 8, "span_id"), _flags(flags)), "set_ids")

    def set_span_id(self, span_id: Id) -> None:
        """Sets the span id only (EIDS without a trace id)."""
        _check(_c.otel_thread_ctx_set_span_id(
            self._handle(), _id_bytes(span_id, 8, "span_id")), "set_span_id")

    def set_trace_flags(self, flags: int) -> None:
        """Sets the trace flags only (EIDS for non-zero flags without ids)."""
        _check(_c.otel_thread_ctx_set_trace_flags(self._handle(), _flags(flags)),
               "set_trace_flags")

    def clear_ids(self) -> None:
        """Removes both ids and the flags."""
        _check(_c.otel_thread_ctx_clear_ids(self._handle()), "clear_ids")

    def set_attr(self, key: AttrKey, value: AttrValue) -> None:
        """Sets attribute `key` (an index, or a registered name) to `value`
        (str, or bytes of UTF-8; at most 255 bytes)."""
        data = _value_bytes(value)
        _check(_c.otel_thread_ctx_set_attr(self._handle(), _key_index(key), data, len(data)),
               "set_attr")

    def remove_attr(self, key: AttrKey) -> None:
        """Removes attribute `key`; absent is not an error."""
        _check(_c.otel_thread_ctx_remove_attr(self._handle(), _key_index(key)), "remove_attr")

    def clear_attrs(self) -> None:
        """Removes every attribute."""
        _check(_c.otel_thread_ctx_clear_attrs(self._handle()), "clear_attrs")

    def clear(self) -> None:
        """Removes ids, flags and attributes (an empty record)."""
        _check(_c.otel_thread_ctx_clear(self._handle()), "clear")

    def set_attrs(self, attrs: Attrs) -> None:
        """Replaces all attributes: a mapping, or (key, value) pairs."""
        array, n, keep = _attr_array(attrs)
        _check(_c.otel_thread_ctx_set_attrs(self._handle(), array, n), "set_attrs")
        del keep

    # The value as a whole.

    def copy_from(self, other: "Context") -> None:
        """Makes this context hold what `other` holds (ENOSPC when its
        attributes do not fit in this one's capacity)."""
        if not isinstance(other, Context):
            raise TypeError("copy_from needs a Context, not %s" % type(other).__name__)
        _check(_c.otel_thread_ctx_copy(self._handle(), other._handle()), "copy")

    def copy(self, capacity: Optional[int] = None) -> "Context":
        """A new Context holding what this one holds, with this one's
        capacity unless another is given."""
        dup = Context(capacity=self._capacity if capacity is None else capacity)
        try:
            dup.copy_from(self)
        except BaseException:
            dup.destroy()
            raise
        return dup

    def __copy__(self) -> "Context":
        return self.copy()

    def __deepcopy__(self, memo: Dict[int, Any]) -> "Context":
        return self.copy()

    def get(self) -> "Record":
        """What the context holds, as the record a thread attaching it
        publishes.  ThreadCtxError ENOCTX when it holds no record."""
        rec = _lib.Record()
        _check(_c.otel_thread_ctx_get(self._handle(), ctypes.byref(rec)), "get")
        return _record_from(rec)

    @property
    def holds_record(self) -> bool:
        """False for a saved "nothing was published" (get() raises
        ENOCTX and attaching it unpublishes), True otherwise."""
        rec = _lib.Record()
        rc = int(_c.otel_thread_ctx_get(self._handle(), ctypes.byref(rec)))
        if rc == Error.ENOCTX:
            return False
        _check(rc, "get")
        return True

    # Publishing on the calling thread.

    @overload
    def attach(self, saved: None = None) -> None: ...

    @overload
    def attach(self, saved: "Context") -> "Context": ...

    def attach(self, saved: Optional["Context"] = None) -> Optional["Context"]:
        """Publishes a copy of the context on the calling thread.  `saved`
        (may be this context) receives what the thread published before,
        to put it back later with saved.update(), and is returned.
        ThreadCtxError ENOSPC when saved's capacity is too small for it
        (nothing changes then)."""
        handle = self._handle()
        if saved is None:
            _check(_c.otel_thread_ctx_attach(handle, None), "attach")
            return None
        _check(_c.otel_thread_ctx_attach(handle, _saved_handle(saved)), "attach")
        return saved

    def update(self) -> None:
        """Publishes a copy of the context on the calling thread, in place
        of whatever it published (attach without saving); a context that
        holds no record unpublishes."""
        _check(_c.otel_thread_ctx_update(self._handle()), "update")

    def __enter__(self) -> "Context":
        """Publishes the context on the calling thread; the scope keeps
        what it replaces in a saved context of its own (full capacity)."""
        handle = self._handle()
        spares = _spares()
        saved = spares.pop() if spares else Context()
        try:
            _check(_c.otel_thread_ctx_attach(handle, saved._handle()), "attach")
        except BaseException:
            spares.append(saved)
            raise
        _scopes().append((self, saved))
        return self

    def __exit__(self, *exc: object) -> None:
        """Puts back exactly what entering replaced, whatever happened to
        this context or any other meanwhile."""
        stack = _scopes()
        for i in range(len(stack) - 1, -1, -1):
            if stack[i][0] is self:
                saved = stack.pop(i)[1]
                break
        else:
            raise RuntimeError("leaving a `with` scope of this Context that was "
                               "not entered on this thread")
        _check(_c.otel_thread_ctx_update(saved._handle()), "update")
        _spares().append(saved)

    def __repr__(self) -> str:
        if self._ptr is None:
            return "<otel_thread_ctx.Context destroyed>"
        rec = _lib.Record()
        if _c.otel_thread_ctx_get(self._ptr, ctypes.byref(rec)) != 0:
            return "<otel_thread_ctx.Context holding no record>"
        return "<otel_thread_ctx.Context %s>" % repr(_record_from(rec))[len("Record("):-1]


def _saved_handle(saved: object) -> int:
    if not isinstance(saved, Context):
        raise TypeError("saved must be a Context, not %s" % type(saved).__name__)
    return saved._handle()


@overload
def detach(saved: None = None) -> None: ...


@overload
def detach(saved: Context) -> Context: ...


def detach(saved: Optional[Context] = None) -> Optional[Context]:
    """Unpublishes the calling thread's context.  `saved` receives what it
    published (or "nothing published") and is returned.  ThreadCtxError
    ENOSPC when saved's capacity is too small (nothing changes then)."""
    if saved is None:
        _check(_c.otel_thread_ctx_detach(None), "detach")
        return None
    _check(_c.otel_thread_ctx_detach(_saved_handle(saved)), "detach")
    return saved


def save(saved: Optional[Context] = None) -> Context:
    """What the calling thread publishes (or "nothing published": a
    context that holds no record), copied into `saved`, or into a new
    Context of full capacity, and returned; nothing else changes.
    ThreadCtxError ENOSPC when saved's capacity is too small."""
    target = Context() if saved is None else saved
    try:
        _check(_c.otel_thread_ctx_save(_saved_handle(target)), "save")
    except BaseException:
        if saved is None:
            target.destroy()
        raise
    return target


def update_span_id(span_id: Id) -> None:
    """A child span: the calling thread publishes its record with this span
    id.  ThreadCtxError ENOCTX when it publishes nothing, EIDS when the span
    id is zero or its record has no trace id."""
    _check(_c.otel_thread_ctx_update_span_id(_id_bytes(span_id, 8, "span_id")),
           "update_span_id")


def update_trace_flags(flags: int) -> None:
    """The sampling decision: the calling thread publishes its record with
    these trace flags.  ThreadCtxError ENOCTX when it publishes nothing, EIDS
    for non-zero flags when its record has no ids."""
    _check(_c.otel_thread_ctx_update_trace_flags(_flags(flags)), "update_trace_flags")


def update_all(trace_id: Id, span_id: Id, flags: int = 0, attrs: Attrs = ()) -> None:
    """A new request: the calling thread publishes a record of these ids,
    flags and attributes (up to ATTRS_MAX bytes), whatever it published
    before, even nothing.  A refusal publishes nothing new."""
    array, n, keep = _attr_array(attrs)
    _check(_c.otel_thread_ctx_update_all(
        _id_bytes(trace_id, 16, "trace_id"), _id_bytes(span_id, 8, "span_id"),
        _flags(flags), array, n), "update_all")
    del keep


# -- Readers --

def escape(value: Union[bytes, bytearray, memoryview]) -> str:
    """The text form of bytes a process published, safe to print and never
    failing, as otel-thread-ctx-inspect prints it in its table: the bytes
    as UTF-8, but control characters (C0, DEL), `"` and `\\` as `\\xNN`,
    the C1 controls (U+0080 to U+009F) as the `\\xNN` of their two bytes,
    and, when the bytes are not valid UTF-8, every byte above 0x7f as
    `\\xNN` too.  So any bytes give printable text, and distinct bytes
    distinct text."""
    raw = bytes(value)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return "".join(chr(b) if 0x20 <= b < 0x7f and b not in (0x22, 0x5c) else "\\x%02x" % b
                       for b in raw)
    out = []
    for ch in text:
        c = ord(ch)
        if c < 0x20 or c == 0x7f or ch in "\"\\":
            out.append("\\x%02x" % c)
        elif 0x80 <= c <= 0x9f:
            out.append("".join("\\x%02x" % b for b in ch.encode("utf-8")))
        else:
            out.append(ch)
    return "".join(out)


def _text(value: bytes) -> str:
    """A value as text: UTF-8, and a byte that is not as `\\xNN`."""
    return value.decode("utf-8", "backslashreplace")


@dataclass(frozen=True)
class Record:
    """A copy of a record.  `raw_attrs` maps key index to the stored bytes
    (the effective attributes: the last duplicate wins, and entries whose
    index the key map does not name are left out); `attrs` to their text:
    UTF-8, where a byte that is not UTF-8 reads `\\xNN` (a record another
    process wrote may hold any bytes: reading never raises; raw_attrs has
    the bytes, escape() gives a form safe for a terminal).  `key_names` is
    the key map the record was read with when it is another process's
    (otel_thread_ctx.inspect); None for this process's registry.  repr()
    never raises either."""

    trace_id: bytes
    span_id: bytes
    flags: int
    raw_attrs: Mapping[int, bytes]
    key_names: Optional[Tuple[str, ...]] = field(default=None, repr=False, compare=False)

    @property
    def attrs(self) -> Mapping[int, str]:
        return types.MappingProxyType({k: _text(v) for k, v in self.raw_attrs.items()})

    def _name(self, k: int) -> Optional[str]:
        if self.key_names is not None:
            return self.key_names[k] if k < len(self.key_names) else None
        return key_name(k)

    def named_attrs(self) -> Mapping[Union[int, str], str]:
        """The attributes' text (as `attrs`) keyed by name (index where
        unnamed): from the key map the record was read with, else this
        process's registry."""
        out: Dict[Union[int, str], str] = {}
        for k, v in self.raw_attrs.items():
            name = self._name(k)
            out[k if name is None else name] = _text(v)
        return types.MappingProxyType(out)

    def named_raw_attrs(self) -> Mapping[Union[int, str], bytes]:
        """The same with the values' bytes."""
        out: Dict[Union[int, str], bytes] = {}
        for k, v in self.raw_attrs.items():
            name = self._name(k)
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
    while _c.otel_thread_ctx_attr_iter_next(ctypes.byref(it), ctypes.byref(attr)) == 0:
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
