/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What otel-thread-ctx-inspect and otel-thread-ctx-sample both print, to
 * standard output, in their table and JSON forms: bytes, values, a record's
 * attributes named by a process's key map, and where the process keeps its
 * slot.
 */
#ifndef OTEL_TOOLS_PRINT_H
#define OTEL_TOOLS_PRINT_H

#include <stddef.h>
#include <stdint.h>

#include <otel_thread_ctx.h>
#include <otel_thread_ctx_inspect.h>

/* n bytes as lower-case hex digits. */
void tool_hex(const uint8_t *b, size_t n);

/* A JSON string: UTF-8 passes through when valid, else bytes as \u00XX. */
void tool_json_string(const void *s, size_t n);

/* Text for a table cell: printable ASCII and valid UTF-8 as is, the rest
 * as \xNN. */
void tool_text_value(const void *s, size_t n);

/*
 * The attributes of r named by the key map of the process insp read (with
 * no inspector, none is named).  Entries the key map does not name are
 * skipped, as OTEP 4947 requires of readers, and counted: in the table as
 * " (N attributes outside the key map)", in JSON as the member "unmapped".
 *   table: ` key="value"` for each
 *   JSON:  `[{"index":I,"key":"...","value":"..."},...],"unmapped":N`
 */
void tool_attrs_table(const otel_thread_ctx_inspector *insp,
		      const struct otel_thread_ctx_record *r);
void tool_attrs_json(const otel_thread_ctx_inspector *insp,
		     const struct otel_thread_ctx_record *r);

/*
 * The modules whose TLS block holds a slot, and how a thread reaches it.
 *   table: a line `  slot in PATH: MODEL, ...` for each
 *   JSON:  `[{"path":"...","model":"...",...},...]`
 */
void tool_modules_table(const struct otel_thread_ctx_inspect_info *info);
void tool_modules_json(const struct otel_thread_ctx_inspect_info *info);

#endif /* OTEL_TOOLS_PRINT_H */
