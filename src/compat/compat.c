/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libotel-thread-ctx-compat: the reference process-context API
 * (include/otel_thread_ctx_compat.h) on top of libotel-thread-ctx's public
 * API.  Nothing here touches the mapping: publishing is
 * otel_thread_ctx_process_publish_with() / _update() / _unpublish(), the key
 * map is libotel-thread-ctx's key registry, and reading back is
 * otel_thread_ctx_process_copy() decoded by the format layer's decoder
 * (src/format/process_decode.c), the one the project's own readers use, so
 * that this read shows what a profiler decodes; this library does not link
 * the inspector.
 *
 * Order of a publish: check everything that can be checked without changing
 * anything (NULLs, pairs, UTF-8, keys, the schema, the key map against the
 * registry), then register the key map's new names, then publish or
 * replace.  What can still fail after the names are registered is only a
 * resource (memory, the mapping) or the payload's size; the names then stay
 * registered, as every registered name does.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "otel_thread_ctx.h"
#include "otel_thread_ctx_compat.h"
#include "otel_thread_ctx_inspect.h"
#include "otel_thread_ctx_process.h"
#include "format.h"
#include "utf8.h"

#define COMPAT_EXPORT __attribute__((visibility("default")))

/* Every message is a static string naming this library and the function. */
#define PUBLISH_MSG(text) "otel_process_ctx_publish (otel-thread-ctx-compat): " text
#define READ_MSG(text) "otel_process_ctx_read (otel-thread-ctx-compat): " text

/* The seven fields of otel_process_ctx_data and their resource attributes,
 * in the order they are published. */
enum { SEMCONV_FIELDS = 7 };

static const char *const semconv_keys[SEMCONV_FIELDS] = {
	"deployment.environment.name",
	"service.instance.id",
	"service.name",
	"service.version",
	"telemetry.sdk.language",
	"telemetry.sdk.version",
	"telemetry.sdk.name",
};

static void semconv_fields(const otel_process_ctx_data *d, const char *out[SEMCONV_FIELDS])
{
	out[0] = d->deployment_environment_name;
	out[1] = d->service_instance_id;
	out[2] = d->service_name;
	out[3] = d->service_version;
	out[4] = d->telemetry_sdk_language;
	out[5] = d->telemetry_sdk_version;
	out[6] = d->telemetry_sdk_name;
}

static const char **semconv_slot(otel_process_ctx_data *d, size_t i)
{
	switch (i) {
	case 0: return &d->deployment_environment_name;
	case 1: return &d->service_instance_id;
	case 2: return &d->service_name;
	case 3: return &d->service_version;
	case 4: return &d->telemetry_sdk_language;
	case 5: return &d->telemetry_sdk_version;
	default: return &d->telemetry_sdk_name;
	}
}

static otel_process_ctx_result result_ok(void)
{
	otel_process_ctx_result r = { true, NULL };

	return r;
}

static otel_process_ctx_result result_fail(const char *message)
{
	otel_process_ctx_result r = { false, message };

	return r;
}

static bool utf8_string(const char *s)
{
	return otel__utf8_valid(s, strlen(s));
}

/* --- Publishing ------------------------------------------------------------ */

/* Counts the key/value pairs of a NULL-terminated flat list (NULL: none).
 * False when a key has no value. */
static bool count_pairs(const char **list, size_t *pairs)
{
	size_t n = 0;

	if (list != NULL) {
		while (list[n] != NULL)
			n++;
	}
	*pairs = n / 2;
	return n % 2 == 0;
}

static int key_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Checks the resource attributes as libotel-thread-ctx will (keys not
 * empty, UTF-8, distinct; values UTF-8), so that a bad one is reported
 * before any key name is registered.  NULL or a static message. */
