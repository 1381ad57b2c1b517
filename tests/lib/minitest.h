/* SPDX-License-Identifier: Apache-2.0 */
/* Checks for the test programs that cannot use Check (musl has no Check;
 * the loading-path programs must not bring a second copy of glibc's).  A
 * failed check prints where and why and ends the process with status 1;
 * skip() ends it with 77, which Meson reports as SKIP. */
#ifndef OTEL_TESTS_MINITEST_H
#define OTEL_TESTS_MINITEST_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define MT_SKIP 77

__attribute__((format(printf, 3, 4), noreturn)) static inline void
mt_fail(const char *file, int line, const char *fmt, ...)
{
	static int failing;
	va_list ap;

	/* The first failure is the one reported; a thread failing after it
	 * waits for the process to end. */
	if (__atomic_exchange_n(&failing, 1, __ATOMIC_ACQ_REL))
		for (;;)
			pause();
	fflush(stdout);
	fprintf(stderr, "FAIL %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
	/* From any thread, without running other threads' cleanup. */
	_exit(1);
}

__attribute__((format(printf, 1, 2), noreturn)) static inline void skip(const char *fmt, ...)
{
	va_list ap;

	printf("SKIP: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	exit(MT_SKIP);
}

/* CHECK(condition, printf-style explanation) */
#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond))                                                   \
			mt_fail(__FILE__, __LINE__, __VA_ARGS__);              \
	} while (0)

/* CHECK_OK(call): the call returns OTEL_THREAD_CTX_OK. */
#define CHECK_OK(call)                                                         \
	do {                                                                   \
		int mt_rc_ = (call);                                           \
		if (mt_rc_ != 0)                                               \
			mt_fail(__FILE__, __LINE__, "%s returned %d", #call, mt_rc_); \
	} while (0)

#endif /* OTEL_TESTS_MINITEST_H */
