#!/usr/bin/env python3
"""Deliberate bugs in the hot code, one at a time: is each caught by the suite?

    tools/mutate.py                 every mutant
    tools/mutate.py --list          the mutants, what each breaks, what catches it
    tools/mutate.py ID...           only these
    tools/mutate.py --workdir DIR   keep the copy and its builds in DIR
                                    (reused by the next run: much faster)
    tools/mutate.py --build-only    only check that every mutant applies and
                                    its file compiles
    tools/mutate.py --without TEST  leave a test out (one that does not build
                                    yet, say); repeatable

The script copies the tracked files of the source tree into a work
directory (the tree itself is never edited), configures a build there (gcc,
and, for the mutants only ThreadSanitizer sees, clang 19 with TSan), builds
what the chosen mutants' tests need, and then, for each mutant: applies its
textual change, rebuilds, runs the tests that should catch it, and puts the
file back.  A mutant is *killed* when one of those tests fails, *survived*
when all pass, *stillborn* when the change no longer applies or does not
build (the set needs updating).  A mutant marked as possibly equivalent (a
compiler barrier no compiler needs today) whose file compiles to the same
memory accesses in the same order is *equivalent*, and its tests are not
run.  It prints one line per mutant and a summary; the exit status is 0 only
if every mutant was killed or equivalent.  doc/testing.md, "Mutation check",
says how to run it and what it reports.
"""

import argparse
import dataclasses
import json
import os
import re
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
    every: bool = False  # replace every occurrence of `old` (at least one)
    # More (old, new) changes to the same file, each unique, made with it.
    also: list = dataclasses.field(default_factory=list)
    env: dict = dataclasses.field(default_factory=dict)  # for its tests
    # A change no compiler may need today (a compiler barrier): when the
    # objects of `path` keep the same memory accesses in the same order,
    # the mutant is "equivalent", which is accepted; otherwise its tests
    # must kill it like any other.
    may_be_equivalent: bool = False


# Every instruction of every publication path, single-stepped (it skips
# where ptrace is refused).
STEP = ["step-static"]
# The storms run for seconds; the rest are quick.  The signal storm reads
# the slot in a handler on the writing thread, the eBPF storm from the
# kernel on every CPU (it skips where BPF is refused); the single-step
# harness reads it at every instruction.
STORM = ["signal-storm-static", "bpf-storm-static"] + STEP
API = ["api-static", "scopes-static", "refusals-static"]
READER = ["reader-static"]

TC = "src/thread_ctx.c"
POOL = "src/pool.c"
PC = "src/process_ctx.c"
DISCOVERY = "src/inspect/discovery.c"
THREADS = "src/inspect/threads.c"
RECORD_C = "src/format/record.c"
RECORD_H = "src/format/record.h"