static const char *check_resource(const char *const semconv[SEMCONV_FIELDS], const char **extra,
				  size_t extra_pairs)
{
	size_t n = SEMCONV_FIELDS + extra_pairs;
	const char **keys;
	const char *msg = NULL;

	for (size_t i = 0; i < SEMCONV_FIELDS; i++) {
		if (!utf8_string(semconv[i]))
			return PUBLISH_MSG("a field of otel_process_ctx_data is not valid UTF-8");
	}
	for (size_t i = 0; i < extra_pairs; i++) {
		if (extra[2 * i][0] == '\0')
			return PUBLISH_MSG("a key in resource_attributes is empty");
		if (!utf8_string(extra[2 * i]) || !utf8_string(extra[2 * i + 1]))
			return PUBLISH_MSG("a key or value in resource_attributes is not valid UTF-8");
	}
	if (extra_pairs == 0)
		return NULL;
	keys = malloc(n * sizeof(*keys));
	if (keys == NULL)
		return PUBLISH_MSG("out of memory");
	for (size_t i = 0; i < SEMCONV_FIELDS; i++)
		keys[i] = semconv_keys[i];
	for (size_t i = 0; i < extra_pairs; i++)
		keys[SEMCONV_FIELDS + i] = extra[2 * i];
	qsort(keys, n, sizeof(*keys), key_cmp);
	for (size_t i = 1; i < n && msg == NULL; i++) {
		if (strcmp(keys[i - 1], keys[i]) == 0)
			msg = PUBLISH_MSG("a key appears twice among the seven fields and "
					  "resource_attributes (each resource attribute is "
					  "published once)");
	}
	free(keys);
	return msg;
}

/* Checks the extra attributes as libotel-thread-ctx will (keys not empty,
 * UTF-8, distinct, outside its threadlocal.* namespace; values UTF-8).  NULL
 * or a static message. */
static const char *check_extra(const char **extra, size_t pairs)
{
	const char **keys;
	const char *msg = NULL;

	for (size_t i = 0; i < pairs; i++) {
		if (extra[2 * i][0] == '\0')
			return PUBLISH_MSG("a key in extra_attributes is empty");
		if (!utf8_string(extra[2 * i]) || !utf8_string(extra[2 * i + 1]))
			return PUBLISH_MSG("a key or value in extra_attributes is not valid UTF-8");
		if (strncmp(extra[2 * i], "threadlocal.", 12) == 0)
			return PUBLISH_MSG("a key in extra_attributes starts with \"threadlocal.\": "
					   "those entries come from thread_ctx_config");
	}
	if (pairs < 2)
		return NULL;
	keys = malloc(pairs * sizeof(*keys));
	if (keys == NULL)
		return PUBLISH_MSG("out of memory");
	for (size_t i = 0; i < pairs; i++)
		keys[i] = extra[2 * i];
	qsort(keys, pairs, sizeof(*keys), key_cmp);
	for (size_t i = 1; i < pairs && msg == NULL; i++) {
		if (strcmp(keys[i - 1], keys[i]) == 0)
			msg = PUBLISH_MSG("a key appears twice in extra_attributes");
	}
	free(keys);
	return msg;
}

/* The schema version option for thread_ctx_config.  NULL or a message. */
static const char *choose_schema(const otel_thread_ctx_config_data *config, int *schema)
{
	*schema = OTEL_THREAD_CTX_PROCESS_SCHEMA_TLSDESC_V1_DEV;
	if (config == NULL)
		return NULL;
	if (config->schema_version == NULL) {
		if (config->attribute_key_map != NULL)
			return PUBLISH_MSG("attribute_key_map requires schema_version");
		return NULL;
	}
	if (strcmp(config->schema_version, OTEL_THREAD_CTX_PROCESS_SCHEMA_VERSION) == 0)
		return NULL;
	if (strcmp(config->schema_version, OTEL_THREAD_CTX_PROCESS_SCHEMA_VERSION_TLS_V1) == 0) {
		*schema = OTEL_THREAD_CTX_PROCESS_SCHEMA_TLS_V1;
		return NULL;
	}
	return PUBLISH_MSG("unsupported schema_version: libotel-thread-ctx publishes "
			   "\"tlsdesc_v1_dev\" or \"tls_v1\"");
}

