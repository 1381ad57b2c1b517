/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libotel-thread-ctx: publish, per OS thread, which trace and span the thread
 * runs, in the OpenTelemetry thread-context format (OTEP 4947), behind the
 * thread-local pointer otel_thread_ctx_v1; and read it back in the process.
 * Reference: man 7 otel-thread-ctx, and a page per function
 * (man 3 otel_thread_ctx_attach, ...).  The rules below are given in full
 * there, under the same names.
 *
 * Model: a context (otel_thread_ctx) is a value.  Attaching copies it into
 *   the calling thread's own records and publishes it with one pointer
 *   store: readers see no record, the whole old one or the whole new one.
 * Other definitions of the slot: when a module earlier in the lookup scope
 *   defines otel_thread_ctx_v1 too, records are published in that one
 *   (otel_thread_ctx_self_check() says which).
 * Unloading: the shared library is never unloaded; detach every thread
 *   before dlclose()ing an object that links the static library.
 * Signals and locks: publishing, the setters, copy, get and the readers take
 *   no lock, do not allocate and are async-signal-safe; a handler that
 *   interrupts a publishing call of its thread gets ENESTED and changes
 *   nothing.  Key registration, the process context and the self-check
 *   may lock and allocate.
 * Platforms: Linux on x86-64 and aarch64, glibc or musl; elsewhere a no-op
 *   build whose functions return OTEL_THREAD_CTX_EUNSUPPORTED.
 * Errors: OTEL_THREAD_CTX_OK (0) or a negative enum otel_thread_ctx_error,
 *   unless a function says otherwise; checked in the order ENULL, the
 *   arguments, the state, resources.  A call that fails changes nothing.
 *   The library never aborts, exits or prints.
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
/* The slot's symbol, which readers look up in a module's .dynsym. */
#define OTEL_THREAD_CTX_SLOT_NAME "otel_thread_ctx_v1"
/* Bytes of struct otel_thread_ctx_record before attrs_data. */
#define OTEL_THREAD_CTX_RECORD_HEADER_SIZE 28u
/* Bytes available for attribute entries in one record. */
#define OTEL_THREAD_CTX_ATTRS_MAX 612u
/* Longest attribute value, in bytes. */
#define OTEL_THREAD_CTX_VALUE_MAX 255u
/* Highest attribute key index (into threadlocal.attribute_key_map). */
#define OTEL_THREAD_CTX_KEY_MAX 255u

/*
 * What otel_thread_ctx_v1 points to.  Readers check valid == 1 first, read at
 * most OTEL_THREAD_CTX_RECORD_SIZE bytes, and decode attrs_data as entries
 * [key index: u8][length: u8][length bytes of UTF-8], stopping at a truncated
 * one; the last entry of a repeated key wins.
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

/* The slot: NULL, or the record the thread publishes.  Only the library
 * stores to it; readers may load it at any time, in a signal handler too. */
extern __thread const struct otel_thread_ctx_record *otel_thread_ctx_v1;

/*
 * Return values (man 3 otel_thread_ctx_strerror).  Stable: codes are only
 * added.  A code named after an errno equals its negation; the library's own
 * codes run from -4001 down, the inspector's (otel_thread_ctx_inspect.h) from
 * -4101 down.
 */
