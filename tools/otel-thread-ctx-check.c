/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otel-thread-ctx-check: will a profiler find the thread context in this
 * binary?  Reads ELF files (x86-64 and aarch64 alike; it never runs them)
 * and checks what readers of otel_thread_ctx_v1 rely on.
 *
 *   usage: otel-thread-ctx-check [--json] [--quiet] FILE...
 *          otel-thread-ctx-check [--json] [--quiet] --pid PID
 *
 * With --pid it checks a running process instead (check-pid.c), whoever
 * wrote its thread contexts: exit codes 0 pass, 1 fail, 3 error (no such
 * process, not permitted), 5 absent (neither a slot nor a process
 * context).
 *
 * Verdicts and exit codes (README "Checking a binary"):
 *   0  pass      the file defines the slot and a profiler will find it
 *   1  fail      the file has the slot, but a profiler will not find it,
 *                or a property readers rely on is wrong
 *   2            bad command line
 *   3  error     the file could not be read as a 64-bit x86-64 or aarch64
 *                ELF file (missing, not ELF, truncated, malformed)
 *   4  imported  the file uses the slot of a shared library it links to:
 *                check that library
 *   5  absent    the file neither defines nor uses the slot
 * With several files the exit code is the worst verdict, in the order
 * error, fail, absent, imported, pass.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static const struct {
	const char *name;
	int exit_code;
	int severity; /* for several files: the highest wins */
} verdicts[] = {
	[V_PASS] = { "pass", 0, 0 },
	[V_FAIL] = { "fail", 1, 3 },
	[V_ERROR] = { "error", 3, 4 },
	[V_IMPORTED] = { "imported", 4, 1 },
	[V_ABSENT] = { "absent", 5, 2 },
};

static const char *const status_names[] = { "ok", "info", "warn", "fail" };

const char *check_status_name(enum status st)
{
	return status_names[st];
}

__attribute__((format(printf, 4, 5)))
static void add_check(struct report *r, const char *id, enum status st, const char *fmt, ...)
{
	struct check *c;
	va_list ap;

	if (r->nchecks >= MAX_CHECKS)
		return;
	c = &r->checks[r->nchecks++];
	c->id = id;
	c->status = st;
	va_start(ap, fmt);
	vsnprintf(c->message, sizeof(c->message), fmt, ap);
	va_end(ap);
}

__attribute__((format(printf, 2, 3)))
static void set_summary(struct report *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->summary, sizeof(r->summary), fmt, ap);
	va_end(ap);
}

static const char *machine_name(uint16_t m)
{
	return m == OTEL__ELF_X86_64 ? "x86-64" : m == OTEL__ELF_AARCH64 ? "aarch64" : "?";
}

static const char *kind_id(enum otel__elf_kind k)
{
	switch (k) {
	case OTEL__ELF_KIND_EXECUTABLE: return "executable";
	case OTEL__ELF_KIND_STATIC_EXECUTABLE: return "static-executable";
	case OTEL__ELF_KIND_PIE: return "pie";
	case OTEL__ELF_KIND_STATIC_PIE: return "static-pie";
	case OTEL__ELF_KIND_SHARED_LIBRARY: return "shared-library";
	case OTEL__ELF_KIND_OTHER: break;
	}
	return "other";
}

static const char *type_name(uint8_t t)
{
	switch (t) {
	case OTEL__STT_NOTYPE: return "NOTYPE";
	case OTEL__STT_OBJECT: return "OBJECT";
	case OTEL__STT_FUNC: return "FUNC";
	case OTEL__STT_TLS: return "TLS";
	}
	return "OTHER";
}

static const char *bind_name(uint8_t b)
{
	switch (b) {
	case OTEL__STB_LOCAL: return "LOCAL";
	case OTEL__STB_GLOBAL: return "GLOBAL";
	case OTEL__STB_WEAK: return "WEAK";
	case OTEL__STB_GNU_UNIQUE: return "UNIQUE";
	}
	return "OTHER";
}

static const char *vis_name(uint8_t v)
{
	static const char *const names[] = { "DEFAULT", "INTERNAL", "HIDDEN", "PROTECTED" };

	return names[v & 3];
}

static const char *table_name(enum otel__elf_rela_table t)
{
	return t == OTEL__ELF_RELA_PLT ? ".rela.plt" : ".rela.dyn";
}

