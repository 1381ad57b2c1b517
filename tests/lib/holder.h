/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Another thread that publishes a copy of a context until told to stop,
 * and checks, when it stops, that its slot and every byte of the record it
 * leads to are still what attaching gave it, whatever happened meanwhile to
 * the context (edited, destroyed) or to other threads.
 */
#ifndef OTEL_TESTS_HOLDER_H
#define OTEL_TESTS_HOLDER_H

#include <pthread.h>
#include <semaphore.h>

#include "common.h"

/* holder.rc when the published record changed while the holder waited. */
#define HOLDER_CHANGED (-1000)

struct holder {
	otel_thread_ctx *ctx;
	pthread_t thread;
	sem_t attached, release;
	int rc; /* of attach, then of the check, then of detach */
	/* What the thread published once it had attached. */
	struct published seen;
};

static inline void *holder_main(void *arg)
{
	struct holder *h = arg;
	struct published now;

	h->rc = otel_thread_ctx_attach(h->ctx, NULL);
	h->seen = read_published();
	sem_post(&h->attached);
	sem_wait(&h->release);
	now = read_published();
	if (h->rc == OTEL_THREAD_CTX_OK && !published_equal(&h->seen, &now))
		h->rc = HOLDER_CHANGED;
	if (h->rc == OTEL_THREAD_CTX_OK)
		h->rc = otel_thread_ctx_detach(NULL);
	return NULL;
}

/* Starts the thread, which attaches ctx; returns once it has.  The context
 * is the caller's again as soon as this returns. */
static inline void holder_start(struct holder *h, otel_thread_ctx *ctx)
{
	h->ctx = ctx;
	sem_init(&h->attached, 0, 0);
	sem_init(&h->release, 0, 0);
	ck_assert_int_eq(pthread_create(&h->thread, NULL, holder_main, h), 0);
	sem_wait(&h->attached);
	ck_assert_ok(h->rc);
	ck_assert_ptr_nonnull(h->seen.slot);
}

/* Lets the thread check its record, detach and exit. */
static inline void holder_finish(struct holder *h)
{
	sem_post(&h->release);
	ck_assert_int_eq(pthread_join(h->thread, NULL), 0);
	ck_assert_msg(h->rc != HOLDER_CHANGED,
		      "the record another thread published changed under it");
	ck_assert_ok(h->rc);
	sem_destroy(&h->attached);
	sem_destroy(&h->release);
}

#endif /* OTEL_TESTS_HOLDER_H */
