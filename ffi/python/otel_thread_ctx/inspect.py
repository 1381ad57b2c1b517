# SPDX-License-Identifier: Apache-2.0
"""Reading other processes: include/otel_thread_ctx_inspect.h, the API of
libotel-thread-ctx-inspect, which this module loads when it is imported
($OTEL_THREAD_CTX_INSPECT_LIBRARY, then pkg-config otel-thread-ctx-inspect,
then the dynamic loader; ImportError if none works).

- read_process(pid) reads and decodes the process context (OTEP 4719) a
  process publishes; decode_process(payload) decodes a payload obtained
  some other way.
- Inspector(pid) reads the thread contexts (OTEP 4947) of a process from
  outside, one thread at a time, stopping it with ptrace for the read: the
  caller needs the right to ptrace-attach to it (the same user; under Yama
  ptrace_scope 1, an ancestor of it, as a parent is of its child).

    with Inspector(pid) as insp:
        for t in insp.threads():
            if t.record is not None:
                print(t.tid, t.record, dict(t.record.named_attrs()))

  A record holds whatever bytes the process wrote: named_attrs() and repr()
  give text that never fails (a byte that is not UTF-8 reads \\xNN),
  named_raw_attrs() the bytes, otel_thread_ctx.escape() a form safe for a
  terminal.  threads() says whether it read every thread (total, partial).
- maps_signature(pid) is a signature of the modules a process has loaded,
  and Inspector.signature the same as the Inspector was opened: while the
  two are equal, the process has loaded and unloaded no module since, and
  the modules and slots the Inspector found still hold (its key map and
  process context are as they were at open).

Errors raise InspectError, a ThreadCtxError whose code may also be one of
the reading side's (Error below) and whose text is
otel_thread_ctx_inspect_strerror().
"""

import ctypes
import enum
import os
import threading
from dataclasses import dataclass, field
from typing import Any, Iterable, List, Mapping, Optional, Tuple, Union, cast

from . import _lib
from . import Record, ThreadCtxError, _code_names, _record_from

__all__ = ["Error", "EncodedValue", "InspectError", "Inspector", "Libc", "Model",
           "Module", "ProcessContext", "Thread", "Threads", "Value", "decode_process",
           "library_path", "maps_signature", "read_process", "read_process_at",
           "strerror"]

_i, library_path = _lib.inspect_lib()
_c = _lib.lib

READ_ATTEMPTS = 100
_ENULL = -4001


class Error(enum.IntEnum):
    """enum otel_thread_ctx_inspect_error: the reading side's own codes,
    besides otel_thread_ctx.Error."""

    EPERM = -1
    ENOENT = -2
    ESRCH = -3
    EAGAIN = -11
    EFAULT = -14
    ETIMEDOUT = -110
    EFORMAT = -4101
    EDECODE = -4102
    ENOSLOT = -4103
    EMODEL = -4104


_code_names.update({int(e): e.name for e in Error})


def strerror(code: int) -> str:
    """otel_thread_ctx_inspect_strerror(): the text of a code of either
    enum."""
    return cast(bytes, _i.otel_thread_ctx_inspect_strerror(int(code))).decode("utf-8", "replace")


class InspectError(ThreadCtxError):
    """A call of the reading side failed: `code` (also `errno`) is the
    library's code, `name` its name, `strerror` its text."""

    def __init__(self, code: int, function: Optional[str] = None) -> None:
        super().__init__(code, function, strerror(code))


def _check(rc: int, function: str) -> None:
    if rc != 0:
        raise InspectError(rc, function)


def _pid(pid: int) -> int:
    if not isinstance(pid, int) or isinstance(pid, bool):
        raise TypeError("pid must be an int, not %s" % type(pid).__name__)
    if not 0 <= pid <= 0x7FFFFFFF:
        raise ValueError("pid out of range: %d" % pid)
    return pid


# -- The process context --

@dataclass(frozen=True)
class EncodedValue:
    """A value of a type the reader does not decode (ARRAY, KVLIST): its
    AnyValue type number and the encoded message."""

    type: int
    data: bytes


Value = Union[None, str, bool, int, float, bytes, EncodedValue]
"""A decoded attribute value: None (no value), str, bool, int, float, bytes
(BYTES), or an EncodedValue."""

# enum otel_thread_ctx_process_type
_EMPTY, _STRING, _BOOL, _INT, _DOUBLE, _BYTES = 0, 1, 2, 3, 4, 7


def _value(a: _lib.ProcessAttr) -> Value:
    t = int(a.type)
    if t == _EMPTY:
        return None
    if t == _BOOL:
        return bool(a.bool_value)
    if t == _INT:
        return int(a.int_value)
    if t == _DOUBLE:
        return float(a.double_value)
    data = ctypes.string_at(a.string, a.length) if a.length else b""
    if t == _STRING:
        return data.decode("utf-8")
    if t == _BYTES:
        return data
    return EncodedValue(t, data)


