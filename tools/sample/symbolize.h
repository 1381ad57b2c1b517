/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Names of the addresses of user stacks (otel-thread-ctx-sample --stacks):
 * the mappings of each process from /proc/PID/maps, the files they map
 * read with the project's ELF reader (src/elf/), functions from .symtab,
 * else from the .symtab of the file's separate debug file (found by its
 * GNU build id under /usr/lib/debug/.build-id/, or by its .gnu_debuglink
 * next to it, in .debug/ there or under /usr/lib/debug/, CRC checked, as
 * gdb looks), else from .dynsym.  Addresses in no file (anonymous memory,
 * memfd: mappings, as a JIT uses) are named from the process's perf map,
 * /tmp/perf-PID.map, when it writes one.  An address no function covers
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

/* Reads the mappings of `pid` now, and its perf map, replacing those read
 * before (which are kept when the process is gone).  0, or -1 when they
 * cannot be read. */
int symbolizer_load(struct symbolizer *s, pid_t pid);

/* Whether the mappings of `pid` were read. */
int symbolizer_has(const struct symbolizer *s, pid_t pid);

/* The name of `ip` in `pid`: the function, "module+0xOFFSET", or "" when
 * no mapping holds it.  `leaf`: ip is where the sample hit; otherwise a
 * return address, looked up as ip - 1 (the call). */
void symbolizer_name(struct symbolizer *s, pid_t pid, uint64_t ip, int leaf, char *name,
		     size_t len);

/* A mapping of a process, as pprof's Mapping message describes one. */
struct symbolizer_mapping {
	uint64_t start, limit, offset; /* [start, limit) maps file offset `offset` */
	const char *path;              /* as /proc/PID/maps names it; "" anonymous */
	const char *build_id;          /* hex of the file's GNU build id; "" none */
	int is_file;                   /* a file (path starts with /, an inode) */
	int is_main;                   /* the process's executable (/proc/PID/exe) */
	/* The names given to its addresses are final: functions, or
	 * module+offset where the tool found none (always 1 for now). */
	int has_functions;
};

/*
 * The mapping that holds `ip` (looked up as symbolizer_name() does) in
 * `pid`: 0 and *m filled, its strings valid until the next
 * symbolizer_load() of that process; -1 when no mapping holds it.
 */
int symbolizer_mapping(struct symbolizer *s, pid_t pid, uint64_t ip, int leaf,
		       struct symbolizer_mapping *m);

#endif /* OTEL_SAMPLE_SYMBOLIZE_H */
