/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The profile of otel-thread-ctx-sample (profile.h): samples kept by their
 * whole context (process, ids, named attributes) and stack, counted; groups
 * and the files are computed from that when written.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <otel_thread_ctx.h>

#include "print.h"
#include "profile.h"

#ifdef OTEL_SAMPLE_ZLIB
#include <zlib.h>
#endif

enum key_kind { KEY_TRACE, KEY_SPAN, KEY_ATTR };

/* One (context, stack) and how many samples had it. */
struct entry {
	uint64_t hash, count;
	uint32_t pid;
	uint8_t kind; /* enum profile_kind */
	uint8_t trace_id[16], span_id[8];
	uint16_t attrs_len;
	/* The named attributes: [u8 name length][name][u16 value length][value]... */
	uint8_t *attrs;
	uint32_t nips;
	uint64_t *ips; /* leaf first */
};

struct profile {
	const char *keys[PROFILE_MAX_KEYS];
	enum key_kind key_kind[PROFILE_MAX_KEYS];
	size_t nkeys;
	struct entry *entries;
	size_t nentries, cap;
	size_t *index; /* open addressing: entry number + 1, 0 free */
	size_t index_cap;
	uint64_t samples, with_stack, empty, cut;
};

struct profile *profile_new(const char *const *keys, size_t n)
{
	struct profile *p;

	if (n > PROFILE_MAX_KEYS)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		p->keys[i] = keys[i];
		p->key_kind[i] = strcmp(keys[i], "trace_id") == 0 ? KEY_TRACE :
				 strcmp(keys[i], "span_id") == 0  ? KEY_SPAN :
								    KEY_ATTR;
	}
	p->nkeys = n;
	return p;
}

void profile_free(struct profile *p)
{
	if (p == NULL)
		return;
	for (size_t i = 0; i < p->nentries; i++) {
		free(p->entries[i].attrs);
		free(p->entries[i].ips);
	}
	free(p->entries);
	free(p->index);
	free(p);
}

static uint64_t fnv(uint64_t h, const void *data, size_t n)
{
	const uint8_t *b = data;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * UINT64_C(0x100000001b3);
	return h;
}

static uint64_t entry_hash(const struct entry *e)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325);

	h = fnv(h, &e->pid, sizeof(e->pid));
	h = fnv(h, &e->kind, 1);
	h = fnv(h, e->trace_id, 16);
	h = fnv(h, e->span_id, 8);
	h = fnv(h, &e->attrs_len, sizeof(e->attrs_len));
	h = fnv(h, e->attrs, e->attrs_len);
	h = fnv(h, &e->nips, sizeof(e->nips));
	return fnv(h, e->ips, e->nips * sizeof(uint64_t));
}

static int entry_equal(const struct entry *a, const struct entry *b)
{
	return a->hash == b->hash && a->pid == b->pid && a->kind == b->kind &&
	       memcmp(a->trace_id, b->trace_id, 16) == 0 && memcmp(a->span_id, b->span_id, 8) == 0 &&
	       a->attrs_len == b->attrs_len && memcmp(a->attrs, b->attrs, a->attrs_len) == 0 &&
	       a->nips == b->nips && memcmp(a->ips, b->ips, a->nips * sizeof(uint64_t)) == 0;
}

static int grow_index(struct profile *p)
{
	size_t cap = p->index_cap ? p->index_cap * 2 : 1024;
	size_t *n = calloc(cap, sizeof(*n));

	if (n == NULL)
		return -1;
	for (size_t i = 0; i < p->nentries; i++) {
		size_t k = (size_t)p->entries[i].hash & (cap - 1);

		while (n[k] != 0)
			k = (k + 1) & (cap - 1);
		n[k] = i + 1;
	}
	free(p->index);
	p->index = n;
	p->index_cap = cap;
	return 0;
}

