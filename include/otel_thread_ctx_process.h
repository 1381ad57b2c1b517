/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otel-thread-ctx: the process context (OpenTelemetry OTEP 4719), which
 * tells readers what the thread records mean.
 *
 * Readers that follow the thread-context format (OTEP 4947) first look for
 * the process context of a process and skip its thread records until it
 * announces threadlocal.schema_version ("tlsdesc_v1_dev") and
 * threadlocal.attribute_key_map, the names of the attribute key indices
 * (otel_thread_ctx_key_register() in otel_thread_ctx.h).  This header
 * publishes that context, with the resource attributes the caller gives
 * (service.name, ...).  Reading it back, from this process or any other, is
 * in otel_thread_ctx_inspect.h (libotel-thread-ctx-inspect).
 *
 * Publication
 * -----------
 * otel_thread_ctx_process_publish() creates a one-page mapping named OTEL_CTX: a
 * memfd called "OTEL_CTX" (created with MFD_CLOEXEC | MFD_ALLOW_SEALING |
 * MFD_NOEXEC_SEAL, then without MFD_NOEXEC_SEAL for kernels that refuse it),
 * or, where memfd_create() fails, anonymous memory named "OTEL_CTX" with
 * prctl(PR_SET_VMA_ANON_NAME).  In /proc/PID/maps it shows as
 * "/memfd:OTEL_CTX (deleted)" or "[anon:OTEL_CTX]".  The mapping holds a
 * struct otel_thread_ctx_process_header whose payload pointer leads to a protobuf
 * opentelemetry.proto.profiles.v1development.ProcessContext message:
 *
 *   resource (1):    Resource { attributes: the caller's resource attributes }
 *   attributes (2):  KeyValue threadlocal.schema_version = "tlsdesc_v1_dev"
 *                    KeyValue threadlocal.attribute_key_map = array of the
 *                    registered key names, in index order
 *                    then the caller's own entries, if any (the options'
 *                    `attributes`)
 *
 * The library encodes it itself (no protobuf dependency).  The mapping is
 * marked MADV_DONTFORK.  Readers in other processes read it at any time, so
 * every change follows the update protocol of the format: the timestamp is
 * set to 0, then (after a full memory fence) the payload pointer and size
 * change, then (after another fence) a new, strictly greater timestamp is
 * stored.  A reader that sees the same non-zero timestamp before and after
 * copying the payload has a consistent copy.
 *
 * Payload memory: each change encodes a new payload into new memory; the
 * payload it replaces stays allocated until the next change (or until
 * otel_thread_ctx_process_unpublish()), so a reader that loaded the old pointer just
 * before a change still copies intact bytes.  Older payloads are freed:
 * readers must copy with a fault-tolerant read (process_vm_readv(), as
 * otel_thread_ctx_inspect_process_read() does, or bpf_probe_read_user()) and re-check the
 * timestamp, as the format requires.
 *
 * fork(): the child does not inherit the mapping (MADV_DONTFORK) and, by
 * default, publishes nothing until it calls otel_thread_ctx_process_publish()
 * itself, so that it never shows the parent's service.instance.id (OTEP
 * 4719, "Process Forking"); the parent's publication is not touched.  Where
 * MADV_DONTFORK is not honoured (qemu-user), a pthread_atfork() handler
 * unmaps the child's copy of the parent's mapping before fork() returns.  A
 * publisher that wants its children to show the same context opts in with
 * OTEL_THREAD_CTX_PROCESS_FORK_REPUBLISH: the child then republishes the
 * parent's payload in a mapping of its own (or, if that fails, nothing, as
 * otel_thread_ctx_process_query() says).  A child made by vfork(),
 * posix_spawn() or _Fork() runs no fork handlers and publishes nothing (it
 * must only exec or _exit).
 *
 * Readers: the OpenTelemetry eBPF profiler rejects a payload of more than
 * 65,536 bytes, so the library never publishes one (E2BIG) and its reader
 * takes no more either.
 *
 * Locks and signals: publish, update, unpublish, query and
 * otel_thread_ctx_key_register() take one process-wide lock; they are
 * thread-safe and not async-signal-safe.  Do not call fork() from a signal
 * handler that interrupted one of them (the fork handler takes the lock).
 *
 * Return values: every function returns OTEL_THREAD_CTX_OK (0) or a
 * negative code of enum otel_thread_ctx_error (otel_thread_ctx_strerror()),
 * as everywhere in otel_thread_ctx.h; none returns a positive value.  A call that fails leaves the published
 * context exactly as it was: same mapping, same timestamp, same payload.
 * The library never aborts, exits or prints.
 */
