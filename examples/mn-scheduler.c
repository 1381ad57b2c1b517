/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An M:N scheduler: many user-level tasks run on a few worker threads, and
 * each task publishes its own trace context with otel-thread-ctx on
 * whichever thread runs it, so that a profiler sampling a thread sees the
 * task running there, not the thread.
 *
 * Tasks are small state machines: a task runs one step at a time, on the
 * worker that took it from the run queue, and goes back to the queue after
 * each step, so it moves from worker to worker.  Request tasks each hold a
 * context of their own and change it as they go (child spans, a late
 * sampling decision, a new request); batch tasks work for one of two jobs
 * and share the job's frozen context.  Runs for the given number of seconds
 * (or until SIGINT or SIGTERM) and prints what the workers did.
 *
 *   usage: mn-scheduler [workers] [tasks] [seconds]
 *
 * and, from another shell:  otel-thread-ctx-inspect PID
 *
 * The runtime's contract with the library
 * ---------------------------------------
 * 1. A context belongs to a task, not to a thread.  The runtime creates it
 *    with the task (otel_thread_ctx_create_with(), sized to the attributes
 *    the task publishes: 61 bytes a record here instead of 640) and
 *    destroys it with the task.  It is not FREE_WITH_THREAD: threads only
 *    borrow it.
 * 2. Before a worker runs a step of a task, it publishes the task's context
 *    on its thread with otel_thread_ctx_update_attach().  update_attach,
 *    not attach: a task may have edited its context while it was not
 *    running (here: the next request's ids, written when the last one
 *    ended), and update_attach commits those edits and publishes the
 *    context in one store to the slot, where attach would refuse them
 *    (EPENDING).  Given the context of the task the worker ran before, it
 *    also withdraws that one in the same store: the thread goes from one
 *    task's record straight to the next one's.
 * 3. While the step runs, the context is attached to the worker's thread,
 *    so the task's own changes (otel_thread_ctx_update_span_id(),
 *    otel_thread_ctx_update_trace_flags()) are published at once, each with
 *    one store.
 * 4. A task goes back to the run queue only after its context is withdrawn
 *    from the thread (by the update_attach of the next task, or
 *    otel_thread_ctx_detach() when there is none): an attached context
 *    belongs to its thread, and another worker could neither attach nor
 *    edit it (EBUSY).  The library hands the withdrawn context back; the
 *    worker checks it is the one it published.
 * 5. Tasks that publish the same thing (the tasks of one batch job) may
 *    share one context, frozen with otel_thread_ctx_freeze(): any number of
 *    threads may publish it at once, and each attach takes a reference the
 *    detach drops.  It cannot change any more, and it names the job, not
 *    the task.  The runtime destroys it once, when no task uses it.
 * 6. Each task records which worker runs it (running_on), set before its
 *    context is published and cleared only after it is withdrawn, in that
 *    program order (signal fences).  A signal-handler sampler of the
 *    process, which runs on the interrupted worker, can then check that a
 *    record it finds belongs to a task running on that very thread
 *    (tests/mn/ does exactly that).
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
	otel_thread_ctx *ctx; /* frozen, shared by the job's tasks */
	unsigned tasks;
};

struct task {
	unsigned number;
	/* The step callback: request_step or batch_step. */
	void (*step)(struct task *t);
	otel_thread_ctx *ctx; /* its own context (request tasks), or NULL */
	struct job *job;      /* its job (batch tasks), or NULL */
	/*
	 * The worker (1, 2, ...) that publishes the task's context, 0 when
	 * none: set before the context is published and cleared after it is
	 * withdrawn (contract, point 6).  Atomic: a sampler on another worker
	 * may look at it.
	 */
	unsigned running_on;
	/* The rest is the task's own, used by the worker that holds it
	 * (the run queue orders one worker's writes before the next one's
	 * reads). */
	enum request_state state;
	uint64_t round;
	struct otel_thread_ctx_record parent; /* the root span, to return to */
	unsigned last_worker;
	unsigned long steps, migrations;
	uint64_t work;
};

