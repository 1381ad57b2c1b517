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

/* The handlers injected (OTEL_STEP_INJECT), each a signal handler that
 * publishes on the thread it interrupted. */
enum handler { H_UPDATE, H_SAVE_RESTORE, H_COUNT };
static const char *const handler_names[H_COUNT] = { "update", "save-restore" };
#define EXTRA_MAX 8

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
	/* Injection: the handler (-1: none), the run (-1: the one that counts
	 * the path's instructions, no handler; then one run per instruction
	 * boundary, the tracer picks which), and the other records a reader
	 * may then see (the handler's publications, in either order). */
	int handler, run;
	uint32_t n_extra;
	uint32_t extra_len[EXTRA_MAX];
	uint8_t extra_rec[EXTRA_MAX][REC_MAX];
	/* Process paths: in the new payload and not in the old one ("" for
	 * unpublish, whose new state is "not published"). */
	char marker[64];
	int new_unpublished;
};

static int to_tracer[2], to_writer[2];

/* Whole messages over a pipe (a message is larger than PIPE_BUF). */
static bool read_all(int fd, void *p, size_t n)
{
	for (size_t done = 0; done < n;) {
		ssize_t r = read(fd, (char *)p + done, n - done);

		if (r <= 0)
			return false;
		done += (size_t)r;
	}
	return true;
}

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
	for (size_t done = 0; done < n;) {
		ssize_t w = write(fd, (const char *)p + done, n - done);

		if (w <= 0)
			_exit(1);
		done += (size_t)w;
	}
}

/* Hands the path to the tracer, then stops for it (the tracer has seized
 * this thread when it answers 'g').  False when it answers 'e': injection
 * runs past the path's last instruction, nothing to run. */
static bool handshake_or_end(struct msg *m)
{
	char go;

	m->tid = (pid_t)syscall(SYS_gettid);
	m->slot = (uint64_t)(uintptr_t)&otel_thread_ctx_v1;
	wwrite(to_tracer[1], m, sizeof(*m));
	if (read(to_writer[0], &go, 1) != 1 || (go != 'g' && go != 'e'))
		_exit(0);
	if (go == 'e')
		return false;
	raise(SIGTRAP);
	return true;
}

