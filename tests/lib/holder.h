/* SPDX-License-Identifier: Apache-2.0 */
/* Another thread that publishes a copy of a context until told to stop. */
#ifndef OTEL_TESTS_HOLDER_H
#define OTEL_TESTS_HOLDER_H

#include <pthread.h>
#include <semaphore.h>

#include "common.h"

struct holder {
	otel_thread_ctx *ctx;
	pthread_t thread;
	sem_t attached, release;
	int rc; /* of attach, then of detach */
	/* What the thread's slot pointed to while it published. */
	const struct otel_thread_ctx_record *slot;
};

static inline void *holder_main(void *arg)
{
	struct holder *h = arg;

	h->rc = otel_thread_ctx_attach(h->ctx, NULL);
	h->slot = otel_thread_ctx_v1;
	sem_post(&h->attached);
	sem_wait(&h->release);
	if (h->rc == OTEL_THREAD_CTX_OK)
		h->rc = otel_thread_ctx_detach(NULL);
	return NULL;
}

/* Starts the thread, which attaches ctx; returns once it has. */
static inline void holder_start(struct holder *h, otel_thread_ctx *ctx)
{
	h->ctx = ctx;
	sem_init(&h->attached, 0, 0);
	sem_init(&h->release, 0, 0);
	ck_assert_int_eq(pthread_create(&h->thread, NULL, holder_main, h), 0);
	sem_wait(&h->attached);
	ck_assert_ok(h->rc);
}

/* Lets the thread detach and exit. */
static inline void holder_finish(struct holder *h)
{
	sem_post(&h->release);
	ck_assert_int_eq(pthread_join(h->thread, NULL), 0);
	ck_assert_ok(h->rc);
	sem_destroy(&h->attached);
	sem_destroy(&h->release);
}

#endif /* OTEL_TESTS_HOLDER_H */
