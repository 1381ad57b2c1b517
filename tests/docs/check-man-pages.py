#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The man pages of the libraries (man/) document every exported name.

Fails when:
- a name exported by a version script (src/libotel-thread-ctx.map,
  src/inspect/libotel-thread-ctx-inspect.map,
  src/compat/libotel-thread-ctx-compat.map) has no page in man/;
- a page of section 3 is named after, or names in its NAME section, a name
  that no version script exports;
- a full page lacks one of the sections NAME, SYNOPSIS, DESCRIPTION,
  RETURN VALUE, ERRORS, SEE ALSO, or its .TH line names another page;
- a full page's SYNOPSIS lacks the prototype of a name its NAME section
  gives, declares something else, gives a prototype that differs from the
  one in include/*.h (compared token by token: whitespace does not count),
  does not #include the header that declares it, or does not name the
  library that exports it (-lNAME);
- a full page's ERRORS section leaves out an error code that the comment
  of the header on its declaration names (declarations that follow each
  other under one comment share it: their pages together must name its
  codes);
- a .so page points at a page that is not in man/, or at one whose NAME
  section does not give the name the .so page is named after;
- a page of man/ is not installed by man/meson.build (install_man), or
  man/meson.build installs a page that is not there;
- the overview page (man/otel-thread-ctx.7) leaves out an exported name;
- SEE ALSO refers to a page of the project that is not in man/, or a page
  cites a file (doc/..., include/..., src/...) that is not in the tree;
- groff -man -ww -z warns about a page (skipped, with the reason printed,
  when groff is not installed; the rest runs all the same).

usage: check-man-pages.py SOURCE_ROOT
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

root = sys.argv[1] if len(sys.argv) > 1 else "."
problems = []

MAPS = [
    "src/libotel-thread-ctx.map",
    "src/inspect/libotel-thread-ctx-inspect.map",
    "src/compat/libotel-thread-ctx-compat.map",
]
OVERVIEW = "otel-thread-ctx.7"
SECTIONS = ["NAME", "SYNOPSIS", "DESCRIPTION", "RETURN VALUE", "ERRORS", "SEE ALSO"]


def read(rel):
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        return f.read()


# --- what the libraries export -------------------------------------------------
exported = {}  # name -> library (libotel-thread-ctx, ...)
for m in MAPS:
    text = re.sub(r"/\*.*?\*/", " ", read(m), flags=re.S)
    lib = os.path.basename(m)[:-len(".map")]
    for block in re.findall(r"global:(.*?)(?:local:|\})", text, re.S):
        for name in re.findall(r"([A-Za-z_]\w*)\s*;", block):
            exported[name] = lib
if not exported:
    problems.append("no exported name found in the version scripts")


# --- what the headers declare --------------------------------------------------
def preprocess(text):
    """Joins continued lines and drops the preprocessor's lines, and what
    #ifdef __cplusplus keeps for C++ (extern "C" and its brace)."""
    text = text.replace("\\\n", " ")
    out, stack = [], []
    for line in text.split("\n"):
        s = line.strip()
        if s.startswith("#"):
            d = s[1:].strip()
            if d.startswith(("if", "ifdef", "ifndef")):
                stack.append(d.startswith("ifdef") and d.split()[1:2] == ["__cplusplus"])
            elif d.startswith("else") and stack:
                stack[-1] = False
            elif d.startswith("endif") and stack:
                stack.pop()
            out.append("")
        else:
            out.append("" if any(stack) else line)
    return "\n".join(out)


TOKEN = re.compile(r'(/\*.*?\*/)|(//[^\n]*)|("(?:\\.|[^"\\])*")|([{};])|([^{};/"]+|/)', re.S)


def declarations(text):
    """(statement, comment, group) for each statement at file level; a
    statement with no comment of its own shares the previous one's group."""
    out, stmt, comment, depth, group = [], "", None, 0, -1
    for m in TOKEN.finditer(preprocess(text)):
        tok = m.group(0)
        if depth > 0:
            if m.group(4) == "{":
                depth += 1
            elif m.group(4) == "}":
                depth -= 1
            continue
        if m.group(1) or m.group(2):
            if not stmt.strip():
                comment = tok
            continue
        if tok == "{":
            depth, stmt = 1, ""
        elif tok == ";":
            if stmt.strip():
                if comment is not None:
                    group += 1
                out.append((" ".join(stmt.split()), comment, max(group, 0)))
            stmt, comment = "", None
        else:
            stmt += tok
    return out


