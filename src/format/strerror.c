/* SPDX-License-Identifier: Apache-2.0 */
/* The text of every error code of otel_thread_ctx.h. */
#include <errno.h>

#include "format.h"

/* The codes named after an errno are its negation (otel_thread_ctx.h). */
_Static_assert(OTEL_THREAD_CTX_E2BIG == -E2BIG, "E2BIG");
_Static_assert(OTEL_THREAD_CTX_ENOMEM == -ENOMEM, "ENOMEM");
_Static_assert(OTEL_THREAD_CTX_ENOSPC == -ENOSPC, "ENOSPC");

const char *otel__strerror(int error)
{
	switch (error) {
	case OTEL_THREAD_CTX_OK:
		return "success";
	case OTEL_THREAD_CTX_ENULL:
		return "a required pointer argument is NULL";
	case OTEL_THREAD_CTX_EIDS:
		return "trace and span ids must be set together, and trace flags need them";
	case OTEL_THREAD_CTX_EKEY:
		return "attribute key index is above 255";
	case OTEL_THREAD_CTX_EVALUE:
		return "attribute value is longer than 255 bytes";
	case OTEL_THREAD_CTX_EUTF8:
		return "attribute value is not valid UTF-8";
	case OTEL_THREAD_CTX_ENOSPC:
		return "attributes would exceed the capacity of the context (612 bytes unless created smaller)";
	case OTEL_THREAD_CTX_ENOMEM:
		return "out of memory";
	case OTEL_THREAD_CTX_ETHREAD:
		return "thread-exit cleanup is unavailable (no pthread key), or has already run on this thread";
	case OTEL_THREAD_CTX_ENESTED:
		return "a signal handler interrupted a publishing call on this thread: nothing changed";
	case OTEL_THREAD_CTX_EFULL:
		return "the pool holds records for 129,024 threads, all in use: publish once a thread exits";
	case OTEL_THREAD_CTX_ENOCTX:
		return "the thread publishes no context, or the context holds no record";
	case OTEL_THREAD_CTX_EINVALID:
		return "the record is marked invalid";
	case OTEL_THREAD_CTX_ETRUNCATED:
		return "fewer bytes than a record header";
	case OTEL_THREAD_CTX_ESLOT:
		return "a profiler would not find the slot this library writes (see the self-check's reason)";
	case OTEL_THREAD_CTX_ENAME:
		return "attribute key name is empty, longer than 255 bytes, or not valid UTF-8";
	case OTEL_THREAD_CTX_EKEYS:
		return "all 256 attribute key indices are taken";
	case OTEL_THREAD_CTX_EUNKNOWNKEY:
		return "no attribute key of that name is registered";
	case OTEL_THREAD_CTX_EPUBLISHED:
		return "the process context is already published";
	case OTEL_THREAD_CTX_ENOTPUBLISHED:
		return "the process context is not published";
	case OTEL_THREAD_CTX_E2BIG:
		return "the process context payload would exceed 65,536 bytes";
	case OTEL_THREAD_CTX_EATTR:
		return "invalid resource attribute (empty, duplicate or non-UTF-8 key, or unsupported type)";
	case OTEL_THREAD_CTX_EMAP:
		return "no discoverable mapping: memfd_create() fails and anonymous mappings cannot be named";
	case OTEL_THREAD_CTX_ESYS:
		return "a system call failed (see errno)";
	case OTEL_THREAD_CTX_EDUPKEY:
		return "the same attribute key is given twice";
	case OTEL_THREAD_CTX_EUNSUPPORTED:
		return "not supported: the library was built without thread-context support for this platform";
	case OTEL_THREAD_CTX_ENOATTR:
		return "no (more) attributes: the record has no attribute of that key, or the walk is over";
	case OTEL_THREAD_CTX_EOPTIONS:
		return "invalid options (size too small, a reserved or unknown byte not zero, or a value out of range)";
	}
	return "unknown otel-thread-ctx error";
}
