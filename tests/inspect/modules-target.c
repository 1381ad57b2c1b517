/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A process whose modules are placed the ways real processes place them,
 * for the inspector's module discovery (modules.c):
 *
 *   modules-target MODE LIB DIR [OTHER]
 *
 * MODE:
 *   selfmap  LIB dlopen()ed, then its file mapped again read-only from
 *            offset 0 below the loaded image (what symbolizers do)
 *   dlmopen  LIB dlopen()ed, and a second copy loaded with
 *            dlmopen(LM_ID_NEWLM); even threads publish through the first
 *            copy, odd ones through the second
 *   upgrade  a copy of LIB in DIR dlopen()ed; after the first inspection
 *            (a line on stdin) the copy is replaced by OTHER, renamed over
 *            it as a package manager does, so that maps says "(deleted)"
 *   hugetext LIB dlopen()ed, then its code copied onto anonymous memory at
 *            the same place (what programs that put their text on huge
 *            pages do): its executable segment is no file mapping any more
 *   hugehead the same, from the file's first page to the end of its code:
 *            the layout of aarch64, where the code starts at offset 0, so
 *            that no mapping of offset 0 is left (x86-64's separate code
 *            segment would otherwise keep one)
 *   many     LIB dlopen()ed, then 5000 distinct files mapped below it (in
 *            /dev/shm when it can, else DIR)
 *   fifo     a copy of LIB in DIR dlopen()ed (the reader swaps the file for
 *            a FIFO)
 *   stale    LIB (plain-slot.c) dlopen()ed, one thread publishes through it,
 *            then LIB is dlclose()d and dlopen()ed again under the same TLS
 *            module id, and the thread does not touch it again
 *
 * Threads store expected.h's records in their slot of the module (what a
 * publication leaves there): EXPECTED_THREADS threads, the last storing
 * nothing; in stale, one thread.  Then it prints "ready" and " TID:SLOT" per
 * thread (SLOT: the slot's address from dlsym(), 0 for the idle thread),
 * and waits: each line on stdin is a step
 * (upgrade), end of input ends it.  It exits 0 only when every thread kept
 * running; 77 when the C library cannot do the mode (no dlmopen() on musl).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "expected.h"
#include "otel_thread_ctx.h"

#define MANY_FILES 5000

struct thread {
	pthread_t t;
	int index;
	pid_t tid;
	uintptr_t slot;
	void *handle; /* the copy of the module it publishes through */
	unsigned long progress;
};

static void *handles[2];
static struct thread threads[EXPECTED_THREADS];
static int nthreads = EXPECTED_THREADS;
static pthread_barrier_t ready;
static int stopping;
static const char *mode;

__attribute__((noreturn)) static void die(const char *what)
{
	fprintf(stderr, "modules-target: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void *sym(void *handle, const char *name)
{
	void *p = dlsym(handle, name);

	if (p == NULL) {
		fprintf(stderr, "modules-target: %s\n", dlerror());
		exit(1);
	}
	return p;
}

static void *open_lib(const char *path)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	if (h == NULL) {
		fprintf(stderr, "modules-target: %s\n", dlerror());
		exit(1);
	}
	return h;
}

/* Thread i's record (expected.h), stored in its slot of `handle`'s copy of
 * the module: what the library's own publication leaves there. */
static void publish(void *handle, int i)
{
	static struct otel_thread_ctx_record recs[EXPECTED_THREADS];
	const struct otel_thread_ctx_record **slot = sym(handle, "otel_thread_ctx_v1");

	expected_record(i, &recs[i]);
	__atomic_store_n(slot, &recs[i], __ATOMIC_RELEASE);
}

static void *worker(void *arg)
{
	struct thread *t = arg;
	char name[16];

	t->tid = (pid_t)syscall(SYS_gettid);
	expected_name(t->index, name);
	pthread_setname_np(pthread_self(), name);
	if (t->index != EXPECTED_IDLE) {
		t->slot = (uintptr_t)sym(t->handle, "otel_thread_ctx_v1");
		publish(t->handle, t->index);
	}
	pthread_barrier_wait(&ready);
	/* No TLS access from here on. */
	while (!__atomic_load_n(&stopping, __ATOMIC_RELAXED)) {
		__atomic_fetch_add(&t->progress, 1, __ATOMIC_RELAXED);
		usleep(500);
	}
	return NULL;
}

/* The start of the loaded image of the module `handle`: its ELF header,
 * at the start of its first PT_LOAD. */
static uintptr_t image_start(void *handle)
{
	Dl_info info;

	if (dladdr(sym(handle, "otel_thread_ctx_create"), &info) == 0)
		die("dladdr");
	return (uintptr_t)info.dli_fbase;
}

/* Maps `fd` read-only from offset 0 at a free place at or below `below`,
 * `len` bytes, lowest first.  Returns the address. */
static uintptr_t map_below(int fd, size_t len, uintptr_t *below)
{
	for (int tries = 0; tries < 4096; tries++) {
		uintptr_t at = (*below - len) & ~(uintptr_t)4095;
		void *p = mmap((void *)at, len, PROT_READ, MAP_PRIVATE | MAP_FIXED_NOREPLACE, fd, 0);

		*below = at;
		if (p == (void *)at)
			return at;
		if (p != MAP_FAILED)
			munmap(p, len); /* an old kernel took it as a hint */
		else if (errno != EEXIST)
			die("mmap");
		*below -= 4096;
	}
	die("no room below the library");
}

static void copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY | O_CLOEXEC);
	int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	ssize_t n;

	if (in < 0 || out < 0)
		die(to);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			die("write");
	if (n < 0)
		die("read");
	close(in);
	close(out);
}