def tokens(decl):
    return re.findall(r"[A-Za-z_]\w*|\d+|\S", decl)


def declared_name(decl):
    t = tokens(decl)
    if "(" in t:
        i = t.index("(")
        return t[i - 1] if i > 0 else None
    names = [x for x in t if re.match(r"[A-Za-z_]", x)]
    return names[-1] if names else None


codes = set()
prototypes = {}  # name -> (header, declaration, group key)
header_groups = {}  # group key -> (codes of its comment, [names])
for h in sorted(os.listdir(os.path.join(root, "include"))):
    if not h.endswith(".h"):
        continue
    text = read("include/" + h)
    codes |= set(re.findall(r"\bOTEL_THREAD_CTX_(E[A-Z0-9]+)\s*=\s*-\d+", text))
    for decl, comment, group in declarations(text):
        name = declared_name(decl)
        if name in exported:
            key = (h, group)
            prototypes[name] = (h, decl, key)
            entry = header_groups.setdefault(key, [comment or "", []])
            entry[1].append(name)
for key, (comment, names) in header_groups.items():
    header_groups[key] = ({c for c in re.findall(r"\b(?:OTEL_THREAD_CTX_)?(E[A-Z0-9]+)\b", comment)
                           if c in codes}, names)
for name in sorted(set(exported) - set(prototypes)):
    problems.append(f"{name} ({exported[name]}) is declared in no header of include/")


# --- roff ----------------------------------------------------------------------
def roff_args(s):
    args, cur, quoted, i, any_ = [], "", False, 0, False
    while i < len(s):
        c = s[i]
        if quoted:
            if c == '"' and s[i + 1:i + 2] == '"':
                cur += '"'
                i += 1
            elif c == '"':
                quoted = False
            else:
                cur += c
        elif c == '"':
            quoted, any_ = True, True
        elif c in " \t":
            if cur or any_:
                args.append(cur)
            cur, any_ = "", False
        else:
            cur += c
        i += 1
    if cur or any_:
        args.append(cur)
    return args


ESCAPES = [(r"\f[BIRP]", ""), (r"\f(CW", ""), (r"\&", ""), (r"\-", "-"), (r"\e", "\\"),
           (r"\ ", " "), (r"\(aq", "'"), (r"\(dq", '"'), (r"\(em", "--"), (r"\(en", "-"),
           (r"\(bu", "*"), (r"\|", ""), (r"\^", ""), (r"\~", " ")]


def unescape(s):
    for a, b in ESCAPES:
        if a.startswith(r"\f["):
            s = re.sub(r"\\f[BIRP]", b, s)
        else:
            s = s.replace(a, b)
    return s


def deroff(line):
    """The text of one roff line; None for a request that prints nothing."""
    if line.startswith(('.\\"', "'\\\"")) or line.strip() == ".":
        return None
    if not line.startswith("."):
        return unescape(line)
    m = re.match(r"\.(\S+)\s*(.*)", line)
    macro, rest = m.group(1), m.group(2)
    if macro in ("B", "I", "SM", "SB"):
        return unescape(" ".join(roff_args(rest)))
    if macro in ("BR", "BI", "IB", "IR", "RB", "RI"):
        return unescape("".join(roff_args(rest)))
    if macro in ("SH", "SS"):
        return unescape(" ".join(roff_args(rest)))
    return None


