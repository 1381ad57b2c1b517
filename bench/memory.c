/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Memory per publishing thread and per context.  Per thread: the growth of
 * resident memory and heap while many threads are alive, threads that do
 * nothing, that used malloc, and that publish, started all at once or one
 * after another, each kind in a fresh child process; and the library's
 * PT_TLS.  Per context: the heap a context takes with 0, 1 and 4
 * attributes, of the default capacity and sized to them, against a malloc
 * of a record header.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <malloc.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

struct mem_results mem;

/* SIZED_COUNT contexts of one kind (or, with attrs < 0, as many blocks of
 * a record header's size): heap growth per context. */
static void measure_sized(int attrs, bool sized, double *heap, size_t *usable)
{
	static void *blocks[SIZED_COUNT];
	struct otel_thread_ctx_options o = OTEL_THREAD_CTX_OPTIONS_INIT;
	long long before = heap_in_use(), after;

	if (sized) {
		o.attrs_capacity = (unsigned)attrs * (2 + ATTR_LEN);
		o.flags = attrs == 0 ? OTEL_THREAD_CTX_OPTION_IDS_ONLY : 0;
	}
	for (unsigned i = 0; i < SIZED_COUNT; i++) {
		otel_thread_ctx *ctx;

		if (attrs < 0) {
			blocks[i] = malloc(HEADER_BYTES);
			if (blocks[i] == NULL)
				die("out of memory");
			memset(blocks[i], 0, HEADER_BYTES);
			continue;
		}
		CHECK(otel_thread_ctx_create_with(&ctx, &o));
		CHECK(otel_thread_ctx_set_ids(ctx, trace_ids[0], span_ids[0], 1));
		for (int a = 0; a < attrs; a++)
			CHECK(otel_thread_ctx_set_attr(ctx, (unsigned)a + 1, attr_values[0][a],
						       ATTR_LEN));
		blocks[i] = ctx;
	}
	after = heap_in_use();
	*heap = before < 0 ? -1 : (double)(after - before) / SIZED_COUNT;
	*usable = malloc_usable_size(blocks[0]);
	for (unsigned i = 0; i < SIZED_COUNT; i++) {
		if (attrs < 0)
			free(blocks[i]);
		else
			otel_thread_ctx_destroy(blocks[i]);
	}
}

static int find_tls(struct dl_phdr_info *info, size_t size, void *data)
{
	Dl_info *lib = data;

	(void)size;
	if ((void *)info->dlpi_addr != lib->dli_fbase)
		return 0;
	for (unsigned i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_TLS)
			mem.tls_bytes = info->dlpi_phdr[i].p_memsz;
	return 1;
}

struct mem_arg {
	enum mem_kind kind;
	otel_thread_ctx *ctx;
	sem_t *ready;  /* ONE_BY_ONE: posted when the thread has done its part */
	pthread_barrier_t *alive, *done;
};

static void *mem_thread(void *arg)
{
	struct mem_arg *a = arg;

	if (a->kind != MEM_BARE) {
		void *volatile p = malloc(1); /* volatile: not optimized away */

		free(p);
	}
	if (a->kind == MEM_PUB)
		CHECK(otel_thread_ctx_attach(a->ctx, NULL));
	if (a->ready != NULL)
		sem_post(a->ready);
	pthread_barrier_wait(a->alive);
	pthread_barrier_wait(a->done);
	/* Exits publishing: the library unpublishes and takes the records
	 * back. */
	return NULL;
}

/* RSS and heap growth while `threads` threads of one kind are alive.  The
 * stacks are this program's own mapping, so that every run touches fresh
 * stack pages alike and the C library's cache of thread stacks plays no
 * part.  The context the publishing threads attach exists before. */
