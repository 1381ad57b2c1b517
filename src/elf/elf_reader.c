/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ELF reader (src/elf/elf_reader.h).  Everything is read and checked in
 * otel__elf_open_*(); the query functions only look at what was kept.
 *
 * How the checks are written: every range taken from the file goes through
 * in_file() or a PT_LOAD translation before it is read, every product of a
 * count and an entry size through mul_size(), every index is compared with
 * its table's count, and every string table is copied with one NUL byte
 * appended, so that a name offset inside the table always yields a
 * terminated string.  Loops over on-disk lists are bounded both by their
 * count and by the bytes available.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf_reader.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the ELF reader reads little-endian files in place: it needs a little-endian host"
#endif

_Static_assert(sizeof(struct otel__elf64_ehdr) == 64, "Elf64_Ehdr");
_Static_assert(sizeof(struct otel__elf64_phdr) == 56, "Elf64_Phdr");
_Static_assert(sizeof(struct otel__elf64_shdr) == 64, "Elf64_Shdr");
_Static_assert(sizeof(struct otel__elf64_dyn) == 16, "Elf64_Dyn");
_Static_assert(sizeof(struct otel__elf64_sym) == 24, "Elf64_Sym");
_Static_assert(sizeof(struct otel__elf64_rela) == 24, "Elf64_Rela");

/* Longest PT_INTERP string accepted. */
#define INTERP_MAX 4096u
/* Most version definitions and needs read (the index is 15 bits). */
#define VERSIONS_MAX 0x8000u
/* Bytes read at a time when walking a GNU hash chain. */
#define CHAIN_CHUNK 4096u

/* A string table: `size` bytes from the file, plus a NUL at data[size]. */
struct strtab {
	char *data;
	size_t size;
};

struct version_name {
	uint16_t index;
	uint32_t name; /* offset in the .dynsym string table */
};

struct otel__elf {
	/* The source; only used while opening. */
	const unsigned char *mem;
	int fd;
	uint64_t size;

	struct otel__elf64_ehdr eh;
	struct otel__elf64_phdr *ph;
	size_t phnum;
	struct otel__elf64_shdr *sh;
	size_t shnum;
	struct strtab shstr;

	struct otel__elf64_dyn *dyn;
	size_t dyn_count;
	struct strtab dynstr; /* DT_STRTAB: SONAME, NEEDED */
	uint64_t dynstr_off;  /* its offset in the file */
	uint64_t *needed;     /* offsets in dynstr */
	char *interp;

	struct otel__elf64_sym *dynsym;
	size_t dynsym_count;
	struct strtab dynsym_str; /* the strings .dynsym's names are in */
	bool dynsym_str_is_dynstr;
	uint16_t *versym; /* dynsym_count entries, or NULL */
	struct version_name *versions;
	size_t versions_count;

	struct otel__elf64_sym *symtab;
	size_t symtab_count;
	struct strtab symtab_str;

	struct otel__elf64_rela *rela;
	unsigned char *rela_table; /* enum otel__elf_rela_table per entry */
	size_t rela_count;

	struct otel__elf_info info;
};

/* The dynamic tags the reader uses. */
struct dyn_tags {
	bool has_strtab, has_strsz, has_symtab, has_syment, has_hash, has_gnu_hash;
	bool has_rela, has_relasz, has_relaent, has_jmprel, has_pltrelsz, has_pltrel;
	bool has_soname, has_versym, has_verdef, has_verneed;
	uint64_t strtab, strsz, symtab, syment, hash, gnu_hash;
	uint64_t rela, relasz, relaent, jmprel, pltrelsz, pltrel;
	uint64_t soname, versym, verdef, verdefnum, verneed, verneednum;
};

__attribute__((format(printf, 3, 4)))
static int fail(struct otel__elf_error *err, int code, const char *fmt, ...)
{
	if (err != NULL) {
		va_list ap;

		err->code = code;
		va_start(ap, fmt);
		vsnprintf(err->message, sizeof(err->message), fmt, ap);
		va_end(ap);
	}
	return code;
}

static unsigned long long ull(uint64_t v)
{
	return (unsigned long long)v;
}

static bool in_file(const struct otel__elf *e, uint64_t off, uint64_t size)
{
	return off <= e->size && size <= e->size - off;
}

static bool mul_size(uint64_t a, uint64_t b, uint64_t *r)
{
	return !__builtin_mul_overflow(a, b, r);
}

static bool is_pow2_or_zero(uint64_t v)
{
	return (v & (v - 1)) == 0;
}

static int read_at(struct otel__elf *e, uint64_t off, void *buf, uint64_t n, const char *what,
		   struct otel__elf_error *err)
{
	uint64_t done = 0;

	if (!in_file(e, off, n))
		return fail(err, OTEL__ELF_ETRUNCATED,
			    "%s (%llu bytes at offset %#llx) extends past the end of the file (%llu bytes)",
			    what, ull(n), ull(off), ull(e->size));
	if (e->mem != NULL) {
		if (n != 0)
			memcpy(buf, e->mem + off, (size_t)n);
		return OTEL__ELF_OK;
	}
	while (done < n) {
		ssize_t r = pread(e->fd, (char *)buf + done, (size_t)(n - done), (off_t)(off + done));

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return fail(err, OTEL__ELF_EIO, "reading %s: %s", what, strerror(errno));
		}
		if (r == 0)
			return fail(err, OTEL__ELF_ETRUNCATED,
				    "reading %s: the file ended early (did it shrink while being read?)",
				    what);
		done += (uint64_t)r;
	}
	return OTEL__ELF_OK;
}

/* Reads n bytes into a new buffer with `extra` zero bytes after them. */
static int load(struct otel__elf *e, uint64_t off, uint64_t n, size_t extra, void **out,
		const char *what, struct otel__elf_error *err)
{
	void *buf;
	int rc;

	*out = NULL;
	if (!in_file(e, off, n))
		return fail(err, OTEL__ELF_ETRUNCATED,
			    "%s (%llu bytes at offset %#llx) extends past the end of the file (%llu bytes)",
			    what, ull(n), ull(off), ull(e->size));
	if (n > SIZE_MAX - extra - 1)
		return fail(err, OTEL__ELF_ENOMEM, "%s is too large", what);
	buf = malloc((size_t)n + extra + 1);
	if (buf == NULL)
		return fail(err, OTEL__ELF_ENOMEM, "out of memory reading %s (%llu bytes)", what, ull(n));
	memset((char *)buf + n, 0, extra + 1);
	rc = read_at(e, off, buf, n, what, err);
	if (rc != OTEL__ELF_OK) {
		free(buf);
		return rc;
	}
	*out = buf;
	return OTEL__ELF_OK;
}

static int load_strtab(struct otel__elf *e, uint64_t off, uint64_t n, struct strtab *t,
		       const char *what, struct otel__elf_error *err)
{
	void *buf;
	int rc = load(e, off, n, 0, &buf, what, err);

	if (rc != OTEL__ELF_OK)
		return rc;
	t->data = buf;
	t->size = (size_t)n;
	return OTEL__ELF_OK;
}

/* A name at `off` in table t, or NULL when off is outside it. */
static const char *str_at(const struct strtab *t, uint64_t off)
{
	if (t->data == NULL || off >= t->size)
		return NULL;
	return t->data + off;
}

OTEL__ELF_API int otel__elf_vaddr_to_offset(const struct otel__elf *e, uint64_t vaddr, uint64_t size,
					    uint64_t *offset)
{
	if (e == NULL || offset == NULL)
		return OTEL__ELF_EINVAL;
	for (size_t i = 0; i < e->phnum; i++) {
		const struct otel__elf64_phdr *p = &e->ph[i];

		if (p->p_type != OTEL__PT_LOAD || vaddr < p->p_vaddr)
			continue;
		if (vaddr - p->p_vaddr > p->p_filesz || size > p->p_filesz - (vaddr - p->p_vaddr))
			continue;
		*offset = p->p_offset + (vaddr - p->p_vaddr);
		return OTEL__ELF_OK;
	}
	return OTEL__ELF_ENOENT;
}

/* Bytes of file image that follow vaddr in its PT_LOAD segment, or 0. */
static uint64_t vaddr_room(const struct otel__elf *e, uint64_t vaddr)
{
	for (size_t i = 0; i < e->phnum; i++) {
		const struct otel__elf64_phdr *p = &e->ph[i];

		if (p->p_type == OTEL__PT_LOAD && vaddr >= p->p_vaddr &&
		    vaddr - p->p_vaddr < p->p_filesz)
			return p->p_filesz - (vaddr - p->p_vaddr);
	}
	return 0;
}

