/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Another process as the reading side sees it: its memory and its /proc
 * files.  The one module of libotel-thread-ctx-inspect that reads either,
 * and the one mapping of errno values to its error codes.  Internal.
 */
#ifndef OTEL_INSPECT_REMOTE_H
#define OTEL_INSPECT_REMOTE_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

/*
 * The inspector's internal functions return 0 or a negative errno, as its
 * public ones return 0 or a negative code.  This is the one mapping from
 * the first to the second: -ESRCH and -ENOENT (a /proc file of a process
 * that is gone) -> ESRCH; -EPERM, -EACCES and -ENOSYS (no
 * process_vm_readv()) -> EPERM; -EFAULT and -EIO -> EFAULT; -ENOMEM ->
 * ENOMEM; -ETIMEDOUT -> ETIMEDOUT; 0 -> OK; anything else -> ESYS, with
 * errno set to the errno.
 */
int otel__remote_error(int neg_errno);

/* Copies `len` bytes at `addr` of process `pid` (process_vm_readv()).
 * Returns 0, or a negative errno (-EFAULT for a short copy). */
int otel__remote_read(pid_t pid, uint64_t addr, void *buf, size_t len);

/* Copies `each` bytes at each of addr[0 .. n - 1] (n at most 1024) of
 * process `pid` into buf, one after the other, in one process_vm_readv().
 * Returns how many were copied in full, from the first: the copy stops at
 * the first that cannot be read. */
size_t otel__remote_read_many(pid_t pid, const uint64_t *addr, size_t n, void *buf, size_t each);

/*
 * The task through which the memory of process `pid` is reached: `pid`
 * while its leader has an address space, else the first of its threads
 * that has one.  A leader that called pthread_exit() while other threads
 * run keeps its pid but has no memory: /proc/PID/maps reads empty and
 * process_vm_readv(PID) fails with ESRCH, though the process runs (and in
 * an exit_group(), the leader loses its memory before the other threads
 * do).  Any thread's id reaches the process's one address space.  Returns
 * `pid` when no thread has one (gone, exiting, a kernel thread): what is
 * read through it then fails as it would have.
 */
pid_t otel__remote_memory_task(pid_t pid);

/*
 * Is process `pid` a user process none of whose threads has memory left:
 * one that is exiting (its memory released, its maps empty) or gone?  Not
 * a kernel thread (PF_KTHREAD), which never has memory.
 */
bool otel__remote_memory_released(pid_t pid);

/*
 * Reads the /proc file that the printf() format `fmt` names, at most
 * len - 1 bytes of it (len >= 1), into buf, NUL-terminated (buf "" on
 * failure).  Returns the bytes read, 0 for an empty file, or a negative
 * errno (it could not be opened or read).
 */
__attribute__((format(printf, 3, 4))) ssize_t otel__remote_proc_text(char *buf, size_t len,
								      const char *fmt, ...);

/* One line of /proc/PID/maps. */
struct otel__maps_entry {
	uint64_t start, end;
	uint64_t offset;
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	char perms[5];    /* "r-xp" */
	const char *name; /* what follows the inode: a path, "[heap]", "" */
};

/*
 * Calls visit() for each line of /proc/PID/maps (0: this process), in file
 * order, until it returns non-zero.  Lines that do not parse are skipped.
 * Returns OTEL_THREAD_CTX_OK or an error of otel__remote_error(); the
 * visitor's non-zero value stops the walk and is not an error.
 */
int otel__remote_maps(pid_t pid, int (*visit)(const struct otel__maps_entry *, void *), void *arg);

/*
 * The same for the mappings of files only (those of anonymous shared memory
 * too): what the modules' signatures look at.  Asked of the kernel mapping
 * by mapping (PROCMAP_QUERY, Linux 6.11), which skips the mappings of no
 * file in the kernel: in a process of 60,000 anonymous mappings and a few
 * dozen files, a few dozen answers instead of 60,000 lines of text (26 ->
 * 10 ms; with 60,000 mappings of files, 74 -> 66 ms: bench-readers).  The
 * names are the kernel's, unescaped (the text escapes a newline as \012).
 * Walks the text with otel__remote_maps()
 * where the kernel has no PROCMAP_QUERY (known from its first answer,
 * before any visit).
 */
int otel__remote_file_maps(pid_t pid, int (*visit)(const struct otel__maps_entry *, void *),
			   void *arg);

#endif /* OTEL_INSPECT_REMOTE_H */