MUTANTS = [
    # Publication order: a reader must never see a record before it is
    # complete, nor a record being written.
    Mutant("order-span-id", "publication order", TC,
           "\t\td = draft_for(t, FIELD_SPAN);\n\t\tmemcpy(d->span_id, span_id, 8);\n"
           "\t\tpublish_draft(t, d, FIELD_SPAN);\n",
           "\t\td = draft_for(t, FIELD_SPAN);\n\t\tpublish_draft(t, d, FIELD_SPAN);\n"
           "\t\tmemcpy(d->span_id, span_id, 8);\n",
           STORM, "update_span_id stores the slot, then writes the span id"),
    Mutant("order-update-all", "publication order", TC,
           "\twrite_ids(d, trace_id, span_id, trace_flags);\n\tpublish_draft(t, d, FIELD_ALL);\n",
           "\tpublish_draft(t, d, FIELD_ALL);\n\twrite_ids(d, trace_id, span_id, trace_flags);\n",
           STORM, "update_all stores the slot, then writes the ids"),
    Mutant("order-roles", "publication order", TC,
           "\tpublish(t, d);\n\tt->pub = d;\n\tt->stale = changed;\n",
           "\tpublish(t, d);\n\tt->stale = changed;\n",
           ["api-static", "scopes-static", "load-startup", "attach-shared"],
           "the draft and the published record do not swap roles: the next publication "
           "writes the record readers see"),
    Mutant("order-slot-in-context", "publication order", TC,
           "\tpublish_draft(t, d, FIELD_ALL);\n\tshow_unclaim(t, shown);\n",
           "\tpublish(t, crec_of(ctx));\n\tshow_unclaim(t, shown);\n",
           ["attach-shared", "shared-static", "api-static"],
           "attach publishes the context's own record, not a copy in the thread's draft"),
    # Fences.  The signal fences keep the compiler from moving record
    # stores across the slot store; gcc 12 and clang 14 and 19 emit the
    # same memory accesses without them today, which the equivalence check
    # shows.  The pool's memory orders are for other threads: only
    # ThreadSanitizer sees them go.
    Mutant("fence-before-slot", "fences", TC,
           "\t/* The record is complete before the slot can lead to it ... */\n"
           "\t__atomic_signal_fence(__ATOMIC_SEQ_CST);\n",
           "\t/* The record is complete before the slot can lead to it ... */\n",
           STORM, "no compiler barrier between the record's stores and the slot store",
           may_be_equivalent=True),
    Mutant("fence-after-slot", "fences", TC,
           "\t * unreachable. */\n\t__atomic_signal_fence(__ATOMIC_SEQ_CST);\n",
           "\t * unreachable. */\n",
           STORM, "no compiler barrier between the slot store and the next writes",
           may_be_equivalent=True),
    Mutant("fence-pool-give", "fences", POOL,
           "\t} while (!__atomic_compare_exchange_n(&free_head, &head, want, true, __ATOMIC_RELEASE,\n",
           "\t} while (!__atomic_compare_exchange_n(&free_head, &head, want, true, __ATOMIC_RELAXED,\n",
           ["pool-race"], "a pair goes back to the pool without releasing what its "
           "holder wrote in it", build="tsan"),
    Mutant("fence-pool-take", "fences", POOL,
           "\tuint64_t head = __atomic_load_n(&free_head, __ATOMIC_ACQUIRE), want;\n",
           "\tuint64_t head = __atomic_load_n(&free_head, __ATOMIC_RELAXED), want;\n",
           ["pool-race"], "a pair is taken from the pool without acquiring what its "
           "last holder wrote in it (the load of the head, and the compare-and-swap)",
           build="tsan", also=[("\t} while (!__atomic_compare_exchange_n(&free_head, &head, want, "
                                "true, __ATOMIC_ACQUIRE,\n\t\t\t\t\t      __ATOMIC_ACQUIRE));\n",
                                "\t} while (!__atomic_compare_exchange_n(&free_head, &head, want, "
                                "true, __ATOMIC_RELAXED,\n\t\t\t\t\t      __ATOMIC_RELAXED));\n")]),
    # What the draft holds: the fast paths copy only the fields marked
    # stale, so every publication must mark what it changed.
    Mutant("stale-trace", "stale fields", TC,
           "\tif (need & FIELD_TRACE)\n\t\tmemcpy(d->trace_id, p->trace_id, sizeof(d->trace_id));\n",
           "",
           ["api-static", "model-static", "load-startup", "mn-signal", "bpf-storm-static"],
           "update_span_id does not copy a stale trace id into the draft"),
    Mutant("stale-span-mark", "stale fields", TC,
           "\tpublish_draft(t, d, FIELD_SPAN);\n", "\tpublish_draft(t, d, 0);\n",
           ["api-static", "model-static", "load-startup"],
           "update_span_id leaves the draft's old span id marked up to date"),
    Mutant("stale-attach-mark", "stale fields", TC,
           "\tpublish_draft(t, d, FIELD_ALL);\n\tshow_unclaim(t, shown);\n",
           "\tpublish_draft(t, d, 0);\n\tshow_unclaim(t, shown);\n",
           ["api-static", "model-static", "mn-signal"],
           "attach leaves the draft (the record it replaced) marked up to date"),
    # A refused call changes nothing, the draft's bookkeeping included.
    Mutant("refusal-update-all-stale", "refusal atomicity", TC,
           "\tif (size < 0) {\n\t\tt->stale |= FIELD_ATTRS;\n\t\tunclaim(t);\n",
           "\tif (size < 0) {\n\t\tunclaim(t);\n",
           ["refusals-static", "load-startup"],
           "a refused update_all leaves the attributes it wrote in a draft marked up to date"),
    Mutant("refusal-saved-small", "refusal atomicity", TC,
           "\tif (saved != NULL) {\n\t\terr = check_saved(t, saved);\n\t\tif (err) {\n"
           "\t\t\tunclaim(t);\n\t\t\treturn err;\n\t\t}\n\t}\n\tif (ctx->none) {\n",
           "\terr = saved != NULL ? check_saved(t, saved) : 0;\n\tif (ctx->none) {\n",
           ["refusals-static", "scopes-static", "interpose-exe"],
           "attach with a saved too small refuses, but publishes the context all the same",
           also=[("\tpublish_draft(t, d, FIELD_ALL);\n\tshow_unclaim(t, shown);\n\treturn OTEL_THREAD_CTX_OK;\n",
                  "\tpublish_draft(t, d, FIELD_ALL);\n\tshow_unclaim(t, shown);\n\treturn err;\n"),
                 ("\tif (saved != NULL)\n\t\tsave(t, saved);\n\tpublish_draft(t, d, FIELD_ALL);\n",
                  "\tif (saved != NULL && !err)\n\t\tsave(t, saved);\n\tpublish_draft(t, d, FIELD_ALL);\n")]),
    Mutant("refusal-set-attrs", "refusal atomicity", TC,
           "\tsize = attrs_encode(NULL, ctx->capacity, attrs, n, false);\n\tif (size < 0)\n\t\treturn size;\n"
           "\tattrs_encode(rec_of(ctx)->attrs_data, ctx->capacity, attrs, n, false);\n",
           "\tsize = attrs_encode(rec_of(ctx)->attrs_data, ctx->capacity, attrs, n, false);\n"
           "\tif (size < 0)\n\t\treturn size;\n",
           ["refusals-static", "api-static"],
           "a refused set_attrs leaves the context's attributes half-written"),
    Mutant("refusal-ids", "refusal atomicity", TC,
           "\treturn no_trace == no_span && !(no_trace && trace_flags != 0);",
           "\treturn (no_trace == no_span || no_span) && !(no_trace && trace_flags != 0);",
           ["api-static", "refusals-static"],
           "a trace id without a span id (or the reverse) is accepted"),
    Mutant("bound-capacity", "bounds", TC,
           "\t\tif (next > capacity)",
           "\t\tif (next > capacity + 1)",
           ["refusals-static"], "attributes one byte over the capacity are accepted"),
    # The check of a running process (tools/check-pid.c) finds each broken rule.
    Mutant("doctor-keys-unjudged", "doctor", "tools/check-pid.c",
           "\t\tif (judge_keys && key >= s->key_count)\n",
           "\t\tif (0 && judge_keys && key >= s->key_count)\n",
           ["inspect-doctor"], "an attribute key index outside the key map is not reported"),
    Mutant("doctor-payload-bound", "doctor", "tools/check-pid.c",
           "\tif (h->payload_size > OTEL_THREAD_CTX_PROCESS_PAYLOAD_MAX) {\n",
           "\tif (h->payload_size > 2 * OTEL_THREAD_CTX_PROCESS_PAYLOAD_MAX) {\n",
           ["inspect-doctor"], "a process-context payload over 65,536 bytes is not named as "
           "such"),
    Mutant("doctor-unexported-missed", "doctor", "tools/check-pid.c",
           "\tif (r->has_slot && r->slot.shndx != OTEL__SHN_UNDEF && !r->slot_in_dynsym) {\n",
           "\tif (0 && r->has_slot && r->slot.shndx != OTEL__SHN_UNDEF && !r->slot_in_dynsym) {\n",
           ["inspect-doctor"], "a slot defined but not exported is reported as no slot"),
    Mutant("doctor-misnamed-accepted", "doctor", "tools/check-pid.c",
           "\tif (!accepted_name(l->name)) {\n", "\tif (0 && !accepted_name(l->name)) {\n",
           ["inspect-doctor"], "a process context under a name readers do not look for is "
           "taken as theirs"),
    # A value of 8 to 16 bytes is copied and checked as two words.
    Mutant("copy-short-tail-unchecked", "utf8", "src/format/utf8.h",
           "\t\tacc = w | v;\n", "\t\tacc = w;\n",
           ["record-static"],
           "a value of 9 to 16 bytes whose bytes past the eighth are not ASCII is stored "
           "unchecked"),
    Mutant("copy-short-tail-dropped", "utf8", "src/format/utf8.h",
           "\t\tmemcpy(dst + n - 8, &v, sizeof(v));\n", "",
           ["record-static"],
           "the last bytes of a value of 9 to 16 bytes are not copied"),
    # Bounds: readers stay inside the record, whatever it says.
    Mutant("bound-entry-key", "bounds", RECORD_C,
           "if (at + 2 > size ||", "if (at + 1 > size ||",
           READER, "an entry cut after its key byte is read"),
    Mutant("bound-entry-value", "bounds", RECORD_C,
           "at + 2 + rec->attrs_data[at + 1] > size)", "at + 2 + rec->attrs_data[at + 1] > size + 1)",
           READER, "a value one byte past the end is read"),
    Mutant("bound-copy-max", "bounds", RECORD_H,
           "\tif (size > OTEL_THREAD_CTX_ATTRS_MAX)\n\t\tsize = OTEL_THREAD_CTX_ATTRS_MAX;\n"
           "\tif (size != 0)",
           "\tif (size != 0)",
           READER, "attrs_data_size over 612 is copied as is", nth=0),
    Mutant("bound-copy-avail", "bounds", RECORD_H,
           "\tif (size > avail)\n\t\tsize = avail;\n", "\tif (size > avail + 1)\n\t\tsize = avail;\n",
           READER + ["record-static"], "a record decoded from a short buffer is read past it"),
    # The valid check.
    Mutant("valid-check", "valid", RECORD_H,
           "if (out->valid != 1)", "if (out->valid == 0)",
           READER, "a record whose valid is 2 is read"),
    # No allocation and no lock where the header says so (the signal
    # storm's handler runs these with both forbidden).
    Mutant("alloc-span-id", "no allocation", TC,
           "\tif (__builtin_expect(t->shown == (SHOWN | TRACED), 1)) {\n"
           "\t\td = draft_for(t, FIELD_SPAN);\n",
           "\tif (__builtin_expect(t->shown == (SHOWN | TRACED), 1)) {\n"
           "\t\t{ void *volatile scratch = malloc(16); free(scratch); }\n"
           "\t\td = draft_for(t, FIELD_SPAN);\n",
           ["load-startup"], "update_span_id allocates"),
    Mutant("lock-key-count", "no lock", "src/keys.c",
           "OTEL_EXPORT unsigned int otel_thread_ctx_key_count(void)\n{\n\treturn visible_count();\n}",
           "OTEL_EXPORT unsigned int otel_thread_ctx_key_count(void)\n{\n\tunsigned int n;\n\n"
           "\tpthread_mutex_lock(&lock);\n\tn = visible_count();\n\tpthread_mutex_unlock(&lock);\n"
           "\treturn n;\n}",
           ["signal-storm-static"], "key_count takes the registry's lock"),
    # The library never aborts, exits or prints.
    Mutant("no-abort", "never aborts", "src/reader.c",
           "\tif (out == NULL)\n\t\treturn OTEL_THREAD_CTX_ENULL;\n#ifdef OTEL__NOOP\n",
           "\tif (out == NULL) {\n\t\textern void abort(void);\n\t\tabort();\n\t}\n#ifdef OTEL__NOOP\n",
           ["no-abort-exit-print-writer"], "otel_thread_ctx_read(NULL) aborts"),
    # Thread exit: the slot NULL first, then the records back to the pool.
    Mutant("exit-give-first", "thread exit", TC,
           "\t\tpublish(t, NULL);\n\t\tt->shown = 0;\n\t\tfirst = t->pub < draft_of(t) ? t->pub : draft_of(t);\n"
           "\t\tt->pub = NULL;\n\t\tt->flip = 0;\n\t\totel__pool_give((struct otel__pair *)(void *)first);\n",
           "\t\tfirst = t->pub < draft_of(t) ? t->pub : draft_of(t);\n"
           "\t\totel__pool_give((struct otel__pair *)(void *)first);\n\t\tpublish(t, NULL);\n"
           "\t\tt->shown = 0;\n\t\tt->pub = NULL;\n\t\tt->flip = 0;\n",
           ["exit-order", "thread-exit-static"],
           "an exiting thread gives its records back while its slot still leads to one"),
    Mutant("exit-no-unpublish", "thread exit", TC,
           "\t\tpublish(t, NULL);\n\t\tt->shown = 0;\n\t\tfirst = t->pub < draft_of(t) ? t->pub : draft_of(t);\n",
           "\t\tt->shown = 0;\n\t\tfirst = t->pub < draft_of(t) ? t->pub : draft_of(t);\n",
           ["exit-order", "thread-exit-static", "load-startup", "interpose-exe"],
           "an exiting thread gives its records back and leaves its slot leading to one"),
    Mutant("exit-republish", "thread exit", TC,
           "\tif (t->hooked == EXITED)\n\t\treturn OTEL_THREAD_CTX_ETHREAD;\n", "",
           ["thread-exit-static", "exit-order"],
           "a destructor that publishes after the exit cleanup takes records again, which "
           "the C library's last round of destructors never gives back"),
    # A signal handler that publishes on the thread it interrupted: refused
    # inside a publishing call, whole outside one.
    Mutant("nested-no-claim", "signal handlers", TC,
           "\tif (__builtin_expect(t->busy != 0, 0))\n\t\treturn false;\n", "",
           ["step-inject-static", "signal-storm-static", "abi-errors"],
           "a handler's publication is not refused inside the call it interrupted: the "
           "interrupted call goes on writing the record the handler published"),
    Mutant("nested-unclaim-early", "signal handlers", TC,
           "\tpublish_draft(t, d, FIELD_ALL);\n\tshow_unclaim(t, shown);\n",
           "\tunclaim(t);\n\tpublish_draft(t, d, FIELD_ALL);\n\tt->shown = (uint8_t)shown;\n",
           ["step-inject-static", "signal-storm-static"],
           "attach gives its claim back before it publishes"),
    Mutant("nested-save-unclaimed", "signal handlers", TC,
           "\tif (!claim(t))\n\t\treturn OTEL_THREAD_CTX_ENESTED;\n\terr = check_saved(t, saved);\n"
           "\tif (err == OTEL_THREAD_CTX_OK)\n\t\tsave(t, saved);\n\tunclaim(t);\n",
           "\terr = check_saved(t, saved);\n\tif (err == OTEL_THREAD_CTX_OK)\n\t\tsave(t, saved);\n",
           ["step-inject-static", "signal-storm-static"],
           "save() in a handler reads the thread's state while the call it interrupted "
           "changes it (the new record with the old \"traced\" bit)"),
    # The pool: a failure takes nothing, and the counter never wraps.
    Mutant("pool-index-on-failure", "pool", POOL,
           "\t\tslab = slab_for(index);\n\t\tif (slab == NULL)\n\t\t\treturn OTEL_THREAD_CTX_ENOMEM;\n",
           "\t\tslab = slab_for(index);\n\t\tif (slab == NULL) {\n"
           "\t\t\t__atomic_fetch_add(&fresh, 1, __ATOMIC_RELAXED);\n"
           "\t\t\treturn OTEL_THREAD_CTX_ENOMEM;\n\t\t}\n",
           ["pool-shortage"], "a first publication that cannot map memory uses up a pool index"),
    Mutant("pool-counter-wraps", "pool", POOL,
           "\t\tif (index >= MAX_PAIRS)\n\t\t\treturn OTEL_THREAD_CTX_EFULL;\n",
           "\t\tif (index >= MAX_PAIRS) {\n\t\t\t__atomic_fetch_add(&fresh, 1, __ATOMIC_RELAXED);\n"
           "\t\t\treturn OTEL_THREAD_CTX_EFULL;\n\t\t}\n",
           ["pool-full"], "every take from a full pool counts on, and the counter wraps onto "
           "pairs that threads hold",
           also=[("\t__atomic_store_n(&fresh, index < MAX_PAIRS ? index : MAX_PAIRS, __ATOMIC_RELAXED);\n",
                  "\t__atomic_store_n(&fresh, index, __ATOMIC_RELAXED);\n")]),
    # fork(): the child's only thread keeps its records, the others' go back.
    Mutant("fork-own-pair", "fork", POOL,
           "\t\t\tif (owner != NULL && owner != self)\n",
           "\t\t\tif (owner != NULL && (owner != self || self != NULL))\n",
           ["pool-fork", "fork-static"],
           "the child gives back the records of the thread that forked, which it publishes"),
    Mutant("fork-no-reclaim", "fork", TC,
           "\totel__pool_reclaim_after_fork(otel__thread_self());\n", "",
           ["fork-static"], "the child keeps the records of the parent's other threads"),
    # The pool.
    Mutant("pool-aba", "pool", POOL,
           "((head >> 32) + 1) << 32", "(head >> 32) << 32",
           ["pool-race"], "the free list's head does not count its changes: a stale "
           "compare-and-swap hands one pair to two threads (ABA)", every=True,
           env={"OTEL_TEST_POOL_SECONDS": "10"}),
    Mutant("pool-valid", "pool", POOL,
           "\tp->rec[0].valid = 1;\n\tp->rec[1].valid = 1;\n", "",
           ["pool-race", "load-startup", "record-static"],
           "records taken from a new slab are published with valid 0"),
    # The TLSDESC access: the bytes linkers relax, the call's environment.
    Mutant("tlsdesc-bytes", "TLSDESC bytes", "arch/x86_64/tlsdesc.h",
           "\"lea\t\" sym \"@tlsdesc(%%rip), %%rax\\n\\t\"",
           "\"lea\t\" sym \"@tlsdesc(%%rip), %%rax\\n\\tnop\\n\\t\"",
           ["tlsdesc-golden"], "a byte between lea and call: no linker relaxes it"),
    Mutant("tlsdesc-vector", "TLSDESC bytes", "arch/x86_64/tlsdesc.h",
           ": \"cc\", \"xmm0\", \"xmm1\", \"xmm2\", \"xmm3\", \"xmm4\", \"xmm5\",",
           ": \"cc\",", ["vector-hostile-static-tls", "vector-hostile-dynamic-tls"],
           "the vector registers a dynamic-TLS resolver overwrites are not declared"),
    # Thread exit, at every instruction of the cleanup.
    Mutant("exit-slot-kept", "thread exit", TC,
           "\t\tpublish(t, NULL);\n\t\tt->shown = 0;\n\t\tfirst = t->pub < draft_of(t)",
           "\t\tt->shown = 0;\n\t\tfirst = t->pub < draft_of(t)",
           STEP, "an exiting thread gives its records back and leaves its slot leading to one"),
    # The process context's update protocol, read at every instruction by
    # the single-step harness (a reader that follows the protocol must
    # never accept a torn copy).
    Mutant("process-torn-update", "process context", PC,
           "\t__atomic_store_n(&h->monotonic_published_at_ns, 0, __ATOMIC_RELAXED);\n"
           "\t__atomic_thread_fence(__ATOMIC_SEQ_CST);\n"
           "\t__atomic_store_n(&h->payload, (uint64_t)(uintptr_t)buf, __ATOMIC_RELAXED);\n"
           "\t__atomic_store_n(&h->payload_size, len, __ATOMIC_RELAXED);\n",
           "\t__atomic_store_n(&h->payload, (uint64_t)(uintptr_t)buf, __ATOMIC_RELAXED);\n"
           "\t__atomic_store_n(&h->payload_size, len, __ATOMIC_RELAXED);\n"
           "\t__atomic_store_n(&h->monotonic_published_at_ns, 0, __ATOMIC_RELAXED);\n"
           "\t__atomic_thread_fence(__ATOMIC_SEQ_CST);\n",
           STEP, "an update stores the new payload pointer and size before it zeroes the "
           "timestamp: a reader accepts a torn copy"),
    Mutant("process-publish-early", "process context", PC,
           "\t__atomic_store_n(&h->payload_size, len, __ATOMIC_RELAXED);\n"
           "\t__atomic_store_n(&h->payload, (uint64_t)(uintptr_t)buf, __ATOMIC_RELAXED);\n"
           "\t__atomic_thread_fence(__ATOMIC_SEQ_CST);\n"
           "\t__atomic_store_n(&h->monotonic_published_at_ns, next_published_at(), "
           "__ATOMIC_RELAXED);\n",
           "\t__atomic_store_n(&h->monotonic_published_at_ns, next_published_at(), "
           "__ATOMIC_RELAXED);\n"
           "\t__atomic_store_n(&h->payload_size, len, __ATOMIC_RELAXED);\n"
           "\t__atomic_store_n(&h->payload, (uint64_t)(uintptr_t)buf, __ATOMIC_RELAXED);\n"
           "\t__atomic_thread_fence(__ATOMIC_SEQ_CST);\n",
           STEP, "a first publication stores the timestamp before the payload: a reader "
           "accepts an empty header"),
    # The key registry under concurrency: the count follows the published
    # key map, and a refused name leaves nothing behind.
    Mutant("keys-count-early", "key registry", "src/keys.c",
           "\terr = change_hook != NULL ? change_hook(n + 1) : OTEL_THREAD_CTX_OK;\n"
           "\tif (err == OTEL_THREAD_CTX_OK)\n\t\t__atomic_store_n(&count, n + 1, __ATOMIC_RELEASE);\n",
           "\t__atomic_store_n(&count, n + 1, __ATOMIC_RELEASE);\n"
           "\terr = change_hook != NULL ? change_hook(n + 1) : OTEL_THREAD_CTX_OK;\n"
           "\tif (err != OTEL_THREAD_CTX_OK)\n\t\t__atomic_store_n(&count, n, __ATOMIC_RELEASE);\n",
           ["keys-concurrent-static"], "a new key is counted before the key map that names "
           "it is published (and uncounted when that fails)"),
    Mutant("keys-refused-stays", "key registry", "src/keys.c",
           "\tif (err == OTEL_THREAD_CTX_OK)\n\t\t__atomic_store_n(&count, n + 1, __ATOMIC_RELEASE);\n",
           "\t__atomic_store_n(&count, n + 1, __ATOMIC_RELEASE);\n",
           ["keys-concurrent-static"], "a key refused for the payload's bound stays registered"),
    # The Python binding frees every context, whatever the threads that
    # published it did.
    Mutant("py-del-leaks", "binding cleanup", "ffi/python/otel_thread_ctx/__init__.py",
           "        try:\n            self.destroy()\n        except Exception:",
           "        try:\n            pass\n        except Exception:",
           ["ffi-python-unittest"], "a Context collected by Python does not free its C context"),
    Mutant("py-scopes-shared", "binding cleanup", "ffi/python/otel_thread_ctx/__init__.py",
           "_thread = threading.local()\n", "_thread = type(\"_Shared\", (), {})()\n",
           ["ffi-python-unittest"], "the `with` scopes and spares of a thread outlive it "
           "(kept in one object for all threads)"),
    Mutant("rust-guard-leaks", "binding cleanup", "ffi/rust/src/lib.rs",
           "        let _ = self.saved.update();\n        // SAFETY: dropped once, here.\n"
           "        unsafe { ManuallyDrop::drop(&mut self.saved) };\n",
           "        let _ = self.saved.update();\n",
           ["rust-cargo-test"], "a guard that ends (a thread's end included) does not "
           "free the context it saved"),
    # The compat reader: a C string cannot hold a value with a NUL inside.
    Mutant("compat-nul", "compat reader", "src/compat/compat.c",
           "\tif (memchr(a->string, '\\0', a->length) != NULL) {\n",
           "\tif (0 && memchr(a->string, '\\0', a->length) != NULL) {\n",
           ["compat-nul-static"], "otel_process_ctx_read() returns a value with a NUL "
           "inside, cut at the NUL, as if it were the whole value"),
    # The fast paths check the record the thread publishes at that moment.
    Mutant("fast-flags-draft", "fast-path checks", TC,
           "\t} else if (trace_flags != 0 && !(shown & TRACED)) {\n",
           "\t} else if (trace_flags != 0 && all_zero(((struct otel_thread_ctx_record *)\n"
           "\t\t(void *)((uintptr_t)t->pub ^ t->flip))->trace_id, 16)) {\n",
           ["fast-path-checks-static"], "update_trace_flags checks the ids of the draft "
           "(the record published before), not of the record published"),
    Mutant("fast-span-draft", "fast-path checks", TC,
           "\tif (__builtin_expect(t->shown == (SHOWN | TRACED), 1)) {\n",
           "\tif (t->shown && !all_zero(((struct otel_thread_ctx_record *)(void *)"
           "((uintptr_t)t->pub ^ t->flip))->trace_id, 16)) {\n",
           ["fast-path-checks-static"], "update_span_id checks the ids of the draft "
           "(the record published before), not of the record published"),
    # The sampler's profile (tools/sample/): the known-answer workload
    # (bpf-profile) catches groups, files and names that are wrong.
    Mutant("profile-merge", "sampler profile", "tools/sample/profile.c",
           "\t\t\tg[m - 1].count += g[i].count;\n", "",
           ["bpf-profile"], "the entries of one group (one per span and stack) are not "
           "added up: a group counts only its first entry's samples"),
    Mutant("profile-no-context", "sampler profile", "tools/sample/profile.c",
           "\tdefault:\n\t\te.kind = PROFILE_NO_CONTEXT;\n",
           "\tdefault:\n\t\te.kind = PROFILE_CONTEXT;\n",
           ["bpf-profile"], "samples without a record join the groups with a context "
           "(of an all-zero trace and no attributes)"),
    Mutant("pprof-cpu-value", "sampler profile", "tools/sample/profile.c",
           "\tpb_varint(&w->packed, e->count * period_ns);\n",
           "\tpb_varint(&w->packed, e->count * (period_ns / 2));\n",
           ["bpf-profile"], "the pprof cpu/nanoseconds value is half a period per sample"),
    Mutant("pprof-span-label", "sampler profile", "tools/sample/profile.c",
           "\t\tpp_label(w, \"span_id\", hex, 16, 0);\n", "",
           ["bpf-profile"], "pprof samples lose their span_id label"),
    Mutant("folded-root", "sampler profile", "tools/sample/profile.c",
           "\tfor (size_t k = 0; k < p->nkeys && e->kind == PROFILE_CONTEXT; k++) {\n",
           "\tfor (size_t k = 0; k < p->nkeys && 0 && e->kind == PROFILE_CONTEXT; k++) {\n",
           ["bpf-profile"], "folded stacks and the flame graph lose the groups as root frames"),
    Mutant("symbolize-dynsym", "sampler profile", "tools/sample/symbolize.c",
           "\t\ttable = OTEL__ELF_SYMTAB;\n", "\t\ttable = OTEL__ELF_DYNSYM;\n",
           ["bpf-profile"], "stacks are named from .dynsym even when the file has a .symtab: "
           "an executable's own functions go unnamed"),
    # pprof itself (go tool pprof) reads the profiles of bpf-profile.
    Mutant("pprof-no-stack-frame", "sampler profile", "tools/sample/profile.c",
           "\tif (n == 0) {\n\t\tids[0] = e->stacked", "\tif (0) {\n\t\tids[0] = e->stacked",
           ["bpf-profile"], "pprof samples without --stacks have no location: pprof leaves "
           "them out (-top accounts for 0 %)"),
    Mutant("pprof-no-mapping", "sampler profile", "tools/sample/profile.c",
           "\tpb_uint(&w->msg, 2, mid);\n", "\tpb_uint(&w->msg, 2, mid * 0);\n",
           ["bpf-profile"], "pprof locations name no mapping: pprof warns \"Main binary "
           "filename not available.\""),
    Mutant("pprof-has-functions-off", "sampler profile", "tools/sample/symbolize.c",
           "\tout->has_functions = 1;\n", "\tout->has_functions = 0;\n",
           ["bpf-profile"], "pprof mappings do not say their names are final: pprof "
           "symbolizes the files again"),
    # The .NET cell's sampler checks (ffi/dotnet/run.py): NativeAOT methods
    # named from the .dbg file, JIT methods from the perf map.
    Mutant("symbolize-no-debuglink", "sampler profile", "tools/sample/symbolize.c",
           "\t\td = open_debug(cand, NULL, crc);\n",
           "\t\td = k > 3 ? open_debug(cand, NULL, crc) : NULL;\n",
           ["dotnet-aot-bfd-static"], "a stripped executable's .gnu_debuglink is not followed: "
           "NativeAOT methods are App+0x...", env={"OTEL_DOTNET_CELLS": "bfd-pie"}),
    Mutant("symbolize-no-perf-map", "sampler profile", "tools/sample/symbolize.c",
           "\tFILE *f = open_perf_map(pid);\n",
           "\tFILE *f = pid < 0 ? open_perf_map(pid) : NULL;\n",
           ["dotnet-aot-bfd-static"], "the perf map is not read: JIT methods are "
           "memfd:doublemapper+0x...", env={"OTEL_DOTNET_CELLS": "bfd-pie"}),
    Mutant("stack-leaf-order", "sampler profile", "tools/sample/profile.c",
           "\tfor (uint32_t i = e->nips; i-- > 0;) {\n",
           "\tfor (uint32_t i = 0; i < e->nips; i++) {\n",
           ["bpf-profile"], "folded stacks start at the leaf instead of the outermost frame"),
    # The pprof decoder of bpf-profile (tests/bpf/profile.py) is strict;
    # its self-test (bpf-profile-decoder) catches a check gone.
    Mutant("pprof-decode-wire-type", "sampler profile", "tests/bpf/profile.py",
           "        elif wire == 2 and (kind not in VARINTS or repeated):\n",
           "        elif wire == 2:\n",
           ["bpf-profile-decoder"], "the test's pprof decoder takes a singular number "
           "with wire type 2 (length-delimited) as a packed list"),
    Mutant("pprof-decode-length", "sampler profile", "tests/bpf/profile.py",
           "            if n > end - pos:\n", "            if n > len(data) - pos:\n",
           ["bpf-profile-decoder"], "the test's pprof decoder lets a length run past the "
           "end of its message into the bytes after it"),
    # The inspector finds modules as the loader placed them.
    Mutant("modules-first-offset-0", "module discovery", DISCOVERY,
           "\tfor (size_t i = 0; i < n && err == 0; i++)\n\t\tif (f[i].offset == 0)\n\t\t\terr = image_at(insp, l, f, n, f[i].start, false, f[i].name, elf, &info, &sym, model_err);\n",
           "\tfor (size_t i = 0; i < n && err == 0; i++)\n\t\tif (f[i].offset == 0) {\n"
           "\t\t\terr = image_at(insp, l, f, n, f[i].start, false, f[i].name, elf, &info, &sym, model_err);\n"
           "\t\t\tbreak;\n\t\t}\n",
           ["inspect-modules-selfmap"], "a module's file is looked at from its lowest mapping "
           "of offset 0 only (a symbolizer's own mapping of it hides the library)"),
    Mutant("modules-one-per-file", "module discovery", DISCOVERY,
           "\tfor (size_t i = 0; i < n && err == 0; i++)\n\t\tif (f[i].offset == 0)\n\t\t\terr = image_at(insp, l, f, n, f[i].start, false, f[i].name, elf, &info, &sym, model_err);\n",
           "\tsize_t found = insp->count;\n"
           "\tfor (size_t i = 0; i < n && err == 0 && insp->count == found; i++)\n\t\tif (f[i].offset == 0)\n"
           "\t\t\terr = image_at(insp, l, f, n, f[i].start, false, f[i].name, elf, &info, &sym, model_err);\n",
           ["inspect-modules-dlmopen"], "one module per file: a second copy of the library "
           "(dlmopen(), another namespace) is not read"),
    Mutant("modules-no-anon-text", "module discovery", DISCOVERY,
           "\tif (!exec)\n\t\treturn false;\n\twhile (lo < hi) {\n",
           "\tif (exec || !exec)\n\t\treturn false;\n\twhile (lo < hi) {\n",
           ["inspect-modules-hugetext"], "a module whose code was copied onto anonymous "
           "memory (text on huge pages) is not taken for a loaded image"),
    Mutant("modules-no-copied-head", "module discovery", DISCOVERY,
           "\tif (elf == NULL && !any_zero && l->nanon != 0 && (copied = anon_image_below(pid, l, f[0].start)) != 0)\n",
           "\tif (elf == NULL && !any_zero && l->nanon != 0 && (copied = 0) != 0)\n",
           ["inspect-modules-hugehead"], "a module whose code was copied onto anonymous "
           "memory with the file's first page (aarch64's layout) is not found"),
    Mutant("modules-copied-head-exec", "module discovery", DISCOVERY,
           "(ph->p_flags & 1u) != 0 || head))\n",
           "(ph->p_flags & 1u) != 0 || (head && 0)))\n",
           ["inspect-modules-hugehead"], "the first segment of a module whose first page "
           "was copied onto anonymous memory must be executable: a read-only one is refused"),
    Mutant("modules-no-map-files", "module discovery", DISCOVERY,
           "\tfd = open_regular(buf, &st);\n\tif (fd < 0) {\n",
           "\tfd = -1;\n\tif (fd < 0) {\n",
           ["inspect-modules-upgrade"], "the mapped file is not read through "
           "/proc/PID/map_files: a library replaced on disk is not found"),
    Mutant("modules-open-follows", "module discovery", DISCOVERY,
           "\tint p = open(path, O_PATH | O_CLOEXEC), fd;\n",
           "\tint p = open(path, O_RDONLY | O_CLOEXEC), fd;\n",
           ["inspect-modules-fifo"], "a module's file is opened for reading before it is "
           "known to be a regular file: a FIFO swapped in blocks the open"),
    Mutant("modules-dtv-generation", "module discovery", "include/otel_thread_ctx_inspect_bpf.h",
           "\t\tif (value < m->dtv_gen)\n",
           "\t\tif (0 && value < m->dtv_gen)\n",
           ["inspect-modules-stale-dtv"], "a thread's DTV entry older than the module "
           "(left from a module unloaded since) is read as the module's"),
    # The inspector never blocks and never leaves a thread stopped.
    Mutant("inspect-stolen-stop", "inspector waits", THREADS,
           "\t\trc = probe_stopped(tid, resend);\n",
           "\t\trc = -ESRCH + 0 * probe_stopped(-1, resend);\n",
           ["inspect-reaper"], "a stop whose report a reaper thread took is not noticed: "
           "the read waits for a report that never comes"),
    # The tools print what the process chose escaped.
    Mutant("print-c1", "tool output", "tools/print.c",
           "\treturn p[i] == 0xc2 && i + 1 < n && p[i + 1] >= 0x80 && p[i + 1] <= 0x9f;\n",
           "\treturn 0 && p[i] == 0xc2 && i + 1 < n;\n", ["inspect-cli"],
           "a C1 control (U+009B, CSI) in a name reaches the terminal raw"),
    Mutant("print-name-raw", "tool output", "tools/otel-thread-ctx-inspect.c",
           "\t\ttool_text_cell(t->name, 16);\n",
           "\t\tprintf(\"%-16s\", t->name);\n", ["inspect-cli"],
           "the table prints thread names raw"),
    Mutant("maps-newline-escaped", "module discovery", "src/inspect/remote.c",
           "\t\tif (strncmp(in, \"\\\\012\", 4) == 0) {\n",
           "\t\tif (0 && strncmp(in, \"\\\\012\", 4) == 0) {\n", ["inspect-cli"],
           "a module path with a newline is reported as the kernel escapes it in maps "
           "(\\012), not as the file is named"),
    # A process that exec()s or exits under the read (doc/inspector.md).
    Mutant("exec-thread-unchecked", "process changing", THREADS,
           "\tnow = otel__inspect_image_unchanged(insp, tid, rc == OTEL_THREAD_CTX_EFAULT);\n",
           "\tnow = OTEL_THREAD_CTX_OK;\n",
           ["inspect-exec-while-read"], "a thread read after the process exec()ed is made "
           "with the old image's description"),
    Mutant("exec-open-unchecked", "process changing", DISCOVERY,
           "\tnow = otel__inspect_image_unchanged(insp, insp->mem, true);\n",
           "\tnow = insp != NULL ? OTEL_THREAD_CTX_OK : OTEL_THREAD_CTX_OK;\n",
           ["inspect-exec-while-read", "inspect-exit-while-read"],
           "open() returns what its reads found when the process exec()ed or exited "
           "meanwhile"),
    # The slot walk both readers run, and how the inspector reads a TLS
    # descriptor.
    Mutant("walk-unreadable-ignored", "slot walk", "include/otel_thread_ctx_inspect_bpf.h",
           "\tOTEL_THREAD_CTX_BPF_U32 u = (seen >> OTEL_THREAD_CTX_BPF_UNREADABLE) & 1u;\n",
           "\tOTEL_THREAD_CTX_BPF_U32 u = 0;\n",
           ["bpf-walk"], "a module whose slot cannot be read counts for nothing: a thread "
           "whose record may be there reads as publishing nothing"),
    Mutant("tlsdesc-static-by-size", "slot walk", DISCOVERY,
           "\t\tif (otel__tlsdesc_resolver_is_static(code)) {\n",
           "\t\tif ((int64_t)desc[1] < 0 && (int64_t)desc[1] > -(INT64_C(1) << 20)) {\n",
           ["inspect-values-far-tls-startup"], "a TLSDESC argument is told static from "
           "dynamic by its size, not by the resolver: a static offset beyond 1 MiB is "
           "taken for a pointer"),
    Mutant("walk-dtv-last-entry", "slot walk", "include/otel_thread_ctx_inspect_bpf.h",
           "\t\tif (id == 0 || id > value)\n", "\t\tif (id == 0 || id >= value)\n",
           ["inspect-dtv-walk"], "the DTV's last entry (module id == its count) is taken for "
           "one past it: the newest module of glibc's and musl's DTVs reads as no TLS"),
    Mutant("walk-dtv-past-count", "slot walk", "include/otel_thread_ctx_inspect_bpf.h",
           "\t\tif (id == 0 || id > value)\n", "\t\tif (id == 0 || id > value + 1)\n",
           ["inspect-dtv-walk"], "the entry one past the DTV's count is read: a thread "
           "whose DTV predates the module reads whatever lies there"),
    Mutant("walk-dtv-musl-count", "slot walk", "src/inspect/inspect_bpf.c",
           "\t{ OTEL_THREAD_CTX_INSPECT_LIBC_MUSL, 8, 0, 8 },\n",
           "\t{ OTEL_THREAD_CTX_INSPECT_LIBC_MUSL, 8, 8, 8 },\n",
           ["inspect-dtv-walk"], "musl's DTV count is read from entry 1 (module 1's block "
           "address), not entry 0"),
    # The eBPF reader and the tool on records that break the format: the
    # storm's foreign writer (tests/bpf/records.h) and the tool's hostile
    # target.
    Mutant("bpf-valid-zero-only", "BPF reader", "include/otel_thread_ctx_reader.bpf.h",
           "\tif (rec->valid != 1)\n", "\tif (rec->valid == 0)\n",
           ["bpf-storm-static"], "a valid byte of 2 or 255 reads as a valid record"),
    Mutant("bpf-size-unchecked", "BPF reader", "include/otel_thread_ctx_reader.bpf.h",
           "\tif (n > OTEL_THREAD_CTX_BPF_ATTRS_MAX) {\n\t\tn = OTEL_THREAD_CTX_BPF_ATTRS_MAX;\n"
           "\t\trec->attrs_data_size = OTEL_THREAD_CTX_BPF_ATTRS_MAX;\n\t}\n\tif (n == 0)\n",
           "\tif (n == 0)\n",
           ["vectors-bpf"], "attrs_data_size is bounded only after the verifier's mask: "
           "an oversized record reads as one of its size modulo 1,024, and says its own size"),
    Mutant("bpf-misaligned-read", "BPF reader", "include/otel_thread_ctx_reader.bpf.h",
           "\tif (addr & 1)\n\t\treturn OTEL_THREAD_CTX_BPF_MISALIGNED;\n", "",
           ["bpf-storm-static"], "an odd record pointer is read as a record"),
    Mutant("anomaly-half-ids-both", "reader rules", THREADS,
           "\tif ((memcmp(r->trace_id, zero, 16) == 0) != (memcmp(r->span_id, zero, 8) == 0))\n",
           "\tif ((memcmp(r->trace_id, zero, 16) == 0) && (memcmp(r->span_id, zero, 8) == 0))\n",
           ["bpf-storm-static"], "a record with one id and not the other is not flagged"),
    Mutant("anomaly-truncated-unflagged", "reader rules", THREADS,
           "\tif (at != size)\n\t\tanomalies |= OTEL_THREAD_CTX_INSPECT_TRUNCATED_ENTRY;\n",
           "\tif (at > size)\n\t\tanomalies |= OTEL_THREAD_CTX_INSPECT_TRUNCATED_ENTRY;\n",
           ["bpf-storm-static"], "an attribute entry cut off at the end is not flagged"),
    Mutant("inspect-walk-no-keys", "reader rules", DISCOVERY,
           "\totel__attr_iter_init_map(it, record, otel_thread_ctx_inspect_key_count(insp));\n",
           "\totel__attr_iter_init_map(it, record, 0 * otel_thread_ctx_inspect_key_count(insp));\n",
           ["inspect-values-startup"], "the inspector's attribute walk ignores the process's "
           "key map: every attribute reads as unmapped"),
    # The conformance vectors (tests/vectors/) against each reader rule.
    Mutant("vectors-valid-nonzero", "reader rules", RECORD_H,
           "\tif (out->valid != 1)\n\t\treturn OTEL_THREAD_CTX_EINVALID;\n",
           "\tif (out->valid == 0)\n\t\treturn OTEL_THREAD_CTX_EINVALID;\n",
           ["vectors-bytes", "vectors-live"], "a record whose valid byte is 2 or 255 is read "
           "as valid (only 1 is)"),
    Mutant("vectors-unmapped-kept", "reader rules", RECORD_C,
           "\t\tif (a.key >= it->keys) {\n", "\t\tif (a.key >= it->keys + 256) {\n",
           ["vectors-bytes", "vectors-live"], "an attribute whose key index the key map does "
           "not name is returned (readers MUST ignore it)"),
    Mutant("vectors-wire-type-6", "reader rules", "src/format/pb_read.c",
           "\tdefault:\n\t\t/* Groups (3, 4) and the undefined types 6 and 7. */\n\t\treturn -1;\n",
           "\tdefault:\n\t\t/* Groups (3, 4) and the undefined types 6 and 7. */\n"
           "\t\tif (f->wire == 6)\n\t\t\tbreak;\n\t\treturn -1;\n",
           ["vectors-bytes"], "a process-context payload with a field of wire type 6 (no such "
           "type) is decoded"),
    Mutant("vectors-doctor-repeated-key", "doctor", "tools/check-pid.c",
           "\t\t\trepeated = true;\n", "\t\t\trepeated = repeated;\n",
           ["vectors-live"], "the doctor says nothing of a key index repeated in a record"),
    Mutant("sample-half-ids-uncounted", "tool output", "tools/sample/otel-thread-ctx-sample.c",
           "\t\t\tt->half_ids++;\n", "\t\t\tt->half_ids += 0;\n",
           ["bpf-cli"], "the tool reads records with one of the ids set without saying so, "
           "and exits 0"),
    # Signals and children.
    Mutant("detach-drops-signal", "ptrace hygiene", THREADS,
           "\tif (ptrace(PTRACE_DETACH, tid, NULL, (void *)(uintptr_t)resend) != 0) {\n",
           "\tif (ptrace(PTRACE_DETACH, tid, NULL, (void *)(uintptr_t)0) != 0) {\n",
           ["inspect-signals"], "a signal pending when the thread was stopped (its stop came "
           "first) is not handed back at the detach: the target never handles it"),
    Mutant("process-read-max-refused", "process context", "src/inspect/process_read.c",
           "h->payload_size <= OTEL_THREAD_CTX_PROCESS_PAYLOAD_MAX &&",
           "h->payload_size < OTEL_THREAD_CTX_PROCESS_PAYLOAD_MAX &&",
           ["process-ctx-remote-shared"], "a payload of exactly 65,536 bytes, which a "
           "publisher may make, is refused by the reader"),
    Mutant("process-refused-keeps-schema", "process context", PC,
           "\tif (err) {\n\t\tschema = old_schema;\n\t\tgoto unlock;\n",
           "\tif (err) {\n\t\t(void)old_schema;\n\t\tgoto unlock;\n",
           ["process-ctx-shared"], "a refused publication that asked for the other schema "
           "leaves it behind: the next republication (a new key) changes the schema"),
    Mutant("process-dontfork-off", "process context", PC,
           "\tif (madvise(p, size, MADV_DONTFORK) != 0) {\n",
           "\tif (0 && madvise(p, size, MADV_DONTFORK) != 0) {\n",
           ["process-ctx-shared"], "the mapping is inherited by a child made without fork "
           "handlers (_Fork(), the fork system call): the child shows the parent's context"),
]

