/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The out-of-process inspector (include/otel_thread_ctx_inspect.h), its
 * thread access: a thread is attached, stopped, walked by the description
 * open() built (discovery.c), read and detached, on a tracer thread of the
 * inspector's own, so that no thread of the target is ever left attached
 * or stopped.  Everything read from the process is treated as hostile.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "arch.h"
#include "inspect.h"
#include "remote.h"

/* Reads and decodes the record at `addr` into out. */
static int read_record(pid_t pid, uint64_t addr, struct otel_thread_ctx_inspect_thread *out)
{
	uint8_t buf[OTEL_THREAD_CTX_RECORD_SIZE];
	struct otel_thread_ctx_record *r = &out->record;
	uint16_t size;
	size_t n;
	int rc;

	if (addr % 2 != 0)
		return OTEL_THREAD_CTX_EFORMAT;
	if (otel__remote_read(pid, addr, buf, OTEL_THREAD_CTX_RECORD_HEADER_SIZE) < 0)
		return OTEL_THREAD_CTX_EFAULT;
	memcpy(&size, buf + offsetof(struct otel_thread_ctx_record, attrs_data_size), sizeof(size));
	out->attrs_data_size = size;
	n = size > OTEL_THREAD_CTX_ATTRS_MAX ? OTEL_THREAD_CTX_ATTRS_MAX : size;
	if (buf[offsetof(struct otel_thread_ctx_record, valid)] == 1 && n > 0 &&
	    otel__remote_read(pid, addr + OTEL_THREAD_CTX_RECORD_HEADER_SIZE, buf + OTEL_THREAD_CTX_RECORD_HEADER_SIZE, n) < 0)
		return OTEL_THREAD_CTX_EFAULT;
	rc = otel__record_decode(buf, OTEL_THREAD_CTX_RECORD_HEADER_SIZE + n, r);
	if (rc != 0)
		return rc;
	out->anomalies = otel_thread_ctx_inspect_anomalies(r, size);
	return 0;
}

OTEL_EXPORT unsigned int otel_thread_ctx_inspect_anomalies(const struct otel_thread_ctx_record *r,
							   size_t found_size)
{
	static const uint8_t zero[16];
	unsigned int anomalies = 0;
	size_t at = 0, size;

	if (r == NULL)
		return 0;
	size = r->attrs_data_size > OTEL_THREAD_CTX_ATTRS_MAX ? OTEL_THREAD_CTX_ATTRS_MAX :
							       r->attrs_data_size;
	if (found_size > OTEL_THREAD_CTX_ATTRS_MAX)
		anomalies |= OTEL_THREAD_CTX_INSPECT_OVERSIZED;
	while (at + 2 <= size && at + 2 + r->attrs_data[at + 1] <= size)
		at += 2u + r->attrs_data[at + 1];
	if (at != size)
		anomalies |= OTEL_THREAD_CTX_INSPECT_TRUNCATED_ENTRY;
	if ((memcmp(r->trace_id, zero, 16) == 0) != (memcmp(r->span_id, zero, 8) == 0))
		anomalies |= OTEL_THREAD_CTX_INSPECT_HALF_IDS;
	return anomalies;
}

OTEL_EXPORT int otel_thread_ctx_inspect_thread_name(pid_t pid, pid_t tid, char name[17])
{
	ssize_t n;

	if (name == NULL)
		return OTEL_THREAD_CTX_ENULL;
	n = pid > 0 && tid > 0 ?
		    otel__remote_proc_text(name, 17, "/proc/%d/task/%d/comm", (int)pid, (int)tid) :
		    (name[0] = '\0', -ESRCH);
	if (n > 0 && name[n - 1] == '\n')
		name[n - 1] = '\0';
	return n < 0 ? OTEL_THREAD_CTX_ESRCH : OTEL_THREAD_CTX_OK;
}

/* Is `tid` a thread of `pid`? */
static bool is_thread_of(pid_t pid, pid_t tid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/task/%d", (int)pid, (int)tid);
	return access(path, F_OK) == 0;
}