/* Like load(), for a table the dynamic section gives by address. */
static int load_vaddr(struct otel__elf *e, uint64_t vaddr, uint64_t n, size_t extra, void **out,
		      const char *what, struct otel__elf_error *err)
{
	uint64_t off;

	*out = NULL;
	if (otel__elf_vaddr_to_offset(e, vaddr, n, &off) != OTEL__ELF_OK)
		return fail(err, OTEL__ELF_EMALFORMED,
			    "%s (%llu bytes at address %#llx) is not inside the file image of a PT_LOAD segment",
			    what, ull(n), ull(vaddr));
	return load(e, off, n, extra, out, what, err);
}

static const char *machine_name(uint16_t m)
{
	switch (m) {
	case 0: return "none";
	case 3: return "i386";
	case 8: return "MIPS";
	case 20: return "PowerPC";
	case 21: return "PowerPC64";
	case 22: return "s390";
	case 40: return "ARM (32-bit)";
	case 43: return "SPARC v9";
	case 50: return "IA-64";
	case 62: return "x86-64";
	case 183: return "aarch64";
	case 243: return "RISC-V";
	case 247: return "BPF";
	case 258: return "LoongArch";
	}
	return "unknown";
}

static int read_ehdr(struct otel__elf *e, struct otel__elf_error *err)
{
	static const unsigned char magic[4] = { 0x7f, 'E', 'L', 'F' };
	unsigned char ident[16];
	int rc;

	if (e->size == 0)
		return fail(err, OTEL__ELF_ENOTELF, "not an ELF file: the file is empty");
	if (e->size < 16) {
		size_t n = (size_t)e->size;

		rc = read_at(e, 0, ident, n, "the ELF identification", err);
		if (rc != OTEL__ELF_OK)
			return rc;
		if (memcmp(ident, magic, n < 4 ? n : 4) != 0)
			return fail(err, OTEL__ELF_ENOTELF, "not an ELF file: no \\x7fELF magic");
		return fail(err, OTEL__ELF_ETRUNCATED, "truncated ELF file: only %zu bytes", n);
	}
	rc = read_at(e, 0, ident, 16, "the ELF identification", err);
	if (rc != OTEL__ELF_OK)
		return rc;
	if (memcmp(ident, magic, 4) != 0)
		return fail(err, OTEL__ELF_ENOTELF, "not an ELF file: no \\x7fELF magic");
	if (ident[4] == 1)
		return fail(err, OTEL__ELF_EUNSUPPORTED,
			    "32-bit ELF (ELFCLASS32) is not supported: only 64-bit x86-64 and aarch64");
	if (ident[4] != 2)
		return fail(err, OTEL__ELF_EMALFORMED, "invalid ELF class %u", ident[4]);
	if (ident[5] == 2)
		return fail(err, OTEL__ELF_EUNSUPPORTED,
			    "big-endian ELF (ELFDATA2MSB) is not supported: only little-endian x86-64 and aarch64");
	if (ident[5] != 1)
		return fail(err, OTEL__ELF_EMALFORMED, "invalid ELF data encoding %u", ident[5]);
	if (ident[6] != 1)
		return fail(err, OTEL__ELF_EUNSUPPORTED, "unknown ELF version %u", ident[6]);
	if (e->size < sizeof(e->eh))
		return fail(err, OTEL__ELF_ETRUNCATED,
			    "truncated ELF file: %llu bytes, shorter than the 64-byte ELF header",
			    ull(e->size));
	rc = read_at(e, 0, &e->eh, sizeof(e->eh), "the ELF header", err);
	if (rc != OTEL__ELF_OK)
		return rc;
	if (e->eh.e_machine != OTEL__ELF_X86_64 && e->eh.e_machine != OTEL__ELF_AARCH64)
		return fail(err, OTEL__ELF_EUNSUPPORTED,
			    "e_machine %u (%s) is not supported: only x86-64 (62) and aarch64 (183)",
			    e->eh.e_machine, machine_name(e->eh.e_machine));
	if (e->eh.e_version != 1)
		return fail(err, OTEL__ELF_EUNSUPPORTED, "unknown e_version %u", e->eh.e_version);
	if (e->eh.e_ehsize < sizeof(e->eh))
		return fail(err, OTEL__ELF_EMALFORMED, "e_ehsize %u is smaller than 64", e->eh.e_ehsize);
	return OTEL__ELF_OK;
}

static int read_shdrs(struct otel__elf *e, struct otel__elf_error *err)
{
	uint64_t n = e->eh.e_shnum, bytes;
	size_t strndx = e->eh.e_shstrndx;
	void *buf;
	int rc;

	if (e->eh.e_shoff == 0)
		return OTEL__ELF_OK; /* no section headers: stripped of them */
	if (e->eh.e_shentsize != sizeof(struct otel__elf64_shdr))
		return fail(err, OTEL__ELF_EMALFORMED, "e_shentsize is %u, not 64", e->eh.e_shentsize);
	if (n == 0) {
		/* More than SHN_LORESERVE sections: the count is in section 0. */
		struct otel__elf64_shdr first;

		rc = read_at(e, e->eh.e_shoff, &first, sizeof(first), "section header 0", err);
		if (rc != OTEL__ELF_OK)
			return rc;
		n = first.sh_size;
		if (n == 0)
			return OTEL__ELF_OK;
	}
	if (!mul_size(n, sizeof(struct otel__elf64_shdr), &bytes))
		return fail(err, OTEL__ELF_EMALFORMED, "section header count %llu is absurd", ull(n));
	rc = load(e, e->eh.e_shoff, bytes, 0, &buf, "the section headers", err);
	if (rc != OTEL__ELF_OK)
		return rc;
	e->sh = buf;
	e->shnum = (size_t)n;

	if (strndx == OTEL__SHN_XINDEX)
		strndx = e->sh[0].sh_link;
	for (size_t i = 1; i < e->shnum; i++) {
		const struct otel__elf64_shdr *s = &e->sh[i];

		if (s->sh_type != OTEL__SHT_NOBITS && !in_file(e, s->sh_offset, s->sh_size))
			return fail(err, OTEL__ELF_ETRUNCATED,
				    "section %zu (%llu bytes at offset %#llx) extends past the end of the file (%llu bytes)",
				    i, ull(s->sh_size), ull(s->sh_offset), ull(e->size));
		if (!is_pow2_or_zero(s->sh_addralign))
			return fail(err, OTEL__ELF_EMALFORMED,
				    "section %zu has alignment %llu, not a power of two", i,
				    ull(s->sh_addralign));
	}
	if (strndx != OTEL__SHN_UNDEF) {
		const struct otel__elf64_shdr *s;

		if (strndx >= e->shnum)
			return fail(err, OTEL__ELF_EMALFORMED,
				    "the section name table index %zu is out of range (%zu sections)",
				    strndx, e->shnum);
		s = &e->sh[strndx];
		if (s->sh_type != OTEL__SHT_STRTAB)
			return fail(err, OTEL__ELF_EMALFORMED,
				    "the section name table (section %zu) is not a string table", strndx);
		rc = load_strtab(e, s->sh_offset, s->sh_size, &e->shstr, "the section name table", err);
		if (rc != OTEL__ELF_OK)
			return rc;
	}
	return OTEL__ELF_OK;
}

