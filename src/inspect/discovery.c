/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The out-of-process inspector (include/otel_thread_ctx_inspect.h), its
 * discovery: open() finds the modules that define the slot and works out
 * how each one's code reaches it; the description it builds is what
 * threads.c walks in each thread and what eBPF readers are handed.
 * Everything read from the process is treated as hostile.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "arch.h"
#include "elf_reader.h"
#include "inspect.h"
#include "remote.h"

OTEL_EXPORT const char *otel_thread_ctx_inspect_model_name(int model)
{
	switch (model) {
	case OTEL_THREAD_CTX_INSPECT_TLSDESC_STATIC:
		return "tlsdesc-static";
	case OTEL_THREAD_CTX_INSPECT_TLSDESC_DYNAMIC:
		return "tlsdesc-dynamic";
	case OTEL_THREAD_CTX_INSPECT_GENERAL_DYNAMIC:
		return "general-dynamic";
	case OTEL_THREAD_CTX_INSPECT_INITIAL_EXEC:
		return "initial-exec";
	case OTEL_THREAD_CTX_INSPECT_LOCAL_EXEC:
		return "local-exec";
	}
	return "unknown";
}

static int read_u64(pid_t pid, uint64_t addr, uint64_t *v)
{
	return otel__remote_read(pid, addr, v, sizeof(*v));
}

/* The code for a failed read (a negative errno) of something the process
 * should hold there (a GOT entry, a descriptor, a resolver's code): the
 * mapping of remote.c, where any error it has no code for is EFAULT. */
static int read_error(int err)
{
	int code = otel__remote_error(err);

	return code == OTEL_THREAD_CTX_ESYS ? OTEL_THREAD_CTX_EFAULT : code;
}
/*
 * Modules are found as the dynamic loader placed them.  Every mapping of a
 * file is kept (no cap: the array grows with the process's maps, which the
 * kernel bounds with vm.max_map_count), keyed by device and inode; a
 * mapping of file offset 0 is a loaded image only if every PT_LOAD segment
 * of the file with bytes in it is mapped from that file at its place
 * relative to it (file offset and address agreeing, executable where the
 * segment is; an executable segment may also lie in executable memory
 * without a file, where a program copied its code to put it on huge
 * pages).  Where that copy took the file's first page too (the code starts
 * at offset 0 on aarch64), the image starts at the executable memory
 * without a file below the file's other mappings that begins with an ELF
 * header, under the same rule.  So a file mapped again read-only from
 * offset 0 (a symbolizer reading its own debug sections) is no module, and each copy
 * of a library (another link-map namespace: dlmopen()) is a module of its
 * own, with its own GOT and so its own TLS module id or offset.
 */
struct mapping {
	uint64_t start, end, offset;
	uint64_t dev, inode;
	bool exec, readable;
	char *name; /* as in maps, " (deleted)" included */
};

/* Executable memory that no file backs, by address. */
struct span {
	uint64_t start, end;
};

struct mapping_list {
	struct mapping *m;
	size_t count, cap;
	struct span *anon_x;
	size_t nanon, anon_cap;
	int err;
	/* What else open() needs of the maps, from the same pass: the
	 * modules' signature (image.c) and the process context's
	 * candidates (process_read.c), and the public maps signature. */
	uint64_t signature, maps_signature;
	struct otel__process_candidates ctx;
};

/* Appends [start, end) to l->anon_x; 1 when out of memory. */
static int add_anon_x(struct mapping_list *l, uint64_t start, uint64_t end)
{
	if (l->nanon == l->anon_cap) {
		size_t cap = l->anon_cap != 0 ? l->anon_cap * 2 : 16;
		struct span *n = realloc(l->anon_x, cap * sizeof(*n));

		if (n == NULL) {
			l->err = OTEL_THREAD_CTX_ENOMEM;
			return 1;
		}
		l->anon_x = n;
		l->anon_cap = cap;
	}
	l->anon_x[l->nanon++] = (struct span){ start, end };
	return 0;
}

