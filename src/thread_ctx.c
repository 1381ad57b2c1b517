/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Contexts, their records, and the calling thread's slot.
 *
 * Publication is pointer-swap only: a record that a slot points to is never
 * written again while it is reachable (but for its valid byte, by
 * otel_thread_ctx_invalidate()).  Each context has two records; edits go to
 * the one that is not published, and a commit swaps their roles.  Readers run
 * on the thread (signal handlers) or while it is stopped (ptrace, eBPF), so
 * compiler ordering is all that matters: every record store comes before the
 * slot store that makes it reachable (signal fences in publish()).
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "copy.h"
#include "internal.h"
#include "tls.h"
#include "utf8.h"

#define HEADER_SIZE offsetof(struct otel_thread_ctx_record, attrs_data)
#define ENTRY_HEADER 2u

struct otel_thread_ctx {
	struct otel_thread_ctx_record rec[2];
	/*
	 * 0 when detached; fork_generation + 1 of the process in which it was
	 * attached otherwise.  A mark from before a fork names a thread that
	 * does not exist in the child, so the child sees the context detached.
	 * Read by other threads (to refuse a second owner), hence atomic.
	 */
	unsigned long attach_mark;
	/* The published record and the draft: rec[0] and rec[1], in either
	 * order.  Pointers rather than an index, for the attach path. */
	struct otel_thread_ctx_record *pub, *draft;
	/*
	 * FIELD_* masks.  Without edits, the draft equals the published record
	 * but in the `stale` fields (and valid): those the last commit changed,
	 * since the draft is the record it replaced.  The first edit brings
	 * just those up to date, which on a span switch is 8 bytes, not the
	 * record.  `edits` is 0 without edits, else EDITED and the fields the
	 * edits changed: the stale fields after the next commit.
	 */
	unsigned int stale;
	unsigned int edits;
};

#define FIELD_TRACE 1u /* trace_id */
#define FIELD_SPAN 2u  /* span_id */
#define FIELD_FLAGS 4u /* trace_flags */
#define FIELD_ATTRS 8u /* attrs_data_size and attrs_data */
#define FIELD_IDS (FIELD_TRACE | FIELD_SPAN | FIELD_FLAGS)
#define FIELD_ALL (FIELD_IDS | FIELD_ATTRS)
#define EDITED 0x80u

_Static_assert(OTEL_THREAD_CTX_KEY_MAX == OTEL_THREAD_CTX_VALUE_MAX,
	       "attrs_encode() tests key and length against one bound");

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;
static bool exit_key_ready;
static unsigned long fork_generation;

static void on_thread_exit(void *arg);
static void after_fork_child(void);

static void init(void)
{
	exit_key_ready = pthread_key_create(&exit_key, on_thread_exit) == 0;
	/* Fails only for lack of memory; then contexts attached to other
	 * threads of a parent stay attached (EBUSY) in its children. */
	(void)pthread_atfork(NULL, NULL, after_fork_child);
}

/* Done when the library is loaded, so that the first attach of a thread,
 * maybe in a signal handler, finds the key made and the lock of
 * pthread_once() untouched.  The pthread_once() in register_exit_hook() covers
 * a constructor of another object that runs before this one. */
__attribute__((constructor)) static void on_load(void)
{
	pthread_once(&init_once, init);
}

static inline bool is_attached(const struct otel_thread_ctx *ctx)
{
	unsigned long mark = __atomic_load_n(&ctx->attach_mark, __ATOMIC_RELAXED);

	return mark != 0 &&
	       mark == __atomic_load_n(&fork_generation, __ATOMIC_RELAXED) + 1;
}

static inline void mark_attached(struct otel_thread_ctx *ctx, bool attached)
{
	unsigned long mark = attached ?
		__atomic_load_n(&fork_generation, __ATOMIC_RELAXED) + 1 : 0;

	__atomic_store_n(&ctx->attach_mark, mark, __ATOMIC_RELAXED);
}

