/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Vector registers around the slot's TLSDESC call, on the path the loader
 * put the library on (--expect=static|dynamic; the dynamic one is forced on
 * glibc with GLIBC_TUNABLES=glibc.rtld.optional_static_tls=0, and is the only
 * one musl has for a dlopen()ed library).
 *
 * usage: vector-regs LIBRARY PROBE-MODULE probe|caller --expect=static|dynamic
 *
 * Both modes dlopen() the library, then the probe module (probe-<cpu>.S,
 * linked against the library), prove the path from the library's descriptor
 * and the probe's (same path, same resolver: loader.h), and do their work on
 * two threads whose first access to the library's TLS it is: one created
 * before the dlopen() and one after.
 *
 * probe (part a): is the hazard real here?
 *   The bare canonical TLSDESC call (probe_tlsdesc) with known values in
 *   every vector register, compared right after the resolver returns.  glibc
 *   bug 31372: before 2.40, _dl_tlsdesc_dynamic reaches __tls_get_addr,
 *   malloc and memset, which use vector registers, without saving them,
 *   although the TLSDESC convention says every register but the result is
 *   kept.  On x86-64 the program passes when it sees registers overwritten on
 *   the dynamic path (the hazard is real on this machine, and it is why the
 *   library's accessor is an ordinary function call and not an asm statement
 *   inside its callers, arch/x86_64/tlsdesc.h), and SKIPs, saying so, when
 *   the resolver kept them (a fixed glibc, or musl, whose resolver touches no
 *   vector register): it cannot show a hazard that is not there.  On the
 *   static path, where the resolver only loads the offset, every register
 *   must be kept.  On aarch64 the library's inline asm declares no vector
 *   register clobbered and so relies on the convention (glibc's aarch64
 *   resolver saves q0-q31), so there every register must be kept on both
 *   paths, or the program fails.
 *
 * caller (parts b and c): does the caller keep its vector values, and is
 * what the library publishes right, on this path?
 *   (b) A C caller holds vector values live across calls into the API: each
 *   value is forced into a vector register right before the call and checked
 *   right after it (the empty asm statements below).  On glibc's dynamic
 *   path the program first proves that the thread has no TLS block for the
 *   library yet and has one after the first call, i.e. that the resolver's
 *   slow path, the one part (a) shows clobbering, ran inside that call.
 *   What this shows, and what it cannot: on x86-64 the psABI makes every
 *   vector register caller-saved, so across any function call the compiler
 *   keeps such values in memory, and they survive whatever the resolver
 *   does; this part checks that using the library needs nothing more than
 *   that -- the clobbering TLSDESC call happens only inside the library's
 *   own functions -- and it would fail if the library ever made the call
 *   from an inline sequence in its callers that assumed the convention.  On
 *   aarch64 d8-d15 are callee-saved (AAPCS64), so the values pinned in d8
 *   and d9 stay in those registers across the calls, and the check is a
 *   true register check of the library and the resolver together.
 *   (c) The bytes a reader finds through the slot are exactly the records
 *   published (storm.h), after every call: the library's own state, kept in
 *   whatever registers its compiled code chose, came through the resolver's
 *   slow path intact.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "loader.h"
#include "minitest.h"
#include "otel_thread_ctx.h"

static struct otel_api api;
#define STORM_CALL(name) api.name
#include "storm.h"

#if defined(__x86_64__)
#define NREGS 16
#define REG "xmm"
#else
#define NREGS 32
#define REG "v"
#endif

static void *lib;
static struct module mod;
static enum tls_path expect;
static void *(*probe_tlsdesc)(const unsigned char *in, unsigned char *out);
static const volatile uintptr_t *(*probe_descriptor)(void);
static pthread_barrier_t loaded;

/* --- part (a) --- */

struct probe_result {
	unsigned char in[NREGS][16], out[NREGS][16];
	int changed[NREGS], nchanged;
	int first_access; /* the thread had no block before (glibc) */
};

static void *probe_thread(void *arg)
{
	struct probe_result *r = arg;
	const struct otel_thread_ctx_record *volatile *slot;
	void *addr;

	for (int i = 0; i < NREGS; i++)
		for (int j = 0; j < 16; j++)
			r->in[i][j] = (unsigned char)(0xa5 ^ (i * 16 + j));
	memset(r->out, 0, sizeof(r->out));
	r->first_access = module_tls_data(&mod) == NULL;
	/* The thread's first access to the library's TLS. */
	addr = probe_tlsdesc(&r->in[0][0], &r->out[0][0]);
	slot = slot_address(lib);
	CHECK(addr == (void *)slot, "probe computed %p, the slot is at %p", addr, (void *)slot);
	for (int i = 0; i < NREGS; i++) {
		r->changed[i] = memcmp(r->in[i], r->out[i], 16) != 0;
		r->nchanged += r->changed[i];
	}
	return NULL;
}

