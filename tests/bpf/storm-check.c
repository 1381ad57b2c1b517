/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The update storm under the eBPF sampler: starts the target (target.c) in
 * storm mode, samples its writer threads with the sampler the tool uses
 * (tools/sample/sampler.h: the BPF program, perf events on every CPU, the
 * process description from the inspector), and checks every sample:
 *
 *   - no record with valid != 1 (invalid), none oversized or misaligned;
 *   - unreadable samples (the slot or the record could not be read at that
 *     instant: otel_thread_ctx_reader.bpf.h, "UNREADABLE samples") counted
 *     apart and bounded in episodes per thread (UNREADABLE_EPISODES_MAX
 *     says why);
 *   - each record is exactly the record of the sequence number it carries
 *     (records.h), so nothing torn;
 *   - that sequence number belongs to the thread the sample was taken on,
 *     so the BPF side read that thread's own slot;
 *   - per thread, sequence numbers never go back, and none is beyond the
 *     last one the thread published: every value read was published;
 *   - every writer was seen with a record;
 *   - the foreign writer's samples (storm mode; records.h, "Foreign
 *     records"): each read as its kind says (whole; INVALID with its
 *     header; read with one of the ids set or a truncated entry, as
 *     otel_thread_ctx_inspect_anomalies() tells; read with 612 bytes of
 *     attributes and flagged oversized, the size found in the event;
 *     MISALIGNED; UNREADABLE at its inaccessible page), the records
 *     exactly those of their sequence numbers, in order, and every kind
 *     seen.
 *
 *   storm-check [--late] [--expect MODEL] [--samples N] [--frequency HZ]
 *               [--max-seconds S] -- TARGET [ARGS...]
 *
 * --expect: the model the inspector must find for the slot
 * (tlsdesc-static, tlsdesc-dynamic, local-exec, ...), so that the test is
 * on the TLS path it is named for.  --late: the target loads the library
 * only after sampling has started (target.c, "late"), so the sampler must
 * notice the new module through the maps signature and describe the process
 * afresh.  Samples: --samples, else OTEL_TEST_BPF_SAMPLES, else 250000,
 * shrunk in proportion to OTEL_TEST_SIGNALS under the slow test setups;
 * a fifth of that with --late.
 *
 * Exits 77 when BPF is refused here (not root, no BTF, lockdown), 0 when
 * everything checks out, 1 otherwise.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "otel_thread_ctx.h"
#include "records.h"
#include "sampler.h"
#include "start.h"
#include "testenv.h"

#define MAX_WRITERS 16

/*
 * Unreadable samples: how many a run may have, counted in episodes (runs
 * of a thread's samples that are all unreadable, ended by a readable one),
 * not in samples.  bpf_probe_read_user() cannot fault a page in, so a read
 * of a page that is mapped but not present at that instant fails: in the
 * storm, the kernel's split of a transparent huge page holding a thread's
 * TLS (glibc's madvise(MADV_DONTNEED) of the stack below it as the thread
 * exits), or khugepaged collapsing such a page, or a migration; the page
 * table entry is not present while the kernel works on it.  How many
 * samples fall in one such window depends on how fast the machine runs
 * the kernel (up to 93 of 14,000 in the emulated aarch64 machine, one
 * writer's exit), how many windows there are does not:
 *
 *   - after "stop", at most one per thread: its exit (one split);
 *   - before, at most UNREADABLE_EPISODES_MAX per thread, each ended by a
 *     readable sample of that thread (a page-table change is over in
 *     microseconds, and the thread reads again).
 *
 * A reader fault does not look like that: a wrong slot address or DTV walk
 * makes a thread unreadable for good (an episode that never ends, or a
 * writer never seen with a record, checked below), one that fails now and
 * then makes many episodes.
 */
#define UNREADABLE_EPISODES_MAX 2

struct writer {
	uint32_t tid;
	int index;
	int foreign; /* the foreign writer (records.h) */
	uint64_t ok, last_seq, published, unreadable;
};