/* Thread `tid`'s state letter in /proc/PID/task/TID/stat ('R' running or
 * runnable, 'S', 'D', 't' ...), 'X' when it is gone. */
static char thread_state(pid_t pid, pid_t tid)
{
	char buf[256], *p;

	if (otel__remote_proc_text(buf, sizeof(buf), "/proc/%d/task/%d/stat", (int)pid, (int)tid) <= 0)
		return 'X';
	/* "tid (comm) S ...": the state follows the last ')'. */
	p = strrchr(buf, ')');
	return p == NULL || p[1] != ' ' ? 'X' : p[2];
}

/* Has thread `tid` exited (or is it exiting: a zombie), or is it gone? */
static bool thread_exiting(pid_t pid, pid_t tid)
{
	char c = thread_state(pid, tid);

	return c == 'Z' || c == 'X' || c == 'x';
}

/* Nanoseconds of CLOCK_MONOTONIC. */
static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * Is attached thread `tid` in a ptrace-stop, whoever collected the report of
 * it?  A wait for any child from another thread of this process
 * (waitpid(-1, ..., __WALL), a profiler's reaper thread) collects the stop
 * reports of the tracees of every thread of the process, so the report may
 * never reach waitpid(tid) here; the thread stays stopped all the same, and
 * the tracer's ptrace requests work on it.  PTRACE_GETSIGINFO succeeds only
 * on a stopped tracee (ESRCH while it runs) and tells the interrupt's
 * PTRACE_EVENT_STOP (si_code: the event above SIGTRAP, as in the wait
 * status) from a signal on its way to the thread.  0 stopped (*resend
 * set), -ESRCH not stopped, or another negative errno.
 */
static int probe_stopped(pid_t tid, int *resend)
{
	siginfo_t si;

	if (ptrace(PTRACE_GETSIGINFO, tid, NULL, &si) != 0)
		return -errno;
	*resend = (si.si_code >> 8) == PTRACE_EVENT_STOP ? 0 : si.si_signo;
	return 0;
}

/* How much longer wait_stopped() waits for a thread that is runnable. */
#define RUNNABLE_GRACE_NS ((int64_t)9 * OTEL_THREAD_CTX_INSPECT_STOP_TIMEOUT_MS * 1000000)

/* wait_stopped(): the thread has exited but cannot be reaped yet (a thread
 * group leader whose other threads still run). */
#define EXITING_UNREAPED EALREADY

/*
 * Waits, until CLOCK_MONOTONIC `deadline` at the latest, for the interrupt
 * to stop attached thread `tid` of `pid`.  Never blocks: the stop report is
 * polled (waitpid(WNOHANG) on this thread only), and the stop itself
 * checked with probe_stopped() in case another thread collected the report.
 * Returns 0 with *resend the signal to hand back at detach (0 for none);
 * -ESRCH when the thread exited (its exit reaped here or elsewhere);
 * -EXITING_UNREAPED; -ETIMEDOUT when it had not stopped by the deadline, or
 * by RUNNABLE_GRACE_NS after it while runnable (it is still attached, and
 * will stop when it can); another negative errno.
 */
static int wait_stopped(pid_t pid, pid_t tid, int64_t deadline, int *resend)
{
	unsigned int round = 0;

	*resend = 0;
	for (;; round++) {
		int status, rc;
		pid_t got = waitpid(tid, &status, __WALL | WNOHANG);

		if (got < 0) {
			if (errno == EINTR)
				continue;
			return errno == ECHILD ? -ESRCH : -errno;
		}
		if (got == tid) {
			if (WIFEXITED(status) || WIFSIGNALED(status))
				return -ESRCH;
			if (!WIFSTOPPED(status))
				continue;
			/* PTRACE_EVENT_STOP: the interrupt or a group-stop;
			 * anything else is a signal on its way to the thread,
			 * which the detach must deliver. */
			if ((status >> 16) != PTRACE_EVENT_STOP)
				*resend = WSTOPSIG(status);
			return 0;
		}
		rc = probe_stopped(tid, resend);
		if (rc != -ESRCH)
			return rc;
		/* A thread that has a CPU stops within microseconds: look
		 * again at once a few times; then sleep, longer and longer
		 * (up to 1 ms).  No sched_yield(): on a loaded machine one
		 * yield can cost a whole time slice, while a sleeper that
		 * wakes gets a CPU soon. */
		if (round < 4 && now_ns() < deadline)
			continue;
		{
			int64_t now = now_ns();

			if (now >= deadline || round % 16 == 0) {
				char c = thread_state(pid, tid);

				if (c == 'Z' || c == 'X' || c == 'x')
					return -EXITING_UNREAPED;
				/* A runnable thread stops as soon as it gets
				 * a CPU, which only an overloaded machine
				 * delays: it gets RUNNABLE_GRACE_NS more. */
				if (now >= deadline &&
				    (c != 'R' || now >= deadline + RUNNABLE_GRACE_NS))
					return -ETIMEDOUT;
			}
		}
		{
			unsigned int step = (round - 4) / 2;
			long us = step < 8 ? 5L << step : 1000;
			struct timespec ts = { 0, (us > 1000 ? 1000 : us) * 1000 };

			nanosleep(&ts, NULL);
		}
	}
}

/* Sets out's status to the code of `err`, a negative errno, and sys_errno
 * to the errno.  Returns the status. */
static int thread_error(struct otel_thread_ctx_inspect_thread *out, int err)
{
	out->sys_errno = -err;
	return out->status = otel__remote_error(err);
}

/* The one mapping of the walk's statuses to the inspector's codes. */
static int walk_error(int status)
{
	switch (status) {
	case OTEL_THREAD_CTX_BPF_OK:
		return OTEL_THREAD_CTX_OK;
	case OTEL_THREAD_CTX_BPF_NO_CONTEXT:
	case OTEL_THREAD_CTX_BPF_NO_TLS:
		return OTEL_THREAD_CTX_ENOCTX;
	default:
		return OTEL_THREAD_CTX_EFAULT;
	}
}

/* Module m in thread `tid`: the walk of otel_thread_ctx_inspect_bpf.h, the
 * BPF reader's own, its reads made with process_vm_readv() through the
 * thread itself (the leader, or the task open() read, may have exited
 * while this thread runs). */
static int walk_module(const otel_thread_ctx_inspector *insp, size_t i, pid_t tid, uint64_t tp,
		       struct otel_thread_ctx_bpf_walk *w)
{
	const struct otel_thread_ctx_bpf_module *m = &insp->where[i];
	int rc = otel_thread_ctx_bpf_walk_start(w, &insp->layout, m, tp);

	for (int n = 0; n < OTEL_THREAD_CTX_BPF_WALK_READS && rc == OTEL_THREAD_CTX_BPF_WALK_READ;
	     n++) {
		uint64_t v = 0;
		int failed = otel__remote_read(tid, w->addr, &v, sizeof(v));

		rc = otel_thread_ctx_bpf_walk_next(w, &insp->layout, m, v, failed);
	}
	return rc == OTEL_THREAD_CTX_BPF_WALK_READ ? OTEL_THREAD_CTX_BPF_UNREADABLE : rc;
}

/*
 * The slot and the record of stopped thread `tid`, by the walk and the rule
 * the BPF reader follows (otel_thread_ctx_inspect_bpf.h): the first module
 * whose slot holds a record is read; else EFAULT if some module's slot could
 * not be read, else ENOCTX.
 */
static int sample_walk(otel_thread_ctx_inspector *insp, pid_t tid,
		       struct otel_thread_ctx_inspect_thread *out)
{
	int err = otel__inspect_thread_pointer(tid, &out->thread_pointer);
	uint32_t seen = 0;
	bool null_seen = false;

	if (err != 0)
		return thread_error(out, err);
	for (size_t i = 0; i < insp->info.module_count; i++) {
		struct otel_thread_ctx_bpf_walk w;
		int rc = walk_module(insp, i, tid, out->thread_pointer, &w);

		if (rc == OTEL_THREAD_CTX_BPF_OK) {
			out->module = (unsigned int)i;
			out->slot_address = w.slot;
			out->record_address = w.record;
			return read_record(tid, w.record, out);
		}
		/* ENOCTX names the first module whose slot is NULL. */
		if (rc == OTEL_THREAD_CTX_BPF_NO_CONTEXT && !null_seen) {
			null_seen = true;
			out->module = (unsigned int)i;
			out->slot_address = w.slot;
		}
		seen = otel_thread_ctx_bpf_walk_fold(seen, rc);
	}
	return walk_error(otel_thread_ctx_bpf_walk_status(seen));
}

/*
 * sample_walk(), checked against what the process did meanwhile: a read
 * made by a description of another image, or of modules loaded or unloaded
 * since (looked at only when something could not be read), is ESRCH (the
 * process is gone) or EAGAIN (it changed: open a new inspector), with
 * nothing of what was read kept.
 */
static int sample_stopped(otel_thread_ctx_inspector *insp, pid_t tid,
			  struct otel_thread_ctx_inspect_thread *out)
{
	int rc = sample_walk(insp, tid, out), now;

	if (rc == OTEL_THREAD_CTX_ESRCH || rc == OTEL_THREAD_CTX_ESYS)
		return rc;
	now = otel__inspect_image_unchanged(insp, tid, rc == OTEL_THREAD_CTX_EFAULT);
	if (now == OTEL_THREAD_CTX_OK)
		return rc;
	out->module = 0;
	out->slot_address = 0;
	out->record_address = 0;
	out->attrs_data_size = 0;
	out->anomalies = 0;
	memset(&out->record, 0, sizeof(out->record));
	return now;
}

/*
 * Reads thread `tid` of the process, on the tracer thread: attaches, stops
 * it, samples it and detaches.  Returns true when this thread holds no
 * attachment to `tid` afterwards (detached, never attached, or its exit
 * reaped), false when it may still hold one: a thread that did not stop in
 * time (PTRACE_DETACH works only on a stopped tracee, ESRCH otherwise), an
 * exited thread not reaped yet, a detach that failed.  The tracer thread
 * then exits, and the kernel detaches its tracees as it does (a stopped one
 * resumes; one not stopped yet forgets the interrupt and never stops).
 */
static bool read_attached(otel_thread_ctx_inspector *insp, pid_t tid,
			  struct otel_thread_ctx_inspect_thread *out)
{
	int err, resend = 0;

	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) != 0) {
		thread_error(out, -errno);
		/* The kernel refuses to attach to an exiting thread (EPERM). */
		if (out->sys_errno == EPERM && thread_exiting(insp->info.pid, tid))
			out->status = OTEL_THREAD_CTX_ESRCH;
		return true;
	}
	if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) != 0) {
		/* It is exiting (ESRCH) or something else went wrong; either
		 * way it is attached and not stopped. */
		thread_error(out, -errno);
		return false;
	}
	err = wait_stopped(insp->info.pid, tid,
			   now_ns() + (int64_t)OTEL_THREAD_CTX_INSPECT_STOP_TIMEOUT_MS * 1000000, &resend);
	if (err != 0) {
		thread_error(out, err == -EXITING_UNREAPED ? -ESRCH : err);
		/* ESRCH: its exit was reaped, here or by another thread of
		 * this process (waitpid() then says ECHILD): nothing is left
		 * attached. */
		return err == -ESRCH;
	}
	out->status = sample_stopped(insp, tid, out);
	/* Detaching resumes the thread (or returns it to its group-stop). */
	if (ptrace(PTRACE_DETACH, tid, NULL, (void *)(uintptr_t)resend) != 0) {
		if (errno != ESRCH && out->status == OTEL_THREAD_CTX_OK)
			thread_error(out, -errno);
		return false;
	}
	return true;
}

