/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A small, bounds-checked reader for 64-bit little-endian ELF files of
 * x86-64 and aarch64, internal to the project (hidden symbols, never
 * exported, never installed).  It answers what the checker, the library's
 * self-check and out-of-process readers need to know about the thread-context
 * slot: program headers, the dynamic section, symbols, dynamic relocations,
 * and the TLS access model the relocations against a symbol imply.
 *
 * Trust
 * -----
 * The input may be truncated, corrupt or hostile.  Every offset, size, count,
 * index, string and alignment taken from it is checked before use; a bad file
 * gives an error code and a message, never a crash, an out-of-bounds read or
 * an unbounded loop.  Strings handed out are NUL-terminated inside the
 * reader's own copies of the string tables.
 *
 * Model
 * -----
 * otel__elf_open_path(), _open_fd() and _open_memory() read and validate
 * everything at once (headers, the dynamic section, .dynsym and its strings
 * and versions, the dynamic relocations and, on request, .symtab) into memory
 * the reader owns; after that no call does I/O, the source may go away, and a
 * struct otel__elf is immutable: any number of threads may query it.  All
 * pointers returned point into it and live until otel__elf_close().
 *
 * Where a table comes from: the section headers when the file has them,
 * else the dynamic section (DT_SYMTAB with its size from DT_HASH or
 * DT_GNU_HASH, DT_STRTAB/DT_STRSZ, DT_RELA/DT_RELASZ, DT_JMPREL/DT_PLTRELSZ,
 * DT_VERSYM/DT_VERDEF/DT_VERNEED), translated to file offsets through the
 * PT_LOAD segments.  So a file stripped of its section headers still reads.
 *
 * Not async-signal-safe: opening allocates.  Errors are negative
 * enum otel__elf_status values; functions that can fail fill a
 * struct otel__elf_error when given one.
 */
#ifndef OTEL_ELF_READER_H
#define OTEL_ELF_READER_H

#include <stddef.h>
#include <stdint.h>

#include "elf_hash.h"

#define OTEL__ELF_API __attribute__((visibility("hidden")))

/*
 * The ELF64 structures and constants the reader uses, as the gABI defines
 * them, under names of their own: glibc's and musl's <elf.h> spell some of
 * them differently and older ones lack a few.  (This header is not named
 * elf.h: src/ is on the library's include path, and <link.h> includes
 * <elf.h>.)
 */
struct otel__elf64_ehdr {
	unsigned char e_ident[16];
	uint16_t e_type, e_machine;
	uint32_t e_version;
	uint64_t e_entry, e_phoff, e_shoff;
	uint32_t e_flags;
	uint16_t e_ehsize, e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx;
};

struct otel__elf64_phdr {
	uint32_t p_type, p_flags;
	uint64_t p_offset, p_vaddr, p_paddr, p_filesz, p_memsz, p_align;
};

struct otel__elf64_shdr {
	uint32_t sh_name, sh_type;
	uint64_t sh_flags, sh_addr, sh_offset, sh_size;
	uint32_t sh_link, sh_info;
	uint64_t sh_addralign, sh_entsize;
};

struct otel__elf64_dyn {
	int64_t d_tag;
	uint64_t d_val;
};

struct otel__elf64_sym {
	uint32_t st_name;
	unsigned char st_info, st_other;
	uint16_t st_shndx;
	uint64_t st_value, st_size;
};

struct otel__elf64_rela {
	uint64_t r_offset, r_info;
	int64_t r_addend;
};

#define OTEL__ET_REL 1
#define OTEL__ET_EXEC 2
#define OTEL__ET_DYN 3

#define OTEL__PT_LOAD 1
#define OTEL__PT_DYNAMIC 2
#define OTEL__PT_INTERP 3
#define OTEL__PT_TLS 7
#define OTEL__PT_GNU_STACK 0x6474e551u
#define OTEL__PF_X 1u

#define OTEL__SHT_SYMTAB 2
#define OTEL__SHT_STRTAB 3
#define OTEL__SHT_RELA 4
#define OTEL__SHT_HASH 5
#define OTEL__SHT_DYNAMIC 6
#define OTEL__SHT_NOBITS 8
#define OTEL__SHT_DYNSYM 11
#define OTEL__SHT_GNU_HASH 0x6ffffff6u
#define OTEL__SHT_GNU_VERDEF 0x6ffffffdu
#define OTEL__SHT_GNU_VERNEED 0x6ffffffeu
#define OTEL__SHT_GNU_VERSYM 0x6fffffffu
#define OTEL__SHF_ALLOC 2u
#define OTEL__SHF_TLS 0x400u

