/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otel-thread-ctx-check --pid: what a profiler will see of a running
 * process, whoever wrote its thread contexts (this library or another
 * implementation of OTEP 4947 and 4719), rule by rule.  Every finding names
 * the rule it rests on and what to change.  Three parts, as a profiler reads
 * them:
 *
 *   the slot             which module defines otel_thread_ctx_v1, whether
 *                        readers can find it (.dynsym, a TLS model they
 *                        follow), the file checks of each such module;
 *   the process context  the OTEL_CTX mappings (name, count, header,
 *                        payload, schema, key map), read as OTEP 4719's
 *                        Reading Protocol and the eBPF profiler read them;
 *   each thread          its record, read as the readers read it (each
 *                        thread stopped in turn, none left stopped), and
 *                        checked against the record's rules.
 *
 * It reads the process through libotel-thread-ctx-inspect and /proc, and
 * never writes to it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

#include <otel_thread_ctx_inspect.h>
#include <otel_thread_ctx_process.h>

#include "check.h"
#include "print.h"
#include "utf8.h"

/* The rules findings cite. */
#define R_RESOLUTION "OTEP 4947, \"Thread-Local Variable Resolution\""
#define R_RECORD "OTEP 4947, \"Thread-Local Context Record\""
#define R_REFERENCE "OTEP 4947, \"Process Context: Thread-Local Reference Data\""
#define R_KEY_MAP "OTEP 4947, \"attribute_key_map dictionary semantics\""
#define R_HEADER "OTEP 4719, \"Header Structure\""
#define R_PUBLISH "OTEP 4719, \"Publication Protocol\""
#define R_READING "OTEP 4719, \"Reading Protocol\""
#define R_EBPF "the OpenTelemetry eBPF profiler's reader"

#define MAX_FINDINGS 64
/* Threads listed one by one in a finding's message before "and N more". */
#define TIDS_SHOWN 8

struct per_thread;

struct finding {
	const char *id;
	enum status status;
	const char *rule; /* NULL: a fact, no rule */
	char message[512];
	char fix[256];
	/* A per-thread finding: the threads that break the rule. */
	const struct thread_list *threads;
};

/* A rule broken by several threads: one finding, the threads counted. */
struct per_thread {
	const char *id, *rule, *what, *fix;
	enum status status;
	size_t count;
	pid_t tids[TIDS_SHOWN];
};

/* Every thread a per-thread rule counted (--json lists them), as far as
 * memory allows: `listed` of them. */
struct thread_list {
	pid_t *all;
	size_t listed, cap;
};

enum { T_VALID, T_ALIGN, T_UNREADABLE, T_HALF_IDS, T_FLAGS, T_OVERSIZED, T_TRUNCATED,
       T_UNKNOWN_KEY, T_UTF8, T_REPEATED_KEY, T_TIMEOUT, T_PERM, T_COUNT };

static struct per_thread per_thread[T_COUNT] = {
	[T_VALID] = { "record-valid", R_RECORD, "valid is not 1: readers ignore the record",
		      "set valid to 1 once the record is complete (or publish by pointer swap)",
		      S_FAIL, 0, { 0 } },
	[T_ALIGN] = { "record-alignment", R_RECORD,
		      "the record is not 2-byte aligned: readers refuse it",
		      "allocate records aligned to 8 bytes", S_FAIL, 0, { 0 } },
	[T_UNREADABLE] = { "record-unreadable", R_RECORD,
			   "the slot points to memory that cannot be read",
			   "store a record's address in the slot, or NULL", S_FAIL, 0, { 0 } },
	[T_HALF_IDS] = { "record-ids", R_RECORD,
			 "one of trace id and span id is all zero, the other not",
			 "set both ids, or neither", S_FAIL, 0, { 0 } },
	[T_FLAGS] = { "record-flags", R_RECORD, "trace flags are set without ids",
		      "write trace flags 0 when the ids are unset", S_WARN, 0, { 0 } },
	[T_OVERSIZED] = { "record-size", R_EBPF,
			  "attrs_data_size is above 612: the record is larger than the 640 bytes "
			  "the eBPF profiler copies, which cuts the attributes there",
			  "keep the record within 640 bytes", S_FAIL, 0, { 0 } },
	[T_TRUNCATED] = { "attrs-truncated", R_RECORD,
			  "an attribute entry runs past attrs_data_size: readers stop there",
			  "count every entry's 2-byte header and value in attrs_data_size",
			  S_FAIL, 0, { 0 } },
	[T_UNKNOWN_KEY] = { "attrs-key-index", R_RECORD,
			    "an attribute's key index is outside threadlocal.attribute_key_map: "
			    "readers MUST ignore it",
			    "register the key in the process context's key map before using "
			    "its index", S_FAIL, 0, { 0 } },
	[T_UTF8] = { "attrs-utf8", R_RECORD, "an attribute value is not UTF-8",
		     "write values as UTF-8 bytes", S_FAIL, 0, { 0 } },
	[T_REPEATED_KEY] = { "attrs-repeated-key", R_RECORD,
			     "a key index appears more than once: readers use the last one",
			     "", S_INFO, 0, { 0 } },
	[T_TIMEOUT] = { "thread-not-stopped", NULL,
			"the thread did not stop for the read in time (its record was not read)",
			"", S_WARN, 0, { 0 } },
	[T_PERM] = { "thread-not-permitted", NULL,
		     "not permitted to attach to the thread", "run as root, or as the process's "
		     "owner with ptrace allowed (kernel.yama.ptrace_scope)", S_WARN, 0, { 0 } },
};

