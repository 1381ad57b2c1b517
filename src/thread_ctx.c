/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Contexts, their records, and the calling thread's slot.
 *
 * Publication is pointer-swap only: a record that a slot points to is never
 * written again while it is reachable.  Each context has two records; edits
 * go to the one that is not published, and a commit swaps their roles.
 * Readers run on the thread (signal handlers) or while it is stopped (ptrace,
 * eBPF), so compiler ordering is all that matters there: every record store
 * comes before the slot store that makes it reachable (signal fences in
 * publish()).
 *
 * Ownership between threads is the one place where CPU ordering matters.  A
 * context's `owner` word holds the token of the thread it is attached to, or
 * 0.  A thread claims a context with one compare-and-swap (acquire), so of
 * two threads attaching one context exactly one wins; it gives it back with
 * a release store once its slot no longer leads to the context, after which
 * it never touches it again.  Everything that needs "not attached to another
 * thread" (setters, commits, destroy) loads the word with acquire.
 *
 * A frozen context (otel_thread_ctx_freeze()) is immutable and shared: any
 * number of threads attach it at once, each holding a reference, as does
 * its creator; the last holder to let go frees it.  A reference dropped by
 * detach or attach, which must stay async-signal-safe, does not call
 * free(): the context goes on a lock-free list that the next create,
 * destroy or thread exit empties.
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
	/* Token of the thread it is attached to; 0 when detached. */
	uint64_t owner;
	/* The published record and the draft, in the storage below. */
	struct otel_thread_ctx_record *pub, *draft;
	/* What a thread that has the context attached publishes: pub, or NULL
	 * after otel_thread_ctx_invalidate() until the next commit. */
	const struct otel_thread_ctx_record *shown;
	/*
	 * FIELD_* masks.  Without edits, the draft equals the published record
	 * but in the `stale` fields: those the last commit changed, since the
	 * draft is the record it replaced.  The first edit brings just those up
	 * to date, which on a span switch is 8 bytes, not the record.  `edits`
	 * is 0 without edits, else EDITED and the fields the edits changed: the
	 * stale fields after the next commit.
	 */
	unsigned int stale;
	unsigned int edits;
	/* Bytes of attribute entries a record of this context may hold. */
	uint16_t capacity;
	/* OTEL_THREAD_CTX_FREE_WITH_THREAD, FROZEN. */
	uint16_t flags;
	/* Frozen: how many hold it (its creator, and each thread it is
	 * attached to). */
	uint32_t refs;
	/* The two records follow, each 16-byte aligned. */
	_Alignas(16) unsigned char storage[];
};

#define FIELD_TRACE 1u /* trace_id */
#define FIELD_SPAN 2u  /* span_id */
#define FIELD_FLAGS 4u /* trace_flags */
#define FIELD_ATTRS 8u /* attrs_data_size and attrs_data */
#define FIELD_IDS (FIELD_TRACE | FIELD_SPAN | FIELD_FLAGS)
#define FIELD_ALL (FIELD_IDS | FIELD_ATTRS)
#define EDITED 0x80u

#define CREATE_FLAGS OTEL_THREAD_CTX_FREE_WITH_THREAD
/* Set by otel_thread_ctx_freeze(), never cleared. */
#define FROZEN 0x8000u

_Static_assert(OTEL_THREAD_CTX_KEY_MAX == OTEL_THREAD_CTX_VALUE_MAX,
	       "attrs_encode() tests key and length against one bound");
_Static_assert(OTEL_THREAD_CTX_ATTRS_MAX <= UINT16_MAX, "capacity is a uint16_t");

/*
 * Ownership tokens: a thread gets one when it first attaches, unique in the
 * process and in the children it forks.  The top bits are the fork
 * generation of the process: a context attached, in the parent, to a thread
 * that the child does not have carries a token of an older generation, and
 * in the child counts as detached.
 */
#define TOKEN_SERIAL_BITS 40
#define TOKEN_GEN_MASK ((UINT64_C(1) << (64 - TOKEN_SERIAL_BITS)) - 1)

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;
static bool exit_key_ready;
static uint64_t fork_generation;
static uint64_t token_serial;

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
 * pthread_once() untouched.  The pthread_once() in register_thread() covers
 * a constructor of another object that runs before this one. */
