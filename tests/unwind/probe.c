/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A call chain down to the library's TLS access, for tests/unwind/unwind.py:
 * a debugger stopped anywhere inside the TLSDESC resolver must unwind back
 * through probe_inner and probe_outer.
 *
 *   probe              (built with PROBE_LINKED) the library linked at
 *                      start-up (static TLS): the main thread attaches
 *   probe LIBRARY      (built without) the library dlopen()ed; a new thread
 *                      attaches, which
 *                      is that thread's first access to the library's TLS:
 *                      with dynamic TLS (glibc's optional_static_tls=0,
 *                      musl always) the resolver takes its slow path and
 *                      allocates the thread's block
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <otel_thread_ctx.h>

static int (*attach_fn)(const otel_thread_ctx *, otel_thread_ctx *);

/* The thread's first publication: its records come from the pool.  The
 * empty asm statement after the call keeps it from being a tail call, so
 * that probe_inner stays on the stack. */
__attribute__((noinline)) int probe_inner(otel_thread_ctx *ctx)
{
	int rc = attach_fn(ctx, NULL);

	__asm__ volatile("" : "+r"(rc));
	return rc;
}

__attribute__((noinline)) int probe_outer(otel_thread_ctx *ctx)
{
	return probe_inner(ctx) + 1;
}

#ifdef PROBE_LINKED
int main(void)
{
	otel_thread_ctx *ctx;

	attach_fn = otel_thread_ctx_attach;
	if (otel_thread_ctx_create(&ctx) != 0)
		return 2;
	return probe_outer(ctx) == 1 ? 0 : 1;
}
#else
static void *probe_thread(void *ctx)
{
	return (void *)(long)probe_outer(ctx);
}

int main(int argc, char **argv)
{
	int (*create)(otel_thread_ctx **);
	otel_thread_ctx *ctx;
	void *lib, *c, *a, *rc;
	pthread_t t;

	if (argc < 2) {
		fprintf(stderr, "usage: probe LIBRARY\n");
		return 2;
	}
	lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (lib == NULL || (c = dlsym(lib, "otel_thread_ctx_create")) == NULL ||
	    (a = dlsym(lib, "otel_thread_ctx_attach")) == NULL) {
		fprintf(stderr, "probe: %s\n", dlerror());
		return 2;
	}
	memcpy(&create, &c, sizeof(c));
	memcpy(&attach_fn, &a, sizeof(a));
	if (create(&ctx) != 0 || pthread_create(&t, NULL, probe_thread, ctx) != 0 ||
	    pthread_join(t, &rc) != 0)
		return 2;
	return rc == (void *)1 ? 0 : 1;
}
#endif
