/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otel_thread_ctx_self_check(): is the slot this library writes the one a
 * profiler will find?
 *
 * A profiler finds the slot the way a dynamic loader would find any symbol:
 * in the .dynsym of a loaded module that defines otel_thread_ctx_v1, and
 * then in that module's TLS block of the thread.  The library writes to
 * whatever its own TLSDESC access resolves to.  Both usually agree; they do
 * not when the library was linked into an executable that does not export
 * the slot (no --export-dynamic-symbol, or a fully static executable, which
 * has no .dynsym), or when two copies of the library are loaded and readers
 * find the other one.
 *
 * The check walks the loaded modules with dl_iterate_phdr(): for each, the
 * PT_TLS block of the calling thread (dlpi_tls_data) tells whether it holds
 * the library's slot, and the module's own dynamic section, read in memory
 * through its hash table, whether it exports the symbol and where that
 * resolves in this thread.  A main program without a dynamic section (a
 * static executable) may still carry a .dynsym section that readers of the
 * file find (mold writes one); then the file is read too.
 *
 * Every address taken from a dynamic section is checked to lie inside one
 * of the module's readable PT_LOAD segments before it is read.  The file is
 * read by the few lines below (section headers, one symbol table), not by
 * the ELF reader of the tools, which a tracer does not need.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <stdlib.h>
#include <unistd.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "elf_hash.h"
#include "internal.h"
#include "tls.h"

#define EXPORT_FLAG "-Wl,--export-dynamic-symbol=" OTEL_THREAD_CTX_SLOT_NAME
/* Longest hash chain followed: far more than any real table has. */
#define CHAIN_MAX (1u << 24)

struct module {
	const struct dl_phdr_info *info;
	const ElfW(Dyn) *dyn;
	size_t dyn_count;
};

/* A loaded module whose .dynsym defines a TLS otel_thread_ctx_v1. */
struct exporter {
	const char *name;
	bool is_main;
	void *tls_data;    /* its TLS block in this thread, NULL if not allocated */
	size_t modid;
	uint64_t value;    /* st_value */
	const void *addr;  /* tls_data + value, once known */
};

#define EXPORTERS_MAX 16

/* What the walk learns. */
struct scan {
	const void *slot;
	unsigned int index;

	/* The module whose TLS block holds the slot. */
	bool holder_found;
	const char *holder;
	bool holder_is_main;
	bool holder_has_dynamic;

	unsigned int exporting;
	struct exporter exporters[EXPORTERS_MAX];

	/* Modules with a TLS block the calling thread has not touched (or
	 * whose block the loader does not report: a dlopen()ed module in
	 * static TLS), in which the holder is looked for when no block it
	 * reports holds the slot. */
	unsigned int untouched;
	struct {
		const char *name;
		size_t modid, size;
		bool is_main, has_dynamic;
	} untouched_tls[EXPORTERS_MAX];

	/* The main program when it has no dynamic section. */
	bool main_without_dynamic;
	void *main_tls_data;
	size_t main_tls_size;
};

/* The ABI's TLS lookup (glibc, musl): the address of {module, offset} in the
 * calling thread, allocating a dynamic TLS block the thread has not touched.
 * Looked up when it is needed, never linked against: in a static executable
 * there is none, and a reference to it, even weak, is an undefined symbol
 * to lld when other objects of the executable use the general-dynamic model
 * (NativeAOT's runtime does). */
typedef void *(*tls_get_addr_fn)(void *);

static tls_get_addr_fn tls_get_addr(void)
{
	void *sym = dlsym(RTLD_DEFAULT, "__tls_get_addr");
	tls_get_addr_fn fn;

	memcpy(&fn, &sym, sizeof(fn));
	return fn;
}

static void add_exporter(struct scan *sc, const char *name, bool is_main, void *tls_data,
			 size_t modid, uint64_t value)
{
	if (sc->exporting < EXPORTERS_MAX) {
		struct exporter *x = &sc->exporters[sc->exporting];

		x->name = name;
		x->is_main = is_main;
		x->tls_data = tls_data;
		x->modid = modid;
		x->value = value;
		x->addr = tls_data != NULL ? (const char *)tls_data + value : NULL;
	}
	sc->exporting++;
}

