/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The process context publisher (OTEP 4719): the OTEL_CTX mapping, its
 * 32-byte header and the protobuf ProcessContext payload.
 *
 * Where the thread-context data goes: OTEP 4947 ("Thread Context", section
 * "Process Context: Thread Local Reference Data") stores
 * threadlocal.schema_version and threadlocal.attribute_key_map as entries of
 * ProcessContext.attributes (field 2), not as resource attributes; the
 * caller's resource attributes go in ProcessContext.resource (field 1).
 *
 * Memory ordering.  Unlike a thread record, the mapping is read by other
 * processes while this one runs, so the header changes follow a sequence
 * lock whose counter is the timestamp: 0 means "being changed", and every
 * publication stores a value never used before.  Each step is separated by
 * a full fence (C11 atomic_thread_fence(memory_order_seq_cst)); the fields
 * are stored with atomic stores.  Payloads are never changed in place: a
 * change encodes a new payload, switches the header to it, and frees the
 * payload from two changes ago (see "Payload memory" in
 * otel_thread_ctx_process.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "options.h"
#include "keys.h"
#include "otel_thread_ctx_process.h"
#include "protobuf.h"

/* Newer than the headers of some libcs. */
#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008u
#endif
#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#endif
#ifndef PR_SET_VMA_ANON_NAME
#define PR_SET_VMA_ANON_NAME 0
#endif

/* Field numbers (opentelemetry/proto/common/v1/common.proto,
 * resource/v1/resource.proto, and the ProcessContext message). */
enum {
	PROCESS_CONTEXT_RESOURCE = 1,
	PROCESS_CONTEXT_ATTRIBUTES = 2,
	RESOURCE_ATTRIBUTES = 1,
	KEY_VALUE_KEY = 1,
	KEY_VALUE_VALUE = 2,
	ANY_VALUE_STRING = 1,
	ANY_VALUE_BOOL = 2,
	ANY_VALUE_INT = 3,
	ANY_VALUE_DOUBLE = 4,
	ANY_VALUE_ARRAY = 5,
	ARRAY_VALUE_VALUES = 1,
};


/*
 * The publication, guarded by `lock`.  header is NULL when nothing is
 * published.  The buffers may outlive a publication that a forked child
 * could not recreate; the next publish frees them.
 */
static struct otel_thread_ctx_process_header *header;
static size_t mapping_size;
static bool mapping_memfd;
static pid_t publisher_pid;
static uint8_t *resource_pb; /* the encoded Resource message */
static size_t resource_len;
/* The caller's ProcessContext.attributes, encoded (field 2 KeyValues). */
static uint8_t *extra_pb;
static size_t extra_len;
static uint8_t *payload;     /* what header->payload points to */
static uint32_t payload_len;
static uint8_t *payload_prev; /* the payload before it, still readable */
static uint64_t last_published_at;
/* The options of the publication (otel_thread_ctx_process_publish_with()). */
static int schema = OTEL_THREAD_CTX_PROCESS_SCHEMA_TLSDESC_V1_DEV;
static int on_fork = OTEL_THREAD_CTX_PROCESS_FORK_DROP;


/* --- Encoding ----------------------------------------------------------- */

static size_t string_length(const struct otel_thread_ctx_process_attr *a)
{
	return a->length != 0 ? a->length : strlen(a->string);
}

/* Size of the AnyValue message body of a validated attribute. */
static size_t any_value_size(const struct otel_thread_ctx_process_attr *a)
{
	switch (a->type) {
	case OTEL_THREAD_CTX_PROCESS_STRING:
		return otel__pb_len_field_size(ANY_VALUE_STRING, string_length(a));
	case OTEL_THREAD_CTX_PROCESS_BOOL:
		return otel__pb_tag_size(ANY_VALUE_BOOL) + 1;
	case OTEL_THREAD_CTX_PROCESS_INT:
		return otel__pb_tag_size(ANY_VALUE_INT) +
		       otel__pb_varint_size((uint64_t)a->int_value);
	default: /* DOUBLE */
		return otel__pb_tag_size(ANY_VALUE_DOUBLE) + 8;
	}
}

static void put_any_value(struct otel__pb_writer *w, const struct otel_thread_ctx_process_attr *a)
{
	switch (a->type) {
	case OTEL_THREAD_CTX_PROCESS_STRING:
		/* Set in a oneof: written even when empty. */
		otel__pb_put_len_field(w, ANY_VALUE_STRING, a->string, string_length(a));
		break;
	case OTEL_THREAD_CTX_PROCESS_BOOL:
		otel__pb_put_varint_field(w, ANY_VALUE_BOOL, a->bool_value != 0);
		break;
	case OTEL_THREAD_CTX_PROCESS_INT:
		otel__pb_put_varint_field(w, ANY_VALUE_INT, (uint64_t)a->int_value);
		break;
	default: {
		uint64_t bits;

		memcpy(&bits, &a->double_value, sizeof(bits));
		otel__pb_put_i64_field(w, ANY_VALUE_DOUBLE, bits);
		break;
	}
	}
}

static size_t key_value_size(size_t key_len, size_t value_size)
{
	return otel__pb_len_field_size(KEY_VALUE_KEY, key_len) +
	       otel__pb_len_field_size(KEY_VALUE_VALUE, value_size);
}

/* One KeyValue per attribute, each as field `field`: the body of a
 * Resource message (RESOURCE_ATTRIBUTES), or entries of
 * ProcessContext.attributes (PROCESS_CONTEXT_ATTRIBUTES). */
static void put_attrs(struct otel__pb_writer *w, uint32_t field,
		      const struct otel_thread_ctx_process_attr *attrs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		size_t key_len = strlen(attrs[i].key);
		size_t value_size = any_value_size(&attrs[i]);

		otel__pb_put_len_header(w, field, key_value_size(key_len, value_size));
		otel__pb_put_len_field(w, KEY_VALUE_KEY, attrs[i].key, key_len);
		otel__pb_put_len_header(w, KEY_VALUE_VALUE, value_size);
		put_any_value(w, &attrs[i]);
	}
}

