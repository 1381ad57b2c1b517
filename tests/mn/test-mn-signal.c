/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The scheduler of examples/mn-scheduler.c (compiled in here, without its
 * main()) sampled from inside, the way a signal-handler profiler does: the
 * main thread sends SIGPROF to the workers, over and over, while tasks move
 * between them; the handler, on the interrupted worker, reads
 * otel_thread_ctx_v1 and checks that what it finds names the task that
 * worker is running at that instant, never another task.
 *
 * The check is exact.  A worker sets a task's running_on to its own id
 * before it publishes the task's context and clears it only after it has
 * withdrawn it (signal fences keep that program order), and only the
 * worker holding a task writes it.  The handler runs on the worker, between
 * two of its instructions, so it sees the worker's own stores exactly as
 * far as the worker got, and running_on == this worker means the task is
 * the worker's at that instant.  A sample passes when the slot is NULL, or
 * when its record is exactly the record of one task (mn-record.h) whose
 * running_on is this worker, or of a job one of whose tasks runs on this
 * worker (a job's frozen context is shared and names no task).  Anything
 * else is a failure: a record not of one task and step (torn, mixed), or
 * the record of a task that this worker does not run.
 *
 *   OTEL_TEST_SIGNALS   samples to take (100,000; fewer under valgrind,
 *                       qemu and the sanitizers)
 */
#define MN_SCHEDULER_NO_MAIN
#include "mn-scheduler.c"

#include <errno.h>
#include <semaphore.h>

#include "minitest.h"
#include "mn-record.h"
#include "testenv.h"

#define WORKERS 3u
#define TASKS 16u

static struct scheduler sched;

/* Counted by the handler on the workers; read by main. */
static struct {
	unsigned long task, job, none, torn, wrong, elsewhere;
} counts;

/* Samples taken on each worker (by its own handler), for the sender's
 * pacing. */
static unsigned long taken[WORKERS];
static sem_t sample_taken;

/* The first sample that failed, for the report. */
static int failed;
static struct {
	unsigned worker, running_on;
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
	return load(&counts.task) + load(&counts.job) + load(&counts.none) + load(&counts.torn) +
	       load(&counts.wrong) + load(&counts.elsewhere);
}

static void note_failure(unsigned worker, unsigned running_on, const struct mn_who *who,
			 const struct otel_thread_ctx_record *r)
{
	if (__atomic_exchange_n(&failed, 1, __ATOMIC_ACQ_REL))
		return;
	first.worker = worker;
	first.running_on = running_on;
	first.who = *who;
	memcpy(&first.rec, r, offsetof(struct otel_thread_ctx_record, attrs_data));
}

/* Whether a task of job `j` runs on worker `me` now. */
static int job_runs_on(const struct job *j, unsigned me)
{
	for (unsigned i = 0; i < sched.ntasks; i++)
		if (sched.tasks[i].job == j &&
		    __atomic_load_n(&sched.tasks[i].running_on, __ATOMIC_RELAXED) == me)
			return 1;
	return 0;
}

static void on_sample(int sig)
{
	const struct otel_thread_ctx_record *r = otel_thread_ctx_v1;
	const struct worker *w = current_worker;
	const struct mn_keys keys = { sched.key_task, sched.key_round, sched.key_job };
	struct mn_who who = { 0, 0, 0, 0 };
	unsigned running_on = 0;
	int saved = errno;

	(void)sig;
	if (w != NULL)
		count(&taken[w->id - 1]);
	sem_post(&sample_taken);
	if (r == NULL) {
		/* (Also on a worker that has not set current_worker yet.) */
		count(&counts.none);
	} else if (w == NULL) {
		/* A record on a thread that is no worker (yet). */
		count(&counts.elsewhere);
	} else if (!mn_identify(r, &keys, &who)) {
		count(&counts.torn);
		note_failure(w->id, 0, &who, r);
	} else if (who.kind == MN_TASK) {
		const struct task *t = who.number < sched.ntasks ? &sched.tasks[who.number] : NULL;

		if (t != NULL)
			running_on = __atomic_load_n(&t->running_on, __ATOMIC_RELAXED);
		if (t != NULL && t->job == NULL && running_on == w->id) {
			count(&counts.task);
		} else {
			count(&counts.wrong);
			note_failure(w->id, running_on, &who, r);
		}
	} else {
		if (who.number < JOBS && sched.jobs[who.number].ctx != NULL &&
		    job_runs_on(&sched.jobs[who.number], w->id)) {
			count(&counts.job);
		} else {
			count(&counts.wrong);
			note_failure(w->id, 0, &who, r);
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
	unsigned long mark[WORKERS] = { 0 }, sent_to[WORKERS] = { 0 };
	struct sigaction sa;
	double start, seconds;

	CHECK(sem_init(&sample_taken, 0, 0) == 0, "sem_init: %s", strerror(errno));
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sample;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGPROF, &sa, NULL) == 0, "sigaction: %s", strerror(errno));

	scheduler_start(&sched, WORKERS, TASKS);
	start = now_s();
	/* Sample once every worker runs tasks (and so knows it is one). */
	for (unsigned seen = 0; seen != (1u << WORKERS) - 1 && now_s() - start < 60;)
		for (unsigned i = 0; i < TASKS; i++) {
			unsigned on = __atomic_load_n(&sched.tasks[i].running_on, __ATOMIC_RELAXED);

			if (on != 0)
				seen |= 1u << (on - 1);
		}
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
			CHECK(rc == 0, "pthread_kill: %s", strerror(rc));
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
	printf("mn-signal: %lu signals sent, %lu samples in %.2f s: %lu of the task running there, "
	       "%lu of the job of the task running there, %lu without context, "
	       "%lu torn or foreign, %lu of a task running elsewhere, %lu off the workers\n",
	       sent, handled(), seconds, counts.task, counts.job, counts.none, counts.torn,
	       counts.wrong, counts.elsewhere);
	scheduler_summary(&sched, seconds, stdout);
	if (failed)
		printf("first failure: worker %u, record trace %016llx%016llx span %016llx flags %u "
		       "(kind %d, number %u, round %llu, span %u), running_on %u\n",
		       first.worker, (unsigned long long)mn_get_be(first.rec.trace_id, 8),
		       (unsigned long long)mn_get_be(first.rec.trace_id + 8, 8),
		       (unsigned long long)mn_get_be(first.rec.span_id, 8), first.rec.trace_flags,
		       first.who.kind, first.who.number, (unsigned long long)first.who.round,
		       first.who.span, first.running_on);
	CHECK(counts.torn == 0, "%lu samples were not the record of one task or job", counts.torn);
	CHECK(counts.wrong == 0, "%lu samples named a task this worker was not running",
	      counts.wrong);
	CHECK(counts.elsewhere == 0, "%lu records found on threads that are no workers",
	      counts.elsewhere);
	CHECK(handled() >= want, "only %lu samples of %lu in 120 s", handled(), want);
	/* The samples caught both kinds of context, and tasks moved. */
	CHECK(counts.task > 0 && counts.job > 0, "no sample of a task's own context, or of a job's");
	CHECK(migrations > 0, "no task ever moved to another worker");
	scheduler_free(&sched);
	return 0;
}
