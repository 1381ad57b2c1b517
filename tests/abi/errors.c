/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every error of the thread-context API, and their order.  Each line of the
 * table below makes one call with one fault, or two, and names the code the
 * header's order says comes back (otel_thread_ctx.h, "Errors": missing
 * pointers, then what the arguments alone get wrong, then what the state
 * gets wrong, then resources).  The program fails on the first call that
 * returns another code, and prints "FUNCTION CODE" for every code it saw, so
 * that check-errors.py can compare, function by function, the codes seen
 * with the codes the header lists: each listed code must be produced here,
 * and each code produced must be listed.
 *
 * ENESTED comes from calls a signal handler makes while the thread is in a
 * publishing call: the thread's first publication calls
 * pthread_setspecific(), which this program interposes (its definition
 * comes first in the lookup scope) and which raises a signal there.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "check-lite.h"
#include "otel_thread_ctx.h"

static const uint8_t T[16] = { 1, 2, 3 }, S[8] = { 4, 5 }, Z16[16], Z8[8];
static const char BAD_UTF8[] = "\xff";
static char LONG[300];

static int failures;

static void expect(const char *fn, int got, int want, const char *what)
{
	if (got != 0)
		printf("CODE %s %d\n", fn, got);
	if (got != want) {
		fprintf(stderr, "FAIL %s (%s): %d (%s), expected %d (%s)\n", fn, what, got,
			otel_thread_ctx_strerror(got), want, otel_thread_ctx_strerror(want));
		failures++;
	}
}

#define E(fn, call, want, what) expect(#fn, (call), (want), (what))

static otel_thread_ctx *ctx_with(unsigned int capacity, int ids)
{
	struct otel_thread_ctx_options o = OTEL_THREAD_CTX_OPTIONS_INIT;
	otel_thread_ctx *c;

	o.attrs_capacity = capacity;
	o.flags = capacity == 0 ? OTEL_THREAD_CTX_OPTION_IDS_ONLY : 0;
	ck_assert_msg(otel_thread_ctx_create_with(&c, &o) == 0, "create_with");
	if (ids)
		ck_assert_msg(otel_thread_ctx_set_ids(c, T, S, 1) == 0, "set_ids");
	return c;
}

/* ThreadSanitizer's runtime (see where UNDER_TSAN is used). */
#ifdef __SANITIZE_THREAD__
#define UNDER_TSAN 1
#endif
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif
#ifndef UNDER_TSAN
/* Not under TSan: its runtime calls pthread_setspecific() itself while it
 * sets up a new thread, before its state for the thread exists, and an
 * instrumented definition here faults then (a read at 0xd0).  There the
 * program says ENESTED is not produced (check-errors.py: EXEMPT). */
/* Inside a first publication: the handler's calls, each refused with
 * ENESTED after the arguments' own errors. */
static int nesting;
static otel_thread_ctx *nest_ctx, *nest_saved;

static void nested_calls(int sig)
{
	static const struct otel_thread_ctx_attr ok = { 1, 2, (const uint8_t *)"ok" };
	static const struct otel_thread_ctx_attr twice[2] = { { 1, 2, (const uint8_t *)"ok" },
							      { 1, 2, (const uint8_t *)"ok" } };
	const char *in = "in a handler inside a publishing call";

	(void)sig;
	E(otel_thread_ctx_attach, otel_thread_ctx_attach(NULL, nest_saved), OTEL_THREAD_CTX_ENULL,
	  "NULL before ENESTED");
	E(otel_thread_ctx_attach, otel_thread_ctx_attach(nest_ctx, nest_saved),
	  OTEL_THREAD_CTX_ENESTED, in);
	E(otel_thread_ctx_update, otel_thread_ctx_update(nest_ctx), OTEL_THREAD_CTX_ENESTED, in);
	E(otel_thread_ctx_detach, otel_thread_ctx_detach(nest_saved), OTEL_THREAD_CTX_ENESTED, in);
	E(otel_thread_ctx_save, otel_thread_ctx_save(nest_saved), OTEL_THREAD_CTX_ENESTED, in);
	E(otel_thread_ctx_update_span_id, otel_thread_ctx_update_span_id(Z8), OTEL_THREAD_CTX_EIDS,
	  "zero span before ENESTED");
	E(otel_thread_ctx_update_span_id, otel_thread_ctx_update_span_id(S),
	  OTEL_THREAD_CTX_ENESTED, in);
	E(otel_thread_ctx_update_trace_flags, otel_thread_ctx_update_trace_flags(1),
	  OTEL_THREAD_CTX_ENESTED, in);
	E(otel_thread_ctx_update_all, otel_thread_ctx_update_all(T, S, 1, twice, 2),
	  OTEL_THREAD_CTX_EDUPKEY, "the attributes before ENESTED");
	E(otel_thread_ctx_update_all, otel_thread_ctx_update_all(T, S, 1, &ok, 1),
	  OTEL_THREAD_CTX_ENESTED, in);
	nesting = 2;
}

