/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otel-thread-ctx-check's two halves: the file checker
 * (otel-thread-ctx-check.c), and the check of a running process
 * (check-pid.c), which runs the file checker on each module it finds.
 */
#ifndef OTEL_TOOLS_CHECK_H
#define OTEL_TOOLS_CHECK_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "elf_reader.h"
#include "otel_thread_ctx.h"

#define SLOT OTEL_THREAD_CTX_SLOT_NAME
#define EXPORT_FLAG "-Wl,--export-dynamic-symbol=" SLOT
#define MAX_CHECKS 24
#define MAX_RELOCS 16

enum verdict { V_PASS, V_FAIL, V_ERROR, V_IMPORTED, V_ABSENT };

enum status { S_OK, S_INFO, S_WARN, S_FAIL };

struct check {
	const char *id;
	enum status status;
	char message[512];
};

struct report {
	const char *path;
	enum verdict verdict;
	char summary[512];
	int error_code;
	char error[256];
	struct otel__elf *elf;
	struct otel__elf_info info;
	bool has_slot;
	bool slot_in_dynsym;
	struct otel__elf_sym slot;
	const char *slot_section;
	bool has_access;
	struct otel__elf_tls_access access;
	bool has_le;
	int64_t le_offset;
	struct otel__elf_rela relocs[MAX_RELOCS];
	size_t nrelocs, relocs_total;
	struct check checks[MAX_CHECKS];
	size_t nchecks;
};

/* Checks the ELF file r->path (r zeroed but for path) into *r; close r->elf
 * with otel__elf_close() afterwards. */
void check_file(struct report *r);

/* "ok", "info", "warn" or "fail". */
const char *check_status_name(enum status s);

/*
 * Checks running process `pid`: what a profiler will see of its thread
 * contexts and its process context, rule by rule (doc/inspector.md, "Why
 * does my profiler show nothing?").  Prints the report (JSON with `json`,
 * one line with `quiet`) and returns the exit code: 0 pass, 1 fail, 3 error
 * (no such process, not permitted), 5 absent (no slot, no process
 * context).
 */
int check_pid(pid_t pid, bool json, bool quiet);

#endif /* OTEL_TOOLS_CHECK_H */
