/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target for the ELF reader (src/elf/elf_reader.h): opens the input as
 * a file image and walks everything the reader offers, touching every
 * string it hands out, so that a sanitizer sees any out-of-bounds read, and
 * holds the reader to what its header promises: a failure says why; the
 * segments it checked and every translated address lie inside the file;
 * symbol names are never NULL; an index past the end is refused; counts
 * agree with what the tables give.
 *
 * Built two ways (tests/elf/meson.build): with clang, as a libFuzzer program
 * that compiles the reader's sources itself with
 * -fsanitize=fuzzer,address,undefined (the fuzz-elf test, from corpus-elf/);
 * with any compiler, with replay.c, as a program that runs inputs from files
 * (fuzz-elf-corpus and elf-reader-hostile).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elf_reader.h"

#define TLS_SLOT "otel_thread_ctx_v1"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile size_t sink;

static void check(int cond, const char *what, int line)
{
	if (!cond) {
		fprintf(stderr, "fuzz-elf.c:%d: %s does not hold\n", line, what);
		abort();
	}
}

#define require(cond) check(!!(cond), #cond, __LINE__)

static void touch(const char *s)
{
	if (s != NULL)
		sink += strlen(s);
}

/* [offset, offset + len) lies inside a file of `size` bytes. */
static int inside(uint64_t offset, uint64_t len, size_t size)
{
	return offset <= size && len <= size - offset;
}

/* A translation that succeeds lands inside the file. */
static void translate(const struct otel__elf *elf, uint64_t vaddr, uint64_t len, size_t size)
{
	uint64_t off;

	if (otel__elf_vaddr_to_offset(elf, vaddr, len, &off) == OTEL__ELF_OK)
		require(inside(off, len, size));
}

static void walk_symbols(const struct otel__elf *elf, const struct otel__elf_info *info,
			 enum otel__elf_symtab t)
{
	size_t n = otel__elf_sym_count(elf, t);
	struct otel__elf_sym sym, found;
	const char *name = NULL;
	int64_t tp;

	require(n == (t == OTEL__ELF_DYNSYM ? info->dynsym_count : info->symtab_count));
	for (size_t i = 0; i < n; i++) {
		require(otel__elf_sym_get(elf, t, i, &sym) == OTEL__ELF_OK);
		require(sym.name != NULL && sym.index == i);
		touch(sym.name);
		touch(sym.version);
		touch(otel__elf_section_name(elf, sym.shndx));
		if (sym.type == OTEL__STT_TLS)
			(void)otel__elf_tls_local_exec_offset(elf, sym.value, &tp);
		/* Entry 0 is the null symbol, which lookups pass over. */
		if (i > 0 && sym.name[0] != '\0')
			name = sym.name;
	}
	require(otel__elf_sym_get(elf, t, n, &sym) != OTEL__ELF_OK);
	/* A lookup finds an entry of that name. */
	if (name != NULL) {
		require(otel__elf_sym_find(elf, t, name, &found) == OTEL__ELF_OK);
		require(found.name != NULL && strcmp(found.name, name) == 0 && found.index < n);
	}
	if (otel__elf_sym_find(elf, t, TLS_SLOT, &found) == OTEL__ELF_OK) {
		require(strcmp(found.name, TLS_SLOT) == 0);
		(void)otel__elf_tls_local_exec_offset(elf, found.value, &tp);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct otel__elf *elf = NULL;
	struct otel__elf_error err;
	struct otel__elf_info info;
	struct otel__elf_tls_access access;
	uint64_t value;
	struct otel__elf_rela past;
	size_t dyns, relas;

	if (otel__elf_open_memory(&elf, data, size, OTEL__ELF_WANT_SYMTAB, &err) != OTEL__ELF_OK) {
		/* A failure always says why. */
		require(elf == NULL && err.code < 0);
		require(memchr(err.message, '\0', sizeof(err.message)) != NULL);
		require(err.message[0] != '\0');
		touch(otel__elf_strerror(err.code));
		return 0;
	}
	otel__elf_info(elf, &info);
	require(info.file_size == size);
	touch(info.interp);
	touch(info.soname);
	touch(otel__elf_kind_name(info.kind));
	sink += (size_t)otel__elf_kind_is_executable(info.kind);

	for (size_t i = 0; i < info.phnum; i++) {
		const struct otel__elf64_phdr *p = otel__elf_phdr(elf, i);

		require(p != NULL);
		if (p->p_type == OTEL__PT_LOAD)
			translate(elf, p->p_vaddr, p->p_filesz, size);
		if (p->p_type == OTEL__PT_LOAD || p->p_type == OTEL__PT_TLS)
			require(p->p_filesz <= p->p_memsz);
		if (p->p_type == OTEL__PT_LOAD || p->p_type == OTEL__PT_TLS ||
		    p->p_type == OTEL__PT_DYNAMIC || p->p_type == OTEL__PT_INTERP)
			require(inside(p->p_offset, p->p_filesz, size));
	}
	require(otel__elf_phdr(elf, info.phnum) == NULL);

	dyns = otel__elf_dyn_count(elf);
	for (size_t i = 0; i < dyns; i++) {
		const struct otel__elf64_dyn *d = otel__elf_dyn(elf, i);

		require(d != NULL);
		translate(elf, d->d_val, 1, size);
	}
	(void)otel__elf_dyn_get(elf, OTEL__DT_FLAGS, &value);
	for (size_t i = 0; i < info.needed_count; i++) {
		require(otel__elf_needed(elf, i) != NULL);
		touch(otel__elf_needed(elf, i));
	}
	require(otel__elf_needed(elf, info.needed_count) == NULL);

	for (size_t i = 0; i < info.shnum + 2; i++) {
		touch(otel__elf_section_name(elf, i));
		if (otel__elf_shdr(elf, i) != NULL)
			sink += (size_t)otel__elf_shdr(elf, i)->sh_type;
	}
	walk_symbols(elf, &info, OTEL__ELF_DYNSYM);
	walk_symbols(elf, &info, OTEL__ELF_SYMTAB);

	relas = otel__elf_rela_count(elf);
	require(relas == info.rela_count);
	for (size_t i = 0; i < relas; i++) {
		struct otel__elf_rela r;
		unsigned int model;

		require(otel__elf_rela_get(elf, i, &r) == OTEL__ELF_OK);
		require(r.sym_name != NULL && r.sym < (info.dynsym_count ? info.dynsym_count : 1));
		touch(r.sym_name);
		touch(otel__elf_rela_type_name(info.machine, r.type));
		model = otel__elf_tls_model_of(info.machine, r.type);
		if (model != 0)
			touch(otel__elf_tls_model_name(model));
	}
	require(otel__elf_rela_get(elf, relas, &past) != OTEL__ELF_OK);

	if (otel__elf_tls_classify(elf, TLS_SLOT, &access) == OTEL__ELF_OK) {
		const struct otel__elf_tls_ref *refs[] = { &access.desc, &access.dtpmod,
							   &access.dtpoff, &access.tpoff };

		for (size_t i = 0; i < sizeof(refs) / sizeof(refs[0]); i++)
			require(refs[i]->count <= relas);
		require(access.other <= relas);
	}
	otel__elf_close(elf);
	return 0;
}
