/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every instruction boundary of every publication path.
 *
 * A writer process runs one publication path at a time on a thread of its
 * own; this process traces that thread with ptrace, single-steps it from the
 * entry of the library call to its return, and at every instruction
 * boundary reads the stopped thread's state the way a profiler would:
 *
 * - the thread context (OTEP 4947): the slot, then the record it leads to,
 *   by the format's rules re-implemented here (NULL: nothing; valid != 1:
 *   invalid, which must never be seen; else the 28-byte header and
 *   attrs_data_size bytes), and the copy checked again by the library's own
 *   decoder (otel_thread_ctx_record_decode());
 * - the process context (OTEP 4719): the OTEL_CTX mapping found in
 *   /proc/PID/maps, its header, the timestamp (0: retry), the payload, the
 *   timestamp again (equal: the copy is accepted), re-implemented here too.
 *   Besides the read made in one stop, reads are split across instructions:
 *   the header taken some instructions earlier, the payload and the second
 *   timestamp now, as a reader that was preempted would.
 *
 * Every read must be "nothing", the whole old state or the whole new state
 * (the writer says which records it expects; for the process context the
 * old and new payloads are what the reader finds at the call's entry and
 * return, and the new one must hold a marker the old one does not), and
 * each path must show both.  The stepping is deterministic and exhaustive
 * for the code as compiled.  It prints, per path, the instructions stepped.
 *
 * Exits 77 where ptrace is refused or does not single-step (qemu-user,
 * valgrind), and with OTEL_STEP_SKIP's reason where the build leaves it
 * out.  OTEL_STEP_PATHS (comma-separated names) runs a subset.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <elf.h>
#include <time.h>
#include <unistd.h>

#include "otel_thread_ctx.h"
#include "otel_thread_ctx_process.h"

#if defined(__x86_64__)
#include <sys/user.h>
typedef struct user_regs_struct step_regs;
#define REG_PC(r) ((r).rip)
#define REG_SP(r) ((r).rsp)
#elif defined(__aarch64__)
#include <asm/ptrace.h>
typedef struct user_pt_regs step_regs;
#define REG_PC(r) ((r).pc)
#define REG_SP(r) ((r).sp)
#else
#error "x86-64 and aarch64 only"
#endif

#define HDR 28u
#define REC_MAX 640u
#define PAYLOAD_MAX 65536u
#define STEP_LIMIT 5000000ul

enum kind { K_THREAD, K_EXIT, K_PROCESS };

enum path {
	PATH_FIRST,
	PATH_ATTACH,
	PATH_ATTACH_SAVED,
	PATH_UPDATE,
	PATH_UPDATE_NOTHING,
	PATH_DETACH,
	PATH_SAVE,
	PATH_SPAN,
	PATH_SPAN_AGAIN,
	PATH_FLAGS,
	PATH_ALL,
	PATH_EXIT,
	PATH_PUBLISH,
	PATH_PUPDATE,
	PATH_KEY,
	PATH_UNPUBLISH,
	PATH_COUNT
};

static const char *const path_names[PATH_COUNT] = {
	"first-publication", "attach", "attach-saved", "update", "update-nothing",
	"detach", "save", "update-span-id", "update-span-id-again",
	"update-trace-flags", "update-all", "thread-exit", "process-publish",
	"process-update", "process-key-register", "process-unpublish",
};

/* What the writer tells the tracer before each path. */
struct msg {
	int path;
	int kind;
	pid_t tid;
	uint64_t slot;  /* &otel_thread_ctx_v1 on the writer thread */
	uint64_t entry; /* the library function called */
	/* Thread paths: the records expected (len 0: nothing published). */
	uint32_t old_len, new_len;
	uint8_t old_rec[REC_MAX], new_rec[REC_MAX];
	/* Process paths: in the new payload and not in the old one ("" for
	 * unpublish, whose new state is "not published"). */
	char marker[64];
	int new_unpublished;
};

static int to_tracer[2], to_writer[2];