static struct thread_list listed[T_COUNT];

struct pctx_view {
	int status;             /* of the mapping the reader takes */
	size_t accepted;        /* mappings named as readers look for */
	size_t misnamed;        /* mappings named OTEL_CTX otherwise */
	struct otel_thread_ctx_inspect_process_snapshot *snap;
	char name[256];         /* the name of the mapping read */
	uint64_t start;
	struct otel_thread_ctx_process_header header;
	bool header_read;
};

struct doctor {
	pid_t pid;
	char comm[17];
	struct finding f[MAX_FINDINGS];
	size_t nf;
	otel_thread_ctx_inspector *insp;
	int open_status;
	struct pctx_view pctx;
	struct otel_thread_ctx_inspect_thread *threads;
	size_t nthreads;
	/* What a profiler will see. */
	size_t with_ids, with_attrs, read_ok;
	bool slot_found, records_shown;
};

__attribute__((format(printf, 5, 6)))
static struct finding *add(struct doctor *d, const char *id, enum status st, const char *rule,
			   const char *fmt, ...)
{
	static struct finding spare;
	struct finding *f = d->nf < MAX_FINDINGS ? &d->f[d->nf++] : &spare;
	va_list ap;

	memset(f, 0, sizeof(*f));
	f->id = id;
	f->status = st;
	f->rule = rule;
	va_start(ap, fmt);
	vsnprintf(f->message, sizeof(f->message), fmt, ap);
	va_end(ap);
	return f;
}

static void set_fix(struct finding *f, const char *fix)
{
	snprintf(f->fix, sizeof(f->fix), "%s", fix);
}

/* One line of /proc/PID/maps: its start, permissions, offset and name
 * (what follows the inode, "" for none). */
struct maps_line {
	unsigned long long start, offset;
	char perms[5];
	const char *name;
};

/* Calls visit() for each line of /proc/PID/maps that parses, until it
 * returns true.  false when the file cannot be opened. */
static bool each_maps_line(pid_t pid, bool (*visit)(const struct maps_line *l, void *arg),
			   void *arg)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (f == NULL)
		return false;
	while (getline(&line, &cap, f) > 0) {
		struct maps_line l = { .perms = "" };
		int name_at = 0;
		char *nl;

		if (sscanf(line, "%llx-%*x %4s %llx %*x:%*x %*u %n", &l.start, l.perms, &l.offset,
			   &name_at) < 3 ||
		    name_at == 0)
			continue;
		if ((nl = strchr(line + name_at, '\n')) != NULL)
			*nl = '\0';
		l.name = line + name_at;
		if (visit(&l, arg))
			break;
	}
	free(line);
	fclose(f);
	return true;
}

/* --- The slot --------------------------------------------------------------- */

/* The ELF files the process maps from their start: where a definition of
 * the slot that readers cannot find would be.  Calls visit() once per
 * file (its path in the process, and the path that reaches it from here,
 * through the process's root: a container's files), until it returns
 * true. */
struct mapped_files {
	pid_t pid;
	bool (*visit)(const char *name, const char *path, void *arg);
	void *arg;
	char *seen; /* the paths visited, NUL-separated */
	size_t seen_len;
};

