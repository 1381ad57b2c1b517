/* SPDX-License-Identifier: Apache-2.0 */
/* Loop sizes from the environment.  No Check: the programs that run where
 * Check cannot (musl, dlopen tests) include this too. */
#ifndef OTEL_TESTS_TESTENV_H
#define OTEL_TESTS_TESTENV_H

#include <stdlib.h>

/* A count from the environment (to shrink loops under valgrind or qemu),
 * else `fallback`. */
static inline unsigned long env_count(const char *name, unsigned long fallback)
{
	const char *s = getenv(name);
	char *end;
	unsigned long v;

	if (s == NULL || *s == '\0')
		return fallback;
	v = strtoul(s, &end, 10);
	return *end == '\0' && v > 0 ? v : fallback;
}

#endif /* OTEL_TESTS_TESTENV_H */
