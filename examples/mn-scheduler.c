/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An M:N scheduler: many user-level tasks run on a few worker threads, and
 * each task publishes its own trace context with otel-thread-ctx on
 * whichever thread runs it, so that a profiler sampling a thread sees the
 * task running there, not the thread.
 *
 * Tasks are small state machines: a task runs one step at a time, on the
 * worker that took it from the run queue, and goes back to the queue after
 * each step, so it moves from worker to worker.  Request tasks each carry a
 * context of their own and change what they publish as they go (child
 * spans, a late sampling decision, a new request); batch tasks work for one
 * of two jobs and all publish the job's context.  Runs for the given number
 * of seconds (or until SIGINT or SIGTERM) and prints what the workers did.
 *
 *   usage: mn-scheduler [workers] [tasks] [seconds]
 *
 * and, from another shell:  otel-thread-ctx-inspect PID
 *
 * The runtime's contract with the library
 * ---------------------------------------
 * 1. A task carries its context as a value: an otel_thread_ctx created with
 *    the task (otel_thread_ctx_create_with(), sized to the attributes the
 *    task publishes: 61 bytes instead of 640) and destroyed with it.  No
 *    thread holds it or points into it.
 * 2. To run a step of a task, a worker publishes the task's context on its
 *    thread with otel_thread_ctx_update(): the library copies it into the
 *    thread's own record and publishes that with one store to the slot, so
 *    the thread goes from the record of the task it ran before straight to
 *    this one's.
 * 3. During the step, the task changes what its thread publishes with the
 *    calls that act on the calling thread's record (update_trace_flags,
 *    update_span_id, update_all) and with scopes (a span's parent saved with
 *    otel_thread_ctx_save() or attach(ctx, saved), put back with
 *    update(saved)).  A scope may begin on one worker and end on another:
 *    what it saved is a value the task carries.
 * 4. When the step ends, the worker copies what the thread publishes back
 *    into the task's context (otel_thread_ctx_save()), so the task takes
 *    its state along, and puts the task back in the run queue at once.  The
 *    thread goes on publishing the task's record until it publishes the
 *    next task's (or detaches, when the queue is empty).  Meanwhile another
 *    worker may take the task and publish it too: each thread publishes its
 *    own copy, and nothing refuses, waits or needs to be handed back.
 * 5. Tasks that publish the same thing (the tasks of one batch job) share
 *    one context, which any number of workers publish at once.  Nobody
 *    writes it after it is made, so it needs no lock; the runtime destroys
 *    it once, with the job.
 * 6. Each worker records which task it runs (`task`) and which one it ran
 *    last and may still publish (`last`): a task is named in one of them
 *    before its context is published and stays there until a publication
 *    replaces it, in that program order (signal fences).  A signal-handler
 *    sampler, which runs on the interrupted worker, can then check that a
 *    record it finds belongs to one of these two tasks (tests/mn/ does
 *    exactly that).
 *
 * What the tasks publish
 * ----------------------
 * The ids here are derived from task numbers, so that whoever reads them
 * (otel-thread-ctx-inspect, the tests in tests/mn/) can tell whose record it
 * sees; a tracer uses random ids.  Numbers are big-endian.
 *
 *   request task T (T % 3 != 2), its request R = 1, 2, 3 ...:
 *     trace id    "task", T (4 bytes), R (8 bytes)
 *     span id     R (low 4 bytes), T (2 bytes), S (2 bytes): S = 1 for the
 *                 request's root span, 2 and 3 for its two child spans
 *     trace flags 0 until the sampling decision, then 1 if (T + R) % 4 != 0
 *     attributes  task.name "task-T", request.round "R" (decimal)
 *   batch task T (T % 3 == 2) publishes its job J = (T / 3) % 2:
 *     trace id    "job ", J (4 bytes), 8 zero bytes
 *     span id     J + 1 (8 bytes)
 *     trace flags 1
 *     attributes  job.name "job-J"
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <otel_thread_ctx_process.h>
#include <otel_thread_ctx.h>

#define MAX_WORKERS 64u
#define MAX_TASKS 10000u
#define JOBS 2u

/* An attribute entry takes 2 bytes (key, length) and its value. */
#define ENTRY(value_len) (2u + (value_len))
#define TASK_NAME_MAX (sizeof("task-9999") - 1)
#define ROUND_MAX 20u /* decimal digits of a uint64_t */