static int add_mapping(const struct otel__maps_entry *e, void *arg)
{
	struct mapping_list *l = arg;
	struct mapping *m;

	otel__inspect_sign_module_mapping(&l->signature, e);
	otel__inspect_sign_file_mapping(&l->maps_signature, e);
	otel__inspect_process_candidate(&l->ctx, e);
	/* Files only: a path and an inode ("[heap]", anonymous memory and
	 * the like have neither); and executable memory without a file, where
	 * a program may have copied its code (text remapped onto huge pages). */
	if (e->inode == 0 && e->perms[2] == 'x')
		return add_anon_x(l, e->start, e->end);
	if (e->name[0] != '/' || e->inode == 0)
		return 0;
	if (l->count == l->cap) {
		size_t cap = l->cap != 0 ? l->cap * 2 : 256;
		struct mapping *n = realloc(l->m, cap * sizeof(*n));

		if (n == NULL) {
			l->err = OTEL_THREAD_CTX_ENOMEM;
			return 1;
		}
		l->m = n;
		l->cap = cap;
	}
	m = &l->m[l->count];
	m->start = e->start;
	m->end = e->end;
	m->offset = e->offset;
	m->dev = (uint64_t)e->dev_major << 32 | e->dev_minor;
	m->inode = e->inode;
	m->exec = e->perms[2] == 'x';
	m->readable = e->perms[0] == 'r';
	if ((m->name = strdup(e->name)) == NULL) {
		l->err = OTEL_THREAD_CTX_ENOMEM;
		return 1;
	}
	l->count++;
	return 0;
}

static void free_mappings(struct mapping_list *l)
{
	for (size_t i = 0; i < l->count; i++)
		free(l->m[i].name);
	free(l->m);
	free(l->anon_x);
	memset(l, 0, sizeof(*l));
}

/* By file (device, inode), then address. */
static int cmp_mapping(const void *a, const void *b)
{
	const struct mapping *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->inode != y->inode)
		return x->inode < y->inode ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* Every file mapping of process `pid`, sorted by file then address. */
static int list_mappings(pid_t pid, struct mapping_list *l)
{
	int err;

	memset(l, 0, sizeof(*l));
	l->signature = OTEL__SIGNATURE_INIT;
	l->maps_signature = OTEL__SIGNATURE_INIT;
	err = otel__remote_maps(pid, add_mapping, l);
	if (err == 0)
		err = l->err;
	if (err != 0) {
		free_mappings(l);
		return err;
	}
	if (l->count > 1)
		qsort(l->m, l->count, sizeof(*l->m), cmp_mapping);
	return 0;
}

/* Opens `path` as a regular file without side effects: O_PATH first (no
 * open of a device or FIFO happens), then, once fstat() says regular, the
 * same inode for reading through /proc/self/fd.  -1 otherwise. */
