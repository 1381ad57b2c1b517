/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Names of the addresses of user stacks (otel-thread-ctx-sample --stacks):
 * the mappings of each process from /proc/PID/maps, the files they map
 * read with the project's ELF reader (src/elf/), functions from .symtab,
 * or .dynsym when the file has no .symtab.  An address no function covers
 * is named module+offset (the offset in the file's address layout), one
 * outside every file mapping [name]+offset or nothing.
 */
#ifndef OTEL_SAMPLE_SYMBOLIZE_H
#define OTEL_SAMPLE_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct symbolizer;

struct symbolizer *symbolizer_new(void);
void symbolizer_free(struct symbolizer *s);

/* Reads the mappings of `pid` now, replacing those read before (which are
 * kept when the process is gone).  0, or -1 when they cannot be read. */
int symbolizer_load(struct symbolizer *s, pid_t pid);

/* Whether the mappings of `pid` were read. */
int symbolizer_has(const struct symbolizer *s, pid_t pid);

/* The name of `ip` in `pid`: the function, "module+0xOFFSET", or "" when
 * no mapping holds it.  `leaf`: ip is where the sample hit; otherwise a
 * return address, looked up as ip - 1 (the call). */
void symbolizer_name(struct symbolizer *s, pid_t pid, uint64_t ip, int leaf, char *name,
		     size_t len);

#endif /* OTEL_SAMPLE_SYMBOLIZE_H */
