#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the conformance vectors records.json and process.json (README.md).

    make-vectors.py [--check] DIR

Each vector is built here from its parts (ids, attribute entries, protobuf
fields), and its expected result is written by hand beside it, from the
rule it exercises: never computed by a reader of this project.  --check
compares the files in DIR with what this script writes (exit 1 and a diff
when they differ), so that a vector is never edited by hand without its
source.  Python 3 standard library only.
"""
import argparse
import difflib
import json
import struct
import sys

RECORD_MAX = 640
ATTRS_MAX = 612

R_RECORD = 'OTEP 4947, "Thread-Local Context Record"'
R_KEY_MAP = 'OTEP 4947, "Process Context: Thread-Local Reference Data"'
R_EBPF = "the OpenTelemetry eBPF profiler's reader (640-byte copy)"
R_HEADER = 'OTEP 4719, "Header Structure"'
R_PUBLISH = 'OTEP 4719, "Publication Protocol"'
R_PAYLOAD = 'OTEP 4719, "Payload" (protobuf ProcessContext)'

# The key map of the process whose threads publish the record vectors.
KEY_MAP = ["http.route", "http.request.method", "user.id", "worker"]

TRACE = bytes.fromhex("4bf92f3577b34da6a3ce929d0e0e4736")
SPAN = bytes.fromhex("00f067aa0ba902b7")


# --- Records ------------------------------------------------------------------

def entry(key, value):
    value = value.encode() if isinstance(value, str) else value
    assert len(value) <= 255
    return bytes([key, len(value)]) + value


def record(trace=TRACE, span=SPAN, valid=1, flags=1, attrs=b"", size=None):
    size = len(attrs) if size is None else size
    return trace + span + bytes([valid, flags]) + struct.pack("<H", size) + attrs


def accept(trace=TRACE, span=SPAN, flags=1, size=0, attributes=(), unmapped=0, findings=()):
    return {
        "read": True,
        "trace_id": trace.hex(),
        "span_id": span.hex(),
        "trace_flags": flags,
        "attrs_data_size": size,
        "attributes": [{"index": k, "key": KEY_MAP[k], "value": v.hex() if isinstance(v, bytes)
                        else v.encode().hex()} for k, v in attributes],
        "unmapped": unmapped,
        "findings": sorted(findings),
    }


def reject(reason, findings):
    return {"read": False, "reason": reason, "findings": sorted(findings)}


def record_vectors():
    zero16, zero8 = bytes(16), bytes(8)
    route = entry(0, "GET /orders/{id}")
    method = entry(1, "GET")
    v = []

    def add(name, what, rule, data, expect, address_mod_8=0):
        v.append({"name": name, "description": what, "rule": rule,
                  "address_mod_8": address_mod_8,
                  "bytes": data.hex(), "expect": expect})

    add("ids-sampled", "trace and span ids, sampled, no attributes", R_RECORD,
        record(), accept())
    add("ids-not-sampled", "trace and span ids, trace flags 0", R_RECORD,
        record(flags=0), accept(flags=0))
    add("no-ids", "no trace (both ids zero, flags 0): a record with attributes only",
        R_RECORD, record(zero16, zero8, flags=0, attrs=route),
        accept(zero16, zero8, 0, len(route), [(0, "GET /orders/{id}")]))
    add("empty", "both ids zero, flags 0, no attributes: nothing to show, nothing wrong",
        R_RECORD, record(zero16, zero8, flags=0), accept(zero16, zero8, 0))
    add("flags-high-bits", "trace flags 0x03: readers pass the byte on as it is", R_RECORD,
        record(flags=3), accept(flags=3))
    a = route + method + entry(2, "u-1842")
    add("three-attributes", "three attributes, key indices 0, 1, 2", R_RECORD,
        record(attrs=a), accept(size=len(a), attributes=[(0, "GET /orders/{id}"), (1, "GET"),
                                                         (2, "u-1842")]))
    a = entry(3, "") + method
    add("empty-value", "an attribute whose value is 0 bytes long", R_RECORD,
        record(attrs=a), accept(size=len(a), attributes=[(3, ""), (1, "GET")]))
    a = entry(0, "/caf\u00e9/\u65e5\u672c/\u2713/\U0001F680")
    add("utf8-multibyte", "a value with 2-, 3- and 4-byte UTF-8 sequences", R_RECORD,
        record(attrs=a), accept(size=len(a),
                                attributes=[(0, "/caf\u00e9/\u65e5\u672c/\u2713/\U0001F680")]))
    a = entry(2, "x" * 255)
    add("value-255", "a value of 255 bytes, the longest an entry holds", R_RECORD,
        record(attrs=a), accept(size=len(a), attributes=[(2, "x" * 255)]))
    a = entry(0, "a" * 255) + entry(1, "b" * 255) + entry(2, "c" * 96)
    assert len(a) == ATTRS_MAX
    add("attrs-612", "612 bytes of attributes: a record of exactly 640 bytes", R_RECORD,
        record(attrs=a), accept(size=ATTRS_MAX, attributes=[(0, "a" * 255), (1, "b" * 255),
                                                             (2, "c" * 96)]))
    a = entry(1, "GET") + entry(1, "POST")
    add("repeated-key", "key 1 twice: the last entry wins", R_RECORD, record(attrs=a),
        accept(size=len(a), attributes=[(1, "POST")], findings=["attrs-repeated-key"]))
    a = entry(0, "/a") + entry(1, "PUT") + entry(0, "/b")
    add("repeated-key-order", "key 0, key 1, key 0 again: key 0 is /b", R_RECORD,
        record(attrs=a), accept(size=len(a), attributes=[(1, "PUT"), (0, "/b")],
                                findings=["attrs-repeated-key"]))
    a = route + entry(4, "not in the map") + entry(255, "nor this")
    add("key-outside-map", "key indices 4 and 255 with a key map of 4 names: readers MUST "
        "ignore those entries", R_KEY_MAP, record(attrs=a),
        accept(size=len(a), attributes=[(0, "GET /orders/{id}")], unmapped=2,
               findings=["attrs-key-index"]))
    a = route + entry(1, "GET")[:-1]
    add("truncated-value", "the last entry's value runs one byte past attrs_data_size: "
        "readers stop there and keep the entries before it", R_RECORD, record(attrs=a),
        accept(size=len(a), attributes=[(0, "GET /orders/{id}")], findings=["attrs-truncated"]))
    a = route + b"\x01"
    add("truncated-header", "one byte after the last whole entry: half an entry header",
        R_RECORD, record(attrs=a),
        accept(size=len(a), attributes=[(0, "GET /orders/{id}")], findings=["attrs-truncated"]))
    a = entry(0, "a" * 255) + entry(1, "b" * 255) + entry(2, "c" * 96) + entry(3, "d" * 86)
    assert len(a) == 700
    add("oversized", "attrs_data_size 700: a record of 728 bytes.  Readers copy 640 bytes "
        "and decode 612 bytes of attributes: the three entries that fit", R_EBPF,
        record(attrs=a), accept(size=700, attributes=[(0, "a" * 255), (1, "b" * 255),
                                                      (2, "c" * 96)],
                                findings=["record-size"]))
    add("oversized-past-1023", "attrs_data_size 1,100, more than 10 bits hold (a reader "
        "that masks the size before it bounds it keeps 76 of it): readers decode 612 bytes "
        "of attributes, as for any oversized record", R_EBPF,
        record(attrs=a, size=1100), accept(size=1100, attributes=[(0, "a" * 255),
                                                                  (1, "b" * 255),
                                                                  (2, "c" * 96)],
                                           findings=["record-size"]))
    a = entry(0, b"/caf\xc3") + entry(1, b"\xff\xfe")
    add("not-utf8", "values that are not UTF-8: readers return the bytes as stored", R_RECORD,
        record(attrs=a), accept(size=len(a), attributes=[(0, b"/caf\xc3"), (1, b"\xff\xfe")],
                                findings=["attrs-utf8"]))
    a = entry(0, b"a\x00b\n\x1b[0m")
    add("control-bytes", "a value with NUL, newline and an escape sequence: valid UTF-8, "
        "returned as is (a reader that prints it escapes it)", R_RECORD, record(attrs=a),
        accept(size=len(a), attributes=[(0, b"a\x00b\n\x1b[0m")]))
    add("half-ids-trace", "a trace id and no span id: both are set, or neither", R_RECORD,
        record(span=zero8), accept(span=zero8, findings=["record-ids"]))
    add("half-ids-span", "a span id and no trace id", R_RECORD, record(trace=zero16),
        accept(trace=zero16, findings=["record-ids"]))
    add("flags-without-ids", "trace flags 1 with both ids zero: flags are 0 when there are "
        "no ids", R_RECORD, record(zero16, zero8, flags=1),
        accept(zero16, zero8, 1, findings=["record-flags"]))
    add("valid-0", "valid 0: a record being changed; readers ignore it", R_RECORD,
        record(valid=0, attrs=route), reject("valid", ["record-valid"]))
    add("valid-2", "valid 2: every value but 1 means ignore the record", R_RECORD,
        record(valid=2, attrs=route), reject("valid", ["record-valid"]))
    add("valid-255", "valid 255", R_RECORD, record(valid=255), reject("valid", ["record-valid"]))
    add("misaligned", "a whole, valid record at an odd address: records start 2-aligned; "
        "readers refuse it", R_RECORD, record(attrs=route), reject("misaligned",
                                                                   ["record-alignment"]),
        address_mod_8=1)
    add("aligned-2", "a record at an address that is 2-aligned and not 4-aligned: allowed",
        R_RECORD, record(attrs=route),
        accept(size=len(route), attributes=[(0, "GET /orders/{id}")]), address_mod_8=2)
    return v


# --- Process contexts ------------------------------------------------------------

def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(number, wire, payload):
    tag = varint(number << 3 | wire)
    if wire == 0:
        return tag + varint(payload)
    if wire == 2:
        return tag + varint(len(payload)) + payload
    return tag + payload  # 1 and 5: the fixed bytes as given


def s(text):
    return text.encode() if isinstance(text, str) else text


def anyv(kind, value):
    if kind == "string":
        return field(1, 2, s(value))
    if kind == "bool":
        return field(2, 0, 1 if value else 0)
    if kind == "int":
        return field(3, 0, value & (2**64 - 1))
    if kind == "double":
        return field(4, 1, struct.pack("<d", value))
    if kind == "array":
        return field(5, 2, b"".join(field(1, 2, anyv(k, x)) for k, x in value))
    if kind == "bytes":
        return field(7, 2, value)
    raise ValueError(kind)


def kv(key, kind, value):
    return field(1, 2, s(key)) + field(2, 2, anyv(kind, value))


def payload(resource=(), attributes=(), schema="tlsdesc_v1_dev", key_map=KEY_MAP):
    res = b"".join(field(1, 2, kv(*a)) for a in resource)
    out = field(1, 2, res)
    attrs = list(attributes)
    if schema is not None:
        attrs.append(("threadlocal.schema_version", "string", schema))
    if key_map is not None:
        attrs.append(("threadlocal.attribute_key_map", "array", [("string", k) for k in key_map]))
    return out + b"".join(field(2, 2, kv(*a)) for a in attrs)


def header(size, signature=b"OTEL_CTX", version=2, published=1733540000000000000):
    # The payload pointer (the last 8 bytes) is the writer's to fill in.
    return signature + struct.pack("<IIQQ", version, size, published, 0)


SERVICE = [("service.name", "string", "checkout"), ("service.instance.id", "string",
                                                    "0d3c2a5e-61f4-4f0e-9a51-8c2b1f6a7e90")]


def pctx_accept(resource=SERVICE, attributes=(), schema="tlsdesc_v1_dev", key_map=KEY_MAP,
                findings=()):
    def one(key, kind, value):
        d = {"key": key, "type": kind}
        if kind in ("string",):
            d["value"] = value
        elif kind == "bytes":
            d["value"] = value.hex()
        else:
            d["value"] = value
        return d
    return {"read": True, "schema_version": schema, "key_map": key_map,
            "resource": [one(*a) for a in resource],
            "attributes": [one(*a) for a in attributes], "findings": sorted(findings)}


def pctx_reject(reason, findings=()):
    return {"read": False, "reason": reason, "findings": sorted(findings)}


def process_vectors():
    v = []

    def add(name, what, rule, body, expect, hdr=None):
        d = {"name": name, "description": what, "rule": rule,
             "header": (hdr if hdr is not None else header(len(body))).hex()}
        # A payload that ends in a run of zero bytes longer than 1 KiB is
        # written as its head and the run's length (payload_zeros).
        head = body.rstrip(b"\0")
        if len(body) - len(head) > 1024:
            d["payload"], d["payload_zeros"] = head.hex(), len(body) - len(head)
        else:
            d["payload"] = body.hex()
        d["expect"] = expect
        v.append(d)

    good = payload(SERVICE)
    add("minimal", "service name and instance id, the schema version and a key map of 4 "
        "names", R_PAYLOAD, good, pctx_accept())
    types = SERVICE + [("deployment.environment.name", "string", "prod"),
                       ("process.pid", "int", 4242), ("host.arch.bits", "int", -64),
                       ("telemetry.auto", "bool", True), ("process.cpu.share", "double", 0.25),
                       ("process.blob", "bytes", b"\x00\x01\xfe\xff")]
    add("value-types", "resource attributes of type string, int (also negative), bool, "
        "double and bytes", R_PAYLOAD, payload(types), pctx_accept(types))
    add("no-key-map", "the schema version and no key map: readers name no attribute key",
        R_KEY_MAP, payload(SERVICE, key_map=None), pctx_accept(key_map=None))
    add("empty-key-map", "a key map that is an empty array", R_KEY_MAP,
        payload(SERVICE, key_map=[]), pctx_accept(key_map=[]))
    keys256 = ["k%d" % i for i in range(256)]
    add("key-map-256", "a key map of 256 names, one per key index", R_KEY_MAP,
        payload(SERVICE, key_map=keys256), pctx_accept(key_map=keys256))
    add("schema-tls-v1", "schema version \"tls_v1\", the name OTEP 4947 gives once merged: "
        "decodes, but the eBPF profiler accepts only \"tlsdesc_v1_dev\" today", R_KEY_MAP,
        payload(SERVICE, schema="tls_v1"), pctx_accept(schema="tls_v1",
                                                      findings=["pctx-schema"]))
    extra = [("host.name", "string", "node-7")]
    add("extra-attributes", "ProcessContext.attributes besides the two threadlocal entries",
        R_PAYLOAD, payload(SERVICE, extra), pctx_accept(attributes=extra))
    unknown = (field(15, 0, 7) + field(16, 2, b"ignored") + field(17, 5, b"\x01\x02\x03\x04") +
               field(18, 1, bytes(8)))
    body = unknown + payload(SERVICE) + unknown
    add("unknown-fields", "fields of numbers 15 to 18 (each wire type) before and after: "
        "protobuf readers skip them", R_PAYLOAD, body, pctx_accept())
    res_a = field(1, 2, field(1, 2, kv(*SERVICE[0])))
    res_b = field(1, 2, field(1, 2, kv(*SERVICE[1])))
    tail = payload((), schema="tlsdesc_v1_dev")[len(field(1, 2, b"")):]
    add("resource-twice", "ProcessContext.resource twice, one attribute each: an embedded "
        "message seen twice is merged, so both attributes count", R_PAYLOAD,
        res_a + res_b + tail, pctx_accept())
    pad_to = 65536
    base = payload(SERVICE)
    filler = pad_to - len(base) - 4  # tag (2 bytes) + length varint (3 bytes) - 1
    body = base + field(19, 2, b"\x00" * (filler - 1))
    assert len(body) == pad_to, len(body)
    add("payload-65536", "a payload of 65,536 bytes (an unknown field pads it): the largest "
        "the eBPF profiler reads", R_EBPF, body, pctx_accept())
    body = base + field(19, 2, b"\x00" * filler)
    assert len(body) == pad_to + 1
    add("payload-65537", "a payload of 65,537 bytes: readers refuse it", R_EBPF, body,
        pctx_reject("payload-size", ["pctx-header"]))
    add("payload-size-0", "payload_size 0", R_HEADER, good, pctx_reject("payload-size",
                                                                      ["pctx-header"]),
        hdr=header(0))
    add("signature", "signature \"OTEL_CTY\"", R_HEADER, good,
        pctx_reject("signature", ["pctx-header"]), hdr=header(len(good), signature=b"OTEL_CTY"))
    add("version-1", "version 1", R_HEADER, good, pctx_reject("version", ["pctx-header"]),
        hdr=header(len(good), version=1))
    add("version-3", "version 3", R_HEADER, good, pctx_reject("version", ["pctx-header"]),
        hdr=header(len(good), version=3))
    add("being-updated", "monotonic_published_at_ns 0: an update in progress; a reader "
        "retries and gives up if it stays 0", R_PUBLISH, good,
        pctx_reject("being-updated", ["pctx-read"]), hdr=header(len(good), published=0))
    bad = [
        ("truncated-varint", "the payload ends inside a varint", good + b"\x78\x80"),
        ("length-past-end", "a length-delimited field longer than the bytes left",
         good + field(20, 2, b"abc")[:-1]),
        ("wire-type-6", "a field of wire type 6 (no such type)", good + varint(21 << 3 | 6)),
        ("field-number-0", "a field of number 0", varint(0 << 3 | 0) + b"\x01" + good),
        ("string-not-utf8", "a resource attribute string that is not UTF-8",
         payload([("service.name", "string", b"check\xffout")])),
        ("key-map-not-strings", "threadlocal.attribute_key_map with an int among its "
         "values: a key map is an array of strings",
         payload(SERVICE, key_map=None) + field(2, 2, kv("threadlocal.attribute_key_map",
                                                         "array", [("string", "a"),
                                                                   ("int", 3)]))),
        ("key-map-not-array", "threadlocal.attribute_key_map as one string",
         payload(SERVICE, key_map=None) + field(2, 2, kv("threadlocal.attribute_key_map",
                                                         "string", "http.route"))),
    ]
    for name, what, body in bad:
        add(name, what, R_PAYLOAD, body, pctx_reject("decode", ["pctx-read"]))
    return v


def documents():
    rec = {
        "format": "otel-thread-ctx conformance vectors: thread-context records",
        "version": 1,
        "byte_order": "little-endian (attrs_data_size)",
        "record_max": RECORD_MAX,
        "attrs_max": ATTRS_MAX,
        "key_map": KEY_MAP,
        "vectors": record_vectors(),
    }
    proc = {
        "format": "otel-thread-ctx conformance vectors: process-context headers and payloads",
        "version": 1,
        "byte_order": "little-endian (version, payload_size, monotonic_published_at_ns)",
        "payload_max": 65536,
        "vectors": process_vectors(),
    }
    return {"records.json": rec, "process.json": proc}


def render(doc):
    return json.dumps(doc, indent=1, ensure_ascii=True) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true")
    ap.add_argument("dir")
    a = ap.parse_args()
    bad = 0
    for name, doc in documents().items():
        path = "%s/%s" % (a.dir, name)
        text = render(doc)
        if a.check:
            try:
                with open(path) as f:
                    have = f.read()
            except OSError as e:
                print("make-vectors: %s: %s" % (path, e.strerror))
                bad = 1
                continue
            if have != text:
                sys.stdout.writelines(list(difflib.unified_diff(
                    have.splitlines(True), text.splitlines(True), path, "make-vectors.py"))[:40])
                print("make-vectors: %s differs from what make-vectors.py writes" % path)
                bad = 1
        else:
            with open(path, "w") as f:
                f.write(text)
    if a.check and not bad:
        print("make-vectors: records.json and process.json are what make-vectors.py writes")
    return bad


if __name__ == "__main__":
    sys.exit(main())
