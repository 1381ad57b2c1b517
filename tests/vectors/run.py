#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every reader of this project on the conformance vectors (README.md).

usage: run.py bytes --read READ [--python | --no-python REASON] [--wrapper=WORD]...
       run.py live  --read READ --writer WRITER --inspector CLI --checker CHECK
                    [--python | --no-python REASON] [--skip REASON]
       run.py bpf   --writer WRITER --sampler SAMPLE [--skip REASON]
       run.py elf   --checker CHECK [--writer WRITER --inspector CLI] [--wrapper=WORD]...

bytes: make-vectors.py --check, then the readers of bytes: the C record
  decoder with the key-map walk and otel_thread_ctx_inspect_anomalies()
  (READ, read.c), the process-context payload decoder, and with --python
  the Python binding's record_decode() and decode_process().
live: WRITER (writer.c, a writer that does not use this library) publishes
  every record vector on a thread of its own, the key map of records.json
  as its process context, and every process-context vector in a mapping
  of its own; then each reader reads it: the C inspector (READ), the
  command line (CLI --json), the Python Inspector and read_process_at(),
  and the doctor (CHECK --pid --json: each vector's thread carries exactly
  the findings the vector names); then one writer per process-context
  vector, published as its process context, checked by the doctor.
bpf: the BPF reader (SAMPLE --json, the eBPF sampler) samples WRITER's
  threads: each record vector read as its expectation says.

