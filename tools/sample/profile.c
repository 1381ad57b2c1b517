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
	uint8_t kind;    /* enum profile_kind */
	uint8_t stacked; /* a stack was collected (--stacks), maybe empty */
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

	for (size_t i = 0; i < n && b != NULL; i++)
		h = (h ^ b[i]) * UINT64_C(0x100000001b3);
	return h;
}

static uint64_t entry_hash(const struct entry *e)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325);

	h = fnv(h, &e->pid, sizeof(e->pid));
	h = fnv(h, &e->kind, 1);
	h = fnv(h, &e->stacked, 1);
	h = fnv(h, e->trace_id, 16);
	h = fnv(h, e->span_id, 8);
	h = fnv(h, &e->attrs_len, sizeof(e->attrs_len));
	h = fnv(h, e->attrs, e->attrs_len);
	h = fnv(h, &e->nips, sizeof(e->nips));
	return fnv(h, e->ips, e->nips * sizeof(uint64_t));
}

/* memcmp() of n bytes, where either may be NULL when n is 0. */
static int same(const void *a, const void *b, size_t n)
{
	return n == 0 || memcmp(a, b, n) == 0;
}

static int entry_equal(const struct entry *a, const struct entry *b)
{
	return a->hash == b->hash && a->pid == b->pid && a->kind == b->kind &&
	       a->stacked == b->stacked &&
	       memcmp(a->trace_id, b->trace_id, 16) == 0 && memcmp(a->span_id, b->span_id, 8) == 0 &&
	       a->attrs_len == b->attrs_len && same(a->attrs, b->attrs, a->attrs_len) &&
	       a->nips == b->nips && same(a->ips, b->ips, a->nips * sizeof(uint64_t));
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

	otel_thread_ctx_inspect_attr_iter_init(&it, insp, (const struct otel_thread_ctx_record *)r);
	while (otel_thread_ctx_inspect_attr_iter_next(&it, &a) == 0) {
		const char *name = otel_thread_ctx_inspect_key_name(insp, a.key);
		size_t nl = name != NULL ? strlen(name) : 0;

		if (nl > 255)
			nl = 255;
		if (n + 1 + nl + 2 + a.len > cap)
			break;
		out[n++] = (uint8_t)nl;
		if (nl != 0)
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
		e.stacked = 1;
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
	if (e.attrs_len != 0)
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

/* Frame names, with or without a symbolizer. */
static void frame_name(profile_symbolize_fn sym, void *arg, uint32_t pid, uint64_t ip, int leaf,
		       char *name, size_t len)
{
	name[0] = '\0';
	if (sym != NULL)
		sym(arg, pid, ip, leaf, name, len);
	if (name[0] == '\0')
		snprintf(name, len, "[unknown]+0x%" PRIx64, ip);
}

/* A key's value as text: ids in hex, attribute values as stored. */
static size_t value_text(const uint8_t *v, size_t len, int id, char *out, size_t cap)
{
	size_t n = 0;

	if (id) {
		for (size_t i = 0; i < len && n + 2 < cap; i++)
			n += (size_t)snprintf(out + n, cap - n, "%02x", v[i]);
		return n;
	}
	n = len < cap ? len : cap;
	memcpy(out, v, n);
	return n;
}

/* ---- A byte-keyed map: strings, functions and locations of pprof. ---- */

struct map_slot {
	uint64_t hash, value;
	uint8_t *key;
	size_t len;
};

struct map {
	struct map_slot *s;
	size_t cap, n;
};

static void map_free(struct map *m)
{
	for (size_t i = 0; i < m->cap; i++)
		free(m->s[i].key);
	free(m->s);
}

/* The value of `key`, or *added (value n + 1) when new; 0 when out of
 * memory. */
static uint64_t map_get(struct map *m, const void *key, size_t len, int *added)
{
	uint64_t h = fnv(UINT64_C(0xcbf29ce484222325), key, len);
	size_t k;

	*added = 0;
	if (m->n * 2 >= m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 256;
		struct map_slot *n = calloc(cap, sizeof(*n));

		if (n == NULL)
			return 0;
		for (size_t i = 0; i < m->cap; i++) {
			if (m->s[i].key == NULL)
				continue;
			k = (size_t)m->s[i].hash & (cap - 1);
			while (n[k].key != NULL)
				k = (k + 1) & (cap - 1);
			n[k] = m->s[i];
		}
		free(m->s);
		m->s = n;
		m->cap = cap;
	}
	k = (size_t)h & (m->cap - 1);
	while (m->s[k].key != NULL) {
		if (m->s[k].hash == h && m->s[k].len == len && memcmp(m->s[k].key, key, len) == 0)
			return m->s[k].value;
		k = (k + 1) & (m->cap - 1);
	}
	m->s[k].key = malloc(len ? len : 1);
	if (m->s[k].key == NULL)
		return 0;
	memcpy(m->s[k].key, key, len);
	m->s[k].len = len;
	m->s[k].hash = h;
	m->s[k].value = ++m->n;
	*added = 1;
	return m->s[k].value;
}

/* ---- Folded stacks and the flame graph ---- */

/* Frame names of an entry from the root: the group's key values (or why
 * there is no context), then the stack from its outermost frame.  Each
 * name is passed to `fn`; names have no ';' or line ends. */
typedef int (*frame_fn)(void *arg, const char *name, size_t len);

static void clean(char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] == ';' || s[i] == '\n' || s[i] == '\r' || s[i] == '\0')
			s[i] = '_';
}