class Page:
    def __init__(self, file):
        self.file = file
        self.text = read("man/" + file)
        self.lines = self.text.split("\n")
        code = [ln for ln in self.lines if ln.strip() and not ln.startswith('.\\"')]
        self.so = None
        if len(code) == 1 and code[0].startswith(".so "):
            self.so = code[0].split(None, 1)[1].strip()
        self.sections = {}
        self.raw = {}
        self.th = None
        current = None
        for ln in self.lines:
            if ln.startswith(".TH "):
                self.th = roff_args(ln[4:])
            if ln.startswith(".SH"):
                current = deroff(ln).strip()
                self.sections.setdefault(current, [])
                self.raw.setdefault(current, [])
                continue
            if current is not None:
                self.raw[current].append(ln)
                t = deroff(ln)
                if t is not None:
                    self.sections[current].append(t)

    def section(self, name):
        return " ".join(" ".join(self.sections.get(name, [])).split())

    def names(self):
        text = self.section("NAME")
        head = re.split(r"\s+-\s+", text, maxsplit=1)[0]
        return [n.strip() for n in head.split(",") if n.strip()]

    def synopsis_blocks(self):
        """The text of the .nf ... .fi blocks of SYNOPSIS."""
        out, inside = [], False
        for ln in self.raw.get("SYNOPSIS", []):
            if ln.startswith(".nf"):
                inside = True
            elif ln.startswith(".fi"):
                inside = False
            elif inside:
                t = deroff(ln)
                if t is not None:
                    out.append(t)
        return "\n".join(out)


# --- the pages -----------------------------------------------------------------
mandir = os.path.join(root, "man")
if not os.path.isdir(mandir):
    problems.append("man/ is not there")
    files = []
else:
    files = sorted(f for f in os.listdir(mandir) if f != "meson.build")
pages = {}
for f in files:
    if not re.match(r"^[\w.-]+\.[37]$", f):
        problems.append(f"man/{f} is neither a page of section 3 or 7 nor man/meson.build")
        continue
    pages[f] = Page(f)

documented = {}  # exported name -> full page (file) whose NAME gives it
for f, p in sorted(pages.items()):
    stem, sect = f[:-2], f[-1]
    if sect == "3" and stem not in exported:
        problems.append(f"man/{f}: {stem} is not exported by any version script")
    if p.so is not None:
        continue
    if not p.th or len(p.th) < 2 or p.th[0].lower() != stem.lower() or p.th[1] != sect:
        problems.append(f"man/{f}: its .TH line does not name {stem.upper()} {sect}")
    for s in SECTIONS:
        if s not in p.sections:
            problems.append(f"man/{f}: no {s} section")
    if sect != "3":
        continue
    names = p.names()
    if stem not in names:
        problems.append(f"man/{f}: its NAME section does not give {stem}")
    for n in names:
        if n not in exported:
            problems.append(f"man/{f}: its NAME section gives {n}, which is not exported")
        else:
            documented.setdefault(n, f)

    # SYNOPSIS: includes, then one prototype per name of NAME, as declared.
    syn = p.synopsis_blocks()
    includes = set(re.findall(r"#include\s*<([^>]+)>", syn))
    body = re.sub(r"#include\s*<[^>]+>", "", syn)
    given = {}
    for decl in (d.strip() for d in body.split(";")):
        if not decl:
            continue
        n = declared_name(decl)
        if n not in names:
            problems.append(f"man/{f}: its SYNOPSIS declares {' '.join(decl.split())!r}, "
                            f"which its NAME section does not give")
            continue
        given[n] = decl
    syn_text = p.section("SYNOPSIS")
    for n in names:
        if n not in prototypes:
            continue
        header, decl, _ = prototypes[n]
        if n not in given:
            problems.append(f"man/{f}: its SYNOPSIS has no prototype of {n}")
        elif tokens(given[n]) != tokens(decl):
            problems.append(f"man/{f}: the SYNOPSIS prototype of {n} differs from "
                            f"include/{header}'s:\n      page:   {' '.join(given[n].split())};"
                            f"\n      header: {decl};")
        if header not in includes:
            problems.append(f"man/{f}: its SYNOPSIS does not #include <{header}>, which "
                            f"declares {n}")
        flag = "-l" + exported[n][len("lib"):]
        if not re.search(re.escape(flag) + r"(?![\w-])", syn_text):
            problems.append(f"man/{f}: its SYNOPSIS does not say to link with {flag} "
                            f"({exported[n]} exports {n})")

