/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otel-thread-ctx: publish, per OS thread, which trace and span the thread is
 * running, in the OpenTelemetry thread-context format (OTEP 4947), so that
 * profilers inside and outside the process can read it.
 *
 * The published state of a thread is the thread-local pointer
 * otel_thread_ctx_v1.  It is NULL when the thread publishes nothing, or
 * points to a struct otel_thread_ctx_record.  The library defines the slot and
 * reaches it only through the TLS descriptor (TLSDESC) sequence that linkers
 * know how to relax, whatever the compiler or its flags.
 *
 * Model
 * -----
 * A context (otel_thread_ctx) is an object the caller creates.  It holds two
 * records: the published one, which readers may be looking at, and a draft.
 * The setters (otel_thread_ctx_set_*, _remove_attr, _clear*) edit the draft
 * only; nothing a reader can see changes until the edits are committed by
 * otel_thread_ctx_update() or otel_thread_ctx_update_attach().  A commit turns
 * the draft into the published record and, when the context is attached to
 * the calling thread, moves the thread's slot to it with a single pointer
 * store.  A reader interrupting the thread at any instruction therefore sees
 * no record, the complete old one or the complete new one, and never a record
 * whose valid byte is not 1: records are published by pointer swap only.
 *
 * Ownership
 * ---------
 * The caller that creates a context holds it until it calls
 * otel_thread_ctx_destroy().  Attaching lends it to a thread: while attached,
 * it belongs to that thread, and other threads can neither attach, edit,
 * commit, invalidate nor destroy it (OTEL_THREAD_CTX_EBUSY; the claim is
 * atomic, so of two threads attaching one context exactly one succeeds).
 * The attach that replaces it, or otel_thread_ctx_detach(), hands it back.
 *
 * A thread that exits with a context attached unpublishes it and hands it
 * back to its holder, who destroys it when it wants, before or after the
 * thread is gone: the context stays valid until then, in whatever order
 * thread exit and the holder's cleanup run (a pthread-key destructor of the
 * holder, a finalizer of a managed runtime on another thread).  destroy()
 * called on the thread the context is attached to unpublishes it first.
 * A context created with OTEL_THREAD_CTX_FREE_WITH_THREAD is instead given
 * to the thread it is attached to: if that thread exits with it attached,
 * the library frees it, and the caller must not use it afterwards.  Either
 * way nothing stays behind for an exited thread when the holder follows its
 * rule (destroy, or FREE_WITH_THREAD), and the slot never points to freed
 * memory.
 *
 * A context is not itself thread-safe: edit it from one thread at a time,
 * and while it is attached, only from the thread it is attached to.
 *
 * Other definitions of the slot
 * -----------------------------
 * When a module earlier in the lookup scope (the executable, another
 * tracer's library) also defines otel_thread_ctx_v1, symbol resolution makes
 * that definition the slot in effect for this library, and records are
 * published there, where readers find them; the library writes only those 8
 * bytes, never what follows them.  Its own per-thread state is a hidden
 * thread-local that no other definition can take the place of.
 * otel_thread_ctx_self_check() says which module's slot is in effect.  (The
 * static library always uses its own definition, which in an executable is
 * the one in effect.)
 *
 * Unloading
 * ---------
 * The shared library is never unloaded (-z nodelete).  A shared object that
 * links the static library may be dlclose()d: it unregisters the thread-exit
 * cleanup first, so threads may exit and the process fork afterwards.
 * Detach every context from every thread before unloading it.
 *
 * Signals and locks
 * -----------------
 * The functions that publish and read thread contexts take no lock.  attach,
 * update, update_attach, update_span_id, update_all, detach, invalidate,
 * current, the setters and the readers never allocate and are
 * async-signal-safe, with two limits that come from the platform, not from
 * this library: the first attach on each thread registers the thread-exit
 * cleanup with pthread_setspecific(), a plain store in glibc (for the first 32
 * keys of a process; the library creates its key when it is loaded) and in
 * musl; and when the library was dlopen()ed into dynamic TLS, the loader may
 * allocate the thread's TLS block on the thread's first call into the library.
 * A signal handler that interrupts one of these calls on the same thread may
 * read the slot at any time, but must not itself change that thread's
 * attachment or edit the context being changed.  Of the thread-context
 * functions, only otel_thread_ctx_create() and _create_with() allocate, and
 * only otel_thread_ctx_destroy() and thread exit (FREE_WITH_THREAD) free.  Registering an attribute
 * key, publishing the process context (otel_thread_ctx_process.h) and
 * otel_thread_ctx_self_check() are start-up work: they may lock and
 * allocate, as each one's comment says.
 *
 * fork()
 * ------
 * In the child, the thread that called fork() keeps its attached context: the
 * same pointer, the same record, still attached and still owned by it.
 * Contexts that were attached to other threads of the parent are, in the
 * child, detached: the child may destroy them or attach them.  (The library
 * learns of the fork through pthread_atfork(); a child made by vfork() or a
 * raw clone() system call must only exec or _exit.)
 *
 * Errors
 * ------
 * Every function that can fail returns OTEL_THREAD_CTX_OK (0) or a negative
 * enum otel_thread_ctx_error.  A call that fails changes nothing: neither the
 * published record, nor the draft, nor any thread's slot.  The library never
 * aborts, exits or prints.
 */
