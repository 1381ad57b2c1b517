#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The layers of src/ and the arrows between them (src/meson.build): every
arrow points down.

    format   src/format/   the formats; includes nothing of src/ outside it
    elf      src/elf/      the ELF reader: format
    writer   src/          libotel-thread-ctx: format, arch/
    inspect  src/inspect/  libotel-thread-ctx-inspect: format, elf, arch/;
                           never the writer
    compat   src/compat/   libotel-thread-ctx-compat: format, and the writer
                           through its public API only

Checked here:
- includes: each quoted #include of a file in src/ resolves to its own layer,
  a layer below it, include/ or arch/; the headers of src/, include/ and
  arch/ include one another without a circle; and no header of the project
  is a template, whose text depends on a macro its includer defines before
  including it (a circle by macro: anywhere in the tree);
- with --writer/--inspect/--compat (the built libraries): the NEEDED entries
  (the inspector and the writer need no library of this project, the compat
  layer only the writer) and the undefined symbols (the inspector's only
  references to the writer are weak: its publisher, found if the process
  has one); and each --reader tool (the inspector, the sampler) needs the
  inspector and no writer: a profiler that only reads runs none of the
  writer's code.

usage: layers.py SRCDIR [--writer LIB --inspect LIB [--compat LIB] [--reader EXE]...
                         --readelf R --nm N]
"""
import argparse
import os
import re
import subprocess
import sys

ALLOWED = {
    "format": ["format"],
    "elf": ["elf", "format"],
    "writer": ["writer", "format", "arch"],
    "inspect": ["inspect", "format", "elf", "arch"],
    "compat": ["compat", "format"],
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
DEFINE = re.compile(r'^\s*#\s*define\s+([A-Za-z_]\w*)', re.M)
TESTED = re.compile(r'^\s*#\s*(?:if|elif|ifdef|ifndef)\b(.*)$', re.M)
WORD = re.compile(r'[A-Za-z_]\w*')
failures = []


def fail(what):
    failures.append(what)
    print("FAIL:", what)


def layer_of(root, path):
    rel = os.path.relpath(path, os.path.join(root, "src"))
    top = rel.split(os.sep)[0]
    return top if top in ("format", "elf", "inspect", "compat") else "writer"


def dirs_of(root, layer):
    if layer == "arch":
        return [os.path.join(root, "arch")]
    if layer == "writer":
        return [os.path.join(root, "src")]
    return [os.path.join(root, "src", layer)]


def resolve(root, src, name, layers):
    """The file `name` names from `src`, searched in its folder, then in the
    given layers' folders, then include/ (None: not found there)."""
    for d in [os.path.dirname(src)] + [d for l in layers for d in dirs_of(root, l)] + \
            [os.path.join(root, "src"), os.path.join(root, "include")]:
        p = os.path.normpath(os.path.join(d, name))
        if os.path.isfile(p):
            return p
    return None


def tested_names(path, cache={}):
    """The names a header's #if/#ifdef/#ifndef/#elif lines test."""
    if path not in cache:
        with open(path, encoding="utf-8") as fh:
            cache[path] = {w for cond in TESTED.findall(fh.read()) for w in WORD.findall(cond)}
    return cache[path]