/* True when ctx is attached to a thread other than the one owning `self`. */
static inline bool attached_elsewhere(const struct otel_thread_ctx *ctx,
				      const struct otel__thread *self)
{
	return self->ctx != ctx && is_attached(ctx);
}

static inline struct otel_thread_ctx_record *published(struct otel_thread_ctx *ctx)
{
	return ctx->pub;
}

static inline struct otel_thread_ctx_record *draft(struct otel_thread_ctx *ctx)
{
	return ctx->draft;
}

/* What the context holds now, committed or not: the record validation is
 * done against, before anything is written. */
static inline const struct otel_thread_ctx_record *view(struct otel_thread_ctx *ctx)
{
	return ctx->edits ? draft(ctx) : published(ctx);
}

/* Makes `rec` (or NULL) what the thread publishes. */
static inline void publish(struct otel__thread *t,
			   const struct otel_thread_ctx_record *rec)
{
	/* The record is complete before the slot can lead to it ... */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&t->slot, rec, __ATOMIC_RELAXED);
	/* ... and the record it replaced is not reused before it is
	 * unreachable. */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

/*
 * The draft, ready for an edit that changes the `touched` fields, of which
 * it overwrites the `whole` ones entirely.  On the first edit after a
 * commit, the stale fields it does not overwrite are copied from the
 * published record (attributes: the used bytes only).
 */
static inline struct otel_thread_ctx_record *edit(struct otel_thread_ctx *ctx,
						  unsigned int touched, unsigned int whole)
{
	struct otel_thread_ctx_record *d = ctx->draft;
	unsigned int edits = ctx->edits;

	if (!edits) {
		const struct otel_thread_ctx_record *p = ctx->pub;
		unsigned int need = ctx->stale & ~whole;

		if (need & FIELD_TRACE)
			memcpy(d->trace_id, p->trace_id, sizeof(d->trace_id));
		if (need & FIELD_SPAN)
			memcpy(d->span_id, p->span_id, sizeof(d->span_id));
		if (need & FIELD_FLAGS)
			d->trace_flags = p->trace_flags;
		if (need & FIELD_ATTRS) {
			d->attrs_data_size = p->attrs_data_size;
			otel__copy_bytes(d->attrs_data, p->attrs_data, p->attrs_data_size);
		}
	}
	ctx->edits = edits | EDITED | touched;
	return d;
}

/* The draft, up to date, becomes the published record; the record it
 * replaces, the draft, differs from it in the fields the edits changed.
 * (Everything is loaded before the byte store, which may alias it.) */
static inline void swap_records(struct otel_thread_ctx *ctx)
{
	struct otel_thread_ctx_record *d = ctx->draft, *p = ctx->pub;
	unsigned int changed = ctx->edits & FIELD_ALL;

	d->valid = 1;
	ctx->draft = p;
	ctx->pub = d;
	ctx->stale = changed;
	ctx->edits = 0;
}

static inline bool published_valid(struct otel_thread_ctx *ctx)
{
	return __atomic_load_n(&published(ctx)->valid, __ATOMIC_RELAXED) == 1;
}

/* Turns the draft into the published record; false if there was nothing to
 * do (no edit, and the published record is valid).  Without edits, the
 * draft is first made a copy of the (invalidated) published record. */
static bool commit(struct otel_thread_ctx *ctx)
{
	if (!ctx->edits) {
		if (published_valid(ctx))
			return false;
		edit(ctx, 0, 0);
	}
	swap_records(ctx);
	return true;
}

/* For the ids: n is a multiple of 8, read as 64-bit words. */
static bool all_zero(const uint8_t *p, size_t n)
{
	uint64_t acc = 0;

	for (size_t i = 0; i < n; i += 8) {
		uint64_t w;

		memcpy(&w, p + i, sizeof(w));
		acc |= w;
	}
	return acc == 0;
}

