/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the out-of-process inspector (src/inspect/inspect.c) needs to know about
 * aarch64: where a stopped thread's thread pointer is, and where glibc and
 * musl keep the thread's DTV relative to it.
 *
 * Thread pointer: tpidr_el0.  PTRACE_GETREGSET with NT_ARM_TLS (0x401)
 * returns it as the first 64-bit word (newer kernels append tpidr2).
 *
 * DTV (AAELF64, TLS variant I: a 16-byte TCB at the thread pointer, the
 * static TLS blocks above it): glibc keeps the DTV pointer in the TCB's
 * first word, at tp + 0, with 16-byte entries; musl keeps it in the last
 * word of its thread descriptor, just below the thread pointer, at tp - 8,
 * with 8-byte entries.
 */
#ifndef OTEL_ARCH_INSPECT_H
#define OTEL_ARCH_INSPECT_H

#include <errno.h>
#include <stdint.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/uio.h>

#define OTEL__INSPECT_ELF_MACHINE 183 /* EM_AARCH64 */
#define OTEL__INSPECT_GLIBC_DTV_AT 0
#define OTEL__INSPECT_MUSL_DTV_AT (-8)
/* A TLSDESC argument that is a static offset: the blocks are above the
 * thread pointer, at a small positive offset. */
#define OTEL__INSPECT_DESC_IS_STATIC(v) ((uint64_t)(v) < (UINT64_C(1) << 20))

/* The thread pointer of stopped tracee `tid`: 0 and *tp, or errno. */
static inline int otel__inspect_thread_pointer(pid_t tid, uint64_t *tp)
{
	uint64_t regs[2] = { 0, 0 };
	struct iovec iov = { regs, sizeof(regs) };

	if (ptrace(PTRACE_GETREGSET, tid, (void *)0x401 /* NT_ARM_TLS */, &iov) != 0)
		return errno;
	if (iov.iov_len < sizeof(regs[0]))
		return EIO;
	*tp = regs[0];
	return 0;
}

#endif /* OTEL_ARCH_INSPECT_H */
