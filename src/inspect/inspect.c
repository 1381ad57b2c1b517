/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The out-of-process inspector (include/otel_thread_ctx_inspect.h): finds
 * the modules that define the slot, works out how each one's code reaches
 * it, and reads threads under ptrace.  Everything read from the process is
 * treated as hostile.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "elf_reader.h"
#include "inspect.h"
#include "remote.h"

#if defined(__x86_64__)
#include "x86_64/regs.h"
#include "x86_64/tlsdesc.h"
#elif defined(__aarch64__)
#include "aarch64/regs.h"
#include "aarch64/tlsdesc.h"
#else
#error "otel-thread-ctx: the inspector supports x86-64 and aarch64 only"
#endif

/* The slot walk of otel_thread_ctx_inspect_bpf.h, the BPF reader's own,
 * reading the process (ctx: its id) with process_vm_readv(). */
#define OTEL_THREAD_CTX_BPF_READ_U64(ctx, addr, v)                              \
	otel__remote_read((pid_t)(ctx), (addr), (v), sizeof(uint64_t))
#include "otel_thread_ctx_inspect_bpf.h"

#define MAX_MODULES 32
#define MAX_MAPPED_FILES 4096

struct otel_thread_ctx_inspector {
	struct otel_thread_ctx_inspect_info info;
	struct otel_thread_ctx_inspect_module modules[MAX_MODULES];
	char *paths[MAX_MODULES];
	/* Where the slot is (inspect_bpf.c): the DTV layout, and per module
	 * what the walk follows. */
	struct otel_thread_ctx_bpf_proc layout;
	struct otel_thread_ctx_bpf_module where[MAX_MODULES];
	struct otel_thread_ctx_inspect_process_snapshot *pctx;
};

OTEL_EXPORT const char *otel_thread_ctx_inspect_model_name(int model)
{
	switch (model) {
	case OTEL_THREAD_CTX_INSPECT_TLSDESC_STATIC:
		return "tlsdesc-static";
	case OTEL_THREAD_CTX_INSPECT_TLSDESC_DYNAMIC:
		return "tlsdesc-dynamic";
	case OTEL_THREAD_CTX_INSPECT_GENERAL_DYNAMIC:
		return "general-dynamic";
	case OTEL_THREAD_CTX_INSPECT_INITIAL_EXEC:
		return "initial-exec";
	case OTEL_THREAD_CTX_INSPECT_LOCAL_EXEC:
		return "local-exec";
	}
	return "unknown";
}

static int read_remote(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	return otel__remote_read(pid, addr, buf, len);
}

static int read_u64(pid_t pid, uint64_t addr, uint64_t *v)
{
	return read_remote(pid, addr, v, sizeof(*v));
}

/* The code for a failed read of something the process should hold there
 * (a GOT entry, a descriptor, a resolver's code): the errno mapping of
 * remote.c, where any error it has no code for is EFAULT. */
static int read_error(int err)
{
	int code = otel__remote_error(err);

	return code == OTEL_THREAD_CTX_ESYS ? OTEL_THREAD_CTX_EFAULT : code;
}

/* --- Modules ------------------------------------------------------------ */

/* One mapped file: its path and the lowest mapping of file offset 0. */
struct mapped_file {
	char *path;
	uint64_t start;
};

struct file_list {
	struct mapped_file *files;
	size_t count;
	int err;
};

/* Each file once, with its first mapping of file offset 0. */
static int add_mapped_file(const struct otel__maps_entry *e, void *arg)
{
	struct file_list *l = arg;
	size_t i;

	if (e->offset != 0 || e->name[0] != '/')
		return 0;
	for (i = 0; i < l->count; i++)
		if (strcmp(l->files[i].path, e->name) == 0)
			return 0;
	if (l->count == MAX_MAPPED_FILES)
		return 1;
	l->files[l->count].path = strdup(e->name);
	if (l->files[l->count].path == NULL) {
		l->err = OTEL_THREAD_CTX_ENOMEM;
		return 1;
	}
	l->files[l->count++].start = e->start;
	return 0;
}

