/* SPDX-License-Identifier: Apache-2.0 */
/* Another process's memory and /proc maps (remote.h). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include "inspect.h"
#include "remote.h"

int otel__remote_error(int neg_errno)
{
	switch (-neg_errno) {
	case 0:
		return OTEL_THREAD_CTX_OK;
	case ESRCH:
	case ENOENT:
		return OTEL_THREAD_CTX_ESRCH;
	case EPERM:
	case EACCES:
	case ENOSYS:
		return OTEL_THREAD_CTX_EPERM;
	case EFAULT:
	case EIO:
		return OTEL_THREAD_CTX_EFAULT;
	case ENOMEM:
		return OTEL_THREAD_CTX_ENOMEM;
	case ETIMEDOUT:
		return OTEL_THREAD_CTX_ETIMEDOUT;
	}
	errno = -neg_errno;
	return OTEL_THREAD_CTX_ESYS;
}

int otel__remote_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len };
	struct iovec remote = { (void *)(uintptr_t)addr, len };
	ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);

	if (got == (ssize_t)len)
		return 0;
	return got < 0 ? -errno : -EFAULT;
}

size_t otel__remote_read_many(pid_t pid, const uint64_t *addr, size_t n, void *buf, size_t each)
{
	struct iovec local = { buf, n * each }, remote[1024];
	ssize_t got;

	if (n == 0 || n > sizeof(remote) / sizeof(remote[0]) || each == 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		remote[i] = (struct iovec){ (void *)(uintptr_t)addr[i], each };
	got = process_vm_readv(pid, &local, 1, remote, n, 0);
	return got > 0 ? (size_t)got / each : 0;
}

ssize_t otel__remote_proc_text(char *buf, size_t len, const char *fmt, ...)
{
	char path[320];
	va_list ap;
	ssize_t n;
	int fd, err;

	buf[0] = '\0';
	va_start(ap, fmt);
	n = vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	do
		n = read(fd, buf, len - 1);
	while (n < 0 && errno == EINTR);
	err = errno;
	close(fd);
	if (n < 0)
		return -err;
	buf[n] = '\0';
	return n;
}

/* Does task `tid` (of process `pid`) have an address space: a size in
 * its statm (a kernel thread's, or an exited one's, is 0)? */
static int has_memory(pid_t pid, const char *tid)
{
	char buf[32];

	if (otel__remote_proc_text(buf, sizeof(buf), "/proc/%ld/task/%s/statm", (long)pid, tid) <= 0)
		return 0;
	return strtoul(buf, NULL, 10) != 0;
}

bool otel__remote_memory_released(pid_t pid)
{
	char self[24], buf[1024], *p;
	unsigned long flags = 0;

	snprintf(self, sizeof(self), "%ld", (long)pid);
	if (has_memory(pid, self) || otel__remote_memory_task(pid) != pid)
		return false;
	if (otel__remote_proc_text(buf, sizeof(buf), "/proc/%ld/stat", (long)pid) <= 0)
		return true; /* gone */
	/* "pid (comm) S ppid pgrp session tty tpgid flags": field 9. */
	p = strrchr(buf, ')');
	for (int field = 3; field <= 9 && p != NULL; field++) {
		p = strchr(p + 1, ' ');
		if (p != NULL && field == 9)
			flags = strtoul(p + 1, NULL, 10);
	}
	return p != NULL && (flags & 0x00200000u) == 0; /* PF_KTHREAD */
}

pid_t otel__remote_memory_task(pid_t pid)
{
	char self[24], path[48];
	struct dirent *de;
	pid_t found = pid;
	DIR *dir;

	snprintf(self, sizeof(self), "%ld", (long)pid);
	if (pid <= 0 || has_memory(pid, self))
		return pid;
	snprintf(path, sizeof(path), "/proc/%ld/task", (long)pid);
	dir = opendir(path);
	if (dir == NULL)
		return pid;
	while ((de = readdir(dir)) != NULL) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9' || !has_memory(pid, de->d_name))
			continue;
		found = (pid_t)strtol(de->d_name, NULL, 10);
		break;
	}
	closedir(dir);
	return found;
}