/* The sample's named attributes, in the entry's encoding. */
static size_t encode_attrs(const otel_thread_ctx_inspector *insp,
			   const struct otel_thread_ctx_bpf_record *r, uint8_t *out, size_t cap)
{
	struct otel_thread_ctx_attr_iter it;
	struct otel_thread_ctx_attr a;
	size_t n = 0;

	otel_thread_ctx_attr_iter_init_map(&it, (const struct otel_thread_ctx_record *)r,
					   insp != NULL ? otel_thread_ctx_inspect_key_count(insp) : 0);
	while (otel_thread_ctx_attr_iter_next(&it, &a) == 0) {
		const char *name = otel_thread_ctx_inspect_key_name(insp, a.key);
		size_t nl = name != NULL ? strlen(name) : 0;

		if (nl > 255)
			nl = 255;
		if (n + 1 + nl + 2 + a.len > cap)
			break;
		out[n++] = (uint8_t)nl;
		memcpy(out + n, name, nl);
		n += nl;
		out[n++] = (uint8_t)(a.len & 0xff);
		out[n++] = (uint8_t)(a.len >> 8);
		memcpy(out + n, a.value, a.len);
		n += a.len;
	}
	return n;
}

int profile_add(struct profile *p, const otel_thread_ctx_inspector *insp,
		const struct otel_thread_ctx_bpf_event *ev, const struct profile_stack *stack)
{
	/* Each attribute costs 2 bytes in the record, 3 + its name here. */
	static uint8_t attrs[65535];
	struct entry e;
	size_t k;

	memset(&e, 0, sizeof(e));
	e.pid = ev->pid;
	switch (ev->status) {
	case OTEL_THREAD_CTX_BPF_OK:
		e.kind = PROFILE_CONTEXT;
		memcpy(e.trace_id, ev->record.trace_id, 16);
		memcpy(e.span_id, ev->record.span_id, 8);
		e.attrs_len = (uint16_t)encode_attrs(insp, &ev->record, attrs, sizeof(attrs));
		e.attrs = attrs;
		break;
	case OTEL_THREAD_CTX_BPF_OVERSIZED:
	case OTEL_THREAD_CTX_BPF_UNREADABLE:
	case OTEL_THREAD_CTX_BPF_MISALIGNED:
		e.kind = PROFILE_BROKEN;
		break;
	default:
		e.kind = PROFILE_NO_CONTEXT;
		break;
	}
	if (stack != NULL) {
		e.nips = stack->n;
		e.ips = (uint64_t *)stack->ips;
	}
	e.hash = entry_hash(&e);
	if (p->nentries * 2 >= p->index_cap && grow_index(p) != 0)
		return -1;
	k = (size_t)e.hash & (p->index_cap - 1);
	while (p->index[k] != 0) {
		struct entry *x = &p->entries[p->index[k] - 1];

		if (entry_equal(x, &e)) {
			x->count++;
			goto counted;
		}
		k = (k + 1) & (p->index_cap - 1);
	}
	if (p->nentries == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 256;
		struct entry *n = realloc(p->entries, cap * sizeof(*n));

		if (n == NULL)
			return -1;
		p->entries = n;
		p->cap = cap;
	}
	e.attrs = NULL;
	e.ips = NULL;
	if (e.attrs_len != 0 && (e.attrs = malloc(e.attrs_len)) == NULL)
		return -1;
	if (e.nips != 0 && (e.ips = malloc(e.nips * sizeof(uint64_t))) == NULL) {
		free(e.attrs);
		return -1;
	}
	memcpy(e.attrs, attrs, e.attrs_len);
	if (e.nips != 0)
		memcpy(e.ips, stack->ips, e.nips * sizeof(uint64_t));
	e.count = 1;
	p->entries[p->nentries++] = e;
	p->index[k] = p->nentries;
counted:
	p->samples++;
	if (stack != NULL) {
		p->with_stack++;
		if (stack->n == 0)
			p->empty++;
		else if (stack->cut)
			p->cut++;
	}
	return 0;
}