elf: the file checker (CHECK --json) on each ELF vector: what it must find
  (machine, kind, the slot's symbol, access models, relocations, the
  executable's thread-pointer offset) and its verdict; with WRITER, the
  shared libraries of this machine's CPU that load are loaded into it and
  the inspector (CLI --json) must find each with the slot at offset 24 of
  its TLS block in a model that the vector's access model allows.

A vector whose expected result is a rejection must be rejected by each
reader.  Prints one line per reader and vector that fails, and a count per
reader; exit 0 when all pass, 1 otherwise, 77 (skip) with the reason when
a reader cannot run here (ptrace or BPF refused).
"""
import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# What each reader's status is for a rejection's reason.
READER_STATUS = {"valid": "EINVALID", "misaligned": "EFORMAT"}
CLI_STATUS = {"valid": "invalid", "misaligned": "misaligned"}
PCTX_STATUS = {"signature": "EFORMAT", "version": "EFORMAT", "payload-size": "EFORMAT",
               "being-updated": "EAGAIN", "decode": "EDECODE"}
# A decoder of the payload alone: a payload over 65,536 bytes is E2BIG.
DECODE_STATUS = dict(PCTX_STATUS, **{"payload-size": "E2BIG"})
# The inspector's anomaly for a record finding.
ANOMALY = {"record-size": "oversized", "attrs-truncated": "truncated-entry",
           "record-ids": "half-ids"}


def load(name):
    with open(os.path.join(HERE, name)) as f:
        return json.load(f)


class Tally:
    def __init__(self):
        self.counts = {}
        self.failed = 0

    def check(self, reader, name, problems):
        ok, bad = self.counts.get(reader, (0, 0))
        if problems:
            self.failed += 1
            print("FAIL %s %s: %s" % (reader, name, "; ".join(problems)))
            self.counts[reader] = (ok, bad + 1)
        else:
            self.counts[reader] = (ok + 1, bad)

    def report(self):
        for reader, (ok, bad) in self.counts.items():
            print("%-28s %3d vectors passed, %d failed" % (reader, ok, bad))
        return 1 if self.failed or not self.counts else 0


def skip(reason):
    print("skip:", reason)
    sys.exit(77)


# --- Comparisons -------------------------------------------------------------------


def same(problems, what, got, want):
    if got != want:
        problems.append("%s %r, expected %r" % (what, got, want))


def status_problems(got, e, reason_status):
    """The reader's status against the vector's: OK when it is read, else
    the status `reason_status` gives the rejection's reason."""
    p = []
    same(p, "status", got["status"], reason_status[e["reason"]] if not e["read"] else "OK")
    return p


def expected_attrs(e):
    return {a["index"]: a["value"] for a in e["attributes"]}


def check_record(got, e, attrs, anomalies=None):
    """`got`: status, trace_id, span_id, trace_flags, attrs_data_size (or
    None where the reader does not give it); `attrs` {index: hex}."""
    p = status_problems(got, e, READER_STATUS)
    if p or not e["read"]:
        return p
    for k in ("trace_id", "span_id", "trace_flags", "attrs_data_size"):
        if got.get(k) is not None:
            same(p, k, got[k], e[k])
    same(p, "attributes", attrs, expected_attrs(e))
    if got.get("unmapped") is not None:
        same(p, "unmapped", got["unmapped"], e["unmapped"])
    if anomalies is not None:
        want = sorted(ANOMALY[f] for f in e["findings"] if f in ANOMALY)
        same(p, "anomalies", sorted(anomalies), want)
    return p


def c_record(line, e):
    got = json.loads(line)
    attrs = {a["index"]: a["value"] for a in got.get("attributes", [])}
    return check_record(got, e, attrs, got.get("anomalies"))


def check_pctx(got, e, reason_status=PCTX_STATUS):
    p = status_problems(got, e, reason_status)
    if p or not e["read"]:
        return p
    unhex = (lambda h: None if h is None else bytes.fromhex(h).decode())
    same(p, "schema_version", unhex(got["schema_version"]), e["schema_version"])
    keys = got["key_map"]
    same(p, "key_map", None if keys is None else [unhex(k) for k in keys], e["key_map"])
    for part in ("resource", "attributes"):
        have = []
        for a in got[part]:
            v = a["value"]
            if a["type"] == "string":
                v = unhex(v)
            have.append({"key": unhex(a["key"]), "type": a["type"], "value": v})
        same(p, part, have, e[part])
    return p


def py_pctx(ctx):
    """A ProcessContext of the Python binding, as check_pctx() wants it."""
    def typed(v):
        if isinstance(v, bool):
            return "bool", v
        if isinstance(v, int):
            return "int", v
        if isinstance(v, float):
            return "double", v
        if isinstance(v, bytes):
            return "bytes", v.hex()
        if isinstance(v, str):
            return "string", v.encode().hex()
        return "other", repr(v)

    def items(pairs):
        out = []
        for k, v in pairs:
            t, x = typed(v)
            out.append({"key": k.encode().hex(), "type": t, "value": x})
        return out
    return {"status": "OK",
            "schema_version": None if ctx.schema_version is None else
            ctx.schema_version.encode().hex(),
            "key_map": None if ctx.key_map is None else [k.encode().hex() for k in ctx.key_map],
            "resource": items(ctx.resource_items), "attributes": items(ctx.attribute_items)}


def json_bytes(text, want_hex):
    """The hex of the bytes a value printed as JSON text stands for.  The
    tools print a value that is UTF-8 as its text (control characters
    escaped), and one that is not with every byte above 0x7f or below 0x20
    as \\u00XX: each character then stands for one byte."""
    want = bytes.fromhex(want_hex or "")
    try:
        want.decode("utf-8")
        return text.encode("utf-8", "surrogatepass").hex()
    except UnicodeDecodeError:
        return bytes(ord(c) & 0xFF if ord(c) < 0x100 else 0x3F for c in text).hex()


def payload_of(v):
    return bytes.fromhex(v["payload"]) + bytes(v.get("payload_zeros", 0))


def in_bytes(recs):
    """The record vectors a reader of bytes judges: placement (the address
    modulo 8) is a rule of readers of memory (live, bpf)."""
    return [v for v in recs["vectors"] if v["address_mod_8"] % 2 == 0]


def decoded(procs):
    """(vector, payload) of the process-context vectors a decoder of the
    payload alone judges: the header's rules are the live readers'."""
    for v in procs["vectors"]:
        e, body = v["expect"], payload_of(v)
        if e["read"] or e["reason"] == "decode" or len(body) > procs["payload_max"]:
            yield v, body


def py_status(code):
    """The name of a code of the Python binding, as read.c prints it."""
    import otel_thread_ctx
    from otel_thread_ctx import inspect as pyinspect
    for enum in (pyinspect.Error, otel_thread_ctx.Error):
        try:
            return "OK" if code == 0 else enum(code).name
        except ValueError:
            pass
    return str(code)


# --- The readers of bytes -------------------------------------------------------------


class Reader:
    """read.c: a command per line, a JSON line per result (several for
    `threads`, ended by the next command's answer)."""

    def __init__(self, path, wrapper=()):
        self.p = subprocess.Popen(list(wrapper) + [path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True)

    def ask(self, command):
        self.p.stdin.write(command + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError("vectors-read ended on: " + command[:60])
        return line

    def threads(self, pid):
        self.p.stdin.write("threads %d\nrecord 0 00\n" % pid)
        self.p.stdin.flush()
        out = []
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise RuntimeError("vectors-read ended while reading threads")
            got = json.loads(line)
            if "tid" not in got:
                return out  # the marker's answer (a record too short: ETRUNCATED)
            out.append(got)

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def python_binding(args):
    if args.no_python:
        print("the Python binding is not run:", args.no_python)
        return None
    import otel_thread_ctx
    from otel_thread_ctx import inspect as pyinspect
    return otel_thread_ctx, pyinspect


def run_bytes(args, t):
    spec = importlib.util.spec_from_file_location("make_vectors",
                                                  os.path.join(HERE, "make-vectors.py"))
    mv = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mv)
    for name, doc in mv.documents().items():
        with open(os.path.join(HERE, name)) as f:
            t.check("make-vectors.py", name, [] if f.read() == mv.render(doc) else
                    ["differs from what make-vectors.py writes (run it on tests/vectors)"])
    recs, procs = load("records.json"), load("process.json")
    keys = len(recs["key_map"])
    r = Reader(args.read, args.wrapper)
    for v in in_bytes(recs):
        t.check("c-record-decode", v["name"], c_record(r.ask("record %d %s" % (keys, v["bytes"])),
                                                       v["expect"]))
    for v, _ in decoded(procs):
        got = json.loads(r.ask("process %s %d" % (v["payload"], v.get("payload_zeros", 0))))
        t.check("c-process-decode", v["name"], check_pctx(got, v["expect"], DECODE_STATUS))
    r.close()
    py = python_binding(args)
    if py is None:
        return
    otel, pyinspect = py
    for name in recs["key_map"]:
        otel.key_register(name)
    for v in in_bytes(recs):
        e = v["expect"]
        try:
            rec = otel.record_decode(bytes.fromhex(v["bytes"])[:recs["record_max"]])
            got = {"status": "OK", "trace_id": rec.trace_id.hex(), "span_id": rec.span_id.hex(),
                   "trace_flags": rec.flags}
            attrs = {k: b.hex() for k, b in rec.raw_attrs.items()}
        except otel.ThreadCtxError as err:
            got, attrs = {"status": py_status(err.code)}, {}
        t.check("python-record-decode", v["name"], check_record(got, e, attrs))
    for v, body in decoded(procs):
        try:
            got = py_pctx(pyinspect.decode_process(body))
        except pyinspect.InspectError as err:
            got = {"status": py_status(err.code)}
        t.check("python-decode-process", v["name"], check_pctx(got, v["expect"], DECODE_STATUS))


# --- The live readers -------------------------------------------------------------------


class Writer:
    def __init__(self, path, commands):
        self.p = subprocess.Popen([path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True)
        self.answers = []
        for c in commands + ["run"]:
            self.p.stdin.write(c + "\n")
            self.p.stdin.flush()
            line = self.p.stdout.readline().split()
            if not line:
                raise RuntimeError("vectors-writer ended on: " + c[:60])
            self.answers.append(line)
        self.pid = self.p.pid

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def pctx_command(kind, v):
    return "%s %s %s %d" % (kind, v["header"], v["payload"], v.get("payload_zeros", 0))


def record_writer(args, recs, procs):
    """The writer of every record vector (and every process-context vector
    in a mapping of no name); {tid: vector}, {address: vector}."""
    minimal = next(v for v in procs["vectors"] if v["name"] == "minimal")
    assert minimal["expect"]["key_map"] == recs["key_map"]
    # Beside them, shared anonymous memory under a name: the one kind of
    # mapping with a file whose name does not start with "/", which the
    # inspector's two ways of listing the files must take alike (else it
    # would find the process changed under every read).
    cmds = ["shm OTEL_VECTORS_SHM", pctx_command("pctx", minimal)]
    cmds += ["thread %d %s" % (v["address_mod_8"], v["bytes"]) for v in recs["vectors"]]
    cmds += [pctx_command("map", v) for v in procs["vectors"]]
    w = Writer(args.writer, cmds)
    n = len(recs["vectors"])
    tids = {int(a[1]): v for a, v in zip(w.answers[2:2 + n], recs["vectors"])}
    maps = {int(a[1], 16): v for a, v in zip(w.answers[2 + n:-1], procs["vectors"])}
    return w, tids, maps


def doctor(args, pid):
    out = subprocess.run([args.checker, "--json", "--pid", str(pid)], stdout=subprocess.PIPE,
                         text=True, timeout=120)
    return json.loads(out.stdout)


def run_live(args, t):
    recs, procs = load("records.json"), load("process.json")
    w, tids, maps = record_writer(args, recs, procs)
    try:
        r = Reader(args.read)
        got = r.threads(w.pid)
        if len(got) == 1 and got[0]["status"] == "EPERM":
            skip("not permitted to read another process (ptrace)")
        seen = {g["tid"]: g for g in got}
        for tid, v in tids.items():
            g = seen.get(tid, {"status": "not listed"})
            t.check("c-inspector", v["name"], check_record(
                g, v["expect"], {a["index"]: a["value"] for a in g.get("attributes", [])},
                g.get("anomalies")))
        for addr, v in maps.items():
            t.check("c-process-read-at", v["name"],
                    check_pctx(json.loads(r.ask("process-at %d %#x" % (w.pid, addr))),
                               v["expect"]))
        r.close()

        out = subprocess.run([args.inspector, "--json", str(w.pid)], stdout=subprocess.PIPE,
                             text=True, timeout=120)
        seen = {th["tid"]: th for th in json.loads(out.stdout)["threads"]}
        for tid, v in tids.items():
            th = seen.get(tid, {"status": "not listed"})
            e = v["expect"]
            if not e["read"]:
                p = []
                same(p, "status", th["status"], CLI_STATUS[e["reason"]])
                t.check("inspect-cli", v["name"], p)
                continue
            p = []
            same(p, "key names", {a["index"]: a["key"] for a in th.get("attributes", [])},
                 {a["index"]: a["key"] for a in e["attributes"]})
            attrs = {a["index"]: json_bytes(a["value"], expected_attrs(e).get(a["index"]))
                     for a in th.get("attributes", [])}
            got = dict(th, status="OK" if th["status"] == "ok" else th["status"])
            p += check_record(got, e, attrs, th.get("anomalies"))
            t.check("inspect-cli", v["name"], p)

        py = python_binding(args)
        if py is not None:
            _, pyinspect = py
            with pyinspect.Inspector(w.pid) as insp:
                seen = {th.tid: th for th in insp.threads()}
            for tid, v in tids.items():
                th = seen.get(tid)
                if th is None:
                    t.check("python-inspector", v["name"], ["thread not listed"])
                    continue
                got = {"status": py_status(th.status),
                       "attrs_data_size": th.attrs_data_size}
                attrs = {}
                if th.record is not None:
                    got.update(trace_id=th.record.trace_id.hex(),
                               span_id=th.record.span_id.hex(), trace_flags=th.record.flags)
                    attrs = {k: b.hex() for k, b in th.record.raw_attrs.items()}
                t.check("python-inspector", v["name"], check_record(got, v["expect"], attrs))
            for addr, v in maps.items():
                try:
                    got = py_pctx(pyinspect.read_process_at(w.pid, addr, 3))
                except pyinspect.InspectError as err:
                    got = {"status": py_status(err.code)}
                t.check("python-read-process-at", v["name"], check_pctx(got, v["expect"]))

        report = doctor(args, w.pid)
        by_tid = {}
        for f in report["findings"]:
            for tid in f.get("threads", []):
                by_tid.setdefault(tid, set()).add(f["id"])
        for tid, v in tids.items():
            p = []
            same(p, "findings", sorted(by_tid.get(tid, ())), v["expect"]["findings"])
            t.check("doctor-threads", v["name"], p)
    finally:
        w.close()

    # The doctor on each process-context vector, published as the process
    # context of a writer of its own.
    for v in procs["vectors"]:
        w = Writer(args.writer, [pctx_command("pctx", v)])
        try:
            report = doctor(args, w.pid)
        finally:
            w.close()
        ids = sorted({f["id"] for f in report["findings"] if f["id"].startswith("pctx") and
                      f["status"] in ("fail", "warn")})
        p = []
        same(p, "findings", ids, v["expect"]["findings"])
        t.check("doctor-process-context", v["name"], p)


# --- The BPF reader --------------------------------------------------------------------

# The sampler's per-thread counter for a rejection's reason.
BPF_COUNTER = {"valid": "invalid", "misaligned": "misaligned"}


def run_bpf(args, t):
    recs, procs = load("records.json"), load("process.json")
    w, tids, _ = record_writer(args, recs, procs)
    try:
        out = subprocess.run([args.sampler, "--json", "--frequency", "997", "--duration", "2",
                              str(w.pid)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, timeout=120)
    finally:
        w.close()
    if out.returncode in (4, 7) and ("BPF" in out.stderr or "permission" in out.stderr.lower()):
        skip("the eBPF sampler cannot run here: " + out.stderr.strip()[:200])
    seen = {}
    for line in out.stdout.splitlines():
        d = json.loads(line)
        if d.get("type") == "thread":
            seen[d["tid"]] = d
    for tid, v in tids.items():
        e = v["expect"]
        d = seen.get(tid)
        p = []
        if d is None:
            t.check("bpf-sampler", v["name"], ["no sample of the thread"])
            continue
        if not e["read"]:
            counter = BPF_COUNTER[e["reason"]]
            same(p, counter + " samples", d.get(counter), d.get("samples"))
            t.check("bpf-sampler", v["name"], p)
            continue
        same(p, "samples with a record", d.get("context"), d.get("samples"))
        rec = d.get("record") or {}
        got = {"status": "OK", "trace_id": rec.get("trace_id"), "span_id": rec.get("span_id"),
               "trace_flags": rec.get("trace_flags"), "attrs_data_size":
               rec.get("attrs_data_size"), "unmapped": rec.get("unmapped")}
        attrs = {a["index"]: json_bytes(a["value"], expected_attrs(e).get(a["index"]))
                 for a in rec.get("attributes", [])}
        p += check_record(got, e, attrs)
        t.check("bpf-sampler", v["name"], p)


# --- The ELF vectors ------------------------------------------------------------------

# The inspector's models for a file's access model.
INSPECTOR_MODELS = {"TLSDESC": {"tlsdesc-static", "tlsdesc-dynamic"},
                    "general-dynamic": {"general-dynamic"},
                    "initial-exec": {"initial-exec"}, "local-exec": {"local-exec"}}


def run_elf(args, t):
    out = subprocess.run([sys.executable, os.path.join(HERE, "make-elf-vectors.py"), "--check",
                          HERE], stdout=subprocess.PIPE, text=True)
    t.check("make-elf-vectors.py", "elf.json", [] if out.returncode == 0 else [out.stdout])
    doc = load("elf.json")
    for v in doc["vectors"]:
        e = v["expect"]
        out = subprocess.run(args.wrapper + [args.checker, "--json",
                                             os.path.join(HERE, v["file"])],
                             stdout=subprocess.PIPE, text=True, timeout=60)
        f = json.loads(out.stdout)["files"][0]
        p = []
        same(p, "verdict", f["verdict"], e["verdict"])
        for k in ("machine", "kind", "access_models", "main_program_tp_offset"):
            if k in e:
                same(p, k, f.get(k), e[k])
        slot = f.get("slot") or {"defined": False}
        for k, want in e["slot"].items():
            same(p, "slot " + k, slot.get(k), want)
        if "relocations" in e:
            same(p, "relocations", sorted({r["type"] for r in f.get("relocations") or []}),
                 sorted(e["relocations"]))
        t.check("checker-file", v["name"] if "name" in v else v["file"], p)
    if not args.writer:
        return
    machine = {"x86_64": "x86-64", "aarch64": "aarch64"}.get(os.uname().machine)
    libs = [v for v in doc["vectors"] if v["expect"]["machine"] == machine and
            v["expect"]["kind"] == "shared-library" and v["expect"]["slot"].get("type") == "TLS"]
    w = Writer(args.writer, ["dlopen " + os.path.join(HERE, v["file"]) for v in libs])
    try:
        out = subprocess.run([args.inspector, "--json", str(w.pid)], stdout=subprocess.PIPE,
                             text=True, timeout=60)
    finally:
        w.close()
    if out.returncode == 4 or not out.stdout:
        skip("the inspector cannot read the writer: exit %d" % out.returncode)
    modules = {os.path.basename(m["path"]): m for m in json.loads(out.stdout)["modules"]}
    for v, answer in zip(libs, w.answers):
        p = []
        if answer[1] != "ok" and "initial-exec" in v["expect"]["access_models"]:
            # What the vector's verdict warns of: musl refuses to load
            # initial-exec TLS after start-up.
            print("%s: not loadable here (initial-exec in a shared library)" % v["file"])
            continue
        same(p, "dlopen", answer[1], "ok")
        m = modules.get(os.path.basename(v["file"]))
        if m is None:
            p.append("the inspector lists no module %s" % os.path.basename(v["file"]))
        else:
            same(p, "offset in the TLS block", m.get("st_value"), v["expect"]["slot"]["value"])
            allowed = set().union(*(INSPECTOR_MODELS[a] for a in v["expect"]["access_models"]))
            if m.get("model") not in allowed:
                p.append("model %r, expected one of %s" % (m.get("model"), sorted(allowed)))
        t.check("inspector-module", v["file"], p)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=("bytes", "live", "bpf", "elf"))
    ap.add_argument("--read")
    ap.add_argument("--writer")
    ap.add_argument("--inspector")
    ap.add_argument("--checker")
    ap.add_argument("--sampler")
    ap.add_argument("--python", action="store_true")
    ap.add_argument("--no-python")
    ap.add_argument("--skip")
    ap.add_argument("--wrapper", action="append", default=[],
                    help="a word of the command READ and CHECK run under (another CPU's "
                    "emulator)")
    args = ap.parse_args()
    if args.skip:
        skip(args.skip)
    if not args.python and not args.no_python:
        args.no_python = "not asked for (--python)"
    t = Tally()
    {"bytes": run_bytes, "live": run_live, "bpf": run_bpf, "elf": run_elf}[args.mode](args, t)
    return t.report()


if __name__ == "__main__":
    sys.exit(main())
