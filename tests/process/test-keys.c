/* SPDX-License-Identifier: Apache-2.0 */
/* The attribute key registry: indices in order, the same name the same
 * index, bad names refused, 256 at most, safe from many threads, lookups
 * consistent while names are added (also from a signal handler). */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/time.h>
#include <time.h>

#include "pctx.h"

/* A name that no other test uses: "tag.<test>.<i>". */
static void name_of(char *out, size_t cap, const char *test, unsigned int i)
{
	snprintf(out, cap, "tag.%s.%u", test, i);
}

START_TEST(register_hands_out_indices_in_order)
{
	unsigned int base = otel_thread_ctx_key_count(), idx = 999, again = 999;
	char name[64];

	for (unsigned int i = 0; i < 3; i++) {
		name_of(name, sizeof(name), "order", i);
		ck_assert_ok(otel_thread_ctx_key_register(name, &idx));
		ck_assert_uint_eq(idx, base + i);
		ck_assert_uint_eq(otel_thread_ctx_key_count(), base + i + 1);
		ck_assert_str_eq(otel_thread_ctx_key_name(idx), name);
	}
	/* The same name: the same index, nothing added. */
	name_of(name, sizeof(name), "order", 1);
	ck_assert_ok(otel_thread_ctx_key_register(name, &again));
	ck_assert_uint_eq(again, base + 1);
	ck_assert_uint_eq(otel_thread_ctx_key_count(), base + 3);
	ck_assert_ok(otel_thread_ctx_key_find(name, &idx));
	ck_assert_uint_eq(idx, base + 1);
	/* The name returned stays where it is. */
	ck_assert_ptr_eq(otel_thread_ctx_key_name(base + 1), otel_thread_ctx_key_name(again));
	ck_assert_ptr_null(otel_thread_ctx_key_name(base + 3));
	ck_assert_ptr_null(otel_thread_ctx_key_name(100000));
	/* A prefix or an extension of a name is another name. */
	ck_assert_otel(otel_thread_ctx_key_find("tag.order", &idx), OTEL_THREAD_CTX_EUNKNOWNKEY);
	ck_assert_otel(otel_thread_ctx_key_find("tag.order.1x", &idx), OTEL_THREAD_CTX_EUNKNOWNKEY);
	/* UTF-8 beyond ASCII is fine. */
	ck_assert_ok(otel_thread_ctx_key_register("tag.order.caf\xc3\xa9.\xf0\x9f\x98\x80", &idx));
	ck_assert_uint_eq(idx, base + 3);
}
END_TEST

START_TEST(bad_names_are_refused_and_change_nothing)
{
	static const char *const bad_utf8[] = {
		"tag.\xc3",             /* truncated */
		"tag.\xc3\x28",         /* bad continuation */
		"tag.\xc0\xaf",         /* overlong */
		"tag.\xed\xa0\x80",     /* surrogate */
		"tag.\xf4\x90\x80\x80", /* above U+10FFFF */
		"tag.\xff",
	};
	char longest[OTEL_THREAD_CTX_KEY_NAME_MAX + 2];
	unsigned int base = otel_thread_ctx_key_count(), idx = 12345;

	ck_assert_otel(otel_thread_ctx_key_register(NULL, &idx), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_key_register("tag.x", NULL), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_key_register("", &idx), OTEL_THREAD_CTX_ENAME);
	for (size_t i = 0; i < sizeof(bad_utf8) / sizeof(bad_utf8[0]); i++)
		ck_assert_otel(otel_thread_ctx_key_register(bad_utf8[i], &idx), OTEL_THREAD_CTX_ENAME);

	memset(longest, 'k', sizeof(longest));
	longest[OTEL_THREAD_CTX_KEY_NAME_MAX + 1] = '\0'; /* 256 bytes */
	ck_assert_otel(otel_thread_ctx_key_register(longest, &idx), OTEL_THREAD_CTX_ENAME);
	ck_assert_otel(otel_thread_ctx_key_find(longest, &idx), OTEL_THREAD_CTX_EUNKNOWNKEY);
	ck_assert_uint_eq(idx, 12345);
	ck_assert_uint_eq(otel_thread_ctx_key_count(), base);

	longest[OTEL_THREAD_CTX_KEY_NAME_MAX] = '\0'; /* 255 bytes: the limit */
	ck_assert_ok(otel_thread_ctx_key_register(longest, &idx));
	ck_assert_uint_eq(idx, base);
	ck_assert_uint_eq(strlen(otel_thread_ctx_key_name(idx)), OTEL_THREAD_CTX_KEY_NAME_MAX);

	ck_assert_otel(otel_thread_ctx_key_find(NULL, &idx), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_key_find("tag.x", NULL), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_key_find("", &idx), OTEL_THREAD_CTX_EUNKNOWNKEY);
}
END_TEST

