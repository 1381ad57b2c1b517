/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The process context's payload (a ProcessContext message, OTEP 4719),
 * decoded into a snapshot: for the inspector (otel_thread_ctx_inspect_
 * process_decode()) and the compat layer (otel_process_ctx_read()).  Every
 * byte is treated as hostile.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "protobuf.h"
#include "utf8.h"

#define MAX_KEYS (OTEL_THREAD_CTX_KEY_MAX + 1)

struct span {
	const uint8_t *p;
	size_t n;
};

/* A decoded AnyValue (strings as spans into the payload). */
struct value {
	enum otel_thread_ctx_process_type type;
	struct span bytes; /* STRING, BYTES, ARRAY, KVLIST */
	uint64_t bits;     /* BOOL, INT, DOUBLE */
};

/*
 * Decoding runs twice over the same bytes: the first pass checks everything
 * and counts, the second (fill) copies into memory sized by the first.
 */
struct decoder {
	bool fill;
	size_t resource_count, attribute_count, string_bytes;
	struct otel_thread_ctx_process_attr *resource, *attributes;
	char *strings;
	size_t strings_used;
	/* The threadlocal.* entries: the last occurrence wins. */
	bool has_schema, has_key_map;
	struct span schema, key_map; /* the string / the ArrayValue body */
	/* The same, found among the resource attributes (an early draft of
	 * OTEP 4947 put them there): used only when the attributes lack them. */
	bool res_has_schema, res_has_key_map;
	struct span res_schema, res_key_map;
};

static bool no_nul(struct span s)
{
	return memchr(s.p, '\0', s.n) == NULL;
}

static bool span_is(struct span s, const char *lit)
{
	return s.n == strlen(lit) && memcmp(s.p, lit, s.n) == 0;
}

static int decode_any_value(struct span in, struct value *v)
{
	struct otel__pb_reader r = otel__pb_read_from(in.p, in.n);
	struct otel__pb_field f;
	int more;

	memset(v, 0, sizeof(*v));
	v->type = OTEL_THREAD_CTX_PROCESS_EMPTY;
	while ((more = otel__pb_next(&r, &f)) > 0) {
		unsigned int want;

		switch (f.number) {
		case OTEL_THREAD_CTX_PROCESS_STRING:
		case OTEL_THREAD_CTX_PROCESS_ARRAY:
		case OTEL_THREAD_CTX_PROCESS_KVLIST:
		case OTEL_THREAD_CTX_PROCESS_BYTES:
			want = OTEL__PB_LEN;
			break;
		case OTEL_THREAD_CTX_PROCESS_BOOL:
		case OTEL_THREAD_CTX_PROCESS_INT:
			want = OTEL__PB_VARINT;
			break;
		case OTEL_THREAD_CTX_PROCESS_DOUBLE:
			want = OTEL__PB_I64;
			break;
		default:
			continue; /* unknown field */
		}
		if (f.wire != want)
			return OTEL_THREAD_CTX_EDECODE;
		if (f.number == OTEL_THREAD_CTX_PROCESS_STRING && !otel__utf8_valid(f.data, f.len))
			return OTEL_THREAD_CTX_EDECODE;
		/* A oneof: the last member set wins. */
		v->type = (enum otel_thread_ctx_process_type)f.number;
		v->bytes.p = f.data;
		v->bytes.n = f.len;
		v->bits = f.value;
	}
	return more < 0 ? OTEL_THREAD_CTX_EDECODE : OTEL_THREAD_CTX_OK;
}

static int decode_key_value(struct span in, struct span *key, struct value *v)
{
	struct otel__pb_reader r = otel__pb_read_from(in.p, in.n);
	struct otel__pb_field f;
	struct span value = { NULL, 0 };
	bool has_value = false;
	int more;

	key->p = in.p;
	key->n = 0;
	while ((more = otel__pb_next(&r, &f)) > 0) {
		if (f.number != 1 && f.number != 2)
			continue;
		if (f.wire != OTEL__PB_LEN)
			return OTEL_THREAD_CTX_EDECODE;
		if (f.number == 1) {
			key->p = f.data;
			key->n = f.len;
		} else {
			value.p = f.data;
			value.n = f.len;
			has_value = true;
		}
	}
	if (more < 0 || !otel__utf8_valid(key->p, key->n))
		return OTEL_THREAD_CTX_EDECODE;
	if (!has_value) {
		memset(v, 0, sizeof(*v));
		v->type = OTEL_THREAD_CTX_PROCESS_EMPTY;
		return OTEL_THREAD_CTX_OK;
	}
	return decode_any_value(value, v);
}

/* The strings of an ArrayValue that must hold key names only; with `names`
 * non-NULL, also collects them.  Returns the count, or -1. */
