/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The C readers of this project on the conformance vectors, for run.py: a
 * command per line on stdin, one JSON line per result on stdout (bytes as
 * hex, so that nothing is lost to escaping):
 *
 *   record KEYS HEX      otel_thread_ctx_record_decode() of the bytes (at
 *                        most OTEL_THREAD_CTX_RECORD_SIZE of them, as a
 *                        reader copies them), its attributes walked with a
 *                        key map of KEYS names, and
 *                        otel_thread_ctx_inspect_anomalies()
 *   process HEX ZEROS    otel_thread_ctx_inspect_process_decode() of HEX then
 *                        ZEROS zero bytes
 *   process-at PID ADDR  otel_thread_ctx_inspect_process_read_at()
 *   threads PID          otel_thread_ctx_inspect_open() and _threads(): a
 *                        line per thread
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otel_thread_ctx.h"
#include "otel_thread_ctx_inspect.h"
#include "otel_thread_ctx_process.h"

static void hex(const void *p, size_t n)
{
	const uint8_t *b = p;

	putchar('"');
	for (size_t i = 0; i < n; i++)
		printf("%02x", b[i]);
	putchar('"');
}

static uint8_t *unhex(const char *s, size_t zeros, size_t *n)
{
	size_t len = strlen(s);
	uint8_t *b = calloc(len / 2 + zeros + 1, 1);

	if (b == NULL || len % 2 != 0)
		exit(2);
	for (size_t i = 0; i < len / 2; i++) {
		unsigned int x;

		if (sscanf(s + 2 * i, "%2x", &x) != 1)
			exit(2);
		b[i] = (uint8_t)x;
	}
	*n = len / 2 + zeros;
	return b;
}

/* The codes readers give for the vectors, by name. */
static void status(int err)
{
	static const struct {
		int code;
		const char *name;
	} names[] = {
		{ OTEL_THREAD_CTX_OK, "OK" },	      { OTEL_THREAD_CTX_EINVALID, "EINVALID" },
		{ OTEL_THREAD_CTX_ETRUNCATED, "ETRUNCATED" }, { OTEL_THREAD_CTX_ENOCTX, "ENOCTX" },
		{ OTEL_THREAD_CTX_EFORMAT, "EFORMAT" }, { OTEL_THREAD_CTX_EDECODE, "EDECODE" },
		{ OTEL_THREAD_CTX_E2BIG, "E2BIG" },     { OTEL_THREAD_CTX_EAGAIN, "EAGAIN" },
		{ OTEL_THREAD_CTX_EFAULT, "EFAULT" },   { OTEL_THREAD_CTX_ENOENT, "ENOENT" },
		{ OTEL_THREAD_CTX_ESRCH, "ESRCH" },     { OTEL_THREAD_CTX_EPERM, "EPERM" },
	};
	const char *name = NULL;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].code == err)
			name = names[i].name;
	if (name != NULL)
		printf("{\"status\":\"%s\"", name);
	else
		printf("{\"status\":\"%d\"", err);
}

static void anomalies(unsigned int a)
{
	printf(",\"anomalies\":[%s%s%s%s%s]", a & OTEL_THREAD_CTX_INSPECT_OVERSIZED ? "\"oversized\"" : "",
	       (a & OTEL_THREAD_CTX_INSPECT_OVERSIZED) && (a & ~1u) ? "," : "",
	       a & OTEL_THREAD_CTX_INSPECT_TRUNCATED_ENTRY ? "\"truncated-entry\"" : "",
	       (a & OTEL_THREAD_CTX_INSPECT_TRUNCATED_ENTRY) && (a & OTEL_THREAD_CTX_INSPECT_HALF_IDS) ?
		       "," : "",
	       a & OTEL_THREAD_CTX_INSPECT_HALF_IDS ? "\"half-ids\"" : "");
}

/* The record's fields and its walked attributes; `it` is initialised. */
static void record_body(const struct otel_thread_ctx_record *r, size_t found_size,
			struct otel_thread_ctx_attr_iter *it,
			int (*next)(struct otel_thread_ctx_attr_iter *, struct otel_thread_ctx_attr *))
{
	struct otel_thread_ctx_attr a;
	int first = 1;

	printf(",\"trace_id\":");
	hex(r->trace_id, 16);
	printf(",\"span_id\":");
	hex(r->span_id, 8);
	printf(",\"trace_flags\":%u,\"attrs_data_size\":%zu,\"attributes\":[", r->trace_flags,
	       found_size);
	while (next(it, &a) == 0) {
		printf("%s{\"index\":%u,\"value\":", first ? "" : ",", a.key);
		hex(a.value, a.len);
		putchar('}');
		first = 0;
	}
	printf("],\"unmapped\":%u", it->unmapped);
	anomalies(otel_thread_ctx_inspect_anomalies(r, found_size));
}

static void cmd_record(unsigned int keys, const char *h)
{
	struct otel_thread_ctx_record r;
	struct otel_thread_ctx_attr_iter it;
	size_t n, found;
	uint8_t *b = unhex(h, 0, &n);
	int err;

	memset(&r, 0, sizeof(r));
	err = otel_thread_ctx_record_decode(b, n < OTEL_THREAD_CTX_RECORD_SIZE ? n :
						   OTEL_THREAD_CTX_RECORD_SIZE, &r);
	status(err);
	if (err == OTEL_THREAD_CTX_OK) {
		found = n >= 28 ? (size_t)b[26] | (size_t)b[27] << 8 : 0;
		otel_thread_ctx_attr_iter_init_map(&it, &r, keys);
		record_body(&r, found, &it, otel_thread_ctx_attr_iter_next);
	}
	printf("}\n");
	free(b);
}

