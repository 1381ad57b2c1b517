# SPDX-License-Identifier: Apache-2.0
"""Finding and declaring the two libraries: the raw C ABI, through ctypes.

Everything here mirrors include/otel_thread_ctx.h, otel_thread_ctx_process.h
and otel_thread_ctx_inspect.h.  The rest of the package calls the libraries
only through the objects this module loads (`lib`, and `inspect_lib()` for
libotel-thread-ctx-inspect, loaded on first use), whose functions all have
their argtypes and restype declared below.

`lib` is loaded as a ctypes.PyDLL: its functions run with the GIL held.
None of them blocks (the longest walk the loaded modules or map a page), and
holding the GIL makes every call on a context whole with respect to the
other Python threads: no thread can edit or free a context while another
copies it (the C rule for a value: written by one thread while no other
uses it).  The inspector's functions wait for other processes (ptrace), so
`inspect_lib()` is a plain CDLL that releases the GIL.
"""

import ctypes
import ctypes.util
import os
import subprocess
from typing import Any, Dict, List, Optional, Sequence, Tuple, Type

SONAME = "libotel-thread-ctx.so.1"
ENV_LIBRARY = "OTEL_THREAD_CTX_LIBRARY"
PKG_CONFIG_NAME = "otel-thread-ctx"

INSPECT_SONAME = "libotel-thread-ctx-inspect.so.1"
INSPECT_ENV_LIBRARY = "OTEL_THREAD_CTX_INSPECT_LIBRARY"
INSPECT_PKG_CONFIG_NAME = "otel-thread-ctx-inspect"

RECORD_SIZE = 640
ATTRS_MAX = 612
VALUE_MAX = 255
KEY_MAX = 255
KEY_NAME_MAX = 255
PROCESS_PAYLOAD_MAX = 65536


class Record(ctypes.Structure):
    """struct otel_thread_ctx_record: 640 bytes, no padding."""

    _fields_ = [
        ("trace_id", ctypes.c_uint8 * 16),
        ("span_id", ctypes.c_uint8 * 8),
        ("valid", ctypes.c_uint8),
        ("trace_flags", ctypes.c_uint8),
        ("attrs_data_size", ctypes.c_uint16),
        ("attrs_data", ctypes.c_uint8 * ATTRS_MAX),
    ]


class Attr(ctypes.Structure):
    """struct otel_thread_ctx_attr.  `value` is a plain address: values are
    counted bytes, not NUL-terminated strings."""

    _fields_ = [
        ("key", ctypes.c_uint),
        ("len", ctypes.c_uint),
        ("value", ctypes.c_void_p),
    ]


class AttrIter(ctypes.Structure):
    """struct otel_thread_ctx_attr_iter (its fields are the library's)."""

    _fields_ = [
        ("rec", ctypes.POINTER(Record)),
        ("pos", ctypes.c_size_t),
        ("keys", ctypes.c_uint),
        ("unmapped", ctypes.c_uint),
    ]


class Options(ctypes.Structure):
    """struct otel_thread_ctx_options."""

    _fields_ = [
        ("size", ctypes.c_size_t),
        ("attrs_capacity", ctypes.c_uint),
        ("flags", ctypes.c_uint),
    ]


# struct otel_thread_ctx_options.flags: a context for ids only.
OPTION_IDS_ONLY = 1


class SelfCheck(ctypes.Structure):
    """struct otel_thread_ctx_self_check."""

    _fields_ = [
        ("status", ctypes.c_int),
        ("slot", ctypes.c_void_p),
        ("own_slot", ctypes.c_void_p),
        ("slot_is_own", ctypes.c_int),
        ("exported", ctypes.c_void_p),
        ("module", ctypes.c_char_p),
        ("exported_module", ctypes.c_char_p),
        ("exporting_modules", ctypes.c_uint),
        ("reason", ctypes.c_char * 384),
    ]


# -- otel_thread_ctx_process.h --

class ProcessAttr(ctypes.Structure):
    """struct otel_thread_ctx_process_attr.  `string` is a plain address:
    the binding always passes its length (and reads `length` bytes back)."""

    _fields_ = [
        ("key", ctypes.c_char_p),
        ("type", ctypes.c_int),
        ("string", ctypes.c_void_p),
        ("length", ctypes.c_size_t),
        ("int_value", ctypes.c_int64),
        ("double_value", ctypes.c_double),
        ("bool_value", ctypes.c_int),
    ]


class ProcessOptions(ctypes.Structure):
    """struct otel_thread_ctx_process_options."""

    _fields_ = [
        ("size", ctypes.c_size_t),
        ("schema", ctypes.c_int),
        ("on_fork", ctypes.c_int),
        ("attributes", ctypes.c_void_p),
        ("attribute_count", ctypes.c_size_t),
    ]


