/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libotel-thread-ctx-compat used the way the reference implementation's
 * README uses its API (include/otel_thread_ctx_compat.h): fill the struct,
 * publish, check the result, read back, update by publishing again, fork a
 * child that publishes its own service_instance_id, drop.  Then the error
 * cases, the key map against the key registry, and the context shared with
 * the project's own API.  What is published is checked with the project's
 * reader (otel_thread_ctx_inspect_process_read()) and its thread-record reader.
 *
 *   test-compat [--no-remote]
 *
 * Each case runs in a child of its own: the key registry never forgets a
 * name.  --no-remote leaves out reading the forked child's context from this
 * process (process_vm_readv(), which qemu-user does not have).
 */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compat-util.h"
#include "check-lite.h"
#include "otel_thread_ctx_compat.h"
#include "otel_thread_ctx_inspect.h"

static int remote = 1;

static const char *const semconv_keys[7] = {
	"deployment.environment.name", "service.instance.id", "service.name",
	"service.version", "telemetry.sdk.language", "telemetry.sdk.version",
	"telemetry.sdk.name",
};

static const size_t semconv_offsets[7] = {
	offsetof(otel_process_ctx_data, deployment_environment_name),
	offsetof(otel_process_ctx_data, service_instance_id),
	offsetof(otel_process_ctx_data, service_name),
	offsetof(otel_process_ctx_data, service_version),
	offsetof(otel_process_ctx_data, telemetry_sdk_language),
	offsetof(otel_process_ctx_data, telemetry_sdk_version),
	offsetof(otel_process_ctx_data, telemetry_sdk_name),
};

static const char *semconv_field(const otel_process_ctx_data *d, size_t i)
{
	const char *s;

	memcpy(&s, (const char *)d + semconv_offsets[i], sizeof(s));
	return s;
}

static void set_semconv_field(otel_process_ctx_data *d, size_t i, const char *s)
{
	memcpy((char *)d + semconv_offsets[i], &s, sizeof(s));
}

static size_t list_length(const char *const *list)
{
	size_t n = 0;

	while (list != NULL && list[n] != NULL)
		n++;
	return n;
}

/* Two NULL-terminated lists hold the same strings (NULL is the empty list). */
static int same_list(const char *const *a, const char *const *b)
{
	size_t n = list_length(a);

	if (list_length(b) != n)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(a[i], b[i]) != 0)
			return 0;
	}
	return 1;
}

/* otel_process_ctx_read() returns `want`, with `key_map` as the key map
 * (the registry's) and the schema version `schema`. */
static void check_read(const otel_process_ctx_data *want, const char *const *key_map,
		       const char *schema)
{
	otel_process_ctx_read_result r = otel_process_ctx_read();

	ck_assert_msg(r.success && r.error_message == NULL, "read: %s", r.error_message);
	for (size_t i = 0; i < 7; i++)
		ck_assert_msg(strcmp(semconv_field(&r.data, i), semconv_field(want, i)) == 0,
		      "read: %s is \"%s\", not \"%s\"", semconv_keys[i], semconv_field(&r.data, i),
		      semconv_field(want, i));
	ck_assert_msg(r.data.resource_attributes != NULL &&
		      same_list(r.data.resource_attributes, want->resource_attributes),
	      "read: resource_attributes");
	ck_assert_msg(r.data.extra_attributes != NULL &&
		      same_list(r.data.extra_attributes, want->extra_attributes),
	      "read: extra_attributes");
	ck_assert_msg(r.data.thread_ctx_config != NULL, "read: thread_ctx_config");
	ck_assert_msg(strcmp(r.data.thread_ctx_config->schema_version, schema) == 0,
	      "read: schema_version \"%s\"", r.data.thread_ctx_config->schema_version);
	ck_assert_msg(same_list(r.data.thread_ctx_config->attribute_key_map, key_map),
	      "read: attribute_key_map");
	ck_assert_msg(otel_process_ctx_read_drop(&r), "read_drop");
	ck_assert_msg(!r.success && r.error_message != NULL && r.data.service_name == NULL,
	      "a dropped result is marked failed and empty");
	ck_assert_msg(!otel_process_ctx_read_drop(&r), "a dropped result cannot be dropped again");
}

