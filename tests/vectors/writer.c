/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A writer of the conformance vectors that does not use this library, as
 * another implementation would be: its own exported otel_thread_ctx_v1, its
 * own process context.  run.py drives it on stdin, a command per line, the
 * bytes in hex:
 *
 *   pctx HEADER PAYLOAD ZEROS  publish the process context: a memfd named
 *                              OTEL_CTX holding HEADER (32 bytes; its payload
 *                              pointer is filled in here, then the timestamp
 *                              bytes of HEADER are written last), the payload
 *                              (PAYLOAD then ZEROS zero bytes) in memory of
 *                              its own; prints "pctx ADDRESS"
 *   map HEADER PAYLOAD ZEROS   the same in an anonymous mapping of no name,
 *                              which readers only find when told where it
 *                              is; prints "map ADDRESS"
 *   thread MOD8 RECORD         a thread that stores the address of RECORD's
 *                              bytes, placed at an address that is MOD8
 *                              modulo 8, in its slot, then spins (so that a
 *                              sampler driven by a CPU clock sees it);
 *                              prints "thread TID"
 *   dlopen PATH                loads the shared library PATH (an ELF vector)
 *                              and touches its slot's TLS block from this
 *                              thread; prints "dlopen ok" or "dlopen error"
 *   shm NAME                   a page of anonymous shared memory named NAME
 *                              ("[anon_shmem:NAME]" in /proc/PID/maps, where
 *                              the kernel names it): its file is the kernel's,
 *                              which readers that list the files must take
 *                              as the text does; prints "shm ok" or "shm
 *                              unnamed"
 *   run                        prints "ready"
 *
 * It exits when its standard input ends (or on a malformed command, exit 2).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

__thread void *otel_thread_ctx_v1 __attribute__((visibility("default")));

static atomic_int stop;

static void fail(const char *what)
{
	fprintf(stderr, "vectors-writer: %s\n", what);
	exit(2);
}

/* Decodes hex `s` into a new buffer of its bytes, then `zeros` zero bytes,
 * starting `pad` bytes into the buffer; *n gets the byte count. */
static uint8_t *unhex(const char *s, size_t zeros, size_t pad, size_t *n)
{
	size_t len = strlen(s);
	uint8_t *b;

	if (len % 2 != 0)
		fail("odd hex length");
	*n = len / 2 + zeros;
	b = aligned_alloc(8, (pad + *n + 7) / 8 * 8 + 8);
	if (b == NULL)
		fail("out of memory");
	memset(b, 0, pad + *n);
	for (size_t i = 0; i < len / 2; i++) {
		unsigned int x;

		if (sscanf(s + 2 * i, "%2x", &x) != 1)
			fail("not hex");
		b[pad + i] = (uint8_t)x;
	}
	return b;
}

/* Writes a header and its payload at `m`: everything but the timestamp,
 * a fence, then the timestamp (OTEP 4719's publication order). */
static void publish_at(uint8_t *m, const char *hdr_hex, const char *payload_hex, size_t zeros)
{
	size_t hn, pn;
	uint8_t *hdr = unhex(hdr_hex, 0, 0, &hn);
	uint8_t *payload = unhex(payload_hex, zeros, 0, &pn);
	uint64_t addr = (uint64_t)(uintptr_t)payload;

	if (hn != 32)
		fail("a header is 32 bytes");
	memcpy(m, hdr, 16);
	memcpy(m + 24, &addr, 8);
	atomic_thread_fence(memory_order_seq_cst);
	memcpy(m + 16, hdr + 16, 8);
	free(hdr);
}

static void *mapping(int fd)
{
	void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, fd < 0 ? MAP_PRIVATE | MAP_ANONYMOUS :
				   MAP_SHARED, fd, 0);

	if (m == MAP_FAILED)
		fail("mmap");
	return m;
}