/* The ArrayValue of the first `keys` key names. */
static size_t key_map_array_size(unsigned int keys)
{
	size_t n = 0, len;

	for (unsigned int i = 0; i < keys; i++) {
		otel__key_at(i, &len);
		n += otel__pb_len_field_size(ARRAY_VALUE_VALUES,
					     otel__pb_len_field_size(ANY_VALUE_STRING, len));
	}
	return n;
}

static void put_key_map(struct otel__pb_writer *w, unsigned int keys)
{
	size_t array = key_map_array_size(keys);
	size_t value = otel__pb_len_field_size(ANY_VALUE_ARRAY, array);
	size_t key_len = sizeof(OTEL_THREAD_CTX_PROCESS_ATTRIBUTE_KEY_MAP_KEY) - 1;

	otel__pb_put_len_header(w, PROCESS_CONTEXT_ATTRIBUTES, key_value_size(key_len, value));
	otel__pb_put_len_field(w, KEY_VALUE_KEY, OTEL_THREAD_CTX_PROCESS_ATTRIBUTE_KEY_MAP_KEY, key_len);
	otel__pb_put_len_header(w, KEY_VALUE_VALUE, value);
	otel__pb_put_len_header(w, ANY_VALUE_ARRAY, array);
	for (unsigned int i = 0; i < keys; i++) {
		size_t len;
		const char *name = otel__key_at(i, &len);

		otel__pb_put_len_header(w, ARRAY_VALUE_VALUES,
					otel__pb_len_field_size(ANY_VALUE_STRING, len));
		otel__pb_put_len_field(w, ANY_VALUE_STRING, name, len);
	}
}