/* A request's steps; each runs as one slice on some worker. */
enum request_state {
	DECIDE,     /* the sampling decision arrives */
	DB_QUERY,   /* child span 2 */
	DB_DONE,    /* back to the root span */
	CACHE,      /* child span 3 */
	CACHE_DONE, /* back to the root span */
	RESPOND,    /* the request ends; the next one arrives */
};

struct scheduler;
struct worker;

struct job {
	unsigned number;
	otel_thread_ctx *ctx; /* shared by the job's tasks; never written again */
	unsigned tasks;
};

struct task {
	unsigned number;
	/* The step callback: request_step or batch_step. */
	void (*step)(struct task *t);
	/* What the task publishes (request tasks), or NULL: written only by
	 * the worker that holds the task (the run queue orders one worker's
	 * writes before the next one's reads). */
	otel_thread_ctx *ctx;
	/* The span a child span returns to (request tasks), or NULL. */
	otel_thread_ctx *parent;
	struct job *job; /* its job (batch tasks), or NULL */
	/* How many workers publish the task's record now (atomic): more than
	 * one while a worker that let the task go has not published another
	 * record yet and another one runs it. */
	unsigned shown;
	/* The rest is the task's own, used by the worker that holds it. */
	enum request_state state;
	uint64_t round;
	unsigned last_worker;
	unsigned long steps, migrations;
	uint64_t work;
};

struct worker {
	struct scheduler *sched;
	unsigned id; /* 1, 2, ... */
	pthread_t thread;
	/* Contract, point 6 (atomic: the worker's own signal handler reads
	 * them): the task it runs, and the task whose record it may still
	 * publish after the task went back to the queue. */
	struct task *task, *last;
	unsigned long steps, switches, idle;
	/* Tasks it resumed while the worker they left still published them. */
	unsigned long overlaps;
};

/*
 * The run queue: a bounded multi-producer, multi-consumer FIFO of ready
 * tasks (Dmitry Vyukov's array queue).  Each cell's sequence number says
 * whether it is free for the push at position `pos` (seq == pos) or holds
 * the task pushed there (seq == pos + 1); a push or a pop claims its
 * position with one compare-and-swap.  A task is in the queue or held by
 * one worker, never both, so with a cell per task it never fills.
 */
struct runq_cell {
	size_t seq; /* atomic */
	struct task *task;
};

struct runq {
	struct runq_cell *cells;
	size_t mask;
	size_t head, tail; /* atomic: the next positions to pop and to push */
};


struct scheduler {
	unsigned nworkers, ntasks, njobs;
	struct worker *workers;
	struct task *tasks;
	struct job jobs[JOBS];
	struct runq runq;
	int stopping;          /* atomic */
	unsigned started;      /* atomic: workers that have named their thread */
	unsigned key_task, key_round, key_job;
	struct timespec began;
};

/* The worker the calling thread is, NULL on other threads: what a
 * signal-handler sampler reads to know which worker it interrupted. */
static _Thread_local struct worker *current_worker;

static void fail(const char *what)
{
	fprintf(stderr, "mn-scheduler: %s\n", what);
	exit(1);
}

static void check(const char *what, int rc)
{
	if (rc != OTEL_THREAD_CTX_OK) {
		fprintf(stderr, "mn-scheduler: %s: %s\n", what, otel_thread_ctx_strerror(rc));
		exit(1);
	}
}

static void put_be(uint8_t *out, uint64_t v, unsigned bytes)
{
	for (unsigned i = 0; i < bytes; i++)
		out[i] = (uint8_t)(v >> (8 * (bytes - 1 - i)));
}

/* ---- the run queue ------------------------------------------------------ */

static void runq_init(struct runq *q, unsigned tasks)
{
	size_t cap = 1;

	while (cap < tasks)
		cap *= 2;
	q->cells = calloc(cap, sizeof(*q->cells));
	if (q->cells == NULL)
		fail("out of memory");
	for (size_t i = 0; i < cap; i++)
		q->cells[i].seq = i;
	q->mask = cap - 1;
	q->head = q->tail = 0;
}

static void runq_push(struct runq *q, struct task *t)
{
	size_t pos = __atomic_load_n(&q->tail, __ATOMIC_RELAXED);
	struct runq_cell *c;

	for (;;) {
		size_t seq;

		c = &q->cells[pos & q->mask];
		seq = __atomic_load_n(&c->seq, __ATOMIC_ACQUIRE);
		if (seq == pos) {
			if (__atomic_compare_exchange_n(&q->tail, &pos, pos + 1, 1, __ATOMIC_RELAXED,
							__ATOMIC_RELAXED))
				break;
		} else {
			/* Another push took `pos` (or, if the queue were
			 * full, a pop has not freed the cell yet). */
			pos = __atomic_load_n(&q->tail, __ATOMIC_RELAXED);
		}
	}
	c->task = t;
	__atomic_store_n(&c->seq, pos + 1, __ATOMIC_RELEASE);
}

