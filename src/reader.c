/* SPDX-License-Identifier: Apache-2.0 */
/* The in-process reader: this thread's record; and the API over the format
 * layer (src/format/: error texts, decoding, attribute walks), with the
 * functions that name keys by this process's registry.  Everything here is async-signal-safe. */
#include <string.h>

#include "format.h"
#include "record.h"
#ifndef OTEL__NOOP
#include "tls.h"
#endif


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
	return otel__record_copy((const uint8_t *)rec, OTEL_THREAD_CTX_ATTRS_MAX, out);
}

OTEL_EXPORT const char *otel_thread_ctx_strerror(int error)
{
	return otel__strerror(error);
}

OTEL_EXPORT int otel_thread_ctx_record_decode(const void *bytes, size_t len,
					      struct otel_thread_ctx_record *out)
{
	return otel__record_decode(bytes, len, out);
}

OTEL_EXPORT void otel_thread_ctx_attr_iter_init_map(struct otel_thread_ctx_attr_iter *it,
						    const struct otel_thread_ctx_record *rec,
						    unsigned int key_count)
{
	otel__attr_iter_init_map(it, rec, key_count);
}

OTEL_EXPORT void otel_thread_ctx_attr_iter_init(struct otel_thread_ctx_attr_iter *it,
						const struct otel_thread_ctx_record *rec)
{
	otel__attr_iter_init_map(it, rec, otel_thread_ctx_key_count());
}

OTEL_EXPORT int otel_thread_ctx_attr_iter_next(struct otel_thread_ctx_attr_iter *it,
					       struct otel_thread_ctx_attr *out)
{
	return otel__attr_iter_next(it, out);
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
	while (otel__attr_entry_at(rec, &pos, &a)) {
		if (a.key == key) {
			*out = a;
			rc = OTEL_THREAD_CTX_OK;
		}
	}
	return rc;
}
