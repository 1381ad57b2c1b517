/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the Check suites. */
#ifndef OTEL_TESTS_COMMON_H
#define OTEL_TESTS_COMMON_H

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "otel_thread_ctx.h"
#include "testenv.h"

Suite *test_suite(void);

/* The text of a code: the reading side's too, where its header is in. */
#ifdef OTEL_THREAD_CTX_INSPECT_H
#define OTEL_TEST_STRERROR otel_thread_ctx_inspect_strerror
#else
#define OTEL_TEST_STRERROR otel_thread_ctx_strerror
#endif

/* ck_assert_int_eq with the library's error text in the message. */
#define ck_assert_otel(call, expected)                                          \
	do {                                                                    \
		int otel_rc_ = (call);                                          \
		ck_assert_msg(otel_rc_ == (expected), "%s returned %d (%s), expected %d", \
			      #call, otel_rc_, OTEL_TEST_STRERROR(otel_rc_),   \
			      (int)(expected));                                 \
	} while (0)

#define ck_assert_ok(call) ck_assert_otel(call, OTEL_THREAD_CTX_OK)

/* What a reader would copy right now: the slot and the bytes it leads to. */
struct published {
	const struct otel_thread_ctx_record *slot;
	struct otel_thread_ctx_record rec;
};

static inline struct published read_published(void)
{
	struct published p;

	memset(&p, 0, sizeof(p));
	p.slot = otel_thread_ctx_v1;
	if (p.slot != NULL)
		memcpy(&p.rec, p.slot, sizeof(p.rec));
	return p;
}

static inline int published_equal(const struct published *a, const struct published *b)
{
	return a->slot == b->slot && memcmp(&a->rec, &b->rec, sizeof(a->rec)) == 0;
}

struct test_case {
	const char *name;
	const TTest *test;
};

/* A suite with one TCase per behaviour, named for it. */
static inline Suite *make_suite(const char *name, const struct test_case *cases, size_t n,
				double timeout)
{
	Suite *s = suite_create(name);

	for (size_t i = 0; i < n; i++) {
		TCase *tc = tcase_create(cases[i].name);

		tcase_add_test(tc, cases[i].test);
		if (timeout > 0)
			tcase_set_timeout(tc, timeout);
		suite_add_tcase(s, tc);
	}
	return s;
}

#define MAKE_SUITE(name, cases, timeout) \
	make_suite((name), (cases), sizeof(cases) / sizeof((cases)[0]), (timeout))

static inline otel_thread_ctx *new_ctx(void)
{
	otel_thread_ctx *ctx = NULL;

	ck_assert_ok(otel_thread_ctx_create(&ctx));
	ck_assert_ptr_nonnull(ctx);
	return ctx;
}

#endif /* OTEL_TESTS_COMMON_H */
