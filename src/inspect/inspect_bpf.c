/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where the slot is: how each module of a process is described for the
 * walk of otel_thread_ctx_inspect_bpf.h, which the inspector (threads.c)
 * runs for every thread and hands to eBPF readers
 * (otel_thread_ctx_inspect_bpf_proc()); the one table of DTV layouts it
 * needs; and the signature of a process's mapped files that tells a reader
 * when to describe it again.  It calls nothing of
 * discovery.c or threads.c.
 */
#include <string.h>

#include "inspect.h"
#include "otel_thread_ctx_inspect_bpf.h"
#include "remote.h"

/*
 * The DTV layouts, per C library, on the CPU the inspector is built for
 * (it reads processes of that CPU only).  dtv_at: where the thread's DTV
 * pointer is, from the thread pointer; count_at: where the number of
 * entries is, from the DTV pointer; entry: the size of an entry, whose
 * first word is the block's address (index = module id).
 *
 *   x86-64 (TLS variant II: the TCB at the thread pointer, static TLS
 *   below it): both keep the DTV pointer in the TCB's second word.
 *   aarch64 (variant I: a 16-byte TCB at the thread pointer, static TLS
 *   above it): glibc in the TCB's first word, musl in the last word of its
 *   thread descriptor, just below the thread pointer.
 *   glibc's pointer is to entry 1 of an array of {pointer, to_free} whose
 *   entry 0 holds the length (so at -16); musl's to an array of pointers
 *   whose entry 0 is the count.
 */
static const struct dtv_layout {
	int libc;
	int64_t dtv_at, count_at;
	uint32_t entry;
} dtv_layouts[] = {
#if defined(__x86_64__)
	{ OTEL_THREAD_CTX_INSPECT_LIBC_GLIBC, 8, -16, 16 },
	{ OTEL_THREAD_CTX_INSPECT_LIBC_MUSL, 8, 0, 8 },
#elif defined(__aarch64__)
	{ OTEL_THREAD_CTX_INSPECT_LIBC_GLIBC, 0, -16, 16 },
	{ OTEL_THREAD_CTX_INSPECT_LIBC_MUSL, -8, 0, 8 },
#else
#error "otel-thread-ctx: the inspector supports x86-64 and aarch64 only"
#endif
};

void otel__inspect_dtv_layout(int libc, struct otel_thread_ctx_bpf_proc *proc)
{
	memset(proc, 0, sizeof(*proc));
	proc->libc = (uint32_t)libc;
	for (size_t i = 0; i < sizeof(dtv_layouts) / sizeof(dtv_layouts[0]); i++) {
		if (dtv_layouts[i].libc != libc)
			continue;
		proc->dtv_at = dtv_layouts[i].dtv_at;
		proc->dtv_count_at = dtv_layouts[i].count_at;
		proc->dtv_entry_size = dtv_layouts[i].entry;
	}
}

int otel__inspect_describe_module(const struct otel_thread_ctx_inspect_module *m,
				  const struct otel_thread_ctx_bpf_proc *layout,
				  struct otel_thread_ctx_bpf_module *out)
{
	memset(out, 0, sizeof(*out));
	switch (m->model) {
	case OTEL_THREAD_CTX_INSPECT_TLSDESC_STATIC:
	case OTEL_THREAD_CTX_INSPECT_INITIAL_EXEC:
	case OTEL_THREAD_CTX_INSPECT_LOCAL_EXEC:
		out->kind = OTEL_THREAD_CTX_BPF_KIND_STATIC;
		out->tp_offset = m->tp_offset;
		return OTEL_THREAD_CTX_OK;
	case OTEL_THREAD_CTX_INSPECT_TLSDESC_DYNAMIC:
	case OTEL_THREAD_CTX_INSPECT_GENERAL_DYNAMIC:
		/* A DTV walk needs the C library's layout; module ids are
		 * small (the inspector refuses others when it reads them). */
		if (layout->dtv_entry_size == 0 || m->module_id == 0 || m->module_id > UINT32_MAX)
			return OTEL_THREAD_CTX_EMODEL;
		out->kind = OTEL_THREAD_CTX_BPF_KIND_DTV;
		out->module_id = (uint32_t)m->module_id;
		out->dtv_offset = m->dtv_offset;
		return OTEL_THREAD_CTX_OK;
	}
	return OTEL_THREAD_CTX_EMODEL;
}

/*
 * Each mapping of a file from its start: its address, device, inode and
 * path (image.c).  Not its end or permissions, which change as the loader
 * protects a module's RELRO part.
 */
static int sign_mapping(const struct otel__maps_entry *e, void *arg)
{
	otel__inspect_sign_file_mapping(arg, e);
	return 0;
}

OTEL_EXPORT int otel_thread_ctx_inspect_maps_signature(pid_t pid, uint64_t *signature)
{
	uint64_t h = OTEL__SIGNATURE_INIT;
	int err;

	if (signature == NULL)
		return OTEL_THREAD_CTX_ENULL;
	if (pid <= 0)
		return OTEL_THREAD_CTX_ESRCH;
	err = otel__remote_file_maps(otel__remote_memory_task(pid), sign_mapping, &h);
	if (err != OTEL_THREAD_CTX_OK)
		return err;
	*signature = h;
	return OTEL_THREAD_CTX_OK;
}

OTEL_EXPORT int otel_thread_ctx_inspect_signature(const otel_thread_ctx_inspector *insp,
						  uint64_t *signature)
{
	if (insp == NULL || signature == NULL)
		return OTEL_THREAD_CTX_ENULL;
	*signature = insp->maps_signature;
	return OTEL_THREAD_CTX_OK;
}