static const char *schema_name(int which)
{
	return which == OTEL_THREAD_CTX_PROCESS_SCHEMA_TLS_V1 ?
		       OTEL_THREAD_CTX_PROCESS_SCHEMA_VERSION_TLS_V1 :
		       OTEL_THREAD_CTX_PROCESS_SCHEMA_VERSION;
}

static void put_schema_version(struct otel__pb_writer *w)
{
	const char *version = schema_name(schema);
	size_t key_len = sizeof(OTEL_THREAD_CTX_PROCESS_SCHEMA_VERSION_KEY) - 1;
	size_t str_len = strlen(version);
	size_t value = otel__pb_len_field_size(ANY_VALUE_STRING, str_len);

	otel__pb_put_len_header(w, PROCESS_CONTEXT_ATTRIBUTES, key_value_size(key_len, value));
	otel__pb_put_len_field(w, KEY_VALUE_KEY, OTEL_THREAD_CTX_PROCESS_SCHEMA_VERSION_KEY, key_len);
	otel__pb_put_len_header(w, KEY_VALUE_VALUE, value);
	otel__pb_put_len_field(w, ANY_VALUE_STRING, version, str_len);
}

/* The whole ProcessContext: the resource, this library's two threadlocal.*
 * entries, then the caller's own entries of ProcessContext.attributes. */
static void put_process_context(struct otel__pb_writer *w, const uint8_t *resource,
				size_t resource_size, const uint8_t *extra, size_t extra_size,
				unsigned int keys)
{
	otel__pb_put_len_field(w, PROCESS_CONTEXT_RESOURCE, resource, resource_size);
	put_schema_version(w);
	put_key_map(w, keys);
	otel__pb_put_raw(w, extra, extra_size);
}

/* Encodes a payload into new memory, from the encoded resource and
 * attributes.  E2BIG, ENOMEM. */
static int build_payload(const uint8_t *resource, size_t resource_size, const uint8_t *extra,
			 size_t extra_size, unsigned int keys, uint8_t **out, uint32_t *out_len)
{
	struct otel__pb_writer w = otel__pb_measure();
	size_t size;
	uint8_t *buf;

	put_process_context(&w, resource, resource_size, extra, extra_size, keys);
	size = w.len;
	if (size > OTEL_THREAD_CTX_PROCESS_PAYLOAD_MAX)
		return OTEL_THREAD_CTX_E2BIG;
	buf = malloc(size);
	if (buf == NULL)
		return OTEL_THREAD_CTX_ENOMEM;
	w = otel__pb_into(buf, size);
	put_process_context(&w, resource, resource_size, extra, extra_size, keys);
	if (w.overflow || w.len != size) {
		/* Measuring and writing disagree: never expected. */
		free(buf);
		return OTEL_THREAD_CTX_ENOMEM;
	}
	*out = buf;
	*out_len = (uint32_t)size;
	return OTEL_THREAD_CTX_OK;
}

struct key_ref {
	const char *key;
	size_t len;
};

static int key_ref_cmp(const void *a, const void *b)
{
	const struct key_ref *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->key, y->key, n);

	if (c != 0)
		return c;
	return x->len < y->len ? -1 : x->len > y->len;
}

/* Duplicate keys in attrs (already checked one by one)?  EATTR, ENOMEM. */
static int check_unique(const struct otel_thread_ctx_process_attr *attrs, size_t n)
{
	struct key_ref *refs;
	int err = OTEL_THREAD_CTX_OK;

	if (n < 2)
		return OTEL_THREAD_CTX_OK;
	refs = malloc(n * sizeof(*refs));
	if (refs == NULL)
		return OTEL_THREAD_CTX_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		refs[i].key = attrs[i].key;
		refs[i].len = strlen(attrs[i].key);
	}
	qsort(refs, n, sizeof(*refs), key_ref_cmp);
	for (size_t i = 1; i < n && err == OTEL_THREAD_CTX_OK; i++) {
		if (key_ref_cmp(&refs[i - 1], &refs[i]) == 0)
			err = OTEL_THREAD_CTX_EATTR;
	}
	free(refs);
	return err;
}