class ProcessInfo(ctypes.Structure):
    """struct otel_thread_ctx_process_info."""

    _fields_ = [
        ("published", ctypes.c_int),
        ("memfd", ctypes.c_int),
        ("mapping", ctypes.c_void_p),
        ("mapping_size", ctypes.c_size_t),
        ("monotonic_published_at_ns", ctypes.c_uint64),
        ("payload_size", ctypes.c_uint32),
        ("payload", ctypes.c_void_p),
    ]


# -- otel_thread_ctx_inspect.h --

class Snapshot(ctypes.Structure):
    """struct otel_thread_ctx_inspect_process_snapshot."""

    _fields_ = [
        ("mapping_address", ctypes.c_uint64),
        ("payload_address", ctypes.c_uint64),
        ("monotonic_published_at_ns", ctypes.c_uint64),
        ("version", ctypes.c_uint32),
        ("retries", ctypes.c_uint),
        ("payload", ctypes.c_void_p),
        ("payload_size", ctypes.c_uint32),
        ("schema_version", ctypes.c_char_p),
        ("key_map_present", ctypes.c_int),
        ("key_count", ctypes.c_size_t),
        ("keys", ctypes.POINTER(ctypes.c_char_p)),
        ("resource_count", ctypes.c_size_t),
        ("resource", ctypes.POINTER(ProcessAttr)),
        ("attribute_count", ctypes.c_size_t),
        ("attributes", ctypes.POINTER(ProcessAttr)),
    ]


class InspectModule(ctypes.Structure):
    """struct otel_thread_ctx_inspect_module."""

    _fields_ = [
        ("path", ctypes.c_char_p),
        ("base", ctypes.c_uint64),
        ("st_value", ctypes.c_uint64),
        ("model", ctypes.c_int),
        ("tp_offset", ctypes.c_int64),
        ("module_id", ctypes.c_uint64),
        ("dtv_offset", ctypes.c_uint64),
    ]


class InspectInfo(ctypes.Structure):
    """struct otel_thread_ctx_inspect_info."""

    _fields_ = [
        ("pid", ctypes.c_int),
        ("libc", ctypes.c_int),
        ("module_count", ctypes.c_size_t),
        ("modules", ctypes.POINTER(InspectModule)),
        ("process_ctx_status", ctypes.c_int),
        ("process_ctx", ctypes.POINTER(Snapshot)),
    ]


class InspectThread(ctypes.Structure):
    """struct otel_thread_ctx_inspect_thread."""

    _fields_ = [
        ("tid", ctypes.c_int),
        ("name", ctypes.c_char * 17),
        ("status", ctypes.c_int),
        ("sys_errno", ctypes.c_int),
        ("anomalies", ctypes.c_uint),
        ("module", ctypes.c_uint),
        ("thread_pointer", ctypes.c_uint64),
        ("slot_address", ctypes.c_uint64),
        ("record_address", ctypes.c_uint64),
        ("attrs_data_size", ctypes.c_uint16),
        ("record", Record),
    ]


def _pkg_config(name: str, *args: str) -> List[str]:
    try:
        return subprocess.run(
            ["pkg-config"] + list(args) + [name],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            check=True, text=True, timeout=30,
        ).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return []


def _pkg_config_candidates(name: str, soname: str) -> List[str]:
    """The library in the directories pkg-config reports for `name`: its
    libdir, then the -L directories of its Libs (the only right one in the
    meson-uninstalled .pc of a build tree)."""
    dirs = _pkg_config(name, "--variable=libdir")
    dirs += [flag[2:] for flag in _pkg_config(name, "--libs-only-L") if flag.startswith("-L")]
    plain = soname.split(".so", 1)[0] + ".so"
    return [os.path.join(d, f) for d in dirs for f in (soname, plain)]


def find_library(env: str = ENV_LIBRARY, pc_name: str = PKG_CONFIG_NAME,
                 soname: str = SONAME) -> Tuple[List[str], bool]:
    """Where a library is, in the order users install it.

    1. $OTEL_THREAD_CTX_LIBRARY (for the inspector,
       $OTEL_THREAD_CTX_INSPECT_LIBRARY), the path of the shared library:
       used as it is, and an error if it cannot be loaded (never a silent
       fallback);
    2. `pkg-config otel-thread-ctx` (otel-thread-ctx-inspect): its libdir,
       then its -L directories (PKG_CONFIG_PATH applies);
    3. the dynamic loader: ctypes.util.find_library(), then the soname.

    Returns (list of candidates to try in order, whether the first is the
    override).
    """
    override = os.environ.get(env)
    if override:
        return [override], True
    candidates = [p for p in _pkg_config_candidates(pc_name, soname) if os.path.exists(p)]
    found = ctypes.util.find_library(soname[3:].split(".so", 1)[0])
    if found:
        candidates.append(found)
    candidates.append(soname)
    return candidates, False