static int entry_frames(const struct profile *p, const struct entry *e, profile_symbolize_fn sym,
			void *sarg, frame_fn fn, void *arg)
{
	char name[1024];

	if (e->kind != PROFILE_CONTEXT) {
		const char *w = e->kind == PROFILE_BROKEN ? "(record unreadable)" : "(no context)";

		if (fn(arg, w, strlen(w)) != 0)
			return -1;
	}
	for (size_t k = 0; k < p->nkeys && e->kind == PROFILE_CONTEXT; k++) {
		size_t len = 0, n;
		int id;
		const uint8_t *v = key_value(p, k, e, &len, &id);

		n = (size_t)snprintf(name, sizeof(name), "%s=", p->keys[k]);
		if (n >= sizeof(name))
			n = sizeof(name) - 1;
		if (v == NULL)
			n += (size_t)snprintf(name + n, sizeof(name) - n, "(none)");
		else
			n += value_text(v, len, id, name + n, sizeof(name) - 1 - n);
		if (n >= sizeof(name))
			n = sizeof(name) - 1;
		clean(name, n);
		if (fn(arg, name, n) != 0)
			return -1;
	}
	for (uint32_t i = e->nips; i-- > 0;) {
		frame_name(sym, sarg, e->pid, e->ips[i], i == 0, name, sizeof(name));
		clean(name, strlen(name));
		if (fn(arg, name, strlen(name)) != 0)
			return -1;
	}
	return 0;
}

/* A growable line of text. */
struct text {
	char *b;
	size_t n, cap;
	int oom;
};

static void text_add(struct text *t, const char *s, size_t n)
{
	if (t->n + n + 1 > t->cap) {
		size_t cap = (t->n + n + 1) * 2;
		char *b = realloc(t->b, cap);

		if (b == NULL) {
			t->oom = 1;
			return;
		}
		t->b = b;
		t->cap = cap;
	}
	memcpy(t->b + t->n, s, n);
	t->n += n;
	t->b[t->n] = '\0';
}

static int folded_frame(void *arg, const char *name, size_t len)
{
	struct text *t = arg;

	if (t->n != 0)
		text_add(t, ";", 1);
	text_add(t, name, len);
	return t->oom ? -1 : 0;
}

struct folded {
	char *line;
	uint64_t count;
};

static int cmp_folded(const void *a, const void *b)
{
	return strcmp(((const struct folded *)a)->line, ((const struct folded *)b)->line);
}

/* Every entry's line, sorted, the same lines merged.  NULL when out of
 * memory. */