static int walk_key_map(struct span array, struct span *names)
{
	struct otel__pb_reader r = otel__pb_read_from(array.p, array.n);
	struct otel__pb_field f;
	int n = 0, more;

	while ((more = otel__pb_next(&r, &f)) > 0) {
		struct span item = { f.data, f.len };
		struct value v;

		if (f.number != 1)
			continue;
		if (f.wire != OTEL__PB_LEN || n == MAX_KEYS)
			return -1;
		if (decode_any_value(item, &v) != OTEL_THREAD_CTX_OK ||
		    v.type != OTEL_THREAD_CTX_PROCESS_STRING || !no_nul(v.bytes))
			return -1;
		if (names != NULL)
			names[n] = v.bytes;
		n++;
	}
	return more < 0 ? -1 : n;
}

/* A copy of s, NUL-terminated, in the snapshot's memory. */
static const char *keep(struct decoder *d, struct span s)
{
	char *out = d->strings + d->strings_used;

	if (s.n != 0)
		memcpy(out, s.p, s.n);
	out[s.n] = '\0';
	d->strings_used += s.n + 1;
	return out;
}

static void add_attr(struct decoder *d, struct otel_thread_ctx_process_attr *slot, struct span key,
		     const struct value *v)
{
	d->string_bytes += key.n + 1;
	if (v->type == OTEL_THREAD_CTX_PROCESS_STRING || v->type == OTEL_THREAD_CTX_PROCESS_BYTES ||
	    v->type == OTEL_THREAD_CTX_PROCESS_ARRAY || v->type == OTEL_THREAD_CTX_PROCESS_KVLIST)
		d->string_bytes += v->bytes.n + 1;
	if (!d->fill)
		return;
	memset(slot, 0, sizeof(*slot));
	slot->key = keep(d, key);
	slot->type = v->type;
	switch (v->type) {
	case OTEL_THREAD_CTX_PROCESS_STRING:
	case OTEL_THREAD_CTX_PROCESS_BYTES:
	case OTEL_THREAD_CTX_PROCESS_ARRAY:
	case OTEL_THREAD_CTX_PROCESS_KVLIST:
		slot->string = keep(d, v->bytes);
		slot->length = v->bytes.n;
		break;
	case OTEL_THREAD_CTX_PROCESS_BOOL:
		slot->bool_value = v->bits != 0;
		break;
	case OTEL_THREAD_CTX_PROCESS_INT:
		slot->int_value = (int64_t)v->bits;
		break;
	case OTEL_THREAD_CTX_PROCESS_DOUBLE:
		memcpy(&slot->double_value, &v->bits, sizeof(slot->double_value));
		break;
	case OTEL_THREAD_CTX_PROCESS_EMPTY:
		break;
	}
}

static int decode_resource(struct decoder *d, struct span in)
{
	struct otel__pb_reader r = otel__pb_read_from(in.p, in.n);
	struct otel__pb_field f;
	int more;

	while ((more = otel__pb_next(&r, &f)) > 0) {
		struct span kv = { f.data, f.len }, key;
		struct value v;

		if (f.number != 1)
			continue; /* dropped_attributes_count, entity_refs, ... */
		if (f.wire != OTEL__PB_LEN || decode_key_value(kv, &key, &v) != OTEL_THREAD_CTX_OK)
			return OTEL_THREAD_CTX_EDECODE;
		/* Well-formed threadlocal.* entries here are kept aside, and stay
		 * resource attributes too; malformed ones are just attributes. */
		if (span_is(key, OTEL_THREAD_CTX_PROCESS_SCHEMA_VERSION_KEY) &&
		    v.type == OTEL_THREAD_CTX_PROCESS_STRING && no_nul(v.bytes)) {
			d->res_has_schema = true;
			d->res_schema = v.bytes;
		} else if (span_is(key, OTEL_THREAD_CTX_PROCESS_ATTRIBUTE_KEY_MAP_KEY) &&
			   v.type == OTEL_THREAD_CTX_PROCESS_ARRAY && walk_key_map(v.bytes, NULL) >= 0) {
			d->res_has_key_map = true;
			d->res_key_map = v.bytes;
		}
		add_attr(d, d->fill ? &d->resource[d->resource_count] : NULL, key, &v);
		d->resource_count++;
	}
	return more < 0 ? OTEL_THREAD_CTX_EDECODE : OTEL_THREAD_CTX_OK;
}

static int decode_attribute(struct decoder *d, struct span kv)
{
	struct span key;
	struct value v;

	if (decode_key_value(kv, &key, &v) != OTEL_THREAD_CTX_OK)
		return OTEL_THREAD_CTX_EDECODE;
	if (span_is(key, OTEL_THREAD_CTX_PROCESS_SCHEMA_VERSION_KEY)) {
		if (v.type != OTEL_THREAD_CTX_PROCESS_STRING || !no_nul(v.bytes))
			return OTEL_THREAD_CTX_EDECODE;
		d->has_schema = true;
		d->schema = v.bytes;
	} else if (span_is(key, OTEL_THREAD_CTX_PROCESS_ATTRIBUTE_KEY_MAP_KEY)) {
		if (v.type != OTEL_THREAD_CTX_PROCESS_ARRAY || walk_key_map(v.bytes, NULL) < 0)
			return OTEL_THREAD_CTX_EDECODE;
		d->has_key_map = true;
		d->key_map = v.bytes;
	} else {
		add_attr(d, d->fill ? &d->attributes[d->attribute_count] : NULL, key, &v);
		d->attribute_count++;
	}
	return OTEL_THREAD_CTX_OK;
}