static bool mapped_file_line(const struct maps_line *l, void *arg)
{
	struct mapped_files *m = arg;
	char proc_path[PATH_MAX + 64];
	size_t n = strlen(l->name) + 1;
	char *more;

	if (l->offset != 0 || l->name[0] != '/' || strstr(l->name, " (deleted)") != NULL)
		return false;
	/* Each file once. */
	for (size_t at = 0; at < m->seen_len; at += strlen(m->seen + at) + 1)
		if (strcmp(m->seen + at, l->name) == 0)
			return false;
	more = realloc(m->seen, m->seen_len + n);
	if (more == NULL)
		return true;
	m->seen = more;
	memcpy(m->seen + m->seen_len, l->name, n);
	m->seen_len += n;
	snprintf(proc_path, sizeof(proc_path), "/proc/%d/root%s", (int)m->pid, l->name);
	return m->visit(l->name, proc_path, m->arg);
}

static void each_mapped_file(pid_t pid, bool (*visit)(const char *name, const char *path, void *arg),
			     void *arg)
{
	struct mapped_files m = { .pid = pid, .visit = visit, .arg = arg };

	each_maps_line(pid, mapped_file_line, &m);
	free(m.seen);
}

struct unexported {
	struct doctor *d;
	size_t found;
};

static bool find_unexported(const char *name, const char *path, void *arg)
{
	struct unexported *u = arg;
	struct report *r = calloc(1, sizeof(*r));

	if (r == NULL)
		return true;
	r->path = path;
	check_file(r);
	if (r->has_slot && r->slot.shndx != OTEL__SHN_UNDEF && !r->slot_in_dynsym) {
		struct finding *f = add(u->d, "slot-not-exported", S_FAIL, R_RESOLUTION,
					"%s defines %s, but not in .dynsym: readers look for it "
					"there only, so no profiler finds this process's thread "
					"contexts", name, SLOT);

		set_fix(f, "export it: link with " EXPORT_FLAG " (or -rdynamic)");
		u->found++;
	}
	otel__elf_close(r->elf);
	free(r);
	return false;
}

/* The file checks of a module that defines the slot, as findings. */
static void check_module_file(struct doctor *d, const struct otel_thread_ctx_inspect_module *m)
{
	char path[PATH_MAX + 64];
	struct report *r = calloc(1, sizeof(*r));

	if (r == NULL)
		return;
	snprintf(path, sizeof(path), "/proc/%d/root%s", (int)d->pid, m->path);
	r->path = path;
	check_file(r);
	if (r->verdict == V_ERROR) {
		add(d, "slot-module-file", S_INFO, NULL,
		    "%s: its file could not be checked (%s)", m->path, r->error);
	} else {
		for (size_t i = 0; i < r->nchecks; i++) {
			struct finding *f;

			if (r->checks[i].status < S_WARN)
				continue;
			f = add(d, "slot-module-file", r->checks[i].status, R_RESOLUTION, "%s: %s: %s",
				m->path, r->checks[i].id, r->checks[i].message);
			set_fix(f, "run otel-thread-ctx-check on the file for the details");
		}
	}
	otel__elf_close(r->elf);
	free(r);
}

static void check_slot(struct doctor *d)
{
	const struct otel_thread_ctx_inspect_info *info;

	/* EAGAIN: it loaded or unloaded a module, or exec()ed, during the
	 * look (a process just started is still loading its libraries). */
	for (int attempt = 0; attempt < 10; attempt++) {
		struct timespec ts = { 0, 20 * 1000000 };

		d->open_status = otel_thread_ctx_inspect_open(d->pid, &d->insp);
		if (d->open_status != OTEL_THREAD_CTX_EAGAIN)
			break;
		nanosleep(&ts, NULL);
	}
	if (d->open_status == OTEL_THREAD_CTX_ENOSLOT) {
		struct unexported u = { d, 0 };

		each_mapped_file(d->pid, find_unexported, &u);
		if (u.found == 0)
			add(d, "slot", S_INFO, NULL,
			    "no module of the process defines %s: it publishes no thread context "
			    "(or from a file that cannot be read any more)", SLOT);
		return;
	}
	if (d->open_status == OTEL_THREAD_CTX_EMODEL) {
		struct finding *f = add(d, "slot-model", S_FAIL, R_RESOLUTION,
					"a module defines %s, but no module reaches it in a way "
					"readers follow (TLSDESC, general-dynamic, initial-exec, "
					"local-exec in the executable), or its C library's thread "
					"layout is unknown", SLOT);

		set_fix(f, "compile the module that uses the slot with -mtls-dialect=gnu2 "
			   "(TLSDESC); the local-dynamic model is not supported");
		return;
	}
	if (d->open_status != OTEL_THREAD_CTX_OK)
		return;
	d->slot_found = true;
	info = otel_thread_ctx_inspect_info(d->insp);
	for (size_t i = 0; i < info->module_count; i++) {
		const struct otel_thread_ctx_inspect_module *m = &info->modules[i];

		add(d, "slot", S_OK, NULL, "%s defines %s, in .dynsym, reached by %s", m->path, SLOT,
		    otel_thread_ctx_inspect_model_name(m->model));
		check_module_file(d, m);
	}
	if (info->module_count > 1)
		add(d, "slot-modules", S_INFO, R_RESOLUTION,
		    "%zu modules define %s: a reader reads each thread's record from the first "
		    "whose slot is not NULL", info->module_count, SLOT);
}