uint64_t profile_samples(const struct profile *p)
{
	return p->samples;
}

void profile_stack_counts(const struct profile *p, uint64_t *with_stack, uint64_t *empty,
			  uint64_t *cut)
{
	*with_stack = p->with_stack;
	*empty = p->empty;
	*cut = p->cut;
}

/* Attribute `name` of an entry: its value, or NULL when it has none. */
static const uint8_t *entry_attr(const struct entry *e, const char *name, size_t *len)
{
	size_t nl = strlen(name), i = 0;

	while (i < e->attrs_len) {
		size_t l = e->attrs[i], vl = e->attrs[i + 1 + l] | e->attrs[i + 2 + l] << 8;

		if (l == nl && memcmp(e->attrs + i + 1, name, l) == 0) {
			*len = vl;
			return e->attrs + i + 3 + l;
		}
		i += 3 + l + vl;
	}
	return NULL;
}

/* The value of key `k` for an entry: bytes, and whether they are an id
 * (printed in hex).  NULL: the entry has no such attribute. */
static const uint8_t *key_value(const struct profile *p, size_t k, const struct entry *e,
				size_t *len, int *id)
{
	*id = p->key_kind[k] != KEY_ATTR;
	switch (p->key_kind[k]) {
	case KEY_TRACE:
		*len = 16;
		return e->trace_id;
	case KEY_SPAN:
		*len = 8;
		return e->span_id;
	default:
		return entry_attr(e, p->keys[k], len);
	}
}

/*
 * A group: the entries with the same kind and key values.  Its identity is
 * encoded in bytes: kind, then for each key a present byte, a 2-byte length
 * and the value.
 */
struct group {
	uint8_t *id;
	size_t id_len;
	uint64_t count;
	const struct entry *first;
};

static size_t group_id(const struct profile *p, const struct entry *e, uint8_t *out)
{
	size_t n = 0;

	out[n++] = e->kind;
	if (e->kind != PROFILE_CONTEXT)
		return n;
	for (size_t k = 0; k < p->nkeys; k++) {
		size_t len = 0;
		int id;
		const uint8_t *v = key_value(p, k, e, &len, &id);

		out[n++] = v != NULL;
		out[n++] = (uint8_t)(len & 0xff);
		out[n++] = (uint8_t)(len >> 8);
		if (v != NULL)
			memcpy(out + n, v, len);
		n += v != NULL ? len : 0;
	}
	return n;
}

static int cmp_group_id(const void *a, const void *b)
{
	const struct group *x = a, *y = b;
	size_t n = x->id_len < y->id_len ? x->id_len : y->id_len;
	int c = memcmp(x->id, y->id, n);

	if (c != 0)
		return c;
	return x->id_len < y->id_len ? -1 : x->id_len > y->id_len;
}

static int cmp_group_count(const void *a, const void *b)
{
	const struct group *x = a, *y = b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return cmp_group_id(a, b);
}

/* The groups, largest first.  *n receives their number; NULL when out of
 * memory (or no sample). */
static struct group *make_groups(const struct profile *p, size_t *n)
{
	struct group *g = calloc(p->nentries ? p->nentries : 1, sizeof(*g));
	size_t m = 0;

	*n = 0;
	if (g == NULL)
		return NULL;
	for (size_t i = 0; i < p->nentries; i++) {
		uint8_t buf[1 + PROFILE_MAX_KEYS * (3 + OTEL_THREAD_CTX_BPF_ATTRS_MAX)];
		size_t len = group_id(p, &p->entries[i], buf);

		g[i].id = malloc(len);
		if (g[i].id == NULL) {
			for (size_t j = 0; j < i; j++)
				free(g[j].id);
			free(g);
			return NULL;
		}
		memcpy(g[i].id, buf, len);
		g[i].id_len = len;
		g[i].count = p->entries[i].count;
		g[i].first = &p->entries[i];
	}
	qsort(g, p->nentries, sizeof(*g), cmp_group_id);
	for (size_t i = 0; i < p->nentries; i++) {
		if (m > 0 && cmp_group_id(&g[m - 1], &g[i]) == 0) {
			g[m - 1].count += g[i].count;
			free(g[i].id);
			continue;
		}
		g[m++] = g[i];
	}
	qsort(g, m, sizeof(*g), cmp_group_count);
	*n = m;
	return g;
}