static const char *error_id(int code)
{
	switch (code) {
	case OTEL__ELF_EIO: return "io";
	case OTEL__ELF_ENOMEM: return "no-memory";
	case OTEL__ELF_ENOTELF: return "not-elf";
	case OTEL__ELF_EUNSUPPORTED: return "unsupported";
	case OTEL__ELF_ETRUNCATED: return "truncated";
	case OTEL__ELF_EMALFORMED: return "malformed";
	}
	return "other";
}

/* "TLSDESC", "initial-exec + local-exec", ... for a model bit set. */
static void models_text(unsigned int models, char *buf, size_t n)
{
	static const unsigned int order[] = { OTEL__ELF_TLS_DESC, OTEL__ELF_TLS_GD, OTEL__ELF_TLS_IE,
					      OTEL__ELF_TLS_LE };
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		if (!(models & order[i]))
			continue;
		used += (size_t)snprintf(buf + used, used < n ? n - used : 0, "%s%s",
					 used ? " + " : "", otel__elf_tls_model_name(order[i]));
		if (used >= n)
			break;
	}
	if (buf[0] == '\0')
		snprintf(buf, n, "none");
}

static void collect_relocs(struct report *r)
{
	size_t n = otel__elf_rela_count(r->elf);

	for (size_t i = 0; i < n; i++) {
		struct otel__elf_rela rel;

		if (otel__elf_rela_get(r->elf, i, &rel) != OTEL__ELF_OK || rel.sym == 0 ||
		    strcmp(rel.sym_name, SLOT) != 0)
			continue;
		if (r->nrelocs < MAX_RELOCS)
			r->relocs[r->nrelocs++] = rel;
		r->relocs_total++;
	}
}

/* TLS-type relocations with a symbol, anywhere in the file. */
static size_t tls_relocs_with_symbol(const struct report *r, struct otel__elf_rela *first)
{
	size_t n = otel__elf_rela_count(r->elf), count = 0;

	for (size_t i = 0; i < n; i++) {
		struct otel__elf_rela rel;

		if (otel__elf_rela_get(r->elf, i, &rel) != OTEL__ELF_OK || rel.sym == 0 ||
		    otel__elf_tls_model_of(r->info.machine, rel.type) == 0)
			continue;
		if (count++ == 0)
			*first = rel;
	}
	return count;
}

static void check_hygiene(struct report *r, bool defining)
{
	const struct otel__elf_info *in = &r->info;
	bool exe = otel__elf_kind_is_executable(in->kind);
	enum status bad = defining ? S_FAIL : S_WARN;

	/* DF_STATIC_TLS: the module needs static TLS, so dlopen() can fail. */
	if (in->dt_flags & OTEL__DF_STATIC_TLS)
		add_check(r, "static-tls", exe || !defining ? S_INFO : S_FAIL,
			  exe ? "DF_STATIC_TLS is set (harmless in an executable, which is in static TLS anyway)"
			      : "DF_STATIC_TLS is set: the library uses initial-exec TLS, so dlopen() fails when no static TLS is left");
	else
		add_check(r, "static-tls", S_OK, "no DF_STATIC_TLS");

	if (in->dt_textrel || (in->dt_flags & OTEL__DF_TEXTREL))
		add_check(r, "textrel", bad,
			  "text relocations (DT_TEXTREL / DF_TEXTREL): code was built without -fPIC, the loader must write to it");
	else
		add_check(r, "textrel", S_OK, "no text relocations");

	if (!in->has_gnu_stack)
		add_check(r, "stack", in->machine == OTEL__ELF_X86_64 ? bad : S_WARN,
			  in->machine == OTEL__ELF_X86_64
				  ? "no PT_GNU_STACK: on x86-64 the loader then makes the stack executable"
				  : "no PT_GNU_STACK (glibc on aarch64 defaults to a non-executable stack)");
	else if (in->gnu_stack_flags & OTEL__PF_X)
		add_check(r, "stack", bad, "executable stack (PT_GNU_STACK has PF_X): link with -Wl,-z,noexecstack");
	else
		add_check(r, "stack", S_OK, "non-executable stack");

	if (in->kind == OTEL__ELF_KIND_STATIC_PIE) {
		struct otel__elf_rela first;
		size_t n = tls_relocs_with_symbol(r, &first);

		if (n != 0) {
			const char *tn = otel__elf_rela_type_name(in->machine, first.type);

			add_check(r, "static-pie-tls", S_FAIL,
				  "static-pie with %zu dynamic TLS relocation%s (%s against %s): glibc applies them before TLS is set up and the program crashes at start-up; GNU ld on x86-64 leaves one for an exported TLS symbol, lld and mold do not",
				  n, n == 1 ? "" : "s", tn != NULL ? tn : "?", first.sym_name);
		} else {
			add_check(r, "static-pie-tls", S_OK,
				  "static-pie without dynamic TLS relocations");
		}
	}
}