/* --- The process context ---------------------------------------------------- */

static bool accepted_name(const char *name)
{
	static const char *const prefixes[] = {
		("[anon_shmem:" OTEL_THREAD_CTX_PROCESS_MAPPING_NAME "]"),
		("[anon:" OTEL_THREAD_CTX_PROCESS_MAPPING_NAME "]"),
		("/memfd:" OTEL_THREAD_CTX_PROCESS_MAPPING_NAME),
	};

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
			return true;
	return false;
}

/* The header at `start`, as the process holds it. */
static bool read_header(pid_t pid, uint64_t start, struct otel_thread_ctx_process_header *h)
{
	struct iovec local = { h, sizeof(*h) }, remote = { (void *)(uintptr_t)start, sizeof(*h) };

	return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)sizeof(*h);
}

/* What is wrong with header h, as readers check it; NULL when nothing. */
static const char *header_problem(const struct otel_thread_ctx_process_header *h, char *buf,
				  size_t n)
{
	if (memcmp(h->signature, OTEL_THREAD_CTX_PROCESS_MAPPING_NAME, 8) != 0)
		return "its signature is not \"OTEL_CTX\"";
	if (h->version != 2) {
		snprintf(buf, n, "its version is %u, not 2", h->version);
		return buf;
	}
	if (h->payload_size == 0)
		return "its payload_size is 0";
	if (h->payload_size > OTEL_THREAD_CTX_PROCESS_PAYLOAD_MAX) {
		snprintf(buf, n, "its payload_size is %u bytes, above the %u the eBPF profiler "
			 "accepts", h->payload_size, OTEL_THREAD_CTX_PROCESS_PAYLOAD_MAX);
		return buf;
	}
	if (h->payload == 0)
		return "its payload pointer is NULL";
	return NULL;
}

/* A line of the maps: an OTEL_CTX mapping, named as readers look for it
 * or not. */
static bool pctx_line(const struct maps_line *l, void *arg)
{
	struct doctor *d = arg;
	struct pctx_view *p = &d->pctx;

	if (strstr(l->name, OTEL_THREAD_CTX_PROCESS_MAPPING_NAME) == NULL)
		return false;
	if (!accepted_name(l->name)) {
		struct finding *fd = add(d, "pctx-mapping-name", S_FAIL, R_READING,
					 "a mapping is named \"%.200s\": readers look only "
					 "for names that start with \"[anon_shmem:OTEL_CTX]\", "
					 "\"[anon:OTEL_CTX]\" or \"/memfd:OTEL_CTX\"", l->name);

		set_fix(fd, "create it with memfd_create(\"OTEL_CTX\") or name anonymous "
			    "memory with prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, ..., "
			    "\"OTEL_CTX\")");
		p->misnamed++;
		return false;
	}
	if (l->perms[2] == 'x') {
		struct finding *fd = add(d, "pctx-mapping-exec", S_FAIL, R_EBPF,
					 "the OTEL_CTX mapping at %#llx is executable: the "
					 "eBPF profiler skips executable mappings", l->start);

		set_fix(fd, "map it PROT_READ | PROT_WRITE");
	}
	p->accepted++;
	if (p->accepted > 1)
		return false;
	p->start = l->start;
	snprintf(p->name, sizeof(p->name), "%s", l->name);
	p->header_read = read_header(d->pid, l->start, &p->header);
	p->status = otel_thread_ctx_inspect_process_read_at(d->pid, l->start, 0, &p->snap);
	return false;
}

static void check_process_context(struct doctor *d)
{
	struct pctx_view *p = &d->pctx;

	p->status = OTEL_THREAD_CTX_ENOENT;
	if (!each_maps_line(d->pid, pctx_line, d))
		return;
	if (p->accepted > 1) {
		struct finding *fd = add(d, "pctx-singleton", S_WARN, R_PUBLISH,
					 "%zu mappings are named as the process context: which one a "
					 "reader takes is not defined (this check read the first)",
					 p->accepted);

		set_fix(fd, "publish one process context per process; unmap the old one when "
			    "publishing anew");
	}
}