static int read_phdrs(struct otel__elf *e, struct otel__elf_error *err)
{
	uint64_t n = e->eh.e_phnum, bytes;
	bool tls = false, dynamic = false, interp = false, stack = false;
	void *buf;
	int rc;

	if (n == 0xffff) {
		/* PN_XNUM: the real count is in section 0's sh_info. */
		if (e->shnum == 0)
			return fail(err, OTEL__ELF_EMALFORMED,
				    "e_phnum is PN_XNUM but there is no section header 0");
		n = e->sh[0].sh_info;
	}
	if (n == 0)
		return OTEL__ELF_OK;
	if (e->eh.e_phentsize != sizeof(struct otel__elf64_phdr))
		return fail(err, OTEL__ELF_EMALFORMED, "e_phentsize is %u, not 56", e->eh.e_phentsize);
	if (!mul_size(n, sizeof(struct otel__elf64_phdr), &bytes))
		return fail(err, OTEL__ELF_EMALFORMED, "program header count %llu is absurd", ull(n));
	rc = load(e, e->eh.e_phoff, bytes, 0, &buf, "the program headers", err);
	if (rc != OTEL__ELF_OK)
		return rc;
	e->ph = buf;
	e->phnum = (size_t)n;

	for (size_t i = 0; i < e->phnum; i++) {
		const struct otel__elf64_phdr *p = &e->ph[i];
		uint64_t end;

		switch (p->p_type) {
		case OTEL__PT_LOAD:
		case OTEL__PT_TLS:
			if (p->p_filesz > p->p_memsz)
				return fail(err, OTEL__ELF_EMALFORMED,
					    "program header %zu: p_filesz %#llx exceeds p_memsz %#llx", i,
					    ull(p->p_filesz), ull(p->p_memsz));
			if (!is_pow2_or_zero(p->p_align))
				return fail(err, OTEL__ELF_EMALFORMED,
					    "program header %zu: p_align %llu is not a power of two", i,
					    ull(p->p_align));
			if (__builtin_add_overflow(p->p_vaddr, p->p_memsz, &end))
				return fail(err, OTEL__ELF_EMALFORMED,
					    "program header %zu: the segment wraps around the address space", i);
			break;
		case OTEL__PT_DYNAMIC:
		case OTEL__PT_INTERP:
			break;
		default:
			continue;
		}
		if (!in_file(e, p->p_offset, p->p_filesz))
			return fail(err, OTEL__ELF_ETRUNCATED,
				    "program header %zu: its %llu bytes at offset %#llx extend past the end of the file (%llu bytes)",
				    i, ull(p->p_filesz), ull(p->p_offset), ull(e->size));
		if (p->p_type == OTEL__PT_TLS) {
			if (tls)
				return fail(err, OTEL__ELF_EMALFORMED, "more than one PT_TLS segment");
			tls = true;
			e->info.has_tls = 1;
			e->info.tls_vaddr = p->p_vaddr;
			e->info.tls_filesz = p->p_filesz;
			e->info.tls_memsz = p->p_memsz;
			e->info.tls_align = p->p_align;
		} else if (p->p_type == OTEL__PT_DYNAMIC) {
			if (dynamic)
				return fail(err, OTEL__ELF_EMALFORMED, "more than one PT_DYNAMIC segment");
			dynamic = true;
		} else if (p->p_type == OTEL__PT_INTERP) {
			if (interp)
				return fail(err, OTEL__ELF_EMALFORMED, "more than one PT_INTERP segment");
			interp = true;
			if (p->p_filesz == 0 || p->p_filesz > INTERP_MAX)
				return fail(err, OTEL__ELF_EMALFORMED, "PT_INTERP has a bad size (%llu)",
					    ull(p->p_filesz));
			rc = load(e, p->p_offset, p->p_filesz, 0, &buf, "PT_INTERP", err);
			if (rc != OTEL__ELF_OK)
				return rc;
			e->interp = buf;
		}
	}
	for (size_t i = 0; i < e->phnum && !stack; i++) {
		if (e->ph[i].p_type == OTEL__PT_GNU_STACK) {
			stack = true;
			e->info.has_gnu_stack = 1;
			e->info.gnu_stack_flags = e->ph[i].p_flags;
		}
	}
	return OTEL__ELF_OK;
}

static const struct otel__elf64_shdr *find_section(const struct otel__elf *e, uint32_t type,
						   size_t *index)
{
	for (size_t i = 1; i < e->shnum; i++) {
		if (e->sh[i].sh_type == type) {
			if (index != NULL)
				*index = i;
			return &e->sh[i];
		}
	}
	return NULL;
}

static int read_dynamic(struct otel__elf *e, struct dyn_tags *t, struct otel__elf_error *err)
{
	uint64_t off = 0, size = 0, count;
	const struct otel__elf64_shdr *s;
	bool found = false;
	size_t needed = 0;
	void *buf;
	int rc;

	for (size_t i = 0; i < e->phnum; i++) {
		if (e->ph[i].p_type == OTEL__PT_DYNAMIC) {
			off = e->ph[i].p_offset;
			size = e->ph[i].p_filesz;
			found = true;
		}
	}
	if (!found && (s = find_section(e, OTEL__SHT_DYNAMIC, NULL)) != NULL) {
		off = s->sh_offset;
		size = s->sh_size;
		found = true;
	}
	if (!found)
		return OTEL__ELF_OK;
	if (size % sizeof(struct otel__elf64_dyn) != 0)
		return fail(err, OTEL__ELF_EMALFORMED,
			    "the dynamic section's size (%llu) is not a multiple of 16", ull(size));
	rc = load(e, off, size, 0, &buf, "the dynamic section", err);
	if (rc != OTEL__ELF_OK)
		return rc;
	e->dyn = buf;
	count = size / sizeof(struct otel__elf64_dyn);
	e->dyn_count = (size_t)count;
	for (size_t i = 0; i < count; i++) {
		if (e->dyn[i].d_tag == OTEL__DT_NULL) {
			e->dyn_count = i;
			break;
		}
	}
	e->info.has_dynamic = 1;

	for (size_t i = 0; i < e->dyn_count; i++) {
		const struct otel__elf64_dyn *d = &e->dyn[i];
		uint64_t v = d->d_val;

#define TAG(name, field)                        \
	case OTEL__DT_##name:                   \
		if (!t->has_##field) {          \
			t->has_##field = true;  \
			t->field = v;           \
		}                               \
		break;
		switch (d->d_tag) {
		TAG(STRTAB, strtab)
		TAG(STRSZ, strsz)
		TAG(SYMTAB, symtab)
		TAG(SYMENT, syment)
		TAG(HASH, hash)
		TAG(GNU_HASH, gnu_hash)
		TAG(RELA, rela)
		TAG(RELASZ, relasz)
		TAG(RELAENT, relaent)
		TAG(JMPREL, jmprel)
		TAG(PLTRELSZ, pltrelsz)
		TAG(PLTREL, pltrel)
		TAG(SONAME, soname)
		TAG(VERSYM, versym)
		TAG(VERDEF, verdef)
		TAG(VERNEED, verneed)
		case OTEL__DT_VERDEFNUM:
			t->verdefnum = v;
			break;
		case OTEL__DT_VERNEEDNUM:
			t->verneednum = v;
			break;
		case OTEL__DT_NEEDED:
			needed++;
			break;
		case OTEL__DT_FLAGS:
			e->info.dt_flags = v;
			break;
		case OTEL__DT_FLAGS_1:
			e->info.dt_flags_1 = v;
			break;
		case OTEL__DT_TEXTREL:
			e->info.dt_textrel = 1;
			break;
		default:
			break;
		}
#undef TAG
	}

	if (t->has_strtab) {
		if (!t->has_strsz)
			return fail(err, OTEL__ELF_EMALFORMED, "DT_STRTAB without DT_STRSZ");
		rc = load_vaddr(e, t->strtab, t->strsz, 0, &buf, "the dynamic string table (DT_STRTAB)", err);
		if (rc != OTEL__ELF_OK)
			return rc;
		otel__elf_vaddr_to_offset(e, t->strtab, t->strsz, &e->dynstr_off);
		e->dynstr.data = buf;
		e->dynstr.size = (size_t)t->strsz;
	}
	if ((t->has_soname || needed != 0) && e->dynstr.data == NULL)
		return fail(err, OTEL__ELF_EMALFORMED, "DT_SONAME or DT_NEEDED without DT_STRTAB");
	if (t->has_soname) {
		e->info.soname = str_at(&e->dynstr, t->soname);
		if (e->info.soname == NULL)
			return fail(err, OTEL__ELF_EMALFORMED,
				    "DT_SONAME %#llx is outside the dynamic string table (%zu bytes)",
				    ull(t->soname), e->dynstr.size);
	}
	if (needed != 0) {
		size_t k = 0;

		e->needed = calloc(needed, sizeof(*e->needed));
		if (e->needed == NULL)
			return fail(err, OTEL__ELF_ENOMEM, "out of memory");
		for (size_t i = 0; i < e->dyn_count; i++) {
			if (e->dyn[i].d_tag != OTEL__DT_NEEDED)
				continue;
			if (str_at(&e->dynstr, e->dyn[i].d_val) == NULL)
				return fail(err, OTEL__ELF_EMALFORMED,
					    "DT_NEEDED %#llx is outside the dynamic string table (%zu bytes)",
					    ull(e->dyn[i].d_val), e->dynstr.size);
			e->needed[k++] = e->dyn[i].d_val;
		}
		e->info.needed_count = k;
	}
	return OTEL__ELF_OK;
}

/* Number of .dynsym entries from DT_GNU_HASH: one past the highest index
 * reachable from the buckets. */
static int gnu_hash_count(struct otel__elf *e, uint64_t vaddr, uint64_t *count,
			  struct otel__elf_error *err)
{
	uint32_t hdr[4], nbuckets, symoffset, bloom_size, max = 0;
	uint64_t at, bytes;
	uint32_t *buckets = NULL;
	void *buf;
	int rc;