/* [addr, addr + size) inside one readable PT_LOAD segment of the module. */
static bool readable(const struct dl_phdr_info *info, uintptr_t addr, size_t size)
{
	for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[i];
		uintptr_t start;

		if (p->p_type != PT_LOAD || !(p->p_flags & PF_R))
			continue;
		start = (uintptr_t)info->dlpi_addr + (uintptr_t)p->p_vaddr;
		if (addr >= start && addr - start <= p->p_memsz && size <= p->p_memsz - (addr - start))
			return true;
	}
	return false;
}

/* A d_ptr value as an address.  glibc relocates the dynamic section of most
 * modules in place; musl and read-only dynamic sections (the vDSO) keep
 * link-time addresses.  The one that falls inside the module wins. */
static uintptr_t dyn_addr(const struct dl_phdr_info *info, uint64_t d_ptr, size_t size)
{
	uintptr_t rebased = (uintptr_t)info->dlpi_addr + (uintptr_t)d_ptr;

	if (readable(info, (uintptr_t)d_ptr, size))
		return (uintptr_t)d_ptr;
	if (readable(info, rebased, size))
		return rebased;
	return 0;
}

static bool dyn_value(const struct module *m, ElfW(Sxword) tag, uint64_t *value)
{
	for (size_t i = 0; i < m->dyn_count; i++) {
		if (m->dyn[i].d_tag == tag) {
			*value = m->dyn[i].d_un.d_val;
			return true;
		}
	}
	return false;
}

struct dynsym_view {
	const ElfW(Sym) *sym;
	uintptr_t strtab;
	size_t strsz;
};

/* Entry i of .dynsym, if its name is OTEL_THREAD_CTX_SLOT_NAME and it is a defined TLS
 * symbol. */
static const ElfW(Sym) *slot_at(const struct module *m, const struct dynsym_view *v, size_t i)
{
	static const char name[] = OTEL_THREAD_CTX_SLOT_NAME;
	const ElfW(Sym) *s = v->sym + i;
	uintptr_t str;

	if (!readable(m->info, (uintptr_t)s, sizeof(*s)))
		return NULL;
	if (s->st_name >= v->strsz || v->strsz - s->st_name < sizeof(name))
		return NULL;
	str = v->strtab + s->st_name;
	if (memcmp((const void *)str, name, sizeof(name)) != 0)
		return NULL;
	if (s->st_shndx == SHN_UNDEF || ELF64_ST_TYPE(s->st_info) != STT_TLS)
		return NULL;
	return s;
}

/* Looks OTEL_THREAD_CTX_SLOT_NAME up in the module's in-memory .dynsym, by its hash table
 * (DT_GNU_HASH, else DT_HASH): the lookup a loader does. */
static const ElfW(Sym) *find_exported(const struct module *m)
{
	struct dynsym_view v;
	uint64_t symtab, strtab, strsz, hash;

	if (!dyn_value(m, DT_SYMTAB, &symtab) || !dyn_value(m, DT_STRTAB, &strtab) ||
	    !dyn_value(m, DT_STRSZ, &strsz) || strsz > SIZE_MAX)
		return NULL;
	v.strsz = (size_t)strsz;
	v.strtab = dyn_addr(m->info, strtab, v.strsz);
	v.sym = (const ElfW(Sym) *)dyn_addr(m->info, symtab, sizeof(ElfW(Sym)));
	if (v.strtab == 0 || v.sym == NULL)
		return NULL;

	if (dyn_value(m, DT_GNU_HASH, &hash)) {
		const uint32_t *hdr = (const uint32_t *)dyn_addr(m->info, hash, 16);
		uint32_t nbuckets, symoffset, bloom_size, h = otel__elf_gnu_hash(OTEL_THREAD_CTX_SLOT_NAME), i;
		const uint32_t *buckets, *chain;

		if (hdr == NULL)
			return NULL;
		nbuckets = hdr[0];
		symoffset = hdr[1];
		bloom_size = hdr[2];
		if (nbuckets == 0)
			return NULL;
		buckets = (const uint32_t *)((uintptr_t)(hdr + 4) + (uintptr_t)bloom_size * 8);
		if (!readable(m->info, (uintptr_t)buckets, (size_t)nbuckets * 4))
			return NULL;
		chain = buckets + nbuckets;
		i = buckets[h % nbuckets];
		if (i == 0 || i < symoffset)
			return NULL;
		for (uint32_t n = 0; n < CHAIN_MAX; n++, i++) {
			const uint32_t *c = chain + (i - symoffset);
			const ElfW(Sym) *s;

			if (!readable(m->info, (uintptr_t)c, 4))
				return NULL;
			if ((*c | 1) == (h | 1) && (s = slot_at(m, &v, i)) != NULL)
				return s;
			if (*c & 1)
				return NULL;
		}
		return NULL;
	}
	if (dyn_value(m, DT_HASH, &hash)) {
		const uint32_t *hdr = (const uint32_t *)dyn_addr(m->info, hash, 8);
		uint32_t nbucket, nchain, i;
		const uint32_t *bucket, *chain;

		if (hdr == NULL || hdr[0] == 0)
			return NULL;
		nbucket = hdr[0];
		nchain = hdr[1];
		bucket = hdr + 2;
		chain = bucket + nbucket;
		if (!readable(m->info, (uintptr_t)bucket, ((size_t)nbucket + nchain) * 4))
			return NULL;
		i = bucket[otel__elf_sysv_hash(OTEL_THREAD_CTX_SLOT_NAME) % nbucket];
		for (uint32_t n = 0; i != 0 && i < nchain && n < nchain; n++) {
			const ElfW(Sym) *s = slot_at(m, &v, i);

			if (s != NULL)
				return s;
			i = chain[i];
		}
	}
	return NULL;
}