/* Replaces the executable mapping holding `code` by anonymous memory with
 * the same bytes, as programs that move their text onto huge pages do. */
/* Copies the executable mapping that holds `code` onto anonymous memory at
 * the same place; from `from` instead of the mapping's start when `from` is
 * not 0 (every mapping from there to the code's end must be one run). */
static void text_to_anon(const void *code, uintptr_t from)
{
	unsigned long long start, end;
	char line[4096], perms[5];
	FILE *f = fopen("/proc/self/maps", "re");
	int found = 0;

	if (f == NULL)
		die("maps");
	while (!found && fgets(line, sizeof(line), f) != NULL)
		found = sscanf(line, "%llx-%llx %4s", &start, &end, perms) == 3 &&
			(uintptr_t)code >= start && (uintptr_t)code < end && perms[2] == 'x';
	fclose(f);
	if (!found)
		die("no executable mapping holds the library's code");
	if (from != 0)
		start = from;
	{
		size_t len = (size_t)(end - start);
		void *copy = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (copy == MAP_FAILED)
			die("mmap");
		memcpy(copy, (const void *)(uintptr_t)start, len);
		if (mprotect(copy, len, PROT_READ | PROT_EXEC) != 0 ||
		    mremap(copy, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)(uintptr_t)start) ==
			    MAP_FAILED)
			die("moving the code");
	}
}

/* Where the many files go: a tmpfs when there is one (quick to fill). */
static char many_dir[4096];

static void many_files(const char *dir, uintptr_t below)
{
	char path[4200];
	static const char page[4096] = "not an ELF file";

	snprintf(many_dir, sizeof(many_dir), "/dev/shm/otel-many-XXXXXX");
	if (mkdtemp(many_dir) == NULL)
		snprintf(many_dir, sizeof(many_dir), "%s", dir);
	dir = many_dir;
	below -= 64u << 20;
	for (int i = 0; i < MANY_FILES; i++) {
		int fd;

		snprintf(path, sizeof(path), "%s/f%05d", dir, i);
		fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0 || write(fd, page, sizeof(page)) != (ssize_t)sizeof(page))
			die(path);
		map_below(fd, 4096, &below);
		close(fd);
	}
}

static void many_cleanup(const char *dir)
{
	char path[4200];

	for (int i = 0; i < MANY_FILES; i++) {
		snprintf(path, sizeof(path), "%s/f%05d", many_dir, i);
		unlink(path);
	}
	if (strcmp(many_dir, dir) != 0)
		rmdir(many_dir);
}

/* Waits for a line on stdin (0) or its end (1). */
static int next_step(void)
{
	char c;

	for (;;) {
		ssize_t n = read(0, &c, 1);

		if (n <= 0)
			return 1;
		if (c == '\n')
			return 0;
	}
}