static void report_probe(const char *who, const struct probe_result *r)
{
	printf("%s (dlpi_tls_data before the call: %s): ", who,
	       r->first_access ? "none" : "the block");
	if (r->nchanged == 0) {
		printf("the resolver kept all %d vector registers\n", NREGS);
		return;
	}
	printf("the resolver overwrote");
	for (int i = 0; i < NREGS; i++)
		if (r->changed[i])
			printf(" %s%d", REG, i);
	printf("\n");
	for (int i = 0; i < NREGS; i++)
		if (r->changed[i]) {
			printf("  %s%d: put", REG, i);
			for (int j = 15; j >= 0; j--)
				printf("%02x", r->in[i][j]);
			printf(", got ");
			for (int j = 15; j >= 0; j--)
				printf("%02x", r->out[i][j]);
			printf("\n");
		}
}

/* --- parts (b) and (c) --- */

#if defined(__x86_64__)
typedef uint64_t vec __attribute__((vector_size(16)));
#define PIN(a, b, c, d) __asm__ volatile("" : "+x"(a), "+x"(b), "+x"(c), "+x"(d))
#else
typedef uint64_t vec __attribute__((vector_size(16)));
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

struct call_stats {
	unsigned long calls;
};

/*
 * CALL(expr): runs the API call `expr` with vector values held live across
 * it (and, on aarch64, values in the callee-saved d8 and d9), then checks
 * them and the call's result.
 */
#if defined(__aarch64__)
#define HOLD_EXTRA_BEGIN                                                       \
	register double d8_ __asm__("d8") = 8.125;                             \
	register double d9_ __asm__("d9") = -9.375;                            \
	__asm__ volatile("" : "+w"(d8_), "+w"(d9_));
#define HOLD_EXTRA_END                                                         \
	__asm__ volatile("" : "+w"(d8_), "+w"(d9_));                           \
	CHECK(d8_ == 8.125 && d9_ == -9.375, "d8/d9 changed across %s: %g %g", what, d8_, d9_);
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
		CHECK(same(a, make(1)) && same(b, make(2)) && same(c, make(3)) && \
		      same(d, make(4)), "vector values changed across %s", what); \
		CHECK(rc_ == 0, "%s returned %d", what, rc_);                  \
		stats->calls++;                                                \
	} while (0)

static void check_published(const struct otel_thread_ctx_record *volatile *slot, uint64_t n)
{
	uint64_t seq = 0;
	enum storm_read r = storm_classify(*slot, &seq);

	CHECK(r == STORM_READ_OK && seq == n, "reader sees read kind %d (sequence %llu), "
	      "expected the complete record %llu", (int)r, (unsigned long long)seq,
	      (unsigned long long)n);
}

struct caller_arg {
	uint64_t seq;
	struct call_stats stats;
	int first_access;
};

static void *caller_thread(void *arg)
{
	struct caller_arg *c = arg;
	struct call_stats *stats = &c->stats;
	const struct otel_thread_ctx_record *volatile *slot;
	otel_thread_ctx *ctx = NULL, *prev = NULL;
	uint64_t n = c->seq;
	void *before, *after;

	/* create and the draft setters do not touch TLS. */
	CHECK_OK(api.otel_thread_ctx_create(&ctx));
	CHECK_OK(storm_write_draft(ctx, n));
	before = module_tls_data(&mod);
	/* The thread's first access to the library's TLS. */
	CALL(api.otel_thread_ctx_update_attach(ctx, &prev));
	after = module_tls_data(&mod);
	c->first_access = before == NULL && after != NULL;
#ifdef __GLIBC__
	if (expect == PATH_DYNAMIC)
		CHECK(c->first_access, "the thread's TLS block should appear with its first call "
		      "(before %p, after %p)", before, after);
#endif
	slot = slot_address(lib);
	check_published(slot, n);

	CALL(storm_write_draft(ctx, ++n));
	CALL(api.otel_thread_ctx_update(ctx));
	check_published(slot, n);
	CALL(api.otel_thread_ctx_detach(&prev));
	CHECK(*slot == NULL, "detach left a record published");
	CALL(storm_write_draft(ctx, ++n));
	CALL(api.otel_thread_ctx_update(ctx));
	CALL(api.otel_thread_ctx_attach(ctx, &prev));
	check_published(slot, n);
	CALL(api.otel_thread_ctx_detach(&prev));
	CHECK(prev == ctx, "detach handed back %p", (void *)prev);
	CHECK_OK(api.otel_thread_ctx_destroy(ctx));
	return NULL;
}

/* --- the two threads --- */

struct early {
	pthread_t t;
	void *(*fn)(void *);
	void *arg;
};

