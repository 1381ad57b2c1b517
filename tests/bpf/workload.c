/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A workload whose CPU profile is known by construction, for the sampler's
 * profile test (profile.py).  One thread, "burner", serves requests of three
 * routes in a fixed cycle, each in its own loop function, measured in the
 * thread's own CPU time (CLOCK_THREAD_CPUTIME_ID), so that the shares do not
 * depend on how often other processes take the CPU:
 *
 *   route              trace id    loop         CPU per cycle  share
 *   GET /users/{id}    11 11 ...   burn_users   6 ms           50 %
 *   POST /orders       22 22 ...   burn_orders  3 ms           25 %
 *   GET /health        33 33 ...   burn_health  1 ms            8.3 %
 *   (no context)       -           burn_idle    2 ms           16.7 %
 *
 * so the routes take 60, 30 and 10 % of the CPU spent in requests.  Each
 * request is a span of its own (a new span id, published with
 * otel_thread_ctx_update_all(), the attribute http.route); between requests
 * the thread detaches.  Built with -fno-omit-frame-pointer: the sampler's
 * stacks unwind by frame pointers.  The main thread prints "ready PID" and
 * waits for its standard input to close, then ends.
 *
 *   workload --chunks N   fixed work instead, for the sampler's cost
 *                         (tools/sample/cost.py): after "ready PID", waits
 *                         for a line, then the main thread burns N chunks of
 *                         the users loop in a span, prints "cpu_ns NS" (its
 *                         CPU time, user and system) and ends.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <otel_thread_ctx.h>
#include <otel_thread_ctx_process.h>

static volatile int stopping;
static volatile uint64_t sink;

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Arithmetic the compiler keeps, in chunks of about 100 us between looks at
 * the clock, so that nearly every sample lands in the loop itself. */
#define BURN_BODY(until)                                                        \
	do {                                                                    \
		uint64_t x = sink;                                              \
		do {                                                            \
			for (int i = 0; i < 100000; i++) {                      \
				x = x * 6364136223846793005u + 1442695040888963407u; \
				__asm__ volatile("" : "+r"(x));                 \
			}                                                       \
		} while (thread_cpu_ns() < (until));                            \
		sink = x;                                                       \
	} while (0)

/* Not static, never inlined, called through pointers: each keeps its name
 * in the symbol table (no clone of another name). */
__attribute__((noinline)) void burn_users(uint64_t until) { BURN_BODY(until); }
__attribute__((noinline)) void burn_orders(uint64_t until) { BURN_BODY(until); }
__attribute__((noinline)) void burn_health(uint64_t until) { BURN_BODY(until); }
__attribute__((noinline)) void burn_idle(uint64_t until) { BURN_BODY(until); }

static void (*volatile burners[4])(uint64_t) = { burn_users, burn_orders, burn_health, burn_idle };
static const char *const routes[3] = { "GET /users/{id}", "POST /orders", "GET /health" };
static const uint64_t cost_ns[4] = { 6000000, 3000000, 1000000, 2000000 };

static void *burner(void *arg)
{
	unsigned int key = *(unsigned int *)arg;
	uint64_t n = 0;

	pthread_setname_np(pthread_self(), "burner");
	while (!stopping) {
		for (int r = 0; r < 4; r++) {
			uint64_t until = thread_cpu_ns() + cost_ns[r];

			if (r < 3) {
				uint8_t trace[16], span[8];
				struct otel_thread_ctx_attr a = { key, (unsigned int)strlen(routes[r]),
								  (const uint8_t *)routes[r] };

				memset(trace, 0x11 * (r + 1), sizeof(trace));
				n++;
				for (int i = 0; i < 8; i++)
					span[i] = (uint8_t)(n >> (8 * i));
				span[7] |= 0x80; /* never zero */
				if (otel_thread_ctx_update_all(trace, span, 1, &a, 1) != 0)
					return (void *)1;
			} else if (otel_thread_ctx_detach(NULL) != 0) {
				return (void *)1;
			}
			burners[r](until);
		}
	}
	otel_thread_ctx_detach(NULL);
	return NULL;
}

/* One chunk of the users loop: it ends at once, after its first chunk. */
static void fixed_work(unsigned int key, long chunks)
{
	uint8_t trace[16], span[8];
	struct otel_thread_ctx_attr a = { key, (unsigned int)strlen(routes[0]),
					  (const uint8_t *)routes[0] };
	uint64_t start = thread_cpu_ns();

	memset(trace, 0x11, sizeof(trace));
	memset(span, 0x22, sizeof(span));
	for (long i = 0; i < chunks; i++) {
		span[0] = (uint8_t)i;
		otel_thread_ctx_update_all(trace, span, 1, &a, 1);
		burn_users(0);
	}
	otel_thread_ctx_detach(NULL);
	printf("cpu_ns %llu\n", (unsigned long long)(thread_cpu_ns() - start));
}

int main(int argc, char **argv)
{
	struct otel_thread_ctx_process_attr resource[] = {
		{ "service.name", OTEL_THREAD_CTX_PROCESS_STRING, "workload", 0, 0, 0.0, 0 },
	};
	unsigned int key;
	pthread_t t;
	void *ret = NULL;
	char buf[64];

	if (otel_thread_ctx_key_register("http.route", &key) != 0 ||
	    otel_thread_ctx_process_publish(resource, 1) != 0) {
		fprintf(stderr, "workload: cannot publish the process context\n");
		return 1;
	}
	if (argc == 3 && strcmp(argv[1], "--chunks") == 0) {
		printf("ready %d\n", (int)getpid());
		fflush(stdout);
		if (fgets(buf, sizeof(buf), stdin) == NULL)
			return 1;
		fixed_work(key, atol(argv[2]));
		return 0;
	}
	if (pthread_create(&t, NULL, burner, &key) != 0)
		return 1;
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	while (fgets(buf, sizeof(buf), stdin) != NULL)
		;
	stopping = 1;
	pthread_join(t, &ret);
	otel_thread_ctx_process_unpublish();
	return ret == NULL ? 0 : 1;
}
