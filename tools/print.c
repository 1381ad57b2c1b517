/* SPDX-License-Identifier: Apache-2.0 */
/* What both tools print (print.h). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "print.h"
#include "utf8.h"

void tool_hex(const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		printf("%02x", b[i]);
}

/* Is p[i] the start of a C1 control (U+0080 to U+009F: 0xc2 0x80..0x9f) in
 * valid UTF-8?  Terminals take some for escape sequences (U+009B: CSI). */
static int c1_at(const unsigned char *p, size_t n, size_t i)
{
	return p[i] == 0xc2 && i + 1 < n && p[i + 1] >= 0x80 && p[i + 1] <= 0x9f;
}

void tool_json_string(const void *s, size_t n)
{
	const unsigned char *p = s;
	int utf8 = otel__utf8_valid(p, n);

	putchar('"');
	for (size_t i = 0; i < n; i++) {
		unsigned char c = p[i];

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20 || c == 0x7f || (c >= 0x80 && !utf8))
			printf("\\u%04x", c);
		else if (utf8 && c1_at(p, n, i))
			printf("\\u%04x", p[++i]);
		else
			putchar(c);
	}
	putchar('"');
}

size_t tool_text_value(const void *s, size_t n)
{
	const unsigned char *p = s;
	int utf8 = otel__utf8_valid(p, n);
	size_t cols = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned char c = p[i];

		if (c < 0x20 || c == 0x7f || c == '"' || c == '\\' || (c >= 0x80 && !utf8)) {
			printf("\\x%02x", c);
			cols += 4;
		} else if (utf8 && c1_at(p, n, i)) {
			printf("\\x%02x\\x%02x", c, p[i + 1]);
			i++;
			cols += 8;
		} else {
			putchar(c);
			/* A character per UTF-8 lead byte. */
			cols += (c & 0xc0) != 0x80;
		}
	}
	return cols;
}

void tool_text_cell(const char *s, size_t width)
{
	for (size_t cols = tool_text_value(s, strlen(s)); cols < width; cols++)
		putchar(' ');
}

static void attrs_init(struct otel_thread_ctx_attr_iter *it, const otel_thread_ctx_inspector *insp,
		       const struct otel_thread_ctx_record *r)
{
	otel_thread_ctx_inspect_attr_iter_init(it, insp, r);
}

void tool_attrs_table(const otel_thread_ctx_inspector *insp,
		      const struct otel_thread_ctx_record *r)
{
	struct otel_thread_ctx_attr_iter it;
	struct otel_thread_ctx_attr a;

	attrs_init(&it, insp, r);
	while (otel_thread_ctx_inspect_attr_iter_next(&it, &a) == 0) {
		const char *name = otel_thread_ctx_inspect_key_name(insp, a.key);

		putchar(' ');
		tool_text_value(name, strlen(name));
		printf("=\"");
		tool_text_value(a.value, a.len);
		putchar('"');
	}
	if (it.unmapped != 0)
		printf(" (%u attribute%s outside the key map)", it.unmapped,
		       it.unmapped == 1 ? "" : "s");
}

void tool_attrs_json(const otel_thread_ctx_inspector *insp,
		     const struct otel_thread_ctx_record *r)
{
	struct otel_thread_ctx_attr_iter it;
	struct otel_thread_ctx_attr a;
	int first = 1;

	putchar('[');
	attrs_init(&it, insp, r);
	while (otel_thread_ctx_inspect_attr_iter_next(&it, &a) == 0) {
		const char *name = otel_thread_ctx_inspect_key_name(insp, a.key);

		printf("%s{\"index\":%u,\"key\":", first ? "" : ",", a.key);
		tool_json_string(name, strlen(name));
		printf(",\"value\":");
		tool_json_string(a.value, a.len);
		putchar('}');
		first = 0;
	}
	printf("],\"unmapped\":%u", it.unmapped);
}

static int dynamic(const struct otel_thread_ctx_inspect_module *m)
{
	return m->model == OTEL_THREAD_CTX_INSPECT_TLSDESC_DYNAMIC ||
	       m->model == OTEL_THREAD_CTX_INSPECT_GENERAL_DYNAMIC;
}

void tool_modules_table(const struct otel_thread_ctx_inspect_info *info)
{
	for (size_t i = 0; info != NULL && i < info->module_count; i++) {
		const struct otel_thread_ctx_inspect_module *m = &info->modules[i];

		printf("  slot in ");
		tool_text_value(m->path, strlen(m->path));
		printf(": %s", otel_thread_ctx_inspect_model_name(m->model));
		if (dynamic(m))
			printf(", module %" PRIu64 " offset %" PRIu64 "\n", m->module_id,
			       m->dtv_offset);
		else
			printf(", thread pointer %+" PRId64 "\n", m->tp_offset);
	}
}

void tool_modules_json(const struct otel_thread_ctx_inspect_info *info)
{
	putchar('[');
	for (size_t i = 0; info != NULL && i < info->module_count; i++) {
		const struct otel_thread_ctx_inspect_module *m = &info->modules[i];

		printf("%s{\"path\":", i ? "," : "");
		tool_json_string(m->path, strlen(m->path));
		printf(",\"model\":\"%s\",\"st_value\":%" PRIu64,
		       otel_thread_ctx_inspect_model_name(m->model), m->st_value);
		if (dynamic(m))
			printf(",\"module_id\":%" PRIu64 ",\"offset\":%" PRIu64 "}", m->module_id,
			       m->dtv_offset);
		else
			printf(",\"tp_offset\":%" PRId64 "}", m->tp_offset);
	}
	putchar(']');
}