static void die(const char *what)
{
	fprintf(stderr, "step: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* ------------------------------------------------------------------ */
/* The writer.                                                          */

static const uint8_t trace_a[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
static const uint8_t span_a[8] = {21, 22, 23, 24, 25, 26, 27, 28};
static const uint8_t trace_b[16] = {0xb1, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6, 0xb7, 0xb8,
				    0xb9, 0xba, 0xbb, 0xbc, 0xbd, 0xbe, 0xbf, 0xc0};
static const uint8_t span_b[8] = {0xd1, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8};
static const uint8_t span_c[8] = {0xe1, 0xe2, 0xe3, 0xe4, 0xe5, 0xe6, 0xe7, 0xe8};
static unsigned int key_a, key_b;
static char long_value[200];

/* Volatile: the call goes to the address the tracer is told. */
static int (*volatile fp_attach)(const otel_thread_ctx *, otel_thread_ctx *) = otel_thread_ctx_attach;
static int (*volatile fp_update)(const otel_thread_ctx *) = otel_thread_ctx_update;
static int (*volatile fp_detach)(otel_thread_ctx *) = otel_thread_ctx_detach;
static int (*volatile fp_save)(otel_thread_ctx *) = otel_thread_ctx_save;
static int (*volatile fp_span)(const uint8_t *) = otel_thread_ctx_update_span_id;
static int (*volatile fp_flags)(uint8_t) = otel_thread_ctx_update_trace_flags;
static int (*volatile fp_all)(const uint8_t *, const uint8_t *, uint8_t,
			      const struct otel_thread_ctx_attr *, size_t) = otel_thread_ctx_update_all;
static int (*volatile fp_publish)(const struct otel_thread_ctx_process_attr *, size_t) =
	otel_thread_ctx_process_publish;
static int (*volatile fp_pupdate)(const struct otel_thread_ctx_process_attr *, size_t) =
	otel_thread_ctx_process_update;
static int (*volatile fp_key)(const char *, unsigned int *) = otel_thread_ctx_key_register;
static int (*volatile fp_unpublish)(void) = otel_thread_ctx_process_unpublish;

static void wcheck(int rc, const char *what)
{
	if (rc != 0) {
		fprintf(stderr, "step: writer: %s: %d\n", what, rc);
		_exit(1);
	}
}

static otel_thread_ctx *make_ctx(const uint8_t *trace, const uint8_t *span, uint8_t flags,
				 const char *value)
{
	otel_thread_ctx *c;

	wcheck(otel_thread_ctx_create(&c), "create");
	if (trace != NULL)
		wcheck(otel_thread_ctx_set_ids(c, trace, span, flags), "set_ids");
	if (value != NULL) {
		wcheck(otel_thread_ctx_set_attr(c, key_a, value, strlen(value)), "set_attr a");
		wcheck(otel_thread_ctx_set_attr(c, key_b, long_value, strlen(long_value)),
		       "set_attr b");
	}
	return c;
}

static uint32_t rec_bytes(const struct otel_thread_ctx_record *r, uint8_t *out)
{
	uint32_t n = HDR + r->attrs_data_size;

	memcpy(out, r, n);
	return n;
}

static uint32_t ctx_bytes(const otel_thread_ctx *c, uint8_t *out)
{
	struct otel_thread_ctx_record r;

	wcheck(otel_thread_ctx_get(c, &r), "get");
	return rec_bytes(&r, out);
}

static uint32_t published_bytes(uint8_t *out)
{
	struct otel_thread_ctx_record r;
	int rc = otel_thread_ctx_read(&r);

	if (rc == OTEL_THREAD_CTX_ENOCTX)
		return 0;
	wcheck(rc, "read");
	return rec_bytes(&r, out);
}

static void wwrite(int fd, const void *p, size_t n)
{
	if (write(fd, p, n) != (ssize_t)n)
		_exit(1);
}

/* Hands the path to the tracer, then stops for it (the tracer has seized
 * this thread when it answers). */
static void handshake(struct msg *m)
{
	char go;

	m->tid = (pid_t)syscall(SYS_gettid);
	m->slot = (uint64_t)(uintptr_t)&otel_thread_ctx_v1;
	wwrite(to_tracer[1], m, sizeof(*m));
	if (read(to_writer[0], &go, 1) != 1 || go != 'g')
		_exit(0);
	raise(SIGTRAP);
}

static void *writer(void *arg)
{
	int p = (int)(intptr_t)arg;
	static struct msg m;
	otel_thread_ctx *a, *b, *saved, *nothing;
	struct otel_thread_ctx_attr attrs[2];
	struct otel_thread_ctx_process_attr res = {
		.key = "service.name", .type = OTEL_THREAD_CTX_PROCESS_STRING,
	};
	unsigned int idx;
	int rc = 0;

	char name[32];

	if (p < 0 || p >= PATH_COUNT)
		_exit(1);
	snprintf(name, sizeof(name), "%s", path_names[p]);
	memset(&m, 0, sizeof(m));
	m.path = p;
	m.kind = p == PATH_EXIT ? K_EXIT : p >= PATH_PUBLISH ? K_PROCESS : K_THREAD;
	a = make_ctx(trace_a, span_a, 1, "a-value");
	b = make_ctx(trace_b, span_b, 0, "the b value, longer");
	saved = make_ctx(NULL, NULL, 0, NULL);
	nothing = make_ctx(NULL, NULL, 0, NULL);
	/* What a thread that published nothing saves: a context with no
	 * record. */
	wcheck(otel_thread_ctx_save(nothing), "save nothing");
	if (p != PATH_FIRST && m.kind != K_PROCESS)
		wcheck(otel_thread_ctx_attach(a, NULL), "attach a");
	m.old_len = published_bytes(m.old_rec);

	switch (p) {
	case PATH_FIRST:
	case PATH_ATTACH:
	case PATH_ATTACH_SAVED:
	case PATH_UPDATE:
		m.entry = p == PATH_UPDATE ? (uint64_t)(uintptr_t)fp_update : (uint64_t)(uintptr_t)fp_attach;
		m.new_len = ctx_bytes(b, m.new_rec);
		handshake(&m);
		rc = p == PATH_UPDATE ? fp_update(b) : fp_attach(b, p == PATH_ATTACH_SAVED ? saved : NULL);
		break;
	case PATH_UPDATE_NOTHING:
		if (otel_thread_ctx_get(nothing, &(struct otel_thread_ctx_record){0}) !=
		    OTEL_THREAD_CTX_ENOCTX)
			wcheck(-1, "a saved \"nothing\" holds no record");
		m.entry = (uint64_t)(uintptr_t)fp_update;
		handshake(&m);
		rc = fp_update(nothing);
		break;
	case PATH_DETACH:
		m.entry = (uint64_t)(uintptr_t)fp_detach;
		handshake(&m);
		rc = fp_detach(saved);
		break;
	case PATH_SAVE:
		m.entry = (uint64_t)(uintptr_t)fp_save;
		m.new_len = m.old_len;
		memcpy(m.new_rec, m.old_rec, m.old_len);
		handshake(&m);
		rc = fp_save(saved);
		break;
	case PATH_SPAN:
	case PATH_SPAN_AGAIN:
		if (p == PATH_SPAN_AGAIN) {
			wcheck(otel_thread_ctx_update_span_id(span_b), "span b");
			m.old_len = published_bytes(m.old_rec);
		}
		m.entry = (uint64_t)(uintptr_t)fp_span;
		m.new_len = m.old_len;
		memcpy(m.new_rec, m.old_rec, m.old_len);
		memcpy(m.new_rec + 16, span_c, 8);
		handshake(&m);
		rc = fp_span(span_c);
		break;
	case PATH_FLAGS:
		m.entry = (uint64_t)(uintptr_t)fp_flags;
		m.new_len = m.old_len;
		memcpy(m.new_rec, m.old_rec, m.old_len);
		m.new_rec[25] = 0;
		handshake(&m);
		rc = fp_flags(0);
		break;
	case PATH_ALL:
		attrs[0] = (struct otel_thread_ctx_attr){key_b, 5, (const uint8_t *)"fresh"};
		attrs[1] = (struct otel_thread_ctx_attr){key_a, 3, (const uint8_t *)"new"};
		{
			otel_thread_ctx *c = make_ctx(trace_b, span_c, 1, NULL);

			wcheck(otel_thread_ctx_set_attrs(c, attrs, 2), "set_attrs");
			m.new_len = ctx_bytes(c, m.new_rec);
			otel_thread_ctx_destroy(c);
		}
		m.entry = (uint64_t)(uintptr_t)fp_all;
		handshake(&m);
		rc = fp_all(trace_b, span_c, 1, attrs, 2);
		break;
	case PATH_EXIT:
		otel_thread_ctx_destroy(a);
		otel_thread_ctx_destroy(b);
		otel_thread_ctx_destroy(saved);
		otel_thread_ctx_destroy(nothing);
		handshake(&m);
		return NULL; /* the tracer steps the exit, to the end */
	case PATH_PUBLISH:
	case PATH_PUPDATE:
		res.string = p == PATH_PUBLISH ? "step-publish" : "step-update";
		res.length = strlen(res.string);
		strcpy(m.marker, res.string);
		m.entry = (uint64_t)(uintptr_t)(p == PATH_PUBLISH ? fp_publish : fp_pupdate);
		handshake(&m);
		rc = p == PATH_PUBLISH ? fp_publish(&res, 1) : fp_pupdate(&res, 1);
		break;
	case PATH_KEY:
		strcpy(m.marker, "step.registered.late");
		m.entry = (uint64_t)(uintptr_t)fp_key;
		handshake(&m);
		rc = fp_key("step.registered.late", &idx);
		break;
	case PATH_UNPUBLISH:
		m.new_unpublished = 1;
		m.entry = (uint64_t)(uintptr_t)fp_unpublish;
		handshake(&m);
		rc = fp_unpublish();
		break;
	}
	wcheck(rc, name);
	/* The library's own reader agrees with what the tracer was told. */
	if (m.kind == K_THREAD) {
		uint8_t now[REC_MAX];
		uint32_t n = published_bytes(now);

		if (n != m.new_len || memcmp(now, m.new_rec, n) != 0)
			wcheck(-1, "the record published is not the one expected");
	}
	wcheck(otel_thread_ctx_detach(NULL), "detach");
	otel_thread_ctx_destroy(a);
	otel_thread_ctx_destroy(b);
	otel_thread_ctx_destroy(saved);
	otel_thread_ctx_destroy(nothing);
	return NULL;
}

static void writer_main(const bool *run)
{
	bool published = false;

	memset(long_value, 'v', sizeof(long_value) - 1);
	wcheck(otel_thread_ctx_key_register("step.a", &key_a), "key a");
	wcheck(otel_thread_ctx_key_register("step.b", &key_b), "key b");
	for (int p = 0; p < PATH_COUNT; p++) {
		pthread_t t;

		if (!run[p])
			continue;
		/* The process paths after the first need a published context:
		 * published here, unobserved, when its path is not stepped. */
		if (p > PATH_PUBLISH && !published) {
			struct otel_thread_ctx_process_attr res = {
				.key = "service.name", .type = OTEL_THREAD_CTX_PROCESS_STRING,
				.string = "step-publish",
			};

			wcheck(otel_thread_ctx_process_publish(&res, 1), "publish");
			published = true;
		}
		if (pthread_create(&t, NULL, writer, (void *)(intptr_t)p) != 0 ||
		    pthread_join(t, NULL) != 0)
			_exit(1);
		if (p == PATH_PUBLISH)
			published = true;
		if (p == PATH_UNPUBLISH)
			published = false;
	}
	_exit(0);
}

/* ------------------------------------------------------------------ */
/* The tracer.                                                          */

static pid_t child;

static bool peek(pid_t tid, uint64_t addr, void *buf, size_t n)
{
	struct iovec local = {buf, n};
	struct iovec remote = {(void *)(uintptr_t)addr, n};

	(void)tid;
	return process_vm_readv(child, &local, 1, &remote, 1, 0) == (ssize_t)n;
}

static void get_regs(pid_t tid, step_regs *r)
{
	struct iovec io = {r, sizeof(*r)};

	if (ptrace(PTRACE_GETREGSET, tid, (void *)(uintptr_t)NT_PRSTATUS, &io) != 0)
		die("PTRACE_GETREGSET");
}

static uint64_t return_address(pid_t tid, const step_regs *r)
{
#if defined(__x86_64__)
	uint64_t ra;

	if (!peek(tid, r->rsp, &ra, 8))
		die("reading the return address");
	return ra;
#else
	(void)tid;
	return r->regs[30];
#endif
}

/* Whether the instruction at pc enters the kernel (the only way the
 * mappings change). */
static bool is_syscall(pid_t tid, uint64_t pc)
{
#if defined(__x86_64__)
	uint8_t b[2];

	return peek(tid, pc, b, 2) && b[0] == 0x0f && b[1] == 0x05;
#else
	uint32_t insn;

	return peek(tid, pc, &insn, 4) && insn == 0xd4000001u;
#endif
}

/* The vDSO's clock reads retry while the clock changes, which it does at
 * every tick while they are single-stepped: they are run at full speed, from
 * their entry to a breakpoint at their return (they change nothing a reader
 * reads). */
static uint64_t vdso_lo, vdso_hi;

static void find_vdso(void)
{
	char path[64], line[512];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)child);
	f = fopen(path, "r");
	if (f == NULL)
		die("opening the writer's maps");
	while (fgets(line, sizeof(line), f) != NULL) {
		unsigned long lo, hi;

		if (strstr(line, "[vdso]") != NULL && sscanf(line, "%lx-%lx", &lo, &hi) == 2) {
			vdso_lo = lo;
			vdso_hi = hi;
		}
	}
	fclose(f);
}

static unsigned long vdso_calls;

/* At the entry of a vDSO function: runs it to its return. */
static void run_vdso_call(pid_t tid, const step_regs *r)
{
	uint64_t ret = return_address(tid, r), word, trap;
	step_regs after;
	struct iovec io = {&after, sizeof(after)};
	int status;

	errno = 0;
	word = (uint64_t)ptrace(PTRACE_PEEKTEXT, tid, (void *)(uintptr_t)ret, NULL);
	if (errno != 0)
		die("PTRACE_PEEKTEXT");
#if defined(__x86_64__)
	trap = (word & ~(uint64_t)0xff) | 0xcc;
#else
	trap = (word & ~(uint64_t)0xffffffff) | 0xd4200000u;
#endif
	if (ptrace(PTRACE_POKETEXT, tid, (void *)(uintptr_t)ret, (void *)(uintptr_t)trap) != 0 ||
	    ptrace(PTRACE_CONT, tid, NULL, NULL) != 0 || waitpid(tid, &status, __WALL) != tid ||
	    !WIFSTOPPED(status) || WSTOPSIG(status) != SIGTRAP ||
	    ptrace(PTRACE_POKETEXT, tid, (void *)(uintptr_t)ret, (void *)(uintptr_t)word) != 0)
		die("running a vDSO call");
	get_regs(tid, &after);
#if defined(__x86_64__)
	after.rip = ret;
#else
	after.pc = ret;
#endif
	if (ptrace(PTRACE_SETREGSET, tid, (void *)(uintptr_t)NT_PRSTATUS, &io) != 0)
		die("PTRACE_SETREGSET");
	vdso_calls++;
}

static int failures;

static void fail(const char *path, unsigned long step, const char *what)
{
	fprintf(stderr, "FAIL %s, instruction %lu: %s\n", path, step, what);
	failures++;
}

/* --- the thread context --- */

enum tstate { T_NOTHING, T_OLD, T_NEW, T_BAD };

static enum tstate read_thread(const struct msg *m, const char **why)
{
	uint64_t slot;
	uint8_t buf[REC_MAX];
	uint16_t size;
	uint32_t n;
	struct otel_thread_ctx_record dec;

	if (!peek(m->tid, m->slot, &slot, 8)) {
		*why = "the slot cannot be read";
		return T_BAD;
	}
	if (slot == 0) {
		/* "Nothing" is old or new when that is what they are. */
		if (m->old_len == 0)
			return T_OLD;
		if (m->new_len == 0)
			return T_NEW;
		return T_NOTHING;
	}
	if (!peek(m->tid, slot, buf, HDR)) {
		*why = "the slot leads to memory that cannot be read";
		return T_BAD;
	}
	if (buf[24] != 1) {
		*why = "the slot leads to a record whose valid byte is not 1";
		return T_BAD;
	}
	memcpy(&size, buf + 26, 2);
	if (size > OTEL_THREAD_CTX_ATTRS_MAX) {
		*why = "attrs_data_size is above 612";
		return T_BAD;
	}
	n = HDR + size;
	if (!peek(m->tid, slot + HDR, buf + HDR, size)) {
		*why = "the record's attributes cannot be read";
		return T_BAD;
	}
	if (otel_thread_ctx_record_decode(buf, n, &dec) != OTEL_THREAD_CTX_OK ||
	    dec.attrs_data_size != size) {
		*why = "the library's decoder refuses the record";
		return T_BAD;
	}
	if (n == m->old_len && memcmp(buf, m->old_rec, n) == 0)
		return T_OLD;
	if (n == m->new_len && memcmp(buf, m->new_rec, n) == 0)
		return T_NEW;
	*why = "the record is neither the old one nor the new one (torn)";
	return T_BAD;
}

/* --- the process context --- */

struct pread {
	int state; /* 0 not published, 1 changing (retry), 2 accepted, 3 bad */
	uint64_t mapping;
	uint64_t ts, payload;
	uint32_t size;
	const char *why;
};

struct pstate {
	uint64_t mapping; /* 0: none found at the last scan */
	bool rescan;
};

static uint64_t find_mapping(void)
{
	char path[64], line[512];
	FILE *f;
	uint64_t found = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)child);
	f = fopen(path, "r");
	if (f == NULL)
		die("opening the writer's maps");
	while (fgets(line, sizeof(line), f) != NULL) {
		unsigned long lo, hi;

		if (strstr(line, "OTEL_CTX") == NULL)
			continue;
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && hi - lo >= 32) {
			found = lo;
			break;
		}
	}
	fclose(f);
	return found;
}

