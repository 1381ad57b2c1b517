/* SPDX-License-Identifier: Apache-2.0 OR GPL-2.0-only */
/*
 * The BPF side of otel-thread-ctx-sample: on every perf event sample (one
 * per CPU, at the chosen frequency), if the interrupted task belongs to a
 * process user space describes in `procs`, read its thread context
 * (otel_thread_ctx_reader.bpf.h) and pass the event on through the ring buffer.
 * Samples of other processes cost one hash lookup.
 */
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "otel_thread_ctx_reader.bpf.h"
#include "sample_counters.h"
#include "sample_stack.h"

/* Process id -> how its threads reach the slot.  Sized by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct otel_thread_ctx_bpf_proc);
} procs SEC(".maps");

/* The events, to user space.  Sized by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} events SEC(".maps");

/* The event being built: too large for the 512-byte stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct otel_thread_ctx_bpf_event);
} scratch SEC(".maps");

/* With --stacks: the event and the user stack being built. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct otel_sample_stack_record);
} stack_scratch SEC(".maps");

/* Non-zero: pass each event on with the user stack (sample_stack.h). */
const volatile __u32 want_stacks = 0;

/* Wake the reader up only once this many bytes wait in the ring buffer
 * (0: at every event, when it is idle); it polls with a timeout for the
 * rest.  A wake-up per event would cost a task switch per sample. */
const volatile __u64 wakeup_bytes = 0;

/* Per-CPU counters (sample_counters.h). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, OTEL_SAMPLE_COUNTERS);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

static __always_inline void count(__u32 which)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &which);

	if (c != 0)
		*c += 1;
}

SEC("perf_event")
int otel_thread_ctx_sample(void *ctx)
{
	__u32 tgid = (__u32)(bpf_get_current_pid_tgid() >> 32), zero = 0;
	const struct otel_thread_ctx_bpf_proc *proc;
	struct otel_thread_ctx_bpf_event *ev;
	struct otel_sample_stack_record *sr = 0;
	void *out;
	__u64 flags = 0, size;

	count(OTEL_SAMPLE_COUNTER_SAMPLES);
	proc = bpf_map_lookup_elem(&procs, &tgid);
	if (proc == 0)
		return 0;
	if (want_stacks) {
		sr = bpf_map_lookup_elem(&stack_scratch, &zero);
		if (sr == 0)
			return 0;
		ev = &sr->ev;
	} else {
		ev = bpf_map_lookup_elem(&scratch, &zero);
		if (ev == 0)
			return 0;
	}
	otel_thread_ctx_bpf_read_current(proc, ev);
	ev->time_ns = bpf_ktime_get_ns();
	out = ev;
	size = otel_thread_ctx_bpf_event_size(ev);
	if (sr != 0) {
		/* Frame pointers: the sampled code keeps them or the walk
		 * stops early.  The whole event goes, then the frames. */
		long n = bpf_get_stack(ctx, sr->ips, sizeof(sr->ips), BPF_F_USER_STACK);

		sr->error = n < 0 ? (__u32)n : 0;
		if (n < 0)
			n = 0;
		n &= 0x3f8; /* at most 127 frames of 8 bytes, for the verifier */
		sr->nframes = (__u32)n / 8;
		out = sr;
		size = OTEL_SAMPLE_STACK_IPS + (__u64)n;
	}
	if (wakeup_bytes != 0)
		flags = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes ?
				BPF_RB_FORCE_WAKEUP :
				BPF_RB_NO_WAKEUP;
	if (bpf_ringbuf_output(&events, out, size, flags) != 0)
		count(OTEL_SAMPLE_COUNTER_LOST);
	else
		count(OTEL_SAMPLE_COUNTER_SENT);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