#ifndef OTEL_THREAD_CTX_PROCESS_H
#define OTEL_THREAD_CTX_PROCESS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "otel_thread_ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The header's signature (8 bytes, no NUL in the mapping) and version. */
#define OTEL_THREAD_CTX_PROCESS_SIGNATURE "OTEL_CTX"
#define OTEL_THREAD_CTX_PROCESS_VERSION 2u
/* The name of the memfd and of the anonymous mapping. */
#define OTEL_THREAD_CTX_PROCESS_MAPPING_NAME "OTEL_CTX"
/* The thread-local reference data (OTEP 4947), in ProcessContext.attributes. */
#define OTEL_THREAD_CTX_PROCESS_SCHEMA_VERSION_KEY "threadlocal.schema_version"
#define OTEL_THREAD_CTX_PROCESS_ATTRIBUTE_KEY_MAP_KEY "threadlocal.attribute_key_map"
/*
 * threadlocal.schema_version: "tlsdesc_v1_dev" is what OTEP 4947 names while
 * it is a draft, and the only value the OpenTelemetry eBPF profiler accepts
 * today, so the library publishes it by default; the OTEP says it becomes
 * "tls_v1" once merged, which a publisher may choose
 * (OTEL_THREAD_CTX_PROCESS_SCHEMA_TLS_V1).  The library's readers accept both.
 */
#define OTEL_THREAD_CTX_PROCESS_SCHEMA_VERSION "tlsdesc_v1_dev"
#define OTEL_THREAD_CTX_PROCESS_SCHEMA_VERSION_TLS_V1 "tls_v1"
/* Largest payload the library publishes, and reads (what the eBPF
 * profiler's reader accepts). */
#define OTEL_THREAD_CTX_PROCESS_PAYLOAD_MAX 65536u

/*
 * The start of the OTEL_CTX mapping.  Native endianness, 32 bytes.  A
 * reader checks signature and version, reads monotonic_published_at_ns
 * (non-zero), then payload_size bytes at `payload`, then
 * monotonic_published_at_ns again: equal means consistent.
 */
struct otel_thread_ctx_process_header {
	char signature[8];                  /* "OTEL_CTX", no NUL */
	uint32_t version;                   /* 2 */
	uint32_t payload_size;              /* bytes at payload */
	uint64_t monotonic_published_at_ns; /* CLOCK_BOOTTIME; 0 while changing */
	uint64_t payload;                   /* address in the publishing process */
};

#ifdef __cplusplus
#define OTEL_THREAD_CTX_PROCESS_STATIC_ASSERT static_assert
#else
#define OTEL_THREAD_CTX_PROCESS_STATIC_ASSERT _Static_assert
#endif
OTEL_THREAD_CTX_PROCESS_STATIC_ASSERT(sizeof(struct otel_thread_ctx_process_header) == 32, "header size");
OTEL_THREAD_CTX_PROCESS_STATIC_ASSERT(offsetof(struct otel_thread_ctx_process_header, version) == 8,
			       "version offset");
OTEL_THREAD_CTX_PROCESS_STATIC_ASSERT(offsetof(struct otel_thread_ctx_process_header, payload_size) == 12,
			       "payload_size offset");
OTEL_THREAD_CTX_PROCESS_STATIC_ASSERT(offsetof(struct otel_thread_ctx_process_header,
					monotonic_published_at_ns) == 16,
			       "monotonic_published_at_ns offset");
OTEL_THREAD_CTX_PROCESS_STATIC_ASSERT(offsetof(struct otel_thread_ctx_process_header, payload) == 24,
			       "payload offset");
