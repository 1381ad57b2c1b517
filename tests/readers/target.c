/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A hostile target for the readers (hostile.py): a process built to make a
 * reader stop threads that cannot stop, find threads that come and go, and
 * decode bytes a careful writer would never publish.
 *
 *   readers-target KIND... (each KIND once at most)
 *
 *   bytes     four threads ("bytes-0" .. "bytes-3") publishing records
 *             written here byte by byte (the library refuses to write
 *             them): values that are not UTF-8, control characters (NUL,
 *             ESC, a newline, DEL, the C1 CSI), a quote and a backslash,
 *             and 255-byte values filling the 612 bytes of attributes
 *             (hostile.py mirrors them: BYTES_VALUES); the key map names
 *             keys 0 to 3 (KEYS)
 *   vfork[=MS] a thread ("vforker") that spends MS milliseconds (2000) of
 *             every round in vfork(), its child sleeping (state D: it
 *             cannot stop), then 100 ms running
 *   churn     a thread starting threads that each live about a millisecond
 *   blocksig  two threads ("blocksig-N") that block every signal
 *   busy      a thread ("busy") that never sleeps (it yields at every turn)
 *   many=N    N more threads ("idle"), sleeping in a loop
 *
 * The records are published through the library's slot (dlsym gives this
 * thread's address), which the executable is linked with; the key map by
 * otel_thread_ctx_process_publish().  Prints "ready" and, per thread, " TID:NAME",
 * then serves its stdin: "check" answers "ok" once every thread that runs
 * (all but the idle ones) has made progress since, "stuck NAME" when one
 * did not within 10 s; end of input ends it, exit status 0.
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
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "otel_thread_ctx.h"
#include "otel_thread_ctx_process.h"

#define MAX_RUNNERS 16

static const char *const keys[] = { "value.a", "value.b", "value.c", "value.d" };

struct runner {
	const char *name;
	pid_t tid;
	unsigned long progress; /* atomic */
	void *(*fn)(void *);
	int index;
};

static struct runner runners[MAX_RUNNERS];
static int nrunners;
static pthread_barrier_t ready;

