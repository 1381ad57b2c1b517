/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otel-thread-ctx inspector: read the thread contexts of another process,
 * from outside, the way a ptrace-based profiler or debugger does.
 *
 * Steps
 * -----
 * otel_thread_ctx_inspect_open() looks at process `pid`:
 *
 * - every file mapped in /proc/PID/maps whose .dynsym defines the TLS symbol
 *   otel_thread_ctx_v1 is a module; its load bias comes from its first
 *   mapping and its first PT_LOAD;
 * - the module's dynamic relocations against the slot say how its code
 *   reaches it, and so how a reader finds it (SPEC "TLS access models"):
 *     TLSDESC:          the descriptor's argument (second word, read from
 *                       the process) is either a small offset from the
 *                       thread pointer (static TLS), or a pointer to
 *                       {module id, offset} (dynamic TLS: a DTV walk);
 *     general-dynamic:  the module id and offset from the DTPMOD64 and
 *                       DTPOFF64 GOT entries (a DTV walk);
 *     initial-exec:     the offset from the TPOFF64 / TLS_TPREL GOT entry;
 *     local-exec:       an executable without relocations against the
 *                       slot; the offset follows from st_value and PT_TLS;
 * - the C library (glibc or musl, from the program interpreter) fixes the
 *   layout of the DTV, needed by the dynamic models;
 * - the process context (otel_process_ctx_read()) gives the attribute key
 *   names, when the process publishes one.
 *
 * otel_thread_ctx_inspect_thread() then reads one thread: it attaches with
 * PTRACE_SEIZE, stops the thread with PTRACE_INTERRUPT, takes its thread
 * pointer with PTRACE_GETREGSET (x86-64: fs_base of NT_PRSTATUS; aarch64:
 * NT_ARM_TLS), computes the slot's address, reads the slot and the record
 * with process_vm_readv(), decodes the record by the format's rules
 * (otel_thread_ctx_record_decode()) and detaches, re-delivering a signal
 * that arrived meanwhile.  The thread is stopped only between the interrupt
 * and the detach; every path out of the function detaches, and if the
 * inspecting process dies, the kernel detaches.  Only one thread of the
 * process is stopped at a time, so reading a thread that holds a lock
 * another thread waits for stalls nobody for longer than one read.
 * otel_thread_ctx_inspect_threads() does that for every thread in
 * /proc/PID/task.
 *
 * Permissions: reading needs the right to ptrace-attach to the process:
 * the same user (and a dumpable process), and under Yama
 * (/proc/sys/kernel/yama/ptrace_scope) 1 also an ancestor of it, or a
 * process it named with prctl(PR_SET_PTRACER), or CAP_SYS_PTRACE; 2 needs
 * CAP_SYS_PTRACE; 3 forbids attaching altogether.  A process traced by
 * someone else (a debugger) cannot be read either (EPERM).
 *
 * Trust: every byte read from the process is treated as hostile.  A record
 * pointer into unmapped memory, a misaligned record, attrs_data_size past
 * the 612 bytes or an entry cut off by it are reported per thread, never a
 * crash; the process keeps running in every case.
 *
 * Threads: an inspector is used by one thread at a time (ptrace ties the
 * attachment to the thread that made it).  Nothing here is
 * async-signal-safe: these functions allocate and do I/O.  They never
 * abort, exit or print.  Errors are the negative codes of enum
 * otel_thread_ctx_error.
 */
#ifndef OTEL_THREAD_CTX_INSPECT_H
#define OTEL_THREAD_CTX_INSPECT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "otel_process_ctx.h"
#include "otel_thread_ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How a module's code reaches the slot, and so how the inspector finds it. */
enum otel_thread_ctx_inspect_model {
	OTEL_THREAD_CTX_INSPECT_TLSDESC_STATIC = 1,  /* static offset */
	OTEL_THREAD_CTX_INSPECT_TLSDESC_DYNAMIC = 2, /* DTV walk */
	OTEL_THREAD_CTX_INSPECT_GENERAL_DYNAMIC = 3, /* DTV walk */
	OTEL_THREAD_CTX_INSPECT_INITIAL_EXEC = 4,    /* static offset */
	OTEL_THREAD_CTX_INSPECT_LOCAL_EXEC = 5,      /* static offset */
};

/* The C library of the process, which lays out the DTV. */
enum otel_thread_ctx_inspect_libc {
	OTEL_THREAD_CTX_INSPECT_LIBC_UNKNOWN = 0,
	OTEL_THREAD_CTX_INSPECT_LIBC_GLIBC = 1,
	OTEL_THREAD_CTX_INSPECT_LIBC_MUSL = 2,
};

/* A short name of a model ("tlsdesc-static", "initial-exec" ...), or
 * "unknown". */
const char *otel_thread_ctx_inspect_model_name(int model);

