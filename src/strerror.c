/* SPDX-License-Identifier: Apache-2.0 */
/* The text of every error code. */
#include "internal.h"

OTEL_EXPORT const char *otel_thread_ctx_strerror(int error)
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
	case OTEL_THREAD_CTX_EBUSY:
		return "the context is attached to another thread";
	case OTEL_THREAD_CTX_EPENDING:
		return "context has uncommitted edits; use otel_thread_ctx_update_attach";
	case OTEL_THREAD_CTX_ENOMEM:
		return "out of memory";
	case OTEL_THREAD_CTX_ETHREAD:
		return "thread-exit cleanup is unavailable (no pthread key)";
	case OTEL_THREAD_CTX_ENOCTX:
		return "the thread publishes no context";
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
	case OTEL_THREAD_CTX_ENOKEY:
		return "no attribute key of that name is registered";
	case OTEL_THREAD_CTX_EPUBLISHED:
		return "the process context is already published";
	case OTEL_THREAD_CTX_ENOTPUBLISHED:
		return "the process context is not published";
	case OTEL_THREAD_CTX_E2BIG:
		return "the process context payload would exceed 256 KiB";
	case OTEL_THREAD_CTX_EATTR:
		return "invalid resource attribute (empty, duplicate or non-UTF-8 key, or unsupported type)";
	case OTEL_THREAD_CTX_EMAP:
		return "no discoverable mapping: memfd_create() fails and anonymous mappings cannot be named";
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
	case OTEL_THREAD_CTX_ESYS:
		return "a system call failed (see errno)";
	case OTEL_THREAD_CTX_EDUPKEY:
		return "the same attribute key is given twice";
	case OTEL_THREAD_CTX_ENOSLOT:
		return "no loaded module of the process defines otel_thread_ctx_v1";
	case OTEL_THREAD_CTX_EMODEL:
		return "the slot is reached through a TLS access model the inspector does not support";
	case OTEL_THREAD_CTX_EOPTIONS:
		return "invalid context options (size, unknown flag, or attribute capacity above 612 bytes)";
	}
	return "unknown otel-thread-ctx error";
}