static struct folded *folded_lines(const struct profile *p, profile_symbolize_fn sym, void *arg,
				   size_t *n)
{
	struct folded *l = calloc(p->nentries ? p->nentries : 1, sizeof(*l));
	size_t m = 0;

	*n = 0;
	if (l == NULL)
		return NULL;
	for (size_t i = 0; i < p->nentries; i++) {
		struct text t = { NULL, 0, 0, 0 };

		if (entry_frames(p, &p->entries[i], sym, arg, folded_frame, &t) != 0 || t.n == 0)
			text_add(&t, "(all)", 5);
		if (t.oom) {
			free(t.b);
			for (size_t j = 0; j < i; j++)
				free(l[j].line);
			free(l);
			return NULL;
		}
		l[i].line = t.b;
		l[i].count = p->entries[i].count;
	}
	qsort(l, p->nentries, sizeof(*l), cmp_folded);
	for (size_t i = 0; i < p->nentries; i++) {
		if (m > 0 && strcmp(l[m - 1].line, l[i].line) == 0) {
			l[m - 1].count += l[i].count;
			free(l[i].line);
			continue;
		}
		l[m++] = l[i];
	}
	*n = m;
	return l;
}

static void free_folded(struct folded *l, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(l[i].line);
	free(l);
}

int profile_write_folded(const struct profile *p, FILE *f, profile_symbolize_fn sym, void *arg)
{
	size_t n;
	struct folded *l = folded_lines(p, sym, arg, &n);

	if (l == NULL) {
		errno = ENOMEM;
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s %" PRIu64 "\n", l[i].line, l[i].count);
	free_folded(l, n);
	return ferror(f) ? -1 : 0;
}

/* A node of the flame graph: a frame under its parent, with the samples of
 * every stack through it. */
struct node {
	char *name;
	uint64_t count;
	struct node *child, *next; /* children in name order */
};

static struct node *node_child(struct node *parent, const char *name, size_t len)
{
	struct node **at = &parent->child, *n;

	for (; *at != NULL; at = &(*at)->next) {
		int c = strncmp((*at)->name, name, len);

		if (c == 0 && (*at)->name[len] == '\0')
			return *at;
		if (c > 0 || (c == 0 && (*at)->name[len] > '\0'))
			break;
	}
	n = calloc(1, sizeof(*n));
	if (n == NULL || (n->name = strndup(name, len)) == NULL) {
		free(n);
		return NULL;
	}
	n->next = *at;
	*at = n;
	return n;
}

static void node_free(struct node *n)
{
	while (n != NULL) {
		struct node *next = n->next;

		node_free(n->child);
		free(n->name);
		free(n);
		n = next;
	}
}

static unsigned int node_depth(const struct node *n)
{
	unsigned int d = 0;

	for (const struct node *c = n->child; c != NULL; c = c->next) {
		unsigned int x = node_depth(c);

		if (x > d)
			d = x;
	}
	return d + 1;
}

static void xml_text(FILE *f, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '<')
			fputs("&lt;", f);
		else if (c == '>')
			fputs("&gt;", f);
		else if (c == '&')
			fputs("&amp;", f);
		else if (c == '"')
			fputs("&quot;", f);
		else if (c < 0x20 || c == 0x7f)
			putc('?', f);
		else
			putc(c, f);
	}
}

#define SVG_WIDTH 1200.0
#define SVG_FRAME 16
#define SVG_TOP 40
#define SVG_CHAR 7.0 /* width of a character at font-size 12, about */

struct svg {
	FILE *f;
	double per_sample;
	uint64_t total;
	unsigned int depth;
};

