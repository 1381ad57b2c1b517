/* SPDX-License-Identifier: Apache-2.0 */
/* Names of stack addresses (symbolize.h). */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elf/elf_reader.h"
#include "symbolize.h"

struct func {
	uint64_t addr, size;
	const char *name; /* in the reader's string tables */
};

/* A file some process maps, read once (by device and inode). */
struct file {
	unsigned long dev_major, dev_minor, ino;
	struct otel__elf *elf; /* NULL: not ELF, or unreadable */
	struct func *funcs;    /* sorted by addr */
	size_t nfuncs;
};

struct mapping {
	uint64_t start, end, pgoff;
	char *path;        /* "" for anonymous memory */
	struct file *file; /* NULL: no file, or not read yet */
	int tried;
};

struct proc {
	pid_t pid;
	struct mapping *maps; /* sorted by start, as /proc lists them */
	size_t nmaps;
};

struct symbolizer {
	struct proc *procs;
	size_t nprocs;
	struct file **files;
	size_t nfiles;
};

struct symbolizer *symbolizer_new(void)
{
	return calloc(1, sizeof(struct symbolizer));
}

static void free_maps(struct proc *p)
{
	for (size_t i = 0; i < p->nmaps; i++)
		free(p->maps[i].path);
	free(p->maps);
	p->maps = NULL;
	p->nmaps = 0;
}

void symbolizer_free(struct symbolizer *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->nprocs; i++)
		free_maps(&s->procs[i]);
	for (size_t i = 0; i < s->nfiles; i++) {
		otel__elf_close(s->files[i]->elf);
		free(s->files[i]->funcs);
		free(s->files[i]);
	}
	free(s->files);
	free(s->procs);
	free(s);
}

static struct proc *find_proc(const struct symbolizer *s, pid_t pid)
{
	for (size_t i = 0; i < s->nprocs; i++)
		if (s->procs[i].pid == pid)
			return &s->procs[i];
	return NULL;
}

int symbolizer_has(const struct symbolizer *s, pid_t pid)
{
	return find_proc(s, pid) != NULL;
}

int symbolizer_load(struct symbolizer *s, pid_t pid)
{
	char path[64], line[4096];
	struct mapping *maps = NULL;
	size_t n = 0, cap = 0;
	struct proc *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL) {
		unsigned long long start, end, off, ino;
		unsigned int maj, min;
		int pos = 0;
		char *name, *nl;

		if (sscanf(line, "%llx-%llx %*s %llx %x:%x %llu %n", &start, &end, &off, &maj, &min,
			   &ino, &pos) < 6)
			continue;
		name = line + pos;
		if ((nl = strchr(name, '\n')) != NULL)
			*nl = '\0';
		if (n == cap) {
			struct mapping *m = realloc(maps, (cap = cap ? cap * 2 : 64) * sizeof(*m));

			if (m == NULL)
				break;
			maps = m;
		}
		memset(&maps[n], 0, sizeof(maps[n]));
		maps[n].start = start;
		maps[n].end = end;
		maps[n].pgoff = off;
		maps[n].path = strdup(name);
		if (maps[n].path == NULL)
			break;
		/* The file: looked up when an address needs it. */
		if (ino != 0 && name[0] == '/') {
			for (size_t i = 0; i < s->nfiles; i++)
				if (s->files[i]->ino == ino && s->files[i]->dev_major == maj &&
				    s->files[i]->dev_minor == min)
					maps[n].file = s->files[i];
			if (maps[n].file == NULL) {
				struct file **fs = realloc(s->files, (s->nfiles + 1) * sizeof(*fs));
				struct file *fl = calloc(1, sizeof(*fl));

				if (fs != NULL)
					s->files = fs;
				if (fs == NULL || fl == NULL) {
					free(fl);
					free(maps[n].path);
					break;
				}
				fl->dev_major = maj;
				fl->dev_minor = min;
				fl->ino = ino;
				s->files[s->nfiles++] = fl;
				maps[n].file = fl;
			}
		}
		n++;
	}
	fclose(f);
	p = find_proc(s, pid);
	if (p == NULL) {
		struct proc *x = realloc(s->procs, (s->nprocs + 1) * sizeof(*x));

		if (x == NULL) {
			struct proc tmp = { pid, maps, n };

			free_maps(&tmp);
			return -1;
		}
		s->procs = x;
		p = &s->procs[s->nprocs++];
		p->pid = pid;
		p->maps = NULL;
		p->nmaps = 0;
	}
	free_maps(p);
	p->maps = maps;
	p->nmaps = n;
	return 0;
}

