/* SPDX-License-Identifier: Apache-2.0 */
/* fork(): the forking thread keeps its context in the child; contexts of the
 * parent's other threads are detached there. */
#include <pthread.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "holder.h"

static const uint8_t trace_a[16] = { 0xaa, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
static const uint8_t span_a[8] = { 0xbb, 1, 2, 3, 4, 5, 6, 7 };
static const uint8_t span_b[8] = { 0xcc, 1, 2, 3, 4, 5, 6, 7 };

/* Runs `child` in a forked child and returns its exit status (0: all
 * checks passed; otherwise the number of the check that failed). */
static int in_child(int (*child)(void *), void *arg)
{
	int status = -1;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(child(arg));
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status), "child did not exit normally");
	return WEXITSTATUS(status);
}

struct expect {
	otel_thread_ctx *ctx;
	const struct otel_thread_ctx_record *slot;
};

static void *try_attach(void *arg)
{
	otel_thread_ctx *prev;

	return (void *)(intptr_t)otel_thread_ctx_attach(arg, &prev);
}

/* What another thread of this process gets when it attaches ctx. */
static int attach_from_another_thread(otel_thread_ctx *ctx)
{
	pthread_t t;
	void *rc;

	if (pthread_create(&t, NULL, try_attach, ctx) != 0 || pthread_join(t, &rc) != 0)
		return -1000;
	return (int)(intptr_t)rc;
}

static int child_keeps_context(void *arg)
{
	struct expect *e = arg;
	const struct otel_thread_ctx_record *r = otel_thread_ctx_v1;
	otel_thread_ctx *prev;

	if (r != e->slot)
		return 1;
	if (r->valid != 1 || memcmp(r->trace_id, trace_a, 16) || memcmp(r->span_id, span_a, 8))
		return 2;
	if (otel_thread_ctx_current() != e->ctx)
		return 3;
	/* Still owned by this thread: a new thread of the child cannot take it. */
	if (attach_from_another_thread(e->ctx) != OTEL_THREAD_CTX_EBUSY)
		return 4;
	if (otel_thread_ctx_set_span_id(e->ctx, span_b) || otel_thread_ctx_update(e->ctx))
		return 5;
	if (otel_thread_ctx_v1 == r || memcmp(otel_thread_ctx_v1->span_id, span_b, 8))
		return 6;
	if (otel_thread_ctx_detach(&prev) || prev != e->ctx || otel_thread_ctx_v1 != NULL)
		return 7;
	if (otel_thread_ctx_destroy(e->ctx))
		return 8;
	return 0;
}

static int grandchild(void *arg)
{
	struct expect *e = arg;
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return 20;
	if (pid == 0)
		_exit(child_keeps_context(e));
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return 21;
	if (WEXITSTATUS(status) != 0)
		return 30 + WEXITSTATUS(status);
	/* And this child still has it too. */
	return child_keeps_context(e);
}

START_TEST(forking_thread_keeps_its_context)
{
	struct expect e;
	otel_thread_ctx *prev;

	e.ctx = new_ctx();
	ck_assert_ok(otel_thread_ctx_set_ids(e.ctx, trace_a, span_a, 1));
	ck_assert_ok(otel_thread_ctx_update_attach(e.ctx, &prev));
	e.slot = otel_thread_ctx_v1;

	ck_assert_int_eq(in_child(child_keeps_context, &e), 0);
	ck_assert_int_eq(in_child(grandchild, &e), 0);

	/* The children's changes stayed in the children. */
	ck_assert_ptr_eq(otel_thread_ctx_v1, e.slot);
	ck_assert_mem_eq(otel_thread_ctx_v1->span_id, span_a, 8);
	ck_assert_ptr_eq(otel_thread_ctx_current(), e.ctx);
	ck_assert_ok(otel_thread_ctx_detach(&prev));
	ck_assert_ok(otel_thread_ctx_destroy(e.ctx));
}
END_TEST

static int child_adopts_orphan(void *arg)
{
	struct holder *h = arg;
	otel_thread_ctx *prev;

	/* The thread that had it attached does not exist here. */
	if (otel_thread_ctx_v1 != NULL || otel_thread_ctx_current() != NULL)
		return 1;
	if (otel_thread_ctx_attach(h->ctx, &prev) || prev != NULL)
		return 2;
	if (otel_thread_ctx_v1 == NULL || memcmp(otel_thread_ctx_v1->span_id, span_b, 8))
		return 3;
	if (otel_thread_ctx_detach(&prev) || prev != h->ctx)
		return 4;
	if (otel_thread_ctx_destroy(h->ctx))
		return 5;
	return 0;
}

static int child_destroys_orphan(void *arg)
{
	struct holder *h = arg;

	return otel_thread_ctx_destroy(h->ctx) == OTEL_THREAD_CTX_OK ? 0 : 1;
}

START_TEST(other_threads_contexts_are_detached_in_the_child)
{
	struct holder h;
	otel_thread_ctx *theirs = new_ctx();

	ck_assert_ok(otel_thread_ctx_set_ids(theirs, trace_a, span_b, 0));
	holder_start(&h, theirs);

	ck_assert_int_eq(in_child(child_adopts_orphan, &h), 0);
	ck_assert_int_eq(in_child(child_destroys_orphan, &h), 0);
	/* In the parent the thread still has it. */
	ck_assert_otel(otel_thread_ctx_destroy(h.ctx), OTEL_THREAD_CTX_EBUSY);

	holder_finish(&h);
	ck_assert_ok(otel_thread_ctx_destroy(h.ctx));
}
END_TEST

Suite *test_suite(void)
{
	const struct test_case cases[] = {
		{ "forking-thread-keeps", forking_thread_keeps_its_context },
		{ "others-detached", other_threads_contexts_are_detached_in_the_child },
	};

	return MAKE_SUITE("fork", cases, 0);
}
