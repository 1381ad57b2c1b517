/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libotel-thread-ctx-inspect, for eBPF readers: the structures a BPF program
 * and its user-space side share (the same layout in both, checked below),
 * and the slot walk both the BPF reader and the inspector run.
 * Reference: man 3 otel_thread_ctx_inspect_bpf_proc; doc/sampler.md.
 *
 * struct otel_thread_ctx_bpf_proc says how a thread of one process reaches
 * its slot from its thread pointer: user space fills it with
 * otel_thread_ctx_inspect_bpf_proc() and puts it in a map keyed by process
 * id; otel_thread_ctx_reader.bpf.h follows it.  With several modules, the
 * first whose slot is not NULL is read; with none, the thread is UNREADABLE
 * if a slot could not be read, else NO_CONTEXT if a slot was NULL, else
 * NO_TLS.  struct otel_thread_ctx_bpf_event is one sample.
 */
#ifndef OTEL_THREAD_CTX_INSPECT_BPF_H
#define OTEL_THREAD_CTX_INSPECT_BPF_H

#if defined(__bpf__)
/* The BPF program includes vmlinux.h or <linux/types.h> first. */
#define OTEL_THREAD_CTX_BPF_U8 __u8
#define OTEL_THREAD_CTX_BPF_U16 __u16
#define OTEL_THREAD_CTX_BPF_U32 __u32
#define OTEL_THREAD_CTX_BPF_U64 __u64
#define OTEL_THREAD_CTX_BPF_S64 __s64
#else
#include <stddef.h>
#include <stdint.h>
#define OTEL_THREAD_CTX_BPF_U8 uint8_t
#define OTEL_THREAD_CTX_BPF_U16 uint16_t
#define OTEL_THREAD_CTX_BPF_U32 uint32_t
#define OTEL_THREAD_CTX_BPF_U64 uint64_t
#define OTEL_THREAD_CTX_BPF_S64 int64_t
#endif

/* Modules defining the slot that one process description holds. */
#define OTEL_THREAD_CTX_BPF_MAX_MODULES 4
/* The record: a 28-byte header, then at most 612 bytes of attributes. */
#define OTEL_THREAD_CTX_BPF_HEADER_SIZE 28
#define OTEL_THREAD_CTX_BPF_ATTRS_MAX 612

/* How a module's slot is found (struct otel_thread_ctx_bpf_module.kind). */
#define OTEL_THREAD_CTX_BPF_KIND_STATIC 1 /* thread pointer + tp_offset */
#define OTEL_THREAD_CTX_BPF_KIND_DTV 2    /* DTV[module_id] + dtv_offset */

/* struct otel_thread_ctx_bpf_proc.flags */
/* The process has more modules defining the slot than the description
 * holds: only the first OTEL_THREAD_CTX_BPF_MAX_MODULES are read. */
#define OTEL_THREAD_CTX_BPF_PROC_TRUNCATED 1u

/* struct otel_thread_ctx_bpf_proc.libc (as in otel_thread_ctx_inspect.h) */
#define OTEL_THREAD_CTX_BPF_LIBC_UNKNOWN 0
#define OTEL_THREAD_CTX_BPF_LIBC_GLIBC 1
#define OTEL_THREAD_CTX_BPF_LIBC_MUSL 2

struct otel_thread_ctx_bpf_module {
	union {
		OTEL_THREAD_CTX_BPF_S64 tp_offset; /* KIND_STATIC */
		/* KIND_DTV with glibc: the lowest DTV generation at which a
		 * thread's entry is this module's (0: not checked). */
		OTEL_THREAD_CTX_BPF_U64 dtv_gen;
	};
	OTEL_THREAD_CTX_BPF_U64 dtv_offset; /* KIND_DTV: the slot's offset in the block */
	OTEL_THREAD_CTX_BPF_U32 kind;
	OTEL_THREAD_CTX_BPF_U32 module_id;  /* KIND_DTV: the module's DTV index, >= 1 */
};