#define OTEL__SHN_UNDEF 0
#define OTEL__SHN_LORESERVE 0xff00u
#define OTEL__SHN_ABS 0xfff1u
#define OTEL__SHN_XINDEX 0xffffu

#define OTEL__DT_NULL 0
#define OTEL__DT_NEEDED 1
#define OTEL__DT_PLTRELSZ 2
#define OTEL__DT_HASH 4
#define OTEL__DT_STRTAB 5
#define OTEL__DT_SYMTAB 6
#define OTEL__DT_RELA 7
#define OTEL__DT_RELASZ 8
#define OTEL__DT_RELAENT 9
#define OTEL__DT_STRSZ 10
#define OTEL__DT_SYMENT 11
#define OTEL__DT_SONAME 14
#define OTEL__DT_TEXTREL 22
#define OTEL__DT_JMPREL 23
#define OTEL__DT_FLAGS 30
#define OTEL__DT_PLTREL 20
#define OTEL__DT_GNU_HASH 0x6ffffef5
#define OTEL__DT_VERSYM 0x6ffffff0
#define OTEL__DT_FLAGS_1 0x6ffffffb
#define OTEL__DT_VERDEF 0x6ffffffc
#define OTEL__DT_VERDEFNUM 0x6ffffffd
#define OTEL__DT_VERNEED 0x6ffffffe
#define OTEL__DT_VERNEEDNUM 0x6fffffff

#define OTEL__DF_TEXTREL 0x4u
#define OTEL__DF_STATIC_TLS 0x10u
#define OTEL__DF_1_PIE 0x08000000u

#define OTEL__STB_LOCAL 0
#define OTEL__STB_GLOBAL 1
#define OTEL__STB_WEAK 2
#define OTEL__STB_GNU_UNIQUE 10
#define OTEL__STT_NOTYPE 0
#define OTEL__STT_OBJECT 1
#define OTEL__STT_FUNC 2
#define OTEL__STT_TLS 6
#define OTEL__STV_DEFAULT 0
#define OTEL__STV_INTERNAL 1
#define OTEL__STV_HIDDEN 2
#define OTEL__STV_PROTECTED 3

enum otel__elf_status {
	OTEL__ELF_OK = 0,
	/* The file could not be opened or read (the message has errno's text). */
	OTEL__ELF_EIO = -1,
	/* Out of memory. */
	OTEL__ELF_ENOMEM = -2,
	/* Not an ELF file (no \x7fELF magic). */
	OTEL__ELF_ENOTELF = -3,
	/* ELF, but not what the reader supports: 32-bit, big-endian, an
	 * unknown version, or an e_machine other than x86-64 and aarch64. */
	OTEL__ELF_EUNSUPPORTED = -4,
	/* A header or table lies partly or wholly past the end of the file. */
	OTEL__ELF_ETRUNCATED = -5,
	/* Inconsistent contents: a wrong entry size, an index or offset out of
	 * range, a table outside every PT_LOAD segment, a bad alignment ... */
	OTEL__ELF_EMALFORMED = -6,
	/* A lookup found nothing (no such symbol, no such table). */
	OTEL__ELF_ENOENT = -7,
	/* A bad argument (NULL, index out of range). */
	OTEL__ELF_EINVAL = -8,
};

struct otel__elf_error {
	int code;          /* enum otel__elf_status */
	char message[256]; /* English, NUL-terminated; "" on success */
};

/* A static description of a status code; never NULL. */
OTEL__ELF_API const char *otel__elf_strerror(int code);

/* The two machines the reader accepts (the values of e_machine). */
#define OTEL__ELF_X86_64 62   /* EM_X86_64 */
#define OTEL__ELF_AARCH64 183 /* EM_AARCH64 */

/* Dynamic relocation types the reader names and classifies. */
#define OTEL__R_X86_64_DTPMOD64 16
#define OTEL__R_X86_64_DTPOFF64 17
#define OTEL__R_X86_64_TPOFF64 18
#define OTEL__R_X86_64_TPOFF32 23
#define OTEL__R_X86_64_TLSDESC 36
#define OTEL__R_AARCH64_TLS_DTPMOD 1028
#define OTEL__R_AARCH64_TLS_DTPREL 1029
#define OTEL__R_AARCH64_TLS_TPREL 1030
#define OTEL__R_AARCH64_TLSDESC 1031

struct otel__elf;

/* Flags for the open functions. */
#define OTEL__ELF_WANT_SYMTAB 1u /* also load .symtab and its strings */

