/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the out-of-process inspector (src/inspect/discovery.c, threads.c) needs to know about
 * aarch64: where a stopped thread's thread pointer is.
 *
 * Thread pointer: tpidr_el0.  PTRACE_GETREGSET with NT_ARM_TLS (0x401)
 * returns it as the first 64-bit word (newer kernels append tpidr2).
 *
 * Where the C libraries keep the DTV is in the one table of DTV layouts,
 * src/inspect/inspect_bpf.c.
 */
#ifndef OTEL_ARCH_AARCH64_REGS_H
#define OTEL_ARCH_AARCH64_REGS_H

#include <errno.h>
#include <stdint.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/uio.h>

#define OTEL__INSPECT_ELF_MACHINE 183 /* EM_AARCH64 */

/* The thread pointer of stopped tracee `tid`: 0 and *tp, or a
 * negative errno. */
static inline int otel__inspect_thread_pointer(pid_t tid, uint64_t *tp)
{
	uint64_t regs[2] = { 0, 0 };
	struct iovec iov = { regs, sizeof(regs) };

	if (ptrace(PTRACE_GETREGSET, tid, (void *)0x401 /* NT_ARM_TLS */, &iov) != 0)
		return -errno;
	if (iov.iov_len < sizeof(regs[0]))
		return -ENODATA;
	*tp = regs[0];
	return 0;
}

#endif /* OTEL_ARCH_AARCH64_REGS_H */