def load(env: str = ENV_LIBRARY, pc_name: str = PKG_CONFIG_NAME,
         soname: str = SONAME, kind: Type[ctypes.CDLL] = ctypes.CDLL,
         mode: int = ctypes.DEFAULT_MODE) -> Tuple[ctypes.CDLL, str]:
    """Loads a library as `kind` (CDLL, or PyDLL to keep the GIL during
    calls) with dlopen() flags `mode`; ImportError with every place tried
    if none works."""
    candidates, override = find_library(env, pc_name, soname)
    errors = []
    for path in candidates:
        try:
            return kind(path, mode=mode), path
        except OSError as e:
            if override:
                raise ImportError(
                    "otel_thread_ctx: cannot load %s=%s: %s" % (env, path, e)
                ) from e
            errors.append("%s: %s" % (path, e))
    raise ImportError(
        "otel_thread_ctx: %s not found; set %s to the path of %s, or install it "
        "where pkg-config or the dynamic loader finds it (tried: %s)"
        % (soname.split(".so", 1)[0], env, soname, "; ".join(errors))
    )


_ctx_p = ctypes.c_void_p
_ctx_pp = ctypes.POINTER(ctypes.c_void_p)
_int = ctypes.c_int
_uint = ctypes.c_uint
_u8 = ctypes.c_uint8
_size = ctypes.c_size_t
_bytes = ctypes.c_char_p  # fixed-size id arrays, passed as bytes objects
_record_p = ctypes.POINTER(Record)
_pattr_p = ctypes.POINTER(ProcessAttr)

Prototypes = Dict[str, Tuple[Any, Sequence[Any]]]

_prototypes: Prototypes = {
    "otel_thread_ctx_strerror": (ctypes.c_char_p, [_int]),
    "otel_thread_ctx_create": (_int, [_ctx_pp]),
    "otel_thread_ctx_create_with": (_int, [_ctx_pp, ctypes.POINTER(Options)]),
    "otel_thread_ctx_destroy": (None, [_ctx_p]),
    "otel_thread_ctx_set_ids": (_int, [_ctx_p, _bytes, _bytes, _u8]),
    "otel_thread_ctx_set_span_id": (_int, [_ctx_p, _bytes]),
    "otel_thread_ctx_set_trace_flags": (_int, [_ctx_p, _u8]),
    "otel_thread_ctx_clear_ids": (_int, [_ctx_p]),
    "otel_thread_ctx_set_attr": (_int, [_ctx_p, _uint, ctypes.c_char_p, _size]),
    "otel_thread_ctx_remove_attr": (_int, [_ctx_p, _uint]),
    "otel_thread_ctx_clear_attrs": (_int, [_ctx_p]),
    "otel_thread_ctx_clear": (_int, [_ctx_p]),
    "otel_thread_ctx_set_attrs": (_int, [_ctx_p, ctypes.POINTER(Attr), _size]),
    "otel_thread_ctx_copy": (_int, [_ctx_p, _ctx_p]),
    "otel_thread_ctx_get": (_int, [_ctx_p, _record_p]),
    "otel_thread_ctx_attach": (_int, [_ctx_p, _ctx_p]),
    "otel_thread_ctx_update": (_int, [_ctx_p]),
    "otel_thread_ctx_detach": (_int, [_ctx_p]),
    "otel_thread_ctx_save": (_int, [_ctx_p]),
    "otel_thread_ctx_update_span_id": (_int, [_bytes]),
    "otel_thread_ctx_update_trace_flags": (_int, [_u8]),
    "otel_thread_ctx_update_all": (
        _int, [_bytes, _bytes, _u8, ctypes.POINTER(Attr), _size]),
    "otel_thread_ctx_read": (_int, [_record_p]),
    "otel_thread_ctx_record_decode": (_int, [ctypes.c_char_p, _size, _record_p]),
    "otel_thread_ctx_attr_iter_init": (None, [ctypes.POINTER(AttrIter), _record_p]),
    "otel_thread_ctx_attr_iter_init_map": (
        None, [ctypes.POINTER(AttrIter), _record_p, _uint]),
    "otel_thread_ctx_attr_iter_next": (
        _int, [ctypes.POINTER(AttrIter), ctypes.POINTER(Attr)]),
    "otel_thread_ctx_self_check": (_int, [ctypes.POINTER(SelfCheck)]),
    "otel_thread_ctx_key_register": (_int, [ctypes.c_char_p, ctypes.POINTER(_uint)]),
    "otel_thread_ctx_key_find": (_int, [ctypes.c_char_p, ctypes.POINTER(_uint)]),
    "otel_thread_ctx_key_name": (ctypes.c_char_p, [_uint]),
    "otel_thread_ctx_key_count": (_uint, []),
    "otel_thread_ctx_process_publish": (_int, [_pattr_p, _size]),
    "otel_thread_ctx_process_publish_with": (
        _int, [_pattr_p, _size, ctypes.POINTER(ProcessOptions)]),
    "otel_thread_ctx_process_update": (_int, [_pattr_p, _size]),
    "otel_thread_ctx_process_update_with": (
        _int, [_pattr_p, _size, ctypes.POINTER(ProcessOptions)]),
    "otel_thread_ctx_process_unpublish": (_int, []),
    "otel_thread_ctx_process_query": (_int, [ctypes.POINTER(ProcessInfo)]),
}