/* Fills the registry to 256 and tries one more (in a child: it stays full). */
static int fill_registry(void *arg)
{
	unsigned int idx, first = 999;
	char name[64];

	(void)arg;
	for (unsigned int i = otel_thread_ctx_key_count(); i < 256; i++) {
		name_of(name, sizeof(name), "full", i);
		CHECK_RC(otel_thread_ctx_key_register(name, &idx), OTEL_THREAD_CTX_OK);
		CHECK(idx == i);
		if (first == 999)
			first = i;
	}
	CHECK(otel_thread_ctx_key_count() == 256);
	CHECK_RC(otel_thread_ctx_key_register("tag.full.one-too-many", &idx), OTEL_THREAD_CTX_EKEYS);
	CHECK(otel_thread_ctx_key_count() == 256);
	CHECK_RC(otel_thread_ctx_key_find("tag.full.one-too-many", &idx), OTEL_THREAD_CTX_EUNKNOWNKEY);
	CHECK(otel_thread_ctx_key_name(256) == NULL);
	/* Known names still work, and keep their index. */
	name_of(name, sizeof(name), "full", 255);
	CHECK_RC(otel_thread_ctx_key_register(name, &idx), OTEL_THREAD_CTX_OK);
	CHECK(idx == 255);
	name_of(name, sizeof(name), "full", first);
	CHECK(strcmp(otel_thread_ctx_key_name(first), name) == 0);
	return 0;
}

START_TEST(at_most_256_keys)
{
	run_isolated(fill_registry, NULL);
}
END_TEST

/* Several threads register overlapping sets of names in different orders. */
#define RACE_THREADS 4
#define RACE_SHARED 40
#define RACE_OWN 10

struct racer {
	pthread_t thread;
	unsigned int id;
	unsigned int shared[RACE_SHARED];
	unsigned int own[RACE_OWN];
	int rc;
};

static pthread_barrier_t race_start;

static void *racer_main(void *arg)
{
	struct racer *r = arg;
	char name[64];

	pthread_barrier_wait(&race_start);
	for (unsigned int k = 0; k < RACE_SHARED + RACE_OWN && r->rc == 0; k++) {
		/* Thread i starts at a different place and walks with its own
		 * stride (strides prime to 50: each visits every name once). */
		static const unsigned int stride[RACE_THREADS] = { 1, 3, 7, 9 };
		unsigned int j = (k * stride[r->id] + r->id * 7) % (RACE_SHARED + RACE_OWN);

		if (j < RACE_SHARED) {
			name_of(name, sizeof(name), "race-shared", j);
			r->rc = otel_thread_ctx_key_register(name, &r->shared[j]);
		} else {
			snprintf(name, sizeof(name), "tag.race-own.%u.%u", r->id, j - RACE_SHARED);
			r->rc = otel_thread_ctx_key_register(name, &r->own[j - RACE_SHARED]);
		}
	}
	return NULL;
}

