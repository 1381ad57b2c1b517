/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Not a baseline but a yardstick: the pointer swap done on the slot through
 * the library's own access sequence (the inline TLSDESC asm of arch/, here
 * to the exported otel_thread_ctx_v1), in a shared library called through
 * the PLT like the others.  Against (b) it shows what the hand-written
 * sequence costs over the one the compiler inlines; against the API
 * functions, what their bookkeeping costs over the bare access.  The
 * benchmark stores its own marker pointers there, while the thread publishes
 * nothing and nothing reads the slot, and leaves it NULL.
 *
 * bench-archive compiles this file into the executable with OTEL__OWN_SLOT,
 * as the static library is compiled: the access is then the one the static
 * library makes, to its own slot, which the linker relaxes to local-exec.
 */
#include <stddef.h>

#include "baseline.h"
#include "src/tls.h"

__attribute__((visibility("default"))) void *bench_own_swap(void *value)
{
	const struct otel_thread_ctx_record **slot = otel__slot_in_effect();
	void *old = (void *)__atomic_load_n(slot, __ATOMIC_RELAXED);

	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(slot, (const struct otel_thread_ctx_record *)value, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	return old;
}