/* The oldest ready task, or NULL when there is none. */
static struct task *runq_pop(struct runq *q)
{
	size_t pos = __atomic_load_n(&q->head, __ATOMIC_RELAXED);
	struct runq_cell *c;
	struct task *t;

	for (;;) {
		size_t seq;

		c = &q->cells[pos & q->mask];
		seq = __atomic_load_n(&c->seq, __ATOMIC_ACQUIRE);
		if (seq == pos + 1) {
			if (__atomic_compare_exchange_n(&q->head, &pos, pos + 1, 1, __ATOMIC_RELAXED,
							__ATOMIC_RELAXED))
				break;
		} else if ((ptrdiff_t)(seq - (pos + 1)) < 0) {
			return NULL; /* nothing pushed at `pos` yet: empty */
		} else {
			pos = __atomic_load_n(&q->head, __ATOMIC_RELAXED);
		}
	}
	t = c->task;
	__atomic_store_n(&c->seq, pos + q->mask + 1, __ATOMIC_RELEASE);
	return t;
}

/* ---- what the tasks publish ---------------------------------------------- */

static void request_ids(const struct task *t, uint64_t round, unsigned span,
			uint8_t trace_id[16], uint8_t span_id[8])
{
	memcpy(trace_id, "task", 4);
	put_be(trace_id + 4, t->number, 4);
	put_be(trace_id + 8, round, 8);
	put_be(span_id, round & 0xffffffffu, 4);
	put_be(span_id + 4, t->number, 2);
	put_be(span_id + 6, span, 2);
}

static uint8_t sampled(const struct task *t)
{
	return (t->number + t->round) % 4 != 0 ? 1 : 0;
}

/* The attributes of request `round` of task t; `value` holds their text. */
static void request_attrs(const struct scheduler *s, const struct task *t, uint64_t round,
			  char value[TASK_NAME_MAX + 1 + ROUND_MAX + 1],
			  struct otel_thread_ctx_attr attrs[2])
{
	int name = snprintf(value, TASK_NAME_MAX + 1, "task-%u", t->number);
	int digits = snprintf(value + name, ROUND_MAX + 1, "%llu", (unsigned long long)round);

	attrs[0].key = s->key_task;
	attrs[0].len = (unsigned)name;
	attrs[0].value = (const uint8_t *)value;
	attrs[1].key = s->key_round;
	attrs[1].len = (unsigned)digits;
	attrs[1].value = (const uint8_t *)value + name;
}

/* ---- the tasks ----------------------------------------------------------- */

/* Some work in every step, so that samplers often find a task running. */
static void work(struct task *t)
{
	uint64_t x = t->work | 1;

	for (int i = 0; i < 500; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
	}
	t->work = x;
}

/* One step of a request task.  The worker publishes the task's record:
 * each change below is published at once, with one store, and touches
 * nothing but this thread's record. */
static void request_step(struct task *t)
{
	struct scheduler *s = current_worker->sched;
	uint8_t trace_id[16], span_id[8];
	struct otel_thread_ctx_attr attrs[2];
	char value[TASK_NAME_MAX + 1 + ROUND_MAX + 1];

	work(t);
	switch (t->state) {
	case DECIDE:
		/* The sampling decision arrives after the root span was
		 * published: one call changes the published flags. */
		check("update_trace_flags", otel_thread_ctx_update_trace_flags(sampled(t)));
		t->state = DB_QUERY;
		break;
	case DB_QUERY:
		/* A child span.  What the parent publishes is kept, as a
		 * value, to go back to; the child span may well end on
		 * another worker. */
		check("save", otel_thread_ctx_save(t->parent));
		request_ids(t, t->round, 2, trace_id, span_id);
		check("update_span_id", otel_thread_ctx_update_span_id(span_id));
		t->state = DB_DONE;
		break;
	case DB_DONE:
	case CACHE_DONE:
		/* The child span ends: exactly what the parent published. */
		check("update", otel_thread_ctx_update(t->parent));
		t->state = t->state == DB_DONE ? CACHE : RESPOND;
		break;
	case CACHE:
		/* Another child span, as a scope on a context: the task's own
		 * context holds what this thread publishes (the worker
		 * published it at the start of this step); the child differs
		 * in its span id, and attach keeps the parent in `parent`. */
		request_ids(t, t->round, 3, trace_id, span_id);
		check("set_span_id", otel_thread_ctx_set_span_id(t->ctx, span_id));
		check("attach", otel_thread_ctx_attach(t->ctx, t->parent));
		t->state = CACHE_DONE;
		break;
	case RESPOND:
		/* The request ends and the next one arrives: new ids, no
		 * sampling decision yet, new attributes, in one call. */
		t->round++;
		request_ids(t, t->round, 1, trace_id, span_id);
		request_attrs(s, t, t->round, value, attrs);
		check("update_all", otel_thread_ctx_update_all(trace_id, span_id, 0, attrs, 2));
		t->state = DECIDE;
		break;
	}
}