static int race(void *arg)
{
	static struct racer r[RACE_THREADS];
	unsigned int base = otel_thread_ctx_key_count(), seen[256] = { 0 };
	char name[64];

	(void)arg;
	CHECK(pthread_barrier_init(&race_start, NULL, RACE_THREADS) == 0);
	for (unsigned int i = 0; i < RACE_THREADS; i++) {
		r[i].id = i;
		CHECK(pthread_create(&r[i].thread, NULL, racer_main, &r[i]) == 0);
	}
	for (unsigned int i = 0; i < RACE_THREADS; i++) {
		CHECK(pthread_join(r[i].thread, NULL) == 0);
		CHECK_RC(r[i].rc, OTEL_THREAD_CTX_OK);
	}
	CHECK(otel_thread_ctx_key_count() == base + RACE_SHARED + RACE_THREADS * RACE_OWN);
	for (unsigned int j = 0; j < RACE_SHARED; j++) {
		unsigned int idx = r[0].shared[j];

		for (unsigned int i = 1; i < RACE_THREADS; i++)
			CHECK(r[i].shared[j] == idx); /* everyone agrees */
		name_of(name, sizeof(name), "race-shared", j);
		CHECK(strcmp(otel_thread_ctx_key_name(idx), name) == 0);
		CHECK(idx >= base && idx < 256 && seen[idx]++ == 0);
	}
	for (unsigned int i = 0; i < RACE_THREADS; i++) {
		for (unsigned int j = 0; j < RACE_OWN; j++) {
			unsigned int idx = r[i].own[j];

			snprintf(name, sizeof(name), "tag.race-own.%u.%u", i, j);
			CHECK(strcmp(otel_thread_ctx_key_name(idx), name) == 0);
			CHECK(idx >= base && idx < 256 && seen[idx]++ == 0);
		}
	}
	return 0;
}

START_TEST(concurrent_registration_agrees)
{
	run_isolated(race, NULL);
}
END_TEST

/*
 * Lookups while names are added: a thread reads the registry in a loop, and
 * a signal handler does the same on the registering thread itself, which
 * interrupts registrations at arbitrary points.  Every visible index must
 * hold its complete name.
 */
static unsigned int lookup_base;
static volatile sig_atomic_t handler_bad, handler_runs;
static unsigned long reader_checks; /* atomic: read by the registering thread */

/* The timer's shortest period.  TSan handles a signal at the next call it
 * intercepts and is slow at it: at 20 us the registering thread would do
 * nothing but handle signals. */
#if defined(__SANITIZE_THREAD__)
#define MIN_PERIOD_US 1000
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MIN_PERIOD_US 1000
#endif
#endif
#ifndef MIN_PERIOD_US
#define MIN_PERIOD_US 20
#endif
static volatile int writer_done;

/* Every visible name is complete; with `find`, each also finds its index
 * (without, only the last one: a handler must stay short). */
static char expected[256][32];

static int check_visible(int find)
{
	unsigned int n = otel_thread_ctx_key_count(), idx;

	for (unsigned int i = lookup_base; i < n; i++) {
		const char *got = otel_thread_ctx_key_name(i);

		if (got == NULL || strcmp(got, expected[i]) != 0)
			return 0;
		if ((find || i + 1 == n) &&
		    (otel_thread_ctx_key_find(expected[i], &idx) != OTEL_THREAD_CTX_OK || idx != i))
			return 0;
	}
	return 1;
}

/* The handler's check grows with the registry and slows under load or a
 * sanitizer, and a wall-clock timer keeps firing while the thread is off
 * the CPU: past a few checks within one registration, the handler returns
 * at once, so that the registering thread always gets on.  `registered`
 * counts the registering thread's completed registrations. */
#define CHECKS_PER_REGISTRATION 8
static volatile sig_atomic_t registered, handler_skipped;
static volatile sig_atomic_t handler_seen = -1, handler_checks; /* the handler's own */

static void on_signal(int sig)
{
	(void)sig;
	if (handler_seen != registered) {
		handler_seen = registered;
		handler_checks = 0;
	}
	if (handler_checks++ >= CHECKS_PER_REGISTRATION) {
		handler_skipped++;
		return;
	}
	handler_runs++;
	if (!check_visible(0))
		handler_bad++;
}

