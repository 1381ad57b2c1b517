/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Contexts, and what the calling thread publishes.
 *
 * A context is a value: a record and its capacity, which no slot ever leads
 * to.  A thread's records are its own (src/pool.c): the one it published
 * last and a draft.  Every publication writes the draft, stores the slot,
 * and swaps the two roles.  Publication is pointer-swap only: a record a
 * slot points to is never written while it is reachable, and valid is 1 in
 * every record from the start.  Readers run on the thread (signal handlers)
 * or while it is stopped (ptrace, eBPF), so compiler ordering is all that
 * matters: every record store comes before the slot store that makes it
 * reachable, and every later store after it (the signal fences of
 * publish()).  Only the thread touches its records, so no publishing path
 * needs an atomic read-modify-write instruction.
 *
 * A signal handler may call any of them on the thread it interrupted.  Each
 * call that reads or changes the thread's state claims the thread first
 * (claim(): a plain byte, tested then set, then a compiler fence), and a
 * handler's call that finds the claim taken interrupted one and is refused
 * with ENESTED before it reads anything.  A handler that runs between the test
 * and the set finds the byte clear, runs whole and clears it again, so the
 * interrupted call then starts from the state the handler left: the two ran
 * one after the other.
 */
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <stdlib.h>

#include "copy.h"
#include "internal.h"
#include "options.h"
#include "pool.h"
#include "tls.h"
#include "utf8.h"

#define ENTRY_HEADER 2u

struct otel_thread_ctx {
	/* Bytes of attribute entries the record may hold. */
	uint16_t capacity;
	/* Non-zero: holds no record (a saved "nothing published"); the
	 * record is then empty. */
	uint8_t none;
	/* Non-zero when the record has a trace id (and so a span id). */
	uint8_t traced;
	/* The record: OTEL_THREAD_CTX_RECORD_HEADER_SIZE + capacity bytes, valid always 1. */
	_Alignas(8) unsigned char storage[];
};

/* The fields of a record, as far as the thread's draft is concerned. */
#define FIELD_TRACE 1u /* trace_id */
#define FIELD_SPAN 2u  /* span_id */
#define FIELD_FLAGS 4u /* trace_flags */
#define FIELD_ATTRS 8u /* attrs_data_size and attrs_data */
#define FIELD_ALL (FIELD_TRACE | FIELD_SPAN | FIELD_FLAGS | FIELD_ATTRS)

/* struct otel__thread's `shown`. */
#define SHOWN 1u  /* the slot points to pub */
#define TRACED 2u /* pub has a trace id */

/* struct otel__thread's `hooked`. */
#define HOOKED 1u /* the thread-exit cleanup is registered */
#define EXITED 2u /* it has run: the thread publishes no more */

_Static_assert(OTEL_THREAD_CTX_KEY_MAX == OTEL_THREAD_CTX_VALUE_MAX,
	       "attrs_encode() tests key and length against one bound");
_Static_assert(OTEL_THREAD_CTX_ATTRS_MAX <= UINT16_MAX, "capacity is a uint16_t");

static inline struct otel_thread_ctx_record *rec_of(otel_thread_ctx *ctx)
{
	return (struct otel_thread_ctx_record *)(void *)ctx->storage;
}

static inline const struct otel_thread_ctx_record *crec_of(const otel_thread_ctx *ctx)
{
	return (const struct otel_thread_ctx_record *)(const void *)ctx->storage;
}

/* --- threads -------------------------------------------------------------- */

/*
 * Finding the calling thread's state without the TLS call.  When the library
 * is in static TLS (an executable linking the archive; the shared library
 * loaded at start-up, or by dlopen() into the surplus), its thread-local
 * state lies at the same offset from the thread pointer in every thread, and
 * reading the thread pointer (one load on x86-64, one mrs on aarch64) plus
 * that offset replaces the TLSDESC call on every path.  The offset is
 * learned on the first publication of the process, from an access made the
 * usual way, and kept only when the access provably reaches static TLS
 * (otel__tlsdesc_is_static(), arch/); otherwise it stays 0 and every path
 * keeps the TLSDESC call.  A thread that exits and one created later at the
 * same thread pointer are no hazard: static TLS is part of the thread's
 * block, so the address computed is always the calling thread's own state,
 * which the C library sets to zero (.tbss) for each new thread.
 */
OTEL__TLSDESC_PROBE("otel__state_probe", "otel__thread_state")
extern char otel__state_probe[] __attribute__((visibility("hidden")));
static intptr_t state_offset;