/* One step of a batch task: its job's context says all there is to say;
 * the work is all it does. */
static void batch_step(struct task *t)
{
	work(t);
}

/* The context a worker publishes to run t. */
static const otel_thread_ctx *task_ctx(const struct task *t)
{
	return t->job != NULL ? t->job->ctx : t->ctx;
}

/* ---- the workers ---------------------------------------------------------- */

static void set_task(struct task **field, struct task *t)
{
	__atomic_store_n(field, t, __ATOMIC_RELAXED);
}

/* `t` stops being published by this thread: its count drops. */
static void let_go(struct task *t)
{
	__atomic_fetch_sub(&t->shown, 1, __ATOMIC_RELAXED);
}

/*
 * Publishes the context of t, taken from the run queue, on this thread, in
 * place of the record of the task it ran last (if any, and if not t).
 */
static void resume(struct worker *w, struct task *t)
{
	struct task *last = w->last;

	/* Whether the task is still published where it ran before is no
	 * concern of the library's: it only says so in the summary. */
	if (t != last && __atomic_fetch_add(&t->shown, 1, __ATOMIC_RELAXED) != 0)
		w->overlaps++;
	/* Named before anything shows it ... */
	set_task(&w->task, t);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	check("update", otel_thread_ctx_update(task_ctx(t)));
	/* ... and the task it replaced forgotten only after. */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	set_task(&w->last, NULL);
	if (last != NULL && last != t)
		let_go(last);
	if (t->last_worker != 0 && t->last_worker != w->id)
		t->migrations++;
	t->last_worker = w->id;
	w->switches++;
}

/*
 * The step of t is over: t takes what this thread publishes along (its
 * own context), and goes back to the run queue.  The thread publishes t's
 * record until resume() or go_idle() replaces it, whoever runs t by then.
 */
static void suspend(struct worker *w, struct task *t)
{
	if (t->job == NULL)
		check("save", otel_thread_ctx_save(t->ctx));
	set_task(&w->last, t);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	set_task(&w->task, NULL);
	runq_push(&w->sched->runq, t);
}

/* Nothing is ready: this thread publishes nothing any more. */
static void go_idle(struct worker *w)
{
	struct task *last = w->last;

	if (last == NULL)
		return;
	check("detach", otel_thread_ctx_detach(NULL));
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	set_task(&w->last, NULL);
	let_go(last);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct scheduler *s = w->sched;
	char name[16];

	current_worker = w;
	snprintf(name, sizeof(name), "mn-worker-%u", w->id);
	pthread_setname_np(pthread_self(), name);
	__atomic_fetch_add(&s->started, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&s->stopping, __ATOMIC_RELAXED)) {
		struct task *t = runq_pop(&s->runq);

		if (t == NULL) {
			go_idle(w);
			w->idle++;
			sched_yield();
			continue;
		}
		resume(w, t);
		t->step(t);
		t->steps++;
		w->steps++;
		suspend(w, t);
	}
	go_idle(w);
	return NULL;
}

/* ---- the scheduler -------------------------------------------------------- */

static void create_job(struct scheduler *s, struct job *j, unsigned number)
{
	/* Sized to exactly what it holds: one attribute. */
	struct otel_thread_ctx_options options = OTEL_THREAD_CTX_OPTIONS_INIT;
	uint8_t trace_id[16] = { 'j', 'o', 'b', ' ' }, span_id[8];
	char name[16];

	j->number = number;
	snprintf(name, sizeof(name), "job-%u", number);
	put_be(trace_id + 4, number, 4);
	put_be(span_id, number + 1, 8);
	options.attrs_capacity = ENTRY((unsigned)strlen(name));
	check("create_with", otel_thread_ctx_create_with(&j->ctx, &options));
	check("set_ids", otel_thread_ctx_set_ids(j->ctx, trace_id, span_id, 1));
	check("set_attr", otel_thread_ctx_set_attr(j->ctx, s->key_job, name, strlen(name)));
}

