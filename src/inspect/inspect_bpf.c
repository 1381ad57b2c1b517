/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The inspector's description of a process for eBPF readers
 * (otel_thread_ctx_inspect.h, "eBPF readers"; otel_thread_ctx_inspect_bpf.h), and
 * the signature of its mapped files that tells a reader when to describe it
 * again.  Built on the public inspector API only: the inspector already read
 * the TLS descriptors and GOT entries that give each module's offset or
 * module id; what it leaves implicit, the DTV layout of the C library on
 * this CPU, comes from arch/<cpu>/regs.h.
 */
#include <string.h>

#include "inspect.h"
#include "otel_thread_ctx_inspect_bpf.h"
#include "remote.h"
#if defined(__x86_64__)
#include "x86_64/regs.h"
#elif defined(__aarch64__)
#include "aarch64/regs.h"
#else
#error "otel-thread-ctx: the inspector supports x86-64 and aarch64 only"
#endif

OTEL_EXPORT int otel_thread_ctx_inspect_bpf_proc(const otel_thread_ctx_inspector *insp,
						 struct otel_thread_ctx_bpf_proc *out)
{
	const struct otel_thread_ctx_inspect_info *info = otel_thread_ctx_inspect_info(insp);
	struct otel_thread_ctx_bpf_proc p;
	size_t n;

	if (info == NULL || out == NULL)
		return OTEL_THREAD_CTX_ENULL;
	memset(&p, 0, sizeof(p));
	p.libc = (uint32_t)info->libc;
	if (info->libc == OTEL_THREAD_CTX_INSPECT_LIBC_GLIBC) {
		/* The TCB's DTV pointer is to entry 1 of an array of 16-byte
		 * entries whose first holds the length. */
		p.dtv_at = OTEL__INSPECT_GLIBC_DTV_AT;
		p.dtv_count_at = -16;
		p.dtv_entry_size = 16;
	} else if (info->libc == OTEL_THREAD_CTX_INSPECT_LIBC_MUSL) {
		/* Entry 0 is the number of modules; 8-byte entries. */
		p.dtv_at = OTEL__INSPECT_MUSL_DTV_AT;
		p.dtv_count_at = 0;
		p.dtv_entry_size = 8;
	}
	n = info->module_count;
	if (n == 0)
		return OTEL_THREAD_CTX_ENOSLOT;
	if (n > OTEL_THREAD_CTX_BPF_MAX_MODULES) {
		n = OTEL_THREAD_CTX_BPF_MAX_MODULES;
		p.flags |= OTEL_THREAD_CTX_BPF_PROC_TRUNCATED;
	}
	for (size_t i = 0; i < n; i++) {
		const struct otel_thread_ctx_inspect_module *m = &info->modules[i];
		struct otel_thread_ctx_bpf_module *b = &p.modules[i];

		switch (m->model) {
		case OTEL_THREAD_CTX_INSPECT_TLSDESC_STATIC:
		case OTEL_THREAD_CTX_INSPECT_INITIAL_EXEC:
		case OTEL_THREAD_CTX_INSPECT_LOCAL_EXEC:
			b->kind = OTEL_THREAD_CTX_BPF_KIND_STATIC;
			b->tp_offset = m->tp_offset;
			break;
		case OTEL_THREAD_CTX_INSPECT_TLSDESC_DYNAMIC:
		case OTEL_THREAD_CTX_INSPECT_GENERAL_DYNAMIC:
			/* The inspector refuses these without a known C
			 * library; module ids are small. */
			if (p.dtv_entry_size == 0 || m->module_id == 0 || m->module_id > UINT32_MAX)
				return OTEL_THREAD_CTX_EMODEL;
			b->kind = OTEL_THREAD_CTX_BPF_KIND_DTV;
			b->module_id = (uint32_t)m->module_id;
			b->dtv_offset = m->dtv_offset;
			break;
		default:
			return OTEL_THREAD_CTX_EMODEL;
		}
	}
	p.module_count = (uint32_t)n;
	*out = p;
	return OTEL_THREAD_CTX_OK;
}

/* FNV-1a, 64 bits. */
static uint64_t fnv1a(uint64_t h, const void *data, size_t n)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= UINT64_C(0x100000001b3);
	}
	return h;
}

/*
 * Each mapping of a file from its start: its address, device, inode and
 * path.  Not its end or permissions, which change as the loader protects a
 * module's RELRO part.
 */
static int sign_mapping(const struct otel__maps_entry *e, void *arg)
{
	uint64_t *h = arg;

	if (e->offset != 0 || e->name[0] != '/')
		return 0;
	*h = fnv1a(*h, &e->start, sizeof(e->start));
	*h = fnv1a(*h, &e->dev_major, sizeof(e->dev_major));
	*h = fnv1a(*h, &e->dev_minor, sizeof(e->dev_minor));
	*h = fnv1a(*h, &e->inode, sizeof(e->inode));
	*h = fnv1a(*h, e->name, strlen(e->name) + 1);
	return 0;
}

OTEL_EXPORT int otel_thread_ctx_inspect_maps_signature(pid_t pid, uint64_t *signature)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325);
	int err;

	if (signature == NULL)
		return OTEL_THREAD_CTX_ENULL;
	if (pid <= 0)
		return OTEL_THREAD_CTX_ESRCH;
	err = otel__remote_maps(pid, sign_mapping, &h);
	if (err != OTEL_THREAD_CTX_OK)
		return err;
	*signature = h;
	return OTEL_THREAD_CTX_OK;
}
