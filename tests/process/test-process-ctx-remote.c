/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reading the process context of other processes: a child that publishes,
 * a forked child that republishes, a writer adding keys and changing its
 * resource at full speed while this process polls (no torn payload is ever
 * accepted), hostile mappings, and a process we may not read.
 * Needs process_vm_readv() on a child: skipped (77) where it is missing,
 * as under qemu-user (the child of that probe is made without the library's
 * fork handlers, and a crash fails the test: probe.h).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "pctx.h"
#include "probe.h"

static struct published_ctx before, after;

/* A child that runs `setup`, reports `len` bytes of `report` on a pipe, then
 * waits until the parent closes its end. */
struct child {
	pid_t pid;
	int report_fd; /* read end: what the child reports */
	int hold_fd;   /* write end: closing it lets the child exit */
	int cmd_fd;    /* write end: commands, one byte each */
};

typedef int (*child_fn)(int report_fd, int cmd_fd);

static void start_child(struct child *c, child_fn fn)
{
	int report[2], hold[2];

	ck_assert_int_eq(pipe(report), 0);
	ck_assert_int_eq(pipe(hold), 0);
	fflush(NULL);
	c->pid = fork();
	ck_assert_int_ge(c->pid, 0);
	if (c->pid == 0) {
		int rc;

		close(report[0]);
		close(hold[1]);
		rc = fn(report[1], hold[0]);
		close(report[1]);
		/* Stay until told (EOF), so that the parent reads a live process. */
		while (rc == 0) {
			char b;
			ssize_t n = read(hold[0], &b, 1);

			if (n <= 0)
				break;
		}
		_exit(rc == 0 ? 0 : 1);
	}
	close(report[1]);
	close(hold[0]);
	c->report_fd = report[0];
	c->hold_fd = hold[1];
	c->cmd_fd = hold[1];
}

static void expect(struct child *c, void *buf, size_t len)
{
	ck_assert_int_eq(read(c->report_fd, buf, len), (ssize_t)len);
}