/* Reads the header at `mapping`: state 0 (not published), 1 (timestamp 0)
 * or 2 (fields filled). */
static void read_header(uint64_t mapping, struct pread *r)
{
	struct otel_thread_ctx_process_header h;

	r->mapping = mapping;
	r->state = 0;
	if (mapping == 0 || !peek(0, mapping, &h, sizeof(h)))
		return;
	if (memcmp(h.signature, "OTEL_CTX", 8) != 0 || h.version != 2)
		return;
	r->ts = h.monotonic_published_at_ns;
	r->payload = h.payload;
	r->size = h.payload_size;
	r->state = r->ts == 0 ? 1 : 2;
}

/* The rest of the protocol, now: copy the payload the header named, read
 * the timestamp again; equal means the reader accepts the copy. */
static void finish_read(struct pread *r, uint8_t *buf, uint32_t *len)
{
	uint64_t ts2;

	if (r->state != 2)
		return;
	if (!peek(0, r->mapping + 16, &ts2, 8) || ts2 != r->ts) {
		r->state = 1; /* the reader retries */
		return;
	}
	if (r->size > PAYLOAD_MAX) {
		r->state = 3;
		r->why = "an accepted header names a payload above 65536 bytes";
		return;
	}
	if (!peek(0, r->payload, buf, r->size)) {
		r->state = 3;
		r->why = "an accepted header names a payload that cannot be read";
		return;
	}
	/* The timestamp read after the copy: still the same. */
	if (!peek(0, r->mapping + 16, &ts2, 8) || ts2 != r->ts) {
		r->state = 1;
		return;
	}
	*len = r->size;
}

