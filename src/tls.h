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

struct otel_thread_ctx;
struct otel_thread_ctx_record;

/*
 * Two thread-local objects, both defined in src/slot.S, one after the other
 * in one .tbss input section:
 *
 * - otel_thread_ctx_v1, the slot: exported, preemptible, 8 bytes.  Symbol
 *   resolution decides which module's definition the name reaches: this
 *   library's, or that of a module earlier in the lookup scope (the
 *   executable, another tracer's library).  That definition, the slot in
 *   effect, is the one readers find, so it is the one records are published
 *   in; but only its 8 bytes are the library's to write.
 * - otel__thread_state, this struct: hidden, so that no other definition can
 *   ever take its place, and reached through its own TLSDESC access.
 *
 * The slot in effect is found once per thread, when the thread first
 * publishes (first_publication() in src/thread_ctx.c), and kept in `slot`.
 * The shared library finds it through a TLSDESC access to the exported name,
 * which the dynamic loader resolves by the usual rules.  The static library
 * (OTEL__OWN_SLOT) never names the exported symbol: an executable's own
 * definition is always the one in effect, and an access to an exported
 * symbol is what GNU ld turns into a dynamic R_X86_64_TPOFF64 relocation in
 * a -static-pie executable, which glibc cannot apply at start-up.  It uses
 * its own slot, the 8 bytes right before this struct.
 */
struct otel__thread {
	/* The slot in effect in this thread; NULL until the thread first
	 * publishes. */
	const struct otel_thread_ctx_record **slot;
	/* The thread's records (src/pool.c): `pub`, the one it published
	 * last, which the slot points to while `shown`, and the draft, whose
	 * address is pub ^ flip.  NULL and 0 until the thread first publishes,
	 * and again after its exit cleanup. */
	struct otel_thread_ctx_record *pub;
	uintptr_t flip;
	/* FIELD_* (src/thread_ctx.c): the fields in which the draft differs
	 * from pub. */
	uint32_t stale;
	union {
		struct {
			/* SHOWN (src/thread_ctx.c) while the slot points to
			 * pub, with TRACED when pub has a trace id; 0 while the
			 * thread publishes nothing. */
			uint8_t shown;
			/* Non-zero while a publishing call (or save, or the
			 * exit cleanup) runs on the thread: a signal handler's
			 * call that finds it set interrupted one, and is refused
			 * with OTEL_THREAD_CTX_ENESTED. */
			uint8_t busy;
		};
		/* Both, so that a call's last store sets `shown` and gives the
		 * claim back at once (little-endian: shown is the low byte). */
		uint16_t shown_busy;
	};
	/* HOOKED (src/thread_ctx.c) while the thread-exit cleanup is
	 * registered, EXITED once it has run: the thread publishes no more. */
	uint8_t hooked;
};

#ifndef OTEL__ARCH_UNSUPPORTED
_Static_assert(sizeof(struct otel__thread) == 32, "src/slot.S reserves 32 bytes");
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "shown_busy: shown is the low byte");

OTEL__TLSDESC_ACCESSOR(otel__state_address, "otel__thread_state")

static inline struct otel__thread *otel__thread_self(void)
{
	return (struct otel__thread *)otel__state_address();
}

/* The library's own definition of the slot, in the calling thread. */
static inline const struct otel_thread_ctx_record **otel__own_slot(void)
{
	return (const struct otel_thread_ctx_record **)otel__state_address() - 1;
}

#ifdef OTEL__OWN_SLOT
static inline const struct otel_thread_ctx_record **otel__slot_in_effect(void)
{
	return otel__own_slot();
}
#else
OTEL__TLSDESC_ACCESSOR(otel__slot_in_effect_address, "otel_thread_ctx_v1")

/* The definition of otel_thread_ctx_v1 that symbol resolution picked for
 * this library, in the calling thread. */
static inline const struct otel_thread_ctx_record **otel__slot_in_effect(void)
{
	return (const struct otel_thread_ctx_record **)otel__slot_in_effect_address();
}
#endif
#endif /* !OTEL__ARCH_UNSUPPORTED */

#endif /* OTEL_TLS_H */
