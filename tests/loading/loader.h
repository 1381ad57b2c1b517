/* SPDX-License-Identifier: Apache-2.0 */
/*
 * How the loading-path programs reach the library, and how they prove which
 * TLS path the slot is on instead of assuming it.
 *
 * The library reaches its slot through one TLS descriptor: a relocation
 * R_X86_64_TLSDESC / R_AARCH64_TLSDESC against otel_thread_ctx_v1, which the
 * loader fills with two words, {resolver, argument}.  What the argument is
 * tells the path (doc/tlsdesc.md):
 *
 *   static TLS   the argument is the slot's offset from the thread pointer,
 *                the same for every thread: tp + argument == &slot;
 *   dynamic TLS  the argument points to {module id, offset in the module's
 *                block} (glibc's struct tlsdesc_dynamic_arg, musl's
 *                td_index), and the resolver finds the thread's block
 *                through the DTV, allocating it on glibc on the thread's
 *                first access.
 *
 * The programs find the relocation in the library's file (its section
 * headers), read the descriptor where the loader put it (load bias +
 * r_offset), and check it against the address of the calling thread's slot
 * (dlsym() of a TLS symbol gives that) and against what dl_iterate_phdr()
 * reports for the module: its TLS module id, and the calling thread's block
 * (dlpi_tls_data, NULL on glibc while the block is not allocated).
 */
#ifndef OTEL_TESTS_DLOPEN_LOADER_H
#define OTEL_TESTS_DLOPEN_LOADER_H

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check-lite.h"
#include "otel_thread_ctx.h"
#include "thread_pointer.h"

#if defined(__x86_64__)
#define LOADER_R_TLSDESC R_X86_64_TLSDESC
#elif defined(__aarch64__)
#define LOADER_R_TLSDESC R_AARCH64_TLSDESC
#else
#error "the loading-path tests know x86-64 and aarch64 only"
#endif


/* The API, called through pointers (a dlopen()ed library has no link-time
 * symbols); named like the functions, for STORM_CALL in storm.h.  The whole
 * thread-context API, so that whatever storm.h calls is here. */
struct otel_api {
	int (*otel_thread_ctx_create)(otel_thread_ctx **);
	int (*otel_thread_ctx_create_with)(otel_thread_ctx **,
					   const struct otel_thread_ctx_options *);
	void (*otel_thread_ctx_destroy)(otel_thread_ctx *);
	int (*otel_thread_ctx_set_ids)(otel_thread_ctx *, const uint8_t[16], const uint8_t[8],
				       uint8_t);
	int (*otel_thread_ctx_set_span_id)(otel_thread_ctx *, const uint8_t[8]);
	int (*otel_thread_ctx_set_trace_flags)(otel_thread_ctx *, uint8_t);
	int (*otel_thread_ctx_clear_ids)(otel_thread_ctx *);
	int (*otel_thread_ctx_set_attr)(otel_thread_ctx *, unsigned int, const void *, size_t);
	int (*otel_thread_ctx_remove_attr)(otel_thread_ctx *, unsigned int);
	int (*otel_thread_ctx_clear_attrs)(otel_thread_ctx *);
	int (*otel_thread_ctx_clear)(otel_thread_ctx *);
	int (*otel_thread_ctx_set_attrs)(otel_thread_ctx *, const struct otel_thread_ctx_attr *,
					 size_t);
	int (*otel_thread_ctx_copy)(otel_thread_ctx *, const otel_thread_ctx *);
	int (*otel_thread_ctx_get)(const otel_thread_ctx *, struct otel_thread_ctx_record *);
	int (*otel_thread_ctx_attach)(const otel_thread_ctx *, otel_thread_ctx *);
	int (*otel_thread_ctx_update)(const otel_thread_ctx *);
	int (*otel_thread_ctx_detach)(otel_thread_ctx *);
	int (*otel_thread_ctx_save)(otel_thread_ctx *);
	int (*otel_thread_ctx_update_span_id)(const uint8_t[8]);
	int (*otel_thread_ctx_update_trace_flags)(uint8_t);
	int (*otel_thread_ctx_update_all)(const uint8_t[16], const uint8_t[8], uint8_t,
					  const struct otel_thread_ctx_attr *, size_t);
};

