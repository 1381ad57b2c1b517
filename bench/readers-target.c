/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The target of bench-readers (readers.h): a process built to a size, that
 * publishes as a tracer does and then waits, using no CPU, while the
 * benchmark reads it.
 *
 *   anon=N     N mappings in all: small anonymous regions that cannot
 *              merge (one page each, read-only and no-access by turns)
 *   file=N     N mappings in all: one page of a file (a memfd that is no
 *              ELF file) mapped again and again from its start
 *   threads=N  N threads in all, the N - 1 it starts with 64 KiB stacks
 *
 * In every kind each thread (the main thread alone, but for threads=N)
 * attaches a context of its own (otel_thread_ctx_create() and
 * otel_thread_ctx_attach(), then otel_thread_ctx_destroy(): the thread keeps
 * publishing its copy), and the process publishes its process context, which
 * names the record's attribute key.  The threads then wait on a futex.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <otel_thread_ctx.h>
#include <otel_thread_ctx_process.h>

#include "readers.h"

#define STACK_SIZE (64 * 1024)

static unsigned int key;

/* Threads started, and failures among them (the first code). */
static unsigned int started;
static int thread_failure;
/* Never set: the threads wait until the process ends. */
static unsigned int stop;

_Noreturn static void fail(const char *fmt, ...)
{
	va_list ap;

	printf("failed ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	exit(1);
}

/* linux/futex.h's values: musl's headers do not bring the kernel's. */
#define FUTEX_WAIT_PRIVATE 128
#define FUTEX_WAKE_PRIVATE 129

static void futex_wait(unsigned int *word, unsigned int value)
{
	syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, value, NULL, NULL, 0);
}

static void futex_wake(unsigned int *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* The calling thread publishes its record (readers.h); 0 or a code. */
static int publish(void)
{
	uint8_t span[8];
	otel_thread_ctx *ctx;
	int rc;

	target_span_id(span, (int32_t)syscall(SYS_gettid));
	rc = otel_thread_ctx_create(&ctx);
	if (rc != OTEL_THREAD_CTX_OK)
		return rc;
	if ((rc = otel_thread_ctx_set_ids(ctx, (const uint8_t *)TARGET_TRACE_ID, span, 1)) == 0 &&
	    (rc = otel_thread_ctx_set_attr(ctx, key, TARGET_VALUE, strlen(TARGET_VALUE))) == 0)
		rc = otel_thread_ctx_attach(ctx, NULL);
	otel_thread_ctx_destroy(ctx);
	return rc;
}

static void *worker(void *arg)
{
	int rc = publish();

	(void)arg;
	if (rc != OTEL_THREAD_CTX_OK)
		__atomic_compare_exchange_n(&thread_failure, &(int){ 0 }, rc, false,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	__atomic_add_fetch(&started, 1, __ATOMIC_RELEASE);
	futex_wake(&started);
	while (__atomic_load_n(&stop, __ATOMIC_ACQUIRE) == 0)
		futex_wait(&stop, 0);
	return NULL;
}

static void start_threads(unsigned long count)
{
	pthread_attr_t attr;
	unsigned int now;
	int err;

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, STACK_SIZE);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	for (unsigned long i = 0; i < count; i++) {
		pthread_t t;

		if ((err = pthread_create(&t, &attr, worker, NULL)) != 0)
			fail("pthread_create, thread %lu of %lu: %s", i + 1, count, strerror(err));
	}
	pthread_attr_destroy(&attr);
	while ((now = __atomic_load_n(&started, __ATOMIC_ACQUIRE)) < count)
		futex_wait(&started, now);
	if (thread_failure != 0)
		fail("a thread's attach: %s", otel_thread_ctx_strerror(thread_failure));
}

/* The process's mappings: lines of /proc/self/maps. */
static long count_maps(void)
{
	char buf[65536];
	long lines = 0;
	ssize_t n;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		fail("/proc/self/maps: %s", strerror(errno));
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < n; i++)
			lines += buf[i] == '\n';
	close(fd);
	return lines;
}