enum otel_thread_ctx_error {
	OTEL_THREAD_CTX_OK = 0,
	/* The process-context payload would exceed 65,536 bytes. */
	OTEL_THREAD_CTX_E2BIG = -7,
	OTEL_THREAD_CTX_ENOMEM = -12,
	/* The attributes would not fit in the context's capacity. */
	OTEL_THREAD_CTX_ENOSPC = -28,
	/* A required pointer argument was NULL. */
	OTEL_THREAD_CTX_ENULL = -4001,
	/* The ids would be set half-way: one without the other, flags without
	 * ids, a span id without a trace id. */
	OTEL_THREAD_CTX_EIDS = -4002,
	/* Attribute key index above OTEL_THREAD_CTX_KEY_MAX. */
	OTEL_THREAD_CTX_EKEY = -4003,
	/* Attribute value longer than OTEL_THREAD_CTX_VALUE_MAX bytes. */
	OTEL_THREAD_CTX_EVALUE = -4004,
	/* Attribute value is not valid UTF-8. */
	OTEL_THREAD_CTX_EUTF8 = -4005,
	/* The thread-exit cleanup could not be set up, or has already run. */
	OTEL_THREAD_CTX_ETHREAD = -4007,
	/* The thread publishes nothing, or a context holds no record. */
	OTEL_THREAD_CTX_ENOCTX = -4008,
	/* Readers: the record's valid byte is not 1; ignore the record. */
	OTEL_THREAD_CTX_EINVALID = -4009,
	/* Readers: fewer bytes than a record header (28). */
	OTEL_THREAD_CTX_ETRUNCATED = -4010,
	/* Self-check: a profiler would not find the slot the library writes. */
	OTEL_THREAD_CTX_ESLOT = -4011,
	/* Key name empty, too long, or not valid UTF-8. */
	OTEL_THREAD_CTX_ENAME = -4012,
	/* All OTEL_THREAD_CTX_KEY_MAX + 1 key indices are taken. */
	OTEL_THREAD_CTX_EKEYS = -4013,
	/* No attribute key of that name is registered. */
	OTEL_THREAD_CTX_EUNKNOWNKEY = -4014,
	/* The process context is published already. */
	OTEL_THREAD_CTX_EPUBLISHED = -4015,
	/* The process context is not published. */
	OTEL_THREAD_CTX_ENOTPUBLISHED = -4016,
	/* A resource attribute is invalid. */
	OTEL_THREAD_CTX_EATTR = -4017,
	/* No mapping readers can find could be made. */
	OTEL_THREAD_CTX_EMAP = -4018,
	/* A system call failed for a reason not listed; errno says why. */
	OTEL_THREAD_CTX_ESYS = -4019,
	/* The same attribute key twice. */
	OTEL_THREAD_CTX_EDUPKEY = -4020,
	/* Options out of range. */
	OTEL_THREAD_CTX_EOPTIONS = -4021,
	/* The no-op build: nothing is ever published. */
	OTEL_THREAD_CTX_EUNSUPPORTED = -4023,
	/* No (more) attributes. */
	OTEL_THREAD_CTX_ENOATTR = -4024,
	/* A signal handler interrupted a publishing call (or save, or the
	 * thread-exit cleanup) of its thread; nothing changed. */
	OTEL_THREAD_CTX_ENESTED = -4025,
	/* A thread's first publication: OTEL_THREAD_CTX_THREADS_MAX threads
	 * hold records already. */
	OTEL_THREAD_CTX_EFULL = -4026,
};

/* A static English description of a code of this header; never NULL. */
const char *otel_thread_ctx_strerror(int error);

typedef struct otel_thread_ctx otel_thread_ctx;

/* One attribute: `len` bytes of UTF-8 at `value` (from a reader: into the
 * record). */
struct otel_thread_ctx_attr {
	unsigned int key;
	unsigned int len;
	const uint8_t *value;
};

/* Contexts (man 3 otel_thread_ctx_create) */

/* Allocates an empty context with room for OTEL_THREAD_CTX_ATTRS_MAX bytes
 * of attributes into *ctx.  Errors: ENULL, ENOMEM.  Not async-signal-safe. */
int otel_thread_ctx_create(otel_thread_ctx **ctx);

/* Options of otel_thread_ctx_create_with(); a field left 0 is its default.
 * Start from OTEL_THREAD_CTX_OPTIONS_INIT. */
struct otel_thread_ctx_options {
	/* sizeof the struct as the caller knows it: a larger one is accepted
	 * only when the bytes this version does not know are zero. */
	size_t size;
	/* Bytes of attribute entries, 1 to OTEL_THREAD_CTX_ATTRS_MAX (0: that). */
	unsigned int attrs_capacity;
	unsigned int flags; /* OTEL_THREAD_CTX_OPTION_* bits */
};

/* A context for ids only (attrs_capacity must then be 0). */
#define OTEL_THREAD_CTX_OPTION_IDS_ONLY 1u

#define OTEL_THREAD_CTX_OPTIONS_INIT { sizeof(struct otel_thread_ctx_options), 0, 0 }

/* otel_thread_ctx_create() with options (NULL: the defaults).
 * Errors: ENULL, EOPTIONS, ENOMEM.  Not async-signal-safe. */
int otel_thread_ctx_create_with(otel_thread_ctx **ctx,
				const struct otel_thread_ctx_options *options);

/* Frees a context (NULL: nothing); threads that attached it keep their
 * copies.  Not async-signal-safe. */
void otel_thread_ctx_destroy(otel_thread_ctx *ctx);

/* Setters (man 3 otel_thread_ctx_set_ids, otel_thread_ctx_set_attr): they
 * change the context only, not what threads publish.  Async-signal-safe. */

/* Sets both ids and the trace flags (both ids all zero: none).
 * Errors: ENULL; EIDS (one id all zero, or flags without ids). */
int otel_thread_ctx_set_ids(otel_thread_ctx *ctx, const uint8_t trace_id[16],
			    const uint8_t span_id[8], uint8_t trace_flags);
/* Changes the span id only.  Errors: ENULL; EIDS (span id all zero, or no
 * trace id). */