static int list_mapped_files(pid_t pid, struct mapped_file **out, size_t *n)
{
	struct file_list l = { calloc(MAX_MAPPED_FILES, sizeof(struct mapped_file)), 0, 0 };
	int err;

	if (l.files == NULL)
		return OTEL_THREAD_CTX_ENOMEM;
	err = otel__remote_maps(pid, add_mapped_file, &l);
	if (err == 0)
		err = l.err;
	if (err != 0) {
		for (size_t i = 0; i < l.count; i++)
			free(l.files[i].path);
		free(l.files);
		return err;
	}
	*out = l.files;
	*n = l.count;
	return 0;
}

/* Opens the file of a mapping as the process sees it (its root first). */
static int open_module(pid_t pid, const char *path, struct otel__elf **elf)
{
	char buf[PATH_MAX + 64];
	struct stat st;

	/* Regular files only: opening a mapped device could have effects. */
	snprintf(buf, sizeof(buf), "/proc/%d/root%s", (int)pid, path);
	if (stat(buf, &st) == 0 && S_ISREG(st.st_mode) &&
	    otel__elf_open_path(elf, buf, 0, NULL) == 0)
		return 0;
	if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
		return -1;
	return otel__elf_open_path(elf, path, 0, NULL);
}

/* The load bias of a module whose offset-0 mapping starts at `start`. */
static uint64_t load_bias(const struct otel__elf *elf, uint64_t start)
{
	struct otel__elf_info info;
	long page = sysconf(_SC_PAGESIZE);

	otel__elf_info(elf, &info);
	for (size_t i = 0; i < info.phnum; i++) {
		const struct otel__elf64_phdr *ph = otel__elf_phdr(elf, i);

		if (ph != NULL && ph->p_type == OTEL__PT_LOAD)
			return start - (ph->p_vaddr & ~(uint64_t)(page > 0 ? page - 1 : 4095));
	}
	return start;
}

/* glibc or musl, from the interpreter of the main program, else from the
 * names of the mapped files. */
static int detect_libc(pid_t pid, const struct mapped_file *files, size_t n)
{
	char buf[64];
	struct otel__elf *exe = NULL;

	snprintf(buf, sizeof(buf), "/proc/%d/exe", (int)pid);
	if (otel__elf_open_path(&exe, buf, 0, NULL) == 0) {
		struct otel__elf_info info;

		otel__elf_info(exe, &info);
		if (info.interp != NULL) {
			int libc = strstr(info.interp, "ld-musl") != NULL ?
					   OTEL_THREAD_CTX_INSPECT_LIBC_MUSL :
				   strstr(info.interp, "ld-linux") != NULL ?
					   OTEL_THREAD_CTX_INSPECT_LIBC_GLIBC :
					   OTEL_THREAD_CTX_INSPECT_LIBC_UNKNOWN;

			otel__elf_close(exe);
			if (libc != OTEL_THREAD_CTX_INSPECT_LIBC_UNKNOWN)
				return libc;
		} else {
			otel__elf_close(exe);
		}
	}
	for (size_t i = 0; i < n; i++) {
		const char *base = strrchr(files[i].path, '/');

		base = base != NULL ? base + 1 : files[i].path;
		if (strncmp(base, "ld-musl", 7) == 0 || strstr(files[i].path, "-linux-musl/") != NULL)
			return OTEL_THREAD_CTX_INSPECT_LIBC_MUSL;
		if (strncmp(base, "ld-linux", 8) == 0 || strncmp(base, "libc.so.6", 9) == 0)
			return OTEL_THREAD_CTX_INSPECT_LIBC_GLIBC;
	}
	return OTEL_THREAD_CTX_INSPECT_LIBC_UNKNOWN;
}

/*
 * Works out how module `m` reaches the slot, reading GOT entries and TLS
 * descriptors from the process.  0, or a negative error.
 */
static int resolve_model(pid_t pid, const struct otel__elf *elf, const struct otel__elf_info *info,
			 struct otel_thread_ctx_inspect_module *m)
{
	struct otel__elf_tls_access acc;
	uint64_t v, w;
	int err;

