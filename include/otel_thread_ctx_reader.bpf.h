/* SPDX-License-Identifier: Apache-2.0 OR GPL-2.0-only */
/*
 * otel-thread-ctx for eBPF programs: read the OpenTelemetry thread context
 * (OTEP 4947) of the task a BPF program runs for, typically from a perf
 * event that interrupted it.
 *
 * Include it after the kernel's types and the libbpf headers' requirements,
 * the libbpf way:
 *
 *     #include "vmlinux.h"               (or <linux/types.h> and <linux/bpf.h>)
 *     #include <bpf/bpf_helpers.h>
 *     #include <bpf/bpf_core_read.h>
 *     #include <otel_thread_ctx_reader.bpf.h>
 *
 * and compile with clang's BPF target, -g (BTF, for CO-RE) and the target's
 * CPU as libbpf names it: -D__TARGET_ARCH_x86 or -D__TARGET_ARCH_arm64.
 *
 * The program needs a GPL-compatible license ("GPL", "Dual BSD/GPL"): the
 * helpers it calls (bpf_get_current_task, bpf_probe_read_kernel,
 * bpf_probe_read_user) are GPL-only; this file may be used under GPL-2.0 for
 * that reason.
 *
 * Steps (otel_thread_ctx_bpf_read_current()):
 *
 * 0. A task that is exiting (PF_EXITING in task_struct.flags, read through
 *    CO-RE as well) is not read: do_exit() releases its memory, after
 *    which every read of it fails.
 * 1. The thread pointer of the current task, from its task_struct through
 *    BTF and CO-RE relocations: thread.fsbase on x86-64 (the %fs base),
 *    thread.uw.tp_value on aarch64 (tpidr_el0).  The types below carry
 *    only the fields read, with the "___otel" flavour suffix, so they do
 *    not clash with vmlinux.h; libbpf matches them to the running kernel's
 *    task_struct at load time.  The kernel keeps these fields current when
 *    it switches tasks (and at clone() with CLONE_SETTLS, and on x86-64 at
 *    arch_prctl(ARCH_SET_FS)); an aarch64 thread that sets tpidr_el0 from
 *    user space (glibc and musl do it for the main thread at start-up) is
 *    seen with its new thread pointer from its first task switch on.
 * 2. The slot, from the process description user space put in a map
 *    (struct otel_thread_ctx_bpf_proc, otel_thread_ctx_inspect_bpf.h): static TLS
 *    is an offset from the thread pointer, dynamic TLS a walk of the DTV.
 * 3. The record: the 28-byte header first; `valid` must be 1; then
 *    exactly attrs_data_size bytes of attributes, at most 612 (a larger
 *    size, which breaks the format, is read as 612, as the OpenTelemetry
 *    eBPF profiler clamps it to its buffer, and reported as found in the
 *    event's attrs_data_size).  Never a fixed 640 bytes: a record may be
 *    smaller and end near the end of a mapping.
 *
 * Memory of the process is read with bpf_probe_read_user(), which does not
 * fault pages in.  Nothing is trusted: every pointer and size comes from
 * the process, and each one is checked or bounded before it is used.
 *
 * UNREADABLE samples.  A read fails on a page that is mapped but not
 * present in the page tables at that instant, as well as on memory that is
 * not mapped: a page never touched or swapped out, a page being migrated,
 * and a transparent huge page that the kernel is splitting or collapsing,
 * whose page-table entry is not present while it does.  The last one is
 * common: with transparent huge pages on ("always", Debian's default), a
 * thread stack whose top falls in a huge page (glibc puts the TLS there)
 * is split when the thread exits, by glibc's madvise(MADV_DONTNEED) of the
 * stack below, and the samples of that thread taken during the split read
 * nothing, with status UNREADABLE and record_address 0 (the slot) or not
 * (the record).  So UNREADABLE means "the context could not be read at
 * this instant", not "no context" and not a broken record.  A profiler
 * should count such samples apart, attribute them to no trace or span
 * (unknown), and not retry in BPF (the page will not appear there); a few
 * in a profile are expected.  When every sample of a process is
 * UNREADABLE, the description no longer fits it (a module unloaded, a
 * process that exec()ed): describe it again.  The tests bound them in
 * episodes per thread (tests/bpf/storm-check.c says why).
 *
 * Kernels: Linux 5.8 or later with BTF (/sys/kernel/btf/vmlinux):
 * bpf_probe_read_user() needs 5.5, the ring buffer of the sample tool 5.8.
 * Verified on Linux 6.18 (x86-64) and Debian 12's 6.1 (x86-64, aarch64).
 */
