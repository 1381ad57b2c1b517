/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The thread-pointer shortcut (src/thread_ctx.c, thread_self()): where the
 * library is in static TLS, the publishing paths find the calling thread's
 * state from the thread pointer instead of the TLS call; elsewhere they keep
 * the call.  Either way every thread publishes into its own records.
 *
 *   fast-path exe              the archive linked into this executable:
 *                              shortcut on
 *   fast-path plugin static    the archive in a plugin dlopen()ed into the
 *                              static TLS surplus: on
 *   fast-path plugin dynamic   the same plugin in dynamic TLS (glibc with
 *                              optional_static_tls=0, or musl): off
 *   fast-path reuse            a thread created at the thread pointer of
 *                              one that exited while publishing starts with
 *                              nothing published; 77 if the C library never
 *                              gives a new thread an old thread pointer
 *
 * Plain program: runs in every configuration.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check-lite.h"
#include "otel_thread_ctx.h"
#include "testenv.h"
#include "thread_pointer.h"

intptr_t otel__thread_state_offset(void);

#define EXPECT(cond) ck_assert_msg(cond, "%s", #cond)

/* What the code under test provides: this program's archive, or the
 * plugin's. */
struct api {
	int (*create)(otel_thread_ctx **);
	void (*destroy)(otel_thread_ctx *);
	int (*set_ids)(otel_thread_ctx *, const uint8_t *, const uint8_t *, uint8_t);
	int (*attach)(const otel_thread_ctx *, otel_thread_ctx *);
	int (*update_span_id)(const uint8_t *);
	int (*detach)(otel_thread_ctx *);
	int (*read)(struct otel_thread_ctx_record *);
	intptr_t (*offset)(void);
};

static struct api api;


/* Each thread publishes ids of its own, switches spans, and reads back,
 * through the library's reader, exactly what it wrote. */
static void *publisher(void *arg)
{
	uintptr_t n = (uintptr_t)arg;
	uint8_t trace[16], span[8];
	struct otel_thread_ctx_record rec;
	otel_thread_ctx *ctx;
	unsigned long rounds = env_count("OTEL_TEST_ROUNDS", 2000);
	intptr_t failures = 0;

	memset(trace, (int)(n + 1), sizeof(trace));
	memset(span, 0xa0, sizeof(span));
	if (api.create(&ctx) != 0 || api.set_ids(ctx, trace, span, 1) != 0 ||
	    api.attach(ctx, NULL) != 0)
		return (void *)1;
	api.destroy(ctx);
	for (unsigned long i = 0; i < rounds; i++) {
		memcpy(span, &i, sizeof(i));
		span[7] = (uint8_t)(n + 1);
		if (api.update_span_id(span) != 0 || api.read(&rec) != 0 ||
		    memcmp(rec.trace_id, trace, 16) != 0 || memcmp(rec.span_id, span, 8) != 0)
			failures++;
	}
	if (api.detach(NULL) != 0)
		failures++;
	return (void *)failures;
}

static int run_publishers(void)
{
	enum { THREADS = 16 };
	pthread_t t[THREADS];
	int failures = 0;

	for (uintptr_t i = 0; i < THREADS; i++)
		EXPECT(pthread_create(&t[i], NULL, publisher, (void *)i) == 0);
	for (int i = 0; i < THREADS; i++) {
		void *r;

		EXPECT(pthread_join(t[i], &r) == 0);
		if (r != NULL) {
			fprintf(stderr, "thread %d: %ld wrong reads\n", i, (long)(intptr_t)r);
			failures++;
		}
	}
	return failures;
}

static void use_archive(void)
{
	api.create = otel_thread_ctx_create;
	api.destroy = otel_thread_ctx_destroy;
	api.set_ids = otel_thread_ctx_set_ids;
	api.attach = otel_thread_ctx_attach;
	api.update_span_id = otel_thread_ctx_update_span_id;
	api.detach = otel_thread_ctx_detach;
	api.read = otel_thread_ctx_read;
	api.offset = otel__thread_state_offset;
}

static int use_plugin(const char *path)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	if (h == NULL) {
		fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
		return -1;
	}