/* The process context's findings, once the threads are known. */
static void judge_process_context(struct doctor *d)
{
	struct pctx_view *p = &d->pctx;
	const struct otel_thread_ctx_inspect_process_snapshot *s = p->snap;
	char buf[160];
	const char *problem;
	struct finding *f;

	if (p->accepted == 0) {
		if (d->slot_found) {
			f = add(d, "pctx-missing", S_FAIL, R_REFERENCE,
				"the process has a thread-context slot but no process context: "
				"readers show thread records only once the process context "
				"announces threadlocal.schema_version");
			set_fix(f, "publish a process context (OTEP 4719) with "
				   "threadlocal.schema_version and threadlocal.attribute_key_map");
		} else if (p->misnamed == 0) {
			add(d, "pctx", S_INFO, NULL, "the process publishes no process context");
		}
		return;
	}
	if (p->header_read && (problem = header_problem(&p->header, buf, sizeof(buf))) != NULL) {
		f = add(d, "pctx-header", S_FAIL, R_HEADER,
			"the OTEL_CTX mapping at %#llx (%s): %s: readers skip it",
			(unsigned long long)p->start, p->name, problem);
		set_fix(f, "write the header as OTEP 4719 gives it: \"OTEL_CTX\", version 2, "
			   "payload_size 1 to 65536, the payload's address, the timestamp last");
		return;
	}
	if (p->status != OTEL_THREAD_CTX_OK) {
		f = add(d, "pctx-read", p->status == OTEL_THREAD_CTX_EAGAIN ? S_WARN : S_FAIL,
			R_READING, "the process context at %#llx could not be read: %s",
			(unsigned long long)p->start, otel_thread_ctx_inspect_strerror(p->status));
		set_fix(f, p->status == OTEL_THREAD_CTX_EAGAIN ?
				   "check again: it changed during every read" :
				   "follow OTEP 4719's publication protocol: the timestamp last, "
				   "a payload that decodes as ProcessContext");
		return;
	}
	add(d, "pctx", S_OK, NULL, "process context at %#llx (%s): version %u, %u bytes of payload",
	    (unsigned long long)p->start, p->name, s->version, s->payload_size);
	if (s->schema_version == NULL) {
		if (d->slot_found) {
			f = add(d, "pctx-schema", S_FAIL, R_REFERENCE,
				"the process context has no threadlocal.schema_version: readers "
				"show no thread record of this process");
			set_fix(f, "add threadlocal.schema_version = \"tlsdesc_v1_dev\" to "
				   "ProcessContext.attributes");
		}
	} else if (strcmp(s->schema_version, "tlsdesc_v1_dev") != 0) {
		f = add(d, "pctx-schema", S_WARN, R_EBPF,
			"threadlocal.schema_version is \"%.64s\": the eBPF profiler accepts only "
			"\"tlsdesc_v1_dev\" today", s->schema_version);
		set_fix(f, "publish \"tlsdesc_v1_dev\" until readers accept the merged name");
	}
	if (!s->key_map_present && d->with_attrs > 0) {
		f = add(d, "pctx-key-map", S_FAIL, R_REFERENCE,
			"threads publish attributes, but the process context has no "
			"threadlocal.attribute_key_map: readers can name none of them");
		set_fix(f, "publish the key names, in index order, as "
			   "threadlocal.attribute_key_map");
	}
}

/* --- The threads ------------------------------------------------------------ */

static void note(int kind, pid_t tid)
{
	struct per_thread *t = &per_thread[kind];
	struct thread_list *l = &listed[kind];

	if (t->count < TIDS_SHOWN)
		t->tids[t->count] = tid;
	t->count++;
	if (l->listed == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		pid_t *all = realloc(l->all, cap * sizeof(*all));

		if (all == NULL)
			return;
		l->all = all;
		l->cap = cap;
	}
	l->all[l->listed++] = tid;
}

