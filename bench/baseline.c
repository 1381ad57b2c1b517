/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A baseline for the benchmark: the least a shared library can do to publish
 * a thread-local pointer.  Built three times, as three shared libraries that
 * differ only in how the compiler reaches the thread-local variable
 * (bench/meson.build gives each its -ftls-model or -mtls-dialect):
 *
 *   bench_ie   initial-exec: one load of the variable's offset from the GOT
 *   bench_desc TLS descriptor (gcc -mtls-dialect=gnu2, aarch64 desc)
 *   bench_gd   general dynamic, through __tls_get_addr (gnu, aarch64 trad)
 *
 * BENCH_MODEL is the suffix of every name, so the three can be linked into
 * one executable.  The variable is global with default visibility, as
 * otel_thread_ctx_v1 is, so the compiler cannot turn the access into a
 * cheaper local one.
 */
#include <stddef.h>

#include "baseline.h"

#define BENCH_CAT_(a, b) a##b
#define BENCH_CAT(a, b) BENCH_CAT_(a, b)
#define BENCH_NAME(name) BENCH_CAT(BENCH_CAT(bench_, BENCH_MODEL), name)

__attribute__((visibility("default"))) __thread void *BENCH_NAME(_slot);

/* The pointer swap every writer does: load the old value, store the new
 * one, with the same relaxed atomics and compiler fences as the library. */
__attribute__((visibility("default"))) void *BENCH_NAME(_swap)(void *value)
{
	void *old = __atomic_load_n(&BENCH_NAME(_slot), __ATOMIC_RELAXED);

	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&BENCH_NAME(_slot), value, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	return old;
}

/* The cost of the call alone: the same kind of call, no TLS access. */
__attribute__((visibility("default"))) void *BENCH_NAME(_nop)(void *value)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	return value;
}
