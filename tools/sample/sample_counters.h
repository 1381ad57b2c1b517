/* SPDX-License-Identifier: Apache-2.0 */
/* The per-CPU counters of the sampler's BPF program, shared with user
 * space (sampler.c sums them over the CPUs). */
#ifndef OTEL_SAMPLE_COUNTERS_H
#define OTEL_SAMPLE_COUNTERS_H

enum otel_sample_counter {
	/* Every sample, of any process. */
	OTEL_SAMPLE_COUNTER_SAMPLES = 0,
	/* Samples of a described process passed on to user space. */
	OTEL_SAMPLE_COUNTER_SENT = 1,
	/* Samples of a described process lost: the ring buffer was full. */
	OTEL_SAMPLE_COUNTER_LOST = 2,
	OTEL_SAMPLE_COUNTERS = 3,
};

#endif /* OTEL_SAMPLE_COUNTERS_H */
