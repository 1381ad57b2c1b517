/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libotel-thread-ctx: publish the process context (OTEP 4719), the
 * OTEL_CTX mapping that tells readers what the thread records mean (schema
 * version, attribute key names) and carries the resource attributes.
 * Reference: man 3 otel_thread_ctx_process_publish, man 7 otel-thread-ctx.
 * Reading it back, from any process: otel_thread_ctx_inspect.h.
 *
 * Every change follows the format's update protocol, so readers in other
 * processes may read at any time.  A forked child publishes nothing unless
 * asked (OTEL_THREAD_CTX_PROCESS_FORK_REPUBLISH).  The functions take one
 * process-wide lock: thread-safe, not async-signal-safe.  They return
 * OTEL_THREAD_CTX_OK (0) or a negative enum otel_thread_ctx_error; a call
 * that fails leaves the published context exactly as it was.
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
/* threadlocal.schema_version: the draft's name (the default, the one the
 * eBPF profiler accepts today), and the name once OTEP 4947 is merged. */
#define OTEL_THREAD_CTX_PROCESS_SCHEMA_VERSION "tlsdesc_v1_dev"
#define OTEL_THREAD_CTX_PROCESS_SCHEMA_VERSION_TLS_V1 "tls_v1"
/* Largest payload the library publishes and reads (the eBPF profiler's). */
#define OTEL_THREAD_CTX_PROCESS_PAYLOAD_MAX 65536u

/* The start of the OTEL_CTX mapping (native endianness).  A copy of the
 * payload is consistent when the timestamp, non-zero, is the same before
 * and after it. */
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

/* The type of an attribute value (AnyValue's field numbers). */
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

/* A resource attribute: key, type (STRING, BOOL, INT or DOUBLE to publish)
 * and the member for the type.  Readers fill the same struct. */
struct otel_thread_ctx_process_attr {
	const char *key; /* NUL-terminated UTF-8, not empty */
	enum otel_thread_ctx_process_type type;
	/* STRING (UTF-8); read side: also BYTES, ARRAY and KVLIST (encoded). */
	const char *string;
	size_t length;         /* bytes at string; 0: NUL-terminated */
	int64_t int_value;     /* INT */
	double double_value;   /* DOUBLE */
	int bool_value;        /* BOOL: 0 or 1 */
};

/* Publishes the process context with `count` resource attributes (copied)
 * and the key registry.  Errors: ENULL; EATTR; EUTF8; E2BIG; EPUBLISHED;
 * EMAP; ENOMEM; ESYS. */
int otel_thread_ctx_process_publish(const struct otel_thread_ctx_process_attr *resource, size_t count);

/* The schema version to publish. */
enum otel_thread_ctx_process_schema {
	OTEL_THREAD_CTX_PROCESS_SCHEMA_TLSDESC_V1_DEV = 0, /* "tlsdesc_v1_dev" (default) */
	OTEL_THREAD_CTX_PROCESS_SCHEMA_TLS_V1 = 1,         /* "tls_v1" */
};

/* What a child made by fork() publishes. */
enum otel_thread_ctx_process_fork {
	OTEL_THREAD_CTX_PROCESS_FORK_DROP = 0,      /* nothing (default) */
	OTEL_THREAD_CTX_PROCESS_FORK_REPUBLISH = 1, /* the parent's payload */
};

/* Options of otel_thread_ctx_process_publish_with().  Start from
 * OTEL_THREAD_CTX_PROCESS_OPTIONS_INIT (the defaults). */
struct otel_thread_ctx_process_options {
	size_t size; /* sizeof(struct otel_thread_ctx_process_options) */
	int schema;  /* enum otel_thread_ctx_process_schema */
	int on_fork; /* enum otel_thread_ctx_process_fork */
	/* More ProcessContext.attributes entries; keys not "threadlocal.*". */
	const struct otel_thread_ctx_process_attr *attributes;
	size_t attribute_count;
};

#define OTEL_THREAD_CTX_PROCESS_OPTIONS_INIT                                    \
	{ sizeof(struct otel_thread_ctx_process_options),                       \
	  OTEL_THREAD_CTX_PROCESS_SCHEMA_TLSDESC_V1_DEV, OTEL_THREAD_CTX_PROCESS_FORK_DROP, \
	  NULL, 0 }

/* otel_thread_ctx_process_publish() with options (NULL: the defaults).
 * Errors: EOPTIONS; ENULL; EATTR; EUTF8; E2BIG; EPUBLISHED; EMAP; ENOMEM;
 * ESYS. */
int otel_thread_ctx_process_publish_with(const struct otel_thread_ctx_process_attr *resource,
					 size_t count,
					 const struct otel_thread_ctx_process_options *options);

/* Replaces the resource attributes of the published context.
 * Errors: ENULL, EATTR, EUTF8; ENOTPUBLISHED; E2BIG; ENOMEM. */
int otel_thread_ctx_process_update(const struct otel_thread_ctx_process_attr *resource, size_t count);

/* Replaces the resource attributes and the options (NULL: kept) in one
 * update.  Errors: EOPTIONS; ENULL, EATTR, EUTF8; ENOTPUBLISHED; E2BIG;
 * ENOMEM. */
int otel_thread_ctx_process_update_with(const struct otel_thread_ctx_process_attr *resource,
					size_t count,
					const struct otel_thread_ctx_process_options *options);

/* Withdraws the context (nothing published: does nothing); keys stay. */
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

/* Copies the header and the payload this process publishes; free()
 * *payload.  Errors: ENULL; ENOTPUBLISHED; ENOMEM. */
int otel_thread_ctx_process_copy(struct otel_thread_ctx_process_header *header, void **payload);

#ifdef __cplusplus
}
#endif

#endif /* OTEL_THREAD_CTX_PROCESS_H */
