#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Compare every TLSDESC access to otel_thread_ctx_v1 in the given objects
with the golden window of the pinned compiler (tests/tlsdesc/golden/).

usage: check-tlsdesc.py --golden-dir DIR [--objects-from LIST]... [--objdump OBJDUMP]
                        [--expect-slot-definition] [INPUT]...
       check-tlsdesc.py --write-list OUTPUT OBJECT...

Each INPUT is an object or an ar archive; each LIST names objects, one path a
line (written by --write-list from Meson's extracted objects).  Each INPUT and
each LIST is one group (a library) and must hold at least one access.  The
golden file is chosen by the objects' e_machine.  The check fails when a
group holds no access, when a relocation against the slot in loaded code or
data is not part of a TLSDESC window, or when a window differs from the
golden one in a byte or in a relocation (type, offset, addend, symbol).  With
--expect-slot-definition, each group must also define the slot once, with
its ELF properties, and reach the library's hidden per-thread state
(otel__thread_state) through such windows too.  A mismatch is shown disassembled side by side by the
decoder in tests/tlsdesc/tlsdesc_golden.py, and by OBJDUMP too when given.

Exit status: 0 all windows match; 1 a check failed; 2 bad usage or input;
77 (skip) the objects hold compiler IR (LTO), not machine code.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tlsdesc_golden as tg  # noqa: E402


def write_list(output, objects):
    with open(output, "w", encoding="utf-8") as f:
        for path in objects:
            f.write(os.path.abspath(path) + "\n")
    return 0


def load_groups(args):
    groups = []
    for listfile in args.objects_from:
        try:
            with open(listfile, encoding="utf-8") as f:
                paths = [l.rstrip("\n") for l in f if l.strip()]
        except OSError as exc:
            raise tg.CheckError("%s: %s" % (listfile, exc.strerror or exc))
        if not paths:
            raise tg.CheckError("%s: names no object" % listfile)
        objects = []
        for p in paths:
            objects += tg.load_input(p, os.path.relpath(p))
        groups.append(("objects of %s" % os.path.relpath(listfile), objects))
    for path in args.inputs:
        groups.append((os.path.relpath(path), tg.load_input(path, os.path.relpath(path))))
    if not groups:
        raise tg.CheckError("no objects to check")
    return groups


def pick_arch(groups):
    machines = {o.machine for _, objects in groups for o in objects}
    if len(machines) != 1:
        raise tg.CheckError("objects of several machines (e_machine %s)" % sorted(machines))
    machine = machines.pop()
    if machine not in tg.ARCH_BY_MACHINE:
        raise tg.CheckError("e_machine %d: no golden TLSDESC window for this architecture"
                            % machine)
    return tg.ARCH_BY_MACHINE[machine]


def report(windows, strays, golden, objdump, out):
    """Print the verdicts; returns the number of failures."""
    failures = 0
    for w in windows:
        if w.ok:
            out("ok   %s" % w.where())
            continue
        failures += 1
        out("FAIL %s: the window differs from the golden one:" % w.where())
        for _, _, message in w.findings:
            out("       - " + message)
        for line in tg.side_by_side(w, golden):
            out("     " + line)
        view = tg.objdump_window(objdump, w, golden)
        if view:
            out("     objdump's view of the same bytes (%s -dr):" % objdump)
            for line in view:
                out("       " + line)
    for s in strays:
        failures += 1
        out("FAIL " + s.message(golden.arch))
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--golden-dir")
    ap.add_argument("--objects-from", action="append", default=[], metavar="LIST")
    ap.add_argument("--objdump", default="")
    ap.add_argument("--expect-slot-definition", action="store_true")
    ap.add_argument("--write-list", metavar="OUTPUT")
    ap.add_argument("inputs", nargs="*", metavar="INPUT")
    args = ap.parse_args()
    if args.write_list:
        return write_list(args.write_list, args.inputs)
    if not args.golden_dir:
        ap.error("--golden-dir is required")
    try:
        groups = load_groups(args)
    except tg.LtoObject as exc:
        print("skip: %s: the accesses exist only after link-time optimization" % exc)
        return 77
    except tg.CheckError as exc:
        print("error: %s" % exc)
        return 2
    lto = [o.name for _, objects in groups for o in objects if o.lto]
    if lto:
        print("skip: %s hold LTO IR: the accesses exist only after link-time optimization"
              % ", ".join(lto))
        return 77
    try:
        arch = pick_arch(groups)
        golden = tg.read_golden(os.path.join(args.golden_dir, arch.golden_name()), arch)
    except tg.CheckError as exc:
        print("FAIL %s" % exc)
        return 1
    print("golden %s: %s, %d bytes, relocations %s; from %s"
          % (os.path.relpath(golden.path), arch.name, golden.length,
             ", ".join("%s at +%d" % (arch.reloc_name(t), o) for o, t, _ in golden.relocs),
             golden.compiler))
    print("objdump: %s" % (args.objdump or "none given; the mismatch display uses this test's "
                           "own decoder only"))
    failures = 0
    total = 0
    for label, objects in groups:
        print("%s: %s" % (label, ", ".join(o.name for o in objects)))
        try:
            windows, strays, notes = tg.analyze(objects, golden)
        except tg.CheckError as exc:
            print("FAIL %s" % exc)
            failures += 1
            continue
        for note in notes:
            print("note %s" % note)
        failures += report(windows, strays, golden, args.objdump, print)
        total += len(windows)
        if not windows:
            failures += 1
            print("FAIL %s: no TLSDESC access to %s found (by its relocations)" % (label, tg.SLOT))
        elif args.expect_slot_definition and not any(w.target == tg.STATE for w in windows):
            failures += 1
            print("FAIL %s: no TLSDESC access to %s found (by its relocations)" % (label, tg.STATE))
        if args.expect_slot_definition:
            facts, problems = tg.check_slot_definition(objects)
            for p in problems:
                failures += 1
                print("FAIL " + p)
            if facts:
                print("%s %s" % ("ok  " if not problems else "    ", facts))
    print("%d access windows checked; %d failure%s" % (total, failures, "" if failures == 1 else "s"))
    if failures:
        print("\nThe library's accesses must be byte for byte the sequence the pinned compiler,")
        print("%s, emits; fix %s." % (tg.PINNED_COMPILER, arch.header))
        print("Only if the pin itself moves (another compiler, another canonical sequence),")
        print("regenerate the golden file from the source root with")
        print("    " + tg.regenerate_command(arch))
        print("and change %s to match (README, \"The golden TLSDESC test\")." % arch.header)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
