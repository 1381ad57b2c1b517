/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Registers around the library's TLSDESC access, on the path the loader put
 * the library on (--expect=static|dynamic; the dynamic one is forced on glibc
 * with GLIBC_TUNABLES=glibc.rtld.optional_static_tls=0, and is the only one
 * musl has for a dlopen()ed library).
 *
 * usage: vector-regs LIBRARY ACCESSOR-MODULE caller|hostile --expect=static|dynamic
 *
 * The program dlopen()s the library, then the accessor module (accessor.c:
 * the library's access macro, arch/<cpu>/tlsdesc.h, compiled into
 * functions that hold values in registers across it, linked against the
 * library), and proves that the descriptors of both are on the expected
 * path (loader.h).  Two threads then run, one after the other: one created
 * before the dlopen(), whose first access to the library's TLS is the
 * accessor module's, and one created after it, whose first access is an API
 * call.  Each does both of these:
 *
 * (a) The access itself keeps what the compiler was told it keeps: values
 *     live in every vector register (%xmm0-%xmm15; v0-v31) and in general
 *     registers when it starts are there after it, and (x86-64) so is what a
 *     leaf function keeps in its red zone.  This is what the asm statement's
 *     clobber list, its step over the red zone and its stack alignment are
 *     for.
 * (b) A caller holds vector values live across calls into the API (the
 *     empty asm statements force them into registers right before each call
 *     and take them from there right after it); on aarch64 also d8-d15.
 * (c) The bytes a reader finds through the slot are exactly the records
 *     published (storm.h), after every call.
 *
 * caller: with the loader's own resolvers.  On glibc's dynamic path the
 *   first access of each thread takes the resolver's slow path (the program
 *   shows the thread's TLS block appear during it), and on x86-64 glibc
 *   before 2.40 (bug 31372; Debian 12 has 2.36) that path overwrites vector
 *   registers, against the TLSDESC convention.  On aarch64, where the access
 *   declares no vector register clobbered and relies on the convention,
 *   (a) shows that the resolvers keep it.
 * hostile: the same, with every TLS descriptor of the library and of the
 *   accessor module calling hostile_resolver (hostile-<cpu>.S), which calls
 *   the loader's resolver and then, on every call and every path, does what
 *   the convention lets a resolver do and, on x86-64, what glibc's does
 *   against it: overwrites %xmm0-%xmm15 and the flags, uses its red zone, and
 *   traps unless the stack is aligned.  The program checks that it was
 *   called by the library's accesses and by the module's.
 *
 * What fails where.  (a) in hostile mode fails on x86-64 if the asm's
 * clobber list lacks a vector register, if it does not step over the red
 * zone, or if it does not align the stack (tried by removing each: see
 * doc/testing.md); in caller mode only the first, and only where the
 * resolver really overwrites them.  On aarch64 (a) fails if a resolver
 * breaks the convention, or if the asm's clobber list lacks a general
 * register it changes.  (b) on x86-64 cannot fail through the access: the
 * psABI makes every vector register caller-saved, so across a call the
 * compiler keeps such values in memory; it checks that using the library
 * asks nothing more of its callers.  On aarch64 d8-d15 are callee-saved and
 * stay in their registers across the calls: (b) checks the library's code
 * and the resolver together.  Whether the library's own functions keep a
 * vector value in a register across their accesses is up to the compiler:
 * (c) would show such a value lost under the hostile resolver, and with gcc
 * 12 none is (the library's code is the same with or without the vector
 * clobbers), so (a) is what checks the clobber list.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "loader.h"
#include "check-lite.h"
#include "otel_thread_ctx.h"

static struct otel_api api;
#define STORM_CALL(name) api.name
#include "storm.h"

static void *lib, *accessor;
static struct module mod;
static enum tls_path expect;
static int hostile;
static pthread_barrier_t loaded;

/* The accessor module's functions (accessor.c). */
static int (*accessor_vectors)(void **slot);
static int (*accessor_integers)(void **slot);
#if defined(__x86_64__)
static int (*accessor_red_zone)(void **slot);
#endif
static int (*hostile_install)(volatile uintptr_t *desc);
static uint64_t (*hostile_count)(void);

