/* SPDX-License-Identifier: Apache-2.0 */
/* Names of stack addresses (symbolize.h). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf/elf_reader.h"
#include "symbolize.h"

/* Where gdb and perf look for separate debug files. */
#define DEBUG_DIR "/usr/lib/debug"

/* Section and note types the ELF reader does not name. */
#define SHT_NOTE 7
#define PT_NOTE 4
#define NT_GNU_BUILD_ID 3
#define STT_GNU_IFUNC 10

/* Bytes of a build id kept, at most (GNU ld writes 20: SHA-1). */
#define BUILD_ID_MAX 64

/* The largest debug file read whole (open_debug_fd()). */
#define DEBUG_FILE_MAX (UINT64_C(2) << 30)

struct func {
	uint64_t addr, size;
	const char *name; /* in the reader's string tables */
};

/* A file some process maps, read once (by device and inode). */
struct file {
	unsigned long dev_major, dev_minor, ino;
	int read;              /* open_file() ran */
	struct otel__elf *elf; /* NULL: not ELF, or unreadable */
	/* The separate debug file whose .symtab names the functions, when the
	 * file has no .symtab of its own; NULL when none was found. */
	struct otel__elf *debug;
	struct func *funcs; /* sorted by addr */
	size_t nfuncs;
	char build_id[2 * BUILD_ID_MAX + 1]; /* hex; "" none */
};

struct mapping {
	uint64_t start, end, pgoff;
	char *path;        /* "" for anonymous memory */
	struct file *file; /* NULL: no file, or not read yet */
	int tried;
	int is_main; /* the file of /proc/PID/exe */
};

/* A line of a perf map: code a JIT wrote. */
struct perf_sym {
	uint64_t start, size;
	size_t line; /* the later line wins among equals */
	char *name;
};

struct proc {
	pid_t pid;
	struct mapping *maps; /* sorted by start, as /proc lists them */
	size_t nmaps;
	struct perf_sym *syms; /* sorted by start */
	size_t nsyms;
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

static void free_syms(struct perf_sym *syms, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(syms[i].name);
	free(syms);
}

void symbolizer_free(struct symbolizer *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->nprocs; i++) {
		free_maps(&s->procs[i]);
		free_syms(s->procs[i].syms, s->procs[i].nsyms);
	}
	for (size_t i = 0; i < s->nfiles; i++) {
		otel__elf_close(s->files[i]->elf);
		otel__elf_close(s->files[i]->debug);
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

static int cmp_perf_sym(const void *a, const void *b)
{
	const struct perf_sym *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;
}

/* Opens the perf map of process pid: /tmp/perf-PID.map, else the one in
 * its own root and PID namespace.  NULL when it has none. */
static FILE *open_perf_map(pid_t pid)
{
	char path[96], line[256];
	long nspid = pid;
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)pid);
	f = fopen(path, "re");
	if (f != NULL)
		return f;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (f == NULL)
		return NULL;
	while (fgets(line, sizeof(line), f) != NULL) {
		char *last;

		if (strncmp(line, "NSpid:", 6) != 0)
			continue;
		last = strrchr(line, '\t');
		if (last != NULL)
			nspid = strtol(last + 1, NULL, 10);
	}
	fclose(f);
	if (nspid <= 0 || nspid == pid)
		return NULL;
	snprintf(path, sizeof(path), "/proc/%d/root/tmp/perf-%ld.map", (int)pid, nspid);
	return fopen(path, "re");
}

/*
 * The perf map of process pid (`START SIZE name` lines, hex numbers with
 * or without 0x), as perf reads it; lines that do not parse are skipped.
 * *syms is NULL when the process has none.  -1 when out of memory.
 */
