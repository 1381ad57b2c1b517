/* SPDX-License-Identifier: Apache-2.0 */
/*
 * With --stacks, what the sampler's BPF program passes on for a sample: the
 * whole event, then the user stack bpf_get_stack(BPF_F_USER_STACK) unwound
 * (frame pointers), leaf first.  Shared with user space (sampler.c).
 */
#ifndef OTEL_SAMPLE_STACK_H
#define OTEL_SAMPLE_STACK_H

#include <otel_thread_ctx_inspect_bpf.h>

/* Frames a stack holds at most: the kernel's default
 * kernel.perf_event_max_stack.  A stack that fills them may be cut. */
#define OTEL_SAMPLE_MAX_FRAMES 127

struct otel_sample_stack_record {
	/* Frames in ips[]: the bytes bpf_get_stack() wrote / 8. */
	OTEL_THREAD_CTX_BPF_U32 nframes;
	/* bpf_get_stack()'s error (negative), or 0. */
	OTEL_THREAD_CTX_BPF_U32 error;
	struct otel_thread_ctx_bpf_event ev;
	OTEL_THREAD_CTX_BPF_U64 ips[OTEL_SAMPLE_MAX_FRAMES];
};

/* Offset of ips[]: what is passed on is this many bytes, and the frames. */
#define OTEL_SAMPLE_STACK_IPS (8 + 32 + 640)

#endif /* OTEL_SAMPLE_STACK_H */