__attribute__((constructor)) static void on_load(void)
{
	pthread_once(&init_once, init);
}

#ifdef OTEL__OWN_SLOT
/*
 * The static library may be linked into a shared object (a tracer shipped as
 * a plugin) that is later dlclose()d.  The thread-exit cleanup is a function
 * of that object, so it must be unregistered first, or every thread that
 * exits afterwards calls into unmapped code.  (glibc drops the fork handler
 * of an unloaded object by itself; musl never unloads.)  The shared library
 * is linked with -z nodelete and never unloaded, so it keeps its key until
 * the process ends.
 */
__attribute__((destructor)) static void on_unload(void)
{
	if (exit_key_ready) {
		exit_key_ready = false;
		pthread_key_delete(exit_key);
	}
}
#endif

static inline uint64_t current_generation(void)
{
	return __atomic_load_n(&fork_generation, __ATOMIC_RELAXED) & TOKEN_GEN_MASK;
}

static uint64_t new_token(void)
{
	uint64_t serial = __atomic_add_fetch(&token_serial, 1, __ATOMIC_RELAXED);

	serial &= (UINT64_C(1) << TOKEN_SERIAL_BITS) - 1;
	if (serial == 0)
		serial = 1;
	return current_generation() << TOKEN_SERIAL_BITS | serial;
}

/* The token of a thread of this process (not of a parent's thread). */
static inline bool live_token(uint64_t token)
{
	return token != 0 && token >> TOKEN_SERIAL_BITS == current_generation();
}

static inline bool frozen(const struct otel_thread_ctx *ctx);

/* True when ctx is attached to a thread other than the one owning `t`. */
static inline bool attached_elsewhere(const struct otel_thread_ctx *ctx,
				      const struct otel__thread *t)
{
	uint64_t owner;

	if (t->ctx == ctx)
		return false;
	owner = __atomic_load_n(&ctx->owner, __ATOMIC_ACQUIRE);
	return owner != 0 && owner != t->token && live_token(owner);
}

/* The same, for functions that do not otherwise need the calling thread:
 * a detached context costs no TLS access. */
static inline bool busy(const struct otel_thread_ctx *ctx)
{
	uint64_t owner = __atomic_load_n(&ctx->owner, __ATOMIC_ACQUIRE);

	return owner != 0 && owner != otel__thread_self()->token && live_token(owner);
}

/* 0 when the calling thread may edit ctx, else why not: a frozen context
 * (EFROZEN), or one attached to another thread (EBUSY). */
static inline int refuse_edit(const struct otel_thread_ctx *ctx)
{
	if (frozen(ctx))
		return OTEL_THREAD_CTX_EFROZEN;
	return busy(ctx) ? OTEL_THREAD_CTX_EBUSY : OTEL_THREAD_CTX_OK;
}

/* Returns from the calling function when refuse_edit() refuses. */
#define REFUSE_EDIT(ctx)                                                        \
	do {                                                                    \
		int refused_ = refuse_edit(ctx);                                \
		if (refused_ != 0)                                              \
			return refused_;                                        \
	} while (0)

/* Makes the calling thread (token t->token) the owner of ctx, unless another
 * thread of this process is. */
