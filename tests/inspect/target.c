/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The process the inspector tests read from outside.  Built linked with the
 * shared or the static library (-DTARGET_LINKED), or loading a module with
 * dlopen() from the path given with --lib.
 *
 *   target [--lib PATH] MODE
 *
 * Built with -DTARGET_FAR_TLS, the executable holds 2 MiB of TLS of its own
 * ahead of every module's block.
 *
 * MODE:
 *   values   WORKERS threads publish known records (expected.h) through
 *            the library; one more thread publishes nothing
 *   manual   the same records, built here and published by the module's
 *            own code (plain_slot_publish() of plain-slot.c), or stored in
 *            the slot directly when the module only defines it
 *   storm    one thread publishes records derived from one counter as fast
 *            as it can, with update_all (expected.h, storm_fill)
 *   hostile  one thread per broken record (expected.h, HOSTILE_*)
 *   churn    threads that publish and exit publishing, started one after
 *            another for as long as the target runs
 *   names    one thread named NAMES_THREAD publishing a record whose one
 *            attribute has the key NAMES_KEY (cli.py mirrors both): names
 *            that would drive a terminal if printed raw
 *   signals  as values, and every signal SIGRTMIN that reaches a thread is
 *            counted; once its stdin closed and the threads went on, it
 *            prints "signals N" before it exits
 *   vfork    one thread (publishing nothing) that spends VFORK_CHILD_NS of
 *            every round in vfork(), waiting for a child that sleeps (state
 *            D: a thread that cannot stop for a while), then 100 ms running
 *
 * Through the library, a thread publishes either a copy of a context it
 * then destroys (even threads: the inspector reads the copy) or its record
 * written with update_all (odd threads); both give the same bytes.
 *
 * It publishes a process context naming the keys (when the module has the
 * library), prints "ready" and, per thread to check, " TID:SLOT" (SLOT: the
 * slot's address in that thread, from dlsym(); with plain-slot.c also from
 * the writer's own access, which must agree), then waits for stdin to
 * close.  It exits 0 only if every thread was still making progress after
 * the inspection, so a target left stopped, or killed, fails the test.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "expected.h"
#include "otel_thread_ctx_process.h"
#include "otel_thread_ctx.h"

#ifdef TARGET_FAR_TLS
/* 2 MiB of TLS in the executable, whose block comes first in static TLS:
 * on aarch64 (TLS variant I, blocks above the thread pointer) a library
 * loaded at start-up has its slot more than 1 MiB above the thread
 * pointer; on x86-64, more than 1 MiB below it. */
__attribute__((used)) static __thread unsigned char target_far_tls[2u << 20];
#endif

struct api {
	int (*create)(otel_thread_ctx **);
	void (*destroy)(otel_thread_ctx *);
	int (*set_ids)(otel_thread_ctx *, const uint8_t[16], const uint8_t[8], uint8_t);
	int (*set_attrs)(otel_thread_ctx *, const struct otel_thread_ctx_attr *, size_t);
	int (*attach)(const otel_thread_ctx *, otel_thread_ctx *);
	int (*update_all)(const uint8_t[16], const uint8_t[8], uint8_t,
			  const struct otel_thread_ctx_attr *, size_t);
	int (*key_register)(const char *, unsigned int *);
	int (*publish)(const struct otel_thread_ctx_process_attr *, size_t);
};

/* Escape sequences (OSC, CSI; C1 CSI U+009B), a newline, a quote, a
 * backslash; the thread name is not UTF-8 (0xff), the key is. */
#define NAMES_THREAD "\x1b]0;X\x07\n\"\\\xff\xc2\x9b" "ab"
#define NAMES_KEY "k\x1b[31m\n\"\\\xc2\x9b\xc3\xa9"

static struct api api;
static void *handle;

#ifdef TARGET_PLAIN
void **plain_slot_address(void);
void plain_slot_publish(const void *record);
#endif

/* The writer's own accesses (plain-slot.c), when the module has them. */
static void **(*plain_address)(void);
static void (*plain_publish)(const void *);

struct thread {
	pthread_t t;
	int index;
	pid_t tid;
	uintptr_t slot;
	unsigned long progress;
};

static struct thread threads[EXPECTED_MAX_THREADS];
static int nthreads;
static pthread_barrier_t ready;
static int stopping; /* atomic */
static const char *mode;
static unsigned long signals_received; /* atomic */

static void count_signal(int sig)
{
	(void)sig;
	__atomic_fetch_add(&signals_received, 1, __ATOMIC_RELAXED);
}

static void die(const char *what)
{
	fprintf(stderr, "target: %s\n", what);
	exit(1);
}

static void *sym(const char *name)
{
	void *p = dlsym(handle, name);

	if (p == NULL)
		die(dlerror());
	return p;
}

static const struct otel_thread_ctx_record **slot(void)
{
	return (const struct otel_thread_ctx_record **)sym("otel_thread_ctx_v1");
}

/* The slot's address in this thread.  The writer's own access comes first,
 * so that in dynamic TLS it is the one that allocates the block. */
static uintptr_t slot_checked(void)
{
	uintptr_t own = plain_address != NULL ? (uintptr_t)plain_address() : 0;
	uintptr_t loader = (uintptr_t)slot();

	if (plain_address != NULL && own != loader)
		die("the writer's own access and dlsym() disagree on the slot's address");
	return loader;
}

static void publish_library(int i)
{
	struct expected_thread e;
	struct otel_thread_ctx_attr attrs[EXPECTED_MAX_ATTRS];
	otel_thread_ctx *ctx;

	expected_for(i, &e);
	for (unsigned k = 0; k < e.nattrs; k++) {
		attrs[k].key = e.attrs[k].key;
		attrs[k].len = (unsigned)strlen(e.attrs[k].value);
		attrs[k].value = (const uint8_t *)e.attrs[k].value;
	}
	if (i % 2 == 1) {
		if (api.update_all(e.trace_id, e.span_id, e.flags, attrs, e.nattrs) != 0)
			die("publishing with update_all failed");
		return;
	}
	/* A copy of the context is published; the context goes at once. */
	if (api.create(&ctx) != 0 || api.set_ids(ctx, e.trace_id, e.span_id, e.flags) != 0 ||
	    api.set_attrs(ctx, attrs, e.nattrs) != 0 || api.attach(ctx, NULL) != 0)
		die("publishing a context failed");
	api.destroy(ctx);
}

static void publish_manual(int i)
{
	static struct otel_thread_ctx_record recs[EXPECTED_MAX_THREADS];

	expected_record(i, &recs[i]);
	if (plain_publish != NULL)
		plain_publish(&recs[i]);
	else
		__atomic_store_n(slot(), &recs[i], __ATOMIC_RELEASE);
}

/* Broken records: aligned storage, more than a record's size. */
static struct otel_thread_ctx_record hostile[HOSTILE_COUNT][4];

static void publish_hostile(int kind)
{
	struct otel_thread_ctx_record *r = &hostile[kind][0];
	const struct otel_thread_ctx_record *p = r;

	hostile_record(kind, r);
	if (kind == HOSTILE_UNMAPPED) {
		/* Reserved but inaccessible: unlike an unmapped page, no
		 * later mapping (a thread's stack) can take its place. */
		void *page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (page == MAP_FAILED)
			die("mmap");
		p = page;
	} else if (kind == HOSTILE_MISALIGNED) {
		p = (const struct otel_thread_ctx_record *)((const char *)r + 1);
	}
	__atomic_store_n(slot(), p, __ATOMIC_RELEASE);
}

static void *storm(void *arg)
{
	struct thread *t = arg;

	t->tid = (pid_t)syscall(SYS_gettid);
	t->slot = (uintptr_t)slot();
	pthread_setname_np(pthread_self(), "storm");
	pthread_barrier_wait(&ready);
	for (uint64_t n = 1; !__atomic_load_n(&stopping, __ATOMIC_RELAXED); n++) {
		uint8_t trace[16], span[8];
		char value[24];
		struct otel_thread_ctx_attr a;

		storm_fill(n, trace, span, value);
		a.key = STORM_KEY;
		a.len = (unsigned)strlen(value);
		a.value = (const uint8_t *)value;
		if (api.update_all(trace, span, 1, &a, 1) != 0)
			die("storm update failed");
		__atomic_store_n(&t->progress, n, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void *short_lived(void *arg)
{
	(void)arg;
	publish_library(0);
	/* A moment with the context published, then exit publishing it:
	 * the thread's records go back to the library's pool. */
	for (int i = 0; i < 200; i++)
		sched_yield();
	return NULL;
}

static void *churn(void *arg)
{
	struct thread *t = arg;

	t->tid = (pid_t)syscall(SYS_gettid);
	t->slot = (uintptr_t)slot();
	pthread_barrier_wait(&ready);
	while (!__atomic_load_n(&stopping, __ATOMIC_RELAXED)) {
		pthread_t c;

		if (pthread_create(&c, NULL, short_lived, NULL) != 0)
			die("pthread_create");
		pthread_join(c, NULL);
		__atomic_fetch_add(&t->progress, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/*
 * vfork() with a child that sleeps VFORK_CHILD_NS, then exits, by system
 * calls alone, on a stack of its own: returns the child's id in the parent
 * once the child has exited.  Not through vfork(), which ThreadSanitizer
 * turns into fork(), nor (on x86-64) through clone(), which ThreadSanitizer
 * intercepts and refuses with CLONE_VM: there the system call is made here,
 * and the child never returns from it.
 */
static char vfork_stack[65536] __attribute__((aligned(16)));
static const struct timespec vfork_sleep = { VFORK_CHILD_NS / 1000000000,
					     VFORK_CHILD_NS % 1000000000 };

#if !defined(__x86_64__)
static int vfork_child(void *arg)
{
	(void)arg;
	syscall(SYS_nanosleep, &vfork_sleep, NULL);
	syscall(SYS_exit, 0);
	return 0;
}
#endif

static pid_t vfork_sleeping_child(void)
{
#if defined(__x86_64__)
	long ret;
	register long ptid __asm__("rdx") = 0;
	register long ctid __asm__("r10") = 0;
	register long tls __asm__("r8") = 0;
	register const struct timespec *ts __asm__("r9") = &vfork_sleep;

	/* clone(flags, stack, 0, 0, 0); the child (0 in rax) calls
	 * nanosleep(ts, NULL) and exit(0).  syscall keeps r9. */
	__asm__ volatile("syscall\n\t"
			 "test %%rax, %%rax\n\t"
			 "jnz 1f\n\t"
			 "mov %[nanosleep], %%eax\n\t"
			 "mov %%r9, %%rdi\n\t"
			 "xor %%esi, %%esi\n\t"
			 "syscall\n\t"
			 "mov %[exit], %%eax\n\t"
			 "xor %%edi, %%edi\n\t"
			 "syscall\n\t"
			 "1:\n\t"
			 : "=a"(ret)
			 : "0"((long)SYS_clone), "D"((long)(CLONE_VM | CLONE_VFORK | SIGCHLD)),
			   "S"(vfork_stack + sizeof(vfork_stack)), "r"(ptid), "r"(ctid), "r"(tls),
			   "r"(ts), [nanosleep] "i"(SYS_nanosleep), [exit] "i"(SYS_exit)
			 : "rcx", "r11", "memory");
	if (ret < 0) {
		errno = (int)-ret;
		return -1;
	}
	return (pid_t)ret;
#else
	return clone(vfork_child, vfork_stack + sizeof(vfork_stack),
		     CLONE_VM | CLONE_VFORK | SIGCHLD, NULL);
#endif
}

static void *vforker(void *arg)
{
	struct thread *t = arg;

	t->tid = (pid_t)syscall(SYS_gettid);
	t->slot = 0;
	pthread_setname_np(pthread_self(), "vforker");
	pthread_barrier_wait(&ready);
	while (!__atomic_load_n(&stopping, __ATOMIC_RELAXED)) {
		pid_t child = vfork_sleeping_child();

		if (child < 0)
			die("vfork");
		waitpid(child, NULL, 0);
		__atomic_fetch_add(&t->progress, 1, __ATOMIC_RELAXED);
		usleep(100000);
	}
	return NULL;
}

static void *worker(void *arg)
{
	struct thread *t = arg;
	char name[16];

	t->tid = (pid_t)syscall(SYS_gettid);
	if (strcmp(mode, "names") == 0) {
		static const uint8_t trace[16] = { 1 }, span[8] = { 2 };
		struct otel_thread_ctx_attr a = { 0, 1, (const uint8_t *)"v" };

		pthread_setname_np(pthread_self(), NAMES_THREAD);
		t->slot = (uintptr_t)slot();
		if (api.update_all(trace, span, 1, &a, 1) != 0)
			die("publishing with update_all failed");
	} else if (strcmp(mode, "hostile") == 0) {
		snprintf(name, sizeof(name), "%s", hostile_name(t->index));
		pthread_setname_np(pthread_self(), name);
		t->slot = (uintptr_t)slot();
		publish_hostile(t->index);
	} else {
		expected_name(t->index, name);
		pthread_setname_np(pthread_self(), name);
		if (t->index != EXPECTED_IDLE) {
			t->slot = slot_checked();
			if (strcmp(mode, "manual") == 0)
				publish_manual(t->index);
			else
				publish_library(t->index);
		} else {
			t->slot = 0; /* never touches the module's TLS */
		}
	}
	pthread_barrier_wait(&ready);
	while (!__atomic_load_n(&stopping, __ATOMIC_RELAXED)) {
		__atomic_fetch_add(&t->progress, 1, __ATOMIC_RELAXED);
		usleep(500);
	}
	return NULL;
}

static void setup_api(const char *lib)
{
	if (lib != NULL) {
		handle = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
		if (handle == NULL)
			die(dlerror());
	} else {
		handle = RTLD_DEFAULT;
	}
	if (strcmp(mode, "manual") == 0) {
		/* The module may be one that only defines the slot. */
#ifdef TARGET_PLAIN
		if (lib == NULL) {
			plain_address = plain_slot_address;
			plain_publish = plain_slot_publish;
			return;
		}
#endif
		*(void **)&plain_address = dlsym(handle, "plain_slot_address");
		*(void **)&plain_publish = dlsym(handle, "plain_slot_publish");
		return;
	}
#ifdef TARGET_LINKED
	if (lib == NULL) {
		api.create = otel_thread_ctx_create;
		api.destroy = otel_thread_ctx_destroy;
		api.set_ids = otel_thread_ctx_set_ids;
		api.set_attrs = otel_thread_ctx_set_attrs;
		api.attach = otel_thread_ctx_attach;
		api.update_all = otel_thread_ctx_update_all;
		api.key_register = otel_thread_ctx_key_register;
		api.publish = otel_thread_ctx_process_publish;
		return;
	}
#endif
	*(void **)&api.create = sym("otel_thread_ctx_create");
	*(void **)&api.destroy = sym("otel_thread_ctx_destroy");
	*(void **)&api.set_ids = sym("otel_thread_ctx_set_ids");
	*(void **)&api.set_attrs = sym("otel_thread_ctx_set_attrs");
	*(void **)&api.attach = sym("otel_thread_ctx_attach");
	*(void **)&api.update_all = sym("otel_thread_ctx_update_all");
	*(void **)&api.key_register = sym("otel_thread_ctx_key_register");
	*(void **)&api.publish = sym("otel_thread_ctx_process_publish");
}

int main(int argc, char **argv)
{
	const char *lib = NULL;
	unsigned long before[EXPECTED_MAX_THREADS];
	int signals_mode = 0;
	void *(*fn)(void *) = worker;
	char buf[64];

	if (argc == 4 && strcmp(argv[1], "--lib") == 0) {
		lib = argv[2];
		mode = argv[3];
	} else if (argc == 2) {
		mode = argv[1];
	} else {
		die("usage: target [--lib PATH] values|manual|storm|hostile|churn|names|signals|vfork");
	}
	setup_api(lib);
	if (strcmp(mode, "names") == 0) {
		unsigned idx;

		if (api.key_register(NAMES_KEY, &idx) != 0 || idx != 0 || api.publish(NULL, 0) != 0)
			die("registering or publishing the key failed");
	} else if (strcmp(mode, "manual") != 0) {
		unsigned idx;

		for (unsigned k = 0; k < EXPECTED_KEYS; k++)
			if (api.key_register(expected_key_name(k), &idx) != 0 || idx != k)
				die("key registration failed");
		if (api.publish(NULL, 0) != 0)
			die("process context publication failed");
	}
	if (strcmp(mode, "signals") == 0) {
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = count_signal;
		sa.sa_flags = SA_RESTART;
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGRTMIN, &sa, NULL) != 0)
			die("sigaction");
		mode = "values";
		signals_mode = 1;
	}
	if (strcmp(mode, "values") == 0 || strcmp(mode, "manual") == 0) {
		nthreads = EXPECTED_THREADS;
	} else if (strcmp(mode, "hostile") == 0) {
		nthreads = HOSTILE_COUNT;
	} else if (strcmp(mode, "names") == 0) {
		nthreads = 1;
	} else if (strcmp(mode, "storm") == 0) {
		nthreads = 1;
		fn = storm;
	} else if (strcmp(mode, "churn") == 0) {
		nthreads = 2;
		fn = churn;
	} else if (strcmp(mode, "vfork") == 0) {
		nthreads = 1;
		fn = vforker;
	} else {
		die("unknown mode");
	}
	pthread_barrier_init(&ready, NULL, (unsigned)nthreads + 1);
	for (int i = 0; i < nthreads; i++) {
		threads[i].index = i;
		if (pthread_create(&threads[i].t, NULL, fn, &threads[i]) != 0)
			die("pthread_create");
	}
	pthread_barrier_wait(&ready);
	printf("ready");
	for (int i = 0; i < nthreads; i++)
		printf(" %d:%lx", (int)threads[i].tid, (unsigned long)threads[i].slot);
	printf("\n");
	fflush(stdout);
	/* Inspected now.  Then: has every thread kept going? */
	while (read(0, buf, sizeof(buf)) > 0)
		;
	for (int i = 0; i < nthreads; i++)
		before[i] = __atomic_load_n(&threads[i].progress, __ATOMIC_RELAXED);
	for (int i = 0; i < nthreads; i++) {
		while (__atomic_load_n(&threads[i].progress, __ATOMIC_RELAXED) == before[i])
			sched_yield();
	}
	__atomic_store_n(&stopping, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < nthreads; i++)
		pthread_join(threads[i].t, NULL);
	/* Every signal sent before stdin closed was pending when the threads
	 * went on, and a thread runs its pending handlers before its own
	 * code: the count is final. */
	if (signals_mode) {
		printf("signals %lu\n", __atomic_load_n(&signals_received, __ATOMIC_RELAXED));
		fflush(stdout);
	}
	return 0;
}
