/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What libotel-thread-ctx-compat publishes, given to `protoc --decode` with
 * the OpenTelemetry messages of tests/process/proto/, reads exactly as what
 * the project's own API publishes for the same attributes, key map and
 * schema version: the seven fields then resource_attributes as string
 * resource attributes, and threadlocal.schema_version and
 * threadlocal.attribute_key_map in ProcessContext.attributes, then
 * extra_attributes as string entries of ProcessContext.attributes.  Both are
 * also checked against the text expected by hand.  Skipped (77) without
 * protoc.
 *
 * Environment: OTEL_TEST_PROTOC (the protoc program), OTEL_TEST_PROTO_DIR
 * (tests/process/proto).
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check-lite.h"
#include "otel_thread_ctx_compat.h"
#include "otel_thread_ctx_process.h"

#define MESSAGE "opentelemetry.proto.profiles.v1development.ProcessContext"
#define PROTO_FILE "opentelemetry/proto/profiles/v1development/process_context.proto"

static const char *protoc, *proto_dir;

struct bytes {
	char *data;
	size_t len;
};

/* Reads a whole stream from its start. */
static struct bytes slurp(FILE *f)
{
	struct bytes b;
	long size;

	ck_assert_msg(fseek(f, 0, SEEK_END) == 0, "fseek");
	size = ftell(f);
	ck_assert_msg(size >= 0, "ftell");
	rewind(f);
	b.len = (size_t)size;
	b.data = malloc(b.len + 1);
	ck_assert_msg(b.data != NULL, "malloc");
	ck_assert_msg(fread(b.data, 1, b.len, f) == b.len, "fread");
	b.data[b.len] = '\0';
	return b;
}

/* `protoc --decode` of a payload: its text format. */
static struct bytes protoc_decode(const struct bytes *payload)
{
	char include[PATH_MAX + 3], what[sizeof(MESSAGE) + 16];
	FILE *in = tmpfile(), *out = tmpfile();
	struct bytes text;
	int status;
	pid_t pid;

	ck_assert_msg(in != NULL && out != NULL, "tmpfile");
	ck_assert_msg(fwrite(payload->data, 1, payload->len, in) == payload->len, "fwrite");
	fflush(in);
	rewind(in);
	snprintf(include, sizeof(include), "-I%s", proto_dir);
	snprintf(what, sizeof(what), "--decode=%s", MESSAGE);
	fflush(NULL);
	pid = fork();
	ck_assert_msg(pid >= 0, "fork");
	if (pid == 0) {
		char *argv[] = { (char *)protoc, include, what, (char *)PROTO_FILE, NULL };

		dup2(fileno(in), 0);
		dup2(fileno(out), 1);
		execv(protoc, argv);
		_exit(127);
	}
	ck_assert_msg(waitpid(pid, &status, 0) == pid, "waitpid");
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "protoc --decode failed (%#x)",
	      status);
	text = slurp(out);
	fclose(in);
	fclose(out);
	return text;
}

/* A copy of the payload this process publishes now. */
static struct bytes published_payload(void)
{
	struct otel_thread_ctx_process_info info;
	struct bytes p;

	ck_assert_int_eq(otel_thread_ctx_process_query(&info), 0);
	ck_assert_msg(info.published, "published");
	p.len = info.payload_size;
	p.data = malloc(p.len + 1);
	ck_assert_msg(p.data != NULL, "malloc");
	memcpy(p.data, info.payload, p.len);
	return p;
}

/* protoc's text format, built by hand. */
struct text {
	char buf[16384];
	size_t len;
};

__attribute__((format(printf, 2, 3))) static void add(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(t->buf + t->len, sizeof(t->buf) - t->len, fmt, ap);
	va_end(ap);
	ck_assert_msg(n >= 0 && t->len + (size_t)n < sizeof(t->buf), "expected text too long");
	t->len += (size_t)n;
}

static void add_string_attribute(struct text *t, const char *indent, const char *key,
				 const char *value)
{
	add(t, "%sattributes {\n%s  key: \"%s\"\n%s  value {\n%s    string_value: \"%s\"\n%s  }\n%s}\n",
	    indent, indent, key, indent, indent, value, indent, indent);
}

static const char *const semconv_keys[7] = {
	"deployment.environment.name", "service.instance.id", "service.name",
	"service.version", "telemetry.sdk.language", "telemetry.sdk.version",
	"telemetry.sdk.name",
};

