/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The process context in this process: the mapping and its header, the
 * payload read back, key registration and updates by the update protocol,
 * every error leaving the publication as it was, unpublish, fork, and the
 * decoder against hostile bytes.  Reading other processes is in
 * test-process-ctx-remote.c.
 */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "pctx.h"

static struct published_ctx before, after;

static uint64_t boottime_ns(void)
{
	struct timespec ts;

	ck_assert_int_eq(clock_gettime(CLOCK_BOOTTIME, &ts), 0);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Does the platform apply MADV_DONTFORK (qemu-user ignores it)? */
static int dontfork_observable(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	void *p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char flags[512];

	ck_assert_ptr_ne(p, MAP_FAILED);
	ck_assert_int_eq(madvise(p, page, MADV_DONTFORK), 0);
	vm_flags(p, flags, sizeof(flags));
	munmap(p, page);
	return strstr(flags, " dc") != NULL;
}

static unsigned int key(const char *name)
{
	unsigned int idx = 9999;

	ck_assert_ok(otel_thread_ctx_key_register(name, &idx));
	return idx;
}

/* service.name and a few more, of every type the publisher takes. */
static const struct otel_thread_ctx_process_attr *service_attrs(size_t *n)
{
	static struct otel_thread_ctx_process_attr a[5];

	memset(a, 0, sizeof(a));
	a[0] = str_attr("service.name", "checkout");
	a[1] = int_attr("process.pid", -4242);
	a[2].key = "sampling.ratio";
	a[2].type = OTEL_THREAD_CTX_PROCESS_DOUBLE;
	a[2].double_value = 0.125;
	a[3].key = "feature.on";
	a[3].type = OTEL_THREAD_CTX_PROCESS_BOOL;
	a[3].bool_value = 1;
	a[4] = str_attr("with.nul", "a\0b");
	a[4].length = 3;
	*n = 5;
	return a;
}

static void publish_service(void)
{
	size_t n;
	const struct otel_thread_ctx_process_attr *a = service_attrs(&n);

	ck_assert_ok(otel_thread_ctx_process_unpublish());
	ck_assert_ok(otel_thread_ctx_process_publish(a, n));
}

static struct otel_thread_ctx_inspect_process_snapshot *read_self(void)
{
	struct otel_thread_ctx_inspect_process_snapshot *s = NULL;

	ck_assert_ok(otel_thread_ctx_inspect_process_read(0, 0, &s));
	ck_assert_ptr_nonnull(s);
	return s;
}

START_TEST(publish_creates_the_mapping_spec_describes)
{
	struct otel_thread_ctx_process_info info;
	const struct otel_thread_ctx_process_header *h;
	char line[512], flags[512];
	uint64_t t0, t1;

	ck_assert_ok(otel_thread_ctx_process_unpublish());
	ck_assert_ok(otel_thread_ctx_process_query(&info));
	ck_assert_int_eq(info.published, 0);
	ck_assert_int_eq(otel_ctx_mappings(), 0);
	ck_assert_otel(otel_thread_ctx_process_query(NULL), OTEL_THREAD_CTX_ENULL);

	key("http.route");
	t0 = boottime_ns();
	publish_service();
	t1 = boottime_ns();
	ck_assert_ok(otel_thread_ctx_process_query(&info));
	ck_assert_int_eq(info.published, 1);
	ck_assert_uint_eq(info.mapping_size, (size_t)sysconf(_SC_PAGESIZE));
	ck_assert_uint_eq((uintptr_t)info.mapping % (uintptr_t)sysconf(_SC_PAGESIZE), 0);

	h = info.mapping;
	ck_assert_mem_eq(h->signature, "OTEL_CTX", 8);
	ck_assert_uint_eq(h->version, 2);
	ck_assert_uint_eq(h->payload_size, info.payload_size);
	ck_assert_uint_eq(h->payload, (uint64_t)(uintptr_t)info.payload);
	ck_assert_uint_gt(h->payload_size, 0);
	/* CLOCK_BOOTTIME, taken during the call. */
	ck_assert_uint_ge(h->monotonic_published_at_ns, t0);
	ck_assert_uint_le(h->monotonic_published_at_ns, t1);
	ck_assert_uint_eq(h->monotonic_published_at_ns, info.monotonic_published_at_ns);

	/* Named where readers look, and left out of children. */
	maps_line(info.mapping, line, sizeof(line));
	if (info.memfd)
		ck_assert_msg(strstr(line, " /memfd:OTEL_CTX") != NULL, "maps line: %s", line);
	else
		ck_assert_msg(strstr(line, " [anon:OTEL_CTX]") != NULL, "maps line: %s", line);
	ck_assert_int_eq(otel_ctx_mappings(), 1);
	vm_flags(info.mapping, flags, sizeof(flags));
	if (dontfork_observable())
		ck_assert_msg(strstr(flags, " dc") != NULL, "no MADV_DONTFORK: %s", flags);
	else
		printf("note: MADV_DONTFORK has no effect on this platform (qemu-user?); "
		       "its flag is not checked\n");
	printf("mapping: %s", line);
	ck_assert_ok(otel_thread_ctx_process_unpublish());
}
END_TEST

START_TEST(read_returns_what_was_published)
{
	struct otel_thread_ctx_inspect_process_snapshot *s;
	const struct otel_thread_ctx_process_attr *a;
	struct otel_thread_ctx_process_info info;

	key("http.route");
	key("http.method");
	publish_service();
	ck_assert_ok(otel_thread_ctx_process_query(&info));
	s = read_self();
	ck_assert_uint_eq(s->mapping_address, (uintptr_t)info.mapping);
	ck_assert_uint_eq(s->payload_address, (uintptr_t)info.payload);
	ck_assert_uint_eq(s->monotonic_published_at_ns, info.monotonic_published_at_ns);
	ck_assert_uint_eq(s->version, 2);
	ck_assert_uint_eq(s->payload_size, info.payload_size);
	ck_assert_mem_eq(s->payload, info.payload, info.payload_size);
	ck_assert_str_eq(s->schema_version, "tlsdesc_v1_dev");
	ck_assert(key_map_is_registry(s));
	ck_assert_uint_eq(s->attribute_count, 0);

	ck_assert_uint_eq(s->resource_count, 5);
	ck_assert_str_eq(s->resource[0].key, "service.name");
	ck_assert_int_eq(s->resource[0].type, OTEL_THREAD_CTX_PROCESS_STRING);
	ck_assert_str_eq(s->resource[0].string, "checkout");
	ck_assert_uint_eq(s->resource[0].length, 8);
	a = resource_attr(s, "process.pid");
	ck_assert_int_eq(a->type, OTEL_THREAD_CTX_PROCESS_INT);
	ck_assert_int_eq(a->int_value, -4242);
	a = resource_attr(s, "sampling.ratio");
	ck_assert_int_eq(a->type, OTEL_THREAD_CTX_PROCESS_DOUBLE);
	ck_assert(a->double_value == 0.125);
	a = resource_attr(s, "feature.on");
	ck_assert_int_eq(a->type, OTEL_THREAD_CTX_PROCESS_BOOL);
	ck_assert_int_eq(a->bool_value, 1);
	a = resource_attr(s, "with.nul");
	ck_assert_uint_eq(a->length, 3);
	ck_assert_mem_eq(a->string, "a\0b", 4);
	otel_thread_ctx_inspect_process_snapshot_free(s);
	otel_thread_ctx_inspect_process_snapshot_free(NULL);
	ck_assert_ok(otel_thread_ctx_process_unpublish());
}
END_TEST

START_TEST(a_new_key_republishes_by_the_update_protocol)
{
	const struct otel_thread_ctx_process_header *h;
	struct otel_thread_ctx_inspect_process_snapshot *s;
	unsigned int idx;

	publish_service();
	snapshot_own(&before);
	h = before.info.mapping;
	idx = key("tag.republish.new");
	snapshot_own(&after);
	/* Same mapping, new payload, strictly newer timestamp. */
	ck_assert_ptr_eq(after.info.mapping, before.info.mapping);
	ck_assert_uint_gt(after.header.monotonic_published_at_ns,
			  before.header.monotonic_published_at_ns);
	ck_assert_uint_ne(after.header.payload, before.header.payload);
	ck_assert_uint_gt(after.header.payload_size, before.header.payload_size);
	s = read_self();
	ck_assert_uint_gt(s->key_count, idx);
	ck_assert_str_eq(s->keys[idx], "tag.republish.new");
	ck_assert(key_map_is_registry(s));
	otel_thread_ctx_inspect_process_snapshot_free(s);

	/* The payload before is still intact (freed one change later). */
	{
		struct otel_thread_ctx_inspect_process_snapshot *old;

		ck_assert_ok(otel_thread_ctx_inspect_process_decode((const void *)(uintptr_t)before.header.payload,
						     before.header.payload_size, &old));
		ck_assert_uint_eq(old->key_count, idx);
		ck_assert_mem_eq(old->payload, before.payload, before.header.payload_size);
		otel_thread_ctx_inspect_process_snapshot_free(old);
	}

	/* A known key changes nothing. */
	snapshot_own(&before);
	ck_assert_uint_eq(key("tag.republish.new"), idx);
	snapshot_own(&after);
	ck_assert(same_publication(&before, &after));
	ck_assert_ptr_eq(h, after.info.mapping);
	ck_assert_ok(otel_thread_ctx_process_unpublish());
}
END_TEST

START_TEST(update_replaces_the_resource)
{
	struct otel_thread_ctx_process_attr next[2];
	struct otel_thread_ctx_inspect_process_snapshot *s;

	publish_service();
	snapshot_own(&before);
	next[0] = str_attr("service.name", "checkout");
	next[1] = str_attr("service.instance.id", "0b5e1c40-2f4b-4c1d-9d1e-7c2b8f0a9e11");
	ck_assert_ok(otel_thread_ctx_process_update(next, 2));
	snapshot_own(&after);
	ck_assert_ptr_eq(after.info.mapping, before.info.mapping);
	ck_assert_uint_gt(after.header.monotonic_published_at_ns,
			  before.header.monotonic_published_at_ns);
	s = read_self();
	ck_assert_uint_eq(s->resource_count, 2);
	ck_assert_str_eq(resource_attr(s, "service.instance.id")->string,
			 "0b5e1c40-2f4b-4c1d-9d1e-7c2b8f0a9e11");
	ck_assert_ptr_null(resource_attr(s, "process.pid"));
	ck_assert(key_map_is_registry(s));
	otel_thread_ctx_inspect_process_snapshot_free(s);

	/* No resource attributes at all is a valid context. */
	ck_assert_ok(otel_thread_ctx_process_update(NULL, 0));
	s = read_self();
	ck_assert_uint_eq(s->resource_count, 0);
	ck_assert_str_eq(s->schema_version, "tlsdesc_v1_dev");
	otel_thread_ctx_inspect_process_snapshot_free(s);
	ck_assert_ok(otel_thread_ctx_process_unpublish());
}
END_TEST

/* Every bad call of publish and update: its error, and nothing changed. */
START_TEST(errors_leave_the_publication_intact)
{
	static char huge[OTEL_THREAD_CTX_PROCESS_PAYLOAD_MAX + 2];
	struct otel_thread_ctx_process_attr a[2];
	size_t n;
	const struct otel_thread_ctx_process_attr *good = service_attrs(&n);
	struct {
		struct otel_thread_ctx_process_attr attrs[2];
		size_t count;
		int expect;
	} cases[12];
	size_t nc = 0;

	memset(huge, 'x', sizeof(huge) - 1);
	memset(cases, 0, sizeof(cases));
	/* NULL key; NULL string. */
	cases[nc].attrs[0] = str_attr(NULL, "v"), cases[nc].count = 1;
	cases[nc++].expect = OTEL_THREAD_CTX_ENULL;
	cases[nc].attrs[0] = str_attr("k", NULL), cases[nc].count = 1;
	cases[nc++].expect = OTEL_THREAD_CTX_ENULL;
	/* Empty key, non-UTF-8 key, unknown and read-only types, duplicate. */
	cases[nc].attrs[0] = str_attr("", "v"), cases[nc].count = 1;
	cases[nc++].expect = OTEL_THREAD_CTX_EATTR;
	cases[nc].attrs[0] = str_attr("k\xc3", "v"), cases[nc].count = 1;
	cases[nc++].expect = OTEL_THREAD_CTX_EATTR;
	cases[nc].attrs[0] = str_attr("k", "v"), cases[nc].attrs[0].type = OTEL_THREAD_CTX_PROCESS_ARRAY;
	cases[nc].count = 1, cases[nc++].expect = OTEL_THREAD_CTX_EATTR;
	cases[nc].attrs[0] = str_attr("k", "v"), cases[nc].attrs[0].type = (enum otel_thread_ctx_process_type)99;
	cases[nc].count = 1, cases[nc++].expect = OTEL_THREAD_CTX_EATTR;
	cases[nc].attrs[0] = str_attr("k", "v"), cases[nc].attrs[0].type = OTEL_THREAD_CTX_PROCESS_EMPTY;
	cases[nc].count = 1, cases[nc++].expect = OTEL_THREAD_CTX_EATTR;
	cases[nc].attrs[0] = str_attr("dup", "1"), cases[nc].attrs[1] = int_attr("dup", 2);
	cases[nc].count = 2, cases[nc++].expect = OTEL_THREAD_CTX_EATTR;
	/* A string that is not UTF-8 (with an explicit length past a NUL). */
	cases[nc].attrs[0] = str_attr("k", "ok\0\xff"), cases[nc].attrs[0].length = 4;
	cases[nc].count = 1, cases[nc++].expect = OTEL_THREAD_CTX_EUTF8;
	/* Too big: one value, and two that only together are. */
	cases[nc].attrs[0] = str_attr("k", huge), cases[nc].count = 1;
	cases[nc++].expect = OTEL_THREAD_CTX_E2BIG;
	cases[nc].attrs[0] = str_attr("k1", huge + OTEL_THREAD_CTX_PROCESS_PAYLOAD_MAX / 2);
	cases[nc].attrs[1] = str_attr("k2", huge + OTEL_THREAD_CTX_PROCESS_PAYLOAD_MAX / 2);
	cases[nc].count = 2, cases[nc++].expect = OTEL_THREAD_CTX_E2BIG;

	publish_service();
	snapshot_own(&before);
	for (size_t i = 0; i < nc; i++) {
		ck_assert_otel(otel_thread_ctx_process_update(cases[i].attrs, cases[i].count),
			       cases[i].expect);
		ck_assert_otel(otel_thread_ctx_process_publish(cases[i].attrs, cases[i].count),
			       cases[i].expect);
		snapshot_own(&after);
		ck_assert_msg(same_publication(&before, &after), "case %zu changed it", i);
	}
	ck_assert_otel(otel_thread_ctx_process_update(NULL, 3), OTEL_THREAD_CTX_ENULL);
	/* Publishing twice. */
	ck_assert_otel(otel_thread_ctx_process_publish(good, n), OTEL_THREAD_CTX_EPUBLISHED);
	a[0] = str_attr("service.name", "other");
	ck_assert_otel(otel_thread_ctx_process_publish(a, 1), OTEL_THREAD_CTX_EPUBLISHED);
	snapshot_own(&after);
	ck_assert(same_publication(&before, &after));
	ck_assert_int_eq(otel_ctx_mappings(), 1);
	ck_assert_ok(otel_thread_ctx_process_unpublish());

	/* Unpublished: a bad publish publishes nothing; update has nothing. */
	ck_assert_otel(otel_thread_ctx_process_publish(cases[0].attrs, 1), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_process_update(good, n), OTEL_THREAD_CTX_ENOTPUBLISHED);
	snapshot_own(&after);
	ck_assert_int_eq(after.info.published, 0);
	ck_assert_int_eq(otel_ctx_mappings(), 0);
}
END_TEST

/* A key that would push the payload past its limit is not registered. */
static int key_too_big(void *arg)
{
	static char fill[OTEL_THREAD_CTX_PROCESS_PAYLOAD_MAX];
	char long_name[OTEL_THREAD_CTX_KEY_NAME_MAX + 1];
	struct otel_thread_ctx_process_attr a = str_attr("fill", fill);
	struct otel_thread_ctx_process_info info;
	unsigned int idx, count;
	size_t len = OTEL_THREAD_CTX_PROCESS_PAYLOAD_MAX / 2;

	(void)arg;
	memset(fill, 'f', len);
	fill[len] = '\0';
	CHECK_RC(otel_thread_ctx_process_unpublish(), OTEL_THREAD_CTX_OK);
	CHECK_RC(otel_thread_ctx_process_publish(&a, 1), OTEL_THREAD_CTX_OK);
	CHECK_RC(otel_thread_ctx_process_query(&info), OTEL_THREAD_CTX_OK);
	/* Grow the value until the payload is 100 bytes under the limit. */
	len += OTEL_THREAD_CTX_PROCESS_PAYLOAD_MAX - 100 - info.payload_size;
	memset(fill, 'f', len);
	fill[len] = '\0';
	CHECK_RC(otel_thread_ctx_process_update(&a, 1), OTEL_THREAD_CTX_OK);
	CHECK_RC(otel_thread_ctx_process_query(&info), OTEL_THREAD_CTX_OK);
	CHECK(info.payload_size == OTEL_THREAD_CTX_PROCESS_PAYLOAD_MAX - 100);
	/* Exactly at the limit is allowed, one byte more is not. */
	len += 100;
	fill[len - 100] = 'f', memset(fill, 'f', len), fill[len] = '\0';
	CHECK_RC(otel_thread_ctx_process_update(&a, 1), OTEL_THREAD_CTX_OK);
	CHECK_RC(otel_thread_ctx_process_query(&info), OTEL_THREAD_CTX_OK);
	CHECK(info.payload_size == OTEL_THREAD_CTX_PROCESS_PAYLOAD_MAX);
	fill[len] = 'f', fill[len + 1] = '\0';
	CHECK_RC(otel_thread_ctx_process_update(&a, 1), OTEL_THREAD_CTX_E2BIG);
	fill[len] = '\0';

	snapshot_own(&before);
	count = otel_thread_ctx_key_count();
	memset(long_name, 'n', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	CHECK_RC(otel_thread_ctx_key_register(long_name, &idx), OTEL_THREAD_CTX_E2BIG);
	CHECK(otel_thread_ctx_key_count() == count);
	CHECK_RC(otel_thread_ctx_key_find(long_name, &idx), OTEL_THREAD_CTX_EUNKNOWNKEY);
	snapshot_own(&after);
	CHECK(same_publication(&before, &after));
	/* Unpublished, the same key is fine. */
	CHECK_RC(otel_thread_ctx_process_unpublish(), OTEL_THREAD_CTX_OK);
	CHECK_RC(otel_thread_ctx_key_register(long_name, &idx), OTEL_THREAD_CTX_OK);
	CHECK(idx == count);
	/* And now the resource that fitted before does not. */
	CHECK_RC(otel_thread_ctx_process_publish(&a, 1), OTEL_THREAD_CTX_E2BIG);
	CHECK_RC(otel_thread_ctx_process_query(&info), OTEL_THREAD_CTX_OK);
	CHECK(!info.published);
	return 0;
}

START_TEST(a_key_that_does_not_fit_is_not_registered)
{
	run_isolated(key_too_big, NULL);
}
END_TEST

START_TEST(unpublish_removes_the_mapping)
{
	struct otel_thread_ctx_inspect_process_snapshot *s = NULL;
	struct otel_thread_ctx_process_info info;

	publish_service();
	ck_assert_int_eq(otel_ctx_mappings(), 1);
	ck_assert_ok(otel_thread_ctx_process_unpublish());
	ck_assert_ok(otel_thread_ctx_process_query(&info));
	ck_assert_int_eq(info.published, 0);
	ck_assert_ptr_null(info.mapping);
	ck_assert_int_eq(otel_ctx_mappings(), 0);
	ck_assert_otel(otel_thread_ctx_inspect_process_read(0, 0, &s), OTEL_THREAD_CTX_ENOENT);
	ck_assert_ptr_null(s);
	ck_assert_ok(otel_thread_ctx_process_unpublish());
	/* Registering keys while unpublished works and publishes nothing. */
	key("tag.unpublished.key");
	ck_assert_int_eq(otel_ctx_mappings(), 0);

	/* And a new publication has everything, the new key included. */
	publish_service();
	s = read_self();
	ck_assert(key_map_is_registry(s));
	otel_thread_ctx_inspect_process_snapshot_free(s);
	ck_assert_ok(otel_thread_ctx_process_unpublish());
}
END_TEST

/* fork(): the child publishes the same payload in a mapping of its own. */
struct fork_report {
	struct otel_thread_ctx_process_info info;
	uint64_t published_at;
	int mappings, dontfork, same_payload, key_map_ok, read_rc;
};

static void child_report(int fd, const struct published_ctx *parent)
{
	struct fork_report r;
	struct otel_thread_ctx_inspect_process_snapshot *s = NULL;
	char flags[512];

	memset(&r, 0, sizeof(r));
	otel_thread_ctx_process_query(&r.info);
	r.mappings = otel_ctx_mappings();
	if (r.info.published) {
		const struct otel_thread_ctx_process_header *h = r.info.mapping;

		r.published_at = h->monotonic_published_at_ns;
		vm_flags(r.info.mapping, flags, sizeof(flags));
		r.dontfork = strstr(flags, " dc") != NULL;
	}
	r.read_rc = otel_thread_ctx_inspect_process_read(0, 0, &s);
	if (r.read_rc == OTEL_THREAD_CTX_OK) {
		r.same_payload = s->payload_size == parent->header.payload_size &&
				 memcmp(s->payload, parent->payload, s->payload_size) == 0;
		r.key_map_ok = key_map_is_registry(s);
		otel_thread_ctx_inspect_process_snapshot_free(s);
	}
	if (write(fd, &r, sizeof(r)) != (ssize_t)sizeof(r))
		_exit(3);
	/* The child changes its own context; the parent's must not move. */
	{
		struct otel_thread_ctx_process_attr a = str_attr("service.instance.id", "child");

		int rc = otel_thread_ctx_process_update(&a, 1);

		if (rc != (r.info.published ? OTEL_THREAD_CTX_OK : OTEL_THREAD_CTX_ENOTPUBLISHED)) {
			fprintf(stderr, "child: update returned %d\n", rc);
			_exit(4);
		}
	}
	if (otel_thread_ctx_process_unpublish() != OTEL_THREAD_CTX_OK)
		_exit(5);
}

/* How the child is made: fork() runs the fork handlers; _Fork() and the
 * system call itself run none. */
enum how_forked { LIBC_FORK, UNDERSCORE_FORK, RAW_FORK };

static pid_t fork_how(enum how_forked how)
{
	switch (how) {
	case UNDERSCORE_FORK:
		return _Fork();
	case RAW_FORK:
#ifdef SYS_fork
		return (pid_t)syscall(SYS_fork);
#else
		/* aarch64 has clone() only: fork() is clone(SIGCHLD). */
		return (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
#endif
	default:
		return fork();
	}
}

static void fork_how_and_report(const struct published_ctx *parent, struct fork_report *r,
				enum how_forked how)
{
	int fds[2], status;
	pid_t pid;

	ck_assert_int_eq(pipe(fds), 0);
	fflush(NULL);
	pid = fork_how(how);
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(fds[0]);
		child_report(fds[1], parent);
		_exit(0);
	}
	close(fds[1]);
	ck_assert_int_eq(read(fds[0], r, sizeof(*r)), sizeof(*r));
	close(fds[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
}

static void fork_and_report(const struct published_ctx *parent, struct fork_report *r)
{
	fork_how_and_report(parent, r, LIBC_FORK);
}

/* OTEP 4719: by default a child publishes nothing, so that it never shows
 * the parent's service.instance.id, until it publishes its own. */
START_TEST(fork_drops_the_context_in_the_child)
{
	struct fork_report r;

	key("tag.fork.key");
	publish_service();
	snapshot_own(&before);
	fork_and_report(&before, &r);
	ck_assert_int_eq(r.info.published, 0);
	ck_assert_int_eq(r.mappings, 0); /* neither its own nor the parent's */
	/* The parent: untouched. */
	snapshot_own(&after);
	ck_assert(same_publication(&before, &after));
	ck_assert_ok(otel_thread_ctx_process_unpublish());
}
END_TEST

/* A child made without the fork handlers (_Fork(), the fork system call
 * itself), whatever on_fork asks: the parent's mapping is not in it
 * (MADV_DONTFORK), the library says nothing is published there, a reader
 * of the child finds nothing, and what the child then does changes nothing
 * of the parent's publication.  Where MADV_DONTFORK is not applied (qemu-user
 * ignores it) the mapping is inherited, so only the library's own answer is
 * checked there. */
START_TEST(a_child_without_fork_handlers_has_nothing_of_the_parent)
{
	struct otel_thread_ctx_process_options o = OTEL_THREAD_CTX_PROCESS_OPTIONS_INIT;
	static const enum how_forked hows[] = { UNDERSCORE_FORK, RAW_FORK };
	static const int on_forks[] = { OTEL_THREAD_CTX_PROCESS_FORK_DROP,
					 OTEL_THREAD_CTX_PROCESS_FORK_REPUBLISH };
	int dontfork = dontfork_observable();
	size_t n;
	const struct otel_thread_ctx_process_attr *a = service_attrs(&n);

	key("tag.fork.key");
	for (size_t h = 0; h < sizeof(hows) / sizeof(hows[0]); h++) {
		for (size_t f = 0; f < sizeof(on_forks) / sizeof(on_forks[0]); f++) {
			struct fork_report r;

			ck_assert_ok(otel_thread_ctx_process_unpublish());
			o.on_fork = on_forks[f];
			ck_assert_ok(otel_thread_ctx_process_publish_with(a, n, &o));
			snapshot_own(&before);
			fork_how_and_report(&before, &r, hows[h]);
			ck_assert_msg(r.info.published == 0, "%s, on_fork %d: the child says it publishes",
				      hows[h] == UNDERSCORE_FORK ? "_Fork()" : "the fork system call",
				      on_forks[f]);
			if (dontfork) {
				ck_assert_int_eq(r.mappings, 0);
				ck_assert_otel(r.read_rc, OTEL_THREAD_CTX_ENOENT);
			}
			snapshot_own(&after);
			ck_assert(same_publication(&before, &after));
		}
	}
	ck_assert_ok(otel_thread_ctx_process_unpublish());
}
END_TEST

/* With FORK_REPUBLISH the child shows the parent's payload in a mapping of
 * its own. */
START_TEST(fork_republishes_when_asked)
{
	struct otel_thread_ctx_process_options o = OTEL_THREAD_CTX_PROCESS_OPTIONS_INIT;
	struct fork_report r;
	size_t n;
	const struct otel_thread_ctx_process_attr *a = service_attrs(&n);

	key("tag.fork.key");
	ck_assert_ok(otel_thread_ctx_process_unpublish());
	o.on_fork = OTEL_THREAD_CTX_PROCESS_FORK_REPUBLISH;
	ck_assert_ok(otel_thread_ctx_process_publish_with(a, n, &o));
	snapshot_own(&before);
	fork_and_report(&before, &r);
	ck_assert_int_eq(r.info.published, 1);
	ck_assert_int_eq(r.mappings, 1); /* its own, not the parent's too */
	ck_assert_int_eq(r.dontfork, dontfork_observable());
	ck_assert_int_eq(r.same_payload, 1);
	ck_assert_int_eq(r.key_map_ok, 1);
	ck_assert_uint_gt(r.published_at, before.header.monotonic_published_at_ns);
	ck_assert_int_eq(r.info.memfd, before.info.memfd);
	/* The parent: untouched by the child's republish, update, unpublish. */
	snapshot_own(&after);
	ck_assert(same_publication(&before, &after));
	ck_assert_ok(otel_thread_ctx_process_unpublish());

	/* Nothing published: the child publishes nothing either. */
	snapshot_own(&before);
	fork_and_report(&before, &r);
	ck_assert_int_eq(r.info.published, 0);
	ck_assert_int_eq(r.mappings, 0);
}
END_TEST

/* The schema version: tlsdesc_v1_dev by default, tls_v1 on request; the
 * reader takes both; bad options change nothing. */
START_TEST(schema_version_is_chosen_at_publish)
{
	struct otel_thread_ctx_process_options o = OTEL_THREAD_CTX_PROCESS_OPTIONS_INIT;
	struct otel_thread_ctx_inspect_process_snapshot *s;
	size_t n;
	const struct otel_thread_ctx_process_attr *a = service_attrs(&n);

	/* The eBPF profiler's limit (processcontext.go, maxPayloadSize). */
	ck_assert_uint_eq(OTEL_THREAD_CTX_PROCESS_PAYLOAD_MAX, 65536);
	publish_service();
	s = read_self();
	ck_assert_str_eq(s->schema_version, "tlsdesc_v1_dev");
	otel_thread_ctx_inspect_process_snapshot_free(s);
	ck_assert_ok(otel_thread_ctx_process_unpublish());
	/* Every field zero is the defaults (libbpf's rule): a zeroed struct
	 * whose size is set publishes as NULL options do. */
	{
		struct otel_thread_ctx_process_options zero;
		struct otel_thread_ctx_process_info info;

		memset(&zero, 0, sizeof(zero));
		zero.size = sizeof(zero);
		ck_assert_ok(otel_thread_ctx_process_publish_with(a, n, &zero));
		s = read_self();
		ck_assert_str_eq(s->schema_version, "tlsdesc_v1_dev");
		ck_assert_uint_eq(s->attribute_count, 0);
		otel_thread_ctx_inspect_process_snapshot_free(s);
		ck_assert_ok(otel_thread_ctx_process_query(&info));
		ck_assert_int_eq(info.published, 1);
		ck_assert_ok(otel_thread_ctx_process_unpublish());
	}

	o.schema = OTEL_THREAD_CTX_PROCESS_SCHEMA_TLS_V1;
	ck_assert_ok(otel_thread_ctx_process_publish_with(a, n, &o));
	s = read_self();
	ck_assert_str_eq(s->schema_version, "tls_v1");
	ck_assert_int_eq(s->key_map_present, 1);
	otel_thread_ctx_inspect_process_snapshot_free(s);
	/* A key registered later republishes with the same schema. */
	key("tag.schema.later");
	s = read_self();
	ck_assert_str_eq(s->schema_version, "tls_v1");
	otel_thread_ctx_inspect_process_snapshot_free(s);
	ck_assert_ok(otel_thread_ctx_process_unpublish());

	/* Options out of range: refused, nothing published. */
	o.schema = 2;
	ck_assert_otel(otel_thread_ctx_process_publish_with(a, n, &o), OTEL_THREAD_CTX_EOPTIONS);
	o.schema = 0;
	o.on_fork = 7;
	ck_assert_otel(otel_thread_ctx_process_publish_with(a, n, &o), OTEL_THREAD_CTX_EOPTIONS);
	o.on_fork = 0;
	o.size = 1;
	ck_assert_otel(otel_thread_ctx_process_publish_with(a, n, &o), OTEL_THREAD_CTX_EOPTIONS);
	/* A missing pointer comes first (otel_thread_ctx.h, "Errors"). */
	ck_assert_otel(otel_thread_ctx_process_publish_with(NULL, 1, &o), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_process_update_with(NULL, 1, &o), OTEL_THREAD_CTX_ENULL);
	{
		struct otel_thread_ctx_process_info info;

		ck_assert_ok(otel_thread_ctx_process_query(&info));
		ck_assert_int_eq(info.published, 0);
	}
}
END_TEST

/* The snapshot's ProcessContext.attributes entry `key` (the threadlocal.*
 * ones are not there), or NULL. */
static const struct otel_thread_ctx_process_attr *
context_attr(const struct otel_thread_ctx_inspect_process_snapshot *s, const char *key)
{
	for (size_t i = 0; i < s->attribute_count; i++) {
		if (strcmp(s->attributes[i].key, key) == 0)
			return &s->attributes[i];
	}
	return NULL;
}

/* The caller's ProcessContext.attributes: published after the threadlocal.*
 * entries, kept by updates and key registrations, replaced only by
 * update_with; bad ones refused with nothing changed. */
START_TEST(process_attributes_are_published_and_kept)
{
	static char huge[OTEL_THREAD_CTX_PROCESS_PAYLOAD_MAX / 2 + 1];
	struct otel_thread_ctx_process_options o = OTEL_THREAD_CTX_PROCESS_OPTIONS_INIT;
	struct otel_thread_ctx_process_attr extra[3], bad[2], res[1];
	struct otel_thread_ctx_inspect_process_snapshot *s;
	size_t n;
	const struct otel_thread_ctx_process_attr *a = service_attrs(&n);

	memset(huge, 'x', sizeof(huge) - 1);
	extra[0] = str_attr("deployment.region", "eu-west-3");
	extra[1] = int_attr("runtime.workers", 12);
	/* The same key as a resource attribute: another namespace. */
	extra[2] = str_attr("service.name", "not the resource's");
	ck_assert_ok(otel_thread_ctx_process_unpublish());
	o.attributes = extra;
	o.attribute_count = 3;
	ck_assert_ok(otel_thread_ctx_process_publish_with(a, n, &o));
	s = read_self();
	ck_assert_uint_eq(s->attribute_count, 3);
	ck_assert_str_eq(context_attr(s, "deployment.region")->string, "eu-west-3");
	ck_assert_int_eq(context_attr(s, "runtime.workers")->int_value, 12);
	ck_assert_str_eq(context_attr(s, "service.name")->string, "not the resource's");
	ck_assert_str_eq(resource_attr(s, "service.name")->string, "checkout");
	ck_assert_str_eq(s->schema_version, "tlsdesc_v1_dev");
	ck_assert(key_map_is_registry(s));
	otel_thread_ctx_inspect_process_snapshot_free(s);
	{
		/* After the threadlocal.* entries, in the caller's order: the
		 * payload ends with the last one. */
		struct pb kv = kv_string("service.name", "not the resource's");
		struct pb last = { .n = 0 };

		pb_msg(&last, 2, &kv);
		snapshot_own(&before);
		ck_assert_uint_ge(before.info.payload_size, last.n);
		ck_assert_mem_eq(before.payload + before.info.payload_size - last.n, last.b, last.n);
	}

	/* A new key, an update of the resource: the attributes stay. */
	key("tag.attributes.kept");
	res[0] = str_attr("service.name", "renamed");
	ck_assert_ok(otel_thread_ctx_process_update(res, 1));
	ck_assert_ok(otel_thread_ctx_process_update_with(res, 1, NULL));
	s = read_self();
	ck_assert_uint_eq(s->attribute_count, 3);
	ck_assert_str_eq(resource_attr(s, "service.name")->string, "renamed");
	ck_assert(key_map_is_registry(s));
	otel_thread_ctx_inspect_process_snapshot_free(s);

	/* Refused, each with nothing changed: the reserved namespace, a
	 * duplicate, a NULL array, a bad value, a payload over the limit
	 * only with the resource, options too small. */
	snapshot_own(&before);
	{
		struct {
			struct otel_thread_ctx_process_attr attrs[2];
			size_t count;
			int null_array;
			int expect;
		} cases[7];
		size_t nc = 0;

		memset(cases, 0, sizeof(cases));
		cases[nc].attrs[0] = str_attr("threadlocal.schema_version", "tls_v1");
		cases[nc].count = 1, cases[nc++].expect = OTEL_THREAD_CTX_EATTR;
		cases[nc].attrs[0] = str_attr("threadlocal.anything", "v");
		cases[nc].count = 1, cases[nc++].expect = OTEL_THREAD_CTX_EATTR;
		cases[nc].attrs[0] = str_attr("k", "1"), cases[nc].attrs[1] = int_attr("k", 2);
		cases[nc].count = 2, cases[nc++].expect = OTEL_THREAD_CTX_EATTR;
		cases[nc].count = 1, cases[nc].null_array = 1;
		cases[nc++].expect = OTEL_THREAD_CTX_ENULL;
		cases[nc].attrs[0] = str_attr("k", "\xff"), cases[nc].count = 1;
		cases[nc++].expect = OTEL_THREAD_CTX_EUTF8;
		cases[nc].attrs[0] = str_attr("k", NULL), cases[nc].count = 1;
		cases[nc++].expect = OTEL_THREAD_CTX_ENULL;
		cases[nc].attrs[0] = str_attr("half", huge), cases[nc].count = 1;
		cases[nc++].expect = OTEL_THREAD_CTX_E2BIG;
		for (size_t i = 0; i < nc; i++) {
			struct otel_thread_ctx_process_options bo = OTEL_THREAD_CTX_PROCESS_OPTIONS_INIT;
			struct otel_thread_ctx_process_attr big = str_attr("other.half", huge);

			/* Refused, they ask for the other schema too: it must not
			 * stay behind for a later publication (below). */
			bo.schema = OTEL_THREAD_CTX_PROCESS_SCHEMA_TLS_V1;
			bo.attributes = cases[i].null_array ? NULL : cases[i].attrs;
			bo.attribute_count = cases[i].count;
			ck_assert_msg(otel_thread_ctx_process_update_with(&big, 1, &bo) == cases[i].expect,
				      "case %zu", i);
			if (cases[i].expect != OTEL_THREAD_CTX_E2BIG)
				ck_assert_otel(otel_thread_ctx_process_update_with(res, 1, &bo),
					       cases[i].expect);
			snapshot_own(&after);
			ck_assert_msg(same_publication(&before, &after), "case %zu changed it", i);
		}
		/* A key registered now republishes with the schema published. */
		key("tag.after.refusals");
		s = read_self();
		ck_assert_str_eq(s->schema_version, "tlsdesc_v1_dev");
		otel_thread_ctx_inspect_process_snapshot_free(s);
		snapshot_own(&before);
	}
	/* A caller built before `attributes` existed: whatever lies past its
	 * size is not read (here, an attribute the library would refuse), and
	 * the update publishes no attributes of its own (options.h). */
	bad[0] = str_attr("threadlocal.x", "v");
	o.attributes = bad;
	o.attribute_count = 1;
	o.size = offsetof(struct otel_thread_ctx_process_options, attributes);
	ck_assert_otel(otel_thread_ctx_process_update_with(res, 1, &o), OTEL_THREAD_CTX_OK);
	/* ... and a newer caller's unknown option is refused, changing nothing. */
	snapshot_own(&before);
	{
		union {
			struct otel_thread_ctx_process_options o;
			unsigned char bytes[sizeof(o) + 8];
		} bigger;

		memset(&bigger, 0, sizeof(bigger));
		bigger.o = o;
		bigger.o.size = sizeof(bigger.bytes);
		bigger.bytes[sizeof(o) + 3] = 1;
		ck_assert_otel(otel_thread_ctx_process_update_with(res, 1, &bigger.o),
			       OTEL_THREAD_CTX_EOPTIONS);
	}
	snapshot_own(&after);
	ck_assert(same_publication(&before, &after));

	/* update_with replaces them, the schema too, in the same mapping. */
	bad[0] = str_attr("k", "v");
	o.size = sizeof(o);
	o.schema = OTEL_THREAD_CTX_PROCESS_SCHEMA_TLS_V1;
	ck_assert_ok(otel_thread_ctx_process_update_with(res, 1, &o));
	snapshot_own(&after);
	ck_assert_ptr_eq(after.info.mapping, before.info.mapping);
	ck_assert_uint_gt(after.header.monotonic_published_at_ns,
			  before.header.monotonic_published_at_ns);
	s = read_self();
	ck_assert_uint_eq(s->attribute_count, 1);
	ck_assert_str_eq(context_attr(s, "k")->string, "v");
	ck_assert_str_eq(s->schema_version, "tls_v1");
	otel_thread_ctx_inspect_process_snapshot_free(s);
	/* Options without attributes: none. */
	o.attributes = NULL;
	o.attribute_count = 0;
	ck_assert_ok(otel_thread_ctx_process_update_with(res, 1, &o));
	s = read_self();
	ck_assert_uint_eq(s->attribute_count, 0);
	otel_thread_ctx_inspect_process_snapshot_free(s);

	/* Unpublished: update_with has nothing to replace. */
	ck_assert_ok(otel_thread_ctx_process_unpublish());
	ck_assert_otel(otel_thread_ctx_process_update_with(res, 1, &o),
		       OTEL_THREAD_CTX_ENOTPUBLISHED);
	ck_assert_otel(otel_thread_ctx_process_update_with(res, 1, NULL),
		       OTEL_THREAD_CTX_ENOTPUBLISHED);
}
END_TEST

START_TEST(read_refuses_bad_arguments_and_absent_processes)
{
	struct otel_thread_ctx_inspect_process_snapshot *s = NULL;
	int status;
	pid_t gone;

	ck_assert_otel(otel_thread_ctx_inspect_process_read(0, 0, NULL), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_inspect_process_read(-5, 0, &s), OTEL_THREAD_CTX_ESRCH);
	/* A process that has exited and been reaped. */
	gone = fork();
	ck_assert_int_ge(gone, 0);
	if (gone == 0)
		_exit(0);
	ck_assert_int_eq(waitpid(gone, &status, 0), gone);
	ck_assert_otel(otel_thread_ctx_inspect_process_read(gone, 0, &s), OTEL_THREAD_CTX_ESRCH);
	ck_assert_ptr_null(s);
	ck_assert_otel(otel_thread_ctx_inspect_process_decode(NULL, 1, &s), OTEL_THREAD_CTX_ENULL);
	ck_assert_otel(otel_thread_ctx_inspect_process_decode("", 0, NULL), OTEL_THREAD_CTX_ENULL);
}
END_TEST

/* --- The decoder ------------------------------------------------------------ */

static int decode(const struct pb *p, struct otel_thread_ctx_inspect_process_snapshot **s)
{
	*s = NULL;
	return otel_thread_ctx_inspect_process_decode(p->b, p->n, s);
}

START_TEST(decoder_follows_protobuf)
{
	static const char *const names[] = { "a", "b", "c" };
	struct otel_thread_ctx_inspect_process_snapshot *s;
	struct pb p = { { 0 }, 0 }, res = { { 0 }, 0 }, kv;

	/* Empty: valid, with nothing in it. */
	ck_assert_ok(otel_thread_ctx_inspect_process_decode("", 0, &s));
	ck_assert_ptr_null(s->schema_version);
	ck_assert_int_eq(s->key_map_present, 0);
	ck_assert_uint_eq(s->key_count + s->resource_count + s->attribute_count, 0);
	otel_thread_ctx_inspect_process_snapshot_free(s);

	/* Resource in two pieces (they merge), unknown fields of every wire
	 * type, schema given twice (the last wins), an empty key map, an
	 * other attribute, values of the types the publisher never writes. */
	kv = kv_string("service.name", "svc");
	pb_msg(&res, 1, &kv);
	pb_varint(&res, 2 << 3 | 0), pb_varint(&res, 7); /* dropped_attributes_count */
	pb_msg(&p, 1, &res);
	pb_varint(&p, 9 << 3 | 0), pb_varint(&p, 300);   /* unknown varint */
	pb_varint(&p, 10 << 3 | 1), pb_raw(&p, "12345678", 8);
	pb_varint(&p, 11 << 3 | 5), pb_raw(&p, "1234", 4);
	pb_str(&p, 12, "unknown bytes");
	kv = kv_string("threadlocal.schema_version", "old");
	pb_msg(&p, 2, &kv);
	kv = kv_string("threadlocal.schema_version", "tlsdesc_v1_dev");
	pb_msg(&p, 2, &kv);
	kv = kv_key_map(names, 0);
	pb_msg(&p, 2, &kv);
	kv = kv_key_map(names, 3);
	pb_msg(&p, 2, &kv);
	kv = kv_string("deployment.environment.name", "prod");
	pb_msg(&p, 2, &kv);
	memset(&res, 0, sizeof(res));
	kv.n = 0;
	pb_str(&kv, 1, "raw.bytes");
	{
		struct pb bytes_any = { { 0 }, 0 };

		pb_len(&bytes_any, 7, "\x00\xff", 2);
		pb_msg(&kv, 2, &bytes_any);
	}
	pb_msg(&res, 1, &kv);
	kv.n = 0;
	pb_str(&kv, 1, "an.array");
	{
		struct pb arr_any = { { 0 }, 0 }, arr = { { 0 }, 0 }, one = { { 0 }, 0 };

		pb_varint(&one, 3 << 3 | 0), pb_varint(&one, 5);
		pb_msg(&arr, 1, &one);
		pb_msg(&arr_any, 5, &arr);
		pb_msg(&kv, 2, &arr_any);
	}
	pb_msg(&res, 1, &kv);
	kv.n = 0;
	pb_str(&kv, 1, "no.value");
	pb_msg(&res, 1, &kv);
	kv.n = 0;
	pb_str(&kv, 1, "last.wins");
	{
		struct pb two = { { 0 }, 0 };

		pb_str(&two, 1, "string first");
		pb_varint(&two, 3 << 3 | 0), pb_varint(&two, (uint64_t)-1); /* int -1 */
		pb_msg(&kv, 2, &two);
	}
	pb_msg(&res, 1, &kv);
	pb_msg(&p, 1, &res);

	ck_assert_ok(decode(&p, &s));
	ck_assert_str_eq(s->schema_version, "tlsdesc_v1_dev");
	ck_assert_int_eq(s->key_map_present, 1);
	ck_assert_uint_eq(s->key_count, 3);
	ck_assert_str_eq(s->keys[0], "a");
	ck_assert_str_eq(s->keys[2], "c");
	ck_assert_uint_eq(s->attribute_count, 1);
	ck_assert_str_eq(s->attributes[0].key, "deployment.environment.name");
	ck_assert_str_eq(s->attributes[0].string, "prod");
	ck_assert_uint_eq(s->resource_count, 5);
	ck_assert_str_eq(s->resource[0].string, "svc");
	ck_assert_int_eq(s->resource[1].type, OTEL_THREAD_CTX_PROCESS_BYTES);
	ck_assert_uint_eq(s->resource[1].length, 2);
	ck_assert_mem_eq(s->resource[1].string, "\x00\xff", 3);
	ck_assert_int_eq(s->resource[2].type, OTEL_THREAD_CTX_PROCESS_ARRAY);
	ck_assert_uint_eq(s->resource[2].length, 4); /* values { int_value: 5 } */
	ck_assert_int_eq(s->resource[3].type, OTEL_THREAD_CTX_PROCESS_EMPTY);
	ck_assert_int_eq(s->resource[4].type, OTEL_THREAD_CTX_PROCESS_INT);
	ck_assert_int_eq(s->resource[4].int_value, -1);
	otel_thread_ctx_inspect_process_snapshot_free(s);
}
END_TEST

/* threadlocal.* among the resource attributes: used when the attributes
 * lack them, and never over them. */
START_TEST(decoder_falls_back_to_threadlocal_resource_attributes)
{
	static const char *const in_resource[] = { "r0", "r1" };
	static const char *const in_attributes[] = { "a0" };
	struct otel_thread_ctx_inspect_process_snapshot *s;
	struct pb p = { { 0 }, 0 }, res = { { 0 }, 0 }, kv;

	kv = kv_string("threadlocal.schema_version", "tlsdesc_v1_dev");
	pb_msg(&res, 1, &kv);
	kv = kv_key_map(in_resource, 2);
	pb_msg(&res, 1, &kv);
	pb_msg(&p, 1, &res);
	ck_assert_ok(decode(&p, &s));
	ck_assert_str_eq(s->schema_version, "tlsdesc_v1_dev");
	ck_assert_uint_eq(s->key_count, 2);
	ck_assert_str_eq(s->keys[1], "r1");
	ck_assert_uint_eq(s->resource_count, 2); /* still resource attributes */
	otel_thread_ctx_inspect_process_snapshot_free(s);

	kv = kv_key_map(in_attributes, 1);
	pb_msg(&p, 2, &kv);
	ck_assert_ok(decode(&p, &s));
	ck_assert_uint_eq(s->key_count, 1);
	ck_assert_str_eq(s->keys[0], "a0");
	otel_thread_ctx_inspect_process_snapshot_free(s);

	/* Malformed in the resource: an ordinary attribute, no key map. */
	memset(&p, 0, sizeof(p));
	memset(&res, 0, sizeof(res));
	kv = kv_string("threadlocal.attribute_key_map", "not an array");
	pb_msg(&res, 1, &kv);
	pb_msg(&p, 1, &res);
	ck_assert_ok(decode(&p, &s));
	ck_assert_int_eq(s->key_map_present, 0);
	ck_assert_uint_eq(s->resource_count, 1);
	otel_thread_ctx_inspect_process_snapshot_free(s);
}
END_TEST

START_TEST(decoder_rejects_malformed_payloads)
{
	static const char *const one[] = { "k" };
	static const char *names[257];
	struct otel_thread_ctx_inspect_process_snapshot *s;
	struct pb p, kv, any, arr, item;
	char nul_name[4] = "k\0x";

	/* Wire-level garbage. */
	static const struct {
		const char *what;
		const char *bytes;
		size_t n;
	} raw[] = {
		{ "truncated varint tag", "\x80", 1 },
		{ "11-byte varint", "\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12 },
		{ "10th varint byte above 1", "\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02", 11 },
		{ "tag above 32 bits", "\x80\x80\x80\x80\x80\x01", 6 },
		{ "field number 0", "\x02\x00", 2 },
		{ "start group", "\x0b", 1 },
		{ "end group", "\x0c", 1 },
		{ "wire type 6", "\x0e", 1 },
		{ "wire type 7", "\x0f", 1 },
		{ "length past the end", "\x0a\x05\x00", 3 },
		{ "huge length", "\x0a\xff\xff\xff\xff\x0f", 6 },
		{ "truncated fixed64", "\x49\x01\x02", 3 },
		{ "truncated fixed32", "\x4d\x01", 2 },
		{ "resource as varint", "\x08\x01", 2 },
		{ "attributes as fixed64", "\x11\x00\x00\x00\x00\x00\x00\x00\x00", 9 },
		{ "resource with a bad KeyValue", "\x0a\x04\x0a\x02\x08\x01", 6 },
		{ "KeyValue key as varint", "\x12\x02\x08\x01", 4 },
		{ "string_value as varint", "\x12\x04\x12\x02\x08\x01", 6 },
		{ "bool_value as LEN", "\x12\x04\x12\x02\x12\x00", 6 },
		{ "double_value as varint", "\x12\x04\x12\x02\x20\x01", 6 },
		{ "key not UTF-8", "\x12\x03\x0a\x01\xff", 5 },
		{ "string value not UTF-8", "\x12\x06\x12\x04\x0a\x02\xc3\x28", 8 },
	};

	for (size_t i = 0; i < sizeof(raw) / sizeof(raw[0]); i++) {
		s = (void *)1;
		ck_assert_msg(otel_thread_ctx_inspect_process_decode(raw[i].bytes, raw[i].n, &s) ==
				      OTEL_THREAD_CTX_EDECODE,
			      "%s: not refused", raw[i].what);
		ck_assert_ptr_eq(s, (void *)1); /* *out untouched on error */
	}

	/* The thread-context entries, strictly. */
	memset(&p, 0, sizeof(p));
	memset(&kv, 0, sizeof(kv));
	pb_str(&kv, 1, "threadlocal.schema_version");
	memset(&any, 0, sizeof(any));
	pb_len(&any, 1, "v\0", 2);
	pb_msg(&kv, 2, &any);
	pb_msg(&p, 2, &kv);
	ck_assert_otel(decode(&p, &s), OTEL_THREAD_CTX_EDECODE); /* NUL in schema */

	memset(&p, 0, sizeof(p));
	memset(&kv, 0, sizeof(kv));
	memset(&any, 0, sizeof(any));
	pb_str(&kv, 1, "threadlocal.schema_version");
	pb_varint(&any, 3 << 3 | 0), pb_varint(&any, 1);
	pb_msg(&kv, 2, &any);
	pb_msg(&p, 2, &kv);
	ck_assert_otel(decode(&p, &s), OTEL_THREAD_CTX_EDECODE); /* schema not a string */

	memset(&p, 0, sizeof(p));
	kv = kv_string("threadlocal.attribute_key_map", "not an array");
	pb_msg(&p, 2, &kv);
	ck_assert_otel(decode(&p, &s), OTEL_THREAD_CTX_EDECODE);

	/* An entry that is not a string. */
	memset(&p, 0, sizeof(p));
	memset(&kv, 0, sizeof(kv));
	memset(&any, 0, sizeof(any));
	memset(&arr, 0, sizeof(arr));
	memset(&item, 0, sizeof(item));
	pb_varint(&item, 3 << 3 | 0), pb_varint(&item, 7);
	pb_msg(&arr, 1, &item);
	pb_msg(&any, 5, &arr);
	pb_str(&kv, 1, "threadlocal.attribute_key_map");
	pb_msg(&kv, 2, &any);
	pb_msg(&p, 2, &kv);
	ck_assert_otel(decode(&p, &s), OTEL_THREAD_CTX_EDECODE);

	/* A name with a NUL. */
	memset(&p, 0, sizeof(p));
	memset(&kv, 0, sizeof(kv));
	memset(&any, 0, sizeof(any));
	memset(&arr, 0, sizeof(arr));
	memset(&item, 0, sizeof(item));
	pb_len(&item, 1, nul_name, 3);
	pb_msg(&arr, 1, &item);
	pb_msg(&any, 5, &arr);
	pb_str(&kv, 1, "threadlocal.attribute_key_map");
	pb_msg(&kv, 2, &any);
	pb_msg(&p, 2, &kv);
	ck_assert_otel(decode(&p, &s), OTEL_THREAD_CTX_EDECODE);

	/* 256 names are fine, 257 are not. */
	for (size_t i = 0; i < 257; i++)
		names[i] = "k";
	memset(&p, 0, sizeof(p));
	kv = kv_key_map(names, 256);
	pb_msg(&p, 2, &kv);
	ck_assert_ok(decode(&p, &s));
	ck_assert_uint_eq(s->key_count, 256);
	otel_thread_ctx_inspect_process_snapshot_free(s);
	memset(&p, 0, sizeof(p));
	kv = kv_key_map(names, 257);
	pb_msg(&p, 2, &kv);
	ck_assert_otel(decode(&p, &s), OTEL_THREAD_CTX_EDECODE);

	/* Good control, then sizes. */
	memset(&p, 0, sizeof(p));
	kv = kv_key_map(one, 1);
	pb_msg(&p, 2, &kv);
	ck_assert_ok(decode(&p, &s));
	otel_thread_ctx_inspect_process_snapshot_free(s);
	{
		static uint8_t big[OTEL_THREAD_CTX_PROCESS_PAYLOAD_MAX + 1];

		ck_assert_otel(otel_thread_ctx_inspect_process_decode(big, sizeof(big), &s), OTEL_THREAD_CTX_E2BIG);
	}
}
END_TEST

/* Deterministic pseudo-random numbers for the sweeps. */
static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint32_t rng(void)
{
	rng_state = rng_state * 6364136223846793005u + 1442695040888963407u;
	return (uint32_t)(rng_state >> 33);
}

/* The result must be OK or EDECODE, and an OK snapshot consistent. */
static void decode_any(const void *bytes, size_t n, unsigned long *ok, unsigned long *bad)
{
	struct otel_thread_ctx_inspect_process_snapshot *s = NULL;
	int rc = otel_thread_ctx_inspect_process_decode(bytes, n, &s);

	ck_assert_msg(rc == OTEL_THREAD_CTX_OK || rc == OTEL_THREAD_CTX_EDECODE,
		      "decode returned %d", rc);
	if (rc != OTEL_THREAD_CTX_OK) {
		++*bad;
		return;
	}
	++*ok;
	ck_assert_uint_le(s->key_count, 256);
	for (size_t i = 0; i < s->key_count; i++)
		ck_assert_uint_eq(strlen(s->keys[i]), strnlen(s->keys[i], 300));
	for (size_t i = 0; i < s->resource_count; i++)
		ck_assert_ptr_nonnull(s->resource[i].key);
	otel_thread_ctx_inspect_process_snapshot_free(s);
}

START_TEST(decoder_survives_every_truncation_and_bit_flip)
{
	struct otel_thread_ctx_process_info info;
	static uint8_t copy[8192];
	unsigned long ok = 0, bad = 0;
	uint32_t n;

	key("http.route");
	key("tag.sweep.\xc3\xa9");
	publish_service();
	ck_assert_ok(otel_thread_ctx_process_query(&info));
	n = info.payload_size;
	ck_assert_uint_le(n, sizeof(copy));
	memcpy(copy, info.payload, n);
	ck_assert_ok(otel_thread_ctx_process_unpublish());

	/* Every prefix: a prefix that ends between fields is a valid message. */
	for (uint32_t len = 0; len <= n; len++)
		decode_any(copy, len, &ok, &bad);
	ck_assert_uint_gt(bad, 0);
	/* Every single bit flipped. */
	for (uint32_t bit = 0; bit < n * 8; bit++) {
		copy[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		decode_any(copy, n, &ok, &bad);
		copy[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
	/* Random bytes, and random splices of the real payload. */
	for (unsigned long i = 0; i < env_count("OTEL_TEST_DECODE_RANDOM", 3000); i++) {
		size_t len = rng() % (n + 16);
		uint8_t buf[8192 + 16];

		for (size_t k = 0; k < len; k++)
			buf[k] = (i & 1) ? (uint8_t)rng() : copy[(k + rng() % 4) % n];
		decode_any(buf, len, &ok, &bad);
	}
	printf("decoder sweep over a %u-byte payload: %lu accepted, %lu refused\n", n, ok, bad);
}
END_TEST

Suite *test_suite(void)
{
	const struct test_case cases[] = {
		{ "publish_creates_the_mapping_spec_describes",
		  publish_creates_the_mapping_spec_describes },
		{ "read_returns_what_was_published", read_returns_what_was_published },
		{ "a_new_key_republishes_by_the_update_protocol",
		  a_new_key_republishes_by_the_update_protocol },
		{ "update_replaces_the_resource", update_replaces_the_resource },
		{ "errors_leave_the_publication_intact", errors_leave_the_publication_intact },
		{ "a_key_that_does_not_fit_is_not_registered",
		  a_key_that_does_not_fit_is_not_registered },
		{ "unpublish_removes_the_mapping", unpublish_removes_the_mapping },
		{ "fork_drops_the_context_in_the_child", fork_drops_the_context_in_the_child },
		{ "fork_republishes_when_asked", fork_republishes_when_asked },
		{ "a_child_without_fork_handlers_has_nothing_of_the_parent",
		  a_child_without_fork_handlers_has_nothing_of_the_parent },
		{ "schema_version_is_chosen_at_publish", schema_version_is_chosen_at_publish },
		{ "process_attributes_are_published_and_kept",
		  process_attributes_are_published_and_kept },
		{ "read_refuses_bad_arguments_and_absent_processes",
		  read_refuses_bad_arguments_and_absent_processes },
		{ "decoder_follows_protobuf", decoder_follows_protobuf },
		{ "decoder_falls_back_to_threadlocal_resource_attributes",
		  decoder_falls_back_to_threadlocal_resource_attributes },
		{ "decoder_rejects_malformed_payloads", decoder_rejects_malformed_payloads },
		{ "decoder_survives_every_truncation_and_bit_flip",
		  decoder_survives_every_truncation_and_bit_flip },
	};

	return MAKE_SUITE("process-ctx", cases, 60);
}
