#!/usr/bin/env python3
"""Deliberate bugs in the hot code, one at a time: is each caught by the suite?

    tools/mutate.py                 every mutant
    tools/mutate.py --list          the mutants, with what each breaks
    tools/mutate.py ID...           only these
    tools/mutate.py --workdir DIR   keep the copy and its builds in DIR
                                    (reused by the next run: much faster)

The script copies the tracked files of the source tree into a work
directory (the tree itself is never edited), configures a build there (gcc,
and, for the mutants only ThreadSanitizer sees, clang 19 with TSan), and
then, for each mutant: applies its one textual change, rebuilds, runs the
tests that should catch it, and puts the file back.  A mutant is *killed*
when one of those tests fails, *survived* when all pass, *stillborn* when
the change no longer applies or does not build (the set needs updating).
It prints one line per mutant and a summary; the exit status is 0 only if
every mutant was killed.  doc/testing.md, "Mutation check", says what the
set covers and how long it takes.
"""

import argparse
import dataclasses
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclasses.dataclass
class Mutant:
    ident: str
    area: str
    path: str
    old: str
    new: str
    tests: list
    why: str
    build: str = "gcc"
    nth: int = 0  # which occurrence of `old` (0: it must be unique)


# The storms and order checks run for seconds; the rest are quick.
STORM = ["signal-storm-static"]
API = ["api-static", "async-static", "refusals-static"]
READER = ["reader-static"]

