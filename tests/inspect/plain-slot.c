/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A writer the library did not build: the slot defined by plain C, and
 * reached by whatever TLS access the compiler and linker make of it with
 * the flags it is built with (tests/inspect/meson.build lists them: TLSDESC,
 * general-dynamic, initial-exec in a shared library; local-exec and
 * initial-exec in an executable; local-dynamic).  target.c publishes its
 * hand-built records through plain_slot_publish() and tells the runner the
 * slot's address from plain_slot_address(), both this file's own accesses.
 *
 *   PLAIN_SLOT_EXTERN  only name the slot (extern): its definition comes
 *                      from another object of the same executable, built
 *                      with PLAIN_SLOT_DEFINE_ONLY, so that the compiler
 *                      reaches it the initial-exec way
 *   PLAIN_SLOT_BIG     a 64 KiB TLS array ahead of the slot: initialised,
 *                      so in .tdata, which the linker puts before .tbss
 *   PLAIN_SLOT_LOCAL_DYNAMIC  reach the slot through a hidden alias: the
 *                      module-relative (local-dynamic) access, with no
 *                      relocation against the exported symbol
 */
#include <stddef.h>

#define PLAIN_API __attribute__((visibility("default")))

#ifdef PLAIN_SLOT_EXTERN
extern __thread void *otel_thread_ctx_v1;
#else
#ifdef PLAIN_SLOT_BIG
__attribute__((used)) static __thread unsigned char plain_big[65536] = { 1 };
#endif
PLAIN_API __thread void *otel_thread_ctx_v1;
#endif

#ifndef PLAIN_SLOT_DEFINE_ONLY

#ifdef PLAIN_SLOT_LOCAL_DYNAMIC
extern __thread void *plain_slot_alias
	__attribute__((alias("otel_thread_ctx_v1"), visibility("hidden")));
#define PLAIN_SLOT plain_slot_alias
#else
#define PLAIN_SLOT otel_thread_ctx_v1
#endif

PLAIN_API void **plain_slot_address(void);
PLAIN_API void plain_slot_publish(const void *record);

/* The slot's address in the calling thread, as this module's code
 * reaches it. */
PLAIN_API void **plain_slot_address(void)
{
	return &PLAIN_SLOT;
}

/* Publishes a record the caller built completely beforehand. */
PLAIN_API void plain_slot_publish(const void *record)
{
	__atomic_store_n(&PLAIN_SLOT, (void *)record, __ATOMIC_RELEASE);
}

#endif /* PLAIN_SLOT_DEFINE_ONLY */