	rc = load_vaddr(e, vaddr, sizeof(hdr), 0, &buf, "the DT_GNU_HASH header", err);
	if (rc != OTEL__ELF_OK)
		return rc;
	memcpy(hdr, buf, sizeof(hdr));
	free(buf);
	nbuckets = hdr[0];
	symoffset = hdr[1];
	bloom_size = hdr[2];
	if (nbuckets == 0) {
		*count = symoffset;
		return OTEL__ELF_OK;
	}
	if (!mul_size(bloom_size, 8, &at) || __builtin_add_overflow(at, vaddr + 16, &at) ||
	    !mul_size(nbuckets, 4, &bytes))
		return fail(err, OTEL__ELF_EMALFORMED, "DT_GNU_HASH has absurd sizes");
	rc = load_vaddr(e, at, bytes, 0, &buf, "the DT_GNU_HASH buckets", err);
	if (rc != OTEL__ELF_OK)
		return rc;
	buckets = buf;
	for (uint32_t i = 0; i < nbuckets; i++)
		if (buckets[i] > max)
			max = buckets[i];
	free(buckets);
	if (max == 0) {
		*count = symoffset;
		return OTEL__ELF_OK;
	}
	if (max < symoffset)
		return fail(err, OTEL__ELF_EMALFORMED,
			    "DT_GNU_HASH bucket index %u is below its symbol offset %u", max, symoffset);
	at += bytes; /* the chains */
	{
		uint64_t idx = max, room;

		/* Walk the last chain, CHAIN_CHUNK bytes at a time, to its end bit. */
		for (;;) {
			uint64_t pos, n;
			uint32_t *chunk;
			bool end = false;

			if (!mul_size(idx - symoffset, 4, &pos) || __builtin_add_overflow(pos, at, &pos))
				return fail(err, OTEL__ELF_EMALFORMED, "DT_GNU_HASH chain is absurd");
			room = vaddr_room(e, pos);
			if (room < 4)
				return fail(err, OTEL__ELF_EMALFORMED,
					    "a DT_GNU_HASH chain runs past its segment without an end mark");
			n = room < CHAIN_CHUNK ? room & ~(uint64_t)3 : CHAIN_CHUNK;
			rc = load_vaddr(e, pos, n, 0, &buf, "a DT_GNU_HASH chain", err);
			if (rc != OTEL__ELF_OK)
				return rc;
			chunk = buf;
			for (uint64_t k = 0; k < n / 4; k++, idx++) {
				if (chunk[k] & 1) {
					end = true;
					break;
				}
			}
			free(chunk);
			if (end)
				break;
		}
		*count = idx + 1;
	}
	return OTEL__ELF_OK;
}

static int check_names(const struct otel__elf64_sym *syms, size_t n, const struct strtab *str,
		       const char *table, struct otel__elf_error *err)
{
	for (size_t i = 0; i < n; i++) {
		if (syms[i].st_name >= str->size && !(syms[i].st_name == 0 && str->size == 0))
			return fail(err, OTEL__ELF_EMALFORMED,
				    "%s entry %zu: name offset %#x is outside its string table (%zu bytes)",
				    table, i, syms[i].st_name, str->size);
	}
	return OTEL__ELF_OK;
}

/* The string table section `link` names, for a symbol or version section.
 * It is the dynamic string table itself (*shared set, nothing copied) when
 * allowed and it has the same bytes in the file. */
static int linked_strtab(struct otel__elf *e, const struct otel__elf64_shdr *s, bool allow_shared,
			 struct strtab *out, bool *shared, const char *what,
			 struct otel__elf_error *err)
{
	const struct otel__elf64_shdr *str;

	*shared = false;
	if (s->sh_link == 0 || s->sh_link >= e->shnum)
		return fail(err, OTEL__ELF_EMALFORMED, "%s: string table link %u is out of range", what,
			    s->sh_link);
	str = &e->sh[s->sh_link];
	if (str->sh_type != OTEL__SHT_STRTAB)
		return fail(err, OTEL__ELF_EMALFORMED, "%s: linked section %u is not a string table",
			    what, s->sh_link);
	if (allow_shared && e->dynstr.data != NULL && str->sh_size == e->dynstr.size &&
	    str->sh_offset == e->dynstr_off) {
		*out = e->dynstr;
		*shared = true;
		return OTEL__ELF_OK;
	}
	return load_strtab(e, str->sh_offset, str->sh_size, out, what, err);
}

static int read_dynsym(struct otel__elf *e, const struct dyn_tags *t, struct otel__elf_error *err)
{
	const struct otel__elf64_shdr *s = find_section(e, OTEL__SHT_DYNSYM, NULL);
	uint64_t count = 0, bytes;
	void *buf;
	int rc;

	if (s != NULL) {
		if (s->sh_entsize != sizeof(struct otel__elf64_sym) ||
		    s->sh_size % sizeof(struct otel__elf64_sym) != 0)
			return fail(err, OTEL__ELF_EMALFORMED,
				    ".dynsym has entry size %llu and size %llu; entries are 24 bytes",
				    ull(s->sh_entsize), ull(s->sh_size));
		rc = load(e, s->sh_offset, s->sh_size, 0, &buf, ".dynsym", err);
		if (rc != OTEL__ELF_OK)
			return rc;
		e->dynsym = buf;
		e->dynsym_count = (size_t)(s->sh_size / sizeof(struct otel__elf64_sym));
		rc = linked_strtab(e, s, true, &e->dynsym_str, &e->dynsym_str_is_dynstr, ".dynsym", err);
		if (rc != OTEL__ELF_OK)
			return rc;
		e->info.dynsym_source = OTEL__ELF_SRC_SECTION;
	} else if (t->has_symtab) {
		if (t->has_syment && t->syment != sizeof(struct otel__elf64_sym))
			return fail(err, OTEL__ELF_EMALFORMED, "DT_SYMENT is %llu, not 24", ull(t->syment));
		if (e->dynstr.data == NULL)
			return fail(err, OTEL__ELF_EMALFORMED, "DT_SYMTAB without DT_STRTAB");
		if (t->has_hash) {
			uint32_t hdr[2];

			rc = load_vaddr(e, t->hash, sizeof(hdr), 0, &buf, "the DT_HASH header", err);
			if (rc != OTEL__ELF_OK)
				return rc;
			memcpy(hdr, buf, sizeof(hdr));
			free(buf);
			count = hdr[1]; /* nchain: one chain entry per symbol */
		} else if (t->has_gnu_hash) {
			rc = gnu_hash_count(e, t->gnu_hash, &count, err);
			if (rc != OTEL__ELF_OK)
				return rc;
		} else {
			return fail(err, OTEL__ELF_EMALFORMED,
				    "DT_SYMTAB without DT_HASH or DT_GNU_HASH: the symbol count is unknown");
		}
		if (count == 0)
			return OTEL__ELF_OK;
		if (!mul_size(count, sizeof(struct otel__elf64_sym), &bytes))
			return fail(err, OTEL__ELF_EMALFORMED, "symbol count %llu is absurd", ull(count));
		rc = load_vaddr(e, t->symtab, bytes, 0, &buf, "the dynamic symbol table (DT_SYMTAB)", err);
		if (rc != OTEL__ELF_OK)
			return rc;
		e->dynsym = buf;
		e->dynsym_count = (size_t)count;
		e->dynsym_str = e->dynstr;
		e->dynsym_str_is_dynstr = true;
		e->info.dynsym_source = OTEL__ELF_SRC_DYNAMIC;
	} else {
		return OTEL__ELF_OK;
	}
	e->info.dynsym_count = e->dynsym_count;
	return check_names(e->dynsym, e->dynsym_count, &e->dynsym_str, ".dynsym", err);
}

static int add_version(struct otel__elf *e, uint16_t index, uint32_t name,
		       struct otel__elf_error *err)
{
	struct version_name *v;

	if (str_at(&e->dynsym_str, name) == NULL)
		return fail(err, OTEL__ELF_EMALFORMED,
			    "version name offset %#x is outside the string table", name);
	if (e->versions_count >= VERSIONS_MAX)
		return fail(err, OTEL__ELF_EMALFORMED, "too many symbol versions");
	v = realloc(e->versions, (e->versions_count + 1) * sizeof(*v));
	if (v == NULL)
		return fail(err, OTEL__ELF_ENOMEM, "out of memory");
	e->versions = v;
	v[e->versions_count].index = (uint16_t)(index & 0x7fff);
	v[e->versions_count].name = name;
	e->versions_count++;
	return OTEL__ELF_OK;
}