/* The project's reader finds `want` in process `pid`: the seven fields then
 * the resource_attributes as resource attributes, in that order; the key
 * map and the schema version. */
static void check_project_reader(pid_t pid, const otel_process_ctx_data *want,
				 const char *const *key_map, const char *schema)
{
	struct otel_thread_ctx_inspect_process_snapshot *s = NULL;
	size_t extra = list_length(want->resource_attributes) / 2;
	int rc = otel_thread_ctx_inspect_process_read(pid, 0, &s);

	ck_assert_msg(rc == OTEL_THREAD_CTX_OK, "otel_thread_ctx_inspect_process_read(%d): %s", (int)pid,
	      otel_thread_ctx_inspect_strerror(rc));
	ck_assert_msg(s->resource_count == 7 + extra, "%zu resource attributes", s->resource_count);
	for (size_t i = 0; i < 7 + extra; i++) {
		const char *key = i < 7 ? semconv_keys[i] : want->resource_attributes[2 * (i - 7)];
		const char *value = i < 7 ? semconv_field(want, i) :
					    want->resource_attributes[2 * (i - 7) + 1];

		ck_assert_msg(strcmp(s->resource[i].key, key) == 0, "resource %zu is %s, not %s", i,
		      s->resource[i].key, key);
		ck_assert_msg(s->resource[i].type == OTEL_THREAD_CTX_PROCESS_STRING &&
			      strcmp(s->resource[i].string, value) == 0,
		      "resource %s = \"%s\"", key, s->resource[i].string);
	}
	ck_assert_msg(s->attribute_count == list_length(want->extra_attributes) / 2,
	      "%zu ProcessContext.attributes besides threadlocal.*", s->attribute_count);
	for (size_t i = 0; i < s->attribute_count; i++) {
		const char *key = want->extra_attributes[2 * i];
		const char *value = want->extra_attributes[2 * i + 1];

		ck_assert_msg(strcmp(s->attributes[i].key, key) == 0, "attribute %zu is %s, not %s", i,
		      s->attributes[i].key, key);
		ck_assert_msg(s->attributes[i].type == OTEL_THREAD_CTX_PROCESS_STRING &&
			      strcmp(s->attributes[i].string, value) == 0,
		      "attribute %s = \"%s\"", key, s->attributes[i].string);
	}
	ck_assert_msg(s->schema_version != NULL && strcmp(s->schema_version, schema) == 0,
	      "schema_version");
	ck_assert_msg(s->key_map_present && s->key_count == list_length(key_map), "%zu keys", s->key_count);
	for (size_t i = 0; i < s->key_count; i++)
		ck_assert_msg(strcmp(s->keys[i], key_map[i]) == 0, "key %zu is %s", i, s->keys[i]);
	otel_thread_ctx_inspect_process_snapshot_free(s);
}

static struct otel_thread_ctx_process_info query(void)
{
	struct otel_thread_ctx_process_info info;

	ck_assert_int_eq(otel_thread_ctx_process_query(&info), 0);
	return info;
}

static void check_read_fails(void)
{
	otel_process_ctx_read_result r = otel_process_ctx_read();

	ck_assert_msg(!r.success && r.error_message != NULL, "read fails");
	ck_assert_msg(r.data.service_name == NULL && r.data.resource_attributes == NULL &&
		      r.data.thread_ctx_config == NULL,
	      "a failed read holds nothing");
	ck_assert_msg(!otel_process_ctx_read_drop(&r), "read_drop of a failed read");
}

/* --- The README's usage ------------------------------------------------------ */

