/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the out-of-process inspector (src/inspect/discovery.c, threads.c) needs to know about
 * x86-64: where a stopped thread's thread pointer is.
 *
 * Thread pointer: the %fs base.  PTRACE_GETREGSET with NT_PRSTATUS returns
 * struct user_regs_struct (<sys/user.h>), whose fs_base is it.
 *
 * Where the C libraries keep the DTV is in the one table of DTV layouts,
 * src/inspect/inspect_bpf.c.
 */
#ifndef OTEL_ARCH_X86_64_REGS_H
#define OTEL_ARCH_X86_64_REGS_H

#include <errno.h>
#include <stdint.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/user.h>

#define OTEL__INSPECT_ELF_MACHINE 62 /* EM_X86_64 */

/* The thread pointer of stopped tracee `tid`: 0 and *tp, or a
 * negative errno. */
static inline int otel__inspect_thread_pointer(pid_t tid, uint64_t *tp)
{
	struct user_regs_struct regs;
	struct iovec iov = { &regs, sizeof(regs) };

	if (ptrace(PTRACE_GETREGSET, tid, (void *)1 /* NT_PRSTATUS */, &iov) != 0)
		return -errno;
	*tp = regs.fs_base;
	return 0;
}

#endif /* OTEL_ARCH_X86_64_REGS_H */
