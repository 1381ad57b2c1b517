/* SPDX-License-Identifier: Apache-2.0 */
/* Loop sizes from the environment, and skip(): what every test program
 * uses, with Check or with tests/lib/check-lite.h. */
#ifndef OTEL_TESTS_TESTENV_H
#define OTEL_TESTS_TESTENV_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* Check has no skip: a program that cannot test here says why and ends with
 * 77, which Meson reports as SKIP. */
__attribute__((format(printf, 1, 2), noreturn)) static inline void skip(const char *fmt, ...)
{
	va_list ap;

	printf("SKIP: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	exit(77);
}

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
