/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the out-of-process inspector (src/inspect/inspect.c) needs to know about
 * x86-64: where a stopped thread's thread pointer is, and where glibc and
 * musl keep the thread's DTV relative to it.
 *
 * Thread pointer: the %fs base.  PTRACE_GETREGSET with NT_PRSTATUS returns
 * struct user_regs_struct (<sys/user.h>), whose fs_base is it.
 *
 * DTV (x86-64 psABI, TLS variant II: the TCB is at the thread pointer and
 * the static TLS blocks lie below it): both C libraries keep the DTV
 * pointer in the second word of the TCB, at %fs:8.  glibc's entries are 16
 * bytes ({pointer, to_free}), musl's 8.
 */
#ifndef OTEL_ARCH_INSPECT_H
#define OTEL_ARCH_INSPECT_H

#include <errno.h>
#include <stdint.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/user.h>

#define OTEL__INSPECT_ELF_MACHINE 62 /* EM_X86_64 */
#define OTEL__INSPECT_GLIBC_DTV_AT 8
#define OTEL__INSPECT_MUSL_DTV_AT 8
/* A TLSDESC argument that is a static offset: the blocks are below the
 * thread pointer, so the offset is negative (and small). */
#define OTEL__INSPECT_DESC_IS_STATIC(v) ((int64_t)(v) < 0 && (int64_t)(v) > -(INT64_C(1) << 32))

/* The thread pointer of stopped tracee `tid`: 0 and *tp, or errno. */
static inline int otel__inspect_thread_pointer(pid_t tid, uint64_t *tp)
{
	struct user_regs_struct regs;
	struct iovec iov = { &regs, sizeof(regs) };

	if (ptrace(PTRACE_GETREGSET, tid, (void *)1 /* NT_PRSTATUS */, &iov) != 0)
		return errno;
	*tp = regs.fs_base;
	return 0;
}

#endif /* OTEL_ARCH_INSPECT_H */