/*
 * The tracer thread.  ptrace ties an attachment to the thread that made it,
 * and only a stopped tracee can be detached; a thread that cannot stop
 * within the limit (uninterruptible sleep: a vfork() parent, a hung file
 * system) would otherwise stay attached, stop as soon as it could, and be
 * held in tracing stop until the attaching thread next called here or
 * exited.  So the attaching is done by a thread the inspector owns, which
 * exits whenever it may still hold an attachment (read_attached() false):
 * the kernel detaches the tracees of an exiting thread, and drops the
 * interrupt a tracee has not stopped for yet.  The caller waits until the
 * tracer is gone from /proc/self/task (its tracees are detached by then:
 * the kernel detaches them before it releases the thread), so that every
 * call returns with no thread of the process attached.  The next read
 * starts a new tracer.  The tracer blocks every signal, so none of the
 * caller's handlers runs on it.
 */
enum tracer_state { TRACER_IDLE, TRACER_READ, TRACER_DONE, TRACER_QUIT };

struct tracer {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
	pid_t tid;   /* its thread id, set when it starts */
	pid_t owner; /* getpid() of the process that started it */
	enum tracer_state state;
	bool exiting; /* it ends after this read */
	otel_thread_ctx_inspector *insp;
	/* The read asked for: thread out[i].tid into out[i], i from `done`
	 * (which the tracer advances) to n - 1. */
	struct otel_thread_ctx_inspect_thread *out;
	size_t n, done;
};