/*
 * Opens and validates an ELF file.  On success *out is a new reader (free it
 * with otel__elf_close()); on failure *out is NULL and the error is returned
 * (and described in *err when err is not NULL).
 *
 * _open_path: opens `path` read-only; a path that is not a regular file is
 *   refused (EIO).
 * _open_fd: reads the regular file open at `fd` with pread(); the fd is not
 *   closed and its offset is not moved.  /proc/PID/map_files/... works.
 * _open_memory: reads `size` bytes at `data`, a file image (not a loaded
 *   one); the bytes are copied, the caller may free them on return.
 */
OTEL__ELF_API int otel__elf_open_path(struct otel__elf **out, const char *path, unsigned int flags,
				      struct otel__elf_error *err);
OTEL__ELF_API int otel__elf_open_fd(struct otel__elf **out, int fd, unsigned int flags,
				    struct otel__elf_error *err);
OTEL__ELF_API int otel__elf_open_memory(struct otel__elf **out, const void *data, size_t size,
					unsigned int flags, struct otel__elf_error *err);
/* NULL is accepted. */
OTEL__ELF_API void otel__elf_close(struct otel__elf *elf);

/* What kind of file it is, from e_type, PT_INTERP and DF_1_PIE. */
enum otel__elf_kind {
	OTEL__ELF_KIND_OTHER = 0,          /* ET_REL, ET_CORE, ... */
	OTEL__ELF_KIND_EXECUTABLE,         /* ET_EXEC with PT_INTERP */
	OTEL__ELF_KIND_STATIC_EXECUTABLE,  /* ET_EXEC without PT_INTERP */
	OTEL__ELF_KIND_PIE,                /* ET_DYN with PT_INTERP */
	OTEL__ELF_KIND_STATIC_PIE,         /* ET_DYN, DF_1_PIE, no PT_INTERP */
	OTEL__ELF_KIND_SHARED_LIBRARY,     /* other ET_DYN */
};

/* A short English name of a kind ("shared library", "PIE executable" ...). */
OTEL__ELF_API const char *otel__elf_kind_name(enum otel__elf_kind kind);

/* True (1) for the kinds that are executables (the main program). */
OTEL__ELF_API int otel__elf_kind_is_executable(enum otel__elf_kind kind);

/* Where a table was read from. */
enum otel__elf_source {
	OTEL__ELF_SRC_NONE = 0,     /* the file has no such table */
	OTEL__ELF_SRC_SECTION,      /* from the section headers */
	OTEL__ELF_SRC_DYNAMIC,      /* from dynamic tags (sections stripped) */
};

/* Everything the reader found at the top level.  Filled by otel__elf_info(). */
struct otel__elf_info {
	uint16_t type;      /* e_type */
	uint16_t machine;   /* OTEL__ELF_X86_64 or OTEL__ELF_AARCH64 */
	enum otel__elf_kind kind;
	uint64_t entry;     /* e_entry */
	uint64_t file_size;
	size_t phnum;       /* program headers (otel__elf_phdr) */
	size_t shnum;       /* section headers; 0 when stripped */

	/* PT_INTERP: the requested program interpreter, or NULL. */
	const char *interp;

	/* PT_TLS (the first one; a file with two is refused). */
	int has_tls;
	uint64_t tls_vaddr, tls_filesz, tls_memsz, tls_align;

	/* PT_GNU_STACK: present?  Its p_flags (PF_X = 1 means executable). */
	int has_gnu_stack;
	uint32_t gnu_stack_flags;

	/* PT_DYNAMIC, or a SHT_DYNAMIC section when there is no PT_DYNAMIC. */
	int has_dynamic;
	uint64_t dt_flags;   /* DT_FLAGS (DF_STATIC_TLS 0x10, DF_TEXTREL 0x4), 0 if absent */
	uint64_t dt_flags_1; /* DT_FLAGS_1 (DF_1_PIE 0x08000000), 0 if absent */
	int dt_textrel;      /* DT_TEXTREL present */
	const char *soname;  /* DT_SONAME, or NULL */
	size_t needed_count; /* DT_NEEDED entries (otel__elf_needed) */

	/* Symbol tables. */
	enum otel__elf_source dynsym_source;
	size_t dynsym_count; /* entries, the null entry 0 included */
	int has_versions;    /* .gnu.version present */
	int has_symtab;      /* a .symtab exists in the file */
	int symtab_loaded;   /* ... and was loaded (OTEL__ELF_WANT_SYMTAB) */
	size_t symtab_count;

	/* Dynamic relocations (.rela.dyn and .rela.plt). */
	enum otel__elf_source rela_source;
	size_t rela_count;
};