static void readme_usage(void)
{
	static const char *resource1[] = { "resource.key1", "resource.value1", "resource.key2",
					   "resource.value2", NULL };
	static const char *resource2[] = { "resource.key1", "changed", NULL };
	static const char *extra1[] = { "extra.key1", "extra.value1", NULL };
	static const char *extra2[] = { "extra.key1", "extra.changed", "extra.key2", "v", NULL };
	static const char *key_map[] = { "http.route", "http.method", "user.id", NULL };
	const otel_thread_ctx_config_data config = { "tlsdesc_v1_dev", key_map };
	otel_process_ctx_data data = {
		.deployment_environment_name = "prod",
		.service_instance_id = "123d8444-2c7e-46e3-89f6-6217880f7123",
		.service_name = "my-service",
		.service_version = "4.5.6",
		.telemetry_sdk_language = "c",
		.telemetry_sdk_version = "1.2.3",
		.telemetry_sdk_name = "example_ctx.c",
		.resource_attributes = resource1,
		.extra_attributes = extra1,
		.thread_ctx_config = &config,
	};
	struct otel_thread_ctx_process_info first, second;
	otel_process_ctx_result r;
	int ready[2], done[2], status;
	char byte = 0;
	pid_t child;

	/* Publish, check the result, read back. */
	r = otel_process_ctx_publish(&data);
	ck_assert_msg(r.success && r.error_message == NULL, "publish: %s", r.error_message);
	ck_assert_msg(otel_ctx_mappings() == 1, "one OTEL_CTX mapping");
	check_read(&data, key_map, "tlsdesc_v1_dev");
	check_project_reader(0, &data, key_map, "tlsdesc_v1_dev");
	first = query();

	/* Update: publish again replaces the context, in place. */
	data.service_version = "4.5.7";
	data.resource_attributes = resource2;
	data.extra_attributes = extra2;
	r = otel_process_ctx_publish(&data);
	ck_assert_msg(r.success, "publish again: %s", r.error_message);
	second = query();
	ck_assert_msg(second.mapping == first.mapping, "the same mapping is updated");
	ck_assert_msg(second.monotonic_published_at_ns > first.monotonic_published_at_ns,
	      "with a newer timestamp");
	ck_assert_msg(otel_ctx_mappings() == 1, "still one mapping");
	check_read(&data, key_map, "tlsdesc_v1_dev");
	check_project_reader(0, &data, key_map, "tlsdesc_v1_dev");

	/* A forked child inherits nothing and publishes its own. */
	ck_assert_msg(pipe(ready) == 0 && pipe(done) == 0, "pipe");
	fflush(NULL);
	child = fork();
	ck_assert_msg(child >= 0, "fork");
	if (child == 0) {
		otel_process_ctx_data mine = data;

		close(ready[0]);
		close(done[1]);
		ck_assert_msg(otel_ctx_mappings() == 0, "the child has no mapping");
		check_read_fails();
		mine.service_instance_id = "child-instance";
		r = otel_process_ctx_publish(&mine);
		ck_assert_msg(r.success, "the child publishes: %s", r.error_message);
		ck_assert_msg(otel_ctx_mappings() == 1, "the child has its own mapping");
		check_read(&mine, key_map, "tlsdesc_v1_dev");
		check_project_reader(0, &mine, key_map, "tlsdesc_v1_dev");
		ck_assert_msg(write(ready[1], "p", 1) == 1, "tell the parent");
		ck_assert_msg(read(done[0], &byte, 1) == 0, "wait for the parent");
		ck_assert_msg(otel_process_ctx_drop_current(), "the child drops");
		ck_assert_msg(otel_ctx_mappings() == 0, "the child's mapping is gone");
		check_read_fails();
		fflush(NULL);
		_exit(0);
	}
	close(ready[1]);
	close(done[0]);
	ck_assert_msg(read(ready[0], &byte, 1) == 1, "the child published");
	if (remote) {
		otel_process_ctx_data theirs = data;

		theirs.service_instance_id = "child-instance";
		check_project_reader(child, &theirs, key_map, "tlsdesc_v1_dev");
	}
	check_read(&data, key_map, "tlsdesc_v1_dev");
	ck_assert_msg(query().mapping == first.mapping, "the parent's mapping is untouched");
	close(done[1]);
	ck_assert_msg(waitpid(child, &status, 0) == child, "waitpid");
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child's checks passed");
	close(ready[0]);

	/* Drop. */
	ck_assert_msg(otel_process_ctx_drop_current(), "drop_current");
	ck_assert_msg(otel_ctx_mappings() == 0, "no mapping after drop");
	check_read_fails();
	ck_assert_msg(otel_process_ctx_drop_current(), "drop_current with nothing published");
}