/* A loaded module that defines otel_thread_ctx_v1. */
struct otel_thread_ctx_inspect_module {
	const char *path;        /* as in /proc/PID/maps */
	uint64_t base;           /* load bias */
	uint64_t st_value;       /* the slot's offset in the module's TLS block */
	int model;               /* enum otel_thread_ctx_inspect_model */
	/* Static models: slot address = thread pointer + tp_offset. */
	int64_t tp_offset;
	/* Dynamic models: slot address = DTV[module_id] + dtv_offset. */
	uint64_t module_id;
	uint64_t dtv_offset;
};

/* What otel_thread_ctx_inspect_open() found. */
struct otel_thread_ctx_inspect_info {
	pid_t pid;
	int libc; /* enum otel_thread_ctx_inspect_libc */
	/* The modules defining the slot, in address order (at least one).
	 * A thread's record is read from the first module whose slot is
	 * not NULL in that thread. */
	size_t module_count;
	const struct otel_thread_ctx_inspect_module *modules;
	/* The process context: OTEL_THREAD_CTX_OK and a snapshot, or the
	 * error otel_process_ctx_read() returned and NULL. */
	int process_ctx_status;
	const struct otel_process_ctx_snapshot *process_ctx;
};

/* Per-thread anomalies (struct otel_thread_ctx_inspect_thread.anomalies):
 * the record is still decoded by the format's rules, but the writer broke
 * them. */
#define OTEL_THREAD_CTX_INSPECT_OVERSIZED 1u /* attrs_data_size > 612 */
#define OTEL_THREAD_CTX_INSPECT_TRUNCATED_ENTRY 2u /* an entry cut off at the end */
#define OTEL_THREAD_CTX_INSPECT_HALF_IDS 4u /* one id all zero, the other not */

/* One thread, as read. */
struct otel_thread_ctx_inspect_thread {
	pid_t tid;
	char name[17];           /* /proc/PID/task/TID/comm, "" if unknown */
	/*
	 * OTEL_THREAD_CTX_OK: `record` holds a valid record.
	 * ENOCTX: the slot is NULL, or the thread has not allocated the
	 *   module's dynamic TLS block yet (it never touched the library).
	 * EINVALID: the record's valid byte is not 1 (a lost sample; the
	 *   header is in `record`).
	 * EFAULT: the record (or the TLS block) is not readable memory.
	 * EFORMAT: the record pointer is not 2-aligned.
	 * ESRCH: the thread exited before or while it was read.
	 * EPERM: not allowed to attach (or traced by another tracer).
	 * ESYS: ptrace failed otherwise (errno in sys_errno).
	 */
	int status;
	int sys_errno;
	unsigned int anomalies;  /* OTEL_THREAD_CTX_INSPECT_* bits */
	unsigned int module;     /* index in info->modules of the slot read */
	uint64_t thread_pointer;
	uint64_t slot_address;   /* 0 when not computed */
	uint64_t record_address; /* the slot's value */
	uint16_t attrs_data_size; /* as found in the process, before clamping */
	struct otel_thread_ctx_record record;
};

typedef struct otel_thread_ctx_inspector otel_thread_ctx_inspector;

/*
 * Examines process `pid` as described above and stores a new inspector in
 * *out.  Attaches to no thread.
 * Errors: ENULL; ESRCH (no such process); EPERM (its maps or memory are not
 * readable: see Permissions); ENOSLOT (no loaded module defines the slot);
 * EMODEL (a module defines it, but none is reached in a way this inspector
 * supports, or the process is of another architecture, or its C library
 * is unknown where the DTV is needed); EFAULT (a GOT entry or TLS
 * descriptor cannot be read); ENOMEM; ESYS.  *out is set only on success.
 */
int otel_thread_ctx_inspect_open(pid_t pid, otel_thread_ctx_inspector **out);

/* What open found; valid until otel_thread_ctx_inspect_close(). */
const struct otel_thread_ctx_inspect_info *
otel_thread_ctx_inspect_info(const otel_thread_ctx_inspector *insp);

/* The name of attribute key `index` in the process context's key map, or
 * NULL (no process context, or no such index). */
const char *otel_thread_ctx_inspect_key_name(const otel_thread_ctx_inspector *insp,
					     unsigned int index);

/*
 * Reads thread `tid` of the process into *out.  The return value is
 * out->status, except ENULL.  `tid` must be a thread of the inspected
 * process (ESRCH otherwise).
 */
int otel_thread_ctx_inspect_thread(otel_thread_ctx_inspector *insp, pid_t tid,
				   struct otel_thread_ctx_inspect_thread *out);

/*
 * Reads every thread in /proc/PID/task, in that order, into out[0 ..
 * cap - 1], and stores in *count how many threads there were (more than
 * cap: only cap were read).  Each entry has its own status.
 * Errors: ENULL (out NULL with cap > 0, or count NULL); ESRCH (the process
 * is gone); ESYS.
 */
int otel_thread_ctx_inspect_threads(otel_thread_ctx_inspector *insp,
				    struct otel_thread_ctx_inspect_thread *out, size_t cap,
				    size_t *count);

/* Frees an inspector.  NULL is accepted. */
void otel_thread_ctx_inspect_close(otel_thread_ctx_inspector *insp);

#ifdef __cplusplus
}
#endif

#endif /* OTEL_THREAD_CTX_INSPECT_H */