#ifndef OTEL_THREAD_CTX_READER_BPF_H
#define OTEL_THREAD_CTX_READER_BPF_H

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "otel_thread_ctx_inspect_bpf.h"

#if defined(__TARGET_ARCH_x86)
struct otel__thread_struct___otel {
	unsigned long fsbase;
} __attribute__((preserve_access_index));
#elif defined(__TARGET_ARCH_arm64)
struct otel__thread_struct___otel {
	struct {
		unsigned long tp_value;
	} __attribute__((preserve_access_index)) uw;
} __attribute__((preserve_access_index));
#else
#error "otel_thread_ctx_reader.bpf.h: define __TARGET_ARCH_x86 or __TARGET_ARCH_arm64"
#endif

/* Matched to the kernel's struct task_struct (CO-RE drops the suffix). */
struct task_struct___otel {
	unsigned int flags;
	struct otel__thread_struct___otel thread;
} __attribute__((preserve_access_index));

/* task_struct.flags: the task is in do_exit(), which releases its memory
 * (after that, reads of user memory fail); the value has not changed since
 * Linux 2.6. */
#define OTEL__PF_EXITING 0x00000004u

/* The current task's thread pointer, 0 if it cannot be read. */
static __always_inline __u64 otel_thread_ctx_bpf_thread_pointer(void)
{
	struct task_struct___otel *task = (struct task_struct___otel *)bpf_get_current_task();

#if defined(__TARGET_ARCH_x86)
	return BPF_CORE_READ(task, thread.fsbase);
#else
	return BPF_CORE_READ(task, thread.uw.tp_value);
#endif
}

/* Whether the current task is exiting. */
static __always_inline int otel_thread_ctx_bpf_task_exiting(void)
{
	struct task_struct___otel *task = (struct task_struct___otel *)bpf_get_current_task();

	return (BPF_CORE_READ(task, flags) & OTEL__PF_EXITING) != 0;
}

/*
 * Module m in the thread whose thread pointer is tp, by the walk of
 * otel_thread_ctx_inspect_bpf.h (the inspector's too), its reads made with
 * bpf_probe_read_user(): OK with w->slot and w->record (the record pointer,
 * not 0), NO_CONTEXT with w->slot (the slot is NULL), NO_TLS (the thread
 * has no block for a dynamic module yet) or UNREADABLE.
 */
static __always_inline int otel_thread_ctx_bpf_walk_module(const struct otel_thread_ctx_bpf_proc *proc,
							  const struct otel_thread_ctx_bpf_module *m,
							  __u64 tp, struct otel_thread_ctx_bpf_walk *w)
{
	int rc = otel_thread_ctx_bpf_walk_start(w, proc, m, tp);
	__u32 n;

#pragma unroll
	for (n = 0; n < OTEL_THREAD_CTX_BPF_WALK_READS; n++) {
		__u64 v = 0;
		long failed;

		if (rc != OTEL_THREAD_CTX_BPF_WALK_READ)
			break;
		failed = bpf_probe_read_user(&v, sizeof(v), (const void *)w->addr);
		rc = otel_thread_ctx_bpf_walk_next(w, proc, m, v, failed != 0);
	}
	return rc;
}

/*
 * Reads the record at `addr` into *rec: the header, and when it is valid,
 * exactly attrs_data_size bytes of attributes, at most 612 (rec's
 * attrs_data_size is then clamped to 612, as otel_thread_ctx_record_decode()
 * clamps it).  *found_size receives attrs_data_size as found.  Returns the
 * status: OK, INVALID, UNREADABLE or MISALIGNED.
 */