#ifndef OTEL_THREAD_CTX_H
#define OTEL_THREAD_CTX_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OTEL_THREAD_CTX_VERSION_MAJOR 1
#define OTEL_THREAD_CTX_VERSION_MINOR 0
#define OTEL_THREAD_CTX_VERSION_PATCH 0

/* The record (OTEP 4947).  Native endianness, no padding, 640 bytes. */
#define OTEL_THREAD_CTX_RECORD_SIZE 640u
/* Bytes available for attribute entries in one record. */
#define OTEL_THREAD_CTX_ATTRS_MAX 612u
/* Longest attribute value, in bytes. */
#define OTEL_THREAD_CTX_VALUE_MAX 255u
/* Highest attribute key index (an index into the process context's
 * threadlocal.attribute_key_map). */
#define OTEL_THREAD_CTX_KEY_MAX 255u

/*
 * What otel_thread_ctx_v1 points to.  A reader must check valid == 1 before
 * using anything else, must not read more than OTEL_THREAD_CTX_RECORD_SIZE
 * bytes, and decodes attrs_data as a sequence of entries
 * [key index: u8][length: u8][length bytes of UTF-8], stopping at a truncated
 * entry; when a key repeats, the last entry wins.
 */
struct otel_thread_ctx_record {
	uint8_t trace_id[16];     /* W3C trace id; all zero: no trace */
	uint8_t span_id[8];       /* W3C span id; set exactly when trace_id is */
	uint8_t valid;            /* 1: consistent; anything else: ignore */
	uint8_t trace_flags;      /* W3C trace flags; 0 without ids */
	uint16_t attrs_data_size; /* bytes used in attrs_data */
	uint8_t attrs_data[OTEL_THREAD_CTX_ATTRS_MAX];
};

#ifdef __cplusplus
#define OTEL_THREAD_CTX_STATIC_ASSERT static_assert
#else
#define OTEL_THREAD_CTX_STATIC_ASSERT _Static_assert
#endif
OTEL_THREAD_CTX_STATIC_ASSERT(sizeof(struct otel_thread_ctx_record) == 640,
			      "record size");
OTEL_THREAD_CTX_STATIC_ASSERT(offsetof(struct otel_thread_ctx_record, trace_id) == 0,
			      "trace_id offset");
OTEL_THREAD_CTX_STATIC_ASSERT(offsetof(struct otel_thread_ctx_record, span_id) == 16,
			      "span_id offset");
OTEL_THREAD_CTX_STATIC_ASSERT(offsetof(struct otel_thread_ctx_record, valid) == 24,
			      "valid offset");
OTEL_THREAD_CTX_STATIC_ASSERT(offsetof(struct otel_thread_ctx_record, trace_flags) == 25,
			      "trace_flags offset");
OTEL_THREAD_CTX_STATIC_ASSERT(offsetof(struct otel_thread_ctx_record, attrs_data_size) == 26,
			      "attrs_data_size offset");
OTEL_THREAD_CTX_STATIC_ASSERT(offsetof(struct otel_thread_ctx_record, attrs_data) == 28,
			      "attrs_data offset");
#undef OTEL_THREAD_CTX_STATIC_ASSERT

/*
 * The slot.  Defined by the library: an 8-byte, 8-aligned thread-local
 * pointer, STT_TLS, STB_GLOBAL, default visibility, exported in .dynsym.
 * Readers in this process may load it (in a signal handler, say); only the
 * library stores to it.
 */
