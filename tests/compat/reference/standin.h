/* SPDX-License-Identifier: Apache-2.0 */
/* What the stand-in of the reference implementation (standin.c) exports
 * besides the reference's four functions: how often each was called, and
 * the service name of the last publish, so that a caller can tell it
 * reached the stand-in. */
#ifndef TESTS_COMPAT_REFERENCE_STANDIN_H
#define TESTS_COMPAT_REFERENCE_STANDIN_H

enum standin_function {
	STANDIN_PUBLISH,
	STANDIN_DROP_CURRENT,
	STANDIN_READ,
	STANDIN_READ_DROP,
	STANDIN_FUNCTIONS,
};

/* Calls of one of the four functions so far. */
int standin_calls(enum standin_function which);
/* service_name of the last successful publish ("" before any). */
const char *standin_service_name(void);

#endif