_inspect_prototypes: Prototypes = {
    "otel_thread_ctx_inspect_strerror": (ctypes.c_char_p, [_int]),
    "otel_thread_ctx_inspect_process_read": (
        _int, [_int, _uint, ctypes.POINTER(ctypes.POINTER(Snapshot))]),
    "otel_thread_ctx_inspect_process_read_at": (
        _int, [_int, ctypes.c_uint64, _uint, ctypes.POINTER(ctypes.POINTER(Snapshot))]),
    "otel_thread_ctx_inspect_process_decode": (
        _int, [ctypes.c_char_p, _size, ctypes.POINTER(ctypes.POINTER(Snapshot))]),
    "otel_thread_ctx_inspect_process_snapshot_free": (None, [ctypes.POINTER(Snapshot)]),
    "otel_thread_ctx_inspect_model_name": (ctypes.c_char_p, [_int]),
    "otel_thread_ctx_inspect_open": (_int, [_int, ctypes.POINTER(ctypes.c_void_p)]),
    "otel_thread_ctx_inspect_info": (ctypes.POINTER(InspectInfo), [ctypes.c_void_p]),
    "otel_thread_ctx_inspect_key_count": (_uint, [ctypes.c_void_p]),
    "otel_thread_ctx_inspect_key_name": (ctypes.c_char_p, [ctypes.c_void_p, _uint]),
    "otel_thread_ctx_inspect_thread": (
        _int, [ctypes.c_void_p, _int, ctypes.POINTER(InspectThread)]),
    "otel_thread_ctx_inspect_threads": (
        _int, [ctypes.c_void_p, ctypes.POINTER(InspectThread), _size,
               ctypes.POINTER(_size)]),
    "otel_thread_ctx_inspect_close": (None, [ctypes.c_void_p]),
    "otel_thread_ctx_inspect_maps_signature": (_int, [_int, ctypes.POINTER(ctypes.c_uint64)]),
    "otel_thread_ctx_inspect_signature": (
        _int, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64)]),
}


def _declare(library: ctypes.CDLL, prototypes: Prototypes) -> None:
    for name, (restype, argtypes) in prototypes.items():
        f = getattr(library, name)
        f.restype = restype
        f.argtypes = list(argtypes)


# Global: libotel-thread-ctx-inspect finds this process's publisher (to read
# its own context where process_vm_readv() is refused, as under qemu-user)
# through weak references, which the loader binds in the global scope only.
lib, path = load(kind=ctypes.PyDLL, mode=ctypes.RTLD_GLOBAL)
_declare(lib, _prototypes)

_inspect: Optional[Tuple[ctypes.CDLL, str]] = None


def inspect_lib() -> Tuple[ctypes.CDLL, str]:
    """libotel-thread-ctx-inspect and where it was loaded from, loaded on
    the first call ($OTEL_THREAD_CTX_INSPECT_LIBRARY, then pkg-config
    otel-thread-ctx-inspect, then the loader); ImportError if it cannot be.
    It needs nothing of libotel-thread-ctx, but uses the publisher loaded
    above, globally, when this process reads its own context."""
    global _inspect  # pylint: disable=global-statement
    if _inspect is None:
        library, where = load(INSPECT_ENV_LIBRARY, INSPECT_PKG_CONFIG_NAME, INSPECT_SONAME)
        try:
            _declare(library, _inspect_prototypes)
        except AttributeError as e:
            raise ImportError(f"{where} is older than this package (it lacks a function: {e}); "
                              "install the library of the package's own version") from e
        _inspect = (library, where)
    return _inspect