def check_templates(root):
    """No project header tests a macro that a file defines above its
    #include of that header."""
    count = 0
    for top in ("src", "include", "arch", "tests", "tools", "bench", "ffi", "examples"):
        for d, dirs, names in os.walk(os.path.join(root, top)):
            dirs[:] = [x for x in dirs if x not in ("target", "bin", "obj")]
            for n in names:
                if not n.endswith((".c", ".h", ".S", ".cc", ".cpp")):
                    continue
                f = os.path.join(d, n)
                with open(f, encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
                for m in INCLUDE.finditer(text):
                    target = resolve(root, f, m.group(1), ["arch"])
                    if target is None:
                        continue
                    count += 1
                    above = set(DEFINE.findall(text[:m.start()]))
                    used = sorted(above & tested_names(target))
                    if used:
                        fail(f"{os.path.relpath(target, root)} is a template: it tests "
                             f"{', '.join(used)}, which {os.path.relpath(f, root)} defines "
                             "before including it")
    print(f"{count} includes of project headers checked for macros their includer defines")


def check_includes(root):
    files = []
    for top in ("src", "include", "arch"):
        for d, _, names in os.walk(os.path.join(root, top)):
            files += [os.path.join(d, n) for n in names if n.endswith((".c", ".h", ".S"))]
    graph, checked = {}, 0
    for f in sorted(files):
        with open(f, encoding="utf-8") as fh:
            text = fh.read()
        graph[f] = []
        in_src = f.startswith(os.path.join(root, "src") + os.sep)
        layer = layer_of(root, f) if in_src else None
        for name in INCLUDE.findall(text):
            target = resolve(root, f, name, ALLOWED[layer] if layer else ["arch"])
            if target is None:
                continue  # a system header, or one made by the build
            graph[f].append(target)
            if not in_src:
                continue
            checked += 1
            if target.startswith(os.path.join(root, "include") + os.sep):
                continue
            if target.startswith(os.path.join(root, "arch") + os.sep):
                ok = "arch" in ALLOWED[layer]
            else:
                ok = layer_of(root, target) in ALLOWED[layer]
            if not ok:
                fail(f"{os.path.relpath(f, root)} ({layer}) includes "
                     f"{os.path.relpath(target, root)} ({layer_of(root, target)}): an arrow "
                     "that does not point down")
    # No circle among the headers.
    state = {}

    def visit(node, stack):
        state[node] = 1
        for nxt in graph.get(node, []):
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt):] + [nxt] if nxt in stack else [node, nxt]
                fail("an include circle: " + " -> ".join(os.path.relpath(c, root) for c in cycle))
            elif state.get(nxt) is None:
                visit(nxt, stack + [nxt])
        state[node] = 2

    for f in sorted(graph):
        if state.get(f) is None:
            visit(f, [f])
    print(f"{checked} includes of src/ checked, {len(graph)} files in the include graph")


def out(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def needed(readelf, lib):
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out([readelf, "-dW", lib]))


def ours(names):
    return [n for n in names if n.startswith("libotel-")]


def check_libraries(a):
    for name, lib, allowed in (("writer", a.writer, []), ("inspect", a.inspect, []),
                               ("compat", a.compat, ["libotel-thread-ctx.so.1"])):
        if lib is None:
            continue
        n = ours(needed(a.readelf, lib))
        if sorted(n) != sorted(allowed):
            fail(f"{name}: NEEDED {n}, expected {allowed}")
        else:
            print(f"{name}: NEEDED of this project: {n or 'none'}")
    undefined = [line.split() for line in out([a.nm, "-D", "--undefined-only", a.inspect]).splitlines()]
    strong = [u[-1] for u in undefined if u[-1].startswith("otel_") and u[0] != "w"]
    weak = sorted(u[-1].split("@")[0] for u in undefined if u[-1].startswith("otel_") and u[0] == "w")
    if strong:
        fail(f"inspect: strong references to another library of this project: {strong}")
    if weak != ["otel_thread_ctx_process_copy", "otel_thread_ctx_process_query"]:
        fail(f"inspect: weak references {weak}, expected the publisher's query and copy only")
    else:
        print(f"inspect: weak references to the writer's publisher only: {weak}")
    for exe in a.reader:
        n = ours(needed(a.readelf, exe))
        if n != ["libotel-thread-ctx-inspect.so.1"]:
            fail(f"{os.path.basename(exe)}: NEEDED {n}, expected the inspector alone")
        else:
            print(f"{os.path.basename(exe)}: NEEDED of this project: {n}")
    if a.compat is not None:
        names = [line.split()[-1] for line in out([a.nm, "-D", "--undefined-only", a.compat]).splitlines()]
        up = [n for n in names if n.startswith("otel_thread_ctx_inspect")]
        if up:
            fail(f"compat: references the inspector: {up}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("root")
    p.add_argument("--writer")
    p.add_argument("--inspect")
    p.add_argument("--compat")
    p.add_argument("--reader", action="append", default=[])
    p.add_argument("--readelf")
    p.add_argument("--nm")
    a = p.parse_args()
    a.root = os.path.abspath(a.root)
    check_includes(a.root)
    check_templates(a.root)
    if a.inspect:
        check_libraries(a)
    if failures:
        print(f"{len(failures)} failures")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
