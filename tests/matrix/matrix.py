#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The linker relaxation matrix.

Links tests/matrix/probe.c with the library every way a user can -- the
shared library (relinked by each linker) into a PIE and a non-PIE
executable; the static library into a PIE, a non-PIE, a -static-pie and a
fully static executable, with the flags `pkg-config --static` gives; and the
static library into a PIE without those flags -- with each linker Debian 12
has: GNU ld (bfd), gold, lld 14, lld 19 and mold.  Each program runs (under
qemu-user for aarch64) and proves from inside, in several threads, that the
library writes the slot the compiler's own TLS code finds and that the
self-check says the right thing; then otel-thread-ctx-check judges the file.

Every cell has an expected outcome (EXPECTED below, with the reason for each
cell that cannot work); the run fails when any cell differs.  A missing
linker skips its cells and makes the run exit 77 with the reason.

usage: matrix.py --arch ARCH --cc CC --checker PATH [options]
"""
import argparse
import concurrent.futures
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

SLOT = "otel_thread_ctx_v1"
SONAME = "libotel-thread-ctx.so.1"

LINKERS = {
    # name: (x86_64 program, aarch64 program, what `-Wl,--version` prints)
    "bfd": ("ld.bfd", "aarch64-linux-gnu-ld.bfd", r"^GNU ld "),
    "gold": ("ld.gold", "aarch64-linux-gnu-ld.gold", r"^GNU gold "),
    "lld-14": ("ld.lld-14", "ld.lld-14", r"LLD 14\."),
    "lld-19": ("ld.lld-19", "ld.lld-19", r"LLD 19\."),
    "mold": ("mold", "mold", r"^mold "),
}

# (library, output): which library the probe links, and how.
CELLS = [
    ("shared", "pie"),
    ("shared", "no-pie"),
    ("static", "pie"),
    ("static", "no-pie"),
    ("static", "static-pie"),
    ("static", "static"),
    ("static-unexported", "pie"),
]

OUTPUT_FLAGS = {
    "pie": ["-pie"],
    "no-pie": ["-no-pie"],
    "static-pie": ["-static-pie"],
    "static": ["-static"],
}

NOT_EXPORTED_STATIC = (
    "a fully static non-PIE executable has no .dynsym: the linker ignores "
    "--export-dynamic-symbol; use -static-pie")
NOT_EXPORTED_FLAG = (
    "linked without -Wl,--export-dynamic-symbol=otel_thread_ctx_v1: "
    "the executable does not export the slot")


def expected(arch, linker, library, output):
    """(outcome, reason): what the cell must show.

    pass          links, runs, the self-check finds the exported slot, the
                  checker passes (or says 'imported' for the executable and
                  passes the shared library)
    not-exported  links and runs, the self-check reports NOT_EXPORTED, the
                  checker fails it (the slot is not in .dynsym)
    link-fails    the linker refuses the combination
    crashes       links, the checker fails it, and it dies at start-up
    """
    if library == "static-unexported":
        return "not-exported", NOT_EXPORTED_FLAG
    if output == "static":
        if linker == "mold":
            return "pass", ("mold writes a .dynsym section (no dynamic "
                            "section) into a static executable; readers of "
                            "the file find the slot there")
        return "not-exported", NOT_EXPORTED_STATIC
    if output == "static-pie" and linker == "gold":
        return "link-fails", "gold 1.16 has no -static-pie (--no-dynamic-linker is unknown)"
    if output == "static-pie" and linker == "bfd":
        return "pass", (
            "the static library never names the exported slot (GNU ld would "
            "keep an R_X86_64_TPOFF64 relocation for it, which glibc 2.36 "
            "cannot apply at static-pie start-up); the probe reads it the "
            "way readers do, from .dynsym")
    return "pass", ""


def log(*args):
    print(*args, flush=True)


def run(cmd, timeout=60, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=timeout, **kw)


def check_call(cmd, what):
    p = run(cmd)
    if p.returncode != 0:
        raise RuntimeError(f"{what} failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr.strip()}")
    return p


class Matrix:
    def __init__(self, a):
        self.a = a
        self.arch = a.arch
        self.work = os.path.abspath(a.workdir)
        self.cc = a.cc
        self.run_wrapper = list(a.run_wrapper or [])
        self.checker = [a.checker]
        self.results = []
        self.missing = []
        self.so_errors = {}

    # --- preparation ------------------------------------------------------
    def prepare(self):
        if os.path.isdir(self.work):
            shutil.rmtree(self.work)
        os.makedirs(self.work)
        if self.arch == "aarch64" and not self.run_wrapper:
            # See tools/configs/aarch64-gcc.ini: with the multiarch
            # libc6:arm64 installed, qemu must use -L /; without it, the
            # cross toolchain's own runtime is consistent.
            prefix = "/" if os.path.exists("/lib/ld-linux-aarch64.so.1") else "/usr/aarch64-linux-gnu"
            qemu = shutil.which("qemu-aarch64")
            if qemu is None:
                raise Skip("qemu-aarch64 is not installed (Debian package qemu-user)")
            self.run_wrapper = [qemu, "-L", prefix]
        if self.a.checker_is_target:
            self.checker = self.run_wrapper + self.checker
        if shutil.which(self.cc[0]) is None and not os.path.exists(self.cc[0]):
            raise Skip(f"no compiler {self.cc[0]}")
        self.static_flags = self.pkg_config_flags()
        self.lib_a = self.a.lib_a or self.build_lib("static")
        self.lib_so_a = self.a.lib_so_a or self.build_lib("shared")
        inc = [f"-I{d}" for d in self.a.include]
        self.probe = {}
        for kind, flags in (("pie", ["-fPIE"]), ("no-pie", ["-fno-PIE"]),
                            ("static-pie", ["-fPIE", "-DPROBE_NAMED_SLOT=0"])):
            obj = os.path.join(self.work, f"probe-{kind}.o")
            check_call(self.cc + ["-std=c11", "-O2", "-g", *flags, *inc, "-c", self.a.probe, "-o", obj],
                       f"compiling the probe ({kind})")
            self.probe[kind] = obj
        self.ld_dirs = {}
        for name, (x86, arm, banner) in LINKERS.items():
            prog = shutil.which(x86 if self.arch == "x86_64" else arm)
            if prog is None:
                self.missing.append(f"{name} ({x86 if self.arch == 'x86_64' else arm} not installed)")
                continue
            d = os.path.join(self.work, f"ld-{name}")
            os.makedirs(d)
            os.symlink(prog, os.path.join(d, "ld"))
            # gcc runs the `ld` it finds in a -B directory: prove it is this one.
            p = run(self.cc + [f"-B{d}/", "-Wl,--version", "-x", "c", "/dev/null", "-o", "/dev/null"])
            if not re.search(banner, p.stdout, re.M):
                raise RuntimeError(f"-B{d}/ does not select {name}: {p.stdout[:200]} {p.stderr[:200]}")
            self.ld_dirs[name] = d

    def pkg_config_flags(self):
        """What `pkg-config --static` adds to a static link, minus -L/-l."""
        pc = shutil.which("pkg-config")
        if pc is None:
            raise Skip("pkg-config is not installed")
        env = dict(os.environ, PKG_CONFIG_PATH=self.a.pc_dir, PKG_CONFIG_LIBDIR=self.a.pc_dir)
        p = subprocess.run([pc, "--static", "--libs-only-other", "otel-thread-ctx"], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"pkg-config --static failed: {p.stderr.strip()}")
        flags = p.stdout.split()
        if f"-Wl,--export-dynamic-symbol={SLOT}" not in flags:
            raise RuntimeError(f"pkg-config --static does not give the export flag: {flags}")
        return flags

    def build_lib(self, kind):
        """For a target meson does not build, from the library's sources: the
        static library ("static", with its own flag), or the objects of the
        shared library in an archive ("shared")."""
        objs = []
        inc = [f"-I{d}" for d in self.a.lib_include]
        extra = self.a.lib_static_cflag if kind == "static" else []
        d = os.path.join(self.work, f"objects-{kind}")
        os.makedirs(d, exist_ok=True)
        for src in self.a.lib_src:
            obj = os.path.join(d, os.path.basename(src) + ".o")
            check_call(self.cc + ["-std=c11", "-O2", "-g", "-fPIC", *self.a.lib_cflag, *extra, *inc,
                                  "-c", src, "-o", obj], f"compiling {src}")
            objs.append(obj)
        lib = os.path.join(d, "libotel-thread-ctx.a")
        ar = self.a.ar or "ar"
        check_call([ar, "rcs", lib] + objs, "ar")
        return lib

    # --- one cell ---------------------------------------------------------
    def linker_flags(self, linker):
        """Driver flags that one linker needs whatever is linked."""
        if (linker == "gold" and self.a.arch == "aarch64" and
                "clang" not in os.path.basename(self.cc[0])):
            # gcc asks the linker to patch Cortex-A53 erratum 843419 by
            # default, and gold 1.16 stops with an internal error in that
            # code (try_fix_erratum_843419_optimized, sourceware bug 20765)
            # when an adrp happens to land at the end of a page: a matter of
            # code layout, not of TLS.  The relaxation under test is not
            # affected by the erratum patching.  clang asks for no patching
            # (outside Android) and does not know the option.
            return ["-mno-fix-cortex-a53-843419"]
        return []

    def shared_lib(self, linker):
        """libotel-thread-ctx.so.1 relinked by `linker`, once per linker."""
        if linker in self.so_errors:
            raise self.so_errors[linker]
        d = os.path.join(self.work, f"lib-{linker}")
        so = os.path.join(d, SONAME)
        if not os.path.exists(so):
            os.makedirs(d, exist_ok=True)
            check_call(self.cc + [f"-B{self.ld_dirs[linker]}/", *self.linker_flags(linker),
                                  "-shared", "-o", so,
                                  "-Wl,--whole-archive", self.lib_so_a, "-Wl,--no-whole-archive",
                                  f"-Wl,-soname,{SONAME}", *self.a.so_link_arg, "-pthread"],
                       f"linking {SONAME} with {linker}")
        return so

    def checker_json(self, path):
        p = run(self.checker + ["--json", path])
        try:
            doc = json.loads(p.stdout)
        except json.JSONDecodeError as e:
            raise RuntimeError(f"checker output is not JSON ({e}): {p.stdout[:300]} {p.stderr[:300]}")
        f = doc["files"][0]
        if p.returncode != f["exit_code"] or p.returncode != doc["exit_code"]:
            raise RuntimeError(f"checker exit code {p.returncode} disagrees with its JSON {f['exit_code']}")
        return f

    def cell(self, linker, library, output):
        outcome, reason = expected(self.arch, linker, library, output)
        r = {"arch": self.arch, "linker": linker, "library": library, "output": output,
             "expected": outcome, "reason": reason, "ok": False, "detail": "",
             "verdict": "", "model": "", "lib_model": ""}
        try:
            self._cell(r, linker, library, output, outcome)
        except (RuntimeError, subprocess.TimeoutExpired, OSError, KeyError) as e:
            r["ok"] = False
            r["detail"] = str(e)
        return r

    def _cell(self, r, linker, library, output, outcome):
        name = f"{linker}-{library}-{output}"
        exe = os.path.join(self.work, name)
        obj = self.probe[output if output in ("pie", "static-pie") else "no-pie"]
        cmd = self.cc + [f"-B{self.ld_dirs[linker]}/", *self.linker_flags(linker),
                         *OUTPUT_FLAGS[output], obj]
        if library == "shared":
            so = self.shared_lib(linker)
            cmd += [so, f"-Wl,-rpath,$ORIGIN/lib-{linker}"]
        elif library == "static":
            cmd += [self.lib_a, *self.static_flags]
        else:
            cmd += [self.lib_a, "-pthread"]
        cmd += ["-o", exe]
        p = run(cmd)
        if outcome == "link-fails":
            if p.returncode == 0:
                raise RuntimeError("the link was expected to fail, and it worked: update the matrix")
            if "no-dynamic-linker" not in p.stderr:
                raise RuntimeError(f"the link failed for another reason: {p.stderr.strip()[:300]}")
            r["ok"] = True
            r["verdict"] = "-"
            r["detail"] = "link refused: " + p.stderr.strip().splitlines()[0][:120]
            return
        if p.returncode != 0:
            raise RuntimeError(f"link failed: {p.stderr.strip()[:400]}")

        chk = self.checker_json(exe)
        r["verdict"] = chk["verdict"]
        r["model"] = "+".join(chk["access_models"]) or "-"
        if library == "shared":
            lib = self.checker_json(so)
            r["lib_model"] = "+".join(lib["access_models"])
            if lib["verdict"] != "pass" or lib["access_models"] != ["TLSDESC"]:
                raise RuntimeError(f"checker on {SONAME} by {linker}: {lib['verdict']} {lib['access_models']}: {lib['summary']}")
            if not lib["relocations"] or any(not x["type"].endswith("_TLSDESC") for x in lib["relocations"]):
                raise RuntimeError(f"{SONAME} by {linker} has non-TLSDESC relocations against the slot: {lib['relocations']}")
            if chk["verdict"] != "imported":
                raise RuntimeError(f"checker on the executable: {chk['verdict']} (expected imported): {chk['summary']}")
        elif outcome == "pass":
            if chk["verdict"] != "pass":
                raise RuntimeError(f"checker: {chk['verdict']}: {chk['summary']} {failed_checks(chk)}")
        elif outcome == "not-exported":
            if chk["verdict"] != "fail" or not any(c["id"] == "dynsym" and c["status"] == "fail" for c in chk["checks"]):
                raise RuntimeError(f"checker should fail the dynsym check: {chk['verdict']} {failed_checks(chk)}")
        elif outcome == "crashes":
            if chk["verdict"] != "fail" or not any(c["id"] == "static-pie-tls" and c["status"] == "fail" for c in chk["checks"]):
                raise RuntimeError(f"checker should fail the static-pie-tls check: {chk['verdict']} {failed_checks(chk)}")

        # Run it.
        mode = "not-exported" if outcome == "not-exported" else "ok"
        p = run(self.run_wrapper + [exe, mode, str(self.a.threads)], timeout=120,
                preexec_fn=no_core_dumps)
        if outcome == "crashes":
            if p.returncode >= 0:
                raise RuntimeError(f"expected a crash at start-up, got exit {p.returncode}: {p.stdout[-300:]}")
            r["ok"] = True
            r["detail"] = f"killed by signal {-p.returncode} at start-up, as the checker predicts"
            return
        if p.returncode != 0 or "result: ok" not in p.stdout:
            raise RuntimeError(f"probe exit {p.returncode}: {p.stdout[-600:]} {p.stderr[-300:]}")
        m = re.search(r"^tp_offset: (-?\d+)$", p.stdout, re.M)
        threads = re.search(r"result: ok \((\d+) threads\)", p.stdout).group(1)
        tp = int(m.group(1)) if m else None
        # Where the executable defines the slot, the checker predicts its
        # offset from the thread pointer from the file alone.
        predicted = chk.get("main_program_tp_offset")
        if library != "shared" and predicted is not None and chk["verdict"] == "pass" and tp != predicted:
            raise RuntimeError(f"the slot is at tp{tp:+d} but the checker predicts tp{predicted:+d}")
        r["ok"] = True
        r["detail"] = f"{threads} threads agree"
        if predicted is not None and library != "shared" and chk["verdict"] == "pass":
            r["detail"] += f", tp{tp:+d} as predicted"

    # --- all of it --------------------------------------------------------
    def run_all(self):
        jobs = []
        for linker in LINKERS:
            for library, output in CELLS:
                if linker in self.ld_dirs:
                    jobs.append((linker, library, output))
        # Shared libraries first, one per linker, so cells do not race on
        # them; a failure is reported by each cell that needs the library.
        for linker in self.ld_dirs:
            try:
                self.shared_lib(linker)
            except RuntimeError as e:
                self.so_errors[linker] = e
        workers = max(1, min(4, os.cpu_count() or 1))
        with concurrent.futures.ThreadPoolExecutor(workers) as pool:
            self.results = list(pool.map(lambda j: self.cell(*j), jobs))


class Skip(Exception):
    pass


def no_core_dumps():
    import resource
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def failed_checks(chk):
    return "; ".join(f"{c['id']}: {c['message']}" for c in chk["checks"] if c["status"] == "fail")


def print_table(results):
    head = ("arch", "linker", "library", "output", "expected", "result", "checker", "exe model", "lib model", "detail")
    rows = [head]
    for r in results:
        rows.append((r["arch"], r["linker"], r["library"], r["output"], r["expected"],
                     "ok" if r["ok"] else "FAIL", r["verdict"] or "-", r["model"] or "-",
                     r["lib_model"] or "-", r["detail"]))
    widths = [max(len(row[i]) for row in rows) for i in range(len(head) - 1)]
    for row in rows:
        log("  ".join(c.ljust(w) for c, w in zip(row, widths)) + "  " + row[-1])
    reasons = sorted({(r["expected"], r["reason"]) for r in results if r["reason"]})
    if reasons:
        log("\nwhy the cells that are not plain 'pass' are what they are:")
        for outcome, reason in reasons:
            log(f"  {outcome}: {reason}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arch", required=True, choices=["x86_64", "aarch64"])
    ap.add_argument("--cc", required=True,
                    help="the C compiler and its fixed arguments, as one shell-quoted string")
    ap.add_argument("--ar")
    ap.add_argument("--checker", required=True)
    ap.add_argument("--checker-is-target", action="store_true",
                    help="the checker is built for ARCH: run it like the probes")
    ap.add_argument("--run-wrapper", nargs="*", default=[])
    ap.add_argument("--probe", required=True)
    ap.add_argument("--include", action="append", default=[], help="for the probe: the public headers")
    ap.add_argument("--lib-a", help="the static library; else it is built from --lib-src")
    ap.add_argument("--lib-so-a", help="the shared library's objects in an archive; else they "
                    "are built from --lib-src")
    ap.add_argument("--lib-static-cflag", action="append", default=[],
                    help="what the static library's objects are compiled with besides --lib-cflag")
    ap.add_argument("--lib-src", action="append", default=[])
    ap.add_argument("--lib-include", action="append", default=[])
    ap.add_argument("--lib-cflag", action="append", default=[])
    ap.add_argument("--so-link-arg", action="append", default=[],
                    help="the shared library's link arguments (version script, -z flags)")
    ap.add_argument("--pc-dir", required=True, help="directory with otel-thread-ctx.pc (uninstalled)")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--threads", type=int, default=int(os.environ.get("OTEL_TEST_MATRIX_THREADS", "4")))
    a = ap.parse_args()
    a.cc = shlex.split(a.cc)
    if not a.lib_a and not a.lib_src:
        ap.error("give --lib-a or --lib-src")
    # Meson passes an empty string for a cross compiler it did not find.
    if not a.cc or not a.cc[0]:
        print(f"skip: no C compiler for {a.arch}")
        return 77

    t0 = time.monotonic()
    m = Matrix(a)
    try:
        m.prepare()
    except Skip as e:
        print(f"skip: {e}")
        return 77
    except RuntimeError as e:
        print(f"FAIL: {e}")
        return 1
    m.run_all()
    print_table(m.results)
    failed = [r for r in m.results if not r["ok"]]
    log(f"\n{len(m.results)} cells for {a.arch} in {time.monotonic() - t0:.1f} s: "
        f"{len(m.results) - len(failed)} as expected, {len(failed)} not")
    if failed:
        return 1
    if m.missing:
        print("skip: linkers missing, their cells did not run: " + ", ".join(m.missing))
        return 77
    return 0


if __name__ == "__main__":
    sys.exit(main())