#define KEY_MAP_CONFLICT                                                          \
	PUBLISH_MSG("attribute_key_map disagrees with the key registry of "       \
		    "libotel-thread-ctx (another name is registered at one of its "  \
		    "indices); nothing was published, to give readers no wrong key map")

/*
 * Checks that registering `map` in order gives every name its position as
 * index: the registry holds, below its count, exactly the map's first names,
 * and none of the map's later names at another index than theirs (a thread
 * publishing the same map may register them meanwhile, where they belong).
 * Names the registry holds beyond the map do not matter (they keep their
 * own, higher indices).
 */
static const char *check_key_map(const char **map)
{
	unsigned int have = otel_thread_ctx_key_count();

	if (map == NULL)
		return NULL;
	for (size_t i = 0; map[i] != NULL; i++) {
		size_t len = strlen(map[i]);
		unsigned int at;

		if (i > OTEL_THREAD_CTX_KEY_MAX)
			return PUBLISH_MSG("attribute_key_map has more than 256 names");
		if (len == 0 || len > OTEL_THREAD_CTX_KEY_NAME_MAX || !otel__utf8_valid(map[i], len))
			return PUBLISH_MSG("a name in attribute_key_map is empty, longer than "
					   "255 bytes or not valid UTF-8");
		for (size_t j = 0; j < i; j++) {
			if (strcmp(map[j], map[i]) == 0)
				return PUBLISH_MSG("a name appears twice in attribute_key_map (the "
						   "key registry gives a name one index)");
		}
		if (i < have) {
			const char *name = otel_thread_ctx_key_name((unsigned int)i);

			if (name == NULL || strcmp(name, map[i]) != 0)
				return KEY_MAP_CONFLICT;
		} else if (otel_thread_ctx_key_find(map[i], &at) == OTEL_THREAD_CTX_OK && at != i) {
			/* (At i: another thread registered it since `have` was
			 * read, where this map puts it.) */
			return KEY_MAP_CONFLICT;
		}
	}
	return NULL;
}

/* Registers the names check_key_map() accepted. */
static const char *register_key_map(const char **map)
{
	if (map == NULL)
		return NULL;
	for (size_t i = 0; map[i] != NULL; i++) {
		unsigned int at;
		int err = otel_thread_ctx_key_register(map[i], &at);

		if (err == OTEL_THREAD_CTX_E2BIG)
			return PUBLISH_MSG("registering attribute_key_map would make the published "
					   "context exceed 65,536 bytes");
		if (err == OTEL_THREAD_CTX_EKEYS)
			return PUBLISH_MSG("the key registry of libotel-thread-ctx is full "
					   "(256 names)");
		if (err != OTEL_THREAD_CTX_OK)
			return PUBLISH_MSG("registering attribute_key_map failed (out of memory)");
		/* Another thread registered a name in between. */
		if (at != i)
			return KEY_MAP_CONFLICT;
	}
	return NULL;
}

static const char *publish_error(int err)
{
	switch (err) {
	case OTEL_THREAD_CTX_E2BIG:
		return PUBLISH_MSG("the encoded context would exceed 65,536 bytes");
	case OTEL_THREAD_CTX_ENOMEM:
		return PUBLISH_MSG("out of memory");
	case OTEL_THREAD_CTX_EMAP:
		return PUBLISH_MSG("no mapping readers can find could be created (memfd_create "
				   "refused and anonymous mappings cannot be named)");
	case OTEL_THREAD_CTX_ESYS:
		return PUBLISH_MSG("a system call failed while creating the mapping");
	case OTEL_THREAD_CTX_EATTR:
		return PUBLISH_MSG("an attribute key is empty, repeated or not valid UTF-8");
	case OTEL_THREAD_CTX_EUTF8:
		return PUBLISH_MSG("an attribute value is not valid UTF-8");
	case OTEL_THREAD_CTX_EDECODE:
		return PUBLISH_MSG("the context published now cannot be decoded");
	default:
		return PUBLISH_MSG("libotel-thread-ctx refused to publish");
	}
}

