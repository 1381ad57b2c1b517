#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The test dotnet-newcomer (suite ffi-dotnet): the commands of doc/dotnet.md's
section "From a clone to a NativeAOT app", run as they are written.

usage: newcomer.py [--print]

The section's ```sh blocks are the commands, in order; a block in another
language whose first line names a file (`// Program.cs`, `<!-- F -->`,
`# F`) is that file, written where the commands stand at that point; other
blocks (```text: what the commands print) are not run.  All of it runs as
one bash script (set -euxo pipefail) in a fresh copy of the source tree
(the files git knows of, and new ones it does not ignore: a clone of the
working tree), named otel-thread-ctx/, in OTEL_DOTNET_WORK/newcomer/.  The
test then checks that the program said the self-check is OK and printed a
trace id, and that the inspector read that trace id and span id on the
program's main thread.  --print prints the script and runs nothing.

Restores use OTEL_DOTNET_WORK/packages as NuGet's packages folder, the one
the suite's other cells restore into (the NativeAOT compiler is there once
one of them ran); the package's version is a new one at each run (tools/run
pack), whose copy there is removed at the end.

Exits 77 (skip) with the reason where dotnet is not on PATH, where Meson
says the suite cannot run here (OTEL_DOTNET_SKIP), where OTEL_DOTNET_CELLS
does not name `newcomer`, or where the commands failed because a NuGet
package other than OtelThreadCtx cannot be had (the machine's NuGet sources
lack it, NU1100 to NU1102, or cannot be reached, NU1301).
"""
import os
import re
import shutil
import subprocess
import sys
import time

SKIP = 77
SECTION = "## From a clone to a NativeAOT app"
SRC = os.environ.get("OTEL_DOTNET_SRC", os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(os.path.dirname(SRC))
WORK = os.environ.get("OTEL_DOTNET_WORK", os.path.join(SRC, "artifacts", "meson"))
DOC = os.path.join(ROOT, "doc", "dotnet.md")


def skip(why):
    print(f"skip: {why}")
    sys.exit(SKIP)


def fail(why):
    print(f"FAIL: {why}")
    sys.exit(1)


def script_of(doc):
    """The bash script of the section's blocks."""
    lines = open(doc, encoding="utf-8").read().split("\n")
    try:
        start = lines.index(SECTION) + 1
    except ValueError:
        fail(f"no section {SECTION!r} in {doc}")
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("#")), len(lines))
    out, runs, i = [], 0, start
    while i < end:
        m = re.match(r"^```(\S*)$", lines[i])
        if not m:
            i += 1
            continue
        lang = m.group(1)
        j = next((k for k in range(i + 1, end) if lines[k] == "```"), None)
        if j is None:
            fail(f"{doc}:{i + 1}: a block that does not end within the section")
        body = lines[i + 1:j]
        i = j + 1
        if lang == "sh":
            out += body
            runs += 1
            continue
        name = re.match(r"^(?://|#|<!--)\s*([\w.-]+)\s*(?:-->)?$", body[0]) if body else None
        if name is None or lang == "text":
            continue
        out += [f"cat > {name.group(1)} <<'OTEL_NEWCOMER_EOF'"] + body + ["OTEL_NEWCOMER_EOF"]
    if runs == 0:
        fail(f"no ```sh block in {doc}, section {SECTION!r}")
    return "\n".join(out) + "\n"


def copy_tree(dest):
    """The working tree as a clone of it would hold it: what git lists
    (tracked, and untracked but not ignored), or, outside git, everything
    but build directories."""
    p = subprocess.run(["git", "-C", ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                       capture_output=True)
    top = subprocess.run(["git", "-C", ROOT, "rev-parse", "--show-toplevel"], capture_output=True, text=True)
    if p.returncode == 0 and os.path.realpath(top.stdout.strip()) == os.path.realpath(ROOT):
        for rel in p.stdout.decode().split("\0"):
            src = os.path.join(ROOT, rel)
            if not rel or not os.path.lexists(src):
                continue
            dst = os.path.join(dest, rel)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copy2(src, dst, follow_symlinks=False)
        return "git ls-files"
    shutil.copytree(ROOT, dest, symlinks=True,
                    ignore=shutil.ignore_patterns(".git", "build", "build-*", "build*.lock", "artifacts",
                                                  "__pycache__"))
    return "a copy (not a git work tree)"


def missing_package(out):
    """Why the NuGet packages the commands need cannot be had, when the
    output says so, or None: the first NuGet error saying a package other
    than OtelThreadCtx is not on the sources (NU1100, NU1101, NU1102), or
    that a source could not be reached (NU1301; `dotnet add package`
    prints no code: the request it gave up on, and its error)."""
    lines = out.splitlines()
    for line in lines:
        m = re.search(r"error (NU1100|NU1101|NU1102|NU1301)\b:?(.*)", line)
        if m and (m.group(1) == "NU1301" or "OtelThreadCtx" not in m.group(2)):
            return line.strip()
    for i, line in enumerate(lines):
        if re.search(r"An error was encountered when fetching|Unable to load the service index", line):
            err = next((x.strip() for x in lines[i:] if x.startswith("error:")), "")
            return f"{line.strip()} {err}".strip()
    return None


def main():
    script = script_of(DOC)
    if sys.argv[1:] == ["--print"]:
        print(script, end="")
        return
    reason = os.environ.get("OTEL_DOTNET_SKIP", "")
    if reason:
        skip(reason)
    cells = os.environ.get("OTEL_DOTNET_CELLS", "").strip()
    if cells and "newcomer" not in [c.strip() for c in cells.split(",")]:
        skip(f"newcomer is not among OTEL_DOTNET_CELLS={cells}")
    if shutil.which("dotnet") is None:
        skip("no dotnet on PATH (the .NET SDK 8 or later: https://dot.net)")

    t0 = time.monotonic()
    base = os.path.join(WORK, "newcomer")
    shutil.rmtree(base, ignore_errors=True)
    clone = os.path.join(base, "otel-thread-ctx")
    os.makedirs(clone)
    how = copy_tree(clone)
    with open(os.path.join(base, "newcomer.sh"), "w") as f:
        # Each command's time (bash takes no PS4 from the environment as root).
        f.write("PS4='+ [${SECONDS} s] '\n" + script)
    print(f"the source tree copied into {clone} ({how}); the commands of {DOC}, {SECTION!r}:")
    print(script, end="")

    e = dict(os.environ)
    for k in ("OTEL_THREAD_CTX_VERSION", "OTEL_THREAD_CTX_LIBRARY", "OTEL_DOTNET_ARTIFACTS"):
        e.pop(k, None)
    e.update({
        "NUGET_PACKAGES": os.path.join(WORK, "packages"),
        "DOTNET_CLI_TELEMETRY_OPTOUT": "1",
        "DOTNET_NOLOGO": "1",
        "DOTNET_SKIP_FIRST_TIME_EXPERIENCE": "1",
        "MSBUILDDISABLENODEREUSE": "1",
        "DOTNET_CLI_USE_MSBUILD_SERVER": "0",
    })
    cmd = ["bash", "-euxo", "pipefail", os.path.join(base, "newcomer.sh")]
    print("+ " + " ".join(cmd), flush=True)
    p = subprocess.Popen(cmd, cwd=clone, env=e, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    out = []
    for line in p.stdout:
        print(line, end="", flush=True)
        out.append(line)
    rc = p.wait()
    out = "".join(out)
    dt = time.monotonic() - t0
    version = re.search(r"^tools/run pack: \S+, version (\S+)$", out, re.M)
    if version:
        shutil.rmtree(os.path.join(WORK, "packages", "otelthreadctx", version.group(1).lower()),
                      ignore_errors=True)
    if rc != 0:
        why = missing_package(out)
        if why:
            skip(f"a NuGet package the commands need cannot be had here: {why}")
        fail(f"the commands exited {rc} after {dt:.0f} s (see above; they ran in {base})")

    if not re.search(r"^self-check: OK$", out, re.M):
        fail("the program did not say \"self-check: OK\"")
    m = re.search(r"^pid (\d+), trace id ([0-9a-f]{32}), span id ([0-9a-f]{16})$", out, re.M)
    if m is None:
        fail("the program printed no pid, trace id and span id")
    pid, trace, span = m.groups()
    row = re.compile(rf"^{pid}\s+.*\s{trace}\s+{span}\s+01\s+job=\"nightly\"$", re.M)
    if not row.search(out):
        fail(f"the inspector did not read trace id {trace}, span id {span} and job=\"nightly\" "
             f"on the program's main thread {pid}")
    print(f"the inspector read, on thread {pid}, the trace id {trace} and span id {span} the program printed")
    shutil.rmtree(base, ignore_errors=True)
    print(f"OK newcomer: {dt:.0f} s")


if __name__ == "__main__":
    main()
