#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The test of tests/tlsdesc/check-tlsdesc.py: deliberately altered TLSDESC accesses
(tests/tlsdesc/tlsdesc-altered-ARCH.S, assembled by the build's compiler) must each
be rejected for its own reason, the canonical one accepted; an object without
an access, a golden file edited by hand and a missing golden file must fail
the check.

usage: check-tlsdesc-selftest.py --golden-dir DIR --altered ALTERED.a
                                 --noaccess NOACCESS.a [--objdump OBJDUMP]
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import tlsdesc_golden as tg  # noqa: E402

CHECKER = os.path.join(HERE, "check-tlsdesc.py")

# What the comparison must find in each function: window findings as
# (kind, offset in the window), or the types of the relocations that are not
# part of a TLSDESC window.  An empty set: the window matches.
EXPECTED = {
    "x86_64": {
        "case_canonical": set(),
        "case_lea_rdi": {("bytes", 2)},
        "case_lea_mov": {("bytes", 2), ("reloc-missing", 7), ("reloc-unexpected", 10)},
        "case_insn_before_call": {("bytes", 7), ("reloc-missing", 7), ("reloc-unexpected", 8)},
        "case_insn_before_add": {("bytes", 9)},
        "case_call_unmarked": {("reloc-missing", 7)},
        "case_tp_through_rdx": {("bytes", 11)},
        "case_addend": {("reloc-missing", 3), ("reloc-unexpected", 3)},
        "case_general_dynamic": {"R_X86_64_TLSGD"},
        "case_initial_exec": {"R_X86_64_GOTTPOFF"},
        "case_local_exec": {"R_X86_64_TPOFF32"},
        "case_local_dynamic": {"R_X86_64_TLSLD", "R_X86_64_DTPOFF32"},
        "case_truncated": {("truncated", 9)},
    },
    "aarch64": {
        "case_canonical": set(),
        "case_adrp_x2": {("bytes", 0)},
        "case_mrs_before_blr": {("bytes", 12), ("reloc-missing", 12), ("reloc-unexpected", 16)},
        "case_gcc12": {("bytes", 4)},
        "case_insn_before_blr": {("bytes", 12), ("reloc-missing", 12), ("reloc-unexpected", 16)},
        "case_call_unmarked": {("reloc-missing", 12)},
        "case_add_swapped": {("bytes", 21)},
        "case_general_dynamic": {"R_AARCH64_TLSGD_ADR_PAGE21", "R_AARCH64_TLSGD_ADD_LO12_NC"},
        "case_initial_exec": {"R_AARCH64_TLSIE_ADR_GOTTPREL_PAGE21",
                              "R_AARCH64_TLSIE_LD64_GOTTPREL_LO12_NC"},
        "case_local_exec": {"R_AARCH64_TLSLE_ADD_TPREL_HI12", "R_AARCH64_TLSLE_ADD_TPREL_LO12_NC"},
        "case_truncated": {("truncated", 16)},
    },
}

failures = 0


def verdict(ok, what):
    global failures
    print("%s %s" % ("ok " if ok else "BAD", what))
    failures += not ok


def run_checker(*args):
    proc = subprocess.run([sys.executable, CHECKER] + list(args), capture_output=True, text=True)
    return proc.returncode, proc.stdout + proc.stderr


def check_cases(objects, golden):
    arch = golden.arch
    expected = EXPECTED[arch.name]
    windows, strays, _ = tg.analyze(objects, golden)
    found = {}
    counts = {}
    for w in windows:
        found.setdefault(w.function, set()).update((k, off) for k, off, _ in w.findings)
        counts[w.function] = counts.get(w.function, 0) + 1
    for s in strays:
        found.setdefault(s.function, set()).add(arch.reloc_name(s.reloc.type))
    defined = {sym.name for o in objects for sym in o.symbols if sym.name.startswith("case_")}
    verdict(defined == set(expected),
            "the altered object defines exactly the cases this test knows (%d)" % len(expected))
    for name, want in expected.items():
        got = found.get(name)
        windows_here = counts.get(name, 0)
        is_window_case = not any(isinstance(x, str) for x in want)
        if got is None and not want and windows_here:
            got = set()
        if is_window_case:
            ok = got == want and windows_here == 1
        else:
            ok = got == want and windows_here == 0
        verdict(ok, "%s: %s (expected %s)" % (
            name, describe(got, windows_here), describe(want, 1 if is_window_case else 0)))
    stray_functions = set(found) - set(expected)
    verdict(not stray_functions, "no finding outside the cases %s" % sorted(map(str, stray_functions)))


def describe(findings, windows):
    if findings is None:
        return "nothing found"
    if not findings:
        return "%d window, matches" % windows
    return ", ".join(sorted("%s@+%d" % f if isinstance(f, tuple) else f for f in findings))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--golden-dir", required=True)
    ap.add_argument("--altered", required=True)
    ap.add_argument("--noaccess", required=True)
    ap.add_argument("--objdump", default="")
    args = ap.parse_args()
    try:
        objects = tg.load_input(args.altered)
        machine = objects[0].machine
        arch = tg.ARCH_BY_MACHINE[machine]
        golden = tg.read_golden(os.path.join(args.golden_dir, arch.golden_name()), arch)
    except (tg.CheckError, KeyError) as exc:
        print("BAD cannot load the altered object or the golden file: %s" % exc)
        return 1
    print("altered accesses: %s (%s); golden: %s" % (args.altered, arch.name, golden.path))

    check_cases(objects, golden)

    # The command-line check, as meson runs it, without objdump: fails, shows
    # the windows side by side, says how to regenerate.
    rc, out = run_checker("--golden-dir", args.golden_dir, args.altered)
    regen = tg.regenerate_command(arch)
    verdict(rc == 1, "check-tlsdesc.py on the altered object exits 1 (got %d)" % rc)
    verdict("ok   %s" % os.path.relpath(args.altered) in out and "(in case_canonical)" in out,
            "  and accepts the canonical window")
    failed = {line.split("(in ", 1)[1].split(")", 1)[0]
              for line in out.splitlines() if line.startswith("FAIL ") and "(in " in line}
    altered = set(EXPECTED[arch.name]) - {"case_canonical"}
    verdict(failed == altered, "  and fails each altered case, and only those (%d)" % len(failed))
    verdict("| found" in out and "golden (" in out, "  and shows golden and found side by side")
    verdict(regen in out, "  and prints the command to regenerate: %s" % regen)
    verdict("objdump's view" not in out, "  and needs no objdump")
    if args.objdump:
        rc, out = run_checker("--golden-dir", args.golden_dir, "--objdump", args.objdump,
                              args.altered)
        verdict(rc == 1 and "objdump's view of the same bytes" in out,
                "with --objdump %s it fails the same way and adds objdump's view" % args.objdump)
    else:
        print("    (no objdump for this architecture: its view is not exercised)")

    rc, out = run_checker("--golden-dir", args.golden_dir, args.noaccess)
    verdict(rc == 1 and "no TLSDESC access to %s found" % tg.SLOT in out,
            "an object without any access fails (exit %d)" % rc)

    with tempfile.TemporaryDirectory() as tmp:
        # A golden file with one byte edited by hand, its sha256 left alone.
        edited = os.path.join(tmp, "edited")
        os.mkdir(edited)
        shutil.copy(golden.path, edited)
        path = os.path.join(edited, arch.golden_name())
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines(True)
        first = next(i for i, l in enumerate(lines) if l.startswith("insn 0 "))
        lines[first] = _flip_first_byte(lines[first])
        with open(path, "w", encoding="utf-8") as f:
            f.writelines(lines)
        rc, out = run_checker("--golden-dir", edited, args.altered)
        verdict(rc == 1 and "sha256" in out, "a golden file edited by hand fails (exit %d)" % rc)
        rc, out = run_checker("--golden-dir", tmp, args.altered)
        verdict(rc == 1 and arch.golden_name() in out, "a missing golden file fails (exit %d)" % rc)

    print("%d failure%s" % (failures, "" if failures == 1 else "s"))
    return 1 if failures else 0


def _flip_first_byte(line):
    """`insn 0 HEX...` with the lowest bit of its first hex digit pair flipped."""
    head, _, rest = line.partition("insn 0 ")
    digits = rest[:2]
    flipped = "%02x" % (int(digits, 16) ^ 1)
    return head + "insn 0 " + flipped + rest[2:]


if __name__ == "__main__":
    sys.exit(main())
