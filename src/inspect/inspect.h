/* SPDX-License-Identifier: Apache-2.0 */
/* Internal to libotel-thread-ctx-inspect: never installed. */
#ifndef OTEL_INSPECT_INTERNAL_H
#define OTEL_INSPECT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "format.h"
#include "otel_thread_ctx_inspect.h"
#include "otel_thread_ctx_inspect_bpf.h"

/*
 * The inspector is three files, one job each:
 *   discovery.c  open(): the modules that define the slot and how each
 *                one's code reaches it; the description, the key map, close()
 *   threads.c    reading a thread: attach, stop, walk, read, detach, on a
 *                tracer thread of the inspector's own
 *   image.c      the process changing under the reads (exit, exec, a
 *                module loaded or unloaded)
 */

struct tracer; /* threads.c */
struct otel__maps_entry; /* remote.h */

/* process_read.c: the mappings that may hold the process context, as a
 * pass over the maps finds them (the first 16, in address order). */
#define OTEL__PROCESS_CANDIDATES_MAX 16
struct otel__process_candidate {
	uint64_t start, end;
};
struct otel__process_candidates {
	struct otel__process_candidate c[OTEL__PROCESS_CANDIDATES_MAX];
	size_t n;
};
/* Adds the line e of /proc/PID/maps to c when it may hold the context. */
void otel__inspect_process_candidate(struct otel__process_candidates *c,
				     const struct otel__maps_entry *e);
/* otel_thread_ctx_inspect_process_read() of process `pid`, on candidates
 * its caller found in its own pass over the maps. */
int otel__inspect_process_read_candidates(pid_t pid, const struct otel__process_candidates *c,
					  struct otel_thread_ctx_inspect_process_snapshot **out);

/* A module found, with what the inspector keeps of it besides the public
 * description. */
struct found_module {
	struct otel_thread_ctx_inspect_module m;
	char *path;
	/* Where the walk finds its slot (inspect_bpf.c), the DTV generation
	 * of resolve_model() included. */
	struct otel_thread_ctx_bpf_module where;
};

struct otel_thread_ctx_inspector {
	struct otel_thread_ctx_inspect_info info;
	/* info.modules: count of them, in address order; found[i] is
	 * modules[i]'s own. */
	struct otel_thread_ctx_inspect_module *modules;
	struct found_module *found;
	size_t count, cap;
	/* The DTV layout of the process's C library, for the walk; `where`
	 * the modules' entries in order, as the BPF description copies them. */
	struct otel_thread_ctx_bpf_proc layout;
	struct otel_thread_ctx_bpf_module *where;
	struct otel_thread_ctx_inspect_process_snapshot *pctx;
	/* The thread that attaches to the threads read (tracer_*() below). */
	struct tracer *tracer;
	/* The image open() described (image_mark()): where its AT_RANDOM
	 * bytes are and what they were (mark_known: read); and the maps
	 * signature when open() began (signature_known: taken). */
	uint64_t mark_at;
	unsigned char mark[16];
	bool mark_known, signature_known;
	uint64_t signature;
	/* otel_thread_ctx_inspect_maps_signature()'s, from the same pass. */
	uint64_t maps_signature;
	/* The task through which open() reads the process's memory and
	 * files: its pid, or a thread's when the leader has exited
	 * (otel__remote_memory_task()).  A thread's record is read through
	 * that thread. */
	pid_t mem;
};

/* image.c: the mark of the image (its AT_RANDOM bytes) and the signature
 * of its modules' mappings, taken when open() begins; 0 or a negative
 * errno. */
int otel__inspect_image_mark(pid_t pid, uint64_t *at, unsigned char bytes[16]);
/* The signature's start, and its step for each line of the maps: a pass
 * over them that has other work to do computes it on the way. */
#define OTEL__SIGNATURE_INIT UINT64_C(0xcbf29ce484222325)
void otel__inspect_sign_module_mapping(uint64_t *sig, const struct otel__maps_entry *e);
/* The step of otel_thread_ctx_inspect_maps_signature(), which names the
 * paths too. */
void otel__inspect_sign_file_mapping(uint64_t *sig, const struct otel__maps_entry *e);
int otel__inspect_modules_signature(pid_t pid, uint64_t *sig);

/* image.c: OTEL_THREAD_CTX_OK when the process is still the image open()
 * described, read through task `via` (its maps compared too when `maps`);
 * else ESRCH (gone) or EAGAIN (changed). */
int otel__inspect_image_unchanged(const struct otel_thread_ctx_inspector *insp, pid_t via,
				  bool maps);

/* threads.c: ends insp's tracer thread, if it has one, once the kernel
 * has detached whatever it was attached to. */
void otel__inspect_tracer_end(otel_thread_ctx_inspector *insp);

/* Where the slot is (inspect_bpf.c): the description the inspector builds
 * at open, walks for every thread, and hands to eBPF readers. */

/* *proc zeroed, with the libc and the DTV layout of C library `libc` on
 * this CPU (all 0 when it is unknown: then no module may need the DTV). */
void otel__inspect_dtv_layout(int libc, struct otel_thread_ctx_bpf_proc *proc);

/* How module m's slot is found, given the process's DTV layout: 0, or
 * EMODEL (a DTV walk without a known layout, a module id out of range). */
int otel__inspect_describe_module(const struct otel_thread_ctx_inspect_module *m,
				  const struct otel_thread_ctx_bpf_proc *layout,
				  struct otel_thread_ctx_bpf_module *out);

#endif /* OTEL_INSPECT_INTERNAL_H */
