/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A replacement malloc for test programs that must prove "no memory stays
 * behind for an exited thread" where mallinfo2() does not exist (musl) or
 * cannot see the library's allocations apart from the loader's (dlopen,
 * dynamic TLS).  counting-malloc.c defines malloc, calloc, realloc, free and
 * the aligned variants in the executable, which interposes them for the whole
 * process, libc and the loader included; each block remembers whether it was
 * allocated by a call from a watched code range (the library's text), and
 * the program reads how many of those blocks are still live.
 *
 * A sanitizer (ASan, TSan) brings its own allocator and cannot share the
 * process with another one: then counting-malloc.c defines no allocator,
 * and only counting_malloc_heap_bytes() works, reporting what the
 * sanitizer's allocator counts.
 */
#ifndef OTEL_TESTS_COUNTING_MALLOC_H
#define OTEL_TESTS_COUNTING_MALLOC_H

#include <stddef.h>
#include <stdint.h>

enum counting_malloc_mode {
	/* This allocator: blocks from the watched range are counted. */
	COUNTING_MALLOC_BLOCKS,
	/* A sanitizer's allocator: only counting_malloc_heap_bytes() works. */
	COUNTING_MALLOC_SANITIZER,
	/* Replaced at run time by a tool (valgrind redirects malloc and free in
	 * the executable too): nothing is counted here, the tool checks leaks. */
	COUNTING_MALLOC_REPLACED,
};

enum counting_malloc_mode counting_malloc_mode(void);

/* Blocks allocated from now on by calls whose return address is in
 * [lo, hi) are counted.  One range at a time. */
void counting_malloc_watch(uintptr_t lo, uintptr_t hi);

/* Blocks from the watched range allocated and not yet freed. */
long counting_malloc_live(void);

/* Blocks from the watched range allocated in all. */
long counting_malloc_total(void);

/* Bytes allocated and not freed in the whole process, by any caller. */
size_t counting_malloc_heap_bytes(void);

/*
 * The free-time check: from now on, freeing (or reallocating) a block that
 * the thread-context slot of a live thread points into aborts the program
 * at that moment, with a message: a reader of that slot would read freed
 * memory.  `slot_of` returns the calling thread's slot (&otel_thread_ctx_v1,
 * or its address from dlsym()); it is called for this thread now and, from
 * then on, for every thread pthread_create() starts (counting-malloc.c
 * interposes it), whose slot is watched until its start routine returns or
 * it calls pthread_exit(), and by the thread itself until it is gone.
 * Returns 1 when the check is on, 0 where this allocator is not in use
 * (see counting_malloc_mode()).
 */
int counting_malloc_check_slots(void *const *(*slot_of)(void));

/*
 * Allocation and locks forbidden on the calling thread while `on`
 * (nesting is not counted): any allocation, free, or lock of a pthread
 * mutex, rwlock or spinlock it makes aborts the program with a message.
 * For signal handlers that call the functions documented not to allocate
 * and to take no lock.  Returns 1 when the check is on, 0 where this allocator is not
 * in use.
 */
int counting_malloc_forbid(int on);

#endif /* OTEL_TESTS_COUNTING_MALLOC_H */