/* --- Errors ------------------------------------------------------------------- */

static otel_process_ctx_data base_data(void)
{
	otel_process_ctx_data d = {
		"env", "instance", "service", "1.0", "c", "0.1.0", "compat-test", NULL, NULL, NULL,
	};

	return d;
}

/* publish(d) fails with a message containing `words`, and changes
 * nothing: no new key name, same mapping, timestamp and payload. */
static void check_refused(const otel_process_ctx_data *d, const char *words)
{
	struct otel_thread_ctx_process_info before = query(), after;
	unsigned int keys = otel_thread_ctx_key_count();
	otel_process_ctx_result r = otel_process_ctx_publish(d);

	ck_assert_msg(!r.success && r.error_message != NULL, "publish must fail (%s)", words);
	ck_assert_msg(strstr(r.error_message, words) != NULL, "message \"%s\" says \"%s\"",
	      r.error_message, words);
	after = query();
	ck_assert_msg(after.published == before.published && after.mapping == before.mapping &&
		      after.monotonic_published_at_ns == before.monotonic_published_at_ns &&
		      after.payload == before.payload,
	      "a refused publish changes nothing (%s)", words);
	ck_assert_msg(otel_thread_ctx_key_count() == keys, "no key name registered (%s)", words);
}

static void errors(void)
{
	static const char *odd[] = { "key", NULL };
	static const char *pair[] = { "key", "value", NULL };
	static const char *empty_list[] = { NULL };
	static const char *twice_semconv[] = { "service.name", "again", NULL };
	static const char *twice[] = { "a", "1", "a", "2", NULL };
	static const char *threadlocal[] = { "threadlocal.schema_version", "tls_v1", NULL };
	static const char *empty_key[] = { "", "value", NULL };
	static const char *bad_utf8[] = { "key", "\xc3\x28", NULL };
	static const char *empty_value[] = { "key", "", NULL };
	static const char *map_empty_name[] = { "", NULL };
	static const char *map_twice[] = { "x", "y", "x", NULL };
	static const char *map_ok[] = { "x", NULL };
	static char long_name[300], *big;
	static const char *map_long[] = { long_name, NULL };
	static const char *map_many[260];
	static char many_names[259][8];
	otel_thread_ctx_config_data config = { "tlsdesc_v1_dev", NULL };
	otel_process_ctx_data d;
	otel_process_ctx_result r;

	/* Nothing published yet. */
	check_read_fails();
	ck_assert_msg(!otel_process_ctx_read_drop(NULL), "read_drop(NULL)");
	ck_assert_msg(!otel_process_ctx_publish(NULL).success, "publish(NULL)");
	ck_assert_msg(otel_process_ctx_publish(NULL).error_message != NULL, "publish(NULL) says why");

	/* A publication for the refused ones to leave alone. */
	d = base_data();
	r = otel_process_ctx_publish(&d);
	ck_assert_msg(r.success, "publish: %s", r.error_message);

	for (size_t i = 0; i < 7; i++) {
		d = base_data();
		set_semconv_field(&d, i, NULL);
		check_refused(&d, "NULL");
	}
	d = base_data();
	d.resource_attributes = odd;
	check_refused(&d, "resource_attributes");
	d = base_data();
	d.extra_attributes = odd;
	check_refused(&d, "extra_attributes");
	d = base_data();
	d.extra_attributes = twice;
	check_refused(&d, "twice in extra_attributes");
	d.extra_attributes = empty_key;
	check_refused(&d, "extra_attributes is empty");
	d.extra_attributes = bad_utf8;
	check_refused(&d, "UTF-8");
	d.extra_attributes = threadlocal;
	check_refused(&d, "threadlocal.");
	/* Not a resource attribute: the same key as one is allowed. */
	d.extra_attributes = twice_semconv;
	r = otel_process_ctx_publish(&d);
	ck_assert_msg(r.success, "an extra attribute named like a resource one: %s", r.error_message);
	check_read(&d, empty_list, "tlsdesc_v1_dev");
	d = base_data();
	d.extra_attributes = pair;
	r = otel_process_ctx_publish(&d);
	ck_assert_msg(r.success, "publish: %s", r.error_message);
	d = base_data();
	d.resource_attributes = twice_semconv;
	check_refused(&d, "twice");
	d.resource_attributes = twice;
	check_refused(&d, "twice");
	d.resource_attributes = empty_key;
	check_refused(&d, "empty");
	d.resource_attributes = bad_utf8;
	check_refused(&d, "UTF-8");
	d = base_data();
	d.service_name = "\xff";
	check_refused(&d, "UTF-8");

	/* thread_ctx_config. */
	d = base_data();
	d.thread_ctx_config = &config;
	config.schema_version = "tls_v2";
	check_refused(&d, "schema_version");
	config.schema_version = NULL;
	config.attribute_key_map = map_ok;
	check_refused(&d, "requires schema_version");
	config.schema_version = "tlsdesc_v1_dev";
	config.attribute_key_map = map_empty_name;
	check_refused(&d, "attribute_key_map");
	config.attribute_key_map = map_twice;
	check_refused(&d, "twice");
	memset(long_name, 'k', 256);
	config.attribute_key_map = map_long;
	check_refused(&d, "255 bytes");
	for (size_t i = 0; i < 259; i++) {
		snprintf(many_names[i], sizeof(many_names[i]), "k%zu", i);
		map_many[i] = many_names[i];
	}
	config.attribute_key_map = map_many;
	check_refused(&d, "256");

	/* Too big for the 65,536-byte payload. */
	big = malloc(70000);
	ck_assert_msg(big != NULL, "malloc");
	memset(big, 'v', 69999);
	big[69999] = '\0';
	d = base_data();
	d.service_version = big;
	check_refused(&d, "65,536");
	free(big);

	/* What the reference allows: empty strings, empty lists, no schema. */
	d = base_data();
	d.service_version = "";
	d.resource_attributes = empty_value;
	d.extra_attributes = empty_list;
	config.schema_version = NULL;
	config.attribute_key_map = NULL;
	d.thread_ctx_config = &config;
	r = otel_process_ctx_publish(&d);
	ck_assert_msg(r.success, "empty strings and lists: %s", r.error_message);
	check_read(&d, empty_list, "tlsdesc_v1_dev");
	ck_assert_msg(otel_process_ctx_drop_current(), "drop");
}