static void check_access(struct report *r)
{
	const struct otel__elf_tls_access *a = &r->access;
	bool exe = otel__elf_kind_is_executable(r->info.kind);
	char text[96];

	models_text(a->models, text, sizeof(text));
	if (a->other != 0)
		add_check(r, "access-model", S_FAIL,
			  "%zu relocation%s of a non-TLS type against %s", a->other,
			  a->other == 1 ? "" : "s", SLOT);
	if (exe) {
		if (a->models & OTEL__ELF_TLS_GD)
			add_check(r, "access-model", S_WARN,
				  "%s: legacy general-dynamic accesses make readers walk the DTV", text);
		else if (a->models != 0)
			add_check(r, "access-model", S_OK, "%s (relaxed in the executable; readers handle it)",
				  text);
		else
			add_check(r, "access-model", S_WARN, "no access found");
		return;
	}
	if (a->models == OTEL__ELF_TLS_DESC)
		add_check(r, "access-model", S_OK, "TLSDESC only");
	else if (a->models & OTEL__ELF_TLS_IE)
		add_check(r, "access-model", S_FAIL,
			  "%s: initial-exec in a shared library forces it into static TLS", text);
	else if (a->models & OTEL__ELF_TLS_GD)
		add_check(r, "access-model", S_WARN,
			  "%s: legacy general-dynamic accesses make readers walk the DTV on every sample; TLSDESC needs one read",
			  text);
	else
		add_check(r, "access-model", S_WARN,
			  "no dynamic relocation against %s: nothing in this library reaches it by TLSDESC",
			  SLOT);
}

static void check_symbol(struct report *r)
{
	const struct otel__elf_sym *s = &r->slot;
	const struct otel__elf_info *in = &r->info;
	const struct otel__elf64_shdr *sh = otel__elf_shdr(r->elf, s->shndx);

	add_check(r, "dynsym", S_OK, "%s is defined in .dynsym%s", SLOT,
		  in->has_dynamic ? ""
				  : " (the file has a .dynsym section but no dynamic section)");
	if (!in->has_dynamic)
		add_check(r, "dynamic", S_WARN,
			  "no dynamic section: only readers that use the section headers find .dynsym (the loader never maps it as such)");
	add_check(r, "type", s->type == OTEL__STT_TLS ? S_OK : S_FAIL, "type %s%s",
		  type_name(s->type), s->type == OTEL__STT_TLS ? "" : ", not TLS");
	add_check(r, "binding", s->bind == OTEL__STB_GLOBAL ? S_OK : S_FAIL, "binding %s%s",
		  bind_name(s->bind), s->bind == OTEL__STB_GLOBAL ? "" : ", not GLOBAL");
	add_check(r, "visibility", s->visibility == OTEL__STV_DEFAULT ? S_OK : S_FAIL,
		  "visibility %s%s", vis_name(s->visibility),
		  s->visibility == OTEL__STV_DEFAULT ? "" : ", not DEFAULT");
	add_check(r, "size", s->size == 8 ? S_OK : S_FAIL, "size %llu%s",
		  (unsigned long long)s->size, s->size == 8 ? "" : ", not 8");
	if (s->type != OTEL__STT_TLS)
		return;
	if (!in->has_tls) {
		add_check(r, "tls-segment", S_FAIL, "the file has no PT_TLS segment");
		return;
	}
	if (s->value > in->tls_memsz || 8 > in->tls_memsz - s->value)
		add_check(r, "tls-segment", S_FAIL,
			  "offset %#llx + 8 is outside the TLS segment (%#llx bytes)",
			  (unsigned long long)s->value, (unsigned long long)in->tls_memsz);
	else if (sh != NULL && !(sh->sh_flags & OTEL__SHF_TLS))
		add_check(r, "tls-segment", S_FAIL, "its section %s is not a TLS section",
			  r->slot_section != NULL ? r->slot_section : "?");
	else
		add_check(r, "tls-segment", S_OK, "inside the TLS segment (offset %#llx of %#llx bytes)",
			  (unsigned long long)s->value, (unsigned long long)in->tls_memsz);
	if (s->value % 8 != 0 || in->tls_align < 8)
		add_check(r, "alignment", S_FAIL,
			  "not 8-aligned: offset %#llx in a segment aligned to %llu",
			  (unsigned long long)s->value, (unsigned long long)in->tls_align);
	else
		add_check(r, "alignment", S_OK, "8-aligned (offset %#llx, segment alignment %llu)",
			  (unsigned long long)s->value, (unsigned long long)in->tls_align);
	if (s->version != NULL)
		add_check(r, "version", S_INFO, "version %s%s", s->version,
			  s->version_hidden ? " (hidden: not the default version)" : " (default)");
}