#undef OTEL_THREAD_CTX_PROCESS_STATIC_ASSERT

/* The type of an attribute value: the field numbers of the AnyValue oneof
 * (opentelemetry.proto.common.v1). */
enum otel_thread_ctx_process_type {
	OTEL_THREAD_CTX_PROCESS_EMPTY = 0,  /* no value set (read side only) */
	OTEL_THREAD_CTX_PROCESS_STRING = 1,
	OTEL_THREAD_CTX_PROCESS_BOOL = 2,
	OTEL_THREAD_CTX_PROCESS_INT = 3,
	OTEL_THREAD_CTX_PROCESS_DOUBLE = 4,
	OTEL_THREAD_CTX_PROCESS_ARRAY = 5,  /* read side only */
	OTEL_THREAD_CTX_PROCESS_KVLIST = 6, /* read side only */
	OTEL_THREAD_CTX_PROCESS_BYTES = 7,  /* read side only */
};

/*
 * A resource attribute.  To publish, set key (NUL-terminated UTF-8, not
 * empty), type (STRING, BOOL, INT or DOUBLE) and the member for the type:
 *
 *   { "service.name", OTEL_THREAD_CTX_PROCESS_STRING, "checkout", 0, 0, 0.0, 0 }
 *   { "process.pid",  OTEL_THREAD_CTX_PROCESS_INT,    NULL,       0, 4242, 0.0, 0 }
 *
 * `string` must be valid UTF-8; `length` is its size in bytes, or 0 for a
 * NUL-terminated string.  The reader fills the same struct (see
 * otel_thread_ctx_inspect_process_read()).
 */
struct otel_thread_ctx_process_attr {
	const char *key;
	enum otel_thread_ctx_process_type type;
	/* STRING.  On the read side also BYTES, and for ARRAY and KVLIST the
	 * encoded ArrayValue / KeyValueList message, undecoded.  The reader
	 * adds a NUL after the `length` bytes. */
	const char *string;
	size_t length;
	int64_t int_value;     /* INT */
	double double_value;   /* DOUBLE */
	int bool_value;        /* BOOL: 0 or 1 */
};

/*
 * Publishes the process context with `count` resource attributes (count may
 * be 0; resource may be NULL then), the schema version and the key map of
 * the registry as it is now.  The attributes are copied: the caller's array
 * and strings may be freed afterwards.
 * Errors: ENULL (resource NULL with count > 0, a NULL key or string);
 * EATTR; EUTF8 (a string value); E2BIG; EPUBLISHED when already published
 * (use otel_thread_ctx_process_update()); EMAP; ENOMEM; ESYS (madvise()
 * refused to keep the mapping out of children; errno says why).  On error
 * nothing is published.
 */
int otel_thread_ctx_process_publish(const struct otel_thread_ctx_process_attr *resource, size_t count);

/* The schema version to publish (see OTEL_THREAD_CTX_PROCESS_SCHEMA_VERSION). */
enum otel_thread_ctx_process_schema {
	OTEL_THREAD_CTX_PROCESS_SCHEMA_TLSDESC_V1_DEV = 0, /* "tlsdesc_v1_dev" (default) */
	OTEL_THREAD_CTX_PROCESS_SCHEMA_TLS_V1 = 1,         /* "tls_v1" */
};

/* What a child made by fork() publishes (see "fork()" above). */
enum otel_thread_ctx_process_fork {
	OTEL_THREAD_CTX_PROCESS_FORK_DROP = 0,      /* nothing (default) */
	OTEL_THREAD_CTX_PROCESS_FORK_REPUBLISH = 1, /* the parent's payload */
};

/* Options of otel_thread_ctx_process_publish_with().  Start from
 * OTEL_THREAD_CTX_PROCESS_OPTIONS_INIT (the defaults), so that a later
 * version may add fields. */
