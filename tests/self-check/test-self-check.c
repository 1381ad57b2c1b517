/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otel_thread_ctx_self_check(), every outcome.  One source, several
 * programs (tests/meson.build), each linked a way that must give one answer:
 *
 *   (default)                    linked with the shared library, or with the
 *                                static one and its pkg-config flags: OK
 *   SELF_CHECK_UNEXPORTED        the static library without
 *                                --export-dynamic-symbol: NOT_EXPORTED
 *   SELF_CHECK_FULLY_STATIC      a fully static non-PIE executable:
 *                                NOT_EXPORTED, "no dynamic symbol table"
 *   SELF_CHECK_TWO_COPIES        the static library without the flag, and
 *                                the shared library dlopen()ed: this copy
 *                                gets MISMATCH, the other one OK
 *   SELF_CHECK_DLOPEN            only the shared library, dlopen()ed (run
 *                                also with optional_static_tls=0: dynamic
 *                                TLS): OK, in new threads too
 *
 * The dlopen() variants find the shared library in $OTEL_TEST_LIBRARY.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common.h"

typedef int (*self_check_fn)(struct otel_thread_ctx_self_check *);

#if defined(SELF_CHECK_TWO_COPIES) || defined(SELF_CHECK_DLOPEN)
static void *open_library(void)
{
	const char *path = getenv("OTEL_TEST_LIBRARY");
	void *h;

	ck_assert_msg(path != NULL, "OTEL_TEST_LIBRARY is not set");
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	ck_assert_msg(h != NULL, "dlopen(%s): %s", path, dlerror());
	return h;
}

static self_check_fn library_self_check(void *h)
{
	void *p = dlsym(h, "otel_thread_ctx_self_check");
	self_check_fn fn;

	ck_assert_msg(p != NULL, "dlsym: %s", dlerror());
	memcpy(&fn, &p, sizeof(fn)); /* ISO C has no object-to-function cast */
	return fn;
}
#endif

#ifndef SELF_CHECK_DLOPEN
/* What this copy of the library reports, checked against the compiler's
 * own &otel_thread_ctx_v1 in the calling thread. */
static struct otel_thread_ctx_self_check self_check_here(int expected_rc)
{
	struct otel_thread_ctx_self_check r;

	memset(&r, 0x5a, sizeof(r));
	ck_assert_otel(otel_thread_ctx_self_check(&r), expected_rc);
	ck_assert_ptr_eq(r.slot, (const void *)&otel_thread_ctx_v1);
	ck_assert_msg(memchr(r.reason, '\0', sizeof(r.reason)) != NULL && r.reason[0] != '\0',
		      "the reason is empty or not terminated");
	return r;
}
#endif

START_TEST(test_null)
{
	self_check_fn fn = otel_thread_ctx_self_check;
#ifdef SELF_CHECK_DLOPEN
	fn = library_self_check(open_library());
#endif
	/* Plain int comparison: the dlopen() variant has no strerror to call. */
	ck_assert_int_eq(fn(NULL), OTEL_THREAD_CTX_ENULL);
}
END_TEST

#if !defined(SELF_CHECK_UNEXPORTED) && !defined(SELF_CHECK_FULLY_STATIC) && \
	!defined(SELF_CHECK_TWO_COPIES) && !defined(SELF_CHECK_DLOPEN)

START_TEST(test_ok)
{
	struct otel_thread_ctx_self_check r = self_check_here(OTEL_THREAD_CTX_OK);

	ck_assert_int_eq(r.status, OTEL_THREAD_CTX_SELF_CHECK_OK);
	ck_assert_ptr_eq(r.exported, r.slot);
	ck_assert_ptr_nonnull(r.module);
	ck_assert_ptr_nonnull(r.exported_module);
	ck_assert_str_eq(r.module, r.exported_module);
	ck_assert_uint_eq(r.exporting_modules, 1);
	ck_assert_msg(strstr(r.reason, "exports otel_thread_ctx_v1") != NULL, "%s", r.reason);
}
END_TEST

/* Linked with the shared library, the slot is that library's; linked
 * statically, the main program's ("" by the loader's naming). */