CONFIGS = {
    "gcc": ["--native-file", "tools/configs/gcc.ini"],
    "tsan": ["--native-file", "tools/configs/tsan.ini"],
}


def run(cmd, cwd, timeout=None, log=None, env=None):
    proc = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=timeout, check=False,
                          env=dict(os.environ, **env) if env else None)
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
        # A changed one gets the time of the copy, not the source's: a
        # source edited before the last build in DIR is older than what
        # that build made from the copy it replaces.
        if not os.path.exists(dst) or open(src, "rb").read() != open(dst, "rb").read():
            shutil.copyfile(src, dst)
            shutil.copymode(src, dst)


def apply(src_dir, m):
    path = os.path.join(src_dir, m.path)
    text = open(path, encoding="utf-8").read()
    count = text.count(m.old)
    if m.every:
        if count == 0:
            return None
        mutated = text.replace(m.old, m.new)
    else:
        if count == 0 or (m.nth == 0 and count != 1) or m.nth >= max(count, 1):
            return None
        at = -1
        for _ in range(m.nth + 1):
            at = text.index(m.old, at + 1)
        mutated = text[:at] + m.new + text[at + len(m.old):]
    for old, new in m.also:
        if mutated.count(old) != 1:
            return None
        mutated = mutated.replace(old, new)
    with open(path, "w", encoding="utf-8") as f:
        f.write(mutated)
    return text