def _attrs(array: Any, count: int) -> Tuple[Tuple[str, Value], ...]:
    return tuple((cast(bytes, array[i].key).decode("utf-8"), _value(array[i]))
                 for i in range(count))


@dataclass(frozen=True)
class ProcessContext:
    """A decoded process context (struct otel_thread_ctx_inspect_process_snapshot,
    copied)."""

    schema_version: Optional[str]
    """threadlocal.schema_version; None when absent."""
    key_map: Optional[Tuple[str, ...]]
    """threadlocal.attribute_key_map: key_map[i] names key index i; None
    when the payload has none."""
    resource_items: Tuple[Tuple[str, Value], ...]
    """ProcessContext.resource.attributes, in payload order."""
    attribute_items: Tuple[Tuple[str, Value], ...]
    """ProcessContext.attributes but the two threadlocal.* ones."""
    payload: bytes = field(repr=False)
    mapping_address: int
    """Where the header is in the process (0 for decode_process())."""
    payload_address: int
    published_at_ns: int
    version: int
    retries: int
    """Copies that came out torn or during an update and were retried."""

    @property
    def resource(self) -> Mapping[str, Value]:
        """The resource attributes by key (the last of a repeated key)."""
        return dict(self.resource_items)

    @property
    def attributes(self) -> Mapping[str, Value]:
        return dict(self.attribute_items)


def _snapshot(snap: _lib.Snapshot) -> ProcessContext:
    keys: Optional[Tuple[str, ...]] = None
    if snap.key_map_present:
        keys = tuple(cast(bytes, snap.keys[i]).decode("utf-8") for i in range(snap.key_count))
    schema = cast(Optional[bytes], snap.schema_version)
    return ProcessContext(
        schema_version=None if schema is None else schema.decode("utf-8"),
        key_map=keys,
        resource_items=_attrs(snap.resource, int(snap.resource_count)),
        attribute_items=_attrs(snap.attributes, int(snap.attribute_count)),
        payload=ctypes.string_at(snap.payload, snap.payload_size) if snap.payload_size else b"",
        mapping_address=int(snap.mapping_address),
        payload_address=int(snap.payload_address),
        published_at_ns=int(snap.monotonic_published_at_ns),
        version=int(snap.version),
        retries=int(snap.retries),
    )


def _take(rc: int, out: "ctypes._Pointer[_lib.Snapshot]", function: str) -> ProcessContext:
    _check(rc, function)
    try:
        return _snapshot(out.contents)
    finally:
        _i.otel_thread_ctx_inspect_process_snapshot_free(out)


def _attempts(attempts: int) -> int:
    if not isinstance(attempts, int) or not 0 <= attempts <= 0xFFFFFFFF:
        raise ValueError("attempts must be 0 (the default, %d) to 2**32-1" % READ_ATTEMPTS)
    return attempts


def read_process(pid: int = 0, attempts: int = 0) -> ProcessContext:
    """The process context process `pid` (0: this one) publishes, copied by
    the format's reading protocol (up to `attempts` copies; 0: 100).
    InspectError ENOENT when it publishes none, ESRCH, EPERM, EFORMAT,
    EAGAIN, EFAULT, EDECODE."""
    out = ctypes.POINTER(_lib.Snapshot)()
    rc = _i.otel_thread_ctx_inspect_process_read(_pid(pid), _attempts(attempts), ctypes.byref(out))
    return _take(rc, out, "read_process")


def read_process_at(pid: int, mapping_address: int, attempts: int = 0) -> ProcessContext:
    """read_process() of the mapping at `mapping_address` (a
    ProcessContext's), without searching /proc/PID/maps again.  ENOENT when
    nothing is mapped there any more."""
    if not isinstance(mapping_address, int) or not 0 <= mapping_address < 1 << 64:
        raise ValueError("mapping_address must be a 64-bit address")
    out = ctypes.POINTER(_lib.Snapshot)()
    rc = _i.otel_thread_ctx_inspect_process_read_at(_pid(pid), mapping_address,
                                            _attempts(attempts), ctypes.byref(out))
    return _take(rc, out, "read_process_at")


def decode_process(payload: Union[bytes, bytearray, memoryview]) -> ProcessContext:
    """Decodes a ProcessContext payload obtained some other way (any bytes
    are safe).  InspectError EDECODE, E2BIG over 65,536 bytes."""
    if not isinstance(payload, (bytes, bytearray, memoryview)):
        raise TypeError("decode_process needs bytes, not %s" % type(payload).__name__)
    data = bytes(payload)
    out = ctypes.POINTER(_lib.Snapshot)()
    rc = _i.otel_thread_ctx_inspect_process_decode(data, len(data), ctypes.byref(out))
    return _take(rc, out, "decode_process")