static bool get_bytes(const unsigned char *buf, uint64_t len, uint64_t at, void *out, size_t n)
{
	if (at > len || n > len - at)
		return false;
	memcpy(out, buf + at, n);
	return true;
}

/* Reads the bytes of a version table: from its section, or from its
 * address up to the end of its segment's file image. */
static int version_bytes(struct otel__elf *e, uint32_t type, bool has_tag, uint64_t tag,
			 void **buf, uint64_t *len, uint64_t *count_from_section,
			 const char *what, struct otel__elf_error *err)
{
	const struct otel__elf64_shdr *s = find_section(e, type, NULL);

	*buf = NULL;
	*len = 0;
	if (s != NULL) {
		*count_from_section = s->sh_info;
		*len = s->sh_size;
		return load(e, s->sh_offset, s->sh_size, 0, buf, what, err);
	}
	if (!has_tag)
		return OTEL__ELF_OK;
	*len = vaddr_room(e, tag);
	if (*len == 0)
		return fail(err, OTEL__ELF_EMALFORMED,
			    "%s at %#llx is not inside the file image of a PT_LOAD segment", what, ull(tag));
	if (*len > (1u << 20))
		*len = 1u << 20;
	return load_vaddr(e, tag, *len, 0, buf, what, err);
}

static int read_versions(struct otel__elf *e, const struct dyn_tags *t, struct otel__elf_error *err)
{
	const struct otel__elf64_shdr *s;
	unsigned char *buf;
	uint64_t len, count, at;
	void *p;
	int rc;

	if (e->dynsym == NULL)
		return OTEL__ELF_OK;

	/* .gnu.version: one u16 per .dynsym entry. */
	s = find_section(e, OTEL__SHT_GNU_VERSYM, NULL);
	if (s != NULL) {
		if (s->sh_size != (uint64_t)e->dynsym_count * 2)
			return fail(err, OTEL__ELF_EMALFORMED,
				    ".gnu.version has %llu bytes for %zu symbols", ull(s->sh_size),
				    e->dynsym_count);
		rc = load(e, s->sh_offset, s->sh_size, 0, &p, ".gnu.version", err);
	} else if (t->has_versym) {
		rc = load_vaddr(e, t->versym, (uint64_t)e->dynsym_count * 2, 0, &p,
				"the symbol versions (DT_VERSYM)", err);
	} else {
		return OTEL__ELF_OK;
	}
	if (rc != OTEL__ELF_OK)
		return rc;
	e->versym = p;
	e->info.has_versions = 1;

	/* Definitions: Elf64_Verdef (20 bytes) with Elf64_Verdaux (8) names. */
	count = t->verdefnum;
	rc = version_bytes(e, OTEL__SHT_GNU_VERDEF, t->has_verdef, t->verdef, &p, &len, &count,
			   "the version definitions", err);
	if (rc != OTEL__ELF_OK)
		return rc;
	buf = p;
	at = 0;
	for (uint64_t i = 0; buf != NULL && i < count && i < VERSIONS_MAX; i++) {
		uint16_t vd[4];
		uint32_t aux_next[3], name;

		if (!get_bytes(buf, len, at, vd, sizeof(vd)) ||
		    !get_bytes(buf, len, at + 8, aux_next, sizeof(aux_next))) {
			free(buf);
			return fail(err, OTEL__ELF_EMALFORMED, "version definition %llu is truncated", ull(i));
		}
		if (vd[0] != 1) {
			free(buf);
			return fail(err, OTEL__ELF_EMALFORMED,
				    "version definition %llu has version %u, not 1", ull(i), vd[0]);
		}
		/* aux_next: vd_hash, vd_aux, vd_next.  The first Verdaux names it. */
		if (vd[3] != 0) {
			if (!get_bytes(buf, len, at + aux_next[1], &name, sizeof(name))) {
				free(buf);
				return fail(err, OTEL__ELF_EMALFORMED,
					    "version definition %llu: its name is outside the table", ull(i));
			}
			rc = add_version(e, vd[2], name, err);
			if (rc != OTEL__ELF_OK) {
				free(buf);
				return rc;
			}
		}
		if (aux_next[2] == 0)
			break;
		at += aux_next[2];
	}
	free(buf);

	/* Needs: Elf64_Verneed (16 bytes) with Elf64_Vernaux (16) entries. */
	count = t->verneednum;
	rc = version_bytes(e, OTEL__SHT_GNU_VERNEED, t->has_verneed, t->verneed, &p, &len, &count,
			   "the version needs", err);
	if (rc != OTEL__ELF_OK)
		return rc;
	buf = p;
	at = 0;
	for (uint64_t i = 0, total = 0; buf != NULL && i < count && i < VERSIONS_MAX; i++) {
		uint16_t vn[2];
		uint32_t rest[3]; /* vn_file, vn_aux, vn_next */
		uint64_t aux;

		if (!get_bytes(buf, len, at, vn, sizeof(vn)) ||
		    !get_bytes(buf, len, at + 4, rest, sizeof(rest))) {
			free(buf);
			return fail(err, OTEL__ELF_EMALFORMED, "version need %llu is truncated", ull(i));
		}
		if (vn[0] != 1) {
			free(buf);
			return fail(err, OTEL__ELF_EMALFORMED, "version need %llu has version %u, not 1",
				    ull(i), vn[0]);
		}
		aux = at + rest[1];
		for (uint16_t k = 0; k < vn[1]; k++) {
			uint32_t a[4]; /* vna_hash, vna_flags|vna_other, vna_name, vna_next */

			if (++total > VERSIONS_MAX || !get_bytes(buf, len, aux, a, sizeof(a))) {
				free(buf);
				return fail(err, OTEL__ELF_EMALFORMED,
					    "version need %llu: entry %u is truncated", ull(i), k);
			}
			rc = add_version(e, (uint16_t)(a[1] >> 16), a[2], err);
			if (rc != OTEL__ELF_OK) {
				free(buf);
				return rc;
			}
			if (a[3] == 0)
				break;
			aux += a[3];
		}
		if (rest[2] == 0)
			break;
		at += rest[2];
	}
	free(buf);

	/* Every version index a symbol uses must be defined or needed. */
	for (size_t i = 1; i < e->dynsym_count; i++) {
		uint16_t v = e->versym[i] & 0x7fff;
		bool known = v < 2;

		for (size_t k = 0; k < e->versions_count && !known; k++)
			known = e->versions[k].index == v;
		if (!known)
			return fail(err, OTEL__ELF_EMALFORMED,
				    ".dynsym entry %zu has version index %u, which no version defines or needs",
				    i, v);
	}
	return OTEL__ELF_OK;
}

static int append_relas(struct otel__elf *e, uint64_t off, uint64_t size, int table,
			uint64_t skip_vaddr, uint64_t skip_size, uint64_t base_vaddr,
			const char *what, struct otel__elf_error *err)
{
	uint64_t n = size / sizeof(struct otel__elf64_rela), total;
	struct otel__elf64_rela *r;
	unsigned char *tab;
	void *buf;
	size_t k;
	int rc;

	if (size % sizeof(struct otel__elf64_rela) != 0)
		return fail(err, OTEL__ELF_EMALFORMED, "%s: size %llu is not a multiple of 24", what,
			    ull(size));
	if (n == 0)
		return OTEL__ELF_OK;
	rc = load(e, off, size, 0, &buf, what, err);
	if (rc != OTEL__ELF_OK)
		return rc;
	if (__builtin_add_overflow((uint64_t)e->rela_count, n, &total) ||
	    total > SIZE_MAX / sizeof(*r)) {
		free(buf);
		return fail(err, OTEL__ELF_EMALFORMED, "too many relocations");
	}
	r = realloc(e->rela, (size_t)total * sizeof(*r));
	if (r != NULL)
		e->rela = r;
	tab = r != NULL ? realloc(e->rela_table, (size_t)total) : NULL;
	if (tab == NULL) {
		free(buf);
		return fail(err, OTEL__ELF_ENOMEM, "out of memory reading %s", what);
	}
	e->rela_table = tab;
	k = e->rela_count;
	for (uint64_t i = 0; i < n; i++) {
		const struct otel__elf64_rela *src = (const struct otel__elf64_rela *)buf + i;
		uint64_t at = base_vaddr + i * sizeof(*src);
		uint64_t sym = src->r_info >> 32;

		/* DT_RELA may cover DT_JMPREL: those are listed as .rela.plt. */
		if (skip_size != 0 && at >= skip_vaddr && at - skip_vaddr < skip_size)
			continue;
		if (sym != 0 && sym >= e->dynsym_count) {
			free(buf);
			return fail(err, OTEL__ELF_EMALFORMED,
				    "%s entry %llu refers to symbol %llu, but .dynsym has %zu entries",
				    what, ull(i), ull(sym), e->dynsym_count);
		}
		e->rela[k] = *src;
		e->rela_table[k] = (unsigned char)table;
		k++;
	}
	e->rela_count = k;
	free(buf);
	return OTEL__ELF_OK;
}

