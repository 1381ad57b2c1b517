/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the key registry and process context suites. */
#ifndef OTEL_TESTS_PCTX_H
#define OTEL_TESTS_PCTX_H

#include <stdint.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "otel_thread_ctx_inspect.h"
#include "common.h"

/*
 * Work that changes process-wide state for good (a full key registry, a
 * seccomp filter) runs in a child of its own, so that the next test starts
 * from the same state with CK_FORK=no too.  The child function returns 0,
 * or the line of the check that failed (CHECK below).
 */
#define CHECK(cond)                                                                 \
	do {                                                                        \
		if (!(cond)) {                                                      \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
				#cond);                                             \
			return __LINE__;                                            \
		}                                                                   \
	} while (0)

#define CHECK_RC(call, expected)                                                    \
	do {                                                                        \
		int chk_rc_ = (call);                                               \
		if (chk_rc_ != (expected)) {                                        \
			fprintf(stderr, "%s:%d: %s returned %d (%s), expected %d\n",  \
				__FILE__, __LINE__, #call, chk_rc_,                 \
				otel_thread_ctx_strerror(chk_rc_), (int)(expected)); \
			return __LINE__;                                            \
		}                                                                   \
	} while (0)

static inline void run_isolated(int (*fn)(void *), void *arg)
{
	int status = -1;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int rc = fn(arg);

		fflush(NULL);
		_exit(rc == 0 ? 0 : 1);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status), "isolated child died (signal %d)",
		      WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	ck_assert_msg(WEXITSTATUS(status) == 0, "isolated child failed (see its stderr)");
}

/* The line of "/proc/self/maps" for the mapping that starts at `at`, or an
 * empty string. */
static inline void maps_line(const void *at, char *out, size_t cap)
{
	char want[32], line[512];
	FILE *f = fopen("/proc/self/maps", "r");

	out[0] = '\0';
	ck_assert_ptr_nonnull(f);
	snprintf(want, sizeof(want), "%08lx-", (unsigned long)(uintptr_t)at);
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, want, strlen(want)) == 0) {
			snprintf(out, cap, "%s", line);
			break;
		}
	}
	fclose(f);
}

/* How many mappings of this process have a name containing OTEL_CTX. */
static inline int otel_ctx_mappings(void)
{
	char line[512];
	int n = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f) != NULL)
		n += strstr(line, "OTEL_CTX") != NULL;
	fclose(f);
	return n;
}

/* The VmFlags line of the mapping at `at` in /proc/self/smaps ("" if none). */
static inline void vm_flags(const void *at, char *out, size_t cap)
{
	char want[32], line[512];
	int in = 0;
	FILE *f = fopen("/proc/self/smaps", "r");

	out[0] = '\0';
	ck_assert_ptr_nonnull(f);
	snprintf(want, sizeof(want), "%08lx-", (unsigned long)(uintptr_t)at);
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strchr(line, '-') != NULL && strncmp(line, want, strlen(want)) == 0)
			in = 1;
		else if (in && strncmp(line, "VmFlags:", 8) == 0) {
			snprintf(out, cap, "%s", line);
			break;
		}
	}
	fclose(f);
}

/* A copy of what this process publishes: the header and the payload.
 * Large: keep these static, not on the stack. */
struct published_ctx {
	struct otel_thread_ctx_process_info info;
	struct otel_thread_ctx_process_header header;
	uint8_t payload[OTEL_THREAD_CTX_PROCESS_PAYLOAD_MAX];
};

static inline void snapshot_own(struct published_ctx *p)
{
	memset(p, 0, sizeof(*p));
	ck_assert_ok(otel_thread_ctx_process_query(&p->info));
	if (!p->info.published)
		return;
	memcpy(&p->header, p->info.mapping, sizeof(p->header));
	ck_assert_uint_eq(p->header.payload_size, p->info.payload_size);
	memcpy(p->payload, p->info.payload, p->info.payload_size);
}