/* The offset of the shortcut (0: off), and the calling thread's state by
 * it.  Where it is off, the caller makes the TLS call in a function of its
 * own, out of line, so that the registers and the stack alignment that call
 * needs cost nothing on the shortcut.  Hence each publishing function's
 * three parts: its body (NAME_on, inlined twice), the out-of-line TLS path
 * (NAME_call) and the exported entry.  One shared out-of-line function
 * returning the state instead would make every entry keep its arguments
 * across a call: gcc 12 -O2 then gives detach's shortcut a stack
 * adjustment and a register copy (3 instructions more). */
static inline intptr_t shortcut(void)
{
	return __atomic_load_n(&state_offset, __ATOMIC_RELAXED);
}

static inline struct otel__thread *thread_at(intptr_t off)
{
	return (struct otel__thread *)(otel__thread_pointer() + (uintptr_t)off);
}

/* Claims the thread for a call (false: a call of this thread that a signal
 * handler interrupted holds it).  Every read of the thread's state comes
 * after the claim. */
static inline bool claim(struct otel__thread *t)
{
	if (__builtin_expect(t->busy != 0, 0))
		return false;
	t->busy = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	return true;
}

/* Gives the claim back, after every write of the call. */
static inline void unclaim(struct otel__thread *t)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&t->busy, 0, __ATOMIC_RELAXED);
}

/* Sets `shown` and gives the claim back, in one store: a publication's
 * last. */
static inline void show_unclaim(struct otel__thread *t, unsigned int shown)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&t->shown_busy, (uint16_t)shown, __ATOMIC_RELAXED);
}


/* The offset in use, 0 when every path makes the TLSDESC call.  Hidden: for
 * the tests that link the archive (tests/hotpath/). */
__attribute__((visibility("hidden"))) intptr_t otel__thread_state_offset(void);
intptr_t otel__thread_state_offset(void)
{
	return __atomic_load_n(&state_offset, __ATOMIC_RELAXED);
}

/* Learns the offset, once: from the first thread that publishes. */
static void learn_state_offset(const struct otel__thread *t)
{
	if (__atomic_load_n(&state_offset, __ATOMIC_RELAXED) != 0)
		return;
	if (otel__tlsdesc_is_static((const unsigned char *)otel__state_probe))
		__atomic_store_n(&state_offset,
				 (intptr_t)((uintptr_t)t - otel__thread_pointer()),
				 __ATOMIC_RELAXED);
}

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;
static bool exit_key_ready;

static void on_thread_exit(void *arg);
static void after_fork_child(void);

static void init(void)
{
	exit_key_ready = pthread_key_create(&exit_key, on_thread_exit) == 0;
	/* Fails only for lack of memory; then a child keeps the records of
	 * the parent's other threads, unused. */
	(void)pthread_atfork(NULL, NULL, after_fork_child);
}

/* Done when the library is loaded, so that the first publication of a
 * thread, maybe in a signal handler, finds the key made and the lock of
 * pthread_once() untouched.  The pthread_once() in first_publication()
 * covers a constructor of another object that runs before this one. */
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