static int open_regular(const char *path, struct stat *st)
{
	char self[64];
	int p = open(path, O_PATH | O_CLOEXEC), fd;

	if (p < 0)
		return -1;
	if (fstat(p, st) != 0 || !S_ISREG(st->st_mode)) {
		close(p);
		return -1;
	}
	snprintf(self, sizeof(self), "/proc/self/fd/%d", p);
	fd = open(self, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	close(p);
	if (fd >= 0 && (fstat(fd, st) != 0 || !S_ISREG(st->st_mode))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Is the file open at `fd` the one mapped by `m` (a readable mapping)?
 * Its device and inode, or, where a file system shows others through a
 * path than in maps (overlayfs), the bytes it maps against the mapping's. */
static bool same_file(pid_t pid, int fd, const struct stat *st, const struct mapping *m)
{
	unsigned char file[512], mem[512];
	size_t n = sizeof(file);
	ssize_t got;

	if (((uint64_t)major(st->st_dev) << 32 | minor(st->st_dev)) == m->dev &&
	    st->st_ino == m->inode)
		return true;
	if (m->end - m->start < n)
		n = (size_t)(m->end - m->start);
	got = pread(fd, file, n, (off_t)m->offset);
	return got > 0 && otel__remote_read(pid, m->start, mem, (size_t)got) == 0 &&
	       memcmp(file, mem, (size_t)got) == 0;
}

/*
 * Opens the file of mapping `m` (readable) as the process maps it:
 * /proc/PID/map_files/START-END, the mapped file itself (also when it was
 * deleted or replaced since, or lives in another mount namespace; following
 * it needs CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE); else the path under
 * the process's root, then as seen here, each only if it is still the file
 * mapped.  Never opens anything but a regular file.
 */
static int open_module(pid_t pid, const struct mapping *m, struct otel__elf **elf)
{
	char buf[PATH_MAX + 64];
	struct stat st;
	int fd, rc;

	snprintf(buf, sizeof(buf), "/proc/%d/map_files/%llx-%llx", (int)pid,
		 (unsigned long long)m->start, (unsigned long long)m->end);
	fd = open_regular(buf, &st);
	if (fd < 0) {
		snprintf(buf, sizeof(buf), "/proc/%d/root%s", (int)pid, m->name);
		fd = open_regular(buf, &st);
		if (fd >= 0 && !same_file(pid, fd, &st, m)) {
			close(fd);
			fd = -1;
		}
	}
	if (fd < 0) {
		fd = open_regular(m->name, &st);
		if (fd >= 0 && !same_file(pid, fd, &st, m)) {
			close(fd);
			fd = -1;
		}
	}
	if (fd < 0)
		return -1;
	rc = otel__elf_open_fd(elf, fd, 0, NULL);
	close(fd);
	return rc;
}

/* Is there a mapping of the file (in f[0 .. n - 1]) at `addr` with file
 * offset `offset`, executable when `exec`?  Executable memory without a
 * file (l->anon_x) stands for a mapping of an executable segment: the code
 * copied there keeps the module's layout. */
static bool mapped_at(const struct mapping_list *l, const struct mapping *f, size_t n, uint64_t addr,
		      uint64_t offset, bool exec)
{
	size_t lo = 0, hi = l->nanon;

	for (size_t i = 0; i < n; i++)
		if (addr >= f[i].start && addr < f[i].end)
			return f[i].offset + (addr - f[i].start) == offset && (!exec || f[i].exec);
	if (!exec)
		return false;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr < l->anon_x[mid].start)
			hi = mid;
		else if (addr >= l->anon_x[mid].end)
			lo = mid + 1;
		else
			return true;
	}
	return false;
}

/*
 * The load bias of the image whose first page (the file's start) is mapped
 * at `start`, when the file's PT_LOAD segments are all mapped where the
 * loader puts them (f: the file's mappings, by address); false when no
 * loaded image starts there.  `copied`: that first page was found in
 * executable memory without a file (anon_image_below()), where the first
 * segment is then taken to lie, executable or not, with the code copied
 * after it.
 */
static bool loaded_image(const struct mapping_list *l, const struct otel__elf *elf,
			 const struct mapping *f, size_t n, uint64_t start, bool copied, uint64_t *bias)
{
	struct otel__elf_info info;
	long pg = sysconf(_SC_PAGESIZE);
	uint64_t page = pg > 0 ? (uint64_t)pg : 4096;
	bool first = true, head = false;

	otel__elf_info(elf, &info);
	for (size_t i = 0; i < info.phnum; i++) {
		const struct otel__elf64_phdr *ph = otel__elf_phdr(elf, i);

		if (ph == NULL || ph->p_type != OTEL__PT_LOAD)
			continue;
		if (first) {
			/* The first PT_LOAD (lowest address) maps the file's
			 * start. */
			if ((ph->p_offset & ~(page - 1)) != 0)
				return false;
			*bias = start - (ph->p_vaddr & ~(page - 1));
			first = false;
			head = copied;
		}
		if (ph->p_filesz == 0)
			continue;
		if (!mapped_at(l, f, n, *bias + ph->p_vaddr, ph->p_offset, (ph->p_flags & 1u) != 0 || head))
			return false;
		head = false;
	}
	return !first;
}

/* glibc or musl, from the interpreter of the main program, else from the
 * names of the mapped files. */
static int detect_libc(pid_t pid, const struct mapping_list *l)
{
	char buf[64];
	struct otel__elf *exe = NULL;

	snprintf(buf, sizeof(buf), "/proc/%d/exe", (int)pid);
	if (otel__elf_open_path(&exe, buf, 0, NULL) == 0) {
		struct otel__elf_info info;

		otel__elf_info(exe, &info);
		if (info.interp != NULL) {
			int libc = strstr(info.interp, "ld-musl") != NULL ?
					   OTEL_THREAD_CTX_INSPECT_LIBC_MUSL :
				   strstr(info.interp, "ld-linux") != NULL ?
					   OTEL_THREAD_CTX_INSPECT_LIBC_GLIBC :
					   OTEL_THREAD_CTX_INSPECT_LIBC_UNKNOWN;

			otel__elf_close(exe);
			if (libc != OTEL_THREAD_CTX_INSPECT_LIBC_UNKNOWN)
				return libc;
		} else {
			otel__elf_close(exe);
		}
	}
	for (size_t i = 0; i < l->count; i++) {
		const char *path = l->m[i].name, *base;

		if (path == NULL)
			continue;
		base = strrchr(path, '/');
		base = base != NULL ? base + 1 : path;
		if (strncmp(base, "ld-musl", 7) == 0 || strstr(path, "-linux-musl/") != NULL)
			return OTEL_THREAD_CTX_INSPECT_LIBC_MUSL;
		if (strncmp(base, "ld-linux", 8) == 0 || strncmp(base, "libc.so.6", 9) == 0)
			return OTEL_THREAD_CTX_INSPECT_LIBC_GLIBC;
	}
	return OTEL_THREAD_CTX_INSPECT_LIBC_UNKNOWN;
}

/*
 * Works out how module `m` reaches the slot, reading GOT entries and TLS
 * descriptors from the process.  0, or a negative error.
 *
 * *dtv_gen: with glibc, whose TLSDESC argument for dynamic TLS is {module
 * id, offset, generation} (struct tlsdesc_dynamic_arg), that generation: a
 * thread's DTV entry for the module is this module's only once the thread's
 * DTV generation (dtv[0]) reached it; before, it is unallocated or left over
 * from a module unloaded since under the same id, and the thread has
 * published nothing through this one (its accesses go through
 * __tls_get_addr, which brings the DTV up to date).  0 when not known (other
 * models; musl, whose modules are never unloaded).
 */
static int resolve_model(pid_t pid, const struct otel__elf *elf, const struct otel__elf_info *info,
			 int libc, struct otel_thread_ctx_inspect_module *m, uint64_t *dtv_gen)
{
	struct otel__elf_tls_access acc;
	uint64_t v, w;
	int err;

	*dtv_gen = 0;
	if (otel__elf_tls_classify(elf, OTEL_THREAD_CTX_SLOT_NAME, &acc) != 0)
		return OTEL_THREAD_CTX_EMODEL;
	if (acc.desc.count > 0) {
		uint64_t desc[2];
		unsigned char code[OTEL__TLSDESC_RESOLVER_SIZE];

		/*
		 * {resolver, argument}.  Static or dynamic, the way the loader
		 * decided it: by the resolver it put in the descriptor.  The
		 * static one returns the argument, an offset from the thread
		 * pointer (of any size: an executable's 2 MiB of TLS ahead of
		 * the module's block on aarch64); anything else takes it for a
		 * pointer to {module id, offset in the block}, as glibc's and
		 * musl's dynamic resolvers do.  A resolver that cannot be
		 * read is EFAULT: it is the loader's code.
		 */
		if ((err = otel__remote_read(pid, m->base + acc.desc.offset, desc, sizeof(desc))) != 0 ||
		    (err = otel__remote_read(pid, desc[0], code, sizeof(code))) != 0)
			return read_error(err);
		if (otel__tlsdesc_resolver_is_static(code)) {
			m->model = OTEL_THREAD_CTX_INSPECT_TLSDESC_STATIC;
			m->tp_offset = (int64_t)desc[1];
			return 0;
		}
		if ((err = read_u64(pid, desc[1], &m->module_id)) != 0 ||
		    (err = read_u64(pid, desc[1] + 8, &m->dtv_offset)) != 0)
			return read_error(err);
		if (m->module_id == 0 || m->module_id > 0xffffff)
			return OTEL_THREAD_CTX_EFAULT;
		if (libc == OTEL_THREAD_CTX_INSPECT_LIBC_GLIBC && read_u64(pid, desc[1] + 16, dtv_gen) != 0)
			*dtv_gen = 0;
		m->model = OTEL_THREAD_CTX_INSPECT_TLSDESC_DYNAMIC;
		return 0;
	}
	if (acc.tpoff.count > 0) {
		err = read_u64(pid, m->base + acc.tpoff.offset, &v);
		if (err != 0)
			return read_error(err);
		if (acc.tpoff.type == OTEL__R_X86_64_TPOFF32)
			v = (uint64_t)(int64_t)(int32_t)(uint32_t)v;
		m->model = OTEL_THREAD_CTX_INSPECT_INITIAL_EXEC;
		m->tp_offset = (int64_t)v;
		return 0;
	}
	if (acc.dtpmod.count > 0 && acc.dtpoff.count > 0) {
		if ((err = read_u64(pid, m->base + acc.dtpmod.offset, &v)) != 0 ||
		    (err = read_u64(pid, m->base + acc.dtpoff.offset, &w)) != 0)
			return read_error(err);
		if (v == 0 || v > 0xffffff)
			return OTEL_THREAD_CTX_EFAULT;
		m->model = OTEL_THREAD_CTX_INSPECT_GENERAL_DYNAMIC;
		m->module_id = v;
		m->dtv_offset = w;
		return 0;
	}
	if ((acc.models & OTEL__ELF_TLS_LE) != 0 && otel__elf_kind_is_executable(info->kind)) {
		int64_t off;

		if (otel__elf_tls_local_exec_offset(elf, m->st_value, &off) != 0)
			return OTEL_THREAD_CTX_EMODEL;
		m->model = OTEL_THREAD_CTX_INSPECT_LOCAL_EXEC;
		m->tp_offset = off;
		return 0;
	}
	return OTEL_THREAD_CTX_EMODEL;
}


static void free_inspector(struct otel_thread_ctx_inspector *insp)
{
	if (insp == NULL)
		return;
	for (size_t i = 0; i < insp->count; i++)
		free(insp->found[i].path);
	free(insp->found);
	free(insp->modules);
	free(insp->where);
	otel_thread_ctx_inspect_process_snapshot_free(insp->pctx);
	free(insp);
}

/* Adds a module to insp->found. */
static int add_module(struct otel_thread_ctx_inspector *insp,
		      const struct otel_thread_ctx_inspect_module *m, const char *path,
		      const struct otel_thread_ctx_bpf_module *where)
{
	struct found_module *f;

	if (insp->count == insp->cap) {
		size_t cap = insp->cap != 0 ? insp->cap * 2 : 4;
		struct found_module *n = realloc(insp->found, cap * sizeof(*n));

		if (n == NULL)
			return OTEL_THREAD_CTX_ENOMEM;
		insp->found = n;
		insp->cap = cap;
	}
	f = &insp->found[insp->count];
	f->m = *m;
	f->where = *where;
	if ((f->path = strdup(path)) == NULL)
		return OTEL_THREAD_CTX_ENOMEM;
	insp->count++;
	return 0;
}

static int cmp_found(const void *a, const void *b)
{
	const struct found_module *x = a, *y = b;

	return x->m.base < y->m.base ? -1 : x->m.base > y->m.base;
}

/*
 * The start of the executable memory without a file nearest below `below`
 * when it begins with an ELF header, else 0: where a program that copied a
 * module's code (text on huge pages) left the module's first page, when
 * that page is in its executable segment, as on aarch64, where the code
 * starts at file offset 0 and so the module keeps no mapping of offset 0.
 */
static uint64_t anon_image_below(pid_t pid, const struct mapping_list *l, uint64_t below)
{
	size_t lo = 0, hi = l->nanon;
	unsigned char magic[4];

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (l->anon_x[mid].start < below)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || otel__remote_read(pid, l->anon_x[lo - 1].start, magic, 4) != 0 ||
	    memcmp(magic, "\x7f" "ELF", 4) != 0)
		return 0;
	return l->anon_x[lo - 1].start;
}