	if (otel__elf_tls_classify(elf, OTEL_THREAD_CTX_SLOT_NAME, &acc) != 0)
		return OTEL_THREAD_CTX_EMODEL;
	if (acc.desc.count > 0) {
		uint64_t desc[2];
		unsigned char code[OTEL__TLSDESC_RESOLVER_SIZE];

		/*
		 * {resolver, argument}.  Static or dynamic, the way the loader
		 * decided it: by the resolver it put in the descriptor.  The
		 * static one returns the argument, an offset from the thread
		 * pointer (of any size: an executable's 2 MiB of TLS ahead of
		 * the module's block on aarch64); anything else takes it for a
		 * pointer to {module id, offset in the block}, as glibc's and
		 * musl's dynamic resolvers do.  A resolver that cannot be
		 * read is EFAULT: it is the loader's code.
		 */
		if ((err = read_remote(pid, m->base + acc.desc.offset, desc, sizeof(desc))) != 0 ||
		    (err = read_remote(pid, desc[0], code, sizeof(code))) != 0)
			return read_error(err);
		if (otel__tlsdesc_resolver_is_static(code)) {
			m->model = OTEL_THREAD_CTX_INSPECT_TLSDESC_STATIC;
			m->tp_offset = (int64_t)desc[1];
			return 0;
		}
		if ((err = read_u64(pid, desc[1], &m->module_id)) != 0 ||
		    (err = read_u64(pid, desc[1] + 8, &m->dtv_offset)) != 0)
			return read_error(err);
		if (m->module_id == 0 || m->module_id > 0xffffff)
			return OTEL_THREAD_CTX_EFAULT;
		m->model = OTEL_THREAD_CTX_INSPECT_TLSDESC_DYNAMIC;
		return 0;
	}
	if (acc.tpoff.count > 0) {
		err = read_u64(pid, m->base + acc.tpoff.offset, &v);
		if (err != 0)
			return read_error(err);
		if (acc.tpoff.type == OTEL__R_X86_64_TPOFF32)
			v = (uint64_t)(int64_t)(int32_t)(uint32_t)v;
		m->model = OTEL_THREAD_CTX_INSPECT_INITIAL_EXEC;
		m->tp_offset = (int64_t)v;
		return 0;
	}
	if (acc.dtpmod.count > 0 && acc.dtpoff.count > 0) {
		if ((err = read_u64(pid, m->base + acc.dtpmod.offset, &v)) != 0 ||
		    (err = read_u64(pid, m->base + acc.dtpoff.offset, &w)) != 0)
			return read_error(err);
		if (v == 0 || v > 0xffffff)
			return OTEL_THREAD_CTX_EFAULT;
		m->model = OTEL_THREAD_CTX_INSPECT_GENERAL_DYNAMIC;
		m->module_id = v;
		m->dtv_offset = w;
		return 0;
	}
	if ((acc.models & OTEL__ELF_TLS_LE) != 0 && otel__elf_kind_is_executable(info->kind)) {
		int64_t off;

		if (otel__elf_tls_local_exec_offset(elf, m->st_value, &off) != 0)
			return OTEL_THREAD_CTX_EMODEL;
		m->model = OTEL_THREAD_CTX_INSPECT_LOCAL_EXEC;
		m->tp_offset = off;
		return 0;
	}
	return OTEL_THREAD_CTX_EMODEL;
}

static void free_inspector(struct otel_thread_ctx_inspector *insp)
{
	if (insp == NULL)
		return;
	for (size_t i = 0; i < MAX_MODULES; i++)
		free(insp->paths[i]);
	otel_thread_ctx_inspect_process_snapshot_free(insp->pctx);
	free(insp);
}