static int read_relas(struct otel__elf *e, const struct dyn_tags *t, struct otel__elf_error *err)
{
	bool any = false;
	int rc;

	/* From the section headers: every allocated SHT_RELA section. */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 1; i < e->shnum; i++) {
			const struct otel__elf64_shdr *s = &e->sh[i];
			const char *name = otel__elf_section_name(e, i);
			bool plt;

			if (s->sh_type != OTEL__SHT_RELA || !(s->sh_flags & OTEL__SHF_ALLOC))
				continue;
			if (s->sh_entsize != sizeof(struct otel__elf64_rela))
				return fail(err, OTEL__ELF_EMALFORMED,
					    "relocation section %zu has entry size %llu, not 24", i,
					    ull(s->sh_entsize));
			plt = t->has_jmprel ? s->sh_addr == t->jmprel && s->sh_size != 0
					    : name != NULL && strcmp(name, ".rela.plt") == 0;
			if (plt != (pass == 1))
				continue;
			any = true;
			rc = append_relas(e, s->sh_offset, s->sh_size,
					  plt ? OTEL__ELF_RELA_PLT : OTEL__ELF_RELA_DYN, 0, 0, 0,
					  name != NULL ? name : "a relocation section", err);
			if (rc != OTEL__ELF_OK)
				return rc;
		}
	}
	if (any) {
		e->info.rela_source = OTEL__ELF_SRC_SECTION;
		e->info.rela_count = e->rela_count;
		return OTEL__ELF_OK;
	}

	/* Stripped of section headers: the dynamic tags. */
	if (t->has_relaent && t->relaent != sizeof(struct otel__elf64_rela))
		return fail(err, OTEL__ELF_EMALFORMED, "DT_RELAENT is %llu, not 24", ull(t->relaent));
	if (t->has_jmprel && t->has_pltrel && t->pltrel != OTEL__DT_RELA)
		return fail(err, OTEL__ELF_EMALFORMED,
			    "DT_PLTREL is %llu: x86-64 and aarch64 use RELA (7)", ull(t->pltrel));
	if (t->has_rela && t->has_relasz && t->relasz != 0) {
		uint64_t off;

		if (otel__elf_vaddr_to_offset(e, t->rela, t->relasz, &off) != OTEL__ELF_OK)
			return fail(err, OTEL__ELF_EMALFORMED,
				    "DT_RELA (%llu bytes at %#llx) is not inside a PT_LOAD segment",
				    ull(t->relasz), ull(t->rela));
		rc = append_relas(e, off, t->relasz, OTEL__ELF_RELA_DYN, t->jmprel,
				  t->has_jmprel && t->has_pltrelsz ? t->pltrelsz : 0, t->rela,
				  "DT_RELA", err);
		if (rc != OTEL__ELF_OK)
			return rc;
		any = true;
	}
	if (t->has_jmprel && t->has_pltrelsz && t->pltrelsz != 0) {
		uint64_t off;

		if (otel__elf_vaddr_to_offset(e, t->jmprel, t->pltrelsz, &off) != OTEL__ELF_OK)
			return fail(err, OTEL__ELF_EMALFORMED,
				    "DT_JMPREL (%llu bytes at %#llx) is not inside a PT_LOAD segment",
				    ull(t->pltrelsz), ull(t->jmprel));
		rc = append_relas(e, off, t->pltrelsz, OTEL__ELF_RELA_PLT, 0, 0, t->jmprel, "DT_JMPREL",
				  err);
		if (rc != OTEL__ELF_OK)
			return rc;
		any = true;
	}
	if (any)
		e->info.rela_source = OTEL__ELF_SRC_DYNAMIC;
	e->info.rela_count = e->rela_count;
	return OTEL__ELF_OK;
}

static int read_symtab(struct otel__elf *e, unsigned int flags, struct otel__elf_error *err)
{
	const struct otel__elf64_shdr *s = find_section(e, OTEL__SHT_SYMTAB, NULL);
	bool shared;
	void *buf;
	int rc;

	if (s == NULL)
		return OTEL__ELF_OK;
	e->info.has_symtab = 1;
	if (!(flags & OTEL__ELF_WANT_SYMTAB))
		return OTEL__ELF_OK;
	if (s->sh_entsize != sizeof(struct otel__elf64_sym) ||
	    s->sh_size % sizeof(struct otel__elf64_sym) != 0)
		return fail(err, OTEL__ELF_EMALFORMED,
			    ".symtab has entry size %llu and size %llu; entries are 24 bytes",
			    ull(s->sh_entsize), ull(s->sh_size));
	rc = load(e, s->sh_offset, s->sh_size, 0, &buf, ".symtab", err);
	if (rc != OTEL__ELF_OK)
		return rc;
	e->symtab = buf;
	e->symtab_count = (size_t)(s->sh_size / sizeof(struct otel__elf64_sym));
	/* Always a copy of its own: symtab_str is freed on its own. */
	rc = linked_strtab(e, s, false, &e->symtab_str, &shared, ".symtab", err);
	if (rc != OTEL__ELF_OK)
		return rc;
	e->info.symtab_loaded = 1;
	e->info.symtab_count = e->symtab_count;
	return check_names(e->symtab, e->symtab_count, &e->symtab_str, ".symtab", err);
}

static void classify(struct otel__elf *e)
{
	struct otel__elf_info *i = &e->info;

	i->type = e->eh.e_type;
	i->machine = e->eh.e_machine;
	i->entry = e->eh.e_entry;
	i->file_size = e->size;
	i->phnum = e->phnum;
	i->shnum = e->shnum;
	i->interp = e->interp;
	if (e->eh.e_type == OTEL__ET_EXEC)
		i->kind = e->interp != NULL ? OTEL__ELF_KIND_EXECUTABLE : OTEL__ELF_KIND_STATIC_EXECUTABLE;
	else if (e->eh.e_type != OTEL__ET_DYN)
		i->kind = OTEL__ELF_KIND_OTHER;
	else if (i->dt_flags_1 & OTEL__DF_1_PIE)
		i->kind = e->interp != NULL ? OTEL__ELF_KIND_PIE : OTEL__ELF_KIND_STATIC_PIE;
	else if (e->interp != NULL && i->soname == NULL)
		i->kind = OTEL__ELF_KIND_PIE;
	else
		i->kind = OTEL__ELF_KIND_SHARED_LIBRARY;
}

static int parse(struct otel__elf *e, unsigned int flags, struct otel__elf_error *err)
{
	struct dyn_tags tags;
	int rc;

	memset(&tags, 0, sizeof(tags));
	if ((rc = read_ehdr(e, err)) != OTEL__ELF_OK ||
	    (rc = read_shdrs(e, err)) != OTEL__ELF_OK ||
	    (rc = read_phdrs(e, err)) != OTEL__ELF_OK ||
	    (rc = read_dynamic(e, &tags, err)) != OTEL__ELF_OK ||
	    (rc = read_dynsym(e, &tags, err)) != OTEL__ELF_OK ||
	    (rc = read_versions(e, &tags, err)) != OTEL__ELF_OK ||
	    (rc = read_relas(e, &tags, err)) != OTEL__ELF_OK ||
	    (rc = read_symtab(e, flags, err)) != OTEL__ELF_OK)
		return rc;
	classify(e);
	return OTEL__ELF_OK;
}

static int open_common(struct otel__elf **out, const unsigned char *mem, int fd, uint64_t size,
		       unsigned int flags, struct otel__elf_error *err)
{
	struct otel__elf *e = calloc(1, sizeof(*e));
	int rc;

	if (e == NULL)
		return fail(err, OTEL__ELF_ENOMEM, "out of memory");
	e->mem = mem;
	e->fd = fd;
	e->size = size;
	rc = parse(e, flags, err);
	e->mem = NULL;
	e->fd = -1;
	if (rc != OTEL__ELF_OK) {
		otel__elf_close(e);
		return rc;
	}
	if (err != NULL) {
		err->code = OTEL__ELF_OK;
		err->message[0] = '\0';
	}
	*out = e;
	return OTEL__ELF_OK;
}