static struct mem_sample threads_alive(unsigned threads, enum mem_kind kind,
				       enum mem_start start)
{
	const size_t stack = 128 * 1024;
	pthread_barrier_t alive, done;
	sem_t ready;
	struct mem_arg arg = {kind, NULL, start == ONE_BY_ONE ? &ready : NULL, &alive, &done};
	pthread_t *tids = calloc(threads, sizeof(*tids));
	char *stacks = mmap(NULL, stack * threads, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	struct mem_sample r;
	long rss0;
	long long heap0;

	if (tids == NULL || stacks == MAP_FAILED)
		die("out of memory for %u threads", threads);
	arg.ctx = make_ctx(0, span_ids[0], true);
	sem_init(&ready, 0, 0);
	pthread_barrier_init(&alive, NULL, threads + 1);
	pthread_barrier_init(&done, NULL, threads + 1);
	rss0 = rss_kib();
	heap0 = heap_in_use();
	for (unsigned k = 0; k < threads; k++) {
		pthread_attr_t attr;

		pthread_attr_init(&attr);
		pthread_attr_setstack(&attr, stacks + (size_t)k * stack, stack);
		if (pthread_create(&tids[k], &attr, mem_thread, &arg) != 0)
			die("pthread_create failed");
		pthread_attr_destroy(&attr);
		while (start == ONE_BY_ONE && sem_wait(&ready) != 0)
			;
	}
	pthread_barrier_wait(&alive);
	r.rss_kib = rss_kib() - rss0;
	r.heap = heap0 < 0 ? -1 : heap_in_use() - heap0;
	pthread_barrier_wait(&done);
	for (unsigned k = 0; k < threads; k++)
		pthread_join(tids[k], NULL);
	pthread_barrier_destroy(&alive);
	pthread_barrier_destroy(&done);
	sem_destroy(&ready);
	otel_thread_ctx_destroy(arg.ctx);
	munmap(stacks, stack * threads);
	free(tids);
	return r;
}

/* Runs fn(arg) in a child process made now, which writes `len` bytes of
 * results to `out`: every measurement starts from the same fresh heap. */
void in_child(void (*fn)(void *arg, void *out), void *arg, void *out, size_t len)
{
	int fds[2], status;
	pid_t pid = -1;
	size_t got = 0;

	fflush(stdout);
	if (pipe(fds) != 0 || (pid = fork()) < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		close(fds[0]);
		fn(arg, out);
		for (size_t put = 0; put < len;) {
			ssize_t w = write(fds[1], (char *)out + put, len - put);

			if (w <= 0)
				_exit(1);
			put += (size_t)w;
		}
		_exit(0);
	}
	close(fds[1]);
	while (got < len) {
		ssize_t r = read(fds[0], (char *)out + got, len - got);

		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fds[0]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0 || got != len)
		die("measuring child failed");
}

struct mem_run {
	enum mem_kind kind;
	enum mem_start start;
};

static void mem_child(void *arg, void *out)
{
	const struct mem_run *run = arg;

	*(struct mem_sample *)out = threads_alive(mem.threads, run->kind, run->start);
}

void run_memory(void)
{
	Dl_info lib;

	if (dladdr((void *)(uintptr_t)otel_thread_ctx_attach, &lib) == 0)
		die("dladdr failed");
	dl_iterate_phdr(find_tls, &lib);
	mem.threads = opt.mem_threads;
	for (enum mem_start st = 0; st < N_MEM_STARTS; st++) {
		for (enum mem_kind k = 0; k < N_MEM_KINDS; k++) {
			struct mem_run run = {k, st};

			in_child(mem_child, &run, &mem.s[st][k], sizeof(mem.s[st][k]));
		}
	}
	for (size_t a = 0; a < N_SIZED; a++)
		for (int sized = 0; sized < 2; sized++)
			measure_sized((int)sized_attrs[a], sized, &mem.sized_heap[a][sized],
				      &mem.sized_usable[a][sized]);
	measure_sized(-1, false, &mem.header_heap, &mem.header_usable);
	mem.done = true;
}