/* The same context through both APIs, decoded by protoc. */
static void compare(const char *schema)
{
	static const char *resource[] = { "host.name", "build-7", "custom.key", "a \"quoted\" value",
					  NULL };
	static const char *key_map[] = { "http.route", "user.id", NULL };
	static const char *extra[] = { "process.runtime.name", "example-vm", NULL };
	static const char *const semconv_values[7] = {
		"", "4f1c0f7e-3a5b-4c1d-9e2f-000000000001", "checkout", "1.2.3", "c", "0.1.0",
		"otel-thread-ctx-compat",
	};
	/* The text format escapes the quotes. */
	static const char *const escaped[] = { "build-7", "a \\\"quoted\\\" value" };
	const otel_thread_ctx_config_data config = { schema, key_map };
	const otel_process_ctx_data data = {
		semconv_values[0], semconv_values[1], semconv_values[2], semconv_values[3],
		semconv_values[4], semconv_values[5], semconv_values[6], resource, extra, &config,
	};
	struct otel_thread_ctx_process_options options = OTEL_THREAD_CTX_PROCESS_OPTIONS_INIT;
	struct otel_thread_ctx_process_attr attrs[9], extra_attr;
	static struct text want;
	struct bytes compat, native, compat_text, native_text;
	otel_process_ctx_result r;

	r = otel_process_ctx_publish(&data);
	ck_assert_msg(r.success, "compat publish: %s", r.error_message);
	compat = published_payload();
	ck_assert_msg(otel_process_ctx_drop_current(), "drop");

	/* The project's API: the key names are registered already (the
	 * compat publish registered them, as the project's API wants). */
	memset(attrs, 0, sizeof(attrs));
	for (size_t i = 0; i < 9; i++) {
		attrs[i].key = i < 7 ? semconv_keys[i] : resource[2 * (i - 7)];
		attrs[i].type = OTEL_THREAD_CTX_PROCESS_STRING;
		attrs[i].string = i < 7 ? semconv_values[i] : resource[2 * (i - 7) + 1];
	}
	options.schema = strcmp(schema, "tls_v1") == 0 ? OTEL_THREAD_CTX_PROCESS_SCHEMA_TLS_V1 :
							  OTEL_THREAD_CTX_PROCESS_SCHEMA_TLSDESC_V1_DEV;
	memset(&extra_attr, 0, sizeof(extra_attr));
	extra_attr.key = extra[0];
	extra_attr.type = OTEL_THREAD_CTX_PROCESS_STRING;
	extra_attr.string = extra[1];
	options.attributes = &extra_attr;
	options.attribute_count = 1;
	ck_assert_msg(otel_thread_ctx_key_count() == 2, "the key map's two names are registered");
	ck_assert_int_eq(otel_thread_ctx_process_publish_with(attrs, 9, &options), 0);
	native = published_payload();
	ck_assert_int_eq(otel_thread_ctx_process_unpublish(), 0);

	memset(&want, 0, sizeof(want));
	add(&want, "resource {\n");
	for (size_t i = 0; i < 7; i++)
		add_string_attribute(&want, "  ", semconv_keys[i], semconv_values[i]);
	add_string_attribute(&want, "  ", resource[0], escaped[0]);
	add_string_attribute(&want, "  ", resource[2], escaped[1]);
	add(&want, "}\n");
	add_string_attribute(&want, "", "threadlocal.schema_version", schema);
	add(&want, "attributes {\n  key: \"threadlocal.attribute_key_map\"\n  value {\n"
		   "    array_value {\n");
	for (size_t i = 0; key_map[i] != NULL; i++)
		add(&want, "      values {\n        string_value: \"%s\"\n      }\n", key_map[i]);
	add(&want, "    }\n  }\n}\n");
	add_string_attribute(&want, "", extra[0], extra[1]);

	compat_text = protoc_decode(&compat);
	native_text = protoc_decode(&native);
	printf("protoc --decode of the compat payload (%zu bytes, schema %s):\n%s", compat.len,
	       schema, compat_text.data);
	ck_assert_msg(strcmp(compat_text.data, native_text.data) == 0,
	      "compat and native payloads decode differently; native:\n%s", native_text.data);
	ck_assert_msg(strcmp(compat_text.data, want.buf) == 0, "not the expected text; expected:\n%s",
	      want.buf);
	ck_assert_msg(compat.len == native.len && memcmp(compat.data, native.data, compat.len) == 0,
	      "the two payloads are the same bytes");
	free(compat.data);
	free(native.data);
	free(compat_text.data);
	free(native_text.data);
}

int main(void)
{
	static const char *const schemas[] = { "tlsdesc_v1_dev", "tls_v1" };

	setvbuf(stdout, NULL, _IONBF, 0);
	protoc = getenv("OTEL_TEST_PROTOC");
	proto_dir = getenv("OTEL_TEST_PROTO_DIR");
	if (protoc == NULL || *protoc == '\0' || access(protoc, X_OK) != 0)
		skip("protoc not found (Debian package protobuf-compiler)");
	ck_assert_msg(proto_dir != NULL && *proto_dir != '\0', "OTEL_TEST_PROTO_DIR is not set");
	/* Each schema version in a process of its own: a fresh key registry. */
	for (size_t i = 0; i < 2; i++) {
		int status;
		pid_t pid;

		fflush(NULL);
		pid = fork();
		ck_assert_msg(pid >= 0, "fork");
		if (pid == 0) {
			compare(schemas[i]);
			fflush(NULL);
			_exit(0);
		}
		ck_assert_msg(waitpid(pid, &status, 0) == pid, "waitpid");
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "schema %s failed", schemas[i]);
		printf("ok: %s\n", schemas[i]);
	}
	return 0;
}
