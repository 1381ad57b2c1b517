#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The .NET binding's checks (suite ffi-dotnet; ffi/dotnet/meson.build).

usage: run.py MODE [ARG]
  unit         the xunit tests under the JIT, against the build's
               libotel-thread-ctx.so.1
  pack         dotnet pack: the NuGet package, into the feed folder
  aot CELL     publish samples/AotConsole with PublishAot=true from the
               package (packed first if it is missing or older than what it
               holds), linked as CELL says, and prove it: the checker accepts
               the executable, the library's self-check says OK from inside,
               and the inspector and the eBPF sampler read on each thread
               exactly the ids of the activity that thread runs (and nothing
               on the others), before and after an activity moves from one
               thread to a thread pool thread; and that the sampler's
               --stacks names the sample's methods (from the .dbg file the
               executable's .gnu_debuglink names); in bfd-static, the same
               sample under the JIT too (the IL build the publish made, run
               by dotnet with DOTNET_PerfMapEnabled=1: names from the perf map)
  web          the same for samples/AotWeb, an ASP.NET Core minimal API with
               OpenTelemetry's ASP.NET Core instrumentation, while handlers
               of two requests run: the request's ids and http.route
  shared       the same package in a NativeAOT shared library
               (NativeLib=Shared): the checker accepts it, and a C program
               that loads it sees the self-check say OK from inside
  aot-arm64    a cross publish for linux-arm64 (clang), checked, and run
               under qemu-user where it can be
  bench        the benchmark (bench/): C, BenchmarkDotNet under the JIT, a
               Stopwatch loop in a NativeAOT executable, and their ratios;
               the results as JSON and CSV (OTEL_DOTNET_BENCH_RESULTS: a
               folder to write them to as well, bench/results/ to commit
               them; ffi/dotnet/bench/tables.py makes doc/dotnet.md's tables)
  prove EXE    the checks of `aot` on an executable built otherwise
  prove-arm64  those checks, by an aarch64 build's tools on an aarch64
               kernel, of the executable aot-arm64 published
               (OTEL_DOTNET_ARM64_EXE): the aarch64-vm configuration

CELL is LINKER-KIND: LINKER bfd (GNU ld, NativeAOT's default on Linux,
driven by the default compiler) or lld (-p:LinkerFlavor=lld, driven by
clang, which finds its own ld.lld); KIND pie (the default) or static
(-p:StaticExecutable=true: -static-pie).

OTEL_DOTNET_CELLS, a comma-separated list of unit, bfd-pie, lld-pie,
bfd-static, lld-static, shared, web and arm64, runs only those (the others skip
saying so); unset, all run.

The environment (meson.build sets it): OTEL_DOTNET_SRC (this folder),
OTEL_DOTNET_WORK (a folder of the build for everything dotnet writes),
OTEL_DOTNET_LIB (the build's src/, with libotel-thread-ctx.so.1 and .a),
OTEL_DOTNET_LIB_ARM64 (the same for linux-arm64, optional),
OTEL_DOTNET_CHECK and OTEL_DOTNET_INSPECT (the tools), OTEL_DOTNET_SAMPLE
(the eBPF sampler, where it is built; else OTEL_DOTNET_SAMPLE_WHY_NOT says
why not, and the AOT cells skip once all else passed), OTEL_DOTNET_C_LAYOUT
(the layout printer), OTEL_DOTNET_VERSION, OTEL_DOTNET_CC (a C compiler, for
`shared`), OTEL_DOTNET_SKIP (a reason to skip, from Meson).

Exits 77 (skip) with the reason where dotnet is not on PATH, or where the
cell cannot be built on this machine (no clang for lld).
"""
import csv
import fcntl
import glob
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile

SKIP = 77


def env(name, default=None):
    v = os.environ.get(name, default)
    if v is None:
        sys.exit(f"run.py: {name} is not set (meson.build sets it)")
    return v


SRC = env("OTEL_DOTNET_SRC", os.path.dirname(os.path.abspath(__file__)))
WORK = env("OTEL_DOTNET_WORK", os.path.join(SRC, "artifacts", "meson"))
FEED = os.path.join(WORK, "feed")
PACKAGES = os.path.join(WORK, "packages")


def skip(why):
    print(f"skip: {why}")
    sys.exit(SKIP)


def fail(why):
    print(f"FAIL: {why}")
    sys.exit(1)


def dotnet_env(artifacts):
    e = dict(os.environ)
    e.update({
        "DOTNET_CLI_TELEMETRY_OPTOUT": "1",
        "DOTNET_NOLOGO": "1",
        "DOTNET_SKIP_FIRST_TIME_EXPERIENCE": "1",
        "OTEL_DOTNET_ARTIFACTS": artifacts,
        # MSBuild's node reuse would leave servers running after the test.
        "MSBUILDDISABLENODEREUSE": "1",
        "DOTNET_CLI_USE_MSBUILD_SERVER": "0",
    })
    return e


def common_props():
    return [
        f"-p:OtelThreadCtxVersion={env('OTEL_DOTNET_VERSION', '1.0.0')}",
        "-nodeReuse:false",
    ]


def run(cmd, e, what, cwd=None, diagnose=None):
    print("+ " + " ".join(cmd), flush=True)
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=e, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    dt = time.monotonic() - t0
    print(p.stdout, end="")
    print(f"{what}: {dt:.1f} s", flush=True)
    if p.returncode != 0:
        why = diagnose(p.stdout) if diagnose else None
        fail(f"{what} exited {p.returncode}" + (f": {why}" if why else ""))
    return dt


def need_dotnet():
    reason = os.environ.get("OTEL_DOTNET_SKIP", "")
    if reason:
        skip(reason)
    if shutil.which("dotnet") is None:
        skip("no dotnet on PATH (the .NET SDK 8 or later: https://dot.net)")
    out = subprocess.run(["dotnet", "--version"], capture_output=True, text=True)
    print(f"dotnet {out.stdout.strip()} at {shutil.which('dotnet')}")


def global_packages():
    # Packages the machine already has: the user's global folder, and the
    # fixed folder some machines ship.  Restores here use them as fallback
    # folders, so that only what they lack is fetched into WORK/packages,
    # and this build's own package never lands in the global folder.
    folders = []
    out = subprocess.run(["dotnet", "nuget", "locals", "global-packages", "-l"],
                         capture_output=True, text=True, env=dotnet_env(WORK))
    for line in out.stdout.splitlines():
        if line.startswith("global-packages:"):
            folders.append(line.split(":", 1)[1].strip())
    if os.path.isdir("/opt/nuget/packages"):
        folders.append("/opt/nuget/packages")
    return [f.rstrip("/") for f in folders if f and os.path.isdir(f)]


def restore_props():
    props = [f"-p:RestorePackagesPath={PACKAGES}"]
    fallback = global_packages()
    if fallback:
        props.append("-p:RestoreAdditionalProjectFallbackFolders=" + "%3B".join(fallback))
    return props


# --- unit -----------------------------------------------------------------

def unit():
    need_dotnet()
    lib = env("OTEL_DOTNET_LIB")
    e = dotnet_env(os.path.join(WORK, "unit"))
    layout = os.environ.get("OTEL_DOTNET_C_LAYOUT", "")
    if layout:
        e["OTEL_DOTNET_C_LAYOUT"] = layout
    e.pop("OTEL_THREAD_CTX_LIBRARY", None)
    results = os.path.join(WORK, "unit", "results")
    run(["dotnet", "test", os.path.join(SRC, "tests", "OtelThreadCtx.Tests"),
         f"-p:OtelThreadCtxNativeDir={lib}", "--logger", "console;verbosity=normal",
         "--results-directory", results] + common_props(), e, "dotnet test")


# --- pack -----------------------------------------------------------------

def package_path():
    return os.path.join(FEED, f"OtelThreadCtx.{env('OTEL_DOTNET_VERSION', '1.0.0')}.nupkg")


def package_inputs():
    lib = env("OTEL_DOTNET_LIB")
    files = [os.path.join(lib, "libotel-thread-ctx.so.1"), os.path.join(lib, "libotel-thread-ctx.a")]
    arm = os.environ.get("OTEL_DOTNET_LIB_ARM64", "")
    if arm:
        files += [os.path.join(arm, "libotel-thread-ctx.so.1"), os.path.join(arm, "libotel-thread-ctx.a")]
    for root, _, names in os.walk(os.path.join(SRC, "src")):
        files += [os.path.join(root, n) for n in names]
    return files


def pack(force=False):
    need_dotnet()
    os.makedirs(WORK, exist_ok=True)
    # One pack at a time, and none while another mode reads the feed.
    with open(os.path.join(WORK, "pack.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        nupkg = package_path()
        arm = os.environ.get("OTEL_DOTNET_LIB_ARM64", "")
        if not force and os.path.exists(nupkg):
            newest = max(os.path.getmtime(f) for f in package_inputs())
            held = zipfile.ZipFile(nupkg).namelist()
            # A package packed without the linux-arm64 library is not up to
            # date once one is given.
            if os.path.getmtime(nupkg) >= newest and (
                    not arm or "runtimes/linux-arm64/native/libotel-thread-ctx.a" in held):
                print(f"package up to date: {nupkg}")
                return nupkg
        lib = env("OTEL_DOTNET_LIB")
        props = [f"-p:OtelThreadCtxNativeDir_linux_x64={lib}"]
        if arm:
            props.append(f"-p:OtelThreadCtxNativeDir_linux_arm64={arm}")
        else:
            print("no linux-arm64 library given (OTEL_DOTNET_LIB_ARM64): the package holds linux-x64 only")
        run(["dotnet", "pack", os.path.join(SRC, "src", "OtelThreadCtx"), "-c", "Release", "-o", FEED]
            + props + common_props(), dotnet_env(os.path.join(WORK, "pack")), "dotnet pack")
        # What the package holds.
        names = zipfile.ZipFile(nupkg).namelist()
        need = ["buildTransitive/OtelThreadCtx.targets", "lib/net8.0/OtelThreadCtx.dll",
                "runtimes/linux-x64/native/libotel-thread-ctx.so.1",
                "runtimes/linux-x64/native/libotel-thread-ctx.a"]
        if arm:
            need += ["runtimes/linux-arm64/native/libotel-thread-ctx.so.1",
                     "runtimes/linux-arm64/native/libotel-thread-ctx.a"]
        missing = [n for n in need if n not in names]
        if missing:
            fail(f"the package lacks {missing}")
        print("package: " + ", ".join(sorted(n for n in names if not n.startswith(("_rels", "package/", "[")))))
        # A restore must extract this package anew, not reuse an older copy.
        shutil.rmtree(os.path.join(PACKAGES, "otelthreadctx"), ignore_errors=True)
        return nupkg


# --- aot ------------------------------------------------------------------

def cell_props(cell):
    try:
        linker, kind = cell.split("-")
    except ValueError:
        sys.exit(f"run.py: bad cell {cell}")
    props = []
    if linker == "lld":
        clang = find_clang()
        if clang is None:
            skip("no clang on PATH to drive lld (NativeAOT passes -fuse-ld=lld to its compiler driver)")
        probe = subprocess.run([clang, "-fuse-ld=lld", "-Wl,--version"], capture_output=True, text=True)
        if probe.returncode != 0 or "LLD" not in probe.stdout:
            skip(f"{clang} -fuse-ld=lld finds no ld.lld: {(probe.stderr or probe.stdout).strip()}")
        props += [f"-p:CppCompilerAndLinker={clang}", "-p:LinkerFlavor=lld"]
    elif linker != "bfd":
        sys.exit(f"run.py: bad linker {linker}")
    if kind == "static":
        props.append("-p:StaticExecutable=true")
    elif kind != "pie":
        sys.exit(f"run.py: bad kind {kind}")
    return props


def diagnose_link(log):
    if "assertion fail" in log and "elflink.c" in log:
        return ("GNU ld failed an assertion linking a static PIE: the package's targets "
                "(_OtelThreadCtxStaticPieDynamicList) should have replaced NativeAOT's version script "
                "with a dynamic list, which GNU ld 2.40 links")
    if "undefined symbol: __tls_get_addr" in log and "self_check.c" in log:
        return ("the library's self-check refers to __tls_get_addr (weak), which a static link with lld "
                "leaves undefined once the NativeAOT runtime's own TLS references make it a strong "
                "undefined symbol: a problem of src/self_check.c in the static archive")
    return None


def publish(project, name, props):
    out = os.path.join(WORK, name, "publish")
    shutil.rmtree(os.path.join(WORK, name), ignore_errors=True)
    with open(os.path.join(WORK, "pack.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_SH)
        dt = run(["dotnet", "publish", os.path.join(SRC, "samples", project), "-r", "linux-x64", "-c", "Release",
                  "-o", out, f"-p:RestoreAdditionalProjectSources={FEED}"] + restore_props() + props
                 + common_props(), dotnet_env(os.path.join(WORK, name, "artifacts")), f"publish {name}",
                 diagnose=diagnose_link)
    return out, dt


def check_binary(path):
    checker = env("OTEL_DOTNET_CHECK")
    p = subprocess.run([checker, path], capture_output=True, text=True)
    print(p.stdout + p.stderr, end="")
    if p.returncode != 0:
        fail(f"otel-thread-ctx-check rejects {path} (exit {p.returncode})")


def aot(cell):
    need_dotnet()
    props = cell_props(cell)
    pack()
    out, dt = publish("AotConsole", f"aot-{cell}", props)
    exe = os.path.join(out, "AotConsole")
    for f in os.listdir(out):
        if f.startswith("libotel-thread-ctx"):
            fail(f"{f} was published next to a NativeAOT executable that links the library statically")
    no_sampler = prove(exe)
    tool, _ = sampler()
    if cell == "bfd-static" and tool and not no_sampler:
        no_sampler = jit_frames(os.path.join(WORK, f"aot-{cell}", "artifacts"), tool)
    if no_sampler:
        skip(f"{cell}: published ({dt:.1f} s), and the checker, the self-check and the inspector pass; but "
             f"{no_sampler}")
    print(f"OK {cell}: publish {dt:.1f} s")


def read_round(proc, deadline):
    """The sample's lines up to READY: (pid, {tid: (trace, span, route)}, [left tids], selfcheck)."""
    expect, left, selfcheck = {}, [], None
    for line in proc.stdout:
        line = line.rstrip("\n")
        print("sample: " + line)
        if line.startswith("SELFCHECK "):
            selfcheck = line
        elif line.startswith("EXPECT "):
            _, tid, trace, span, route = line.split(" ", 4)
            expect[int(tid)] = (trace, span, route)
        elif line.startswith("LEFT "):
            left.append(int(line.split()[1]))
        elif line.startswith("READY "):
            return int(line.split()[1]), expect, left, selfcheck
        elif line.startswith("FAIL") or time.monotonic() > deadline:
            break
    return None, expect, left, selfcheck


def inspect_round(pid, expect, left):
    """otel-thread-ctx-inspect: each thread with a flow publishes exactly its
    activity; every other thread (those the flows left among them) nothing."""
    ins = subprocess.run([env("OTEL_DOTNET_INSPECT"), "--json", str(pid)], capture_output=True, text=True)
    if ins.returncode != 0:
        fail(f"otel-thread-ctx-inspect exited {ins.returncode}: {ins.stderr.strip()}\n{ins.stdout}")
    seen = json.loads(ins.stdout)
    if not seen.get("process_context"):
        fail("the inspector finds no process context")
    by_tid = {t["tid"]: t for t in seen["threads"]}
    bad = []
    for tid, (trace, span, route) in sorted(expect.items()):
        t = by_tid.get(tid)
        if t is None:
            bad.append(f"thread {tid}: not seen by the inspector")
            continue
        attrs = {a["key"]: a["value"] for a in t.get("attributes", [])}
        got = (t.get("status"), t.get("trace_id"), t.get("span_id"), attrs.get("http.route"))
        want = ("ok", trace, span, route)
        print(f"inspector: thread {tid} reads {got}, the thread runs {want}")
        if got != want:
            bad.append(f"inspector: thread {tid}: read {got}, expected {want}")
    for tid in left:
        if tid not in by_tid:
            bad.append(f"inspector: thread {tid}, which the flow left, is not seen")
    others = [t for t in seen["threads"] if t["tid"] not in expect]
    for t in others:
        if t.get("status") != "no-context":
            bad.append(f"inspector: thread {t['tid']} ({t.get('name')}), which runs no activity, reads "
                       f"{t.get('status')} {t.get('trace_id')}/{t.get('span_id')}")
    print(f"inspector: {len(others)} other threads, each publishing nothing"
          + (f" (the flow left {left})" if left else ""))
    return bad


def sampler():
    """The eBPF sampler, or why it cannot run here."""
    tool = os.environ.get("OTEL_DOTNET_SAMPLE", "")
    if not tool:
        return None, os.environ.get("OTEL_DOTNET_SAMPLE_WHY_NOT") or "the eBPF sampler is not built"
    return tool, None


def finish_sample(proc, what):
    """Reads the rest of a sample's output (it was told to end), echoes it,
    and fails unless it exited 0 after printing DONE."""
    rest = proc.stdout.read()
    print("".join("sample: " + l + "\n" for l in rest.splitlines()), end="")
    rc = proc.wait(timeout=60)
    if rc != 0 or "DONE" not in rest:
        fail(f"{what} exited {rc}")


def sample_round(tool, pid, expect, left):
    """otel-thread-ctx-sample: every sample of a thread with a flow finds
    exactly its activity's ids and http.route; every sample of any other
    thread of the process (the one the hop left among them) finds nothing.
    Returns (failures, why the sampler could not run)."""
    cmd = [tool, "--json", "--frequency", "2000", "--duration", "1", str(pid)]
    print("+ " + " ".join(cmd), flush=True)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if r.returncode == 4:
        return [], f"the eBPF sampler is refused here: {r.stderr.strip()}"
    if r.returncode != 0:
        return [f"otel-thread-ctx-sample exited {r.returncode}: {r.stderr.strip()}\n{r.stdout}"], None
    objs = [json.loads(line) for line in r.stdout.splitlines() if line.strip()]
    procs = [o for o in objs if o.get("type") == "process" and o.get("pid") == pid]
    bad = []
    if not procs or not procs[-1].get("process_context"):
        bad.append(f"sampler: no process context read: {procs}")
    threads = {o["tid"]: o for o in objs if o.get("type") == "thread" and o.get("pid") == pid}
    for tid, (trace, span, route) in sorted(expect.items()):
        t = threads.get(tid)
        if t is None or t["samples"] == 0:
            bad.append(f"sampler: thread {tid}, which spins in its activity, was not sampled")
            continue
        rec = t.get("record", {})
        attrs = {a["key"]: a["value"] for a in rec.get("attributes", [])}
        got = (rec.get("trace_id"), rec.get("span_id"), attrs.get("http.route"))
        print(f"sampler: thread {tid}: {t['context']}/{t['samples']} samples with a record, the last "
              f"{got}, the thread runs {(trace, span, route)}")
        if t["context"] != t["samples"] or got != (trace, span, route):
            bad.append(f"sampler: thread {tid}: {t}, expected {trace}/{span} {route} in every sample")
    for tid in left:
        t = threads.get(tid)
        if t is None or t["samples"] == 0:
            bad.append(f"sampler: thread {tid}, which the hop left and which spins, was not sampled")
            continue
        print(f"sampler: thread {tid} (left): {t['no_context']}/{t['samples']} samples find no context")
    others = [t for tid, t in threads.items() if tid not in expect]
    for t in others:
        if t["no_context"] != t["samples"]:
            bad.append(f"sampler: thread {t['tid']} ({t.get('name')}), which runs no activity: {t}")
    print(f"sampler: {len(others)} other threads sampled, every sample finding no context")
    return bad, None


def frames_round(tool, pid, named, unnamed, what):
    """otel-thread-ctx-sample --stacks --folded on the process, whose threads
    spin in the sample's methods: at least half the samples have a frame
    that matches the regular expression `named` (a method of the sample,
    named), at most 1 % one that matches `unnamed` (module+offset where a
    name was due).  Returns (failures, why the sampler could not run)."""
    with tempfile.TemporaryDirectory(prefix="otel-frames-") as tmp:
        folded = os.path.join(tmp, "stacks.folded")
        cmd = [tool, "--json", "--frequency", "999", "--duration", "0.5", "--stacks", "--folded", folded,
               str(pid)]
        print("+ " + " ".join(cmd), flush=True)
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if r.returncode == 4:
            return [], f"the eBPF sampler is refused here: {r.stderr.strip()}"
        if r.returncode != 0:
            return [f"otel-thread-ctx-sample --stacks exited {r.returncode}: {r.stderr.strip()}"], None
        with open(folded) as f:
            lines = [l.rstrip("\n").rsplit(" ", 1) for l in f if l.strip()]
    total = sum(int(c) for _, c in lines)
    good = sum(int(c) for s, c in lines if re.search(named, s))
    bad = sum(int(c) for s, c in lines if re.search(unnamed, s))
    top = max(lines, key=lambda x: int(x[1]), default=("", "0"))
    print(f"sampler --stacks ({what}): {good} of {total} samples with a frame /{named}/, {bad} with one "
          f"/{unnamed}/; the most frequent stack ({top[1]}): {top[0]}")
    if total == 0 or good < total / 2 or bad > total / 100:
        return [f"sampler --stacks ({what}): {good} of {total} samples name a method of the sample "
                f"(/{named}/), {bad} have a frame /{unnamed}/"], None
    return [], None


# NativeAOT: the methods' symbols are in the .dbg file next to the executable,
# found through its .gnu_debuglink (the executable keeps only .dynsym).
AOT_NAMED = r"(^|;)AotConsole_Program__(Spin|Parked|Hop)"
AOT_UNNAMED = r"(^|;)(AotConsole|AotWeb)\+0x"
# Under the JIT: the methods are named by the perf map the runtime writes
# (DOTNET_PerfMapEnabled=1), /tmp/perf-PID.map.
JIT_NAMED = r"\[AotConsole\] Program::(Spin|<?Parked|<?Hop)"
JIT_UNNAMED = r"(^|;)/?memfd:doublemapper"


def jit_frames(artifacts, tool):
    """The console sample under the JIT (the IL build the AOT publish made
    in artifacts/bin, self-contained), with DOTNET_PerfMapEnabled=1: the
    sampler names its managed methods from the perf map.  Returns why the
    sampler could not run, or None."""
    dlls = glob.glob(os.path.join(artifacts, "bin", "AotConsole", "*", "AotConsole.dll"))
    if len(dlls) != 1:
        fail(f"the publish left no one IL build of the sample to run under the JIT: {dlls}")
    e = dict(os.environ, DOTNET_PerfMapEnabled="1", DOTNET_CLI_TELEMETRY_OPTOUT="1")
    t0 = time.monotonic()
    proc = subprocess.Popen(["dotnet", dlls[0], "2", "5"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, env=e)
    pid = None
    try:
        pid, _, _, _ = read_round(proc, time.monotonic() + 120)
        if pid is None:
            fail("the sample under the JIT did not get ready (see its output above)")
        bad, why = frames_round(tool, pid, JIT_NAMED, JIT_UNNAMED, "JIT, perf map")
        if bad:
            fail("; ".join(bad))
        proc.stdin.write("\n\n")
        proc.stdin.flush()
        finish_sample(proc, "the sample under the JIT")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        # The runtime leaves its perf map in /tmp.
        for f in (f"/tmp/perf-{proc.pid}.map", f"/tmp/perfinfo-{proc.pid}.map"):
            if os.path.exists(f):
                os.unlink(f)
    print(f"JIT frames named: {time.monotonic() - t0:.1f} s")
    return why


def prove(exe, frames=True):
    # The frames are checked where the sampler runs on x86-64; the aarch64
    # kernel (prove-arm64, aarch64-vm) has not been tried yet.
    frames = frames and platform.machine() == "x86_64"
    try:
        subprocess.run(["file", exe])
    except OSError:
        pass  # no file(1), or one of another CPU (in a VM)
    check_binary(exe)
    tool, no_sampler = sampler()

    threads = 4
    proc = subprocess.Popen([exe, str(threads), "30"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    try:
        # Round 1: 4 flows parked on threads of their own, and the hop on
        # its first thread.  Round 2: the same, the hop moved to a thread
        # pool thread, the thread it left spinning with nothing.
        for rnd in (1, 2):
            pid, expect, left, selfcheck = read_round(proc, deadline)
            if pid is None:
                fail(f"the sample did not get ready for round {rnd} (see its output above)")
            if rnd == 1 and (selfcheck is None or not selfcheck.startswith("SELFCHECK Ok ")):
                fail(f"the self-check from inside says: {selfcheck}")
            if len(expect) != threads + 1:
                fail(f"round {rnd}: {len(expect)} threads run a flow, not {threads + 1}")
            if rnd == 2 and len(left) != 1:
                fail(f"round 2: the hop left {left}, not one thread")
            bad = inspect_round(pid, expect, left)
            if tool:
                more, why = sample_round(tool, pid, expect, left)
                bad += more
                no_sampler = no_sampler or why
                if why:
                    tool = None
            if tool and frames and rnd == 1:
                more, why = frames_round(tool, pid, AOT_NAMED, AOT_UNNAMED, "NativeAOT, .gnu_debuglink")
                bad += more
                no_sampler = no_sampler or why
            if bad:
                fail("; ".join(bad))
            proc.stdin.write("\n")
            proc.stdin.flush()
        finish_sample(proc, "the sample")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return no_sampler


# --- web ------------------------------------------------------------------

def web():
    # samples/AotWeb: an ASP.NET Core minimal API traced by OpenTelemetry's
    # ASP.NET Core instrumentation, published with PublishAot=true (GNU ld,
    # a PIE).  Requests with a traceparent of the test's own choosing reach a
    # handler that awaits, then spins until the readers have looked: each
    # reader must find, on the handler's thread, the request's trace id, the
    # span id of the server activity, and http.route as an attribute.
    import http.client
    import threading
    need_dotnet()
    pack()
    out, dt = publish("AotWeb", "aot-web", [])
    exe = os.path.join(out, "AotWeb")
    for f in os.listdir(out):
        if f.startswith("libotel-thread-ctx"):
            fail(f"{f} was published next to a NativeAOT executable that links the library statically")
    check_binary(exe)
    tool, no_sampler = sampler()
    requests = 2
    proc = subprocess.Popen([exe, str(requests)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    replies = {}
    try:
        port = selfcheck = None
        for line in proc.stdout:
            line = line.rstrip("\n")
            print("sample: " + line)
            if line.startswith("SELFCHECK "):
                selfcheck = line
            elif line.startswith("LISTENING "):
                port = int(line.split()[1])
                break
            elif line.startswith("FAIL") or time.monotonic() > deadline:
                break
        if port is None:
            fail("the web sample did not start listening (see its output above)")
        if selfcheck is None or not selfcheck.startswith("SELFCHECK Ok "):
            fail(f"the self-check from inside says: {selfcheck}")
        traces = {n: os.urandom(16).hex() for n in range(requests)}

        def get(n):
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            try:
                c.request("GET", f"/orders/{n}",
                          headers={"traceparent": f"00-{traces[n]}-{os.urandom(8).hex()}-01"})
                r = c.getresponse()
                replies[n] = (r.status, r.read().decode())
            except OSError as e:
                replies[n] = (None, str(e))
            finally:
                c.close()

        clients = [threading.Thread(target=get, args=(n,)) for n in range(requests)]
        for c in clients:
            c.start()
        pid, expect, left, _ = read_round(proc, deadline)
        if pid is None:
            fail("the handlers did not all run (see the output above)")
        if len(expect) != requests:
            fail(f"{len(expect)} handler threads, not {requests} (two requests on one thread?)")
        bad = []
        if sorted(t for t, _, _ in expect.values()) != sorted(traces.values()):
            bad.append(f"the handlers run traces {[t for t, _, _ in expect.values()]}, "
                       f"the requests sent {list(traces.values())}")
        if any(route != "/orders/{id}" for _, _, route in expect.values()):
            bad.append(f"the server activities' http.route: {[r for _, _, r in expect.values()]}")
        bad += inspect_round(pid, expect, left)
        if tool:
            more, why = sample_round(tool, pid, expect, left)
            bad += more
            no_sampler = no_sampler or why
        if bad:
            fail("; ".join(bad))
        proc.stdin.write("\n")
        proc.stdin.flush()
        for c in clients:
            c.join(timeout=120)
        for n in range(requests):
            status, body = replies.get(n, (None, "no reply"))
            print(f"GET /orders/{n}: {status} {body}")
            if status != 200 or body != f"order {n} {traces[n]}":
                fail(f"GET /orders/{n}: {status} {body}")
        proc.stdin.write("\n")
        proc.stdin.close()
        finish_sample(proc, "the web sample")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if no_sampler:
        skip(f"web: published ({dt:.1f} s), and the checker, the self-check and the inspector pass; but "
             f"{no_sampler}")
    print(f"OK web: publish {dt:.1f} s")


# --- aot-arm64 ------------------------------------------------------------

def find_clang():
    for c in ["clang", "clang-19", "clang-18", "clang-17", "clang-16", "clang-15", "clang-14"]:
        if shutil.which(c):
            return c
    return None


def aot_arm64():
    # A cross publish for linux-arm64: clang drives the link (NativeAOT gives
    # it --target), with the aarch64 library of the package.  The program
    # runs under qemu-user, where the self-check and the sample's own checks
    # (every thread publishes exactly its activity, after every await) run;
    # the inspector cannot ptrace a program under qemu-user.
    need_dotnet()
    if not os.environ.get("OTEL_DOTNET_LIB_ARM64"):
        skip("no linux-arm64 library to pack (OTEL_DOTNET_LIB_ARM64: the src/ of an aarch64 build)")
    clang = find_clang()
    if clang is None:
        skip("no clang on PATH: a NativeAOT cross publish passes --target to its compiler driver, which gcc refuses")
    pack()
    out = os.path.join(WORK, "aot-arm64", "publish")
    shutil.rmtree(os.path.join(WORK, "aot-arm64"), ignore_errors=True)
    with open(os.path.join(WORK, "pack.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_SH)
        dt = run(["dotnet", "publish", os.path.join(SRC, "samples", "AotConsole"), "-r", "linux-arm64", "-c", "Release",
                  "-o", out, f"-p:RestoreAdditionalProjectSources={FEED}", f"-p:CppCompilerAndLinker={clang}"]
                 + restore_props() + common_props(), dotnet_env(os.path.join(WORK, "aot-arm64", "artifacts")),
                 "publish aot-arm64", diagnose=diagnose_link)
    exe = os.path.join(out, "AotConsole")
    if shutil.which("file"):
        subprocess.run(["file", exe])
    check_binary(exe)
    if os.environ.get("OTEL_DOTNET_ARM64_RUN_IN_VM"):
        # tools/run's aarch64-vm configuration runs it in an aarch64 kernel
        # (dotnet-aot-arm64-read: the same self-check and DONE, and the
        # inspector and the sampler reading it), after this run: under
        # qemu-user it would only repeat that.
        print(f"OK arm64: publish {dt:.1f} s; run and read in aarch64-vm (dotnet-aot-arm64-read)")
        return
    qemu = shutil.which("qemu-aarch64")
    if qemu is None or not os.path.exists("/lib/ld-linux-aarch64.so.1"):
        skip(f"published ({dt:.1f} s) and accepted by the checker, but this machine cannot run it "
             "(qemu-aarch64 and the aarch64 libc: Debian's qemu-user and libc6:arm64)")
    p = subprocess.run([qemu, "-L", "/", exe, "2", "10"], input="\n", capture_output=True, text=True, timeout=300)
    print("".join("sample: " + l + "\n" for l in p.stdout.splitlines()), end="")
    if p.returncode != 0 or "SELFCHECK Ok " not in p.stdout or "DONE" not in p.stdout:
        fail(f"the arm64 sample under qemu exited {p.returncode}: {p.stderr.strip()}")
    print(f"OK arm64: publish {dt:.1f} s (the inspector cannot read a program under qemu-user)")


# --- shared ---------------------------------------------------------------

HOST_C = r"""
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv)
{
	void *h = dlopen(argv[1], RTLD_NOW);
	if (h == NULL) { printf("dlopen: %s\n", dlerror()); return 1; }
	int (*check)(char *, int) = (int (*)(char *, int))dlsym(h, "aotlib_self_check");
	int (*publish)(void) = (int (*)(void))dlsym(h, "aotlib_publish_and_read");
	if (check == NULL || publish == NULL) { printf("dlsym: %s\n", dlerror()); return 1; }
	char reason[512];
	int status = check(reason, sizeof reason);
	printf("SELFCHECK %d %s\n", status, reason);
	int rc = publish();
	printf("PUBLISH %d\n", rc);
	return status == 0 && rc == 0 ? 0 : 1;
}
"""


def shared():
    need_dotnet()
    cc = os.environ.get("OTEL_DOTNET_CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        skip("no C compiler to build the program that loads the NativeAOT library")
    pack()
    out, dt = publish("AotLib", "aot-shared", [])
    lib = os.path.join(out, "AotLib.so")
    check_binary(lib)
    host_c = os.path.join(WORK, "aot-shared", "host.c")
    host = os.path.join(WORK, "aot-shared", "host")
    with open(host_c, "w") as f:
        f.write(HOST_C)
    subprocess.run([cc, host_c, "-o", host, "-ldl"], check=True)
    p = subprocess.run([host, lib], capture_output=True, text=True)
    print(p.stdout + p.stderr, end="")
    if p.returncode != 0:
        fail("the NativeAOT library's self-check or publication failed from inside (see above)")
    print(f"OK shared: publish {dt:.1f} s")


# --- bench ----------------------------------------------------------------

# Rows of bench/results/dotnet.json: (id, what, the C row of cloop.c, the
# .NET row).  The ids are those of bench/results/results.json where the
# operation is the same ("update_span_id"; "scope": attach with saved, then
# update of saved); the others are the binding's own.
BENCH_ROWS = [
    ("scope", "`attach(ctx, saved)` + `update(saved)` (two `ThreadContext`s)",
     "attach(ctx, saved) + update(saved)", "Calls.AttachSavedUpdate"),
    ("scope_using", "a scope: `using (ctx.Attach()) { }` (the same two calls)",
     "attach(ctx, saved) + update(saved)", "Calls.Scope"),
    ("update_span_id", "`update_span_id`: `TryUpdateSpanId(ActivitySpanId)`", "update_span_id",
     "Calls.TryUpdateSpanId"),
    ("update_all_ids", "`update_all`, ids only: `TryUpdateAll(trace, span, flags)`",
     "update_all (no attributes)", "Calls.TryUpdateAll"),
    ("update_all_route", "`update_all` with one attribute (`http.route`)", "update_all (one attribute)",
     "Calls.TryUpdateAllOneAttribute"),
]
SWITCH_ROWS = [
    ("switch_none", "start + stop, no integration", "Switches.StartStop Mode=None"),
    ("switch_handler", "a `CurrentChanged` handler that does nothing (NativeAOT only)",
     "Switches.StartStop Mode=Handler"),
    ("switch_handler_asynclocal", "a handler writing an `AsyncLocal` made with a change handler (NativeAOT only)",
     "Switches.StartStop Mode=HandlerAsyncLocal"),
    ("switch_ids", "the integration publishing ids", "Switches.StartStop Mode=Ids"),
    ("switch_route", "the integration publishing ids and `http.route`", "Switches.StartStop Mode=IdsAndRoute"),
    ("switch_ids_hooked", "the same, `HookActivityCurrent = true` (NativeAOT only)",
     "Switches.StartStop Mode=IdsHooked"),
    ("switch_route_hooked", "ids and `http.route`, `HookActivityCurrent = true` (NativeAOT only)",
     "Switches.StartStop Mode=IdsAndRouteHooked"),
    ("switch_hook_idle", "the handler on `Activity.Current`'s `AsyncLocal`, no integration: "
     "the runtime's notification alone (NativeAOT only)", "Switches.StartStop Mode=HookIdle"),
]
HOP_ROWS = [
    ("hop_none", "no integration", "Hops.Yield Mode=None"),
    ("hop_ids", "the integration publishing ids", "Hops.Yield Mode=Ids"),
    ("hop_ids_hooked", "the same, `HookActivityCurrent = true`", "Hops.Yield Mode=IdsHooked"),
    ("hop_hook_idle", "the handler on `Activity.Current`'s `AsyncLocal`, no integration: "
     "the runtime's notification alone", "Hops.Yield Mode=HookIdle"),
]
# The same flow, each await resuming on another thread-pool thread (the
# awaiting thread waits until another has taken the continuation).
OTHER_ROWS = [(rid.replace("hop_", "other_", 1), label, net.replace("Hops.Yield", "Hops.Other", 1))
              for rid, label, net in HOP_ROWS]


def bench_lines(out, prefix, fields):
    """{row: [floats]} of the lines "PREFIX <row> <fields numbers>"; a row
    that failed ("PREFIX <row> failed") maps to None."""
    rows = {}
    for line in out.splitlines():
        if not line.startswith(prefix + " "):
            continue
        rest = line[len(prefix) + 1:].strip()
        if rest.endswith(" failed"):
            rows[rest[:-len(" failed")].strip()] = None
            continue
        parts = rest.rsplit(" ", fields)
        rows[parts[0]] = [float(v) for v in parts[1:]]
    return rows


def machine():
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    u = os.uname()
    dn = subprocess.run(["dotnet", "--version"], capture_output=True, text=True).stdout.strip()
    return {"cpu": cpu, "online_cpus": os.cpu_count(), "kernel": f"{u.sysname} {u.release} {u.machine}",
            "dotnet": dn}


def loadavg():
    with open("/proc/loadavg") as f:
        return [float(v) for v in f.read().split()[:3]]


AWAIT_SIZES = (1_000, 11_000)
AWAIT_REPEATS = 3


def await_instructions(exe):
    """Instructions per await of each await row, counted by callgrind: the
    published benchmark run as `await-instructions KIND MODE COUNT`, one
    flow in a process of its own (so each mode is set against no hook ever
    installed), at two sizes; the difference over the difference in awaits
    leaves out the process's start and end.  The thread pool's spinning
    counts too and varies from run to run: the median of three.  {row:
    (median, lowest, highest)}, or {} without valgrind."""
    if shutil.which("valgrind") is None:
        print("no valgrind on PATH: the await rows are not counted in instructions")
        return {}
    # valgrind cannot read the debug file NativeAOT writes next to the
    # executable: a copy without it.
    scratch = tempfile.mkdtemp(prefix="otel-dotnet-instr-")
    try:
        copy = os.path.join(scratch, os.path.basename(exe))
        shutil.copy2(exe, copy)
        counts = {}
        for _, _, net in HOP_ROWS + OTHER_ROWS:
            kind = net.split()[0].split(".")[1]
            mode = net.split("Mode=")[1]
            per = []
            for _ in range(AWAIT_REPEATS):
                total = []
                for n in AWAIT_SIZES:
                    try:
                        p = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                                            copy, "await-instructions", kind, mode, str(n)],
                                           capture_output=True, text=True, timeout=300)
                    except subprocess.TimeoutExpired:
                        fail(f"callgrind of {net} ({n} awaits) did not end in 300 s")
                    m = re.search(r"Collected : (\d+)", p.stderr)
                    if p.returncode != 0 or m is None:
                        fail(f"callgrind of {net} ({n} awaits) exited {p.returncode}:\n{p.stderr[-2000:]}")
                    total.append(int(m.group(1)))
                per.append((total[1] - total[0]) / (AWAIT_SIZES[1] - AWAIT_SIZES[0]))
            per.sort()
            counts[net] = (per[len(per) // 2], per[0], per[-1])
            print(f"AOTINSTR {net} {counts[net][0]:.0f} ({counts[net][1]:.0f} to {counts[net][2]:.0f})",
                  flush=True)
        return counts
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def bench_results(c_jit, jit, c_aot, aot, aot_alloc, aot_hops, aot_instr, t_start, load_start, bdn_job):
    """The run as bench/results/dotnet.json holds it."""
    def c_of(c, name):
        v = c.get(name) if name else None
        return (v[0], v[1], v[2]) if v else (None, None, None)

    def jit_of(name):
        v = jit.get(name)
        # mean, ci, median, bytes
        return {"ns": v[0], "ci_ns": v[1], "median_ns": v[2], "bytes": v[3] if v[3] >= 0 else None} if v else \
            {"ns": None, "ci_ns": None, "median_ns": None, "bytes": None}

    def aot_of(name):
        v = aot.get(name)
        return {"ns": v[0], "ci_low": v[1], "ci_high": v[2]} if v else {"ns": None, "ci_low": None, "ci_high": None}

    def with_ratio(d, base):
        d["ratio"] = round(d["ns"] / base, 3) if d["ns"] is not None and base else None
        return d

    calls = []
    for rid, label, c_name, net in BENCH_ROWS:
        cj, cj_lo, cj_hi = c_of(c_jit, c_name)
        ca, ca_lo, ca_hi = c_of(c_aot, c_name)
        j = with_ratio(jit_of(net), cj)
        j.update({"c_ns": cj, "c_ci_low": cj_lo, "c_ci_high": cj_hi})
        a = with_ratio(aot_of(net), ca)
        a.update({"c_ns": ca, "c_ci_low": ca_lo, "c_ci_high": ca_hi})
        calls.append({"id": rid, "label": label, "c_row": c_name, "dotnet_row": net, "jit": j, "aot": a})

    switches = []
    for rid, label, net in SWITCH_ROWS:
        j, a = jit_of(net), aot_of(net)
        alloc = aot_alloc.get(net)
        a["bytes"] = alloc[0] if alloc else None
        switches.append({"id": rid, "label": label, "dotnet_row": net, "jit": j, "aot": a})
    base = switches[0]
    for r in switches[1:]:
        j, a, bj, ba = r["jit"], r["aot"], base["jit"], base["aot"]
        with_ratio(j, bj["ns"])
        with_ratio(a, ba["ns"])
        if j["ns"] is not None and bj["ns"] is not None:
            j["per_switch"] = round((j["ns"] - bj["ns"]) / 2, 2)
        if a["ns"] is not None and ba["ns"] is not None:
            a["per_switch"] = round((a["ns"] - ba["ns"]) / 2, 2)
            a["per_switch_low"] = round((a["ci_low"] - ba["ci_high"]) / 2, 2)
            a["per_switch_high"] = round((a["ci_high"] - ba["ci_low"]) / 2, 2)
        for k, b in (("jit", bj), ("aot", ba)):
            if r[k].get("bytes") is not None and b.get("bytes") is not None:
                r[k]["bytes_per_switch_more"] = (r[k]["bytes"] - b["bytes"]) / 2

    def await_rows(rows):
        out = []
        for rid, label, net in rows:
            a = aot_of(net)
            # The share of the awaits that resumed on another thread.
            h = aot_hops.get(net)
            a["resumed_elsewhere_pct"] = h[0] if h else None
            i = aot_instr.get(net)
            a["instructions"], a["instructions_low"], a["instructions_high"] = \
                (round(i[0]), round(i[1]), round(i[2])) if i else (None, None, None)
            out.append({"id": rid, "label": label, "dotnet_row": net, "aot": a})
        base = out[0]["aot"]
        for r in out[1:]:
            with_ratio(r["aot"], base["ns"])
            ins = r["aot"]["instructions"]
            r["aot"]["instructions_ratio"] = round(ins / base["instructions"], 3) \
                if ins is not None and base["instructions"] else None
        return out

    hops = await_rows(HOP_ROWS)
    others = await_rows(OTHER_ROWS)

    def row(rows, rid):
        return next(r for r in rows if r["id"] == rid)

    def goal(text, value, limit, fmt):
        return {"goal": text, "measured": "-" if value is None else fmt.format(value),
                "met": value is not None and value <= limit}

    def spread(a, key):
        # The width of a row's interval over its figure: (6th, 16th) of the
        # timed runs, (lowest, highest) of the counts.
        lo, hi, mid = (a["ci_low"], a["ci_high"], a["ns"]) if key == "ns" else \
            (a["instructions_low"], a["instructions_high"], a["instructions"])
        return None if lo is None or hi is None or not mid else (hi - lo) / mid

    def await_goal(text, rows, rid, key):
        # An await ratio is judged only where both rows' intervals are
        # within 10 % of their figures (the rule for a figure one
        # can read); else "not judged" (met: null), with the ratio shown.
        base, a = rows[0]["aot"], row(rows, rid)["aot"]
        value = a.get("ratio" if key == "ns" else "instructions_ratio")
        g = goal(text, value, 1.3, "{:.2f}x")
        widths = [spread(base, key), spread(a, key)]
        if value is not None and (None in widths or max(widths) > 0.10):
            g["measured"] += " (an interval over 10 %)"
            g["met"] = None
        return g

    def await_goals(what, rows, prefix):
        # The integration, then hooked, timed then counted, against the
        # group's first row.
        ids, hooked = f"{prefix}_ids", f"{prefix}_ids_hooked"
        return [
            await_goal(f"NativeAOT, {what}, <= 1.3x without the integration", rows, ids, "ns"),
            await_goal("the same, `HookActivityCurrent = true`", rows, hooked, "ns"),
            await_goal("the same, in instructions (callgrind)", rows, ids, "instructions"),
            await_goal("the same, in instructions, `HookActivityCurrent = true`", rows, hooked, "instructions"),
        ]

    goals = [
        goal("NativeAOT `update_span_id` <= 1.5x C", row(calls, "update_span_id")["aot"]["ratio"], 1.5, "{:.2f}x"),
        goal("NativeAOT attach + update <= 2x C", row(calls, "scope")["aot"]["ratio"], 2.0, "{:.2f}x"),
        goal("NativeAOT `update_all`, ids only, <= 2x C", row(calls, "update_all_ids")["aot"]["ratio"], 2.0,
             "{:.2f}x"),
        goal("NativeAOT, per switch, ids only, <= 40 ns", row(switches, "switch_ids")["aot"].get("per_switch"),
             40.0, "{:.1f} ns"),
        goal("the same, `HookActivityCurrent = true`", row(switches, "switch_ids_hooked")["aot"].get("per_switch"),
             40.0, "{:.1f} ns"),
        goal("NativeAOT, per switch, ids and one tag, <= 60 ns",
             row(switches, "switch_route")["aot"].get("per_switch"), 60.0, "{:.1f} ns"),
        goal("the same, `HookActivityCurrent = true`",
             row(switches, "switch_route_hooked")["aot"].get("per_switch"), 60.0, "{:.1f} ns"),
        *await_goals("per `await` that hops threads", others, "other"),
        *await_goals("per `await Task.Yield()` (thread pool)", hops, "hop"),
        goal("bytes allocated per switch beyond `Activity.Current`'s own: 0 (NativeAOT, ids and one tag)",
             row(switches, "switch_route")["aot"].get("bytes_per_switch_more"), 0, "{:.0f} B"),
        goal("the same, `HookActivityCurrent = true`",
             row(switches, "switch_route_hooked")["aot"].get("bytes_per_switch_more"), 0, "{:.0f} B"),
    ]
    worst = None
    for r in calls + switches:
        j = r["jit"]
        if j["ns"] and j["ci_ns"] is not None:
            rel = j["ci_ns"] / j["ns"]
            worst = rel if worst is None else max(worst, rel)
    goals.append(goal("BenchmarkDotNet: every CI under 10 % of its figure (the widest)",
                      None if worst is None else 100 * worst, 10.0, "{:.1f} %"))
    return {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": machine(),
        "loadavg_start": load_start,
        "loadavg_end": loadavg(),
        "seconds": round(time.monotonic() - t_start, 1),
        "settings": {
            "c": "cloop.c: a pinned CPU; 21 interleaved repetitions of 200,000 calls; median, 6th and 16th",
            "bdn_job": bdn_job,
            "aot": "a Stopwatch loop: 21 runs (200,000 calls; 100,000 activities; 50,000 awaits) after a "
                   "warm-up; median, 6th and 16th",
            "aot_instructions": "callgrind: one flow per process, %s awaits; per await, the difference; "
                                "median, lowest and highest of %d" % (
                                    " and ".join(f"{n:,}" for n in AWAIT_SIZES), AWAIT_REPEATS)
                                if aot_instr else "not counted (no valgrind)",
        },
        "c_jit": {k: v for k, v in c_jit.items()},
        "c_aot": {k: v for k, v in c_aot.items()},
        "calls": calls,
        "switches": switches,
        "hops": hops,
        "hops_other": others,
        "goals": goals,
    }


def write_results(res, folder):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "dotnet.json"), "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")
    cols = ["id", "label", "runtime", "ns", "ci_ns", "ci_low", "ci_high", "c_ns", "c_ci_low", "c_ci_high",
            "ratio", "per_switch", "bytes", "instructions", "instructions_ratio"]
    with open(os.path.join(folder, "dotnet.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for group in ("calls", "switches", "hops", "hops_other"):
            for r in res[group]:
                for runtime in ("jit", "aot"):
                    if runtime not in r:
                        continue
                    v = dict(r[runtime], id=r["id"], label=r["label"], runtime=runtime)
                    w.writerow(["" if v.get(c) is None else v.get(c) for c in cols])
    print(f"results: {folder}/dotnet.json, dotnet.csv")


def bench():
    # C (cloop.c), .NET under the JIT (BenchmarkDotNet, in process) and the
    # same calls in a NativeAOT executable (a Stopwatch loop), one after the
    # other in one run; then the tables (doc/dotnet.md, Numbers), and the
    # results as JSON and CSV in WORK/bench, and in OTEL_DOTNET_BENCH_RESULTS
    # (a folder: bench/results/ to commit them) when it is set.
    need_dotnet()
    lib = env("OTEL_DOTNET_LIB")
    e = dotnet_env(os.path.join(WORK, "bench"))
    e["LD_LIBRARY_PATH"] = lib + (":" + e["LD_LIBRARY_PATH"] if e.get("LD_LIBRARY_PATH") else "")
    t0 = time.monotonic()
    load_start = loadavg()
    print(f"load average: {load_start}")

    def c_rows():
        # C, right before each .NET run, so that each ratio sets figures
        # of about the same moment's load against each other.
        cloop = env("OTEL_DOTNET_CLOOP")
        print("+ " + cloop, flush=True)
        c = subprocess.run([cloop], env=e, capture_output=True, text=True, check=True).stdout
        print(c, end="")
        return bench_lines(c, "C", 3)

    c_jit = c_rows()

    print("JIT, BenchmarkDotNet:", flush=True)
    os.makedirs(os.path.join(WORK, "bench", "bdn"), exist_ok=True)
    short = os.environ.get("OTEL_DOTNET_BENCH_SHORT") == "1"
    p = subprocess.run(["dotnet", "run", "-c", "Release", "--project",
                        os.path.join(SRC, "bench", "OtelThreadCtx.BenchmarkDotNet"),
                        f"-p:OtelThreadCtxNativeDir={lib}"] + restore_props() + common_props(),
                       env=e, cwd=os.path.join(WORK, "bench", "bdn"), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    print(p.stdout, end="")
    if p.returncode != 0:
        fail(f"BenchmarkDotNet exited {p.returncode}")
    jit = bench_lines(p.stdout, "BDN", 4)

    pack()
    out = os.path.join(WORK, "bench-aot", "publish")
    shutil.rmtree(os.path.join(WORK, "bench-aot"), ignore_errors=True)
    run(["dotnet", "publish", os.path.join(SRC, "bench", "OtelThreadCtx.Bench"), "-r", "linux-x64", "-c", "Release",
         "-o", out, "-p:OtelThreadCtxFromPackage=true", f"-p:RestoreAdditionalProjectSources={FEED}"]
        + restore_props() + common_props(), dotnet_env(os.path.join(WORK, "bench-aot", "artifacts")),
        "publish the benchmark with PublishAot=true")
    c_aot = c_rows()
    print("NativeAOT (the static library, direct P/Invoke), a Stopwatch loop:", flush=True)
    p = subprocess.run([os.path.join(out, "OtelThreadCtx.Bench")], capture_output=True, text=True)
    print(p.stdout, end="")
    if p.returncode != 0:
        fail(f"the NativeAOT benchmark exited {p.returncode}")
    aot = bench_lines(p.stdout, "AOT", 3)
    aot_alloc = bench_lines(p.stdout, "AOTALLOC", 1)
    aot_hops = bench_lines(p.stdout, "AOTHOPS", 1)
    aot_instr = await_instructions(os.path.join(out, "OtelThreadCtx.Bench"))
    hooked = [line.split()[1] == "True" for line in p.stdout.splitlines() if line.startswith("AOTHOOK ")]
    wrong = [line for line in p.stdout.splitlines() if line.startswith("AOTWRONG ")]
    if wrong:
        fail("after the awaits, threads published what they should not: " + "; ".join(wrong))

    job = ("ShortRun (3 iterations: OTEL_DOTNET_BENCH_SHORT=1)" if short else
           "the default job (iterations until the 99.9 % CI is within 2 % of the mean, 15 to 100), "
           "in process (InProcessEmitToolchain), MemoryDiagnoser")
    res = bench_results(c_jit, jit, c_aot, aot, aot_alloc, aot_hops, aot_instr, t0, load_start, job)
    res["aot_hooks_activity_current"] = bool(hooked) and all(hooked)
    write_results(res, os.path.join(WORK, "bench"))
    folder = os.environ.get("OTEL_DOTNET_BENCH_RESULTS", "")
    if folder:
        write_results(res, folder)
    sys.path.insert(0, os.path.join(SRC, "bench"))
    import tables
    print()
    print(tables.render(res))
    print(f"bench: {time.monotonic() - t0:.0f} s")


def selected(name):
    # OTEL_DOTNET_CELLS (comma-separated: unit, bfd-pie, lld-pie, bfd-static,
    # lld-static, shared, web, arm64) runs only those; unset, all.
    cells = os.environ.get("OTEL_DOTNET_CELLS", "").strip()
    if cells and name not in [c.strip() for c in cells.split(",")]:
        skip(f"{name} is not among OTEL_DOTNET_CELLS={cells}")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    mode = sys.argv[1]
    if mode in ("unit", "shared", "web"):
        selected(mode)
    elif mode == "aot" and len(sys.argv) == 3:
        selected(sys.argv[2])
    elif mode == "aot-arm64":
        selected("arm64")
    if mode == "unit":
        unit()
    elif mode == "pack":
        pack(force=True)
    elif mode == "aot" and len(sys.argv) == 3:
        aot(sys.argv[2])
    elif mode == "prove" and len(sys.argv) == 3:
        no_sampler = prove(sys.argv[2])
        if no_sampler:
            skip(f"the checker, the self-check and the inspector pass; but {no_sampler}")
    elif mode == "prove-arm64":
        exe = env("OTEL_DOTNET_ARM64_EXE")
        if not os.path.exists(exe):
            skip(f"no linux-arm64 NativeAOT executable at {exe}: the test dotnet-aot-arm64 of the build "
                 "machine's build (tools/run's gcc configuration) publishes it")
        no_sampler = prove(exe)
        if no_sampler:
            skip(f"the checker, the self-check and the inspector pass; but {no_sampler}")
        print(f"OK arm64, read in an aarch64 kernel: {exe}")
    elif mode == "shared":
        shared()
    elif mode == "web":
        web()
    elif mode == "aot-arm64":
        aot_arm64()
    elif mode == "bench":
        bench()
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