/* Distinct payloads accepted during one path. */
#define SEEN_MAX 8
struct seen {
	unsigned n;
	uint32_t len[SEEN_MAX];
	uint8_t *bytes[SEEN_MAX];
	unsigned long first_step[SEEN_MAX];
};

static int note_payload(struct seen *s, const uint8_t *b, uint32_t len, unsigned long step)
{
	for (unsigned i = 0; i < s->n; i++)
		if (s->len[i] == len && memcmp(s->bytes[i], b, len) == 0)
			return (int)i;
	if (s->n == SEEN_MAX)
		return -1;
	s->bytes[s->n] = malloc(len ? len : 1);
	if (s->bytes[s->n] == NULL)
		die("malloc");
	memcpy(s->bytes[s->n], b, len);
	s->len[s->n] = len;
	s->first_step[s->n] = step;
	return (int)s->n++;
}

static bool contains(const uint8_t *b, uint32_t len, const char *needle)
{
	size_t n = strlen(needle);

	return n > 0 && memmem(b, len, needle, n) != NULL;
}

/* --- stepping --- */

static unsigned long exclusive_runs;

#if defined(__aarch64__)
/*
 * An exclusive sequence (ldxr ... stxr) never succeeds when single-stepped:
 * the exception each step takes clears the exclusive monitor, so its store
 * fails and the loop retries for ever.  At a load-exclusive the tracer runs
 * the sequence at full speed instead, to breakpoints after its
 * store-exclusive and at the targets of its conditional branches that leave
 * it (as GDB does).  Between the load and the store the sequence writes no
 * memory (a failed store writes none either): what a reader can see before
 * the load, after the store and at the branches' targets is all it could see
 * at the instructions run through.  Such sequences are glibc's (its locks,
 * malloc's arena lock) and libgcc's atomics without LSE; the library's
 * publication paths have none (tests/hotpath/check-no-atomics.py).
 */