/* Adds the module of `elf` whose first page is at `start` (`copied`: in
 * executable memory without a file), if it is a loaded image there; `name`
 * is the file's name in maps. */
static int image_at(struct otel_thread_ctx_inspector *insp, const struct mapping_list *l,
		    const struct mapping *f, size_t n, uint64_t start, bool copied, const char *name,
		    struct otel__elf *elf, const struct otel__elf_info *info,
		    const struct otel__elf_sym *sym, int *model_err)
{
	struct otel_thread_ctx_inspect_module m;
	struct otel_thread_ctx_bpf_module where;
	uint64_t bias = 0, gen;
	int rc;

	if (!loaded_image(l, elf, f, n, start, copied, &bias))
		return 0;
	memset(&m, 0, sizeof(m));
	m.base = bias;
	m.st_value = sym->value;
	rc = resolve_model(insp->mem, elf, info, insp->info.libc, &m, &gen);
	if (rc == 0)
		rc = otel__inspect_describe_module(&m, &insp->layout, &where);
	if (rc != 0) {
		*model_err = rc;
		return 0;
	}
	if (where.kind == OTEL_THREAD_CTX_BPF_KIND_DTV)
		where.dtv_gen = gen;
	return add_module(insp, &m, name, &where);
}

/*
 * The modules of one file, f[0 .. n - 1] its mappings by address: each
 * loaded image of it, when it defines the slot.  *defined is set when it
 * does; *model_err holds the last model error.
 */