extern __thread const struct otel_thread_ctx_record *otel_thread_ctx_v1;

/*
 * Return values.  Stable: new codes are only ever added.  A code named after
 * an errno equals its negation (OTEL_THREAD_CTX_EBUSY == -EBUSY, on every
 * Linux architecture); the library's own conditions have codes from -4001
 * down, with names no errno has.  The reading side of another process
 * (otel_thread_ctx_inspect.h) adds its own codes, from -4101 down.
 */
enum otel_thread_ctx_error {
	OTEL_THREAD_CTX_OK = 0,
	/* -E2BIG: the process context payload would exceed
	 * OTEL_THREAD_CTX_PROCESS_PAYLOAD_MAX bytes. */
	OTEL_THREAD_CTX_E2BIG = -7,
	/* -ENOMEM: out of memory. */
	OTEL_THREAD_CTX_ENOMEM = -12,
	/* -EBUSY: the context is attached to another thread (every function
	 * that takes a context, destroy included). */
	OTEL_THREAD_CTX_EBUSY = -16,
	/* -ENOSPC: the attributes would need more bytes than the context's
	 * capacity (OTEL_THREAD_CTX_ATTRS_MAX unless created smaller). */
	OTEL_THREAD_CTX_ENOSPC = -28,
	/* A pointer argument that is required was NULL. */
	OTEL_THREAD_CTX_ENULL = -4001,
	/* The ids would be set half-way: trace id without span id or the
	 * reverse, trace flags without ids, or a span id on a context that has
	 * no trace id. */
	OTEL_THREAD_CTX_EIDS = -4002,
	/* Attribute key index above OTEL_THREAD_CTX_KEY_MAX. */
	OTEL_THREAD_CTX_EKEY = -4003,
	/* Attribute value longer than OTEL_THREAD_CTX_VALUE_MAX bytes. */
	OTEL_THREAD_CTX_EVALUE = -4004,
	/* Attribute value is not valid UTF-8. */
	OTEL_THREAD_CTX_EUTF8 = -4005,
	/* attach: the context has edits that are not committed; publishing it
	 * would show older data than it holds.  Use update_attach. */
	OTEL_THREAD_CTX_EPENDING = -4006,
	/* The thread-exit cleanup could not be set up (no pthread key was
	 * available), so attaching would leak at thread exit. */
	OTEL_THREAD_CTX_ETHREAD = -4007,
	/* Readers: the thread publishes no context (the slot is NULL). */
	OTEL_THREAD_CTX_ENOCTX = -4008,
	/* Readers: the record's valid byte is not 1; ignore the record. */
	OTEL_THREAD_CTX_EINVALID = -4009,
	/* Readers: fewer bytes than a record header (28). */
	OTEL_THREAD_CTX_ETRUNCATED = -4010,
	/* otel_thread_ctx_self_check(): a profiler would not find the slot
	 * this library writes (the result says why). */
	OTEL_THREAD_CTX_ESLOT = -4011,
	/* Key name empty, longer than OTEL_THREAD_CTX_KEY_NAME_MAX bytes, or
	 * not valid UTF-8. */
	OTEL_THREAD_CTX_ENAME = -4012,
	/* All OTEL_THREAD_CTX_KEY_MAX + 1 key indices are taken. */
	OTEL_THREAD_CTX_EKEYS = -4013,
	/* No attribute key of that name is registered. */
	OTEL_THREAD_CTX_EUNKNOWNKEY = -4014,
	/* The process context is published already. */
	OTEL_THREAD_CTX_EPUBLISHED = -4015,
	/* The process context is not published. */
	OTEL_THREAD_CTX_ENOTPUBLISHED = -4016,
	/* A resource attribute is invalid: empty or duplicate key, key not
	 * valid UTF-8, or a value type that cannot be published. */
	OTEL_THREAD_CTX_EATTR = -4017,
	/* No mapping readers can find: memfd_create() is unavailable and the
	 * kernel cannot name an anonymous mapping. */
	OTEL_THREAD_CTX_EMAP = -4018,
	/* A system call failed for a reason not listed; errno says why. */
	OTEL_THREAD_CTX_ESYS = -4019,
	/* otel_thread_ctx_set_attrs(): the same key twice. */
	OTEL_THREAD_CTX_EDUPKEY = -4020,
	/* Options out of range: otel_thread_ctx_create_with() (size too
	 * small, an unknown flag, attrs_capacity above
	 * OTEL_THREAD_CTX_ATTRS_MAX), otel_thread_ctx_process_publish_with()
	 * (size too small, an unknown schema or fork value). */
	OTEL_THREAD_CTX_EOPTIONS = -4021,
	/* The context is frozen (otel_thread_ctx_freeze()): it cannot be
	 * edited, committed or invalidated any more. */
	OTEL_THREAD_CTX_EFROZEN = -4022,
};

