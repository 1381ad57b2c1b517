/* SPDX-License-Identifier: Apache-2.0 */
/* The text of every error code of the reading side (otel_thread_ctx_inspect.h). */
#include <errno.h>

#include "inspect.h"

/* The codes named after an errno are its negation. */
_Static_assert(OTEL_THREAD_CTX_EPERM == -EPERM, "EPERM");
_Static_assert(OTEL_THREAD_CTX_ENOENT == -ENOENT, "ENOENT");
_Static_assert(OTEL_THREAD_CTX_ESRCH == -ESRCH, "ESRCH");
_Static_assert(OTEL_THREAD_CTX_EAGAIN == -EAGAIN, "EAGAIN");
_Static_assert(OTEL_THREAD_CTX_EFAULT == -EFAULT, "EFAULT");
_Static_assert(OTEL_THREAD_CTX_ETIMEDOUT == -ETIMEDOUT, "ETIMEDOUT");

OTEL_EXPORT const char *otel_thread_ctx_inspect_strerror(int error)
{
	switch (error) {
	case OTEL_THREAD_CTX_ESRCH:
		return "no such process";
	case OTEL_THREAD_CTX_EPERM:
		return "not permitted to read the process (ptrace access check), or process_vm_readv() unavailable";
	case OTEL_THREAD_CTX_ENOENT:
		return "the process publishes no process context";
	case OTEL_THREAD_CTX_EFORMAT:
		return "the OTEL_CTX mapping has an invalid header";
	case OTEL_THREAD_CTX_EAGAIN:
		return "the process context changed during every read attempt";
	case OTEL_THREAD_CTX_EFAULT:
		return "the process context payload cannot be read";
	case OTEL_THREAD_CTX_EDECODE:
		return "the process context payload is not a valid ProcessContext message";
	case OTEL_THREAD_CTX_ENOSLOT:
		return "no loaded module of the process defines otel_thread_ctx_v1";
	case OTEL_THREAD_CTX_ETIMEDOUT:
		return "the thread did not stop for the read in time";
	case OTEL_THREAD_CTX_EMODEL:
		return "the slot is reached through a TLS access model the inspector does not support";
	}
	return otel__strerror(error);
}
