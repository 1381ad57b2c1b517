/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A small "service" for the inspector to look at from outside: a few worker
 * threads handle requests, each a trace with a root span and child spans,
 * and publish what they are doing with otel-thread-ctx; the process context
 * names the attribute keys and the service.  It prints its pid, runs for the
 * given number of seconds and ends by itself.
 *
 *   usage: service [workers] [seconds]
 *
 * and, from another shell:  otel-thread-ctx-inspect PID
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <otel_thread_ctx_process.h>
#include <otel_thread_ctx.h>

static const char *const routes[] = { "GET /users/{id}", "POST /orders", "GET /health",
				      "PUT /cart/{id}" };
static const char *const methods[] = { "GET", "POST", "GET", "PUT" };

static unsigned key_route, key_method, key_worker;
static volatile int stopping;

static void fail(const char *what, int rc)
{
	fprintf(stderr, "service: %s: %s\n", what, otel_thread_ctx_strerror(rc));
	exit(1);
}

static void random_bytes(unsigned *seed, uint8_t *out, size_t n)
{
	for (size_t i = 0; i < n; i++)
		out[i] = (uint8_t)(rand_r(seed) >> 7);
	out[0] |= 1; /* never all zero */
}

/* Busy work, so that a thread is often caught running, not sleeping. */
static void work_for(long us)
{
	struct timespec start, now;

	clock_gettime(CLOCK_MONOTONIC, &start);
	do
		clock_gettime(CLOCK_MONOTONIC, &now);
	while ((now.tv_sec - start.tv_sec) * 1000000L + (now.tv_nsec - start.tv_nsec) / 1000 < us);
}

/*
 * What a tracer's instrumentation does on each worker.  No context object
 * is needed for the thread's own requests: update_all publishes a new
 * request in one call, update_span_id a child span.  A context is a value
 * for what must be kept or handed on: here the background "flush" scope,
 * published in the middle of a request and then put back exactly as it was.
 */
static void *worker(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg, seed = id * 2654435761u;
	otel_thread_ctx *flush, *saved;
	uint8_t flush_trace[16], flush_span[8];
	char name[16];
	int rc;

	snprintf(name, sizeof(name), "worker-%u", id);
	pthread_setname_np(pthread_self(), name);
	if ((rc = otel_thread_ctx_create(&flush)) != 0 ||
	    (rc = otel_thread_ctx_create(&saved)) != 0)
		fail("create", rc);
	random_bytes(&seed, flush_trace, sizeof(flush_trace));
	random_bytes(&seed, flush_span, sizeof(flush_span));
	if ((rc = otel_thread_ctx_set_ids(flush, flush_trace, flush_span, 0)) != 0 ||
	    (rc = otel_thread_ctx_set_attr(flush, key_worker, name, strlen(name))) != 0)
		fail("flush context", rc);
	while (!stopping) {
		unsigned r = (unsigned)rand_r(&seed) % 4;
		uint8_t trace[16], span[8];
		struct otel_thread_ctx_attr attrs[3] = {
			{ key_route, (unsigned)strlen(routes[r]), (const uint8_t *)routes[r] },
			{ key_method, (unsigned)strlen(methods[r]), (const uint8_t *)methods[r] },
			{ key_worker, (unsigned)strlen(name), (const uint8_t *)name },
		};

		/* A new request: trace, root span and attributes, published
		 * in one step. */
		random_bytes(&seed, trace, sizeof(trace));
		random_bytes(&seed, span, sizeof(span));
		if ((rc = otel_thread_ctx_update_all(trace, span, 1, attrs, 3)) != 0)
			fail("start request", rc);
		/* Child spans: only the span id changes. */
		for (int i = 0; i < 4 && !stopping; i++) {
			random_bytes(&seed, span, sizeof(span));
			if ((rc = otel_thread_ctx_update_span_id(span)) != 0)
				fail("child span", rc);
			work_for(20000);
			if (i == 1) {
				/* A scope: the flush publishes its own context,
				 * then the request's span comes back. */
				if ((rc = otel_thread_ctx_attach(flush, saved)) != 0)
					fail("flush", rc);
				work_for(5000);
				if ((rc = otel_thread_ctx_update(saved)) != 0)
					fail("end of flush", rc);
			}
		}
		/* Between requests the thread publishes nothing. */
		if ((rc = otel_thread_ctx_detach(NULL)) != 0)
			fail("detach", rc);
		usleep(5000);
	}
	otel_thread_ctx_destroy(saved);
	otel_thread_ctx_destroy(flush);
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned workers = argc > 1 ? (unsigned)atoi(argv[1]) : 4;
	int seconds = argc > 2 ? atoi(argv[2]) : 5;
	struct otel_thread_ctx_process_attr resource[] = {
		{ "service.name", OTEL_THREAD_CTX_PROCESS_STRING, "demo-shop", 0, 0, 0.0, 0 },
		{ "process.pid", OTEL_THREAD_CTX_PROCESS_INT, NULL, 0, getpid(), 0.0, 0 },
	};
	pthread_t t[64];
	int rc;

	if (workers == 0 || workers > 64 || seconds <= 0) {
		fprintf(stderr, "usage: service [workers 1-64] [seconds]\n");
		return 2;
	}
	/* Under Yama ptrace_scope 1 only ancestors may attach; let any
	 * process of this user inspect this one (no Yama: nothing to do). */
	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	if ((rc = otel_thread_ctx_key_register("http.route", &key_route)) != 0 ||
	    (rc = otel_thread_ctx_key_register("http.request.method", &key_method)) != 0 ||
	    (rc = otel_thread_ctx_key_register("worker.name", &key_worker)) != 0)
		fail("register keys", rc);
	if ((rc = otel_thread_ctx_process_publish(resource, 2)) != 0)
		fail("publish the process context", rc);
	for (unsigned i = 0; i < workers; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1)) != 0)
			return 1;
	printf("service: pid %d, %u workers, running %d s\n", (int)getpid(), workers, seconds);
	fflush(stdout);
	sleep((unsigned)seconds);
	stopping = 1;
	for (unsigned i = 0; i < workers; i++)
		pthread_join(t[i], NULL);
	otel_thread_ctx_process_unpublish();
	printf("service: done\n");
	return 0;
}