static void finish_child(struct child *c)
{
	int status;

	close(c->hold_fd);
	close(c->report_fd);
	ck_assert_int_eq(waitpid(c->pid, &status, 0), c->pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
}

/* Reports 'r' (its fork handlers have run by then), then serves commands:
 * 'u' updates the resource, then the child reports 'd'. */
static int serve_commands(int report_fd, int cmd_fd)
{
	char b;

	CHECK(write(report_fd, "r", 1) == 1);
	while (read(cmd_fd, &b, 1) == 1) {
		if (b == 'u') {
			struct otel_thread_ctx_process_attr a[2] = {
				str_attr("service.name", "checkout"),
				str_attr("service.instance.id", "child-instance"),
			};

			CHECK_RC(otel_thread_ctx_process_update(a, 2), OTEL_THREAD_CTX_OK);
			CHECK(write(report_fd, "d", 1) == 1);
		}
	}
	return 0;
}

static int remote_publisher(int report_fd, int cmd_fd)
{
	struct otel_thread_ctx_process_attr a[2] = { str_attr("service.name", "remote-child"),
					      int_attr("process.pid", getpid()) };
	struct otel_thread_ctx_process_info info;
	unsigned int idx;

	(void)cmd_fd;
	CHECK_RC(otel_thread_ctx_key_register("remote.first", &idx), OTEL_THREAD_CTX_OK);
	CHECK_RC(otel_thread_ctx_process_publish(a, 2), OTEL_THREAD_CTX_OK);
	CHECK_RC(otel_thread_ctx_key_register("remote.second", &idx), OTEL_THREAD_CTX_OK);
	CHECK_RC(otel_thread_ctx_process_query(&info), OTEL_THREAD_CTX_OK);
	CHECK(write(report_fd, &info, sizeof(info)) == (ssize_t)sizeof(info));
	CHECK(write(report_fd, &idx, sizeof(idx)) == (ssize_t)sizeof(idx));
	return 0;
}

START_TEST(reads_another_process)
{
	struct otel_thread_ctx_inspect_process_snapshot *s = NULL;
	struct otel_thread_ctx_process_info info;
	unsigned int second;
	struct child c;

	start_child(&c, remote_publisher);
	expect(&c, &info, sizeof(info));
	expect(&c, &second, sizeof(second));
	ck_assert_ok(otel_thread_ctx_inspect_process_read(c.pid, 0, &s));
	ck_assert_uint_eq(s->mapping_address, (uintptr_t)info.mapping);
	ck_assert_uint_eq(s->payload_address, (uintptr_t)info.payload);
	ck_assert_uint_eq(s->monotonic_published_at_ns, info.monotonic_published_at_ns);
	ck_assert_str_eq(s->schema_version, "tlsdesc_v1_dev");
	ck_assert_uint_eq(s->key_count, second + 1);
	ck_assert_str_eq(s->keys[second - 1], "remote.first");
	ck_assert_str_eq(s->keys[second], "remote.second");
	ck_assert_str_eq(resource_attr(s, "service.name")->string, "remote-child");
	ck_assert_int_eq(resource_attr(s, "process.pid")->int_value, c.pid);
	otel_thread_ctx_inspect_process_snapshot_free(s);
	finish_child(&c);
}
END_TEST

/* A payload of exactly OTEL_THREAD_CTX_PROCESS_PAYLOAD_MAX bytes (the eBPF
 * profiler's limit), one string filling it; reports its query() and the
 * value's length. */
static char max_value[OTEL_THREAD_CTX_PROCESS_PAYLOAD_MAX];

static int max_payload_publisher(int report_fd, int cmd_fd)
{
	struct otel_thread_ctx_process_attr a = str_attr("fill", max_value);
	struct otel_thread_ctx_process_info info;
	size_t len = OTEL_THREAD_CTX_PROCESS_PAYLOAD_MAX / 2;

	(void)cmd_fd;
	memset(max_value, 'm', len);
	CHECK_RC(otel_thread_ctx_process_publish(&a, 1), OTEL_THREAD_CTX_OK);
	CHECK_RC(otel_thread_ctx_process_query(&info), OTEL_THREAD_CTX_OK);
	/* Grow the value by what the payload lacks (its length's varint is 3
	 * bytes at both sizes). */
	len += OTEL_THREAD_CTX_PROCESS_PAYLOAD_MAX - info.payload_size;
	memset(max_value, 'm', len);
	max_value[len] = '\0';
	CHECK_RC(otel_thread_ctx_process_update(&a, 1), OTEL_THREAD_CTX_OK);
	CHECK_RC(otel_thread_ctx_process_query(&info), OTEL_THREAD_CTX_OK);
	CHECK(info.payload_size == OTEL_THREAD_CTX_PROCESS_PAYLOAD_MAX);
	CHECK(write(report_fd, &info, sizeof(info)) == (ssize_t)sizeof(info));
	CHECK(write(report_fd, &len, sizeof(len)) == (ssize_t)sizeof(len));
	return 0;
}

/* The largest payload a publisher may make is read back whole, from
 * another process (the Python and Rust readers call this reader). */
START_TEST(reads_a_payload_of_the_maximum_size)
{
	struct otel_thread_ctx_inspect_process_snapshot *s = NULL;
	struct otel_thread_ctx_process_info info;
	const struct otel_thread_ctx_process_attr *fill;
	size_t len;
	struct child c;

	start_child(&c, max_payload_publisher);
	expect(&c, &info, sizeof(info));
	expect(&c, &len, sizeof(len));
	ck_assert_uint_eq(info.payload_size, OTEL_THREAD_CTX_PROCESS_PAYLOAD_MAX);
	ck_assert_ok(otel_thread_ctx_inspect_process_read(c.pid, 0, &s));
	ck_assert_uint_eq(s->payload_size, OTEL_THREAD_CTX_PROCESS_PAYLOAD_MAX);
	ck_assert_uint_eq(s->payload_address, (uintptr_t)info.payload);
	fill = resource_attr(s, "fill");
	ck_assert_ptr_nonnull(fill);
	ck_assert_uint_eq(strlen(fill->string), len);
	ck_assert_uint_eq(strspn(fill->string, "m"), len);
	otel_thread_ctx_inspect_process_snapshot_free(s);
	finish_child(&c);
}
END_TEST

START_TEST(the_parent_reads_its_forked_child)
{
	struct otel_thread_ctx_inspect_process_snapshot *s = NULL, *mine = NULL;
	struct otel_thread_ctx_process_attr a = str_attr("service.name", "checkout");
	struct child c;
	char done;

	struct otel_thread_ctx_process_options o = OTEL_THREAD_CTX_PROCESS_OPTIONS_INIT;

	ck_assert_ok(otel_thread_ctx_process_unpublish());
	o.on_fork = OTEL_THREAD_CTX_PROCESS_FORK_REPUBLISH;
	ck_assert_ok(otel_thread_ctx_process_publish_with(&a, 1, &o));
	snapshot_own(&before);
	start_child(&c, serve_commands);
	expect(&c, &done, 1);

	/* The child republished the same payload in its own mapping (the
	 * publisher asked for FORK_REPUBLISH). */
	ck_assert_ok(otel_thread_ctx_inspect_process_read(c.pid, 0, &s));
	ck_assert_uint_eq(s->payload_size, before.header.payload_size);
	ck_assert_mem_eq(s->payload, before.payload, s->payload_size);
	ck_assert_uint_gt(s->monotonic_published_at_ns, before.header.monotonic_published_at_ns);
	otel_thread_ctx_inspect_process_snapshot_free(s);

	/* The child changes its context; ours stays. */
	ck_assert_int_eq(write(c.cmd_fd, "u", 1), 1);
	expect(&c, &done, 1);
	ck_assert_ok(otel_thread_ctx_inspect_process_read(c.pid, 0, &s));
	ck_assert_str_eq(resource_attr(s, "service.instance.id")->string, "child-instance");
	ck_assert_ok(otel_thread_ctx_inspect_process_read(0, 0, &mine));
	ck_assert_ptr_null(resource_attr(mine, "service.instance.id"));
	ck_assert_uint_eq(mine->mapping_address, (uintptr_t)before.info.mapping);
	snapshot_own(&after);
	ck_assert(same_publication(&before, &after));
	otel_thread_ctx_inspect_process_snapshot_free(s);
	otel_thread_ctx_inspect_process_snapshot_free(mine);
	finish_child(&c);
	ck_assert_ok(otel_thread_ctx_process_unpublish());
}
END_TEST

/*
 * The torture: a writer child makes `updates` changes as fast as it can:
 * most change the resource (a sequence number and a fill string whose
 * length and bytes follow from it), and 256 spread among them register a
 * key.  This process reads the child's context in a loop meanwhile.  Any
 * accepted snapshot must be exactly some state the writer published.
 */
#define FILL_MAX 3001

static size_t make_fill(char *out, uint64_t seq)
{
	size_t len = 1 + (size_t)(seq * 7919u % (FILL_MAX - 1));

	for (size_t j = 0; j < len; j++)
		out[j] = (char)('a' + (seq + j) % 26);
	out[len] = '\0';
	return len;
}

static void torn_key_name(char *out, size_t cap, unsigned int i)
{
	snprintf(out, cap, "torn.key.%03u", i);
}

/* The writer: 256 keys spread over the first `key_phase` updates, then
 * updates until the reader says stop ('s') or `budget` updates are done. */
static unsigned long key_phase, budget;

static int torn_writer(int report_fd, int cmd_fd)
{
	static char fill[FILL_MAX + 1];
	struct otel_thread_ctx_process_attr a[2] = { int_attr("seq", 0), str_attr("fill", fill) };
	unsigned int base = otel_thread_ctx_key_count(), keys = 0, idx;
	struct pollfd stop = { cmd_fd, POLLIN, 0 };
	uint64_t seq;
	char name[32];

	make_fill(fill, 0);
	CHECK_RC(otel_thread_ctx_process_publish(a, 2), OTEL_THREAD_CTX_OK);
	CHECK(write(report_fd, &base, sizeof(base)) == (ssize_t)sizeof(base));
	for (seq = 1; seq <= budget; seq++) {
		while (seq <= key_phase && (uint64_t)keys * key_phase < seq * (256 - base)) {
			torn_key_name(name, sizeof(name), keys);
			CHECK_RC(otel_thread_ctx_key_register(name, &idx), OTEL_THREAD_CTX_OK);
			keys++;
		}
		a[0].int_value = (int64_t)seq;
		make_fill(fill, seq);
		CHECK_RC(otel_thread_ctx_process_update(a, 2), OTEL_THREAD_CTX_OK);
		if (seq >= key_phase && seq % 64 == 0 && poll(&stop, 1, 0) == 1) {
			char b;

			CHECK(read(cmd_fd, &b, 1) == 1 && b == 's');
			break;
		}
	}
	if (seq > budget)
		seq = budget;
	/* Done: the final state stays published until the parent lets go. */
	CHECK(write(report_fd, &keys, sizeof(keys)) == (ssize_t)sizeof(keys));
	CHECK(write(report_fd, &seq, sizeof(seq)) == (ssize_t)sizeof(seq));
	return 0;
}

struct torn_stats {
	unsigned long reads, accepted, retries, changing, torn;
	int64_t last_seq;
	size_t last_keys;
	char first_torn[160];
};

/* 1 when s is exactly a state the writer published (and not older than
 * what was seen before). */
static int consistent(const struct otel_thread_ctx_inspect_process_snapshot *s, unsigned int base,
		      struct torn_stats *st)
{
	static char fill[FILL_MAX + 1];
	const struct otel_thread_ctx_process_attr *seq, *got;
	char name[32];
	size_t len;

#define TORN(...) \
	(st->torn == 0 ? snprintf(st->first_torn, sizeof(st->first_torn), __VA_ARGS__) : 0, 0)
	if (s->schema_version == NULL || strcmp(s->schema_version, "tlsdesc_v1_dev") != 0)
		return TORN("schema version");
	if (s->resource_count != 2 || s->attribute_count != 0 || !s->key_map_present)
		return TORN("%zu resource attributes", s->resource_count);
	seq = resource_attr(s, "seq");
	got = resource_attr(s, "fill");
	if (seq == NULL || seq->type != OTEL_THREAD_CTX_PROCESS_INT || got == NULL)
		return TORN("attributes missing");
	len = make_fill(fill, (uint64_t)seq->int_value);
	if (got->length != len || memcmp(got->string, fill, len) != 0)
		return TORN("fill of seq %lld", (long long)seq->int_value);
	if (seq->int_value < st->last_seq || s->key_count < st->last_keys)
		return TORN("went back in time");
	if (s->key_count < base || s->key_count > 256)
		return TORN("%zu keys", s->key_count);
	for (size_t i = base; i < s->key_count; i++) {
		torn_key_name(name, sizeof(name), (unsigned int)(i - base));
		if (strcmp(s->keys[i], name) != 0)
			return TORN("key %zu is %s", i, s->keys[i]);
	}
#undef TORN
	st->last_seq = seq->int_value;
	st->last_keys = s->key_count;
	return 1;
}

/* Most reads go straight to the mapping found before, so that most
 * of the reader's time is spent copying, where tearing could happen. */
static void poll_once(pid_t pid, unsigned int base, struct torn_stats *st)
{
	static uint64_t mapping;
	struct otel_thread_ctx_inspect_process_snapshot *s = NULL;
	int rc = (st->reads % 8 != 0 && mapping != 0) ?
			 otel_thread_ctx_inspect_process_read_at(pid, mapping, 0, &s) :
			 otel_thread_ctx_inspect_process_read(pid, 0, &s);

	st->reads++;
	if (rc == OTEL_THREAD_CTX_EAGAIN) {
		st->changing++;
		return;
	}
	if (rc == OTEL_THREAD_CTX_EDECODE) {
		/* Bytes from different states that passed the protocol. */
		if (st->torn++ == 0)
			snprintf(st->first_torn, sizeof(st->first_torn), "undecodable copy");
		return;
	}
	ck_assert_msg(rc == OTEL_THREAD_CTX_OK, "read returned %d (%s)", rc,
		      otel_thread_ctx_strerror(rc));
	st->accepted++;
	st->retries += s->retries;
	mapping = s->mapping_address;
	if (!consistent(s, base, st))
		st->torn++;
	otel_thread_ctx_inspect_process_snapshot_free(s);
}

/*
 * The reader polls until the writer is through its key phase and the
 * protocol had to act at least `enough` times (copies retried, or torn ones
 * let through), so that a run always includes real races; a broken
 * protocol then shows up as torn payloads, not as luck.
 */
START_TEST(a_reader_never_accepts_a_torn_payload)
{
	struct torn_stats st;
	struct pollfd pfd;
	unsigned int base, keys;
	unsigned long enough = env_count("OTEL_TEST_PCTX_RACES", 16);
	uint64_t last;
	struct child c;
	int told = 0;

	memset(&st, 0, sizeof(st));
	st.last_seq = -1;
	key_phase = env_count("OTEL_TEST_PCTX_UPDATES", 10000);
	budget = 40 * key_phase;
	ck_assert_ok(otel_thread_ctx_process_unpublish());
	start_child(&c, torn_writer);
	expect(&c, &base, sizeof(base));
	pfd.fd = c.report_fd;
	pfd.events = POLLIN;
	/* Every 8th read searches /proc/PID/maps; the others go to the
	 * address found, so that the reader spends its time copying. */
	while (poll(&pfd, 1, 0) == 0) {
		poll_once(c.pid, base, &st);
		if (!told && st.last_keys == 256 && st.retries + st.torn >= enough) {
			ck_assert_int_eq(write(c.cmd_fd, "s", 1), 1);
			told = 1;
		}
	}
	expect(&c, &keys, sizeof(keys));
	expect(&c, &last, sizeof(last));
	/* The final state, read at rest. */
	poll_once(c.pid, base, &st);
	printf("torn-read torture: %llu updates, %u keys added; %lu reads: %lu accepted, "
	       "%lu retried copies, %lu gave up (EAGAIN), %lu torn%s%s\n",
	       (unsigned long long)last, keys, st.reads, st.accepted, st.retries, st.changing,
	       st.torn, st.torn ? "; first: " : "", st.first_torn);
	fflush(stdout);
	ck_assert_msg(st.torn == 0, "%lu torn payloads accepted (first: %s)", st.torn,
		      st.first_torn);
	ck_assert_int_eq(st.last_seq, (int64_t)last);
	ck_assert_uint_eq(st.last_keys, base + keys);
	ck_assert_uint_eq(base + keys, 256);
	finish_child(&c);
}
END_TEST

/* --- Hostile mappings ------------------------------------------------------ */

enum hostile {
	H_GOOD,
	H_PAYLOAD_IN_MAPPING,
	H_DECOY_FIRST,
	H_BAD_SIGNATURE,
	H_VERSION_1,
	H_SIZE_ZERO,
	H_SIZE_HUGE,
	H_NULL_PAYLOAD,
	H_UNMAPPED_PAYLOAD,
	H_STUCK_UPDATING,
	H_GARBAGE_PAYLOAD,
	H_TIMESTAMP_RACING,
	H_NONE,
	H_COUNT
};

static const struct {
	const char *what;
	int expect;
	int or_else; /* a second acceptable result, or expect again */
} hostile_cases[H_COUNT] = {
	[H_GOOD] = { "well-formed", OTEL_THREAD_CTX_OK, OTEL_THREAD_CTX_OK },
	[H_PAYLOAD_IN_MAPPING] = { "payload after the header", OTEL_THREAD_CTX_OK, OTEL_THREAD_CTX_OK },
	[H_DECOY_FIRST] = { "an invalid OTEL_CTX_OLD mapping first", OTEL_THREAD_CTX_OK,
			    OTEL_THREAD_CTX_OK },
	[H_BAD_SIGNATURE] = { "bad signature", OTEL_THREAD_CTX_EFORMAT, OTEL_THREAD_CTX_EFORMAT },
	[H_VERSION_1] = { "version 1", OTEL_THREAD_CTX_EFORMAT, OTEL_THREAD_CTX_EFORMAT },
	[H_SIZE_ZERO] = { "payload size 0", OTEL_THREAD_CTX_EFORMAT, OTEL_THREAD_CTX_EFORMAT },
	[H_SIZE_HUGE] = { "payload size above the limit", OTEL_THREAD_CTX_EFORMAT,
			  OTEL_THREAD_CTX_EFORMAT },
	[H_NULL_PAYLOAD] = { "NULL payload", OTEL_THREAD_CTX_EFORMAT, OTEL_THREAD_CTX_EFORMAT },
	[H_UNMAPPED_PAYLOAD] = { "payload in unmapped memory", OTEL_THREAD_CTX_EFAULT,
				 OTEL_THREAD_CTX_EFAULT },
	[H_STUCK_UPDATING] = { "timestamp stuck at 0", OTEL_THREAD_CTX_EAGAIN,
			       OTEL_THREAD_CTX_EAGAIN },
	[H_GARBAGE_PAYLOAD] = { "garbage payload", OTEL_THREAD_CTX_EDECODE, OTEL_THREAD_CTX_EDECODE },
	[H_TIMESTAMP_RACING] = { "timestamp changing all the time", OTEL_THREAD_CTX_EAGAIN,
				 OTEL_THREAD_CTX_OK },
	[H_NONE] = { "no mapping", OTEL_THREAD_CTX_ENOENT, OTEL_THREAD_CTX_ENOENT },
};

static enum hostile hostile_case;

static struct pb good_payload(void)
{
	static const char *const names[] = { "http.route", "http.method" };
	struct pb p = { { 0 }, 0 }, res = { { 0 }, 0 }, kv;

	kv = kv_string("service.name", "foreign");
	pb_msg(&res, 1, &kv);
	pb_msg(&p, 1, &res);
	kv = kv_string("threadlocal.schema_version", "tlsdesc_v1_dev");
	pb_msg(&p, 2, &kv);
	kv = kv_key_map(names, 2);
	pb_msg(&p, 2, &kv);
	return p;
}

/* A memfd mapping called `name`; with `below`, at a free address under it
 * (so that /proc/PID/maps lists it first). */
/* A page of a memfd named `name`, anywhere, or at `at` (inside a range this
 * process reserved). */
static struct otel_thread_ctx_process_header *fake_mapping(const char *name, void *at)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	int fd = memfd_create(name, MFD_CLOEXEC);
	void *p = MAP_FAILED;

	if (fd >= 0 && ftruncate(fd, (off_t)page) == 0)
		p = mmap(at, page, PROT_READ | PROT_WRITE, MAP_SHARED | (at ? MAP_FIXED : 0), fd, 0);
	if (fd >= 0)
		close(fd);
	return p == MAP_FAILED ? NULL : p;
}

