/* SPDX-License-Identifier: Apache-2.0 */
/* What the compat tests share: counting OTEL_CTX mappings, and the order in
 * which the dynamic loader holds the libraries. */
#ifndef TESTS_COMPAT_UTIL_H
#define TESTS_COMPAT_UTIL_H

#include <link.h>
#include <stdio.h>
#include <string.h>

/* How many mappings of this process have OTEL_CTX in their name. */
static inline int otel_ctx_mappings(void)
{
	char line[1024];
	int n = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strstr(line, "OTEL_CTX") != NULL)
			n++;
	}
	fclose(f);
	return n;
}

struct link_position {
	const char *name; /* a file name, e.g. "libotel-thread-ctx.so.1" */
	int position;     /* in the loader's list, or -1 */
	int seen;
};

static int link_position_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct link_position *p = arg;
	const char *base = strrchr(info->dlpi_name, '/');

	(void)size;
	base = base != NULL ? base + 1 : info->dlpi_name;
	if (p->position < 0 && strncmp(base, p->name, strlen(p->name)) == 0)
		p->position = p->seen;
	p->seen++;
	return 0;
}

/* Where the first object whose file name starts with `name` is in the
 * loader's list (load order), or -1 when none is loaded. */
static inline int link_position(const char *name)
{
	struct link_position p = { name, -1, 0 };

	dl_iterate_phdr(link_position_cb, &p);
	return p.position;
}

#endif