/* The namespace of this library's own ProcessContext.attributes entries
 * (OTEP 4947): the caller's may not use it. */
#define THREADLOCAL_PREFIX "threadlocal."

/* Checks the caller's attributes and encodes them as fields `field`
 * (put_attrs()).  *out is NULL when there are none. */
static int encode_attrs(const struct otel_thread_ctx_process_attr *attrs, size_t n, uint32_t field,
			uint8_t **out, size_t *out_len)
{
	struct otel__pb_writer w = otel__pb_measure();
	size_t total = 0;
	uint8_t *buf;
	int err;

	if (attrs == NULL && n != 0)
		return OTEL_THREAD_CTX_ENULL;
	for (size_t i = 0; i < n; i++) {
		const struct otel_thread_ctx_process_attr *a = &attrs[i];
		size_t key_len;

		if (a->key == NULL)
			return OTEL_THREAD_CTX_ENULL;
		key_len = strnlen(a->key, OTEL_THREAD_CTX_PROCESS_PAYLOAD_MAX + 1);
		if (key_len == 0 || !otel__utf8_valid(a->key, key_len))
			return OTEL_THREAD_CTX_EATTR;
		if (field == PROCESS_CONTEXT_ATTRIBUTES &&
		    strncmp(a->key, THREADLOCAL_PREFIX, strlen(THREADLOCAL_PREFIX)) == 0)
			return OTEL_THREAD_CTX_EATTR;
		switch (a->type) {
		case OTEL_THREAD_CTX_PROCESS_STRING: {
			size_t len;

			if (a->string == NULL)
				return OTEL_THREAD_CTX_ENULL;
			len = a->length != 0 ? a->length :
					       strnlen(a->string, OTEL_THREAD_CTX_PROCESS_PAYLOAD_MAX + 1);
			if (len > OTEL_THREAD_CTX_PROCESS_PAYLOAD_MAX || key_len > OTEL_THREAD_CTX_PROCESS_PAYLOAD_MAX)
				return OTEL_THREAD_CTX_E2BIG;
			if (!otel__utf8_valid(a->string, len))
				return OTEL_THREAD_CTX_EUTF8;
			break;
		}
		case OTEL_THREAD_CTX_PROCESS_BOOL:
		case OTEL_THREAD_CTX_PROCESS_INT:
		case OTEL_THREAD_CTX_PROCESS_DOUBLE:
			if (key_len > OTEL_THREAD_CTX_PROCESS_PAYLOAD_MAX)
				return OTEL_THREAD_CTX_E2BIG;
			break;
		default:
			return OTEL_THREAD_CTX_EATTR;
		}
		/* Every piece is bounded, so this cannot wrap. */
		total += otel__pb_len_field_size(field, key_value_size(key_len, any_value_size(a)));
		if (total > OTEL_THREAD_CTX_PROCESS_PAYLOAD_MAX)
			return OTEL_THREAD_CTX_E2BIG;
	}
	err = check_unique(attrs, n);
	if (err)
		return err;

	put_attrs(&w, field, attrs, n);
	*out = NULL;
	*out_len = w.len;
	if (w.len == 0)
		return OTEL_THREAD_CTX_OK;
	buf = malloc(w.len);
	if (buf == NULL)
		return OTEL_THREAD_CTX_ENOMEM;
	w = otel__pb_into(buf, *out_len);
	put_attrs(&w, field, attrs, n);
	if (w.overflow || w.len != *out_len) {
		free(buf);
		return OTEL_THREAD_CTX_ENOMEM;
	}
	*out = buf;
	return OTEL_THREAD_CTX_OK;
}

/* --- The mapping ---------------------------------------------------------- */

