/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Threads that exit in every publishing state, for exit-order.py, which
 * runs this under gdb and stops wherever the library gives a thread's
 * records back to its pool: the thread's slot must be NULL by then, or a
 * reader could follow it into records another thread already took.
 *
 * Linked with the static library, whose internal functions the executable's
 * symbol table names.  Exits 0 once every thread is done.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "check-lite.h"
#include "otel_thread_ctx.h"

static const uint8_t trace[16] = { 0x51, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
static const uint8_t span[8] = { 0x52, 1, 2, 3, 4, 5, 6, 7 };
static pthread_key_t late_key;

static volatile int published_seen, late_refused;

/* gdb stops here too, where the slot is known: that it reads the stopped
 * thread's slot right is checked there, against the argument. */
__attribute__((noinline)) void exit_order_published(const void *record)
{
	__asm__ volatile("" : : "r"(record) : "memory");
	published_seen++;
}

static void publish(void)
{
	ck_assert_int_eq(otel_thread_ctx_update_all(trace, span, 1, NULL, 0), 0);
	ck_assert_msg(otel_thread_ctx_v1 != NULL, "nothing published");
	exit_order_published(otel_thread_ctx_v1);
}

/* Exits while it publishes a copy of a context. */
static void *exit_attached(void *arg)
{
	otel_thread_ctx *ctx;

	(void)arg;
	ck_assert_int_eq(otel_thread_ctx_create(&ctx), 0);
	ck_assert_int_eq(otel_thread_ctx_set_ids(ctx, trace, span, 1), 0);
	ck_assert_int_eq(otel_thread_ctx_attach(ctx, NULL), 0);
	otel_thread_ctx_destroy(ctx);
	ck_assert_msg(otel_thread_ctx_v1 != NULL, "nothing published");
	exit_order_published(otel_thread_ctx_v1);
	return NULL;
}

/* Exits while it publishes what update_all wrote. */
static void *exit_published(void *arg)
{
	(void)arg;
	publish();
	return NULL;
}

/* Exits detached (it published before). */
static void *exit_detached(void *arg)
{
	(void)arg;
	publish();
	ck_assert_int_eq(otel_thread_ctx_detach(NULL), 0);
	return NULL;
}

/* Tries to publish again from a destructor that runs after the library's
 * cleanup: refused, so no records are taken that could go back only later. */
static void publish_late(void *arg)
{
	(void)arg;
	ck_assert_msg(otel_thread_ctx_update_all(trace, span, 1, NULL, 0) == OTEL_THREAD_CTX_ETHREAD,
	      "a publication after the exit cleanup was not refused");
	ck_assert_msg(otel_thread_ctx_v1 == NULL, "the slot is not NULL after the exit cleanup");
	late_refused = 1;
}

static void *exit_publishing_late(void *arg)
{
	(void)arg;
	ck_assert_msg(pthread_setspecific(late_key, (void *)1) == 0, "pthread_setspecific");
	publish();
	return NULL;
}

int main(void)
{
	void *(*const kinds[])(void *) = { exit_attached, exit_published, exit_detached,
					   exit_publishing_late };

	ck_assert_msg(pthread_key_create(&late_key, publish_late) == 0, "pthread_key_create");
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		pthread_t t;

		ck_assert_msg(pthread_create(&t, NULL, kinds[i], NULL) == 0, "pthread_create");
		ck_assert_msg(pthread_join(t, NULL) == 0, "pthread_join");
	}
	ck_assert_msg(published_seen == 4, "%d publications seen, expected 4", published_seen);
	ck_assert_msg(late_refused, "the late destructor did not run");
	printf("exit-order: 4 threads exited, one of them refused a publication from a late "
	       "destructor\n");
	return 0;
}
