/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the Check suites. */
#ifndef OTEL_TESTS_COMMON_H
#define OTEL_TESTS_COMMON_H

#include <check.h>
#include <malloc.h>
#include <stdint.h>
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

/* A context with room for `capacity` bytes of attributes (0: ids only). */
static inline otel_thread_ctx *new_ctx_sized(unsigned int capacity)
{
	struct otel_thread_ctx_options o = OTEL_THREAD_CTX_OPTIONS_INIT;
	otel_thread_ctx *ctx = NULL;

	o.attrs_capacity = capacity;
	o.flags = capacity == 0 ? OTEL_THREAD_CTX_OPTION_IDS_ONLY : 0;
	ck_assert_ok(otel_thread_ctx_create_with(&ctx, &o));
	ck_assert_ptr_nonnull(ctx);
	return ctx;
}

/* The same header and the same used attribute bytes: what a reader
 * compares. */
static inline int same_record(const struct otel_thread_ctx_record *a,
			      const struct otel_thread_ctx_record *b)
{
	return memcmp(a, b, offsetof(struct otel_thread_ctx_record, attrs_data)) == 0 &&
	       a->attrs_data_size <= OTEL_THREAD_CTX_ATTRS_MAX &&
	       memcmp(a->attrs_data, b->attrs_data, a->attrs_data_size) == 0;
}

/* What a context holds, as otel_thread_ctx_get() gives it: rc is
 * OTEL_THREAD_CTX_ENOCTX for a context that holds no record. */
struct held {
	int rc;
	struct otel_thread_ctx_record rec;
};

static inline struct held held_by(const otel_thread_ctx *ctx)
{
	struct held h;

	memset(&h, 0, sizeof(h));
	h.rc = otel_thread_ctx_get(ctx, &h.rec);
	return h;
}

/* The whole heap block of a context, byte for byte: all the memory it has
 * (the allocator's usable size, which covers what the library asked for). */
struct ctx_bytes {
	size_t size;
	unsigned char bytes[1024];
};

static inline void ctx_bytes_of(const otel_thread_ctx *ctx, struct ctx_bytes *out)
{
	memset(out, 0, sizeof(*out));
	out->size = malloc_usable_size((void *)(uintptr_t)ctx);
	ck_assert_uint_gt(out->size, 0);
	ck_assert_uint_le(out->size, sizeof(out->bytes));
	memcpy(out->bytes, ctx, out->size);
}

static inline int ctx_bytes_equal(const struct ctx_bytes *a, const struct ctx_bytes *b)
{
	return a->size == b->size && memcmp(a->bytes, b->bytes, a->size) == 0;
}

/* Does the record p lie anywhere inside ctx's heap block? */
static inline int points_into_ctx(const void *p, const otel_thread_ctx *ctx)
{
	uintptr_t at = (uintptr_t)p, lo = (uintptr_t)ctx;
	size_t size = malloc_usable_size((void *)(uintptr_t)ctx);

	/* The record starts inside the block, or ends inside it. */
	return (at >= lo && at < lo + size) ||
	       (at < lo && at + sizeof(struct otel_thread_ctx_record) > lo);
}

#endif /* OTEL_TESTS_COMMON_H */
