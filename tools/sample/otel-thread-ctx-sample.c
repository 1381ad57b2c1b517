/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otel-thread-ctx-sample: sample the OpenTelemetry thread context of the
 * threads of one process, or of every process that publishes one, with an
 * eBPF program run by a perf event on every CPU, and print per thread what
 * the samples saw.  doc/sampler.md and doc/otel-thread-ctx-sample.1
 * document options, output and exit codes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <otel_thread_ctx.h>
#include <otel_thread_ctx_inspect_bpf.h>
#include <otel_thread_ctx_inspect.h>

#include "sampler.h"
#include "print.h"
#include "profile.h"
#include "symbolize.h"

#define REFRESH_SECONDS 1.0

_Static_assert(sizeof(struct otel_thread_ctx_bpf_record) == sizeof(struct otel_thread_ctx_record),
	       "the event's record is a record");

/* What the samples of one thread saw. */
struct thread {
	uint32_t pid, tid; /* tid 0: free slot */
	char name[17];
	uint64_t samples;
	uint64_t by_status[OTEL_THREAD_CTX_BPF_STATUS_COUNT];
	uint32_t last_status;
	int has_record;
	uint16_t last_found_size;
	/* Samples of a valid record that still breaks the format
	 * (otel_thread_ctx_inspect_anomalies()). */
	uint64_t truncated_entry, half_ids;
	/* Records over 612 bytes of attributes: read as OK with 612 of them
	 * (otel_thread_ctx_reader.bpf.h), or OVERSIZED from an earlier
	 * reader. */
	uint64_t oversized;
	struct otel_thread_ctx_bpf_record last; /* the last valid record */
};

static struct {
	struct thread *slots;
	size_t cap, used;
	int oom;
} table;

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t slot_of(uint32_t pid, uint32_t tid, size_t cap)
{
	uint64_t h = ((uint64_t)pid << 32 | tid) * UINT64_C(0x9e3779b97f4a7c15);

	return (size_t)(h >> 20) & (cap - 1);
}

static struct thread *thread_for(uint32_t pid, uint32_t tid)
{
	size_t i;

	if (table.used * 2 >= table.cap) {
		size_t cap = table.cap ? table.cap * 2 : 256;
		struct thread *n = calloc(cap, sizeof(*n));

		if (n == NULL) {
			table.oom = 1;
			return NULL;
		}
		for (size_t k = 0; k < table.cap; k++) {
			if (table.slots[k].tid == 0)
				continue;
			i = slot_of(table.slots[k].pid, table.slots[k].tid, cap);
			while (n[i].tid != 0)
				i = (i + 1) & (cap - 1);
			n[i] = table.slots[k];
		}
		free(table.slots);
		table.slots = n;
		table.cap = cap;
	}
	i = slot_of(pid, tid, table.cap);
	while (table.slots[i].tid != 0) {
		if (table.slots[i].tid == tid && table.slots[i].pid == pid)
			return &table.slots[i];
		i = (i + 1) & (table.cap - 1);
	}
	table.slots[i].pid = pid;
	table.slots[i].tid = tid;
	otel_thread_ctx_inspect_thread_name((pid_t)pid, (pid_t)tid, table.slots[i].name);
	table.used++;
	return &table.slots[i];
}

struct run {
	struct otel_sampler *s;
	int json;
	unsigned int frequency;
	const char *event;
	double started;
	/* --by, --top ...: the samples by context. */
	struct profile *profile;
	unsigned int top;
	/* The process of the last sample, to name its attribute keys. */
	const struct otel_sampler_proc *last_proc;
	/* Files written at the end. */
	const char *pprof, *folded, *flamegraph;
	double wall_started;
	/* --stacks: the names of their addresses. */
	struct symbolizer *sym;
};

static void symbolize(void *arg, uint32_t pid, uint64_t ip, int leaf, char *name, size_t len)
{
	struct run *r = arg;

	name[0] = '\0';
	if (r->sym != NULL)
		symbolizer_name(r->sym, (pid_t)pid, ip, leaf, name, len);
}

