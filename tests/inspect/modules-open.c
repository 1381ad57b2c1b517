/* SPDX-License-Identifier: Apache-2.0 */
/*
 * open() as the inspector sees it in modules.c's fifo case: this
 * executable's definition comes first in the lookup scope, so the
 * inspector's library calls it.  While modules_open_swap names a file, the
 * first open of a path ending with it swaps the file for a FIFO just before
 * the real open (what a target can do between a reader's stat() and its
 * open()), and /proc/PID/map_files/ is refused as it is to a reader without
 * CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE.
 */
#undef _FORTIFY_SOURCE
#undef _FILE_OFFSET_BITS
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "modules-open.h"

const char *modules_open_swap;
int modules_open_swapped;
int modules_open_map_files_refused;

static int swap(const char *path)
{
	size_t n = strlen(path), m;
	char real[4200];

	if (modules_open_swap == NULL)
		return 0;
	if (strstr(path, "/map_files/") != NULL) {
		modules_open_map_files_refused++;
		errno = EPERM;
		return -1;
	}
	if (modules_open_swapped)
		return 0;
	m = strlen(modules_open_swap);
	if (n < m || strcmp(path + n - m, modules_open_swap) != 0)
		return 0;
	snprintf(real, sizeof(real), "%s.real", path);
	if (rename(path, real) != 0 || mkfifo(path, 0600) != 0)
		return 0;
	modules_open_swapped = 1;
	return 0;
}

/* The real `name` ("open", "open64") on `path`, unless swap() refuses. */
static int interposed(const char *name, const char *path, int flags, va_list ap)
{
	int (*fn)(const char *, int, ...);
	mode_t mode = (flags & (O_CREAT | O_TMPFILE)) ? va_arg(ap, mode_t) : 0;

	if (swap(path) != 0)
		return -1;
	*(void **)&fn = dlsym(RTLD_NEXT, name);
	if (fn == NULL) {
		errno = ENOSYS;
		return -1;
	}
	return fn(path, flags, mode);
}

int open(const char *path, int flags, ...)
{
	va_list ap;
	int rc;

	va_start(ap, flags);
	rc = interposed("open", path, flags, ap);
	va_end(ap);
	return rc;
}

/* The same (glibc's open64 is open on 64-bit CPUs; musl's is a macro for
 * open). */
#ifndef open64
int open64(const char *path, int flags, ...) __attribute__((alias("open")));
#endif