static void handshake(struct msg *m)
{
	m->handler = -1;
	m->run = -1;
	if (!handshake_or_end(m))
		_exit(1);
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

/* ------------------------------------------------------------------ */
/* Injection: a handler that publishes, at every instruction boundary.  */

/*
 * With OTEL_STEP_INJECT, each thread path runs once to count its
 * instructions, then once more per instruction boundary, with a signal
 * delivered there (by the tracer) whose handler publishes on the thread it
 * interrupted: update(h), as a runtime switching green threads does, or
 * save(hs), update(h), update_span_id(), update(hs), as a profiler tagging
 * its sample does.  The tracer reads the
 * slot at every instruction, the handler's included, and accepts only whole
 * records of a publication: the path's old and new ones, and those of the
 * handler and the path run one after the other in either order.  When both
 * have returned, the writer checks the contract of otel_thread_ctx.h
 * ("Signals and locks"): a handler refused with ENESTED changed nothing and
 * the state is the path's alone; otherwise the state is that of the handler
 * then the path, or of the path then the handler, run on a thread of their
 * own (references computed here beforehand).  "The state" is what the
 * thread publishes, what the calls saved, and what a few later calls
 * (update_span_id, update_trace_flags, save) then do: a stale-field mark or
 * a "traced" bit that the interrupted call left wrong shows there.  The
 * thread-exit path is injected where the library's own code runs (its exit
 * cleanup), and must leave no record in use.
 */
static const uint8_t trace_h[16] = {0x71, 0x72, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78,
				    0x79, 0x7a, 0x7b, 0x7c, 0x7d, 0x7e, 0x7f, 0x70};
static const uint8_t span_h[8] = {0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88};
static const uint8_t span_p[8] = {0x91, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98};
static const uint8_t span_q[8] = {0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8};
#define NOT_CALLED 1

struct world {
	otel_thread_ctx *a, *b, *saved, *nothing, *h, *hs, *tmp;
};

static void world_make(struct world *w)
{
	w->a = make_ctx(trace_a, span_a, 1, "a-value");
	w->b = make_ctx(trace_b, span_b, 0, "the b value, longer");
	w->saved = make_ctx(NULL, NULL, 0, NULL);
	w->nothing = make_ctx(NULL, NULL, 0, NULL);
	w->h = make_ctx(trace_h, span_h, 1, "handler");
	w->hs = make_ctx(NULL, NULL, 0, NULL);
	w->tmp = make_ctx(NULL, NULL, 0, NULL);
}

static void world_free(struct world *w)
{
	otel_thread_ctx *all[] = {w->a, w->b, w->saved, w->nothing, w->h, w->hs, w->tmp};

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		otel_thread_ctx_destroy(all[i]);
}

/* The state a path starts from, on a new thread. */
static void path_setup(int p, struct world *w)
{
	wcheck(otel_thread_ctx_save(w->nothing), "save nothing");
	if (p != PATH_FIRST)
		wcheck(otel_thread_ctx_attach(w->a, NULL), "attach a");
	if (p == PATH_SPAN_AGAIN)
		wcheck(otel_thread_ctx_update_span_id(span_b), "span b");
}

static uint64_t path_entry(int p)
{
	switch (p) {
	case PATH_UPDATE:
	case PATH_UPDATE_NOTHING:
		return (uint64_t)(uintptr_t)fp_update;
	case PATH_DETACH:
		return (uint64_t)(uintptr_t)fp_detach;
	case PATH_SAVE:
		return (uint64_t)(uintptr_t)fp_save;
	case PATH_SPAN:
	case PATH_SPAN_AGAIN:
		return (uint64_t)(uintptr_t)fp_span;
	case PATH_FLAGS:
		return (uint64_t)(uintptr_t)fp_flags;
	case PATH_ALL:
		return (uint64_t)(uintptr_t)fp_all;
	default:
		return (uint64_t)(uintptr_t)fp_attach;
	}
}

/* The path's call. */
static int path_call(int p, struct world *w)
{
	struct otel_thread_ctx_attr attrs[2] = {
		{key_b, 5, (const uint8_t *)"fresh"}, {key_a, 3, (const uint8_t *)"new"},
	};

	switch (p) {
	case PATH_FIRST:
	case PATH_ATTACH:
		return fp_attach(w->b, NULL);
	case PATH_ATTACH_SAVED:
		return fp_attach(w->b, w->saved);
	case PATH_UPDATE:
		return fp_update(w->b);
	case PATH_UPDATE_NOTHING:
		return fp_update(w->nothing);
	case PATH_DETACH:
		return fp_detach(w->saved);
	case PATH_SAVE:
		return fp_save(w->saved);
	case PATH_SPAN:
	case PATH_SPAN_AGAIN:
		return fp_span(span_c);
	case PATH_FLAGS:
		return fp_flags(0);
	case PATH_ALL:
		return fp_all(trace_b, span_c, 1, attrs, 2);
	}
	return -1;
}

/* The handler's calls. */
static void handler_calls(struct world *w, int kind, int rc[4])
{
	rc[0] = rc[1] = rc[2] = rc[3] = NOT_CALLED;
	switch (kind) {
	case H_UPDATE:
		rc[0] = otel_thread_ctx_update(w->h);
		break;
	case H_SAVE_RESTORE:
		rc[0] = otel_thread_ctx_save(w->hs);
		if (rc[0] == 0) {
			rc[1] = otel_thread_ctx_update(w->h);
			rc[2] = otel_thread_ctx_update_span_id(span_q);
			rc[3] = otel_thread_ctx_update(w->hs);
		}
		break;
	}
}

static struct world *inject_world;
static int inject_kind;
static int inject_rc[4];
static volatile sig_atomic_t inject_ran;

static void inject_handler(int sig)
{
	(void)sig;
	handler_calls(inject_world, inject_kind, inject_rc);
	inject_ran = 1;
}

/* A record, or what a context holds, as bytes (rc: of the read). */
struct rbytes {
	int rc;
	uint32_t len;
	uint8_t b[REC_MAX];
};

static void ctx_rbytes(otel_thread_ctx *c, struct rbytes *r)
{
	struct otel_thread_ctx_record x;

	memset(r, 0, sizeof(*r));
	r->rc = otel_thread_ctx_get(c, &x);
	if (r->rc == 0)
		r->len = rec_bytes(&x, r->b);
}

static void pub_rbytes(struct rbytes *r)
{
	struct otel_thread_ctx_record x;

	memset(r, 0, sizeof(*r));
	r->rc = otel_thread_ctx_read(&x);
	if (r->rc == 0)
		r->len = rec_bytes(&x, r->b);
}

/* The state the calls leave, and what later calls then do. */
struct outcome {
	int a_rc, h_rc[4], span_rc, flags_rc, save_rc;
	struct rbytes a_saved, h_saved, pub, pub_span, pub_flags, probe_saved;
};

static void finish_outcome(struct outcome *o, struct world *w)
{
	ctx_rbytes(w->saved, &o->a_saved);
	ctx_rbytes(w->hs, &o->h_saved);
	pub_rbytes(&o->pub);
	o->span_rc = otel_thread_ctx_update_span_id(span_p);
	pub_rbytes(&o->pub_span);
	o->flags_rc = otel_thread_ctx_update_trace_flags(1);
	pub_rbytes(&o->pub_flags);
	o->save_rc = otel_thread_ctx_save(w->tmp);
	ctx_rbytes(w->tmp, &o->probe_saved);
	wcheck(otel_thread_ctx_detach(NULL), "detach");
}

enum order { O_PATH, O_HANDLER_PATH, O_PATH_HANDLER, O_COUNT };

struct reference {
	int p, kind, order;
	struct outcome out;
	struct rbytes seen[EXTRA_MAX];
	unsigned n_seen;
};

static void note_seen(struct rbytes *seen, unsigned *n, const struct rbytes *r)
{
	for (unsigned i = 0; i < *n; i++)
		if (seen[i].len == r->len && memcmp(seen[i].b, r->b, r->len) == 0)
			return;
	if (*n == EXTRA_MAX)
		wcheck(-1, "more than 8 records to expect");
	seen[(*n)++] = *r;
}

static void note_now(struct reference *r)
{
	struct rbytes now;

	pub_rbytes(&now);
	note_seen(r->seen, &r->n_seen, &now);
}

/* A reference: the path and the handler one after the other (or the path
 * alone), plainly, on a thread of its own. */
static void *reference(void *arg)
{
	struct reference *r = arg;
	struct world w;

	world_make(&w);
	memset(&r->out, 0, sizeof(r->out));
	path_setup(r->p, &w);
	note_now(r);
	r->out.h_rc[0] = r->out.h_rc[1] = r->out.h_rc[2] = r->out.h_rc[3] = NOT_CALLED;
	if (r->order == O_HANDLER_PATH) {
		handler_calls(&w, r->kind, r->out.h_rc);
		note_now(r);
	}
	if (r->p != PATH_EXIT) {
		r->out.a_rc = path_call(r->p, &w);
		note_now(r);
	}
	if (r->order == O_PATH_HANDLER) {
		handler_calls(&w, r->kind, r->out.h_rc);
		note_now(r);
	}
	finish_outcome(&r->out, &w);
	world_free(&w);
	return NULL;
}

static bool same_outcome(const struct outcome *x, const struct outcome *y)
{
	return memcmp(x, y, sizeof(*x)) == 0;
}

struct injection {
	int p, kind, run;
	const struct reference *refs;
	struct msg *m;
	struct world w;
	bool ended;
	unsigned long nested, whole, not_run;
};

static int inject_failures;

static void *writer_inject(void *arg)
{
	struct injection *j = arg;
	struct outcome o;
	const struct reference *refs = j->refs;

	path_setup(j->p, &j->w);
	inject_world = &j->w;
	inject_kind = j->kind;
	inject_ran = 0;
	inject_rc[0] = inject_rc[1] = inject_rc[2] = inject_rc[3] = NOT_CALLED;
	j->m->run = j->run;
	j->m->handler = j->kind;
	if (!handshake_or_end(j->m)) {
		j->ended = true;
		wcheck(otel_thread_ctx_detach(NULL), "detach");
		return NULL;
	}
	if (j->p == PATH_EXIT)
		return NULL; /* the tracer steps the exit, to the end */
	memset(&o, 0, sizeof(o));
	o.a_rc = path_call(j->p, &j->w);
	memcpy(o.h_rc, inject_rc, sizeof(o.h_rc));
	finish_outcome(&o, &j->w);
	if (!inject_ran) {
		/* The counting run, or a signal the thread never took. */
		o.h_rc[0] = o.h_rc[1] = o.h_rc[2] = o.h_rc[3] = NOT_CALLED;
		o.h_saved = refs[O_PATH].out.h_saved;
		if (!same_outcome(&o, &refs[O_PATH].out)) {
			fprintf(stderr, "FAIL inject %s, %s, run %d: without the handler, not the "
				"path's own outcome\n", path_names[j->p], handler_names[j->kind],
				j->run);
			inject_failures++;
		}
		j->not_run++;
	} else if (o.h_rc[0] == OTEL_THREAD_CTX_ENESTED) {
		/* Refused: nothing changed, the handler's saved context
		 * included; the state is the path's alone. */
		if (o.h_rc[1] != NOT_CALLED || o.h_rc[2] != NOT_CALLED || o.h_rc[3] != NOT_CALLED)
			wcheck(-1, "the handler went on after ENESTED");
		memcpy(o.h_rc, refs[O_PATH].out.h_rc, sizeof(o.h_rc));
		if (!same_outcome(&o, &refs[O_PATH].out)) {
			fprintf(stderr, "FAIL inject %s, %s, run %d: the handler was refused, but the "
				"state is not the path's alone\n", path_names[j->p],
				handler_names[j->kind], j->run);
			inject_failures++;
		}
		j->nested++;
	} else {
		if (!same_outcome(&o, &refs[O_HANDLER_PATH].out) &&
		    !same_outcome(&o, &refs[O_PATH_HANDLER].out)) {
			fprintf(stderr, "FAIL inject %s, %s, run %d: the handler ran (%d %d %d %d), "
				"but the state is not that of the two calls one after the other\n",
				path_names[j->p], handler_names[j->kind], j->run, o.h_rc[0],
				o.h_rc[1], o.h_rc[2], o.h_rc[3]);
			inject_failures++;
		}
		j->whole++;
	}
	return NULL;
}

/* Every run of path p with handler `kind`. */
static void inject_path(int p, int kind)
{
	struct reference refs[O_COUNT];
	struct msg *m = calloc(1, sizeof(*m));
	struct rbytes all[EXTRA_MAX], h_rec;
	unsigned n_all = 0;
	unsigned long nested = 0, whole = 0, runs = 0;
	unsigned int in_use0, in_use, limit;

	if (m == NULL)
		wcheck(-1, "calloc");
	for (int o = 0; o < O_COUNT; o++) {
		pthread_t t;

		refs[o] = (struct reference){.p = p, .kind = kind, .order = o};
		if (pthread_create(&t, NULL, reference, &refs[o]) != 0 || pthread_join(t, NULL) != 0)
			_exit(1);
		for (unsigned i = 0; i < refs[o].n_seen; i++)
			note_seen(all, &n_all, &refs[o].seen[i]);
	}
	{
		struct world w;

		/* The handler's own publications, between its save and its
		 * restore. */
		world_make(&w);
		ctx_rbytes(w.h, &h_rec);
		note_seen(all, &n_all, &h_rec);
		wcheck(otel_thread_ctx_set_span_id(w.h, span_q), "set_span_id");
		ctx_rbytes(w.h, &h_rec);
		note_seen(all, &n_all, &h_rec);
		world_free(&w);
	}
	m->path = p;
	m->kind = p == PATH_EXIT ? K_EXIT : K_THREAD;
	m->entry = path_entry(p);
	/* old: where the path starts; new: where it ends alone. */
	m->old_len = refs[O_PATH].seen[0].len;
	memcpy(m->old_rec, refs[O_PATH].seen[0].b, m->old_len);
	m->new_len = p == PATH_EXIT ? 0 : refs[O_PATH].out.pub.len;
	memcpy(m->new_rec, refs[O_PATH].out.pub.b, m->new_len);
	for (unsigned i = 0; i < n_all; i++) {
		m->extra_len[m->n_extra] = all[i].len;
		memcpy(m->extra_rec[m->n_extra++], all[i].b, all[i].len);
	}
	for (int run = -1;; run++) {
		struct injection j = {.p = p, .kind = kind, .run = run, .refs = refs, .m = m};
		pthread_t t;

		world_make(&j.w);
		wcheck(otel_thread_ctx_thread_records(&in_use0, &limit), "thread_records");
		if (pthread_create(&t, NULL, writer_inject, &j) != 0 || pthread_join(t, NULL) != 0)
			_exit(1);
		wcheck(otel_thread_ctx_thread_records(&in_use, &limit), "thread_records");
		world_free(&j.w);
		if (in_use != in_use0) {
			fprintf(stderr, "FAIL inject %s, %s, run %d: %u thread records in use after "
				"the thread, %u before\n", path_names[p], handler_names[kind], run,
				in_use, in_use0);
			inject_failures++;
		}
		if (j.ended)
			break;
		if (p == PATH_EXIT && inject_ran) {
			/* Refused inside the exit cleanup, or before it whole, or
			 * after it refused as every publication then is. */
			int rc = inject_rc[0];

			if (rc == OTEL_THREAD_CTX_ENESTED)
				j.nested++;
			else if (rc == 0 || rc == OTEL_THREAD_CTX_ETHREAD ||
				 rc == OTEL_THREAD_CTX_ENOCTX)
				j.whole++;
			else {
				fprintf(stderr, "FAIL inject %s, %s, run %d: the handler got %d\n",
					path_names[p], handler_names[kind], run, rc);
				inject_failures++;
			}
		}
		runs++;
		nested += j.nested;
		whole += j.whole;
	}
	printf("inject %-20s %-14s %5lu runs: the handler refused (ENESTED) %lu times, ran whole "
	       "%lu times\n", path_names[p], handler_names[kind], runs, nested, whole);
	fflush(stdout);
	free(m);
}

static void inject_main(const bool *run, const bool *kinds)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = inject_handler;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL) != 0)
		_exit(1);
	for (int p = 0; p <= PATH_EXIT; p++)
		for (int k = 0; k < H_COUNT; k++)
			if (run[p] && kinds[k])
				inject_path(p, k);
	if (inject_failures) {
		fprintf(stderr, "step: %d injected runs broke the contract\n", inject_failures);
		_exit(1);
	}
	_exit(0);
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