/* A static, English description of an error code of this header; never
 * NULL ("unknown ..." for others: see otel_thread_ctx_inspect_strerror()). */
const char *otel_thread_ctx_strerror(int error);

typedef struct otel_thread_ctx otel_thread_ctx;

/* One attribute: `len` bytes of UTF-8 at `value`.  The readers return these
 * (value then points into the record); otel_thread_ctx_set_attrs() takes
 * them. */
struct otel_thread_ctx_attr {
	unsigned int key;
	unsigned int len;
	const uint8_t *value;
};

/*
 * Allocates a context whose published record is valid and empty (no ids, no
 * attributes), with room for OTEL_THREAD_CTX_ATTRS_MAX bytes of attributes,
 * and stores it in *ctx; the caller holds it (see "Ownership").  Of the
 * thread-context functions only create and create_with allocate.
 * Errors: ENULL, ENOMEM.  Not async-signal-safe.
 */
int otel_thread_ctx_create(otel_thread_ctx **ctx);

/* Creation flag: the thread a context is attached to when it exits frees
 * it (see "Ownership"). */
#define OTEL_THREAD_CTX_FREE_WITH_THREAD 0x1u

/* Options of otel_thread_ctx_create_with().  Start from
 * OTEL_THREAD_CTX_OPTIONS_INIT, which gives create()'s defaults, so that a
 * later version may add fields. */
struct otel_thread_ctx_options {
	/* sizeof(struct otel_thread_ctx_options). */
	size_t size;
	/* OTEL_THREAD_CTX_FREE_WITH_THREAD, or 0. */
	unsigned int flags;
	/* Bytes of attribute entries the context's records can hold, 0 to
	 * OTEL_THREAD_CTX_ATTRS_MAX: 0 for a context with ids only.  Its
	 * records take 28 bytes plus this, and setters that would go past it
	 * fail with ENOSPC. */
	unsigned int attrs_capacity;
};

#define OTEL_THREAD_CTX_OPTIONS_INIT                                            \
	{ sizeof(struct otel_thread_ctx_options), 0, OTEL_THREAD_CTX_ATTRS_MAX }

/*
 * otel_thread_ctx_create() with options; NULL options are the defaults.
 * Errors: ENULL, EOPTIONS, ENOMEM.  Not async-signal-safe.
 */
int otel_thread_ctx_create_with(otel_thread_ctx **ctx,
				const struct otel_thread_ctx_options *options);

/*
 * Frees a context.  NULL is accepted and does nothing.  A context attached
 * to the calling thread is unpublished first.
 * Errors: EBUSY if the context is attached to another thread (nothing
 * changes).  Not async-signal-safe.
 */
int otel_thread_ctx_destroy(otel_thread_ctx *ctx);

/*
 * Draft setters.  They change what the next commit publishes and nothing
 * else.  All are async-signal-safe and do not allocate, and all fail with
 * EBUSY, changing nothing, on a context attached to another thread.
 */

/* Sets both ids and the trace flags.  Both ids all zero (with flags 0) clears
 * them.  Errors: ENULL; EIDS when exactly one id is all zero, or when flags
 * are non-zero without ids. */
int otel_thread_ctx_set_ids(otel_thread_ctx *ctx, const uint8_t trace_id[16],
			    const uint8_t span_id[8], uint8_t trace_flags);
/* Changes the span id only (a new span in the same trace).
 * Errors: ENULL; EIDS when the span id is all zero or there is no trace id. */
int otel_thread_ctx_set_span_id(otel_thread_ctx *ctx, const uint8_t span_id[8]);
/* Changes the trace flags only.  Errors: ENULL; EIDS when the flags are
 * non-zero and there are no ids. */