/* Any thread of the target: its unreadable episodes (above). */
struct episodes {
	uint32_t tid;
	int open;              /* the last sample was unreadable */
	uint64_t open_at;      /* when that episode began */
	unsigned int before, after; /* episodes begun before and after stop */
};
#define MAX_THREADS_SEEN 64

static struct {
	uint32_t pid;
	struct writer w[MAX_WRITERS];
	int nw;
	uint64_t total, by_status[OTEL_THREAD_CTX_BPF_STATUS_COUNT];
	uint64_t torn, wrong_thread, unknown_thread, regressions, attrs_bytes;
	uint64_t broken; /* a library writer's sample INVALID, OVERSIZED or MISALIGNED */
	int reported, unreadable_reported;
	struct episodes ep[MAX_THREADS_SEEN];
	int nep, ep_overflow;
	uint64_t stop_ns; /* CLOCK_MONOTONIC when "stop" was sent; 0 before */
	/* The foreign writer's samples, by kind, as expected; and those not
	 * as their kind says. */
	uint64_t foreign_unmapped;
	uint64_t foreign_by_kind[FOREIGN_KINDS], foreign_wrong;
} st;

static struct episodes *episodes_of(uint32_t tid)
{
	for (int i = 0; i < st.nep; i++)
		if (st.ep[i].tid == tid)
			return &st.ep[i];
	if (st.nep == MAX_THREADS_SEEN) {
		st.ep_overflow = 1;
		return NULL;
	}
	st.ep[st.nep].tid = tid;
	return &st.ep[st.nep++];
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void complain(const char *what, const struct otel_thread_ctx_bpf_event *ev, uint64_t seq)
{
	if (st.reported++ < 10)
		fprintf(stderr, "storm-check: %s: tid %u, record at 0x%llx, seq 0x%llx, size %u\n",
			what, ev->tid, (unsigned long long)ev->record_address,
			(unsigned long long)seq, ev->record.attrs_data_size);
}

/* A sequence number read from writer w's thread: its own, never older than
 * the last one seen. */
static int in_order(struct writer *w, const struct otel_thread_ctx_bpf_event *ev, uint64_t seq)
{
	if (storm_index_of(seq) != w->index) {
		st.wrong_thread++;
		complain("another thread's record", ev, seq);
		return 0;
	}
	if (seq < w->last_seq) {
		st.regressions++;
		complain("an older record than the last one seen", ev, seq);
	}
	w->last_seq = seq;
	return 1;
}

/*
 * A sample of the foreign writer (not UNREADABLE at a page not present,
 * which the caller counted): what the reader says must be what the kind
 * of the record says, and the record exactly the foreign record of its
 * sequence number.  Anomalies are judged by
 * otel_thread_ctx_inspect_anomalies(), as the tool does.
 */
static void on_foreign(struct writer *w, const struct otel_thread_ctx_bpf_event *ev)
{
	const struct otel_thread_ctx_record *got = (const struct otel_thread_ctx_record *)&ev->record;
	struct otel_thread_ctx_record want;
	unsigned int kind, anomalies = 0;
	uint16_t shown;
	uint64_t seq;
	int ok;

	switch (ev->status) {
	case OTEL_THREAD_CTX_BPF_MISALIGNED:
		ok = ev->record_address % 2 == 1;
		kind = FOREIGN_MISALIGNED;
		break;
	case OTEL_THREAD_CTX_BPF_UNREADABLE:
		ok = 1;
		kind = FOREIGN_UNMAPPED;
		break;
	case OTEL_THREAD_CTX_BPF_OK:
	case OTEL_THREAD_CTX_BPF_INVALID:
	case OTEL_THREAD_CTX_BPF_OVERSIZED:
		seq = foreign_seq(got);
		kind = foreign_kind(seq);
		foreign_record(seq, &want);
		/* The header as written, its size clamped to 612 in the
		 * record (as found in the event); the attributes only when
		 * read, the first 612 bytes of them at most. */
		shown = want.attrs_data_size > OTEL_THREAD_CTX_ATTRS_MAX &&
					ev->status == OTEL_THREAD_CTX_BPF_OK ?
				OTEL_THREAD_CTX_ATTRS_MAX :
				want.attrs_data_size;
		ok = memcmp(got, &want, offsetof(struct otel_thread_ctx_record, attrs_data_size)) == 0 &&
		     got->attrs_data_size == shown && ev->attrs_data_size == want.attrs_data_size;
		if (ev->status == OTEL_THREAD_CTX_BPF_OK) {
			ok = ok && memcmp(got->attrs_data, want.attrs_data, shown) == 0;
			anomalies = otel_thread_ctx_inspect_anomalies(got, ev->attrs_data_size);
		}
		switch (kind) {
		case FOREIGN_WHOLE:
			ok = ok && ev->status == OTEL_THREAD_CTX_BPF_OK && anomalies == 0;
			break;
		case FOREIGN_INVALID:
			ok = ok && ev->status == OTEL_THREAD_CTX_BPF_INVALID;
			break;
		case FOREIGN_NO_SPAN:
		case FOREIGN_NO_TRACE:
			ok = ok && ev->status == OTEL_THREAD_CTX_BPF_OK &&
			     anomalies == OTEL_THREAD_CTX_INSPECT_HALF_IDS;
			break;
		case FOREIGN_TRUNCATED:
			ok = ok && ev->status == OTEL_THREAD_CTX_BPF_OK &&
			     anomalies == OTEL_THREAD_CTX_INSPECT_TRUNCATED_ENTRY;
			break;
		case FOREIGN_OVERSIZED:
			/* Read as 612 bytes of attributes, flagged (the
			 * entries past the written ones may read as cut). */
			ok = ok && ev->status == OTEL_THREAD_CTX_BPF_OK &&
			     (anomalies & ~OTEL_THREAD_CTX_INSPECT_TRUNCATED_ENTRY) ==
				     OTEL_THREAD_CTX_INSPECT_OVERSIZED;
			break;
		default: /* a pointer kind, yet a record was read */
			ok = 0;
		}
		if (ok && !in_order(w, ev, seq))
			return;
		if (!ok) {
			st.foreign_wrong++;
			complain("a foreign record not read as its kind says", ev, seq);
			return;
		}
		if (ev->status == OTEL_THREAD_CTX_BPF_OK)
			w->ok++;
		break;
	default:
		return;
	}
	if (!ok) {
		st.foreign_wrong++;
		complain("a foreign pointer not read as its kind says", ev, 0);
		return;
	}
	st.foreign_by_kind[kind]++;
}

static void on_event(void *arg, const struct otel_thread_ctx_bpf_event *ev, size_t size)
{
	struct writer *w = NULL;
	uint64_t seq = 0;

	(void)arg;
	(void)size;
	if (ev->pid != st.pid || ev->status >= OTEL_THREAD_CTX_BPF_STATUS_COUNT)
		return;
	st.total++;
	st.by_status[ev->status]++;
	for (int i = 0; i < st.nw; i++)
		if (st.w[i].tid == ev->tid)
			w = &st.w[i];
	if (w != NULL && w->foreign && ev->status == OTEL_THREAD_CTX_BPF_UNREADABLE &&
	    ev->record_address == st.foreign_unmapped) {
		/* The foreign writer's inaccessible page: not an episode. */
		on_foreign(w, ev);
		return;
	}
	{
		/* Episodes: bpf_ktime_get_ns() is CLOCK_MONOTONIC. */
		struct episodes *e = episodes_of(ev->tid);

		if (e != NULL && ev->status == OTEL_THREAD_CTX_BPF_UNREADABLE && !e->open) {
			e->open = 1;
			e->open_at = ev->time_ns;
			if (st.stop_ns != 0 && ev->time_ns >= st.stop_ns)
				e->after++;
			else
				e->before++;
		} else if (e != NULL && ev->status != OTEL_THREAD_CTX_BPF_UNREADABLE &&
			   ev->status != OTEL_THREAD_CTX_BPF_EXITING) {
			e->open = 0;
		}
	}
	if (ev->status == OTEL_THREAD_CTX_BPF_UNREADABLE) {
		/* Counted and bounded, not a broken record (above). */
		if (w != NULL)
			w->unreadable++;
		if (st.unreadable_reported++ < 10)
			printf("storm-check: unreadable: tid %u, record at 0x%llx, at %llu ns\n",
			       ev->tid, (unsigned long long)ev->record_address,
			       (unsigned long long)ev->time_ns);
		return;
	}
	if (w != NULL && w->foreign) {
		on_foreign(w, ev);
		return;
	}
	if (ev->status != OTEL_THREAD_CTX_BPF_OK) {
		if (ev->status != OTEL_THREAD_CTX_BPF_NO_CONTEXT &&
		    ev->status != OTEL_THREAD_CTX_BPF_NO_TLS &&
		    ev->status != OTEL_THREAD_CTX_BPF_EXITING) {
			st.broken++;
			complain("a broken record", ev, 0);
		}
		return;
	}
	st.attrs_bytes += ev->record.attrs_data_size;
	if (!storm_matches((const struct otel_thread_ctx_record *)&ev->record, &seq)) {
		st.torn++;
		complain("torn", ev, seq);
		return;
	}
	if (w == NULL) {
		st.unknown_thread++;
		complain("a record on a thread that is no writer", ev, seq);
		return;
	}
	if (in_order(w, ev, seq))
		w->ok++;
}

/* Starts `argv` with pipes on its stdin and stdout. */
static pid_t spawn(char **argv, FILE **to, FILE **from)
{
	int in[2], out[2];
	pid_t pid;

	if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		execv(argv[0], argv);
		perror("storm-check: exec");
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	*to = fdopen(in[1], "w");
	*from = fdopen(out[0], "r");
	return *to != NULL && *from != NULL ? pid : -1;
}

static int read_line(FILE *f, char *buf, size_t len)
{
	if (fgets(buf, (int)len, f) == NULL)
		return -1;
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* "ready TID:INDEX ..." */
static int parse_ready(const char *line)
{
	const char *p;
	int used;
	unsigned int tid, index;

	if (strncmp(line, "ready", 5) != 0)
		return -1;
	p = line + 5;
	while (st.nw < MAX_WRITERS && sscanf(p, " %u:%u%n", &tid, &index, &used) == 2) {
		st.w[st.nw].tid = tid;
		st.w[st.nw].index = (int)index;
		st.nw++;
		p += used;
	}
	return st.nw > 0 ? 0 : -1;
}

/* "foreign TID:INDEX ADDRESS": the foreign writer, and its inaccessible
 * page. */
static int parse_foreign(const char *line)
{
	unsigned int tid, index;
	unsigned long long page;

	if (sscanf(line, "foreign %u:%u %llx", &tid, &index, &page) != 3 || st.nw == MAX_WRITERS)
		return -1;
	st.w[st.nw].tid = tid;
	st.w[st.nw].index = (int)index;
	st.w[st.nw].foreign = 1;
	st.nw++;
	st.foreign_unmapped = page;
	return 0;
}

/* "records TID:N ..." */
static int parse_records(const char *line)
{
	const char *p;
	int used;
	unsigned int tid;
	unsigned long long n;

	if (strncmp(line, "records", 7) != 0)
		return -1;
	p = line + 7;
	while (sscanf(p, " %u:%llu%n", &tid, &n, &used) == 2) {
		for (int i = 0; i < st.nw; i++)
			if (st.w[i].tid == tid)
				st.w[i].published = n;
		p += used;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct otel_sampler_options o = { 0, 0, 16u << 20, 16, 0 };
	const char *expect = NULL;
	struct otel_sampler *s = NULL;
	const struct otel_sampler_proc *p;
	unsigned long quota, max_frequency, signals = env_count("OTEL_TEST_SIGNALS", 0);
	double max_seconds = 90, started, t, last_refresh;
	int late = 0, rc, status, failures = 0, a;
	char line[4096];
	FILE *to, *from;
	pid_t pid;

	quota = env_count("OTEL_TEST_BPF_SAMPLES", 0);
	if (quota == 0) {
		quota = 250000;
		/* The slow setups (valgrind, sanitizers, qemu) shrink the
		 * signal storm; shrink this one alike. */
		if (signals != 0 && signals < 100000)
			quota = quota * signals / 100000;
	}
	o.frequency = (unsigned int)env_count("OTEL_TEST_BPF_FREQUENCY", 40000);
	for (a = 1; a < argc && strcmp(argv[a], "--") != 0; a++) {
		if (strcmp(argv[a], "--late") == 0)
			late = 1;
		else if (strcmp(argv[a], "--expect") == 0 && a + 1 < argc)
			expect = argv[++a];
		else if (strcmp(argv[a], "--samples") == 0 && a + 1 < argc)
			quota = strtoul(argv[++a], NULL, 10);
		else if (strcmp(argv[a], "--frequency") == 0 && a + 1 < argc)
			o.frequency = (unsigned int)strtoul(argv[++a], NULL, 10);
		else if (strcmp(argv[a], "--max-seconds") == 0 && a + 1 < argc)
			max_seconds = strtod(argv[++a], NULL);
		else {
			fprintf(stderr, "storm-check: bad argument %s\n", argv[a]);
			return 2;
		}
	}
	if (a + 1 >= argc) {
		fprintf(stderr, "usage: storm-check [options] -- TARGET [ARGS...]\n");
		return 2;
	}
	/* A late load is about finding the library; fewer samples do. */
	if (late && quota >= 5)
		quota /= 5;
	/* kernel.perf_event_max_sample_rate bounds the frequency, and the
	 * kernel lowers it when samples take too long. */
	max_frequency = otel_sampler_max_frequency();
	if (max_frequency != 0 && o.frequency > max_frequency)
		o.frequency = (unsigned int)max_frequency;

	rc = open_sampler(&o, on_event, &s, "storm-check");
	if (rc >= 0)
		return rc;
	pid = spawn(argv + a + 1, &to, &from);
	if (pid < 0) {
		perror("storm-check: starting the target");
		return 1;
	}
	st.pid = (uint32_t)pid;
	if (late) {
		if (read_line(from, line, sizeof(line)) != 0 || strcmp(line, "waiting") != 0) {
			fprintf(stderr, "storm-check: the target did not start\n");
			return 1;
		}
		rc = otel_sampler_watch(s, pid);
		if (rc != OTEL_THREAD_CTX_ENOSLOT) {
			fprintf(stderr, "storm-check: before the load, expected no slot, got: %s\n",
				otel_thread_ctx_inspect_strerror(rc));
			return 1;
		}
	} else {
		if (read_line(from, line, sizeof(line)) != 0 || parse_ready(line) != 0 ||
		    read_line(from, line, sizeof(line)) != 0 || parse_foreign(line) != 0) {
			fprintf(stderr, "storm-check: the target did not start: %s\n", line);
			return 1;
		}
		rc = otel_sampler_watch(s, pid);
		if (rc != OTEL_THREAD_CTX_OK) {
			fprintf(stderr, "storm-check: describing the target: %s\n",
				otel_thread_ctx_inspect_strerror(rc));
			return 1;
		}
	}
	rc = start_sampler(s, pid, "storm-check");
	if (rc >= 0)
		return rc;
	if (late) {
		double deadline;

		/* A little sampling first: the process is not in the map. */
		for (int i = 0; i < 3; i++)
			otel_sampler_poll(s, 100);
		fputs("load\n", to);
		fflush(to);
		if (read_line(from, line, sizeof(line)) != 0 || parse_ready(line) != 0) {
			fprintf(stderr, "storm-check: the target did not load the library\n");
			return 1;
		}
		/* The sampler must see the module through the maps signature. */
		deadline = now_s() + 10;
		while ((p = otel_sampler_find(s, pid)) != NULL && p->status != OTEL_THREAD_CTX_OK &&
		       now_s() < deadline) {
			otel_sampler_poll(s, 100);
			otel_sampler_refresh(s, 0);
		}
		if (p == NULL || p->status != OTEL_THREAD_CTX_OK) {
			fprintf(stderr, "storm-check: the loaded library was not noticed: %s\n",
				p != NULL ? otel_thread_ctx_inspect_strerror(p->status) : "process gone");
			return 1;
		}
		printf("the library loaded later was found by a refresh\n");
	}
	p = otel_sampler_find(s, pid);
	{
		const struct otel_thread_ctx_inspect_info *info = otel_thread_ctx_inspect_info(p->insp);
		const char *model = otel_thread_ctx_inspect_model_name(info->modules[0].model);

		printf("target %d: %s, %d writers, slot in %s: %s", (int)pid,
		       p->desc.libc == OTEL_THREAD_CTX_BPF_LIBC_MUSL ? "musl" : "glibc", st.nw,
		       info->modules[0].path, model);
		if (p->desc.modules[0].kind == OTEL_THREAD_CTX_BPF_KIND_DTV)
			printf(" (DTV index %u, offset %llu; DTV at tp%+lld, entries of %u bytes)\n",
			       p->desc.modules[0].module_id,
			       (unsigned long long)p->desc.modules[0].dtv_offset,
			       (long long)p->desc.dtv_at, p->desc.dtv_entry_size);
		else
			printf(" (thread pointer %+lld)\n", (long long)p->desc.modules[0].tp_offset);
		if (expect != NULL && strcmp(model, expect) != 0) {
			fprintf(stderr, "storm-check: expected the model %s\n", expect);
			failures++;
		}
	}
	printf("sampling at %u Hz per CPU on %u CPUs until %lu samples of the target\n",
	       o.frequency, otel_sampler_cpus(s), quota);
	fflush(stdout);

	started = last_refresh = now_s();
	while (st.total < quota && (t = now_s()) - started < max_seconds) {
		if (otel_sampler_poll(s, 50) < 0) {
			fprintf(stderr, "storm-check: polling the ring buffer failed\n");
			failures++;
			break;
		}
		if (t - last_refresh >= 1) {
			/* The refresh path runs, with nothing to change. */
			otel_sampler_refresh(s, 0);
			last_refresh = t;
		}
	}
	t = now_s() - started;
	st.stop_ns = mono_ns();
	fputs("stop\n", to);
	fflush(to);
	if (read_line(from, line, sizeof(line)) != 0 || parse_records(line) != 0) {
		fprintf(stderr, "storm-check: the target did not stop cleanly\n");
		failures++;
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "storm-check: the target failed (status 0x%x)\n", status);
		failures++;
	}
	while (otel_sampler_poll(s, 0) > 0)
		;
	{
		uint64_t c[OTEL_SAMPLE_COUNTERS], published = 0;
		const struct otel_sampler_proc *q = otel_sampler_find(s, pid);

		otel_sampler_counters(s, c);
		for (int i = 0; i < st.nw; i++)
			published += st.w[i].published - storm_base((unsigned int)st.w[i].index);
		printf("%llu samples of the target in %.1f s: %llu with a record (%.0f bytes of "
		       "attributes on average), %llu without (slot NULL %llu, no TLS block %llu, "
		       "exiting %llu); "
		       "invalid %llu, torn %llu, oversized %llu, unreadable %llu, misaligned %llu, "
		       "another thread's %llu, going back %llu; %llu records published; "
		       "%llu lost in the ring buffer; %u descriptions\n",
		       (unsigned long long)st.total, t,
		       (unsigned long long)st.by_status[OTEL_THREAD_CTX_BPF_OK],
		       st.by_status[OTEL_THREAD_CTX_BPF_OK] ?
			       (double)st.attrs_bytes / (double)st.by_status[OTEL_THREAD_CTX_BPF_OK] :
			       0.0,
		       (unsigned long long)(st.by_status[OTEL_THREAD_CTX_BPF_NO_CONTEXT] +
					    st.by_status[OTEL_THREAD_CTX_BPF_NO_TLS] +
					    st.by_status[OTEL_THREAD_CTX_BPF_EXITING]),
		       (unsigned long long)st.by_status[OTEL_THREAD_CTX_BPF_NO_CONTEXT],
		       (unsigned long long)st.by_status[OTEL_THREAD_CTX_BPF_NO_TLS],
		       (unsigned long long)st.by_status[OTEL_THREAD_CTX_BPF_EXITING],
		       (unsigned long long)st.by_status[OTEL_THREAD_CTX_BPF_INVALID],
		       (unsigned long long)st.torn,
		       (unsigned long long)st.by_status[OTEL_THREAD_CTX_BPF_OVERSIZED],
		       (unsigned long long)st.by_status[OTEL_THREAD_CTX_BPF_UNREADABLE],
		       (unsigned long long)st.by_status[OTEL_THREAD_CTX_BPF_MISALIGNED],
		       (unsigned long long)st.wrong_thread, (unsigned long long)st.regressions,
		       (unsigned long long)published, (unsigned long long)c[OTEL_SAMPLE_COUNTER_LOST],
		       q != NULL ? q->generation : 0);
	}
	{
		uint64_t u = st.by_status[OTEL_THREAD_CTX_BPF_UNREADABLE];

		printf("unreadable: %llu of %llu samples (%.3f %%); by writer:", (unsigned long long)u,
		       (unsigned long long)st.total,
		       st.total ? 100.0 * (double)u / (double)st.total : 0.0);
		for (int i = 0; i < st.nw; i++)
			printf(" %u:%llu", st.w[i].tid, (unsigned long long)st.w[i].unreadable);
		printf("; episodes by thread (before stop/after):");
		for (int i = 0; i < st.nep; i++)
			if (st.ep[i].before + st.ep[i].after > 0)
				printf(" %u:%u/%u", st.ep[i].tid, st.ep[i].before, st.ep[i].after);
		printf("\n");
		for (int i = 0; i < st.nep; i++) {
			const struct episodes *e = &st.ep[i];

			if (e->before > UNREADABLE_EPISODES_MAX || e->after > 1 ||
			    (e->open && e->open_at < st.stop_ns)) {
				fprintf(stderr,
					"storm-check: thread %u: %u unreadable episodes before stop, %u "
					"after%s: more than a page-table change explains, a reader "
					"fault\n",
					e->tid, e->before, e->after,
					e->open && e->open_at < st.stop_ns ?
						", the last one never ended" :
						"");
				failures++;
			}
		}
		if (st.ep_overflow) {
			fprintf(stderr, "storm-check: more than %d threads sampled\n", MAX_THREADS_SEEN);
			failures++;
		}
	}
	for (int i = 0; i < st.nw; i++) {
		struct writer *w = &st.w[i];

		if (w->ok == 0) {
			fprintf(stderr, "storm-check: writer %d (tid %u) never seen with a record\n",
				w->index, w->tid);
			failures++;
		}
		if (w->last_seq > w->published) {
			fprintf(stderr,
				"storm-check: writer %d: read sequence 0x%llx, beyond the last one it "
				"published, 0x%llx\n",
				w->index, (unsigned long long)w->last_seq,
				(unsigned long long)w->published);
			failures++;
		}
	}
	{
		static const char *const kinds[FOREIGN_KINDS] = {
			"whole", "invalid", "no span id", "no trace id", "truncated entry",
			"oversized", "misaligned", "unmapped"
		};

		/* Every kind, in every run: the samples spread over its
		 * iterations, several hundred of them in the smallest run. */
		if (!late) {
			printf("the foreign writer's samples, each read as its kind says:");
			for (int k = 0; k < FOREIGN_KINDS; k++)
				printf("%s %s %llu", k ? "," : "", kinds[k],
				       (unsigned long long)st.foreign_by_kind[k]);
			printf("; not as it says: %llu\n", (unsigned long long)st.foreign_wrong);
		}
		for (int k = 0; k < FOREIGN_KINDS && !late; k++)
			if (st.foreign_by_kind[k] == 0) {
				fprintf(stderr, "storm-check: no sample of a foreign record of the "
						"kind '%s'\n", kinds[k]);
				failures++;
			}
	}
	if (st.broken || st.torn || st.foreign_wrong || st.wrong_thread || st.unknown_thread ||
	    st.regressions)
		failures++;
	if (st.total < quota) {
		fprintf(stderr, "storm-check: only %llu of %lu samples in %.0f s\n",
			(unsigned long long)st.total, quota, max_seconds);
		failures++;
	}
	otel_sampler_close(s);
	if (failures) {
		fprintf(stderr, "storm-check: FAILED\n");
		return 1;
	}
	printf("ok\n");
	return 0;
}