static int visit(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct scan *sc = arg;
	struct module m = { info, NULL, 0 };
	const ElfW(Phdr) *tls = NULL;
	bool is_main = sc->index++ == 0;
	/* The main program is "" (glibc names it so; musl gives its path). */
	const char *name = is_main || info->dlpi_name == NULL ? "" : info->dlpi_name;
	bool holds = false;
	void *tls_data = NULL;
	const ElfW(Sym) *s;
	size_t modid = 0;

	/* Loaders older than the dlpi_tls_* fields pass a smaller struct. */
	if (size >= offsetof(struct dl_phdr_info, dlpi_tls_data) + sizeof(info->dlpi_tls_data)) {
		tls_data = info->dlpi_tls_data;
		modid = info->dlpi_tls_modid;
	}
	for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[i];

		if (p->p_type == PT_TLS)
			tls = p;
		else if (p->p_type == PT_DYNAMIC) {
			m.dyn = (const ElfW(Dyn) *)((uintptr_t)info->dlpi_addr + (uintptr_t)p->p_vaddr);
			m.dyn_count = (size_t)(p->p_memsz / sizeof(ElfW(Dyn)));
		}
	}
	if (m.dyn != NULL && !readable(info, (uintptr_t)m.dyn, m.dyn_count * sizeof(ElfW(Dyn))))
		m.dyn = NULL;
	if (tls != NULL && tls_data != NULL) {
		uintptr_t base = (uintptr_t)tls_data, slot = (uintptr_t)sc->slot;

		holds = slot >= base && slot - base < tls->p_memsz;
	}
	if (tls != NULL && tls_data == NULL && modid != 0 && sc->untouched < EXPORTERS_MAX) {
		sc->untouched_tls[sc->untouched].name = name;
		sc->untouched_tls[sc->untouched].modid = modid;
		sc->untouched_tls[sc->untouched].size = (size_t)tls->p_memsz;
		sc->untouched_tls[sc->untouched].is_main = is_main;
		sc->untouched_tls[sc->untouched].has_dynamic = m.dyn != NULL;
		sc->untouched++;
	}
	if (holds && !sc->holder_found) {
		sc->holder_found = true;
		sc->holder = name;
		sc->holder_is_main = is_main;
		sc->holder_has_dynamic = m.dyn != NULL;
	}
	if (is_main && m.dyn == NULL && tls != NULL) {
		sc->main_without_dynamic = true;
		sc->main_tls_data = tls_data;
		sc->main_tls_size = (size_t)tls->p_memsz;
	}
	if (m.dyn != NULL && tls != NULL && (s = find_exported(&m)) != NULL)
		add_exporter(sc, name, is_main, tls_data, modid, s->st_value);
	return 0;
}

/* pread() of exactly n bytes at off. */
static bool read_at(int fd, void *buf, size_t n, uint64_t off)
{
	size_t done = 0;

	while (done < n) {
		ssize_t r = pread(fd, (char *)buf + done, n - done, (off_t)(off + done));

		if (r <= 0)
			return false;
		done += (size_t)r;
	}
	return true;
}