static void free_groups(struct group *g, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(g[i].id);
	free(g);
}

static const char *kind_word(int kind)
{
	return kind == PROFILE_CONTEXT ? "context" : kind == PROFILE_BROKEN ? "unreadable" :
									    "no-context";
}

void profile_print_groups(const struct profile *p, unsigned int top, int json)
{
	size_t n, shown;
	struct group *g = make_groups(p, &n);
	uint64_t rest = 0;
	double total = p->samples ? (double)p->samples : 1.0;

	if (g == NULL && p->nentries != 0) {
		fprintf(stderr, "otel-thread-ctx-sample: out of memory\n");
		return;
	}
	shown = top != 0 && top < n ? top : n;
	for (size_t i = shown; i < n; i++)
		rest += g[i].count;
	if (!json) {
		printf("%8s %6s  GROUP (by", "SAMPLES", "SHARE");
		for (size_t k = 0; k < p->nkeys; k++)
			printf(" %s", p->keys[k]);
		printf(p->nkeys == 0 ? " context)\n" : ")\n");
	}
	for (size_t i = 0; i < shown; i++) {
		const struct entry *e = g[i].first;

		if (json) {
			printf("{\"type\":\"group\",\"rank\":%zu,\"kind\":\"%s\",\"samples\":%" PRIu64
			       ",\"share\":%.4f,\"values\":",
			       i + 1, kind_word(e->kind), g[i].count, (double)g[i].count / total);
			if (e->kind != PROFILE_CONTEXT) {
				printf("null}\n");
				continue;
			}
			putchar('{');
			for (size_t k = 0; k < p->nkeys; k++) {
				size_t len = 0;
				int id;
				const uint8_t *v = key_value(p, k, e, &len, &id);

				if (k > 0)
					putchar(',');
				tool_json_string(p->keys[k], strlen(p->keys[k]));
				putchar(':');
				if (v == NULL) {
					printf("null");
				} else if (id) {
					putchar('"');
					tool_hex(v, len);
					putchar('"');
				} else {
					tool_json_string(v, len);
				}
			}
			printf("}}\n");
			continue;
		}
		printf("%8" PRIu64 " %5.1f%% ", g[i].count, 100.0 * (double)g[i].count / total);
		if (e->kind != PROFILE_CONTEXT) {
			printf(" (%s)\n", e->kind == PROFILE_BROKEN ? "record unreadable" : "no context");
			continue;
		}
		if (p->nkeys == 0)
			printf(" (context)");
		for (size_t k = 0; k < p->nkeys; k++) {
			size_t len = 0;
			int id;
			const uint8_t *v = key_value(p, k, e, &len, &id);

			printf(" %s=", p->keys[k]);
			if (v == NULL) {
				printf("(none)");
			} else if (id) {
				tool_hex(v, len);
			} else {
				putchar('"');
				tool_text_value(v, len);
				putchar('"');
			}
		}
		putchar('\n');
	}
	if (shown < n) {
		if (json)
			printf("{\"type\":\"group\",\"rank\":null,\"kind\":\"other\",\"groups\":%zu,"
			       "\"samples\":%" PRIu64 ",\"share\":%.4f,\"values\":null}\n",
			       n - shown, rest, (double)rest / total);
		else
			printf("%8" PRIu64 " %5.1f%%  (%zu other group%s)\n", rest,
			       100.0 * (double)rest / total, n - shown, n - shown == 1 ? "" : "s");
	}
	free_groups(g, n);
}