/* Calls M(name) for each function of struct otel_api. */
#define LOADER_API(M)                                                          \
	M(otel_thread_ctx_create)                                              \
	M(otel_thread_ctx_create_with)                                         \
	M(otel_thread_ctx_destroy)                                             \
	M(otel_thread_ctx_set_ids)                                             \
	M(otel_thread_ctx_set_span_id)                                         \
	M(otel_thread_ctx_set_trace_flags)                                     \
	M(otel_thread_ctx_clear_ids)                                           \
	M(otel_thread_ctx_set_attr)                                            \
	M(otel_thread_ctx_remove_attr)                                         \
	M(otel_thread_ctx_clear_attrs)                                         \
	M(otel_thread_ctx_clear)                                               \
	M(otel_thread_ctx_set_attrs)                                           \
	M(otel_thread_ctx_copy)                                                \
	M(otel_thread_ctx_get)                                                 \
	M(otel_thread_ctx_attach)                                              \
	M(otel_thread_ctx_update)                                              \
	M(otel_thread_ctx_detach)                                              \
	M(otel_thread_ctx_save)                                                \
	M(otel_thread_ctx_update_span_id)                                      \
	M(otel_thread_ctx_update_trace_flags)                                  \
	M(otel_thread_ctx_update_all)

static inline void *loader_sym(void *handle, const char *name)
{
	void *p = dlsym(handle, name);

	ck_assert_msg(p != NULL, "dlsym(%s): %s", name, dlerror());
	return p;
}

#define LOADER_FN(name)                                                        \
	do {                                                                   \
		void *p_ = loader_sym(handle, #name);                          \
		memcpy(&api->name, &p_, sizeof(p_));                           \
	} while (0);

/* Fills *api from `handle` (a dlopen() handle, or RTLD_DEFAULT). */
static inline void loader_resolve(void *handle, struct otel_api *api)
{
	LOADER_API(LOADER_FN)
}

#define LOADER_LINKED_FN(name) loader_api_->name = name;

/* Fills *api with the functions linked into the program. */
#define LOADER_LINKED(api)                                                     \
	do {                                                                   \
		struct otel_api *loader_api_ = (api);                          \
		LOADER_API(LOADER_LINKED_FN)                                   \
	} while (0)

/* The attribute entries of a record, as the list the API takes. */
static inline size_t loader_attrs_of(const struct otel_thread_ctx_record *r,
				     struct otel_thread_ctx_attr attrs[8])
{
	size_t at = 0, n = 0;

	while (at + 2 <= r->attrs_data_size && n < 8) {
		attrs[n].key = r->attrs_data[at];
		attrs[n].len = r->attrs_data[at + 1];
		attrs[n].value = r->attrs_data + at + 2;
		at += 2u + r->attrs_data[at + 1];
		n++;
	}
	return n;
}

/* Makes ctx hold exactly the record r (ids, flags, attributes), whatever
 * it held.  Returns the first error. */
static inline int loader_put(const struct otel_api *api, otel_thread_ctx *ctx,
			     const struct otel_thread_ctx_record *r)
{
	struct otel_thread_ctx_attr attrs[8];
	size_t n = loader_attrs_of(r, attrs);
	int rc = api->otel_thread_ctx_set_ids(ctx, r->trace_id, r->span_id, r->trace_flags);

	return rc != 0 ? rc : api->otel_thread_ctx_set_attrs(ctx, attrs, n);
}

/* The calling thread publishes the record r, with update_all. */
static inline int loader_update_all(const struct otel_api *api,
				    const struct otel_thread_ctx_record *r)
{
	struct otel_thread_ctx_attr attrs[8];
	size_t n = loader_attrs_of(r, attrs);

	return api->otel_thread_ctx_update_all(r->trace_id, r->span_id, r->trace_flags, attrs, n);
}

/* The address of the calling thread's slot, as the loader computes it
 * (glibc: __tls_get_addr, which allocates a dynamic block not yet there). */
static inline const struct otel_thread_ctx_record *volatile *slot_address(void *handle)
{
	return (const struct otel_thread_ctx_record *volatile *)loader_sym(handle,
									    "otel_thread_ctx_v1");
}

/* The library as the loader sees it, and the slot's descriptor. */
struct module {
	char path[PATH_MAX];
	uintptr_t base;         /* load bias (dlpi_addr) */
	size_t modid;           /* TLS module id */
	uintptr_t text_lo, text_hi; /* the executable segment */
	size_t tls_memsz;
	uint64_t desc_offset;   /* r_offset of the TLSDESC relocation */
	int64_t desc_addend;
	uint64_t slot_value;    /* st_value of otel_thread_ctx_v1 */
	int ndesc;              /* TLSDESC relocations against the slot */
};

static inline int module_is_library(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return strncmp(base, "libotel-thread-ctx.so", 21) == 0;
}

static int find_module_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct module *m = arg;

	(void)size;
	if (info->dlpi_name == NULL || !module_is_library(info->dlpi_name))
		return 0;
	ck_assert_msg(strlen(info->dlpi_name) < sizeof(m->path), "path too long");
	strcpy(m->path, info->dlpi_name);
	m->base = info->dlpi_addr;
	m->modid = info->dlpi_tls_modid;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			m->text_lo = info->dlpi_addr + ph->p_vaddr;
			m->text_hi = m->text_lo + ph->p_memsz;
		}
		if (ph->p_type == PT_TLS)
			m->tls_memsz = ph->p_memsz;
	}
	return 1;
}