/* The attribute rules of record r, for thread tid. */
static void check_attrs(struct doctor *d, pid_t tid, const struct otel_thread_ctx_record *r)
{
	const struct otel_thread_ctx_inspect_process_snapshot *s = d->pctx.snap;
	size_t size = r->attrs_data_size;
	bool seen[256] = { false }, unknown = false, repeated = false, bad_utf8 = false;
	/* Key indices are judged against the key map of the process context
	 * readers take; without one (pctx-missing, pctx-key-map), not at all. */
	bool judge_keys = s != NULL && d->pctx.status == OTEL_THREAD_CTX_OK && s->key_map_present;

	if (size > OTEL_THREAD_CTX_ATTRS_MAX)
		size = OTEL_THREAD_CTX_ATTRS_MAX;
	for (size_t at = 0; at + 2 <= size && at + 2 + r->attrs_data[at + 1] <= size;
	     at += 2u + r->attrs_data[at + 1]) {
		unsigned int key = r->attrs_data[at];

		if (judge_keys && key >= s->key_count)
			unknown = true;
		if (seen[key])
			repeated = true;
		seen[key] = true;
		if (!otel__utf8_valid(r->attrs_data + at + 2, r->attrs_data[at + 1]))
			bad_utf8 = true;
	}
	if (unknown)
		note(T_UNKNOWN_KEY, tid);
	if (repeated)
		note(T_REPEATED_KEY, tid);
	if (bad_utf8)
		note(T_UTF8, tid);
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != 0)
			return false;
	return true;
}

static void check_threads(struct doctor *d)
{
	size_t count = 0, cap = 64;
	int err;

	for (;;) {
		free(d->threads);
		d->threads = calloc(cap, sizeof(*d->threads));
		if (d->threads == NULL)
			return;
		err = otel_thread_ctx_inspect_threads(d->insp, d->threads, cap, &count);
		if (err != OTEL_THREAD_CTX_OK)
			return;
		if (count <= cap)
			break;
		cap = count + count / 4 + 8;
	}
	d->nthreads = count;
	for (size_t i = 0; i < count; i++) {
		const struct otel_thread_ctx_inspect_thread *t = &d->threads[i];
		const struct otel_thread_ctx_record *r = &t->record;

		switch (t->status) {
		case OTEL_THREAD_CTX_OK:
			d->read_ok++;
			if (!all_zero(r->trace_id, 16) && !all_zero(r->span_id, 8))
				d->with_ids++;
			else if (r->trace_flags != 0 && all_zero(r->trace_id, 16) &&
				 all_zero(r->span_id, 8))
				note(T_FLAGS, t->tid);
			if (r->attrs_data_size > 0)
				d->with_attrs++;
			if (t->anomalies & OTEL_THREAD_CTX_INSPECT_HALF_IDS)
				note(T_HALF_IDS, t->tid);
			if (t->anomalies & OTEL_THREAD_CTX_INSPECT_OVERSIZED)
				note(T_OVERSIZED, t->tid);
			if (t->anomalies & OTEL_THREAD_CTX_INSPECT_TRUNCATED_ENTRY)
				note(T_TRUNCATED, t->tid);
			check_attrs(d, t->tid, r);
			break;
		case OTEL_THREAD_CTX_EINVALID:
			note(T_VALID, t->tid);
			break;
		case OTEL_THREAD_CTX_EFORMAT:
			note(T_ALIGN, t->tid);
			break;
		case OTEL_THREAD_CTX_EFAULT:
			note(T_UNREADABLE, t->tid);
			break;
		case OTEL_THREAD_CTX_ETIMEDOUT:
			note(T_TIMEOUT, t->tid);
			break;
		case OTEL_THREAD_CTX_EPERM:
			note(T_PERM, t->tid);
			break;
		default: /* ENOCTX: nothing attached; ESRCH: it exited meanwhile */
			break;
		}
	}
	for (size_t k = 0; k < T_COUNT; k++) {
		struct per_thread *t = &per_thread[k];
		char tids[160] = "";
		size_t used = 0;
		struct finding *f;

		if (t->count == 0)
			continue;
		for (size_t i = 0; i < t->count && i < TIDS_SHOWN; i++)
			used += (size_t)snprintf(tids + used, sizeof(tids) - used, "%s%d",
						 i ? ", " : "", (int)t->tids[i]);
		if (t->count > TIDS_SHOWN)
			snprintf(tids + used, sizeof(tids) - used, " and %zu more",
				 t->count - TIDS_SHOWN);
		f = add(d, t->id, t->status, t->rule, "%zu thread%s (%s): %s", t->count,
			t->count == 1 ? "" : "s", tids, t->what);
		set_fix(f, t->fix);
		f->threads = &listed[k];
	}
	if (err != OTEL_THREAD_CTX_OK)
		add(d, "threads", S_WARN, NULL, "the threads could not be listed: %s",
		    otel_thread_ctx_inspect_strerror(err));
}