/* --- The key map and the key registry ---------------------------------------- */

static void key_map_and_registry(void)
{
	static const char *map[] = { "http.route", "user.id", NULL };
	static const char *map_longer[] = { "http.route", "user.id", "tenant", NULL };
	static const char *map_conflict[] = { "user.id", NULL };
	static const char *map_later[] = { "http.route", "later", NULL };
	static const char *registry4[] = { "http.route", "user.id", "tenant", "later", NULL };
	otel_thread_ctx_config_data config = { "tlsdesc_v1_dev", map };
	otel_process_ctx_data d = base_data();
	struct otel_thread_ctx_record rec;
	struct otel_thread_ctx_attr_iter it;
	struct otel_thread_ctx_attr a;
	otel_thread_ctx *ctx;
	unsigned int idx, seen = 0;
	otel_process_ctx_result r;

	/* A name registered by the project's API first: the map agrees. */
	ck_assert_int_eq(otel_thread_ctx_key_register("http.route", &idx), 0);
	ck_assert_msg(idx == 0, "index 0");
	d.thread_ctx_config = &config;
	r = otel_process_ctx_publish(&d);
	ck_assert_msg(r.success, "publish with a key map: %s", r.error_message);
	ck_assert_msg(otel_thread_ctx_key_count() == 2 &&
		      strcmp(otel_thread_ctx_key_name(1), "user.id") == 0,
	      "the map's names are registered in order");
	check_project_reader(0, &d, map, "tlsdesc_v1_dev");

	/* A thread record written with the map's indices reads back with its
	 * names. */
	ck_assert_int_eq(otel_thread_ctx_create(&ctx), 0);
	ck_assert_int_eq(otel_thread_ctx_set_attr(ctx, 1, "42", 2), 0);
	ck_assert_int_eq(otel_thread_ctx_set_attr(ctx, 0, "/users/:id", 10), 0);
	ck_assert_int_eq(otel_thread_ctx_attach(ctx, NULL), 0);
	otel_thread_ctx_destroy(ctx);
	ck_assert_int_eq(otel_thread_ctx_read(&rec), 0);
	otel_thread_ctx_attr_iter_init(&it, &rec);
	while (otel_thread_ctx_attr_iter_next(&it, &a) == 0) {
		const char *name = otel_thread_ctx_key_name(a.key);

		if (a.key == 0)
			ck_assert_msg(strcmp(name, "http.route") == 0 && a.len == 10 &&
				      memcmp(a.value, "/users/:id", 10) == 0,
			      "attribute 0 is http.route");
		else
			ck_assert_msg(a.key == 1 && strcmp(name, "user.id") == 0 && a.len == 2 &&
				      memcmp(a.value, "42", 2) == 0,
			      "attribute 1 is user.id");
		seen++;
	}
	ck_assert_msg(seen == 2 && it.unmapped == 0, "both attributes are named");
	ck_assert_int_eq(otel_thread_ctx_detach(NULL), 0);

	/* Another name where the registry holds one: refused. */
	config.attribute_key_map = map_conflict;
	check_refused(&d, "disagrees with the key registry");
	/* A longer map that starts with the registry's names. */
	config.attribute_key_map = map_longer;
	r = otel_process_ctx_publish(&d);
	ck_assert_msg(r.success, "a longer map: %s", r.error_message);
	ck_assert_msg(otel_thread_ctx_key_count() == 3, "3 names");
	/* The registry may hold more than the map (another component's
	 * names): the map's indices still hold, the published map is the
	 * registry's. */
	ck_assert_int_eq(otel_thread_ctx_key_register("later", &idx), 0);
	ck_assert_msg(idx == 3, "index 3");
	config.attribute_key_map = map;
	r = otel_process_ctx_publish(&d);
	ck_assert_msg(r.success, "a shorter map: %s", r.error_message);
	check_read(&d, registry4, "tlsdesc_v1_dev");
	/* A name the registry holds at another index: refused. */
	config.attribute_key_map = map_later;
	check_refused(&d, "disagrees with the key registry");
	ck_assert_msg(otel_process_ctx_drop_current(), "drop");
}