int otel_thread_ctx_set_trace_flags(otel_thread_ctx *ctx, uint8_t trace_flags);
/* Removes both ids and the flags.  Errors: ENULL. */
int otel_thread_ctx_clear_ids(otel_thread_ctx *ctx);

/*
 * Sets attribute `key` (0..255, an index into the process context's attribute
 * key map) to the `len` bytes at `value` (UTF-8, at most 255 bytes; value may
 * be NULL when len is 0).  The index is not checked against the registry
 * (the key map may come from another component), but readers ignore an
 * entry whose index the published key map does not name: register the key
 * (otel_thread_ctx_key_register()) before using its index.  An existing
 * entry for the key is replaced in place, so a record never holds a key
 * twice.
 * Errors: ENULL, EKEY, EVALUE, EUTF8, ENOSPC.
 */
int otel_thread_ctx_set_attr(otel_thread_ctx *ctx, unsigned int key,
			     const void *value, size_t len);
/* Removes attribute `key`; absent is not an error.  Errors: ENULL, EKEY. */
int otel_thread_ctx_remove_attr(otel_thread_ctx *ctx, unsigned int key);
/* Removes every attribute.  Errors: ENULL. */
int otel_thread_ctx_clear_attrs(otel_thread_ctx *ctx);
/* Removes ids, flags and attributes.  Errors: ENULL. */
int otel_thread_ctx_clear(otel_thread_ctx *ctx);

/*
 * Replaces all the attributes with the `n` given ones, in that order, in one
 * call: what the start of a request wants.  Each is checked as
 * otel_thread_ctx_set_attr() checks one; keys must be distinct; together they
 * must fit in the context's capacity.  n == 0 (attrs may then be NULL)
 * removes all.
 * Errors: ENULL, EKEY, EVALUE, EUTF8, EDUPKEY, ENOSPC.
 */
int otel_thread_ctx_set_attrs(otel_thread_ctx *ctx, const struct otel_thread_ctx_attr *attrs,
			      size_t n);

/*
 * Publishes `ctx` on the calling thread and stores in *prev the context it
 * replaces (NULL if none); the caller holds *prev again.  If ctx is already
 * attached to the calling thread nothing changes and *prev is ctx.  The
 * claim on ctx is atomic: when threads race to attach one context, one
 * succeeds and the others fail with EBUSY.
 * Errors: ENULL; EPENDING when ctx has uncommitted edits; EBUSY when ctx is
 * attached to another thread; ETHREAD.
 */
int otel_thread_ctx_attach(otel_thread_ctx *ctx, otel_thread_ctx **prev);

/*
 * Commits the draft of `ctx`: it becomes the published record.  If ctx is
 * attached to the calling thread, the thread publishes the new record with
 * one pointer store.  A context that was invalidated becomes valid again.
 * Errors: ENULL; EBUSY when ctx is attached to another thread.
 */
int otel_thread_ctx_update(otel_thread_ctx *ctx);

/*
 * otel_thread_ctx_set_span_id() and otel_thread_ctx_update() in one call, the
 * step a tracer takes at every child span.  Errors: ENULL; EBUSY when ctx is
 * attached to another thread; EIDS when the span id is all zero or there is
 * no trace id.
 */
int otel_thread_ctx_update_span_id(otel_thread_ctx *ctx, const uint8_t span_id[8]);

/*
 * otel_thread_ctx_set_trace_flags() and otel_thread_ctx_update() in one
 * call: the step a tracer takes when the sampling decision arrives after
 * the span was published.  Errors: ENULL; EFROZEN; EBUSY when ctx is
 * attached to another thread; EIDS when the flags are non-zero and there
 * are no ids.
 */
int otel_thread_ctx_update_trace_flags(otel_thread_ctx *ctx, uint8_t trace_flags);

/*
 * otel_thread_ctx_set_ids(), otel_thread_ctx_set_attrs() and
 * otel_thread_ctx_update() in one call, with every argument checked before
 * anything changes: the step a tracer takes when a thread starts work on a
 * new request.  Errors: those of the three; EBUSY when ctx is attached to
 * another thread.
 */
int otel_thread_ctx_update_all(otel_thread_ctx *ctx, const uint8_t trace_id[16],
			       const uint8_t span_id[8], uint8_t trace_flags,
			       const struct otel_thread_ctx_attr *attrs, size_t n);