/* Offset of the entry for `key` in a record the library wrote, or -1. */
static int find_attr(const struct otel_thread_ctx_record *r, unsigned int key)
{
	size_t off = 0;

	while (off + ENTRY_HEADER <= r->attrs_data_size) {
		if (r->attrs_data[off] == key)
			return (int)off;
		off += ENTRY_HEADER + r->attrs_data[off + 1];
	}
	return -1;
}

static int register_exit_hook(struct otel__thread *t)
{
	pthread_once(&init_once, init);
	if (!exit_key_ready || pthread_setspecific(exit_key, t) != 0)
		return OTEL_THREAD_CTX_ETHREAD;
	t->exit_hook = 1;
	return OTEL_THREAD_CTX_OK;
}

/* pthread key destructor, run by the exiting thread itself. */
static void on_thread_exit(void *arg)
{
	struct otel__thread *t = arg;
	struct otel_thread_ctx *ctx = t->ctx;

	/* A later destructor that attaches again registers again. */
	t->exit_hook = 0;
	if (ctx == NULL)
		return;
	publish(t, NULL);
	t->ctx = NULL;
	free(ctx);
}

static void after_fork_child(void)
{
	unsigned long gen = __atomic_add_fetch(&fork_generation, 1, __ATOMIC_RELAXED);
	struct otel__thread *t = otel__thread_self();

	/* The only thread of the child keeps what it had attached. */
	if (t->ctx != NULL)
		__atomic_store_n(&t->ctx->attach_mark, gen + 1, __ATOMIC_RELAXED);
}

OTEL_EXPORT const char *otel_thread_ctx_strerror(int error)
{
	switch (error) {
	case OTEL_THREAD_CTX_OK:
		return "success";
	case OTEL_THREAD_CTX_ENULL:
		return "a required pointer argument is NULL";
	case OTEL_THREAD_CTX_EIDS:
		return "trace and span ids must be set together, and trace flags need them";
	case OTEL_THREAD_CTX_EKEY:
		return "attribute key index is above 255";
	case OTEL_THREAD_CTX_EVALUE:
		return "attribute value is longer than 255 bytes";
	case OTEL_THREAD_CTX_EUTF8:
		return "attribute value is not valid UTF-8";
	case OTEL_THREAD_CTX_ENOSPC:
		return "attributes would exceed the 612 bytes of a record";
	case OTEL_THREAD_CTX_EBUSY:
		return "context is attached (to another thread)";
	case OTEL_THREAD_CTX_EPENDING:
		return "context has uncommitted edits; use otel_thread_ctx_update_attach";
	case OTEL_THREAD_CTX_ENOMEM:
		return "out of memory";
	case OTEL_THREAD_CTX_ETHREAD:
		return "thread-exit cleanup is unavailable (no pthread key)";
	case OTEL_THREAD_CTX_ENOCTX:
		return "the thread publishes no context";
	case OTEL_THREAD_CTX_EINVALID:
		return "the record is marked invalid";
	case OTEL_THREAD_CTX_ETRUNCATED:
		return "fewer bytes than a record header";
	case OTEL_THREAD_CTX_ESLOT:
		return "a profiler would not find the slot this library writes (see the self-check's reason)";
	case OTEL_THREAD_CTX_ENAME:
		return "attribute key name is empty, longer than 255 bytes, or not valid UTF-8";
	case OTEL_THREAD_CTX_EKEYS:
		return "all 256 attribute key indices are taken";
	case OTEL_THREAD_CTX_ENOKEY:
		return "no attribute key of that name is registered";
	case OTEL_THREAD_CTX_EPUBLISHED:
		return "the process context is already published";
	case OTEL_THREAD_CTX_ENOTPUBLISHED:
		return "the process context is not published";
	case OTEL_THREAD_CTX_E2BIG:
		return "the process context payload would exceed 256 KiB";
	case OTEL_THREAD_CTX_EATTR:
		return "invalid resource attribute (empty, duplicate or non-UTF-8 key, or unsupported type)";
	case OTEL_THREAD_CTX_EMAP:
		return "no discoverable mapping: memfd_create() fails and anonymous mappings cannot be named";
	case OTEL_THREAD_CTX_ESRCH:
		return "no such process";
	case OTEL_THREAD_CTX_EPERM:
		return "not permitted to read the process (ptrace access check), or process_vm_readv() unavailable";
	case OTEL_THREAD_CTX_ENOENT:
		return "the process publishes no process context";
	case OTEL_THREAD_CTX_EFORMAT:
		return "the OTEL_CTX mapping has an invalid header";
	case OTEL_THREAD_CTX_EAGAIN:
		return "the process context changed during every read attempt";
	case OTEL_THREAD_CTX_EFAULT:
		return "the process context payload cannot be read";
	case OTEL_THREAD_CTX_EDECODE:
		return "the process context payload is not a valid ProcessContext message";
	case OTEL_THREAD_CTX_ESYS:
		return "a system call failed (see errno)";
	case OTEL_THREAD_CTX_EDUPKEY:
		return "the same attribute key is given twice";
	case OTEL_THREAD_CTX_ENOSLOT:
		return "no loaded module of the process defines otel_thread_ctx_v1";
	case OTEL_THREAD_CTX_EMODEL:
		return "the slot is reached through a TLS access model the inspector does not support";
	}
	return "unknown otel-thread-ctx error";
}