/* --- The report ------------------------------------------------------------- */

static int worst(const struct doctor *d)
{
	int w = S_OK;

	for (size_t i = 0; i < d->nf; i++)
		if ((int)d->f[i].status > w)
			w = (int)d->f[i].status;
	return w;
}

static void summary(const struct doctor *d, char *buf, size_t n)
{
	const struct otel_thread_ctx_inspect_process_snapshot *s = d->pctx.snap;
	size_t used = 0;

	if (!d->slot_found)
		used = (size_t)snprintf(buf, n, "a profiler will see no thread context (no slot it "
					"can find)");
	else if (!d->records_shown)
		used = (size_t)snprintf(buf, n, "a profiler will see no thread context (the "
					"process context does not announce the schema); "
					"records readable on %zu of %zu threads", d->read_ok,
					d->nthreads);
	else
		used = (size_t)snprintf(buf, n, "a profiler will see: trace and span on %zu of %zu "
					"threads, attributes on %zu", d->with_ids, d->nthreads,
					d->with_attrs);
	if (used >= n)
		return;
	if (s != NULL && d->pctx.status == OTEL_THREAD_CTX_OK) {
		used += (size_t)snprintf(buf + used, n - used, "; process resource: %zu attribute%s",
					 s->resource_count, s->resource_count == 1 ? "" : "s");
		for (size_t i = 0; i < s->resource_count && used < n; i++)
			if (strcmp(s->resource[i].key, "service.name") == 0 &&
			    s->resource[i].type == OTEL_THREAD_CTX_PROCESS_STRING)
				used += (size_t)snprintf(buf + used, n - used, " (service.name=%.64s)",
							 s->resource[i].string);
	} else if (used < n) {
		snprintf(buf + used, n - used, "; no process resource");
	}
}

static void print_text(const struct doctor *d, const char *verdict, const char *sum, bool quiet)
{
	printf("process %d (", (int)d->pid);
	tool_text_value(d->comm, strlen(d->comm));
	printf("): %s: ", verdict);
	tool_text_value(sum, strlen(sum));
	printf("\n");
	if (quiet)
		return;
	for (size_t i = 0; i < d->nf; i++) {
		const struct finding *f = &d->f[i];

		printf("  %-5s %-20s ", check_status_name(f->status), f->id);
		tool_text_value(f->message, strlen(f->message));
		printf("\n");
		if (f->rule != NULL)
			printf("        rule: %s\n", f->rule);
		if (f->fix[0] != '\0' && f->status >= S_WARN) {
			printf("        fix:  ");
			tool_text_value(f->fix, strlen(f->fix));
			printf("\n");
		}
	}
}

static void json_kv(const char *key, const char *value, bool comma)
{
	printf("\"%s\": ", key);
	if (value == NULL)
		printf("null");
	else
		tool_json_string(value, strlen(value));
	if (comma)
		printf(", ");
}

static void print_json(const struct doctor *d, const char *verdict, int code, const char *sum)
{
	const struct otel_thread_ctx_inspect_process_snapshot *s = d->pctx.snap;

	printf("{\"tool\": \"otel-thread-ctx-check\", \"pid\": %d, ", (int)d->pid);
	json_kv("comm", d->comm, true);
	json_kv("verdict", verdict, true);
	printf("\"exit_code\": %d, ", code);
	json_kv("summary", sum, true);
	printf("\"slot\": %s, \"threads\": %zu, \"threads_read\": %zu, \"threads_with_ids\": %zu, "
	       "\"threads_with_attributes\": %zu, \"records_shown\": %s, ",
	       d->slot_found ? "true" : "false", d->nthreads, d->read_ok, d->with_ids,
	       d->with_attrs, d->records_shown ? "true" : "false");
	printf("\"process_context\": ");
	if (s != NULL && d->pctx.status == OTEL_THREAD_CTX_OK) {
		printf("{\"address\": %llu, ", (unsigned long long)d->pctx.start);
		json_kv("mapping", d->pctx.name, true);
		printf("\"version\": %u, \"payload_size\": %u, ", s->version, s->payload_size);
		json_kv("schema_version", s->schema_version, true);
		printf("\"keys\": [");
		for (size_t i = 0; i < s->key_count; i++) {
			printf("%s", i ? ", " : "");
			tool_json_string(s->keys[i], strlen(s->keys[i]));
		}
		printf("], \"resource\": [");
		for (size_t i = 0; i < s->resource_count; i++) {
			const struct otel_thread_ctx_process_attr *a = &s->resource[i];

			printf("%s{\"key\": ", i ? ", " : "");
			tool_json_string(a->key, strlen(a->key));
			printf(", \"value\": ");
			if (a->type == OTEL_THREAD_CTX_PROCESS_STRING)
				tool_json_string(a->string, a->length);
			else if (a->type == OTEL_THREAD_CTX_PROCESS_INT)
				printf("%lld", (long long)a->int_value);
			else if (a->type == OTEL_THREAD_CTX_PROCESS_BOOL)
				printf("%s", a->bool_value ? "true" : "false");
			else
				printf("null");
			printf("}");
		}
		printf("]}, ");
	} else {
		printf("null, ");
	}
	printf("\"findings\": [");
	for (size_t i = 0; i < d->nf; i++) {
		const struct finding *f = &d->f[i];

		printf("%s{", i ? ", " : "");
		json_kv("id", f->id, true);
		json_kv("status", check_status_name(f->status), true);
		json_kv("rule", f->rule, true);
		json_kv("message", f->message, true);
		json_kv("fix", f->fix[0] != '\0' ? f->fix : NULL, f->threads != NULL);
		if (f->threads != NULL) {
			printf("\"threads\": [");
			for (size_t k = 0; k < f->threads->listed; k++)
				printf("%s%d", k ? ", " : "", (int)f->threads->all[k]);
			printf("]");
		}
		printf("}");
	}
	printf("]}\n");
}