struct otel_thread_ctx_bpf_proc {
	OTEL_THREAD_CTX_BPF_U32 module_count; /* 1 .. OTEL_THREAD_CTX_BPF_MAX_MODULES */
	OTEL_THREAD_CTX_BPF_U32 flags;        /* OTEL_THREAD_CTX_BPF_PROC_* */
	/* The DTV layout, used by KIND_DTV modules (0 when the C library is
	 * unknown: then no module is KIND_DTV). */
	OTEL_THREAD_CTX_BPF_S64 dtv_at;
	OTEL_THREAD_CTX_BPF_S64 dtv_count_at;
	OTEL_THREAD_CTX_BPF_U32 dtv_entry_size;
	OTEL_THREAD_CTX_BPF_U32 libc; /* OTEL_THREAD_CTX_BPF_LIBC_* */
	struct otel_thread_ctx_bpf_module modules[OTEL_THREAD_CTX_BPF_MAX_MODULES];
};

/* What a read found (struct otel_thread_ctx_bpf_event.status). */
enum otel_thread_ctx_bpf_status {
	/* A valid record: header and attributes copied (at most 612 bytes;
	 * the event's attrs_data_size is the size found). */
	OTEL_THREAD_CTX_BPF_OK = 0,
	/* The slot is NULL: the thread publishes nothing. */
	OTEL_THREAD_CTX_BPF_NO_CONTEXT = 1,
	/* Dynamic TLS: the thread has no block for the module (it never
	 * touched the library), so no context either. */
	OTEL_THREAD_CTX_BPF_NO_TLS = 2,
	/* valid != 1: a lost sample (header copied). */
	OTEL_THREAD_CTX_BPF_INVALID = 3,
	/* attrs_data_size > 612, header copied: reported only by programs
	 * built with an earlier otel_thread_ctx_reader.bpf.h. */
	OTEL_THREAD_CTX_BPF_OVERSIZED = 4,
	/* The slot, the DTV or the record could not be read at that instant:
	 * the context is unknown (otel_thread_ctx_reader.bpf.h, "UNREADABLE
	 * samples"). */
	OTEL_THREAD_CTX_BPF_UNREADABLE = 5,
	/* The record pointer is odd (records are 2-aligned). */
	OTEL_THREAD_CTX_BPF_MISALIGNED = 6,
	/* The thread is exiting (PF_EXITING): nothing is read. */
	OTEL_THREAD_CTX_BPF_EXITING = 7,
	OTEL_THREAD_CTX_BPF_STATUS_COUNT = 8,
};

/* The record as OTEP 4947 lays it out (struct otel_thread_ctx_record). */
struct otel_thread_ctx_bpf_record {
	OTEL_THREAD_CTX_BPF_U8 trace_id[16];
	OTEL_THREAD_CTX_BPF_U8 span_id[8];
	OTEL_THREAD_CTX_BPF_U8 valid;
	OTEL_THREAD_CTX_BPF_U8 trace_flags;
	OTEL_THREAD_CTX_BPF_U16 attrs_data_size;
	OTEL_THREAD_CTX_BPF_U8 attrs_data[OTEL_THREAD_CTX_BPF_ATTRS_MAX];
};

struct otel_thread_ctx_bpf_event {
	OTEL_THREAD_CTX_BPF_U64 time_ns;        /* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	OTEL_THREAD_CTX_BPF_U64 record_address; /* the slot's value; 0 when not read */
	OTEL_THREAD_CTX_BPF_U32 pid;            /* process (thread group) id */
	OTEL_THREAD_CTX_BPF_U32 tid;            /* thread id */
	OTEL_THREAD_CTX_BPF_U32 status;         /* enum otel_thread_ctx_bpf_status */
	OTEL_THREAD_CTX_BPF_U16 attrs_data_size; /* as found, before the bound */
	OTEL_THREAD_CTX_BPF_U8 module;          /* index of the module read */
	OTEL_THREAD_CTX_BPF_U8 cpu;             /* CPU of the sample, modulo 256 */
	struct otel_thread_ctx_bpf_record record;
};

