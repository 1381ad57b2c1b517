/* SPDX-License-Identifier: Apache-2.0 OR GPL-2.0-only */
/*
 * otel-thread-ctx for eBPF programs: read the OpenTelemetry thread context
 * (OTEP 4947) of the task a BPF program runs for (a perf event, say), with
 * otel_thread_ctx_bpf_read_current().  Reference: man 3
 * otel_thread_ctx_inspect_bpf_proc, doc/sampler.md.
 *
 * Include it after vmlinux.h (or <linux/types.h> and <linux/bpf.h>),
 * <bpf/bpf_helpers.h> and <bpf/bpf_core_read.h>; compile with clang's BPF
 * target, -g, and -D__TARGET_ARCH_x86 or -D__TARGET_ARCH_arm64.  The program
 * needs a GPL-compatible license (the helpers are GPL-only).  Linux 5.8 or
 * later with BTF.  Nothing read from the process is trusted.
 *
 * UNREADABLE samples: a page that is not present at that instant (never
 * touched, swapped out, migrating, a huge page being split) cannot be read,
 * and BPF does not fault it in.  Such a sample's context is unknown, not
 * absent: count it apart, attribute it to no trace, do not retry; when every
 * sample of a process is UNREADABLE, describe the process again.
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

/* task_struct.flags: the task is in do_exit() (its memory may be gone). */
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

/* The walk of otel_thread_ctx_inspect_bpf.h for module m, read with
 * bpf_probe_read_user(): OK, NO_CONTEXT, NO_TLS or UNREADABLE. */
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

/* Reads the record at `addr`: the header, then (valid) attrs_data_size
 * bytes, clamped to 612; *found_size gets the size found.  Returns OK,
 * INVALID, UNREADABLE or MISALIGNED. */
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

/* Reads the current task's thread context into *ev by `proc`, the
 * description of its process: every field but time_ns, and the bytes
 * otel_thread_ctx_bpf_event_size() counts.  Returns ev->status. */
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