/* The calling thread's TLS block of the library, as dl_iterate_phdr()
 * reports it (dlpi_tls_data). */
struct tls_data_query {
	uintptr_t base;
	void *data;
	int found;
};

static int tls_data_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct tls_data_query *q = arg;

	(void)size;
	if (info->dlpi_addr != q->base || info->dlpi_name == NULL ||
	    !module_is_library(info->dlpi_name))
		return 0;
	q->data = info->dlpi_tls_data;
	q->found = 1;
	return 1;
}

static inline void *module_tls_data(const struct module *m)
{
	struct tls_data_query q = { m->base, NULL, 0 };

	dl_iterate_phdr(tls_data_cb, &q);
	ck_assert_msg(q.found, "the library is no longer loaded");
	return q.data;
}

/*
 * Calls fn(arg, rela, name) for each TLSDESC relocation in the ELF file
 * `path` (its section headers), with the name of its symbol ("" for one
 * against a local symbol, as for the library's hidden state).
 */
static inline void for_each_tlsdesc(const char *path,
				    void (*fn)(void *arg, const ElfW(Rela) *rela,
					       const ElfW(Sym) *sym, const char *name),
				    void *arg)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	const unsigned char *map;
	const ElfW(Ehdr) *eh;
	const ElfW(Shdr) *sh;

	ck_assert_msg(fd >= 0, "open %s", path);
	ck_assert_msg(fstat(fd, &st) == 0, "fstat %s", path);
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	ck_assert_msg(map != MAP_FAILED, "mmap %s", path);
	close(fd);
	eh = (const ElfW(Ehdr) *)map;
	ck_assert_msg(memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_ident[EI_CLASS] == ELFCLASS64,
	      "%s: not a 64-bit ELF file", path);
	ck_assert_msg(eh->e_shoff != 0 && eh->e_shentsize == sizeof(ElfW(Shdr)),
	      "%s: no section headers", path);
	sh = (const ElfW(Shdr) *)(map + eh->e_shoff);
	for (unsigned i = 0; i < eh->e_shnum; i++) {
		const ElfW(Shdr) *symtab, *strtab;
		const ElfW(Rela) *rela;
		const ElfW(Sym) *syms;
		const char *strs;

		if (sh[i].sh_type != SHT_RELA)
			continue;
		symtab = &sh[sh[i].sh_link];
		strtab = &sh[symtab->sh_link];
		rela = (const ElfW(Rela) *)(map + sh[i].sh_offset);
		syms = (const ElfW(Sym) *)(map + symtab->sh_offset);
		strs = (const char *)(map + strtab->sh_offset);
		for (size_t k = 0; k < sh[i].sh_size / sizeof(*rela); k++) {
			const ElfW(Sym) *sym = &syms[ELF64_R_SYM(rela[k].r_info)];

			if (ELF64_R_TYPE(rela[k].r_info) == LOADER_R_TLSDESC)
				fn(arg, &rela[k], sym, strs + sym->st_name);
		}
	}
	munmap((void *)map, (size_t)st.st_size);
}

static inline void slot_relocation_cb(void *arg, const ElfW(Rela) *rela, const ElfW(Sym) *sym,
			       const char *name)
{
	struct module *m = arg;

	if (strcmp(name, "otel_thread_ctx_v1") != 0)
		return;
	if (m->ndesc++ == 0) {
		m->desc_offset = rela->r_offset;
		m->desc_addend = rela->r_addend;
		m->slot_value = sym->st_value;
	}
}

/* Finds the TLSDESC relocation against the slot in the library's file. */
static inline void read_descriptor_relocation(struct module *m)
{
	m->ndesc = 0;
	for_each_tlsdesc(m->path, slot_relocation_cb, m);
}

/* Every TLS descriptor of a loaded module, whatever its symbol. */
struct descriptors {
	uintptr_t base;
	int n;
	volatile uintptr_t *desc[16];
};