struct worker {
	struct scheduler *sched;
	unsigned id; /* 1, 2, ... */
	pthread_t thread;
	unsigned long steps, switches, idle;
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
	int stopping; /* atomic */
	unsigned key_task, key_round, key_job;
	struct timespec started;
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

/*
 * Writes request `round` into the draft of the task's context: root span,
 * no sampling decision yet, its round number.  Not committed: whoever
 * publishes the context next (update_attach) publishes this.
 */
static void start_request(struct scheduler *s, struct task *t, uint64_t round)
{
	uint8_t trace_id[16], span_id[8];
	char value[ROUND_MAX + 1];

	t->round = round;
	request_ids(t, round, 1, trace_id, span_id);
	check("set_ids", otel_thread_ctx_set_ids(t->ctx, trace_id, span_id, 0));
	/* Replaced in place: task.name stays first. */
	snprintf(value, sizeof(value), "%llu", (unsigned long long)round);
	check("set_attr", otel_thread_ctx_set_attr(t->ctx, s->key_round, value, strlen(value)));
	t->state = DECIDE;
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

/* One step of a request task.  Its context is attached to this thread:
 * each change is published at once, with one store. */
static void request_step(struct task *t)
{
	struct scheduler *s = current_worker->sched;
	uint8_t trace_id[16], span_id[8];

	work(t);
	switch (t->state) {
	case DECIDE:
		/* The sampling decision arrives after the root span was
		 * published: one call changes the published flags. */
		check("update_trace_flags", otel_thread_ctx_update_trace_flags(t->ctx, sampled(t)));
		t->state = DB_QUERY;
		break;
	case DB_QUERY:
		/* A child span.  Keep what the parent published, to return
		 * to it: committed() copies it back, without allocating. */
		check("committed", otel_thread_ctx_committed(t->ctx, &t->parent));
		request_ids(t, t->round, 2, trace_id, span_id);
		check("update_span_id", otel_thread_ctx_update_span_id(t->ctx, span_id));
		t->state = DB_DONE;
		break;
	case DB_DONE:
	case CACHE_DONE:
		/* The child span ends: the parent's span again. */
		check("update_span_id", otel_thread_ctx_update_span_id(t->ctx, t->parent.span_id));
		t->state = t->state == DB_DONE ? CACHE : RESPOND;
		break;
	case CACHE:
		request_ids(t, t->round, 3, trace_id, span_id);
		check("update_span_id", otel_thread_ctx_update_span_id(t->ctx, span_id));
		t->state = CACHE_DONE;
		break;
	case RESPOND:
		/* The request ends and the next one arrives.  Its ids go to
		 * the draft: published when a worker next runs the task. */
		start_request(s, t, t->round + 1);
		break;
	}
}

/* One step of a batch task: its job's context is frozen, so it publishes
 * nothing new; the work is all there is. */
static void batch_step(struct task *t)
{
	work(t);
}

/* The context a worker publishes while it runs t. */
static otel_thread_ctx *task_ctx(const struct task *t)
{
	return t->job != NULL ? t->job->ctx : t->ctx;
}

/* ---- the workers ---------------------------------------------------------- */

/*
 * Publishes the context of `to` on this thread instead of that of `from`
 * (NULL: none), then puts `from` back in the run queue.
 */
static void switch_to(struct worker *w, struct task *from, struct task *to)
{
	otel_thread_ctx *prev;

	/* `to` runs here from now on: say so before anything shows it. */
	__atomic_store_n(&to->running_on, w->id, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	/* One store: the thread goes from `from`'s record to `to`'s, with
	 * the edits `to` made while it was not running. */
	check("update_attach", otel_thread_ctx_update_attach(task_ctx(to), &prev));
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	/* The context handed back is `from`'s (for two tasks of one job, the
	 * same frozen context, which stays published). */
	if (prev != (from != NULL ? task_ctx(from) : NULL))
		fail("update_attach handed back another context");
	if (from != NULL) {
		/* No longer published here: another worker may take it. */
		__atomic_store_n(&from->running_on, 0, __ATOMIC_RELAXED);
		runq_push(&w->sched->runq, from);
	}
	if (to->last_worker != 0 && to->last_worker != w->id)
		to->migrations++;
	to->last_worker = w->id;
	w->switches++;
}

/* This thread publishes nothing any more; `t` goes back to the queue. */
static void withdraw(struct worker *w, struct task *t)
{
	otel_thread_ctx *prev;

	check("detach", otel_thread_ctx_detach(&prev));
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (prev != task_ctx(t))
		fail("detach handed back another context");
	__atomic_store_n(&t->running_on, 0, __ATOMIC_RELAXED);
	runq_push(&w->sched->runq, t);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct scheduler *s = w->sched;
	struct task *cur = NULL; /* the task whose context this thread publishes */
	char name[16];

	current_worker = w;
	snprintf(name, sizeof(name), "mn-worker-%u", w->id);
	pthread_setname_np(pthread_self(), name);
	while (!__atomic_load_n(&s->stopping, __ATOMIC_RELAXED)) {
		struct task *next = runq_pop(&s->runq);

		if (next == NULL) {
			/* Nothing else is ready: let the current task go,
			 * so that another worker may run it too. */
			if (cur != NULL)
				withdraw(w, cur);
			cur = NULL;
			w->idle++;
			sched_yield();
			continue;
		}
		switch_to(w, cur, next);
		cur = next;
		cur->step(cur);
		cur->steps++;
		w->steps++;
	}
	if (cur != NULL)
		withdraw(w, cur);
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
	/* Commits it: from now on, the same record for every thread. */
	check("freeze", otel_thread_ctx_freeze(j->ctx));
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
		char name[16];

		options.attrs_capacity = ENTRY(TASK_NAME_MAX) + ENTRY(ROUND_MAX);
		check("create_with", otel_thread_ctx_create_with(&t->ctx, &options));
		snprintf(name, sizeof(name), "task-%u", number);
		check("set_attr", otel_thread_ctx_set_attr(t->ctx, s->key_task, name, strlen(name)));
		start_request(s, t, 1);
		t->step = request_step;
	}
}

/* Creates the tasks and starts the workers. */
static void scheduler_start(struct scheduler *s, unsigned workers, unsigned tasks)
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
	clock_gettime(CLOCK_MONOTONIC, &s->started);
	for (unsigned i = 0; i < workers; i++) {
		s->workers[i].sched = s;
		s->workers[i].id = i + 1;
		if (pthread_create(&s->workers[i].thread, NULL, worker_main, &s->workers[i]) != 0)
			fail("pthread_create failed");
	}
}

/* Stops the workers (each withdraws its task) and destroys the contexts.
 * Returns how long the workers ran, in seconds. */
static double scheduler_stop(struct scheduler *s)
{
	struct timespec now;

	__atomic_store_n(&s->stopping, 1, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < s->nworkers; i++)
		pthread_join(s->workers[i].thread, NULL);
	clock_gettime(CLOCK_MONOTONIC, &now);
	/* Attached nowhere any more: each destroy frees. */
	for (unsigned i = 0; i < s->ntasks; i++)
		check("destroy", otel_thread_ctx_destroy(s->tasks[i].ctx));
	/* A frozen context is destroyed once, by its holder. */
	for (unsigned j = 0; j < JOBS; j++)
		check("destroy", otel_thread_ctx_destroy(s->jobs[j].ctx));
	return (double)(now.tv_sec - s->started.tv_sec) +
	       (double)(now.tv_nsec - s->started.tv_nsec) / 1e9;
}

static void scheduler_summary(const struct scheduler *s, double seconds, FILE *out)
{
	unsigned long requests = 0, request_steps = 0, batch_steps = 0, migrations = 0;
	unsigned nbatch = 0;

	fprintf(out, "mn-scheduler: %u workers ran %u tasks for %.2f s\n", s->nworkers, s->ntasks,
		seconds);
	for (unsigned i = 0; i < s->nworkers; i++) {
		const struct worker *w = &s->workers[i];

		fprintf(out, "  worker %u: %lu steps, %lu task switches, %lu times idle\n", w->id,
			w->steps, w->switches, w->idle);
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
	fprintf(out, "  %u batch tasks sharing %u frozen contexts: %lu steps\n", nbatch, s->njobs,
		batch_steps);
	fprintf(out, "  %lu steps ran on another worker than the task's step before\n", migrations);
}

static void scheduler_free(struct scheduler *s)
{
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
