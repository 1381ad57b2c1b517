#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The overviews name what is there.

Fails when:
- an installed library (src/meson.build) is missing from the README's
  library table, from doc/linking.md's, or from the head comment of
  src/meson.build;
- a public header (include/) is missing from the README's path table;
- a folder of tests/ with a meson.build is missing from the suite list at
  the head of tests/meson.build, or that list names a folder that is not
  there;
- a file path cited in a comment or a document (src/..., tests/..., doc/...,
  arch/..., tools/..., include/..., examples/..., bench/..., ffi/...) names
  no file of the tree.

usage: check-overviews.py SOURCE_ROOT
"""
import os
import re
import subprocess
import sys

root = sys.argv[1] if len(sys.argv) > 1 else "."
problems = []


def read(rel):
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        return f.read()


def tracked_files():
    try:
        out = subprocess.run(["git", "-C", root, "ls-files"], check=True, capture_output=True,
                             text=True).stdout.split()
        if out:
            return out
    except (OSError, subprocess.CalledProcessError):
        pass
    files = []
    for d, dirs, names in os.walk(root):
        dirs[:] = [x for x in dirs if not x.startswith((".", "build"))]
        files += [os.path.relpath(os.path.join(d, n), root) for n in names]
    return files


# --- libraries -----------------------------------------------------------------
src_build = read("src/meson.build")
libraries = set()
for m in re.finditer(r"shared_library\('([\w-]+)',(.*?)\n\s*\)", src_build, re.S):
    if "install: true" in m.group(2):
        libraries.add("lib" + m.group(1))
if not libraries:
    problems.append("no installed library found in src/meson.build")
head = src_build.split("\n\n")[0]
readme = read("README.md")
linking = read("doc/linking.md")
for lib in sorted(libraries):
    if f"`{lib}`" not in readme:
        problems.append(f"README.md's library table does not name {lib}")
    if lib not in linking.split("## The slot")[0]:
        problems.append(f"doc/linking.md's library table does not name {lib}")
    if lib not in head:
        problems.append(f"the head comment of src/meson.build does not name {lib}")

# --- headers -------------------------------------------------------------------
for h in sorted(os.listdir(os.path.join(root, "include"))):
    if h.endswith(".h") and f"`{h}`" not in readme:
        problems.append(f"README.md's path table does not name include/{h}")

# --- suites --------------------------------------------------------------------
tests_build = read("tests/meson.build")
listed = set(re.findall(r"^#\s+([\w-]+)/\s", tests_build, re.M))
folders = {d for d in os.listdir(os.path.join(root, "tests"))
           if os.path.isfile(os.path.join(root, "tests", d, "meson.build"))}
for d in sorted(folders - listed):
    problems.append(f"tests/meson.build's suite list does not name tests/{d}/")
for d in sorted(listed - folders - {"lib"}):
    problems.append(f"tests/meson.build's suite list names tests/{d}/, which has no meson.build")

# --- cited paths ---------------------------------------------------------------
files = tracked_files()
present = set(files)
dirs = {os.path.dirname(f) for f in files}
dirs |= {p for d in list(dirs) for p in [os.path.dirname(d)]}
cite = re.compile(r"(?<![\w./-])((?:src|tests|doc|arch|tools|include|examples|bench|ffi)/"
                  r"[\w./-]*\.(?:c|h|S|py|md|build|map|txt|ini|rs|cs|toml))\b")
for f in files:
    if not f.endswith((".c", ".h", ".S", ".py", ".md", "meson.build", ".rs", ".cs", ".sh")) \
            or f.startswith("tests/docs/"):
        continue
    try:
        text = read(f)
    except (UnicodeDecodeError, FileNotFoundError):
        continue
    for m in cite.finditer(text):
        path = m.group(1).rstrip(".")
        if "<" in path or "*" in path or re.search(r"\b[A-Z]{3,}\b", path):
            continue  # a pattern (<cpu_family>, ARCH), not a path
        # Paths relative to the citing file's folder are fine too.
        local = os.path.normpath(os.path.join(os.path.dirname(f), path))
        # Or relative to a package inside the tree (ffi/python/tests/...).
        nested = any(p.endswith("/" + path) for p in present)
        if path not in present and local not in present and path not in dirs and not nested:
            line = text.count("\n", 0, m.start()) + 1
            problems.append(f"{f}:{line}: cites {path}, which is not in the tree")

for p in problems:
    print("FAIL:", p)
print(f"{len(libraries)} libraries, {len(folders)} test folders, {len(files)} files checked; "
      f"{len(problems)} problems")
sys.exit(1 if problems else 0)
