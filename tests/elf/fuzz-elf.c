/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target for the ELF reader (src/elf_reader.h): opens the input as a
 * file image and walks everything the reader offers, touching every string
 * it hands out, so that a sanitizer sees any out-of-bounds read.
 *
 * Built two ways: with libFuzzer (tests/elf/run-elf-fuzzer, clang
 * -fsanitize=fuzzer), and with replay.c as a plain program that runs inputs
 * from files (the elf-reader-hostile test, with any compiler).
 */
#include <stdint.h>
#include <string.h>

#include "elf_reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile size_t sink;

static void touch(const char *s)
{
	if (s != NULL)
		sink += strlen(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct otel__elf *elf = NULL;
	struct otel__elf_error err;
	struct otel__elf_info info;
	struct otel__elf_tls_access access;
	struct otel__elf_sym sym;
	uint64_t off, value;
	int64_t tp;

	if (otel__elf_open_memory(&elf, data, size, OTEL__ELF_WANT_SYMTAB, &err) != OTEL__ELF_OK) {
		/* A failure always says why. */
		if (elf != NULL || err.code >= 0 || err.message[0] == '\0' ||
		    memchr(err.message, '\0', sizeof(err.message)) == NULL)
			__builtin_trap();
		return 0;
	}
	otel__elf_info(elf, &info);
	touch(info.interp);
	touch(info.soname);
	touch(otel__elf_kind_name(info.kind));
	for (size_t i = 0; i < info.phnum; i++) {
		const struct otel__elf64_phdr *p = otel__elf_phdr(elf, i);

		if (p == NULL)
			__builtin_trap();
		if (p->p_type == OTEL__PT_LOAD)
			(void)otel__elf_vaddr_to_offset(elf, p->p_vaddr, p->p_filesz, &off);
	}
	for (size_t i = 0; i < otel__elf_dyn_count(elf); i++)
		sink += (size_t)otel__elf_dyn(elf, i)->d_val;
	(void)otel__elf_dyn_get(elf, OTEL__DT_FLAGS, &value);
	for (size_t i = 0; i < info.needed_count; i++)
		touch(otel__elf_needed(elf, i));
	for (size_t i = 0; i < info.shnum + 2; i++)
		touch(otel__elf_section_name(elf, i));
	for (int t = OTEL__ELF_DYNSYM; t <= OTEL__ELF_SYMTAB; t++) {
		size_t n = otel__elf_sym_count(elf, (enum otel__elf_symtab)t);

		for (size_t i = 0; i < n; i++) {
			if (otel__elf_sym_get(elf, (enum otel__elf_symtab)t, i, &sym) != OTEL__ELF_OK)
				__builtin_trap();
			touch(sym.name);
			touch(sym.version);
			touch(otel__elf_section_name(elf, sym.shndx));
		}
		if (otel__elf_sym_find(elf, (enum otel__elf_symtab)t, "otel_thread_ctx_v1", &sym) ==
		    OTEL__ELF_OK)
			(void)otel__elf_tls_local_exec_offset(elf, sym.value, &tp);
	}
	for (size_t i = 0; i < otel__elf_rela_count(elf); i++) {
		struct otel__elf_rela r;

		if (otel__elf_rela_get(elf, i, &r) != OTEL__ELF_OK)
			__builtin_trap();
		touch(r.sym_name);
		touch(otel__elf_rela_type_name(info.machine, r.type));
		sink += otel__elf_tls_model_of(info.machine, r.type);
	}
	(void)otel__elf_tls_classify(elf, "otel_thread_ctx_v1", &access);
	otel__elf_close(elf);
	return 0;
}
