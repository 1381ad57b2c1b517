/* SPDX-License-Identifier: Apache-2.0 */
/* Records by the format's rules: decoding one copied from anywhere, and
 * walking its attributes.  Async-signal-safe. */
#include "format.h"
#include "record.h"

int otel__record_decode(const void *bytes, size_t len, struct otel_thread_ctx_record *out)
{
	if (bytes == NULL || out == NULL)
		return OTEL_THREAD_CTX_ENULL;
	if (len < OTEL_THREAD_CTX_RECORD_HEADER_SIZE)
		return OTEL_THREAD_CTX_ETRUNCATED;
	return otel__record_copy(bytes, len - OTEL_THREAD_CTX_RECORD_HEADER_SIZE, out);
}

int otel__attr_entry_at(const struct otel_thread_ctx_record *rec, size_t *pos,
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

void otel__attr_iter_init_map(struct otel_thread_ctx_attr_iter *it,
			      const struct otel_thread_ctx_record *rec, unsigned int key_count)
{
	if (it == NULL)
		return;
	it->rec = rec;
	it->pos = 0;
	it->keys = key_count;
	it->unmapped = 0;
}

int otel__attr_iter_next(struct otel_thread_ctx_attr_iter *it, struct otel_thread_ctx_attr *out)
{
	struct otel_thread_ctx_attr a, later;

	if (it == NULL || it->rec == NULL || out == NULL)
		return OTEL_THREAD_CTX_ENULL;
	while (otel__attr_entry_at(it->rec, &it->pos, &a)) {
		size_t pos = it->pos;
		int overridden = 0;

		while (!overridden && otel__attr_entry_at(it->rec, &pos, &later))
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
