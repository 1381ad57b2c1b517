/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The format layer: what every side of the project needs of the formats
 * (OTEP 4947's record, OTEP 4719's process context), and nothing of any
 * side.  Its sources (src/format/) are compiled into each library that
 * uses them, hidden; each library exports its own API on top.  Nothing
 * here includes a header of src/ outside this folder.
 */
#ifndef OTEL_FORMAT_H
#define OTEL_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "internal.h"
#include "otel_thread_ctx.h"
#include "otel_thread_ctx_inspect.h"

/* The text of a code of otel_thread_ctx.h (otel_thread_ctx_strerror()). */
const char *otel__strerror(int error);

/* otel_thread_ctx_record_decode(), otel_thread_ctx_attr_iter_init_map(),
 * otel_thread_ctx_attr_iter_next(): as otel_thread_ctx.h says. */
int otel__record_decode(const void *bytes, size_t len, struct otel_thread_ctx_record *out);
void otel__attr_iter_init_map(struct otel_thread_ctx_attr_iter *it,
			      const struct otel_thread_ctx_record *rec, unsigned int key_count);
int otel__attr_iter_next(struct otel_thread_ctx_attr_iter *it, struct otel_thread_ctx_attr *out);

/* The complete entry at *pos of rec's attributes, if there is one:
 * advances *pos past it and returns 1; else 0. */
int otel__attr_entry_at(const struct otel_thread_ctx_record *rec, size_t *pos,
			struct otel_thread_ctx_attr *out);

/* otel_thread_ctx_inspect_process_decode() and _snapshot_free(), as
 * otel_thread_ctx_inspect.h says. */
int otel__process_decode(const void *payload, size_t size,
			 struct otel_thread_ctx_inspect_process_snapshot **out);
void otel__process_snapshot_free(struct otel_thread_ctx_inspect_process_snapshot *snap);

#endif /* OTEL_FORMAT_H */