static void svg_node(struct svg *g, const struct node *n, double x, unsigned int level)
{
	double w = (double)n->count * g->per_sample;
	double y = SVG_TOP + (double)(g->depth - 1 - level) * SVG_FRAME;
	uint32_t h = (uint32_t)fnv(UINT64_C(0xcbf29ce484222325), n->name, strlen(n->name));
	size_t fit = w > 2 * SVG_CHAR ? (size_t)((w - 6) / SVG_CHAR) : 0, len = strlen(n->name);

	fprintf(g->f, "<g class=\"frame\"><title>");
	xml_text(g->f, n->name, len);
	fprintf(g->f, " (%" PRIu64 " samples, %.2f%%)</title>", n->count,
		100.0 * (double)n->count / (double)g->total);
	/* Warm colours, the same for the same name. */
	fprintf(g->f, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" fill=\"rgb(%u,%u,%u)\" "
		      "rx=\"2\"/>",
		x, y, w, SVG_FRAME - 1, 205 + h % 50, 80 + (h >> 8) % 150, 40 + (h >> 16) % 50);
	if (fit >= 3) {
		fprintf(g->f, "<text x=\"%.2f\" y=\"%.1f\">", x + 3, y + SVG_FRAME - 4);
		if (len <= fit) {
			xml_text(g->f, n->name, len);
		} else {
			xml_text(g->f, n->name, fit - 2);
			fputs("..", g->f);
		}
		fputs("</text>", g->f);
	}
	fputs("</g>\n", g->f);
	for (const struct node *c = n->child; c != NULL; c = c->next) {
		svg_node(g, c, x, level + 1);
		x += (double)c->count * g->per_sample;
	}
}

int profile_write_svg(const struct profile *p, FILE *f, const char *title,
		      profile_symbolize_fn sym, void *arg)
{
	struct node root = { (char *)"all", 0, NULL, NULL };
	struct svg g;
	size_t n;
	struct folded *l = folded_lines(p, sym, arg, &n);
	double height;

	if (l == NULL) {
		errno = ENOMEM;
		return -1;
	}
	/* The tree, from the folded lines: frames split at ';'. */
	for (size_t i = 0; i < n; i++) {
		struct node *at = &root;
		const char *s = l[i].line;

		root.count += l[i].count;
		for (;;) {
			const char *end = strchr(s, ';');
			size_t len = end != NULL ? (size_t)(end - s) : strlen(s);

			at = node_child(at, s, len);
			if (at == NULL) {
				node_free(root.child);
				free_folded(l, n);
				errno = ENOMEM;
				return -1;
			}
			at->count += l[i].count;
			if (end == NULL)
				break;
			s = end + 1;
		}
	}
	free_folded(l, n);
	g.f = f;
	g.total = root.count ? root.count : 1;
	g.per_sample = (SVG_WIDTH - 20) / (double)g.total;
	g.depth = node_depth(&root);
	height = SVG_TOP + (double)g.depth * SVG_FRAME + 10;
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		   "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%.0f\" "
		   "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"monospace\" "
		   "font-size=\"12\">\n",
		SVG_WIDTH, height, SVG_WIDTH, height);
	fprintf(f, "<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"#f8f8f0\"/>\n"
		   "<text x=\"%.0f\" y=\"24\" text-anchor=\"middle\" font-size=\"16\">",
		SVG_WIDTH / 2);
	xml_text(f, title, strlen(title));
	fprintf(f, "</text>\n<g transform=\"translate(10,0)\">\n");
	svg_node(&g, &root, 0, 0);
	fprintf(f, "</g>\n</svg>\n");
	node_free(root.child);
	return ferror(f) ? -1 : 0;
}

/* ---- pprof: profile.proto, encoded by hand ---- */

struct pb {
	uint8_t *b;
	size_t n, cap;
	int oom;
};

static void pb_raw(struct pb *b, const void *data, size_t n)
{
	if (b->n + n > b->cap) {
		size_t cap = (b->n + n) * 2 + 64;
		uint8_t *x = realloc(b->b, cap);

		if (x == NULL) {
			b->oom = 1;
			return;
		}
		b->b = x;
		b->cap = cap;
	}
	if (n != 0)
		memcpy(b->b + b->n, data, n);
	b->n += n;
}

static void pb_varint(struct pb *b, uint64_t v)
{
	uint8_t out[10];
	size_t n = 0;

	do {
		out[n++] = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
		v >>= 7;
	} while (v != 0);
	pb_raw(b, out, n);
}

