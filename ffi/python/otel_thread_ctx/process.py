# SPDX-License-Identifier: Apache-2.0
"""The process context (OTEP 4719) this process publishes:
include/otel_thread_ctx_process.h.

It tells readers what the thread records mean: the resource attributes
given here (service.name, ...), the schema version and the key map (the
names registered with otel_thread_ctx.key_register(), kept up to date by the
library).  Publishing, updating and unpublishing take a process-wide lock.

    process.publish({"service.name": "checkout", "process.pid": os.getpid()})
    process.update({"service.name": "checkout", "deployment": "blue"})
    process.unpublish()

Reading a process context back, from this process or another one, is
otel_thread_ctx.inspect.read_process().
"""

import ctypes
import enum
from dataclasses import dataclass
from typing import Any, Iterable, List, Mapping, Optional, Tuple, Union

from . import _lib
from . import ThreadCtxError

__all__ = ["OnFork", "Published", "ResourceValue", "Resource", "Schema",
           "publish", "query", "unpublish", "update", "update_with"]

_c = _lib.lib

ResourceValue = Union[str, bool, int, float]
"""A resource attribute's value: published as a string, bool, int (64-bit)
or double."""
Resource = Union[Mapping[str, ResourceValue], Iterable[Tuple[str, ResourceValue]]]
"""Resource attributes: a mapping, or (key, value) pairs, in the order
given."""

# enum otel_thread_ctx_process_type: what this binding publishes.
_STRING, _BOOL, _INT, _DOUBLE = 1, 2, 3, 4
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


class Schema(enum.IntEnum):
    """enum otel_thread_ctx_process_schema: threadlocal.schema_version."""

    TLSDESC_V1_DEV = 0
    """"tlsdesc_v1_dev", the draft's name, which today's readers expect
    (the default)."""
    TLS_V1 = 1
    """"tls_v1", the name once the OTEP is merged."""


class OnFork(enum.IntEnum):
    """enum otel_thread_ctx_process_fork: what a child made by fork()
    publishes."""

    DROP = 0
    """Nothing, until it publishes itself (the default)."""
    REPUBLISH = 1
    """The parent's payload, in a mapping of its own."""


def _attr_array(resource: Resource) -> Tuple["ctypes.Array[_lib.ProcessAttr]", int, List[Any]]:
    """(ctypes array of struct otel_thread_ctx_process_attr, count,
    keep-alive list).  Raises TypeError or ValueError for what C cannot
    take unchanged."""
    if isinstance(resource, Mapping):
        items: List[Any] = list(resource.items())
    else:
        items = list(resource)
    array = (_lib.ProcessAttr * max(len(items), 1))()
    keep: List[Any] = []
    for i, item in enumerate(items):
        try:
            key, value = item
        except (TypeError, ValueError):
            raise TypeError("resource attributes must be a mapping or (key, value) pairs") from None
        if not isinstance(key, str):
            raise TypeError("resource attribute key must be str, not %s" % type(key).__name__)
        name = key.encode("utf-8")
        if b"\0" in name:
            raise ValueError("resource attribute key contains a NUL byte: %r" % (key,))
        keep.append(name)
        a = array[i]
        a.key = name
        if isinstance(value, bool):
            a.type, a.bool_value = _BOOL, int(value)
        elif isinstance(value, int):
            if not _INT64_MIN <= value <= _INT64_MAX:
                raise ValueError("resource attribute %r: %d does not fit in 64 bits" % (key, value))
            a.type, a.int_value = _INT, value
        elif isinstance(value, float):
            a.type, a.double_value = _DOUBLE, value
        elif isinstance(value, str):
            data = value.encode("utf-8")
            # Always with its length, so that a NUL inside is kept; an empty
            # value's length 0 means "NUL-terminated", which bytes are.
            buf = ctypes.c_char_p(data)
            keep.append(buf)
            a.type = _STRING
            a.string = ctypes.cast(buf, ctypes.c_void_p).value
            a.length = len(data)
        else:
            raise TypeError("resource attribute %r: a value of type %s cannot be published "
                            "(str, bool, int or float)" % (key, type(value).__name__))
    return array, len(items), keep