static bool has_failure(const struct report *r)
{
	for (size_t i = 0; i < r->nchecks; i++)
		if (r->checks[i].status == S_FAIL)
			return true;
	return false;
}

void check_file(struct report *r)
{
	struct otel__elf_error err;
	struct otel__elf_sym sym;
	const struct otel__elf_info *in = &r->info;
	int rc;

	rc = otel__elf_open_path(&r->elf, r->path, OTEL__ELF_WANT_SYMTAB, &err);
	if (rc != OTEL__ELF_OK) {
		r->verdict = V_ERROR;
		r->error_code = rc;
		snprintf(r->error, sizeof(r->error), "%s", err.message);
		set_summary(r, "cannot check: %s", err.message);
		return;
	}
	otel__elf_info(r->elf, &r->info);
	if (in->kind == OTEL__ELF_KIND_OTHER) {
		r->verdict = V_ERROR;
		r->error_code = OTEL__ELF_EUNSUPPORTED;
		snprintf(r->error, sizeof(r->error),
			 "e_type %u: not an executable or a shared library (link it first)", in->type);
		set_summary(r, "cannot check: %s", r->error);
		return;
	}

	if (otel__elf_sym_find(r->elf, OTEL__ELF_DYNSYM, SLOT, &sym) == OTEL__ELF_OK) {
		r->has_slot = true;
		r->slot_in_dynsym = true;
		r->slot = sym;
	} else if (otel__elf_sym_find(r->elf, OTEL__ELF_SYMTAB, SLOT, &sym) == OTEL__ELF_OK) {
		r->has_slot = true;
		r->slot = sym;
	}
	if (r->has_slot)
		r->slot_section = otel__elf_section_name(r->elf, r->slot.shndx);
	collect_relocs(r);
	if (r->slot_in_dynsym &&
	    otel__elf_tls_classify(r->elf, SLOT, &r->access) == OTEL__ELF_OK)
		r->has_access = true;

	if (!r->has_slot) {
		r->verdict = V_ABSENT;
		if (in->dynsym_count == 0 && !in->has_symtab)
			set_summary(r, "%s is not in this file, as far as it shows: it has neither .dynsym nor .symtab. "
				    "If it contains otel-thread-ctx, no profiler can find the slot either (a fully static, stripped executable)",
				    SLOT);
		else
			set_summary(r, "this file neither defines nor uses %s", SLOT);
		return;
	}

	if (r->slot.shndx == OTEL__SHN_UNDEF) {
		char text[96];

		r->verdict = V_IMPORTED;
		models_text(r->has_access ? r->access.models : 0, text, sizeof(text));
		add_check(r, "import", S_INFO, "%s is imported (undefined here); this file reaches it by %s",
			  SLOT, text);
		check_hygiene(r, false);
		set_summary(r, "the slot is defined by a shared library this file uses; check that library (DT_NEEDED: %zu)",
			    in->needed_count);
		return;
	}

	if (!r->slot_in_dynsym) {
		r->verdict = V_FAIL;
		if (in->dynsym_count == 0)
			add_check(r, "dynsym", S_FAIL,
				  "%s is defined (.symtab) but the file has no .dynsym at all: %s",
				  SLOT,
				  in->kind == OTEL__ELF_KIND_STATIC_EXECUTABLE
					  ? "a fully static non-PIE executable; link with -static-pie and " EXPORT_FLAG
					  : "it was linked without any dynamic symbols");
		else
			add_check(r, "dynsym", S_FAIL,
				  "%s is defined (.symtab) but not exported in .dynsym: link with " EXPORT_FLAG
				  " (pkg-config --static --libs otel-thread-ctx gives it)",
				  SLOT);
		check_hygiene(r, true);
		set_summary(r, "a profiler will not find the thread context: %s is not in .dynsym", SLOT);
		return;
	}

	check_symbol(r);
	if (r->has_access)
		check_access(r);
	check_hygiene(r, true);
	if (r->slot.type == OTEL__STT_TLS && otel__elf_kind_is_executable(in->kind) &&
	    otel__elf_tls_local_exec_offset(r->elf, r->slot.value, &r->le_offset) == OTEL__ELF_OK)
		r->has_le = true;

	if (has_failure(r)) {
		r->verdict = V_FAIL;
		set_summary(r, "a profiler will not find the thread context, or not reliably: see the failed checks");
	} else {
		r->verdict = V_PASS;
		set_summary(r, "a profiler will find the thread context: %s is exported by this %s",
			    SLOT, otel__elf_kind_name(in->kind));
	}
}