OTEL_EXPORT int otel_thread_ctx_create(otel_thread_ctx **out)
{
	struct otel_thread_ctx *ctx;

	if (out == NULL)
		return OTEL_THREAD_CTX_ENULL;
	ctx = calloc(1, sizeof(*ctx));
	if (ctx == NULL)
		return OTEL_THREAD_CTX_ENOMEM;
	ctx->rec[0].valid = 1;
	ctx->pub = &ctx->rec[0];
	ctx->draft = &ctx->rec[1];
	*out = ctx;
	return OTEL_THREAD_CTX_OK;
}

OTEL_EXPORT int otel_thread_ctx_destroy(otel_thread_ctx *ctx)
{
	if (ctx == NULL)
		return OTEL_THREAD_CTX_OK;
	if (is_attached(ctx))
		return OTEL_THREAD_CTX_EBUSY;
	free(ctx);
	return OTEL_THREAD_CTX_OK;
}

/* Both ids set, or both zero with flags 0. */
static inline bool ids_valid(const uint8_t trace_id[16], const uint8_t span_id[8],
			     uint8_t trace_flags)
{
	bool no_trace = all_zero(trace_id, 16), no_span = all_zero(span_id, 8);

	return no_trace == no_span && !(no_trace && trace_flags != 0);
}

static inline void write_ids(struct otel_thread_ctx_record *d, const uint8_t trace_id[16],
			     const uint8_t span_id[8], uint8_t trace_flags)
{
	memcpy(d->trace_id, trace_id, 16);
	memcpy(d->span_id, span_id, 8);
	d->trace_flags = trace_flags;
}

OTEL_EXPORT int otel_thread_ctx_set_ids(otel_thread_ctx *ctx, const uint8_t trace_id[16],
					const uint8_t span_id[8], uint8_t trace_flags)
{
	if (ctx == NULL || trace_id == NULL || span_id == NULL)
		return OTEL_THREAD_CTX_ENULL;
	if (!ids_valid(trace_id, span_id, trace_flags))
		return OTEL_THREAD_CTX_EIDS;
	write_ids(edit(ctx, FIELD_IDS, FIELD_IDS), trace_id, span_id, trace_flags);
	return OTEL_THREAD_CTX_OK;
}

