/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One way of reaching the slot, end to end: the library linked at start-up
 * (built with -DLOAD_LINKED), or dlopen()ed from the path given as first
 * argument.  --expect=static|dynamic names the TLS path the loader must have
 * put the slot on; the program proves it is on that path (loader.h), then on
 * fresh threads checks the published bytes and the thread-exit cleanup:
 *
 * - threads created before the dlopen() (their DTV predates the library)
 *   and after it each make their first access to the library's TLS through
 *   an API call, and on glibc's dynamic path it is that call that allocates
 *   the thread's block (dlpi_tls_data is NULL before it and the block after);
 * - every thread publishes records of its own sequence numbers by attach,
 *   update, detach and update_attach, and a reader's copy through the slot
 *   (dlsym() of otel_thread_ctx_v1) is checked byte by byte (storm.h);
 * - every thread then exits with a context attached, one created with
 *   OTEL_THREAD_CTX_FREE_WITH_THREAD, which the thread frees: the counting allocator
 *   (counting-malloc.h) sees exactly one live block per such thread from the
 *   library while they wait, and none once they have exited (under a
 *   sanitizer, its allocator's byte count grows by the contexts and falls
 *   back; under valgrind, memcheck's leak check decides), and a pthread key
 *   destructor that runs after the library's finds the slot NULL.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "counting-malloc.h"
#include "loader.h"
#include "minitest.h"
#include "otel_thread_ctx.h"
#include "testenv.h"

static struct otel_api api;
#define STORM_CALL(name) api.name
#include "storm.h"

static void *lib; /* dlopen() handle, or RTLD_DEFAULT */
static struct module mod;
static enum tls_path expect;

static pthread_barrier_t loaded;   /* early threads wait for the library */
static pthread_barrier_t attached; /* all threads hold a context */
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

	CHECK(r == STORM_READ_OK && seq == n,
	      "reader sees %s record (sequence %llu), expected the complete record %llu",
	      r == STORM_READ_NULL ? "no" : r == STORM_READ_INVALID ? "an invalid" :
	      r == STORM_READ_TORN ? "a torn" : "a complete",
	      (unsigned long long)seq, (unsigned long long)n);
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
	otel_thread_ctx *ctx = NULL, *prev = NULL;
	uint64_t n = w->seq;
	void *block_before = NULL, *block_after;

	if (w->early)
		pthread_barrier_wait(&loaded);
	/* glibc: has this thread a TLS block for the library yet?  Asked
	 * before anything touches the library's TLS on this thread. */
	block_before = module_tls_data(&mod);

	struct otel_thread_ctx_options given = OTEL_THREAD_CTX_OPTIONS_INIT;

	given.flags = OTEL_THREAD_CTX_FREE_WITH_THREAD;
	CHECK_OK(api.otel_thread_ctx_create_with(&ctx, &given));
	CHECK_OK(storm_write_draft(ctx, n));
	/* The thread's first access to the library's TLS. */
	CHECK_OK(api.otel_thread_ctx_update_attach(ctx, &prev));
	CHECK(prev == NULL, "a fresh thread had a context attached");

	block_after = module_tls_data(&mod);
	slot = slot_address(lib);
#ifdef __GLIBC__
	if (expect == PATH_DYNAMIC)
		CHECK(block_before == NULL && block_after != NULL,
		      "dynamic TLS: the thread's block should appear with its first API call "
		      "(before %p, after %p)", block_before, block_after);
	else if (!w->early)
		/* A thread created after the load gets the block with its
		 * static TLS, before any access. */
		CHECK(block_before != NULL && block_before == block_after,
		      "static TLS: a new thread's block should exist from the start "
		      "(before %p, after %p)", block_before, block_after);
#else
	/* musl sets up every thread's block when the module is loaded, and
	 * copies it into every new thread: it never allocates on access. */
	CHECK(block_before != NULL && block_before == block_after,
	      "musl: the thread's block should exist before its first access "
	      "(before %p, after %p)", block_before, block_after);
#endif
	if (block_after != NULL)
		CHECK((uintptr_t)slot == (uintptr_t)block_after + mod.slot_value,
		      "slot %p is not at offset %llu of the thread's block %p", (void *)slot,
		      (unsigned long long)mod.slot_value, block_after);
	/* The descriptor gives this thread's slot too. */
	{
		struct descriptor_facts f = read_descriptor(library_descriptor(&mod), &mod, slot);

		CHECK(f.path == expect, "this thread finds the slot by the %s path, expected %s",
		      path_name(f.path), path_name(expect));
	}
#ifdef LOAD_LINKED
	CHECK(slot == &otel_thread_ctx_v1, "dlsym() and the executable disagree on the slot");
#endif

	check_published(slot, n);
	CHECK(api.otel_thread_ctx_current() == ctx, "current() is not the attached context");

	/* Every path that changes what the thread publishes. */
	CHECK_OK(storm_write_draft(ctx, ++n));
	CHECK_OK(api.otel_thread_ctx_update(ctx));
	check_published(slot, n);
	CHECK_OK(api.otel_thread_ctx_detach(&prev));
	CHECK(prev == ctx && *slot == NULL, "detach left the slot at %p", (void *)*slot);
	CHECK_OK(storm_write_draft(ctx, ++n));
	CHECK_OK(api.otel_thread_ctx_update(ctx));
	CHECK(*slot == NULL, "update of a detached context published it");
	CHECK_OK(api.otel_thread_ctx_attach(ctx, &prev));
	check_published(slot, n);
	CHECK_OK(storm_write_draft(ctx, ++n));
	CHECK_OK(api.otel_thread_ctx_update_attach(ctx, &prev));
	CHECK(prev == ctx, "update_attach of the attached context handed back %p", (void *)prev);
	check_published(slot, n);

	/* Exit with the context attached: the library must free it. */
	CHECK(pthread_setspecific(after_key, (void *)slot) == 0, "pthread_setspecific");
	pthread_barrier_wait(&attached);
	pthread_barrier_wait(&counted);
	return NULL;
}