static inline void descriptor_cb(void *arg, const ElfW(Rela) *rela, const ElfW(Sym) *sym,
			  const char *name)
{
	struct descriptors *d = arg;

	(void)sym;
	ck_assert_msg(d->n < (int)(sizeof(d->desc) / sizeof(d->desc[0])), "too many TLSDESC "
	      "relocations (%s)", name);
	d->desc[d->n++] = (volatile uintptr_t *)(d->base + rela->r_offset);
}

/* The TLS descriptors of the module dlopen() gave `handle` for. */
static inline struct descriptors module_descriptors(void *handle)
{
	struct descriptors d;
	struct link_map *lm = NULL;

	memset(&d, 0, sizeof(d));
	ck_assert_msg(dlinfo(handle, RTLD_DI_LINKMAP, &lm) == 0 && lm != NULL, "dlinfo: %s", dlerror());
	d.base = lm->l_addr;
	for_each_tlsdesc(lm->l_name, descriptor_cb, &d);
	return d;
}

/* Locates the library in this process and its slot descriptor. */
static inline void find_module(struct module *m)
{
	memset(m, 0, sizeof(*m));
	ck_assert_msg(dl_iterate_phdr(find_module_cb, m) == 1, "libotel-thread-ctx.so is not loaded");
	ck_assert_msg(m->modid != 0 && m->tls_memsz >= 24, "module %s: TLS module id %zu, PT_TLS %zu bytes",
	      m->path, m->modid, m->tls_memsz);
	read_descriptor_relocation(m);
	ck_assert_msg(m->ndesc >= 1, "%s: no TLSDESC relocation against otel_thread_ctx_v1", m->path);
}

enum tls_path { PATH_STATIC, PATH_DYNAMIC, PATH_UNKNOWN };

static inline const char *path_name(enum tls_path p)
{
	return p == PATH_STATIC ? "static" : p == PATH_DYNAMIC ? "dynamic" : "unknown";
}

struct descriptor_facts {
	uintptr_t resolver, arg;
	enum tls_path path;
	intptr_t tp_offset;         /* static: slot - tp */
	size_t dyn_modid, dyn_offset; /* dynamic: what the argument points to */
};

/*
 * Reads the descriptor at `desc` (the library's own, or another module's
 * against the same slot) and classifies it against `slot`, the calling
 * thread's slot address.
 */
static inline struct descriptor_facts read_descriptor(const volatile uintptr_t *desc,
						      const struct module *m,
						      const volatile void *slot)
{
	struct descriptor_facts f;

	memset(&f, 0, sizeof(f));
	f.resolver = desc[0];
	f.arg = desc[1];
	f.path = PATH_UNKNOWN;
	if (thread_pointer() + f.arg == (uintptr_t)slot) {
		f.path = PATH_STATIC;
		f.tp_offset = (intptr_t)f.arg;
	} else if (f.arg > 0x10000 && f.arg % sizeof(size_t) == 0) {
		/* Not the offset: then a pointer into the loader's heap. */
		const volatile size_t *p = (const volatile size_t *)f.arg;

		f.dyn_modid = p[0];
		f.dyn_offset = p[1];
		if (f.dyn_modid == m->modid &&
		    f.dyn_offset == m->slot_value + (uint64_t)m->desc_addend)
			f.path = PATH_DYNAMIC;
	}
	return f;
}

static inline const volatile uintptr_t *library_descriptor(const struct module *m)
{
	return (const volatile uintptr_t *)(m->base + m->desc_offset);
}

static inline void print_descriptor(const char *what, const struct descriptor_facts *f)
{
	Dl_info info;
	const char *where = "?";
	void *resolver;

	memcpy(&resolver, &f->resolver, sizeof(resolver));
	if (dladdr(resolver, &info) != 0 && info.dli_fname != NULL)
		where = info.dli_fname;
	printf("%s: resolver %#lx (in %s), argument %#lx: ", what, (unsigned long)f->resolver,
	       where, (unsigned long)f->arg);
	if (f->path == PATH_STATIC)
		printf("static TLS, slot at thread pointer %+ld\n", (long)f->tp_offset);
	else if (f->path == PATH_DYNAMIC)
		printf("dynamic TLS, {module %zu, offset %zu}\n", f->dyn_modid, f->dyn_offset);
	else
		printf("neither a static offset nor a dynamic {module, offset} of this library\n");
}

#endif /* OTEL_TESTS_DLOPEN_LOADER_H */