/* A span id may replace the context's: non-zero, and a trace to be in. */
static inline bool span_fits(struct otel_thread_ctx *ctx, const uint8_t span_id[8])
{
	return !all_zero(span_id, 8) && !all_zero(view(ctx)->trace_id, 16);
}

OTEL_EXPORT int otel_thread_ctx_set_span_id(otel_thread_ctx *ctx, const uint8_t span_id[8])
{
	if (ctx == NULL || span_id == NULL)
		return OTEL_THREAD_CTX_ENULL;
	if (!span_fits(ctx, span_id))
		return OTEL_THREAD_CTX_EIDS;
	memcpy(edit(ctx, FIELD_SPAN, FIELD_SPAN)->span_id, span_id, 8);
	return OTEL_THREAD_CTX_OK;
}

OTEL_EXPORT int otel_thread_ctx_set_trace_flags(otel_thread_ctx *ctx, uint8_t trace_flags)
{
	if (ctx == NULL)
		return OTEL_THREAD_CTX_ENULL;
	if (trace_flags != 0 && all_zero(view(ctx)->trace_id, 16))
		return OTEL_THREAD_CTX_EIDS;
	edit(ctx, FIELD_FLAGS, FIELD_FLAGS)->trace_flags = trace_flags;
	return OTEL_THREAD_CTX_OK;
}

OTEL_EXPORT int otel_thread_ctx_clear_ids(otel_thread_ctx *ctx)
{
	struct otel_thread_ctx_record *d;

	if (ctx == NULL)
		return OTEL_THREAD_CTX_ENULL;
	d = edit(ctx, FIELD_IDS, FIELD_IDS);
	memset(d->trace_id, 0, sizeof(d->trace_id));
	memset(d->span_id, 0, sizeof(d->span_id));
	d->trace_flags = 0;
	return OTEL_THREAD_CTX_OK;
}

OTEL_EXPORT int otel_thread_ctx_set_attr(otel_thread_ctx *ctx, unsigned int key,
					 const void *value, size_t len)
{
	const struct otel_thread_ctx_record *v;
	struct otel_thread_ctx_record *d;
	size_t old_entry = 0, new_size;
	int at;

	if (ctx == NULL)
		return OTEL_THREAD_CTX_ENULL;
	if (key > OTEL_THREAD_CTX_KEY_MAX)
		return OTEL_THREAD_CTX_EKEY;
	if (len > OTEL_THREAD_CTX_VALUE_MAX)
		return OTEL_THREAD_CTX_EVALUE;
	if (value == NULL && len != 0)
		return OTEL_THREAD_CTX_ENULL;
	if (!otel__utf8_valid(value, len))
		return OTEL_THREAD_CTX_EUTF8;

	v = view(ctx);
	at = find_attr(v, key);
	if (at >= 0)
		old_entry = ENTRY_HEADER + v->attrs_data[at + 1];
	new_size = v->attrs_data_size - old_entry + ENTRY_HEADER + len;
	if (new_size > OTEL_THREAD_CTX_ATTRS_MAX)
		return OTEL_THREAD_CTX_ENOSPC;

	d = edit(ctx, FIELD_ATTRS, 0);
	if (at < 0) {
		at = d->attrs_data_size;
	} else if (old_entry != ENTRY_HEADER + len) {
		/* Replace in place: shift what follows to the new length. */
		size_t tail = (size_t)at + old_entry;

		memmove(d->attrs_data + at + ENTRY_HEADER + len, d->attrs_data + tail,
			d->attrs_data_size - tail);
	}
	d->attrs_data[at] = (uint8_t)key;
	d->attrs_data[at + 1] = (uint8_t)len;
	otel__copy_bytes(d->attrs_data + at + ENTRY_HEADER, value, len);
	d->attrs_data_size = (uint16_t)new_size;
	return OTEL_THREAD_CTX_OK;
}

/*
 * The checks of otel_thread_ctx_set_attrs(), and, when `out` is not NULL,
 * the entries written to it as they are checked.  Returns the bytes the
 * entries take, or an error.
 */