def introspect(bdir, what):
    out = subprocess.run(["meson", "introspect", what, bdir], stdout=subprocess.PIPE,
                         check=True).stdout
    return json.loads(out)


def test_targets(bdir, names):
    """What ninja must build for the tests `names` to run: the targets each
    depends on (its executable, and the ones in its arguments), as paths
    relative to the build directory.  Unknown test names are returned
    apart."""
    tests = {t["name"]: t for t in introspect(bdir, "--tests")}
    files = {t["id"]: t["filename"] for t in introspect(bdir, "--targets")}
    wanted, unknown = set(), []
    for name in names:
        if name not in tests:
            unknown.append(name)
            continue
        for dep in tests[name]["depends"]:
            for f in files.get(dep, []):
                wanted.add(os.path.relpath(f, bdir))
    return sorted(wanted), unknown


def objects_of(bdir, path):
    """The object files ninja compiles from source `path` in this build;
    for a header, every object of the libraries (src/)."""
    base = os.path.basename(path)
    out = subprocess.run(["ninja", "-C", bdir, "-t", "targets", "all"], stdout=subprocess.PIPE,
                         check=True).stdout.decode()
    objs = []
    for line in out.splitlines():
        target = line.split(":")[0]
        name = os.path.basename(target)
        if not name.endswith(".o"):
            continue
        if path.endswith(".h"):
            if target.startswith("src/"):
                objs.append(target)
        elif name == base + ".o" or name.endswith("_" + base + ".o"):
            objs.append(target)
    return sorted(objs)