#define EXCL_SCAN 16
#define EXCL_BPS 8

static bool is_load_exclusive(uint32_t insn)
{
	return (insn & 0x3fc00000u) == 0x08400000u;
}

static bool is_store_exclusive(uint32_t insn)
{
	return (insn & 0x3fc00000u) == 0x08000000u;
}

/* The target of a conditional branch at pc, or 0 when insn is none. */
static uint64_t cond_branch_target(uint32_t insn, uint64_t pc)
{
	int64_t off;

	if ((insn & 0xff000010u) == 0x54000000u || /* b.cond */
	    (insn & 0x7e000000u) == 0x34000000u) { /* cbz, cbnz */
		off = (int64_t)((uint64_t)((insn >> 5) & 0x7ffff) << 45) >> 43;
		return pc + (uint64_t)off;
	}
	if ((insn & 0x7e000000u) == 0x36000000u) { /* tbz, tbnz */
		off = (int64_t)((uint64_t)((insn >> 5) & 0x3fff) << 50) >> 48;
		return pc + (uint64_t)off;
	}
	return 0;
}

/* At a load-exclusive: runs its sequence to where it ends.  Returns false
 * when pc is at no load-exclusive, or no store-exclusive follows it. */
static bool run_exclusive(pid_t tid, uint64_t pc, int sig)
{
	uint32_t code[EXCL_SCAN];
	uint64_t bp[EXCL_BPS], saved[EXCL_BPS], end = 0;
	unsigned nbp = 0, i;
	step_regs r;
	struct iovec io = {&r, sizeof(r)};
	int status;

	if (!peek(tid, pc, code, sizeof(code[0])) || !is_load_exclusive(code[0]))
		return false;
	if (!peek(tid, pc, code, sizeof(code)))
		return false;
	for (i = 1; i < EXCL_SCAN; i++)
		if (is_store_exclusive(code[i])) {
			end = pc + 4 * (i + 1);
			break;
		}
	if (end == 0)
		return false;
	bp[nbp++] = end;
	for (unsigned j = 1; j < i; j++) {
		uint64_t t = cond_branch_target(code[j], pc + 4 * j);
		bool dup = false;

		if (t == 0 || (t > pc && t < end))
			continue;
		for (unsigned k = 0; k < nbp; k++)
			dup |= bp[k] == t;
		if (!dup && nbp < EXCL_BPS)
			bp[nbp++] = t;
	}
	for (i = 0; i < nbp; i++) {
		uint64_t word;

		errno = 0;
		word = (uint64_t)ptrace(PTRACE_PEEKTEXT, tid, (void *)(uintptr_t)bp[i], NULL);
		if (errno != 0)
			die("PTRACE_PEEKTEXT");
		saved[i] = word;
		word = (word & ~(uint64_t)0xffffffff) | 0xd4200000u; /* brk #0 */
		if (ptrace(PTRACE_POKETEXT, tid, (void *)(uintptr_t)bp[i], (void *)(uintptr_t)word) != 0)
			die("PTRACE_POKETEXT");
	}
	for (;;) {
		if (ptrace(PTRACE_CONT, tid, NULL, (void *)(intptr_t)sig) != 0 ||
		    waitpid(tid, &status, __WALL) != tid)
			die("running an exclusive sequence");
		if (!WIFSTOPPED(status)) {
			fprintf(stderr, "step: the writer thread ended in an exclusive sequence\n");
			exit(1);
		}
		if (WSTOPSIG(status) == SIGTRAP)
			break;
		sig = WSTOPSIG(status); /* delivered as the thread goes on */
	}
	/* Put the code back, the last breakpoint first (two may share a word). */
	while (nbp-- > 0)
		if (ptrace(PTRACE_POKETEXT, tid, (void *)(uintptr_t)bp[nbp],
			   (void *)(uintptr_t)saved[nbp]) != 0)
			die("PTRACE_POKETEXT");
	get_regs(tid, &r);
	/* A brk leaves pc on itself; said again in case a kernel moves it. */
	for (i = 0; i < EXCL_BPS; i++)
		if (r.pc == bp[i] || r.pc == bp[i] + 4)
			break;
	if (i == EXCL_BPS) {
		fprintf(stderr, "step: an exclusive sequence at %#" PRIx64 " stopped at %#" PRIx64
				"\n", pc, (uint64_t)r.pc);
		exit(1);
	}
	r.pc = bp[i];
	if (ptrace(PTRACE_SETREGSET, tid, (void *)(uintptr_t)NT_PRSTATUS, &io) != 0)
		die("PTRACE_SETREGSET");
	exclusive_runs++;
	return true;
}
#endif