static void create_task(struct scheduler *s, struct task *t, unsigned number)
{
	t->number = number;
	if (number % 3 == 2) {
		struct job *j = &s->jobs[(number / 3) % JOBS];

		if (j->ctx == NULL) {
			create_job(s, j, (number / 3) % JOBS);
			s->njobs++;
		}
		j->tasks++;
		t->job = j;
		t->step = batch_step;
	} else {
		/* Sized to the task's two attributes at their longest. */
		struct otel_thread_ctx_options options = OTEL_THREAD_CTX_OPTIONS_INIT;
		uint8_t trace_id[16], span_id[8];
		struct otel_thread_ctx_attr attrs[2];
		char value[TASK_NAME_MAX + 1 + ROUND_MAX + 1];

		options.attrs_capacity = ENTRY(TASK_NAME_MAX) + ENTRY(ROUND_MAX);
		check("create_with", otel_thread_ctx_create_with(&t->ctx, &options));
		check("create_with", otel_thread_ctx_create_with(&t->parent, &options));
		/* Its first request: published when a worker first runs it. */
		t->round = 1;
		request_ids(t, t->round, 1, trace_id, span_id);
		request_attrs(s, t, t->round, value, attrs);
		check("set_ids", otel_thread_ctx_set_ids(t->ctx, trace_id, span_id, 0));
		check("set_attrs", otel_thread_ctx_set_attrs(t->ctx, attrs, 2));
		t->state = DECIDE;
		t->step = request_step;
	}
}

/* Creates the tasks, all ready, and the workers' records; starts nothing. */
static void scheduler_init(struct scheduler *s, unsigned workers, unsigned tasks)
{
	memset(s, 0, sizeof(*s));
	s->nworkers = workers;
	s->ntasks = tasks;
	/* Start-up work (a lock): the keys the records use. */
	check("key_register", otel_thread_ctx_key_register("task.name", &s->key_task));
	check("key_register", otel_thread_ctx_key_register("request.round", &s->key_round));
	check("key_register", otel_thread_ctx_key_register("job.name", &s->key_job));
	s->tasks = calloc(tasks, sizeof(*s->tasks));
	s->workers = calloc(workers, sizeof(*s->workers));
	if (s->tasks == NULL || s->workers == NULL)
		fail("out of memory");
	runq_init(&s->runq, tasks);
	for (unsigned i = 0; i < tasks; i++) {
		create_task(s, &s->tasks[i], i);
		runq_push(&s->runq, &s->tasks[i]);
	}
	for (unsigned i = 0; i < workers; i++) {
		s->workers[i].sched = s;
		s->workers[i].id = i + 1;
	}
}

/* Starts the workers; returns once each has named its thread, so that
 * whoever looks at the process from now on finds every worker named. */
static void scheduler_run(struct scheduler *s)
{
	clock_gettime(CLOCK_MONOTONIC, &s->began);
	for (unsigned i = 0; i < s->nworkers; i++)
		if (pthread_create(&s->workers[i].thread, NULL, worker_main, &s->workers[i]) != 0)
			fail("pthread_create failed");
	while (__atomic_load_n(&s->started, __ATOMIC_ACQUIRE) < s->nworkers)
		sched_yield();
}

static void scheduler_start(struct scheduler *s, unsigned workers, unsigned tasks)
{
	scheduler_init(s, workers, tasks);
	scheduler_run(s);
}

/* Stops the workers (each detaches).  Returns how long they ran, in
 * seconds. */
static double scheduler_stop(struct scheduler *s)
{
	struct timespec now;

	__atomic_store_n(&s->stopping, 1, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < s->nworkers; i++)
		pthread_join(s->workers[i].thread, NULL);
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - s->began.tv_sec) +
	       (double)(now.tv_nsec - s->began.tv_nsec) / 1e9;
}