int otel_thread_ctx_set_span_id(otel_thread_ctx *ctx, const uint8_t span_id[8]);
/* Changes the trace flags only.  Errors: ENULL; EIDS (flags without ids). */
int otel_thread_ctx_set_trace_flags(otel_thread_ctx *ctx, uint8_t trace_flags);
/* Removes both ids and the flags.  Errors: ENULL. */
int otel_thread_ctx_clear_ids(otel_thread_ctx *ctx);

/* Sets attribute `key` (a registered key index) to `len` bytes of UTF-8.
 * Errors: ENULL (ctx, or value with len > 0), EKEY, EVALUE, EUTF8, ENOSPC. */
int otel_thread_ctx_set_attr(otel_thread_ctx *ctx, unsigned int key,
			     const void *value, size_t len);
/* Removes attribute `key`; absent is not an error.  Errors: ENULL, EKEY. */
int otel_thread_ctx_remove_attr(otel_thread_ctx *ctx, unsigned int key);
/* Removes every attribute.  Errors: ENULL. */
int otel_thread_ctx_clear_attrs(otel_thread_ctx *ctx);
/* Removes ids, flags and attributes.  Errors: ENULL. */
int otel_thread_ctx_clear(otel_thread_ctx *ctx);

/* Replaces all the attributes with the `n` given ones (distinct keys).
 * Errors: ENULL (ctx, attrs with n > 0, a value with len > 0), EKEY, EVALUE,
 * EUTF8, EDUPKEY, ENOSPC. */
int otel_thread_ctx_set_attrs(otel_thread_ctx *ctx, const struct otel_thread_ctx_attr *attrs,
			      size_t n);

/* Makes `dst` hold what `src` holds.  Errors: ENULL; ENOSPC (src's
 * attributes do not fit in dst).  Async-signal-safe. */
int otel_thread_ctx_copy(otel_thread_ctx *dst, const otel_thread_ctx *src);

/* Copies into *out the record a thread attaching ctx would publish.
 * Errors: ENULL; ENOCTX (ctx holds no record).  Async-signal-safe. */
int otel_thread_ctx_get(const otel_thread_ctx *ctx, struct otel_thread_ctx_record *out);

/* Publishing on the calling thread (man 3 otel_thread_ctx_attach): only a
 * thread's first publication can fail with ENOMEM, EFULL or ETHREAD, and
 * only a signal handler's call with ENESTED.  All async-signal-safe. */

/* How many threads may hold records at once. */
#define OTEL_THREAD_CTX_THREADS_MAX 129024u

/* Threads holding records now, and OTEL_THREAD_CTX_THREADS_MAX.
 * Errors: ENULL.  Async-signal-safe. */
int otel_thread_ctx_thread_records(unsigned int *in_use, unsigned int *limit);

/* Publishes a copy of ctx on the calling thread; `saved` (may be NULL)
 * receives what it published before, for otel_thread_ctx_update(saved).
 * Errors: ENULL (ctx); ENESTED; ENOSPC (saved too small); ENOMEM, EFULL,
 * ETHREAD. */
int otel_thread_ctx_attach(const otel_thread_ctx *ctx, otel_thread_ctx *saved);

/* otel_thread_ctx_attach(ctx, NULL).  Errors: ENULL; ENESTED; ENOMEM,
 * EFULL, ETHREAD. */
int otel_thread_ctx_update(const otel_thread_ctx *ctx);

/* Unpublishes (the slot becomes NULL); `saved` as for attach.
 * Errors: ENESTED; ENOSPC (as attach). */
int otel_thread_ctx_detach(otel_thread_ctx *saved);

/* Copies what the calling thread publishes into `saved`.
 * Errors: ENULL; ENESTED; ENOSPC (as attach). */
int otel_thread_ctx_save(otel_thread_ctx *saved);

/* A child span: the calling thread republishes its record with this span
 * id.  Errors: ENULL; EIDS (all zero); ENESTED; ENOCTX (nothing published);
 * EIDS (no trace id). */
int otel_thread_ctx_update_span_id(const uint8_t span_id[8]);

/* A late sampling decision: the calling thread republishes its record with
 * these flags.  Errors: ENESTED; ENOCTX; EIDS (flags without ids). */
int otel_thread_ctx_update_trace_flags(uint8_t trace_flags);

/* A new request: the calling thread publishes these ids, flags and
 * attributes, with no context.  Errors: ENULL; EIDS; per attribute ENULL,
 * EKEY, EVALUE, EUTF8, EDUPKEY, ENOSPC; ENESTED; ENOMEM, EFULL, ETHREAD. */
int otel_thread_ctx_update_all(const uint8_t trace_id[16], const uint8_t span_id[8],
			       uint8_t trace_flags, const struct otel_thread_ctx_attr *attrs,
			       size_t n);

