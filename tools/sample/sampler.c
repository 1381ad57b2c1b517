/* SPDX-License-Identifier: Apache-2.0 */
/* The sampler's user-space side (sampler.h). */
#define _GNU_SOURCE
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>

/* The skeleton embeds the BPF object as one long string literal. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverlength-strings"
#include "sample.skel.h"
#pragma GCC diagnostic pop
#include "otel_thread_ctx.h"
#include "sampler.h"

#define DEFAULT_RING_BYTES (8u << 20)
#define DEFAULT_MAX_PROCS 4096u

struct otel_sampler {
	struct otel_sample *skel;
	struct ring_buffer *ring;
	otel_sampler_event_fn fn;
	void *arg;
	struct otel_sampler_options opt;
	int procs_fd;
	pid_t self;
	/* One perf event and link per possible CPU (-1 / NULL: none). */
	int ncpus;
	int *pfds;
	struct bpf_link **links;
	unsigned int attached;
	/* The watched processes. */
	struct otel_sampler_proc *procs;
	size_t nprocs, cap;
	/* Events handled in this otel_sampler_poll(), and how many it may. */
	unsigned long handled, budget;
	/* Files known not to name the slot in their .dynstr (prefilter()). */
	struct file_key *files;
	size_t nfiles, files_cap;
	/* The stack of the event being handled (options.stacks). */
	struct otel_sampler_stack stack;
	int in_stack;
};

struct file_key {
	unsigned long dev, ino; /* ino 0: free */
	int may;
};

/* --- libbpf's messages --------------------------------------------------- */

static char log_buf[64 * 1024];
static size_t log_len;

static int keep_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char line[1024];
	int n;

	if (level == LIBBPF_DEBUG)
		return 0;
	n = vsnprintf(line, sizeof(line), fmt, ap);
	if (n <= 0)
		return 0;
	if ((size_t)n >= sizeof(line))
		n = sizeof(line) - 1;
	if (log_len + (size_t)n > sizeof(log_buf)) {
		/* Keep the newer half. */
		size_t drop = log_len / 2;

		memmove(log_buf, log_buf + drop, log_len - drop);
		log_len -= drop;
	}
	memcpy(log_buf + log_len, line, (size_t)n);
	log_len += (size_t)n;
	return 0;
}

void otel_sampler_print_log(FILE *f)
{
	fwrite(log_buf, 1, log_len, f);
}

/* --- Errors -------------------------------------------------------------- */