static void say_ready(void)
{
	printf("ready");
	for (int i = 0; i < nthreads; i++)
		printf(" %d:%lx", (int)threads[i].tid, (unsigned long)threads[i].slot);
	printf("\n");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	const char *lib, *dir;
	char copy[4096];
	unsigned long before[EXPECTED_THREADS];
	void *h;

	if (argc < 4)
		die("usage: modules-target MODE LIB DIR [OTHER]");
	mode = argv[1];
	lib = argv[2];
	dir = argv[3];
	snprintf(copy, sizeof(copy), "%s/libotel-copy.so", dir);
	if (strcmp(mode, "upgrade") == 0 || strcmp(mode, "fifo") == 0) {
		copy_file(lib, copy);
		lib = copy;
	}
	h = open_lib(lib);
	handles[0] = handles[1] = h;
	if (strcmp(mode, "stale") == 0) {
		nthreads = 1;
	} else if (strcmp(mode, "dlmopen") == 0) {
#ifdef __GLIBC__
		handles[1] = dlmopen(LM_ID_NEWLM, lib, RTLD_NOW | RTLD_LOCAL);
		if (handles[1] == NULL) {
			fprintf(stderr, "modules-target: dlmopen: %s\n", dlerror());
			exit(1);
		}
#else
		printf("skip: this C library has no dlmopen()\n");
		return 77;
#endif
	}
	if (strcmp(mode, "selfmap") == 0) {
		struct stat st;
		int fd = open(lib, O_RDONLY | O_CLOEXEC);
		uintptr_t below = image_start(h);

		if (fd < 0 || fstat(fd, &st) != 0)
			die(lib);
		map_below(fd, (size_t)st.st_size, &below);
		close(fd);
	} else if (strcmp(mode, "many") == 0) {
		many_files(dir, image_start(h));
	} else if (strcmp(mode, "hugetext") == 0) {
		text_to_anon(sym(h, "otel_thread_ctx_create"), 0);
	} else if (strcmp(mode, "hugehead") == 0) {
		text_to_anon(sym(h, "otel_thread_ctx_create"), image_start(h));
	}
	pthread_barrier_init(&ready, NULL, (unsigned)nthreads + 1);
	for (int i = 0; i < nthreads; i++) {
		threads[i].index = i;
		threads[i].handle = handles[i % 2];
		if (pthread_create(&threads[i].t, NULL, worker, &threads[i]) != 0)
			die("pthread_create");
	}
	pthread_barrier_wait(&ready);
	if (strcmp(mode, "stale") == 0) {
#ifdef RTLD_DI_TLS_MODID
		size_t id0 = 0, id1 = 0;

		if (dlinfo(h, RTLD_DI_TLS_MODID, &id0) != 0)
			die("dlinfo");
		dlclose(h);
		h = open_lib(lib);
		if (dlinfo(h, RTLD_DI_TLS_MODID, &id1) != 0)
			die("dlinfo");
		if (id0 != id1) {
			fprintf(stderr, "modules-target: module id %zu, then %zu\n", id0, id1);
			exit(1);
		}
#else
		/* musl: dlclose() unloads nothing, the module stays. */
		dlclose(h);
		h = open_lib(lib);
#endif
	}
	say_ready();
	while (!next_step()) {
		if (strcmp(mode, "upgrade") == 0) {
			char tmp[4200];

			snprintf(tmp, sizeof(tmp), "%s.new", copy);
			copy_file(argv[4], tmp);
			if (rename(tmp, copy) != 0)
				die("rename");
		}
		say_ready();
	}
	for (int i = 0; i < nthreads; i++)
		before[i] = __atomic_load_n(&threads[i].progress, __ATOMIC_RELAXED);
	for (int i = 0; i < nthreads; i++)
		while (__atomic_load_n(&threads[i].progress, __ATOMIC_RELAXED) == before[i])
			usleep(100);
	__atomic_store_n(&stopping, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < nthreads; i++)
		pthread_join(threads[i].t, NULL);
	if (strcmp(mode, "many") == 0)
		many_cleanup(dir);
	return 0;
}