/* A new, strictly greater, non-zero timestamp. */
static uint64_t next_published_at(void)
{
	struct timespec ts;
	uint64_t now = 0;

	if (clock_gettime(CLOCK_BOOTTIME, &ts) == 0 || clock_gettime(CLOCK_MONOTONIC, &ts) == 0)
		now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	if (now <= last_published_at)
		now = last_published_at + 1;
	last_published_at = now;
	return now;
}

static size_t page_size(void)
{
	long page = sysconf(_SC_PAGESIZE);

	return page > 0 ? (size_t)page : 4096;
}

/* Names the mapping; the result matters only for an anonymous one. */
static bool name_mapping(void *at, size_t size)
{
	return prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, (unsigned long)at, (unsigned long)size,
		     (unsigned long)OTEL_THREAD_CTX_PROCESS_MAPPING_NAME) == 0;
}

/* A one-page mapping: a sealed memfd, else anonymous memory.  Both are
 * left out of children (MADV_DONTFORK).  ENOMEM, ESYS (errno kept). */
static int create_mapping(void **out, size_t *out_size, bool *memfd)
{
	size_t size = page_size();
	void *p = MAP_FAILED;
	int fd, saved;

	fd = memfd_create(OTEL_THREAD_CTX_PROCESS_MAPPING_NAME,
			  MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_NOEXEC_SEAL);
	if (fd < 0) /* Kernels before 6.3 reject MFD_NOEXEC_SEAL. */
		fd = memfd_create(OTEL_THREAD_CTX_PROCESS_MAPPING_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd >= 0) {
		if (ftruncate(fd, (off_t)size) == 0) {
			/* The size is final; nobody can shrink it under us. */
			(void)fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
			p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		}
		close(fd);
	}
	*memfd = p != MAP_FAILED;
	if (p == MAP_FAILED) {
		p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return OTEL_THREAD_CTX_ENOMEM;
	}
	if (madvise(p, size, MADV_DONTFORK) != 0) {
		saved = errno;
		munmap(p, size);
		errno = saved;
		return OTEL_THREAD_CTX_ESYS;
	}
	*out = p;
	*out_size = size;
	return OTEL_THREAD_CTX_OK;
}

/*
 * Creates the mapping and publishes `buf` in it.  The header is written
 * with the timestamp last, then the mapping is named (always: eBPF readers
 * may watch prctl(); for an anonymous mapping the name is what makes it
 * findable, so without it there is no publication: EMAP).
 * Called with the lock held; changes the state only on success.
 */
static int map_and_publish(const uint8_t *buf, uint32_t len)
{
	struct otel_thread_ctx_process_header *h;
	size_t size;
	bool memfd;
	void *p;
	int err = create_mapping(&p, &size, &memfd);

	if (err)
		return err;
	h = p;
	memcpy(h->signature, OTEL_THREAD_CTX_PROCESS_SIGNATURE, sizeof(h->signature));
	h->version = OTEL_THREAD_CTX_PROCESS_VERSION;
	__atomic_store_n(&h->payload_size, len, __ATOMIC_RELAXED);
	__atomic_store_n(&h->payload, (uint64_t)(uintptr_t)buf, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&h->monotonic_published_at_ns, next_published_at(), __ATOMIC_RELAXED);
	if (!name_mapping(p, size) && !memfd) {
		__atomic_store_n(&h->monotonic_published_at_ns, 0, __ATOMIC_RELAXED);
		munmap(p, size);
		return OTEL_THREAD_CTX_EMAP;
	}
	header = h;
	mapping_size = size;
	mapping_memfd = memfd;
	publisher_pid = getpid();
	return OTEL_THREAD_CTX_OK;
}

/*
 * A child made without the fork handlers (_Fork(), or handlers that could
 * not be installed) has no mapping: it publishes nothing.  Lock held.
 */
static void forget_if_forked(void)
{
	if (header != NULL && publisher_pid != getpid())
		header = NULL;
}