static void *lookup_reader(void *arg)
{
	unsigned long *bad = arg;

	while (!__atomic_load_n(&writer_done, __ATOMIC_ACQUIRE)) {
		*bad += !check_visible(1);
		__atomic_fetch_add(&reader_checks, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int lookups(void *arg)
{
	struct sigaction sa;
	struct itimerval every, off;
	uint64_t t0, cost_ns;
	sigset_t alarm_only, old_mask;
	pthread_t reader;
	unsigned long reader_bad = 0;
	unsigned int idx;
	char name[64];

	(void)arg;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	CHECK(sigaction(SIGALRM, &sa, NULL) == 0);
	/* Published, so that each registration also republishes (more time
	 * for the signals to land in). */
	CHECK_RC(otel_thread_ctx_process_publish(NULL, 0), OTEL_THREAD_CTX_OK);
	lookup_base = otel_thread_ctx_key_count();
	for (unsigned int i = lookup_base; i < 256; i++)
		name_of(expected[i], sizeof(expected[i]), "lookup", i - lookup_base);
	/* The timer's period: MIN_PERIOD_US, or 4 times what delivering a signal
	 * costs here if that is more (qemu-user), so that the handler never
	 * takes all the time. */
	t0 = now_ns();
	for (int i = 0; i < 64; i++)
		raise(SIGALRM);
	cost_ns = (now_ns() - t0) / 64;
	CHECK(handler_bad == 0);
	handler_runs = handler_skipped = handler_checks = 0;
	memset(&every, 0, sizeof(every));
	every.it_interval.tv_usec = (suseconds_t)(cost_ns * 4 / 1000 > MIN_PERIOD_US ?
						  cost_ns * 4 / 1000 : MIN_PERIOD_US);
	every.it_value = every.it_interval;
	/* The reader thread blocks SIGALRM, so the timer's signals
	 * interrupt this thread wherever it is. */
	sigemptyset(&alarm_only);
	sigaddset(&alarm_only, SIGALRM);
	CHECK(pthread_sigmask(SIG_BLOCK, &alarm_only, &old_mask) == 0);
	CHECK(pthread_create(&reader, NULL, lookup_reader, &reader_bad) == 0);
	CHECK(pthread_sigmask(SIG_SETMASK, &old_mask, NULL) == 0);
	CHECK(setitimer(ITIMER_REAL, &every, NULL) == 0);
	/* Both at work before the first registration.  A sleep, not a
	 * yield: TSan delivers a signal only at a call it intercepts. */
	while (__atomic_load_n(&reader_checks, __ATOMIC_RELAXED) == 0 || handler_runs == 0) {
		struct timespec pause = { 0, 10000 };

		nanosleep(&pause, NULL);
	}
	for (unsigned int i = 0; lookup_base + i < 256; i++) {
		name_of(name, sizeof(name), "lookup", i);
		CHECK_RC(otel_thread_ctx_key_register(name, &idx), OTEL_THREAD_CTX_OK);
		registered++;
	}
	memset(&off, 0, sizeof(off));
	CHECK(setitimer(ITIMER_REAL, &off, NULL) == 0);
	__atomic_store_n(&writer_done, 1, __ATOMIC_RELEASE);
	CHECK(pthread_join(reader, NULL) == 0);
	printf("registry lookups: %ld in a signal handler every %ld us (%ld bad, %ld signals "
	       "past %d checks in one registration skipped), %lu by a thread (%lu bad)\n",
	       (long)handler_runs, (long)every.it_interval.tv_usec, (long)handler_bad,
	       (long)handler_skipped, CHECKS_PER_REGISTRATION, reader_checks, reader_bad);
	CHECK(handler_bad == 0);
	CHECK(reader_bad == 0);
	CHECK(otel_thread_ctx_key_count() == 256);
	CHECK(check_visible(1));
	return 0;
}

START_TEST(lookups_see_complete_names_while_keys_are_added)
{
	run_isolated(lookups, NULL);
}
END_TEST

Suite *test_suite(void)
{
	const struct test_case cases[] = {
		{ "register_hands_out_indices_in_order", register_hands_out_indices_in_order },
		{ "bad_names_are_refused_and_change_nothing",
		  bad_names_are_refused_and_change_nothing },
		{ "at_most_256_keys", at_most_256_keys },
		{ "concurrent_registration_agrees", concurrent_registration_agrees },
		{ "lookups_see_complete_names_while_keys_are_added",
		  lookups_see_complete_names_while_keys_are_added },
	};

	return MAKE_SUITE("keys", cases, 30);
}