MEMORY = re.compile(r"\(|\bcall|\bjmp\s+\*")


def memory_accesses(bdir, objs):
    """Per function, the instructions that touch memory or call, registers
    left out: what a compiler barrier can change.  (Register moves and the
    choice of registers are not.)"""
    sig = []
    for obj in objs:
        out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", os.path.join(bdir, obj)],
                             stdout=subprocess.PIPE, check=True).stdout.decode()
        for line in out.splitlines():
            head = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
            if head:
                sig.append("fn " + head.group(1))
                continue
            parts = line.split("\t", 2)
            if len(parts) < 3:
                continue
            insn = parts[2].split("#")[0].strip()
            if not MEMORY.search(insn) or insn.startswith("lea") or insn.startswith("nop"):
                continue
            insn = re.sub(r"%[a-z0-9]+", "%r", insn)
            insn = re.sub(r"\b[0-9a-f]+ <", "<", insn)
            sig.append(insn)
    return sig


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("ids", nargs="*", help="mutants to run (default: all)")
    ap.add_argument("--list", action="store_true", help="list the mutants and exit")
    ap.add_argument("--workdir", help="where the copy and its builds live (kept)")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per mutant's tests")
    ap.add_argument("--without", action="append", default=[], metavar="TEST",
                    help="leave this test out of every mutant's tests (repeatable); a mutant "
                    "left with none is reported unverified")
    ap.add_argument("--build-only", action="store_true",
                    help="only check that each mutant applies and its file still compiles")
    args = ap.parse_args()

    if args.list:
        for m in MUTANTS:
            print(f"{m.ident:26} {m.area:20} {m.why}")
            print(f"{'':26} {'':20} caught by: {' '.join(m.tests)}"
                  + (f" ({m.build} build)" if m.build != "gcc" else ""))
        return 0
    known = {m.ident: m for m in MUTANTS}
    unknown = [i for i in args.ids if i not in known]
    if unknown:
        print("mutate.py: unknown mutant(s): " + " ".join(unknown), file=sys.stderr)
        return 2
    chosen = [known[i] for i in args.ids] if args.ids else MUTANTS
    tests_of = {m.ident: [t for t in m.tests if t not in args.without] for m in chosen}

    work = args.workdir or tempfile.mkdtemp(prefix="otel-mutate-")
    src = os.path.join(work, "src-tree")
    os.makedirs(src, exist_ok=True)
    copy_tree(src)
    log = os.path.join(work, "mutate.log")
    open(log, "w").close()
    print(f"work directory {work} (log: {log})", flush=True)

    builds, targets, objects, baseline = {}, {}, {}, {}
    for name in sorted({m.build for m in chosen}):
        bdir = os.path.join(work, "build-" + name)
        if not os.path.exists(os.path.join(bdir, "build.ninja")):
            if run(["meson", "setup", bdir] + CONFIGS[name], src, log=log) != 0:
                print(f"mutate.py: cannot configure {name}; see {log}", file=sys.stderr)
                return 2
        # A reused build whose meson.build files changed: regenerate it
        # before asking it for its tests.
        elif run(["ninja", "-C", bdir, "build.ninja"], src, log=log) != 0:
            print(f"mutate.py: cannot regenerate {bdir}; see {log}", file=sys.stderr)
            return 2
        builds[name] = bdir
        mine = [m for m in chosen if m.build == name]
        names = sorted({t for m in mine for t in tests_of[m.ident]})
        wanted, missing = test_targets(bdir, names)
        if missing and not args.build_only:
            print(f"mutate.py: no test named {' '.join(missing)} in the {name} build "
                  "(the set needs updating)", file=sys.stderr)
            return 2
        for m in mine:
            # Per build: a source is compiled into different targets in
            # each (the TSan build has no step harness).
            if (name, m.path) not in objects:
                objects[(name, m.path)] = objects_of(bdir, m.path)
        objs = sorted({o for m in mine for o in objects[(name, m.path)]})
        # Nothing to build (a mutant of a script): a target that is
        # always there, not ninja's default of everything.
        targets[name] = (objs if args.build_only else wanted + objs) or ["build.ninja"]
        if run(["ninja", "-C", bdir] + targets[name], src, log=log) != 0:
            print(f"mutate.py: the unmutated {name} build fails to build; see {log}",
                  file=sys.stderr)
            return 2
        if not args.build_only and names and \
                run(["meson", "test", "-C", bdir, "--no-rebuild", "-q"] + names, src,
                    timeout=args.timeout, log=log) != 0:
            print(f"mutate.py: the unmutated {name} build fails its tests; see {log}",
                  file=sys.stderr)
            return 2
        for m in mine:
            if m.may_be_equivalent:
                baseline[(name, m.path)] = memory_accesses(bdir, objects[(name, m.path)])

    results = {}
    for m in chosen:
        start = time.monotonic()
        bdir = builds[m.build]
        original = apply(src, m)
        if original is None:
            verdict = "stillborn (the change no longer applies)"
        else:
            try:
                if run(["ninja", "-C", bdir] + (objects[(m.build, m.path)] or ["build.ninja"]
                                                if args.build_only else targets[m.build]),
                       src, log=log) != 0:
                    verdict = "stillborn (does not build)"
                elif args.build_only:
                    verdict = "builds"
                elif m.may_be_equivalent and \
                        memory_accesses(bdir, objects[(m.build, m.path)]) == \
                        baseline[(m.build, m.path)]:
                    verdict = "equivalent (the same memory accesses, in the same order)"
                elif not tests_of[m.ident]:
                    verdict = "unverified (every test that guards it was left out)"
                else:
                    try:
                        rc = run(["meson", "test", "-C", bdir, "--no-rebuild", "-q",
                                  "--print-errorlogs"] + tests_of[m.ident], src,
                                 timeout=args.timeout, log=log, env=m.env)
                        verdict = "killed" if rc != 0 else "SURVIVED"
                    except subprocess.TimeoutExpired:
                        verdict = "killed (timeout)"
            finally:
                with open(os.path.join(src, m.path), "w", encoding="utf-8") as f:
                    f.write(original)
        results[m.ident] = verdict
        print(f"{m.ident:26} {verdict:10} {time.monotonic() - start:6.0f} s  {m.why}",
              flush=True)

    # Leave the builds matching the unmutated tree.
    for name, bdir in builds.items():
        run(["ninja", "-C", bdir] + targets[name], src, log=log)
    if args.build_only:
        good = sum(v == "builds" for v in results.values())
        print(f"{good} of {len(results)} mutants apply and build")
        return 0 if good == len(results) else 1
    killed = sum(v.startswith("killed") for v in results.values())
    equivalent = sum(v.startswith("equivalent") for v in results.values())
    print(f"{killed} of {len(results)} mutants killed"
          + (f", {equivalent} equivalent (same machine code)" if equivalent else ""))
    return 0 if killed + equivalent == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
