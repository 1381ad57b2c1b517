/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The signal storm (storm-run.h).  One thread commits a new record in a
 * tight loop, by every commit path the API has (update, update_span_id,
 * update_all, set_attrs then update, update_attach, update then attach,
 * detach, invalidate, update_trace_flags, a frozen context attached and let
 * go), naming each commit before it makes it.  Another thread interrupts it
 * with signals until every path has been sampled inside its calls; the
 * handler reads the record through otel_thread_ctx_v1, exactly as a sampling
 * profiler does, and accepts only the record committed last or the one
 * being committed (or NULL where that is what is due): never a torn record,
 * an older one or a draft.  It then calls every async-signal-safe function
 * on a context of its own, with allocation forbidden, and checks their
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

START_TEST(only_committed_records_under_a_signal_storm)
{
	char why[300];

	ck_assert_int_eq(storm_run(&storm, env_count("OTEL_TEST_SIGNALS", 100000), 240), 0);
	ck_assert_msg(!storm_failed(&storm, why, sizeof(why)), "%s", why);
}
END_TEST

Suite *test_suite(void)
{
	const struct test_case cases[] = {
		{ "storm", only_committed_records_under_a_signal_storm },
	};

	return MAKE_SUITE("signal-storm", cases, 300);
}