/* Text output: names from the file are printed with escapes. */
static void put_text(FILE *f, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
		if (*p >= 0x20 && *p < 0x7f && *p != '\\')
			fputc(*p, f);
		else
			fprintf(f, "\\x%02x", *p);
	}
}

static void print_text(const struct report *r, bool quiet)
{
	const struct otel__elf_info *in = &r->info;
	static const char *const upper[] = { [V_PASS] = "PASS", [V_FAIL] = "FAIL", [V_ERROR] = "ERROR",
					      [V_IMPORTED] = "IMPORTED", [V_ABSENT] = "ABSENT" };

	put_text(stdout, r->path);
	printf(": %s: %s\n", upper[r->verdict], r->summary);
	if (quiet || r->verdict == V_ERROR)
		return;
	printf("  file:   ELF64 %s %s", machine_name(in->machine), otel__elf_kind_name(in->kind));
	if (in->soname != NULL) {
		printf(", soname ");
		put_text(stdout, in->soname);
	}
	printf("\n");
	if (r->verdict == V_IMPORTED) {
		for (size_t i = 0; i < in->needed_count; i++) {
			printf("  needs:  ");
			put_text(stdout, otel__elf_needed(r->elf, i));
			printf("\n");
		}
	}
	if (r->has_slot && r->slot.shndx != OTEL__SHN_UNDEF) {
		printf("  slot:   %s", SLOT);
		if (r->slot.version != NULL) {
			printf("%s", r->slot.version_hidden ? "@" : "@@");
			put_text(stdout, r->slot.version);
		}
		printf(" in %s: %s %s %s, size %llu, TLS offset %#llx", r->slot_in_dynsym ? ".dynsym" : ".symtab",
		       type_name(r->slot.type), bind_name(r->slot.bind), vis_name(r->slot.visibility),
		       (unsigned long long)r->slot.size, (unsigned long long)r->slot.value);
		if (r->slot_section != NULL) {
			printf(" (");
			put_text(stdout, r->slot_section);
			printf(")");
		}
		printf("\n");
	}
	if (in->has_tls && r->has_slot)
		printf("  TLS:    PT_TLS vaddr %#llx, memsz %#llx, align %llu\n",
		       (unsigned long long)in->tls_vaddr, (unsigned long long)in->tls_memsz,
		       (unsigned long long)in->tls_align);
	if (r->has_access) {
		char text[96];

		models_text(r->access.models, text, sizeof(text));
		printf("  access: %s", text);
		if (r->has_le)
			printf(" (offset from the thread pointer when it is the main program: %lld)", (long long)r->le_offset);
		printf("\n");
	}
	for (size_t i = 0; i < r->nrelocs; i++) {
		const char *tn = otel__elf_rela_type_name(in->machine, r->relocs[i].type);

		printf("  reloc:  %s at %#llx (%s)\n", tn != NULL ? tn : "?",
		       (unsigned long long)r->relocs[i].offset, table_name(r->relocs[i].table));
	}
	if (r->relocs_total > r->nrelocs)
		printf("  reloc:  ... %zu more\n", r->relocs_total - r->nrelocs);
	for (size_t i = 0; i < r->nchecks; i++)
		printf("  %-5s %-15s %s\n", status_names[r->checks[i].status], r->checks[i].id,
		       r->checks[i].message);
}