static void start(struct worker *w, int early, uint64_t seq)
{
	w->early = early;
	w->seq = seq;
	CHECK(pthread_create(&w->t, NULL, work, w) == 0, "pthread_create");
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
	CHECK(path == NULL, "usage: %s --expect=static|dynamic", argv[0]);
#else
	CHECK(path != NULL, "usage: %s LIBRARY --expect=static|dynamic", argv[0]);
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
	CHECK(workers != NULL, "calloc");
	CHECK(pthread_barrier_init(&loaded, NULL, (unsigned)early + 1) == 0, "barrier");
	CHECK(pthread_barrier_init(&attached, NULL, (unsigned)(early + late) + 1) == 0, "barrier");
	CHECK(pthread_barrier_init(&counted, NULL, (unsigned)(early + late) + 1) == 0, "barrier");

	/* Threads that exist before the library is loaded. */
	for (unsigned long i = 0; i < early; i++)
		start(&workers[i], 1, 1000 * (i + 1));

#ifdef LOAD_LINKED
	lib = RTLD_DEFAULT;
	api.otel_thread_ctx_create = otel_thread_ctx_create;
	api.otel_thread_ctx_create_with = otel_thread_ctx_create_with;
	api.otel_thread_ctx_destroy = otel_thread_ctx_destroy;
	api.otel_thread_ctx_set_ids = otel_thread_ctx_set_ids;
	api.otel_thread_ctx_set_attr = otel_thread_ctx_set_attr;
	api.otel_thread_ctx_remove_attr = otel_thread_ctx_remove_attr;
	api.otel_thread_ctx_attach = otel_thread_ctx_attach;
	api.otel_thread_ctx_update = otel_thread_ctx_update;
	api.otel_thread_ctx_update_attach = otel_thread_ctx_update_attach;
	api.otel_thread_ctx_detach = otel_thread_ctx_detach;
	api.otel_thread_ctx_current = otel_thread_ctx_current;
	printf("library linked at start-up\n");
#else
	lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	CHECK(lib != NULL, "dlopen(%s): %s", path, dlerror());
	loader_resolve(lib, &api);
	printf("library dlopen()ed: %s\n", path);
#endif
	find_module(&mod);
	counting_malloc_watch(mod.text_lo, mod.text_hi);
	CHECK(pthread_key_create(&after_key, after_library_cleanup) == 0, "pthread_key_create");

	/* The path, from the main thread (its first access is dlsym()'s). */
	f = read_descriptor(library_descriptor(&mod), &mod, slot_address(lib));
	printf("%s: TLS module %zu, PT_TLS %zu bytes, %d TLSDESC relocation(s) against the slot\n",
	       mod.path, mod.modid, mod.tls_memsz, mod.ndesc);
	print_descriptor("slot descriptor", &f);
	CHECK(f.path == expect, "the slot is on the %s TLS path, this test expects %s",
	      path_name(f.path), path_name(expect));

	heap_start = counting_malloc_heap_bytes();
	pthread_barrier_wait(&loaded);
	for (unsigned long i = 0; i < late; i++)
		start(&workers[early + i], 0, 1000 * (early + i + 1));

	/* Every thread holds one context now: the count must see them. */
	pthread_barrier_wait(&attached);
	live = counting_malloc_live();
	heap_attached = counting_malloc_heap_bytes();
	if (mode == COUNTING_MALLOC_BLOCKS)
		CHECK(live == (long)(early + late),
		      "%ld live blocks from the library while %lu threads hold one context each",
		      live, early + late);
	else if (mode == COUNTING_MALLOC_SANITIZER)
		CHECK(heap_attached >= heap_start + (early + late) * 2 * RECORD,
		      "the heap grew by %zu bytes only while %lu threads hold a context each",
		      heap_attached - heap_start, early + late);
	pthread_barrier_wait(&counted);
	for (unsigned long i = 0; i < early + late; i++)
		CHECK(pthread_join(workers[i].t, NULL) == 0, "pthread_join");

	CHECK(slot_not_null_at_exit == 0, "%lu exiting threads still published a record after "
	      "the library's cleanup", slot_not_null_at_exit);
	printf("%lu threads (%lu created before the load) exited with a context attached; ",
	       early + late, early);
	if (mode == COUNTING_MALLOC_BLOCKS) {
		live = counting_malloc_live();
		printf("library blocks: %ld allocated, %ld live\n", counting_malloc_total(), live);
		CHECK(live == 0, "%ld contexts of exited threads were not freed", live);
	} else if (mode == COUNTING_MALLOC_SANITIZER) {
		/* The sanitizer's allocator counts bytes, the loader's and the
		 * thread library's too (the DTVs of cached thread stacks stay
		 * allocated): exited threads may leave some bytes behind,
		 * never a context (two records) each. */
		size_t heap_end = counting_malloc_heap_bytes();
		size_t grown = heap_end > heap_start ? heap_end - heap_start : 0;

		printf("heap in use (the sanitizer's count): %zu bytes before, %zu with the "
		       "contexts, %zu after\n", heap_start, heap_attached, heap_end);
		CHECK(grown < (early + late) * RECORD,
		      "the heap grew by %zu bytes over %lu exited threads: contexts were not "
		      "freed", grown, early + late);
	} else {
		printf("malloc is replaced by a tool (valgrind): its leak check at exit decides\n");
	}
	free(workers);
	return 0;
}