# Each .so page leads to a full page that documents its name.
for f, p in sorted(pages.items()):
    if p.so is None:
        continue
    target = os.path.basename(p.so)
    stem = f[:-2]
    if not re.match(r"^man[37]/[\w.-]+\.[37]$", p.so):
        problems.append(f"man/{f}: .so {p.so} is not of the form man3/NAME.3")
    if target not in pages:
        problems.append(f"man/{f}: .so {p.so}, which is not in man/")
    elif pages[target].so is not None:
        problems.append(f"man/{f}: .so {p.so}, itself a .so page")
    elif stem not in pages[target].names():
        problems.append(f"man/{f}: .so {p.so}, whose NAME section does not give {stem}")

for n in sorted(exported):
    if n + ".3" not in pages:
        problems.append(f"{n} ({exported[n]}) has no page man/{n}.3")
    elif n not in documented:
        problems.append(f"{n} has a page, but no full page gives it in its NAME section")

# The ERRORS of the pages of one header comment name every code it names.
for (header, _), (need, names) in sorted(header_groups.items()):
    fulls = sorted({documented[n] for n in names if n in documented})
    if not fulls or not need:
        continue
    errors = " ".join(pages[f].section("ERRORS") for f in fulls)
    for c in sorted(need):
        if not re.search(r"\bOTEL_THREAD_CTX_" + c + r"\b", errors):
            problems.append(f"man/{', man/'.join(fulls)}: ERRORS does not name "
                            f"OTEL_THREAD_CTX_{c}, which include/{header} documents for "
                            f"{', '.join(names)}")

# The overview names every exported name.
if OVERVIEW not in pages:
    problems.append(f"no overview page man/{OVERVIEW}")
else:
    ov = " ".join(" ".join(lines) for lines in pages[OVERVIEW].sections.values())
    for n in sorted(exported):
        if not re.search(r"\b" + re.escape(n) + r"\b", ov):
            problems.append(f"man/{OVERVIEW} does not list {n}")

# SEE ALSO leads to pages that are there; cited files are in the tree.
cite = re.compile(r"(?<![\w./-])((?:src|tests|doc|include|tools|examples|arch)/[\w./-]*\.\w+)")
for f, p in sorted(pages.items()):
    if p.so is not None:
        continue
    for ref, sect in re.findall(r"\b(otel[\w-]*)\s*\(([37])\)", p.section("SEE ALSO")):
        if ref + "." + sect not in pages:
            problems.append(f"man/{f}: SEE ALSO names {ref}({sect}), which is not in man/")
    text = " ".join(" ".join(v) for v in p.sections.values())
    for path in set(cite.findall(text)):
        path = path.rstrip(".")
        if not os.path.exists(os.path.join(root, path)):
            problems.append(f"man/{f}: cites {path}, which is not in the tree")

# man/meson.build installs every page, and only pages that are there.
try:
    build = re.sub(r"#[^\n]*", "", read("man/meson.build"))
except FileNotFoundError:
    build = ""
    problems.append("man/meson.build is not there")
installed = set(re.findall(r"'([\w.-]+\.[37])'", build))
if "install_man(" not in build:
    problems.append("man/meson.build does not call install_man()")
for f in sorted(set(pages) - installed):
    problems.append(f"man/{f} is not installed by man/meson.build (install_man)")
for f in sorted(installed - set(files)):
    problems.append(f"man/meson.build installs {f}, which is not in man/")

# groff renders every page without a warning (.so pages through a man3/).
groff = shutil.which("groff")
if groff is None:
    print("SKIP: groff is not installed: the pages were not rendered (the other checks ran)")
else:
    with tempfile.TemporaryDirectory() as tmp:
        for sect in ("3", "7"):
            os.symlink(os.path.abspath(mandir), os.path.join(tmp, "man" + sect))
        for f in sorted(pages):
            r = subprocess.run([groff, "-man", "-ww", "-z", "-t", "man" + f[-1] + "/" + f],
                               cwd=tmp, capture_output=True, text=True)
            out = (r.stdout + r.stderr).strip()
            if r.returncode != 0 or out:
                problems.append(f"man/{f}: groff -man -ww warns:\n      " +
                                out.replace("\n", "\n      "))

for p in problems:
    print("FAIL:", p)
full = sum(1 for p in pages.values() if p.so is None)
print(f"{len(exported)} exported names, {len(pages)} pages ({full} full, {len(pages) - full} .so), "
      f"{len(prototypes)} prototypes compared; {len(problems)} problems")
sys.exit(1 if problems else 0)