static __always_inline int otel_thread_ctx_bpf_read_record(__u64 addr,
							   struct otel_thread_ctx_bpf_record *rec,
							   __u16 *found_size)
{
	__u64 n;

	if (addr & 1)
		return OTEL_THREAD_CTX_BPF_MISALIGNED;
	if (bpf_probe_read_user(rec, OTEL_THREAD_CTX_BPF_HEADER_SIZE, (const void *)addr) != 0)
		return OTEL_THREAD_CTX_BPF_UNREADABLE;
	n = rec->attrs_data_size;
	*found_size = (__u16)n;
	if (rec->valid != 1)
		return OTEL_THREAD_CTX_BPF_INVALID;
	if (n > OTEL_THREAD_CTX_BPF_ATTRS_MAX) {
		n = OTEL_THREAD_CTX_BPF_ATTRS_MAX;
		rec->attrs_data_size = OTEL_THREAD_CTX_BPF_ATTRS_MAX;
	}
	if (n == 0)
		return OTEL_THREAD_CTX_BPF_OK;
	/* The verifier must see the bound on the very register passed as the
	 * size; the compiler may otherwise test a copy of it. */
	asm volatile("%[n] &= 0x3ff" : [n] "+r"(n));
	if (n > OTEL_THREAD_CTX_BPF_ATTRS_MAX)
		n = OTEL_THREAD_CTX_BPF_ATTRS_MAX;
	if (bpf_probe_read_user(rec->attrs_data, n,
				(const void *)(addr + OTEL_THREAD_CTX_BPF_HEADER_SIZE)) != 0)
		return OTEL_THREAD_CTX_BPF_UNREADABLE;
	return OTEL_THREAD_CTX_BPF_OK;
}

/*
 * Reads the current task's thread context into *ev, following `proc` (the
 * description of the current process): fills status, module,
 * record_address, attrs_data_size and the record's bytes as
 * otel_thread_ctx_bpf_event_size() counts them, and pid, tid and cpu.  For
 * an exiting task nothing is read, and the status is EXITING.  The caller
 * sets time_ns if it wants it.  Returns ev->status.
 *
 * With several modules, the rule of otel_thread_ctx_inspect_bpf.h: the
 * first whose slot is not NULL is read; when none has a record, UNREADABLE
 * if some module's slot could not be read, else NO_CONTEXT if some slot was
 * NULL, else NO_TLS.
 */
static __always_inline int
otel_thread_ctx_bpf_read_current(const struct otel_thread_ctx_bpf_proc *proc,
				 struct otel_thread_ctx_bpf_event *ev)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u64 tp = otel_thread_ctx_bpf_thread_pointer();
	__u32 i, seen = 0;

	ev->pid = (__u32)(id >> 32);
	ev->tid = (__u32)id;
	ev->cpu = (__u8)bpf_get_smp_processor_id();
	ev->module = 0;
	ev->record_address = 0;
	ev->attrs_data_size = 0;
	if (otel_thread_ctx_bpf_task_exiting()) {
		ev->status = OTEL_THREAD_CTX_BPF_EXITING;
		return ev->status;
	}
	if (tp == 0) {
		ev->status = OTEL_THREAD_CTX_BPF_UNREADABLE;
		return ev->status;
	}
#pragma unroll
	for (i = 0; i < OTEL_THREAD_CTX_BPF_MAX_MODULES; i++) {
		struct otel_thread_ctx_bpf_walk w;
		int rc;

		if (i >= proc->module_count)
			break;
		rc = otel_thread_ctx_bpf_walk_module(proc, &proc->modules[i], tp, &w);
		if (rc != OTEL_THREAD_CTX_BPF_OK) {
			seen = otel_thread_ctx_bpf_walk_fold(seen, rc);
			continue;
		}
		ev->module = (__u8)i;
		ev->record_address = w.record;
		ev->status = otel_thread_ctx_bpf_read_record(w.record, &ev->record, &ev->attrs_data_size);
		return ev->status;
	}
	ev->status = otel_thread_ctx_bpf_walk_status(seen);
	return ev->status;
}

#endif /* OTEL_THREAD_CTX_READER_BPF_H */