/*
 * otel_thread_ctx_update() and otel_thread_ctx_attach() in one step, with a
 * single store to the slot: the thread goes from publishing *prev straight to
 * publishing ctx's new record, and never shows ctx's older data.
 * Errors: ENULL; EBUSY when ctx is attached to another thread; ETHREAD.
 */
int otel_thread_ctx_update_attach(otel_thread_ctx *ctx, otel_thread_ctx **prev);

/*
 * Unpublishes: the calling thread's slot becomes NULL, and *prev receives the
 * context that was attached (NULL if none), owned by the caller again.
 * Errors: ENULL.
 */
int otel_thread_ctx_detach(otel_thread_ctx **prev);

/*
 * Withdraws what `ctx` publishes without detaching or freeing it: a thread
 * that has it attached publishes nothing (its slot is NULL) until the next
 * otel_thread_ctx_update() or _update_attach() of ctx, which publishes its
 * record again, with or without new edits.  Attaching it meanwhile publishes
 * nothing either.  Records are only ever published by pointer swap: no
 * published record is marked invalid in place (the format asks a writer to
 * use one method).
 * Errors: ENULL; EBUSY when ctx is attached to another thread.
 */
int otel_thread_ctx_invalidate(otel_thread_ctx *ctx);

/*
 * Shared contexts
 * ---------------
 * A runtime with user-level tasks (async Rust, asyncio, fibers, an M:N
 * scheduler) may run one task's context on several threads at once.
 * otel_thread_ctx_freeze() commits what ctx holds and makes it immutable
 * and shared: any number of threads may then attach it at the same time
 * (attach and update_attach never refuse it), each holding a reference,
 * as does the caller; destroy() gives up the caller's reference only, and
 * detach, an attach that replaces it, or thread exit give up a thread's.
 * The last holder to let go frees it.  A reference dropped by detach or
 * attach (which stay async-signal-safe and take no lock) does not call
 * free(): the context is freed by the next create, destroy or thread exit
 * of any thread.  Setters, commits and invalidate fail with EFROZEN; to
 * change what a task publishes, freeze a new context.  Destroy a frozen
 * context once, as any other.  In the child of a fork(), a frozen context
 * that threads of the parent had attached keeps their references: it is
 * not freed there.
 *
 * Errors: ENULL; EBUSY when ctx is attached to another thread; EOPTIONS
 * for a context created with OTEL_THREAD_CTX_FREE_WITH_THREAD (it belongs
 * to one thread).  Freezing a frozen context does nothing.
 * Async-signal-safe.
 */
int otel_thread_ctx_freeze(otel_thread_ctx *ctx);

/*
 * Copies what ctx has committed (ids, flags, attributes: its published
 * record, even while invalidated) into *out: the 28-byte header, with valid
 * set to 1, then attrs_data_size bytes of attributes; the rest of
 * out->attrs_data is left as it was.  No allocation: for a tracer that
 * restores a parent span, or copies a context to a new task.
 * Errors: ENULL; EBUSY when ctx is attached to another thread (a frozen
 * context may be read from any thread).  Async-signal-safe.
 */
int otel_thread_ctx_committed(otel_thread_ctx *ctx, struct otel_thread_ctx_record *out);

/* The context attached to the calling thread, or NULL.  Borrowed: the thread
 * still owns it. */
otel_thread_ctx *otel_thread_ctx_current(void);

/*
 * Readers
 * -------
 * What a profiler does to read a context.  otel_thread_ctx_read() is for a
 * sampler that runs on the thread itself, in a signal handler; the other
 * functions work on any copy of a record, such as bytes read from another
 * process.  All are async-signal-safe, take no locks and do not allocate.
 * The rules are the format's: a record whose valid byte is not 1 is
 * ignored; no more than OTEL_THREAD_CTX_RECORD_SIZE bytes are read;
 * attribute decoding stops at an entry that does not fit in attrs_data_size
 * (or in the 612 bytes); when a key repeats, the last entry wins.  Values are
 * returned as the bytes the writer stored, not re-validated as UTF-8.
 */

/*
 * Copies the record the calling thread publishes into *out: the 28-byte
 * header, then attrs_data_size bytes of attributes (at most 612; a larger
 * attrs_data_size is clamped to 612 in *out).  Only those bytes are read,
 * and only those are written: the rest of out->attrs_data is left as it was.
 * Errors: ENULL; ENOCTX when nothing is published; EINVALID when the record
 * is marked invalid (*out then holds the header only).
 */