OTEL_EXPORT int otel_thread_ctx_inspect_open(pid_t pid, otel_thread_ctx_inspector **out)
{
	struct otel_thread_ctx_inspector *insp;
	struct mapped_file *files = NULL;
	size_t nfiles = 0, nmod = 0;
	int err, model_err = 0, defined = 0;

	if (out == NULL)
		return OTEL_THREAD_CTX_ENULL;
	if (pid <= 0)
		return OTEL_THREAD_CTX_ESRCH;
	if (kill(pid, 0) != 0 && errno == ESRCH)
		return OTEL_THREAD_CTX_ESRCH;
	err = list_mapped_files(pid, &files, &nfiles);
	if (err != 0)
		return err;
	if (nfiles == 0) {
		/* No file mapped: gone, or a kernel thread (maps that may not
		 * be read fail to open, above). */
		free(files);
		return kill(pid, 0) != 0 && errno == ESRCH ? OTEL_THREAD_CTX_ESRCH :
							     OTEL_THREAD_CTX_ENOSLOT;
	}
	insp = calloc(1, sizeof(*insp));
	if (insp == NULL) {
		err = OTEL_THREAD_CTX_ENOMEM;
		goto done;
	}
	insp->info.pid = pid;
	insp->info.libc = detect_libc(pid, files, nfiles);
	otel__inspect_dtv_layout(insp->info.libc, &insp->layout);
	for (size_t i = 0; i < nfiles && nmod < MAX_MODULES; i++) {
		struct otel__elf *elf = NULL;
		struct otel__elf_info info;
		struct otel__elf_sym sym;
		struct otel_thread_ctx_inspect_module *m = &insp->modules[nmod];
		int rc;

		if (open_module(pid, files[i].path, &elf) != 0)
			continue;
		if (otel__elf_sym_find(elf, OTEL__ELF_DYNSYM, OTEL_THREAD_CTX_SLOT_NAME, &sym) != 0 ||
		    sym.shndx == OTEL__SHN_UNDEF || sym.type != OTEL__STT_TLS) {
			otel__elf_close(elf);
			continue;
		}
		defined = 1;
		otel__elf_info(elf, &info);
		if (info.machine != OTEL__INSPECT_ELF_MACHINE) {
			otel__elf_close(elf);
			model_err = OTEL_THREAD_CTX_EMODEL;
			continue;
		}
		memset(m, 0, sizeof(*m));
		m->base = load_bias(elf, files[i].start);
		m->st_value = sym.value;
		rc = resolve_model(pid, elf, &info, m);
		otel__elf_close(elf);
		if (rc == 0)
			rc = otel__inspect_describe_module(m, &insp->layout, &insp->where[nmod]);
		if (rc != 0) {
			model_err = rc;
			continue;
		}
		insp->paths[nmod] = strdup(files[i].path);
		if (insp->paths[nmod] == NULL) {
			err = OTEL_THREAD_CTX_ENOMEM;
			goto done;
		}
		m->path = insp->paths[nmod];
		nmod++;
	}
	if (nmod == 0) {
		err = !defined ? OTEL_THREAD_CTX_ENOSLOT : model_err;
		if (err == OTEL_THREAD_CTX_ENOSLOT && kill(pid, 0) != 0 && errno == ESRCH)
			err = OTEL_THREAD_CTX_ESRCH;
		goto done;
	}
	insp->info.modules = insp->modules;
	insp->info.module_count = nmod;
	insp->info.process_ctx_status = otel_thread_ctx_inspect_process_read(pid, 0, &insp->pctx);
	insp->info.process_ctx = insp->pctx;
	*out = insp;
	insp = NULL;
	err = 0;
done:
	free_inspector(insp);
	for (size_t i = 0; i < nfiles; i++)
		free(files[i].path);
	free(files);
	return err;
}

OTEL_EXPORT const struct otel_thread_ctx_inspect_info *
otel_thread_ctx_inspect_info(const otel_thread_ctx_inspector *insp)
{
	return insp != NULL ? &insp->info : NULL;
}

OTEL_EXPORT unsigned int otel_thread_ctx_inspect_key_count(const otel_thread_ctx_inspector *insp)
{
	if (insp == NULL || insp->pctx == NULL)
		return 0;
	return (unsigned int)insp->pctx->key_count;
}

OTEL_EXPORT const char *otel_thread_ctx_inspect_key_name(const otel_thread_ctx_inspector *insp,
							 unsigned int index)
{
	if (insp == NULL || insp->pctx == NULL || index >= insp->pctx->key_count)
		return NULL;
	return insp->pctx->keys[index];
}

OTEL_EXPORT void otel_thread_ctx_inspect_close(otel_thread_ctx_inspector *insp)
{
	free_inspector(insp);
}

/* --- Threads ------------------------------------------------------------ */

