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
 * A thread's record is written by that thread only (OTEP 4947).  Each
 * thread that publishes has two records of its own, taken when it first
 * publishes and given back when it exits: the one its slot points to and a
 * draft.  Every publishing call writes the draft, then makes it the
 * published record with one pointer store, so that a reader interrupting the
 * thread at any instruction sees no record, the whole old one or the whole
 * new one, and never a record whose valid byte is not 1 (records are
 * published by pointer swap only; valid is always 1).
 *
 * A context (otel_thread_ctx) is a value: ids, trace flags and attributes,
 * and nothing of any thread.  otel_thread_ctx_attach() copies what it holds
 * into the calling thread's draft and publishes that; no slot ever leads
 * into a context.  So any number of threads may attach one context at once,
 * each publishing its own copy, and a context may be edited, handed to
 * another thread, attached again or destroyed whenever its owner likes: what
 * threads publish does not change until they publish again.  A context is
 * read by attach, update, copy and get, and written by the setters, copy
 * (its destination), save and detach (their `saved`): like any value, it
 * may be read by several threads at once, and written by one thread while
 * no other uses it.
 *
 * What a thread published before is given back as a value too: attach and
 * detach copy it into a context the caller provides (`saved`), which puts it
 * back later with otel_thread_ctx_update(saved).  A scope therefore restores
 * exactly what it replaced, whatever happened meanwhile to the contexts
 * involved.  A saved "nothing published" is a context that holds no record:
 * attaching it unpublishes.
 *
 * The fast paths of a tracer change the calling thread's own record with no
 * context at all: otel_thread_ctx_update_span_id() (a child span),
 * _update_trace_flags() (the sampling decision) and _update_all() (a new
 * request).  They copy only what changed since the thread's last publication.
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
 * Threads and memory
 * ------------------
 * A thread's two records (1,280 bytes) come from a pool the library maps
 * with mmap(), without malloc and without a lock, the first time the thread
 * publishes; the thread's exit unpublishes and gives them back to the pool,
 * so an exiting thread leaves nothing behind.  The pool holds records for
 * OTEL_THREAD_CTX_THREADS_MAX (129,024) threads publishing at once: past
 * that a thread's first publication fails with EFULL until a publishing
 * thread exits, and when memory is short with ENOMEM; either failure takes
 * nothing from the pool, so publication works again as soon as memory or a
 * record is back.  otel_thread_ctx_thread_records() says how many are in
 * use.  Once the thread-exit cleanup has run on a thread (a pthread-key
 * destructor that publishes after it), the thread publishes no more
 * (ETHREAD).  Only otel_thread_ctx_create() and _create_with() allocate
 * with malloc(), and only otel_thread_ctx_destroy() frees.
 *
 * Unloading
 * ---------
 * The shared library is never unloaded (-z nodelete).  A shared object that
 * links the static library may be dlclose()d: it unregisters the thread-exit
 * cleanup first, so threads may exit and the process fork afterwards.
 * Detach every thread before unloading it; the pool of records stays mapped.
 *
 * Signals and locks
 * -----------------
 * No function that publishes or reads thread contexts takes a lock or
 * calls malloc(), and none of the publishing paths uses an atomic
 * read-modify-write instruction (the first publication of a thread takes
 * its records from the pool with compare-and-swaps).  attach, update,
 * detach, save, the update_* fast paths, the setters, copy, get, the
 * readers and otel_thread_ctx_thread_records() are async-signal-safe, with
 * two limits that come from the platform, not from this library: the first
 * publication of each thread registers the thread-exit cleanup with
 * pthread_setspecific(), a plain store in glibc (for the first 32 keys of a
 * process; the library creates its key when it is loaded) and in musl; and
 * when the library was dlopen()ed into dynamic TLS, the loader may allocate
 * the thread's TLS block on the thread's first call into the library.
 * A signal handler may call any of them on the thread it interrupted (a
 * runtime switching green threads, a profiler tagging its sample): a
 * handler's attach, update, detach, save or update_* that interrupted one of
 * those same calls (or the thread's exit cleanup) on its thread returns
 * OTEL_THREAD_CTX_ENESTED and changes nothing, not even `saved`, and the
 * interrupted call completes as if it had not been interrupted; a handler's
 * call that interrupted none of them runs whole.  So when both return, the
 * slot shows a whole record of the interrupted call's publication, or of the
 * handler's when the handler ran whole, and every later call behaves as if
 * the two had run one after the other; a handler that got ENESTED may publish
 * again once the thread is out of the call (on its next signal, say).
 * Readers, which only load the slot, may run in a handler at any time.  A
 * handler must return to the call it interrupted: one that leaves it by
 * longjmp() or by switching stacks for good abandons that call, and the
 * thread's publishing calls return ENESTED from then on.  Registering an
 * attribute key, publishing the process context (otel_thread_ctx_process.h)
 * and otel_thread_ctx_self_check() are start-up work: they may lock and
 * allocate, as each one's comment says.
 *
 * fork()
 * ------
 * In the child, the thread that called fork() keeps publishing what it
 * published, from the same records.  The records of the parent's other
 * threads go back to the pool.  (The library learns of the fork through
 * pthread_atfork(); a child made by vfork() or a raw clone() system call
 * must only exec or _exit.)
 *
 * Platforms
 * ---------
 * Linux on x86-64 and aarch64, with glibc or musl.  Elsewhere (macOS,
 * Windows with a GNU-compatible compiler, other CPUs) the library builds as
 * a no-op (meson option `noop`): every function is there, so a tracer that
 * builds for several platforms needs no #ifdef of its own, and every
 * function that would create, change or publish a context, or publish the
 * process context, returns OTEL_THREAD_CTX_EUNSUPPORTED and changes nothing;
 * the slot stays NULL, so the readers report nothing (ENOCTX); the key
 * registry and the record decoders work as everywhere.
 *
 * Return values
 * -------------
 * Every function returns OTEL_THREAD_CTX_OK (0) on success or a negative
 * enum otel_thread_ctx_error, so `if (f() != 0)` always means "it did not do
 * it".  The exceptions say so where they are declared: functions that
 * return void, a pointer (otel_thread_ctx_strerror(),
 * otel_thread_ctx_key_name()) or a count (otel_thread_ctx_key_count()).  The attribute readers follow the rule
 * too: 0 when an attribute is stored in *out, OTEL_THREAD_CTX_ENOATTR when
 * there is none.
 *
 * Errors
 * ------
 * Every function that can fail checks in one order: missing pointers
 * (ENULL); then what the arguments alone get wrong (EOPTIONS, EKEY, EVALUE,
 * EUTF8, EDUPKEY, EIDS for ids given together); then what the state they
 * meet gets wrong (ENOCTX, EIDS against the ids already there, ENOSPC); then
 * resources (ENOMEM, ETHREAD).  A call that fails changes nothing: no
 * context, no record, no slot.  The library never aborts, exits or prints.
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
/* The thread-local slot (OTEP 4947): the symbol every reader looks up in a
 * module's .dynsym, and this library defines and writes. */
#define OTEL_THREAD_CTX_SLOT_NAME "otel_thread_ctx_v1"
/* Bytes of struct otel_thread_ctx_record before attrs_data: trace_id,
 * span_id, valid, trace_flags, attrs_data_size. */
#define OTEL_THREAD_CTX_RECORD_HEADER_SIZE 28u
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
OTEL_THREAD_CTX_STATIC_ASSERT(offsetof(struct otel_thread_ctx_record, attrs_data) ==
				      OTEL_THREAD_CTX_RECORD_HEADER_SIZE,
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
 * an errno equals its negation (OTEL_THREAD_CTX_ENOSPC == -ENOSPC, on every
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
	/* The thread-exit cleanup could not be set up (no pthread key was
	 * available), or has already run on this thread (a pthread-key
	 * destructor publishing after it), so publishing would leak. */
	OTEL_THREAD_CTX_ETHREAD = -4007,
	/* The thread publishes no context (the slot is NULL), or a context
	 * holds no record. */
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
	/* Options out of range: a size below sizeof(size_t), non-zero bytes
	 * past the fields this version knows, or a field out of range
	 * (otel_thread_ctx_create_with(), otel_thread_ctx_process_publish_with()). */
	OTEL_THREAD_CTX_EOPTIONS = -4021,
	/* The library was built without thread-context support for this
	 * platform (the no-op build: not Linux, or not x86-64 or aarch64):
	 * nothing is ever published, every reader reports nothing. */
	OTEL_THREAD_CTX_EUNSUPPORTED = -4023,
	/* otel_thread_ctx_attr_iter_next(): no more attributes;
	 * otel_thread_ctx_record_attr(): no attribute of that key. */
	OTEL_THREAD_CTX_ENOATTR = -4024,
	/* Called from a signal handler that interrupted a publishing call (or
	 * save, or the thread-exit cleanup) on the same thread; nothing
	 * changed ("Signals and locks"). */
	OTEL_THREAD_CTX_ENESTED = -4025,
	/* A thread's first publication: OTEL_THREAD_CTX_THREADS_MAX threads
	 * hold records already; it works again once one of them exits. */
	OTEL_THREAD_CTX_EFULL = -4026,
};

/* A static, English description of an error code of this header; never
 * NULL ("unknown ..." for others: see otel_thread_ctx_inspect_strerror()). */
const char *otel_thread_ctx_strerror(int error);

typedef struct otel_thread_ctx otel_thread_ctx;

/* One attribute: `len` bytes of UTF-8 at `value`.  The readers return these
 * (value then points into the record); otel_thread_ctx_set_attrs() and
 * otel_thread_ctx_update_all() take them. */
struct otel_thread_ctx_attr {
	unsigned int key;
	unsigned int len;
	const uint8_t *value;
};

/*
 * Contexts
 * --------
 */

/*
 * Allocates an empty context (a valid record with no ids and no attributes)
 * with room for OTEL_THREAD_CTX_ATTRS_MAX bytes of attributes, and stores it
 * in *ctx.  Errors: ENULL, ENOMEM.  Not async-signal-safe.
 */
int otel_thread_ctx_create(otel_thread_ctx **ctx);

/*
 * Options of otel_thread_ctx_create_with().  Every field left zero means
 * its default (libbpf's rule), so OTEL_THREAD_CTX_OPTIONS_INIT, or a zeroed
 * struct whose `size` is set, asks for the defaults.  `size` is what the
 * caller was built with:
 * a smaller size (a caller built against an older version) gives the fields
 * it does not reach their defaults; a larger one (a newer caller) is
 * accepted only when every byte past the fields this library knows is zero,
 * and is refused with EOPTIONS otherwise, so that an option this version
 * does not understand is never dropped silently.
 */
struct otel_thread_ctx_options {
	/* sizeof(struct otel_thread_ctx_options) as the caller knows it; at
	 * least sizeof(size_t). */
	size_t size;
	/* Bytes of attribute entries the context can hold, 1 to
	 * OTEL_THREAD_CTX_ATTRS_MAX; 0: the default, OTEL_THREAD_CTX_ATTRS_MAX.
	 * Setters that would go past it fail with ENOSPC. */
	unsigned int attrs_capacity;
	/* OTEL_THREAD_CTX_OPTION_* bits; 0: none.  (The struct has no
	 * padding, so that every byte past what a version knows can be
	 * checked.) */
	unsigned int flags;
};

/* options.flags: a context for ids only, with no room for attributes (it
 * takes 36 bytes); attrs_capacity must then be 0. */
#define OTEL_THREAD_CTX_OPTION_IDS_ONLY 1u

#define OTEL_THREAD_CTX_OPTIONS_INIT { sizeof(struct otel_thread_ctx_options), 0, 0 }

/*
 * otel_thread_ctx_create() with options; NULL options are the defaults.
 * Errors: ENULL, EOPTIONS (size below sizeof(size_t), unknown bytes not
 * zero, attrs_capacity above OTEL_THREAD_CTX_ATTRS_MAX, an unknown flag,
 * OTEL_THREAD_CTX_OPTION_IDS_ONLY with an attrs_capacity), ENOMEM.
 * Not async-signal-safe.
 */
int otel_thread_ctx_create_with(otel_thread_ctx **ctx,
				const struct otel_thread_ctx_options *options);

/* Frees a context; NULL does nothing.  Threads that attached it keep
 * publishing their copies.  Not async-signal-safe. */
void otel_thread_ctx_destroy(otel_thread_ctx *ctx);

/*
 * Setters.  Each changes the context and nothing else: threads that attached
 * it publish the change only when they attach it again.  All are
 * async-signal-safe and do not allocate.  A context that holds no record (a
 * saved "nothing published") holds an empty one after a setter succeeds.
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
 * Errors: ENULL (ctx, or value with len > 0), EKEY, EVALUE, EUTF8, ENOSPC.
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
 * Errors: ENULL (ctx, attrs with n > 0, a value with len > 0), EKEY, EVALUE,
 * EUTF8, EDUPKEY, ENOSPC.
 */
int otel_thread_ctx_set_attrs(otel_thread_ctx *ctx, const struct otel_thread_ctx_attr *attrs,
			      size_t n);

/*
 * Makes `dst` hold what `src` holds (a task that inherits its parent's
 * context).  Errors: ENULL; ENOSPC when src's attributes do not fit in dst's
 * capacity.  Async-signal-safe.
 */
int otel_thread_ctx_copy(otel_thread_ctx *dst, const otel_thread_ctx *src);

/*
 * Copies what ctx holds into *out, as the record a thread attaching it
 * publishes: the 28-byte header (valid is 1), then attrs_data_size bytes of
 * attributes; the rest of out->attrs_data is left as it was.
 * Errors: ENULL; ENOCTX when ctx holds no record (a saved "nothing
 * published").  Async-signal-safe.
 */
int otel_thread_ctx_get(const otel_thread_ctx *ctx, struct otel_thread_ctx_record *out);

/*
 * Publishing on the calling thread
 * --------------------------------
 * Each function here acts on the calling thread's slot and records only.
 * The first publication of a thread registers its exit cleanup and takes
 * its records from the pool: it may fail with ENOMEM (no memory for the
 * pool), EFULL (the pool is full) or ETHREAD (no pthread key, or the
 * thread's exit cleanup has run); later ones cannot.  Each may also return
 * ENESTED, in a signal handler only ("Signals and locks").
 */

/* How many threads the pool holds records for at once. */
#define OTEL_THREAD_CTX_THREADS_MAX 129024u

/*
 * Stores in *in_use how many threads hold records now (threads that have
 * published and not exited), and in *limit OTEL_THREAD_CTX_THREADS_MAX.
 * Errors: ENULL.  Async-signal-safe.
 */
int otel_thread_ctx_thread_records(unsigned int *in_use, unsigned int *limit);

/*
 * Publishes, on the calling thread, a copy of what ctx holds (with one
 * pointer store).  When `saved` is not NULL, it receives what the thread
 * published before (or "nothing published"), to be put back later with
 * otel_thread_ctx_update(saved); saved may be ctx itself.  A ctx that holds
 * no record unpublishes.
 * Errors: ENULL (ctx); ENESTED; ENOSPC when saved's capacity is smaller than
 * the attributes the thread publishes; ENOMEM, EFULL, ETHREAD.
 */
int otel_thread_ctx_attach(const otel_thread_ctx *ctx, otel_thread_ctx *saved);

/*
 * otel_thread_ctx_attach(ctx, NULL): the calling thread publishes what ctx
 * holds now, in place of whatever it published.  Errors: ENULL; ENESTED;
 * ENOMEM, EFULL, ETHREAD.
 */
int otel_thread_ctx_update(const otel_thread_ctx *ctx);

/*
 * Unpublishes: the calling thread's slot becomes NULL.  When `saved` is not
 * NULL it receives what the thread published (see attach).
 * Errors: ENESTED; ENOSPC (as attach).
 */
int otel_thread_ctx_detach(otel_thread_ctx *saved);

/*
 * Copies what the calling thread publishes into `saved` (or "nothing
 * published") and changes nothing else.  Errors: ENULL; ENESTED; ENOSPC (as
 * attach).
 */
int otel_thread_ctx_save(otel_thread_ctx *saved);

/*
 * A child span: the calling thread publishes its record with this span id.
 * Errors: ENULL; EIDS when the span id is all zero; ENESTED; ENOCTX when the
 * thread publishes nothing; EIDS when its record has no trace id.
 */
int otel_thread_ctx_update_span_id(const uint8_t span_id[8]);

/*
 * The sampling decision, when it comes after the span was published: the
 * calling thread publishes its record with these trace flags.
 * Errors: ENESTED; ENOCTX when the thread publishes nothing; EIDS when the
 * flags are non-zero and its record has no ids.
 */
int otel_thread_ctx_update_trace_flags(uint8_t trace_flags);

/*
 * A new request: the calling thread publishes a record with these ids,
 * flags and attributes (checked as otel_thread_ctx_set_ids() and
 * otel_thread_ctx_set_attrs() check them, against a capacity of
 * OTEL_THREAD_CTX_ATTRS_MAX), whatever it published before.
 * Errors: ENULL; EIDS; then each attribute in turn: ENULL (value with
 * len > 0), EKEY, EVALUE, EUTF8, EDUPKEY, ENOSPC; then ENESTED; then ENOMEM,
 * EFULL, ETHREAD.
 */
int otel_thread_ctx_update_all(const uint8_t trace_id[16], const uint8_t span_id[8],
			       uint8_t trace_flags, const struct otel_thread_ctx_attr *attrs,
			       size_t n);

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
 * Stores the next effective attribute in *out and returns 0.  Entries
 * overridden by a later entry with the same key are skipped, so each key
 * comes out once, with its last value, in the order of those last entries.
 * A truncated entry ends the walk.
 * Errors: ENULL (it, its record or out NULL); ENOATTR (no more attributes).
 */
int otel_thread_ctx_attr_iter_next(struct otel_thread_ctx_attr_iter *it,
				   struct otel_thread_ctx_attr *out);
/* The effective value of `key` in rec: returns 0 and fills *out.
 * Errors: ENULL (rec or out NULL); ENOATTR (rec has no attribute `key`,
 * or this process's key map does not name `key`). */
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
 * returns; if that fails, the key is not registered.  Published or not, a
 * key is refused when the key map with it could not fit in a process
 * context (OTEL_THREAD_CTX_PROCESS_PAYLOAD_MAX bytes, with no resource
 * attributes), since the registry never forgets a name.
 * Errors: ENULL; ENAME; EKEYS when 256 names are registered; E2BIG when the
 * key map would not fit, or (published) the payload with the new key would
 * not; ENOMEM (the publication stays as it was).  Takes a lock; not
 * async-signal-safe.
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