#define SYM(field, name)                                                        \
	do {                                                                    \
		*(void **)&api.field = dlsym(h, name);                          \
		if (api.field == NULL) {                                        \
			fprintf(stderr, "no %s in the plugin\n", name);       \
			return -1;                                              \
		}                                                               \
	} while (0)
	SYM(create, "plugin_create");
	SYM(destroy, "plugin_destroy");
	SYM(set_ids, "plugin_set_ids");
	SYM(attach, "plugin_attach");
	SYM(update_span_id, "plugin_update_span_id");
	SYM(detach, "plugin_detach");
	SYM(read, "plugin_read");
	SYM(offset, "plugin_offset");
	return 0;
}

/* Publishes from the main thread first (which learns the offset), then from
 * many threads; the offset must be on or off as expected. */
static int check_mode(int expect_on)
{
	void *r = publisher((void *)(uintptr_t)200);
	intptr_t off = api.offset();

	EXPECT(r == NULL);
	if ((off != 0) != expect_on) {
		fprintf(stderr, "shortcut %s (offset %ld), expected %s\n", off ? "on" : "off",
			(long)off, expect_on ? "on" : "off");
		return 1;
	}
	printf("shortcut %s (offset %ld)\n", off ? "on" : "off", (long)off);
	return run_publishers();
}

struct reuse {
	uintptr_t tp;
	int published_at_start, span_rc, attach_rc, own_copy;
};

static void *reuse_first(void *arg)
{
	struct reuse *r = arg;
	static const uint8_t trace[16] = { 7 }, span[8] = { 7 };
	otel_thread_ctx *ctx;

	r->tp = thread_pointer();
	if (api.create(&ctx) == 0) {
		api.set_ids(ctx, trace, span, 1);
		r->attach_rc = api.attach(ctx, NULL);
		api.destroy(ctx);
	}
	/* Exits while publishing. */
	return NULL;
}

static void *reuse_second(void *arg)
{
	struct reuse *r = arg;
	static const uint8_t trace[16] = { 9 }, span[8] = { 9 };
	struct otel_thread_ctx_record rec;
	otel_thread_ctx *ctx;

	r->tp = thread_pointer();
	r->published_at_start = api.read(&rec) != OTEL_THREAD_CTX_ENOCTX;
	r->span_rc = api.update_span_id(span);
	if (api.create(&ctx) == 0) {
		api.set_ids(ctx, trace, span, 1);
		r->attach_rc = api.attach(ctx, NULL);
		api.destroy(ctx);
		r->own_copy = api.read(&rec) == 0 && rec.trace_id[0] == 9 && rec.span_id[0] == 9;
		api.detach(NULL);
	}
	return NULL;
}

static int check_reuse(void)
{
	struct reuse first = { 0 }, second;
	pthread_t t;
	int tries;

	/* The main thread publishes first, so the offset is known. */
	EXPECT(publisher((void *)(uintptr_t)100) == NULL);
	for (tries = 0; tries < 200; tries++) {
		memset(&first, 0, sizeof(first));
		EXPECT(pthread_create(&t, NULL, reuse_first, &first) == 0);
		EXPECT(pthread_join(t, NULL) == 0);
		EXPECT(first.attach_rc == 0);
		memset(&second, 0, sizeof(second));
		EXPECT(pthread_create(&t, NULL, reuse_second, &second) == 0);
		EXPECT(pthread_join(t, NULL) == 0);
		if (second.tp == first.tp)
			break;
	}
	if (second.tp != first.tp) {
		skip("no new thread got an exited thread's thread pointer in 200 tries");
	}
	printf("thread pointer %#lx reused after %d tries; shortcut %s\n", (unsigned long)first.tp,
	       tries, api.offset() ? "on" : "off");
	EXPECT(!second.published_at_start);
	EXPECT(second.span_rc == OTEL_THREAD_CTX_ENOCTX);
	EXPECT(second.attach_rc == 0);
	EXPECT(second.own_copy);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	if (strcmp(mode, "exe") == 0) {
		use_archive();
		return check_mode(1) ? 1 : 0;
	}
	if (strcmp(mode, "reuse") == 0) {
		use_archive();
		return check_reuse();
	}
	if (strcmp(mode, "plugin") == 0 && argc == 4) {
		if (use_plugin(argv[3]) != 0)
			return 1;
		return check_mode(strcmp(argv[2], "static") == 0) ? 1 : 0;
	}
	fprintf(stderr, "usage: fast-path exe | reuse | plugin static|dynamic PLUGIN\n");
	return 2;
}