/* Runs the stopped thread at full speed to a breakpoint at `to`, and stops
 * it there, on that instruction. */
static void run_to(pid_t tid, uint64_t to)
{
	uint64_t word, trap;
	step_regs r;
	struct iovec io = {&r, sizeof(r)};
	int status;

	errno = 0;
	word = (uint64_t)ptrace(PTRACE_PEEKTEXT, tid, (void *)(uintptr_t)to, NULL);
	if (errno != 0)
		die("PTRACE_PEEKTEXT");
#if defined(__x86_64__)
	trap = (word & ~(uint64_t)0xff) | 0xcc;
#else
	trap = (word & ~(uint64_t)0xffffffff) | 0xd4200000u;
#endif
	if (ptrace(PTRACE_POKETEXT, tid, (void *)(uintptr_t)to, (void *)(uintptr_t)trap) != 0 ||
	    ptrace(PTRACE_CONT, tid, NULL, NULL) != 0 || waitpid(tid, &status, __WALL) != tid ||
	    !WIFSTOPPED(status) || WSTOPSIG(status) != SIGTRAP ||
	    ptrace(PTRACE_POKETEXT, tid, (void *)(uintptr_t)to, (void *)(uintptr_t)word) != 0)
		die("running to the call's entry");
	get_regs(tid, &r);
#if defined(__x86_64__)
	r.rip = to;
#else
	r.pc = to;
#endif
	if (ptrace(PTRACE_SETREGSET, tid, (void *)(uintptr_t)NT_PRSTATUS, &io) != 0)
		die("PTRACE_SETREGSET");
}

