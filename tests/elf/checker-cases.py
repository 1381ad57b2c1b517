#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""otel-thread-ctx-check on small libraries built to show each problem.

Each case compiles a shared library (or executable) that defines or uses
otel_thread_ctx_v1 some way, and states the verdict and the status of the
checks that must come out: TLSDESC passes; legacy general-dynamic passes
with a warning; initial-exec in a shared library fails (and sets
DF_STATIC_TLS); a slot of the wrong size, binding or visibility fails; an
executable stack and text relocations fail; a library that only uses the
slot is 'imported'; one without it 'absent'.

usage: checker-cases.py ARCH WORKDIR [WRAPPER...] CHECKER -- CC...
"""
import json
import os
import shutil
import subprocess
import sys

SLOT_C = """
__thread void *otel_thread_ctx_v1;
void *get(void) { return otel_thread_ctx_v1; }
void set(void *p) { otel_thread_ctx_v1 = p; }
"""
USE_C = """
extern __thread void *otel_thread_ctx_v1;
void *peek(void) { return otel_thread_ctx_v1; }
"""
WRONG_C = """
__attribute__((visibility("protected"))) __thread void *otel_thread_ctx_v1[2];
void *get(void) { return otel_thread_ctx_v1[0]; }
"""
WEAK_C = """
__attribute__((weak)) __thread void *otel_thread_ctx_v1;
void *get(void) { return otel_thread_ctx_v1; }
"""
NONE_C = "int nothing(void) { return 0; }\n"
TEXTREL_C = SLOT_C + """
int counter;
__asm__(".text\\n.globl textrel_word\\ntextrel_word:\\n.quad counter\\n");
"""


# The slot reached only by the canonical TLSDESC sequence, written out so
# that any compiler builds it (clang 14 cannot emit TLSDESC on x86-64).
DESC_ASM = {
    "x86_64": r"""
__thread void *otel_thread_ctx_v1;
__asm__(".text\n.globl slot_address\n.type slot_address,@function\nslot_address:\n"
        "sub $8, %rsp\n"
        "lea otel_thread_ctx_v1@tlsdesc(%rip), %rax\n"
        "call *otel_thread_ctx_v1@tlscall(%rax)\n"
        "add %fs:0, %rax\n"
        "add $8, %rsp\n"
        "ret\n");
""",
    "aarch64": r"""
__thread void *otel_thread_ctx_v1;
__asm__(".text\n.globl slot_address\n.type slot_address,%function\nslot_address:\n"
        "stp x29, x30, [sp, #-16]!\n"
        "adrp x0, :tlsdesc:otel_thread_ctx_v1\n"
        "ldr x1, [x0, #:tlsdesc_lo12:otel_thread_ctx_v1]\n"
        "add x0, x0, #:tlsdesc_lo12:otel_thread_ctx_v1\n"
        ".tlsdesccall otel_thread_ctx_v1\n"
        "blr x1\n"
        "mrs x8, tpidr_el0\n"
        "add x0, x8, x0\n"
        "ldp x29, x30, [sp], #16\n"
        "ret\n");
""",
}


def cases(arch):
    desc_c = DESC_ASM[arch]
    # Legacy general-dynamic: the default dialect on x86-64, "trad" on aarch64.
    trad = [] if arch == "x86_64" else ["-mtls-dialect=trad"]
    return [
        # name, source, flags, verdict, {check id: status}, access models
        ("tlsdesc", desc_c, [], "pass", {"access-model": "ok"}, ["TLSDESC"]),
        ("general-dynamic", SLOT_C, trad, "pass", {"access-model": "warn"}, ["general-dynamic"]),
        # GNU ld 2.40 sets DF_STATIC_TLS for this on x86-64, not on aarch64.
        ("initial-exec", SLOT_C, ["-ftls-model=initial-exec"], "fail",
         {"access-model": "fail", **({"static-tls": "fail"} if arch == "x86_64" else {})},
         ["initial-exec"]),
        ("wrong-symbol", WRONG_C, [], "fail",
         {"size": "fail", "visibility": "fail", "type": "ok"}, None),
        ("weak", WEAK_C, [], "fail", {"binding": "fail"}, None),
        ("exec-stack", desc_c, ["-Wl,-z,execstack"], "fail", {"stack": "fail"}, ["TLSDESC"]),
        ("textrel", TEXTREL_C, ["-Wl,-z,notext"], "fail", {"textrel": "fail"}, None),
        ("imported", USE_C, [], "imported", {"import": "info"}, None),
        ("absent", NONE_C, [], "absent", {}, None),
    ]


def main(argv):
    if "--" not in argv or argv.index("--") < 4:
        print(__doc__, file=sys.stderr)
        return 2
    sep = argv.index("--")
    arch, work = argv[1:3]
    checker, cc = argv[3:sep], argv[sep + 1:]
    if not cc or not cc[0]:
        print("skip: no C compiler")
        return 77
    if os.path.isdir(work):
        shutil.rmtree(work)
    os.makedirs(work)
    failures = 0
    version = subprocess.run(cc + ["--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True).stdout
    for name, src, flags, verdict, checks, models in cases(arch):
        if "-mtls-dialect=trad" in flags and "clang" in version:
            # clang emits TLSDESC for every dynamic access on aarch64 and has
            # no option for the traditional dialect: the case needs gcc.
            print(f"skip {name}: clang has no traditional TLS dialect on aarch64")
            continue
        c = os.path.join(work, name + ".c")
        so = os.path.join(work, f"lib{name}.so")
        with open(c, "w") as f:
            f.write(src)
        p = subprocess.run(cc + ["-shared", "-fPIC", "-O2", "-Wl,-z,noexecstack", *flags, c, "-o", so],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if p.returncode != 0:
            print(f"FAIL {name}: cannot build: {p.stderr.strip()[:300]}")
            failures += 1
            continue
        r = subprocess.run(checker + ["--json", so], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        f = json.loads(r.stdout)["files"][0]
        got = {ch["id"]: ch["status"] for ch in f["checks"]}
        problems = []
        if f["verdict"] != verdict:
            problems.append(f"verdict {f['verdict']}, expected {verdict}")
        for cid, st in checks.items():
            if got.get(cid) != st:
                problems.append(f"check {cid}: {got.get(cid)}, expected {st}")
        if models is not None and f["access_models"] != models:
            problems.append(f"access models {f['access_models']}, expected {models}")
        if r.returncode != f["exit_code"]:
            problems.append(f"exit code {r.returncode} but JSON says {f['exit_code']}")
        print(f"{'ok  ' if not problems else 'FAIL'} {name}: {f['verdict']} (exit {r.returncode}) "
              f"{f['access_models']} " + "; ".join(problems))
        for ch in f["checks"]:
            if ch["status"] in ("warn", "fail"):
                print(f"       {ch['status']} {ch['id']}: {ch['message']}")
        failures += bool(problems)
    if failures:
        print(f"FAIL: {failures} cases")
        return 1
    shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
