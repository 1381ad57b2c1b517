/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Another module defines otel_thread_ctx_v1 ahead of the library: the
 * executable itself (built with FOREIGN_IN_EXE) or a library loaded before
 * it (libforeign).  Symbol resolution makes that 8-byte definition the slot
 * in effect, followed in that module's TLS by thread-locals of its own
 * (sentinels).  The library must publish its records in that slot, which is
 * where readers look, and never write past its 8 bytes: on the main thread
 * through attach (with and without `saved`, refused when `saved` is too
 * small), update, update_span_id,
 * update_trace_flags, update_all, save, detach, the attach of a saved
 * "nothing published", and the destruction of the context a copy of which
 * is published; and on threads that exit while they publish, checked after
 * the library's thread-exit cleanup by a pthread-key destructor that runs
 * after it.  The self-check names the other module and says the slot is not
 * the library's own, whose definition stays untouched (NULL).
 *
 *   usage: interpose exe|lib [threads]
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "foreign.h"
#include "check-lite.h"
#include "otel_thread_ctx.h"
#include "testenv.h"

static const uint8_t trace_a[16] = { 0x11, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
static const uint8_t span_a[8] = { 0x22, 1, 2, 3, 4, 5, 6, 7 };
static const uint8_t span_b[8] = { 0x33, 1, 2, 3, 4, 5, 6, 7 };

static pthread_key_t after_key;
static unsigned long exit_failures;
static const void *own_slot_main;

static int sentinels_intact(void)
{
	const uint64_t *s = foreign_sentinels();

	for (int i = 0; i < FOREIGN_SENTINEL_WORDS; i++)
		if (s[i] != FOREIGN_SENTINEL)
			return 0;
	return 1;
}

#define CHECK_SENTINELS(when) ck_assert_msg(sentinels_intact(), "the other module's thread-locals " \
				    "after the slot were overwritten (%s)", when)

/* The record the other module's slot leads to. */
static const struct otel_thread_ctx_record *in_slot(void)
{
	return *(const struct otel_thread_ctx_record *volatile *)foreign_slot();
}

static void check_self_check(const char *expect_module)
{
	struct otel_thread_ctx_self_check sc;
	int rc = otel_thread_ctx_self_check(&sc);

	printf("self-check: %s\n", sc.reason);
	ck_assert_msg(rc == OTEL_THREAD_CTX_OK && sc.status == OTEL_THREAD_CTX_SELF_CHECK_OK,
	      "self-check: %d, status %d", rc, sc.status);
	ck_assert_msg(sc.slot == (const void *)foreign_slot(), "self-check: slot %p, the other module's is %p",
	      sc.slot, (void *)foreign_slot());
	ck_assert_msg(!sc.slot_is_own && sc.own_slot != sc.slot && sc.own_slot != NULL,
	      "self-check: the slot in effect is said to be the library's own");
	ck_assert_msg(sc.module != NULL && strstr(sc.module, expect_module) != NULL,
	      "self-check: module %s, expected %s", sc.module ? sc.module : "(none)", expect_module);
	ck_assert_msg(strstr(sc.reason, "ahead of the library's own") != NULL,
	      "self-check: the reason does not say another definition is in effect");
	ck_assert_msg(sc.exporting_modules == 2, "self-check: %u exporting modules, expected 2",
	      sc.exporting_modules);
	own_slot_main = sc.own_slot;
}

/* Runs after the library's thread-exit cleanup (its key is younger). */
static void after_library_cleanup(void *arg)
{
	(void)arg;
	if (in_slot() != NULL || !sentinels_intact())
		__atomic_fetch_add(&exit_failures, 1, __ATOMIC_RELAXED);
}