__attribute__((always_inline)) static inline int attrs_encode(uint8_t *out,
							  const struct otel_thread_ctx_attr *attrs,
							  size_t n)
{
	uint64_t seen[(OTEL_THREAD_CTX_KEY_MAX + 1) / 64] = { 0 };
	size_t size = 0;

	if (attrs == NULL && n != 0)
		return OTEL_THREAD_CTX_ENULL;
	for (size_t i = 0; i < n; i++) {
		unsigned int key = attrs[i].key, len = attrs[i].len;
		const uint8_t *value = attrs[i].value;
		uint64_t bit;

		/* One test for both bounds on the common path. */
		if ((key | len) > OTEL_THREAD_CTX_KEY_MAX)
			return key > OTEL_THREAD_CTX_KEY_MAX ? OTEL_THREAD_CTX_EKEY
							     : OTEL_THREAD_CTX_EVALUE;
		if (value == NULL && len != 0)
			return OTEL_THREAD_CTX_ENULL;
		if (!otel__utf8_valid(value, len))
			return OTEL_THREAD_CTX_EUTF8;
		bit = UINT64_C(1) << (key % 64);
		if (seen[key / 64] & bit)
			return OTEL_THREAD_CTX_EDUPKEY;
		seen[key / 64] |= bit;
		if (size + ENTRY_HEADER + len > OTEL_THREAD_CTX_ATTRS_MAX)
			return OTEL_THREAD_CTX_ENOSPC;
		if (out != NULL) {
			out[size] = (uint8_t)key;
			out[size + 1] = (uint8_t)len;
			otel__copy_bytes(out + size + ENTRY_HEADER, value, len);
		}
		size += ENTRY_HEADER + len;
	}
	return (int)size;
}

/*
 * Replaces the draft's attributes (and, with ids, its ids and flags: `whole`
 * says which).  Without edits, the draft holds nothing that anybody needs
 * (only copies of the published fields), so the entries are written while
 * they are checked, and a refusal leaves the fields stale.  With edits, they
 * are checked first, then written.
 */
__attribute__((always_inline)) static inline int replace_attrs(struct otel_thread_ctx *ctx,
							   unsigned int whole,
			 const struct otel_thread_ctx_attr *attrs, size_t n)
{
	struct otel_thread_ctx_record *d = ctx->draft;
	unsigned int edits = ctx->edits;
	int size;

	if (edits & FIELD_ATTRS) {
		/* The draft's attributes are edits: check before writing. */
		size = attrs_encode(NULL, attrs, n);
		if (size < 0)
			return size;
		attrs_encode(d->attrs_data, attrs, n);
	} else {
		/* They are a copy of the published ones, or stale: write while
		 * checking, and on a refusal put the copy back (or leave them
		 * stale). */
		size = attrs_encode(d->attrs_data, attrs, n);
		if (size < 0) {
			const struct otel_thread_ctx_record *p = ctx->pub;

			if (edits)
				otel__copy_bytes(d->attrs_data, p->attrs_data, p->attrs_data_size);
			else
				ctx->stale |= FIELD_ATTRS;
			return size;
		}
	}
	edit(ctx, whole, whole)->attrs_data_size = (uint16_t)size;
	return OTEL_THREAD_CTX_OK;
}

OTEL_EXPORT int otel_thread_ctx_set_attrs(otel_thread_ctx *ctx,
					  const struct otel_thread_ctx_attr *attrs, size_t n)
{
	if (ctx == NULL)
		return OTEL_THREAD_CTX_ENULL;
	return replace_attrs(ctx, FIELD_ATTRS, attrs, n);
}