START_TEST(test_module)
{
	struct otel_thread_ctx_self_check r = self_check_here(OTEL_THREAD_CTX_OK);
	Dl_info info;

	/* Which module is the library?  The one its static strings are in. */
	ck_assert_int_ne(dladdr(otel_thread_ctx_strerror(0), &info), 0);
	if (strstr(info.dli_fname, "libotel-thread-ctx.so") != NULL)
		ck_assert_msg(strstr(r.module, "libotel-thread-ctx.so.1") != NULL, "module %s", r.module);
	else
		ck_assert_str_eq(r.module, "");
}
END_TEST

static void *thread_check(void *arg)
{
	struct otel_thread_ctx_self_check *out = arg;

	*out = self_check_here(OTEL_THREAD_CTX_OK);
	return NULL;
}

START_TEST(test_threads)
{
	enum { N = 8 };
	struct otel_thread_ctx_self_check r[N];
	pthread_t t[N];

	for (int i = 0; i < N; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, thread_check, &r[i]), 0);
	for (int i = 0; i < N; i++)
		ck_assert_int_eq(pthread_join(t[i], NULL), 0);
	for (int i = 0; i < N; i++) {
		ck_assert_int_eq(r[i].status, OTEL_THREAD_CTX_SELF_CHECK_OK);
		ck_assert_ptr_eq(r[i].exported, r[i].slot);
		for (int k = 0; k < i; k++)
			ck_assert_ptr_ne(r[i].slot, r[k].slot);
	}
}
END_TEST

/* It looks, it does not touch: the published context stays as it is. */
START_TEST(test_changes_nothing)
{
	otel_thread_ctx *ctx = new_ctx(), *saved = new_ctx();
	struct otel_thread_ctx_record want, got;
	struct published before, after;

	ck_assert_ok(otel_thread_ctx_set_attr(ctx, 3, "x", 1));
	ck_assert_ok(otel_thread_ctx_attach(ctx, NULL));
	before = read_published();
	self_check_here(OTEL_THREAD_CTX_OK);
	after = read_published();
	ck_assert(published_equal(&before, &after));
	/* The thread still publishes what ctx holds. */
	ck_assert_ok(otel_thread_ctx_save(saved));
	ck_assert_ok(otel_thread_ctx_get(ctx, &want));
	ck_assert_ok(otel_thread_ctx_get(saved, &got));
	ck_assert_mem_eq(&got, &want, offsetof(struct otel_thread_ctx_record, attrs_data) + 3);
	ck_assert_ok(otel_thread_ctx_detach(NULL));
	otel_thread_ctx_destroy(saved);
	otel_thread_ctx_destroy(ctx);
}
END_TEST

START_TEST(test_strerror)
{
	ck_assert_str_ne(otel_thread_ctx_strerror(OTEL_THREAD_CTX_ESLOT),
			 otel_thread_ctx_strerror(-1000));
}
END_TEST

#define CASES \
	{ "null", test_null }, \
	{ "ok", test_ok }, \
	{ "module", test_module }, \
	{ "threads", test_threads }, \
	{ "changes-nothing", test_changes_nothing }, \
	{ "strerror", test_strerror },

#elif defined(SELF_CHECK_UNEXPORTED) || defined(SELF_CHECK_FULLY_STATIC)

START_TEST(test_not_exported)
{
	struct otel_thread_ctx_self_check r = self_check_here(OTEL_THREAD_CTX_ESLOT);

	ck_assert_int_eq(r.status, OTEL_THREAD_CTX_SELF_CHECK_NOT_EXPORTED);
	ck_assert_ptr_null(r.exported);
	ck_assert_ptr_null(r.exported_module);
	ck_assert_uint_eq(r.exporting_modules, 0);
	/* The slot is the main program's, and the reason says what to do. */
	ck_assert_ptr_nonnull(r.module);
	ck_assert_str_eq(r.module, "");
	ck_assert_msg(strstr(r.reason, "the main program") != NULL, "%s", r.reason);
#ifdef SELF_CHECK_FULLY_STATIC
	ck_assert_msg(strstr(r.reason, "no dynamic symbol table") != NULL &&
		      strstr(r.reason, "-static-pie") != NULL, "%s", r.reason);
#else
	ck_assert_msg(strstr(r.reason, "does not export") != NULL &&
		      strstr(r.reason, "-Wl,--export-dynamic-symbol=otel_thread_ctx_v1") != NULL,
		      "%s", r.reason);
#endif
}
END_TEST