static void *exit_publishing(void *arg)
{
	static const struct otel_thread_ctx_attr attrs[] = { { 1, 6, (const uint8_t *)"worker" } };
	otel_thread_ctx *ctx;

	(void)arg;
	ck_assert_msg(pthread_setspecific(after_key, (void *)1) == 0, "pthread_setspecific");
	ck_assert_int_eq(otel_thread_ctx_create(&ctx), 0);
	ck_assert_int_eq(otel_thread_ctx_set_ids(ctx, trace_a, span_a, 1), 0);
	ck_assert_int_eq(otel_thread_ctx_set_attrs(ctx, attrs, 1), 0);
	ck_assert_int_eq(otel_thread_ctx_attach(ctx, NULL), 0);
	/* The thread's copy outlives the context. */
	otel_thread_ctx_destroy(ctx);
	ck_assert_msg(in_slot() != NULL && memcmp(in_slot()->span_id, span_a, 8) == 0 &&
	      in_slot()->attrs_data_size == 8,
	      "a thread's record is not in the other module's slot");
	ck_assert_int_eq(otel_thread_ctx_update_span_id(span_b), 0);
	ck_assert_msg(memcmp(in_slot()->span_id, span_b, 8) == 0, "a thread's update_span_id is not in "
	      "the other module's slot");
	CHECK_SENTINELS("a thread published");
	return NULL;
}