/* Field `field` as a varint (wire type 0); zero values are left out, as
 * proto3 does. */
static void pb_uint(struct pb *b, unsigned int field, uint64_t v)
{
	if (v == 0)
		return;
	pb_varint(b, (uint64_t)field << 3);
	pb_varint(b, v);
}

/* Field `field` as bytes (wire type 2): a string, a packed array, a
 * message. */
static void pb_bytes(struct pb *b, unsigned int field, const void *data, size_t n)
{
	pb_varint(b, (uint64_t)field << 3 | 2);
	pb_varint(b, n);
	pb_raw(b, data, n);
}

static void pb_message(struct pb *b, unsigned int field, struct pb *m)
{
	pb_bytes(b, field, m->b, m->n);
	if (m->oom)
		b->oom = 1;
	m->n = 0;
	m->oom = 0;
}

struct pprof {
	struct pb out, msg, sub, packed;
	/* Mapping messages, written after the rest: the first process's
	 * executable, then the others (pprof takes the first for the main
	 * binary). */
	struct pb main_mapping, mappings;
	struct map strings, functions, locations, mapping_ids;
	profile_symbolize_fn sym;
	profile_mapping_fn map;
	void *sym_arg;
};

/* The index of `s` in the string table, written when new. */
static uint64_t pp_string(struct pprof *w, const char *s, size_t n)
{
	int added;
	uint64_t v = map_get(&w->strings, s, n, &added);

	if (v == 0) {
		w->out.oom = 1;
		return 0;
	}
	if (added)
		pb_bytes(&w->out, 6, s, n);
	return v - 1;
}

/*
 * The id of the Mapping message of `m` in process `pid`, written when new
 * (in w->main_mapping or w->mappings, whose messages are added to the
 * profile at the end).
 */
static uint64_t pp_mapping(struct pprof *w, uint32_t pid, const struct profile_mapping *m)
{
	uint8_t key[4 + 3 * 8 + 1024];
	size_t fl = strnlen(m->filename, 1024);
	uint64_t id, v[3] = { m->start, m->limit, m->offset };
	struct pb *to;
	int added;

	memcpy(key, &pid, 4);
	memcpy(key + 4, v, sizeof(v));
	memcpy(key + 4 + sizeof(v), m->filename, fl);
	id = map_get(&w->mapping_ids, key, 4 + sizeof(v) + fl, &added);
	if (id == 0) {
		w->out.oom = 1;
		return 0;
	}
	if (!added)
		return id;
	to = m->is_main && w->main_mapping.n == 0 ? &w->main_mapping : &w->mappings;
	/* Mapping: id 1, memory_start 2, memory_limit 3, file_offset 4,
	 * filename 5, build_id 6, has_functions 7. */
	pb_uint(&w->sub, 1, id);
	pb_uint(&w->sub, 2, m->start);
	pb_uint(&w->sub, 3, m->limit);
	pb_uint(&w->sub, 4, m->offset);
	pb_uint(&w->sub, 5, pp_string(w, m->filename, fl));
	pb_uint(&w->sub, 6, pp_string(w, m->build_id, strlen(m->build_id)));
	pb_uint(&w->sub, 7, m->has_functions != 0);
	pb_message(to, 3, &w->sub);
	return id;
}

/*
 * The id of the location of (pid, ip, leaf), with its function and
 * mapping.  pid 0: a location the tool makes for a sample without frames,
 * at address 0, whose function is named `what`, in a mapping of no file.
 */