int otel_thread_ctx_read(struct otel_thread_ctx_record *out);

/*
 * Checks and copies `len` bytes of a record obtained elsewhere into *out, by
 * the same rules: attrs_data_size is clamped to what `len` and the 612 bytes
 * allow, and the rest of out->attrs_data is left as it was.
 * Errors: ENULL; ETRUNCATED when len < 28; EINVALID when valid != 1.
 */
int otel_thread_ctx_record_decode(const void *bytes, size_t len,
				  struct otel_thread_ctx_record *out);


/*
 * Walks the attributes of a record.  Lives wherever the caller wants (a
 * signal handler's stack).  An entry whose key index is not in the key map
 * (the process context's threadlocal.attribute_key_map: indices below its
 * length) is skipped, as the format requires of readers, and counted in
 * `unmapped`; the other fields are private.
 */
struct otel_thread_ctx_attr_iter {
	const struct otel_thread_ctx_record *rec;
	size_t pos;
	unsigned int keys;
	/* Effective entries skipped so far for an index outside the key map. */
	unsigned int unmapped;
};

/* Starts a walk over rec's attributes, with this process's key map: the
 * registry of this library (what otel_thread_ctx_process_publish()
 * publishes; indices below otel_thread_ctx_key_count()).  rec must outlive
 * the walk. */
void otel_thread_ctx_attr_iter_init(struct otel_thread_ctx_attr_iter *it,
				    const struct otel_thread_ctx_record *rec);
/* The same with another key map of `key_count` names (that of the process
 * the record comes from; 0 when it publishes none: every entry is
 * skipped). */
void otel_thread_ctx_attr_iter_init_map(struct otel_thread_ctx_attr_iter *it,
					const struct otel_thread_ctx_record *rec,
					unsigned int key_count);
/*
 * Stores the next effective attribute in *out and returns 1, or returns 0
 * when there are no more.  Entries overridden by a later entry with the same
 * key are skipped, so each key comes out once, with its last value, in the
 * order of those last entries.  A truncated entry ends the walk.
 */
int otel_thread_ctx_attr_iter_next(struct otel_thread_ctx_attr_iter *it,
				   struct otel_thread_ctx_attr *out);
/* The effective value of `key` in rec: returns 1 and fills *out, or 0 (also
 * when this process's key map does not name `key`). */
int otel_thread_ctx_record_attr(const struct otel_thread_ctx_record *rec, unsigned int key,
				struct otel_thread_ctx_attr *out);

/*
 * Self-check: is the slot this library writes the one a profiler will find?
 *
 * A profiler looks otel_thread_ctx_v1 up in the .dynsym of the loaded
 * module that defines it and reads that module's TLS block of the thread.
 * The library writes wherever its own TLS descriptor access resolves.  The
 * two differ when the library is linked into an executable that does not
 * export the slot (linked without -Wl,--export-dynamic-symbol=otel_thread_ctx_v1,
 * which `pkg-config --static` adds, or a fully static non-PIE executable,
 * which has no .dynsym), or when two copies of the library are loaded and
 * the exported one is not the one the tracer uses.  In every such case the
 * tracer publishes contexts nobody sees; this tells it at start-up, with a
 * sentence it can log.
 */
enum otel_thread_ctx_self_check_status {
	/* A loaded module exports the slot, and in the calling thread it
	 * resolves to the address this library writes. */
	OTEL_THREAD_CTX_SELF_CHECK_OK = 0,
	/* No loaded module exports otel_thread_ctx_v1 in its .dynsym. */
	OTEL_THREAD_CTX_SELF_CHECK_NOT_EXPORTED = 1,
	/* Modules export it, but none resolves to the address this library
	 * writes (two copies of the library). */
	OTEL_THREAD_CTX_SELF_CHECK_MISMATCH = 2,
	/* A module exports it, but the calling thread has not allocated that
	 * module's TLS block, so the addresses cannot be compared. */
	OTEL_THREAD_CTX_SELF_CHECK_UNKNOWN = 3,
};