/* Same mapping, same header bytes, same payload bytes. */
static inline int same_publication(const struct published_ctx *a, const struct published_ctx *b)
{
	return a->info.published == b->info.published && a->info.mapping == b->info.mapping &&
	       memcmp(&a->header, &b->header, sizeof(a->header)) == 0 &&
	       a->info.payload_size == b->info.payload_size &&
	       memcmp(a->payload, b->payload, a->info.payload_size) == 0;
}

static inline struct otel_thread_ctx_process_attr str_attr(const char *key, const char *value)
{
	struct otel_thread_ctx_process_attr a;

	memset(&a, 0, sizeof(a));
	a.key = key;
	a.type = OTEL_THREAD_CTX_PROCESS_STRING;
	a.string = value;
	return a;
}

static inline struct otel_thread_ctx_process_attr int_attr(const char *key, int64_t value)
{
	struct otel_thread_ctx_process_attr a;

	memset(&a, 0, sizeof(a));
	a.key = key;
	a.type = OTEL_THREAD_CTX_PROCESS_INT;
	a.int_value = value;
	return a;
}

/* The resource attribute `key` of a snapshot, or NULL. */
static inline const struct otel_thread_ctx_process_attr *
resource_attr(const struct otel_thread_ctx_inspect_process_snapshot *s, const char *key)
{
	for (size_t i = 0; i < s->resource_count; i++) {
		if (strcmp(s->resource[i].key, key) == 0)
			return &s->resource[i];
	}
	return NULL;
}

/* The snapshot's key map is exactly this process's registry. */
static inline int key_map_is_registry(const struct otel_thread_ctx_inspect_process_snapshot *s)
{
	if (!s->key_map_present || s->key_count != otel_thread_ctx_key_count())
		return 0;
	for (size_t i = 0; i < s->key_count; i++) {
		if (strcmp(s->keys[i], otel_thread_ctx_key_name((unsigned int)i)) != 0)
			return 0;
	}
	return 1;
}

/* A protobuf writer of the tests' own, independent of the library's. */
struct pb {
	uint8_t b[4096];
	size_t n;
};

static inline void pb_raw(struct pb *p, const void *d, size_t n)
{
	ck_assert_uint_le(p->n + n, sizeof(p->b));
	memcpy(p->b + p->n, d, n);
	p->n += n;
}

static inline void pb_varint(struct pb *p, uint64_t v)
{
	do {
		uint8_t byte = (uint8_t)(v & 0x7f);

		v >>= 7;
		if (v != 0)
			byte |= 0x80;
		pb_raw(p, &byte, 1);
	} while (v != 0);
}

static inline void pb_len(struct pb *p, unsigned int field, const void *d, size_t n)
{
	pb_varint(p, field << 3 | 2);
	pb_varint(p, n);
	pb_raw(p, d, n);
}

static inline void pb_str(struct pb *p, unsigned int field, const char *s)
{
	pb_len(p, field, s, strlen(s));
}

static inline void pb_msg(struct pb *p, unsigned int field, const struct pb *inner)
{
	pb_len(p, field, inner->b, inner->n);
}

/* KeyValue{key, AnyValue{string_value}}. */
static inline struct pb kv_string(const char *key, const char *value)
{
	struct pb kv = { { 0 }, 0 }, any = { { 0 }, 0 };

	pb_str(&any, 1, value);
	pb_str(&kv, 1, key);
	pb_msg(&kv, 2, &any);
	return kv;
}

/* KeyValue{threadlocal.attribute_key_map, AnyValue{array_value{names}}}. */
static inline struct pb kv_key_map(const char *const *names, size_t n)
{
	struct pb kv = { { 0 }, 0 }, any = { { 0 }, 0 }, array = { { 0 }, 0 };

	for (size_t i = 0; i < n; i++) {
		struct pb item = { { 0 }, 0 };

		pb_str(&item, 1, names[i]);
		pb_msg(&array, 1, &item);
	}
	pb_msg(&any, 5, &array);
	pb_str(&kv, 1, "threadlocal.attribute_key_map");
	pb_msg(&kv, 2, &any);
	return kv;
}

#endif /* OTEL_TESTS_PCTX_H */