/* Readers, by the format's rules (man 3 otel_thread_ctx_read): all
 * async-signal-safe, with no lock and no allocation. */

/* Copies the record the calling thread publishes into *out (a sampler's
 * signal handler).  Errors: ENULL; ENOCTX; EINVALID (header only in *out). */
int otel_thread_ctx_read(struct otel_thread_ctx_record *out);

/* Checks and copies `len` bytes of a record obtained elsewhere into *out.
 * Errors: ENULL; ETRUNCATED (len < 28); EINVALID (valid != 1). */
int otel_thread_ctx_record_decode(const void *bytes, size_t len,
				  struct otel_thread_ctx_record *out);


/* A walk over the attributes of a record; only `unmapped` is public. */
struct otel_thread_ctx_attr_iter {
	const struct otel_thread_ctx_record *rec;
	size_t pos;
	unsigned int keys;
	/* Effective entries skipped so far for an index outside the key map. */
	unsigned int unmapped;
};

/* Starts a walk over rec (which must outlive it) with this process's key
 * map. */
void otel_thread_ctx_attr_iter_init(struct otel_thread_ctx_attr_iter *it,
				    const struct otel_thread_ctx_record *rec);
/* The same with a key map of `key_count` names. */
void otel_thread_ctx_attr_iter_init_map(struct otel_thread_ctx_attr_iter *it,
					const struct otel_thread_ctx_record *rec,
					unsigned int key_count);
/* Stores the next effective attribute in *out (each key once, its last
 * value).  Errors: ENULL; ENOATTR (no more). */
int otel_thread_ctx_attr_iter_next(struct otel_thread_ctx_attr_iter *it,
				   struct otel_thread_ctx_attr *out);
/* The effective value of `key` in rec, into *out.
 * Errors: ENULL; ENOATTR (none, or `key` not in this process's key map). */
int otel_thread_ctx_record_attr(const struct otel_thread_ctx_record *rec, unsigned int key,
				struct otel_thread_ctx_attr *out);

/* Self-check (man 3 otel_thread_ctx_self_check): is the slot the library
 * writes the one profilers find? */
enum otel_thread_ctx_self_check_status {
	/* The exported slot is the one this library writes. */
	OTEL_THREAD_CTX_SELF_CHECK_OK = 0,
	/* No loaded module exports otel_thread_ctx_v1 in its .dynsym. */
	OTEL_THREAD_CTX_SELF_CHECK_NOT_EXPORTED = 1,
	/* The exported slots are not the one this library writes. */
	OTEL_THREAD_CTX_SELF_CHECK_MISMATCH = 2,
	/* The exporting module's TLS block could not be located. */
	OTEL_THREAD_CTX_SELF_CHECK_UNKNOWN = 3,
};

struct otel_thread_ctx_self_check {
	int status;                     /* enum otel_thread_ctx_self_check_status */
	const void *slot;               /* where this library stores */
	const void *own_slot;           /* the library's own definition */
	int slot_is_own;                /* slot == own_slot */
	const void *exported;           /* where the exported symbol resolves */
	const char *module;             /* path of slot's module; "": main */
	const char *exported_module;    /* path of exported's module */
	unsigned int exporting_modules; /* modules exporting the slot */
	char reason[384];               /* one English sentence, NUL-terminated */
};

/* Fills *result for the calling thread.  Errors: ENULL; ESLOT (status not
 * OK).  Start-up work: takes the loader's lock, may allocate; not
 * async-signal-safe. */
int otel_thread_ctx_self_check(struct otel_thread_ctx_self_check *result);

/* Attribute keys (man 3 otel_thread_ctx_key_register): the registry is the
 * process context's threadlocal.attribute_key_map. */

/* Longest key name, in bytes. */
#define OTEL_THREAD_CTX_KEY_NAME_MAX 255u

/* Registers `name` (or finds it registered) and stores its index.
 * Errors: ENULL; ENAME; EKEYS; E2BIG; ENOMEM.  Takes a lock; not
 * async-signal-safe. */
int otel_thread_ctx_key_register(const char *name, unsigned int *index);

/* The index of a registered key name.  Errors: ENULL; EUNKNOWNKEY.
 * Async-signal-safe. */
int otel_thread_ctx_key_find(const char *name, unsigned int *index);

/* The name of key `index`, or NULL.  Async-signal-safe. */
const char *otel_thread_ctx_key_name(unsigned int index);

/* How many keys are registered.  Async-signal-safe. */
unsigned int otel_thread_ctx_key_count(void);

#ifdef __cplusplus
}
#endif

#endif /* OTEL_THREAD_CTX_H */