struct otel_thread_ctx_self_check {
	/* enum otel_thread_ctx_self_check_status */
	int status;
	/* The slot in effect: &otel_thread_ctx_v1 as this library's TLSDESC
	 * access computes it in the calling thread, where attach, update and
	 * detach store. */
	const void *slot;
	/* The library's own definition of otel_thread_ctx_v1 in the calling
	 * thread.  It is `slot` unless a module earlier in the lookup scope
	 * defines the symbol too (see "Other definitions of the slot"). */
	const void *own_slot;
	/* Non-zero when the slot in effect is the library's own definition. */
	int slot_is_own;
	/* What the exported otel_thread_ctx_v1 resolves to in the calling
	 * thread: the module's TLS block plus the symbol's value.  With
	 * status OK it equals `slot`; with MISMATCH it is the first exporting
	 * module's; NULL when nothing is exported. */
	const void *exported;
	/* The loader's name (path) of the module whose TLS block holds `slot`
	 * (the module whose definition is in effect), "" for the main program,
	 * NULL if none was found; and of the module
	 * `exported` belongs to (with UNKNOWN: the exporting module whose block
	 * could not be located).  Valid while that module stays loaded. */
	const char *module;
	const char *exported_module;
	/* Loaded modules whose .dynsym defines a TLS otel_thread_ctx_v1. */
	unsigned int exporting_modules;
	/* One English sentence: what was found, and what to do when it is not
	 * OK.  Always NUL-terminated. */
	char reason[384];
};

/*
 * Fills *result for the calling thread.  Returns OTEL_THREAD_CTX_OK when the
 * status is OK, OTEL_THREAD_CTX_ESLOT otherwise, ENULL when result is NULL.
 *
 * Meant for start-up (and for tests), and unlike the rest of the API not
 * async-signal-safe: it walks the loaded modules with dl_iterate_phdr(),
 * which takes the dynamic loader's lock; for an exporting module whose TLS
 * block the calling thread has not touched yet (one loaded by dlopen()), it
 * asks the loader for that block (__tls_get_addr), which allocates it as the
 * thread's first access would; and for a static executable without a
 * dynamic section it reads /proc/self/exe.  Do not call it while another
 * thread may dlclose() a module that defines otel_thread_ctx_v1.  It never
 * changes the slot or any context.
 */
int otel_thread_ctx_self_check(struct otel_thread_ctx_self_check *result);

/*
 * Attribute keys
 * --------------
 * The key index of an attribute (0..255) is a position in the process
 * context's threadlocal.attribute_key_map, the array of key names that
 * readers use to name attributes.  The registry below is that array: it
 * hands out indices in order of registration, never forgets or reorders a
 * name, and holds at most OTEL_THREAD_CTX_KEY_MAX + 1 names.  Once the
 * process context is published (otel_thread_ctx_process.h), registering a new key
 * republishes it, so readers know every index a record can use.
 *
 * Registration takes a lock (it is not async-signal-safe; call it at start-up
 * or when a new attribute first appears).  Lookups take none: find, name and
 * count are async-signal-safe, and a name, once returned, stays valid and
 * unchanged for the life of the process.  In a child made by fork() the
 * registry is the parent's, as it was at the fork.
 */

/* Longest key name, in bytes. */
#define OTEL_THREAD_CTX_KEY_NAME_MAX 255u

/*
 * Registers the key `name` (NUL-terminated UTF-8, 1 to
 * OTEL_THREAD_CTX_KEY_NAME_MAX bytes) and stores its index in *index.  A name
 * registered before gets its old index back, and nothing changes.  When the
 * process context is published, a new key is published with it before this
 * returns; if that fails, the key is not registered.
 * Errors: ENULL; ENAME; EKEYS when 256 names are registered; when the
 * process context is published, E2BIG or ENOMEM (the publication stays as it
 * was).  Takes a lock; not async-signal-safe.
 */
int otel_thread_ctx_key_register(const char *name, unsigned int *index);

/* The index of a registered key name.  Errors: ENULL; EUNKNOWNKEY.
 * Async-signal-safe; takes no lock. */
int otel_thread_ctx_key_find(const char *name, unsigned int *index);

/* The name of key `index`, or NULL if no key has that index.
 * Async-signal-safe; takes no lock. */
const char *otel_thread_ctx_key_name(unsigned int index);

/* How many keys are registered (the next index handed out).
 * Async-signal-safe; takes no lock. */
unsigned int otel_thread_ctx_key_count(void);

#ifdef __cplusplus
}
#endif

#endif /* OTEL_THREAD_CTX_H */
