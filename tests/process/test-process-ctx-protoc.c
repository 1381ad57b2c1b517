/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An independent decoder: the published payload, given to
 * `protoc --decode` with the OpenTelemetry messages of tests/process/proto/, reads as
 * exactly the ProcessContext it should be; re-encoded by protoc it is the
 * same bytes (the library's encoding is canonical); and what protoc encodes,
 * the library's decoder reads.  Skipped (77) without protoc.
 *
 * Environment: OTEL_TEST_PROTOC (the protoc program), OTEL_TEST_PROTO_DIR
 * (tests/process/proto).
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>

#include "pctx.h"

#define MESSAGE "opentelemetry.proto.profiles.v1development.ProcessContext"
#define PROTO_FILE "opentelemetry/proto/profiles/v1development/process_context.proto"

static const char *protoc, *proto_dir;

struct output {
	char *data;
	size_t len;
};

/* Runs protoc --decode or --encode on `in`; returns its exit status. */
static int run_protoc(const char *mode, const void *in, size_t in_len, struct output *out)
{
	char include[PATH_MAX + 3], what[sizeof(MESSAGE) + 16];
	FILE *fin = tmpfile(), *fout = tmpfile();
	int status;
	long size;
	pid_t pid;

	ck_assert_ptr_nonnull(fin);
	ck_assert_ptr_nonnull(fout);
	ck_assert_uint_eq(fwrite(in, 1, in_len, fin), in_len);
	fflush(fin);
	rewind(fin);
	snprintf(include, sizeof(include), "-I%s", proto_dir);
	snprintf(what, sizeof(what), "--%s=%s", mode, MESSAGE);
	fflush(NULL);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char *argv[] = { (char *)protoc, include, what, (char *)PROTO_FILE, NULL };

		dup2(fileno(fin), 0);
		dup2(fileno(fout), 1);
		execv(protoc, argv);
		_exit(127);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	fseek(fout, 0, SEEK_END);
	size = ftell(fout);
	ck_assert_int_ge(size, 0);
	rewind(fout);
	out->len = (size_t)size;
	out->data = malloc(out->len + 1);
	ck_assert_ptr_nonnull(out->data);
	ck_assert_uint_eq(fread(out->data, 1, out->len, fout), out->len);
	out->data[out->len] = '\0';
	fclose(fin);
	fclose(fout);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* The payload this process publishes now. */
static struct output published_payload(void)
{
	struct otel_thread_ctx_process_info info;
	struct output p;

	ck_assert_ok(otel_thread_ctx_process_query(&info));
	ck_assert_int_eq(info.published, 1);
	p.len = info.payload_size;
	p.data = malloc(p.len);
	ck_assert_ptr_nonnull(p.data);
	memcpy(p.data, info.payload, p.len);
	return p;
}

/* protoc's text format, built by hand. */
struct text {
	char buf[65536];
	size_t len;
};

static void add(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void add(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(t->buf + t->len, sizeof(t->buf) - t->len, fmt, ap);
	va_end(ap);
	ck_assert_int_ge(n, 0);
	ck_assert_uint_lt(t->len + (size_t)n, sizeof(t->buf));
	t->len += (size_t)n;
}

static void add_value(struct text *t, const char *indent, const char *key, const char *value)
{
	add(t, "%sattributes {\n%s  key: \"%s\"\n%s  value {\n%s    %s\n%s  }\n%s}\n", indent,
	    indent, key, indent, indent, value, indent, indent);
}

START_TEST(protoc_decodes_the_payload_as_the_process_context)
{
	static struct text want;
	struct otel_thread_ctx_process_attr a[5];
	struct output payload, got;
	unsigned int idx;

	memset(&want, 0, sizeof(want));
	ck_assert_ok(otel_thread_ctx_key_register("http.route", &idx));
	ck_assert_ok(otel_thread_ctx_key_register("http.method", &idx));
	memset(a, 0, sizeof(a));
	a[0] = str_attr("service.name", "checkout");
	a[1] = str_attr("service.version", "1.2.3");
	a[2] = int_attr("process.pid", 4242);
	a[3].key = "sampling.ratio";
	a[3].type = OTEL_THREAD_CTX_PROCESS_DOUBLE;
	a[3].double_value = 0.5;
	a[4].key = "feature.on";
	a[4].type = OTEL_THREAD_CTX_PROCESS_BOOL;
	a[4].bool_value = 1;
	ck_assert_ok(otel_thread_ctx_process_unpublish());
	ck_assert_ok(otel_thread_ctx_process_publish(a, 5));
	ck_assert_ok(otel_thread_ctx_key_register("user.id", &idx));
	payload = published_payload();

	add(&want, "resource {\n");
	add_value(&want, "  ", "service.name", "string_value: \"checkout\"");
	add_value(&want, "  ", "service.version", "string_value: \"1.2.3\"");
	add_value(&want, "  ", "process.pid", "int_value: 4242");
	add_value(&want, "  ", "sampling.ratio", "double_value: 0.5");
	add_value(&want, "  ", "feature.on", "bool_value: true");
	add(&want, "}\n");
	add_value(&want, "", "threadlocal.schema_version", "string_value: \"tlsdesc_v1_dev\"");
	add(&want, "attributes {\n  key: \"threadlocal.attribute_key_map\"\n  value {\n"
		   "    array_value {\n");
	for (unsigned int i = 0; i < otel_thread_ctx_key_count(); i++)
		add(&want, "      values {\n        string_value: \"%s\"\n      }\n",
		    otel_thread_ctx_key_name(i));
	add(&want, "    }\n  }\n}\n");

	ck_assert_int_eq(run_protoc("decode", payload.data, payload.len, &got), 0);
	printf("protoc --decode of the %zu-byte payload:\n%s", payload.len, got.data);
	ck_assert_str_eq(got.data, want.buf);
	free(got.data);
	free(payload.data);
	ck_assert_ok(otel_thread_ctx_process_unpublish());
}
END_TEST

START_TEST(protoc_encodes_the_same_bytes)
{
	char long_key[OTEL_THREAD_CTX_KEY_NAME_MAX + 1];
	struct otel_thread_ctx_process_attr a[10];
	struct output payload, text, again;
	unsigned int idx;
	size_t n = 0;

	memset(long_key, 'k', sizeof(long_key) - 1);
	long_key[sizeof(long_key) - 1] = '\0';
	ck_assert_ok(otel_thread_ctx_key_register(long_key, &idx));
	ck_assert_ok(otel_thread_ctx_key_register("caf\xc3\xa9.\xe2\x82\xac.\xf0\x9f\x98\x80", &idx));
	memset(a, 0, sizeof(a));
	a[n++] = str_attr("utf8", "na\xc3\xafve \xe2\x80\x94 \xf0\x9f\x8c\x8d");
	a[n++] = str_attr("quotes", "a \"quoted\" \\ back\\slash 'single' \t\n");
	a[n] = str_attr("nul", "a\0b");
	a[n++].length = 3;
	a[n++] = str_attr("empty", "");
	a[n++] = int_attr("int.min", INT64_MIN);
	a[n++] = int_attr("int.minus.one", -1);
	a[n++] = int_attr("int.zero", 0);
	a[n].key = "double.inf";
	a[n].type = OTEL_THREAD_CTX_PROCESS_DOUBLE;
	a[n++].double_value = -INFINITY;
	a[n].key = "double.small";
	a[n].type = OTEL_THREAD_CTX_PROCESS_DOUBLE;
	a[n++].double_value = 5e-324;
	a[n].key = "bool.false";
	a[n++].type = OTEL_THREAD_CTX_PROCESS_BOOL;
	ck_assert_ok(otel_thread_ctx_process_unpublish());
	ck_assert_ok(otel_thread_ctx_process_publish(a, n));
	payload = published_payload();

	ck_assert_int_eq(run_protoc("decode", payload.data, payload.len, &text), 0);
	ck_assert_int_eq(run_protoc("encode", text.data, text.len, &again), 0);
	ck_assert_uint_eq(again.len, payload.len);
	ck_assert_mem_eq(again.data, payload.data, payload.len);
	printf("protoc re-encodes the %zu-byte payload to the same bytes\n", payload.len);
	free(payload.data);
	free(text.data);
	free(again.data);
	ck_assert_ok(otel_thread_ctx_process_unpublish());
}
END_TEST

/* What protoc encodes, with fields the library never writes, decodes. */
START_TEST(the_library_decodes_what_protoc_encodes)
{
	static const char text[] =
		"resource {\n"
		"  attributes { key: \"service.name\" value { string_value: \"other-sdk\" } }\n"
		"  attributes { key: \"list\" value { kvlist_value { values { key: \"a\" } } } }\n"
		"  attributes { key: \"blob\" value { bytes_value: \"\\001\\000\\377\" } }\n"
		"  dropped_attributes_count: 3\n"
		"  entity_refs { type: \"service\" id_keys: \"service.name\" }\n"
		"}\n"
		"attributes { key: \"threadlocal.attribute_key_map\"\n"
		"  value { array_value { values { string_value: \"x\" }"
		" values { string_value: \"y\" } } } }\n"
		"attributes { key: \"threadlocal.schema_version\""
		" value { string_value: \"tlsdesc_v1_dev\" } }\n"
		"attributes { key: \"host.arch\" value { string_value: \"arm64\" } }\n";
	struct otel_thread_ctx_inspect_process_snapshot *s = NULL;
	struct output bytes;

	ck_assert_int_eq(run_protoc("encode", text, sizeof(text) - 1, &bytes), 0);
	ck_assert_ok(otel_thread_ctx_inspect_process_decode(bytes.data, bytes.len, &s));
	ck_assert_str_eq(s->schema_version, "tlsdesc_v1_dev");
	ck_assert_uint_eq(s->key_count, 2);
	ck_assert_str_eq(s->keys[0], "x");
	ck_assert_str_eq(s->keys[1], "y");
	ck_assert_uint_eq(s->resource_count, 3);
	ck_assert_str_eq(s->resource[0].string, "other-sdk");
	ck_assert_int_eq(s->resource[1].type, OTEL_THREAD_CTX_PROCESS_KVLIST);
	ck_assert_int_eq(s->resource[2].type, OTEL_THREAD_CTX_PROCESS_BYTES);
	ck_assert_uint_eq(s->resource[2].length, 3);
	ck_assert_mem_eq(s->resource[2].string, "\001\000\377", 3);
	ck_assert_uint_eq(s->attribute_count, 1);
	ck_assert_str_eq(s->attributes[0].key, "host.arch");
	otel_thread_ctx_inspect_process_snapshot_free(s);
	free(bytes.data);
}
END_TEST

Suite *test_suite(void)
{
	const struct test_case cases[] = {
		{ "protoc_decodes_the_payload_as_the_process_context",
		  protoc_decodes_the_payload_as_the_process_context },
		{ "protoc_encodes_the_same_bytes", protoc_encodes_the_same_bytes },
		{ "the_library_decodes_what_protoc_encodes", the_library_decodes_what_protoc_encodes },
	};

	protoc = getenv("OTEL_TEST_PROTOC");
	proto_dir = getenv("OTEL_TEST_PROTO_DIR");
	if (protoc == NULL || *protoc == '\0' || access(protoc, X_OK) != 0) {
		printf("SKIP: protoc not found (Debian package protobuf-compiler)\n");
		exit(77);
	}
	if (proto_dir == NULL || *proto_dir == '\0') {
		printf("SKIP: OTEL_TEST_PROTO_DIR is not set\n");
		exit(77);
	}
	return MAKE_SUITE("process-ctx-protoc", cases, 60);
}
