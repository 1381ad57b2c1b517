/* SPDX-License-Identifier: Apache-2.0 */
/* The reader side: copying, checking and decoding records, by the rules of
 * the format.  Everything here is async-signal-safe. */
#include <string.h>

#include "copy.h"
#include "internal.h"
#ifndef OTEL__NOOP
#include "tls.h"
#endif


/* Copies a header and what attrs_data_size says follows it, no more than
 * `avail` bytes of attributes and never more than the record holds.  `src`
 * is taken as bytes: a record to decode may lie at any address, and a
 * struct pointer to it would claim the struct's alignment. */
__attribute__((always_inline)) static inline int
copy_record(const uint8_t *src, size_t avail, struct otel_thread_ctx_record *out)
{
	size_t size;

	memcpy(out, src, OTEL_THREAD_CTX_RECORD_HEADER_SIZE);
	if (out->valid != 1)
		return OTEL_THREAD_CTX_EINVALID;
	size = out->attrs_data_size;
	if (size > avail)
		size = avail;
	if (size > OTEL_THREAD_CTX_ATTRS_MAX)
		size = OTEL_THREAD_CTX_ATTRS_MAX;
	if (size != 0)
		otel__copy_bytes(out->attrs_data, src + OTEL_THREAD_CTX_RECORD_HEADER_SIZE, size);
	out->attrs_data_size = (uint16_t)size;
	return OTEL_THREAD_CTX_OK;
}

OTEL_EXPORT int otel_thread_ctx_read(struct otel_thread_ctx_record *out)
{
	const struct otel_thread_ctx_record *rec;

	if (out == NULL)
		return OTEL_THREAD_CTX_ENULL;
#ifdef OTEL__NOOP
	/* The no-op build (src/noop.c) never publishes. */
	rec = otel_thread_ctx_v1;
#else
	rec = __atomic_load_n(otel__slot_in_effect(), __ATOMIC_RELAXED);
#endif
	if (rec == NULL)
		return OTEL_THREAD_CTX_ENOCTX;
	return copy_record((const uint8_t *)rec, OTEL_THREAD_CTX_ATTRS_MAX, out);
}

OTEL_EXPORT int otel_thread_ctx_record_decode(const void *bytes, size_t len,
					      struct otel_thread_ctx_record *out)
{
	if (bytes == NULL || out == NULL)
		return OTEL_THREAD_CTX_ENULL;
	if (len < OTEL_THREAD_CTX_RECORD_HEADER_SIZE)
		return OTEL_THREAD_CTX_ETRUNCATED;
	return copy_record(bytes, len - OTEL_THREAD_CTX_RECORD_HEADER_SIZE, out);
}

/* The entry at *pos, if it is complete; advances *pos past it. */
static int entry_at(const struct otel_thread_ctx_record *rec, size_t *pos,
		    struct otel_thread_ctx_attr *out)
{
	size_t size = rec->attrs_data_size, at = *pos;

	if (size > OTEL_THREAD_CTX_ATTRS_MAX)
		size = OTEL_THREAD_CTX_ATTRS_MAX;
	if (at + 2 > size || at + 2 + rec->attrs_data[at + 1] > size)
		return 0;
	out->key = rec->attrs_data[at];
	out->len = rec->attrs_data[at + 1];
	out->value = rec->attrs_data + at + 2;
	*pos = at + 2 + out->len;
	return 1;
}

OTEL_EXPORT void otel_thread_ctx_attr_iter_init_map(struct otel_thread_ctx_attr_iter *it,
						    const struct otel_thread_ctx_record *rec,
						    unsigned int key_count)
{
	if (it == NULL)
		return;
	it->rec = rec;
	it->pos = 0;
	it->keys = key_count;
	it->unmapped = 0;
}

OTEL_EXPORT void otel_thread_ctx_attr_iter_init(struct otel_thread_ctx_attr_iter *it,
						const struct otel_thread_ctx_record *rec)
{
	otel_thread_ctx_attr_iter_init_map(it, rec, otel_thread_ctx_key_count());
}

OTEL_EXPORT int otel_thread_ctx_attr_iter_next(struct otel_thread_ctx_attr_iter *it,
					       struct otel_thread_ctx_attr *out)
{
	struct otel_thread_ctx_attr a, later;

	if (it == NULL || it->rec == NULL || out == NULL)
		return OTEL_THREAD_CTX_ENULL;
	while (entry_at(it->rec, &it->pos, &a)) {
		size_t pos = it->pos;
		int overridden = 0;

		while (!overridden && entry_at(it->rec, &pos, &later))
			overridden = later.key == a.key;
		if (overridden)
			continue;
		/* Readers ignore an index the key map does not name. */
		if (a.key >= it->keys) {
			it->unmapped++;
			continue;
		}
		*out = a;
		return OTEL_THREAD_CTX_OK;
	}
	return OTEL_THREAD_CTX_ENOATTR;
}

OTEL_EXPORT int otel_thread_ctx_record_attr(const struct otel_thread_ctx_record *rec,
					    unsigned int key, struct otel_thread_ctx_attr *out)
{
	struct otel_thread_ctx_attr a;
	size_t pos = 0;
	int rc = OTEL_THREAD_CTX_ENOATTR;

	if (rec == NULL || out == NULL)
		return OTEL_THREAD_CTX_ENULL;
	if (key >= otel_thread_ctx_key_count())
		return OTEL_THREAD_CTX_ENOATTR;
	while (entry_at(rec, &pos, &a)) {
		if (a.key == key) {
			*out = a;
			rc = OTEL_THREAD_CTX_OK;
		}
	}
	return rc;
}