/* st_value of a defined TLS OTEL_THREAD_CTX_SLOT_NAME in the .dynsym section of the ELF
 * file open at fd, by a linear walk (a static executable's .dynsym is
 * small); false when there is none or the file is not what it should be. */
static bool file_dynsym_slot(int fd, uint64_t *value)
{
	static const char name[] = OTEL_THREAD_CTX_SLOT_NAME;
	ElfW(Ehdr) eh;
	ElfW(Shdr) sym, str;
	char buf[sizeof(name)];

	if (!read_at(fd, &eh, sizeof(eh), 0) || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh.e_shentsize != sizeof(ElfW(Shdr)))
		return false;
	for (unsigned int i = 0; i < eh.e_shnum; i++) {
		if (!read_at(fd, &sym, sizeof(sym), eh.e_shoff + (uint64_t)i * sizeof(sym)))
			return false;
		if (sym.sh_type != SHT_DYNSYM || sym.sh_entsize != sizeof(ElfW(Sym)) ||
		    sym.sh_link >= eh.e_shnum ||
		    !read_at(fd, &str, sizeof(str), eh.e_shoff + (uint64_t)sym.sh_link * sizeof(str)))
			continue;
		for (uint64_t k = 1; k < sym.sh_size / sizeof(ElfW(Sym)) && k < CHAIN_MAX; k++) {
			ElfW(Sym) s;

			if (!read_at(fd, &s, sizeof(s), sym.sh_offset + k * sizeof(s)))
				return false;
			if (s.st_name >= str.sh_size || str.sh_size - s.st_name < sizeof(name) ||
			    !read_at(fd, buf, sizeof(buf), str.sh_offset + s.st_name) ||
			    memcmp(buf, name, sizeof(name)) != 0)
				continue;
			if (s.st_shndx == SHN_UNDEF || ELF64_ST_TYPE(s.st_info) != STT_TLS)
				continue;
			*value = s.st_value;
			return true;
		}
	}
	return false;
}

/* The main program has no dynamic section: look for a .dynsym section in
 * its file, as readers of the file do. */
static void check_main_file(struct scan *sc)
{
	uint64_t value;
	int fd;

	if (sc->main_tls_data == NULL)
		return;
	fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (file_dynsym_slot(fd, &value) && value <= sc->main_tls_size &&
	    sc->main_tls_size - value >= sizeof(void *))
		add_exporter(sc, "", true, sc->main_tls_data, 1, value);
	close(fd);
}

static const char *module_text(const char *name, bool is_main)
{
	return is_main || name == NULL || name[0] == '\0' ? "the main program" : name;
}

__attribute__((format(printf, 2, 3)))
static void say(struct otel_thread_ctx_self_check *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->reason, sizeof(r->reason), fmt, ap);
	va_end(ap);
}

