/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The user-space side of otel-thread-ctx-sample, shared with its tests
 * (tests/bpf/): loads the BPF program (sample.bpf.c, through the skeleton
 * bpftool generates at build time), opens one sampling perf event per CPU
 * and attaches the program to each, keeps the description of every watched
 * process in the program's map (otel_thread_ctx_inspect_bpf_proc()) up to
 * date, and hands each event the ring buffer delivers to a callback.
 *
 * Not thread-safe: one thread uses a sampler.  Errors are the negative
 * OTEL_SAMPLER_E* codes below, with a sentence in the caller's buffer.
 */
#ifndef OTEL_SAMPLER_H
#define OTEL_SAMPLER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <otel_thread_ctx_inspect_bpf.h>
#include <otel_thread_ctx_inspect.h>

#include "sample_counters.h"
#include "sample_stack.h"

enum otel_sampler_error {
	OTEL_SAMPLER_OK = 0,
	/* bpf() or perf_event_open() refused: not root (no CAP_BPF and
	 * CAP_PERFMON), kernel lockdown, a sysctl, seccomp or an LSM. */
	OTEL_SAMPLER_EPERM = -1,
	/* The kernel has no BTF (/sys/kernel/btf/vmlinux), which CO-RE
	 * needs. */
	OTEL_SAMPLER_ENOBTF = -2,
	/* The program did not load (the verifier refused it, say); libbpf's
	 * messages say why. */
	OTEL_SAMPLER_ELOAD = -3,
	/* The perf event cannot be opened as asked: no hardware cycles
	 * counter, or a frequency above kernel.perf_event_max_sample_rate. */
	OTEL_SAMPLER_EEVENT = -4,
	/* Anything else: a system call, memory. */
	OTEL_SAMPLER_ESYS = -5,
};

struct otel_sampler_options {
	/* Samples per second on each CPU. */
	unsigned int frequency;
	/* Non-zero: hardware CPU cycles instead of the cpu-clock timer. */
	int cycles;
	/* Ring buffer size, a power of two of at least a page (0: 8 MiB). */
	unsigned int ring_bytes;
	/* Processes the map can describe at once (0: 4096). */
	unsigned int max_procs;
	/* Non-zero: each event carries the user stack (otel_sampler_stack()). */
	int stacks;
};

/* With options.stacks, the user stack of the event being handed to the
 * callback: frames leaf first (return addresses after the first);
 * `error` is bpf_get_stack()'s (negative errno) when it found none. */
struct otel_sampler_stack {
	const uint64_t *ips;
	unsigned int n;
	int error;
};

/* One event: the whole structure, zero beyond the `size` bytes the program
 * passed on. */
typedef void (*otel_sampler_event_fn)(void *arg, const struct otel_thread_ctx_bpf_event *ev,
				      size_t size);

/* A watched process. */
struct otel_sampler_proc {
	pid_t pid;
	/* OTEL_THREAD_CTX_OK when described (in the map); otherwise why
	 * not, from the inspector: ENOSLOT (no module defines the slot, yet),
	 * EMODEL, EPERM, ...; ESRCH once the process has exited. */
	int status;
	/* While described: the inspector (key names, modules) and what the
	 * map holds. */
	otel_thread_ctx_inspector *insp;
	struct otel_thread_ctx_bpf_proc desc;
	/* Descriptions stored so far. */
	unsigned int generation;
	/* The maps signature the last look was based on. */
	uint64_t signature;
	/* Describe again at the next refresh even if the signature is the
	 * same (the last look may have raced with the loader). */
	int recheck;
	/* Found by scanning /proc: looked at by the inspector only when a
	 * file it maps names the slot in its .dynstr. */
	int scanned;
};

struct otel_sampler;

/*
 * Loads the program.  Processes can be watched from then on; sampling
 * starts with otel_sampler_start().  `why` (may be NULL) receives a sentence
 * on failure.  libbpf's own messages (the verifier's log when a program is
 * refused) are kept, not printed: otel_sampler_print_log() prints them.
 */
int otel_sampler_open(const struct otel_sampler_options *options, otel_sampler_event_fn fn,
		      void *arg, struct otel_sampler **out, char *why, size_t whylen);

/* Prints the messages libbpf gave since the process started (the last
 * 64 KiB of them). */
void otel_sampler_print_log(FILE *f);

/* Opens the perf events and attaches the program to them. */
int otel_sampler_start(struct otel_sampler *s, char *why, size_t whylen);

/*
 * Watches process `pid`: describes it now if it publishes a thread
 * context, and again whenever otel_sampler_refresh() sees its modules
 * change.  Returns the process's status (OTEL_THREAD_CTX_OK, or the
 * inspector's error); ESRCH (no such process) adds nothing.
 */
int otel_sampler_watch(struct otel_sampler *s, pid_t pid);

/*
 * Looks at every watched process again: those whose maps signature changed
 * (a module loaded or unloaded) are described again, those that exited are
 * dropped from the map (status ESRCH).  With `scan`, processes that appeared
 * since the last scan of /proc are watched too.  Returns the number of
 * processes currently described.
 */
int otel_sampler_refresh(struct otel_sampler *s, int scan);

/* Describes `pid` again now, key names included (after the process
 * registered new attribute keys, say).  Returns its status. */
int otel_sampler_redescribe(struct otel_sampler *s, pid_t pid);

/* The watched processes, in the order they were found. */
size_t otel_sampler_procs(const struct otel_sampler *s, const struct otel_sampler_proc **procs);
const struct otel_sampler_proc *otel_sampler_find(const struct otel_sampler *s, pid_t pid);

/* Waits up to timeout_ms for events and hands each one to the callback.
 * Returns how many were handled, or OTEL_SAMPLER_ESYS. */
int otel_sampler_poll(struct otel_sampler *s, int timeout_ms);

/* The stack of the event the callback is handling; NULL without
 * options.stacks or outside the callback. */
const struct otel_sampler_stack *otel_sampler_stack(const struct otel_sampler *s);

/* The program's counters (sample_counters.h), summed over the CPUs. */
void otel_sampler_counters(const struct otel_sampler *s, uint64_t out[OTEL_SAMPLE_COUNTERS]);

/* CPUs with a perf event. */
unsigned int otel_sampler_cpus(const struct otel_sampler *s);

/* kernel.perf_event_max_sample_rate, the highest frequency perf events may
 * be asked for, in Hz; 0 if it cannot be read. */
unsigned long otel_sampler_max_frequency(void);

void otel_sampler_close(struct otel_sampler *s);

#endif /* OTEL_SAMPLER_H */