/*
 * Publishes, or replaces what is published, in place (the schema version
 * and the ProcessContext.attributes too).  Retried when another thread
 * publishes or unpublishes in between (the reference is not thread-safe;
 * this only keeps such a race from failing for nothing).
 */
static int publish_or_replace(const struct otel_thread_ctx_process_attr *attrs, size_t n,
			      const struct otel_thread_ctx_process_options *options)
{
	int err = OTEL_THREAD_CTX_EPUBLISHED;

	for (int attempt = 0; attempt < 3; attempt++) {
		err = otel_thread_ctx_process_update_with(attrs, n, options);
		if (err != OTEL_THREAD_CTX_ENOTPUBLISHED)
			return err;
		err = otel_thread_ctx_process_publish_with(attrs, n, options);
		if (err != OTEL_THREAD_CTX_EPUBLISHED)
			return err;
	}
	return err;
}

static struct otel_thread_ctx_process_attr string_attr(const char *key, const char *value)
{
	struct otel_thread_ctx_process_attr a;

	memset(&a, 0, sizeof(a));
	a.key = key;
	a.type = OTEL_THREAD_CTX_PROCESS_STRING;
	a.string = value;
	a.length = 0; /* NUL-terminated */
	return a;
}

COMPAT_EXPORT otel_process_ctx_result otel_process_ctx_publish(const otel_process_ctx_data *data)
{
	struct otel_thread_ctx_process_options options = OTEL_THREAD_CTX_PROCESS_OPTIONS_INIT;
	struct otel_thread_ctx_process_attr *attrs;
	const char *semconv[SEMCONV_FIELDS];
	const char **key_map = NULL;
	size_t pairs, extra_pairs;
	const char *msg;
	int err;

	if (data == NULL)
		return result_fail(PUBLISH_MSG("otel_process_ctx_data is NULL"));
	semconv_fields(data, semconv);
	for (size_t i = 0; i < SEMCONV_FIELDS; i++) {
		if (semconv[i] == NULL)
			return result_fail(PUBLISH_MSG("a field of otel_process_ctx_data is NULL"));
	}
	if (!count_pairs(data->resource_attributes, &pairs))
		return result_fail(PUBLISH_MSG("a key in resource_attributes has no value"));
	if (!count_pairs(data->extra_attributes, &extra_pairs))
		return result_fail(PUBLISH_MSG("a key in extra_attributes has no value"));
	msg = choose_schema(data->thread_ctx_config, &options.schema);
	if (msg != NULL)
		return result_fail(msg);
	if (data->thread_ctx_config != NULL)
		key_map = data->thread_ctx_config->attribute_key_map;
	msg = check_resource(semconv, data->resource_attributes, pairs);
	if (msg == NULL)
		msg = check_extra(data->extra_attributes, extra_pairs);
	if (msg == NULL)
		msg = check_key_map(key_map);
	if (msg != NULL)
		return result_fail(msg);

	/* The payload limit bounds what can be published far below this. */
	if (pairs > OTEL_THREAD_CTX_PROCESS_PAYLOAD_MAX ||
	    extra_pairs > OTEL_THREAD_CTX_PROCESS_PAYLOAD_MAX)
		return result_fail(publish_error(OTEL_THREAD_CTX_E2BIG));
	/* The resource attributes, then the ProcessContext.attributes. */
	attrs = malloc((SEMCONV_FIELDS + pairs + extra_pairs) * sizeof(*attrs));
	if (attrs == NULL)
		return result_fail(publish_error(OTEL_THREAD_CTX_ENOMEM));
	for (size_t i = 0; i < SEMCONV_FIELDS; i++)
		attrs[i] = string_attr(semconv_keys[i], semconv[i]);
	for (size_t i = 0; i < pairs; i++)
		attrs[SEMCONV_FIELDS + i] = string_attr(data->resource_attributes[2 * i],
						      data->resource_attributes[2 * i + 1]);
	for (size_t i = 0; i < extra_pairs; i++)
		attrs[SEMCONV_FIELDS + pairs + i] = string_attr(data->extra_attributes[2 * i],
							      data->extra_attributes[2 * i + 1]);
	options.attributes = attrs + SEMCONV_FIELDS + pairs;
	options.attribute_count = extra_pairs;

	msg = register_key_map(key_map);
	if (msg == NULL) {
		err = publish_or_replace(attrs, SEMCONV_FIELDS + pairs, &options);
		if (err != OTEL_THREAD_CTX_OK)
			msg = publish_error(err);
	}
	free(attrs);
	return msg == NULL ? result_ok() : result_fail(msg);
}