/* --- Shared with the project's own API --------------------------------------- */

static void with_native_api(void)
{
	static const char *empty_list[] = { NULL };
	otel_thread_ctx_config_data tls_v1 = { "tls_v1", NULL };
	struct otel_thread_ctx_process_attr native[2];
	struct otel_thread_ctx_process_info info;
	otel_process_ctx_data d = base_data();
	otel_process_ctx_read_result rr;
	otel_process_ctx_result r;
	const void *mapping;

	/* A context of the project's API that the reference's struct cannot
	 * express: read says so. */
	memset(native, 0, sizeof(native));
	native[0].key = "service.name";
	native[0].type = OTEL_THREAD_CTX_PROCESS_STRING;
	native[0].string = "native";
	native[1].key = "process.pid";
	native[1].type = OTEL_THREAD_CTX_PROCESS_INT;
	native[1].int_value = 42;
	ck_assert_int_eq(otel_thread_ctx_process_publish(native, 2), 0);
	mapping = query().mapping;
	rr = otel_process_ctx_read();
	ck_assert_msg(!rr.success && strstr(rr.error_message, "not a string") != NULL, "read: %s",
	      rr.error_message);
	ck_assert_int_eq(otel_thread_ctx_process_update(native, 1), 0);
	rr = otel_process_ctx_read();
	ck_assert_msg(!rr.success && strstr(rr.error_message, "lacks") != NULL, "read: %s",
	      rr.error_message);

	/* publish replaces it, in the same mapping. */
	r = otel_process_ctx_publish(&d);
	ck_assert_msg(r.success, "publish over the native context: %s", r.error_message);
	ck_assert_msg(query().mapping == mapping, "updated in place");
	check_read(&d, empty_list, "tlsdesc_v1_dev");

	/* Another schema version: a new publication. */
	d.thread_ctx_config = &tls_v1;
	r = otel_process_ctx_publish(&d);
	ck_assert_msg(r.success, "publish with tls_v1: %s", r.error_message);
	check_read(&d, empty_list, "tls_v1");
	check_project_reader(0, &d, empty_list, "tls_v1");
	mapping = query().mapping;
	d.service_version = "2.0";
	r = otel_process_ctx_publish(&d);
	ck_assert_msg(r.success, "publish again with tls_v1: %s", r.error_message);
	ck_assert_msg(query().mapping == mapping, "the same schema version updates in place");
	check_read(&d, empty_list, "tls_v1");
	d.thread_ctx_config = NULL;
	r = otel_process_ctx_publish(&d);
	ck_assert_msg(r.success, "publish without thread_ctx_config: %s", r.error_message);
	check_read(&d, empty_list, "tlsdesc_v1_dev");

	/* drop_current withdraws it for the project's API too. */
	ck_assert_msg(otel_process_ctx_drop_current(), "drop");
	ck_assert_int_eq(otel_thread_ctx_process_query(&info), 0);
	ck_assert_msg(!info.published, "nothing published");
}

