/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The signal storm (storm-run.h).  A writer thread publishes a new record
 * in a tight loop, by every publication path the API has (attach, attach
 * with a saved context, attach(ctx, ctx), update, restoring a saved record
 * and a saved "nothing", detach, update_span_id, update_trace_flags,
 * update_all, and the first publication of a thread: every few rounds the
 * storm moves to a new writer thread), naming each publication before it
 * makes it.  Another thread interrupts it with signals until every path has
 * been sampled inside its calls; the handler reads the record through
 * otel_thread_ctx_v1, exactly as a sampling profiler does, and accepts only
 * nothing, the whole record published last or the whole one being
 * published (never a torn record, an older one or the thread's draft); what
 * otel_thread_ctx_save() gives there must be one of those too.  It then
 * calls every async-signal-safe function that does not publish on contexts
 * of its own, with allocation and locks forbidden, and checks their
 * results.  Freeing memory a slot points into fails at once (the counting
 * allocator's free-time check).
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "common.h"
#include "counting-malloc.h"
#include "storm-run.h"

static struct storm storm;

/* Freeing a block that a thread's slot points into fails at once. */
static void *const *own_slot(void)
{
	return (void *const *)&otel_thread_ctx_v1;
}

__attribute__((constructor)) static void check_frees(void)
{
	counting_malloc_check_slots(own_slot);
}

/* One storm for both tests (Check runs an unchecked fixture once, in the
 * process the tests are forked from). */
static int storm_rc = -1;

static void run_the_storm(void)
{
	storm_rc = storm_run(&storm, env_count("OTEL_TEST_SIGNALS", 100000), 240);
}

/* The slot, sampled in the handler, shows nothing, the whole record
 * published last or the whole one being published; and the handler's own
 * work on its contexts gives what it should. */
START_TEST(only_whole_records_under_a_signal_storm)
{
	char why[400];

	ck_assert_msg(storm_rc == 0, "%s", storm.wrong_what);
	ck_assert_msg(!storm_verdict(&storm, STORM_CHECK_SLOT, why, sizeof(why)), "%s", why);
}
END_TEST

/* otel_thread_ctx_save(), called in the handler on the interrupted thread,
 * gives what the slot may show there: nothing, the whole record published
 * last or the whole one being published. */
START_TEST(save_in_a_handler_gives_what_the_slot_shows)
{
	char why[400];

	ck_assert_msg(storm_rc == 0, "%s", storm.wrong_what);
	ck_assert_msg(!storm_verdict(&storm, STORM_CHECK_SAVE, why, sizeof(why)), "%s", why);
}
END_TEST

Suite *test_suite(void)
{
	Suite *s = suite_create("signal-storm");
	TCase *tc = tcase_create("storm");

	tcase_add_unchecked_fixture(tc, run_the_storm, NULL);
	tcase_add_test(tc, only_whole_records_under_a_signal_storm);
	tcase_add_test(tc, save_in_a_handler_gives_what_the_slot_shows);
	suite_add_tcase(s, tc);
	return s;
}
