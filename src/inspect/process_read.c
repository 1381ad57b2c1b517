/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The reader side of the process context: finding the OTEL_CTX mapping of a
 * process, copying it by the reading protocol, and decoding the payload.
 * Every byte read from the mapping or the payload is treated as hostile.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "inspect.h"
#include "protobuf.h"
#include "remote.h"

#define PROCESS_HEADER_SIZE sizeof(struct otel_thread_ctx_process_header)
#define PUBLISHED_AT_OFFSET offsetof(struct otel_thread_ctx_process_header, monotonic_published_at_ns)
#define MAX_KEYS (OTEL_THREAD_CTX_KEY_MAX + 1)
#define MAX_CANDIDATES 16

/* --- Decoding ----------------------------------------------------------- */

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

OTEL_EXPORT int otel_thread_ctx_inspect_process_decode(const void *payload, size_t size,
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

OTEL_EXPORT void otel_thread_ctx_inspect_process_snapshot_free(struct otel_thread_ctx_inspect_process_snapshot *snap)
{
	free(snap);
}

/* --- Finding the mapping ---------------------------------------------------- */

struct candidate {
	uint64_t start, end;
};

struct candidates {
	struct candidate *c;
	size_t n;
};

/* A readable mapping, large enough for the header, named like the process
 * context. */
static int add_candidate(const struct otel__maps_entry *e, void *arg)
{
	static const char *const prefixes[] = {
		("[anon_shmem:" OTEL_THREAD_CTX_PROCESS_MAPPING_NAME "]"),
		("[anon:" OTEL_THREAD_CTX_PROCESS_MAPPING_NAME "]"),
		("/memfd:" OTEL_THREAD_CTX_PROCESS_MAPPING_NAME),
	};
	struct candidates *c = arg;

	if (e->perms[0] != 'r' || e->end - e->start < PROCESS_HEADER_SIZE || c->n == MAX_CANDIDATES)
		return 0;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		if (strncmp(e->name, prefixes[i], strlen(prefixes[i])) == 0) {
			c->c[c->n].start = e->start;
			c->c[c->n++].end = e->end;
			break;
		}
	}
	return 0;
}

static int find_candidates(pid_t pid, bool self, struct candidate *c, size_t *n)
{
	struct candidates list = { c, 0 };
	int err = otel__remote_maps(self ? 0 : pid, add_candidate, &list);

	*n = list.n;
	return err;
}

/* --- Copying ---------------------------------------------------------------- */

static int read_memory(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	return otel__remote_read(pid, addr, buf, len);
}

/* Gives the publisher time to finish an update. */
static void back_off(unsigned int attempt)
{
	if (attempt < 8) {
		sched_yield();
	} else {
		struct timespec ts = { 0, 50000 };

		nanosleep(&ts, NULL);
	}
}

static void fill_header_fields(struct otel_thread_ctx_inspect_process_snapshot *snap, uint64_t mapping,
			       const struct otel_thread_ctx_process_header *h, unsigned int retries)
{
	snap->mapping_address = mapping;
	snap->payload_address = h->payload;
	snap->monotonic_published_at_ns = h->monotonic_published_at_ns;
	snap->version = h->version;
	snap->retries = retries;
}

static int check_header(const struct otel_thread_ctx_process_header *h)
{
	if (memcmp(h->signature, OTEL_THREAD_CTX_PROCESS_SIGNATURE, sizeof(h->signature)) != 0 ||
	    h->version != OTEL_THREAD_CTX_PROCESS_VERSION)
		return OTEL_THREAD_CTX_EFORMAT;
	return OTEL_THREAD_CTX_OK;
}

static bool payload_plausible(const struct otel_thread_ctx_process_header *h)
{
	return h->payload_size != 0 && h->payload_size <= OTEL_THREAD_CTX_PROCESS_PAYLOAD_MAX &&
	       h->payload != 0;
}

/* The copy the publisher of this process makes under its lock, when
 * process_vm_readv() is refused: only of the mapping it publishes. */
static int read_own(uint64_t mapping, struct otel_thread_ctx_inspect_process_snapshot **out)
{
	struct otel_thread_ctx_process_info info;
	struct otel_thread_ctx_process_header h;
	void *copy = NULL;
	int err;

	if (otel_thread_ctx_process_query(&info) != OTEL_THREAD_CTX_OK || !info.published ||
	    (uint64_t)(uintptr_t)info.mapping != mapping)
		return OTEL_THREAD_CTX_EPERM; /* another publisher's mapping */
	err = otel_thread_ctx_process_copy(&h, &copy);
	if (err == OTEL_THREAD_CTX_ENOTPUBLISHED)
		return OTEL_THREAD_CTX_ENOENT; /* unpublished meanwhile */
	if (err)
		return err;
	err = check_header(&h);
	if (err == OTEL_THREAD_CTX_OK && !payload_plausible(&h))
		err = OTEL_THREAD_CTX_EFORMAT;
	if (err == OTEL_THREAD_CTX_OK)
		err = otel_thread_ctx_inspect_process_decode(copy, h.payload_size, out);
	if (err == OTEL_THREAD_CTX_OK)
		fill_header_fields(*out, mapping, &h, 0);
	free(copy);
	return err;
}

/*
 * The reading protocol on one mapping.  The timestamp is read on its own
 * first: the header fields are read after it, never before, so a header
 * with a timestamp that is still the same at the end was complete before
 * the first read (reading the 32 bytes at once would not guarantee that:
 * payload_size lies before the timestamp).
 */