static int cmp_func(const void *a, const void *b)
{
	const struct func *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Opens the file of mapping m of process pid: through
 * /proc/PID/map_files (the very file mapped, even deleted or in another
 * mount namespace), else by its path. */
static void open_file(pid_t pid, struct mapping *m)
{
	struct file *fl = m->file;
	enum otel__elf_symtab table;
	char path[128];
	size_t count;

	m->tried = 1;
	if (fl->elf != NULL || fl->funcs != NULL)
		return;
	snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid, m->start,
		 m->end);
	if (otel__elf_open_path(&fl->elf, path, OTEL__ELF_WANT_SYMTAB, NULL) != OTEL__ELF_OK &&
	    otel__elf_open_path(&fl->elf, m->path, OTEL__ELF_WANT_SYMTAB, NULL) != OTEL__ELF_OK)
		return;
	table = otel__elf_sym_count(fl->elf, OTEL__ELF_SYMTAB) > 1 ? OTEL__ELF_SYMTAB :
								      OTEL__ELF_DYNSYM;
	count = otel__elf_sym_count(fl->elf, table);
	fl->funcs = calloc(count ? count : 1, sizeof(*fl->funcs));
	if (fl->funcs == NULL)
		return;
	for (size_t i = 1; i < count; i++) {
		struct otel__elf_sym sym;

		if (otel__elf_sym_get(fl->elf, table, i, &sym) != OTEL__ELF_OK)
			continue;
		/* Functions, and GNU indirect functions (STT_GNU_IFUNC 10). */
		if ((sym.type != OTEL__STT_FUNC && sym.type != 10) || sym.shndx == OTEL__SHN_UNDEF ||
		    sym.value == 0 || sym.name[0] == '\0')
			continue;
		fl->funcs[fl->nfuncs].addr = sym.value;
		fl->funcs[fl->nfuncs].size = sym.size;
		fl->funcs[fl->nfuncs].name = sym.name;
		fl->nfuncs++;
	}
	qsort(fl->funcs, fl->nfuncs, sizeof(*fl->funcs), cmp_func);
}

/* The file address of file offset `off`, through the PT_LOAD segments. */
static int file_address(const struct otel__elf *elf, uint64_t off, uint64_t *vaddr)
{
	struct otel__elf_info info;

	otel__elf_info(elf, &info);
	for (size_t i = 0; i < info.phnum; i++) {
		const struct otel__elf64_phdr *ph = otel__elf_phdr(elf, i);

		if (ph != NULL && ph->p_type == OTEL__PT_LOAD && off >= ph->p_offset &&
		    off - ph->p_offset < ph->p_filesz) {
			*vaddr = off - ph->p_offset + ph->p_vaddr;
			return 0;
		}
	}
	return -1;
}

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');

	return b != NULL ? b + 1 : path;
}

void symbolizer_name(struct symbolizer *s, pid_t pid, uint64_t ip, int leaf, char *name,
		     size_t len)
{
	struct proc *p = find_proc(s, pid);
	uint64_t at = leaf || ip == 0 ? ip : ip - 1, off, vaddr;
	struct mapping *m = NULL;
	size_t lo = 0, hi;

	name[0] = '\0';
	if (p == NULL)
		return;
	hi = p->nmaps;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->maps[mid].end <= at)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < p->nmaps && p->maps[lo].start <= at)
		m = &p->maps[lo];
	if (m == NULL)
		return;
	off = at - m->start + m->pgoff;
	if (m->file == NULL) {
		if (m->path[0] != '\0')
			snprintf(name, len, "%s+0x%" PRIx64, m->path, at - m->start);
		return;
	}
	if (!m->tried)
		open_file(pid, m);
	if (m->file->elf == NULL || file_address(m->file->elf, off, &vaddr) != 0) {
		snprintf(name, len, "%s+0x%" PRIx64, base_name(m->path), off);
		return;
	}
	lo = 0;
	hi = m->file->nfuncs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->file->funcs[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* funcs[lo - 1] is the last that starts at or before vaddr; sizes
	 * may nest (aliases), so look back over those that start there. */
	for (size_t i = lo; i-- > 0;) {
		const struct func *fn = &m->file->funcs[i];

		if (vaddr - fn->addr < fn->size) {
			snprintf(name, len, "%s", fn->name);
			return;
		}
		if (fn->addr != m->file->funcs[lo - 1].addr)
			break;
	}
	snprintf(name, len, "%s+0x%" PRIx64, base_name(m->path), vaddr);
}