static void attrs(const char *name, const struct otel_thread_ctx_process_attr *a, size_t n)
{
	printf(",\"%s\":[", name);
	for (size_t i = 0; i < n; i++) {
		static const char *const types[] = { "empty",  "string", "bool",  "int",
						     "double", "array",	 "kvlist", "bytes" };
		unsigned int t = (unsigned int)a[i].type;

		printf("%s{\"key\":", i ? "," : "");
		hex(a[i].key, strlen(a[i].key));
		printf(",\"type\":\"%s\",\"value\":",
		       t < sizeof(types) / sizeof(types[0]) ? types[t] : "unknown");
		switch (a[i].type) {
		case OTEL_THREAD_CTX_PROCESS_BOOL:
			printf("%s", a[i].bool_value ? "true" : "false");
			break;
		case OTEL_THREAD_CTX_PROCESS_INT:
			printf("%" PRId64, a[i].int_value);
			break;
		case OTEL_THREAD_CTX_PROCESS_DOUBLE:
			printf("%.17g", a[i].double_value);
			break;
		default:
			hex(a[i].string, a[i].length);
		}
		putchar('}');
	}
	putchar(']');
}

static void snapshot(int err, struct otel_thread_ctx_inspect_process_snapshot *s)
{
	status(err);
	if (err == OTEL_THREAD_CTX_OK) {
		printf(",\"schema_version\":");
		if (s->schema_version != NULL)
			hex(s->schema_version, strlen(s->schema_version));
		else
			printf("null");
		printf(",\"key_map\":");
		if (s->key_map_present) {
			putchar('[');
			for (size_t i = 0; i < s->key_count; i++) {
				printf("%s", i ? "," : "");
				hex(s->keys[i], strlen(s->keys[i]));
			}
			putchar(']');
		} else {
			printf("null");
		}
		attrs("resource", s->resource, s->resource_count);
		attrs("attributes", s->attributes, s->attribute_count);
	}
	printf("}\n");
	otel_thread_ctx_inspect_process_snapshot_free(s);
}

static void cmd_threads(pid_t pid)
{
	struct otel_thread_ctx_inspect_thread *t;
	otel_thread_ctx_inspector *insp;
	size_t count = 0, cap = 256;
	int err = otel_thread_ctx_inspect_open(pid, &insp);

	if (err != OTEL_THREAD_CTX_OK) {
		status(err);
		printf("}\n");
		return;
	}
	t = calloc(cap, sizeof(*t));
	if (t == NULL)
		exit(2);
	err = otel_thread_ctx_inspect_threads(insp, t, cap, &count);
	if (err != OTEL_THREAD_CTX_OK || count > cap) {
		status(err != OTEL_THREAD_CTX_OK ? err : OTEL_THREAD_CTX_E2BIG);
		printf("}\n");
		count = 0;
	}
	for (size_t i = 0; i < count; i++) {
		struct otel_thread_ctx_attr_iter it;

		status(t[i].status);
		printf(",\"tid\":%d", (int)t[i].tid);
		if (t[i].status == OTEL_THREAD_CTX_OK) {
			otel_thread_ctx_inspect_attr_iter_init(&it, insp, &t[i].record);
			record_body(&t[i].record, t[i].attrs_data_size, &it,
				    otel_thread_ctx_inspect_attr_iter_next);
		}
		printf("}\n");
	}
	free(t);
	otel_thread_ctx_inspect_close(insp);
}

int main(void)
{
	char *line = NULL, *w[4];
	size_t cap = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while (getline(&line, &cap, stdin) > 0) {
		struct otel_thread_ctx_inspect_process_snapshot *s = NULL;
		size_t nw = 0, n;
		char *save = NULL;

		line[strcspn(line, "\n")] = '\0';
		for (char *p = strtok_r(line, " ", &save); p != NULL && nw < 4;
		     p = strtok_r(NULL, " ", &save))
			w[nw++] = p;
		if (nw == 3 && strcmp(w[0], "record") == 0) {
			cmd_record((unsigned int)strtoul(w[1], NULL, 10), w[2]);
		} else if (nw == 3 && strcmp(w[0], "process") == 0) {
			uint8_t *b = unhex(w[1], strtoul(w[2], NULL, 10), &n);
			int err = otel_thread_ctx_inspect_process_decode(b, n, &s);

			snapshot(err, s);
			free(b);
		} else if (nw == 3 && strcmp(w[0], "process-at") == 0) {
			int err = otel_thread_ctx_inspect_process_read_at(
				(pid_t)atoi(w[1]), strtoull(w[2], NULL, 0), 3, &s);

			snapshot(err, s);
		} else if (nw == 2 && strcmp(w[0], "threads") == 0) {
			cmd_threads((pid_t)atoi(w[1]));
		} else {
			fprintf(stderr, "vectors-read: bad command\n");
			return 2;
		}
	}
	free(line);
	return 0;
}