# -- The inspector --

class Model(enum.IntEnum):
    """enum otel_thread_ctx_inspect_model: how a module's code reaches the
    slot, and so how the inspector finds it."""

    TLSDESC_STATIC = 1
    TLSDESC_DYNAMIC = 2
    GENERAL_DYNAMIC = 3
    INITIAL_EXEC = 4
    LOCAL_EXEC = 5


class Libc(enum.IntEnum):
    """enum otel_thread_ctx_inspect_libc."""

    UNKNOWN = 0
    GLIBC = 1
    MUSL = 2


# Per-thread anomalies (Thread.anomalies): the writer broke the format.
OVERSIZED = 1
TRUNCATED_ENTRY = 2
HALF_IDS = 4


@dataclass(frozen=True)
class Module:
    """A loaded module of the process that defines otel_thread_ctx_v1."""

    path: str
    base: int
    st_value: int
    model: Union[Model, int]
    model_name: str
    """"tlsdesc-static", "initial-exec", ..."""
    tp_offset: int
    module_id: int
    dtv_offset: int


@dataclass(frozen=True)
class Thread:
    """One thread, as read (struct otel_thread_ctx_inspect_thread)."""

    tid: int
    name: str
    """/proc/PID/task/TID/comm ("" if unknown)."""
    status: int
    """0 when `record` holds the thread's record; else the code: ENOCTX (it
    publishes nothing), EINVALID, EFAULT, EFORMAT, ESRCH, EPERM, ESYS."""
    sys_errno: int
    anomalies: int
    module: int
    thread_pointer: int
    slot_address: int
    record_address: int
    attrs_data_size: int
    record: Optional[Record]
    """The record, its attributes named by the process's key map; None
    unless status is 0."""

    @property
    def error(self) -> Optional[InspectError]:
        """The status as an exception (None when it is 0)."""
        return None if self.status == 0 else InspectError(self.status, "thread")


class Threads(List[Thread]):
    """What Inspector.threads() read: a list of Thread, and whether it is
    whole.  `total` is how many threads /proc/PID/task listed during the
    read (len() of the list may be less: a limit); `not_stopped` how many
    of those read did not stop in time (status ETIMEDOUT: their records
    were not read); `partial` is True when either left a thread unread."""

    total: int

    def __init__(self, threads: Iterable[Thread], total: int) -> None:
        super().__init__(threads)
        self.total = total

    @property
    def not_stopped(self) -> int:
        return sum(1 for t in self if t.status == Error.ETIMEDOUT)

    @property
    def partial(self) -> bool:
        return len(self) < self.total or self.not_stopped > 0


def maps_signature(pid: int) -> int:
    """otel_thread_ctx_inspect_maps_signature(): a signature (a 64-bit hash)
    of the files process `pid` maps from their start, read from
    /proc/PID/maps.  It changes when the process loads or unloads a module,
    and not when it maps anonymous memory, starts threads or changes the
    protection of a mapping: a reader compares it with Inspector.signature
    to know when to open an Inspector again.  InspectError ESRCH (pid 0
    too: it names no process here), EPERM, EFAULT, ENOMEM, ESYS."""
    signature = ctypes.c_uint64()
    _check(_i.otel_thread_ctx_inspect_maps_signature(_pid(pid), ctypes.byref(signature)),
           "maps_signature")
    return int(signature.value)


