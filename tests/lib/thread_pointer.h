/* SPDX-License-Identifier: Apache-2.0 */
/* The calling thread's thread pointer (the psABIs' TP: the %fs base on
 * x86-64, tpidr_el0 on aarch64), for the tests that check where the slot
 * lies relative to it. */
#ifndef OTEL_TESTS_THREAD_POINTER_H
#define OTEL_TESTS_THREAD_POINTER_H

#include <stdint.h>

static inline uintptr_t thread_pointer(void)
{
	uintptr_t tp;

#if defined(__x86_64__)
	__asm__ volatile("mov %%fs:0, %0" : "=r"(tp));
#elif defined(__aarch64__)
	__asm__ volatile("mrs %0, tpidr_el0" : "=r"(tp));
#else
#error "the tests know the thread pointer of x86-64 and aarch64 only"
#endif
	return tp;
}

#endif /* OTEL_TESTS_THREAD_POINTER_H */
