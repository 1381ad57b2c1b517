/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The target of walk-check.c: two modules that define the slot (LIB_A and
 * LIB_B, each plain-slot.c), both dlopen()ed into dynamic TLS after the
 * threads started (so that, with glibc, a thread that touches neither has
 * no block for it; musl gives every thread its block at dlopen()), and in
 * some threads module B's DTV entry pointed at a page that cannot be read:
 * B's slot is unreadable there.
 *
 *   walk-target LIB_A LIB_B
 *
 * One thread per case (cases[] below: what A and B hold in it), each
 * spinning so that perf events sample it.  Prints "ready" and " TID:CASE"
 * per thread, then waits for stdin to close; the threads put their DTV
 * entries back and the target exits 0.
 *
 * The DTV is found here the way the C libraries lay it out (the same facts
 * as the inspector's table, stated again for the test): x86-64 at tp + 8
 * for both; aarch64 glibc at tp + 0, musl at tp - 8; glibc's entries are 16
 * bytes with the count at dtv - 16, musl's 8 with the count at dtv[0].
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "otel_thread_ctx.h"
#include "thread_pointer.h"

/* What a module holds in a thread. */
enum hold { UNTOUCHED, NULL_SLOT, RECORD, UNREADABLE };

static const struct {
	const char *name;
	enum hold a, b;
} cases[] = {
	{ "null-unreadable", NULL_SLOT, UNREADABLE },
	{ "notls-unreadable", UNTOUCHED, UNREADABLE },
	{ "record-unreadable", RECORD, UNREADABLE },
	{ "null-notls", NULL_SLOT, UNTOUCHED },
	{ "notls-notls", UNTOUCHED, UNTOUCHED },
	{ "record-null", RECORD, NULL_SLOT },
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

struct module {
	void **(*address)(void);
	void (*publish)(const void *);
};

static struct module mods[2];
static pthread_barrier_t loaded, done;
static pid_t tids[NCASES];
static int stopping; /* read and written with relaxed atomics */
static void *bad_page;
static struct otel_thread_ctx_record records[NCASES] __attribute__((aligned(8)));

static void die(const char *what)
{
	fprintf(stderr, "walk-target: %s\n", what);
	exit(1);
}


/* The DTV entry of this thread that holds `block`, or NULL. */
static uintptr_t *dtv_entry(uintptr_t block)
{
	uintptr_t tp = thread_pointer(), *dtv, count;
	size_t words;

#if defined(__GLIBC__)
#if defined(__x86_64__)
	dtv = *(uintptr_t **)(tp + 8);
#else
	dtv = *(uintptr_t **)tp;
#endif
	count = dtv[-2];
	words = 2;
#else /* musl */
#if defined(__x86_64__)
	dtv = *(uintptr_t **)(tp + 8);
#else
	dtv = *(uintptr_t **)(tp - 8);
#endif
	count = dtv[0];
	words = 1;
#endif
	for (uintptr_t id = 1; id <= count && id < 4096; id++)
		if (dtv[id * words] == block)
			return &dtv[id * words];
	return NULL;
}

static void *run(void *arg)
{
	size_t c = (size_t)(uintptr_t)arg;
	uintptr_t *entry = NULL, saved = 0;
	enum hold hold[2] = { cases[c].a, cases[c].b };

	tids[c] = (pid_t)syscall(SYS_gettid);
	pthread_barrier_wait(&loaded);
	for (int m = 0; m < 2; m++) {
		void **slot;

		if (hold[m] == UNTOUCHED)
			continue;
		slot = mods[m].address(); /* allocates the block */
		if (hold[m] == RECORD)
			mods[m].publish(&records[c]);
		if (hold[m] == UNREADABLE) {
			/* plain-slot.c's block holds the slot alone, at its
			 * start. */
			entry = dtv_entry((uintptr_t)slot);
			if (entry == NULL)
				die("module B's block is not in this thread's DTV");
			saved = *entry;
			__atomic_store_n(entry, (uintptr_t)bad_page, __ATOMIC_RELEASE);
		}
	}
	pthread_barrier_wait(&done);
	while (!__atomic_load_n(&stopping, __ATOMIC_RELAXED))
		;
	if (entry != NULL)
		*entry = saved;
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[NCASES];
	char buf[64];

	if (argc != 3) {
		fprintf(stderr, "usage: walk-target LIB_A LIB_B\n");
		return 2;
	}
	bad_page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (bad_page == MAP_FAILED)
		die("mmap");
	for (size_t c = 0; c < NCASES; c++) {
		records[c].trace_id[0] = (uint8_t)(c + 1);
		records[c].span_id[0] = (uint8_t)(c + 1);
		records[c].valid = 1;
		records[c].trace_flags = 1;
	}
	pthread_barrier_init(&loaded, NULL, NCASES + 1);
	pthread_barrier_init(&done, NULL, NCASES + 1);
	for (size_t c = 0; c < NCASES; c++)
		if (pthread_create(&t[c], NULL, run, (void *)(uintptr_t)c) != 0)
			die("pthread_create");
	/* Loaded after the threads started: none has a block for either
	 * module until it touches it. */
	for (int m = 0; m < 2; m++) {
		void *h = dlopen(argv[1 + m], RTLD_NOW | RTLD_LOCAL);

		if (h == NULL)
			die(dlerror());
		*(void **)&mods[m].address = dlsym(h, "plain_slot_address");
		*(void **)&mods[m].publish = dlsym(h, "plain_slot_publish");
		if (mods[m].address == NULL || mods[m].publish == NULL)
			die("a module without plain_slot_address or plain_slot_publish");
	}
	pthread_barrier_wait(&loaded);
	pthread_barrier_wait(&done);
	printf("ready");
	for (size_t c = 0; c < NCASES; c++)
		printf(" %d:%s", (int)tids[c], cases[c].name);
	printf("\n");
	fflush(stdout);
	while (read(0, buf, sizeof(buf)) > 0)
		;
	__atomic_store_n(&stopping, 1, __ATOMIC_RELAXED);
	for (size_t c = 0; c < NCASES; c++)
		pthread_join(t[c], NULL);
	return 0;
}