/* Offset of the record in the event. */
#define OTEL_THREAD_CTX_BPF_EVENT_RECORD 32

/* The bytes of `ev` that hold something, which a BPF program passes on. */
static inline OTEL_THREAD_CTX_BPF_U32
otel_thread_ctx_bpf_event_size(const struct otel_thread_ctx_bpf_event *ev)
{
	OTEL_THREAD_CTX_BPF_U32 n = OTEL_THREAD_CTX_BPF_EVENT_RECORD;

	if (ev->status == OTEL_THREAD_CTX_BPF_OK) {
		OTEL_THREAD_CTX_BPF_U32 a = ev->record.attrs_data_size;

		/* Checked by the reader; bounded again for the verifier. */
		if (a > OTEL_THREAD_CTX_BPF_ATTRS_MAX)
			a = OTEL_THREAD_CTX_BPF_ATTRS_MAX;
		n += OTEL_THREAD_CTX_BPF_HEADER_SIZE + a;
	} else if (ev->status == OTEL_THREAD_CTX_BPF_INVALID ||
		   ev->status == OTEL_THREAD_CTX_BPF_OVERSIZED) {
		n += OTEL_THREAD_CTX_BPF_HEADER_SIZE;
	}
	return n;
}

/*
 * The slot walk of module m of a thread whose thread pointer is tp, written
 * once for both readers, each making the 8-byte reads it asks for:
 *
 *	rc = otel_thread_ctx_bpf_walk_start(&w, proc, m, tp);
 *	for (n = 0; n < OTEL_THREAD_CTX_BPF_WALK_READS; n++) {
 *		if (rc != OTEL_THREAD_CTX_BPF_WALK_READ)
 *			break;
 *		failed = (read the 8 bytes at w.addr into v) != 0;
 *		rc = otel_thread_ctx_bpf_walk_next(&w, proc, m, v, failed);
 *	}
 *
 * rc is then OK (w.slot, and w.record not 0), NO_CONTEXT (w.slot),
 * NO_TLS or UNREADABLE.
 */
#if defined(__bpf__)
#define OTEL_THREAD_CTX_BPF_WALK_FN static inline __attribute__((always_inline))
#else
#define OTEL_THREAD_CTX_BPF_WALK_FN static inline
#endif

/* otel_thread_ctx_bpf_walk_start()/_next(): read w->addr and go on.  Not
 * an enum otel_thread_ctx_bpf_status: a walk never ends with it. */
#define OTEL_THREAD_CTX_BPF_WALK_READ 64
/* The most reads one module's walk asks for: the DTV pointer, its count,
 * the module's entry, the DTV generation, the slot. */
#define OTEL_THREAD_CTX_BPF_WALK_READS 5

/* struct otel_thread_ctx_bpf_walk.step: what the read asked for is. */
#define OTEL__BPF_WALK_DTV 1   /* the DTV pointer, at tp + dtv_at */
#define OTEL__BPF_WALK_COUNT 2 /* the DTV's count of entries */
#define OTEL__BPF_WALK_ENTRY 3 /* the module's entry: its block */
#define OTEL__BPF_WALK_GEN 4   /* the DTV's generation, entry 0 */
#define OTEL__BPF_WALK_SLOT 5  /* the slot: the record pointer */

struct otel_thread_ctx_bpf_walk {
	OTEL_THREAD_CTX_BPF_U64 addr;   /* the read asked for */
	OTEL_THREAD_CTX_BPF_U64 slot;   /* the slot's address, once known */
	OTEL_THREAD_CTX_BPF_U64 record; /* what the slot holds (OK) */
	OTEL_THREAD_CTX_BPF_U64 dtv;
	OTEL_THREAD_CTX_BPF_U64 block;
	OTEL_THREAD_CTX_BPF_U32 step; /* OTEL__BPF_WALK_* */
	OTEL_THREAD_CTX_BPF_U32 unused;
};

