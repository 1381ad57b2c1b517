/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The counting allocator of counting-malloc.h.  A bump allocator over one
 * large anonymous mapping: a block is never reused, so a block's header
 * stays readable after free and a double free is caught.  Memory from the
 * mapping starts zeroed, which is all calloc needs.  Thread-safe with
 * atomics only (it runs inside the loader and inside thread exit).
 *
 * Built with -fno-builtin, so that the compiler does not turn code in here
 * into calls to the functions being defined.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "counting-malloc.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
	__has_feature(memory_sanitizer)
#define SANITIZED 1
#endif
#endif

#ifdef SANITIZED

/* The sanitizer runtimes' allocator statistics (ASan, TSan, LSan); gcc
 * ships no header for it. */
size_t __sanitizer_get_current_allocated_bytes(void);

enum counting_malloc_mode counting_malloc_mode(void)
{
	return COUNTING_MALLOC_SANITIZER;
}

size_t counting_malloc_heap_bytes(void)
{
	return __sanitizer_get_current_allocated_bytes();
}

void counting_malloc_watch(uintptr_t lo, uintptr_t hi)
{
	(void)lo, (void)hi;
}

long counting_malloc_live(void)
{
	return -1;
}

long counting_malloc_total(void)
{
	return -1;
}

int counting_malloc_check_slots(void *const *(*slot_of)(void))
{
	(void)slot_of;
	return 0;
}

int counting_malloc_forbid(int on)
{
	(void)on;
	return 0;
}

#else


/* Everything allocated in the life of a test process. */
#define ARENA_SIZE ((size_t)1 << 30)
#define HEADER 16u
#define MAGIC_LIVE 0x6c697665u
#define MAGIC_FREED 0x66726565u

struct header {
	uint32_t magic;
	uint32_t watched; /* allocated from the watched range */
	size_t size;
};

_Static_assert(sizeof(struct header) == HEADER, "header size");

static char *arena;
static size_t used;
static uintptr_t watch_lo, watch_hi;
static long live, total;
static size_t heap_bytes;

static void die(const char *msg)
{
	ssize_t rc = write(2, msg, strlen(msg));

	(void)rc;
	abort();
}

/* --- The free-time check and forbidden allocation ------------------------- */

#define SLOTS_MAX 4096

/* The slots of the live threads (counting_malloc_check_slots()): entries
 * are claimed and released with atomics. */
static void *const *slots[SLOTS_MAX];
static int slots_used; /* entries ever claimed: the scan's bound */
static void *const *(*slot_of_thread)(void);
/* This thread's slot, watched until the thread is gone (its pthread-key
 * destructors run after it left the table). */
static __thread void *const *own_slot;
static __thread int forbidden;

static int claim_entry(void *const *slot)
{
	for (int i = 0; i < SLOTS_MAX; i++) {
		void *const *none = NULL;

		if (__atomic_compare_exchange_n(&slots[i], &none, slot, false, __ATOMIC_ACQ_REL,
						__ATOMIC_RELAXED)) {
			int used = __atomic_load_n(&slots_used, __ATOMIC_RELAXED);

			while (used <= i && !__atomic_compare_exchange_n(&slots_used, &used, i + 1,
									 true, __ATOMIC_RELEASE,
									 __ATOMIC_RELAXED))
				;
			return i;
		}
	}
	die("counting-malloc: more than 4096 threads to watch\n");
	return -1;
}

static void watch_this_thread(void)
{
	void *const *(*of)(void) = __atomic_load_n(&slot_of_thread, __ATOMIC_ACQUIRE);

	if (of != NULL && own_slot == NULL)
		own_slot = of();
}

static bool points_into(void *const *slot, const char *p, size_t size)
{
	const char *v = __atomic_load_n((const char *const *)slot, __ATOMIC_RELAXED);

	return v != NULL && v >= p && v < p + (size != 0 ? size : 1);
}

/* Called before the block at p (size bytes) is freed. */
static void check_slots(const char *p, size_t size)
{
	if (__atomic_load_n(&slot_of_thread, __ATOMIC_RELAXED) == NULL)
		return;
	if (own_slot != NULL && points_into(own_slot, p, size))
		die("counting-malloc: free of a block this thread's slot points into\n");
	for (int i = 0, n = __atomic_load_n(&slots_used, __ATOMIC_ACQUIRE); i < n; i++) {
		void *const *slot = __atomic_load_n(&slots[i], __ATOMIC_ACQUIRE);

		if (slot != NULL && points_into(slot, p, size))
			die("counting-malloc: free of a block another thread's slot points into\n");
	}
}