/* The process's threads, as /proc/self/status counts them. */
static long count_tasks(void)
{
	char buf[32];
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	long threads = -1;

	if (f == NULL)
		fail("/proc/self/status: %s", strerror(errno));
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "Threads: %31s", buf) == 1)
			threads = strtol(buf, NULL, 10);
	fclose(f);
	return threads;
}

/* k more mappings, or fewer where the kernel merged some with what lies
 * next to them (the caller counts again). */
static void add_anon(long k, long page)
{
	char *p = mmap(NULL, (size_t)(k * page), PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		       -1, 0);

	if (p == MAP_FAILED)
		fail("mmap of %ld pages: %s", k, strerror(errno));
	/* Every other page no-access: neighbours that differ cannot merge. */
	for (long i = 1; i < k; i += 2)
		if (mprotect(p + i * page, (size_t)page, PROT_NONE) != 0)
			fail("mprotect: %s (vm.max_map_count too low?)", strerror(errno));
}

static void add_file(int fd, long k, long page)
{
	/* Each from offset 0: two neighbours would merge only if their file
	 * offsets followed each other. */
	for (long i = 0; i < k; i++)
		if (mmap(NULL, (size_t)page, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED)
			fail("mmap of the file, %ld of %ld: %s (vm.max_map_count too low?)", i + 1, k,
			     strerror(errno));
}

/* Adds mappings until the process has `want` in all. */
static void grow_maps(long want, bool file)
{
	long page = sysconf(_SC_PAGESIZE), have = count_maps();
	int fd = -1;

	if (file) {
		fd = memfd_create("bench-readers-data", MFD_CLOEXEC);
		if (fd < 0 || ftruncate(fd, page) != 0)
			fail("memfd: %s", strerror(errno));
	}
	for (int round = 0; have < want && round < 16; round++) {
		if (file)
			add_file(fd, want - have, page);
		else
			add_anon(want - have, page);
		have = count_maps();
	}
	if (have != want)
		fail("%ld mappings, not %ld", have, want);
	if (fd >= 0)
		close(fd);
}

_Noreturn void target_main(const char *spec)
{
	static const struct otel_thread_ctx_process_attr resource[] = {
		{ "service.name", OTEL_THREAD_CTX_PROCESS_STRING, "bench-readers-target", 0, 0, 0.0, 0 },
	};
	const char *eq = strchr(spec, '=');
	unsigned long n;
	char *end, c;
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	errno = 0;
	n = eq != NULL ? strtoul(eq + 1, &end, 10) : 0;
	if (eq == NULL || errno != 0 || end == eq + 1 || *end != '\0' || n == 0 || n > INT_MAX)
		fail("not KIND=N: %s", spec);
	if ((rc = otel_thread_ctx_key_register(TARGET_KEY, &key)) != 0 ||
	    (rc = otel_thread_ctx_process_publish(resource, 1)) != 0 || (rc = publish()) != 0)
		fail("publishing: %s", otel_thread_ctx_strerror(rc));
	if (strncmp(spec, "threads=", 8) == 0) {
		start_threads(n - 1);
	} else if (strncmp(spec, "anon=", 5) == 0 || strncmp(spec, "file=", 5) == 0) {
		long have = count_maps();

		if ((long)n < have)
			fail("asked for %lu mappings; the process has %ld already", n, have);
		grow_maps((long)n, spec[0] == 'f');
	} else {
		fail("unknown kind: %s", spec);
	}
	printf("ready %ld %ld\n", count_maps(), count_tasks());
	/* Until the reader closes the pipe (or dies). */
	for (;;) {
		ssize_t got = read(STDIN_FILENO, &c, 1);

		if (got == 0 || (got < 0 && errno != EINTR))
			_exit(0);
	}
}
