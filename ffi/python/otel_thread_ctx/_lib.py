# SPDX-License-Identifier: Apache-2.0
"""Finding and declaring libotel-thread-ctx: the raw C ABI, through ctypes.

Everything here mirrors include/otel_thread_ctx.h.  The rest of the package
calls the library only through the `lib` object this module loads, whose
functions all have their argtypes and restype declared below.
"""

import ctypes
import ctypes.util
import os
import subprocess

SONAME = "libotel-thread-ctx.so.1"
ENV_LIBRARY = "OTEL_THREAD_CTX_LIBRARY"
PKG_CONFIG_NAME = "otel-thread-ctx"

RECORD_SIZE = 640
ATTRS_MAX = 612
VALUE_MAX = 255
KEY_MAX = 255
KEY_NAME_MAX = 255


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


def _pkg_config(*args):
    try:
        return subprocess.run(
            ["pkg-config"] + list(args) + [PKG_CONFIG_NAME],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            check=True, text=True, timeout=30,
        ).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return []


def _pkg_config_candidates():
    """The library in the directories pkg-config reports: its libdir, then
    the -L directories of its Libs (the only right one in the
    meson-uninstalled .pc of a build tree)."""
    dirs = _pkg_config("--variable=libdir")
    dirs += [flag[2:] for flag in _pkg_config("--libs-only-L") if flag.startswith("-L")]
    return [os.path.join(d, name) for d in dirs
            for name in (SONAME, "libotel-thread-ctx.so")]


def find_library():
    """Where the library is, in the order users install it.

    1. $OTEL_THREAD_CTX_LIBRARY, the path of the shared library: used as it
       is, and an error if it cannot be loaded (never a silent fallback);
    2. `pkg-config otel-thread-ctx`: its libdir, then its -L directories
       (PKG_CONFIG_PATH applies);
    3. the dynamic loader: ctypes.util.find_library(), then the soname.

    Returns (list of candidates to try in order, whether the first is the
    override).
    """
    override = os.environ.get(ENV_LIBRARY)
    if override:
        return [override], True
    candidates = [p for p in _pkg_config_candidates() if os.path.exists(p)]
    found = ctypes.util.find_library("otel-thread-ctx")
    if found:
        candidates.append(found)
    candidates.append(SONAME)
    return candidates, False


def load():
    """Loads the library; ImportError with every place tried if none works."""
    candidates, override = find_library()
    errors = []
    for path in candidates:
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            if override:
                raise ImportError(
                    "otel_thread_ctx: cannot load %s=%s: %s" % (ENV_LIBRARY, path, e)
                ) from e
            errors.append("%s: %s" % (path, e))
    raise ImportError(
        "otel_thread_ctx: libotel-thread-ctx not found; set %s to the path of "
        "%s, or install it where pkg-config or the dynamic loader finds it "
        "(tried: %s)" % (ENV_LIBRARY, SONAME, "; ".join(errors))
    )


lib, path = load()

_ctx_p = ctypes.c_void_p
_ctx_pp = ctypes.POINTER(ctypes.c_void_p)
_int = ctypes.c_int
_uint = ctypes.c_uint
_u8 = ctypes.c_uint8
_bytes = ctypes.c_char_p  # fixed-size id arrays, passed as bytes objects

_prototypes = {
    "otel_thread_ctx_strerror": (ctypes.c_char_p, [_int]),
    "otel_thread_ctx_create": (_int, [_ctx_pp]),
    "otel_thread_ctx_destroy": (_int, [_ctx_p]),
    "otel_thread_ctx_set_ids": (_int, [_ctx_p, _bytes, _bytes, _u8]),
    "otel_thread_ctx_set_span_id": (_int, [_ctx_p, _bytes]),
    "otel_thread_ctx_set_trace_flags": (_int, [_ctx_p, _u8]),
    "otel_thread_ctx_clear_ids": (_int, [_ctx_p]),
    "otel_thread_ctx_set_attr": (_int, [_ctx_p, _uint, ctypes.c_char_p, ctypes.c_size_t]),
    "otel_thread_ctx_remove_attr": (_int, [_ctx_p, _uint]),
    "otel_thread_ctx_clear_attrs": (_int, [_ctx_p]),
    "otel_thread_ctx_clear": (_int, [_ctx_p]),
    "otel_thread_ctx_set_attrs": (_int, [_ctx_p, ctypes.POINTER(Attr), ctypes.c_size_t]),
    "otel_thread_ctx_attach": (_int, [_ctx_p, _ctx_pp]),
    "otel_thread_ctx_update": (_int, [_ctx_p]),
    "otel_thread_ctx_update_span_id": (_int, [_ctx_p, _bytes]),
    "otel_thread_ctx_update_all": (
        _int, [_ctx_p, _bytes, _bytes, _u8, ctypes.POINTER(Attr), ctypes.c_size_t]),
    "otel_thread_ctx_update_attach": (_int, [_ctx_p, _ctx_pp]),
    "otel_thread_ctx_detach": (_int, [_ctx_pp]),
    "otel_thread_ctx_invalidate": (_int, [_ctx_p]),
    "otel_thread_ctx_current": (_ctx_p, []),
    "otel_thread_ctx_read": (_int, [ctypes.POINTER(Record)]),
    "otel_thread_ctx_record_decode": (
        _int, [ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(Record)]),
    "otel_thread_ctx_attr_iter_init": (
        None, [ctypes.POINTER(AttrIter), ctypes.POINTER(Record)]),
    "otel_thread_ctx_attr_iter_next": (
        _int, [ctypes.POINTER(AttrIter), ctypes.POINTER(Attr)]),
    "otel_thread_ctx_self_check": (_int, [ctypes.POINTER(SelfCheck)]),
    "otel_thread_ctx_key_register": (_int, [ctypes.c_char_p, ctypes.POINTER(_uint)]),
    "otel_thread_ctx_key_find": (_int, [ctypes.c_char_p, ctypes.POINTER(_uint)]),
    "otel_thread_ctx_key_name": (ctypes.c_char_p, [_uint]),
    "otel_thread_ctx_key_count": (_uint, []),
}

for _name, (_restype, _argtypes) in _prototypes.items():
    _f = getattr(lib, _name)
    _f.restype = _restype
    _f.argtypes = _argtypes
del _name, _restype, _argtypes, _f