/* Makes `rec` (or NULL) what the thread publishes. */
static inline void publish(struct otel__thread *t, const struct otel_thread_ctx_record *rec)
{
	/* The record is complete before the slot can lead to it ... */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(t->slot, rec, __ATOMIC_RELAXED);
	/* ... and the record it replaced is not written before it is
	 * unreachable. */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static inline struct otel_thread_ctx_record *draft_of(const struct otel__thread *t)
{
	return (struct otel_thread_ctx_record *)((uintptr_t)t->pub ^ t->flip);
}

/* Publishes the draft d, which becomes pub; pub becomes the draft, which
 * differs from the new pub in the `changed` fields. */
static inline void publish_draft(struct otel__thread *t, struct otel_thread_ctx_record *d,
				 unsigned int changed)
{
	publish(t, d);
	t->pub = d;
	t->stale = changed;
}

/* The draft, with every stale field outside `skip` copied from pub
 * (attributes: the used bytes only). */
static inline struct otel_thread_ctx_record *draft_for(struct otel__thread *t, unsigned int skip)
{
	struct otel_thread_ctx_record *d = draft_of(t);
	const struct otel_thread_ctx_record *p = t->pub;
	unsigned int need = t->stale & ~skip;

	if (__builtin_expect(need == 0, 1))
		return d;
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
	return d;
}

/*
 * The first publication of a thread, with the thread claimed: the
 * thread-exit cleanup, the slot in effect, and the thread's records.  Out of
 * line and rare.  Once the cleanup has run (a pthread-key destructor of the
 * exiting thread publishing after it), the thread publishes no more: the C
 * library runs a destructor that a destructor registers only in its first
 * PTHREAD_DESTRUCTOR_ITERATIONS rounds, so records taken then could leak.
 * A failure takes nothing: the pool hands out no pair it could not map.
 */
__attribute__((noinline, cold)) static int first_publication(struct otel__thread *t)
{
	struct otel__pair *pair;
	int err;

	if (t->hooked == EXITED)
		return OTEL_THREAD_CTX_ETHREAD;
	pthread_once(&init_once, init);
	if (!exit_key_ready)
		return OTEL_THREAD_CTX_ETHREAD;
	err = otel__pool_take(t, &pair);
	if (err)
		return err;
	if (pthread_setspecific(exit_key, t) != 0) {
		otel__pool_give(pair);
		return OTEL_THREAD_CTX_ETHREAD;
	}
	if (t->slot == NULL)
		t->slot = otel__slot_in_effect();
	t->pub = &pair->rec[0];
	t->flip = (uintptr_t)&pair->rec[0] ^ (uintptr_t)&pair->rec[1];
	t->stale = FIELD_ALL;
	t->shown = 0;
	t->hooked = HOOKED;
	learn_state_offset(t);
	return OTEL_THREAD_CTX_OK;
}

/* pthread key destructor, run by the exiting thread itself: it
 * unpublishes, then gives its records back, with the thread claimed (a
 * handler that publishes meanwhile is refused). */
static void on_thread_exit(void *arg)
{
	struct otel__thread *t = arg;
	struct otel_thread_ctx_record *first;

	__atomic_store_n(&t->busy, 1, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->hooked = EXITED;
	if (t->pub != NULL) {
		publish(t, NULL);
		t->shown = 0;
		first = t->pub < draft_of(t) ? t->pub : draft_of(t);
		t->pub = NULL;
		t->flip = 0;
		otel__pool_give((struct otel__pair *)(void *)first);
	}
	unclaim(t);
}

static void after_fork_child(void)
{
	/* The only thread of the child keeps its records; the others' go
	 * back to the pool. */
	otel__pool_reclaim_after_fork(otel__thread_self());
}

/* --- checks ---------------------------------------------------------------- */

/* For the ids: n is a multiple of 8, read as 64-bit words. */
static inline bool all_zero(const uint8_t *p, size_t n)
{
	uint64_t acc = 0;

	for (size_t i = 0; i < n; i += 8) {
		uint64_t w;

		memcpy(&w, p + i, sizeof(w));
		acc |= w;
	}
	return acc == 0;
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

/* attrs_encode() with ascii_only: a value that is not all ASCII was met. */
#define NOT_ASCII INT32_MIN

/*
 * The checks of a list of attributes, and, when `out` is not NULL, the
 * entries written to it as they are checked.  Returns the bytes the entries
 * take, or an error.  With `ascii_only` (a constant) and `out`, a value with
 * a byte above 0x7f ends the walk with NOT_ASCII, so that the common case
 * runs with no call in its loop; the caller then starts again without it.
 */
__attribute__((always_inline)) static inline int attrs_encode(uint8_t *out, size_t capacity,
							  const struct otel_thread_ctx_attr *attrs,
							  size_t n, bool ascii_only)
{
	uint64_t seen[(OTEL_THREAD_CTX_KEY_MAX + 1) / 64] = { 0 };
	size_t size = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned int key = attrs[i].key, len = attrs[i].len;
		const uint8_t *value = attrs[i].value;
		size_t next = size + ENTRY_HEADER + len;
		uint64_t bit;

		if (value == NULL && len != 0)
			return OTEL_THREAD_CTX_ENULL;
		/* One test for both bounds on the common path. */
		if ((key | len) > OTEL_THREAD_CTX_KEY_MAX)
			return key > OTEL_THREAD_CTX_KEY_MAX ? OTEL_THREAD_CTX_EKEY
							     : OTEL_THREAD_CTX_EVALUE;
		/* Written as it is checked, where there is room: one pass. */
		if (out != NULL && next <= capacity) {
			if (ascii_only) {
				if (otel__copy_or(out + size + ENTRY_HEADER, value, len) &
				    OTEL__NOT_ASCII)
					return NOT_ASCII;
			} else if (!otel__utf8_copy(out + size + ENTRY_HEADER, value, len)) {
				return OTEL_THREAD_CTX_EUTF8;
			}
			out[size] = (uint8_t)key;
			out[size + 1] = (uint8_t)len;
		} else if (!otel__utf8_valid(value, len)) {
			return OTEL_THREAD_CTX_EUTF8;
		}
		bit = UINT64_C(1) << (key % 64);
		if (seen[key / 64] & bit)
			return OTEL_THREAD_CTX_EDUPKEY;
		seen[key / 64] |= bit;
		if (next > capacity)
			return OTEL_THREAD_CTX_ENOSPC;
		size = next;
	}
	return (int)size;
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

/* --- contexts -------------------------------------------------------------- */

/* The bytes of struct otel_thread_ctx_options this version knows. */
#define OPTIONS_KNOWN sizeof(struct otel_thread_ctx_options)
_Static_assert(OPTIONS_KNOWN == offsetof(struct otel_thread_ctx_options, flags) +
					sizeof(unsigned int),
	       "no padding in the options: every byte is a field");

OTEL_EXPORT int otel_thread_ctx_create_with(otel_thread_ctx **out,
					    const struct otel_thread_ctx_options *options)
{
	unsigned int capacity = 0, flags = 0;
	struct otel_thread_ctx *ctx;

	if (out == NULL)
		return OTEL_THREAD_CTX_ENULL;
	if (options != NULL) {
		if (!otel__options_valid(options, OPTIONS_KNOWN))
			return OTEL_THREAD_CTX_EOPTIONS;
		if (OTEL__OPTION_GIVEN(options, struct otel_thread_ctx_options, attrs_capacity))
			capacity = options->attrs_capacity;
		if (OTEL__OPTION_GIVEN(options, struct otel_thread_ctx_options, flags))
			flags = options->flags;
		if (capacity > OTEL_THREAD_CTX_ATTRS_MAX || (flags & ~OTEL_THREAD_CTX_OPTION_IDS_ONLY) != 0 ||
		    ((flags & OTEL_THREAD_CTX_OPTION_IDS_ONLY) != 0 && capacity != 0))
			return OTEL_THREAD_CTX_EOPTIONS;
	}
	/* Zero is the default, unless the caller asked for ids only. */
	if (capacity == 0 && (flags & OTEL_THREAD_CTX_OPTION_IDS_ONLY) == 0)
		capacity = OTEL_THREAD_CTX_ATTRS_MAX;
	ctx = calloc(1, sizeof(*ctx) + OTEL_THREAD_CTX_RECORD_HEADER_SIZE + capacity);
	if (ctx == NULL)
		return OTEL_THREAD_CTX_ENOMEM;
	ctx->capacity = (uint16_t)capacity;
	rec_of(ctx)->valid = 1;
	*out = ctx;
	return OTEL_THREAD_CTX_OK;
}

OTEL_EXPORT int otel_thread_ctx_create(otel_thread_ctx **out)
{
	return otel_thread_ctx_create_with(out, NULL);
}

OTEL_EXPORT void otel_thread_ctx_destroy(otel_thread_ctx *ctx)
{
	free(ctx);
}

/* A context that holds no record holds an empty one (valid stays 1). */
static inline void make_none(otel_thread_ctx *ctx)
{
	struct otel_thread_ctx_record *r = rec_of(ctx);

	memset(r->trace_id, 0, sizeof(r->trace_id));
	memset(r->span_id, 0, sizeof(r->span_id));
	r->trace_flags = 0;
	r->attrs_data_size = 0;
	ctx->none = 1;
	ctx->traced = 0;
}

OTEL_EXPORT int otel_thread_ctx_set_ids(otel_thread_ctx *ctx, const uint8_t trace_id[16],
					const uint8_t span_id[8], uint8_t trace_flags)
{
	if (ctx == NULL || trace_id == NULL || span_id == NULL)
		return OTEL_THREAD_CTX_ENULL;
	if (!ids_valid(trace_id, span_id, trace_flags))
		return OTEL_THREAD_CTX_EIDS;
	write_ids(rec_of(ctx), trace_id, span_id, trace_flags);
	ctx->none = 0;
	ctx->traced = !all_zero(trace_id, 16);
	return OTEL_THREAD_CTX_OK;
}

OTEL_EXPORT int otel_thread_ctx_set_span_id(otel_thread_ctx *ctx, const uint8_t span_id[8])
{
	if (ctx == NULL || span_id == NULL)
		return OTEL_THREAD_CTX_ENULL;
	if (all_zero(span_id, 8) || all_zero(rec_of(ctx)->trace_id, 16))
		return OTEL_THREAD_CTX_EIDS;
	memcpy(rec_of(ctx)->span_id, span_id, 8);
	ctx->none = 0;
	return OTEL_THREAD_CTX_OK;
}

OTEL_EXPORT int otel_thread_ctx_set_trace_flags(otel_thread_ctx *ctx, uint8_t trace_flags)
{
	if (ctx == NULL)
		return OTEL_THREAD_CTX_ENULL;
	if (trace_flags != 0 && all_zero(rec_of(ctx)->trace_id, 16))
		return OTEL_THREAD_CTX_EIDS;
	rec_of(ctx)->trace_flags = trace_flags;
	ctx->none = 0;
	return OTEL_THREAD_CTX_OK;
}

OTEL_EXPORT int otel_thread_ctx_clear_ids(otel_thread_ctx *ctx)
{
	struct otel_thread_ctx_record *r;

	if (ctx == NULL)
		return OTEL_THREAD_CTX_ENULL;
	r = rec_of(ctx);
	memset(r->trace_id, 0, sizeof(r->trace_id));
	memset(r->span_id, 0, sizeof(r->span_id));
	r->trace_flags = 0;
	ctx->none = 0;
	ctx->traced = 0;
	return OTEL_THREAD_CTX_OK;
}

OTEL_EXPORT int otel_thread_ctx_set_attr(otel_thread_ctx *ctx, unsigned int key,
					 const void *value, size_t len)
{
	struct otel_thread_ctx_record *r;
	size_t old_entry = 0, new_size;
	int at;

	if (ctx == NULL || (value == NULL && len != 0))
		return OTEL_THREAD_CTX_ENULL;
	if (key > OTEL_THREAD_CTX_KEY_MAX)
		return OTEL_THREAD_CTX_EKEY;
	if (len > OTEL_THREAD_CTX_VALUE_MAX)
		return OTEL_THREAD_CTX_EVALUE;
	if (!otel__utf8_valid(value, len))
		return OTEL_THREAD_CTX_EUTF8;

	r = rec_of(ctx);
	at = find_attr(r, key);
	if (at >= 0)
		old_entry = ENTRY_HEADER + r->attrs_data[at + 1];
	new_size = r->attrs_data_size - old_entry + ENTRY_HEADER + len;
	if (new_size > ctx->capacity)
		return OTEL_THREAD_CTX_ENOSPC;

	if (at < 0) {
		at = r->attrs_data_size;
	} else if (old_entry != ENTRY_HEADER + len) {
		/* Replace in place: shift what follows to the new length. */
		size_t tail = (size_t)at + old_entry;

		memmove(r->attrs_data + at + ENTRY_HEADER + len, r->attrs_data + tail,
			r->attrs_data_size - tail);
	}
	r->attrs_data[at] = (uint8_t)key;
	r->attrs_data[at + 1] = (uint8_t)len;
	if (len != 0)
		memmove(r->attrs_data + at + ENTRY_HEADER, value, len);
	r->attrs_data_size = (uint16_t)new_size;
	ctx->none = 0;
	return OTEL_THREAD_CTX_OK;
}

OTEL_EXPORT int otel_thread_ctx_set_attrs(otel_thread_ctx *ctx,
					  const struct otel_thread_ctx_attr *attrs, size_t n)
{
	int size;

	if (ctx == NULL || (attrs == NULL && n != 0))
		return OTEL_THREAD_CTX_ENULL;
	/* Checked before anything is written: a refusal changes nothing. */
	size = attrs_encode(NULL, ctx->capacity, attrs, n, false);
	if (size < 0)
		return size;
	attrs_encode(rec_of(ctx)->attrs_data, ctx->capacity, attrs, n, false);
	rec_of(ctx)->attrs_data_size = (uint16_t)size;
	ctx->none = 0;
	return OTEL_THREAD_CTX_OK;
}

OTEL_EXPORT int otel_thread_ctx_remove_attr(otel_thread_ctx *ctx, unsigned int key)
{
	struct otel_thread_ctx_record *r;
	size_t entry, tail;
	int at;

	if (ctx == NULL)
		return OTEL_THREAD_CTX_ENULL;
	if (key > OTEL_THREAD_CTX_KEY_MAX)
		return OTEL_THREAD_CTX_EKEY;
	r = rec_of(ctx);
	ctx->none = 0;
	at = find_attr(r, key);
	if (at < 0)
		return OTEL_THREAD_CTX_OK;
	entry = ENTRY_HEADER + r->attrs_data[at + 1];
	tail = (size_t)at + entry;
	memmove(r->attrs_data + at, r->attrs_data + tail, r->attrs_data_size - tail);
	r->attrs_data_size = (uint16_t)(r->attrs_data_size - entry);
	return OTEL_THREAD_CTX_OK;
}

OTEL_EXPORT int otel_thread_ctx_clear_attrs(otel_thread_ctx *ctx)
{
	if (ctx == NULL)
		return OTEL_THREAD_CTX_ENULL;
	rec_of(ctx)->attrs_data_size = 0;
	ctx->none = 0;
	return OTEL_THREAD_CTX_OK;
}

OTEL_EXPORT int otel_thread_ctx_clear(otel_thread_ctx *ctx)
{
	if (ctx == NULL)
		return OTEL_THREAD_CTX_ENULL;
	make_none(ctx);
	ctx->none = 0;
	return OTEL_THREAD_CTX_OK;
}

/* Copies a record's header (valid included, 1) and its used attribute
 * bytes. */
static inline void copy_record(struct otel_thread_ctx_record *dst,
			       const struct otel_thread_ctx_record *src)
{
	memcpy(dst, src, OTEL_THREAD_CTX_RECORD_HEADER_SIZE);
	otel__copy_bytes(dst->attrs_data, src->attrs_data, src->attrs_data_size);
}

OTEL_EXPORT int otel_thread_ctx_copy(otel_thread_ctx *dst, const otel_thread_ctx *src)
{
	if (dst == NULL || src == NULL)
		return OTEL_THREAD_CTX_ENULL;
	if (dst == src)
		return OTEL_THREAD_CTX_OK;
	if (crec_of(src)->attrs_data_size > dst->capacity)
		return OTEL_THREAD_CTX_ENOSPC;
	copy_record(rec_of(dst), crec_of(src));
	dst->none = src->none;
	dst->traced = src->traced;
	return OTEL_THREAD_CTX_OK;
}

OTEL_EXPORT int otel_thread_ctx_get(const otel_thread_ctx *ctx,
				    struct otel_thread_ctx_record *out)
{
	if (ctx == NULL || out == NULL)
		return OTEL_THREAD_CTX_ENULL;
	if (ctx->none)
		return OTEL_THREAD_CTX_ENOCTX;
	copy_record(out, crec_of(ctx));
	return OTEL_THREAD_CTX_OK;
}

/* --- publishing ------------------------------------------------------------ */

/*
 * Each publishing function claims the calling thread, runs an always-inline
 * body on its state, and gives the claim back.  The exported function finds
 * the state by the shortcut; where the shortcut is off, an out-of-line twin
 * (NAME_call) makes the TLS call.
 */

/* 0 when `saved` can hold what the thread publishes, else ENOSPC. */
static inline int check_saved(const struct otel__thread *t, const otel_thread_ctx *saved)
{
	if (saved != NULL && t->shown && t->pub->attrs_data_size > saved->capacity)
		return OTEL_THREAD_CTX_ENOSPC;
	return OTEL_THREAD_CTX_OK;
}

/* What the thread publishes into `saved` (check_saved() said it fits). */
static inline void save(const struct otel__thread *t, otel_thread_ctx *saved)
{
	if (t->shown) {
		copy_record(rec_of(saved), t->pub);
		saved->none = 0;
		saved->traced = (t->shown & TRACED) != 0;
	} else {
		make_none(saved);
	}
}

/* attach and update, the thread claimed and set up; every return gives the
 * claim back. */
__attribute__((always_inline)) static inline int attach_claimed(struct otel__thread *t,
								const otel_thread_ctx *ctx,
								otel_thread_ctx *saved)
{
	struct otel_thread_ctx_record *d;
	unsigned int shown;
	int err;

	if (saved != NULL) {
		err = check_saved(t, saved);
		if (err) {
			unclaim(t);
			return err;
		}
	}
	if (ctx->none) {
		if (saved != NULL)
			save(t, saved);
		publish(t, NULL);
		show_unclaim(t, 0);
		return OTEL_THREAD_CTX_OK;
	}
	/* The draft first: saved may be ctx, whose `traced` save changes. */
	d = draft_of(t);
	copy_record(d, crec_of(ctx));
	shown = SHOWN | (ctx->traced ? TRACED : 0);
	if (saved != NULL)
		save(t, saved);
	publish_draft(t, d, FIELD_ALL);
	show_unclaim(t, shown);
	return OTEL_THREAD_CTX_OK;
}

/* The first publication of a thread, claimed: it sets the thread up and
 * goes on.  Out of line, and called last, so that the common path keeps no
 * register across it. */
__attribute__((noinline, cold)) static int attach_first(struct otel__thread *t,
							 const otel_thread_ctx *ctx,
							 otel_thread_ctx *saved)
{
	int err;

	if (ctx->none) {
		/* Nothing was published, and nothing will be. */
		if (saved != NULL)
			make_none(saved);
		unclaim(t);
		return OTEL_THREAD_CTX_OK;
	}
	err = first_publication(t);
	if (err) {
		unclaim(t);
		return err;
	}
	return attach_claimed(t, ctx, saved);
}

__attribute__((always_inline)) static inline int attach_on(struct otel__thread *t,
							   const otel_thread_ctx *ctx,
							   otel_thread_ctx *saved)
{
	if (ctx == NULL)
		return OTEL_THREAD_CTX_ENULL;
	if (!claim(t))
		return OTEL_THREAD_CTX_ENESTED;
	if (__builtin_expect(t->pub == NULL, 0))
		return attach_first(t, ctx, saved);
	return attach_claimed(t, ctx, saved);
}

__attribute__((noinline)) static int attach_call(const otel_thread_ctx *ctx,
						 otel_thread_ctx *saved)
{
	return attach_on(otel__thread_self(), ctx, saved);
}

OTEL_EXPORT int otel_thread_ctx_attach(const otel_thread_ctx *ctx, otel_thread_ctx *saved)
{
	intptr_t off = shortcut();

	if (__builtin_expect(off == 0, 0))
		return attach_call(ctx, saved);
	return attach_on(thread_at(off), ctx, saved);
}

OTEL_EXPORT int otel_thread_ctx_update(const otel_thread_ctx *ctx)
{
	intptr_t off = shortcut();

	if (__builtin_expect(off == 0, 0))
		return attach_call(ctx, NULL);
	return attach_on(thread_at(off), ctx, NULL);
}

__attribute__((always_inline)) static inline int detach_on(struct otel__thread *t,
							   otel_thread_ctx *saved)
{
	int err;

	if (!claim(t))
		return OTEL_THREAD_CTX_ENESTED;
	if (!t->shown) {
		if (saved != NULL)
			make_none(saved);
		unclaim(t);
		return OTEL_THREAD_CTX_OK;
	}
	if (saved != NULL) {
		err = check_saved(t, saved);
		if (err) {
			unclaim(t);
			return err;
		}
		save(t, saved);
	}
	publish(t, NULL);
	show_unclaim(t, 0);
	return OTEL_THREAD_CTX_OK;
}

__attribute__((noinline)) static int detach_call(otel_thread_ctx *saved)
{
	return detach_on(otel__thread_self(), saved);
}

OTEL_EXPORT int otel_thread_ctx_detach(otel_thread_ctx *saved)
{
	intptr_t off = shortcut();

	if (__builtin_expect(off == 0, 0))
		return detach_call(saved);
	return detach_on(thread_at(off), saved);
}

OTEL_EXPORT int otel_thread_ctx_save(otel_thread_ctx *saved)
{
	struct otel__thread *t;
	intptr_t off;
	int err;

	if (saved == NULL)
		return OTEL_THREAD_CTX_ENULL;
	off = shortcut();
	t = off != 0 ? thread_at(off) : otel__thread_self();
	if (!claim(t))
		return OTEL_THREAD_CTX_ENESTED;
	err = check_saved(t, saved);
	if (err == OTEL_THREAD_CTX_OK)
		save(t, saved);
	unclaim(t);
	return err;
}

__attribute__((always_inline)) static inline int update_span_id_on(struct otel__thread *t,
								   const uint8_t span_id[8])
{
	struct otel_thread_ctx_record *d;
	int err;

	if (!claim(t))
		return OTEL_THREAD_CTX_ENESTED;
	if (__builtin_expect(t->shown == (SHOWN | TRACED), 1)) {
		d = draft_for(t, FIELD_SPAN);
		memcpy(d->span_id, span_id, 8);
		publish_draft(t, d, FIELD_SPAN);
		show_unclaim(t, SHOWN | TRACED);
		return OTEL_THREAD_CTX_OK;
	}
	err = t->shown ? OTEL_THREAD_CTX_EIDS : OTEL_THREAD_CTX_ENOCTX;
	unclaim(t);
	return err;
}

__attribute__((noinline)) static int update_span_id_call(const uint8_t span_id[8])
{
	return update_span_id_on(otel__thread_self(), span_id);
}

OTEL_EXPORT int otel_thread_ctx_update_span_id(const uint8_t span_id[8])
{
	intptr_t off;

	if (span_id == NULL)
		return OTEL_THREAD_CTX_ENULL;
	if (all_zero(span_id, 8))
		return OTEL_THREAD_CTX_EIDS;
	off = shortcut();
	if (__builtin_expect(off == 0, 0))
		return update_span_id_call(span_id);
	return update_span_id_on(thread_at(off), span_id);
}

__attribute__((always_inline)) static inline int update_trace_flags_on(struct otel__thread *t,
								       uint8_t trace_flags)
{
	struct otel_thread_ctx_record *d;
	unsigned int shown;
	int err;

	if (!claim(t))
		return OTEL_THREAD_CTX_ENESTED;
	shown = t->shown;
	if (__builtin_expect(shown == 0, 0)) {
		err = OTEL_THREAD_CTX_ENOCTX;
	} else if (trace_flags != 0 && !(shown & TRACED)) {
		err = OTEL_THREAD_CTX_EIDS;
	} else {
		d = draft_for(t, FIELD_FLAGS);
		d->trace_flags = trace_flags;
		publish_draft(t, d, FIELD_FLAGS);
		show_unclaim(t, shown);
		return OTEL_THREAD_CTX_OK;
	}
	unclaim(t);
	return err;
}

__attribute__((noinline)) static int update_trace_flags_call(uint8_t trace_flags)
{
	return update_trace_flags_on(otel__thread_self(), trace_flags);
}

OTEL_EXPORT int otel_thread_ctx_update_trace_flags(uint8_t trace_flags)
{
	intptr_t off = shortcut();

	if (__builtin_expect(off == 0, 0))
		return update_trace_flags_call(trace_flags);
	return update_trace_flags_on(thread_at(off), trace_flags);
}

/* The attributes of update_all again, with values that are not all ASCII:
 * out of line, so that the common case calls nothing. */
__attribute__((noinline)) static int attrs_encode_utf8(uint8_t *out,
							const struct otel_thread_ctx_attr *attrs,
							size_t n)
{
	return attrs_encode(out, OTEL_THREAD_CTX_ATTRS_MAX, attrs, n, false);
}

/* update_all, its arguments' pointers checked, the thread claimed and set
 * up; every return gives the claim back. */
__attribute__((always_inline)) static inline int update_all_claimed(
	struct otel__thread *t, const uint8_t trace_id[16], const uint8_t span_id[8],
	uint8_t trace_flags, const struct otel_thread_ctx_attr *attrs, size_t n)
{
	struct otel_thread_ctx_record *d;
	int size;

	/* The draft is the thread's own and unpublished: the entries are
	 * written as they are checked, and a refusal leaves its attributes
	 * stale, nothing else. */
	d = draft_of(t);
	size = attrs_encode(d->attrs_data, OTEL_THREAD_CTX_ATTRS_MAX, attrs, n, true);
	if (__builtin_expect(size == NOT_ASCII, 0))
		size = attrs_encode_utf8(d->attrs_data, attrs, n);
	if (size < 0) {
		t->stale |= FIELD_ATTRS;
		unclaim(t);
		return size;
	}
	d->attrs_data_size = (uint16_t)size;
	write_ids(d, trace_id, span_id, trace_flags);
	publish_draft(t, d, FIELD_ALL);
	show_unclaim(t, SHOWN | (all_zero(trace_id, 16) ? 0 : TRACED));
	return OTEL_THREAD_CTX_OK;
}

__attribute__((noinline, cold)) static int update_all_first(
	struct otel__thread *t, const uint8_t trace_id[16], const uint8_t span_id[8],
	uint8_t trace_flags, const struct otel_thread_ctx_attr *attrs, size_t n)
{
	/* The arguments' errors come before the resources'. */
	int err = attrs_encode(NULL, OTEL_THREAD_CTX_ATTRS_MAX, attrs, n, false);

	if (err >= 0)
		err = first_publication(t);
	if (err) {
		unclaim(t);
		return err;
	}
	return update_all_claimed(t, trace_id, span_id, trace_flags, attrs, n);
}

__attribute__((always_inline)) static inline int update_all_on(
	struct otel__thread *t, const uint8_t trace_id[16], const uint8_t span_id[8],
	uint8_t trace_flags, const struct otel_thread_ctx_attr *attrs, size_t n)
{
	int err;

	if (!claim(t)) {
		/* The arguments' errors come before the state's. */
		err = attrs_encode(NULL, OTEL_THREAD_CTX_ATTRS_MAX, attrs, n, false);
		return err < 0 ? err : OTEL_THREAD_CTX_ENESTED;
	}
	if (__builtin_expect(t->pub == NULL, 0))
		return update_all_first(t, trace_id, span_id, trace_flags, attrs, n);
	return update_all_claimed(t, trace_id, span_id, trace_flags, attrs, n);
}

__attribute__((noinline)) static int update_all_call(const uint8_t trace_id[16],
						     const uint8_t span_id[8],
						     uint8_t trace_flags,
						     const struct otel_thread_ctx_attr *attrs,
						     size_t n)
{
	return update_all_on(otel__thread_self(), trace_id, span_id, trace_flags, attrs, n);
}

OTEL_EXPORT int otel_thread_ctx_update_all(const uint8_t trace_id[16], const uint8_t span_id[8],
					   uint8_t trace_flags,
					   const struct otel_thread_ctx_attr *attrs, size_t n)
{
	intptr_t off;

	if (trace_id == NULL || span_id == NULL || (attrs == NULL && n != 0))
		return OTEL_THREAD_CTX_ENULL;
	if (!ids_valid(trace_id, span_id, trace_flags))
		return OTEL_THREAD_CTX_EIDS;
	off = shortcut();
	if (__builtin_expect(off == 0, 0))
		return update_all_call(trace_id, span_id, trace_flags, attrs, n);
	return update_all_on(thread_at(off), trace_id, span_id, trace_flags, attrs, n);
}

OTEL_EXPORT int otel_thread_ctx_thread_records(unsigned int *in_use, unsigned int *limit)
{
	if (in_use == NULL || limit == NULL)
		return OTEL_THREAD_CTX_ENULL;
	*in_use = otel__pool_in_use();
	*limit = OTEL_THREAD_CTX_THREADS_MAX;
	return OTEL_THREAD_CTX_OK;
}
