/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the two halves of bench-readers share: the reader (readers.c, the
 * benchmark, main) runs the same executable again as its target
 * (readers-target.c), one process per size, and talks to it through two
 * pipes:
 *
 *   bench-readers --target KIND=N      KIND: anon, file or threads
 *
 *   stdout  one line once the process is built:
 *           "ready MAPPINGS THREADS" (what /proc/self/maps and
 *           /proc/self/task count then), or "failed REASON"
 *   stdin   end of input ends it (exit status 0); so does the reader's
 *           death (PR_SET_PDEATHSIG, SIGKILL)
 */
#ifndef OTEL_BENCH_READERS_H
#define OTEL_BENCH_READERS_H

#include <stdint.h>

/* The records the target's threads publish: trace id TARGET_TRACE_ID,
 * flags 1, one attribute (key TARGET_KEY, the value TARGET_VALUE), and a
 * span id that names the thread: TARGET_SPAN_TAG, three zero bytes, then
 * the thread id, big-endian.  The reader checks every record it reads
 * against the thread it read it from. */
#define TARGET_TRACE_ID "\x4b\xf9\x2f\x35\x77\xb3\x4d\xa6\xa3\xce\x92\x9d\x0e\x0e\x47\x36"
#define TARGET_SPAN_TAG 0x5a
#define TARGET_KEY "bench.reader"
#define TARGET_VALUE "reader-benchmark" /* 16 bytes */

static inline void target_span_id(uint8_t span[8], int32_t tid)
{
	uint32_t t = (uint32_t)tid;

	span[0] = TARGET_SPAN_TAG;
	span[1] = span[2] = span[3] = 0;
	span[4] = (uint8_t)(t >> 24);
	span[5] = (uint8_t)(t >> 16);
	span[6] = (uint8_t)(t >> 8);
	span[7] = (uint8_t)t;
}

/* The target, `spec` being what follows --target; never returns. */
_Noreturn void target_main(const char *spec);

#endif /* OTEL_BENCH_READERS_H */