/* Reads thread out->tid of insp's process into out, on the tracer thread;
 * read_attached()'s answer. */
static bool read_one(otel_thread_ctx_inspector *insp, struct otel_thread_ctx_inspect_thread *out)
{
	pid_t tid = out->tid;

	memset(out, 0, sizeof(*out));
	out->tid = tid;
	if (tid <= 0 || !is_thread_of(insp->info.pid, tid)) {
		out->status = OTEL_THREAD_CTX_ESRCH;
		return true;
	}
	otel_thread_ctx_inspect_thread_name(insp->info.pid, tid, out->name);
	return read_attached(insp, tid, out);
}

static void *tracer_main(void *arg)
{
	struct tracer *t = arg;

	/* Its waits for a thread to stop are sleeps of microseconds
	 * (wait_stopped()), which the default timer slack (50 us) would
	 * make ten times longer: none on this thread. */
	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	pthread_mutex_lock(&t->lock);
	t->tid = (pid_t)syscall(SYS_gettid);
	for (;;) {
		bool released = true;

		while (t->state != TRACER_READ && t->state != TRACER_QUIT)
			pthread_cond_wait(&t->cond, &t->lock);
		if (t->state == TRACER_QUIT)
			break;
		pthread_mutex_unlock(&t->lock);
		/* The whole batch, without a hand-over per thread; `done` is
		 * the caller's only after TRACER_DONE, under the lock. */
		while (released && t->done < t->n) {
			size_t i = t->done++;

			released = read_one(t->insp, &t->out[i]);
		}
		pthread_mutex_lock(&t->lock);
		t->exiting = !released;
		t->state = TRACER_DONE;
		pthread_cond_broadcast(&t->cond);
		if (!released)
			break;
	}
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

/* Starts insp's tracer; 0 or a negative errno. */
static int tracer_start(otel_thread_ctx_inspector *insp)
{
	struct tracer *t = calloc(1, sizeof(*t));
	sigset_t all, old;
	int err;

	if (t == NULL)
		return -ENOMEM;
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->cond, NULL);
	t->insp = insp;
	t->owner = getpid();
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&t->thread, NULL, tracer_main, t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err != 0) {
		pthread_cond_destroy(&t->cond);
		pthread_mutex_destroy(&t->lock);
		free(t);
		return -err;
	}
	insp->tracer = t;
	return 0;
}