/* An int of the writer's (the same address in both processes). */
static int peek_int(pid_t tid, const int *at)
{
	int v = 0;

	if (!peek(tid, (uint64_t)(uintptr_t)at, &v, sizeof(v)))
		die("reading the writer's memory");
	return v;
}

static int failures;

static void fail(const char *path, unsigned long step, const char *what)
{
	fprintf(stderr, "FAIL %s, instruction %lu: %s\n", path, step, what);
	failures++;
}

/* --- the thread context --- */

enum tstate { T_NOTHING, T_OLD, T_NEW, T_BAD, T_EXTRA };

/* What the slot led to at the last stop: a record the slot still leads to
 * must not have changed (no record is written while it is published). */
static uint64_t last_slot;
static uint32_t last_len;
static uint8_t last_rec[REC_MAX];

/* One of the injection's other records (m->extra_*), or -1. */
static int extra_index(const struct msg *m, const uint8_t *buf, uint32_t n)
{
	for (uint32_t i = 0; i < m->n_extra; i++)
		if (m->extra_len[i] == n && memcmp(m->extra_rec[i], buf, n) == 0)
			return (int)i;
	return -1;
}

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
		last_slot = 0;
		/* "Nothing" is old or new when that is what they are. */
		if (m->old_len == 0)
			return T_OLD;
		if (m->new_len == 0)
			return T_NEW;
		if (extra_index(m, buf, 0) >= 0)
			return T_EXTRA;
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
	if (slot == last_slot && (n != last_len || memcmp(buf, last_rec, n) != 0)) {
		*why = "a record was written while the slot led to it";
		last_slot = 0;
		return T_BAD;
	}
	last_slot = slot;
	last_len = n;
	memcpy(last_rec, buf, n);
	if (n == m->old_len && memcmp(buf, m->old_rec, n) == 0)
		return T_OLD;
	if (n == m->new_len && memcmp(buf, m->new_rec, n) == 0)
		return T_NEW;
	if (extra_index(m, buf, n) >= 0)
		return T_EXTRA;
	*why = m->handler >= 0 ? "the record is none of a publication of the path's or the "
				 "handler's (torn)"
			       : "the record is neither the old one nor the new one (torn)";
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

