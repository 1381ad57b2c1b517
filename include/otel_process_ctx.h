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
 * (service.name, ...), and reads it back from any process.
 *
 * Publication
 * -----------
 * otel_process_ctx_publish() creates a one-page mapping named OTEL_CTX: a
 * memfd called "OTEL_CTX" (created with MFD_CLOEXEC | MFD_ALLOW_SEALING |
 * MFD_NOEXEC_SEAL, then without MFD_NOEXEC_SEAL for kernels that refuse it),
 * or, where memfd_create() fails, anonymous memory named "OTEL_CTX" with
 * prctl(PR_SET_VMA_ANON_NAME).  In /proc/PID/maps it shows as
 * "/memfd:OTEL_CTX (deleted)" or "[anon:OTEL_CTX]".  The mapping holds a
 * struct otel_process_ctx_header whose payload pointer leads to a protobuf
 * opentelemetry.proto.profiles.v1development.ProcessContext message:
 *
 *   resource (1):    Resource { attributes: the caller's resource attributes }
 *   attributes (2):  KeyValue threadlocal.schema_version = "tlsdesc_v1_dev"
 *                    KeyValue threadlocal.attribute_key_map = array of the
 *                    registered key names, in index order
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
 * otel_process_ctx_unpublish()), so a reader that loaded the old pointer just
 * before a change still copies intact bytes.  Older payloads are freed:
 * readers must copy with a fault-tolerant read (process_vm_readv(), as
 * otel_process_ctx_read() does, or bpf_probe_read_user()) and re-check the
 * timestamp, as the format requires.
 *
 * fork(): the child does not inherit the mapping (MADV_DONTFORK); the
 * library republishes the same payload in the child, from a pthread_atfork()
 * handler (so before fork() returns in the child), in a mapping of its own;
 * the parent's publication is not touched.  Where MADV_DONTFORK is not
 * honoured (qemu-user), the handler unmaps the inherited copy of the
 * parent's mapping, so that readers find the child's only.  A child that needs other resource attributes (a new
 * service.instance.id) calls otel_process_ctx_update().  If the child's
 * mapping cannot be created, the child publishes nothing
 * (otel_process_ctx_query() says so) and may call otel_process_ctx_publish().
 * A child made by vfork(), posix_spawn() or _Fork() runs no fork handlers and
 * publishes nothing (it must only exec or _exit).
 *
 * Locks and signals: publish, update, unpublish, query and
 * otel_thread_ctx_key_register() take one process-wide lock; they are
 * thread-safe and not async-signal-safe.  Do not call fork() from a signal
 * handler that interrupted one of them (the fork handler takes the lock).
 * The reader functions take no lock of this library unless noted,
 * allocate, and are thread-safe but not async-signal-safe.
 *
 * Errors are the negative codes of enum otel_thread_ctx_error
 * (otel_thread_ctx_strerror()).  A call that fails leaves the published
 * context exactly as it was: same mapping, same timestamp, same payload.
 * The library never aborts, exits or prints.
 */
#ifndef OTEL_PROCESS_CTX_H
#define OTEL_PROCESS_CTX_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "otel_thread_ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The header's signature (8 bytes, no NUL in the mapping) and version. */
#define OTEL_PROCESS_CTX_SIGNATURE "OTEL_CTX"
#define OTEL_PROCESS_CTX_VERSION 2u
/* The name of the memfd and of the anonymous mapping. */
#define OTEL_PROCESS_CTX_MAPPING_NAME "OTEL_CTX"
/* The thread-local reference data (OTEP 4947), in ProcessContext.attributes. */
#define OTEL_PROCESS_CTX_SCHEMA_VERSION_KEY "threadlocal.schema_version"
#define OTEL_PROCESS_CTX_ATTRIBUTE_KEY_MAP_KEY "threadlocal.attribute_key_map"
#define OTEL_PROCESS_CTX_SCHEMA_VERSION "tlsdesc_v1_dev"
/* Largest payload the library publishes, and reads. */
#define OTEL_PROCESS_CTX_PAYLOAD_MAX (256u * 1024u)

/*
 * The start of the OTEL_CTX mapping.  Native endianness, 32 bytes.  A
 * reader checks signature and version, reads monotonic_published_at_ns
 * (non-zero), then payload_size bytes at `payload`, then
 * monotonic_published_at_ns again: equal means consistent.
 */
struct otel_process_ctx_header {
	char signature[8];                  /* "OTEL_CTX", no NUL */
	uint32_t version;                   /* 2 */
	uint32_t payload_size;              /* bytes at payload */
	uint64_t monotonic_published_at_ns; /* CLOCK_BOOTTIME; 0 while changing */
	uint64_t payload;                   /* address in the publishing process */
};