static void scheduler_summary(const struct scheduler *s, double seconds, FILE *out)
{
	unsigned long requests = 0, request_steps = 0, batch_steps = 0, migrations = 0;
	unsigned long overlaps = 0;
	unsigned nbatch = 0;

	fprintf(out, "mn-scheduler: %u workers ran %u tasks for %.2f s\n", s->nworkers, s->ntasks,
		seconds);
	for (unsigned i = 0; i < s->nworkers; i++) {
		const struct worker *w = &s->workers[i];

		fprintf(out, "  worker %u: %lu steps, %lu task switches, %lu times idle\n", w->id,
			w->steps, w->switches, w->idle);
		overlaps += w->overlaps;
	}
	for (unsigned i = 0; i < s->ntasks; i++) {
		const struct task *t = &s->tasks[i];

		migrations += t->migrations;
		if (t->job != NULL) {
			nbatch++;
			batch_steps += t->steps;
		} else {
			requests += t->round - 1;
			request_steps += t->steps;
		}
	}
	fprintf(out, "  %u request tasks, each with its own context: %lu steps, %lu requests done\n",
		s->ntasks - nbatch, request_steps, requests);
	fprintf(out, "  %u batch tasks sharing %u job contexts: %lu steps\n", nbatch, s->njobs,
		batch_steps);
	fprintf(out, "  %lu steps ran on another worker than the task's step before\n", migrations);
	fprintf(out, "  %lu times a task resumed while the worker it left still published it\n",
		overlaps);
}

/* Destroys the contexts (whatever threads publish) and frees the rest. */
static void scheduler_free(struct scheduler *s)
{
	for (unsigned i = 0; i < s->ntasks; i++) {
		otel_thread_ctx_destroy(s->tasks[i].ctx);
		otel_thread_ctx_destroy(s->tasks[i].parent);
	}
	for (unsigned j = 0; j < JOBS; j++)
		otel_thread_ctx_destroy(s->jobs[j].ctx);
	free(s->tasks);
	free(s->workers);
	free(s->runq.cells);
}

#ifndef MN_SCHEDULER_NO_MAIN
static int usage(void)
{
	fprintf(stderr, "usage: mn-scheduler [workers 1-%u] [tasks 1-%u] [seconds]\n",
		MAX_WORKERS, MAX_TASKS);
	return 2;
}

/* Waits `seconds`, or until SIGINT or SIGTERM (blocked in every thread). */
static void wait_for(const sigset_t *stop, double seconds)
{
	struct timespec end, now, left;

	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += (time_t)seconds;
	end.tv_nsec += (long)((seconds - (double)(time_t)seconds) * 1e9);
	if (end.tv_nsec >= 1000000000L) {
		end.tv_sec++;
		end.tv_nsec -= 1000000000L;
	}
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > end.tv_sec || (now.tv_sec == end.tv_sec && now.tv_nsec >= end.tv_nsec))
			return;
		left.tv_sec = end.tv_sec - now.tv_sec;
		left.tv_nsec = end.tv_nsec - now.tv_nsec;
		if (left.tv_nsec < 0) {
			left.tv_sec--;
			left.tv_nsec += 1000000000L;
		}
		if (sigtimedwait(stop, NULL, &left) > 0)
			return;
	}
}

int main(int argc, char **argv)
{
	unsigned long workers = argc > 1 ? strtoul(argv[1], NULL, 10) : 3;
	unsigned long tasks = argc > 2 ? strtoul(argv[2], NULL, 10) : 16;
	double seconds = argc > 3 ? strtod(argv[3], NULL) : 2.0;
	struct otel_thread_ctx_process_attr resource[] = {
		{ "service.name", OTEL_THREAD_CTX_PROCESS_STRING, "mn-scheduler", 0, 0, 0.0, 0 },
	};
	static struct scheduler s;
	sigset_t stop;

	if (argc > 4 || workers == 0 || workers > MAX_WORKERS || tasks == 0 || tasks > MAX_TASKS ||
	    !(seconds > 0 && seconds < 1e6))
		return usage();
	/* SIGINT and SIGTERM end the run early; the workers inherit the
	 * mask, so only wait_for() takes them. */
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);

	scheduler_start(&s, (unsigned)workers, (unsigned)tasks);
	/* The process context names the attribute keys for readers outside
	 * (registered by scheduler_start()). */
	check("process_publish", otel_thread_ctx_process_publish(resource, 1));
	printf("mn-scheduler: pid %d, %u workers, %u tasks, %g s\n", (int)getpid(), s.nworkers,
	       s.ntasks, seconds);
	fflush(stdout);
	wait_for(&stop, seconds);
	seconds = scheduler_stop(&s);
	otel_thread_ctx_process_unpublish();
	scheduler_summary(&s, seconds, stdout);
	scheduler_free(&s);
	return 0;
}
#endif