static int read_perf_map(pid_t pid, struct perf_sym **syms, size_t *nsyms)
{
	struct perf_sym *v = NULL;
	size_t n = 0, cap = 0, len = 0;
	char *line = NULL;
	FILE *f = open_perf_map(pid);
	int rc = 0;

	*syms = NULL;
	*nsyms = 0;
	if (f == NULL)
		return 0;
	while (getline(&line, &len, f) > 0) {
		unsigned long long start, size;
		char *end, *name, *nl;

		start = strtoull(line, &end, 16);
		if (end == line || *end != ' ')
			continue;
		name = end + 1;
		size = strtoull(name, &end, 16);
		if (end == name || *end != ' ' || size == 0)
			continue;
		name = end + 1;
		if ((nl = strchr(name, '\n')) != NULL)
			*nl = '\0';
		if (name[0] == '\0')
			continue;
		if (n == cap) {
			struct perf_sym *x = realloc(v, (cap = cap ? cap * 2 : 256) * sizeof(*x));

			if (x == NULL) {
				rc = -1;
				break;
			}
			v = x;
		}
		v[n].start = start;
		v[n].size = size;
		v[n].line = n;
		v[n].name = strdup(name);
		if (v[n].name == NULL) {
			rc = -1;
			break;
		}
		n++;
	}
	free(line);
	fclose(f);
	if (rc != 0) {
		free_syms(v, n);
		return -1;
	}
	qsort(v, n, sizeof(*v), cmp_perf_sym);
	*syms = v;
	*nsyms = n;
	return 0;
}

/* The path /proc/PID/exe links to, without " (deleted)"; "" unknown. */
static void exe_path(pid_t pid, char *out, size_t len)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, out, len - 1);
	out[n > 0 ? n : 0] = '\0';
}

int symbolizer_load(struct symbolizer *s, pid_t pid)
{
	char path[64], line[4096], exe[4096];
	struct mapping *maps = NULL;
	struct perf_sym *syms;
	size_t n = 0, cap = 0, nsyms;
	struct proc *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (f == NULL)
		return -1;
	exe_path(pid, exe, sizeof(exe));
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
		maps[n].is_main = exe[0] != '\0' && strcmp(name, exe) == 0;
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
	/* The JIT adds lines as it compiles: read again with the mappings. */
	if (read_perf_map(pid, &syms, &nsyms) != 0) {
		syms = NULL;
		nsyms = 0;
	}
	p = find_proc(s, pid);
	if (p == NULL) {
		struct proc *x = realloc(s->procs, (s->nprocs + 1) * sizeof(*x));

		if (x == NULL) {
			struct proc tmp = { pid, maps, n, NULL, 0 };

			free_maps(&tmp);
			free_syms(syms, nsyms);
			return -1;
		}
		s->procs = x;
		p = &s->procs[s->nprocs++];
		memset(p, 0, sizeof(*p));
		p->pid = pid;
	}
	free_maps(p);
	p->maps = maps;
	p->nmaps = n;
	/* A process gone (its perf map with it, when the runtime removes it
	 * at exit) keeps the one read while it ran. */
	if (syms != NULL) {
		free_syms(p->syms, p->nsyms);
		p->syms = syms;
		p->nsyms = nsyms;
	}
	return 0;
}

