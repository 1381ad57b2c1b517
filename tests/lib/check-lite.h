/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The part of Check's API the tests use, for the programs that cannot link
 * Check: every program on musl (Debian builds Check against glibc only),
 * and the programs that run in a loader's or a plugin's conditions (they
 * must not load a second library or fork a test per case).  The tests are
 * written once, in Check's words: a Check suite compiles unchanged against
 * this header (tests/lib/no-check/check.h), and a plain program calls the
 * same ck_assert macros from main().
 *
 * What differs from Check: the tests of a suite run one after the other in
 * the calling process (as Check does with CK_FORK=no), and the first failed
 * assertion, from any thread, prints where and why and ends the process
 * with status 1; tcase_set_timeout() is Meson's job (the test's timeout).
 * CK_RUN_SUITE and CK_RUN_CASE choose what runs, as with Check.
 */
#ifndef OTEL_TESTS_CHECK_LITE_H
#define OTEL_TESTS_CHECK_LITE_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testenv.h"

#define CK_LITE 1

__attribute__((format(printf, 3, 4), noreturn)) static inline void
ck_lite_fail(const char *file, int line, const char *fmt, ...)
{
	static int failing;
	va_list ap;

	/* The first failure is the one reported; a thread failing after it
	 * waits for the process to end. */
	if (__atomic_exchange_n(&failing, 1, __ATOMIC_ACQ_REL))
		for (;;)
			pause();
	fflush(stdout);
	fprintf(stderr, "FAIL %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
	/* From any thread, without running other threads' cleanup. */
	_exit(1);
}

/* ck_assert_msg(condition, printf-style explanation) */
#define ck_assert_msg(cond, ...)                                               \
	do {                                                                   \
		if (!(cond))                                                   \
			ck_lite_fail(__FILE__, __LINE__, __VA_ARGS__);         \
	} while (0)
#define ck_assert(cond) ck_assert_msg(cond, "Assertion '%s' failed", #cond)
#define ck_abort_msg(...) ck_lite_fail(__FILE__, __LINE__, __VA_ARGS__)

#define CK_LITE_CMP(type, fmt, x, op, y)                                       \
	do {                                                                   \
		type ck_x_ = (x);                                              \
		type ck_y_ = (y);                                              \
		ck_assert_msg(ck_x_ op ck_y_,                                  \
			      "Assertion '%s' failed: %s == %" fmt ", %s == %" fmt, \
			      #x " " #op " " #y, #x, ck_x_, #y, ck_y_);        \
	} while (0)
#define ck_assert_int_eq(x, y) CK_LITE_CMP(intmax_t, PRIdMAX, x, ==, y)
#define ck_assert_int_ne(x, y) CK_LITE_CMP(intmax_t, PRIdMAX, x, !=, y)
#define ck_assert_int_lt(x, y) CK_LITE_CMP(intmax_t, PRIdMAX, x, <, y)
#define ck_assert_int_le(x, y) CK_LITE_CMP(intmax_t, PRIdMAX, x, <=, y)
#define ck_assert_int_gt(x, y) CK_LITE_CMP(intmax_t, PRIdMAX, x, >, y)
#define ck_assert_int_ge(x, y) CK_LITE_CMP(intmax_t, PRIdMAX, x, >=, y)
#define ck_assert_uint_eq(x, y) CK_LITE_CMP(uintmax_t, PRIuMAX, x, ==, y)
#define ck_assert_uint_ne(x, y) CK_LITE_CMP(uintmax_t, PRIuMAX, x, !=, y)
#define ck_assert_uint_lt(x, y) CK_LITE_CMP(uintmax_t, PRIuMAX, x, <, y)
#define ck_assert_uint_le(x, y) CK_LITE_CMP(uintmax_t, PRIuMAX, x, <=, y)
#define ck_assert_uint_gt(x, y) CK_LITE_CMP(uintmax_t, PRIuMAX, x, >, y)
#define ck_assert_uint_ge(x, y) CK_LITE_CMP(uintmax_t, PRIuMAX, x, >=, y)
#define ck_assert_ptr_eq(x, y) CK_LITE_CMP(const void *, "p", x, ==, y)
#define ck_assert_ptr_ne(x, y) CK_LITE_CMP(const void *, "p", x, !=, y)
#define ck_assert_ptr_null(x) ck_assert_ptr_eq(x, NULL)
#define ck_assert_ptr_nonnull(x) ck_assert_ptr_ne(x, NULL)

#define CK_LITE_STR(x, op, y)                                                  \
	do {                                                                   \
		const char *ck_x_ = (x);                                       \
		const char *ck_y_ = (y);                                       \
		ck_assert_msg(ck_x_ != NULL && ck_y_ != NULL && strcmp(ck_x_, ck_y_) op 0, \
			      "Assertion '%s' failed: %s == \"%s\", %s == \"%s\"", \
			      #x " " #op " " #y, #x, ck_x_ ? ck_x_ : "(null)", #y, \
			      ck_y_ ? ck_y_ : "(null)");                      \
	} while (0)
#define ck_assert_str_eq(x, y) CK_LITE_STR(x, ==, y)
#define ck_assert_str_ne(x, y) CK_LITE_STR(x, !=, y)

#define ck_assert_mem_eq(x, y, n)                                              \
	do {                                                                   \
		const void *ck_x_ = (x);                                       \
		const void *ck_y_ = (y);                                       \
		size_t ck_n_ = (n);                                            \
		ck_assert_msg(memcmp(ck_x_, ck_y_, ck_n_) == 0,                \
			      "Assertion '%s' failed: %zu bytes differ",       \
			      "memcmp(" #x ", " #y ", " #n ") == 0", ck_n_);   \
	} while (0)

/* --- suites ---------------------------------------------------------------- */

typedef struct TTest {
	const char *name;
	void (*fn)(int);
} TTest;

#define START_TEST(__testname)                                                 \
	static void __testname##_fn(int _i);                                   \
	static const TTest __testname##_ttest = { #__testname, __testname##_fn }; \
	static const TTest *__testname = &__testname##_ttest;                  \
	static void __testname##_fn(int _i __attribute__((unused)))
#define END_TEST

typedef void (*SFun)(void);

#define CK_LITE_TESTS 8

typedef struct TCase {
	const char *name;
	const TTest *tests[CK_LITE_TESTS];
	int n;
	SFun setup, teardown;
	struct TCase *next;
} TCase;

typedef struct Suite {
	const char *name;
	TCase *first, **last;
} Suite;

typedef struct SRunner {
	Suite *suite;
} SRunner;

enum print_output { CK_SILENT, CK_MINIMAL, CK_NORMAL, CK_VERBOSE, CK_ENV };

/* Out of memory in a test program's own bookkeeping: nothing to test. */
static inline void *ck_lite_alloc(size_t size)
{
	void *p = calloc(1, size);

	if (p == NULL)
		ck_abort_msg("out of memory");
	return p;
}

static inline Suite *suite_create(const char *name)
{
	Suite *s = ck_lite_alloc(sizeof(*s));

	s->name = name;
	s->last = &s->first;
	return s;
}

static inline TCase *tcase_create(const char *name)
{
	TCase *tc = ck_lite_alloc(sizeof(*tc));

	tc->name = name;
	return tc;
}

static inline void suite_add_tcase(Suite *s, TCase *tc)
{
	*s->last = tc;
	s->last = &tc->next;
}

#define tcase_add_test(tc, tf) tcase_add_test_lite((tc), (tf))
static inline void tcase_add_test_lite(TCase *tc, const TTest *t)
{
	if (tc->n == CK_LITE_TESTS)
		ck_abort_msg("test case %s: more than %d tests", tc->name, CK_LITE_TESTS);
	tc->tests[tc->n++] = t;
}

static inline void tcase_add_unchecked_fixture(TCase *tc, SFun setup, SFun teardown)
{
	tc->setup = setup;
	tc->teardown = teardown;
}

static inline void tcase_set_timeout(TCase *tc, double timeout)
{
	(void)tc;
	(void)timeout;
}

static inline SRunner *srunner_create(Suite *s)
{
	SRunner *sr = ck_lite_alloc(sizeof(*sr));

	sr->suite = s;
	return sr;
}

/* Runs every test (or those CK_RUN_SUITE / CK_RUN_CASE name); a failure
 * ends the process, so a run that returns passed. */
static inline void srunner_run_all(SRunner *sr, enum print_output mode)
{
	const char *only_suite = getenv("CK_RUN_SUITE"), *only_case = getenv("CK_RUN_CASE");
	int ran = 0;

	(void)mode;
	if (only_suite != NULL && *only_suite != '\0' && strcmp(only_suite, sr->suite->name) != 0)
		return;
	for (TCase *tc = sr->suite->first; tc != NULL; tc = tc->next) {
		if (only_case != NULL && *only_case != '\0' && strcmp(only_case, tc->name) != 0)
			continue;
		if (tc->setup != NULL)
			tc->setup();
		for (int i = 0; i < tc->n; i++) {
			tc->tests[i]->fn(0);
			ran++;
		}
		if (tc->teardown != NULL)
			tc->teardown();
	}
	printf("%s: %d tests passed\n", sr->suite->name, ran);
}

/* 0: a failure ended the process before this could be asked. */
static inline int srunner_ntests_failed(SRunner *sr)
{
	(void)sr;
	return 0;
}

static inline void srunner_free(SRunner *sr)
{
	TCase *tc, *next;

	for (tc = sr->suite->first; tc != NULL; tc = next) {
		next = tc->next;
		free(tc);
	}
	free(sr->suite);
	free(sr);
}

#endif /* OTEL_TESTS_CHECK_LITE_H */