#define ACCESSOR_FN(name)                                                      \
	do {                                                                   \
		void *p_ = loader_sym(accessor, #name);                        \
		memcpy(&name, &p_, sizeof(p_));                                \
	} while (0)

/* Hostile mode: the resolver was called, by whom, since `before`. */
static void check_hostile_calls(uint64_t before, const char *who)
{
	if (hostile)
		ck_assert_msg(hostile_count() > before, "%s: the hostile resolver was not called", who);
}

/* --- part (a) --- */

static void check_accessor(void)
{
	const struct otel_thread_ctx_record *volatile *slot;
	uint64_t calls = hostile_count();
	void *at = NULL;
	int lost;

	lost = accessor_vectors(&at);
	slot = slot_address(lib);
	ck_assert_msg(at == (void *)slot, "the access computed %p, the slot is at %p", at, (void *)slot);
	ck_assert_msg(lost == 0, "%d values held in vector registers across the access (or where the "
	      "compiler put them to keep them) were lost", lost);
	lost = accessor_integers(&at);
	ck_assert_msg(lost == 0, "%d values held in general registers across the access (or where the "
	      "compiler put them to keep them) were lost", lost);
#if defined(__x86_64__)
	lost = accessor_red_zone(&at);
	ck_assert_msg(lost == 0, "%d words of a leaf function's red zone lost across the access", lost);
#endif
	ck_assert_msg(at == (void *)slot, "the access computed %p, the slot is at %p", at, (void *)slot);
	check_hostile_calls(calls, "the accessor module's access");
}

/* --- parts (b) and (c) --- */

typedef uint64_t vec __attribute__((vector_size(16)));
#if defined(__x86_64__)
#define PIN(a, b, c, d) __asm__ volatile("" : "+x"(a), "+x"(b), "+x"(c), "+x"(d))
#else
#define PIN(a, b, c, d) __asm__ volatile("" : "+w"(a), "+w"(b), "+w"(c), "+w"(d))
#endif

static volatile uint64_t seed = 0x0123456789abcdefu;

static vec make(uint64_t k)
{
	vec v = { seed * (2 * k + 1), ~seed ^ k };

	return v;
}

static int same(vec a, vec b)
{
	return memcmp(&a, &b, sizeof(a)) == 0;
}

/*
 * CALL(expr): runs the API call `expr` with vector values held live across
 * it (and, on aarch64, values in the callee-saved d8-d15), then checks
 * them and the call's result.
 */
#if defined(__aarch64__)
#define HOLD_EXTRA_BEGIN                                                       \
	register double d8_ __asm__("d8") = 8.125;                             \
	register double d9_ __asm__("d9") = -9.375;                            \
	register double d10_ __asm__("d10") = 10.5;                            \
	register double d11_ __asm__("d11") = -11.75;                          \
	register double d12_ __asm__("d12") = 12.25;                           \
	register double d13_ __asm__("d13") = -13.625;                         \
	register double d14_ __asm__("d14") = 14.875;                          \
	register double d15_ __asm__("d15") = -15.0625;                        \
	__asm__ volatile("" : "+w"(d8_), "+w"(d9_), "+w"(d10_), "+w"(d11_),    \
			 "+w"(d12_), "+w"(d13_), "+w"(d14_), "+w"(d15_));
#define HOLD_EXTRA_END                                                         \
	__asm__ volatile("" : "+w"(d8_), "+w"(d9_), "+w"(d10_), "+w"(d11_),    \
			 "+w"(d12_), "+w"(d13_), "+w"(d14_), "+w"(d15_));      \
	ck_assert_msg(d8_ == 8.125 && d9_ == -9.375 && d10_ == 10.5 && d11_ == -11.75 && \
		      d12_ == 12.25 && d13_ == -13.625 && d14_ == 14.875 &&   \
		      d15_ == -15.0625,                                        \
	      "d8-d15 changed across %s", what);
#else
#define HOLD_EXTRA_BEGIN
#define HOLD_EXTRA_END
#endif

#define CALL(expr)                                                             \
	do {                                                                   \
		const char *what = #expr;                                      \
		vec a = make(1), b = make(2), c = make(3), d = make(4);        \
		int rc_;                                                       \
		HOLD_EXTRA_BEGIN                                               \
		PIN(a, b, c, d);                                               \
		rc_ = (expr);                                                  \
		PIN(a, b, c, d);                                               \
		HOLD_EXTRA_END                                                 \
		ck_assert_msg(same(a, make(1)) && same(b, make(2)) && same(c, make(3)) && \
		      same(d, make(4)), "vector values changed across %s", what); \
		ck_assert_msg(rc_ == 0, "%s returned %d", what, rc_);                  \
		calls++;                                                       \
	} while (0)

static void check_published(const struct otel_thread_ctx_record *volatile *slot, uint64_t n)
{
	uint64_t seq = 0;
	enum storm_read r = storm_classify(*slot, &seq);

	ck_assert_msg(r == STORM_READ_OK && seq == n, "reader sees read kind %d (sequence %llu), "
	      "expected the complete record %llu", (int)r, (unsigned long long)seq,
	      (unsigned long long)n);
}

/* Returns the API calls made. */
static unsigned long check_caller(uint64_t n)
{
	const struct otel_thread_ctx_record *volatile *slot;
	struct otel_thread_ctx_record r;
	otel_thread_ctx *ctx = NULL, *saved = NULL;
	uint64_t resolved = hostile_count();
	unsigned long calls = 0;

	/* create and the setters do not touch TLS. */
	ck_assert_int_eq(api.otel_thread_ctx_create(&ctx), 0);
	ck_assert_int_eq(api.otel_thread_ctx_create(&saved), 0);
	storm_expected(n, &r);
	ck_assert_int_eq(loader_put(&api, ctx, &r), 0);
	CALL(api.otel_thread_ctx_update(ctx));
	slot = slot_address(lib);
	check_published(slot, n);

	storm_expected(++n, &r);
	CALL(loader_put(&api, ctx, &r));
	CALL(api.otel_thread_ctx_attach(ctx, saved));
	check_published(slot, n);
	CALL(api.otel_thread_ctx_detach(NULL));
	ck_assert_msg(*slot == NULL, "detach left a record published");
	CALL(api.otel_thread_ctx_update(saved));
	check_published(slot, n - 1);
	CALL(api.otel_thread_ctx_save(saved));
	storm_expected(++n, &r);
	CALL(loader_update_all(&api, &r));
	check_published(slot, n);
	CALL(api.otel_thread_ctx_update_trace_flags(r.trace_flags));
	CALL(api.otel_thread_ctx_update_span_id(r.span_id));
	check_published(slot, n);
	CALL(api.otel_thread_ctx_detach(saved));
	ck_assert_msg(*slot == NULL, "detach left a record published");
	CALL(api.otel_thread_ctx_update(saved));
	check_published(slot, n);
	CALL(api.otel_thread_ctx_detach(NULL));
	api.otel_thread_ctx_destroy(ctx);
	api.otel_thread_ctx_destroy(saved);
	check_hostile_calls(resolved, "the library's accesses");
	return calls;
}

/* --- the two threads --- */

struct worker {
	pthread_t t;
	int early;     /* created before the dlopen(), waits for it */
	uint64_t seq;  /* first sequence number it publishes */
	unsigned long calls;
	int block_in_first; /* its TLS block appeared in its first access */
};

static void *worker(void *arg)
{
	struct worker *w = arg;
	void *before, *after;

	if (w->early)
		pthread_barrier_wait(&loaded);
	before = module_tls_data(&mod);
	/* The thread's first access to the library's TLS. */
	if (w->early)
		check_accessor();
	else
		w->calls = check_caller(w->seq);
	after = module_tls_data(&mod);
	w->block_in_first = before == NULL && after != NULL;
#ifdef __GLIBC__
	if (expect == PATH_DYNAMIC)
		ck_assert_msg(w->block_in_first, "the thread's TLS block should appear with its first "
		      "access (before %p, after %p)", before, after);
#endif
	if (w->early)
		w->calls = check_caller(w->seq);
	else
		check_accessor();
	return NULL;
}

static void report(const char *who, const struct worker *w)
{
	printf("thread created %s the dlopen(): registers kept across the access; %lu API calls, "
	       "vector values kept, records read back exact", who, w->calls);
	if (w->block_in_first)
		printf("; its TLS block was allocated in its first access, %s",
		       w->early ? "the accessor module's" : "an API call");
	printf("\n");
}

/* Hostile mode: hostile_resolver in every descriptor of `handle`. */
static int install_hostile(void *handle, const char *what)
{
	struct descriptors d = module_descriptors(handle);

	ck_assert_msg(d.n > 0, "%s has no TLS descriptor", what);
	for (int i = 0; i < d.n; i++) {
		int rc = hostile_install(d.desc[i]);

		ck_assert_msg(rc != -1, "%s: cannot make descriptor %p writable", what, (void *)d.desc[i]);
		ck_assert_msg(rc != -2, "%s: descriptor %p has another resolver than the others", what,
		      (void *)d.desc[i]);
	}
	return d.n;
}

int main(int argc, char **argv)
{
	const char *lib_path = NULL, *accessor_path = NULL, *mode = NULL;
	static struct worker early = { .early = 1, .seq = 1000 }, late = { .seq = 2000 };
	struct descriptor_facts lf, af;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--expect=static") == 0)
			expect = PATH_STATIC;
		else if (strcmp(argv[i], "--expect=dynamic") == 0)
			expect = PATH_DYNAMIC;
		else if (lib_path == NULL)
			lib_path = argv[i];
		else if (accessor_path == NULL)
			accessor_path = argv[i];
		else
			mode = argv[i];
	}
	ck_assert_msg(mode != NULL && (strcmp(mode, "caller") == 0 || strcmp(mode, "hostile") == 0),
	      "usage: %s LIBRARY ACCESSOR-MODULE caller|hostile --expect=static|dynamic",
	      argv[0]);
	hostile = strcmp(mode, "hostile") == 0;
#ifndef __GLIBC__
	if (expect == PATH_STATIC)
		skip("musl gives a dlopen()ed module dynamic TLS, never static TLS");
#endif

	ck_assert_msg(pthread_barrier_init(&loaded, NULL, 2) == 0, "barrier");
	ck_assert_msg(pthread_create(&early.t, NULL, worker, &early) == 0, "pthread_create");

	lib = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);
	ck_assert_msg(lib != NULL, "dlopen(%s): %s", lib_path, dlerror());
	loader_resolve(lib, &api);
	accessor = dlopen(accessor_path, RTLD_NOW | RTLD_LOCAL);
	ck_assert_msg(accessor != NULL, "dlopen(%s): %s", accessor_path, dlerror());
	ACCESSOR_FN(accessor_vectors);
	ACCESSOR_FN(accessor_integers);