OTEL__ELF_API void otel__elf_info(const struct otel__elf *elf, struct otel__elf_info *info);

/* Program header `i` (0 <= i < phnum), or NULL.  PT_LOAD, PT_DYNAMIC, PT_TLS
 * and PT_INTERP headers were checked to lie inside the file. */
OTEL__ELF_API const struct otel__elf64_phdr *otel__elf_phdr(const struct otel__elf *elf, size_t i);

/*
 * Translates a virtual address range to a file offset through the PT_LOAD
 * segments: [vaddr, vaddr + size) must lie within one segment's file image.
 * ENOENT when it does not.
 */
OTEL__ELF_API int otel__elf_vaddr_to_offset(const struct otel__elf *elf, uint64_t vaddr,
					    uint64_t size, uint64_t *offset);

/* Entries of the dynamic section up to DT_NULL (which is not counted). */
OTEL__ELF_API size_t otel__elf_dyn_count(const struct otel__elf *elf);
OTEL__ELF_API const struct otel__elf64_dyn *otel__elf_dyn(const struct otel__elf *elf, size_t i);
/* The value of the first entry with `tag`; ENOENT when there is none. */
OTEL__ELF_API int otel__elf_dyn_get(const struct otel__elf *elf, int64_t tag, uint64_t *value);
/* DT_NEEDED name `i` (0 <= i < needed_count), or NULL. */
OTEL__ELF_API const char *otel__elf_needed(const struct otel__elf *elf, size_t i);

/* Name of section `shndx`, or NULL (no section headers, special index, or
 * out of range). */
OTEL__ELF_API const char *otel__elf_section_name(const struct otel__elf *elf, size_t shndx);
/* Section header `shndx`, or NULL. */
OTEL__ELF_API const struct otel__elf64_shdr *otel__elf_shdr(const struct otel__elf *elf, size_t shndx);

enum otel__elf_symtab {
	OTEL__ELF_DYNSYM = 0, /* .dynsym */
	OTEL__ELF_SYMTAB = 1, /* .symtab (only when opened with OTEL__ELF_WANT_SYMTAB) */
};

struct otel__elf_sym {
	const char *name;   /* never NULL */
	uint64_t value;     /* st_value: for STT_TLS, the offset in the TLS segment */
	uint64_t size;      /* st_size */
	uint32_t index;     /* in its table */
	uint16_t shndx;     /* st_shndx (SHN_UNDEF 0: undefined, an import) */
	uint8_t type;       /* ELF64_ST_TYPE: STT_TLS is 6 */
	uint8_t bind;       /* ELF64_ST_BIND: STB_GLOBAL 1, STB_WEAK 2 */
	uint8_t visibility; /* ELF64_ST_VISIBILITY: STV_DEFAULT 0 */
	/* .dynsym only: the symbol's version name (a version this file
	 * defines, or one it needs for an import), or NULL for none. */
	const char *version;
	int version_hidden; /* the version is not the default one (name@VER, not name@@VER) */
};

/* Number of entries in a table (0 when absent), the null entry included. */
OTEL__ELF_API size_t otel__elf_sym_count(const struct otel__elf *elf, enum otel__elf_symtab table);
/* Entry `index` of a table.  EINVAL when out of range. */
OTEL__ELF_API int otel__elf_sym_get(const struct otel__elf *elf, enum otel__elf_symtab table,
				    size_t index, struct otel__elf_sym *sym);
/*
 * Looks up `name` (compared in full, without version) in a table: the first
 * defined entry (st_shndx != SHN_UNDEF) with a global or weak binding, else
 * the first defined entry, else the first undefined one.  ENOENT when no
 * entry has the name.
 */
OTEL__ELF_API int otel__elf_sym_find(const struct otel__elf *elf, enum otel__elf_symtab table,
				     const char *name, struct otel__elf_sym *sym);

enum otel__elf_rela_table {
	OTEL__ELF_RELA_DYN = 0, /* .rela.dyn, or DT_RELA */
	OTEL__ELF_RELA_PLT = 1, /* .rela.plt, or DT_JMPREL */
};

struct otel__elf_rela {
	uint64_t offset;      /* r_offset: a virtual address in the file's layout */
	int64_t addend;       /* r_addend */
	uint32_t type;        /* ELF64_R_TYPE */
	uint32_t sym;         /* ELF64_R_SYM: an index in .dynsym, 0 for none */
	const char *sym_name; /* the symbol's name; "" for sym 0 */
	enum otel__elf_rela_table table;
};

/* Dynamic relocations, .rela.dyn first, then .rela.plt, in file order.
 * Every sym index was checked against .dynsym. */
