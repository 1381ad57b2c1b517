#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the seed corpus of the record decoder's fuzz target (corpus-record/).

Each file is the bytes a reader got for one record (OTEP 4947: a 28-byte
header, trace_id[16] span_id[8] valid trace_flags attrs_data_size (u16,
little-endian here: x86-64 and aarch64), then attrs_data), in the shapes the
decoder's rules are about: no header, a header alone, valid 0 and 2, 0 to
612 bytes of attributes, attrs_data_size 611, 612, 613 and beyond, fewer
bytes than attrs_data_size says, an entry cut after its key byte, a length
byte that runs past the end, repeated keys, empty and 255-byte values, every
key index.

The corpus is committed; run this again after changing it, and commit the
result:

  tests/inspect/make-corpus-record.py tests/inspect/corpus-record
"""
import os
import struct
import sys

ATTRS_MAX = 612
TRACE = bytes.fromhex("4bf92f3577b34da6a3ce929d0e0e4736")
SPAN = bytes.fromhex("00f067aa0ba902b7")


def header(size, valid=1, flags=1, ids=True):
    if not ids:
        return bytes(24) + struct.pack("<BBH", valid, 0, size)
    return TRACE + SPAN + struct.pack("<BBH", valid, flags, size)


def entry(key, value):
    return bytes([key, len(value)]) + value


def record(attrs, size=None, **kw):
    """A record holding attrs, with attrs_data_size len(attrs) unless given."""
    return header(len(attrs) if size is None else size, **kw) + attrs


def full_entries():
    """Three entries that end exactly at byte 612: 257 + 257 + 98."""
    a = entry(1, b"a" * 255) + entry(2, b"b" * 255) + entry(3, b"c" * 96)
    assert len(a) == ATTRS_MAX
    return a


def seeds():
    typical = (entry(0, b"GET") + entry(1, b"/api/users/{id}") + entry(2, b"alice") +
               entry(3, b"eu-west-1"))
    full = full_entries()
    every_key = b"".join(entry(k, b"") for k in range(256))
    same_key = entry(7, b"") * (ATTRS_MAX // 2)
    return {
        "empty": b"",
        "header-27": header(0)[:27],
        "header-only": header(0),
        "no-ids": record(entry(0, b"idle"), ids=False),
        "typical": record(typical),
        "typical-640": record(typical).ljust(640, b"\0"),
        "valid-0": record(typical, valid=0),
        "valid-2": record(typical, valid=2),
        "valid-255-full": record(full, valid=255),
        "one-empty-value": record(entry(5, b"")),
        "value-255": record(entry(9, bytes(range(255)))),
        "repeated-key": record(entry(1, b"first") + entry(2, b"x") + entry(1, b"second")),
        "repeated-key-many": record(same_key),
        "every-key": record(every_key),
        "high-keys": record(b"".join(entry(k, bytes([k])) for k in range(200, 256))),
        "cut-after-key": record(typical + bytes([4])),
        "cut-after-key-odd": record(entry(1, b"ab") + bytes([6])),
        # The key byte is the 612th: its length byte would be the 613th.
        "cut-after-key-at-611": record(full[:514] + entry(3, b"c" * 95) + bytes([4])),
        "length-past-end": record(entry(1, b"ok") + bytes([2, 200]) + b"short"),
        "length-past-612": record(full[:ATTRS_MAX - 98] + bytes([3, 120]) + b"c" * 96),
        "size-beyond-bytes": record(typical, size=len(typical) + 40),
        "size-612-header-only": header(ATTRS_MAX),
        "size-611": record(full, size=611),
        "size-612": record(full, size=612),
        "size-613": record(full + b"\0", size=613),
        "size-613-exact-640": record(full, size=613),
        "size-ffff": record(full + b"extra", size=0xFFFF),
        "size-0-with-bytes": record(typical, size=0),
    }


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = argv[1]
    os.makedirs(out, exist_ok=True)
    for name in os.listdir(out):
        os.unlink(os.path.join(out, name))
    total = 0
    for name, data in sorted(seeds().items()):
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
        total += len(data)
    print(f"{len(seeds())} files, {total} bytes in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