OTEL_EXPORT int otel_thread_ctx_remove_attr(otel_thread_ctx *ctx, unsigned int key)
{
	struct otel_thread_ctx_record *d;
	size_t entry, tail;
	int at;

	if (ctx == NULL)
		return OTEL_THREAD_CTX_ENULL;
	if (key > OTEL_THREAD_CTX_KEY_MAX)
		return OTEL_THREAD_CTX_EKEY;
	at = find_attr(view(ctx), key);
	if (at < 0)
		return OTEL_THREAD_CTX_OK;
	d = edit(ctx, FIELD_ATTRS, 0);
	entry = ENTRY_HEADER + d->attrs_data[at + 1];
	tail = (size_t)at + entry;
	memmove(d->attrs_data + at, d->attrs_data + tail, d->attrs_data_size - tail);
	d->attrs_data_size = (uint16_t)(d->attrs_data_size - entry);
	return OTEL_THREAD_CTX_OK;
}

OTEL_EXPORT int otel_thread_ctx_clear_attrs(otel_thread_ctx *ctx)
{
	if (ctx == NULL)
		return OTEL_THREAD_CTX_ENULL;
	if (view(ctx)->attrs_data_size != 0)
		edit(ctx, FIELD_ATTRS, FIELD_ATTRS)->attrs_data_size = 0;
	return OTEL_THREAD_CTX_OK;
}

OTEL_EXPORT int otel_thread_ctx_clear(otel_thread_ctx *ctx)
{
	int err = otel_thread_ctx_clear_ids(ctx);

	return err ? err : otel_thread_ctx_clear_attrs(ctx);
}

static int attach_first(otel_thread_ctx *ctx, otel_thread_ctx **prev, bool commit_first);
static int attach_invalidated(otel_thread_ctx *ctx, otel_thread_ctx **prev);

/* attach and update_attach.  Inlined into both, so that commit_first is a
 * constant.  The two rare paths that call other functions, the first attach
 * of a thread and update_attach of an invalidated context, are tail calls
 * to out-of-line functions that do their part and start again. */
__attribute__((always_inline)) static inline int attach(otel_thread_ctx *ctx,
							otel_thread_ctx **prev,
							bool commit_first)
{
	struct otel__thread *t;
	struct otel_thread_ctx *old;

	if (ctx == NULL || prev == NULL)
		return OTEL_THREAD_CTX_ENULL;
	t = otel__thread_self();
	old = t->ctx;
	if (old != ctx) {
		if (is_attached(ctx))
			return OTEL_THREAD_CTX_EBUSY;
		if (!t->exit_hook)
			return attach_first(ctx, prev, commit_first);
	}
	if (commit_first) {
		/* commit(), without its call to memcpy on this path. */
		if (ctx->edits)
			swap_records(ctx);
		else if (!published_valid(ctx))
			return attach_invalidated(ctx, prev);
	} else if (ctx->edits) {
		return OTEL_THREAD_CTX_EPENDING;
	}

	if (old != ctx) {
		mark_attached(ctx, true);
		t->ctx = ctx;
	}
	publish(t, published(ctx));
	if (old != NULL && old != ctx)
		mark_attached(old, false);
	*prev = old;
	return OTEL_THREAD_CTX_OK;
}

/*
 * The first attach of a thread: registers the thread-exit cleanup, then
 * attaches.  Out of line, so that on the common path no value has to
 * survive a call but the TLS access: fewer registers to save and restore.
 */
__attribute__((noinline, cold)) static int attach_first(otel_thread_ctx *ctx,
							 otel_thread_ctx **prev,
							 bool commit_first)
{
	int err = register_exit_hook(otel__thread_self());

	if (err)
		return err;
	return attach(ctx, prev, commit_first);
}

/* update_attach of a context that was invalidated and has no edits: the
 * draft becomes a copy of the published record (as in commit()), and the
 * attach starts again with the draft to commit. */
__attribute__((noinline, cold)) static int attach_invalidated(otel_thread_ctx *ctx,
							       otel_thread_ctx **prev)
{
	edit(ctx, 0, 0);
	return attach(ctx, prev, true);
}