static int read_candidate(pid_t pid, bool self, const struct candidate *c, unsigned int attempts,
			  struct otel_thread_ctx_inspect_process_snapshot **out)
{
	struct otel_thread_ctx_process_header h;
	uint8_t *buf = NULL;
	size_t buf_cap = 0;
	unsigned int retries = 0;
	int err = OTEL_THREAD_CTX_EAGAIN;

	for (unsigned int attempt = 0; attempt < attempts; attempt++) {
		uint64_t before, after;
		int e, payload_error;

		if (attempt > 0) {
			retries++;
			back_off(attempt);
		}
		e = read_memory(pid, c->start + PUBLISHED_AT_OFFSET, &before, sizeof(before));
		if (e != 0 && self && (e == EPERM || e == ENOSYS)) {
			free(buf);
			return read_own(c->start, out);
		}
		if (e != 0) {
			/* EFAULT: the mapping went away (unpublished). */
			err = e == EFAULT ? OTEL_THREAD_CTX_ENOENT : otel__remote_error(e);
			break;
		}
		if (before == 0) {
			err = OTEL_THREAD_CTX_EAGAIN; /* being changed */
			continue;
		}
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		e = read_memory(pid, c->start, &h, sizeof(h));
		if (e != 0) {
			err = e == EFAULT ? OTEL_THREAD_CTX_ENOENT : otel__remote_error(e);
			break;
		}
		err = check_header(&h);
		if (err)
			break;
		if (h.monotonic_published_at_ns != before) {
			err = OTEL_THREAD_CTX_EAGAIN;
			continue;
		}
		payload_error = 0;
		if (payload_plausible(&h)) {
			if (h.payload_size > buf_cap) {
				uint8_t *bigger = realloc(buf, h.payload_size);

				if (bigger == NULL) {
					err = OTEL_THREAD_CTX_ENOMEM;
					break;
				}
				buf = bigger;
				buf_cap = h.payload_size;
			}
			payload_error = read_memory(pid, h.payload, buf, h.payload_size);
		}
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		e = read_memory(pid, c->start + PUBLISHED_AT_OFFSET, &after, sizeof(after));
		if (e != 0) {
			err = e == EFAULT ? OTEL_THREAD_CTX_ENOENT : otel__remote_error(e);
			break;
		}
		if (after != before) {
			err = OTEL_THREAD_CTX_EAGAIN; /* torn: changed during the copy */
			continue;
		}
		/* A stable header: what it says is what the process publishes. */
		if (!payload_plausible(&h)) {
			err = OTEL_THREAD_CTX_EFORMAT;
			break;
		}
		if (payload_error != 0) {
			err = payload_error == EFAULT ? OTEL_THREAD_CTX_EFAULT : otel__remote_error(payload_error);
			break;
		}
		err = otel_thread_ctx_inspect_process_decode(buf, h.payload_size, out);
		if (err == OTEL_THREAD_CTX_OK)
			fill_header_fields(*out, c->start, &h, retries);
		break;
	}
	free(buf);
	return err;
}

/* The target of a read: 0 and the caller's own PID mean this process.
 * False for a negative PID. */
static bool resolve_target(pid_t *pid, bool *self)
{
	if (*pid < 0)
		return false;
	*self = *pid == 0 || *pid == getpid();
	if (*self)
		*pid = getpid();
	else
		*pid = otel__remote_memory_task(*pid);
	return true;
}

OTEL_EXPORT int otel_thread_ctx_inspect_process_read_at(pid_t pid, uint64_t mapping, unsigned int attempts,
					 struct otel_thread_ctx_inspect_process_snapshot **out)
{
	struct candidate c = { mapping, mapping + PROCESS_HEADER_SIZE };
	bool self;

	if (out == NULL)
		return OTEL_THREAD_CTX_ENULL;
	if (!resolve_target(&pid, &self))
		return OTEL_THREAD_CTX_ESRCH;
	if (mapping == 0 || mapping > UINT64_MAX - PROCESS_HEADER_SIZE)
		return OTEL_THREAD_CTX_ENOENT;
	return read_candidate(pid, self, &c, attempts ? attempts : OTEL_THREAD_CTX_INSPECT_PROCESS_READ_ATTEMPTS,
			      out);
}

OTEL_EXPORT int otel_thread_ctx_inspect_process_read(pid_t pid, unsigned int attempts,
				      struct otel_thread_ctx_inspect_process_snapshot **out)
{
	struct candidate c[MAX_CANDIDATES];
	size_t n = 0;
	bool self;
	int err;

	if (out == NULL)
		return OTEL_THREAD_CTX_ENULL;
	if (!resolve_target(&pid, &self))
		return OTEL_THREAD_CTX_ESRCH;
	if (attempts == 0)
		attempts = OTEL_THREAD_CTX_INSPECT_PROCESS_READ_ATTEMPTS;
	err = find_candidates(pid, self, c, &n);
	if (err)
		return err;
	err = OTEL_THREAD_CTX_ENOENT;
	for (size_t i = 0; i < n; i++) {
		err = read_candidate(pid, self, &c[i], attempts, out);
		/* EPERM may hold for one mapping only (another publisher's, in
		 * this process, when the direct copy is all there is). */
		if (err == OTEL_THREAD_CTX_OK || err == OTEL_THREAD_CTX_ESRCH ||
		    err == OTEL_THREAD_CTX_ENOMEM)
			break;
	}
	return err;
}