#if defined(__x86_64__)
	ACCESSOR_FN(accessor_red_zone);
#endif
	ACCESSOR_FN(hostile_install);
	ACCESSOR_FN(hostile_count);

	find_module(&mod);
	{
		const struct otel_thread_ctx_record *volatile *slot = slot_address(lib);
		struct descriptors d = module_descriptors(accessor);

		ck_assert_msg(d.n == 1, "the accessor module has %d TLS descriptors, expected 1", d.n);
		lf = read_descriptor(library_descriptor(&mod), &mod, slot);
		af = read_descriptor(d.desc[0], &mod, slot);
	}
	print_descriptor("library's slot descriptor ", &lf);
	print_descriptor("accessor's slot descriptor", &af);
	ck_assert_msg(lf.path == expect, "the library's slot is on the %s TLS path, this test expects %s",
	      path_name(lf.path), path_name(expect));
	ck_assert_msg(af.path == lf.path && af.resolver == lf.resolver,
	      "the accessor module's descriptor does not take the library's path");
	if (hostile) {
		int nl = install_hostile(lib, "the library");
		int na = install_hostile(accessor, "the accessor module");

		printf("hostile resolver in %d descriptors of the library and %d of the accessor "
		       "module, in front of the loader's\n", nl, na);
	}

	pthread_barrier_wait(&loaded);
	ck_assert_msg(pthread_join(early.t, NULL) == 0, "pthread_join");
	ck_assert_msg(pthread_create(&late.t, NULL, worker, &late) == 0, "pthread_create");
	ck_assert_msg(pthread_join(late.t, NULL) == 0, "pthread_join");
	report("before", &early);
	report("after ", &late);
	if (hostile)
		printf("hostile resolver: %llu calls\n", (unsigned long long)hostile_count());
	return 0;
}