OTEL_EXPORT int otel_thread_ctx_attach(otel_thread_ctx *ctx, otel_thread_ctx **prev)
{
	return attach(ctx, prev, false);
}

OTEL_EXPORT int otel_thread_ctx_update_attach(otel_thread_ctx *ctx, otel_thread_ctx **prev)
{
	return attach(ctx, prev, true);
}

OTEL_EXPORT int otel_thread_ctx_update(otel_thread_ctx *ctx)
{
	struct otel__thread *t;

	if (ctx == NULL)
		return OTEL_THREAD_CTX_ENULL;
	t = otel__thread_self();
	if (attached_elsewhere(ctx, t))
		return OTEL_THREAD_CTX_EBUSY;
	if (commit(ctx) && t->ctx == ctx)
		publish(t, published(ctx));
	return OTEL_THREAD_CTX_OK;
}

OTEL_EXPORT int otel_thread_ctx_update_span_id(otel_thread_ctx *ctx, const uint8_t span_id[8])
{
	struct otel__thread *t;

	if (ctx == NULL || span_id == NULL)
		return OTEL_THREAD_CTX_ENULL;
	t = otel__thread_self();
	if (attached_elsewhere(ctx, t))
		return OTEL_THREAD_CTX_EBUSY;
	if (!span_fits(ctx, span_id))
		return OTEL_THREAD_CTX_EIDS;
	memcpy(edit(ctx, FIELD_SPAN, FIELD_SPAN)->span_id, span_id, 8);
	swap_records(ctx);
	if (t->ctx == ctx)
		publish(t, published(ctx));
	return OTEL_THREAD_CTX_OK;
}

OTEL_EXPORT int otel_thread_ctx_update_all(otel_thread_ctx *ctx, const uint8_t trace_id[16],
					   const uint8_t span_id[8], uint8_t trace_flags,
					   const struct otel_thread_ctx_attr *attrs, size_t n)
{
	struct otel__thread *t;
	int err;

	if (ctx == NULL || trace_id == NULL || span_id == NULL)
		return OTEL_THREAD_CTX_ENULL;
	if (!ids_valid(trace_id, span_id, trace_flags))
		return OTEL_THREAD_CTX_EIDS;
	t = otel__thread_self();
	if (attached_elsewhere(ctx, t))
		return OTEL_THREAD_CTX_EBUSY;
	/* Every field is overwritten: nothing to bring up to date. */
	err = replace_attrs(ctx, FIELD_ALL, attrs, n);
	if (err)
		return err;
	write_ids(ctx->draft, trace_id, span_id, trace_flags);
	swap_records(ctx);
	if (t->ctx == ctx)
		publish(t, published(ctx));
	return OTEL_THREAD_CTX_OK;
}

OTEL_EXPORT int otel_thread_ctx_detach(otel_thread_ctx **prev)
{
	struct otel__thread *t;
	struct otel_thread_ctx *old;

	if (prev == NULL)
		return OTEL_THREAD_CTX_ENULL;
	t = otel__thread_self();
	old = t->ctx;
	publish(t, NULL);
	if (old != NULL) {
		t->ctx = NULL;
		mark_attached(old, false);
	}
	*prev = old;
	return OTEL_THREAD_CTX_OK;
}

OTEL_EXPORT int otel_thread_ctx_invalidate(otel_thread_ctx *ctx)
{
	if (ctx == NULL)
		return OTEL_THREAD_CTX_ENULL;
	if (attached_elsewhere(ctx, otel__thread_self()))
		return OTEL_THREAD_CTX_EBUSY;
	__atomic_store_n(&published(ctx)->valid, 0, __ATOMIC_RELAXED);
	return OTEL_THREAD_CTX_OK;
}

OTEL_EXPORT otel_thread_ctx *otel_thread_ctx_current(void)
{
	return otel__thread_self()->ctx;
}