/* A report that ends before the process could be looked at. */
static int cannot(pid_t pid, bool json, const char *code, const char *message)
{
	if (json) {
		printf("{\"tool\": \"otel-thread-ctx-check\", \"pid\": %d, \"verdict\": \"error\", "
		       "\"exit_code\": 3, ", (int)pid);
		json_kv("error", code, true);
		json_kv("summary", message, false);
		printf("}\n");
	} else {
		printf("process %d: ERROR: %s\n", (int)pid, message);
	}
	return 3;
}

int check_pid(pid_t pid, bool json, bool quiet)
{
	struct doctor *d = calloc(1, sizeof(*d));
	const char *verdict;
	char sum[512];
	int code, w;

	if (d == NULL)
		return cannot(pid, json, "no-memory", "out of memory");
	d->pid = pid;
	if (otel_thread_ctx_inspect_thread_name(pid, pid, d->comm) != OTEL_THREAD_CTX_OK) {
		free(d);
		return cannot(pid, json, "no-process", "no such process");
	}
	check_slot(d);
	if (d->open_status == OTEL_THREAD_CTX_ESRCH || d->open_status == OTEL_THREAD_CTX_EPERM) {
		bool gone = d->open_status == OTEL_THREAD_CTX_ESRCH;

		free(d);
		return cannot(pid, json, gone ? "no-process" : "not-permitted",
			      gone ? "the process exited during the check" :
				     "not permitted to read the process: run as root, or as its owner "
				     "with ptrace allowed (kernel.yama.ptrace_scope)");
	}
	if (d->open_status != OTEL_THREAD_CTX_OK && d->open_status != OTEL_THREAD_CTX_ENOSLOT &&
	    d->open_status != OTEL_THREAD_CTX_EMODEL)
		add(d, "slot", S_WARN, NULL, "the slot could not be looked for: %s",
		    otel_thread_ctx_inspect_strerror(d->open_status));
	check_process_context(d);
	if (d->insp != NULL)
		check_threads(d);
	d->records_shown = d->slot_found && d->pctx.snap != NULL &&
			   d->pctx.status == OTEL_THREAD_CTX_OK && d->pctx.snap->schema_version != NULL;
	judge_process_context(d);
	w = worst(d);
	if (w == S_FAIL) {
		verdict = "fail", code = 1;
	} else if (!d->slot_found && d->pctx.accepted == 0 && d->pctx.misnamed == 0) {
		verdict = "absent", code = 5;
	} else {
		verdict = "pass", code = 0;
	}
	summary(d, sum, sizeof(sum));
	if (json)
		print_json(d, verdict, code, sum);
	else
		print_text(d, code == 1 ? "FAIL" : code == 5 ? "ABSENT" : "PASS", sum, quiet);
	for (size_t k = 0; k < T_COUNT; k++) {
		free(listed[k].all);
		listed[k] = (struct thread_list){ NULL, 0, 0 };
	}
	free(d->threads);
	otel_thread_ctx_inspect_process_snapshot_free(d->pctx.snap);
	otel_thread_ctx_inspect_close(d->insp);
	free(d);
	return code;
}
