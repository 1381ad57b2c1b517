/* SPDX-License-Identifier: Apache-2.0 */
/* The calling thread's part of the library: the slot and what the library
 * keeps beside it.  The only way the library reaches thread-local storage. */
#ifndef OTEL_TLS_H
#define OTEL_TLS_H

#include <stdint.h>

#if !defined(__linux__)
#error "otel-thread-ctx supports Linux only: it needs ELF TLS descriptors"
#define OTEL__ARCH_UNSUPPORTED 1
#elif defined(__x86_64__) && !defined(__ILP32__)
#include "x86_64/tlsdesc.h"
#elif defined(__aarch64__) && defined(__AARCH64EL__) && !defined(__ILP32__)
#include "aarch64/tlsdesc.h"
#else
#error "otel-thread-ctx supports x86-64 (LP64) and little-endian aarch64 (LP64) only"
#define OTEL__ARCH_UNSUPPORTED 1
#endif

#ifdef OTEL__ARCH_UNSUPPORTED
/* Keeps the #error above the only diagnostic. */
static inline void **otel__slot_address(void) { return 0; }
#endif

struct otel_thread_ctx;
struct otel_thread_ctx_record;

/*
 * src/slot.S defines otel_thread_ctx_v1 as the first 8 bytes of a 24-byte
 * block in one .tbss input section, so the rest of this struct lies in the
 * same thread's TLS right after the slot, in every TLS model, and one TLSDESC
 * access reaches all of it.  The symbol's size stays 8: readers see only the
 * slot.
 */
struct otel__thread {
	/* otel_thread_ctx_v1: NULL, or the published record of `ctx`. */
	const struct otel_thread_ctx_record *slot;
	/* The attached context; owned by this thread. */
	struct otel_thread_ctx *ctx;
	/* Non-zero once the thread-exit cleanup is registered. */
	uintptr_t exit_hook;
};

#ifndef OTEL__ARCH_UNSUPPORTED
_Static_assert(sizeof(struct otel__thread) == 24, "src/slot.S reserves 24 bytes");
#endif

static inline struct otel__thread *otel__thread_self(void)
{
	return (struct otel__thread *)otel__slot_address();
}

#endif /* OTEL_TLS_H */