static inline bool claim(struct otel_thread_ctx *ctx, const struct otel__thread *t)
{
	uint64_t seen = __atomic_load_n(&ctx->owner, __ATOMIC_RELAXED);

	if (seen != 0 && live_token(seen))
		return false;
	return __atomic_compare_exchange_n(&ctx->owner, &seen, t->token, false,
					   __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

/* Gives ctx up; the caller must not touch it afterwards. */
static inline void unclaim(struct otel_thread_ctx *ctx)
{
	__atomic_store_n(&ctx->owner, 0, __ATOMIC_RELEASE);
}

static inline bool frozen(const struct otel_thread_ctx *ctx)
{
	return __atomic_load_n(&ctx->flags, __ATOMIC_RELAXED) & FROZEN;
}

/* Frozen contexts whose last reference was dropped where free() may not be
 * called; linked through their `draft` field. */
static struct otel_thread_ctx *deferred;

/* Async-signal-safe: a compare-and-swap loop, no lock. */
static void defer_free(struct otel_thread_ctx *ctx)
{
	struct otel_thread_ctx *head = __atomic_load_n(&deferred, __ATOMIC_RELAXED);

	do
		ctx->draft = (struct otel_thread_ctx_record *)(void *)head;
	while (!__atomic_compare_exchange_n(&deferred, &head, ctx, true, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED));
}

/* Frees what defer_free() kept.  Not async-signal-safe. */
static void free_deferred(void)
{
	struct otel_thread_ctx *ctx;

	if (__atomic_load_n(&deferred, __ATOMIC_RELAXED) == NULL)
		return;
	ctx = __atomic_exchange_n(&deferred, NULL, __ATOMIC_ACQUIRE);
	while (ctx != NULL) {
		struct otel_thread_ctx *next = (struct otel_thread_ctx *)(void *)ctx->draft;

		free(ctx);
		ctx = next;
	}
}

/* Drops one reference to a frozen context; the last one frees it, at once
 * if `may_free`, else later (defer_free()). */
static void unhold(struct otel_thread_ctx *ctx, bool may_free)
{
	/* Acquire-release rather than release plus an acquire fence: the same
	 * instruction on x86-64, and ThreadSanitizer understands it. */
	if (__atomic_sub_fetch(&ctx->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	if (may_free)
		free(ctx);
	else
		defer_free(ctx);
}

/* What a thread that stops publishing ctx gives back: its claim, or its
 * reference to a frozen context. */
static inline void let_go(struct otel_thread_ctx *ctx, bool may_free)
{
	if (frozen(ctx))
		unhold(ctx, may_free);
	else
		unclaim(ctx);
}

/* Makes `rec` (or NULL) what the thread publishes. */
static inline void publish(struct otel__thread *t,
			   const struct otel_thread_ctx_record *rec)
{
	/* The record is complete before the slot can lead to it ... */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(t->slot, rec, __ATOMIC_RELAXED);
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

/* The draft, up to date, becomes the published record (both records have
 * valid = 1 from the start: it is never written); the record it replaces,
 * the draft, differs from it in the fields the edits changed. */
static inline void swap_records(struct otel_thread_ctx *ctx)
{
	struct otel_thread_ctx_record *d = ctx->draft, *p = ctx->pub;
	unsigned int changed = ctx->edits & FIELD_ALL;

	ctx->draft = p;
	ctx->pub = d;
	ctx->shown = d;
	ctx->stale = changed;
	ctx->edits = 0;
}

/* Commits: the draft becomes the published record, or, without edits, an
 * invalidated context is shown again.  False if there was nothing to do. */
static inline bool commit(struct otel_thread_ctx *ctx)
{
	if (ctx->edits) {
		swap_records(ctx);
		return true;
	}
	if (ctx->shown == NULL) {
		ctx->shown = ctx->pub;
		return true;
	}
	return false;
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

/*
 * The first attach of a thread: the thread-exit cleanup, the slot in effect
 * and the thread's token.  Each is done once; the cleanup again when a later
 * pthread-key destructor of an exiting thread attaches after it ran.
 */
static int register_thread(struct otel__thread *t)
{
	pthread_once(&init_once, init);
	if (!exit_key_ready || pthread_setspecific(exit_key, t) != 0)
		return OTEL_THREAD_CTX_ETHREAD;
	if (t->slot == NULL)
		t->slot = otel__slot_in_effect();
	if (t->token == 0)
		t->token = new_token();
	t->hooked = 1;
	return OTEL_THREAD_CTX_OK;
}

/* Detaches what the thread has attached: the slot first, then the context
 * is given up (or freed, if it was handed to the thread). */
static void detach_thread(struct otel__thread *t, bool exiting)
{
	struct otel_thread_ctx *ctx = t->ctx;

	publish(t, NULL);
	t->ctx = NULL;
	if (exiting && (ctx->flags & OTEL_THREAD_CTX_FREE_WITH_THREAD))
		free(ctx);
	else
		let_go(ctx, exiting);
}

/* pthread key destructor, run by the exiting thread itself. */
static void on_thread_exit(void *arg)
{
	struct otel__thread *t = arg;

	/* A later destructor that attaches again registers again. */
	t->hooked = 0;
	if (t->ctx != NULL)
		detach_thread(t, true);
	free_deferred();
}

static void after_fork_child(void)
{
	struct otel__thread *t = otel__thread_self();

	__atomic_add_fetch(&fork_generation, 1, __ATOMIC_RELAXED);
	/* The only thread of the child keeps what it had attached. */
	if (t->token != 0)
		t->token = new_token();
	if (t->ctx != NULL)
		__atomic_store_n(&t->ctx->owner, t->token, __ATOMIC_RELAXED);
}

static size_t record_stride(unsigned int capacity)
{
	return (HEADER_SIZE + capacity + 15) & ~(size_t)15;
}

OTEL_EXPORT int otel_thread_ctx_create_with(otel_thread_ctx **out,
					    const struct otel_thread_ctx_options *options)
{
	unsigned int flags = 0, capacity = OTEL_THREAD_CTX_ATTRS_MAX;
	struct otel_thread_ctx *ctx;
	size_t stride;

	if (out == NULL)
		return OTEL_THREAD_CTX_ENULL;
	free_deferred();
	if (options != NULL) {
		if (options->size < sizeof(*options) || (options->flags & ~CREATE_FLAGS) != 0 ||
		    options->attrs_capacity > OTEL_THREAD_CTX_ATTRS_MAX)
			return OTEL_THREAD_CTX_EOPTIONS;
		flags = options->flags;
		capacity = options->attrs_capacity;
	}
	stride = record_stride(capacity);
	ctx = calloc(1, sizeof(*ctx) + 2 * stride);
	if (ctx == NULL)
		return OTEL_THREAD_CTX_ENOMEM;
	ctx->pub = (struct otel_thread_ctx_record *)(void *)ctx->storage;
	ctx->draft = (struct otel_thread_ctx_record *)(void *)(ctx->storage + stride);
	ctx->pub->valid = 1;
	ctx->draft->valid = 1;
	ctx->shown = ctx->pub;
	ctx->capacity = (uint16_t)capacity;
	ctx->flags = (uint16_t)flags;
	*out = ctx;
	return OTEL_THREAD_CTX_OK;
}

OTEL_EXPORT int otel_thread_ctx_create(otel_thread_ctx **out)
{
	return otel_thread_ctx_create_with(out, NULL);
}

OTEL_EXPORT int otel_thread_ctx_destroy(otel_thread_ctx *ctx)
{
	struct otel__thread *t;

	if (ctx == NULL)
		return OTEL_THREAD_CTX_OK;
	free_deferred();
	if (frozen(ctx)) {
		/* The caller's reference; threads keep theirs. */
		unhold(ctx, true);
		return OTEL_THREAD_CTX_OK;
	}
	t = otel__thread_self();
	if (t->ctx == ctx) {
		/* Attached to the calling thread: unpublished first. */
		publish(t, NULL);
		t->ctx = NULL;
	} else if (attached_elsewhere(ctx, t)) {
		return OTEL_THREAD_CTX_EBUSY;
	}
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

/* What the context holds now, committed or not: the record validation is
 * done against, before anything is written. */
static inline const struct otel_thread_ctx_record *view(struct otel_thread_ctx *ctx)
{
	return ctx->edits ? ctx->draft : ctx->pub;
}

OTEL_EXPORT int otel_thread_ctx_set_ids(otel_thread_ctx *ctx, const uint8_t trace_id[16],
					const uint8_t span_id[8], uint8_t trace_flags)
{
	if (ctx == NULL || trace_id == NULL || span_id == NULL)
		return OTEL_THREAD_CTX_ENULL;
	REFUSE_EDIT(ctx);
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
	REFUSE_EDIT(ctx);
	if (!span_fits(ctx, span_id))
		return OTEL_THREAD_CTX_EIDS;
	memcpy(edit(ctx, FIELD_SPAN, FIELD_SPAN)->span_id, span_id, 8);
	return OTEL_THREAD_CTX_OK;
}

OTEL_EXPORT int otel_thread_ctx_set_trace_flags(otel_thread_ctx *ctx, uint8_t trace_flags)
{
	if (ctx == NULL)
		return OTEL_THREAD_CTX_ENULL;
	REFUSE_EDIT(ctx);
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
	REFUSE_EDIT(ctx);
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
	REFUSE_EDIT(ctx);
	if (!otel__utf8_valid(value, len))
		return OTEL_THREAD_CTX_EUTF8;

	v = view(ctx);
	at = find_attr(v, key);
	if (at >= 0)
		old_entry = ENTRY_HEADER + v->attrs_data[at + 1];
	new_size = v->attrs_data_size - old_entry + ENTRY_HEADER + len;
	if (new_size > ctx->capacity)
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
__attribute__((always_inline)) static inline int attrs_encode(uint8_t *out, size_t capacity,
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
		if (size + ENTRY_HEADER + len > capacity)
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
		size = attrs_encode(NULL, ctx->capacity, attrs, n);
		if (size < 0)
			return size;
		attrs_encode(d->attrs_data, ctx->capacity, attrs, n);
	} else {
		/* They are a copy of the published ones, or stale: write while
		 * checking, and on a refusal put the copy back (or leave them
		 * stale). */
		size = attrs_encode(d->attrs_data, ctx->capacity, attrs, n);
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
	REFUSE_EDIT(ctx);
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
	REFUSE_EDIT(ctx);
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
	REFUSE_EDIT(ctx);
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

/*
 * attach and update_attach.  Inlined into both, so that commit_first is a
 * constant.  The first attach of a thread is a tail call to an out-of-line
 * function that registers the thread and starts again.
 *
 * A context attached elsewhere is refused before anything else; one that is
 * not is claimed first, so that its fields are read only by its owner, and
 * given back if the attach then fails.
 */
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
		if (__builtin_expect(!t->hooked, 0))
			return attach_first(ctx, prev, commit_first);
		if (frozen(ctx))
			/* Immutable and shared: one more holder, no edits. */
			__atomic_add_fetch(&ctx->refs, 1, __ATOMIC_RELAXED);
		else if (!claim(ctx, t))
			return OTEL_THREAD_CTX_EBUSY;
	}
	if (commit_first) {
		commit(ctx);
	} else if (ctx->edits) {
		if (old != ctx)
			unclaim(ctx);
		return OTEL_THREAD_CTX_EPENDING;
	}
	t->ctx = ctx;
	publish(t, ctx->shown);
	/* The old context is unreachable from the slot: give it up. */
	if (old != NULL && old != ctx)
		let_go(old, false);
	*prev = old;
	return OTEL_THREAD_CTX_OK;
}

/*
 * The first attach of a thread: registers the thread, then attaches.  Out
 * of line, so that on the common path no value has to survive a call but
 * the TLS access: fewer registers to save and restore.
 */
__attribute__((noinline, cold)) static int attach_first(otel_thread_ctx *ctx,
							 otel_thread_ctx **prev,
							 bool commit_first)
{
	int err = register_thread(otel__thread_self());

	if (err)
		return err;
	return attach(ctx, prev, commit_first);
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
	if (frozen(ctx))
		return OTEL_THREAD_CTX_EFROZEN;
	t = otel__thread_self();
	if (attached_elsewhere(ctx, t))
		return OTEL_THREAD_CTX_EBUSY;
	if (commit(ctx) && t->ctx == ctx)
		publish(t, ctx->shown);
	return OTEL_THREAD_CTX_OK;
}

OTEL_EXPORT int otel_thread_ctx_update_span_id(otel_thread_ctx *ctx, const uint8_t span_id[8])
{
	struct otel__thread *t;

	if (ctx == NULL || span_id == NULL)
		return OTEL_THREAD_CTX_ENULL;
	if (frozen(ctx))
		return OTEL_THREAD_CTX_EFROZEN;
	t = otel__thread_self();
	if (attached_elsewhere(ctx, t))
		return OTEL_THREAD_CTX_EBUSY;
	if (!span_fits(ctx, span_id))
		return OTEL_THREAD_CTX_EIDS;
	memcpy(edit(ctx, FIELD_SPAN, FIELD_SPAN)->span_id, span_id, 8);
	swap_records(ctx);
	if (t->ctx == ctx)
		publish(t, ctx->shown);
	return OTEL_THREAD_CTX_OK;
}

OTEL_EXPORT int otel_thread_ctx_update_trace_flags(otel_thread_ctx *ctx, uint8_t trace_flags)
{
	struct otel__thread *t;

	if (ctx == NULL)
		return OTEL_THREAD_CTX_ENULL;
	if (frozen(ctx))
		return OTEL_THREAD_CTX_EFROZEN;
	t = otel__thread_self();
	if (attached_elsewhere(ctx, t))
		return OTEL_THREAD_CTX_EBUSY;
	if (trace_flags != 0 && all_zero(view(ctx)->trace_id, 16))
		return OTEL_THREAD_CTX_EIDS;
	edit(ctx, FIELD_FLAGS, FIELD_FLAGS)->trace_flags = trace_flags;
	swap_records(ctx);
	if (t->ctx == ctx)
		publish(t, ctx->shown);
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
	if (frozen(ctx))
		return OTEL_THREAD_CTX_EFROZEN;
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
		publish(t, ctx->shown);
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
	if (old != NULL)
		detach_thread(t, false);
	*prev = old;
	return OTEL_THREAD_CTX_OK;
}

OTEL_EXPORT int otel_thread_ctx_invalidate(otel_thread_ctx *ctx)
{
	struct otel__thread *t;

	if (ctx == NULL)
		return OTEL_THREAD_CTX_ENULL;
	if (frozen(ctx))
		return OTEL_THREAD_CTX_EFROZEN;
	t = otel__thread_self();
	if (attached_elsewhere(ctx, t))
		return OTEL_THREAD_CTX_EBUSY;
	ctx->shown = NULL;
	if (t->ctx == ctx)
		publish(t, NULL);
	return OTEL_THREAD_CTX_OK;
}

OTEL_EXPORT int otel_thread_ctx_freeze(otel_thread_ctx *ctx)
{
	struct otel__thread *t;

	if (ctx == NULL)
		return OTEL_THREAD_CTX_ENULL;
	if (frozen(ctx))
		return OTEL_THREAD_CTX_OK;
	if (ctx->flags & OTEL_THREAD_CTX_FREE_WITH_THREAD)
		return OTEL_THREAD_CTX_EOPTIONS;
	t = otel__thread_self();
	if (attached_elsewhere(ctx, t))
		return OTEL_THREAD_CTX_EBUSY;
	/* What it holds now is what it will publish, shown. */
	if (commit(ctx) && t->ctx == ctx)
		publish(t, ctx->shown);
	/* Its holders: the caller, and the calling thread if it is attached
	 * here (its claim becomes a reference). */
	ctx->refs = t->ctx == ctx ? 2 : 1;
	__atomic_store_n(&ctx->owner, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&ctx->flags, (uint16_t)(ctx->flags | FROZEN), __ATOMIC_RELEASE);
	return OTEL_THREAD_CTX_OK;
}

OTEL_EXPORT int otel_thread_ctx_committed(otel_thread_ctx *ctx,
					  struct otel_thread_ctx_record *out)
{
	const struct otel_thread_ctx_record *p;

	if (ctx == NULL || out == NULL)
		return OTEL_THREAD_CTX_ENULL;
	/* A frozen context is immutable: any thread may read it. */
	if (!frozen(ctx) && busy(ctx))
		return OTEL_THREAD_CTX_EBUSY;
	p = ctx->pub;
	memcpy(out, p, HEADER_SIZE);
	out->valid = 1;
	otel__copy_bytes(out->attrs_data, p->attrs_data, p->attrs_data_size);
	return OTEL_THREAD_CTX_OK;
}

OTEL_EXPORT otel_thread_ctx *otel_thread_ctx_current(void)
{
	return otel__thread_self()->ctx;
}