/* One instruction (or one exclusive sequence, on aarch64); the stop's
 * status. */
static int step_insn(pid_t tid, int sig)
{
	int status;

#if defined(__aarch64__)
	step_regs r;

	get_regs(tid, &r);
	if (run_exclusive(tid, r.pc, sig))
		return 0x57f; /* stopped by SIGTRAP */
#endif
	if (ptrace(PTRACE_SINGLESTEP, tid, NULL, (void *)(intptr_t)sig) != 0)
		die("PTRACE_SINGLESTEP");
	if (waitpid(tid, &status, __WALL) != tid)
		die("waitpid");
	return status;
}

static void step_once(pid_t tid, int sig)
{
	int status = step_insn(tid, sig);

	if (WIFEXITED(status) || WIFSIGNALED(status)) {
		fprintf(stderr, "step: the writer thread ended while stepped\n");
		exit(1);
	}
}

/* Stepped after an exit event: 1 when the thread reached its exit. */
static int step_exit(pid_t tid, int sig)
{
	int status = step_insn(tid, sig);

	if (WIFEXITED(status) || WIFSIGNALED(status))
		return 2;
	if (status >> 8 == (SIGTRAP | (PTRACE_EVENT_EXIT << 8)))
		return 1;
	return 0;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Delays, in instructions, between a reader's header read and its copy. */
static const unsigned long delays[] = {1, 7, 64, 500};
#define NDELAYS (sizeof(delays) / sizeof(delays[0]))
#define RING 512

static void trace_path(const struct msg *m)
{
	const char *name = path_names[m->path];
	pid_t tid = m->tid;
	step_regs regs;
	unsigned long steps = 0, counts[4] = {0};
	uint64_t ret = 0;
	int status, sig = 0;
	double t0 = now_ms();
	struct pstate ps = {0, true};
	struct seen seen = {0};
	struct pread *ring = NULL;
	uint8_t *buf = NULL;
	int old_idx = -2, new_idx = -2; /* -1: not published */
	unsigned long unpub = 0, changing = 0, late_accepts = 0;

	vdso_calls = 0;
	exclusive_runs = 0;

	if (waitpid(tid, &status, __WALL) != tid || !WIFSTOPPED(status) ||
	    WSTOPSIG(status) != SIGTRAP)
		die("waiting for the writer's stop");

	if (m->kind == K_PROCESS) {
		ring = calloc(RING, sizeof(*ring));
		buf = malloc(PAYLOAD_MAX);
		if (ring == NULL || buf == NULL)
			die("malloc");
	}

	/* To the library function's entry (the signal is dropped). */
	if (m->kind != K_EXIT) {
		for (;;) {
			get_regs(tid, &regs);
			if (REG_PC(regs) == m->entry)
				break;
			step_once(tid, 0);
			if (++steps > 100000) {
				/* The writer is stopped for good: end it, and the test. */
				fail(name, 0, "the call's entry was never reached");
				kill(child, SIGKILL);
				exit(1);
			}
		}
		ret = return_address(tid, &regs);
		steps = 0;
	}

	for (;;) {
		const char *why = "?";
		uint64_t pc;

		get_regs(tid, &regs);
		pc = REG_PC(regs);
		if (m->kind == K_PROCESS) {
			struct pread *r = &ring[steps % RING];
			uint32_t len = 0;
			int idx;

			if (ps.rescan) {
				ps.mapping = find_mapping();
				ps.rescan = false;
			}
			struct pread now;

			read_header(ps.mapping, r);
			now = *r;


			finish_read(&now, buf, &len);
			if (now.state == 3) {
				fail(name, steps, now.why);
			} else if (now.state == 0) {
				unpub++;
				if (steps == 0)
					old_idx = -1;
			} else if (now.state == 1) {
				changing++;
			} else {
				idx = note_payload(&seen, buf, len, steps);
				if (idx < 0)
					fail(name, steps, "more than 8 different payloads accepted");
				if (steps == 0)
					old_idx = idx;
			}
			/* Readers that read the header d instructions ago. */
			for (unsigned d = 0; d < NDELAYS; d++) {
				struct pread late;

				if (delays[d] > steps)
					continue;
				late = ring[(steps - delays[d]) % RING];
				/* The same header as now: the same read as now. */
				if (late.state == now.state && late.mapping == now.mapping &&
				    late.ts == now.ts && late.payload == now.payload &&
				    late.size == now.size)
					continue;
				finish_read(&late, buf, &len);
				if (late.state == 3) {
					fail(name, steps, late.why);
				} else if (late.state == 2) {
					late_accepts++;
					if (note_payload(&seen, buf, len, steps) < 0)
						fail(name, steps, "more than 8 different payloads accepted");
				}
			}
		} else {
			enum tstate s = read_thread(m, &why);

			counts[s]++;
			if (s == T_BAD)
				fail(name, steps, why);
			if (s == T_NOTHING && m->kind != K_EXIT)
				fail(name, steps, "nothing published, neither before nor after");
		}
		if (failures > 20) {
			fprintf(stderr, "step: too many failures\n");
			exit(1);
		}
		if (m->kind != K_EXIT && pc == ret)
			break;
		if (steps >= STEP_LIMIT) {
			fail(name, steps, "the call did not return within the step limit");
			break;
		}
		if (m->kind == K_PROCESS && is_syscall(tid, pc))
			ps.rescan = true;
		if (pc >= vdso_lo && pc < vdso_hi) {
			run_vdso_call(tid, &regs);
			continue;
		}
		steps++;
		if (m->kind == K_EXIT) {
			int e = step_exit(tid, sig);

			if (e == 1) {
				/* At the exit event: read once more, then let it go. */
				enum tstate s = read_thread(m, &why);

				counts[s]++;
				if (s == T_BAD)
					fail(name, steps, why);
				if (s != T_NEW)
					fail(name, steps, "the thread exits with its slot still set");
				ptrace(PTRACE_CONT, tid, NULL, NULL);
				waitpid(tid, &status, __WALL);
				break;
			}
			if (e == 2)
				break;
		} else {
			step_once(tid, sig);
		}
	}

	if (m->kind == K_PROCESS) {
		/* The new state: what a reader finds at the return. */
		struct pread r;
		uint32_t len = 0;

		read_header(ps.mapping, &r);
		finish_read(&r, buf, &len);
		if (r.state == 0)
			new_idx = -1;
		else if (r.state == 2)
			new_idx = note_payload(&seen, buf, len, steps);
		else
			fail(name, steps, "the context is being changed at the call's return");
		if (old_idx == -2)
			fail(name, 0, "the context is being changed at the call's entry");
		for (unsigned i = 0; i < seen.n; i++)
			if ((int)i != old_idx && (int)i != new_idx) {
				char what[160];

				snprintf(what, sizeof(what),
					 "an accepted copy (%u bytes) is neither the old payload nor "
					 "the new one (torn)", seen.len[i]);
				fail(name, seen.first_step[i], what);
			}
		if (m->new_unpublished ? new_idx != -1 : new_idx < 0)
			fail(name, steps, "the new state is not what the call promises");
		if (new_idx >= 0 && !contains(seen.bytes[new_idx], seen.len[new_idx], m->marker))
			fail(name, steps, "the new payload lacks what was published");
		if (old_idx >= 0 && m->marker[0] &&
		    contains(seen.bytes[old_idx], seen.len[old_idx], m->marker))
			fail(name, 0, "the old payload holds already what the call publishes");
		if (old_idx == new_idx)
			fail(name, steps, "the old state and the new one are the same");
		printf("%-22s %7lu instructions %8.1f ms  not published %lu, changing %lu, "
		       "payloads %u, accepted late reads %lu, vDSO calls %lu, exclusive sequences %lu\n",
		       name, steps, now_ms() - t0, unpub, changing, seen.n, late_accepts, vdso_calls,
		       exclusive_runs);
		for (unsigned i = 0; i < seen.n; i++)
			free(seen.bytes[i]);
		free(ring);
		free(buf);
	} else {
		bool same = m->old_len == m->new_len &&
			    memcmp(m->old_rec, m->new_rec, m->old_len) == 0;

		if (counts[T_OLD] == 0)
			fail(name, steps, "the old state was never seen");
		if (counts[T_NEW] == 0 && !same)
			fail(name, steps, "the new state was never seen");
		printf("%-22s %7lu instructions %8.1f ms  old %lu, new %lu, nothing %lu, "
		       "exclusive sequences %lu\n", name, steps, now_ms() - t0, counts[T_OLD],
		       counts[T_NEW], counts[T_NOTHING], exclusive_runs);
	}
	if (m->kind != K_EXIT && ptrace(PTRACE_DETACH, tid, NULL, NULL) != 0)
		die("PTRACE_DETACH");
	fflush(stdout);
}

static int skip(const char *why)
{
	printf("SKIP: %s\n", why);
	return 77;
}

int main(void)
{
	bool run[PATH_COUNT];
	const char *only = getenv("OTEL_STEP_PATHS");
	const char *preload = getenv("LD_PRELOAD");
	int status;
	double t0 = now_ms();

	if (preload != NULL && strstr(preload, "vgpreload") != NULL)
		return skip("under valgrind: single-stepping would step valgrind's translation");
	/* The build says why this configuration leaves it out (meson.build). */
	if (getenv("OTEL_STEP_SKIP") != NULL && *getenv("OTEL_STEP_SKIP") != '\0')
		return skip(getenv("OTEL_STEP_SKIP"));
	for (int p = 0; p < PATH_COUNT; p++) {
		if (only == NULL || *only == '\0') {
			run[p] = true;
			continue;
		}
		size_t n = strlen(path_names[p]);

		run[p] = false;
		for (const char *at = strstr(only, path_names[p]); at != NULL;
		     at = strstr(at + 1, path_names[p]))
			if ((at == only || at[-1] == ',') && (at[n] == '\0' || at[n] == ','))
				run[p] = true;
	}
	if (pipe(to_tracer) != 0 || pipe(to_writer) != 0)
		die("pipe");
	fflush(stdout);
	child = fork();
	if (child < 0)
		die("fork");
	if (child == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(to_tracer[0]);
		close(to_writer[1]);
		writer_main(run);
	}
	close(to_tracer[1]);
	close(to_writer[0]);
	find_vdso();

	for (;;) {
		struct msg m;
		ssize_t n = read(to_tracer[0], &m, sizeof(m));

		if (n == 0)
			break;
		if (n != (ssize_t)sizeof(m))
			die("reading the writer's message");
		if (ptrace(PTRACE_SEIZE, m.tid, NULL,
			   (void *)(uintptr_t)(PTRACE_O_EXITKILL | PTRACE_O_TRACEEXIT)) != 0) {
			int e = errno;

			kill(child, SIGKILL);
			waitpid(child, NULL, 0);
			errno = e;
			fprintf(stderr, "PTRACE_SEIZE: %s\n", strerror(e));
			return skip(e == ENOSYS ? "no ptrace here (qemu-user emulates none)"
						: "ptrace is refused here");
		}
		if (write(to_writer[1], "g", 1) != 1)
			die("write");
		trace_path(&m);
	}
	if (waitpid(child, &status, 0) != child)
		die("waitpid");
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "step: the writer failed (status %#x)\n", status);
		return 1;
	}
	printf("%.0f ms in all\n", now_ms() - t0);
	if (failures) {
		printf("%d failures\n", failures);
		return 1;
	}
	return 0;
}