MUTANTS = [
    # Publication order: a reader must never see a record before it is
    # complete, nor a record being edited.
    Mutant("order-span-id", "publication order", "src/thread_ctx.c",
           "\tmemcpy(edit(ctx, FIELD_SPAN, FIELD_SPAN)->span_id, span_id, 8);\n"
           "\tswap_records(ctx);\n\tif (t->ctx == ctx)\n\t\tpublish(t, ctx->shown);\n",
           "\tstruct otel_thread_ctx_record *d = edit(ctx, FIELD_SPAN, FIELD_SPAN);\n"
           "\tswap_records(ctx);\n\tif (t->ctx == ctx)\n\t\tpublish(t, ctx->shown);\n"
           "\tmemcpy(d->span_id, span_id, 8);\n",
           STORM, "update_span_id publishes the record, then writes the span id"),
    Mutant("order-update-all", "publication order", "src/thread_ctx.c",
           "\twrite_ids(ctx->draft, trace_id, span_id, trace_flags);\n\tswap_records(ctx);\n"
           "\tif (t->ctx == ctx)\n\t\tpublish(t, ctx->shown);\n",
           "\tswap_records(ctx);\n\tif (t->ctx == ctx)\n\t\tpublish(t, ctx->shown);\n"
           "\twrite_ids(ctx->pub, trace_id, span_id, trace_flags);\n",
           STORM, "update_all writes the ids into the record already published"),
    Mutant("order-edit-in-place", "publication order", "src/thread_ctx.c",
           "\tstruct otel_thread_ctx_record *d = ctx->draft;\n\tunsigned int edits = ctx->edits;\n\n"
           "\tif (!edits) {",
           "\tstruct otel_thread_ctx_record *d = ctx->pub;\n\tunsigned int edits = ctx->edits;\n\n"
           "\tif (!edits) {",
           STORM + ["api-static"], "edits go to the published record (no pointer swap)"),
    Mutant("order-update-attach", "publication order", "src/thread_ctx.c",
           "\tif (commit_first) {\n\t\tcommit(ctx);\n\t}",
           "\tif (commit_first) {\n\t\t(void)0;\n\t}",
           STORM, "update_attach publishes what was committed before, not the edits"),
    # Fences that the processor needs: only TSan sees them go.
    Mutant("fence-unhold", "fences", "src/thread_ctx.c",
           "__atomic_sub_fetch(&ctx->refs, 1, __ATOMIC_ACQ_REL)",
           "__atomic_sub_fetch(&ctx->refs, 1, __ATOMIC_RELAXED)",
           ["async-static"], "the last holder of a frozen context frees it without "
           "acquiring the other holders' last reads", build="tsan"),
    Mutant("fence-claim", "fences", "src/thread_ctx.c",
           "\t__atomic_store_n(&ctx->owner, 0, __ATOMIC_RELEASE);",
           "\t__atomic_store_n(&ctx->owner, 0, __ATOMIC_RELAXED);",
           ["attach-race", "thread-exit-static", "async-static", "api-static"],
           "giving a context back does not release its edits to "
           "the next owner", build="tsan"),
    # Bounds: readers stay inside the record, whatever it says.
    Mutant("bound-entry-key", "bounds", "src/reader.c",
           "if (at + 2 > size ||", "if (at + 1 > size ||",
           READER, "an entry cut after its key byte is read"),
    Mutant("bound-entry-value", "bounds", "src/reader.c",
           "at + 2 + rec->attrs_data[at + 1] > size)", "at + 2 + rec->attrs_data[at + 1] > size + 1)",
           READER, "a value one byte past the end is read"),
    Mutant("bound-copy-max", "bounds", "src/reader.c",
           "\tif (size > OTEL_THREAD_CTX_ATTRS_MAX)\n\t\tsize = OTEL_THREAD_CTX_ATTRS_MAX;\n"
           "\tif (size != 0)",
           "\tif (size != 0)",
           READER, "attrs_data_size over 612 is copied as is", nth=0),
    Mutant("bound-copy-avail", "bounds", "src/reader.c",
           "\tif (size > avail)\n\t\tsize = avail;\n", "\tif (size > avail + 1)\n\t\tsize = avail;\n",
           READER + ["record-static"], "a record decoded from a short buffer is read past it"),
    Mutant("bound-capacity", "bounds", "src/thread_ctx.c",
           "\t\tif (size + ENTRY_HEADER + len > capacity)",
           "\t\tif (size + ENTRY_HEADER + len > capacity + 1)",
           ["refusals-static"], "attributes one byte over the capacity are accepted"),
    # A refused call changes nothing.
    Mutant("refusal-copy-back", "refusal atomicity", "src/thread_ctx.c",
           "\t\t\tif (edits)\n\t\t\t\totel__copy_bytes(",
           "\t\t\tif (edits & 0x40000000u)\n\t\t\t\totel__copy_bytes(",
           ["refusals-static"], "a refused set_attrs leaves the draft half-written"),
    Mutant("refusal-stale", "refusal atomicity", "src/thread_ctx.c",
           "\t\t\telse\n\t\t\t\tctx->stale |= FIELD_ATTRS;\n", "\n",
           ["refusals-static"], "a refused set_attrs leaves its bytes in a draft said "
           "to be up to date"),
    Mutant("refusal-ids", "refusal atomicity", "src/thread_ctx.c",
           "\treturn no_trace == no_span && !(no_trace && trace_flags != 0);",
           "\treturn (no_trace == no_span || no_span) && !(no_trace && trace_flags != 0);",
           API, "a trace id without a span id (or the reverse) is accepted"),
    # The valid check.
    Mutant("valid-check", "valid", "src/reader.c",
           "if (out->valid != 1)", "if (out->valid == 0)",
           READER, "a record whose valid is 2 is read"),
    # No allocation and no lock where the header says so (the storm's
    # handler runs these with both forbidden).
    Mutant("alloc-span-id", "no allocation", "src/thread_ctx.c",
           "\tif (!span_fits(ctx, span_id))\n\t\treturn OTEL_THREAD_CTX_EIDS;\n"
           "\tmemcpy(edit(ctx, FIELD_SPAN, FIELD_SPAN)->span_id, span_id, 8);\n\tswap_records(ctx);",
           "\tif (!span_fits(ctx, span_id))\n\t\treturn OTEL_THREAD_CTX_EIDS;\n"
           "\t{ void *volatile scratch = malloc(16); free(scratch); }\n"
           "\tmemcpy(edit(ctx, FIELD_SPAN, FIELD_SPAN)->span_id, span_id, 8);\n\tswap_records(ctx);",
           STORM, "update_span_id allocates"),
    Mutant("lock-key-count", "no lock", "src/keys.c",
           "OTEL_EXPORT unsigned int otel_thread_ctx_key_count(void)\n{\n\treturn visible_count();\n}",
           "OTEL_EXPORT unsigned int otel_thread_ctx_key_count(void)\n{\n\tunsigned int n;\n\n"
           "\tpthread_mutex_lock(&lock);\n\tn = visible_count();\n\tpthread_mutex_unlock(&lock);\n"
           "\treturn n;\n}",
           STORM, "key_count takes the registry's lock"),
    # The library never aborts, exits or prints.
    Mutant("no-abort", "never aborts", "src/reader.c",
           "\tif (out == NULL)\n\t\treturn OTEL_THREAD_CTX_ENULL;\n\trec =",
           "\tif (out == NULL) {\n\t\textern void abort(void);\n\t\tabort();\n\t}\n\trec =",
           ["no-abort-exit-print-writer"], "otel_thread_ctx_read(NULL) aborts"),
    # Thread exit: unpublish first, then free.
    Mutant("exit-free-order", "free order at thread exit", "src/thread_ctx.c",
           "\tpublish(t, NULL);\n\tt->ctx = NULL;\n\tif (exiting && (ctx->flags & OTEL_THREAD_CTX_FREE_WITH_THREAD))\n"
           "\t\tfree(ctx);\n\telse\n\t\tlet_go(ctx, exiting);\n",
           "\tif (exiting && (ctx->flags & OTEL_THREAD_CTX_FREE_WITH_THREAD)) {\n\t\tfree(ctx);\n"
           "\t\tpublish(t, NULL);\n\t\tt->ctx = NULL;\n\t\treturn;\n\t}\n"
           "\tpublish(t, NULL);\n\tt->ctx = NULL;\n\tlet_go(ctx, exiting);\n",
           ["thread-exit-static"], "a context handed to its thread is freed while the "
           "slot still points into it"),
    Mutant("exit-no-detach", "free order at thread exit", "src/thread_ctx.c",
           "\tif (t->ctx != NULL)\n\t\tdetach_thread(t, true);\n\tfree_deferred();",
           "\tfree_deferred();",
           ["thread-exit-static"], "a thread that exits attached keeps its claim"),
    # Ownership.
    Mutant("own-claim", "ownership", "src/thread_ctx.c",
           "\tif (seen != 0 && live_token(seen))\n\t\treturn false;\n",
           "",
           ["api-static", "attach-race"], "two threads attach one context"),
    Mutant("own-frozen-ref", "ownership", "src/thread_ctx.c",
           "\t\t\t__atomic_add_fetch(&ctx->refs, 1, __ATOMIC_RELAXED);\n\t\telse if",
           "\t\t\t(void)0;\n\t\telse if",
           ["async-static"], "a thread attaches a frozen context without a reference"),
    Mutant("own-fork", "ownership", "src/thread_ctx.c",
           "\tif (t->ctx != NULL)\n\t\t__atomic_store_n(&t->ctx->owner, t->token, __ATOMIC_RELAXED);\n",
           "", ["fork-static"], "after fork the child's thread no longer owns what it attached"),
    # The TLSDESC access: the bytes linkers relax, the call's environment.
    Mutant("tlsdesc-bytes", "TLSDESC bytes", "arch/x86_64/tlsdesc.h",
           "\"lea\t\" sym \"@tlsdesc(%%rip), %%rax\\n\\t\"",
           "\"lea\t\" sym \"@tlsdesc(%%rip), %%rax\\n\\tnop\\n\\t\"",
           ["tlsdesc-golden"], "a byte between lea and call: no linker relaxes it"),
    Mutant("tlsdesc-vector", "TLSDESC bytes", "arch/x86_64/tlsdesc.h",
           ": \"cc\", \"xmm0\", \"xmm1\", \"xmm2\", \"xmm3\", \"xmm4\", \"xmm5\",",
           ": \"cc\",", ["vector-hostile-static-tls", "vector-hostile-dynamic-tls"],
           "the vector registers a dynamic-TLS resolver overwrites are not declared"),
]

