/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The scheduler of examples/mn-scheduler.c (compiled in here, without its
 * main()), sampled from inside, the way a signal-handler profiler does.
 *
 * First a hand-over, step by step on two threads that play workers 1 and
 * 2 with the example's own functions: worker 1 runs a step of a task and
 * puts it back in the queue while its thread still publishes it; worker 2
 * takes the task and publishes it at once (the case an owned context used
 * to refuse); both threads then publish the task, each its own copy, and
 * what worker 2 changes (a child span) leaves worker 1's record as it was;
 * worker 1 takes the task back and publishes where worker 2 left it.
 *
 * Then the storm: the main thread sends SIGPROF to the workers, over and
 * over, while tasks move between them; the handler, on the interrupted
 * worker, reads otel_thread_ctx_v1 and checks that what it finds names the
 * task that worker runs, or the task it ran last and has not replaced yet
 * (the example's contract, point 6), never another task.
 *
 * The check is exact.  A worker names a task (in its `task` field) before
 * it publishes the task's context and keeps it named (in `last`) until a
 * publication replaces it (signal fences keep that program order), and
 * only the worker writes those fields.  The handler runs on the worker,
 * between two of its instructions, so it sees the worker's own stores
 * exactly as far as the worker got.  A sample passes when the slot is
 * NULL, or when its record is exactly the record of one task (mn-record.h)
 * that the worker names, or of a job one of whose tasks the worker names.
 * Anything else is a failure: a record not of one task and step (torn,
 * mixed), or the record of a task that this worker neither runs nor ran
 * last.
 *
 *   OTEL_TEST_SIGNALS   samples to take (100,000; fewer under valgrind,
 *                       qemu and the sanitizers)
 */
#define MN_SCHEDULER_NO_MAIN
#include "mn-scheduler.c"

#include <errno.h>
#include <semaphore.h>

#include "check-lite.h"
#include "mn-record.h"
#include "testenv.h"

#define WORKERS 3u
#define TASKS 16u

static struct scheduler sched;

/* ---- the hand-over ---------------------------------------------------------- */

static struct scheduler hand;
static sem_t turn[2];
/* Worker 1's record while worker 2 runs the task, and a copy of it. */
static const struct otel_thread_ctx_record *kept;
static struct otel_thread_ctx_record kept_copy;

static struct mn_keys keys_of(const struct scheduler *s)
{
	struct mn_keys k = { s->key_task, s->key_round, s->key_job };

	return k;
}

/* The calling thread publishes exactly the record of task 0 at request 1,
 * span `span`, with flags `flags`. */
static void check_task0(const char *who, unsigned span, uint8_t flags)
{
	const struct otel_thread_ctx_record *r = otel_thread_ctx_v1;
	struct mn_keys keys = keys_of(&hand);
	struct mn_who w;

	ck_assert_msg(r != NULL, "%s: the thread publishes nothing", who);
	ck_assert_msg(mn_identify(r, &keys, &w), "%s: not the record of one task or job", who);
	ck_assert_msg(w.kind == MN_TASK && w.number == 0 && w.round == 1 && w.span == span &&
	      r->trace_flags == flags,
	      "%s: task %u, request %llu, span %u, flags %u; expected task 0, request 1, "
	      "span %u, flags %u", who, w.number, (unsigned long long)w.round, w.span,
	      r->trace_flags, span, flags);
}

static void wait_turn(int me)
{
	while (sem_wait(&turn[me]) != 0)
		ck_assert_msg(errno == EINTR, "sem_wait: %s", strerror(errno));
}

static void *hand_worker1(void *arg)
{
	struct worker *w = &hand.workers[0];
	uint8_t decided;
	struct task *t;

	(void)arg;
	current_worker = w;
	t = runq_pop(&hand.runq);
	ck_assert_msg(t == &hand.tasks[0], "worker 1 did not get task 0");
	decided = sampled(t);
	resume(w, t);
	check_task0("worker 1, resumed", 1, 0);
	t->step(t); /* DECIDE: the sampling decision */
	check_task0("worker 1, after the decision", 1, decided);
	suspend(w, t);
	/* The task is in the queue; this thread still publishes it. */
	check_task0("worker 1, the task back in the queue", 1, decided);
	kept = otel_thread_ctx_v1;
	memcpy(&kept_copy, kept, sizeof(kept_copy));
	sem_post(&turn[1]);

	wait_turn(0);
	/* Worker 2 ran a step and put the task back: it resumes here, where
	 * worker 2 left it (in its child span). */
	ck_assert_msg(otel_thread_ctx_v1 == kept && memcmp(kept, &kept_copy, sizeof(kept_copy)) == 0,
	      "worker 1's record changed while it ran nothing");
	t = runq_pop(&hand.runq);
	ck_assert_msg(t == &hand.tasks[0], "worker 1 did not get task 0 back");
	resume(w, t);
	check_task0("worker 1, resumed after worker 2", 2, decided);
	t->step(t); /* DB_DONE: back to the root span, saved on worker 2 */
	check_task0("worker 1, the child span ended", 1, decided);
	suspend(w, t);
	go_idle(w);
	ck_assert_msg(otel_thread_ctx_v1 == NULL, "worker 1 publishes after go_idle()");
	sem_post(&turn[1]);
	return NULL;
}

static void *hand_worker2(void *arg)
{
	struct worker *w = &hand.workers[1];
	uint8_t decided;
	struct task *t;

	(void)arg;
	current_worker = w;
	wait_turn(1);
	t = runq_pop(&hand.runq);
	ck_assert_msg(t == &hand.tasks[0], "worker 2 did not get task 0");
	decided = sampled(t);
	ck_assert_msg(__atomic_load_n(&t->shown, __ATOMIC_RELAXED) == 1,
	      "task 0 is published by %u workers, expected worker 1", t->shown);
	/* Worker 1 has not published anything else: it still shows the task.
	 * Resuming it here just works (check() ends the program otherwise). */
	resume(w, t);
	ck_assert_msg(w->overlaps == 1 && __atomic_load_n(&t->shown, __ATOMIC_RELAXED) == 2,
	      "the resume was not counted as one while worker 1 publishes the task");
	check_task0("worker 2, resumed while worker 1 publishes it", 1, decided);
	ck_assert_msg(otel_thread_ctx_v1 != kept, "the two threads publish one record");
	ck_assert_msg(memcmp(otel_thread_ctx_v1, &kept_copy, offsetof(struct otel_thread_ctx_record,
							      attrs_data) +
						       kept_copy.attrs_data_size) == 0,
	      "worker 2 does not publish what worker 1 publishes");
	t->step(t); /* DB_QUERY: a child span */
	check_task0("worker 2, in the child span", 2, decided);
	ck_assert_msg(memcmp(kept, &kept_copy, sizeof(kept_copy)) == 0,
	      "worker 2's child span changed worker 1's record");
	suspend(w, t);
	sem_post(&turn[0]);

	wait_turn(1);
	/* Worker 1 runs the task again; this thread still shows the child
	 * span it published last. */
	check_task0("worker 2, the task running on worker 1", 2, decided);
	go_idle(w);
	ck_assert_msg(otel_thread_ctx_v1 == NULL, "worker 2 publishes after go_idle()");
	return NULL;
}

static void handover(void)
{
	pthread_t t1, t2;

	scheduler_init(&hand, 2, 1);
	ck_assert_msg(sem_init(&turn[0], 0, 0) == 0 && sem_init(&turn[1], 0, 0) == 0, "sem_init: %s",
	      strerror(errno));
	ck_assert_msg(pthread_create(&t1, NULL, hand_worker1, NULL) == 0, "pthread_create");
	ck_assert_msg(pthread_create(&t2, NULL, hand_worker2, NULL) == 0, "pthread_create");
	ck_assert_msg(pthread_join(t1, NULL) == 0 && pthread_join(t2, NULL) == 0, "pthread_join");
	ck_assert_msg(hand.tasks[0].shown == 0, "task 0 is still counted as published %u times",
	      hand.tasks[0].shown);
	ck_assert_msg(hand.tasks[0].migrations == 2, "task 0 moved %lu times, expected 2",
	      hand.tasks[0].migrations);
	printf("hand-over: worker 2 resumed task 0 while worker 1 still published it; each "
	       "published its own copy, and a child span on worker 2 left worker 1's record "
	       "as it was\n");
	scheduler_free(&hand);
	sem_destroy(&turn[0]);
	sem_destroy(&turn[1]);
}

/* ---- the storm -------------------------------------------------------------- */

/* Counted by the handler on the workers; read by main. */
static struct {
	/* Records of the task the worker runs, of the one it ran last while
	 * it runs none, and of the job of either. */
	unsigned long task, last, job;
	unsigned long none, torn, wrong, elsewhere;
} counts;

/* Samples taken on each worker (by its own handler), for the sender's
 * pacing. */
static unsigned long taken[WORKERS];
static sem_t sample_taken;

/* The first sample that failed, for the report. */
static int failed;
static struct {
	unsigned worker;
	int task, last; /* what the worker named: task numbers, -1 for none */
	struct mn_who who;
	struct otel_thread_ctx_record rec;
} first;

static void count(unsigned long *c)
{
	__atomic_fetch_add(c, 1, __ATOMIC_RELAXED);
}

static unsigned long load(const unsigned long *c)
{
	return __atomic_load_n(c, __ATOMIC_RELAXED);
}

static unsigned long handled(void)
{
	return load(&counts.task) + load(&counts.last) + load(&counts.job) + load(&counts.none) +
	       load(&counts.torn) + load(&counts.wrong) + load(&counts.elsewhere);
}

static int number_of(const struct task *t)
{
	return t != NULL ? (int)t->number : -1;
}

static void note_failure(unsigned worker, const struct task *task, const struct task *last,
			 const struct mn_who *who, const struct otel_thread_ctx_record *r)
{
	if (__atomic_exchange_n(&failed, 1, __ATOMIC_ACQ_REL))
		return;
	first.worker = worker;
	first.task = number_of(task);
	first.last = number_of(last);
	first.who = *who;
	memcpy(&first.rec, r, offsetof(struct otel_thread_ctx_record, attrs_data));
}

static void on_sample(int sig)
{
	const struct otel_thread_ctx_record *r = otel_thread_ctx_v1;
	const struct worker *w = current_worker;
	const struct mn_keys keys = keys_of(&sched);
	struct mn_who who = { 0, 0, 0, 0 };
	const struct task *task = NULL, *last = NULL;
	int saved = errno;

	(void)sig;
	if (w != NULL) {
		count(&taken[w->id - 1]);
		task = __atomic_load_n(&w->task, __ATOMIC_RELAXED);
		last = __atomic_load_n(&w->last, __ATOMIC_RELAXED);
	}
	sem_post(&sample_taken);
	if (r == NULL) {
		/* (Also on a worker that has not set current_worker yet.) */
		count(&counts.none);
	} else if (w == NULL) {
		/* A record on a thread that is no worker (yet). */
		count(&counts.elsewhere);
	} else if (!mn_identify(r, &keys, &who)) {
		count(&counts.torn);
		note_failure(w->id, task, last, &who, r);
	} else if (who.kind == MN_TASK) {
		const struct task *t = who.number < sched.ntasks ? &sched.tasks[who.number] : NULL;

		if (t != NULL && t->job == NULL && t == task) {
			count(&counts.task);
		} else if (t != NULL && t->job == NULL && t == last) {
			count(&counts.last);
		} else {
			count(&counts.wrong);
			note_failure(w->id, task, last, &who, r);
		}
	} else {
		const struct job *j = who.number < JOBS ? &sched.jobs[who.number] : NULL;

		if (j != NULL && j->ctx != NULL &&
		    ((task != NULL && task->job == j) || (last != NULL && last->job == j))) {
			count(&counts.job);
		} else {
			count(&counts.wrong);
			note_failure(w->id, task, last, &who, r);
		}
	}
	errno = saved;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(void)
{
	unsigned long want = env_count("OTEL_TEST_SIGNALS", 100000), sent = 0, migrations = 0;
	unsigned long mark[WORKERS] = { 0 }, sent_to[WORKERS] = { 0 }, overlaps = 0;
	struct sigaction sa;
	double start, seconds;

	handover();

	ck_assert_msg(sem_init(&sample_taken, 0, 0) == 0, "sem_init: %s", strerror(errno));
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sample;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	ck_assert_msg(sigaction(SIGPROF, &sa, NULL) == 0, "sigaction: %s", strerror(errno));

	/* Returns once every worker runs (and so knows it is one). */
	scheduler_start(&sched, WORKERS, TASKS);
	start = now_s();
	/* A signal sent to a worker while the last one is still pending
	 * would be lost: send the next one once the last one is handled. */
	for (unsigned long polls = 0; handled() < want; polls++) {
		for (unsigned i = 0; i < WORKERS; i++) {
			unsigned long now = load(&taken[i]);
			int rc;

			if (now == mark[i] && sent_to[i] != 0)
				continue;
			mark[i] = now;
			rc = pthread_kill(sched.workers[i].thread, SIGPROF);
			ck_assert_msg(rc == 0, "pthread_kill: %s", strerror(rc));
			sent_to[i]++;
			sent++;
		}
		/* Sleep until a handler has run: the workers need the CPU
		 * more than the sender does. */
		while (sem_wait(&sample_taken) != 0 && errno == EINTR)
			;
		if (polls % 1024 == 0 && now_s() - start > 120)
			break;
	}
	seconds = scheduler_stop(&sched);
	signal(SIGPROF, SIG_IGN);

	for (unsigned i = 0; i < sched.ntasks; i++)
		migrations += sched.tasks[i].migrations;
	for (unsigned i = 0; i < sched.nworkers; i++)
		overlaps += sched.workers[i].overlaps;
	printf("mn-signal: %lu signals sent, %lu samples in %.2f s: %lu of the task running there, "
	       "%lu of the task that ran there last, %lu of the job of one of those, "
	       "%lu without context, %lu torn or foreign, %lu of a task the worker neither runs "
	       "nor ran last, %lu off the workers\n",
	       sent, handled(), seconds, counts.task, counts.last, counts.job, counts.none,
	       counts.torn, counts.wrong, counts.elsewhere);
	scheduler_summary(&sched, seconds, stdout);
	printf("mn-signal: %lu resumes of a task still published by the worker it left; %lu "
	       "samples caught a worker in that window\n", overlaps, counts.last);
	if (failed)
		printf("first failure: worker %u (running task %d, ran task %d last), record trace "
		       "%016llx%016llx span %016llx flags %u (kind %d, number %u, round %llu, "
		       "span %u)\n",
		       first.worker, first.task, first.last,
		       (unsigned long long)mn_get_be(first.rec.trace_id, 8),
		       (unsigned long long)mn_get_be(first.rec.trace_id + 8, 8),
		       (unsigned long long)mn_get_be(first.rec.span_id, 8), first.rec.trace_flags,
		       first.who.kind, first.who.number, (unsigned long long)first.who.round,
		       first.who.span);
	ck_assert_msg(counts.torn == 0, "%lu samples were not the record of one task or job", counts.torn);
	ck_assert_msg(counts.wrong == 0, "%lu samples named a task this worker neither runs nor ran last",
	      counts.wrong);
	ck_assert_msg(counts.elsewhere == 0, "%lu records found on threads that are no workers",
	      counts.elsewhere);
	ck_assert_msg(handled() >= want, "only %lu samples of %lu in 120 s", handled(), want);
	/* The samples caught both kinds of context, and tasks moved. */
	ck_assert_msg(counts.task > 0 && counts.job > 0, "no sample of a task's own context, or of a job's");
	ck_assert_msg(migrations > 0, "no task ever moved to another worker");
	scheduler_free(&sched);
	return 0;
}