static const char *hex(const char *p, uint64_t *out)
{
	uint64_t v = 0;
	int digits = 0;

	for (;; p++, digits++) {
		unsigned int d;

		if (*p >= '0' && *p <= '9')
			d = (unsigned int)(*p - '0');
		else if (*p >= 'a' && *p <= 'f')
			d = (unsigned int)(*p - 'a' + 10);
		else
			break;
		if (digits == 16)
			return NULL;
		v = v << 4 | d;
	}
	*out = v;
	return digits > 0 ? p : NULL;
}

/* The kernel writes a newline of a path in maps as the four bytes "\012"
 * (and escapes nothing else, not even a backslash): back to the newline. */
static void unescape_newlines(char *name)
{
	char *out = name;

	for (const char *in = name; *in != '\0';) {
		if (strncmp(in, "\\012", 4) == 0) {
			*out++ = '\n';
			in += 4;
		} else {
			*out++ = *in++;
		}
	}
	*out = '\0';
}

/* "start-end perms offset dev inode   name"; the line is modified (the
 * newline ends the name). */
static int parse_line(char *line, struct otel__maps_entry *e)
{
	const char *p = line;
	char *nl, *inode_end;
	uint64_t dev, minor;

	if ((p = hex(p, &e->start)) == NULL || *p++ != '-' || (p = hex(p, &e->end)) == NULL ||
	    *p++ != ' ' || e->end < e->start)
		return 0;
	if (strlen(p) < 5 || p[4] != ' ')
		return 0;
	memcpy(e->perms, p, 4);
	e->perms[4] = '\0';
	p += 5;
	if ((p = hex(p, &e->offset)) == NULL)
		return 0;
	if (*p++ != ' ' || (p = hex(p, &dev)) == NULL || *p++ != ':' ||
	    (p = hex(p, &minor)) == NULL || *p++ != ' ')
		return 0;
	e->dev_major = (uint32_t)dev;
	e->dev_minor = (uint32_t)minor;
	e->inode = strtoull(p, &inode_end, 10);
	if (inode_end == p)
		return 0;
	p = inode_end;
	while (*p == ' ' || *p == '\t')
		p++;
	nl = strchr(p, '\n');
	if (nl != NULL)
		*nl = '\0';
	unescape_newlines((char *)p);
	e->name = p;
	return 1;
}

int otel__remote_maps(pid_t pid, int (*visit)(const struct otel__maps_entry *, void *), void *arg)
{
	char path[48], *line = NULL;
	size_t cap = 0;
	int err = OTEL_THREAD_CTX_OK;
	FILE *f;

	if (pid == 0)
		snprintf(path, sizeof(path), "/proc/self/maps");
	else
		snprintf(path, sizeof(path), "/proc/%ld/maps", (long)pid);
	f = fopen(path, "re");
	if (f == NULL)
		return otel__remote_error(-errno);
	errno = 0;
	while (getline(&line, &cap, f) > 0) {
		struct otel__maps_entry e;

		if (parse_line(line, &e) && visit(&e, arg) != 0)
			break;
		errno = 0;
	}
	/* Maps that cannot be read (no permission, a process that is gone)
	 * fail at read time, not at open. */
	if (ferror(f))
		err = otel__remote_error(errno != 0 ? -errno : -EIO);
	free(line);
	fclose(f);
	return err;
}

/*
 * PROCMAP_QUERY (Linux 6.11, the kernel's <linux/fs.h>), declared here for
 * the older headers this builds with: the kernel answers for one mapping,
 * found by address, and can skip those without a file.
 */
