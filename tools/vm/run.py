#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Run a build's tests that need a kernel in a virtual machine (doc/vm.md).

Usage: tools/vm/run.py CONFIG.ini      (tools/configs/aarch64-vm.ini, x86_64-vm.ini)
       OTEL_VM_TESTS='NAME ...' tools/vm/run.py CONFIG.ini   (only those tests of its plan)
       OTEL_VM_TESTS=NAME OTEL_VM_REPEAT=N tools/vm/run.py CONFIG.ini
                                       (each of them N times in a row, in one boot,
                                       up to the first run that does not pass)

From the project's root, as root, after the build named in CONFIG.ini was
built.  Downloads Debian's kernel and busybox-static for the configuration's
architecture once (apt-get download, unpacked into build-vm-ARCH/, never
installed), writes an initramfs (busybox, the 9p and virtio modules,
tools/vm/init), picks the tests from `meson introspect --tests` (the plan),
boots the kernel once under qemu-system with the build machine's root shared
read-only and the project read-write, and runs the plan in it
(tools/vm/guest.py).  The outcome of each test comes back in
BUILD/meson-logs/testlog-NAME.json, in the format of Meson's testlog.json.
Exit status: 0 when every test passed or skipped, 1 when one did not, 2 when
the machine did not run the plan to its end.
"""
import configparser
import gzip
import json
import os
import re
import shlex
import subprocess
import sys
import time

# Modules the initramfs loads, dependencies first (those built into the
# kernel are absent from its tree and left out).
MODULES = ["virtio_ring", "virtio", "virtio_pci_legacy_dev", "virtio_pci_modern_dev",
           "virtio_pci", "netfs", "fscache", "9pnet", "9pnet_virtio", "9p"]
# ELF e_machine of the architectures' programs.
ELF_MACHINE = {"arm64": 183, "amd64": 62}


def log(msg):
    print(f"tools/vm: {msg}", flush=True)


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def unpack(packages, root):
    """Download PACKAGES (apt-get download) and unpack them into ROOT, once:
    nothing is installed."""
    tmp = root + ".tmp"
    debs = os.path.join(tmp, "debs")
    sh(["rm", "-rf", tmp])
    os.makedirs(debs)
    log(f"downloading {' and '.join(packages)}")
    sh(["apt-get", "download", "-q", "-o", "APT::Sandbox::User=root"] + packages, cwd=debs,
       stdout=sys.stderr)
    for deb in sorted(os.listdir(debs)):
        sh(["dpkg-deb", "-x", os.path.join(debs, deb), tmp])
    sh(["rm", "-rf", debs, root])
    os.rename(tmp, root)


def fetch(arch, kernel_package, cache):
    """Unpack the kernel and busybox-static of ARCH into CACHE, once."""
    suffix = "" if arch == "amd64" else f":{arch}"
    out = subprocess.run(["apt-cache", "depends", kernel_package + suffix], check=True,
                         capture_output=True, text=True).stdout
    kernel = next(line.split(":", 1)[1].strip().split(":")[0] for line in out.splitlines()
                  if line.strip().startswith("Depends:") and "linux-image-" in line)
    root = os.path.join(cache, kernel)
    if not os.path.isdir(root):
        unpack([kernel + suffix, "busybox-static" + suffix], root)
    release = kernel[len("linux-image-"):]
    return root, release


def fetch_setpriv(arch, cache):
    """The setpriv of ARCH (util-linux, unpacked into CACHE once), or None.

    A test run as root drops its privileges with setpriv (tests/bpf/cli.py);
    in a machine of another CPU the build machine's cannot run, so init puts
    this one in its place.  It needs libcap-ng0 of ARCH, which tools/run
    installs (a multiarch library: beside the build machine's own).
    """
    if arch == "amd64":
        return None
    root = os.path.join(cache, f"util-linux-{arch}")
    setpriv = os.path.join(root, "usr", "bin", "setpriv")
    if not os.path.exists(setpriv):
        unpack([f"util-linux:{arch}"], root)
    return os.path.abspath(setpriv)


def module_files(root, release):
    tree = os.path.join(root, "lib", "modules", release, "kernel")
    found = {}
    for d, _, files in os.walk(tree):
        for f in files:
            if f.endswith(".ko"):
                found[f[:-3]] = os.path.join(d, f)
    return [(m, found[m]) for m in MODULES if m in found]


def cpio_entry(name, data=b"", mode=0o100644, nlink=1):
    name_b = name.encode() + b"\0"
    fields = [0, mode, 0, 0, nlink, 0, len(data), 0, 0, 0, 0, len(name_b), 0]
    hdr = b"070701" + b"".join(b"%08X" % v for v in fields)
    out = hdr + name_b
    out += b"\0" * (-len(out) % 4)
    out += data + b"\0" * (-len(data) % 4)
    return out


def initramfs(path, root, release, env):
    busybox = os.path.join(root, "bin", "busybox")
    with open(busybox, "rb") as f:
        bb = f.read()
    with open(os.path.join(os.path.dirname(__file__), "init"), "rb") as f:
        init = f.read()
    mods = module_files(root, release)
    parts = [cpio_entry(d, mode=0o40755, nlink=2) for d in ("bin", "modules")]
    parts.append(cpio_entry("bin/busybox", bb, 0o100755))
    parts.append(cpio_entry("init", init, 0o100755))
    parts.append(cpio_entry("vm.env", "".join(f"{k}={shlex.quote(v)}\n"
                                              for k, v in env.items()).encode()))
    parts.append(cpio_entry("modules.order", "".join(f"{m}.ko\n" for m, _ in mods).encode()))
    for m, p in mods:
        with open(p, "rb") as f:
            parts.append(cpio_entry(f"modules/{m}.ko", f.read()))
    parts.append(cpio_entry("TRAILER!!!", nlink=1, mode=0))
    with gzip.open(path, "wb", compresslevel=1) as f:
        f.write(b"".join(parts))


def elf_machine(path):
    try:
        with open(path, "rb") as f:
            head = f.read(20)
    except OSError:
        return None
    if head[:4] != b"\x7fELF":
        return None
    return int.from_bytes(head[18:20], "little")


def cargo_inspect_program(cmd, env):
    """The Rust binding's test program of tests/inspect.rs, built on this
    machine for the configuration's CPU, as cargo-test.sh's mode `inspect`
    would (cargo is a program of the build machine: the machine runs what it
    built).  Returns (command, None), or (None, why not)."""
    crate, target = cmd[3], env.get("OTEL_RUST_TARGET", "")
    if cmd[2]:
        return None, cmd[2]
    if not target:
        return None, "no OTEL_RUST_TARGET: not a cross build"
    e = dict(os.environ)
    e.update(env)
    e.pop("OTEL_TEST_NO_PTRACE", None)
    try:
        sysroot = subprocess.run(["rustc", "--print", "sysroot"], env=e, check=True,
                                 capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError) as err:
        return None, f"no rustc: {err}"
    std = os.path.join(sysroot, "lib", "rustlib", target, "lib")
    if not os.path.isdir(std) or not any(f.startswith("libstd-") for f in os.listdir(std)):
        return None, f"rustc has no standard library for {target} in {sysroot}"
    e[f"CARGO_TARGET_{target.upper().replace('-', '_')}_LINKER"] = env["OTEL_RUST_LINKER"]
    log(f"building the Rust binding's inspector test for {target}")
    p = subprocess.run(["cargo", "test", "--offline", "--locked", "--target", target,
                        "--features", "inspect", "--test", "inspect", "--no-run",
                        "--message-format=json"], cwd=crate, env=e, capture_output=True,
                       text=True)
    if p.returncode != 0:
        return None, f"cargo test --no-run failed: {p.stderr.strip()[-2000:]}"
    exes = [m["executable"] for m in map(json.loads, p.stdout.splitlines())
            if m.get("reason") == "compiler-artifact" and m.get("executable")
            and m.get("target", {}).get("name") == "inspect"]
    if len(exes) != 1:
        return None, f"cargo built {len(exes)} programs for the test inspect"
    # The filter cargo-test.sh gives; the program fails unless each passes.
    return [exes[0], "inspect_"], None


def plan_tests(cfg, build, work, guest_python):
    """The tests to run in the machine, their commands made for it."""
    tests = json.loads(subprocess.run(["meson", "introspect", "--tests", build], check=True,
                                      capture_output=True, text=True).stdout)
    arch = cfg["arch"]
    want = cfg["tests"].split()
    also = set(cfg.get("also", "").split())
    leave = set(cfg.get("leave", "").split())
    base_env = dict(v.split("=", 1) for v in cfg.get("env", "").split())
    mult = float(cfg.get("timeout_multiplier", "1"))
    # OTEL_VM_TESTS (test names, space-separated): only those of the plan.
    only = set(os.environ.get("OTEL_VM_TESTS", "").split())
    plan, left_out = [], []
    for t in tests:
        if only and t["name"] not in only:
            continue
        suites = [s.split(":", 1)[-1] for s in t["suite"]]
        cmd, env = list(t["cmd"]), dict(t["env"])
        needs_kernel = False
        # What skips under qemu-user because the build said so.
        for i in range(len(cmd) - 1):
            if cmd[i] == "--skip" and "qemu-user" in cmd[i + 1]:
                del cmd[i:i + 2]
                needs_kernel = True
                break
        if "--no-remote" in cmd:
            cmd.remove("--no-remote")
            needs_kernel = True
        if env.pop("OTEL_TEST_NO_PTRACE", None) is not None:
            needs_kernel = True
        # A test that skips with its real command after the reason
        # (tests/bpf/meson.build in a build for another CPU).
        if len(cmd) > 5 and cmd[1] == "-c" and "SystemExit(77)" in cmd[2] and cmd[4] == "--":
            cmd = cmd[5:]
            needs_kernel = True
        # What skips at run time under qemu-user (seccomp, process_vm_readv),
        # and the Check suites that run again here in fork mode.
        if t["name"] in also:
            needs_kernel = True
        # (A test named in OTEL_VM_TESTS runs though `leave` names it:
        # tools/run stress.)
        if t["name"] in leave and t["name"] not in only:
            continue
        if want == ["kernel"]:
            if not needs_kernel:
                continue
        elif not {s.split("+")[0] for s in suites} & set(want):
            continue
        # The exe_wrapper of the emulated build goes; the build machine's
        # python3 is replaced by the machine's.
        if os.path.basename(cmd[0]).startswith("qemu-"):
            cmd = cmd[cmd.index("-L") + 2:] if "-L" in cmd else cmd[1:]
        workdir = t["workdir"] or os.path.abspath(build)
        # The Rust binding's tests (ffi/rust/cargo-test.sh SKIP CRATE MODE):
        # the inspector's runs here, built beforehand; the others need no
        # kernel and pass under qemu-user, or are doctests, which rustdoc
        # cannot run for another CPU.
        if len(cmd) == 5 and cmd[1].endswith("cargo-test.sh"):
            if cmd[4] != "inspect":
                left_out.append((t["name"], f"cargo-test.sh {cmd[4]}: runs under qemu-user, "
                                 "or is a doctest, which rustdoc cannot run for another CPU"))
                continue
            crate = cmd[3]
            cmd, why = cargo_inspect_program(cmd, env)
            if cmd is None:
                left_out.append((t["name"], why))
                continue
            workdir = crate
        m = elf_machine(os.path.join(workdir, cmd[0]))
        if m != ELF_MACHINE[arch]:
            if "python" in os.path.basename(cmd[0]):
                cmd[0] = guest_python
            else:
                left_out.append((t["name"], f"{cmd[0]} is not a program of {arch}"))
                continue
        # and so does the wrapper in what the tests start themselves
        # (OTEL_TEST_PYTHON, ...).
        e = dict(base_env)
        e.update({k: re.sub(r"^\S*qemu-\S+ -L / ", "", v) for k, v in env.items()})
        plan.append({"name": f"{t['suite'][0]} / {t['name']}", "cmd": cmd, "env": e,
                     "workdir": workdir,
                     "timeout": (t["timeout"] or 30) * mult,
                     "is_parallel": t["is_parallel"]})
    for name, why in left_out:
        log(f"left out {name}: {why}")
    # OTEL_VM_REPEAT=N: each test N times in a row, alone, and the plan ends
    # at the first run that does not pass (tools/run stress): one boot for
    # all of them.
    repeat = int(os.environ.get("OTEL_VM_REPEAT", "") or "1")
    if repeat > 1:
        plan = [dict(t, is_parallel=False, run=k + 1, runs=repeat, stop_on_failure=True)
                for t in plan for k in range(repeat)]
    return plan


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    ini = configparser.ConfigParser()
    ini.read(argv[1])
    cfg = ini["vm"]
    name = os.path.splitext(os.path.basename(argv[1]))[0]
    work = os.getcwd()
    build = cfg["build"]
    arch = cfg["arch"]
    cache = f"build-vm-{arch}"
    if arch == "amd64":
        guest_python = "/usr/bin/python3"
    else:
        opts = json.loads(subprocess.run(["meson", "introspect", "--buildoptions", build],
                                         check=True, capture_output=True, text=True).stdout)
        guest_python = next(o["value"] for o in opts if o["name"] == "ffi_python")
        if not guest_python or elf_machine(guest_python) != ELF_MACHINE[arch]:
            log(f"{build} has no python3 of {arch} (-Dffi_python): its python tests cannot run")
    root, release = fetch(arch, cfg["kernel_package"], cache)
    setpriv = fetch_setpriv(arch, cache)
    os.makedirs(os.path.join(cache, "run"), exist_ok=True)
    plan = plan_tests(cfg, build, work, guest_python)
    plan_path = os.path.abspath(os.path.join(cache, "run", f"plan-{name}.json"))
    log_path = os.path.abspath(os.path.join(build, "meson-logs", f"testlog-{name}.json"))
    os.makedirs(os.path.dirname(log_path), exist_ok=True)
    with open(plan_path, "w", encoding="utf-8") as f:
        json.dump(plan, f, indent=1)
    if os.path.exists(log_path):
        os.unlink(log_path)
    rd = os.path.join(cache, "run", f"initramfs-{name}.gz")
    sampler = os.path.abspath(os.path.join(build, "tools", "sample", "otel-thread-ctx-sample"))
    initramfs(rd, root, release, {"VM_WORK": work, "VM_PLAN": plan_path, "VM_LOG": log_path,
                                  "VM_PYTHON": guest_python,
                                  "VM_FOREIGN": "" if elf_machine(sys.executable) ==
                                  ELF_MACHINE[arch] else "1",
                                  "VM_SAMPLER": sampler if os.path.exists(sampler) else "",
                                  "VM_SETPRIV": setpriv or ""})
    kernel = os.path.join(root, "boot", f"vmlinuz-{release}")
    qemu = shlex.split(cfg["qemu"]) + [
        "-display", "none", "-no-reboot", "-monitor", "none",
        "-chardev", "stdio,id=console,signal=off", "-serial", "chardev:console",
        "-kernel", kernel, "-initrd", rd,
        "-append", f"console={cfg['console']} quiet panic=-1 rdinit=/init {cfg.get('append', '')}",
        "-virtfs", "local,path=/,mount_tag=root,security_model=none,readonly=on,multidevs=remap",
        "-virtfs", f"local,path={work},mount_tag=work,security_model=none,multidevs=remap",
    ]
    log(f"{len(plan)} tests of {build} in {release} ({' '.join(shlex.split(cfg['qemu'])[:1])})")
    start = time.monotonic()
    status = None
    with subprocess.Popen(qemu, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT) as p:
        for raw in p.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            print(line, flush=True)
            if line.startswith("vm: status "):
                status = int(line.split()[2])
    log(f"the machine ran {time.monotonic() - start:.0f}s, qemu exit {p.returncode}")
    if status is None or status > 1:
        log("the machine did not run the plan to its end")
        return 2
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
