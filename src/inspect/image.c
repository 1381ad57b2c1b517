/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The inspector: the process changing under its reads (inspect.h).
 *
 * What open() finds, and what each thread read reads, holds only for the
 * image of the process open() looked at.  A process that exits takes its
 * memory with it; one that exec()s gets new memory under the same id, so a
 * read made from the old description, or a description made from a maps
 * file of the old image and memory of the new, would be a mix of two
 * processes; one that loads or unloads a module changes where things are.
 * Those reads end in ESRCH (gone) or EAGAIN (changed: read again), never in
 * what the mix happened to give.
 *
 * An image is told from the next by its AT_RANDOM bytes: the 16 random
 * bytes the kernel writes on the new stack at every exec(), whose address
 * /proc/PID/auxv gives.  Another program, the same one again, with or
 * without address randomisation: new bytes.  Nothing of the C library or
 * the program writes there.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inspect.h"
#include "remote.h"

/* The AT_RANDOM entry of the auxiliary vector (elf.h). */
#define OTEL__AT_RANDOM 25

/* Reads the image's mark: 0, else a negative errno (no auxv: a kernel
 * thread, a process that is exiting; no right to read it). */
int otel__inspect_image_mark(pid_t pid, uint64_t *at, unsigned char bytes[16])
{
	char path[64];
	uint64_t av[128];
	ssize_t n;
	int fd, err = -ENOENT;

	snprintf(path, sizeof(path), "/proc/%d/auxv", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, av, sizeof(av));
	if (n < 0)
		err = -errno;
	close(fd);
	for (size_t i = 0; n > 0 && i + 1 < (size_t)n / sizeof(av[0]); i += 2)
		if (av[i] == OTEL__AT_RANDOM) {
			*at = av[i + 1];
			return otel__remote_read(pid, *at, bytes, 16);
		}
	return err;
}

static void fnv1a(uint64_t *h, const void *data, size_t n)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < n; i++) {
		*h ^= p[i];
		*h *= UINT64_C(0x100000001b3);
	}
}

/* Each mapping of a file from its start, by address, device and inode
 * (FNV-1a): what the modules are.  Not the path, which gains " (deleted)"
 * when the file is replaced on disk while the process keeps its memory. */
void otel__inspect_sign_module_mapping(uint64_t *h, const struct otel__maps_entry *e)
{
	uint64_t v[3] = { e->start, (uint64_t)e->dev_major << 32 | e->dev_minor, e->inode };

	if (e->offset != 0 || e->name[0] != '/')
		return;
	fnv1a(h, v, sizeof(v));
}

/* The same mappings by address, device, inode and path: the public
 * signature (otel_thread_ctx_inspect_maps_signature()). */
void otel__inspect_sign_file_mapping(uint64_t *h, const struct otel__maps_entry *e)
{
	if (e->offset != 0 || e->name[0] != '/')
		return;
	fnv1a(h, &e->start, sizeof(e->start));
	fnv1a(h, &e->dev_major, sizeof(e->dev_major));
	fnv1a(h, &e->dev_minor, sizeof(e->dev_minor));
	fnv1a(h, &e->inode, sizeof(e->inode));
	fnv1a(h, e->name, strlen(e->name) + 1);
}

static int sign_module_mapping(const struct otel__maps_entry *e, void *arg)
{
	otel__inspect_sign_module_mapping(arg, e);
	return 0;
}

int otel__inspect_modules_signature(pid_t pid, uint64_t *sig)
{
	*sig = OTEL__SIGNATURE_INIT;
	return otel__remote_file_maps(pid, sign_module_mapping, sig);
}

/* Is task `tid` of `pid` exiting (PF_EXITING, in do_exit()) or a zombie,
 * or gone? */