int main(int argc, char **argv)
{
	static const struct otel_thread_ctx_attr attrs[] = { { 2, 3, (const uint8_t *)"abc" } };
	const char *where = argc > 1 ? argv[1] : "";
	unsigned long n = argc > 2 ? strtoul(argv[2], NULL, 10) : env_count("OTEL_TEST_THREADS", 64);
	otel_thread_ctx *ctx, *other, *saved;
	const struct otel_thread_ctx_record *r, *first;

	if (strcmp(where, "exe") != 0 && strcmp(where, "lib") != 0) {
		fprintf(stderr, "usage: interpose exe|lib [threads]\n");
		return 2;
	}
	CHECK_SENTINELS("at start");
	ck_assert_msg(in_slot() == NULL, "the slot is not NULL at start");

	ck_assert_int_eq(otel_thread_ctx_create(&ctx), 0);
	ck_assert_int_eq(otel_thread_ctx_create(&other), 0);
	ck_assert_int_eq(otel_thread_ctx_create(&saved), 0);
	ck_assert_int_eq(otel_thread_ctx_set_ids(ctx, trace_a, span_a, 1), 0);
	ck_assert_int_eq(otel_thread_ctx_attach(ctx, saved), 0);
	r = first = in_slot();
	ck_assert_msg(r != NULL && r->valid == 1 && memcmp(r->trace_id, trace_a, 16) == 0 &&
	      memcmp(r->span_id, span_a, 8) == 0,
	      "the record is not in the other module's slot");
	CHECK_SENTINELS("attach");
	check_self_check(strcmp(where, "exe") == 0 ? "" : "libforeign");
	ck_assert_msg(*(const void *const *)own_slot_main == NULL,
	      "the library's own (shadowed) definition was written");

	ck_assert_int_eq(otel_thread_ctx_update_span_id(span_b), 0);
	ck_assert_msg(memcmp(in_slot()->span_id, span_b, 8) == 0, "update_span_id is not in the slot");
	ck_assert_msg(in_slot() != first, "update_span_id did not publish another record");
	CHECK_SENTINELS("update_span_id");
	ck_assert_int_eq(otel_thread_ctx_update_trace_flags(0), 0);
	ck_assert_msg(in_slot()->trace_flags == 0, "update_trace_flags is not in the slot");
	CHECK_SENTINELS("update_trace_flags");
	ck_assert_int_eq(otel_thread_ctx_set_attr(ctx, 1, "x", 1), 0);
	ck_assert_int_eq(otel_thread_ctx_update(ctx), 0);
	ck_assert_msg(in_slot()->attrs_data_size == 3 && memcmp(in_slot()->span_id, span_a, 8) == 0,
	      "update is not in the slot");
	CHECK_SENTINELS("update");
	ck_assert_int_eq(otel_thread_ctx_update_all(trace_a, span_b, 1, attrs, 1), 0);
	ck_assert_msg(in_slot()->attrs_data_size == 5, "update_all is not in the slot");
	CHECK_SENTINELS("update_all");
	ck_assert_int_eq(otel_thread_ctx_save(other), 0);
	CHECK_SENTINELS("save");
	/* A saved too small for what the thread publishes: refused, and the
	 * slot stays as it was. */
	{
		struct otel_thread_ctx_options o = OTEL_THREAD_CTX_OPTIONS_INIT;
		otel_thread_ctx *small;

		r = in_slot();
		o.attrs_capacity = 4;
		ck_assert_int_eq(otel_thread_ctx_create_with(&small, &o), 0);
		ck_assert_msg(otel_thread_ctx_attach(ctx, small) == OTEL_THREAD_CTX_ENOSPC,
		      "attach with a saved too small was not refused");
		ck_assert_msg(in_slot() == r && r->attrs_data_size == 5,
		      "a refused attach changed the slot");
		ck_assert_msg(otel_thread_ctx_detach(small) == OTEL_THREAD_CTX_ENOSPC && in_slot() == r,
		      "a refused detach changed the slot");
		otel_thread_ctx_destroy(small);
		CHECK_SENTINELS("refusals");
	}
	/* saved holds "nothing published" (from the first attach): putting
	 * it back unpublishes. */
	ck_assert_int_eq(otel_thread_ctx_update(saved), 0);
	ck_assert_msg(in_slot() == NULL, "the update of a saved \"nothing published\" left a record");
	CHECK_SENTINELS("update of nothing published");
	ck_assert_int_eq(otel_thread_ctx_attach(other, saved), 0);
	ck_assert_msg(in_slot() != NULL && in_slot()->attrs_data_size == 5 &&
	      memcmp(in_slot()->span_id, span_b, 8) == 0, "attach of a saved record");
	CHECK_SENTINELS("attach of a saved record");
	/* The context destroyed: its copy stays published. */
	otel_thread_ctx_destroy(other);
	ck_assert_msg(in_slot() != NULL && in_slot()->attrs_data_size == 5,
	      "the destruction of the context changed the slot");
	CHECK_SENTINELS("destroy");
	ck_assert_int_eq(otel_thread_ctx_detach(ctx), 0);
	ck_assert_msg(in_slot() == NULL, "detach left a record in the slot");
	CHECK_SENTINELS("detach");
	ck_assert_int_eq(otel_thread_ctx_update(ctx), 0);
	ck_assert_msg(in_slot() != NULL && in_slot()->attrs_data_size == 5, "update of what detach saved");
	ck_assert_int_eq(otel_thread_ctx_detach(NULL), 0);
	ck_assert_msg(in_slot() == NULL, "detach left a record in the slot");
	CHECK_SENTINELS("detach");
	otel_thread_ctx_destroy(ctx);
	otel_thread_ctx_destroy(saved);
	ck_assert_msg(*(const void *const *)own_slot_main == NULL,
	      "the library's own (shadowed) definition was written");

	/* Threads that exit while they publish. */
	ck_assert_msg(pthread_key_create(&after_key, after_library_cleanup) == 0, "pthread_key_create");
	for (unsigned long i = 0; i < n; i++) {
		pthread_t t;

		ck_assert_msg(pthread_create(&t, NULL, exit_publishing, NULL) == 0, "pthread_create");
		ck_assert_msg(pthread_join(t, NULL) == 0, "pthread_join");
	}
	ck_assert_msg(exit_failures == 0, "%lu of %lu exiting threads left the slot set or the other "
	      "module's thread-locals overwritten", exit_failures, n);
	printf("ok: %s defines the slot; records went there, and nothing past its 8 bytes "
	       "changed (main thread, and %lu threads exiting while they publish)\n",
	       strcmp(where, "exe") == 0 ? "the executable" : "libforeign", n);
	return 0;
}