struct otel__procmap_query {
	uint64_t size;
	uint64_t query_flags;
	uint64_t query_addr;
	uint64_t vma_start;
	uint64_t vma_end;
	uint64_t vma_flags;
	uint64_t vma_page_size;
	uint64_t vma_offset;
	uint64_t inode;
	uint32_t dev_major;
	uint32_t dev_minor;
	uint32_t vma_name_size;
	uint32_t build_id_size;
	uint64_t vma_name_addr;
	uint64_t build_id_addr;
};
#define OTEL__PROCMAP_QUERY _IOWR('f', 17, struct otel__procmap_query)
#define OTEL__PROCMAP_READABLE 0x01
#define OTEL__PROCMAP_WRITABLE 0x02
#define OTEL__PROCMAP_EXECUTABLE 0x04
#define OTEL__PROCMAP_SHARED 0x08
#define OTEL__PROCMAP_COVERING_OR_NEXT 0x10
#define OTEL__PROCMAP_FILE_BACKED 0x20

/* Set once the kernel says it has no PROCMAP_QUERY. */
static atomic_bool procmap_missing;

/* procmap_walk(): walk the maps text instead (no PROCMAP_QUERY). */
#define WALK_TEXT 1

static int procmap_walk(pid_t pid, int (*visit)(const struct otel__maps_entry *, void *),
			void *arg)
{
	/* A path is at most 4,096 bytes, " (deleted)" included: no
	 * ENAMETOOLONG. */
	char path[48], name[4096 + 64];
	/* ioctl()'s request is an int in musl, unsigned long in glibc. */
	unsigned long req = OTEL__PROCMAP_QUERY;
	uint64_t addr = 0;
	int fd, err = OTEL_THREAD_CTX_OK;
	bool first = true;

	if (pid == 0)
		snprintf(path, sizeof(path), "/proc/self/maps");
	else
		snprintf(path, sizeof(path), "/proc/%ld/maps", (long)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return otel__remote_error(-errno);
	/* The kernel writes each name there, NUL-terminated; a tool that does
	 * not know this ioctl (valgrind) must not take the bytes for unset. */
	memset(name, 0, sizeof(name));
	for (;;) {
		struct otel__procmap_query q = { .size = sizeof(q), .query_addr = addr,
						 .query_flags = OTEL__PROCMAP_COVERING_OR_NEXT |
								OTEL__PROCMAP_FILE_BACKED,
						 .vma_name_addr = (uint64_t)(uintptr_t)name,
						 .vma_name_size = sizeof(name) };
		struct otel__maps_entry e;

		if (ioctl(fd, req, &q) != 0) {
			if (errno == ENOENT) /* no mapping of a file above addr */
				break;
			if (first && (errno == ENOTTY || errno == EINVAL || errno == ENOSYS ||
				      errno == EOPNOTSUPP)) {
				atomic_store_explicit(&procmap_missing, true, memory_order_relaxed);
				err = WALK_TEXT;
			} else if (first && errno == ESRCH) {
				/* No memory (a kernel thread, a process exiting):
				 * whatever the text says of it, as before. */
				err = WALK_TEXT;
			} else {
				err = otel__remote_error(-errno);
			}
			break;
		}
		first = false;
		e.start = q.vma_start;
		e.end = q.vma_end;
		e.offset = q.vma_offset;
		e.inode = q.inode;
		e.dev_major = q.dev_major;
		e.dev_minor = q.dev_minor;
		e.perms[0] = q.vma_flags & OTEL__PROCMAP_READABLE ? 'r' : '-';
		e.perms[1] = q.vma_flags & OTEL__PROCMAP_WRITABLE ? 'w' : '-';
		e.perms[2] = q.vma_flags & OTEL__PROCMAP_EXECUTABLE ? 'x' : '-';
		e.perms[3] = q.vma_flags & OTEL__PROCMAP_SHARED ? 's' : 'p';
		e.perms[4] = '\0';
		e.name = name;
		if (visit(&e, arg) != 0 || q.vma_end <= addr)
			break;
		addr = q.vma_end;
	}
	close(fd);
	return err;
}

int otel__remote_file_maps(pid_t pid, int (*visit)(const struct otel__maps_entry *, void *),
			   void *arg)
{
	int err = WALK_TEXT;

	if (!atomic_load_explicit(&procmap_missing, memory_order_relaxed))
		err = procmap_walk(pid, visit, arg);
	return err == WALK_TEXT ? otel__remote_maps(pid, visit, arg) : err;
}