class Inspector:
    """otel_thread_ctx_inspect_open(pid): what a ptrace-based reader found
    in process `pid` (its modules, C library and process context); then
    thread() and threads() read threads.  Close it (or use `with`) to free
    it.  One thread at a time uses it (a lock sees to that).

    InspectError ESRCH, EPERM, ENOSLOT (no loaded module defines the slot),
    EMODEL, EFAULT, EAGAIN (the process exec()ed or its modules changed
    during the look: try again)."""

    pid: int
    libc: Union[Libc, int]
    modules: Tuple[Module, ...]
    process_context: Optional[ProcessContext]
    """The process context it read, or None (process_context_error says
    why)."""
    process_context_error: Optional[InspectError]

    def __init__(self, pid: int) -> None:
        self._lock = threading.Lock()
        self._handle: Optional[int] = None
        handle = ctypes.c_void_p()
        _check(_i.otel_thread_ctx_inspect_open(_pid(pid), ctypes.byref(handle)), "Inspector")
        self._handle = handle.value
        info = cast(_lib.InspectInfo, _i.otel_thread_ctx_inspect_info(self._handle).contents)
        self.pid = int(info.pid)
        self.libc = _enum(Libc, int(info.libc))
        self.modules = tuple(self._module(info.modules[i]) for i in range(info.module_count))
        self.process_context = None
        self.process_context_error = None
        if info.process_ctx_status == 0 and info.process_ctx:
            self.process_context = _snapshot(info.process_ctx.contents)
        else:
            self.process_context_error = InspectError(int(info.process_ctx_status),
                                                      "read_process")
        count = int(_i.otel_thread_ctx_inspect_key_count(self._handle))
        self._key_names = tuple(self._key_name(i) or "" for i in range(count))

    @staticmethod
    def _module(m: _lib.InspectModule) -> Module:
        model = int(m.model)
        name = cast(bytes, _i.otel_thread_ctx_inspect_model_name(model)).decode("utf-8")
        return Module(cast(bytes, m.path).decode("utf-8", "replace"), int(m.base),
                      int(m.st_value), _enum(Model, model), name, int(m.tp_offset),
                      int(m.module_id), int(m.dtv_offset))

    def _open(self) -> int:
        if self._handle is None:
            raise ValueError("the inspector is closed")
        return self._handle

    def _key_name(self, index: int) -> Optional[str]:
        name = cast(Optional[bytes], _i.otel_thread_ctx_inspect_key_name(self._open(), index))
        return None if name is None else name.decode("utf-8", "replace")

    @property
    def key_names(self) -> Tuple[str, ...]:
        """The process context's key map: the names of the key indices
        readers honour (empty without a process context)."""
        return self._key_names

    def key_count(self) -> int:
        return len(self._key_names)

    def key_name(self, index: int) -> Optional[str]:
        """The name of key `index` in the process's key map, or None."""
        return self._key_names[index] if 0 <= index < len(self._key_names) else None

    @property
    def signature(self) -> int:
        """otel_thread_ctx_inspect_signature(): maps_signature() of the
        process as the Inspector began to read it, taken in the same pass
        over its maps (no I/O here).  When maps_signature(pid) differs, the
        process has loaded or unloaded a module since: open another.
        ValueError once closed."""
        signature = ctypes.c_uint64()
        with self._lock:
            _check(_i.otel_thread_ctx_inspect_signature(self._open(), ctypes.byref(signature)),
                   "signature")
        return int(signature.value)

    def _thread(self, t: _lib.InspectThread) -> Thread:
        record = None
        if t.status == 0:
            record = _record_from(t.record, self._key_names)
        return Thread(int(t.tid), cast(bytes, t.name).decode("utf-8", "replace"),
                      int(t.status), int(t.sys_errno), int(t.anomalies), int(t.module),
                      int(t.thread_pointer), int(t.slot_address), int(t.record_address),
                      int(t.attrs_data_size), record)

    def thread(self, tid: int) -> Thread:
        """Reads thread `tid` (stopped for the read only).  Its status says
        how it went; this raises only for ENULL."""
        out = _lib.InspectThread()
        with self._lock:
            rc = _i.otel_thread_ctx_inspect_thread(self._open(), _pid(tid), ctypes.byref(out))
        if rc == _ENULL:
            raise InspectError(rc, "thread")
        return self._thread(out)

    def threads(self, max_threads: Optional[int] = None) -> "Threads":
        """Reads every thread of the process (or the first `max_threads`),
        one after another, in /proc/PID/task order.  The list says whether
        it is whole: `total` threads were listed, `partial` is True when
        some were not read (beyond max_threads, or not stopped in time:
        ETIMEDOUT).  InspectError ESRCH when the process is gone."""
        if max_threads is not None and max_threads < 1:
            raise ValueError("max_threads must be at least 1")
        try:
            cap = len(os.listdir("/proc/%d/task" % self.pid)) + 8
        except OSError:
            cap = 64
        if max_threads is not None:
            cap = max_threads
        while True:
            out = (_lib.InspectThread * cap)()
            count = ctypes.c_size_t()
            with self._lock:
                _check(_i.otel_thread_ctx_inspect_threads(self._open(), out, cap,
                                                          ctypes.byref(count)), "threads")
            if count.value <= cap or max_threads is not None:
                n = min(count.value, cap)
                return Threads((self._thread(out[i]) for i in range(n)), int(count.value))
            cap = count.value + 16

    def close(self) -> None:
        """Frees the inspector (again: nothing)."""
        with self._lock:
            if self._handle is not None:
                _i.otel_thread_ctx_inspect_close(self._handle)
                self._handle = None

    def __enter__(self) -> "Inspector":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # pylint: disable=broad-except
            pass  # a partly constructed object, or interpreter shutdown


def _enum(kind: Any, value: int) -> Any:
    """kind(value), or the plain value for a member this binding does not
    know yet."""
    try:
        return kind(value)
    except ValueError:
        return value