/* How many of a file's mappings image_heads() looks at in one read. */
#define HEADS_BATCH 256

/*
 * Which of the file's mappings f[from ..] that start at its offset 0 (up to
 * HEADS_BATCH of them) may hold a loaded image: their first 4 bytes are the
 * ELF magic, or cannot be read (the benefit of the doubt).  One read for
 * all of them (a file mapped thousands of times costs one system call per
 * batch, not per mapping); those after one that cannot be read are read
 * one at a time.  Fills at[] (indices in f) and may[]; returns how many,
 * and in *next where the next batch starts.
 */
static size_t image_heads(pid_t pid, const struct mapping *f, size_t n, size_t from, size_t *next,
			  size_t at[HEADS_BATCH], bool may[HEADS_BATCH])
{
	uint64_t addr[HEADS_BATCH];
	unsigned char magic[HEADS_BATCH][4];
	size_t k = 0, i = from, good;

	for (; i < n && k < HEADS_BATCH; i++) {
		if (f[i].offset != 0)
			continue;
		at[k] = i;
		addr[k++] = f[i].start;
	}
	*next = i;
	good = otel__remote_read_many(pid, addr, k, magic, 4);
	for (size_t j = 0; j < k; j++) {
		bool read = j < good || otel__remote_read(pid, addr[j], magic[j], 4) == 0;

		may[j] = !read || memcmp(magic[j], "\x7f" "ELF", 4) == 0;
	}
	return k;
}

