/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One cell of the linker relaxation matrix: a program that uses the library
 * the way a tracer does, linked one particular way (static or shared
 * library, PIE or not, static-pie, fully static; bfd, gold, lld or mold).
 *
 * In the main thread and in every worker thread, all alive at once, it
 * proves from inside that the library and the compiler agree on the slot:
 *
 *  - &otel_thread_ctx_v1 as the compiler's own TLS code computes it (in this
 *    file, with whatever model the compiler and linker chose) equals the
 *    address the library's TLSDESC access computes (the self-check's slot);
 *  - a context published with the library is what the compiler's code reads
 *    through otel_thread_ctx_v1: this thread's ids, valid == 1; an update is
 *    seen; after detach the slot reads NULL;
 *  - the self-check says what it must: with EXPECT "ok", that the exported
 *    .dynsym entry resolves to that same address in this thread; with
 *    "not-exported", that no loaded module exports it (and it says why);
 *  - every thread has its own slot.
 *
 * Built with -DPROBE_NAMED_SLOT=0 (the -static-pie cells), the probe never
 * names otel_thread_ctx_v1: GNU ld turns any access to the exported slot in
 * such an executable into an R_X86_64_TPOFF64 relocation that glibc cannot
 * apply at start-up, and the cell tests the library's objects, not the
 * probe's.  The "compiler's" address is then the one a reader computes
 * from the file: the .dynsym entry in the thread's TLS block, as the
 * self-check finds it (expected only where the slot is exported).
 *
 * It prints one line per thread, then "tp_offset: N" (the slot's offset
 * from the thread pointer, for the driver to compare with what the checker
 * predicts from the file) and "result: ok" or "result: FAIL ...".
 *
 *   usage: probe ok|not-exported [threads]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <otel_thread_ctx.h>

#define MAX_THREADS 64

#ifndef PROBE_NAMED_SLOT
#define PROBE_NAMED_SLOT 1
#endif

/* The slot as this program finds it (see above). */
static const struct otel_thread_ctx_record *const *slot_address(void)
{
#if PROBE_NAMED_SLOT
	return &otel_thread_ctx_v1;
#else
	struct otel_thread_ctx_self_check sc;

	otel_thread_ctx_self_check(&sc);
	return (const struct otel_thread_ctx_record *const *)sc.exported;
#endif
}

struct worker {
	unsigned int index;
	int expect_exported;
	const void *slot;   /* the compiler's &otel_thread_ctx_v1 */
	intptr_t tp_offset;
	int waited;         /* passed the barrier */
	char line[512];
	char failure[512];
};

static pthread_barrier_t all_alive;

static uintptr_t thread_pointer(void)
{
	uintptr_t tp;

#if defined(__x86_64__)
	__asm__("mov %%fs:0, %0" : "=r"(tp));
#elif defined(__aarch64__)
	__asm__("mrs %0, tpidr_el0" : "=r"(tp));
#else
#error "the matrix runs on x86-64 and aarch64"
#endif
	return tp;
}

#define FAIL(w, ...)                                                               \
	do {                                                                       \
		snprintf((w)->failure, sizeof((w)->failure), __VA_ARGS__);          \
		return;                                                            \
	} while (0)