/* Runs the stopped thread at full speed to the (seen + 1)th time it reaches
 * `to`, stepping over the breakpoint the seen times before. */
static void run_to_seen(pid_t tid, uint64_t to, unsigned long seen)
{
	for (unsigned long i = 0; i < seen; i++) {
		run_to(tid, to);
		step_once(tid, 0);
	}
	run_to(tid, to);
}

/*
 * Just after the signal was delivered: when the thread stopped at the
 * handler's first instruction, the handler runs at full speed back to where
 * it interrupted the path (the same instruction with the same stack: the
 * handler may run that instruction itself, in a call of its own).  Its own
 * publications are the library's usual paths, stepped by the plain runs;
 * what injection adds is what the interrupted call does after it, stepped
 * again.  A signal the thread did not take (blocked) leaves it stepping.
 */
static void handler_at_full_speed(pid_t tid, uint64_t pc, uint64_t sp)
{
	step_regs r;

	get_regs(tid, &r);
	if (REG_PC(r) != (uint64_t)(uintptr_t)inject_handler)
		return;
	for (;;) {
		run_to(tid, pc);
		get_regs(tid, &r);
		if (REG_SP(r) == sp)
			return;
		step_once(tid, 0);
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

/* Injection: the library's code (the mapping that holds
 * otel_thread_ctx_attach), where the exit path is injected. */
static uint64_t lib_lo, lib_hi;
/* The instruction boundaries of the path being injected, from its counting
 * run. */
static unsigned long *eligible;
static long n_eligible;
/* Where each boundary is: the instruction, and how many times the path
 * had stopped there before (a loop runs an instruction several times). */
static uint64_t *eligible_pc;
static unsigned long *eligible_seen;
static unsigned long inject_steps, fast_forwards;

/* Traces path m; with inject_run >= 0, delivers SIGUSR1 at that boundary
 * of the counting run; with m->run == -1 and a handler, notes the
 * boundaries to inject. */
static void trace_path(const struct msg *m, long inject_run)
{
	long inject_at = inject_run >= 0 ? (long)eligible[inject_run] : -1;
	const char *name = path_names[m->path];
	pid_t tid = m->tid;
	step_regs regs;
	unsigned long steps = 0, counts[5] = {0};
	bool counting = m->handler >= 0 && m->run < 0;
	/* Injection: where the signal came, and when its handler returned. */
	uint64_t inj_pc = 0, inj_sp = 0;
	unsigned long handler_steps = 0;
	bool handler_back = false;
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
	last_slot = 0;
	if (counting)
		n_eligible = 0;

	if (waitpid(tid, &status, __WALL) != tid || !WIFSTOPPED(status) ||
	    WSTOPSIG(status) != SIGTRAP)
		die("waiting for the writer's stop");

	if (m->kind == K_PROCESS) {
		ring = calloc(RING, sizeof(*ring));
		buf = malloc(PAYLOAD_MAX);
		if (ring == NULL || buf == NULL)
			die("malloc");
	}

	/* To the library function's entry (the signal is dropped): at full
	 * speed to a breakpoint there when injecting (a path runs once per
	 * instruction boundary), else stepped. */
	if (m->kind != K_EXIT && m->handler >= 0)
		run_to(tid, m->entry);
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
	/* An injected run goes as the counting run did up to its boundary (the
	 * same code on the same state, read at every instruction there): at
	 * full speed to it, then stepped. */
	if (inject_run >= 0) {
		run_to_seen(tid, eligible_pc[inject_run], eligible_seen[inject_run]);
		steps = eligible[inject_run];
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
			if (counting && (m->kind != K_EXIT || (pc >= lib_lo && pc < lib_hi))) {
				size_t sz = (size_t)(n_eligible + 1);
				unsigned long seen = 0;

				eligible = realloc(eligible, sz * sizeof(*eligible));
				eligible_pc = realloc(eligible_pc, sz * sizeof(*eligible_pc));
				eligible_seen = realloc(eligible_seen, sz * sizeof(*eligible_seen));
				if (eligible == NULL || eligible_pc == NULL || eligible_seen == NULL)
					die("realloc");
				for (long i = 0; i < n_eligible; i++)
					seen += eligible_pc[i] == pc;
				eligible[n_eligible] = steps;
				eligible_pc[n_eligible] = pc;
				eligible_seen[n_eligible++] = seen;
			}
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
		sig = inject_at >= 0 && (unsigned long)inject_at == steps ? SIGUSR1 : 0;
		if (sig != 0) {
			inj_pc = pc;
			inj_sp = REG_SP(regs);
		} else if (inject_at >= 0 && !handler_back && steps > (unsigned long)inject_at &&
			   pc == inj_pc && REG_SP(regs) == inj_sp) {
			/* The handler returned: in the counting run's steps,
			 * the thread is at inject_at again. */
			int rc = 0;

			handler_back = true;
			handler_steps = steps - (unsigned long)inject_at;
			/* Refused, it changed nothing (the writer checks that):
			 * the rest is the counting run's, already read at every
			 * instruction.  At full speed to the return. */
			if (!peek(tid, (uint64_t)(uintptr_t)&inject_rc[0], &rc, sizeof(rc)))
				die("reading the handler's result");
			if (rc == OTEL_THREAD_CTX_ENESTED && m->kind != K_EXIT) {
				run_to(tid, ret);
				get_regs(tid, &regs);
				pc = REG_PC(regs);
				fast_forwards++;
				continue;
			}
			if (rc == OTEL_THREAD_CTX_ENESTED)
				fast_forwards++;
		}
		if (m->kind == K_EXIT && handler_back &&
		    (steps - handler_steps > eligible[n_eligible - 1] ||
		     peek_int(tid, &inject_rc[0]) == OTEL_THREAD_CTX_ENESTED)) {
			/* Past the library's last instruction of the exit: the rest
			 * (the C library's) at full speed, to the exit event. */
			if (ptrace(PTRACE_CONT, tid, NULL, NULL) != 0 ||
			    waitpid(tid, &status, __WALL) != tid)
				die("running to the exit");
			if (status >> 8 == (SIGTRAP | (PTRACE_EVENT_EXIT << 8))) {
				enum tstate s = read_thread(m, &why);

				if (s == T_BAD)
					fail(name, steps, why);
				else if (s != T_NEW && !(s == T_EXTRA && m->new_len == 0 && last_slot == 0))
					fail(name, steps, "the thread exits with its slot still set");
				ptrace(PTRACE_CONT, tid, NULL, NULL);
				waitpid(tid, &status, __WALL);
			}
			break;
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
				if (s != T_NEW && !(s == T_EXTRA && m->new_len == 0 && last_slot == 0))
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
		if (sig != 0)
			handler_at_full_speed(tid, inj_pc, inj_sp);
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
	} else if (m->handler >= 0) {
		if (getenv("OTEL_STEP_VERBOSE") != NULL)
			printf("    run %d at %ld: %lu steps%s\n", m->run, inject_at,
			       steps - (inject_at > 0 ? (unsigned long)inject_at : 0),
			       handler_back ? "" : " (the handler never came back)");
		/* An injected run steps from its boundary on. */
		inject_steps += steps - (inject_at > 0 ? (unsigned long)inject_at : 0);
		if (counting && m->kind != K_EXIT && n_eligible > 0)
			n_eligible--; /* the stop at the return is no boundary inside */
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

/* The mapping of this process (and so of the writer, a fork) that holds
 * the address a: the library's code. */
static void find_library(uint64_t a)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");

	if (f == NULL)
		die("opening /proc/self/maps");
	while (fgets(line, sizeof(line), f) != NULL) {
		unsigned long lo, hi;

		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && a >= lo && a < hi) {
			lib_lo = lo;
			lib_hi = hi;
		}
	}
	fclose(f);
	if (lib_lo == 0)
		die("finding the library's code");
}

/* A comma-separated list of names, as OTEL_STEP_PATHS and OTEL_STEP_INJECT
 * give them: is `name` in it? */
static bool listed(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *at = strstr(list, name); at != NULL; at = strstr(at + 1, name))
		if ((at == list || at[-1] == ',') && (at[n] == '\0' || at[n] == ','))
			return true;
	return false;
}

int main(void)
{
	bool run[PATH_COUNT], kinds[H_COUNT], inject = false;
	const char *only = getenv("OTEL_STEP_PATHS");
	const char *inject_list = getenv("OTEL_STEP_INJECT");
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
		run[p] = listed(only, path_names[p]);
	}
	for (int k = 0; k < H_COUNT; k++) {
		kinds[k] = inject_list != NULL &&
			   (strcmp(inject_list, "all") == 0 || listed(inject_list, handler_names[k]));
		inject |= kinds[k];
	}
	if (inject_list != NULL && *inject_list != '\0' && !inject) {
		fprintf(stderr, "step: OTEL_STEP_INJECT names no handler (update, save-restore, "
				"all)\n");
		return 2;
	}
	find_library((uint64_t)(uintptr_t)fp_attach);
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
		if (inject)
			inject_main(run, kinds);
		writer_main(run);
	}
	close(to_tracer[1]);
	close(to_writer[0]);
	find_vdso();

	for (;;) {
		static struct msg m;
		long inject_run = -1;

		if (!read_all(to_tracer[0], &m, sizeof(m)))
			break;
		if (m.handler >= 0 && m.run >= 0) {
			/* One run per boundary the counting run found. */
			if (m.run >= n_eligible) {
				static unsigned long before;

				printf("  %s, %s: %ld boundaries, %lu instructions stepped\n",
				       path_names[m.path], handler_names[m.handler], n_eligible,
				       inject_steps - before);
				before = inject_steps;
				if (write(to_writer[1], "e", 1) != 1)
					die("write");
				continue;
			}
			inject_run = m.run;
		}
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
		trace_path(&m, inject_run);
	}
	if (waitpid(child, &status, 0) != child)
		die("waitpid");
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "step: the writer failed (status %#x)\n", status);
		return 1;
	}
	if (inject)
		printf("injection: %lu instructions stepped in all; %lu runs went on at full speed "
		       "after a refused handler\n", inject_steps, fast_forwards);
	printf("%.0f ms in all\n", now_ms() - t0);
	if (failures) {
		printf("%d failures\n", failures);
		return 1;
	}
	return 0;
}
