#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks of what the build produces, each a Meson test:

  checker LIB CHECKER [WRAPPER...]
      otel-thread-ctx-check passes the shared library, and says its only
      relocations against the slot are TLSDESC.
  relocations LIB READELF
      the same facts, read by binutils' readelf instead of the project's own
      ELF reader: the slot is TLS GLOBAL DEFAULT, size 8, in .dynsym, and
      every dynamic relocation against it is R_*_TLSDESC (at least one).
  symbols LIB NM LIST MAP
      the exported symbols, with versions (nm -D), equal the checked-in list,
      and the list's names equal the version script's.
  soname LIB READELF SONAME DOC
      DT_SONAME is the documented soname, and DOC documents it.
  static-namespace ARCHIVE NM LIST
      every global symbol the static library defines is in the public list or
      starts with otel__ (internal): a static link adds nothing else to the
      user's namespace.
  text-size LIB READELF LIMIT
      the .text section of LIB is at most LIMIT bytes (what a tracer maps).
  nodelete LIB READELF
      LIB is marked DF_1_NODELETE: dlclose() never unloads it.
  imports LIB NM
      LIB calls nothing that ends the process or writes to a file
      descriptor: no abort, exit, assert, printf, puts, write, raise, no
      fortify or stack-protector failure path (the libraries never abort,
      exit or print).