/* Publishing still works; only readers cannot find it. */
START_TEST(test_publishing_works)
{
	otel_thread_ctx *ctx = new_ctx();

	ck_assert_ok(otel_thread_ctx_attach(ctx, NULL));
	ck_assert_ptr_nonnull(otel_thread_ctx_v1);
	self_check_here(OTEL_THREAD_CTX_ESLOT);
	ck_assert_ok(otel_thread_ctx_detach(NULL));
	ck_assert_ptr_null(otel_thread_ctx_v1);
	otel_thread_ctx_destroy(ctx);
}
END_TEST

#define CASES \
	{ "null", test_null }, \
	{ "not-exported", test_not_exported }, \
	{ "publishing-works", test_publishing_works },

#elif defined(SELF_CHECK_TWO_COPIES)

START_TEST(test_two_copies)
{
	void *h = open_library();
	self_check_fn other = library_self_check(h);
	struct otel_thread_ctx_self_check mine = self_check_here(OTEL_THREAD_CTX_ESLOT), theirs;

	/* This copy's slot is in the main program, which does not export it;
	 * the dlopen()ed copy exports its own. */
	ck_assert_int_eq(mine.status, OTEL_THREAD_CTX_SELF_CHECK_MISMATCH);
	ck_assert_str_eq(mine.module, "");
	ck_assert_ptr_nonnull(mine.exported);
	ck_assert_ptr_ne(mine.exported, mine.slot);
	ck_assert_msg(strstr(mine.exported_module, "libotel-thread-ctx.so.1") != NULL, "%s",
		      mine.exported_module);
	ck_assert_uint_eq(mine.exporting_modules, 1);
	ck_assert_msg(strstr(mine.reason, "two copies") != NULL, "%s", mine.reason);

	ck_assert_otel(other(&theirs), OTEL_THREAD_CTX_OK);
	ck_assert_int_eq(theirs.status, OTEL_THREAD_CTX_SELF_CHECK_OK);
	ck_assert_ptr_eq(theirs.slot, mine.exported);
	ck_assert_ptr_eq(theirs.exported, theirs.slot);
	ck_assert_str_eq(theirs.module, mine.exported_module);
}
END_TEST

#define CASES \
	{ "null", test_null }, \
	{ "two-copies", test_two_copies },

#elif defined(SELF_CHECK_DLOPEN)

struct thread_result {
	self_check_fn fn;
	struct otel_thread_ctx_self_check r;
	int rc;
};

static void *thread_check(void *arg)
{
	struct thread_result *t = arg;

	t->rc = t->fn(&t->r);
	return NULL;
}

START_TEST(test_dlopen)
{
	void *h = open_library();
	self_check_fn fn = library_self_check(h);
	struct thread_result t[4];
	pthread_t tid[4];

	for (int i = 0; i < 4; i++) {
		t[i].fn = fn;
		ck_assert_int_eq(pthread_create(&tid[i], NULL, thread_check, &t[i]), 0);
	}
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_join(tid[i], NULL), 0);
	for (int i = 0; i < 4; i++) {
		ck_assert_msg(t[i].rc == OTEL_THREAD_CTX_OK, "thread %d: %s", i, t[i].r.reason);
		ck_assert_int_eq(t[i].r.status, OTEL_THREAD_CTX_SELF_CHECK_OK);
		ck_assert_ptr_eq(t[i].r.exported, t[i].r.slot);
		ck_assert_msg(strstr(t[i].r.module, "libotel-thread-ctx.so.1") != NULL, "%s",
			      t[i].r.module);
		for (int k = 0; k < i; k++)
			ck_assert_ptr_ne(t[i].r.slot, t[k].r.slot);
	}
}
END_TEST

#define CASES \
	{ "null", test_null }, \
	{ "dlopen", test_dlopen },

#endif

Suite *test_suite(void)
{
	const struct test_case cases[] = { CASES };

	return MAKE_SUITE("self-check", cases, 30);
}
