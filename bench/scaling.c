/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Scaling: the cost per thread of (b), attach, update_span_id and read with
 * 1, 2, 8 and 64 threads running the same operation at once, each thread
 * timed on its own CPU clock, and the wall time of them all.  attach, with
 * and without attributes, runs twice: each thread attaching its own
 * context, and one context attached by every thread at once.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>

#include "bench.h"

const struct scale_op scale_ops[] = {
	{"desc", SCALE_FIXTURE, NULL, -1},
	{"attach", SCALE_OWN, "attach, span-only: each thread its own context", -1},
	{"attach", SCALE_ONE, "attach, span-only: one context, every thread", 1},
	{"attach_attrs", SCALE_OWN, "attach, 4 attributes: each thread its own context", -1},
	{"attach_attrs", SCALE_ONE, "attach, 4 attributes: one context, every thread", 3},
	{"update_span_id", SCALE_FIXTURE, NULL, -1},
	{"read", SCALE_FIXTURE, NULL, -1},
};
_Static_assert(sizeof(scale_ops) / sizeof(scale_ops[0]) == N_SCALE_OPS,
	       "N_SCALE_OPS (bench.h): the rows of scale_ops[]");

struct scale_result scaling[N_SCALE_OPS][N_SCALE];
bool scaling_done;

/*
 * `count` contexts like make_ctx(0, span_ids[0], attrs), all at the same
 * offset in their cache line.  Of 64 * (count - 1) + 1 contexts, some
 * `count` share one of the 64 offsets; with glibc's 16-byte alignment, of
 * 4 * (count - 1) + 1 already, and the loop stops as soon as it has them.
 */
static void make_ctxs_alike(otel_thread_ctx **out, unsigned count, bool attrs)
{
	size_t total = 64 * ((size_t)count - 1) + 1, made = 0;
	otel_thread_ctx **all = calloc(total, sizeof(*all));
	unsigned in_class[64] = {0}, cls = 0;

	if (all == NULL)
		die("out of memory");
	while (made < total) {
		all[made] = make_ctx(0, span_ids[0], attrs);
		cls = (unsigned)((uintptr_t)all[made++] & 63);
		if (++in_class[cls] == count)
			break;
	}
	for (size_t i = 0, k = 0; i < made; i++) {
		if (((uintptr_t)all[i] & 63) == cls && k < count)
			out[k++] = all[i];
		else
			otel_thread_ctx_destroy(all[i]);
	}
	free(all);
}

struct scale_arg {
	const struct op *op;
	enum scale_ctx ctx;
	otel_thread_ctx *ctx_of; /* SCALE_ONE: the context of every thread;
				  * SCALE_OWN: this thread's */
	uint64_t n;
	pthread_barrier_t *barrier;
	double cpu_ns;
	uint64_t start, end; /* CLOCK_MONOTONIC */
};

static void *scale_thread(void *p)
{
	struct scale_arg *a = p;
	struct fixture fx;
	uint64_t t0, t1;

	fixture_init(&fx, a->op->attrs, a->ctx_of);
	a->op->run(&fx, a->n / 16 + 1);
	pthread_barrier_wait(a->barrier);
	a->start = now_ns(CLOCK_MONOTONIC);
	t0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
	a->op->run(&fx, a->n);
	t1 = now_ns(CLOCK_THREAD_CPUTIME_ID);
	a->end = now_ns(CLOCK_MONOTONIC);
	fixture_fini(&fx);
	a->cpu_ns = (double)(t1 - t0) / (double)a->n;
	return NULL;
}

/*
 * One run of row o on t threads at once: each thread's CPU ns per op into
 * cpu[0 .. t-1], the wall ns per op of them all into *wall.  Thread k runs
 * on the k-th of the CPUs this program may use, round robin, so that every
 * row places its threads alike.
 */