OTEL__ELF_API int otel__elf_open_fd(struct otel__elf **out, int fd, unsigned int flags,
				    struct otel__elf_error *err)
{
	struct stat st;

	if (out == NULL)
		return fail(err, OTEL__ELF_EINVAL, "no place for the result");
	*out = NULL;
	if (fstat(fd, &st) != 0)
		return fail(err, OTEL__ELF_EIO, "fstat: %s", strerror(errno));
	if (!S_ISREG(st.st_mode))
		return fail(err, OTEL__ELF_EIO, "not a regular file");
	return open_common(out, NULL, fd, (uint64_t)st.st_size, flags, err);
}

OTEL__ELF_API int otel__elf_open_path(struct otel__elf **out, const char *path, unsigned int flags,
				      struct otel__elf_error *err)
{
	int fd, rc;

	if (out == NULL || path == NULL)
		return fail(err, OTEL__ELF_EINVAL, "no path or no place for the result");
	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return fail(err, OTEL__ELF_EIO, "cannot open: %s", strerror(errno));
	rc = otel__elf_open_fd(out, fd, flags, err);
	close(fd);
	return rc;
}

OTEL__ELF_API int otel__elf_open_memory(struct otel__elf **out, const void *data, size_t size,
					unsigned int flags, struct otel__elf_error *err)
{
	static const unsigned char empty[1];

	if (out == NULL || (data == NULL && size != 0))
		return fail(err, OTEL__ELF_EINVAL, "no data or no place for the result");
	*out = NULL;
	return open_common(out, data != NULL ? data : empty, -1, size, flags, err);
}

OTEL__ELF_API void otel__elf_close(struct otel__elf *e)
{
	if (e == NULL)
		return;
	free(e->ph);
	free(e->sh);
	free(e->shstr.data);
	free(e->dyn);
	free(e->needed);
	free(e->interp);
	if (!e->dynsym_str_is_dynstr)
		free(e->dynsym_str.data);
	free(e->dynstr.data);
	free(e->dynsym);
	free(e->versym);
	free(e->versions);
	free(e->symtab);
	free(e->symtab_str.data);
	free(e->rela);
	free(e->rela_table);
	free(e);
}

OTEL__ELF_API const char *otel__elf_strerror(int code)
{
	switch (code) {
	case OTEL__ELF_OK: return "success";
	case OTEL__ELF_EIO: return "the file could not be read";
	case OTEL__ELF_ENOMEM: return "out of memory";
	case OTEL__ELF_ENOTELF: return "not an ELF file";
	case OTEL__ELF_EUNSUPPORTED: return "unsupported ELF file (only 64-bit little-endian x86-64 and aarch64)";
	case OTEL__ELF_ETRUNCATED: return "truncated ELF file";
	case OTEL__ELF_EMALFORMED: return "malformed ELF file";
	case OTEL__ELF_ENOENT: return "not found";
	case OTEL__ELF_EINVAL: return "invalid argument";
	}
	return "unknown ELF reader error";
}

OTEL__ELF_API const char *otel__elf_kind_name(enum otel__elf_kind kind)
{
	switch (kind) {
	case OTEL__ELF_KIND_EXECUTABLE: return "executable (non-PIE)";
	case OTEL__ELF_KIND_STATIC_EXECUTABLE: return "static executable (non-PIE)";
	case OTEL__ELF_KIND_PIE: return "PIE executable";
	case OTEL__ELF_KIND_STATIC_PIE: return "static-pie executable";
	case OTEL__ELF_KIND_SHARED_LIBRARY: return "shared library";
	case OTEL__ELF_KIND_OTHER: break;
	}
	return "ELF file (not an executable or shared library)";
}

OTEL__ELF_API int otel__elf_kind_is_executable(enum otel__elf_kind kind)
{
	return kind == OTEL__ELF_KIND_EXECUTABLE || kind == OTEL__ELF_KIND_STATIC_EXECUTABLE ||
	       kind == OTEL__ELF_KIND_PIE || kind == OTEL__ELF_KIND_STATIC_PIE;
}

OTEL__ELF_API void otel__elf_info(const struct otel__elf *e, struct otel__elf_info *info)
{
	if (e == NULL || info == NULL)
		return;
	*info = e->info;
}

OTEL__ELF_API const struct otel__elf64_phdr *otel__elf_phdr(const struct otel__elf *e, size_t i)
{
	return e != NULL && i < e->phnum ? &e->ph[i] : NULL;
}

OTEL__ELF_API size_t otel__elf_dyn_count(const struct otel__elf *e)
{
	return e != NULL ? e->dyn_count : 0;
}

OTEL__ELF_API const struct otel__elf64_dyn *otel__elf_dyn(const struct otel__elf *e, size_t i)
{
	return e != NULL && i < e->dyn_count ? &e->dyn[i] : NULL;
}

OTEL__ELF_API int otel__elf_dyn_get(const struct otel__elf *e, int64_t tag, uint64_t *value)
{
	if (e == NULL || value == NULL)
		return OTEL__ELF_EINVAL;
	for (size_t i = 0; i < e->dyn_count; i++) {
		if (e->dyn[i].d_tag == tag) {
			*value = e->dyn[i].d_val;
			return OTEL__ELF_OK;
		}
	}
	return OTEL__ELF_ENOENT;
}

OTEL__ELF_API const char *otel__elf_needed(const struct otel__elf *e, size_t i)
{
	if (e == NULL || i >= e->info.needed_count)
		return NULL;
	return str_at(&e->dynstr, e->needed[i]);
}

OTEL__ELF_API const struct otel__elf64_shdr *otel__elf_shdr(const struct otel__elf *e, size_t shndx)
{
	return e != NULL && shndx > 0 && shndx < e->shnum ? &e->sh[shndx] : NULL;
}

OTEL__ELF_API const char *otel__elf_section_name(const struct otel__elf *e, size_t shndx)
{
	const struct otel__elf64_shdr *s = otel__elf_shdr(e, shndx);

	return s != NULL ? str_at(&e->shstr, s->sh_name) : NULL;
}

OTEL__ELF_API size_t otel__elf_sym_count(const struct otel__elf *e, enum otel__elf_symtab table)
{
	if (e == NULL)
		return 0;
	return table == OTEL__ELF_DYNSYM ? e->dynsym_count
	       : table == OTEL__ELF_SYMTAB ? e->symtab_count : 0;
}

OTEL__ELF_API int otel__elf_sym_get(const struct otel__elf *e, enum otel__elf_symtab table,
				    size_t index, struct otel__elf_sym *sym)
{
	const struct otel__elf64_sym *s;
	const struct strtab *str;
	const char *name;

	if (e == NULL || sym == NULL || index >= otel__elf_sym_count(e, table))
		return OTEL__ELF_EINVAL;
	s = table == OTEL__ELF_DYNSYM ? &e->dynsym[index] : &e->symtab[index];
	str = table == OTEL__ELF_DYNSYM ? &e->dynsym_str : &e->symtab_str;
	name = str_at(str, s->st_name);
	memset(sym, 0, sizeof(*sym));
	sym->name = name != NULL ? name : "";
	sym->value = s->st_value;
	sym->size = s->st_size;
	sym->index = (uint32_t)index;
	sym->shndx = s->st_shndx;
	sym->type = s->st_info & 0xf;
	sym->bind = s->st_info >> 4;
	sym->visibility = s->st_other & 0x3;
	if (table == OTEL__ELF_DYNSYM && e->versym != NULL && index > 0) {
		uint16_t v = e->versym[index];

		sym->version_hidden = (v & 0x8000) != 0;
		for (size_t k = 0; k < e->versions_count && (v & 0x7fff) >= 2; k++) {
			if (e->versions[k].index == (v & 0x7fff)) {
				sym->version = str_at(&e->dynsym_str, e->versions[k].name);
				break;
			}
		}
	}
	return OTEL__ELF_OK;
}

OTEL__ELF_API int otel__elf_sym_find(const struct otel__elf *e, enum otel__elf_symtab table,
				     const char *name, struct otel__elf_sym *sym)
{
	size_t n = otel__elf_sym_count(e, table), best = 0;
	int rank = 0; /* 3: defined global/weak, 2: defined, 1: undefined */

	if (e == NULL || name == NULL || sym == NULL)
		return OTEL__ELF_EINVAL;
	for (size_t i = 1; i < n && rank < 3; i++) {
		const struct otel__elf64_sym *s = table == OTEL__ELF_DYNSYM ? &e->dynsym[i] : &e->symtab[i];
		const char *sname = str_at(table == OTEL__ELF_DYNSYM ? &e->dynsym_str : &e->symtab_str,
					   s->st_name);
		unsigned bind = s->st_info >> 4;
		int r;

		if (sname == NULL || strcmp(sname, name) != 0)
			continue;
		if (s->st_shndx == OTEL__SHN_UNDEF)
			r = 1;
		else if (bind == OTEL__STB_GLOBAL || bind == OTEL__STB_WEAK || bind == OTEL__STB_GNU_UNIQUE)
			r = 3;
		else
			r = 2;
		if (r > rank) {
			rank = r;
			best = i;
		}
	}
	if (rank == 0)
		return OTEL__ELF_ENOENT;
	return otel__elf_sym_get(e, table, best, sym);
}