int pthread_setspecific(pthread_key_t key, const void *value)
{
	static int (*real)(pthread_key_t, const void *);

	if (real == NULL)
		*(void **)&real = dlsym(RTLD_NEXT, "pthread_setspecific");
	if (real == NULL)
		return EINVAL;
	if (__atomic_load_n(&nesting, __ATOMIC_RELAXED) == 1)
		raise(SIGUSR1);
	return real(key, value);
}

static void *first_publication(void *arg)
{
	struct otel_thread_ctx_record want, got;

	(void)arg;
	ck_assert_msg(otel_thread_ctx_get(nest_ctx, &want) == 0, "get");
	__atomic_store_n(&nesting, 1, __ATOMIC_RELAXED);
	ck_assert_msg(otel_thread_ctx_attach(nest_ctx, NULL) == 0, "the interrupted attach");
	ck_assert_msg(nesting == 2, "the handler did not run inside the first publication");
	ck_assert_msg(otel_thread_ctx_read(&got) == 0 && memcmp(&got, &want, 28) == 0,
	      "the interrupted attach did not publish its context");
	ck_assert_msg(otel_thread_ctx_detach(NULL) == 0, "detach");
	return NULL;
}
#endif

int main(void)
{
	struct otel_thread_ctx_options bad = OTEL_THREAD_CTX_OPTIONS_INIT;
	struct otel_thread_ctx_attr a_ok = { 1, 2, (const uint8_t *)"ok" };
	struct otel_thread_ctx_attr a_key = { 256, 1, (const uint8_t *)"k" };
	struct otel_thread_ctx_attr a_long = { 1, 256, (const uint8_t *)LONG };
	struct otel_thread_ctx_attr a_null = { 1, 3, NULL };
	struct otel_thread_ctx_attr a_utf8 = { 1, 1, (const uint8_t *)BAD_UTF8 };
	struct otel_thread_ctx_attr a_big = { 2, 255, (const uint8_t *)LONG };
	struct otel_thread_ctx_attr dup[2] = { { 1, 2, (const uint8_t *)"ok" },
					       { 1, 2, (const uint8_t *)"ok" } };
	struct otel_thread_ctx_attr null_then_key[2] = { { 1, 3, NULL },
							 { 256, 1, (const uint8_t *)"k" } };
	struct otel_thread_ctx_attr big3[3] = { { 1, 255, (const uint8_t *)LONG },
						{ 2, 255, (const uint8_t *)LONG },
						{ 3, 255, (const uint8_t *)LONG } };
	struct otel_thread_ctx_record rec;
	otel_thread_ctx *c, *none, *small, *empty, *full;

	memset(LONG, 'a', sizeof(LONG));
	c = ctx_with(612, 1);
	empty = ctx_with(612, 0);
	small = ctx_with(0, 0);
	full = ctx_with(612, 1);
	ck_assert_msg(otel_thread_ctx_set_attrs(full, big3, 2) == 0, "set_attrs");
	none = ctx_with(612, 0);
	ck_assert_msg(otel_thread_ctx_detach(none) == 0, "detach");

	/* create, create_with */
	E(otel_thread_ctx_create, otel_thread_ctx_create(NULL), OTEL_THREAD_CTX_ENULL, "NULL");
	bad.attrs_capacity = 613;
	E(otel_thread_ctx_create_with, otel_thread_ctx_create_with(NULL, &bad),
	  OTEL_THREAD_CTX_ENULL, "NULL before EOPTIONS");
	E(otel_thread_ctx_create_with, otel_thread_ctx_create_with(&c, &bad),
	  OTEL_THREAD_CTX_EOPTIONS, "capacity");

	/* set_ids */
	E(otel_thread_ctx_set_ids, otel_thread_ctx_set_ids(NULL, T, Z8, 0), OTEL_THREAD_CTX_ENULL,
	  "NULL before EIDS");
	E(otel_thread_ctx_set_ids, otel_thread_ctx_set_ids(c, T, NULL, 0), OTEL_THREAD_CTX_ENULL,
	  "span NULL");
	E(otel_thread_ctx_set_ids, otel_thread_ctx_set_ids(c, T, Z8, 0), OTEL_THREAD_CTX_EIDS,
	  "half");
	E(otel_thread_ctx_set_ids, otel_thread_ctx_set_ids(c, Z16, Z8, 1), OTEL_THREAD_CTX_EIDS,
	  "flags without ids");

	/* set_span_id, set_trace_flags, clear_ids */
	E(otel_thread_ctx_set_span_id, otel_thread_ctx_set_span_id(NULL, Z8),
	  OTEL_THREAD_CTX_ENULL, "NULL before EIDS");
	E(otel_thread_ctx_set_span_id, otel_thread_ctx_set_span_id(c, Z8), OTEL_THREAD_CTX_EIDS,
	  "zero span");
	E(otel_thread_ctx_set_span_id, otel_thread_ctx_set_span_id(empty, S), OTEL_THREAD_CTX_EIDS,
	  "no trace");
	E(otel_thread_ctx_set_trace_flags, otel_thread_ctx_set_trace_flags(NULL, 1),
	  OTEL_THREAD_CTX_ENULL, "NULL");
	E(otel_thread_ctx_set_trace_flags, otel_thread_ctx_set_trace_flags(empty, 1),
	  OTEL_THREAD_CTX_EIDS, "no ids");
	E(otel_thread_ctx_clear_ids, otel_thread_ctx_clear_ids(NULL), OTEL_THREAD_CTX_ENULL,
	  "NULL");

	/* set_attr */
	E(otel_thread_ctx_set_attr, otel_thread_ctx_set_attr(NULL, 256, LONG, 256),
	  OTEL_THREAD_CTX_ENULL, "NULL before EKEY");
	E(otel_thread_ctx_set_attr, otel_thread_ctx_set_attr(c, 256, NULL, 1),
	  OTEL_THREAD_CTX_ENULL, "value NULL before EKEY");
	E(otel_thread_ctx_set_attr, otel_thread_ctx_set_attr(c, 256, LONG, 256),
	  OTEL_THREAD_CTX_EKEY, "EKEY before EVALUE");
	E(otel_thread_ctx_set_attr, otel_thread_ctx_set_attr(c, 1, LONG, 256),
	  OTEL_THREAD_CTX_EVALUE, "long");
	E(otel_thread_ctx_set_attr, otel_thread_ctx_set_attr(small, 1, BAD_UTF8, 1),
	  OTEL_THREAD_CTX_EUTF8, "EUTF8 before ENOSPC");
	E(otel_thread_ctx_set_attr, otel_thread_ctx_set_attr(small, 1, "a", 1),
	  OTEL_THREAD_CTX_ENOSPC, "capacity");

	/* remove_attr, clear_attrs, clear */
	E(otel_thread_ctx_remove_attr, otel_thread_ctx_remove_attr(NULL, 256),
	  OTEL_THREAD_CTX_ENULL, "NULL before EKEY");
	E(otel_thread_ctx_remove_attr, otel_thread_ctx_remove_attr(c, 256), OTEL_THREAD_CTX_EKEY,
	  "key");
	E(otel_thread_ctx_clear_attrs, otel_thread_ctx_clear_attrs(NULL), OTEL_THREAD_CTX_ENULL,
	  "NULL");
	E(otel_thread_ctx_clear, otel_thread_ctx_clear(NULL), OTEL_THREAD_CTX_ENULL, "NULL");

	/* set_attrs: entries in turn, each fully */
	E(otel_thread_ctx_set_attrs, otel_thread_ctx_set_attrs(NULL, &a_key, 1),
	  OTEL_THREAD_CTX_ENULL, "NULL");
	E(otel_thread_ctx_set_attrs, otel_thread_ctx_set_attrs(c, NULL, 1), OTEL_THREAD_CTX_ENULL,
	  "attrs NULL");
	E(otel_thread_ctx_set_attrs, otel_thread_ctx_set_attrs(c, null_then_key, 2),
	  OTEL_THREAD_CTX_ENULL, "value NULL, first entry");
	E(otel_thread_ctx_set_attrs, otel_thread_ctx_set_attrs(c, &a_key, 1), OTEL_THREAD_CTX_EKEY,
	  "key");
	E(otel_thread_ctx_set_attrs, otel_thread_ctx_set_attrs(c, &a_long, 1),
	  OTEL_THREAD_CTX_EVALUE, "long");
	E(otel_thread_ctx_set_attrs, otel_thread_ctx_set_attrs(small, &a_utf8, 1),
	  OTEL_THREAD_CTX_EUTF8, "EUTF8 before ENOSPC");
	E(otel_thread_ctx_set_attrs, otel_thread_ctx_set_attrs(c, dup, 2), OTEL_THREAD_CTX_EDUPKEY,
	  "dup");
	E(otel_thread_ctx_set_attrs, otel_thread_ctx_set_attrs(c, big3, 3), OTEL_THREAD_CTX_ENOSPC,
	  "capacity");
	(void)a_null;
	(void)a_big;

	/* copy, get */
	E(otel_thread_ctx_copy, otel_thread_ctx_copy(NULL, c), OTEL_THREAD_CTX_ENULL, "NULL");
	E(otel_thread_ctx_copy, otel_thread_ctx_copy(small, full), OTEL_THREAD_CTX_ENOSPC,
	  "capacity");
	E(otel_thread_ctx_get, otel_thread_ctx_get(none, NULL), OTEL_THREAD_CTX_ENULL,
	  "NULL before ENOCTX");
	E(otel_thread_ctx_get, otel_thread_ctx_get(none, &rec), OTEL_THREAD_CTX_ENOCTX, "none");

	/* attach, update, detach, save */
	E(otel_thread_ctx_attach, otel_thread_ctx_attach(NULL, small), OTEL_THREAD_CTX_ENULL,
	  "NULL");
	E(otel_thread_ctx_update, otel_thread_ctx_update(NULL), OTEL_THREAD_CTX_ENULL, "NULL");
	ck_assert_msg(otel_thread_ctx_attach(full, NULL) == 0, "attach full");
	E(otel_thread_ctx_attach, otel_thread_ctx_attach(c, small), OTEL_THREAD_CTX_ENOSPC,
	  "saved too small");
	E(otel_thread_ctx_detach, otel_thread_ctx_detach(small), OTEL_THREAD_CTX_ENOSPC,
	  "saved too small");
	E(otel_thread_ctx_save, otel_thread_ctx_save(NULL), OTEL_THREAD_CTX_ENULL, "NULL");
	E(otel_thread_ctx_save, otel_thread_ctx_save(small), OTEL_THREAD_CTX_ENOSPC,
	  "saved too small");

	/* the fast paths */
	E(otel_thread_ctx_update_span_id, otel_thread_ctx_update_span_id(NULL),
	  OTEL_THREAD_CTX_ENULL, "NULL");
	ck_assert_msg(otel_thread_ctx_detach(NULL) == 0, "detach");
	E(otel_thread_ctx_update_span_id, otel_thread_ctx_update_span_id(Z8), OTEL_THREAD_CTX_EIDS,
	  "zero span before ENOCTX");
	E(otel_thread_ctx_update_span_id, otel_thread_ctx_update_span_id(S), OTEL_THREAD_CTX_ENOCTX,
	  "nothing published");
	E(otel_thread_ctx_update_trace_flags, otel_thread_ctx_update_trace_flags(1),
	  OTEL_THREAD_CTX_ENOCTX, "ENOCTX before EIDS");
	ck_assert_msg(otel_thread_ctx_attach(empty, NULL) == 0, "attach empty");
	E(otel_thread_ctx_update_span_id, otel_thread_ctx_update_span_id(S), OTEL_THREAD_CTX_EIDS,
	  "no trace");
	E(otel_thread_ctx_update_trace_flags, otel_thread_ctx_update_trace_flags(1),
	  OTEL_THREAD_CTX_EIDS, "no ids");
	E(otel_thread_ctx_update_all, otel_thread_ctx_update_all(NULL, Z8, 1, &a_key, 1),
	  OTEL_THREAD_CTX_ENULL, "NULL before EIDS");
	E(otel_thread_ctx_update_all, otel_thread_ctx_update_all(T, S, 1, NULL, 1),
	  OTEL_THREAD_CTX_ENULL, "attrs NULL");
	E(otel_thread_ctx_update_all, otel_thread_ctx_update_all(T, Z8, 1, &a_key, 1),
	  OTEL_THREAD_CTX_EIDS, "EIDS before the attributes");
	E(otel_thread_ctx_update_all, otel_thread_ctx_update_all(T, S, 1, null_then_key, 2),
	  OTEL_THREAD_CTX_ENULL, "value NULL");
	E(otel_thread_ctx_update_all, otel_thread_ctx_update_all(T, S, 1, &a_key, 1),
	  OTEL_THREAD_CTX_EKEY, "key");
	E(otel_thread_ctx_update_all, otel_thread_ctx_update_all(T, S, 1, &a_long, 1),
	  OTEL_THREAD_CTX_EVALUE, "long");
	E(otel_thread_ctx_update_all, otel_thread_ctx_update_all(T, S, 1, &a_utf8, 1),
	  OTEL_THREAD_CTX_EUTF8, "utf8");
	E(otel_thread_ctx_update_all, otel_thread_ctx_update_all(T, S, 1, dup, 2),
	  OTEL_THREAD_CTX_EDUPKEY, "dup");
	E(otel_thread_ctx_update_all, otel_thread_ctx_update_all(T, S, 1, big3, 3),
	  OTEL_THREAD_CTX_ENOSPC, "612 bytes");
	E(otel_thread_ctx_update_all, otel_thread_ctx_update_all(T, S, 1, &a_ok, 1),
	  OTEL_THREAD_CTX_OK, "valid");

	/* readers */
	E(otel_thread_ctx_read, otel_thread_ctx_read(NULL), OTEL_THREAD_CTX_ENULL, "NULL");
	ck_assert_msg(otel_thread_ctx_detach(NULL) == 0, "detach");
	E(otel_thread_ctx_read, otel_thread_ctx_read(&rec), OTEL_THREAD_CTX_ENOCTX, "nothing");
	/* A record marked invalid, where the slot leads (the library never
	 * writes one: this test stores the slot itself). */
	memset(&rec, 0, sizeof(rec));
	otel_thread_ctx_v1 = &rec;
	E(otel_thread_ctx_read, otel_thread_ctx_read(&rec), OTEL_THREAD_CTX_EINVALID, "valid 0");
	otel_thread_ctx_v1 = NULL;
	memset(&rec, 0, sizeof(rec));
	E(otel_thread_ctx_record_decode, otel_thread_ctx_record_decode(NULL, 28, &rec),
	  OTEL_THREAD_CTX_ENULL, "NULL");
	E(otel_thread_ctx_record_decode, otel_thread_ctx_record_decode(&rec, 27, &rec),
	  OTEL_THREAD_CTX_ETRUNCATED, "short");
	E(otel_thread_ctx_record_decode, otel_thread_ctx_record_decode(&rec, 28, &rec),
	  OTEL_THREAD_CTX_EINVALID, "valid 0");

	/* attribute readers: a record with one attribute of a registered key */
	{
		struct otel_thread_ctx_attr_iter it;
		struct otel_thread_ctx_attr attr;
		unsigned int key;

		ck_assert_msg(otel_thread_ctx_key_register("errors.key", &key) == 0 && key < 255,
		      "key_register");
		memset(&rec, 0, sizeof(rec));
		rec.valid = 1;
		rec.attrs_data[0] = (uint8_t)key;
		rec.attrs_data[1] = 1;
		rec.attrs_data[2] = 'x';
		rec.attrs_data_size = 3;
		otel_thread_ctx_attr_iter_init(&it, &rec);
		E(otel_thread_ctx_attr_iter_next, otel_thread_ctx_attr_iter_next(NULL, &attr),
		  OTEL_THREAD_CTX_ENULL, "NULL iterator");
		E(otel_thread_ctx_attr_iter_next, otel_thread_ctx_attr_iter_next(&it, NULL),
		  OTEL_THREAD_CTX_ENULL, "NULL out");
		E(otel_thread_ctx_attr_iter_next, otel_thread_ctx_attr_iter_next(&it, &attr),
		  OTEL_THREAD_CTX_OK, "one attribute");
		E(otel_thread_ctx_attr_iter_next, otel_thread_ctx_attr_iter_next(&it, &attr),
		  OTEL_THREAD_CTX_ENOATTR, "no more");
		E(otel_thread_ctx_record_attr, otel_thread_ctx_record_attr(NULL, key, &attr),
		  OTEL_THREAD_CTX_ENULL, "NULL record");
		E(otel_thread_ctx_record_attr, otel_thread_ctx_record_attr(&rec, key, &attr),
		  OTEL_THREAD_CTX_OK, "present");
		E(otel_thread_ctx_record_attr, otel_thread_ctx_record_attr(&rec, key + 1, &attr),
		  OTEL_THREAD_CTX_ENOATTR, "unmapped key");
	}

	/* In a handler, inside a publishing call. */
#ifdef UNDER_TSAN
	printf("EXEMPT ENESTED under ThreadSanitizer\n");
#else
	{
		pthread_t t;

		nest_ctx = c;
		nest_saved = full;
		ck_assert_msg(signal(SIGUSR1, nested_calls) != SIG_ERR, "signal");
		ck_assert_msg(pthread_create(&t, NULL, first_publication, NULL) == 0 &&
			      pthread_join(t, NULL) == 0,
		      "the thread of the nested calls");
	}
#endif

	otel_thread_ctx_destroy(c);
	otel_thread_ctx_destroy(empty);
	otel_thread_ctx_destroy(small);
	otel_thread_ctx_destroy(full);
	otel_thread_ctx_destroy(none);
	return failures ? 1 : 0;
}
