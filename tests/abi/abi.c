/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Promises of the interface that callers of other versions, and the
 * registry's users, rely on.  One mode per process (the registry is
 * process-wide):
 *
 *   abi options-ctx       struct otel_thread_ctx_options of other sizes
 *   abi options-process   struct otel_thread_ctx_process_options of other sizes
 *   abi keys-unpublished  keys that would make the key map unpublishable are
 *                         refused before any publication, and nothing is left
 *   abi keys-published    the same while the process context is published
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check-lite.h"
#include "otel_thread_ctx.h"
#include "otel_thread_ctx_inspect_bpf.h"
#include "otel_thread_ctx_process.h"

/* otel_thread_ctx_inspect_bpf.h is included by BPF programs, which have no
 * libc headers, so it keeps its own copies of the record's sizes. */
_Static_assert(OTEL_THREAD_CTX_BPF_HEADER_SIZE == OTEL_THREAD_CTX_RECORD_HEADER_SIZE,
	       "the BPF header's record header size");
_Static_assert(OTEL_THREAD_CTX_BPF_ATTRS_MAX == OTEL_THREAD_CTX_ATTRS_MAX,
	       "the BPF header's attribute bytes");

#define EXPECT(cond) ck_assert_msg(cond, "%s", #cond)
#define EXPECT_RC(call, want)                                                   \
	do {                                                                    \
		int rc_ = (call);                                               \
		ck_assert_msg(rc_ == (want), "%s returned %d (%s), expected %d", #call, rc_, \
		      otel_thread_ctx_strerror(rc_), (int)(want));              \
	} while (0)

/* The options as a caller of another version lays them out: `size` bytes,
 * this version's fields first. */
union ctx_options_buf {
	struct otel_thread_ctx_options o;
	unsigned char bytes[64];
	size_t align;
};

static unsigned int capacity_of(otel_thread_ctx *ctx)
{
	/* The capacity shows in what fits: the longest single attribute
	 * set_attr accepts, in 2 + value bytes. */
	static const char v[255] = { 0 };
	unsigned int cap = 0;

	for (unsigned int len = 0; len <= 255; len++) {
		EXPECT(otel_thread_ctx_clear_attrs(ctx) == 0);
		if (otel_thread_ctx_set_attr(ctx, 0, v, len) == 0)
			cap = len + 2;
	}
	EXPECT(otel_thread_ctx_clear_attrs(ctx) == 0);
	return cap;
}

static int options_ctx(void)
{
	union ctx_options_buf b;
	otel_thread_ctx *ctx;
	const size_t known = sizeof(struct otel_thread_ctx_options);

	/* An older caller that knows only `size`: every default. */
	memset(&b, 0, sizeof(b));
	b.o.size = sizeof(size_t);
	b.o.attrs_capacity = 7; /* past its size: must not be read */
	EXPECT_RC(otel_thread_ctx_create_with(&ctx, &b.o), 0);
	EXPECT(capacity_of(ctx) == 257); /* 612 bytes: one 255-byte value fits */
	otel_thread_ctx_destroy(ctx);

	/* One that knows size and attrs_capacity, not flags. */
	memset(&b, 0, sizeof(b));
	b.o.size = offsetof(struct otel_thread_ctx_options, attrs_capacity) + sizeof(unsigned int);
	b.o.attrs_capacity = 10;
	b.o.flags = OTEL_THREAD_CTX_OPTION_IDS_ONLY; /* past its size: must not be read */
	EXPECT_RC(otel_thread_ctx_create_with(&ctx, &b.o), 0);
	EXPECT(capacity_of(ctx) == 10);
	otel_thread_ctx_destroy(ctx);

	/* This version. */
	memset(&b, 0, sizeof(b));
	b.o.size = known;
	b.o.attrs_capacity = 20;
	EXPECT_RC(otel_thread_ctx_create_with(&ctx, &b.o), 0);
	EXPECT(capacity_of(ctx) == 20);
	otel_thread_ctx_destroy(ctx);

	/* A newer caller: zeros past this version's fields are accepted ... */
	memset(&b, 0, sizeof(b));
	b.o.size = known + 16;
	b.o.attrs_capacity = 30;
	EXPECT_RC(otel_thread_ctx_create_with(&ctx, &b.o), 0);
	EXPECT(capacity_of(ctx) == 30);
	otel_thread_ctx_destroy(ctx);

	/* ... and an option this version does not know is refused, at every
	 * byte past the known ones, and nothing is allocated. */
	for (size_t i = known; i < known + 16; i++) {
		memset(&b, 0, sizeof(b));
		b.o.size = known + 16;
		b.bytes[i] = 1;
		ctx = NULL;
		EXPECT_RC(otel_thread_ctx_create_with(&ctx, &b.o), OTEL_THREAD_CTX_EOPTIONS);
		EXPECT(ctx == NULL);
	}
	/* A flag this version does not know, and sizes that cannot be a
	 * caller's. */
	memset(&b, 0, sizeof(b));
	b.o.size = known;
	b.o.flags = 2;
	EXPECT_RC(otel_thread_ctx_create_with(&ctx, &b.o), OTEL_THREAD_CTX_EOPTIONS);
	b.o.flags = 0;
	b.o.size = sizeof(size_t) - 1;
	EXPECT_RC(otel_thread_ctx_create_with(&ctx, &b.o), OTEL_THREAD_CTX_EOPTIONS);
	b.o.size = 0;
	EXPECT_RC(otel_thread_ctx_create_with(&ctx, &b.o), OTEL_THREAD_CTX_EOPTIONS);
	b.o.size = known;
	b.o.attrs_capacity = OTEL_THREAD_CTX_ATTRS_MAX + 1;
	EXPECT_RC(otel_thread_ctx_create_with(&ctx, &b.o), OTEL_THREAD_CTX_EOPTIONS);
	return 0;
}