static uint64_t pp_location(struct pprof *w, uint32_t pid, uint64_t ip, int leaf,
			    const char *what)
{
	struct {
		uint64_t ip;
		uint32_t pid, leaf;
	} key = { ip, pid, (uint32_t)leaf };
	struct profile_mapping m = { 0, 0, 0, "[unknown]", "", 1, 0 };
	char name[1024];
	uint64_t id, fid, nid, mid;
	int added;

	id = map_get(&w->locations, &key, sizeof(key), &added);
	if (id == 0) {
		w->out.oom = 1;
		return 0;
	}
	if (!added)
		return id;
	if (what != NULL) {
		/* No file: pprof names no main binary after it. */
		snprintf(name, sizeof(name), "%s", what);
		m.filename = "";
	} else {
		frame_name(w->sym, w->sym_arg, pid, ip, leaf, name, sizeof(name));
		if (w->map == NULL || w->map(w->sym_arg, pid, ip, leaf, &m) != 0) {
			/* In no mapping: one of its own, its names final. */
			m = (struct profile_mapping){ 0, 0, 0, "[unknown]", "", 1, 0 };
			pid = 0;
		}
		if (m.filename[0] == '\0' && !m.is_main)
			m.filename = "[anon]";
	}
	mid = pp_mapping(w, pid, &m);
	fid = map_get(&w->functions, name, strlen(name), &added);
	if (fid == 0) {
		w->out.oom = 1;
		return 0;
	}
	if (added) {
		/* Function: id 1, name 2, system_name 3. */
		nid = pp_string(w, name, strlen(name));
		pb_uint(&w->msg, 1, fid);
		pb_uint(&w->msg, 2, nid);
		pb_uint(&w->msg, 3, nid);
		pb_message(&w->out, 5, &w->msg);
	}
	/* Location: id 1, mapping_id 2, address 3, line 4 (Line:
	 * function_id 1). */
	pb_uint(&w->msg, 1, id);
	pb_uint(&w->msg, 2, mid);
	pb_uint(&w->msg, 3, ip);
	pb_uint(&w->sub, 1, fid);
	pb_message(&w->msg, 4, &w->sub);
	pb_message(&w->out, 4, &w->msg);
	return id;
}

/* Label: key 1, str 2, num 3 (string table indices). */
static void pp_label(struct pprof *w, const char *key, const char *str, size_t len, int64_t num)
{
	pb_uint(&w->sub, 1, pp_string(w, key, strlen(key)));
	if (str != NULL)
		pb_uint(&w->sub, 2, pp_string(w, str, len));
	else
		pb_uint(&w->sub, 3, (uint64_t)num);
	pb_message(&w->msg, 3, &w->sub);
}

static void pp_value_type(struct pprof *w, unsigned int field, const char *type, const char *unit)
{
	uint64_t t = pp_string(w, type, strlen(type)), u = pp_string(w, unit, strlen(unit));

	pb_uint(&w->sub, 1, t);
	pb_uint(&w->sub, 2, u);
	pb_message(&w->out, field, &w->sub);
}

static void pp_sample(struct pprof *w, const struct entry *e, uint64_t period_ns)
{
	uint64_t ids[OTEL_SAMPLE_MAX_FRAMES];
	char hex[33];

	uint32_t n = e->nips < OTEL_SAMPLE_MAX_FRAMES ? e->nips : OTEL_SAMPLE_MAX_FRAMES;

	for (uint32_t i = 0; i < n; i++)
		ids[i] = pp_location(w, e->pid, e->ips[i], i == 0, NULL);
	/* No frames: a location that says why, so that pprof keeps the
	 * sample (it leaves out those without one). */
	if (n == 0) {
		ids[0] = e->stacked ? pp_location(w, 0, 0, 3, PROFILE_EMPTY_STACK) :
				      pp_location(w, 0, 0, 2, PROFILE_NO_STACK);
		n = 1;
	}
	/* Sample: location_id 1 (packed, leaf first), value 2 (packed),
	 * label 3. */
	for (uint32_t i = 0; i < n; i++)
		pb_varint(&w->packed, ids[i]);
	pb_message(&w->msg, 1, &w->packed);
	pb_varint(&w->packed, e->count);
	pb_varint(&w->packed, e->count * period_ns);
	pb_message(&w->msg, 2, &w->packed);
	pp_label(w, "pid", NULL, 0, e->pid);
	if (e->kind == PROFILE_CONTEXT) {
		for (size_t i = 0; i < 16; i++)
			snprintf(hex + 2 * i, 3, "%02x", e->trace_id[i]);
		pp_label(w, "trace_id", hex, 32, 0);
		for (size_t i = 0; i < 8; i++)
			snprintf(hex + 2 * i, 3, "%02x", e->span_id[i]);
		pp_label(w, "span_id", hex, 16, 0);
		for (size_t i = 0; i < e->attrs_len;) {
			size_t l = e->attrs[i], vl = e->attrs[i + 1 + l] | e->attrs[i + 2 + l] << 8;
			char key[256];

			memcpy(key, e->attrs + i + 1, l);
			key[l] = '\0';
			pp_label(w, key, (const char *)e->attrs + i + 3 + l, vl, 0);
			i += 3 + l + vl;
		}
	} else {
		const char *why = e->kind == PROFILE_BROKEN ? "unreadable" : "none";

		pp_label(w, "thread_context", why, strlen(why), 0);
	}
	pb_message(&w->out, 2, &w->msg);
}