static void free_buffers(void)
{
	free(payload);
	free(payload_prev);
	free(resource_pb);
	free(extra_pb);
	payload = payload_prev = resource_pb = extra_pb = NULL;
	payload_len = 0;
	resource_len = extra_len = 0;
}

/* The update protocol: timestamp 0, fence, new payload, fence, new
 * timestamp.  Takes ownership of buf.  Lock held, header published. */
static void switch_payload(uint8_t *buf, uint32_t len)
{
	struct otel_thread_ctx_process_header *h = header;
	uint64_t published_at = next_published_at();

	__atomic_store_n(&h->monotonic_published_at_ns, 0, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&h->payload, (uint64_t)(uintptr_t)buf, __ATOMIC_RELAXED);
	__atomic_store_n(&h->payload_size, len, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&h->monotonic_published_at_ns, published_at, __ATOMIC_RELAXED);
	/* Readers that loaded the old pointer just before still find the old
	 * bytes; the one before it is gone. */
	free(payload_prev);
	payload_prev = payload;
	payload = buf;
	payload_len = len;
	(void)name_mapping(h, mapping_size);
}

/* The registry's hook while the context is published: a new key is
 * published with the others before it becomes visible (keys.h). */
static int keys_changed(unsigned int keys)
{
	uint8_t *buf;
	uint32_t len;
	int err;

	forget_if_forked();
	if (header == NULL) {
		/* Not published: the key is refused when no payload could hold
		 * the key map, lest the registry, which never forgets, make
		 * every later publication fail. */
		struct otel__pb_writer w = otel__pb_measure();

		put_process_context(&w, NULL, 0, NULL, 0, keys);
		return w.len > OTEL_THREAD_CTX_PROCESS_PAYLOAD_MAX ? OTEL_THREAD_CTX_E2BIG
								     : OTEL_THREAD_CTX_OK;
	}
	err = build_payload(resource_pb, resource_len, extra_pb, extra_len, keys, &buf, &len);
	if (err)
		return err;
	switch_payload(buf, len);
	return OTEL_THREAD_CTX_OK;
}

/* The registry asks before it takes a key, published or not. */
__attribute__((constructor)) static void watch_keys(void)
{
	otel__keys_on_change(keys_changed);
}

/* --- fork ------------------------------------------------------------------ */

/*
 * In the child of a fork(), lock held (keys.h).  The child has the parent's
 * memory but not its mapping (MADV_DONTFORK).  By default it publishes
 * nothing, so that it never shows the parent's service.instance.id (OTEP
 * 4719, "Process Forking"); a child that starts its own SDK publishes its
 * own.  With OTEL_THREAD_CTX_PROCESS_FORK_REPUBLISH it publishes the same
 * payload, which it has at the same address, in a mapping of its own.  Only
 * system calls here (no allocation): the child of a multi-threaded process
 * may run nothing else.
 */
static void after_fork_child(void)
{
	unsigned char resident[1];

	if (header == NULL)
		return;
	/*
	 * Where MADV_DONTFORK is not honoured (qemu-user ignores it), the
	 * parent's shared mapping is here too, and readers would find it.
	 * Unmap it, but only if it is mapped (mincore) and still holds our
	 * header: a fork handler that ran before this one may have mapped
	 * something else into the hole.
	 */
	if (mapping_size == page_size() && mincore(header, mapping_size, resident) == 0 &&
	    memcmp(header->signature, OTEL_THREAD_CTX_PROCESS_SIGNATURE, 8) == 0 &&
	    header->payload == (uint64_t)(uintptr_t)payload)
		munmap(header, mapping_size);
	header = NULL;
	mapping_size = 0; /* the buffers stay for the next publish to free */
	if (on_fork == OTEL_THREAD_CTX_PROCESS_FORK_REPUBLISH &&
	    map_and_publish(payload, payload_len) != OTEL_THREAD_CTX_OK)
		mapping_size = 0;
}

/* --- API -------------------------------------------------------------------- */

