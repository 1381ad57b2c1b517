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

/*
 * The exit codes of both tools, one table (doc/inspector.md and
 * doc/sampler.md give each tool's meaning; a code one tool cannot meet it
 * never returns).
 */
enum tool_exit {
	EXIT_OK = 0,
	EXIT_USAGE = 2,         /* bad option, or not a process id */
	EXIT_NO_PROCESS = 3,    /* no such process */
	EXIT_NOT_PERMITTED = 4, /* not allowed to read it (ptrace, BPF, maps) */
	EXIT_NO_SLOT = 5,       /* it publishes no thread context */
	EXIT_MODEL = 6,         /* a TLS access model no reader here supports */
	EXIT_FAILED = 7,        /* anything else failed */
	EXIT_BAD_RECORD = 8,    /* a record breaks the format; the rest printed */
	EXIT_PARTIAL = 9,       /* some thread was not read (the inspector) */
};

/* n bytes as lower-case hex digits. */
void tool_hex(const uint8_t *b, size_t n);

/*
 * The tools print strings the inspected process chose (attribute values,
 * key names, thread names, module paths) only through these two, so that
 * no control byte of the process reaches the operator's terminal.
 */

/* A JSON string: UTF-8 passes through when valid, except C1 controls
 * (U+0080 to U+009F) as \u00XX; controls, '"' and '\' escaped; a string
 * that is not valid UTF-8 gives each byte above 0x7f as \u00XX. */
void tool_json_string(const void *s, size_t n);

/* Text for a table: printable ASCII and valid UTF-8 as is; control bytes,
 * '"', '\', the bytes of C1 controls, and every byte above 0x7f of a string
 * that is not valid UTF-8 as \xNN.  Returns the characters printed. */
size_t tool_text_value(const void *s, size_t n);

/* A NUL-terminated string as tool_text_value(), padded with spaces to
 * `width` characters (a table column). */
void tool_text_cell(const char *s, size_t width);

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
