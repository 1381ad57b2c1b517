/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Two callers that live in one process: one written against this project's
 * API (caller-native.c), one against the reference's
 * (caller-reference.c).  Each returns 0, or the line of the check that
 * failed.
 */
#ifndef TESTS_COMPAT_CALLERS_H
#define TESTS_COMPAT_CALLERS_H

/* Publishes service.name = service with otel_thread_ctx_process_publish(). */
int native_publish(const char *service);
/* The project's reader finds exactly that context in this process. */
int native_check(const char *service);
/* Unpublishes it; no OTEL_CTX mapping is left. */
int native_unpublish(void);

/* Publishes, reads back and drops through otel_process_ctx_*, checking that
 * the stand-in of the reference answered and that no mapping came or went. */
int reference_caller_run(const char *service);

#endif