#ifdef __cplusplus
#define OTEL_PROCESS_CTX_STATIC_ASSERT static_assert
#else
#define OTEL_PROCESS_CTX_STATIC_ASSERT _Static_assert
#endif
OTEL_PROCESS_CTX_STATIC_ASSERT(sizeof(struct otel_process_ctx_header) == 32, "header size");
OTEL_PROCESS_CTX_STATIC_ASSERT(offsetof(struct otel_process_ctx_header, version) == 8,
			       "version offset");
OTEL_PROCESS_CTX_STATIC_ASSERT(offsetof(struct otel_process_ctx_header, payload_size) == 12,
			       "payload_size offset");
OTEL_PROCESS_CTX_STATIC_ASSERT(offsetof(struct otel_process_ctx_header,
					monotonic_published_at_ns) == 16,
			       "monotonic_published_at_ns offset");
OTEL_PROCESS_CTX_STATIC_ASSERT(offsetof(struct otel_process_ctx_header, payload) == 24,
			       "payload offset");
#undef OTEL_PROCESS_CTX_STATIC_ASSERT

/* The type of an attribute value: the field numbers of the AnyValue oneof
 * (opentelemetry.proto.common.v1). */
enum otel_process_ctx_type {
	OTEL_PROCESS_CTX_EMPTY = 0,  /* no value set (read side only) */
	OTEL_PROCESS_CTX_STRING = 1,
	OTEL_PROCESS_CTX_BOOL = 2,
	OTEL_PROCESS_CTX_INT = 3,
	OTEL_PROCESS_CTX_DOUBLE = 4,
	OTEL_PROCESS_CTX_ARRAY = 5,  /* read side only */
	OTEL_PROCESS_CTX_KVLIST = 6, /* read side only */
	OTEL_PROCESS_CTX_BYTES = 7,  /* read side only */
};

/*
 * A resource attribute.  To publish, set key (NUL-terminated UTF-8, not
 * empty), type (STRING, BOOL, INT or DOUBLE) and the member for the type:
 *
 *   { "service.name", OTEL_PROCESS_CTX_STRING, "checkout", 0, 0, 0.0, 0 }
 *   { "process.pid",  OTEL_PROCESS_CTX_INT,    NULL,       0, 4242, 0.0, 0 }
 *
 * `string` must be valid UTF-8; `length` is its size in bytes, or 0 for a
 * NUL-terminated string.  The reader fills the same struct (see
 * otel_process_ctx_read()).
 */
struct otel_process_ctx_attr {
	const char *key;
	enum otel_process_ctx_type type;
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
 * (use otel_process_ctx_update()); EMAP; ENOMEM.  On error nothing is
 * published.
 */
int otel_process_ctx_publish(const struct otel_process_ctx_attr *resource, size_t count);

/*
 * Replaces the resource attributes of the published context, by the update
 * protocol (same mapping, new payload, new timestamp).
 * Errors: those of publish (but EPUBLISHED and EMAP), and ENOTPUBLISHED.
 */
int otel_process_ctx_update(const struct otel_process_ctx_attr *resource, size_t count);

/*
 * Withdraws the context: the timestamp becomes 0, the mapping is unmapped
 * and the payloads are freed.  Registered keys stay registered; a later
 * publish starts a new mapping.  Unpublishing when nothing is published
 * does nothing and succeeds.
 */
int otel_process_ctx_unpublish(void);

/* What this process publishes now. */
struct otel_process_ctx_info {
	int published;                      /* 1 or 0; the rest is 0 when 0 */
	int memfd;                          /* 1: memfd mapping; 0: anonymous */
	const void *mapping;                /* the header */
	size_t mapping_size;
	uint64_t monotonic_published_at_ns;
	uint32_t payload_size;
	const void *payload;
};

/* Fills *info.  Errors: ENULL. */
int otel_process_ctx_query(struct otel_process_ctx_info *info);

/*
 * Reading
 * -------
 * What an inspector or profiler does to read the process context of a
 * process: otel_process_ctx_read() finds the mapping, copies it by the
 * reading protocol, checks it and decodes it into a snapshot that the caller
 * frees with otel_process_ctx_snapshot_free().  otel_process_ctx_decode()
 * decodes a payload obtained some other way (an eBPF copy, a file).
 *
 * Decoding follows protobuf: unknown fields are skipped; of a field that
 * occurs more than once, the last occurrence counts (ProcessContext.resource
 * and repeated fields accumulate); all strings must be valid UTF-8.  It is
 * stricter where the thread-context format is concerned: the key map must be
 * an array of at most 256 strings, none containing a NUL byte, and the
 * schema version a string without NUL.  The threadlocal.* entries are read
 * from ProcessContext.attributes, where OTEP 4947 puts them; when they are
 * missing there, well-formed entries of the same keys among the resource
 * attributes (where an early draft put them) are used instead.  Values of
 * types ARRAY and KVLIST in resource attributes are not decoded: their
 * encoded bytes are returned.
 */

/* Attempts otel_process_ctx_read() makes when it is given 0. */
#define OTEL_PROCESS_CTX_READ_ATTEMPTS 100u

/* A decoded process context.  Everything it points to lives in the
 * snapshot's own memory until otel_process_ctx_snapshot_free(). */
struct otel_process_ctx_snapshot {
	/* From the mapping (0 for otel_process_ctx_decode()). */
	uint64_t mapping_address; /* where the header is, in the process */
	uint64_t payload_address;
	uint64_t monotonic_published_at_ns;
	uint32_t version;
	/* Copies that came out torn or during an update and were retried. */
	unsigned int retries;