/* Reads and decodes the record at `addr` into out. */
static int read_record(pid_t pid, uint64_t addr, struct otel_thread_ctx_inspect_thread *out)
{
	uint8_t buf[OTEL_THREAD_CTX_RECORD_SIZE];
	struct otel_thread_ctx_record *r = &out->record;
	uint16_t size;
	size_t n, at = 0;
	int rc;

	if (addr % 2 != 0)
		return OTEL_THREAD_CTX_EFORMAT;
	if (read_remote(pid, addr, buf, OTEL_THREAD_CTX_RECORD_HEADER_SIZE) != 0)
		return OTEL_THREAD_CTX_EFAULT;
	memcpy(&size, buf + offsetof(struct otel_thread_ctx_record, attrs_data_size), sizeof(size));
	out->attrs_data_size = size;
	n = size > OTEL_THREAD_CTX_ATTRS_MAX ? OTEL_THREAD_CTX_ATTRS_MAX : size;
	if (buf[offsetof(struct otel_thread_ctx_record, valid)] == 1 && n > 0 &&
	    read_remote(pid, addr + OTEL_THREAD_CTX_RECORD_HEADER_SIZE, buf + OTEL_THREAD_CTX_RECORD_HEADER_SIZE, n) != 0)
		return OTEL_THREAD_CTX_EFAULT;
	rc = otel_thread_ctx_record_decode(buf, OTEL_THREAD_CTX_RECORD_HEADER_SIZE + n, r);
	if (rc != 0)
		return rc;
	if (size > OTEL_THREAD_CTX_ATTRS_MAX)
		out->anomalies |= OTEL_THREAD_CTX_INSPECT_OVERSIZED;
	while (at + 2 <= r->attrs_data_size && at + 2 + r->attrs_data[at + 1] <= r->attrs_data_size)
		at += 2u + r->attrs_data[at + 1];
	if (at != r->attrs_data_size)
		out->anomalies |= OTEL_THREAD_CTX_INSPECT_TRUNCATED_ENTRY;
	{
		static const uint8_t zero[16];
		bool no_trace = memcmp(r->trace_id, zero, 16) == 0;
		bool no_span = memcmp(r->span_id, zero, 8) == 0;

		if (no_trace != no_span)
			out->anomalies |= OTEL_THREAD_CTX_INSPECT_HALF_IDS;
	}
	return 0;
}

static void read_comm(pid_t pid, pid_t tid, char name[17])
{
	char path[64];
	ssize_t n;
	int fd;

	name[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, name, 16);
	close(fd);
	if (n <= 0)
		n = 0;
	name[n] = '\0';
	if (n > 0 && name[n - 1] == '\n')
		name[n - 1] = '\0';
}

/* Is `tid` a thread of `pid`? */
static bool is_thread_of(pid_t pid, pid_t tid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/task/%d", (int)pid, (int)tid);
	return access(path, F_OK) == 0;
}

/* Has thread `tid` exited (or is it exiting: a zombie), or is it gone? */
static bool thread_exiting(pid_t pid, pid_t tid)
{
	char path[64], buf[256], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = '\0';
	/* "tid (comm) S ...": the state follows the last ')'. */
	p = strrchr(buf, ')');
	return p == NULL || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X' || p[2] == 'x';
}

/*
 * Waits for the interrupt to stop `tid`.  Returns 0 with *resend the signal
 * to hand back at detach (0 for none), or ESRCH when the thread exited.
 */