static void die(const char *what)
{
	fprintf(stderr, "readers-target: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void tick(struct runner *r)
{
	__atomic_fetch_add(&r->progress, 1, __ATOMIC_RELAXED);
}

static void nap(long ns)
{
	struct timespec ts = { ns / 1000000000L, ns % 1000000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static void start(struct runner *r)
{
	r->tid = (pid_t)syscall(SYS_gettid);
	pthread_setname_np(pthread_self(), r->name);
	pthread_barrier_wait(&ready);
}

/* --- bytes ------------------------------------------------------------- */

/* A record as the format lays it out (OTEP 4947). */
struct record {
	uint8_t trace_id[16];
	uint8_t span_id[8];
	uint8_t valid;
	uint8_t trace_flags;
	uint16_t attrs_data_size;
	uint8_t attrs[612];
} __attribute__((packed, aligned(16)));

struct value {
	const char *bytes;
	size_t len;
};

#define V(s) { s, sizeof(s) - 1 }

/* Filled in by fill_long(): 255 bytes each. */
static char long_text[255], long_invalid[255], long_all[255];

static const struct value bytes_values[4][4] = {
	/* Not UTF-8: a lone 0xff 0xfe, a lead byte without its continuation,
	 * a surrogate, an overlong '/'. */
	{ V("\xff\xfe"), V("ok\xc3\x28"), V("\xed\xa0\x80"), V("\xc0\xaf") },
	/* Valid UTF-8 with control characters, DEL, the C1 CSI, a quote and
	 * a backslash. */
	{ V("\x00\x01\x1b[31m\n\r\t"), V("\x7f"), V("\xc2\x9b" "2J"), V("\"\\") },
	/* Maximum length: 255 + 255 + 96 bytes of values, 612 in all. */
	{ { long_text, 255 }, { long_invalid, 255 }, { long_text, 96 }, { NULL, 0 } },
	/* Every byte value but 0, once. */
	{ { long_all, 255 }, V(""), { NULL, 0 }, { NULL, 0 } },
};

static void fill_long(void)
{
	for (int i = 0; i < 255; i++) {
		long_text[i] = (char)('a' + i % 26);
		long_invalid[i] = (char)(0x80 + i % 0x40); /* continuation bytes */
		long_all[i] = (char)(i + 1);
	}
}

static struct record records[4];

static void *bytes_thread(void *arg)
{
	struct runner *r = arg;
	struct record *rec = &records[r->index];
	void **slot;
	size_t at = 0;

	for (int b = 0; b < 16; b++)
		rec->trace_id[b] = (uint8_t)(0x40 + 16 * r->index + b);
	for (int b = 0; b < 8; b++)
		rec->span_id[b] = (uint8_t)(0xb0 + 8 * r->index + b);
	rec->trace_flags = 1;
	for (int k = 0; k < 4; k++) {
		const struct value *v = &bytes_values[r->index][k];

		if (v->bytes == NULL)
			continue;
		rec->attrs[at] = (uint8_t)k;
		rec->attrs[at + 1] = (uint8_t)v->len;
		memcpy(rec->attrs + at + 2, v->bytes, v->len);
		at += 2 + v->len;
	}
	rec->attrs_data_size = (uint16_t)at;
	rec->valid = 1;
	slot = dlsym(RTLD_DEFAULT, "otel_thread_ctx_v1");
	if (slot == NULL)
		die("dlsym otel_thread_ctx_v1");
	/* Pointer swap: the record is complete before it is published. */
	__atomic_store_n(slot, (void *)rec, __ATOMIC_RELEASE);
	start(r);
	for (;;) {
		tick(r);
		nap(2000000);
	}
	return NULL;
}

/* --- vfork ------------------------------------------------------------- */

/*
 * vfork() with a child that sleeps vfork_sleep, then exits, by system
 * calls alone, on a stack of its own (as tests/inspect/target.c does, for
 * the same reasons: ThreadSanitizer turns vfork() into fork() and refuses
 * clone() with CLONE_VM).
 */
static char vfork_stack[65536] __attribute__((aligned(16)));
static struct timespec vfork_sleep = { 2, 0 };

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

static void *vfork_thread(void *arg)
{
	struct runner *r = arg;

	start(r);
	for (;;) {
		pid_t child = vfork_sleeping_child();

		if (child < 0)
			die("vfork");
		while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
			;
		tick(r);
		nap(100000000);
	}
	return NULL;
}

/* --- churn, blocksig, busy, idle ---------------------------------------- */

static void *short_lived(void *arg)
{
	(void)arg;
	nap(1000000);
	return NULL;
}

static void *churn_thread(void *arg)
{
	struct runner *r = arg;
	pthread_attr_t attr;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 131072);
	start(r);
	for (;;) {
		pthread_t t;

		if (pthread_create(&t, &attr, short_lived, NULL) == 0)
			tick(r);
		nap(300000);
	}
	return NULL;
}

static void *blocksig_thread(void *arg)
{
	struct runner *r = arg;
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, NULL);
	start(r);
	for (;;) {
		tick(r);
		nap(1000000);
	}
	return NULL;
}

/*
 * Always runnable, never asleep, so that a reader must interrupt it where
 * it runs; but it gives its processor up at every turn (sched_yield()), so
 * that it runs at full speed only where the processor would be idle, not
 * as a second workload beside the tests that share the machine: spinning
 * alone, it took a core for the whole of each scenario.
 */
static void *busy_thread(void *arg)
{
	struct runner *r = arg;

	start(r);
	for (;;) {
		tick(r);
		sched_yield();
	}
	return NULL;
}

static void *idle_thread(void *arg)
{
	(void)arg;
	for (;;)
		nap(1000000000);
	return NULL;
}

/* --- main --------------------------------------------------------------- */

static void add(const char *name, void *(*fn)(void *), int index)
{
	if (nrunners == MAX_RUNNERS) {
		errno = E2BIG;
		die("too many threads");
	}
	runners[nrunners++] = (struct runner){ .name = name, .fn = fn, .index = index };
}

/* "ok" once every runner has moved on from `before`, or "stuck NAME". */
static void check(void)
{
	unsigned long before[MAX_RUNNERS];
	struct timespec t0, now;

	for (int i = 0; i < nrunners; i++)
		before[i] = __atomic_load_n(&runners[i].progress, __ATOMIC_RELAXED);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < nrunners; i++) {
		while (__atomic_load_n(&runners[i].progress, __ATOMIC_RELAXED) == before[i]) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			if (now.tv_sec - t0.tv_sec >= 10) {
				printf("stuck %s\n", runners[i].name);
				fflush(stdout);
				return;
			}
			nap(1000000);
		}
	}
	printf("ok\n");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	static const char *const bytes_names[] = { "bytes-0", "bytes-1", "bytes-2", "bytes-3" };
	static const char *const blocksig_names[] = { "blocksig-0", "blocksig-1" };
	pthread_attr_t small, runner;
	unsigned long idle = 0;
	char line[64];
	unsigned idx;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "bytes") == 0) {
			for (int k = 0; k < 4; k++)
				add(bytes_names[k], bytes_thread, k);
		} else if (strncmp(argv[i], "vfork", 5) == 0) {
			if (argv[i][5] == '=') {
				long ms = strtol(argv[i] + 6, NULL, 10);

				vfork_sleep.tv_sec = ms / 1000;
				vfork_sleep.tv_nsec = ms % 1000 * 1000000;
			}
			add("vforker", vfork_thread, 0);
		} else if (strcmp(argv[i], "churn") == 0) {
			add("churn", churn_thread, 0);
		} else if (strcmp(argv[i], "blocksig") == 0) {
			for (int k = 0; k < 2; k++)
				add(blocksig_names[k], blocksig_thread, k);
		} else if (strcmp(argv[i], "busy") == 0) {
			add("busy", busy_thread, 0);
		} else if (strncmp(argv[i], "many=", 5) == 0) {
			idle = strtoul(argv[i] + 5, NULL, 10);
		} else {
			fprintf(stderr, "usage: readers-target bytes|vfork[=MS]|churn|blocksig|busy|many=N...\n");
			return 2;
		}
	}
	fill_long();
	for (unsigned k = 0; k < 4; k++)
		if (otel_thread_ctx_key_register(keys[k], &idx) != 0 || idx != k)
			die("key registration");
	if (otel_thread_ctx_process_publish(NULL, 0) != 0)
		die("process context");
	/* Small stacks, so that thousands of threads fit; larger ones for
	 * those that do more than sleep (a sanitizer's calls need room). */
	pthread_attr_init(&small);
	pthread_attr_setstacksize(&small, 131072);
	pthread_attr_init(&runner);
	pthread_attr_setstacksize(&runner, 1u << 20);
	for (unsigned long i = 0; i < idle; i++) {
		pthread_t t;

		if (pthread_create(&t, &small, idle_thread, NULL) != 0)
			die("pthread_create (idle)");
	}
	pthread_barrier_init(&ready, NULL, (unsigned)nrunners + 1);
	for (int i = 0; i < nrunners; i++) {
		pthread_t t;

		if (pthread_create(&t, &runner, runners[i].fn, &runners[i]) != 0)
			die("pthread_create");
	}
	pthread_barrier_wait(&ready);
	printf("ready");
	for (int i = 0; i < nrunners; i++)
		printf(" %d:%s", (int)runners[i].tid, runners[i].name);
	printf("\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin) != NULL)
		if (strcmp(line, "check\n") == 0)
			check();
	return 0;
}