static void *early_thread(void *arg)
{
	struct early *e = arg;

	pthread_barrier_wait(&loaded);
	return e->fn(e->arg);
}

int main(int argc, char **argv)
{
	const char *lib_path = NULL, *probe_path = NULL, *mode = NULL;
	struct descriptor_facts lf, pf;
	void *probe, *p;
	struct early e;
	pthread_t t;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--expect=static") == 0)
			expect = PATH_STATIC;
		else if (strcmp(argv[i], "--expect=dynamic") == 0)
			expect = PATH_DYNAMIC;
		else if (lib_path == NULL)
			lib_path = argv[i];
		else if (probe_path == NULL)
			probe_path = argv[i];
		else
			mode = argv[i];
	}
	CHECK(mode != NULL && (strcmp(mode, "probe") == 0 || strcmp(mode, "caller") == 0),
	      "usage: %s LIBRARY PROBE-MODULE probe|caller --expect=static|dynamic", argv[0]);
#ifndef __GLIBC__
	if (expect == PATH_STATIC)
		skip("musl gives a dlopen()ed module dynamic TLS, never static TLS");
#endif

	/* Results of the thread created before the dlopen(). */
	static struct probe_result probe_early, probe_late;
	static struct caller_arg caller_early = { 1000, { 0 }, 0 },
				 caller_late = { 2000, { 0 }, 0 };
	int is_probe = strcmp(mode, "probe") == 0;

	CHECK(pthread_barrier_init(&loaded, NULL, 2) == 0, "barrier");
	e.fn = is_probe ? probe_thread : caller_thread;
	e.arg = is_probe ? (void *)&probe_early : (void *)&caller_early;
	CHECK(pthread_create(&e.t, NULL, early_thread, &e) == 0, "pthread_create");

	lib = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);
	CHECK(lib != NULL, "dlopen(%s): %s", lib_path, dlerror());
	loader_resolve(lib, &api);
	probe = dlopen(probe_path, RTLD_NOW | RTLD_LOCAL);
	CHECK(probe != NULL, "dlopen(%s): %s", probe_path, dlerror());
	p = loader_sym(probe, "probe_tlsdesc");
	memcpy(&probe_tlsdesc, &p, sizeof(p));
	p = loader_sym(probe, "probe_descriptor");
	memcpy(&probe_descriptor, &p, sizeof(p));

	find_module(&mod);
	{
		const struct otel_thread_ctx_record *volatile *slot = slot_address(lib);

		lf = read_descriptor(library_descriptor(&mod), &mod, slot);
		pf = read_descriptor(probe_descriptor(), &mod, slot);
	}
	print_descriptor("library's slot descriptor", &lf);
	print_descriptor("probe's slot descriptor  ", &pf);
	CHECK(lf.path == expect, "the library's slot is on the %s TLS path, this test expects %s",
	      path_name(lf.path), path_name(expect));
	CHECK(pf.path == lf.path && pf.resolver == lf.resolver,
	      "the probe's descriptor does not take the library's path");

	pthread_barrier_wait(&loaded);
	CHECK(pthread_create(&t, NULL, is_probe ? probe_thread : caller_thread,
			     is_probe ? (void *)&probe_late : (void *)&caller_late) == 0,
	      "pthread_create");
	CHECK(pthread_join(e.t, NULL) == 0 && pthread_join(t, NULL) == 0, "pthread_join");

	if (!is_probe) {
		printf("thread created before the dlopen(): %lu API calls, vector values kept%s\n",
		       caller_early.stats.calls, caller_early.first_access ?
		       "; its TLS block was allocated inside the first one" : "");
		printf("thread created after the dlopen(): %lu API calls, vector values kept%s\n",
		       caller_late.stats.calls, caller_late.first_access ?
		       "; its TLS block was allocated inside the first one" : "");
		return 0;
	}

	report_probe("thread created before the dlopen()", &probe_early);
	report_probe("thread created after the dlopen() ", &probe_late);
#if defined(__x86_64__)
	if (expect == PATH_STATIC) {
		CHECK(probe_early.nchanged == 0 && probe_late.nchanged == 0,
		      "the static-TLS resolver must keep every vector register");
		return 0;
	}
	if (probe_early.nchanged == 0 && probe_late.nchanged == 0)
		skip("the dynamic-TLS resolver of this libc kept every vector register: the "
		     "hazard of glibc bug 31372 does not exist here, there is nothing to show");
	printf("the hazard is real here: the resolver does not keep the vector registers "
	       "that the TLSDESC convention promises\n");
#else
	CHECK(probe_early.nchanged == 0 && probe_late.nchanged == 0,
	      "the %s-TLS resolver must keep every vector register: the aarch64 accessor "
	      "relies on it", path_name(expect));
#endif
	return 0;
}