static void scale_once(size_t o, unsigned t, uint64_t n, otel_thread_ctx *const *own,
		       otel_thread_ctx *one, double *cpu, double *wall)
{
	const struct op *op = op_by_id(scale_ops[o].op);
	struct scale_arg args[MAX_SCALE_THREADS];
	pthread_t tids[MAX_SCALE_THREADS];
	pthread_barrier_t barrier;
	uint64_t first = UINT64_MAX, last = 0;
	int cpus = CPU_COUNT(&all_cpus);

	if (t > MAX_SCALE_THREADS)
		die("scaling: more than %d threads", MAX_SCALE_THREADS);
	pthread_barrier_init(&barrier, NULL, t + 1);
	for (unsigned k = 0; k < t; k++) {
		enum scale_ctx c = scale_ops[o].ctx;
		pthread_attr_t attr;

		args[k] = (struct scale_arg){op, c, c == SCALE_OWN ? own[k] : c == SCALE_ONE ? one : NULL,
					     n, &barrier, 0, 0, 0};
		pthread_attr_init(&attr);
		if (pinned_cpu >= 0 && cpus > 0) {
			cpu_set_t set;
			int want = (int)(k % (unsigned)cpus);

			CPU_ZERO(&set);
			for (int c2 = 0; c2 < CPU_SETSIZE; c2++)
				if (CPU_ISSET(c2, &all_cpus) && want-- == 0) {
					CPU_SET(c2, &set);
					break;
				}
			pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
		}
		if (pthread_create(&tids[k], &attr, scale_thread, &args[k]) != 0)
			die("pthread_create failed");
		pthread_attr_destroy(&attr);
	}
	pthread_barrier_wait(&barrier);
	for (unsigned k = 0; k < t; k++)
		pthread_join(tids[k], NULL);
	pthread_barrier_destroy(&barrier);
	/* From the first thread's start to the last one's end: the threads'
	 * own clocks, since this one may be scheduled late. */
	for (unsigned k = 0; k < t; k++) {
		cpu[k] = args[k].cpu_ns;
		first = args[k].start < first ? args[k].start : first;
		last = args[k].end > last ? args[k].end : last;
	}
	*wall = (double)(last - first) / ((double)n * t);
}

/* Every row at 1, 2, 8 and 64 threads; at each count, the repetitions of
 * all rows interleaved, as in the operations table. */
void run_scaling(void)
{
	/* The contexts of each SCALE_OWN row; its SCALE_ONE row gives the
	 * first of them to every thread.  At one thread the two rows run on
	 * the same context. */
	static otel_thread_ctx *alike[N_SCALE_OPS][MAX_SCALE_THREADS];
	double *cpu[N_SCALE_OPS], *wall[N_SCALE_OPS], dummy;
	uint64_t n[N_SCALE_OPS];

	for (size_t o = 0; o < N_SCALE_OPS; o++) {
		const struct op *op = op_by_id(scale_ops[o].op);

		n[o] = (uint64_t)((double)op->iters * opt.scale_ms / opt.rep_ms) + 1;
		if (scale_ops[o].ctx == SCALE_OWN)
			make_ctxs_alike(alike[o], MAX_SCALE_THREADS, op->attrs);
	}
	for (size_t s = 0; s < N_SCALE; s++) {
		unsigned t = scale_threads[s];

		for (size_t o = 0; o < N_SCALE_OPS; o++) {
			cpu[o] = calloc((size_t)t * opt.scale_reps, sizeof(double));
			wall[o] = calloc(opt.scale_reps, sizeof(double));
			if (cpu[o] == NULL || wall[o] == NULL)
				die("out of memory");
		}
		for (unsigned r = 0; r < opt.scale_reps; r++)
			for (size_t o = 0; o < N_SCALE_OPS; o++)
				scale_once(o, t, n[o], alike[o],
					   scale_ops[o].ctx == SCALE_ONE ? alike[scale_ops[o].versus][0]
									 : NULL,
					   &cpu[o][(size_t)r * t], &wall[o][r]);
		for (size_t o = 0; o < N_SCALE_OPS; o++) {
			summarize(cpu[o], (size_t)t * opt.scale_reps, &scaling[o][s].cpu_median,
				  &dummy, &scaling[o][s].cpu_max, &dummy, &dummy);
			summarize(wall[o], opt.scale_reps, &scaling[o][s].wall, &dummy, &dummy,
				  &dummy, &dummy);
			free(cpu[o]);
			free(wall[o]);
		}
	}
	for (size_t o = 0; o < N_SCALE_OPS; o++)
		for (unsigned k = 0; k < MAX_SCALE_THREADS; k++)
			otel_thread_ctx_destroy(alike[o][k]);
	scaling_done = true;
}