static int file_modules(struct otel_thread_ctx_inspector *insp, const struct mapping_list *l,
			const struct mapping *f, size_t n, int *defined, int *model_err)
{
	pid_t pid = insp->mem;
	struct otel__elf *elf = NULL;
	struct otel__elf_info info;
	struct otel__elf_sym sym;
	uint64_t copied = 0, prev = 0;
	bool any_zero = false;
	int err = 0;

	/* A loaded image starts with the ELF header: the files mapped
	 * otherwise (data, an index: thousands in some processes) are not
	 * opened at all. */
	for (size_t from = 0, next; from < n && elf == NULL; from = next) {
		size_t at[HEADS_BATCH], k;
		bool may[HEADS_BATCH];

		k = image_heads(pid, f, n, from, &next, at, may);
		for (size_t j = 0; j < k && elf == NULL; j++) {
			if (!may[j])
				continue;
			any_zero = true;
			if (open_module(pid, &f[at[j]], &elf) != 0)
				elf = NULL;
		}
	}
	/* No mapping of offset 0: the file's first page may have been copied
	 * with its code onto memory without a file, right below the rest. */
	if (elf == NULL && !any_zero && l->nanon != 0 && (copied = anon_image_below(pid, l, f[0].start)) != 0)
		for (size_t i = 0; i < n && elf == NULL; i++)
			if (f[i].readable && open_module(pid, &f[i], &elf) != 0)
				elf = NULL;
	if (elf == NULL)
		return 0;
	if (otel__elf_sym_find(elf, OTEL__ELF_DYNSYM, OTEL_THREAD_CTX_SLOT_NAME, &sym) != 0 ||
	    sym.shndx == OTEL__SHN_UNDEF || sym.type != OTEL__STT_TLS) {
		otel__elf_close(elf);
		return 0;
	}
	*defined = 1;
	otel__elf_info(elf, &info);
	if (info.machine != OTEL__INSPECT_ELF_MACHINE) {
		otel__elf_close(elf);
		*model_err = OTEL_THREAD_CTX_EMODEL;
		return 0;
	}
	for (size_t i = 0; i < n && err == 0; i++)
		if (f[i].offset == 0)
			err = image_at(insp, l, f, n, f[i].start, false, f[i].name, elf, &info, &sym, model_err);
	/* Each copy of the file whose first page was copied (one per run of
	 * its mappings: dlmopen() loads copies apart). */
	for (size_t i = 0; i < n && err == 0 && copied != 0; i++) {
		uint64_t at = i == 0 ? copied : anon_image_below(pid, l, f[i].start);

		if (at != 0 && at != prev)
			err = image_at(insp, l, f, n, at, true, f[i].name, elf, &info, &sym, model_err);
		prev = at;
	}
	otel__elf_close(elf);
	return err;
}