int counting_malloc_check_slots(void *const *(*slot_of)(void))
{
	__atomic_store_n(&slot_of_thread, slot_of, __ATOMIC_RELEASE);
	watch_this_thread();
	/* The calling thread (main, usually) for the rest of the process. */
	claim_entry(own_slot);
	return 1;
}

int counting_malloc_forbid(int on)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	forbidden = on;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	return 1;
}

/*
 * Locks, forbidden where allocation is: the library's functions documented
 * as async-signal-safe take none.  The C library's own locking does not
 * come through here (it uses internal names); the library's, and a static
 * library's in this executable, does.
 */
#define FORBID_LOCK(name, params, args)                                         \
	int name params                                                         \
	{                                                                       \
		static int(*real) params;                                       \
                                                                                \
		if (forbidden)                                                  \
			die("counting-malloc: " #name "() where it is forbidden " \
			    "(a signal handler)\n");                              \
		if (real == NULL)                                               \
			*(void **)&real = dlsym(RTLD_NEXT, #name);              \
		if (real == NULL)                                               \
			die("counting-malloc: no " #name "() to call\n");       \
		return real args;                                               \
	}

FORBID_LOCK(pthread_mutex_lock, (pthread_mutex_t *m), (m))
FORBID_LOCK(pthread_mutex_trylock, (pthread_mutex_t *m), (m))
FORBID_LOCK(pthread_rwlock_rdlock, (pthread_rwlock_t *l), (l))
FORBID_LOCK(pthread_rwlock_wrlock, (pthread_rwlock_t *l), (l))
FORBID_LOCK(pthread_spin_lock, (pthread_spinlock_t *l), (l))

struct start {
	void *(*fn)(void *);
	void *arg;
};

static void leave_table(void *entry)
{
	__atomic_store_n(&slots[(intptr_t)entry], NULL, __ATOMIC_RELEASE);
}

static void *watched_start(void *arg)
{
	struct start st = *(struct start *)arg;
	intptr_t entry;
	void *ret;

	free(arg);
	watch_this_thread();
	entry = claim_entry(own_slot);
	pthread_cleanup_push(leave_table, (void *)entry);
	ret = st.fn(st.arg);
	pthread_cleanup_pop(1);
	return ret;
}

int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	struct start *st;
	int rc;

	if (real == NULL)
		*(void **)&real = dlsym(RTLD_NEXT, "pthread_create");
	if (real == NULL)
		die("counting-malloc: no pthread_create to call\n");
	if (__atomic_load_n(&slot_of_thread, __ATOMIC_ACQUIRE) == NULL)
		return real(thread, attr, fn, arg);
	st = malloc(sizeof(*st));
	if (st == NULL)
		return EAGAIN;
	st->fn = fn;
	st->arg = arg;
	rc = real(thread, attr, watched_start, st);
	if (rc != 0)
		free(st);
	return rc;
}

static char *get_arena(void)
{
	char *a = __atomic_load_n(&arena, __ATOMIC_ACQUIRE);

	if (a == NULL) {
		char *expected = NULL;
		void *m = mmap(NULL, ARENA_SIZE, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

		if (m == MAP_FAILED)
			die("counting-malloc: cannot map the arena\n");
		if (__atomic_compare_exchange_n(&arena, &expected, (char *)m, false,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			a = m;
		else
			munmap(m, ARENA_SIZE), a = expected;
	}
	return a;
}

static bool in_arena(const void *p)
{
	const char *a = __atomic_load_n(&arena, __ATOMIC_ACQUIRE);

	return a != NULL && (const char *)p >= a && (const char *)p < a + ARENA_SIZE;
}

/* size bytes aligned to `align` (a power of two, at least 16) for a call
 * made from `caller`. */
static void *allocate(size_t size, size_t align, const void *caller)
{
	char *a = get_arena();
	size_t need, start, p;
	struct header *h;

	if (forbidden)
		die("counting-malloc: allocation where it is forbidden (a signal handler)\n");
	if (size > ARENA_SIZE || align > ARENA_SIZE / 2) {
		errno = ENOMEM;
		return NULL;
	}
	need = (HEADER + align - 1 + size + 15) & ~(size_t)15;
	start = __atomic_fetch_add(&used, need, __ATOMIC_RELAXED);
	if (start > ARENA_SIZE - need) {
		errno = ENOMEM;
		return NULL;
	}
	p = ((uintptr_t)a + start + HEADER + align - 1) & ~(uintptr_t)(align - 1);
	h = (struct header *)(p - HEADER);
	h->size = size;
	h->watched = 0;
	if ((uintptr_t)caller >= __atomic_load_n(&watch_lo, __ATOMIC_RELAXED) &&
	    (uintptr_t)caller < __atomic_load_n(&watch_hi, __ATOMIC_RELAXED)) {
		h->watched = 1;
		__atomic_fetch_add(&live, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&total, 1, __ATOMIC_RELAXED);
	}
	h->magic = MAGIC_LIVE;
	__atomic_fetch_add(&heap_bytes, size, __ATOMIC_RELAXED);
	return (void *)p;
}

static void release(void *p)
{
	struct header *h;

	/* NULL, or memory this allocator did not hand out (a loader's
	 * allocation from before it was reachable): nothing to do. */
	if (p == NULL || !in_arena(p))
		return;
	if (forbidden)
		die("counting-malloc: free where it is forbidden (a signal handler)\n");
	h = (struct header *)((char *)p - HEADER);
	if (h->magic == MAGIC_FREED)
		die("counting-malloc: double free\n");
	if (h->magic != MAGIC_LIVE)
		die("counting-malloc: free of a pointer it did not allocate\n");
	check_slots(p, h->size);
	h->magic = MAGIC_FREED;
	__atomic_fetch_sub(&heap_bytes, h->size, __ATOMIC_RELAXED);
	if (h->watched)
		__atomic_fetch_sub(&live, 1, __ATOMIC_RELAXED);
}

enum counting_malloc_mode counting_malloc_mode(void)
{
	/* A call through the symbol, as any caller makes it. */
	void *(*volatile fn)(size_t) = malloc;
	void *p = fn(1);
	bool ours = in_arena(p);

	free(p);
	return ours ? COUNTING_MALLOC_BLOCKS : COUNTING_MALLOC_REPLACED;
}

void counting_malloc_watch(uintptr_t lo, uintptr_t hi)
{
	__atomic_store_n(&watch_lo, lo, __ATOMIC_RELAXED);
	__atomic_store_n(&watch_hi, hi, __ATOMIC_RELAXED);
}

long counting_malloc_live(void)
{
	return __atomic_load_n(&live, __ATOMIC_RELAXED);
}

long counting_malloc_total(void)
{
	return __atomic_load_n(&total, __ATOMIC_RELAXED);
}

size_t counting_malloc_heap_bytes(void)
{
	return __atomic_load_n(&heap_bytes, __ATOMIC_RELAXED);
}

#define CALLER __builtin_return_address(0)

void *malloc(size_t size)
{
	return allocate(size, 16, CALLER);
}

void *calloc(size_t n, size_t size)
{
	if (size != 0 && n > SIZE_MAX / size) {
		errno = ENOMEM;
		return NULL;
	}
	return allocate(n * size, 16, CALLER);
}

void *realloc(void *old, size_t size)
{
	void *p;

	if (old != NULL && !in_arena(old))
		die("counting-malloc: realloc of a pointer it did not allocate\n");
	p = allocate(size, 16, CALLER);
	if (p != NULL && old != NULL) {
		size_t old_size = ((struct header *)((char *)old - HEADER))->size;

		memcpy(p, old, old_size < size ? old_size : size);
		release(old);
	}
	return p;
}

void free(void *p)
{
	release(p);
}

static size_t fit_align(size_t align)
{
	return align < 16 ? 16 : align;
}

static bool power_of_two(size_t v)
{
	return v != 0 && (v & (v - 1)) == 0;
}

int posix_memalign(void **out, size_t align, size_t size)
{
	void *p;

	if (!power_of_two(align) || align % sizeof(void *) != 0)
		return EINVAL;
	p = allocate(size, fit_align(align), CALLER);
	if (p == NULL)
		return ENOMEM;
	*out = p;
	return 0;
}

void *aligned_alloc(size_t align, size_t size)
{
	if (!power_of_two(align)) {
		errno = EINVAL;
		return NULL;
	}
	return allocate(size, fit_align(align), CALLER);
}

void *memalign(size_t align, size_t size);
void *memalign(size_t align, size_t size)
{
	if (!power_of_two(align)) {
		errno = EINVAL;
		return NULL;
	}
	return allocate(size, fit_align(align), CALLER);
}

void *valloc(size_t size);
void *valloc(size_t size)
{
	return allocate(size, (size_t)sysconf(_SC_PAGESIZE), CALLER);
}

void *pvalloc(size_t size);
void *pvalloc(size_t size)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return allocate((size + page - 1) & ~(page - 1), page, CALLER);
}

size_t malloc_usable_size(void *p);
size_t malloc_usable_size(void *p)
{
	if (p == NULL || !in_arena(p))
		return 0;
	return ((struct header *)((char *)p - HEADER))->size;
}

#endif /* SANITIZED */