OTEL_EXPORT int otel_thread_ctx_self_check(struct otel_thread_ctx_self_check *r)
{
	const struct exporter *match = NULL, *first = NULL, *unknown = NULL;
	struct scan sc;
	tls_get_addr_fn get;
	unsigned int n;

	if (r == NULL)
		return OTEL_THREAD_CTX_ENULL;
	memset(r, 0, sizeof(*r));
	memset(&sc, 0, sizeof(sc));
	sc.slot = otel__slot_in_effect();
	r->slot = sc.slot;
	r->own_slot = otel__own_slot();
	r->slot_is_own = r->slot == r->own_slot;
	dl_iterate_phdr(visit, &sc);
	if (sc.main_without_dynamic)
		check_main_file(&sc);
	/* The holder among the blocks the loader did not report, the same
	 * way (glibc does not report the block of a module dlopen()ed into
	 * static TLS until the thread has asked for it by this call). */
	get = tls_get_addr();
	for (unsigned int i = 0; i < sc.untouched && !sc.holder_found && get != NULL; i++) {
		size_t ti[2] = { sc.untouched_tls[i].modid, 0 };
		uintptr_t base = (uintptr_t)get(ti), slot = (uintptr_t)sc.slot;

		if (base != 0 && slot >= base && slot - base < sc.untouched_tls[i].size) {
			sc.holder_found = true;
			sc.holder = sc.untouched_tls[i].name;
			sc.holder_is_main = sc.untouched_tls[i].is_main;
			sc.holder_has_dynamic = sc.untouched_tls[i].has_dynamic;
		}
	}

	/* Exporters whose TLS block this thread has not allocated yet (a
	 * dlopen()ed module it never touched): ask the loader, outside
	 * dl_iterate_phdr(), whose lock must not be held meanwhile. */
	n = sc.exporting < EXPORTERS_MAX ? sc.exporting : EXPORTERS_MAX;
	for (unsigned int i = 0; i < n; i++) {
		struct exporter *x = &sc.exporters[i];

		if (x->addr == NULL && x->modid != 0 && get != NULL) {
			size_t ti[2] = { x->modid, (size_t)x->value };

			x->addr = get(ti);
		}
		if (x->addr == NULL) {
			if (unknown == NULL)
				unknown = x;
			continue;
		}
		if (first == NULL)
			first = x;
		if (match == NULL && x->addr == sc.slot)
			match = x;
	}

	r->module = sc.holder_found ? sc.holder : NULL;
	r->exporting_modules = sc.exporting;
	if (match != NULL) {
		char others[64] = "";

		r->status = OTEL_THREAD_CTX_SELF_CHECK_OK;
		r->exported = match->addr;
		r->exported_module = match->name;
		if (sc.exporting > 1)
			snprintf(others, sizeof(others), "; %u other loaded module%s export%s it too",
				 sc.exporting - 1, sc.exporting == 2 ? "" : "s",
				 sc.exporting == 2 ? "s" : "");
		if (r->slot_is_own)
			say(r, "%s exports " OTEL_THREAD_CTX_SLOT_NAME ", which resolves to %p in this thread, the slot this library writes%s",
			    module_text(match->name, match->is_main), sc.slot, others);
		else
			say(r, "%s exports " OTEL_THREAD_CTX_SLOT_NAME ", which resolves to %p in this thread, the slot this library writes; it is that module's definition, ahead of the library's own (%p), so records go where readers look, but any other writer of that slot competes with this library%s",
			    module_text(match->name, match->is_main), sc.slot, r->own_slot, others);
		return OTEL_THREAD_CTX_OK;
	}
	if (first != NULL) {
		r->status = OTEL_THREAD_CTX_SELF_CHECK_MISMATCH;
		r->exported = first->addr;
		r->exported_module = first->name;
		say(r, "%s exports " OTEL_THREAD_CTX_SLOT_NAME " at %p in this thread, but this library writes %p%s%s%s: two copies of the library are loaded, and profilers read the one that is exported",
		    module_text(first->name, first->is_main), first->addr, sc.slot,
		    sc.holder_found ? " (in " : "",
		    sc.holder_found ? module_text(sc.holder, sc.holder_is_main) : "",
		    sc.holder_found ? ", which does not export it)" : "");
	} else if (unknown != NULL) {
		r->status = OTEL_THREAD_CTX_SELF_CHECK_UNKNOWN;
		r->exported_module = unknown->name;
		say(r, "%s exports " OTEL_THREAD_CTX_SLOT_NAME ", but its TLS block in this thread could not be located, so the address cannot be compared with %p",
		    module_text(unknown->name, unknown->is_main), sc.slot);
	} else if (!sc.holder_found) {
		r->status = OTEL_THREAD_CTX_SELF_CHECK_NOT_EXPORTED;
		say(r, "no loaded module exports " OTEL_THREAD_CTX_SLOT_NAME " in its .dynsym, and the slot at %p is in no module's TLS block",
		    sc.slot);
	} else if (!sc.holder_has_dynamic) {
		r->status = OTEL_THREAD_CTX_SELF_CHECK_NOT_EXPORTED;
		say(r, "%s holds the slot but has no dynamic symbol table (a fully static executable), so profilers cannot find " OTEL_THREAD_CTX_SLOT_NAME "; link it with -static-pie and " EXPORT_FLAG,
		    module_text(sc.holder, sc.holder_is_main));
	} else {
		r->status = OTEL_THREAD_CTX_SELF_CHECK_NOT_EXPORTED;
		say(r, "%s holds the slot but does not export " OTEL_THREAD_CTX_SLOT_NAME " in its .dynsym, so profilers cannot find it; link it with " EXPORT_FLAG " (pkg-config --static --libs otel-thread-ctx gives it)",
		    module_text(sc.holder, sc.holder_is_main));
	}
	return OTEL_THREAD_CTX_ESLOT;
}