CONFIGS = {
    "gcc": ["--native-file", "tools/configs/gcc.ini"],
    "tsan": ["--native-file", "tools/configs/tsan.ini"],
}


def run(cmd, cwd, timeout=None, log=None):
    proc = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=timeout, check=False)
    if log is not None:
        with open(log, "ab") as f:
            f.write(b"$ " + " ".join(cmd).encode() + b"\n" + proc.stdout)
    return proc.returncode


def copy_tree(dest):
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, stdout=subprocess.PIPE,
                           check=True).stdout.split(b"\0")
    for name in (f.decode() for f in files if f):
        src = os.path.join(ROOT, name)
        if not os.path.isfile(src):
            continue
        dst = os.path.join(dest, name)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        # Unchanged files keep their times: ninja rebuilds only what moved.
        if not os.path.exists(dst) or open(src, "rb").read() != open(dst, "rb").read():
            shutil.copy2(src, dst)


def apply(src_dir, m):
    path = os.path.join(src_dir, m.path)
    text = open(path, encoding="utf-8").read()
    count = text.count(m.old)
    if count == 0 or (m.nth == 0 and count != 1) or m.nth >= max(count, 1):
        return None
    at = -1
    for _ in range(m.nth + 1):
        at = text.index(m.old, at + 1)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text[:at] + m.new + text[at + len(m.old):])
    return text


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("ids", nargs="*", help="mutants to run (default: all)")
    ap.add_argument("--list", action="store_true", help="list the mutants and exit")
    ap.add_argument("--workdir", help="where the copy and its builds live (kept)")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per mutant's tests")
    args = ap.parse_args()

    if args.list:
        for m in MUTANTS:
            print(f"{m.ident:20} {m.area:26} {m.why}")
        return 0
    known = {m.ident: m for m in MUTANTS}
    unknown = [i for i in args.ids if i not in known]
    if unknown:
        print("mutate.py: unknown mutant(s): " + " ".join(unknown), file=sys.stderr)
        return 2
    chosen = [known[i] for i in args.ids] if args.ids else MUTANTS

    work = args.workdir or tempfile.mkdtemp(prefix="otel-mutate-")
    src = os.path.join(work, "src-tree")
    os.makedirs(src, exist_ok=True)
    copy_tree(src)
    log = os.path.join(work, "mutate.log")
    open(log, "w").close()
    print(f"work directory {work} (log: {log})", flush=True)

    builds = {}
    for name in sorted({m.build for m in chosen}):
        bdir = os.path.join(work, "build-" + name)
        if not os.path.exists(os.path.join(bdir, "build.ninja")):
            if run(["meson", "setup", bdir] + CONFIGS[name], src, log=log) != 0:
                print(f"mutate.py: cannot configure {name}; see {log}", file=sys.stderr)
                return 2
        if run(["ninja", "-C", bdir], src, log=log) != 0 or \
                run(["meson", "test", "-C", bdir, "--no-rebuild", "-q"] +
                    sorted({t for m in chosen if m.build == name for t in m.tests}),
                    src, timeout=args.timeout, log=log) != 0:
            print(f"mutate.py: the unmutated {name} build fails its tests; see {log}",
                  file=sys.stderr)
            return 2
        builds[name] = bdir

    results = {}
    for m in chosen:
        start = time.monotonic()
        original = apply(src, m)
        if original is None:
            verdict = "stillborn (the change no longer applies)"
        else:
            try:
                if run(["ninja", "-C", builds[m.build]], src, log=log) != 0:
                    verdict = "stillborn (does not build)"
                else:
                    try:
                        rc = run(["meson", "test", "-C", builds[m.build], "--no-rebuild",
                                  "-q"] + m.tests, src, timeout=args.timeout, log=log)
                        verdict = "killed" if rc != 0 else "SURVIVED"
                    except subprocess.TimeoutExpired:
                        verdict = "killed (timeout)"
            finally:
                with open(os.path.join(src, m.path), "w", encoding="utf-8") as f:
                    f.write(original)
        results[m.ident] = verdict
        print(f"{m.ident:20} {verdict:10} {time.monotonic() - start:6.0f} s  {m.why}",
              flush=True)

    # Leave the builds matching the unmutated tree.
    for bdir in builds.values():
        run(["ninja", "-C", bdir], src, log=log)
    killed = sum(v.startswith("killed") for v in results.values())
    print(f"{killed} of {len(results)} mutants killed")
    return 0 if killed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