/*
 * The outcome of open(), `err` as its reads found it, given what the
 * process did meanwhile: ESRCH when it is gone, EAGAIN when it exec()ed or
 * its modules changed (what was read may mix two images), else `err`.
 * Errors of this side (ENOMEM) stand.
 */
static int settle(const struct otel_thread_ctx_inspector *insp, int err)
{
	int now;

	if (err == OTEL_THREAD_CTX_ENOMEM || err == OTEL_THREAD_CTX_ESRCH)
		return err;
	now = otel__inspect_image_unchanged(insp, insp->mem, true);
	return now != OTEL_THREAD_CTX_OK ? now : err;
}

OTEL_EXPORT int otel_thread_ctx_inspect_open(pid_t pid, otel_thread_ctx_inspector **out)
{
	struct otel_thread_ctx_inspector *insp;
	struct mapping_list maps;
	int err, model_err = 0, defined = 0;

	if (out == NULL)
		return OTEL_THREAD_CTX_ENULL;
	if (pid <= 0)
		return OTEL_THREAD_CTX_ESRCH;
	if (kill(pid, 0) != 0 && errno == ESRCH)
		return OTEL_THREAD_CTX_ESRCH;
	insp = calloc(1, sizeof(*insp));
	if (insp == NULL)
		return OTEL_THREAD_CTX_ENOMEM;
	insp->info.pid = pid;
	insp->mem = otel__remote_memory_task(pid);
	/* The image and its modules as they are before anything is read
	 * (otel__inspect_image_unchanged() compares them at the end): the
	 * mark, then the signature of the maps listed, in one pass over them
	 * (they are the longest thing read: 60,000 lines in some processes). */
	insp->mark_known = otel__inspect_image_mark(insp->mem, &insp->mark_at, insp->mark) == 0;
	err = list_mappings(insp->mem, &maps);
	if (err != 0) {
		free_inspector(insp);
		return err;
	}
	insp->signature = maps.signature;
	insp->signature_known = true;
	insp->maps_signature = maps.maps_signature;
	if (maps.count == 0) {
		/* No file mapped: gone or exiting (no thread has memory), a
		 * kernel thread (maps that may not be read fail to open,
		 * above), or caught in an exec(). */
		err = settle(insp, OTEL_THREAD_CTX_ENOSLOT);
		/* A user process none of whose threads has memory left is
		 * exiting, whatever the checks at both ends saw: its maps read
		 * empty at both (seen on aarch64, where an open takes longer
		 * than the test's child takes to exit). */
		if (err == OTEL_THREAD_CTX_ENOSLOT && otel__remote_memory_released(pid))
			err = OTEL_THREAD_CTX_ESRCH;
		goto done;
	}
	insp->info.libc = detect_libc(insp->mem, &maps);
	otel__inspect_dtv_layout(insp->info.libc, &insp->layout);
	for (size_t g = 0, next; g < maps.count; g = next) {
		for (next = g + 1; next < maps.count && maps.m[next].dev == maps.m[g].dev &&
				   maps.m[next].inode == maps.m[g].inode;
		     next++)
			;
		err = file_modules(insp, &maps, &maps.m[g], next - g, &defined, &model_err);
		if (err != 0) {
			err = settle(insp, err);
			goto done;
		}
	}
	if (insp->count == 0) {
		err = settle(insp, !defined || model_err == 0 ? OTEL_THREAD_CTX_ENOSLOT : model_err);
		goto done;
	}
	/* In address order, as the header promises. */
	qsort(insp->found, insp->count, sizeof(*insp->found), cmp_found);
	insp->modules = calloc(insp->count, sizeof(*insp->modules));
	insp->where = calloc(insp->count, sizeof(*insp->where));
	if (insp->modules == NULL || insp->where == NULL) {
		err = OTEL_THREAD_CTX_ENOMEM;
		goto done;
	}
	for (size_t i = 0; i < insp->count; i++) {
		insp->modules[i] = insp->found[i].m;
		insp->modules[i].path = insp->found[i].path;
		insp->where[i] = insp->found[i].where;
	}
	insp->info.modules = insp->modules;
	insp->info.module_count = insp->count;
	insp->info.process_ctx_status = otel__inspect_process_read_candidates(pid, &maps.ctx, &insp->pctx);
	insp->info.process_ctx = insp->pctx;
	/* All of it from one image with the same modules, or nothing. */
	err = settle(insp, OTEL_THREAD_CTX_OK);
	if (err != 0)
		goto done;
	*out = insp;
	insp = NULL;
	err = 0;
done:
	free_inspector(insp);
	free_mappings(&maps);
	return err;
}