COMPAT_EXPORT bool otel_process_ctx_drop_current(void)
{
	return otel_thread_ctx_process_unpublish() == OTEL_THREAD_CTX_OK;
}

/* --- Reading ---------------------------------------------------------------- */

static void free_list(const char **list)
{
	if (list == NULL)
		return;
	for (size_t i = 0; list[i] != NULL; i++)
		free((void *)(uintptr_t)list[i]);
	free((void *)list);
}

static void free_data(otel_process_ctx_data *d)
{
	for (size_t i = 0; i < SEMCONV_FIELDS; i++)
		free((void *)(uintptr_t)*semconv_slot(d, i));
	free_list(d->resource_attributes);
	free_list(d->extra_attributes);
	if (d->thread_ctx_config != NULL) {
		free((void *)(uintptr_t)d->thread_ctx_config->schema_version);
		free_list(d->thread_ctx_config->attribute_key_map);
		free((void *)(uintptr_t)d->thread_ctx_config);
	}
	memset(d, 0, sizeof(*d));
}

/* A malloc()ed copy of a string value, or NULL with *msg set: the value is
 * not a string, or holds a NUL byte (a C string cannot express either). */
static char *copy_value(const struct otel_thread_ctx_process_attr *a, const char **msg)
{
	char *s;

	if (a->type != OTEL_THREAD_CTX_PROCESS_STRING) {
		*msg = READ_MSG("an attribute of the published context is not a string");
		return NULL;
	}
	if (memchr(a->string, '\0', a->length) != NULL) {
		*msg = READ_MSG("an attribute of the published context holds a NUL byte");
		return NULL;
	}
	s = strdup(a->string);
	if (s == NULL)
		*msg = READ_MSG("out of memory");
	return s;
}

/* Appends key and value to a flat list with room for them. */
static const char *append_pair(const char **list, size_t *n,
			       const struct otel_thread_ctx_process_attr *a)
{
	const char *msg = NULL;
	char *key, *value = copy_value(a, &msg);

	if (value == NULL)
		return msg;
	key = strdup(a->key);
	if (key == NULL) {
		free(value);
		return READ_MSG("out of memory");
	}
	list[(*n)++] = key;
	list[(*n)++] = value;
	return NULL;
}

static const char *fill_resource(const struct otel_thread_ctx_inspect_process_snapshot *s,
				 otel_process_ctx_data *d)
{
	const char **list = calloc(2 * s->resource_count + 1, sizeof(*list));
	size_t n = 0;

	if (list == NULL)
		return READ_MSG("out of memory");
	d->resource_attributes = list;
	for (size_t i = 0; i < s->resource_count; i++) {
		const struct otel_thread_ctx_process_attr *a = &s->resource[i];
		const char *msg = NULL;
		size_t k;

		for (k = 0; k < SEMCONV_FIELDS; k++) {
			if (strcmp(a->key, semconv_keys[k]) == 0)
				break;
		}
		if (k == SEMCONV_FIELDS) {
			msg = append_pair(list, &n, a);
		} else if (*semconv_slot(d, k) != NULL) {
			msg = READ_MSG("a field of otel_process_ctx_data is published twice");
		} else {
			*semconv_slot(d, k) = copy_value(a, &msg);
		}
		if (msg != NULL)
			return msg;
	}
	for (size_t k = 0; k < SEMCONV_FIELDS; k++) {
		if (*semconv_slot(d, k) == NULL)
			return READ_MSG("the published context lacks a field of "
					"otel_process_ctx_data");
	}
	return NULL;
}