OTEL__ELF_API size_t otel__elf_rela_count(const struct otel__elf *elf);
OTEL__ELF_API int otel__elf_rela_get(const struct otel__elf *elf, size_t i, struct otel__elf_rela *rela);

/* "R_X86_64_TLSDESC", "R_AARCH64_TLS_TPREL" ...; NULL for a type the
 * reader does not name. */
OTEL__ELF_API const char *otel__elf_rela_type_name(uint16_t machine, uint32_t type);

/* TLS access models.  A bit set: one module may hold accesses of several. */
#define OTEL__ELF_TLS_DESC 1u /* TLSDESC (R_*_TLSDESC) */
#define OTEL__ELF_TLS_GD 2u   /* legacy general-dynamic (DTPMOD64 + DTPOFF64) */
#define OTEL__ELF_TLS_IE 4u   /* initial-exec (TPOFF64 / TLS_TPREL, TPOFF32) */
#define OTEL__ELF_TLS_LE 8u   /* local-exec: no relocation, symbol defined in an executable */

/* The model a dynamic relocation type belongs to, or 0 when it is not a
 * TLS type. */
OTEL__ELF_API unsigned int otel__elf_tls_model_of(uint16_t machine, uint32_t type);
/* "TLSDESC", "general-dynamic", "initial-exec", "local-exec"; for one bit. */
OTEL__ELF_API const char *otel__elf_tls_model_name(unsigned int model);

/* The first relocation of one kind against the symbol, and how many. */
struct otel__elf_tls_ref {
	size_t count;     /* 0: none of this kind (the rest is then zero) */
	uint64_t offset;  /* r_offset of the first one (its GOT entry) */
	int64_t addend;
	uint32_t type;
	enum otel__elf_rela_table table;
};

/*
 * How the module's code reaches a TLS symbol, from the dynamic relocations
 * against it.  A reader with the module's load base B reads:
 *
 *   desc:   the TLS descriptor, two words at B + desc.offset; the second,
 *           at B + desc.offset + 8, is the argument: with glibc and musl a
 *           small value is the static offset from the thread pointer, a
 *           pointer means dynamic TLS (it points to {module id, offset}).
 *   dtpmod: the module id at B + dtpmod.offset, and with dtpoff (the offset
 *           in the module's block, at B + dtpoff.offset), a DTV walk.
 *   tpoff:  the offset from the thread pointer, at B + tpoff.offset.
 *   none of them, in an executable that defines the symbol: local-exec, the
 *           offset is known from the file (otel__elf_tls_local_exec_offset).
 */
struct otel__elf_tls_access {
	unsigned int models;          /* OR of OTEL__ELF_TLS_*; 0: no access found */
	struct otel__elf_tls_ref desc;   /* R_X86_64_TLSDESC, R_AARCH64_TLSDESC */
	struct otel__elf_tls_ref dtpmod; /* R_X86_64_DTPMOD64, R_AARCH64_TLS_DTPMOD */
	struct otel__elf_tls_ref dtpoff; /* R_X86_64_DTPOFF64, R_AARCH64_TLS_DTPREL */
	struct otel__elf_tls_ref tpoff;  /* R_X86_64_TPOFF64 (or 32), R_AARCH64_TLS_TPREL */
	size_t other;  /* relocations against the symbol of a non-TLS type */
	int defined;   /* the symbol is defined in this file's .dynsym */
};

/*
 * Classifies the accesses to the .dynsym symbol `name`: every dynamic
 * relocation against it.  OTEL__ELF_TLS_LE is reported when there is no TLS
 * relocation against it, it is defined here, and the file is an executable.
 * ENOENT when .dynsym has no such name (the access struct is still zeroed).
 */
OTEL__ELF_API int otel__elf_tls_classify(const struct otel__elf *elf, const char *name,
					 struct otel__elf_tls_access *access);

/*
 * The offset from the thread pointer of TLS symbol value `st_value` in an
 * executable (the main program: module 1, whose block comes first in static
 * TLS), as glibc and musl lay it out:
 *   x86-64:  st_value - roundup(p_memsz, p_align)     (block below the TCB)
 *   aarch64: roundup(16, p_align) + st_value          (block above the TCB)
 * ENOENT without PT_TLS; EMALFORMED when p_vaddr is not p_align-aligned (a
 * layout these formulas do not cover) or st_value is outside the segment;
 * EINVAL for a file that is not an executable.
 */
OTEL__ELF_API int otel__elf_tls_local_exec_offset(const struct otel__elf *elf, uint64_t st_value,
						  int64_t *tp_offset);

#endif /* OTEL_ELF_READER_H */