static int cmp_func(const void *a, const void *b)
{
	const struct func *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static uint32_t le32(const uint8_t *b)
{
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

/* `n` bytes at offset `off` of fd, in a new buffer; NULL when they cannot
 * all be read. */
static uint8_t *read_at(int fd, uint64_t off, uint64_t n)
{
	uint8_t *b = malloc(n ? n : 1);

	if (b != NULL && pread(fd, b, n, (off_t)off) != (ssize_t)n) {
		free(b);
		return NULL;
	}
	return b;
}

/* The GNU build id in the notes at data[0, n) (aligned to `align`), as
 * hex into out; 0 when found. */
static int note_build_id(const uint8_t *data, uint64_t n, uint64_t align, char *out)
{
	uint64_t off = 0;

	align = align == 8 ? 8 : 4;
	while (n - off >= 12) {
		uint64_t namesz = le32(data + off), descsz = le32(data + off + 4);
		uint32_t type = le32(data + off + 8);
		uint64_t name = off + 12, desc = name + ((namesz + align - 1) & ~(align - 1));

		if (desc > n || descsz > n - desc)
			return -1;
		if (type == NT_GNU_BUILD_ID && namesz == 4 && memcmp(data + name, "GNU", 4) == 0 &&
		    descsz > 0) {
			for (uint64_t i = 0; i < descsz && i < BUILD_ID_MAX; i++)
				snprintf(out + 2 * i, 3, "%02x", data[desc + i]);
			return 0;
		}
		off = desc + ((descsz + align - 1) & ~(align - 1));
		if (off > n)
			return -1;
	}
	return -1;
}

/* Whether the notes at `off` (size bytes, at most 64 KiB) of the file open
 * at fd hold a GNU build id: then its hex is in out. */
static bool build_id_at(int fd, uint64_t off, uint64_t size, uint64_t align, char *out)
{
	uint8_t *b;
	bool found;

	if (size > 65536)
		return false;
	b = read_at(fd, off, size);
	found = b != NULL && note_build_id(b, size, align, out) == 0;
	free(b);
	return found;
}

/* The file's GNU build id (its note sections, else its PT_NOTE segments)
 * as hex into out (2 * BUILD_ID_MAX + 1 bytes); "" when it has none. */
static void read_build_id(const struct otel__elf *elf, int fd, char *out)
{
	struct otel__elf_info info;

	out[0] = '\0';
	otel__elf_info(elf, &info);
	for (size_t i = 1; i < info.shnum; i++) {
		const struct otel__elf64_shdr *sh = otel__elf_shdr(elf, i);

		if (sh != NULL && sh->sh_type == SHT_NOTE &&
		    build_id_at(fd, sh->sh_offset, sh->sh_size, sh->sh_addralign, out))
			return;
	}
	for (size_t i = 0; i < info.phnum; i++) {
		const struct otel__elf64_phdr *ph = otel__elf_phdr(elf, i);

		if (ph != NULL && ph->p_type == PT_NOTE &&
		    build_id_at(fd, ph->p_offset, ph->p_filesz, ph->p_align, out))
			return;
	}
	out[0] = '\0';
}

/* CRC-32 (the polynomial of zlib and of .gnu_debuglink) of the whole file
 * open at fd; 0 when it was read whole. */
static int file_crc32(int fd, uint32_t *crc)
{
	static uint32_t table[256];
	uint8_t buf[65536];
	uint32_t c = 0xffffffffu;
	off_t off = 0;
	ssize_t n;

	if (table[1] == 0) {
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t x = i;

			for (int k = 0; k < 8; k++)
				x = x & 1 ? 0xedb88320u ^ (x >> 1) : x >> 1;
			table[i] = x;
		}
	}
	while ((n = pread(fd, buf, sizeof(buf), off)) > 0) {
		for (ssize_t i = 0; i < n; i++)
			c = table[(c ^ buf[i]) & 0xff] ^ (c >> 8);
		off += n;
	}
	*crc = ~c;
	return n == 0 ? 0 : -1;
}

/*
 * Opens the debug file at fd.  objcopy --only-keep-debug keeps the program
 * headers of the file but not what they point at (PT_INTERP, PT_DYNAMIC
 * are NOBITS sections there), which the reader refuses: then the file is
 * read again without its program headers (e_phnum 0 in a copy), for its
 * sections alone, which is all a debug file is for here.
 */
static int open_debug_fd(int fd, struct otel__elf **elf)
{
	struct stat st;
	uint8_t *b;
	int rc;

	if (otel__elf_open_fd(elf, fd, OTEL__ELF_WANT_SYMTAB, NULL) == OTEL__ELF_OK)
		return 0;
	if (fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof(struct otel__elf64_ehdr) ||
	    (uint64_t)st.st_size > DEBUG_FILE_MAX)
		return -1;
	b = read_at(fd, 0, (uint64_t)st.st_size);
	if (b == NULL)
		return -1;
	memset(b + offsetof(struct otel__elf64_ehdr, e_phnum), 0, sizeof(uint16_t));
	rc = otel__elf_open_memory(elf, b, (size_t)st.st_size, OTEL__ELF_WANT_SYMTAB, NULL);
	free(b);
	return rc == OTEL__ELF_OK ? 0 : -1;
}

/*
 * The debug file at `path`, when it is one for the file: its GNU build id
 * is `build_id` (when given), or its CRC-32 is `crc` (when build_id is
 * NULL); and it has a .symtab.  NULL otherwise.
 */
static struct otel__elf *open_debug(const char *path, const char *build_id, uint32_t crc)
{
	struct otel__elf *elf = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char id[2 * BUILD_ID_MAX + 1];
	uint32_t c;

	if (fd < 0)
		return NULL;
	if (build_id == NULL && (file_crc32(fd, &c) != 0 || c != crc))
		goto out;
	if (open_debug_fd(fd, &elf) != 0)
		goto out;
	if (build_id != NULL) {
		read_build_id(elf, fd, id);
		if (strcmp(id, build_id) != 0)
			goto bad;
	}
	if (otel__elf_sym_count(elf, OTEL__ELF_SYMTAB) > 1)
		goto out;
bad:
	otel__elf_close(elf);
	elf = NULL;
out:
	close(fd);
	return elf;
}

/*
 * The separate debug file of fl (open at fd, mapped from `path`), as gdb
 * and perf find one: by build id, /usr/lib/debug/.build-id/xx/yyyy.debug;
 * by the .gnu_debuglink section's name and CRC, next to the file, in
 * .debug/ there, or under /usr/lib/debug/ with the file's directory.
 */
static struct otel__elf *find_debug(const struct file *fl, int fd, const char *path)
{
	struct otel__elf_info info;
	struct otel__elf *d = NULL;
	char dir[4096], cand[8192];
	const char *slash;

	if (strlen(fl->build_id) > 2) {
		snprintf(cand, sizeof(cand), DEBUG_DIR "/.build-id/%.2s/%s.debug", fl->build_id,
			 fl->build_id + 2);
		if ((d = open_debug(cand, fl->build_id, 0)) != NULL)
			return d;
	}
	slash = strrchr(path, '/');
	if (slash == NULL || strstr(path, " (deleted)") != NULL)
		return NULL;
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	otel__elf_info(fl->elf, &info);
	for (size_t i = 1; i < info.shnum && d == NULL; i++) {
		const struct otel__elf64_shdr *sh = otel__elf_shdr(fl->elf, i);
		const char *sec = otel__elf_section_name(fl->elf, i);
		const char *fmt[] = { "%s/%s", "%s/.debug/%s", DEBUG_DIR "%s/%s" };
		size_t len, at;
		uint8_t *b;
		uint32_t crc;

		if (sh == NULL || sec == NULL || strcmp(sec, ".gnu_debuglink") != 0 ||
		    sh->sh_size < 6 || sh->sh_size > 4096)
			continue;
		b = read_at(fd, sh->sh_offset, sh->sh_size);
		if (b == NULL)
			continue;
		/* The name, NUL-terminated, padded to 4 bytes, then the CRC. */
		len = strnlen((const char *)b, sh->sh_size);
		at = (len + 4) & ~(size_t)3;
		if (len == 0 || at + 4 > sh->sh_size) {
			free(b);
			continue;
		}
		crc = le32(b + at);
		for (size_t k = 0; k < 3 && d == NULL; k++) {
			snprintf(cand, sizeof(cand), fmt[k], dir, (const char *)b);
			d = open_debug(cand, NULL, crc);
		}
		free(b);
	}
	return d;
}

/* Opens the file of mapping m of process pid: through
 * /proc/PID/map_files (the very file mapped, even deleted or in another
 * mount namespace), else by its path; then its symbols. */
static void open_file(pid_t pid, struct mapping *m)
{
	struct file *fl = m->file;
	const struct otel__elf *names;
	enum otel__elf_symtab table;
	char path[128];
	size_t count;
	int fd;

	m->tried = 1;
	if (fl->read)
		return;
	fl->read = 1;
	snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid, m->start,
		 m->end);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		fd = open(m->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (otel__elf_open_fd(&fl->elf, fd, OTEL__ELF_WANT_SYMTAB, NULL) != OTEL__ELF_OK) {
		close(fd);
		return;
	}
	read_build_id(fl->elf, fd, fl->build_id);
	names = fl->elf;
	table = OTEL__ELF_DYNSYM;
	if (otel__elf_sym_count(fl->elf, OTEL__ELF_SYMTAB) > 1)
		table = OTEL__ELF_SYMTAB;
	else if ((fl->debug = find_debug(fl, fd, m->path)) != NULL)
		names = fl->debug, table = OTEL__ELF_SYMTAB;
	close(fd);
	count = otel__elf_sym_count(names, table);
	fl->funcs = calloc(count ? count : 1, sizeof(*fl->funcs));
	if (fl->funcs == NULL)
		return;
	for (size_t i = 1; i < count; i++) {
		struct otel__elf_sym sym;

		if (otel__elf_sym_get(names, table, i, &sym) != OTEL__ELF_OK)
			continue;
		/* Functions, and GNU indirect functions. */
		if ((sym.type != OTEL__STT_FUNC && sym.type != STT_GNU_IFUNC) ||
		    sym.shndx == OTEL__SHN_UNDEF || sym.value == 0 || sym.name[0] == '\0')
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

/* The mapping of process p that holds address `at`, or NULL. */
static struct mapping *find_mapping(struct proc *p, uint64_t at)
{
	size_t lo = 0, hi = p->nmaps;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->maps[mid].end <= at)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < p->nmaps && p->maps[lo].start <= at ? &p->maps[lo] : NULL;
}

/* The perf map's name of `at`: of the lines that cover it, the smallest
 * (a stub block may span methods), the later one among equals.  NULL when
 * none covers it. */
static const char *perf_name(const struct proc *p, uint64_t at)
{
	const struct perf_sym *best = NULL;
	size_t lo = 0, hi = p->nsyms;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->syms[mid].start <= at)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* syms[lo - 1] is the last that starts at or before `at`; look back
	 * over a few, which may be larger. */
	for (size_t i = lo, seen = 0; i-- > 0 && seen < 256; seen++) {
		const struct perf_sym *x = &p->syms[i];

		if (at - x->start < x->size &&
		    (best == NULL || x->size < best->size ||
		     (x->size == best->size && x->line > best->line)))
			best = x;
	}
	return best != NULL ? best->name : NULL;
}

void symbolizer_name(struct symbolizer *s, pid_t pid, uint64_t ip, int leaf, char *name,
		     size_t len)
{
	struct proc *p = find_proc(s, pid);
	uint64_t at = leaf || ip == 0 ? ip : ip - 1, off, vaddr;
	struct mapping *m;
	const char *jit;
	size_t lo = 0, hi;

	name[0] = '\0';
	if (p == NULL)
		return;
	m = find_mapping(p, at);
	if (m != NULL && m->file != NULL && !m->tried)
		open_file(pid, m);
	/* Code in no ELF file (anonymous memory, a memfd: file): a JIT's,
	 * named by its perf map. */
	if ((m == NULL || m->file == NULL || m->file->elf == NULL) &&
	    (jit = perf_name(p, at)) != NULL) {
		snprintf(name, len, "%s", jit);
		return;
	}
	if (m == NULL)
		return;
	off = at - m->start + m->pgoff;
	if (m->file == NULL) {
		if (m->path[0] != '\0')
			snprintf(name, len, "%s+0x%" PRIx64, m->path, at - m->start);
		return;
	}
	if (m->file->elf == NULL || file_address(m->file->elf, off, &vaddr) != 0) {
		snprintf(name, len, "%s+0x%" PRIx64, base_name(m->path), off);
		return;
	}
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

int symbolizer_mapping(struct symbolizer *s, pid_t pid, uint64_t ip, int leaf,
		       struct symbolizer_mapping *out)
{
	struct proc *p = find_proc(s, pid);
	uint64_t at = leaf || ip == 0 ? ip : ip - 1;
	struct mapping *m = p != NULL ? find_mapping(p, at) : NULL;

	if (m == NULL)
		return -1;
	memset(out, 0, sizeof(*out));
	out->start = m->start;
	out->limit = m->end;
	out->offset = m->pgoff;
	out->path = m->path;
	out->build_id = "";
	out->is_main = m->is_main;
	/* Every address is named, if only as module+offset: a file the tool
	 * could not read as ELF (a .NET assembly, a memfd: file) pprof could
	 * not read either. */
	out->has_functions = 1;
	if (m->file != NULL) {
		if (!m->tried)
			open_file(pid, m);
		out->is_file = 1;
		out->build_id = m->file->build_id;
	}
	return 0;
}