union process_options_buf {
	struct otel_thread_ctx_process_options o;
	unsigned char bytes[96];
	size_t align;
};

static const struct otel_thread_ctx_process_attr service[] = {
	{ .key = "service.name", .type = OTEL_THREAD_CTX_PROCESS_STRING, .string = "abi" },
};

static int options_process(void)
{
	union process_options_buf b;
	const size_t known = sizeof(struct otel_thread_ctx_process_options);
	struct otel_thread_ctx_process_attr extra[] = {
		{ .key = "x", .type = OTEL_THREAD_CTX_PROCESS_STRING, .string = "y" },
	};

	/* An older caller that knows only `size`: the defaults; the fields
	 * past its size (an invalid schema here) are not read. */
	memset(&b, 0, sizeof(b));
	b.o.size = sizeof(size_t);
	b.o.schema = 99;
	b.o.on_fork = 99;
	EXPECT_RC(otel_thread_ctx_process_publish_with(service, 1, &b.o), 0);
	/* One without the attributes: they are not read either. */
	b.o.size = offsetof(struct otel_thread_ctx_process_options, attributes);
	b.o.schema = OTEL_THREAD_CTX_PROCESS_SCHEMA_TLS_V1;
	b.o.on_fork = OTEL_THREAD_CTX_PROCESS_FORK_DROP;
	b.o.attributes = NULL;
	b.o.attribute_count = 5;
	EXPECT_RC(otel_thread_ctx_process_update_with(service, 1, &b.o), 0);
	/* This version, and a newer caller with zeros past it. */
	memset(&b, 0, sizeof(b));
	b.o.size = known + 24;
	b.o.schema = OTEL_THREAD_CTX_PROCESS_SCHEMA_TLSDESC_V1_DEV;
	b.o.attributes = extra;
	b.o.attribute_count = 1;
	EXPECT_RC(otel_thread_ctx_process_update_with(service, 1, &b.o), 0);
	/* An unknown option: refused, the publication unchanged. */
	for (size_t i = known; i < known + 24; i++) {
		b.bytes[i] = 0x5a;
		EXPECT_RC(otel_thread_ctx_process_update_with(service, 1, &b.o),
			  OTEL_THREAD_CTX_EOPTIONS);
		b.bytes[i] = 0;
	}
	b.o.size = 3;
	EXPECT_RC(otel_thread_ctx_process_update_with(service, 1, &b.o), OTEL_THREAD_CTX_EOPTIONS);
	EXPECT_RC(otel_thread_ctx_process_unpublish(), 0);
	return 0;
}

/* Registers 255-byte names until one is refused; returns how many were
 * taken. */
static unsigned int fill_registry(int published)
{
	char name[256];
	unsigned int i, index, before;
	int rc = 0;

	for (i = 0; i < 256; i++) {
		memset(name, 'a' + i % 26, 255);
		snprintf(name, sizeof(name), "%03u", i);
		name[3] = 'k';
		memset(name + 4, 'a' + i % 26, 251);
		name[255] = '\0';
		before = otel_thread_ctx_key_count();
		rc = otel_thread_ctx_key_register(name, &index);
		if (rc != 0) {
			ck_assert_msg(rc == OTEL_THREAD_CTX_E2BIG, "key %u refused with %d (%s), not E2BIG", i,
			      rc, otel_thread_ctx_strerror(rc));
			/* A refused key leaves nothing behind. */
			EXPECT(otel_thread_ctx_key_count() == before);
			EXPECT(otel_thread_ctx_key_find(name, &index) == OTEL_THREAD_CTX_EUNKNOWNKEY);
			EXPECT(otel_thread_ctx_key_name(before) == NULL);
			break;
		}
		EXPECT(index == i);
	}
	ck_assert_msg(rc != 0, "all 256 names of 255 bytes registered%s",
	      published ? " while published" : ": the key map cannot be published");
	printf("%u names of 255 bytes registered, the next refused\n", i);
	return i;
}

static int keys(int published_first)
{
	unsigned int n, index;

	if (published_first)
		EXPECT_RC(otel_thread_ctx_process_publish(NULL, 0), 0);
	n = fill_registry(published_first);
	EXPECT(n > 200);
	/* The key map as it is can be published, now and later ... */
	if (!published_first)
		EXPECT_RC(otel_thread_ctx_process_publish(NULL, 0), 0);
	EXPECT_RC(otel_thread_ctx_process_update(NULL, 0), 0);
	/* ... and a short name still fits. */
	EXPECT_RC(otel_thread_ctx_key_register("k", &index), 0);
	EXPECT(index == n);
	EXPECT_RC(otel_thread_ctx_process_unpublish(), 0);
	EXPECT_RC(otel_thread_ctx_process_publish(NULL, 0), 0);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	if (strcmp(mode, "options-ctx") == 0)
		return options_ctx();
	if (strcmp(mode, "options-process") == 0)
		return options_process();
	if (strcmp(mode, "keys-unpublished") == 0)
		return keys(0);
	if (strcmp(mode, "keys-published") == 0)
		return keys(1);
	fprintf(stderr, "usage: abi options-ctx|options-process|keys-unpublished|keys-published\n");
	return 2;
}