static int wait_stopped(pid_t tid, int *resend)
{
	int status;

	*resend = 0;
	for (;;) {
		pid_t got = waitpid(tid, &status, __WALL);

		if (got < 0) {
			if (errno == EINTR)
				continue;
			return errno == ECHILD ? ESRCH : errno;
		}
		if (WIFEXITED(status) || WIFSIGNALED(status))
			return ESRCH;
		if (!WIFSTOPPED(status))
			continue;
		/* PTRACE_EVENT_STOP: the interrupt or a group-stop; anything
		 * else is a signal on its way to the thread, which the detach
		 * must deliver. */
		if ((status >> 16) != PTRACE_EVENT_STOP)
			*resend = WSTOPSIG(status);
		return 0;
	}
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

/*
 * The slot and the record of stopped thread `tid`, by the walk and the rule
 * the BPF reader follows (otel_thread_ctx_inspect_bpf.h): the first module
 * whose slot holds a record is read; else EFAULT if some module's slot could
 * not be read, else ENOCTX.
 */
static int sample_stopped(otel_thread_ctx_inspector *insp, pid_t tid,
			  struct otel_thread_ctx_inspect_thread *out)
{
	pid_t pid = insp->info.pid;
	int err = otel__inspect_thread_pointer(tid, &out->thread_pointer);
	uint32_t seen = 0;
	bool null_seen = false;

	if (err != 0) {
		out->sys_errno = err;
		return err == ESRCH ? OTEL_THREAD_CTX_ESRCH : OTEL_THREAD_CTX_ESYS;
	}
	for (size_t i = 0; i < insp->info.module_count; i++) {
		uint64_t slot = 0, rec = 0;
		int rc = otel_thread_ctx_bpf_walk_module((uint64_t)pid, &insp->layout, &insp->where[i],
							 out->thread_pointer, &slot, &rec);

		if (rc == OTEL_THREAD_CTX_BPF_OK) {
			out->module = (unsigned int)i;
			out->slot_address = slot;
			out->record_address = rec;
			return read_record(pid, rec, out);
		}
		/* ENOCTX names the first module whose slot is NULL. */
		if (rc == OTEL_THREAD_CTX_BPF_NO_CONTEXT && !null_seen) {
			null_seen = true;
			out->module = (unsigned int)i;
			out->slot_address = slot;
		}
		seen = otel_thread_ctx_bpf_walk_fold(seen, rc);
	}
	return walk_error(otel_thread_ctx_bpf_walk_status(seen));
}

OTEL_EXPORT int otel_thread_ctx_inspect_thread(otel_thread_ctx_inspector *insp, pid_t tid,
					       struct otel_thread_ctx_inspect_thread *out)
{
	int err, resend = 0;

	if (insp == NULL || out == NULL)
		return OTEL_THREAD_CTX_ENULL;
	memset(out, 0, sizeof(*out));
	out->tid = tid;
	if (tid <= 0 || !is_thread_of(insp->info.pid, tid))
		return out->status = OTEL_THREAD_CTX_ESRCH;
	read_comm(insp->info.pid, tid, out->name);
	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) != 0) {
		out->sys_errno = errno;
		/* The kernel refuses to attach to an exiting thread (EPERM). */
		if (errno == ESRCH || (errno == EPERM && thread_exiting(insp->info.pid, tid)))
			return out->status = OTEL_THREAD_CTX_ESRCH;
		return out->status = otel__remote_error(errno) == OTEL_THREAD_CTX_EFAULT ?
					     OTEL_THREAD_CTX_ESYS : otel__remote_error(errno);
	}
	if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) != 0) {
		/* It exited after the seize (ESRCH); either way, let go. */
		out->sys_errno = errno;
		out->status = errno == ESRCH ? OTEL_THREAD_CTX_ESRCH : OTEL_THREAD_CTX_ESYS;
		ptrace(PTRACE_DETACH, tid, NULL, NULL);
		if (out->status == OTEL_THREAD_CTX_ESRCH)
			waitpid(tid, NULL, __WALL | WNOHANG);
		return out->status;
	}
	err = wait_stopped(tid, &resend);
	if (err != 0) {
		out->sys_errno = err;
		return out->status = err == ESRCH ? OTEL_THREAD_CTX_ESRCH : OTEL_THREAD_CTX_ESYS;
	}
	out->status = sample_stopped(insp, tid, out);
	/* Detaching resumes the thread (or returns it to its group-stop). */
	if (ptrace(PTRACE_DETACH, tid, NULL, (void *)(uintptr_t)resend) != 0 && errno != ESRCH &&
	    out->status == OTEL_THREAD_CTX_OK) {
		out->sys_errno = errno;
		out->status = OTEL_THREAD_CTX_ESYS;
	}
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
		return otel__remote_error(errno) == OTEL_THREAD_CTX_ESRCH ? OTEL_THREAD_CTX_ESRCH :
								    OTEL_THREAD_CTX_ESYS;
	while ((de = readdir(dir)) != NULL) {
		char *end;
		long tid = strtol(de->d_name, &end, 10);

		if (*de->d_name == '\0' || *end != '\0' || tid <= 0 || tid > INT_MAX)
			continue;
		if (n < cap)
			otel_thread_ctx_inspect_thread(insp, (pid_t)tid, &out[n]);
		n++;
	}
	closedir(dir);
	*count = n;
	return 0;
}

void otel__inspect_where(const otel_thread_ctx_inspector *insp,
			 const struct otel_thread_ctx_bpf_proc **layout,
			 const struct otel_thread_ctx_bpf_module **modules, size_t *count)
{
	*layout = &insp->layout;
	*modules = insp->where;
	*count = insp->info.module_count;
}