/* --- Threads ------------------------------------------------------------------ */

static void *publisher(void *arg)
{
	static const char *map[] = { "http.route", NULL };
	const otel_thread_ctx_config_data config = { "tlsdesc_v1_dev", map };
	otel_process_ctx_data d = base_data();
	char version[32];

	d.thread_ctx_config = &config;
	for (int i = 0; i < 200; i++) {
		otel_process_ctx_read_result rr;
		otel_process_ctx_result r;

		snprintf(version, sizeof(version), "%d.%d", (int)(intptr_t)arg, i);
		d.service_version = version;
		r = otel_process_ctx_publish(&d);
		ck_assert_msg(r.success, "concurrent publish: %s", r.error_message);
		rr = otel_process_ctx_read();
		ck_assert_msg(rr.success, "concurrent read: %s", rr.error_message);
		ck_assert_msg(otel_process_ctx_read_drop(&rr), "read_drop");
	}
	return NULL;
}

/* The reference is not thread-safe; this library is (libotel-thread-ctx's
 * lock): threads publishing and reading at once all succeed. */
static void threads(void)
{
	pthread_t t[4];

	for (intptr_t i = 0; i < 4; i++)
		ck_assert_msg(pthread_create(&t[i], NULL, publisher, (void *)i) == 0, "pthread_create");
	for (int i = 0; i < 4; i++)
		ck_assert_msg(pthread_join(t[i], NULL) == 0, "pthread_join");
	ck_assert_msg(otel_ctx_mappings() == 1, "one mapping");
	ck_assert_msg(otel_process_ctx_drop_current(), "drop");
}

static void run_case(const char *name, void (*fn)(void))
{
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	ck_assert_msg(pid >= 0, "fork");
	if (pid == 0) {
		fn();
		fflush(NULL);
		_exit(0);
	}
	ck_assert_msg(waitpid(pid, &status, 0) == pid, "waitpid");
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "case %s failed (status %#x)", name,
	      status);
	printf("ok %s\n", name);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc > 1 && strcmp(argv[1], "--no-remote") == 0)
		remote = 0;
	run_case("readme_usage", readme_usage);
	run_case("errors", errors);
	run_case("key_map_and_registry", key_map_and_registry);
	run_case("with_native_api", with_native_api);
	run_case("threads", threads);
	return 0;
}