static bool task_exiting(pid_t pid, const char *tid)
{
	char buf[2048], *p;
	unsigned long flags = 0;

	if (otel__remote_proc_text(buf, sizeof(buf), "/proc/%d/task/%s/stat", (int)pid, tid) <= 0)
		return true;
	/* "tid (comm) S ppid ...": the state after the last ')', the flags
	 * in field 9. */
	p = strrchr(buf, ')');
	if (p == NULL || p[1] != ' ' || p[2] == '\0')
		return false;
	if (p[2] == 'Z' || p[2] == 'X' || p[2] == 'x')
		return true;
	p += 3;
	for (int field = 4; field <= 9 && p != NULL; field++) {
		while (*p == ' ')
			p++;
		if (field == 9)
			flags = strtoul(p, NULL, 10);
		p = strchr(p, ' ');
	}
	/* PF_EXITING, the kernel's flag of a task in do_exit(). */
	if ((flags & 0x4u) != 0)
		return true;
	/* Not yet: an exit_group() sends the other threads SIGKILL, which
	 * they may not have acted on yet. */
	if (otel__remote_proc_text(buf, sizeof(buf), "/proc/%d/task/%s/status", (int)pid, tid) <= 0)
		return true;
	p = strstr(buf, "\nSigPnd:");
	/* SIGKILL, 9: bit 8 of the mask, in hexadecimal. */
	return p != NULL && (strtoull(p + 8, NULL, 16) & 0x100u) != 0;
}

/* Is the process gone: reaped, or every thread of it exiting or a zombie
 * (its memory is gone or going)?  A leader that exited while other threads
 * run is not. */
static bool process_gone(pid_t pid)
{
	char path[64];
	struct dirent *de;
	bool gone = true;
	DIR *dir;

	if (kill(pid, 0) != 0 && errno == ESRCH)
		return true;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (dir == NULL)
		return errno == ENOENT || errno == ESRCH;
	while (gone && (de = readdir(dir)) != NULL)
		if (de->d_name[0] >= '0' && de->d_name[0] <= '9')
			gone = task_exiting(pid, de->d_name);
	closedir(dir);
	return gone;
}

/*
 * After reads of the process made by what open() found: OTEL_THREAD_CTX_OK
 * while it is the image open() looked at; ESRCH when it is gone; EAGAIN
 * when it exec()ed since (its mark changed or is not there any more), or,
 * with `maps`, when the files it maps from their start changed (a module
 * loaded or unloaded: otel__inspect_modules_signature()).  `via`: the task whose reads
 * these were (insp->mem, or the thread read).
 */
int otel__inspect_image_unchanged(const struct otel_thread_ctx_inspector *insp, pid_t via, bool maps)
{
	pid_t pid = insp->info.pid;
	unsigned char now[16];
	uint64_t sig;
	int err;

	if (insp->mark_known) {
		/* ESRCH: no memory any more (exiting, a zombie); EFAULT: not
		 * mapped in the image it has now. */
		err = otel__remote_read(via, insp->mark_at, now, sizeof(now));
		if (err != 0)
			return otel__remote_error(err) == OTEL_THREAD_CTX_ESRCH || process_gone(pid) ?
				       OTEL_THREAD_CTX_ESRCH :
				       OTEL_THREAD_CTX_EAGAIN;
		if (memcmp(now, insp->mark, sizeof(now)) != 0)
			return OTEL_THREAD_CTX_EAGAIN;
	}
	if (!maps)
		return OTEL_THREAD_CTX_OK;
	if (process_gone(pid))
		return OTEL_THREAD_CTX_ESRCH;
	if (insp->signature_known) {
		err = otel__inspect_modules_signature(via, &sig);
		if (err == OTEL_THREAD_CTX_ESRCH || (err != 0 && process_gone(pid)))
			return OTEL_THREAD_CTX_ESRCH;
		if (err == 0 && sig != insp->signature)
			return OTEL_THREAD_CTX_EAGAIN;
	}
	return OTEL_THREAD_CTX_OK;
}
