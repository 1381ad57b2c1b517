#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The TLSDESC accesses and the slot do not depend on the compiler's flags:
compile the library's sources (every .c and .S file in src/ but the no-op
build's noop.c; a C source whose preprocessed text names the slot only in
its declaration cannot reach it, and is left out) with each
compiler and each hostile flag set below, then check, as tests/tlsdesc/check-tlsdesc.py
does, that every access window matches the golden one, that no other TLS
access to the slot appears, and that the slot is defined once, STT_TLS,
GLOBAL, DEFAULT, 8 bytes, 8-aligned, in .tbss.

usage: check-tlsdesc-flags.py --source-root DIR --golden-dir DIR --cpu-family CPU
                              --compiler LABEL=COMMAND... [--missing NAME]...
                              [--jobs N]

COMMAND is the compiler and its own arguments, separated by spaces (e.g.
"clang-19 --target=aarch64-linux-gnu").  Compilers given twice (same
executable, same arguments) run once; --missing names the compilers the
build looked for and did not find, which are reported as not run.  A flag
set that a compiler rejects outright (an empty file does not compile with
it either, e.g. clang 14 and -mtls-dialect) is reported as not applicable
to that compiler; every flag set must run with at least one compiler.
Compiles run in parallel, --jobs at a time (default: the CPU count, or
$OTEL_TEST_JOBS).
"""
import argparse
import concurrent.futures
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tlsdesc_golden as tg  # noqa: E402

# Sources are compiled as src/meson.build does (C11, PIC, hidden
# visibility); each set's flags come after and override these.
BASE = ["-std=c11", "-O2", "-fPIC", "-fvisibility=hidden"]

# Each flag that changes how C code is compiled, alone; and, together with
# the hostile ones, the flags that act only on where and how C defines data
# and functions (sections, zero-initialised data, visibility, tentative
# definitions), which the slot and the thread state, defined in src/slot.S,
# are not: alone, each of these would repeat the set that has them all.
FLAG_SETS = [
    [],
    ["-O0"],
    ["-Os"],
    ["-O3"],
    ["-fno-pic"],
    ["-fPIE"],
    ["-ftls-model=global-dynamic"],
    ["-ftls-model=local-dynamic"],
    ["-ftls-model=initial-exec"],
    ["-ftls-model=local-exec"],
    ["-g"],
    ["-O3", "-fno-pic", "-ftls-model=local-exec", "-fdata-sections", "-ffunction-sections",
     "-fno-zero-initialized-in-bss", "-fvisibility=default", "-fcommon"],
]
ARCH_FLAG_SETS = {
    "x86_64": [["-mtls-dialect=gnu"], ["-mtls-dialect=gnu2"]],
    "aarch64": [["-mtls-dialect=desc"], ["-mtls-dialect=trad"]],
}


# The public header's declaration of the slot, as the preprocessor leaves it.
SLOT_DECLARATION = re.compile(r"\bextern\s+(?:__thread|_Thread_local)\s+[^;{}]*\b%s\s*;" % tg.SLOT)
SLOT_NAME = re.compile(r"\b%s\b" % tg.SLOT)
LINE_MARKER = re.compile(r'^# \d+ "([^"]*)"')


def declaring_only(argv, flags, include, sources):
    """The C sources that, preprocessed with these flags, name the slot
    nowhere but in its declaration: an access, by the compiler or by inline
    assembly, needs the name, so a source that only declares it (the public
    header does) cannot reach it and need not be compiled.  One preprocessor
    run for them all, split at each source's first line marker; an empty set
    when it fails (the compiles then report why)."""
    proc = subprocess.run(argv + BASE + flags + include + ["-E"] + sources, capture_output=True, text=True)
    if proc.returncode != 0:
        return set()
    chunks = {}
    current = None
    for line in proc.stdout.splitlines():
        m = LINE_MARKER.match(line)
        if m:
            if m.group(1) in sources and m.group(1) not in chunks:
                current = chunks[m.group(1)] = []
            continue
        if current is not None:
            current.append(line)
    if len(chunks) != len(sources):
        return set()
    return {src for src, lines in chunks.items()
            if not SLOT_NAME.search(SLOT_DECLARATION.sub("", "\n".join(lines)))}


def run_one(compiler, flags, sources, include, golden, tmp):
    """Returns (status, message): status 'ok', 'n/a' or 'FAIL'."""
    label, argv = compiler
    objects = []
    declaring = declaring_only(argv, flags, include, [s for s in sources if s.endswith(".c")])
    for src in sources:
        if src in declaring:
            continue
        out = os.path.join(tmp, os.path.basename(src) + ".o")
        cmd = argv + BASE + flags + include + ["-c", src, "-o", out]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            probe = argv + flags + ["-c", "-x", "c", os.devnull, "-o", os.path.join(tmp, "probe.o")]
            pp = subprocess.run(probe, capture_output=True, text=True)
            if pp.returncode != 0:
                first = (pp.stderr.strip().splitlines() or ["?"])[0]
                return "n/a", "the compiler rejects these flags (%s)" % first
            return "FAIL", "%s failed:\n%s" % (" ".join(cmd), proc.stderr.strip())
        objects += tg.load_input(out, os.path.basename(out))
    try:
        windows, strays, _ = tg.analyze(objects, golden)
    except tg.CheckError as exc:
        return "FAIL", str(exc)
    problems = []
    bad = [w for w in windows if not w.ok]
    for w in bad:
        problems.append("%s: %s" % (w.where(), "; ".join(m for _, _, m in w.findings)))
        problems += ["    " + l for l in tg.side_by_side(w, golden)]
    for s in strays:
        problems.append(s.message(golden.arch))
    if not windows:
        problems.append("no TLSDESC access to %s found" % tg.SLOT)
    facts, slot_problems = tg.check_slot_definition(objects)
    problems += slot_problems
    if problems:
        return "FAIL", "\n".join(problems)
    return "ok", "%d windows match; slot %s; %d sources only declare it" % (
        len(windows), facts.split(": ", 1)[1], len(declaring))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source-root", required=True)
    ap.add_argument("--golden-dir", required=True)
    ap.add_argument("--cpu-family", required=True)
    ap.add_argument("--compiler", action="append", default=[])
    ap.add_argument("--missing", action="append", default=[])
    ap.add_argument("--jobs", type=int,
                    default=int(os.environ.get("OTEL_TEST_JOBS", "0")) or os.cpu_count() or 2)
    args = ap.parse_args()
    if args.cpu_family not in tg.ARCHES:
        print("skip: no golden TLSDESC window for %s" % args.cpu_family)
        return 77
    arch = tg.ARCHES[args.cpu_family]
    try:
        golden = tg.read_golden(os.path.join(args.golden_dir, arch.golden_name()), arch)
    except tg.CheckError as exc:
        print("FAIL %s" % exc)
        return 1
    root = args.source_root
    # src/noop.c is the no-op build's, which defines the slot in C and is
    # never linked with the others.
    sources = sorted(s for s in glob.glob(os.path.join(root, "src", "*.c")) +
                     glob.glob(os.path.join(root, "src", "format", "*.c")) +
                     glob.glob(os.path.join(root, "src", "*.S"))
                     if os.path.basename(s) != "noop.c")
    if not any(s.endswith(".c") for s in sources) or not any(s.endswith(".S") for s in sources):
        print("FAIL no C or no assembly source in %s/src" % root)
        return 1
    include = ["-I" + os.path.join(root, d) for d in ("src", "src/format", "arch", "include")]

    compilers = []
    seen = set()
    for spec in args.compiler:
        label, _, command = spec.partition("=")
        argv = command.split()
        if not argv:
            print("FAIL --compiler %r: no command" % spec)
            return 2
        exe = shutil.which(argv[0])
        key = (os.path.realpath(exe) if exe else argv[0], tuple(argv[1:]))
        if key in seen:
            continue
        seen.add(key)
        proc = subprocess.run(argv + ["--version"], capture_output=True, text=True)
        version = (proc.stdout.splitlines() or ["?"])[0]
        print("compiler %s: %s (%s)" % (label, " ".join(argv), version))
        compilers.append((label, argv))
    for name in args.missing:
        print("compiler %s: not installed, not run" % name)
    if not compilers:
        print("FAIL no compiler given")
        return 2
    print("sources: %s" % ", ".join(os.path.relpath(s, root) for s in sources))
    print("base flags: %s; golden: %s" % (" ".join(BASE), os.path.relpath(golden.path)))

    sets = FLAG_SETS + ARCH_FLAG_SETS[arch.name]
    jobs = [(c, f) for f in sets for c in compilers]
    failures = 0
    ran = {}
    with tempfile.TemporaryDirectory() as tmp:
        def work(n):
            compiler, flags = jobs[n]
            d = os.path.join(tmp, str(n))
            os.mkdir(d)
            return run_one(compiler, flags, sources, include, golden, d)

        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            results = list(pool.map(work, range(len(jobs))))
    for (compiler, flags), (status, message) in zip(jobs, results):
        name = " ".join(flags) or "(base flags only)"
        lines = message.splitlines() or [""]
        print("%-4s %-10s %s: %s" % (status, compiler[0], name, lines[0]))
        for line in lines[1:]:
            print("        " + line)
        failures += status == "FAIL"
        if status != "n/a":
            ran[name] = ran.get(name, 0) + 1
    for flags in sets:
        name = " ".join(flags) or "(base flags only)"
        if not ran.get(name):
            print("FAIL %s: no compiler could run it" % name)
            failures += 1
    print("%d combinations, %d failure%s" % (len(jobs), failures, "" if failures == 1 else "s"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