OTEL_EXPORT const struct otel_thread_ctx_inspect_info *
otel_thread_ctx_inspect_info(const otel_thread_ctx_inspector *insp)
{
	return insp != NULL ? &insp->info : NULL;
}

OTEL_EXPORT unsigned int otel_thread_ctx_inspect_key_count(const otel_thread_ctx_inspector *insp)
{
	if (insp == NULL || insp->pctx == NULL)
		return 0;
	return (unsigned int)insp->pctx->key_count;
}

OTEL_EXPORT const char *otel_thread_ctx_inspect_key_name(const otel_thread_ctx_inspector *insp,
							 unsigned int index)
{
	if (insp == NULL || insp->pctx == NULL || index >= insp->pctx->key_count)
		return NULL;
	return insp->pctx->keys[index];
}

OTEL_EXPORT void otel_thread_ctx_inspect_attr_iter_init(struct otel_thread_ctx_attr_iter *it,
							const otel_thread_ctx_inspector *insp,
							const struct otel_thread_ctx_record *record)
{
	otel__attr_iter_init_map(it, record, otel_thread_ctx_inspect_key_count(insp));
}

OTEL_EXPORT int otel_thread_ctx_inspect_attr_iter_next(struct otel_thread_ctx_attr_iter *it,
						       struct otel_thread_ctx_attr *out)
{
	return otel__attr_iter_next(it, out);
}

OTEL_EXPORT void otel_thread_ctx_inspect_close(otel_thread_ctx_inspector *insp)
{
	if (insp != NULL)
		otel__inspect_tracer_end(insp);
	free_inspector(insp);
}

/* The description open built, for eBPF readers: the DTV layout and one
 * entry per module (inspect_bpf.c described each). */
OTEL_EXPORT int otel_thread_ctx_inspect_bpf_proc(const otel_thread_ctx_inspector *insp,
						 struct otel_thread_ctx_bpf_proc *out)
{
	struct otel_thread_ctx_bpf_proc p;
	size_t n;

	if (insp == NULL || out == NULL)
		return OTEL_THREAD_CTX_ENULL;
	n = insp->info.module_count;
	if (n == 0)
		return OTEL_THREAD_CTX_ENOSLOT;
	p = insp->layout;
	if (n > OTEL_THREAD_CTX_BPF_MAX_MODULES) {
		n = OTEL_THREAD_CTX_BPF_MAX_MODULES;
		p.flags |= OTEL_THREAD_CTX_BPF_PROC_TRUNCATED;
	}
	memcpy(p.modules, insp->where, n * sizeof(insp->where[0]));
	p.module_count = (uint32_t)n;
	*out = p;
	return OTEL_THREAD_CTX_OK;
}