/* What a publication holds besides its resource: options and the
 * caller's ProcessContext.attributes, encoded. */
struct publication {
	int schema;
	int on_fork;
	uint8_t *extra;
	size_t extra_len;
};

/* Every byte of the options is a field: a caller built against another
 * version cannot leave bytes this one reads uninitialised. */
_Static_assert(sizeof(struct otel_thread_ctx_process_options) ==
		       sizeof(size_t) + 2 * sizeof(int) +
			       sizeof(const struct otel_thread_ctx_process_attr *) + sizeof(size_t),
	       "no padding in the process options: every byte is a field");

/* Checks options (NULL: the defaults) and encodes their attributes into
 * *p.  EOPTIONS, or an error of encode_attrs(). */
static int read_options(const struct otel_thread_ctx_process_options *options,
			struct publication *p)
{
	p->schema = OTEL_THREAD_CTX_PROCESS_SCHEMA_TLSDESC_V1_DEV;
	p->on_fork = OTEL_THREAD_CTX_PROCESS_FORK_DROP;
	p->extra = NULL;
	p->extra_len = 0;
	if (options == NULL)
		return OTEL_THREAD_CTX_OK;
	if (!otel__options_valid(options, sizeof(*options)))
		return OTEL_THREAD_CTX_EOPTIONS;
	if (OTEL__OPTION_GIVEN(options, struct otel_thread_ctx_process_options, schema))
		p->schema = options->schema;
	if (OTEL__OPTION_GIVEN(options, struct otel_thread_ctx_process_options, on_fork))
		p->on_fork = options->on_fork;
	if ((p->schema != OTEL_THREAD_CTX_PROCESS_SCHEMA_TLSDESC_V1_DEV &&
	     p->schema != OTEL_THREAD_CTX_PROCESS_SCHEMA_TLS_V1) ||
	    (p->on_fork != OTEL_THREAD_CTX_PROCESS_FORK_DROP &&
	     p->on_fork != OTEL_THREAD_CTX_PROCESS_FORK_REPUBLISH))
		return OTEL_THREAD_CTX_EOPTIONS;
	/* attributes and attribute_count come together. */
	if (!OTEL__OPTION_GIVEN(options, struct otel_thread_ctx_process_options,
				attribute_count))
		return OTEL_THREAD_CTX_OK;
	return encode_attrs(options->attributes, options->attribute_count,
			    PROCESS_CONTEXT_ATTRIBUTES, &p->extra, &p->extra_len);
}

/*
 * Publishes (`update` false) or replaces (true) the context: the resource,
 * and with options (or always, when publishing) the schema, fork policy
 * and attributes.  Nothing changes on error.
 */
static int publish(const struct otel_thread_ctx_process_attr *resource, size_t count,
		   const struct otel_thread_ctx_process_options *options, bool update)
{
	/* An update without options keeps what the publication holds. */
	const bool keep = update && options == NULL;
	struct publication p;
	int old_schema, err;
	uint8_t *res, *buf;
	size_t res_len;
	uint32_t len;

	/* A missing pointer before what the options get wrong. */
	if (resource == NULL && count > 0)
		return OTEL_THREAD_CTX_ENULL;
	err = read_options(options, &p);
	if (err)
		return err;
	err = encode_attrs(resource, count, RESOURCE_ATTRIBUTES, &res, &res_len);
	if (err) {
		free(p.extra);
		return err;
	}
	if (!update && !otel__keys_fork_safe()) {
		err = OTEL_THREAD_CTX_ENOMEM;
		goto out;
	}
	otel__keys_lock();
	forget_if_forked();
	if (update != (header != NULL)) {
		err = update ? OTEL_THREAD_CTX_ENOTPUBLISHED : OTEL_THREAD_CTX_EPUBLISHED;
		goto unlock;
	}
	old_schema = schema;
	if (!keep)
		schema = p.schema;
	err = build_payload(res, res_len, keep ? extra_pb : p.extra, keep ? extra_len : p.extra_len,
			    otel_thread_ctx_key_count(), &buf, &len);
	if (err == OTEL_THREAD_CTX_OK) {
		if (update) {
			switch_payload(buf, len);
		} else {
			err = map_and_publish(buf, len);
			if (err)
				free(buf);
		}
	}
	if (err) {
		schema = old_schema;
		goto unlock;
	}
	if (!update) {
		/* Left over from a publication a forked child did not
		 * recreate. */
		free(payload);
		free(payload_prev);
		payload = buf;
		payload_len = len;
		payload_prev = NULL;
		otel__keys_on_change(keys_changed);
		otel__keys_on_fork_child(after_fork_child);
	}
	free(resource_pb);
	resource_pb = res;
	resource_len = res_len;
	res = NULL;
	if (!keep) {
		free(extra_pb);
		extra_pb = p.extra;
		extra_len = p.extra_len;
		p.extra = NULL;
		on_fork = p.on_fork;
	}
unlock:
	otel__keys_unlock();
out:
	free(res);
	free(p.extra);
	return err;
}

