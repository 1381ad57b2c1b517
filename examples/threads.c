/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Several worker threads handle "requests": each request is a trace with a
 * root span and child spans, published with otel-thread-ctx.  The main thread
 * plays an in-process sampling profiler: it interrupts each worker with a
 * signal, and the handler copies whatever otel_thread_ctx_v1 points to, the
 * way a profiler would, for main to print.  Ends by itself.
 *
 *   usage: threads [workers] [samples per worker]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <otel_thread_ctx.h>

/* Attribute key indices; a process context would map them to names. */
enum { KEY_ROUTE = 1, KEY_WORKER = 2 };

static const char *const routes[] = { "GET /users", "POST /orders", "GET /health",
				      "PUT /cart" };

static volatile sig_atomic_t stopping;

static void fail(const char *what, int rc)
{
	fprintf(stderr, "threads: %s: %s\n", what, otel_thread_ctx_strerror(rc));
	exit(1);
}

static void random_bytes(unsigned *seed, uint8_t *out, size_t n)
{
	for (size_t i = 0; i < n; i++)
		out[i] = (uint8_t)(rand_r(seed) >> 7);
	out[0] |= 1; /* never all zero */
}

static void *worker(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg, seed = id * 2654435761u;
	otel_thread_ctx *ctx;
	char name[16];
	int rc;

	snprintf(name, sizeof(name), "worker-%u", id);
	if ((rc = otel_thread_ctx_create(&ctx)) != 0)
		fail("create", rc);
	while (!stopping) {
		uint8_t trace[16], span[8];
		const char *route = routes[rand_r(&seed) % 4];

		/* A new request: new trace, root span, attributes, written in
		 * the context (a value of this thread's), then published: the
		 * thread publishes a copy of it, with one pointer store. */
		random_bytes(&seed, trace, sizeof(trace));
		random_bytes(&seed, span, sizeof(span));
		if ((rc = otel_thread_ctx_set_ids(ctx, trace, span, 1)) != 0 ||
		    (rc = otel_thread_ctx_set_attr(ctx, KEY_ROUTE, route, strlen(route))) != 0 ||
		    (rc = otel_thread_ctx_set_attr(ctx, KEY_WORKER, name, strlen(name))) != 0 ||
		    (rc = otel_thread_ctx_update(ctx)) != 0)
			fail("start request", rc);
		/* Child spans: only the span id of the thread's record
		 * changes. */
		for (int i = 0; i < 3 && !stopping; i++) {
			random_bytes(&seed, span, sizeof(span));
			if ((rc = otel_thread_ctx_update_span_id(span)) != 0)
				fail("child span", rc);
			usleep(200);
		}
		/* Between requests the thread publishes nothing. */
		if ((rc = otel_thread_ctx_detach(NULL)) != 0)
			fail("detach", rc);
	}
	/* Exiting while publishing would be fine too: the thread's exit
	 * unpublishes.  The context is a value: destroy it whenever. */
	otel_thread_ctx_destroy(ctx);
	return NULL;
}

/* The "profiler": filled by the signal handler on the sampled thread. */
static struct otel_thread_ctx_record sample;
static int sample_present;
static sem_t sample_ready;

static void on_sample(int sig)
{
	const struct otel_thread_ctx_record *r = otel_thread_ctx_v1;
	int saved = errno;

	(void)sig;
	sample_present = r != NULL && r->valid == 1;
	if (sample_present) {
		size_t n = r->attrs_data_size;

		memcpy(&sample, r, offsetof(struct otel_thread_ctx_record, attrs_data));
		memcpy(sample.attrs_data, r->attrs_data,
		       n <= OTEL_THREAD_CTX_ATTRS_MAX ? n : OTEL_THREAD_CTX_ATTRS_MAX);
	}
	sem_post(&sample_ready);
	errno = saved;
}

static void print_sample(unsigned worker_id)
{
	const struct otel_thread_ctx_record *r = &sample;
	size_t at = 0;

	printf("worker %u  ", worker_id);
	if (!sample_present) {
		printf("(idle: no context)\n");
		return;
	}
	printf("trace ");
	for (int i = 0; i < 16; i++)
		printf("%02x", r->trace_id[i]);
	printf("  span ");
	for (int i = 0; i < 8; i++)
		printf("%02x", r->span_id[i]);
	printf("  flags %02x ", r->trace_flags);
	while (at + 2 <= r->attrs_data_size && at + 2 + r->attrs_data[at + 1] <= r->attrs_data_size) {
		printf(" [%u]=\"%.*s\"", r->attrs_data[at], r->attrs_data[at + 1],
		       (const char *)r->attrs_data + at + 2);
		at += 2u + r->attrs_data[at + 1];
	}
	printf("\n");
}

int main(int argc, char **argv)
{
	unsigned workers = argc > 1 ? (unsigned)atoi(argv[1]) : 4;
	unsigned samples = argc > 2 ? (unsigned)atoi(argv[2]) : 3;
	pthread_t *t;
	struct sigaction sa;

	if (workers == 0 || workers > 64 || samples == 0) {
		fprintf(stderr, "usage: threads [workers 1-64] [samples per worker]\n");
		return 2;
	}
	t = calloc(workers, sizeof(*t));
	sem_init(&sample_ready, 0, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sample;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);

	for (unsigned i = 0; i < workers; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1)) != 0)
			return 1;
	usleep(20000);
	for (unsigned s = 0; s < samples; s++) {
		printf("-- sample %u\n", s + 1);
		for (unsigned i = 0; i < workers; i++) {
			pthread_kill(t[i], SIGUSR1);
			while (sem_wait(&sample_ready) != 0 && errno == EINTR)
				;
			print_sample(i + 1);
		}
		usleep(50000);
	}
	stopping = 1;
	for (unsigned i = 0; i < workers; i++)
		pthread_join(t[i], NULL);
	free(t);
	printf("%u workers published contexts; %u samples each read through otel_thread_ctx_v1\n",
	       workers, samples);
	return 0;
}
