#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The Python package, installed three ways, each then running the README's
examples (doc/bindings.md) with the installed copy, never the tree's:

1. `meson install` (only the files tagged python-runtime, into a scratch
   DESTDIR): the files land in the site directory of PYTHON, the python3
   Meson's python module found (INSTALL_DIR under the prefix);
2. `pip install --no-build-isolation` of a copy of ffi/python into a
   scratch `python3 -m venv --system-site-packages` (whose setuptools and
   wheel are Debian's python3-setuptools and python3-wheel);
3. the same with the wheel `pip wheel --no-build-isolation` built (and,
   where python3-build is there, the one `python3 -m build --no-isolation`
   built), which must hold py.typed.

In the venvs, mypy (when given) checks a program that uses the installed
package against its inline types, which it reads only with py.typed.

The examples run with OTEL_THREAD_CTX_LIBRARY and
OTEL_THREAD_CTX_INSPECT_LIBRARY at the build's libraries and, in a
sanitizer build, the runtime preloaded (as meson test sets them); pip, venv
and the builds run without the preload.  Exits 77 (SKIP) when PYTHON
has no venv, pip, setuptools or wheel, saying which.

usage: install.py --meson M --build-dir B --source-dir ffi/python --python P
                  --install-dir D --prefix X --version V --readme R --mypy Y
"""

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_readme_example  # noqa: E402  pylint: disable=wrong-import-position

# A program a user writes, type-checked against the installed package.
TYPED_USER = '''
import otel_thread_ctx as otc
from otel_thread_ctx import inspect, process

def span(trace: str, span_id: bytes) -> otc.Record:
    ctx = otc.Context(trace, span_id, flags=1, capacity=64)
    with ctx:
        otc.update_span_id(bytes(range(1, 9)))
        return otc.read()

def swap(ctx: otc.Context) -> otc.Record:
    saved: otc.Context = ctx.attach(otc.Context())
    saved.update()
    return otc.save().get()

rec: otc.Record = span("4bf92f3577b34da6a3ce929d0e0e4736", bytes(8))
flags: int = rec.flags
process.publish({"service.name": "typed"}, schema=process.Schema.TLS_V1)
snapshot: inspect.ProcessContext = inspect.read_process(0)
'''
# The same with a type error mypy must find.
TYPED_WRONG = 'import otel_thread_ctx as otc\nname: int = otc.key_name(0)\n'


def fail(message):
    print("install: FAIL: " + message, file=sys.stderr)
    sys.exit(1)


def skip(message):
    print("skip: " + message)
    sys.exit(77)


def plain_env():
    """The environment without the sanitizer preload, the tree on
    PYTHONPATH or the build's library: for pip, venv and builds."""
    env = dict(os.environ)
    for k in ("LD_PRELOAD", "PYTHONPATH", "OTEL_THREAD_CTX_LIBRARY",
              "OTEL_THREAD_CTX_INSPECT_LIBRARY"):
        env.pop(k, None)
    return env


def example_env(pythonpath=None):
    """What the example runs with: meson test's environment, with
    PYTHONPATH at the installed copy only."""
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    return env


def sh(cmd, env=None, cwd=None):
    print("$ " + " ".join(cmd), flush=True)
    r = subprocess.run(cmd, env=env if env is not None else plain_env(), cwd=cwd,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=240, check=False)
    print(r.stdout, end="")
    if r.returncode != 0:
        fail("%s exited %d" % (cmd[0], r.returncode))
    return r.stdout


def has_module(python, name):
    return subprocess.run([python, "-c", "import " + name], env=plain_env(),
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          check=False).returncode == 0


def where_imported(python, env, cwd):
    """(the package's directory, its __version__) as `python` imports it."""
    out = subprocess.run(
        [python, "-c", "import otel_thread_ctx as o, os; "
                       "print(os.path.dirname(o.__file__)); print(o.__version__)"],
        env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        timeout=60, check=False)
    if out.returncode != 0:
        fail("the installed package does not import:\n" + out.stderr)
    path, version = out.stdout.split("\n")[:2]
    return os.path.realpath(path), version


def run_example(args, python, env, cwd, inside):
    """The README's examples, with `python`, importing the package from
    under `inside` (the second reads a forked child with ptrace: install.py
    does not run under qemu-user)."""
    path, version = where_imported(python, env, cwd)
    if not path.startswith(os.path.realpath(inside) + os.sep):
        fail("otel_thread_ctx was imported from %s, not from %s" % (path, inside))
    if version != args.version:
        fail("the installed package is version %s, the project %s" % (version, args.version))
    print("imported from %s, version %s" % (path, version))
    for which in (1, 2):
        code, expected = run_readme_example.extract(args.readme, which)
        run_readme_example.run(code, expected, [python], env=env, cwd=cwd)


def check_types(args, python, cwd):
    if not args.mypy:
        print("mypy: not on this machine; the installed package's types not checked")
        return
    user = os.path.join(cwd, "typed_user.py")
    wrong = os.path.join(cwd, "typed_wrong.py")
    with open(user, "w", encoding="utf-8") as f:
        f.write(TYPED_USER)
    with open(wrong, "w", encoding="utf-8") as f:
        f.write(TYPED_WRONG)
    base = [args.mypy, "--strict", "--no-incremental", "--python-executable", python]
    sh(base + [user], cwd=cwd)
    r = subprocess.run(base + [wrong], env=plain_env(), cwd=cwd, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=240, check=False)
    print(r.stdout, end="")
    if r.returncode == 0 or "Incompatible types in assignment" not in r.stdout:
        fail("mypy did not find the type error through the installed package's types")


def meson_install(args, tmp):
    dest = os.path.join(tmp, "destdir")
    sh([args.meson, "install", "-C", args.build_dir, "--no-rebuild", "--tags",
        "python-runtime", "--destdir", dest])
    install_dir = args.install_dir
    if not os.path.isabs(install_dir):
        install_dir = os.path.join(args.prefix, install_dir)
    site = dest + install_dir
    for name in ("__init__.py", "_lib.py", "inspect.py", "process.py", "py.typed"):
        if not os.path.isfile(os.path.join(site, "otel_thread_ctx", name)):
            fail("meson install did not install otel_thread_ctx/%s in %s" % (name, site))
    print("meson install: the package is in %s (DESTDIR %s)" % (install_dir, dest))
    on_path = subprocess.run(
        [args.python, "-c", "import sys; print(%r in sys.path)" % install_dir],
        env=plain_env(), stdout=subprocess.PIPE, text=True, check=False).stdout.strip()
    print("%s is %son %s's sys.path (prefix %s)"
          % (install_dir, "" if on_path == "True" else "not ", args.python, args.prefix))
    run_example(args, args.python, example_env(site), tmp, site)


def venv(args, tmp, name):
    """A new venv that sees the system's site-packages; its python."""
    where = os.path.join(tmp, name)
    sh([args.python, "-m", "venv", "--system-site-packages", "--without-pip", where])
    return os.path.join(where, "bin", "python")


def pip_install(args, tmp, source):
    python = venv(args, tmp, "venv-tree")
    sh([python, "-m", "pip", "install", "--no-build-isolation", "--no-index", "--no-deps",
        source])
    run_example(args, python, example_env(), tmp, os.path.join(tmp, "venv-tree"))
    check_types(args, python, tmp)


def wheel_install(args, tmp, source, builder):
    dist = os.path.join(tmp, "dist-" + builder)
    if builder == "pip":
        sh([args.python, "-m", "pip", "wheel", "--no-build-isolation", "--no-index",
            "--no-deps", "-w", dist, source])
    else:
        sh([args.python, "-m", "build", "--no-isolation", "--wheel", "--outdir", dist, source])
    wheels = glob.glob(os.path.join(dist, "otel_thread_ctx-%s-py3-none-any.whl" % args.version))
    if len(wheels) != 1:
        fail("expected one pure-Python wheel of version %s in %s: %s"
             % (args.version, dist, os.listdir(dist)))
    names = zipfile.ZipFile(wheels[0]).namelist()
    for name in ("otel_thread_ctx/__init__.py", "otel_thread_ctx/inspect.py",
                 "otel_thread_ctx/process.py", "otel_thread_ctx/py.typed"):
        if name not in names:
            fail("the wheel has no %s: %s" % (name, names))
    if any(n.startswith("tests/") or "/tests/" in n for n in names):
        fail("the wheel carries the tests: %s" % names)
    python = venv(args, tmp, "venv-wheel-" + builder)
    sh([python, "-m", "pip", "install", "--no-index", "--no-deps", wheels[0]])
    run_example(args, python, example_env(), tmp, os.path.join(tmp, "venv-wheel-" + builder))
    check_types(args, python, tmp)


def main():
    p = argparse.ArgumentParser()
    for opt in ("meson", "build-dir", "source-dir", "python", "install-dir", "prefix",
                "version", "readme", "mypy"):
        p.add_argument("--" + opt, required=True)
    args = p.parse_args()
    for module, package in (("venv", "python3-venv"), ("pip", "python3-pip"),
                            ("setuptools", "python3-setuptools"), ("wheel", "python3-wheel")):
        if not has_module(args.python, module):
            skip("%s has no module %s (Debian: apt-get install %s; tools/run test installs it)"
                 % (args.python, module, package))
    with tempfile.TemporaryDirectory(prefix="otel-py-install-") as tmp:
        # pip and setuptools build in the source tree: build a copy.
        source = os.path.join(tmp, "src")
        shutil.copytree(args.source_dir, source,
                        ignore=shutil.ignore_patterns("tests", "__pycache__", "*.pyc",
                                                      "build", "*.egg-info"))
        meson_install(args, tmp)
        pip_install(args, tmp, source)
        wheel_install(args, tmp, source, "pip")
        if has_module(args.python, "build"):
            wheel_install(args, tmp, source, "build")
        else:
            print("python3 -m build: no module build for %s (Debian: python3-build); "
                  "that wheel not built" % args.python)
    print("the package installs with meson install, pip and from its wheel, and runs there")


if __name__ == "__main__":
    main()