struct otel_thread_ctx_process_options {
	size_t size; /* sizeof(struct otel_thread_ctx_process_options) */
	int schema;  /* enum otel_thread_ctx_process_schema */
	int on_fork; /* enum otel_thread_ctx_process_fork */
	/* Entries of ProcessContext.attributes (OTEP 4719 field 2) published
	 * after this library's threadlocal.* entries, checked and copied as
	 * the resource attributes are; their keys may not start with
	 * "threadlocal." (EATTR).  NULL with a count of 0: none. */
	const struct otel_thread_ctx_process_attr *attributes;
	size_t attribute_count;
};

#define OTEL_THREAD_CTX_PROCESS_OPTIONS_INIT                                    \
	{ sizeof(struct otel_thread_ctx_process_options),                       \
	  OTEL_THREAD_CTX_PROCESS_SCHEMA_TLSDESC_V1_DEV, OTEL_THREAD_CTX_PROCESS_FORK_DROP, \
	  NULL, 0 }

/*
 * otel_thread_ctx_process_publish() with options, which hold until the
 * context is unpublished or otel_thread_ctx_process_update_with() replaces
 * them (otel_thread_ctx_process_update() and key registrations keep them).
 * NULL options are the defaults.  `size` follows the rule of
 * struct otel_thread_ctx_options (otel_thread_ctx.h): a smaller struct (an
 * older caller) gives the fields it lacks their defaults; a larger one is
 * accepted only when every byte past this version's fields is zero.
 * Errors: those of publish; EOPTIONS (size below sizeof(size_t), an unknown
 * non-zero byte, an unknown schema or fork value); those of the attributes
 * (ENULL, EATTR, EUTF8, E2BIG: the whole payload counts).
 */
int otel_thread_ctx_process_publish_with(const struct otel_thread_ctx_process_attr *resource,
					 size_t count,
					 const struct otel_thread_ctx_process_options *options);

/*
 * Replaces the resource attributes of the published context, by the update
 * protocol (same mapping, new payload, new timestamp).
 * Errors: those of publish (but EPUBLISHED and EMAP), and ENOTPUBLISHED.
 */
int otel_thread_ctx_process_update(const struct otel_thread_ctx_process_attr *resource, size_t count);

/*
 * Replaces the resource attributes and the options (schema version, fork
 * policy, ProcessContext.attributes) of the published context in one
 * update, by the same protocol: readers see the old payload or the new,
 * never a mix, and the mapping stays where it is.  NULL options keep the
 * current ones (otel_thread_ctx_process_update()).  Errors: those of update
 * and of publish_with.  On error nothing changes.
 */
int otel_thread_ctx_process_update_with(const struct otel_thread_ctx_process_attr *resource,
					size_t count,
					const struct otel_thread_ctx_process_options *options);

/*
 * Withdraws the context: the timestamp becomes 0, the mapping is unmapped
 * and the payloads are freed.  Registered keys stay registered; a later
 * publish starts a new mapping.  Unpublishing when nothing is published
 * does nothing and succeeds.
 */
int otel_thread_ctx_process_unpublish(void);

/* What this process publishes now. */
struct otel_thread_ctx_process_info {
	int published;                      /* 1 or 0; the rest is 0 when 0 */
	int memfd;                          /* 1: memfd mapping; 0: anonymous */
	const void *mapping;                /* the header */
	size_t mapping_size;
	uint64_t monotonic_published_at_ns;
	uint32_t payload_size;
	const void *payload;
};

/* Fills *info.  Errors: ENULL. */
int otel_thread_ctx_process_query(struct otel_thread_ctx_process_info *info);

/*
 * A copy of what this library publishes: the header and the payload, taken
 * under the lock, so that nothing changes or is freed meanwhile.  For a
 * reader in this process that cannot read memory through the kernel
 * (otel_thread_ctx_inspect_process_read() of libotel-thread-ctx-inspect falls back on
 * it when process_vm_readv() is refused).  *payload is allocated with
 * malloc(); free() it.  Errors: ENULL; ENOTPUBLISHED; ENOMEM.
 */
int otel_thread_ctx_process_copy(struct otel_thread_ctx_process_header *header, void **payload);

#ifdef __cplusplus
}
#endif

#endif /* OTEL_THREAD_CTX_PROCESS_H */