OTEL_EXPORT int otel_thread_ctx_process_publish_with(
	const struct otel_thread_ctx_process_attr *resource, size_t count,
	const struct otel_thread_ctx_process_options *options)
{
	return publish(resource, count, options, false);
}

OTEL_EXPORT int otel_thread_ctx_process_publish(const struct otel_thread_ctx_process_attr *resource,
						size_t count)
{
	return publish(resource, count, NULL, false);
}

OTEL_EXPORT int otel_thread_ctx_process_update_with(
	const struct otel_thread_ctx_process_attr *resource, size_t count,
	const struct otel_thread_ctx_process_options *options)
{
	return publish(resource, count, options, true);
}

OTEL_EXPORT int otel_thread_ctx_process_update(const struct otel_thread_ctx_process_attr *resource,
					size_t count)
{
	return publish(resource, count, NULL, true);
}

OTEL_EXPORT int otel_thread_ctx_process_unpublish(void)
{
	otel__keys_lock();
	forget_if_forked();
	if (header != NULL) {
		__atomic_store_n(&header->monotonic_published_at_ns, 0, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		munmap(header, mapping_size);
		header = NULL;
		mapping_size = 0;
	}
	free_buffers();
	otel__keys_unlock();
	return OTEL_THREAD_CTX_OK;
}

OTEL_EXPORT int otel_thread_ctx_process_query(struct otel_thread_ctx_process_info *info)
{
	if (info == NULL)
		return OTEL_THREAD_CTX_ENULL;
	memset(info, 0, sizeof(*info));
	otel__keys_lock();
	forget_if_forked();
	if (header != NULL) {
		info->published = 1;
		info->memfd = mapping_memfd;
		info->mapping = header;
		info->mapping_size = mapping_size;
		info->monotonic_published_at_ns =
			__atomic_load_n(&header->monotonic_published_at_ns, __ATOMIC_RELAXED);
		info->payload_size = payload_len;
		info->payload = payload;
	}
	otel__keys_unlock();
	return OTEL_THREAD_CTX_OK;
}

OTEL_EXPORT int otel_thread_ctx_process_copy(struct otel_thread_ctx_process_header *out,
					      void **copy)
{
	int err = OTEL_THREAD_CTX_ENOTPUBLISHED;

	if (out == NULL || copy == NULL)
		return OTEL_THREAD_CTX_ENULL;
	otel__keys_lock();
	forget_if_forked();
	if (header != NULL) {
		void *p = malloc(payload_len);

		err = OTEL_THREAD_CTX_ENOMEM;
		if (p != NULL) {
			memcpy(out, header, sizeof(*out));
			memcpy(p, payload, payload_len);
			*copy = p;
			err = OTEL_THREAD_CTX_OK;
		}
	}
	otel__keys_unlock();
	return err;
}