/* The slot is at `slot`: read it. */
OTEL_THREAD_CTX_BPF_WALK_FN int otel__bpf_walk_slot(struct otel_thread_ctx_bpf_walk *w,
						   OTEL_THREAD_CTX_BPF_U64 slot)
{
	w->slot = slot;
	w->addr = slot;
	w->step = OTEL__BPF_WALK_SLOT;
	return OTEL_THREAD_CTX_BPF_WALK_READ;
}

/* Module m's block in this thread is w->block. */
OTEL_THREAD_CTX_BPF_WALK_FN int otel__bpf_walk_block(struct otel_thread_ctx_bpf_walk *w,
						    const struct otel_thread_ctx_bpf_module *m)
{
	/* Not allocated yet: 0 (musl), TLS_DTV_UNALLOCATED, all ones (glibc). */
	if (w->block == 0 || w->block == ~(OTEL_THREAD_CTX_BPF_U64)0)
		return OTEL_THREAD_CTX_BPF_NO_TLS;
	return otel__bpf_walk_slot(w, w->block + m->dtv_offset);
}

/* The first step: WALK_READ (w->addr), or UNREADABLE for a description it
 * cannot follow. */
OTEL_THREAD_CTX_BPF_WALK_FN int
otel_thread_ctx_bpf_walk_start(struct otel_thread_ctx_bpf_walk *w,
			       const struct otel_thread_ctx_bpf_proc *proc,
			       const struct otel_thread_ctx_bpf_module *m, OTEL_THREAD_CTX_BPF_U64 tp)
{
	w->addr = 0;
	w->slot = 0;
	w->record = 0;
	w->dtv = 0;
	w->block = 0;
	w->step = 0;
	w->unused = 0;
	if (m->kind == OTEL_THREAD_CTX_BPF_KIND_STATIC)
		return otel__bpf_walk_slot(w, tp + (OTEL_THREAD_CTX_BPF_U64)m->tp_offset);
	if (m->kind != OTEL_THREAD_CTX_BPF_KIND_DTV || proc->dtv_entry_size == 0)
		return OTEL_THREAD_CTX_BPF_UNREADABLE;
	w->addr = tp + (OTEL_THREAD_CTX_BPF_U64)proc->dtv_at;
	w->step = OTEL__BPF_WALK_DTV;
	return OTEL_THREAD_CTX_BPF_WALK_READ;
}

/* The next step, given the `value` read at w->addr (or `failed`): WALK_READ
 * or the module's status. */
OTEL_THREAD_CTX_BPF_WALK_FN int
otel_thread_ctx_bpf_walk_next(struct otel_thread_ctx_bpf_walk *w,
			      const struct otel_thread_ctx_bpf_proc *proc,
			      const struct otel_thread_ctx_bpf_module *m, OTEL_THREAD_CTX_BPF_U64 value,
			      int failed)
{
	OTEL_THREAD_CTX_BPF_U64 id = m->module_id;

	if (failed)
		return OTEL_THREAD_CTX_BPF_UNREADABLE;
	switch (w->step) {
	case OTEL__BPF_WALK_DTV:
		if (value == 0)
			return OTEL_THREAD_CTX_BPF_UNREADABLE;
		w->dtv = value;
		w->addr = value + (OTEL_THREAD_CTX_BPF_U64)proc->dtv_count_at;
		w->step = OTEL__BPF_WALK_COUNT;
		return OTEL_THREAD_CTX_BPF_WALK_READ;
	case OTEL__BPF_WALK_COUNT:
		/* A thread whose DTV predates the module's load has fewer
		 * entries. */
		if (id == 0 || id > value)
			return OTEL_THREAD_CTX_BPF_NO_TLS;
		w->addr = w->dtv + id * proc->dtv_entry_size;
		w->step = OTEL__BPF_WALK_ENTRY;
		return OTEL_THREAD_CTX_BPF_WALK_READ;
	case OTEL__BPF_WALK_ENTRY:
		w->block = value;
		if (m->dtv_gen == 0)
			return otel__bpf_walk_block(w, m);
		w->addr = w->dtv;
		w->step = OTEL__BPF_WALK_GEN;
		return OTEL_THREAD_CTX_BPF_WALK_READ;
	case OTEL__BPF_WALK_GEN:
		/* An entry older than the module: the thread has not touched
		 * it since it was loaded (dtv_gen above). */
		if (value < m->dtv_gen)
			return OTEL_THREAD_CTX_BPF_NO_TLS;
		return otel__bpf_walk_block(w, m);
	case OTEL__BPF_WALK_SLOT:
		w->record = value;
		return value != 0 ? OTEL_THREAD_CTX_BPF_OK : OTEL_THREAD_CTX_BPF_NO_CONTEXT;
	}
	return OTEL_THREAD_CTX_BPF_UNREADABLE;
}