/* Ends insp's tracer, if it has one, and returns once the kernel has
 * detached whatever it was still attached to. */
void otel__inspect_tracer_end(otel_thread_ctx_inspector *insp)
{
	struct tracer *t = insp->tracer;

	if (t == NULL)
		return;
	insp->tracer = NULL;
	if (t->owner != getpid()) {
		/* A child forked from the process that started it: the
		 * tracer is not in this process (nor are its attachments). */
		free(t);
		return;
	}
	pthread_mutex_lock(&t->lock);
	t->state = TRACER_QUIT;
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
	pthread_join(t->thread, NULL);
	/* pthread_join() returns once the thread has left user space, a
	 * little before the kernel detaches its tracees (exit_notify(), which
	 * then marks it dead, or a zombie where this process is itself traced
	 * by a debugger that has not reaped it yet): wait for that (a second
	 * at most; it takes microseconds). */
	for (int i = 0; i < 10000; i++) {
		struct timespec ts = { 0, 100000 };
		char c = thread_state(getpid(), t->tid);

		if (c == 'Z' || c == 'X' || c == 'x')
			break;
		nanosleep(&ts, NULL);
	}
	pthread_cond_destroy(&t->cond);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

/* Threads out[i].tid into out[i], i < n, on insp's tracer: started as
 * needed, and again after one that had to end (read_attached() false)
 * with threads of the batch left to read. */
static void tracer_read(otel_thread_ctx_inspector *insp, struct otel_thread_ctx_inspect_thread *out,
			size_t n)
{
	size_t done = 0;

	while (done < n) {
		struct tracer *t;
		bool exiting;
		int err;

		if (insp->tracer != NULL && insp->tracer->owner != getpid())
			otel__inspect_tracer_end(insp);
		if (insp->tracer == NULL && (err = tracer_start(insp)) != 0) {
			for (; done < n; done++) {
				pid_t tid = out[done].tid;

				memset(&out[done], 0, sizeof(out[done]));
				out[done].tid = tid;
				thread_error(&out[done], err);
			}
			return;
		}
		t = insp->tracer;
		pthread_mutex_lock(&t->lock);
		t->out = out;
		t->n = n;
		t->done = done;
		t->state = TRACER_READ;
		pthread_cond_broadcast(&t->cond);
		while (t->state != TRACER_DONE)
			pthread_cond_wait(&t->cond, &t->lock);
		t->state = TRACER_IDLE;
		exiting = t->exiting;
		done = t->done;
		pthread_mutex_unlock(&t->lock);
		if (exiting)
			otel__inspect_tracer_end(insp);
	}
}

OTEL_EXPORT int otel_thread_ctx_inspect_thread(otel_thread_ctx_inspector *insp, pid_t tid,
					       struct otel_thread_ctx_inspect_thread *out)
{
	if (insp == NULL || out == NULL)
		return OTEL_THREAD_CTX_ENULL;
	out->tid = tid;
	tracer_read(insp, out, 1);
	return out->status;
}

OTEL_EXPORT int otel_thread_ctx_inspect_threads(otel_thread_ctx_inspector *insp,
						struct otel_thread_ctx_inspect_thread *out,
						size_t cap, size_t *count)
{
	char path[64];
	struct dirent *de;
	size_t n = 0;
	DIR *dir;

	if (insp == NULL || count == NULL || (out == NULL && cap > 0))
		return OTEL_THREAD_CTX_ENULL;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)insp->info.pid);
	dir = opendir(path);
	if (dir == NULL)
		return otel__remote_error(-errno);
	while ((de = readdir(dir)) != NULL) {
		char *end;
		long tid = strtol(de->d_name, &end, 10);

		if (*de->d_name == '\0' || *end != '\0' || tid <= 0 || tid > INT_MAX)
			continue;
		if (n < cap)
			out[n].tid = (pid_t)tid;
		n++;
	}
	closedir(dir);
	/* Read in one batch, after the listing. */
	tracer_read(insp, out, n < cap ? n : cap);
	*count = n;
	return 0;
}