static void fill_header(struct otel_thread_ctx_process_header *h, const void *payload, size_t n)
{
	memcpy(h->signature, "OTEL_CTX", 8);
	h->version = 2;
	h->payload_size = (uint32_t)n;
	h->payload = (uint64_t)(uintptr_t)payload;
	h->monotonic_published_at_ns = 12345;
}

static int hostile_publisher(int report_fd, int cmd_fd)
{
	static struct pb payload;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct otel_thread_ctx_process_header *h = NULL, *decoy = NULL;
	uint64_t good_at = 0;

	(void)cmd_fd;
	payload = good_payload();
	if (hostile_case == H_DECOY_FIRST) {
		/* Two pages reserved together, so that the decoy is below the
		 * real mapping and /proc/PID/maps lists it first (no guessing
		 * of free addresses, which sanitizers' layouts defeat). */
		char *two = mmap(NULL, 2 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		CHECK(two != MAP_FAILED);
		decoy = fake_mapping("OTEL_CTX_OLD", two);
		h = fake_mapping("OTEL_CTX", two + page);
		CHECK(decoy != NULL && h != NULL && decoy < h);
		fill_header(h, payload.b, payload.n);
		good_at = (uintptr_t)h;
	} else if (hostile_case != H_NONE) {
		h = fake_mapping("OTEL_CTX", NULL);
		CHECK(h != NULL);
		fill_header(h, payload.b, payload.n);
		good_at = (uintptr_t)h;
	}
	switch (hostile_case) {
	case H_GOOD:
	case H_NONE:
		break;
	case H_PAYLOAD_IN_MAPPING:
		memcpy(h + 1, payload.b, payload.n);
		h->payload = (uint64_t)(uintptr_t)(h + 1);
		break;
	case H_DECOY_FIRST:
		memcpy(decoy->signature, "OLD_CTX!", 8);
		break;
	case H_BAD_SIGNATURE:
		memcpy(h->signature, "OTEL_CTY", 8);
		break;
	case H_VERSION_1:
		h->version = 1;
		break;
	case H_SIZE_ZERO:
		h->payload_size = 0;
		break;
	case H_SIZE_HUGE:
		h->payload_size = OTEL_THREAD_CTX_PROCESS_PAYLOAD_MAX + 1;
		break;
	case H_NULL_PAYLOAD:
		h->payload = 0;
		break;
	case H_UNMAPPED_PAYLOAD: {
		void *gone = mmap(NULL, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		CHECK(gone != MAP_FAILED && munmap(gone, page) == 0);
		h->payload = (uint64_t)(uintptr_t)gone;
		break;
	}
	case H_STUCK_UPDATING:
		h->monotonic_published_at_ns = 0;
		break;
	case H_GARBAGE_PAYLOAD:
		memset(payload.b, 0xff, payload.n);
		break;
	case H_TIMESTAMP_RACING:
	case H_COUNT:
		break;
	}
	CHECK(write(report_fd, &good_at, sizeof(good_at)) == (ssize_t)sizeof(good_at));
	if (hostile_case == H_TIMESTAMP_RACING) {
		/* Until the parent closes the pipe. */
		struct pollfd pfd = { cmd_fd, POLLIN, 0 };

		while (poll(&pfd, 1, 0) == 0)
			__atomic_add_fetch(&h->monotonic_published_at_ns, 1, __ATOMIC_RELAXED);
	}
	return 0;
}

START_TEST(hostile_mappings_give_clear_errors)
{
	for (int i = 0; i < H_COUNT; i++) {
		struct otel_thread_ctx_inspect_process_snapshot *s = NULL;
		uint64_t good_at;
		struct child c;
		int rc;

		hostile_case = (enum hostile)i;
		start_child(&c, hostile_publisher);
		expect(&c, &good_at, sizeof(good_at));
		rc = otel_thread_ctx_inspect_process_read(c.pid, 5, &s);
		ck_assert_msg(rc == hostile_cases[i].expect || rc == hostile_cases[i].or_else,
			      "%s: read returned %d (%s)", hostile_cases[i].what, rc,
			      otel_thread_ctx_strerror(rc));
		if (rc == OTEL_THREAD_CTX_OK) {
			ck_assert_uint_eq(s->mapping_address, good_at);
			ck_assert_str_eq(s->schema_version, "tlsdesc_v1_dev");
			ck_assert_uint_eq(s->key_count, 2);
			ck_assert_str_eq(s->keys[1], "http.method");
			ck_assert_str_eq(s->resource[0].string, "foreign");
			otel_thread_ctx_inspect_process_snapshot_free(s);
		} else {
			ck_assert_ptr_null(s);
		}
		printf("hostile mapping, %s: %s\n", hostile_cases[i].what,
		       otel_thread_ctx_strerror(rc));
		finish_child(&c);
	}
}
END_TEST

/* A process of another user: EPERM, not a crash or a wrong answer. */
static int read_other_user(int report_fd, int cmd_fd)
{
	struct otel_thread_ctx_inspect_process_snapshot *s = NULL;
	pid_t parent = getppid();
	int rc;

	(void)cmd_fd;
	CHECK(setgid(65534) == 0 && setuid(65534) == 0);
	rc = otel_thread_ctx_inspect_process_read(parent, 0, &s);
	CHECK(write(report_fd, &rc, sizeof(rc)) == (ssize_t)sizeof(rc));
	return 0;
}

START_TEST(a_process_we_may_not_read_is_EPERM)
{
	struct child c;
	int rc;

	if (geteuid() != 0) {
		/* Without root there is no other user to become; pid 1 belongs
		 * to one unless we are in a one-user container. */
		struct stat st;
		struct otel_thread_ctx_inspect_process_snapshot *s = NULL;

		ck_assert_int_eq(stat("/proc/1", &st), 0);
		rc = otel_thread_ctx_inspect_process_read(1, 0, &s);
		if (st.st_uid != geteuid())
			ck_assert_otel(rc, OTEL_THREAD_CTX_EPERM);
		else
			ck_assert_msg(rc == OTEL_THREAD_CTX_ENOENT || rc == OTEL_THREAD_CTX_OK ||
					      rc == OTEL_THREAD_CTX_EPERM,
				      "read of pid 1 returned %d", rc);
		otel_thread_ctx_inspect_process_snapshot_free(s);
		return;
	}
	ck_assert_ok(otel_thread_ctx_process_publish(NULL, 0));
	start_child(&c, read_other_user);
	expect(&c, &rc, sizeof(rc));
	ck_assert_otel(rc, OTEL_THREAD_CTX_EPERM);
	finish_child(&c);
	ck_assert_ok(otel_thread_ctx_process_unpublish());
}
END_TEST

/* Can this process read a child's memory at all? */
static int cross_process_reads_work(char *why, size_t cap)
{
	static volatile uint64_t probe = 0x5eed;
	uint64_t got = 0;
	struct iovec local = { &got, sizeof(got) };
	struct iovec remote = { (void *)&probe, sizeof(probe) };
	int hold[2], ok;
	ssize_t n;
	pid_t pid;

	if (pipe(hold) != 0) {
		fprintf(stderr, "FAIL: pipe: %s\n", strerror(errno));
		exit(1);
	}
	pid = probe_fork();
	if (pid == 0) {
		char b;

		close(hold[1]);
		(void)!read(hold[0], &b, 1);
		_exit(0);
	}
	close(hold[0]);
	n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	ok = n == (ssize_t)sizeof(got) && got == 0x5eed;
	if (!ok)
		snprintf(why, cap, "process_vm_readv() of a child: %s",
			 n < 0 ? strerror(errno) : "wrong bytes");
	close(hold[1]);
	if (probe_wait(pid, "whether another process's memory can be read") != 0) {
		fprintf(stderr, "FAIL: the probe's child did not end well\n");
		exit(1);
	}
	return ok;
}

Suite *test_suite(void)
{
	const struct test_case cases[] = {
		{ "reads_another_process", reads_another_process },
		{ "reads_a_payload_of_the_maximum_size", reads_a_payload_of_the_maximum_size },
		{ "the_parent_reads_its_forked_child", the_parent_reads_its_forked_child },
		{ "a_reader_never_accepts_a_torn_payload", a_reader_never_accepts_a_torn_payload },
		{ "hostile_mappings_give_clear_errors", hostile_mappings_give_clear_errors },
		{ "a_process_we_may_not_read_is_EPERM", a_process_we_may_not_read_is_EPERM },
	};
	char why[160];

	if (!cross_process_reads_work(why, sizeof(why))) {
		printf("SKIP: cannot read another process's memory here (%s)\n", why);
		exit(77);
	}
	return MAKE_SUITE("process-ctx-remote", cases, 120);
}
