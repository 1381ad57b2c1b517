/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Churn: many threads, a few alive at a time, each publishing a copy of a
 * context it made and destroyed when it exits; resident memory and heap at
 * the start, after the first 1% of the threads and at the end, in a fresh
 * child process, against the same churn of threads that only use malloc.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>

#include "bench.h"

struct churn_result churn, churn_control;
bool churn_done;

/* Each thread makes a context, attaches it, destroys it (the thread keeps
 * publishing its copy) and exits publishing. */
static void *churn_thread(void *arg)
{
	otel_thread_ctx *ctx;

	if (arg == NULL) {
		void *volatile p = malloc(1); /* volatile: not optimized away */

		free(p);
		return NULL;
	}
	ctx = make_ctx(1, span_ids[1], true);
	CHECK(otel_thread_ctx_attach(ctx, NULL));
	otel_thread_ctx_destroy(ctx);
	expect_span(span_ids[1], 1, "churn");
	return NULL;
}

static void churn_threads(unsigned count, bool publish)
{
	unsigned batch = opt.churn_batch;
	pthread_t *tids = calloc(batch, sizeof(*tids));

	if (tids == NULL)
		die("out of memory");
	for (unsigned done = 0; done < count;) {
		unsigned now = count - done < batch ? count - done : batch;

		for (unsigned k = 0; k < now; k++)
			if (pthread_create(&tids[k], NULL, churn_thread,
					   publish ? &churn : NULL) != 0)
				die("pthread_create failed");
		for (unsigned k = 0; k < now; k++)
			pthread_join(tids[k], NULL);
		done += now;
	}
	free(tids);
}

/* In a fresh child: RSS and heap at the start, after the first 1% of the
 * threads (the allocator's arenas, the cache of thread stacks and the
 * library's pool are set up by then), and at the end. */
static void churn_child(void *arg, void *out)
{
	struct churn_result *r = out;
	bool publish = *(bool *)arg;
	uint64_t t0 = now_ns(CLOCK_MONOTONIC);

	r->threads = opt.churn;
	r->warm_threads = opt.churn / 100 ? opt.churn / 100 : 1;
	r->rss_start = rss_kib();
	r->heap_start = heap_in_use();
	churn_threads(r->warm_threads, publish);
	r->rss_warm = rss_kib();
	r->heap_warm = heap_in_use();
	churn_threads(r->threads - r->warm_threads, publish);
	r->rss_end = rss_kib();
	r->heap_end = heap_in_use();
	r->seconds = (double)(now_ns(CLOCK_MONOTONIC) - t0) / 1e9;
}

void run_churn(void)
{
	bool publish = true;

	in_child(churn_child, &publish, &churn, sizeof(churn));
	publish = false;
	in_child(churn_child, &publish, &churn_control, sizeof(churn_control));
	churn_done = true;
}
