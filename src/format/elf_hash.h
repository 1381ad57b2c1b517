/* SPDX-License-Identifier: Apache-2.0 */
/* The hash functions of ELF's two symbol hash tables (DT_GNU_HASH and
 * DT_HASH), for the writer's self-check and the ELF reader. */
#ifndef OTEL_FORMAT_ELF_HASH_H
#define OTEL_FORMAT_ELF_HASH_H

#include <stdint.h>

static inline uint32_t otel__elf_gnu_hash(const char *name)
{
	uint32_t h = 5381;

	for (const unsigned char *p = (const unsigned char *)name; *p != '\0'; p++)
		h = h * 33 + *p;
	return h;
}

static inline uint32_t otel__elf_sysv_hash(const char *name)
{
	uint32_t h = 0, g;

	for (const unsigned char *p = (const unsigned char *)name; *p != '\0'; p++) {
		h = (h << 4) + *p;
		g = h & 0xf0000000u;
		if (g != 0)
			h ^= g >> 24;
		h &= ~g;
	}
	return h;
}

#endif /* OTEL_FORMAT_ELF_HASH_H */