	/* The payload: a copy of its payload_size bytes. */
	const void *payload;
	uint32_t payload_size;

	/* threadlocal.schema_version, NUL-terminated; NULL when absent. */
	const char *schema_version;
	/* threadlocal.attribute_key_map: keys[i] names key index i
	 * (NUL-terminated).  key_map_present is 0 when the payload has no key
	 * map (key_count is then 0 too). */
	int key_map_present;
	size_t key_count;
	const char *const *keys;
	/* ProcessContext.resource.attributes, in payload order. */
	size_t resource_count;
	const struct otel_process_ctx_attr *resource;
	/* ProcessContext.attributes other than the two threadlocal.* above. */
	size_t attribute_count;
	const struct otel_process_ctx_attr *attributes;
};

/*
 * Reads the process context of process `pid` (0: this process) and stores
 * a new snapshot in *out.  Steps: parse /proc/PID/maps for mappings whose
 * name starts with "[anon_shmem:OTEL_CTX]", "[anon:OTEL_CTX]" or
 * "/memfd:OTEL_CTX" and that are readable and at least 32 bytes long; for
 * each, in address order, until one succeeds: read the timestamp (it must
 * not be 0), then the header (signature "OTEL_CTX", version 2, timestamp
 * unchanged, 1 <= payload_size <= OTEL_PROCESS_CTX_PAYLOAD_MAX, payload not
 * NULL), then the payload, then the timestamp again; a copy whose timestamps
 * differ or are 0 is retried, up to `attempts` copies in all (0 means
 * OTEL_PROCESS_CTX_READ_ATTEMPTS), yielding the CPU between them; finally
 * decode.  Memory is read with process_vm_readv(), also for this process,
 * so an address that is not mapped is an error, never a crash.  When
 * process_vm_readv() is refused for this process (EPERM from a seccomp
 * filter, ENOSYS under qemu-user), the copy is made directly, under this
 * library's lock, and only from the mapping this library published (EPERM
 * for any other).
 *
 * The caller needs the right to read the process's memory (ptrace access
 * mode "attach": the same user and, under Yama ptrace_scope 1, a
 * descendant, or CAP_SYS_PTRACE).
 *
 * Errors: ENULL; ESRCH (no such process; one that exits during the read
 * may also give ENOENT); EPERM; ENOENT (no candidate mapping); EFORMAT
 * (candidates, none with a valid header); EAGAIN (the context changed or was
 * being changed during every attempt); EFAULT (the payload cannot be read
 * although the header stayed the same); EDECODE; ENOMEM; ESYS.  When several
 * candidates fail, the error of the last one is returned.  *out is set only
 * on success.
 */
int otel_process_ctx_read(pid_t pid, unsigned int attempts,
			  struct otel_process_ctx_snapshot **out);

/*
 * otel_process_ctx_read() without the search: reads the mapping whose header
 * is at `mapping` in process `pid` (a snapshot's mapping_address, kept by a
 * reader that polls the same process; the format lets a reader cache the
 * address once a mapping proved valid).  Same protocol, checks and errors;
 * ENOENT when nothing is mapped there any more (unpublished), EFORMAT when
 * what is there is not a valid header.  Parsing /proc/PID/maps is the
 * expensive part of otel_process_ctx_read(); this skips it.
 */
int otel_process_ctx_read_at(pid_t pid, uint64_t mapping, unsigned int attempts,
			     struct otel_process_ctx_snapshot **out);

/*
 * Decodes `size` bytes of a ProcessContext payload into a new snapshot
 * (the mapping fields are 0).  Any bytes are safe to pass.
 * Errors: ENULL (out NULL, or payload NULL with size > 0); E2BIG (size above
 * OTEL_PROCESS_CTX_PAYLOAD_MAX); EDECODE; ENOMEM.
 */
int otel_process_ctx_decode(const void *payload, size_t size,
			    struct otel_process_ctx_snapshot **out);

/* Frees a snapshot and everything it points to.  NULL is accepted. */
void otel_process_ctx_snapshot_free(struct otel_process_ctx_snapshot *snap);

#ifdef __cplusplus
}
#endif

#endif /* OTEL_PROCESS_CTX_H */