Every failure says what differs; missing input is a failure, never a pass.
"""
import json
import os
import re
import subprocess
import sys

SLOT = "otel_thread_ctx_v1"


class Failure(Exception):
    pass


def out(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise Failure(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr.strip()}")
    return p.stdout


def need_file(path):
    if not os.path.isfile(path):
        raise Failure(f"missing input: {path}")


def read_list(path):
    need_file(path)
    names = []
    for line in open(path, encoding="utf-8"):
        line = line.strip()
        if line and not line.startswith("#"):
            names.append(line)
    if not names:
        raise Failure(f"{path} lists no symbols")
    if names != sorted(names):
        raise Failure(f"{path} is not sorted")
    return names


def checker(lib, cmd):
    need_file(lib)
    p = subprocess.run(cmd + ["--json", lib], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    doc = json.loads(p.stdout)
    f = doc["files"][0]
    print(f"checker: {f['verdict']}: {f['summary']}")
    for c in f["checks"]:
        print(f"  {c['status']:5} {c['id']}: {c['message']}")
    if p.returncode != 0 or f["verdict"] != "pass":
        raise Failure(f"the checker does not pass the library (exit {p.returncode})")
    if f["access_models"] != ["TLSDESC"]:
        raise Failure(f"access models {f['access_models']}, expected TLSDESC only")
    types = {r["type"] for r in f["relocations"]}
    if not f["relocations"] or not all(t.endswith("_TLSDESC") for t in types):
        raise Failure(f"relocations against the slot: {types}")
    print(f"relocations against {SLOT}: {f['relocations_total']} ({', '.join(sorted(types))})")


def relocations(lib, readelf):
    need_file(lib)
    syms = out([readelf, "-W", "--dyn-syms", lib])
    line = [l for l in syms.splitlines() if re.search(rf"\s{SLOT}(@|$)", l)]
    if len(line) != 1:
        raise Failure(f"{SLOT} appears {len(line)} times in .dynsym")
    f = line[0].split()
    # Num: Value Size Type Bind Vis Ndx Name
    if f[2] != "8" or f[3] != "TLS" or f[4] != "GLOBAL" or f[5] != "DEFAULT" or f[6] == "UND":
        raise Failure(f".dynsym entry: {line[0].strip()}")
    print(f".dynsym: {line[0].strip()}")
    rel = out([readelf, "-W", "-r", lib])
    against = [l.split()[2] for l in rel.splitlines() if re.search(rf"\s{SLOT}(@\S*)?\s", l)]
    if not against:
        raise Failure(f"no dynamic relocation against {SLOT}")
    bad = [t for t in against if not t.endswith("_TLSDESC")]
    if bad:
        raise Failure(f"relocations against {SLOT} that are not TLSDESC: {bad}")
    print(f"relocations against {SLOT}: {against}")


def symbols(lib, nm, listfile, mapfile):
    need_file(lib)
    need_file(mapfile)
    expected = read_list(listfile)
    actual = []
    for line in out([nm, "-D", "--defined-only", lib]).splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        kind, name = parts[1], parts[2]
        if kind == "A":  # the version definitions themselves
            continue
        actual.append(name)
    actual.sort()
    missing = sorted(set(expected) - set(actual))
    extra = sorted(set(actual) - set(expected))
    if missing or extra:
        raise Failure(f"exported symbols differ from {listfile}: missing {missing}, extra {extra}")
    mapped = sorted(re.findall(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*;", open(mapfile).read(), re.M))
    listed = sorted({n.split("@")[0] for n in expected})
    if mapped != listed:
        raise Failure(f"{mapfile} and {listfile} list different names: "
                      f"{sorted(set(mapped) ^ set(listed))}")
    print(f"{len(actual)} exported symbols, as listed and as in the version script")


def soname(lib, readelf, expected, readme):
    need_file(lib)
    need_file(readme)
    m = re.search(r"\(SONAME\)\s+Library soname: \[([^\]]+)\]", out([readelf, "-d", lib]))
    if m is None:
        raise Failure("no DT_SONAME")
    if m.group(1) != expected:
        raise Failure(f"soname {m.group(1)}, documented {expected}")
    if expected not in open(readme, encoding="utf-8").read():
        raise Failure(f"README does not document the soname {expected}")
    print(f"soname {expected}, as documented")


def static_namespace(archive, nm, listfile):
    need_file(archive)
    public = {n.split("@")[0] for n in read_list(listfile)}
    bad, seen = [], 0
    for line in out([nm, "--defined-only", "--extern-only", archive]).splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        name = parts[2]
        seen += 1
        if name not in public and not name.startswith("otel__"):
            bad.append(name)
    if seen == 0:
        raise Failure(f"nm found no symbols in {archive}")
    if bad:
        raise Failure(f"the static library defines global symbols outside its namespace: {bad}")
    print(f"{seen} global symbols in the static library: public API or otel__ internals")


def text_size(lib, readelf, limit):
    """The .text section of `lib` is at most `limit` bytes."""
    need_file(lib)
    m = re.search(r"\]\s+\.text\s+PROGBITS\s+[0-9a-f]+\s+[0-9a-f]+\s+([0-9a-f]+)",
                  out([readelf, "-SW", lib]))
    if m is None:
        raise Failure(f"no .text section in {lib}")
    size, limit = int(m.group(1), 16), int(limit)
    if size > limit:
        raise Failure(f".text is {size} bytes, more than {limit}")
    print(f".text is {size} bytes ({size / 1024:.1f} KiB), at most {limit}")


# What ends a process or prints: no library of the project may call it.
FORBIDDEN = {
    "abort", "exit", "_exit", "_Exit", "quick_exit", "raise",
    "__assert_fail", "__assert_perror_fail", "__assert",
    "printf", "vprintf", "fprintf", "vfprintf", "dprintf", "vdprintf",
    "puts", "fputs", "fputc", "putc", "putchar", "fwrite", "fflush",
    "perror", "psignal", "syslog", "vsyslog", "write", "writev",
    "err", "errx", "warn", "warnx", "verr", "verrx", "vwarn", "vwarnx",
    "error", "error_at_line", "__stack_chk_fail", "__chk_fail", "__fortify_fail",
}


def imports(lib, nm):
    """LIB imports nothing that aborts, exits or prints."""
    need_file(lib)
    names = [line.split()[-1].split("@")[0]
             for line in out([nm, "-D", "--undefined-only", lib]).splitlines() if line.strip()]
    if not names:
        raise Failure(f"nm lists no imports of {lib}")
    bad = sorted(n for n in names
                 if n in FORBIDDEN or (n.startswith("__") and n.endswith("_chk")))
    if bad:
        raise Failure(f"{os.path.basename(lib)} imports {', '.join(bad)}: "
                      "a library of this project never aborts, exits or prints")
    print(f"{len(names)} imports of {os.path.basename(lib)}, none that aborts, exits or prints")


def nodelete(lib, readelf):
    """LIB carries DF_1_NODELETE (linked with -z nodelete)."""
    need_file(lib)
    m = re.search(r"\(FLAGS_1\)\s+Flags:([^\n]*)", out([readelf, "-dW", lib]))
    if m is None or "NODELETE" not in m.group(1).split():
        raise Failure(f"{os.path.basename(lib)} is not marked NODELETE: dlclose() may unload it "
                      "while threads still publish through its slot")
    print(f"{os.path.basename(lib)}: FLAGS_1{m.group(1)}")


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    cmd, args = argv[1], argv[2:]
    try:
        if cmd == "checker" and len(args) >= 2:
            checker(args[0], args[2:] + [args[1]])
        elif cmd == "relocations" and len(args) == 2:
            relocations(*args)
        elif cmd == "symbols" and len(args) == 4:
            symbols(*args)
        elif cmd == "soname" and len(args) == 4:
            soname(*args)
        elif cmd == "static-namespace" and len(args) == 3:
            static_namespace(*args)
        elif cmd == "text-size" and len(args) == 3:
            text_size(*args)
        elif cmd == "nodelete" and len(args) == 2:
            nodelete(*args)
        elif cmd == "imports" and len(args) == 2:
            imports(*args)
        else:
            print(__doc__, file=sys.stderr)
            return 2
    except (Failure, json.JSONDecodeError, OSError) as e:
        print(f"FAIL: {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