def _options(schema: Schema, on_fork: OnFork,
             attributes: Resource) -> Tuple[Any, List[Any]]:
    """(struct otel_thread_ctx_process_options, keep-alive list)."""
    array, n, keep = _attr_array(attributes)
    options = _lib.ProcessOptions(ctypes.sizeof(_lib.ProcessOptions), int(schema), int(on_fork),
                                  ctypes.cast(array, ctypes.c_void_p), n)
    keep.append(array)
    return options, keep


def publish(resource: Resource = (), *, schema: Schema = Schema.TLSDESC_V1_DEV,
            on_fork: OnFork = OnFork.DROP, attributes: Resource = ()) -> None:
    """Publishes the process context with these resource attributes, the
    schema version and the key map, then `attributes`, entries of
    ProcessContext.attributes of the caller's own (keys may not start with
    "threadlocal.").  ThreadCtxError EPUBLISHED when it is published already
    (use update()), EATTR for an empty or duplicate key, E2BIG, EMAP,
    ENOMEM; EOPTIONS for an unknown schema or on_fork."""
    array, n, keep = _attr_array(resource)
    options, keep_options = _options(schema, on_fork, attributes)
    rc = _c.otel_thread_ctx_process_publish_with(array, n, ctypes.byref(options))
    del keep, keep_options
    if rc != 0:
        raise ThreadCtxError(rc, "process.publish")


def update(resource: Resource = ()) -> None:
    """Replaces the resource attributes of the published context (the same
    mapping, a new payload and timestamp); the options and attributes of
    publish() hold.  ThreadCtxError ENOTPUBLISHED when nothing is
    published."""
    array, n, keep = _attr_array(resource)
    rc = _c.otel_thread_ctx_process_update(array, n)
    del keep
    if rc != 0:
        raise ThreadCtxError(rc, "process.update")


def update_with(resource: Resource = (), *, schema: Schema = Schema.TLSDESC_V1_DEV,
                on_fork: OnFork = OnFork.DROP, attributes: Resource = ()) -> None:
    """Replaces the resource attributes and what publish() took besides
    (schema, on_fork, attributes; unnamed ones take publish()'s defaults)
    in one update of the same mapping.  Errors as update() and publish();
    nothing changes on error."""
    array, n, keep = _attr_array(resource)
    options, keep_options = _options(schema, on_fork, attributes)
    rc = _c.otel_thread_ctx_process_update_with(array, n, ctypes.byref(options))
    del keep, keep_options
    if rc != 0:
        raise ThreadCtxError(rc, "process.update_with")


def unpublish() -> None:
    """Withdraws the process context (nothing published: does nothing)."""
    rc = _c.otel_thread_ctx_process_unpublish()
    if rc != 0:
        raise ThreadCtxError(rc, "process.unpublish")


@dataclass(frozen=True)
class Published:
    """What this process publishes now (struct otel_thread_ctx_process_info);
    all zero and None when nothing is."""

    published: bool
    memfd: bool
    """True: a memfd mapping ("/memfd:OTEL_CTX"); False: anonymous memory."""
    mapping: Optional[int]
    mapping_size: int
    published_at_ns: int
    """monotonic_published_at_ns: CLOCK_BOOTTIME of the last change."""
    payload_size: int
    payload: Optional[int]


def query() -> Published:
    """What this process publishes now."""
    info = _lib.ProcessInfo()
    rc = _c.otel_thread_ctx_process_query(ctypes.byref(info))
    if rc != 0:
        raise ThreadCtxError(rc, "process.query")
    return Published(bool(info.published), bool(info.memfd), info.mapping,
                     int(info.mapping_size), int(info.monotonic_published_at_ns),
                     int(info.payload_size), info.payload)