/* JSON strings: escapes, and each byte of invalid UTF-8 as \u00XX. */
static size_t utf8_len(const unsigned char *p)
{
	size_t n;
	uint32_t cp;

	if (p[0] < 0x80)
		return 1;
	if ((p[0] & 0xe0) == 0xc0)
		n = 2, cp = p[0] & 0x1f;
	else if ((p[0] & 0xf0) == 0xe0)
		n = 3, cp = p[0] & 0x0f;
	else if ((p[0] & 0xf8) == 0xf0)
		n = 4, cp = p[0] & 0x07;
	else
		return 0;
	for (size_t k = 1; k < n; k++) {
		if ((p[k] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[k] & 0x3f);
	}
	if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

static void json_str(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	if (s == NULL) {
		fputs("null", stdout);
		return;
	}
	putchar('"');
	while (*p != '\0') {
		size_t n = utf8_len(p);

		if (*p == '"' || *p == '\\') {
			printf("\\%c", *p);
			p++;
		} else if (*p < 0x20 || n == 0) {
			printf("\\u%04x", *p);
			p++;
		} else {
			fwrite(p, 1, n, stdout);
			p += n;
		}
	}
	putchar('"');
}

static void json_kv_str(const char *key, const char *value, bool comma)
{
	printf("\"%s\": ", key);
	json_str(value);
	if (comma)
		printf(", ");
}

static void print_json(const struct report *r)
{
	const struct otel__elf_info *in = &r->info;

	printf("{");
	json_kv_str("file", r->path, true);
	json_kv_str("verdict", verdicts[r->verdict].name, true);
	printf("\"exit_code\": %d, ", verdicts[r->verdict].exit_code);
	json_kv_str("summary", r->summary, true);
	if (r->verdict == V_ERROR) {
		printf("\"error\": {");
		json_kv_str("code", error_id(r->error_code), true);
		json_kv_str("message", r->error, false);
		printf("}}");
		return;
	}
	printf("\"error\": null, ");
	json_kv_str("machine", machine_name(in->machine), true);
	json_kv_str("kind", kind_id(in->kind), true);
	json_kv_str("soname", in->soname, true);
	json_kv_str("interp", in->interp, true);
	printf("\"needed\": [");
	for (size_t i = 0; i < in->needed_count; i++) {
		if (i)
			printf(", ");
		json_str(otel__elf_needed(r->elf, i));
	}
	printf("], \"has_dynamic\": %s, \"dynsym_count\": %zu, ", in->has_dynamic ? "true" : "false",
	       in->dynsym_count);
	if (in->has_tls)
		printf("\"tls_segment\": {\"vaddr\": %llu, \"filesz\": %llu, \"memsz\": %llu, \"align\": %llu}, ",
		       (unsigned long long)in->tls_vaddr, (unsigned long long)in->tls_filesz,
		       (unsigned long long)in->tls_memsz, (unsigned long long)in->tls_align);
	else
		printf("\"tls_segment\": null, ");
	if (r->has_slot) {
		printf("\"slot\": {");
		json_kv_str("table", r->slot_in_dynsym ? "dynsym" : "symtab", true);
		printf("\"defined\": %s, \"value\": %llu, \"size\": %llu, ",
		       r->slot.shndx != OTEL__SHN_UNDEF ? "true" : "false",
		       (unsigned long long)r->slot.value, (unsigned long long)r->slot.size);
		json_kv_str("type", type_name(r->slot.type), true);
		json_kv_str("bind", bind_name(r->slot.bind), true);
		json_kv_str("visibility", vis_name(r->slot.visibility), true);
		json_kv_str("section", r->slot_section, true);
		json_kv_str("version", r->slot.version, true);
		printf("\"version_default\": %s}, ",
		       r->slot.version != NULL && !r->slot.version_hidden ? "true" : "false");
	} else {
		printf("\"slot\": null, ");
	}
	printf("\"access_models\": [");
	if (r->has_access) {
		bool first = true;

		for (unsigned int bit = 1; bit <= OTEL__ELF_TLS_LE; bit <<= 1) {
			if (!(r->access.models & bit))
				continue;
			if (!first)
				printf(", ");
			json_str(otel__elf_tls_model_name(bit));
			first = false;
		}
	}
	printf("], \"relocations\": [");
	for (size_t i = 0; i < r->nrelocs; i++) {
		const char *tn = otel__elf_rela_type_name(in->machine, r->relocs[i].type);

		printf("%s{", i ? ", " : "");
		json_kv_str("type", tn != NULL ? tn : "?", true);
		printf("\"type_number\": %u, \"offset\": %llu, \"addend\": %lld, ", r->relocs[i].type,
		       (unsigned long long)r->relocs[i].offset, (long long)r->relocs[i].addend);
		json_kv_str("table", table_name(r->relocs[i].table), false);
		printf("}");
	}
	printf("], \"relocations_total\": %zu, ", r->relocs_total);
	if (r->has_le)
		printf("\"main_program_tp_offset\": %lld, ", (long long)r->le_offset);
	else
		printf("\"main_program_tp_offset\": null, ");
	printf("\"checks\": [");
	for (size_t i = 0; i < r->nchecks; i++) {
		printf("%s{", i ? ", " : "");
		json_kv_str("id", r->checks[i].id, true);
		json_kv_str("status", status_names[r->checks[i].status], true);
		json_kv_str("message", r->checks[i].message, false);
		printf("}");
	}
	printf("]}");
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: otel-thread-ctx-check [--json] [--quiet] FILE...\n"
		"       otel-thread-ctx-check [--json] [--quiet] --pid PID\n"
		"\n"
		"Checks that a profiler will find the OpenTelemetry thread context\n"
		"(the TLS symbol " SLOT ") in each ELF file (x86-64 or aarch64);\n"
		"with --pid, what a profiler will see of a running process's thread\n"
		"contexts and process context, rule by rule.\n"
		"\n"
		"  --json     one JSON document on stdout\n"
		"  --quiet    one line per file (the verdict and the summary)\n"
		"  --pid PID  check the running process PID (root, or ptrace rights)\n"
		"\n"
		"exit status: 0 pass, 1 fail, 2 usage, 3 unreadable file (with --pid:\n"
		"             no such process, not permitted), 4 slot imported from a\n"
		"             shared library, 5 no slot (with --pid: no slot and no\n"
		"             process context)\n"
		"(with several files, the worst: error, fail, absent, imported, pass)\n");
}

int main(int argc, char **argv)
{
	bool json = false, quiet = false, options = true;
	size_t nfiles = 0, done = 0;
	int worst = -1;
	long pid = -1;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (options && strcmp(a, "--") == 0) {
			options = false;
		} else if (options && strcmp(a, "--json") == 0) {
			json = true;
		} else if (options && (strcmp(a, "--quiet") == 0 || strcmp(a, "-q") == 0)) {
			quiet = true;
		} else if (options && strcmp(a, "--pid") == 0) {
			char *end;

			if (i + 1 >= argc || pid >= 0) {
				usage(stderr);
				return 2;
			}
			errno = 0;
			pid = strtol(argv[++i], &end, 10);
			if (errno != 0 || *argv[i] == '\0' || *end != '\0' || pid <= 0 || pid > INT_MAX) {
				fprintf(stderr, "otel-thread-ctx-check: not a process id: '%s'\n", argv[i]);
				return 2;
			}
		} else if (options && (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)) {
			usage(stdout);
			return 0;
		} else if (options && a[0] == '-' && a[1] != '\0') {
			fprintf(stderr, "otel-thread-ctx-check: unknown option '%s'\n", a);
			usage(stderr);
			return 2;
		} else {
			nfiles++;
		}
	}
	if (pid > 0 && nfiles == 0)
		return check_pid((pid_t)pid, json, quiet);
	if (nfiles == 0 || pid > 0) {
		usage(stderr);
		return 2;
	}

	if (json)
		printf("{\"tool\": \"otel-thread-ctx-check\", \"files\": [");
	options = true;
	for (int i = 1; i < argc; i++) {
		struct report *r;

		if (options && strcmp(argv[i], "--") == 0) {
			options = false;
			continue;
		}
		if (options && argv[i][0] == '-' && argv[i][1] != '\0')
			continue;
		r = calloc(1, sizeof(*r));
		if (r == NULL) {
			fprintf(stderr, "otel-thread-ctx-check: out of memory\n");
			return 3;
		}
		r->path = argv[i];
		check_file(r);
		if (json) {
			if (done)
				printf(", ");
			print_json(r);
		} else {
			print_text(r, quiet);
		}
		if (worst < 0 || verdicts[r->verdict].severity > verdicts[worst].severity)
			worst = (int)r->verdict;
		done++;
		otel__elf_close(r->elf);
		free(r);
	}
	if (json)
		printf("], \"exit_code\": %d}\n", verdicts[worst].exit_code);
	return verdicts[worst].exit_code;
}
