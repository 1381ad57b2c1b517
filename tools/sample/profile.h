/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The profile of otel-thread-ctx-sample: samples grouped by what their
 * thread context says (--by trace_id, span_id or attribute keys), each
 * group with the user stacks its samples carried (--stacks), and what the
 * tool writes from it: the group table and JSON lines, a pprof profile
 * (profile.proto), folded stacks and a flame graph (doc/sampler.md).
 *
 * Not thread-safe; one thread builds and writes a profile.
 */
#ifndef OTEL_SAMPLE_PROFILE_H
#define OTEL_SAMPLE_PROFILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <otel_thread_ctx_inspect_bpf.h>
#include <otel_thread_ctx_inspect.h>

#include "sample_stack.h"

/* Keys a profile groups by, at most. */
#define PROFILE_MAX_KEYS 8

/* What a group is. */
enum profile_kind {
	PROFILE_CONTEXT = 1,    /* a record: the values of the keys */
	PROFILE_NO_CONTEXT = 0, /* no record: no context, no TLS, exiting, invalid */
	PROFILE_BROKEN = 2,     /* a record that breaks the format, or unreadable */
};

/* A user stack, as the BPF program passed it on: ips[0] is the leaf. */
struct profile_stack {
	const uint64_t *ips;
	unsigned int n;
	int cut; /* the buffer filled up: outer frames may be missing */
};

struct profile;

/* `keys`: names given to --by ("trace_id", "span_id" or an attribute key
 * name), n <= PROFILE_MAX_KEYS.  NULL when out of memory. */
struct profile *profile_new(const char *const *keys, size_t n);
void profile_free(struct profile *p);

/*
 * Adds one sample.  `insp` names the attribute keys of the sample's
 * process (NULL: none are named); `stack` is NULL without --stacks.
 * Returns 0, or -1 when out of memory (the sample is then not counted).
 */
int profile_add(struct profile *p, const otel_thread_ctx_inspector *insp,
		const struct otel_thread_ctx_bpf_event *ev, const struct profile_stack *stack);

/* Samples added, and of those with a stack: empty ones, cut ones. */
uint64_t profile_samples(const struct profile *p);
void profile_stack_counts(const struct profile *p, uint64_t *with_stack, uint64_t *empty,
			  uint64_t *cut);

/*
 * The groups, largest first, the first `top` of them (0: all) and the rest
 * as one line.  Shares are of every sample added.
 *   table: `SAMPLES SHARE GROUP` lines, GROUP as ` key="value"` pairs
 *   JSON:  {"type":"group",...} lines
 */
void profile_print_groups(const struct profile *p, unsigned int top, int json);

/*
 * Frame names for the writers: `name` receives the function (or
 * module+offset, or "[unknown]") of address `ip` in process `pid`;
 * `leaf` says ip is where the sample hit (not a return address).
 */
typedef void (*profile_symbolize_fn)(void *arg, uint32_t pid, uint64_t ip, int leaf, char *name,
				     size_t len);

/*
 * Folded stacks: a line per (group, stack), the group's key values as
 * the root frames (`key=value`), then the stack from the outermost frame,
 * `;` between frames, a space and the count.  Returns 0, or -1 with errno.
 */
int profile_write_folded(const struct profile *p, FILE *f, profile_symbolize_fn sym, void *arg);

/* A flame graph as SVG: the groups at the root.  Returns 0 or -1. */
int profile_write_svg(const struct profile *p, FILE *f, const char *title,
		      profile_symbolize_fn sym, void *arg);

/* The mapping that holds an address, for pprof's Mapping messages. */
struct profile_mapping {
	uint64_t start, limit, offset; /* memory_start, memory_limit, file_offset */
	const char *filename;          /* "" for anonymous memory */
	const char *build_id;          /* hex; "" none */
	int has_functions;             /* the frame names in it are final */
	int is_main;                   /* the process's executable */
};

/* Fills *m with the mapping of address `ip` in process `pid` (`leaf` as
 * for profile_symbolize_fn): 0, or -1 when no mapping holds it. */
typedef int (*profile_mapping_fn)(void *arg, uint32_t pid, uint64_t ip, int leaf,
				  struct profile_mapping *m);

/* The function names pprof samples without frames get, as a location of
 * their own (pprof leaves out samples without one). */
#define PROFILE_NO_STACK "[no stack collected]" /* without --stacks */
#define PROFILE_EMPTY_STACK "[empty stack]"      /* the walk found no frame */

/*
 * A pprof profile (profile.proto): samples [samples/count, cpu/nanoseconds]
 * with `period_ns` per sample, labels trace_id, span_id and the grouping
 * keys; locations leaf first, each in its mapping (`map`; NULL or a
 * mapping not found: a mapping of its own, named "[unknown]"), the
 * mapping of the first process's executable first; a sample without
 * frames has the one location PROFILE_NO_STACK or PROFILE_EMPTY_STACK
 * (in a mapping of its own, of no file).  `gzip`: compressed (only when
 * built with zlib; else -1 with errno ENOTSUP).  Returns 0, or -1 with
 * errno.
 */
int profile_write_pprof(const struct profile *p, FILE *f, int gzip, uint64_t period_ns,
			uint64_t time_ns, uint64_t duration_ns, profile_symbolize_fn sym,
			profile_mapping_fn map, void *arg);

#endif /* OTEL_SAMPLE_PROFILE_H */