OTEL__ELF_API size_t otel__elf_rela_count(const struct otel__elf *e)
{
	return e != NULL ? e->rela_count : 0;
}

OTEL__ELF_API int otel__elf_rela_get(const struct otel__elf *e, size_t i, struct otel__elf_rela *out)
{
	const struct otel__elf64_rela *r;
	uint32_t sym;

	if (e == NULL || out == NULL || i >= e->rela_count)
		return OTEL__ELF_EINVAL;
	r = &e->rela[i];
	sym = (uint32_t)(r->r_info >> 32);
	out->offset = r->r_offset;
	out->addend = r->r_addend;
	out->type = (uint32_t)r->r_info;
	out->sym = sym;
	out->table = (enum otel__elf_rela_table)e->rela_table[i];
	out->sym_name = "";
	if (sym != 0) {
		/* Checked at open: sym < dynsym_count, its name in range. */
		const char *n = str_at(&e->dynsym_str, e->dynsym[sym].st_name);

		out->sym_name = n != NULL ? n : "";
	}
	return OTEL__ELF_OK;
}

OTEL__ELF_API const char *otel__elf_rela_type_name(uint16_t machine, uint32_t type)
{
	if (machine == OTEL__ELF_X86_64) {
		switch (type) {
		case 0: return "R_X86_64_NONE";
		case 1: return "R_X86_64_64";
		case 2: return "R_X86_64_PC32";
		case 5: return "R_X86_64_COPY";
		case 6: return "R_X86_64_GLOB_DAT";
		case 7: return "R_X86_64_JUMP_SLOT";
		case 8: return "R_X86_64_RELATIVE";
		case 10: return "R_X86_64_32";
		case 11: return "R_X86_64_32S";
		case OTEL__R_X86_64_DTPMOD64: return "R_X86_64_DTPMOD64";
		case OTEL__R_X86_64_DTPOFF64: return "R_X86_64_DTPOFF64";
		case OTEL__R_X86_64_TPOFF64: return "R_X86_64_TPOFF64";
		case 21: return "R_X86_64_DTPOFF32";
		case OTEL__R_X86_64_TPOFF32: return "R_X86_64_TPOFF32";
		case 24: return "R_X86_64_PC64";
		case OTEL__R_X86_64_TLSDESC: return "R_X86_64_TLSDESC";
		case 37: return "R_X86_64_IRELATIVE";
		}
	} else if (machine == OTEL__ELF_AARCH64) {
		switch (type) {
		case 0: return "R_AARCH64_NONE";
		case 257: return "R_AARCH64_ABS64";
		case 258: return "R_AARCH64_ABS32";
		case 1024: return "R_AARCH64_COPY";
		case 1025: return "R_AARCH64_GLOB_DAT";
		case 1026: return "R_AARCH64_JUMP_SLOT";
		case 1027: return "R_AARCH64_RELATIVE";
		case OTEL__R_AARCH64_TLS_DTPMOD: return "R_AARCH64_TLS_DTPMOD";
		case OTEL__R_AARCH64_TLS_DTPREL: return "R_AARCH64_TLS_DTPREL";
		case OTEL__R_AARCH64_TLS_TPREL: return "R_AARCH64_TLS_TPREL";
		case OTEL__R_AARCH64_TLSDESC: return "R_AARCH64_TLSDESC";
		case 1032: return "R_AARCH64_IRELATIVE";
		}
	}
	return NULL;
}

OTEL__ELF_API unsigned int otel__elf_tls_model_of(uint16_t machine, uint32_t type)
{
	if (machine == OTEL__ELF_X86_64) {
		switch (type) {
		case OTEL__R_X86_64_TLSDESC: return OTEL__ELF_TLS_DESC;
		case OTEL__R_X86_64_DTPMOD64:
		case OTEL__R_X86_64_DTPOFF64: return OTEL__ELF_TLS_GD;
		case OTEL__R_X86_64_TPOFF64:
		case OTEL__R_X86_64_TPOFF32: return OTEL__ELF_TLS_IE;
		}
	} else if (machine == OTEL__ELF_AARCH64) {
		switch (type) {
		case OTEL__R_AARCH64_TLSDESC: return OTEL__ELF_TLS_DESC;
		case OTEL__R_AARCH64_TLS_DTPMOD:
		case OTEL__R_AARCH64_TLS_DTPREL: return OTEL__ELF_TLS_GD;
		case OTEL__R_AARCH64_TLS_TPREL: return OTEL__ELF_TLS_IE;
		}
	}
	return 0;
}

OTEL__ELF_API const char *otel__elf_tls_model_name(unsigned int model)
{
	switch (model) {
	case OTEL__ELF_TLS_DESC: return "TLSDESC";
	case OTEL__ELF_TLS_GD: return "general-dynamic";
	case OTEL__ELF_TLS_IE: return "initial-exec";
	case OTEL__ELF_TLS_LE: return "local-exec";
	}
	return "none";
}

static void note_ref(struct otel__elf_tls_ref *ref, const struct otel__elf_rela *r)
{
	if (ref->count++ == 0) {
		ref->offset = r->offset;
		ref->addend = r->addend;
		ref->type = r->type;
		ref->table = r->table;
	}
}

OTEL__ELF_API int otel__elf_tls_classify(const struct otel__elf *e, const char *name,
					 struct otel__elf_tls_access *a)
{
	struct otel__elf_sym sym;
	uint16_t m;
	int rc;

	if (e == NULL || name == NULL || a == NULL)
		return OTEL__ELF_EINVAL;
	memset(a, 0, sizeof(*a));
	rc = otel__elf_sym_find(e, OTEL__ELF_DYNSYM, name, &sym);
	if (rc != OTEL__ELF_OK)
		return rc;
	a->defined = sym.shndx != OTEL__SHN_UNDEF;
	m = e->eh.e_machine;
	for (size_t i = 0; i < e->rela_count; i++) {
		struct otel__elf_rela r;
		unsigned int model;

		otel__elf_rela_get(e, i, &r);
		if (r.sym == 0 || strcmp(r.sym_name, name) != 0)
			continue;
		model = otel__elf_tls_model_of(m, r.type);
		a->models |= model;
		if (model == 0)
			a->other++;
		else if (model == OTEL__ELF_TLS_DESC)
			note_ref(&a->desc, &r);
		else if (model == OTEL__ELF_TLS_IE)
			note_ref(&a->tpoff, &r);
		else if (r.type == OTEL__R_X86_64_DTPMOD64 || r.type == OTEL__R_AARCH64_TLS_DTPMOD)
			note_ref(&a->dtpmod, &r);
		else
			note_ref(&a->dtpoff, &r);
	}
	if (a->models == 0 && a->defined && otel__elf_kind_is_executable(e->info.kind))
		a->models = OTEL__ELF_TLS_LE;
	return OTEL__ELF_OK;
}

OTEL__ELF_API int otel__elf_tls_local_exec_offset(const struct otel__elf *e, uint64_t st_value,
						  int64_t *tp_offset)
{
	uint64_t align, block;

	if (e == NULL || tp_offset == NULL || !otel__elf_kind_is_executable(e->info.kind))
		return OTEL__ELF_EINVAL;
	if (!e->info.has_tls)
		return OTEL__ELF_ENOENT;
	align = e->info.tls_align > 1 ? e->info.tls_align : 1;
	if (e->info.tls_vaddr % align != 0 || st_value > e->info.tls_memsz ||
	    e->info.tls_memsz > (UINT64_C(1) << 40))
		return OTEL__ELF_EMALFORMED;
	if (e->eh.e_machine == OTEL__ELF_X86_64) {
		block = (e->info.tls_memsz + align - 1) & ~(align - 1);
		*tp_offset = (int64_t)st_value - (int64_t)block;
	} else {
		block = (16 + align - 1) & ~(align - 1);
		*tp_offset = (int64_t)(block + st_value);
	}
	return OTEL__ELF_OK;
}