#ifdef OTEL_SAMPLE_ZLIB
static int write_gzip(FILE *f, const uint8_t *data, size_t n)
{
	z_stream z;
	uint8_t buf[65536];
	int rc;

	memset(&z, 0, sizeof(z));
	/* 15 + 16: a gzip header and trailer around the deflate stream. */
	if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		errno = ENOMEM;
		return -1;
	}
	z.next_in = (Bytef *)data;
	z.avail_in = (uInt)n;
	do {
		z.next_out = buf;
		z.avail_out = sizeof(buf);
		rc = deflate(&z, Z_FINISH);
		fwrite(buf, 1, sizeof(buf) - z.avail_out, f);
	} while (rc == Z_OK || (rc == Z_BUF_ERROR && z.avail_out == 0));
	deflateEnd(&z);
	if (rc != Z_STREAM_END) {
		errno = EIO;
		return -1;
	}
	return ferror(f) ? -1 : 0;
}
#endif

int profile_write_pprof(const struct profile *p, FILE *f, int gzip, uint64_t period_ns,
			uint64_t time_ns, uint64_t duration_ns, profile_symbolize_fn sym,
			profile_mapping_fn map, void *arg)
{
	struct pprof w;
	int rc = 0;

#ifndef OTEL_SAMPLE_ZLIB
	if (gzip) {
		errno = ENOTSUP;
		return -1;
	}
#endif
	memset(&w, 0, sizeof(w));
	w.sym = sym;
	w.map = map;
	w.sym_arg = arg;
	pp_string(&w, "", 0); /* string 0 is "" */
	/* sample_type 1: samples/count, cpu/nanoseconds; period_type 11. */
	pp_value_type(&w, 1, "samples", "count");
	pp_value_type(&w, 1, "cpu", "nanoseconds");
	pp_value_type(&w, 11, "cpu", "nanoseconds");
	pb_uint(&w.out, 12, period_ns);
	pb_uint(&w.out, 9, time_ns);
	pb_uint(&w.out, 10, duration_ns);
	pb_uint(&w.out, 14, pp_string(&w, "cpu", 3));
	for (size_t i = 0; i < p->nentries; i++)
		pp_sample(&w, &p->entries[i], period_ns);
	pb_raw(&w.out, w.main_mapping.b, w.main_mapping.n);
	pb_raw(&w.out, w.mappings.b, w.mappings.n);
	if (w.out.oom || w.msg.oom || w.sub.oom || w.packed.oom || w.main_mapping.oom ||
	    w.mappings.oom) {
		errno = ENOMEM;
		rc = -1;
	} else if (gzip) {
#ifdef OTEL_SAMPLE_ZLIB
		rc = write_gzip(f, w.out.b, w.out.n);
#endif
	} else {
		fwrite(w.out.b, 1, w.out.n, f);
		rc = ferror(f) ? -1 : 0;
	}
	free(w.out.b);
	free(w.msg.b);
	free(w.sub.b);
	free(w.packed.b);
	free(w.main_mapping.b);
	free(w.mappings.b);
	map_free(&w.strings);
	map_free(&w.mapping_ids);
	map_free(&w.functions);
	map_free(&w.locations);
	return rc;
}
