/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One way of reaching the slot, end to end: the library linked at start-up
 * (built with -DLOAD_LINKED), or dlopen()ed from the path given as first
 * argument.  --expect=static|dynamic names the TLS path the loader must have
 * put the slot on; the program proves it is on that path (loader.h), then on
 * fresh threads checks the published bytes, memory and thread-exit cleanup:
 *
 * - threads created before the dlopen() (their DTV predates the library)
 *   and after it each make their first access to the library's TLS through
 *   an API call, and on glibc's dynamic path it is that call that allocates
 *   the thread's block (dlpi_tls_data is NULL before it and the block after);
 * - every thread publishes records of its own sequence numbers by update,
 *   attach with `saved`, detach, the update of what was saved, and
 *   update_all, and a reader's copy through the slot (dlsym() of
 *   otel_thread_ctx_v1) is checked byte by byte (storm.h);
 * - every thread then destroys its contexts and keeps publishing, and
 *   exits so: the counting allocator (counting-malloc.h) sees every context
 *   the library allocated and no live block from it while all the threads
 *   publish (their records come from the library's pool, not the heap), and
 *   none once they have exited (under a sanitizer, its allocator's byte
 *   count grows by less than a record per thread; under valgrind, memcheck's
 *   leak check decides); a pthread key destructor that runs after the
 *   library's finds the slot NULL.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "counting-malloc.h"
#include "loader.h"
#include "check-lite.h"
#include "otel_thread_ctx.h"
#include "testenv.h"

static struct otel_api api;
#define STORM_CALL(name) api.name
#include "storm.h"

static void *lib; /* dlopen() handle, or RTLD_DEFAULT */
static struct module mod;
static enum tls_path expect;

static pthread_barrier_t loaded;   /* early threads wait for the library */
static pthread_barrier_t attached; /* all threads publish */
static pthread_barrier_t counted;  /* the main thread has counted them */
static pthread_key_t after_key;    /* created after the library's own key */
#define RECORD sizeof(struct otel_thread_ctx_record)
static unsigned long slot_not_null_at_exit;

struct worker {
	pthread_t t;
	int early;     /* created before the library was loaded */
	uint64_t seq;  /* first sequence number it publishes */
};

/* The reader's view through `slot`: record `n`, complete. */
static void check_published(const struct otel_thread_ctx_record *volatile *slot, uint64_t n)
{
	uint64_t seq = 0;
	enum storm_read r = storm_classify(*slot, &seq);

	ck_assert_msg(r == STORM_READ_OK && seq == n,
	      "reader sees %s record (sequence %llu), expected the complete record %llu",
	      r == STORM_READ_NULL ? "no" : r == STORM_READ_INVALID ? "an invalid" :
	      r == STORM_READ_TORN ? "a torn" : "a complete",
	      (unsigned long long)seq, (unsigned long long)n);
}

/* The reader's view through `slot`: record r, but with this span id and
 * these flags. */
static void check_fields(const struct otel_thread_ctx_record *volatile *slot,
			 const struct otel_thread_ctx_record *r, const uint8_t span[8],
			 uint8_t flags, const char *after)
{
	const struct otel_thread_ctx_record *p = *slot;

	ck_assert_msg(p != NULL && p->valid == 1, "after %s: no valid record published", after);
	ck_assert_msg(memcmp(p->trace_id, r->trace_id, 16) == 0, "after %s: another trace id", after);
	ck_assert_msg(memcmp(p->span_id, span, 8) == 0, "after %s: another span id", after);
	ck_assert_msg(p->trace_flags == flags, "after %s: flags %u, expected %u", after, p->trace_flags,
	      flags);
	ck_assert_msg(p->attrs_data_size == r->attrs_data_size &&
	      memcmp(p->attrs_data, r->attrs_data, r->attrs_data_size) == 0,
	      "after %s: other attributes", after);
}

/* Runs after the library's thread-exit cleanup (its key is older). */
static void after_library_cleanup(void *arg)
{
	const struct otel_thread_ctx_record *volatile *slot = arg;

	if (*slot != NULL)
		__atomic_fetch_add(&slot_not_null_at_exit, 1, __ATOMIC_RELAXED);
}

static void *work(void *arg)
{
	struct worker *w = arg;
	const struct otel_thread_ctx_record *volatile *slot;
	struct otel_thread_ctx_record r, got;
	otel_thread_ctx *ctx = NULL, *saved = NULL;
	uint64_t n = w->seq;
	void *block_before = NULL, *block_after;

	if (w->early)
		pthread_barrier_wait(&loaded);
	/* glibc: has this thread a TLS block for the library yet?  Asked
	 * before anything touches the library's TLS on this thread. */
	block_before = module_tls_data(&mod);

	/* Contexts touch no TLS. */
	ck_assert_int_eq(api.otel_thread_ctx_create(&ctx), 0);
	ck_assert_int_eq(api.otel_thread_ctx_create(&saved), 0);
	storm_expected(n, &r);
	ck_assert_int_eq(loader_put(&api, ctx, &r), 0);
	/* The thread's first access to the library's TLS. */
	ck_assert_int_eq(api.otel_thread_ctx_update(ctx), 0);

	block_after = module_tls_data(&mod);
	slot = slot_address(lib);
#ifdef __GLIBC__
	if (expect == PATH_DYNAMIC)
		ck_assert_msg(block_before == NULL && block_after != NULL,
		      "dynamic TLS: the thread's block should appear with its first API call "
		      "(before %p, after %p)", block_before, block_after);
	else if (!w->early)
		/* A thread created after the load gets the block with its
		 * static TLS, before any access. */
		ck_assert_msg(block_before != NULL && block_before == block_after,
		      "static TLS: a new thread's block should exist from the start "
		      "(before %p, after %p)", block_before, block_after);
#else
	/* musl sets up every thread's block when the module is loaded, and
	 * copies it into every new thread: it never allocates on access. */
	ck_assert_msg(block_before != NULL && block_before == block_after,
	      "musl: the thread's block should exist before its first access "
	      "(before %p, after %p)", block_before, block_after);
#endif
	if (block_after != NULL)
		ck_assert_msg((uintptr_t)slot == (uintptr_t)block_after + mod.slot_value,
		      "slot %p is not at offset %llu of the thread's block %p", (void *)slot,
		      (unsigned long long)mod.slot_value, block_after);
	/* The descriptor gives this thread's slot too. */
	{
		struct descriptor_facts f = read_descriptor(library_descriptor(&mod), &mod, slot);

		ck_assert_msg(f.path == expect, "this thread finds the slot by the %s path, expected %s",
		      path_name(f.path), path_name(expect));
	}
#ifdef LOAD_LINKED
	ck_assert_msg(slot == &otel_thread_ctx_v1, "dlsym() and the executable disagree on the slot");
#endif
	check_published(slot, n);

	/* Every path that changes what the thread publishes. */
	storm_expected(++n, &r);
	ck_assert_int_eq(loader_put(&api, ctx, &r), 0);
	ck_assert_msg(*slot != NULL, "editing the context unpublished it");
	check_published(slot, n - 1);
	ck_assert_int_eq(api.otel_thread_ctx_attach(ctx, saved), 0);
	check_published(slot, n);
	storm_expected(n - 1, &r);
	ck_assert_int_eq(api.otel_thread_ctx_get(saved, &got), 0);
	ck_assert_msg(memcmp(&got, &r, offsetof(struct otel_thread_ctx_record, attrs_data)) == 0 &&
	      memcmp(got.attrs_data, r.attrs_data, r.attrs_data_size) == 0,
	      "attach saved another record than the one published before");
	ck_assert_int_eq(api.otel_thread_ctx_detach(NULL), 0);
	ck_assert_msg(*slot == NULL, "detach left the slot at %p", (void *)*slot);
	ck_assert_int_eq(api.otel_thread_ctx_update(saved), 0);
	check_published(slot, n - 1);
	storm_expected(++n, &r);
	ck_assert_int_eq(loader_update_all(&api, &r), 0);
	check_published(slot, n);
	/* The fast paths copy into the draft only what changed since it was
	 * last published: away from record n and back, through a refusal
	 * that wrote into the draft, every step publishes record n's fields
	 * but the ones it changed. */
	{
		static const uint8_t other_span[8] = { 0xee, 1, 2, 3, 4, 5, 6, 7 };
		uint8_t long_value[200];
		struct otel_thread_ctx_attr dup[2] = { { 1, 200, long_value },
						       { 1, 1, long_value } };

		/* The first entry is written into the draft, the second
		 * refused. */
		memset(long_value, 'z', sizeof(long_value));
		ck_assert_int_eq(api.otel_thread_ctx_update_span_id(other_span), 0);
		check_fields(slot, &r, other_span, r.trace_flags, "update_span_id");
		ck_assert_int_eq(api.otel_thread_ctx_update_trace_flags(r.trace_flags ^ 1), 0);
		check_fields(slot, &r, other_span, r.trace_flags ^ 1, "update_trace_flags");
		ck_assert_msg(api.otel_thread_ctx_update_all(r.trace_id, r.span_id, r.trace_flags, dup, 2) ==
			      OTEL_THREAD_CTX_EDUPKEY,
		      "update_all with a key twice was not refused");
		check_fields(slot, &r, other_span, r.trace_flags ^ 1, "a refused update_all");
		ck_assert_int_eq(api.otel_thread_ctx_update_span_id(r.span_id), 0);
		check_fields(slot, &r, r.span_id, r.trace_flags ^ 1, "update_span_id after it");
		ck_assert_int_eq(api.otel_thread_ctx_update_trace_flags(r.trace_flags), 0);
		check_published(slot, n);
	}
	storm_expected(++n, &r);
	ck_assert_int_eq(loader_put(&api, ctx, &r), 0);
	ck_assert_int_eq(api.otel_thread_ctx_update(ctx), 0);
	check_published(slot, n);

	/* The contexts go; what the thread publishes stays, and it exits
	 * publishing it. */
	api.otel_thread_ctx_destroy(ctx);
	api.otel_thread_ctx_destroy(saved);
	check_published(slot, n);
	ck_assert_msg(pthread_setspecific(after_key, (void *)slot) == 0, "pthread_setspecific");
	pthread_barrier_wait(&attached);
	pthread_barrier_wait(&counted);
	return NULL;
}

static void start(struct worker *w, int early, uint64_t seq)
{
	w->early = early;
	w->seq = seq;
	ck_assert_msg(pthread_create(&w->t, NULL, work, w) == 0, "pthread_create");
}

int main(int argc, char **argv)
{
	unsigned long n = env_count("OTEL_TEST_THREADS", 4000) / 16;
	unsigned long early = n / 2, late = n - early;
	struct worker *workers;
	const char *path = NULL;
	struct descriptor_facts f;
	enum counting_malloc_mode mode = counting_malloc_mode();
	size_t heap_start, heap_attached;
	long live;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--expect=static") == 0)
			expect = PATH_STATIC;
		else if (strcmp(argv[i], "--expect=dynamic") == 0)
			expect = PATH_DYNAMIC;
		else
			path = argv[i];
	}
#ifdef LOAD_LINKED
	ck_assert_msg(path == NULL, "usage: %s --expect=static|dynamic", argv[0]);
#else
	ck_assert_msg(path != NULL, "usage: %s LIBRARY --expect=static|dynamic", argv[0]);
#ifndef __GLIBC__
	if (expect == PATH_STATIC)
		skip("musl gives a dlopen()ed module dynamic TLS, never static TLS");
#endif
#endif
	if (early < 1)
		early = 1;
	if (late < 1)
		late = 1;
	/* The threads' stacks and the table: before any counting starts. */
	workers = calloc(early + late, sizeof(*workers));
	ck_assert_msg(workers != NULL, "calloc");
	ck_assert_msg(pthread_barrier_init(&loaded, NULL, (unsigned)early + 1) == 0, "barrier");
	ck_assert_msg(pthread_barrier_init(&attached, NULL, (unsigned)(early + late) + 1) == 0, "barrier");
	ck_assert_msg(pthread_barrier_init(&counted, NULL, (unsigned)(early + late) + 1) == 0, "barrier");

	/* Threads that exist before the library is loaded. */
	for (unsigned long i = 0; i < early; i++)
		start(&workers[i], 1, 1000 * (i + 1));

#ifdef LOAD_LINKED
	lib = RTLD_DEFAULT;
	LOADER_LINKED(&api);
	printf("library linked at start-up\n");
#else
	lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	ck_assert_msg(lib != NULL, "dlopen(%s): %s", path, dlerror());
	loader_resolve(lib, &api);
	printf("library dlopen()ed: %s\n", path);
#endif
	find_module(&mod);
	counting_malloc_watch(mod.text_lo, mod.text_hi);
	ck_assert_msg(pthread_key_create(&after_key, after_library_cleanup) == 0, "pthread_key_create");

	/* The path, from the main thread (its first access is dlsym()'s). */
	f = read_descriptor(library_descriptor(&mod), &mod, slot_address(lib));
	printf("%s: TLS module %zu, PT_TLS %zu bytes, %d TLSDESC relocation(s) against the slot\n",
	       mod.path, mod.modid, mod.tls_memsz, mod.ndesc);
	print_descriptor("slot descriptor", &f);
	ck_assert_msg(f.path == expect, "the slot is on the %s TLS path, this test expects %s",
	      path_name(f.path), path_name(expect));

	heap_start = counting_malloc_heap_bytes();
	pthread_barrier_wait(&loaded);
	for (unsigned long i = 0; i < late; i++)
		start(&workers[early + i], 0, 1000 * (early + i + 1));

	/* Every thread publishes now, and holds no context. */
	pthread_barrier_wait(&attached);
	live = counting_malloc_live();
	heap_attached = counting_malloc_heap_bytes();
	if (mode == COUNTING_MALLOC_BLOCKS) {
		/* Only create allocates: publishing never does. */
		ck_assert_msg(counting_malloc_total() == (long)(2 * (early + late)),
		      "%ld blocks allocated by the library, for the %lu contexts of %lu threads",
		      counting_malloc_total(), 2 * (early + late), early + late);
		ck_assert_msg(live == 0, "%ld live blocks from the library while %lu threads publish "
		      "and hold no context", live, early + late);
	} else if (mode == COUNTING_MALLOC_SANITIZER) {
		size_t grown = heap_attached > heap_start ? heap_attached - heap_start : 0;

		/* What the loader and the thread library allocate for a
		 * thread (a DTV, a dynamic TLS block) is less than a record. */
		ck_assert_msg(grown < (early + late) * RECORD,
		      "the heap grew by %zu bytes while %lu threads publish and hold no context: "
		      "records on the heap", grown, early + late);
	}
	pthread_barrier_wait(&counted);
	for (unsigned long i = 0; i < early + late; i++)
		ck_assert_msg(pthread_join(workers[i].t, NULL) == 0, "pthread_join");

	ck_assert_msg(slot_not_null_at_exit == 0, "%lu exiting threads still published a record after "
	      "the library's cleanup", slot_not_null_at_exit);
	printf("%lu threads (%lu created before the load) exited while they published; ",
	       early + late, early);
	if (mode == COUNTING_MALLOC_BLOCKS) {
		live = counting_malloc_live();
		printf("library blocks: %ld allocated (the contexts), %ld live\n",
		       counting_malloc_total(), live);
		ck_assert_msg(live == 0, "%ld blocks of the library are live after the threads exited",
		      live);
	} else if (mode == COUNTING_MALLOC_SANITIZER) {
		/* The sanitizer's allocator counts bytes, the loader's and the
		 * thread library's too (the DTVs of cached thread stacks stay
		 * allocated): exited threads may leave some bytes behind,
		 * never a record each. */
		size_t heap_end = counting_malloc_heap_bytes();
		size_t grown = heap_end > heap_start ? heap_end - heap_start : 0;

		printf("heap in use (the sanitizer's count): %zu bytes before, %zu while they "
		       "published, %zu after\n", heap_start, heap_attached, heap_end);
		ck_assert_msg(grown < (early + late) * RECORD,
		      "the heap grew by %zu bytes over %lu exited threads", grown, early + late);
	} else {
		printf("malloc is replaced by a tool (valgrind): its leak check at exit decides\n");
	}
	free(workers);
	return 0;
}