static void say(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (why == NULL || len == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
}

/* The kernel's lockdown mode, "" when securityfs does not say. */
static void lockdown_mode(char *mode, size_t len)
{
	char buf[128], *open, *close;
	FILE *f = fopen("/sys/kernel/security/lockdown", "re");

	mode[0] = '\0';
	if (f == NULL)
		return;
	if (fgets(buf, sizeof(buf), f) != NULL && (open = strchr(buf, '[')) != NULL &&
	    (close = strchr(open, ']')) != NULL) {
		*close = '\0';
		snprintf(mode, len, "%s", open + 1);
	}
	fclose(f);
}

static int not_permitted(int err, const char *what, char *why, size_t len)
{
	char mode[32];

	lockdown_mode(mode, sizeof(mode));
	if (strcmp(mode, "confidentiality") == 0)
		say(why, len,
		    "%s: %s: the kernel is locked down (confidentiality), which forbids BPF "
		    "programs that read memory",
		    what, strerror(err));
	else if (geteuid() != 0)
		say(why, len,
		    "%s: %s: run as root (or with the capabilities CAP_BPF and CAP_PERFMON)",
		    what, strerror(err));
	else
		say(why, len,
		    "%s: %s, although running as root: a seccomp filter, a security module or "
		    "lockdown refuses it",
		    what, strerror(err));
	return OTEL_SAMPLER_EPERM;
}

/* --- Loading ------------------------------------------------------------- */

int otel_sampler_open(const struct otel_sampler_options *options, otel_sampler_event_fn fn,
		      void *arg, struct otel_sampler **out, char *why, size_t whylen)
{
	struct otel_sampler *s;
	int err, ncpus;

	libbpf_set_print(keep_log);
	if (access("/sys/kernel/btf/vmlinux", R_OK) != 0 && errno == ENOENT) {
		say(why, whylen,
		    "the kernel has no BTF (/sys/kernel/btf/vmlinux is missing: a kernel built "
		    "without CONFIG_DEBUG_INFO_BTF), which the program's CO-RE relocations need");
		return OTEL_SAMPLER_ENOBTF;
	}
	ncpus = libbpf_num_possible_cpus();
	if (ncpus <= 0) {
		say(why, whylen, "cannot count the CPUs: %s", strerror(-ncpus));
		return OTEL_SAMPLER_ESYS;
	}
	s = calloc(1, sizeof(*s));
	if (s == NULL) {
		say(why, whylen, "out of memory");
		return OTEL_SAMPLER_ESYS;
	}
	s->opt = *options;
	if (s->opt.ring_bytes == 0)
		s->opt.ring_bytes = DEFAULT_RING_BYTES;
	if (s->opt.max_procs == 0)
		s->opt.max_procs = DEFAULT_MAX_PROCS;
	s->fn = fn;
	s->arg = arg;
	s->self = getpid();
	s->ncpus = ncpus;
	s->pfds = malloc(sizeof(*s->pfds) * (size_t)ncpus);
	s->links = calloc((size_t)ncpus, sizeof(*s->links));
	if (s->pfds == NULL || s->links == NULL) {
		say(why, whylen, "out of memory");
		otel_sampler_close(s);
		return OTEL_SAMPLER_ESYS;
	}
	for (int i = 0; i < ncpus; i++)
		s->pfds[i] = -1;
	s->skel = otel_sample__open();
	if (s->skel == NULL) {
		err = errno;
		say(why, whylen, "cannot open the BPF object: %s", strerror(err));
		otel_sampler_close(s);
		return OTEL_SAMPLER_ESYS;
	}
	if (bpf_map__set_max_entries(s->skel->maps.events, s->opt.ring_bytes) != 0 ||
	    bpf_map__set_max_entries(s->skel->maps.procs, s->opt.max_procs) != 0) {
		say(why, whylen, "bad ring buffer size or process count");
		otel_sampler_close(s);
		return OTEL_SAMPLER_ESYS;
	}
	s->skel->rodata->wakeup_bytes = s->opt.ring_bytes / 8;
	s->skel->rodata->want_stacks = s->opt.stacks != 0;
	/* libbpf raises RLIMIT_MEMLOCK only on kernels that charge BPF memory
	 * to it (before 5.11), and goes on if it may not. */
	err = otel_sample__load(s->skel);
	if (err != 0) {
		int e = err < 0 ? -err : err;

		if (e == EPERM || e == EACCES) {
			err = not_permitted(e, "loading the BPF program (bpf())", why, whylen);
		} else {
			char mode[32];

			lockdown_mode(mode, sizeof(mode));
			if (strcmp(mode, "confidentiality") == 0) {
				err = not_permitted(e, "loading the BPF program", why, whylen);
			} else {
				say(why, whylen,
				    "the kernel refused the BPF program: %s (libbpf's messages "
				    "above say why)",
				    strerror(e));
				err = OTEL_SAMPLER_ELOAD;
			}
		}
		otel_sampler_close(s);
		return err;
	}
	s->procs_fd = bpf_map__fd(s->skel->maps.procs);
	*out = s;
	return OTEL_SAMPLER_OK;
}

/* What ring_event() returns to make libbpf stop: it drains the ring until
 * it finds it empty, which a reader slower than the program never does. */
#define BUDGET_SPENT (-ECANCELED)
#define POLL_BUDGET 4096u

static int ring_event(void *ctx, void *data, size_t size)
{
	struct otel_sampler *s = ctx;
	struct otel_thread_ctx_bpf_event ev;

	s->handled++;
	if (s->opt.stacks) {
		const struct otel_sample_stack_record *sr = data;
		size_t n;

		if (size < OTEL_SAMPLE_STACK_IPS || sr->nframes > OTEL_SAMPLE_MAX_FRAMES ||
		    size != OTEL_SAMPLE_STACK_IPS + sr->nframes * 8u)
			return s->handled >= s->budget ? BUDGET_SPENT : 0;
		n = otel_thread_ctx_bpf_event_size(&sr->ev);
		memcpy(&ev, &sr->ev, n);
		memset((char *)&ev + n, 0, sizeof(ev) - n);
		s->stack.ips = sr->ips;
		s->stack.n = sr->nframes;
		s->stack.error = (int)sr->error;
		s->in_stack = 1;
		s->fn(s->arg, &ev, n);
		s->in_stack = 0;
	} else if (size >= OTEL_THREAD_CTX_BPF_EVENT_RECORD && size <= sizeof(ev)) {
		memcpy(&ev, data, size);
		memset((char *)&ev + size, 0, sizeof(ev) - size);
		s->fn(s->arg, &ev, size);
	}
	return s->handled >= s->budget ? BUDGET_SPENT : 0;
}

static long perf_event_open(struct perf_event_attr *attr, int cpu)
{
	return syscall(SYS_perf_event_open, attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

unsigned long otel_sampler_max_frequency(void)
{
	unsigned long v = 0;
	FILE *f = fopen("/proc/sys/kernel/perf_event_max_sample_rate", "re");

	if (f != NULL) {
		if (fscanf(f, "%lu", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

int otel_sampler_start(struct otel_sampler *s, char *why, size_t whylen)
{
	struct perf_event_attr attr;

	s->ring = ring_buffer__new(bpf_map__fd(s->skel->maps.events), ring_event, s, NULL);
	if (s->ring == NULL) {
		say(why, whylen, "cannot map the ring buffer: %s", strerror(errno));
		return OTEL_SAMPLER_ESYS;
	}
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = s->opt.cycles ? PERF_TYPE_HARDWARE : PERF_TYPE_SOFTWARE;
	attr.config = s->opt.cycles ? PERF_COUNT_HW_CPU_CYCLES : PERF_COUNT_SW_CPU_CLOCK;
	attr.freq = 1;
	attr.sample_freq = s->opt.frequency;
	for (int cpu = 0; cpu < s->ncpus; cpu++) {
		long fd = perf_event_open(&attr, cpu);
		int e = errno;
		unsigned long max;

		if (fd < 0) {
			if (e == ENODEV) /* offline */
				continue;
			if (e == EACCES || e == EPERM)
				return not_permitted(e, "opening a perf event for every CPU "
							"(perf_event_open())",
						     why, whylen);
			if (s->opt.cycles && (e == ENOENT || e == EOPNOTSUPP)) {
				say(why, whylen,
				    "this machine has no hardware CPU cycles counter (%s; a virtual "
				    "machine?): use the cpu-clock event",
				    strerror(e));
				return OTEL_SAMPLER_EEVENT;
			}
			max = e == EINVAL ? otel_sampler_max_frequency() : 0;
			if (max != 0 && s->opt.frequency > max) {
				say(why, whylen,
				    "%u Hz is above kernel.perf_event_max_sample_rate (%lu Hz)",
				    s->opt.frequency, max);
				return OTEL_SAMPLER_EEVENT;
			}
			say(why, whylen, "perf_event_open() on CPU %d: %s", cpu, strerror(e));
			return OTEL_SAMPLER_ESYS;
		}
		s->pfds[cpu] = (int)fd;
		s->links[cpu] = bpf_program__attach_perf_event(s->skel->progs.otel_thread_ctx_sample,
							       (int)fd);
		if (s->links[cpu] == NULL) {
			e = errno;
			if (e == EPERM || e == EACCES)
				return not_permitted(e, "attaching the BPF program to a perf event",
						     why, whylen);
			say(why, whylen, "attaching the BPF program to CPU %d's perf event: %s", cpu,
			    strerror(e));
			return OTEL_SAMPLER_ESYS;
		}
		s->attached++;
	}
	if (s->attached == 0) {
		say(why, whylen, "no CPU accepted a perf event");
		return OTEL_SAMPLER_ESYS;
	}
	return OTEL_SAMPLER_OK;
}

/* --- Processes ----------------------------------------------------------- */

static struct otel_sampler_proc *find(const struct otel_sampler *s, pid_t pid)
{
	for (size_t i = 0; i < s->nprocs; i++)
		if (s->procs[i].pid == pid)
			return &s->procs[i];
	return NULL;
}

const struct otel_sampler_stack *otel_sampler_stack(const struct otel_sampler *s)
{
	return s->in_stack ? &s->stack : NULL;
}

const struct otel_sampler_proc *otel_sampler_find(const struct otel_sampler *s, pid_t pid)
{
	return find(s, pid);
}

size_t otel_sampler_procs(const struct otel_sampler *s, const struct otel_sampler_proc **procs)
{
	*procs = s->procs;
	return s->nprocs;
}

static void forget(struct otel_sampler *s, struct otel_sampler_proc *p)
{
	__u32 key = (__u32)p->pid;

	if (p->status == OTEL_THREAD_CTX_OK)
		bpf_map_delete_elem(s->procs_fd, &key);
}

/* Failures worth another look even if the modules stay the same. */
static int transient(int rc)
{
	return rc == OTEL_THREAD_CTX_EFAULT || rc == OTEL_THREAD_CTX_ESYS ||
	       rc == OTEL_THREAD_CTX_ENOMEM || rc == OTEL_THREAD_CTX_EAGAIN;
}

/*
 * Could the ELF file open as fd define otel_thread_ctx_v1 in its .dynsym?
 * Only if the name is in the string table of its .dynsym.  0 when it surely
 * does not, 1 when it may (or the file is not what this quick look
 * understands: the inspector decides).
 */
static int file_may_define_slot(int fd)
{
	static const char name[] = OTEL_THREAD_CTX_SLOT_NAME;
	Elf64_Ehdr eh;
	Elf64_Shdr *sh = NULL;
	char *str = NULL;
	int may = 1;

	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
		return 0; /* not ELF: no module */
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_shoff == 0 || eh.e_shnum == 0 ||
	    eh.e_shnum > 65000 || eh.e_shentsize != sizeof(Elf64_Shdr))
		return 1;
	sh = malloc(sizeof(*sh) * eh.e_shnum);
	if (sh == NULL || pread(fd, sh, sizeof(*sh) * eh.e_shnum, (off_t)eh.e_shoff) !=
				  (ssize_t)(sizeof(*sh) * eh.e_shnum))
		goto out;
	may = 0;
	for (unsigned int i = 0; i < eh.e_shnum && !may; i++) {
		const Elf64_Shdr *d = &sh[i], *t;

		if (d->sh_type != SHT_DYNSYM)
			continue;
		may = 1;
		if (d->sh_link >= eh.e_shnum)
			break;
		t = &sh[d->sh_link];
		if (t->sh_type != SHT_STRTAB || t->sh_size > (64u << 20))
			break;
		str = malloc(t->sh_size + 1);
		if (str == NULL || pread(fd, str, t->sh_size, (off_t)t->sh_offset) != (ssize_t)t->sh_size)
			break;
		str[t->sh_size] = '\0';
		may = 0;
		for (size_t at = 0; at + sizeof(name) <= t->sh_size + 1; at += strlen(str + at) + 1) {
			if (memcmp(str + at, name, sizeof(name)) == 0) {
				may = 1;
				break;
			}
		}
	}
out:
	free(str);
	free(sh);
	return may;
}

/* Does the cache know the file (dev, ino)?  Returns its entry or NULL. */
static struct file_key *file_cached(struct otel_sampler *s, unsigned long dev, unsigned long ino)
{
	for (size_t i = 0; i < s->nfiles; i++)
		if (s->files[i].dev == dev && s->files[i].ino == ino)
			return &s->files[i];
	return NULL;
}

/*
 * The quick look of --all: could any file process `pid` maps from its
 * start define the slot?  Each file is looked at once (by device and inode),
 * so that the thousands of processes a busy machine starts cost a read of
 * their maps, not the inspector's full reading of every file they map.
 */
static int prefilter(struct otel_sampler *s, pid_t pid)
{
	char path[PATH_MAX + 64], *line = NULL;
	size_t cap = 0;
	int may = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (f == NULL)
		return 1; /* let the inspector say why */
	while (!may && getline(&line, &cap, f) > 0) {
		unsigned long long offset, ino;
		unsigned int major, minor;
		int at = 0;
		struct file_key *k;
		char *name;
		int fd;

		if (sscanf(line, "%*x-%*x %*s %llx %x:%x %llu %n", &offset, &major, &minor, &ino,
			   &at) != 4 || offset != 0 || ino == 0 || line[at] != '/')
			continue;
		name = line + at;
		name[strcspn(name, "\n")] = '\0';
		k = file_cached(s, (unsigned long)major << 20 | minor, (unsigned long)ino);
		if (k != NULL) {
			may = k->may;
			continue;
		}
		snprintf(path, sizeof(path), "/proc/%d/root%s", (int)pid, name);
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0) {
			may = 1;
			break;
		}
		may = file_may_define_slot(fd);
		close(fd);
		if (s->nfiles == s->files_cap) {
			size_t ncap = s->files_cap ? s->files_cap * 2 : 256;
			struct file_key *n = realloc(s->files, ncap * sizeof(*n));

			if (n == NULL)
				continue;
			s->files = n;
			s->files_cap = ncap;
		}
		s->files[s->nfiles++] = (struct file_key){ (unsigned long)major << 20 | minor,
							   (unsigned long)ino, may };
	}
	free(line);
	fclose(f);
	return may;
}

/* Looks at p's process afresh and stores what it finds, with the maps
 * signature from before it looked, which tells refresh when to look again.
 * A process found by scanning is looked at only when the prefilter lets
 * it through.  One given by pid: the signature the inspector took as it
 * opened the process, which spares a walk of the maps; when the look
 * fails (kept until the signature changes), it is made again after a
 * signature taken first, so that a module loaded in between is in what the
 * look saw or changes the signature. */
static void describe(struct otel_sampler *s, struct otel_sampler_proc *p)
{
	otel_thread_ctx_inspector *insp = NULL;
	struct otel_thread_ctx_bpf_proc d;
	uint64_t sig = 0;
	__u32 key = (__u32)p->pid;
	int rc;

	if (p->scanned) {
		rc = otel_thread_ctx_inspect_maps_signature(p->pid, &sig);
		if (rc == OTEL_THREAD_CTX_OK)
			rc = prefilter(s, p->pid) ? otel_thread_ctx_inspect_open(p->pid, &insp)
						  : OTEL_THREAD_CTX_ENOSLOT;
	} else {
		rc = otel_thread_ctx_inspect_open(p->pid, &insp);
		if (rc == OTEL_THREAD_CTX_OK) {
			rc = otel_thread_ctx_inspect_signature(insp, &sig);
		} else if (rc != OTEL_THREAD_CTX_ESRCH) {
			rc = otel_thread_ctx_inspect_maps_signature(p->pid, &sig);
			if (rc == OTEL_THREAD_CTX_OK)
				rc = otel_thread_ctx_inspect_open(p->pid, &insp);
		}
	}
	if (rc == OTEL_THREAD_CTX_OK)
		rc = otel_thread_ctx_inspect_bpf_proc(insp, &d);
	if (rc == OTEL_THREAD_CTX_OK && bpf_map_update_elem(s->procs_fd, &key, &d, BPF_ANY) != 0)
		rc = OTEL_THREAD_CTX_ESYS; /* the map is full */
	if (rc != OTEL_THREAD_CTX_OK) {
		otel_thread_ctx_inspect_close(insp);
		forget(s, p);
		/* Keep the last inspector of a process that exited: its key
		 * names still name what was sampled. */
		if (rc != OTEL_THREAD_CTX_ESRCH) {
			otel_thread_ctx_inspect_close(p->insp);
			p->insp = NULL;
		}
		p->status = rc;
		if (rc != OTEL_THREAD_CTX_ESRCH) {
			p->signature = sig;
			p->recheck = transient(rc);
		}
		return;
	}
	otel_thread_ctx_inspect_close(p->insp);
	p->insp = insp;
	p->desc = d;
	p->generation++;
	p->status = OTEL_THREAD_CTX_OK;
	p->signature = sig;
}

static int watch(struct otel_sampler *s, pid_t pid, int scanned)
{
	struct otel_sampler_proc *p = find(s, pid);

	if (p != NULL) {
		if (p->status == OTEL_THREAD_CTX_ESRCH) /* the id was reused */
			describe(s, p);
		return p->status;
	}
	if (pid <= 0 || (kill(pid, 0) != 0 && errno == ESRCH))
		return OTEL_THREAD_CTX_ESRCH;
	if (s->nprocs == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		struct otel_sampler_proc *n = realloc(s->procs, cap * sizeof(*n));

		if (n == NULL)
			return OTEL_THREAD_CTX_ENOMEM;
		s->procs = n;
		s->cap = cap;
	}
	p = &s->procs[s->nprocs++];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	p->scanned = scanned;
	describe(s, p);
	if (p->status == OTEL_THREAD_CTX_ESRCH && p->generation == 0) {
		s->nprocs--; /* gone before it was ever seen */
		return OTEL_THREAD_CTX_ESRCH;
	}
	/* It may have been loading a module while it was looked at. */
	p->recheck = p->status == OTEL_THREAD_CTX_OK || transient(p->status);
	return p->status;
}

int otel_sampler_watch(struct otel_sampler *s, pid_t pid)
{
	return watch(s, pid, 0);
}

int otel_sampler_redescribe(struct otel_sampler *s, pid_t pid)
{
	struct otel_sampler_proc *p = find(s, pid);

	if (p == NULL)
		return OTEL_THREAD_CTX_ESRCH;
	if (p->status != OTEL_THREAD_CTX_ESRCH)
		describe(s, p);
	return p->status;
}

/* Adds the processes of /proc not watched yet. */
static void scan(struct otel_sampler *s)
{
	DIR *d = opendir("/proc");
	struct dirent *de;

	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*de->d_name == '\0' || *end != '\0' || pid <= 0 || pid > INT_MAX ||
		    pid == s->self)
			continue;
		watch(s, (pid_t)pid, 1);
	}
	closedir(d);
}

int otel_sampler_refresh(struct otel_sampler *s, int scan_proc)
{
	size_t kept = 0;
	int described = 0;

	for (size_t i = 0; i < s->nprocs; i++) {
		struct otel_sampler_proc *p = &s->procs[i];
		uint64_t sig;
		int rc;

		if (p->status == OTEL_THREAD_CTX_ESRCH)
			goto keep;
		rc = otel_thread_ctx_inspect_maps_signature(p->pid, &sig);
		if (rc == OTEL_THREAD_CTX_ESRCH || (kill(p->pid, 0) != 0 && errno == ESRCH)) {
			forget(s, p);
			p->status = OTEL_THREAD_CTX_ESRCH;
			p->recheck = 0;
		} else if (rc == OTEL_THREAD_CTX_OK && sig != p->signature) {
			/* Modules came or went: look now, and once more at
			 * the next refresh in case the loader was halfway. */
			describe(s, p);
			p->recheck = p->status == OTEL_THREAD_CTX_OK || transient(p->status);
		} else if (p->recheck) {
			p->recheck = 0;
			describe(s, p);
		}
	keep:
		/* When scanning, processes that exited without ever being
		 * described are forgotten. */
		if (scan_proc && p->status == OTEL_THREAD_CTX_ESRCH && p->generation == 0) {
			otel_thread_ctx_inspect_close(p->insp);
			continue;
		}
		if (p->status == OTEL_THREAD_CTX_OK)
			described++;
		s->procs[kept++] = *p;
	}
	s->nprocs = kept;
	if (scan_proc) {
		size_t before = s->nprocs;

		scan(s);
		for (size_t i = before; i < s->nprocs; i++)
			if (s->procs[i].status == OTEL_THREAD_CTX_OK)
				described++;
	}
	return described;
}

/* --- Events -------------------------------------------------------------- */

int otel_sampler_poll(struct otel_sampler *s, int timeout_ms)
{
	int rc;

	/* At most POLL_BUDGET events per call, so that the caller gets control
	 * back however fast events come.  What is there first; the program
	 * wakes the reader up only for a batch (wakeup_bytes), so the wait
	 * for more ends at the timeout otherwise. */
	s->handled = 0;
	s->budget = POLL_BUDGET;
	rc = ring_buffer__consume(s->ring);
	if (rc >= 0 && s->handled == 0) {
		rc = ring_buffer__poll(s->ring, timeout_ms);
		if ((rc >= 0 || rc == -EINTR) && s->handled < s->budget)
			rc = ring_buffer__consume(s->ring);
	}
	if (rc < 0 && rc != -EINTR && rc != BUDGET_SPENT)
		return OTEL_SAMPLER_ESYS;
	return (int)s->handled;
}

void otel_sampler_counters(const struct otel_sampler *s, uint64_t out[OTEL_SAMPLE_COUNTERS])
{
	int fd = bpf_map__fd(s->skel->maps.counters);
	uint64_t *v = calloc((size_t)s->ncpus, sizeof(*v));

	for (__u32 k = 0; k < OTEL_SAMPLE_COUNTERS; k++) {
		out[k] = 0;
		if (v != NULL && bpf_map_lookup_elem(fd, &k, v) == 0)
			for (int c = 0; c < s->ncpus; c++)
				out[k] += v[c];
	}
	free(v);
}

unsigned int otel_sampler_cpus(const struct otel_sampler *s)
{
	return s->attached;
}

void otel_sampler_close(struct otel_sampler *s)
{
	if (s == NULL)
		return;
	for (int i = 0; i < s->ncpus; i++) {
		if (s->links != NULL && s->links[i] != NULL)
			bpf_link__destroy(s->links[i]);
		if (s->pfds != NULL && s->pfds[i] >= 0)
			close(s->pfds[i]);
	}
	ring_buffer__free(s->ring);
	otel_sample__destroy(s->skel);
	for (size_t i = 0; i < s->nprocs; i++)
		otel_thread_ctx_inspect_close(s->procs[i].insp);
	free(s->procs);
	free(s->files);
	free(s->links);
	free(s->pfds);
	free(s);
}