static void publish_pctx(const char *hdr, const char *payload, size_t zeros)
{
	int fd = memfd_create("OTEL_CTX", MFD_CLOEXEC);
	void *m;

	if (fd < 0 || ftruncate(fd, 4096) != 0)
		fail("memfd");
	m = mapping(fd);
	close(fd);
	publish_at(m, hdr, payload, zeros);
	printf("pctx %#lx\n", (unsigned long)(uintptr_t)m);
}

struct publisher {
	void *record;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pid_t tid;
};

static void *spin(void *arg)
{
	struct publisher *p = arg;
	volatile uint64_t n = 0;

	otel_thread_ctx_v1 = p->record;
	pthread_mutex_lock(&p->lock);
	p->tid = gettid();
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		if ((++n & 0xfffff) == 0)
			sched_yield();
	return NULL;
}

static void start_thread(unsigned int mod8, const char *hex)
{
	struct publisher p = { .lock = PTHREAD_MUTEX_INITIALIZER,
			       .cond = PTHREAD_COND_INITIALIZER };
	pthread_t t;
	size_t n;

	if (mod8 > 7)
		fail("MOD8 is 0 to 7");
	p.record = unhex(hex, 0, mod8, &n) + mod8;
	if (pthread_create(&t, NULL, spin, &p) != 0)
		fail("pthread_create");
	pthread_mutex_lock(&p.lock);
	while (p.tid == 0)
		pthread_cond_wait(&p.cond, &p.lock);
	pthread_mutex_unlock(&p.lock);
	printf("thread %d\n", (int)p.tid);
}

int main(void)
{
	char *line = NULL, cmd[16], a[8], *b, *c;
	size_t cap = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while (getline(&line, &cap, stdin) > 0) {
		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "%15s", cmd) != 1)
			fail("empty command");
		if (strcmp(cmd, "run") == 0) {
			printf("ready\n");
		} else if (strcmp(cmd, "shm") == 0 && strlen(line) > 4) {
			void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
				       -1, 0);

			if (m == MAP_FAILED)
				fail("mmap");
			/* PR_SET_VMA, PR_SET_VMA_ANON_NAME (Linux 5.17; shared
			 * memory since 6.2): defined here for older headers. */
			printf("shm %s\n", prctl(0x53564d41, 0, (unsigned long)m, 4096UL,
						  (unsigned long)(line + 4)) == 0 ? "ok" : "unnamed");
		} else if (strcmp(cmd, "dlopen") == 0 && strlen(line) > 7) {
			void *h = dlopen(line + 7, RTLD_NOW | RTLD_LOCAL);
			void *sym = h != NULL ? dlsym(h, "otel_vector_get") : NULL;
			void *(*get)(void) = NULL;

			/* (POSIX: a function's address as dlsym() returns it.) */
			memcpy(&get, &sym, sizeof(get));
			if (get != NULL)
				get();
			printf("dlopen %s\n", get != NULL ? "ok" : "error");
		} else if (strcmp(cmd, "thread") == 0) {
			b = strchr(line, ' ');
			c = b != NULL ? strchr(b + 1, ' ') : NULL;
			if (c == NULL || sscanf(b + 1, "%7s", a) != 1)
				fail("usage: thread MOD8 RECORD");
			start_thread((unsigned int)atoi(a), c + 1);
		} else if (strcmp(cmd, "pctx") == 0 || strcmp(cmd, "map") == 0) {
			char *hdr = strtok(line + strlen(cmd), " ");
			char *payload = strtok(NULL, " ");
			char *zeros = strtok(NULL, " ");

			if (zeros == NULL)
				fail("usage: pctx|map HEADER PAYLOAD ZEROS");
			if (cmd[0] == 'p') {
				publish_pctx(hdr, payload, strtoul(zeros, NULL, 10));
			} else {
				uint8_t *m = mapping(-1);

				publish_at(m, hdr, payload, strtoul(zeros, NULL, 10));
				printf("map %#lx\n", (unsigned long)(uintptr_t)m);
			}
		} else {
			fail("unknown command");
		}
	}
	atomic_store(&stop, 1);
	free(line);
	return 0;
}