static void run(struct worker *w)
{
	struct otel_thread_ctx_self_check sc;
	uint8_t trace[16], span[8];
	otel_thread_ctx *ctx = NULL, *saved = NULL;
	struct otel_thread_ctx_record back;
	const struct otel_thread_ctx_record *seen;
	int rc;

	const struct otel_thread_ctx_record *const *slot = slot_address();

	if (slot == NULL)
		FAIL(w, "the program cannot locate the slot");
	w->slot = (const void *)slot;
	w->tp_offset = (intptr_t)((uintptr_t)w->slot - thread_pointer());

	for (unsigned int i = 0; i < 16; i++)
		trace[i] = (uint8_t)(0xa0 + w->index + i);
	for (unsigned int i = 0; i < 8; i++)
		span[i] = (uint8_t)(0x10 + w->index + i);

	if (*slot != NULL)
		FAIL(w, "the slot is not NULL before anything was published");
	if ((rc = otel_thread_ctx_create(&ctx)) != OTEL_THREAD_CTX_OK ||
	    (rc = otel_thread_ctx_set_ids(ctx, trace, span, 1)) != OTEL_THREAD_CTX_OK ||
	    (rc = otel_thread_ctx_set_attr(ctx, 1, "probe", 5)) != OTEL_THREAD_CTX_OK ||
	    (rc = otel_thread_ctx_attach(ctx, NULL)) != OTEL_THREAD_CTX_OK)
		FAIL(w, "publishing failed: %s", otel_thread_ctx_strerror(rc));

	seen = *slot;
	if (seen == NULL || seen->valid != 1 || memcmp(seen->trace_id, trace, 16) != 0 ||
	    memcmp(seen->span_id, span, 8) != 0)
		FAIL(w, "the compiler's otel_thread_ctx_v1 does not show what the library published");

	rc = otel_thread_ctx_self_check(&sc);
	if (sc.slot != w->slot)
		FAIL(w, "the library writes %p but the compiler's &otel_thread_ctx_v1 is %p", sc.slot,
		     w->slot);
	if (w->expect_exported) {
		if (rc != OTEL_THREAD_CTX_OK || sc.status != OTEL_THREAD_CTX_SELF_CHECK_OK ||
		    sc.exported != w->slot)
			FAIL(w, "self-check: status %d, exported %p: %s", sc.status, sc.exported, sc.reason);
	} else {
		if (rc != OTEL_THREAD_CTX_ESLOT || sc.status != OTEL_THREAD_CTX_SELF_CHECK_NOT_EXPORTED ||
		    sc.exported != NULL || sc.reason[0] == '\0')
			FAIL(w, "self-check should report the slot not exported: status %d: %s", sc.status,
			     sc.reason);
	}

	span[7] ^= 0xff;
	if ((rc = otel_thread_ctx_set_span_id(ctx, span)) != OTEL_THREAD_CTX_OK ||
	    (rc = otel_thread_ctx_update(ctx)) != OTEL_THREAD_CTX_OK)
		FAIL(w, "update failed: %s", otel_thread_ctx_strerror(rc));
	seen = *slot;
	if (seen == NULL || memcmp(seen->span_id, span, 8) != 0)
		FAIL(w, "the update is not seen through the compiler's otel_thread_ctx_v1");

	/* Every thread publishes now: the slots must all be distinct. */
	pthread_barrier_wait(&all_alive);
	w->waited = 1;

	if ((rc = otel_thread_ctx_create(&saved)) != OTEL_THREAD_CTX_OK ||
	    (rc = otel_thread_ctx_detach(saved)) != OTEL_THREAD_CTX_OK ||
	    (rc = otel_thread_ctx_get(saved, &back)) != OTEL_THREAD_CTX_OK)
		FAIL(w, "detach failed: %s", otel_thread_ctx_strerror(rc));
	if (*slot != NULL)
		FAIL(w, "the slot is not NULL after detach");
	if (memcmp(back.span_id, span, 8) != 0 || back.attrs_data_size != 7)
		FAIL(w, "detach saved another record than the one published");
	otel_thread_ctx_destroy(saved);
	otel_thread_ctx_destroy(ctx);

	snprintf(w->line, sizeof(w->line), "thread %u: slot %p (tp%+ld), self-check: %s", w->index,
		 w->slot, (long)w->tp_offset, sc.reason);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	run(w);
	if (!w->waited)
		pthread_barrier_wait(&all_alive); /* run() failed before it */
	return NULL;
}

int main(int argc, char **argv)
{
	static struct worker w[MAX_THREADS + 1];
	pthread_t tid[MAX_THREADS + 1];
	unsigned int n = 4, failures = 0;
	int expect;

	if (argc < 2 || (strcmp(argv[1], "ok") != 0 && strcmp(argv[1], "not-exported") != 0)) {
		fprintf(stderr, "usage: probe ok|not-exported [threads]\n");
		return 2;
	}
	expect = strcmp(argv[1], "ok") == 0;
	if (argc > 2)
		n = (unsigned int)strtoul(argv[2], NULL, 10);
	if (n < 1 || n > MAX_THREADS)
		n = 4;

	/* Thread 0 is the main thread; 1..n are workers. */
	pthread_barrier_init(&all_alive, NULL, n + 1);
	for (unsigned int i = 0; i <= n; i++) {
		w[i].index = i;
		w[i].expect_exported = expect;
	}
	for (unsigned int i = 1; i <= n; i++) {
		if (pthread_create(&tid[i], NULL, worker_main, &w[i]) != 0) {
			printf("result: FAIL pthread_create\n");
			return 1;
		}
	}
	worker_main(&w[0]);
	for (unsigned int i = 1; i <= n; i++)
		pthread_join(tid[i], NULL);

	for (unsigned int i = 0; i <= n; i++) {
		if (w[i].failure[0] != '\0') {
			printf("thread %u: FAIL %s\n", i, w[i].failure);
			failures++;
			continue;
		}
		printf("%s\n", w[i].line);
		for (unsigned int k = 0; k < i; k++) {
			if (w[k].failure[0] == '\0' && w[k].slot == w[i].slot) {
				printf("thread %u: FAIL same slot as thread %u\n", i, k);
				failures++;
			}
		}
		if (w[i].tp_offset != w[0].tp_offset && w[0].failure[0] == '\0') {
			printf("thread %u: FAIL offset from the thread pointer differs from thread 0's\n", i);
			failures++;
		}
	}
	printf("tp_offset: %ld\n", (long)w[0].tp_offset);
	if (failures != 0) {
		printf("result: FAIL (%u of %u threads)\n", failures, n + 1);
		return 1;
	}
	printf("result: ok (%u threads)\n", n + 1);
	return 0;
}