static const char *fill_attributes(const struct otel_thread_ctx_inspect_process_snapshot *s,
				   otel_process_ctx_data *d)
{
	const char **list = calloc(2 * s->attribute_count + 1, sizeof(*list));
	size_t n = 0;

	if (list == NULL)
		return READ_MSG("out of memory");
	d->extra_attributes = list;
	for (size_t i = 0; i < s->attribute_count; i++) {
		const char *msg = append_pair(list, &n, &s->attributes[i]);

		if (msg != NULL)
			return msg;
	}
	return NULL;
}

static const char *fill_config(const struct otel_thread_ctx_inspect_process_snapshot *s,
			       otel_process_ctx_data *d)
{
	otel_thread_ctx_config_data *config;

	if (s->schema_version == NULL && !s->key_map_present)
		return NULL;
	config = calloc(1, sizeof(*config));
	if (config == NULL)
		return READ_MSG("out of memory");
	d->thread_ctx_config = config;
	if (s->schema_version != NULL) {
		config->schema_version = strdup(s->schema_version);
		if (config->schema_version == NULL)
			return READ_MSG("out of memory");
	}
	if (s->key_map_present) {
		const char **keys = calloc(s->key_count + 1, sizeof(*keys));

		if (keys == NULL)
			return READ_MSG("out of memory");
		config->attribute_key_map = keys;
		for (size_t i = 0; i < s->key_count; i++) {
			keys[i] = strdup(s->keys[i]);
			if (keys[i] == NULL)
				return READ_MSG("out of memory");
		}
	}
	return NULL;
}

COMPAT_EXPORT otel_process_ctx_read_result otel_process_ctx_read(void)
{
	otel_process_ctx_read_result r;
	struct otel_thread_ctx_process_header header;
	struct otel_thread_ctx_inspect_process_snapshot *snap;
	const char *msg;
	void *payload;
	int err;

	memset(&r, 0, sizeof(r));
	err = otel_thread_ctx_process_copy(&header, &payload);
	if (err == OTEL_THREAD_CTX_ENOTPUBLISHED) {
		r.error_message = READ_MSG("no process context is published");
		return r;
	}
	if (err != OTEL_THREAD_CTX_OK) {
		r.error_message = READ_MSG("out of memory");
		return r;
	}
	err = otel__process_decode(payload, header.payload_size, &snap);
	free(payload);
	if (err != OTEL_THREAD_CTX_OK) {
		r.error_message = err == OTEL_THREAD_CTX_ENOMEM ?
					  READ_MSG("out of memory") :
					  READ_MSG("the published payload cannot be decoded");
		return r;
	}
	msg = fill_resource(snap, &r.data);
	if (msg == NULL)
		msg = fill_attributes(snap, &r.data);
	if (msg == NULL)
		msg = fill_config(snap, &r.data);
	otel__process_snapshot_free(snap);
	if (msg != NULL) {
		free_data(&r.data);
		r.error_message = msg;
		return r;
	}
	r.success = true;
	return r;
}

COMPAT_EXPORT bool otel_process_ctx_read_drop(otel_process_ctx_read_result *result)
{
	if (result == NULL || !result->success)
		return false;
	free_data(&result->data);
	result->success = false;
	result->error_message = "otel_process_ctx_read_drop (otel-thread-ctx-compat): "
				"this result was dropped";
	return true;
}