/* The rule for several modules: fold the status of each module without a
 * record into `seen` (from 0), then take the thread's status from it.
 * Branch-free, so that the verifier checks the unrolled loop once. */
OTEL_THREAD_CTX_BPF_WALK_FN OTEL_THREAD_CTX_BPF_U32
otel_thread_ctx_bpf_walk_fold(OTEL_THREAD_CTX_BPF_U32 seen, int module_status)
{
	return seen | (1u << ((OTEL_THREAD_CTX_BPF_U32)module_status & 7u));
}

OTEL_THREAD_CTX_BPF_WALK_FN int otel_thread_ctx_bpf_walk_status(OTEL_THREAD_CTX_BPF_U32 seen)
{
	OTEL_THREAD_CTX_BPF_U32 u = (seen >> OTEL_THREAD_CTX_BPF_UNREADABLE) & 1u;
	OTEL_THREAD_CTX_BPF_U32 n = (seen >> OTEL_THREAD_CTX_BPF_NO_CONTEXT) & 1u & ~u;

	return (int)(OTEL_THREAD_CTX_BPF_NO_TLS * (1u - u - n) + OTEL_THREAD_CTX_BPF_UNREADABLE * u +
		     OTEL_THREAD_CTX_BPF_NO_CONTEXT * n);
}

#ifdef __cplusplus
#define OTEL_THREAD_CTX_BPF_ASSERT(c, m) static_assert(c, m)
#else
#define OTEL_THREAD_CTX_BPF_ASSERT(c, m) _Static_assert(c, m)
#endif
OTEL_THREAD_CTX_BPF_ASSERT(sizeof(struct otel_thread_ctx_bpf_module) == 24, "module size");
OTEL_THREAD_CTX_BPF_ASSERT(sizeof(struct otel_thread_ctx_bpf_proc) ==
				   32 + 24 * OTEL_THREAD_CTX_BPF_MAX_MODULES,
			   "proc size");
OTEL_THREAD_CTX_BPF_ASSERT(sizeof(struct otel_thread_ctx_bpf_record) == 640, "record size");
OTEL_THREAD_CTX_BPF_ASSERT(__builtin_offsetof(struct otel_thread_ctx_bpf_record, attrs_data) ==
				   OTEL_THREAD_CTX_BPF_HEADER_SIZE,
			   "record header size");
OTEL_THREAD_CTX_BPF_ASSERT(__builtin_offsetof(struct otel_thread_ctx_bpf_event, record) ==
				   OTEL_THREAD_CTX_BPF_EVENT_RECORD,
			   "event record offset");
OTEL_THREAD_CTX_BPF_ASSERT(sizeof(struct otel_thread_ctx_bpf_event) ==
				   OTEL_THREAD_CTX_BPF_EVENT_RECORD + 640,
			   "event size");
#undef OTEL_THREAD_CTX_BPF_ASSERT

#endif /* OTEL_THREAD_CTX_INSPECT_BPF_H */