static int mapping_of(void *arg, uint32_t pid, uint64_t ip, int leaf, struct profile_mapping *m)
{
	struct run *r = arg;
	struct symbolizer_mapping sm;

	if (r->sym == NULL || symbolizer_mapping(r->sym, (pid_t)pid, ip, leaf, &sm) != 0)
		return -1;
	m->start = sm.start;
	m->limit = sm.limit;
	m->offset = sm.offset;
	m->filename = sm.path;
	m->build_id = sm.build_id;
	m->has_functions = sm.has_functions;
	m->is_main = sm.is_main;
	return 0;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Writes the files asked for; returns 0, or -1 after saying why. */
static int write_files(struct run *r, double elapsed)
{
	const char *paths[3] = { r->pprof, r->folded, r->flamegraph };
	int rc = 0;

	for (int i = 0; i < 3; i++) {
		FILE *f;
		int w;

		if (paths[i] == NULL)
			continue;
		f = fopen(paths[i], "we");
		if (f == NULL) {
			fprintf(stderr, "otel-thread-ctx-sample: %s: %s\n", paths[i], strerror(errno));
			rc = -1;
			continue;
		}
		if (i == 0)
			w = profile_write_pprof(r->profile, f, ends_with(paths[i], ".gz"),
						(uint64_t)(1e9 / r->frequency),
						(uint64_t)(r->wall_started * 1e9), (uint64_t)(elapsed * 1e9),
						symbolize, mapping_of, r);
		else if (i == 1)
			w = profile_write_folded(r->profile, f, symbolize, r);
		else
			w = profile_write_svg(r->profile, f, "CPU by thread context", symbolize, r);
		if (w != 0 || fclose(f) != 0) {
			fprintf(stderr, "otel-thread-ctx-sample: writing %s: %s\n", paths[i],
				errno == ENOTSUP ? "gzip needs zlib, and the tool was built without it"
						 : strerror(errno));
			if (w != 0)
				fclose(f);
			rc = -1;
		}
	}
	return rc;
}

static void on_event(void *arg, const struct otel_thread_ctx_bpf_event *ev, size_t size)
{
	struct run *r = arg;
	struct thread *t = thread_for(ev->pid, ev->tid);

	(void)size;
	if (t == NULL || ev->status >= OTEL_THREAD_CTX_BPF_STATUS_COUNT || ev->tid == 0)
		return;
	if (r->profile != NULL) {
		const struct otel_sampler_proc *p = r->last_proc;

		if (p == NULL || (uint32_t)p->pid != ev->pid)
			p = r->last_proc = otel_sampler_find(r->s, (pid_t)ev->pid);
		const struct otel_sampler_stack *st = otel_sampler_stack(r->s);
		struct profile_stack ps;

		if (st != NULL) {
			ps.ips = st->ips;
			ps.n = st->n;
			ps.cut = st->n == OTEL_SAMPLE_MAX_FRAMES;
			/* The mappings, while the process lives; read again
			 * before the names are written. */
			if (r->sym != NULL && !symbolizer_has(r->sym, (pid_t)ev->pid))
				symbolizer_load(r->sym, (pid_t)ev->pid);
		}
		if (profile_add(r->profile, p != NULL ? p->insp : NULL, ev, st != NULL ? &ps : NULL) != 0)
			table.oom = 1;
	}
	t->samples++;
	t->by_status[ev->status]++;
	t->last_status = ev->status;
	if (ev->status == OTEL_THREAD_CTX_BPF_OK) {
		size_t n = OTEL_THREAD_CTX_BPF_HEADER_SIZE + ev->record.attrs_data_size;
		unsigned int anomalies = otel_thread_ctx_inspect_anomalies(
			(const struct otel_thread_ctx_record *)&ev->record, ev->attrs_data_size);

		memcpy(&t->last, &ev->record, n);
		t->has_record = 1;
		t->last_found_size = ev->attrs_data_size;
		if (anomalies & OTEL_THREAD_CTX_INSPECT_TRUNCATED_ENTRY)
			t->truncated_entry++;
		if (anomalies & OTEL_THREAD_CTX_INSPECT_HALF_IDS)
			t->half_ids++;
		if (anomalies & OTEL_THREAD_CTX_INSPECT_OVERSIZED)
			t->oversized++;
	}
	if (ev->status == OTEL_THREAD_CTX_BPF_OVERSIZED) {
		t->oversized++;
		t->last_found_size = ev->attrs_data_size;
	}
}

static const char *status_word(uint32_t status)
{
	switch (status) {
	case OTEL_THREAD_CTX_BPF_OK:
		return "ok";
	case OTEL_THREAD_CTX_BPF_NO_CONTEXT:
	case OTEL_THREAD_CTX_BPF_NO_TLS:
		return "no-context";
	case OTEL_THREAD_CTX_BPF_INVALID:
		return "invalid";
	case OTEL_THREAD_CTX_BPF_OVERSIZED:
		return "oversized";
	case OTEL_THREAD_CTX_BPF_UNREADABLE:
		return "unreadable";
	case OTEL_THREAD_CTX_BPF_MISALIGNED:
		return "misaligned";
	case OTEL_THREAD_CTX_BPF_EXITING:
		return "exiting";
	}
	return "error";
}

static uint64_t no_context(const struct thread *t)
{
	return t->by_status[OTEL_THREAD_CTX_BPF_NO_CONTEXT] + t->by_status[OTEL_THREAD_CTX_BPF_NO_TLS] +
	       t->by_status[OTEL_THREAD_CTX_BPF_EXITING];
}

static uint64_t unreadable(const struct thread *t)
{
	return t->by_status[OTEL_THREAD_CTX_BPF_UNREADABLE] +
	       t->by_status[OTEL_THREAD_CTX_BPF_MISALIGNED];
}

static int cmp_thread(const void *a, const void *b)
{
	const struct thread *x = *(const struct thread *const *)a;
	const struct thread *y = *(const struct thread *const *)b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static const char *libc_name(uint32_t libc)
{
	return libc == OTEL_THREAD_CTX_BPF_LIBC_GLIBC ? "glibc" :
	       libc == OTEL_THREAD_CTX_BPF_LIBC_MUSL  ? "musl" :
							"unknown";
}

/* A process that registered keys after the inspector read its key map
 * publishes indices beyond it: describe it again, once per report. */
static void refresh_key_names(struct otel_sampler *s, struct thread **th, size_t n)
{
	uint32_t last = 0;

	for (size_t i = 0; i < n; i++) {
		const struct otel_sampler_proc *p;
		struct otel_thread_ctx_attr_iter it;
		struct otel_thread_ctx_attr a;

		if (!th[i]->has_record || th[i]->pid == last)
			continue;
		p = otel_sampler_find(s, (pid_t)th[i]->pid);
		if (p == NULL || p->insp == NULL || p->status != OTEL_THREAD_CTX_OK)
			continue;
		/* An index the key map does not name: the walk counts it. */
		otel_thread_ctx_inspect_attr_iter_init(&it, p->insp,
						       (const struct otel_thread_ctx_record *)&th[i]->last);
		while (otel_thread_ctx_inspect_attr_iter_next(&it, &a) == 0)
			;
		if (it.unmapped != 0) {
			otel_sampler_redescribe(s, (pid_t)th[i]->pid);
			last = th[i]->pid;
		}
	}
}

/* Prints the report; returns 1 if some sample found a record that breaks
 * the format. */
static int report(struct run *r)
{
	const struct otel_sampler_proc *procs;
	size_t nprocs = otel_sampler_procs(r->s, &procs), n = 0, published = 0;
	uint64_t counters[OTEL_SAMPLE_COUNTERS], seen = 0;
	struct thread **th = calloc(table.used ? table.used : 1, sizeof(*th));
	double elapsed = now_s() - r->started;
	int bad = 0;

	if (th == NULL) {
		fprintf(stderr, "otel-thread-ctx-sample: out of memory\n");
		return 0;
	}
	for (size_t i = 0; i < table.cap; i++)
		if (table.slots[i].tid != 0)
			th[n++] = &table.slots[i];
	qsort(th, n, sizeof(*th), cmp_thread);
	refresh_key_names(r->s, th, n);
	r->last_proc = NULL;
	nprocs = otel_sampler_procs(r->s, &procs);
	otel_sampler_counters(r->s, counters);
	for (size_t i = 0; i < n; i++) {
		seen += th[i]->samples;
		if (th[i]->oversized != 0 || unreadable(th[i]) != 0 ||
		    th[i]->truncated_entry != 0 || th[i]->half_ids != 0)
			bad = 1;
	}
	for (size_t i = 0; i < nprocs; i++)
		if (procs[i].generation > 0)
			published++;
	if (r->json) {
		printf("{\"type\":\"summary\",\"elapsed_s\":%.3f,\"event\":\"%s\",\"frequency\":%u,"
		       "\"cpus\":%u,\"processes\":%zu,\"samples\":%" PRIu64 ",\"lost\":%" PRIu64 "}\n",
		       elapsed, r->event, r->frequency, otel_sampler_cpus(r->s), published, seen,
		       counters[OTEL_SAMPLE_COUNTER_LOST]);
		for (size_t i = 0; i < nprocs; i++) {
			const struct otel_sampler_proc *p = &procs[i];
			const struct otel_thread_ctx_inspect_info *info =
				otel_thread_ctx_inspect_info(p->insp);

			if (p->generation == 0)
				continue;
			printf("{\"type\":\"process\",\"pid\":%d,\"running\":%s,\"libc\":\"%s\","
			       "\"process_context\":%s,\"descriptions\":%u",
			       (int)p->pid, p->status == OTEL_THREAD_CTX_ESRCH ? "false" : "true",
			       libc_name(p->desc.libc),
			       info != NULL && info->process_ctx != NULL ? "true" : "false",
			       p->generation);
			printf(",\"modules\":");
			tool_modules_json(info);
			printf("}\n");
		}
		if (r->sym != NULL) {
			uint64_t with, empty, cut;

			profile_stack_counts(r->profile, &with, &empty, &cut);
			printf("{\"type\":\"stacks\",\"samples\":%" PRIu64 ",\"empty\":%" PRIu64
			       ",\"cut\":%" PRIu64 "}\n", with, empty, cut);
		}
		if (r->profile != NULL)
			profile_print_groups(r->profile, r->top, 1);
		for (size_t i = 0; i < n && r->profile == NULL; i++) {
			const struct thread *t = th[i];
			const struct otel_sampler_proc *p = otel_sampler_find(r->s, (pid_t)t->pid);

			printf("{\"type\":\"thread\",\"pid\":%u,\"tid\":%u,\"name\":", t->pid, t->tid);
			tool_json_string(t->name, strlen(t->name));
			printf(",\"samples\":%" PRIu64 ",\"context\":%" PRIu64 ",\"no_context\":%" PRIu64
			       ",\"invalid\":%" PRIu64 ",\"oversized\":%" PRIu64
			       ",\"unreadable\":%" PRIu64 ",\"misaligned\":%" PRIu64
			       ",\"exiting\":%" PRIu64 ",\"truncated_entry\":%" PRIu64
			       ",\"half_ids\":%" PRIu64 ",\"last\":\"%s\"",
			       t->samples, t->by_status[OTEL_THREAD_CTX_BPF_OK], no_context(t),
			       t->by_status[OTEL_THREAD_CTX_BPF_INVALID],
			       t->oversized, t->by_status[OTEL_THREAD_CTX_BPF_UNREADABLE],
			       t->by_status[OTEL_THREAD_CTX_BPF_MISALIGNED],
			       t->by_status[OTEL_THREAD_CTX_BPF_EXITING], t->truncated_entry,
			       t->half_ids, status_word(t->last_status));
			if (t->has_record) {
				printf(",\"record\":{\"trace_id\":\"");
				tool_hex(t->last.trace_id, 16);
				printf("\",\"span_id\":\"");
				tool_hex(t->last.span_id, 8);
				printf("\",\"trace_flags\":%u,\"attrs_data_size\":%u,\"attributes\":",
				       t->last.trace_flags, t->last_found_size);
				tool_attrs_json(p != NULL ? p->insp : NULL,
						(const struct otel_thread_ctx_record *)&t->last);
				printf("}");
			}
			printf("}\n");
		}
	} else {
		printf("sampled %.1f s, %s at %u Hz on %u CPUs: %" PRIu64
		       " samples of %zu process%s, %" PRIu64 " lost\n",
		       elapsed, r->event, r->frequency, otel_sampler_cpus(r->s), seen, published,
		       published == 1 ? "" : "es", counters[OTEL_SAMPLE_COUNTER_LOST]);
		for (size_t i = 0; i < nprocs; i++) {
			const struct otel_sampler_proc *p = &procs[i];
			const struct otel_thread_ctx_inspect_info *info =
				otel_thread_ctx_inspect_info(p->insp);

			if (p->generation == 0)
				continue;
			printf("process %d%s: %s", (int)p->pid,
			       p->status == OTEL_THREAD_CTX_ESRCH ? " (exited)" : "",
			       libc_name(p->desc.libc));
			if (info != NULL && info->process_ctx != NULL)
				printf(", process context with %zu attribute keys\n",
				       info->process_ctx->key_count);
			else
				printf(", no process context\n");
			tool_modules_table(info);
		}
		if (r->sym != NULL) {
			uint64_t with, empty, cut;

			profile_stack_counts(r->profile, &with, &empty, &cut);
			printf("user stacks: %" PRIu64 " samples, %" PRIu64 " empty, %" PRIu64
			       " cut at %d frames (frame pointers: code built without them "
			       "gives short stacks)\n", with, empty, cut, OTEL_SAMPLE_MAX_FRAMES);
		}
		if (r->profile != NULL) {
			profile_print_groups(r->profile, r->top, 0);
			n = 0; /* no thread table */
		} else {
			printf("%-8s %-8s %-16s %8s %8s %8s %7s %9s %10s %-32s %-16s %-2s %s\n", "PID", "TID",
		       "NAME", "SAMPLES", "CONTEXT", "NO-CTX", "INVALID", "OVERSIZED", "UNREADABLE",
		       "TRACE ID", "SPAN ID", "FL", "ATTRIBUTES (last record seen)");
		}
		for (size_t i = 0; i < n; i++) {
			const struct thread *t = th[i];
			const struct otel_sampler_proc *p = otel_sampler_find(r->s, (pid_t)t->pid);

			printf("%-8u %-8u ", t->pid, t->tid);
			tool_text_cell(t->name, 16);
			printf(" %8" PRIu64 " %8" PRIu64 " %8" PRIu64 " %7" PRIu64
			       " %9" PRIu64 " %10" PRIu64 " ",
			       t->samples, t->by_status[OTEL_THREAD_CTX_BPF_OK],
			       no_context(t), t->by_status[OTEL_THREAD_CTX_BPF_INVALID],
			       t->oversized, unreadable(t));
			if (t->has_record) {
				tool_hex(t->last.trace_id, 16);
				putchar(' ');
				tool_hex(t->last.span_id, 8);
				printf(" %02x", t->last.trace_flags);
				tool_attrs_table(p != NULL ? p->insp : NULL,
						 (const struct otel_thread_ctx_record *)&t->last);
				if (t->truncated_entry != 0)
					printf(" (%" PRIu64 " with a truncated entry)",
					       t->truncated_entry);
				if (t->half_ids != 0)
					printf(" (%" PRIu64 " with only one of the ids set)", t->half_ids);
				if (t->oversized != 0)
					printf(" (%" PRIu64 " with attrs_data_size above 612, %u, read"
					       " as 612)",
					       t->oversized, t->last_found_size);
			} else {
				printf("(%s", status_word(t->last_status));
				if (t->last_status == OTEL_THREAD_CTX_BPF_OVERSIZED)
					printf(": attrs_data_size %u > 612", t->last_found_size);
				printf(")");
			}
			putchar('\n');
		}
	}
	fflush(stdout);
	free(th);
	return bad;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: otel-thread-ctx-sample [--json] [--frequency HZ] [--duration SECONDS]\n"
		"                              [--interval SECONDS] [--event cpu-clock|cycles]\n"
		"                              [--by KEY[,KEY...]]... [--top N]\n"
		"                              [--stacks] [--pprof FILE] [--folded FILE]\n"
		"                              [--flamegraph FILE.svg]\n"
		"                              [--verbose] PID | --all\n"
		"Samples the OpenTelemetry thread context of the threads of process PID (or\n"
		"of every process that publishes one) with an eBPF program, HZ times a\n"
		"second on each CPU (default 99), for SECONDS (default: until interrupted,\n"
		"or until the process exits), and prints per thread what the samples saw.\n"
		"--interval prints a report every SECONDS too.  Needs root (CAP_BPF and\n"
		"CAP_PERFMON) and a kernel with BTF.\n"
		"--by groups the samples by context instead: trace_id, span_id or an\n"
		"attribute key name (several: one group per combination); --top N shows\n"
		"the N largest groups (default 10, 0: all) and the rest as one line.\n"
		"--stacks adds each sample's user stack (frame pointers), named from the\n"
		"process's files; --pprof writes a pprof profile (gzip when FILE ends in .gz), the context\n"
		"as labels; --folded folded stacks and --flamegraph an SVG flame graph,\n"
		"the groups as root frames.\n");
}

static int parse_seconds(const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || *end != '\0' || !(v >= 0) || v > 1e7)
		return -1;
	*out = v;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "frequency", required_argument, NULL, 'F' },
		{ "duration", required_argument, NULL, 'd' },
		{ "interval", required_argument, NULL, 'i' },
		{ "event", required_argument, NULL, 'e' },
		{ "all", no_argument, NULL, 'a' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "by", required_argument, NULL, 'b' },
		{ "top", required_argument, NULL, 't' },
		{ "stacks", no_argument, NULL, 'S' },
		{ "pprof", required_argument, NULL, 'P' },
		{ "folded", required_argument, NULL, 'f' },
		{ "flamegraph", required_argument, NULL, 'g' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct otel_sampler_options o = { 99, 0, 0, 0, 0 };
	struct run r;
	double duration = 0, interval = 0, next_refresh, next_report;
	int c, all = 0, verbose = 0, rc, worst = EXIT_OK, ever_published = 0;
	long pid = 0;
	const char *keys[PROFILE_MAX_KEYS];
	size_t nkeys = 0;
	int want_profile = 0;
	char why[512];
	struct sigaction sa;

	memset(&r, 0, sizeof(r));
	r.event = "cpu-clock";
	r.top = 10;
	while ((c = getopt_long(argc, argv, "jF:d:i:e:avhb:t:P:f:g:S", opts, NULL)) != -1) {
		char *end;
		unsigned long v;

		switch (c) {
		case 'j':
			r.json = 1;
			break;
		case 'F':
			errno = 0;
			v = strtoul(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || *optarg == '-' || v == 0 || v > 1000000) {
				fprintf(stderr, "otel-thread-ctx-sample: bad --frequency: %s\n", optarg);
				return EXIT_USAGE;
			}
			o.frequency = (unsigned int)v;
			break;
		case 'd':
			if (parse_seconds(optarg, &duration) != 0) {
				fprintf(stderr, "otel-thread-ctx-sample: bad --duration: %s\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'i':
			if (parse_seconds(optarg, &interval) != 0) {
				fprintf(stderr, "otel-thread-ctx-sample: bad --interval: %s\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'e':
			if (strcmp(optarg, "cpu-clock") == 0) {
				o.cycles = 0;
			} else if (strcmp(optarg, "cycles") == 0) {
				o.cycles = 1;
			} else {
				fprintf(stderr, "otel-thread-ctx-sample: bad --event: %s\n", optarg);
				return EXIT_USAGE;
			}
			r.event = o.cycles ? "cycles" : "cpu-clock";
			break;
		case 'a':
			all = 1;
			break;
		case 'b':
			/* KEY[,KEY...]: the option's own string is split in place. */
			for (char *k = strtok(optarg, ","); k != NULL; k = strtok(NULL, ",")) {
				if (nkeys == PROFILE_MAX_KEYS) {
					fprintf(stderr, "otel-thread-ctx-sample: --by: at most %d keys\n",
						PROFILE_MAX_KEYS);
					return EXIT_USAGE;
				}
				keys[nkeys++] = k;
			}
			if (nkeys == 0) {
				fprintf(stderr, "otel-thread-ctx-sample: --by: no key given\n");
				return EXIT_USAGE;
			}
			want_profile = 1;
			break;
		case 'S':
			o.stacks = 1;
			want_profile = 1;
			break;
		case 'P':
			r.pprof = optarg;
			want_profile = 1;
			break;
		case 'f':
			r.folded = optarg;
			want_profile = 1;
			break;
		case 'g':
			r.flamegraph = optarg;
			want_profile = 1;
			break;
		case 't':
			errno = 0;
			v = strtoul(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || *optarg == '-' || *optarg == '\0' ||
			    v > 1000000) {
				fprintf(stderr, "otel-thread-ctx-sample: bad --top: %s\n", optarg);
				return EXIT_USAGE;
			}
			r.top = (unsigned int)v;
			break;
		case 'v':
			verbose = 1;
			break;
		case 'h':
			usage(stdout);
			return EXIT_OK;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (all ? optind != argc : optind + 1 != argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!all) {
		char *end;

		pid = strtol(argv[optind], &end, 10);
		if (*argv[optind] == '\0' || *end != '\0' || pid <= 0 || pid > 0x7fffffff) {
			fprintf(stderr, "otel-thread-ctx-sample: not a process id: %s\n", argv[optind]);
			return EXIT_USAGE;
		}
	}
	r.frequency = o.frequency;
	/* Before the BPF program, which takes a moment to load. */
	if (!all && kill((pid_t)pid, 0) != 0 && errno == ESRCH) {
		fprintf(stderr, "otel-thread-ctx-sample: no such process: %ld\n", pid);
		return EXIT_NO_PROCESS;
	}

	rc = otel_sampler_open(&o, on_event, &r, &r.s, why, sizeof(why));
	if (rc == OTEL_SAMPLER_ELOAD || (rc != OTEL_SAMPLER_OK && verbose))
		otel_sampler_print_log(stderr);
	if (rc != OTEL_SAMPLER_OK) {
		fprintf(stderr, "otel-thread-ctx-sample: %s\n", why);
		return rc == OTEL_SAMPLER_EPERM || rc == OTEL_SAMPLER_ENOBTF ? EXIT_NOT_PERMITTED :
										  EXIT_FAILED;
	}
	if (!all) {
		rc = otel_sampler_watch(r.s, (pid_t)pid);
		switch (rc) {
		case OTEL_THREAD_CTX_OK:
			break;
		case OTEL_THREAD_CTX_ESRCH:
			fprintf(stderr, "otel-thread-ctx-sample: no such process: %ld\n", pid);
			otel_sampler_close(r.s);
			return EXIT_NO_PROCESS;
		case OTEL_THREAD_CTX_EPERM:
			fprintf(stderr,
				"otel-thread-ctx-sample: not permitted to read the maps and memory "
				"of process %ld\n", pid);
			otel_sampler_close(r.s);
			return EXIT_NOT_PERMITTED;
		case OTEL_THREAD_CTX_ENOSLOT:
			fprintf(stderr,
				"otel-thread-ctx-sample: process %ld publishes no thread context yet (no "
				"loaded module defines otel_thread_ctx_v1); watching for one it loads\n",
				pid);
			break;
		default:
			fprintf(stderr, "otel-thread-ctx-sample: process %ld: %s; watching for a change\n",
				pid, otel_thread_ctx_inspect_strerror(rc));
			break;
		}
	} else {
		otel_sampler_refresh(r.s, 1);
	}
	rc = otel_sampler_start(r.s, why, sizeof(why));
	if (rc != OTEL_SAMPLER_OK) {
		if (verbose)
			otel_sampler_print_log(stderr);
		fprintf(stderr, "otel-thread-ctx-sample: %s\n", why);
		otel_sampler_close(r.s);
		return rc == OTEL_SAMPLER_EPERM ? EXIT_NOT_PERMITTED : EXIT_FAILED;
	}

	if ((want_profile && (r.profile = profile_new(keys, nkeys)) == NULL) ||
	    (o.stacks && (r.sym = symbolizer_new()) == NULL)) {
		fprintf(stderr, "otel-thread-ctx-sample: out of memory\n");
		otel_sampler_close(r.s);
		return EXIT_FAILED;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	r.started = now_s();
	{
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		r.wall_started = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	}
	next_refresh = r.started + REFRESH_SECONDS;
	next_report = r.started + interval;
	while (!stop) {
		double t;

		if (otel_sampler_poll(r.s, 100) < 0) {
			fprintf(stderr, "otel-thread-ctx-sample: reading the ring buffer failed\n");
			worst = EXIT_FAILED;
			break;
		}
		if (table.oom) {
			fprintf(stderr, "otel-thread-ctx-sample: out of memory\n");
			worst = EXIT_FAILED;
			break;
		}
		t = now_s();
		if (duration > 0 && t - r.started >= duration)
			break;
		if (t >= next_refresh) {
			otel_sampler_refresh(r.s, all);
			r.last_proc = NULL;
			next_refresh = t + REFRESH_SECONDS;
			if (!all) {
				const struct otel_sampler_proc *p =
					otel_sampler_find(r.s, (pid_t)pid);

				if (p == NULL || p->status == OTEL_THREAD_CTX_ESRCH) {
					if (!r.json)
						fprintf(stderr,
							"otel-thread-ctx-sample: process %ld has exited\n",
							pid);
					break;
				}
			}
		}
		if (interval > 0 && t >= next_report) {
			if (report(&r))
				worst = EXIT_BAD_RECORD;
			next_report = t + interval;
		}
	}
	/* What is still in the ring buffer. */
	while (otel_sampler_poll(r.s, 0) > 0)
		;
	if (r.sym != NULL) {
		/* Modules loaded since the first sample: the mappings now, of
		 * the processes still running. */
		const struct otel_sampler_proc *procs;
		size_t n = otel_sampler_procs(r.s, &procs);

		for (size_t i = 0; i < n; i++)
			if (symbolizer_has(r.sym, procs[i].pid))
				symbolizer_load(r.sym, procs[i].pid);
	}
	if (report(&r) && worst == EXIT_OK)
		worst = EXIT_BAD_RECORD;
	if (r.profile != NULL && write_files(&r, now_s() - r.started) != 0)
		worst = EXIT_FAILED;
	{
		const struct otel_sampler_proc *procs;
		size_t n = otel_sampler_procs(r.s, &procs);

		for (size_t i = 0; i < n; i++)
			if (procs[i].generation > 0)
				ever_published = 1;
		if (!ever_published && worst == EXIT_OK) {
			if (all) {
				fprintf(stderr, "otel-thread-ctx-sample: no process published a thread "
						"context\n");
				worst = EXIT_NO_SLOT;
			} else {
				int st = n > 0 ? procs[0].status : OTEL_THREAD_CTX_ESRCH;

				fprintf(stderr, "otel-thread-ctx-sample: process %ld published no thread "
						"context: %s\n", pid, otel_thread_ctx_inspect_strerror(st));
				worst = st == OTEL_THREAD_CTX_EMODEL ? EXIT_MODEL : EXIT_NO_SLOT;
			}
		}
	}
	otel_sampler_close(r.s);
	profile_free(r.profile);
	symbolizer_free(r.sym);
	free(table.slots);
	return worst;
}
