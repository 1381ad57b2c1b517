/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal: options structs that callers of other versions survive (the rule
 * libbpf's OPTS_VALID proved).  A struct starts with `size_t size`, the size
 * the caller was built with, and has no padding.  A smaller size is an older
 * caller: the fields it does not reach take their defaults.  A larger one is
 * a newer caller: accepted only when every byte past what this version knows
 * is zero, so that an option this version cannot honour is refused
 * (EOPTIONS), never dropped.
 */
#ifndef OTEL_OPTIONS_H
#define OTEL_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>

/* The struct's size is one this version can take: at least the size field,
 * and nothing but zeros past the `known` bytes. */
static inline bool otel__options_valid(const void *options, size_t known)
{
	const unsigned char *bytes = options;
	size_t size = *(const size_t *)options;

	if (size < sizeof(size_t))
		return false;
	for (size_t i = known; i < size; i++)
		if (bytes[i] != 0)
			return false;
	return true;
}

/* The caller's struct reaches `field`. */
#define OTEL__OPTION_GIVEN(options, type, field)                                \
	((options)->size >= offsetof(type, field) + sizeof(((type *)0)->field))

#endif /* OTEL_OPTIONS_H */