static int decode_pass(struct decoder *d, struct span payload)
{
	struct otel__pb_reader r = otel__pb_read_from(payload.p, payload.n);
	struct otel__pb_field f;
	int more, err;

	while ((more = otel__pb_next(&r, &f)) > 0) {
		struct span body = { f.data, f.len };

		if (f.number != 1 && f.number != 2)
			continue;
		if (f.wire != OTEL__PB_LEN)
			return OTEL_THREAD_CTX_EDECODE;
		err = f.number == 1 ? decode_resource(d, body) : decode_attribute(d, body);
		if (err)
			return err;
	}
	if (more < 0)
		return OTEL_THREAD_CTX_EDECODE;
	if (!d->has_schema && d->res_has_schema) {
		d->has_schema = true;
		d->schema = d->res_schema;
	}
	if (!d->has_key_map && d->res_has_key_map) {
		d->has_key_map = true;
		d->key_map = d->res_key_map;
	}
	return OTEL_THREAD_CTX_OK;
}

static size_t round_up(size_t n)
{
	return (n + 15) & ~(size_t)15;
}

int otel__process_decode(const void *payload, size_t size,
			 struct otel_thread_ctx_inspect_process_snapshot **out)
{
	struct decoder d;
	struct span all = { payload, size };
	struct span names[MAX_KEYS];
	struct otel_thread_ctx_inspect_process_snapshot *snap;
	size_t off_resource, off_attrs, off_keys, off_payload, off_strings, total;
	int keys = 0, err;
	uint8_t *mem;
	const char **key_ptrs;

	if (out == NULL || (payload == NULL && size != 0))
		return OTEL_THREAD_CTX_ENULL;
	if (size > OTEL_THREAD_CTX_PROCESS_PAYLOAD_MAX)
		return OTEL_THREAD_CTX_E2BIG;
	if (size == 0)
		all.p = (const uint8_t *)"";

	memset(&d, 0, sizeof(d));
	err = decode_pass(&d, all);
	if (err)
		return err;
	if (d.has_schema)
		d.string_bytes += d.schema.n + 1;
	if (d.has_key_map) {
		keys = walk_key_map(d.key_map, names);
		for (int i = 0; i < keys; i++)
			d.string_bytes += names[i].n + 1;
	}

	/* One block: the snapshot, its arrays, the payload, the strings. */
	off_resource = round_up(sizeof(*snap));
	off_attrs = off_resource + round_up(d.resource_count * sizeof(*d.resource));
	off_keys = off_attrs + round_up(d.attribute_count * sizeof(*d.attributes));
	off_payload = off_keys + round_up((size_t)keys * sizeof(char *));
	off_strings = off_payload + round_up(size);
	total = off_strings + d.string_bytes;
	mem = calloc(1, total);
	if (mem == NULL)
		return OTEL_THREAD_CTX_ENOMEM;
	snap = (struct otel_thread_ctx_inspect_process_snapshot *)(void *)mem;

	/* Second pass: the same bytes, so the same outcome, now copied. */
	d.fill = true;
	d.resource = (struct otel_thread_ctx_process_attr *)(void *)(mem + off_resource);
	d.attributes = (struct otel_thread_ctx_process_attr *)(void *)(mem + off_attrs);
	d.strings = (char *)mem + off_strings;
	d.resource_count = d.attribute_count = d.string_bytes = 0;
	d.has_schema = d.has_key_map = d.res_has_schema = d.res_has_key_map = false;
	err = decode_pass(&d, all);
	if (err) {
		free(mem);
		return err;
	}
	key_ptrs = (const char **)(void *)(mem + off_keys);
	for (int i = 0; i < keys; i++)
		key_ptrs[i] = keep(&d, names[i]);
	if (d.has_schema)
		snap->schema_version = keep(&d, d.schema);
	if (size != 0)
		memcpy(mem + off_payload, payload, size);

	snap->payload = mem + off_payload;
	snap->payload_size = (uint32_t)size;
	snap->key_map_present = d.has_key_map;
	snap->key_count = (size_t)keys;
	snap->keys = key_ptrs;
	snap->resource_count = d.resource_count;
	snap->resource = d.resource;
	snap->attribute_count = d.attribute_count;
	snap->attributes = d.attributes;
	*out = snap;
	return OTEL_THREAD_CTX_OK;
}

void otel__process_snapshot_free(struct otel_thread_ctx_inspect_process_snapshot *snap)
{
	free(snap);
}

