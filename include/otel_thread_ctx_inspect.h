/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otel-thread-ctx inspector: read the thread contexts of another process,
 * from outside, the way a ptrace-based profiler or debugger does.
 *
 * Steps
 * -----
 * otel_thread_ctx_inspect_open() looks at process `pid`:
 *
 * - every loaded image of a file whose .dynsym defines the TLS symbol
 *   otel_thread_ctx_v1 is a module: a mapping of the file from offset 0
 *   (in /proc/PID/maps, files known by device and inode) at which every
 *   PT_LOAD segment of the file is mapped where the loader puts it (its
 *   file offset at its address, executable where the segment is; an
 *   executable segment may instead lie in executable memory without a
 *   file, where a program copied its code onto huge pages; where that
 *   copy took the file's first page too, as on aarch64, the image starts
 *   at the executable memory without a file that begins with an ELF
 *   header right below the file's other mappings); the load bias follows
 *   from where the first page is and the first PT_LOAD.  So a file mapped
 *   again from offset 0 (a symbolizer reading a library's debug sections)
 *   is no module, and each copy of a library loaded into another link-map
 *   namespace (dlmopen()) is one of its own.  The file is read through
 *   /proc/PID/map_files/ (the mapped file itself, also when deleted or
 *   replaced on disk since, or in another mount namespace; this needs
 *   CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE), else by its path under
 *   /proc/PID/root, then as seen here, each only when it is still the file
 *   mapped (device and inode, or its first bytes against the mapping's),
 *   and only ever as a regular file.  No count of mappings is too many: the
 *   list grows with the process's maps;
 * - the module's dynamic relocations against the slot say how its code
 *   reaches it, and so how a reader finds it (OTEP 4947 lists the models):
 *     TLSDESC:          the descriptor (two words, read from the process)
 *                       is {resolver, argument}; as the dynamic loader
 *                       decided, the argument is an offset from the
 *                       thread pointer (static TLS) when the resolver is
 *                       the C library's static one (matched by its code),
 *                       else a pointer to {module id, offset} (dynamic
 *                       TLS: a DTV walk);
 *     general-dynamic:  the module id and offset from the DTPMOD64 and
 *                       DTPOFF64 GOT entries (a DTV walk);
 *     initial-exec:     the offset from the TPOFF64 / TLS_TPREL GOT entry;
 *     local-exec:       an executable without relocations against the
 *                       slot; the offset follows from st_value and PT_TLS;
 * - the C library (glibc or musl, from the program interpreter) fixes the
 *   layout of the DTV, needed by the dynamic models; with glibc, the TLS
 *   descriptor of dynamic TLS also gives the module's DTV generation, and
 *   a thread whose DTV is older has no block of this module (ENOCTX), even
 *   where its entry still points to the block of a module unloaded since
 *   under the same id;
 * - the process context (otel_thread_ctx_inspect_process_read(), below) gives the
 *   attribute key names, when the process publishes one.
 *
 * otel_thread_ctx_inspect_thread() then reads one thread: it attaches with
 * PTRACE_SEIZE, stops the thread with PTRACE_INTERRUPT, takes its thread
 * pointer with PTRACE_GETREGSET (x86-64: fs_base of NT_PRSTATUS; aarch64:
 * NT_ARM_TLS), computes the slot's address, reads the slot and the record
 * with process_vm_readv(), decodes the record by the format's rules
 * (otel_thread_ctx_record_decode()) and detaches, re-delivering a signal
 * that arrived meanwhile.  The thread is stopped only between the interrupt
 * and the detach; every path out of the function detaches, and if the
 * inspecting process dies, the kernel detaches.  No wait blocks: the stop
 * is polled on that thread alone (waitpid(TID, WNOHANG | __WALL)) and
 * checked with ptrace itself, so a thread of the calling process that
 * collects the reports of every child (waitpid(-1), a reaper thread) and
 * takes the stop's report neither hangs the read nor leaves the thread
 * stopped: the read goes on and detaches.  A thread that does not stop
 * within OTEL_THREAD_CTX_INSPECT_STOP_TIMEOUT_MS (one in uninterruptible
 * sleep: a vfork() parent, a hung file system, a frozen cgroup; a runnable
 * thread, which stops as soon as it gets a CPU, gets ten times that) is
 * reported ETIMEDOUT, and is detached before the call returns: the
 * attaching is done by a thread the inspector starts for it (its "tracer",
 * which blocks every signal), and PTRACE_DETACH works only on a stopped
 * tracee, so when a read may leave a thread attached (not stopped in time,
 * exited but not reaped, a detach that failed) the tracer exits, the
 * kernel detaches its tracees (a tracee that has not stopped yet forgets the
 * interrupt and never stops for it), and the call returns once that is
 * done; the next read starts a new tracer.  So no call returns with a
 * thread of the process attached, let alone in tracing stop, and
 * otel_thread_ctx_inspect_close() ends the tracer.  Only one thread of the
 * process is stopped at a time, so reading a thread that holds a lock
 * another thread waits for stalls nobody for longer than one read.
 * otel_thread_ctx_inspect_threads() does that for every thread in
 * /proc/PID/task.
 *
 * Permissions: reading needs the right to ptrace-attach to the process:
 * the same user (and a dumpable process), and under Yama
 * (/proc/sys/kernel/yama/ptrace_scope) 1 also an ancestor of it, or a
 * process it named with prctl(PR_SET_PTRACER), or CAP_SYS_PTRACE; 2 needs
 * CAP_SYS_PTRACE; 3 forbids attaching altogether.  A process traced by
 * someone else (a debugger) cannot be read either (EPERM).
 *
 * A process that changes under the read: one that exits gives ESRCH; one
 * that exec()s (its image is told from the next by the 16 AT_RANDOM bytes
 * the kernel writes at each exec(), /proc/PID/auxv) or loads or unloads a
 * module while open() looks at it, or exec()s after it, gives EAGAIN, never
 * EFAULT or a description or record made of two images.  A process caught
 * between fork() and exec() is its parent's copy, and is read as such.
 *
 * Trust: every byte read from the process is treated as hostile.  A record
 * pointer into unmapped memory, a misaligned record, attrs_data_size past
 * the 612 bytes or an entry cut off by it are reported per thread, never a
 * crash; the process keeps running in every case.
 *
 * Threads: an inspector is used by one thread at a time (any thread: its
 * tracer makes the attachments).  A child forked while an inspector is
 * open has no tracer; its first read starts one.  Nothing here is
 * async-signal-safe: these functions allocate and do I/O.  They never
 * abort, exit or print.
 *
 * Library
 * -------
 * libotel-thread-ctx-inspect (pkg-config otel-thread-ctx-inspect), what a
 * profiler or a debugging tool links to read other processes.  It needs
 * libc alone: the record decoder is compiled in, and this process's own
 * publisher, if one is loaded, is reached through weak references.  A
 * tracer links libotel-thread-ctx alone; neither library needs the other.
 *
 * Return values
 * -------------
 * Every function returns OTEL_THREAD_CTX_OK (0) or a negative code, as in
 * otel_thread_ctx.h, except those that return void, a pointer
 * (otel_thread_ctx_inspect_info(), the _strerror, _model_name and _key_name
 * functions) or a count (otel_thread_ctx_inspect_key_count()), which say
 * so.  otel_thread_ctx_inspect_thread() follows the rule too: 0 when it read
 * the thread's record, else the negative code it also stores in the
 * thread's status.
 *
 * Errors
 * ------
 * The negative codes of enum otel_thread_ctx_error (otel_thread_ctx.h) and
 * of enum otel_thread_ctx_inspect_error below, which only the reading side
 * returns; otel_thread_ctx_inspect_strerror() describes both.  A code named
 * after an errno equals its negation.
 */
#ifndef OTEL_THREAD_CTX_INSPECT_H
#define OTEL_THREAD_CTX_INSPECT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "otel_thread_ctx_process.h"
#include "otel_thread_ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Return values of the reading side, besides those of otel_thread_ctx.h.
 * Stable: new codes are only ever added. */
enum otel_thread_ctx_inspect_error {
	/* -EPERM: not permitted to read the process (ptrace access check),
	 * or process_vm_readv() is unavailable. */
	OTEL_THREAD_CTX_EPERM = -1,
	/* -ENOENT: the process publishes no process context. */
	OTEL_THREAD_CTX_ENOENT = -2,
	/* -ESRCH: no such process or thread. */
	OTEL_THREAD_CTX_ESRCH = -3,
	/* -EAGAIN: the process changed under the read: the process context
	 * changed during every attempt; or the process exec()ed, or loaded or
	 * unloaded a module, while otel_thread_ctx_inspect_open() looked at it
	 * (read again), or since the inspector was opened, for
	 * otel_thread_ctx_inspect_thread() (open a new inspector).  Nothing of
	 * what was read is returned. */
	OTEL_THREAD_CTX_EAGAIN = -11,
	/* -EFAULT: memory of the process that should hold something cannot
	 * be read (a payload, a record, a TLS block). */
	OTEL_THREAD_CTX_EFAULT = -14,
	/* -ETIMEDOUT: the thread did not stop for the read within
	 * OTEL_THREAD_CTX_INSPECT_STOP_TIMEOUT_MS (see Steps). */
	OTEL_THREAD_CTX_ETIMEDOUT = -110,
	/* An OTEL_CTX mapping with an invalid header (signature, version,
	 * payload size or pointer), or a record pointer that is not 2-aligned. */
	OTEL_THREAD_CTX_EFORMAT = -4101,
	/* The payload is not a valid ProcessContext message. */
	OTEL_THREAD_CTX_EDECODE = -4102,
	/* No loaded module of the process defines otel_thread_ctx_v1. */
	OTEL_THREAD_CTX_ENOSLOT = -4103,
	/* The slot is reached in a way the inspector does not support
	 * (local-dynamic, no access at all, another architecture, an unknown
	 * C library where the DTV is needed). */
	OTEL_THREAD_CTX_EMODEL = -4104,
};

/* How long otel_thread_ctx_inspect_thread() waits for a thread to stop
 * (ten times as long while the thread is runnable: see Steps). */
#define OTEL_THREAD_CTX_INSPECT_STOP_TIMEOUT_MS 1000

/* A static, English description of an error code of either enum; never
 * NULL. */
const char *otel_thread_ctx_inspect_strerror(int error);

/*
 * Reading
 * -------
 * What an inspector or profiler does to read the process context of a
 * process: otel_thread_ctx_inspect_process_read() finds the mapping, copies it by the
 * reading protocol, checks it and decodes it into a snapshot that the caller
 * frees with otel_thread_ctx_inspect_process_snapshot_free().  otel_thread_ctx_inspect_process_decode()
 * decodes a payload obtained some other way (an eBPF copy, a file).
 *
 * Decoding follows protobuf: unknown fields are skipped; of a field that
 * occurs more than once, the last occurrence counts (ProcessContext.resource
 * and repeated fields accumulate); all strings must be valid UTF-8.  It is
 * stricter where the thread-context format is concerned: the key map must be
 * an array of at most 256 strings, none containing a NUL byte, and the
 * schema version a string without NUL.  The threadlocal.* entries are read
 * from ProcessContext.attributes, where OTEP 4947 puts them; when they are
 * missing there, well-formed entries of the same keys among the resource
 * attributes (where an early draft put them) are used instead.  Values of
 * types ARRAY and KVLIST in resource attributes are not decoded: their
 * encoded bytes are returned.
 */

/* Attempts otel_thread_ctx_inspect_process_read() makes when it is given 0. */
#define OTEL_THREAD_CTX_INSPECT_PROCESS_READ_ATTEMPTS 100u

/* A decoded process context.  Everything it points to lives in the
 * snapshot's own memory until otel_thread_ctx_inspect_process_snapshot_free(). */
struct otel_thread_ctx_inspect_process_snapshot {
	/* From the mapping (0 for otel_thread_ctx_inspect_process_decode()). */
	uint64_t mapping_address; /* where the header is, in the process */
	uint64_t payload_address;
	uint64_t monotonic_published_at_ns;
	uint32_t version;
	/* Copies that came out torn or during an update and were retried. */
	unsigned int retries;

	/* The payload: a copy of its payload_size bytes. */
	const void *payload;
	uint32_t payload_size;

	/* threadlocal.schema_version, NUL-terminated; NULL when absent. */
	const char *schema_version;
	/* threadlocal.attribute_key_map: keys[i] names key index i
	 * (NUL-terminated).  key_map_present is 0 when the payload has no key
	 * map (key_count is then 0 too). */
	int key_map_present;
	size_t key_count;
	const char *const *keys;
	/* ProcessContext.resource.attributes, in payload order. */
	size_t resource_count;
	const struct otel_thread_ctx_process_attr *resource;
	/* ProcessContext.attributes other than the two threadlocal.* above. */
	size_t attribute_count;
	const struct otel_thread_ctx_process_attr *attributes;
};

/*
 * Reads the process context of process `pid` (0: this process) and stores
 * a new snapshot in *out.  Steps: parse /proc/PID/maps for mappings whose
 * name starts with "[anon_shmem:OTEL_CTX]", "[anon:OTEL_CTX]" or
 * "/memfd:OTEL_CTX" and that are readable and at least 32 bytes long; for
 * each, in address order, until one succeeds: read the timestamp (it must
 * not be 0), then the header (signature "OTEL_CTX", version 2, timestamp
 * unchanged, 1 <= payload_size <= OTEL_THREAD_CTX_PROCESS_PAYLOAD_MAX, payload not
 * NULL), then the payload, then the timestamp again; a copy whose timestamps
 * differ or are 0 is retried, up to `attempts` copies in all (0 means
 * OTEL_THREAD_CTX_INSPECT_PROCESS_READ_ATTEMPTS), yielding the CPU between them; finally
 * decode.  Memory is read with process_vm_readv(), also for this process,
 * so an address that is not mapped is an error, never a crash.  When
 * process_vm_readv() is refused for this process (EPERM from a seccomp
 * filter, ENOSYS under qemu-user), the copy is made directly, under this
 * library's lock, and only from the mapping this library published (EPERM
 * for any other; the copy is otel_thread_ctx_process_copy() of
 * libotel-thread-ctx).
 *
 * The caller needs the right to read the process's memory (ptrace access
 * mode "attach": the same user and, under Yama ptrace_scope 1, a
 * descendant, or CAP_SYS_PTRACE).
 *
 * Errors: ENULL; ESRCH (no such process; one that exits during the read
 * may also give ENOENT); EPERM; ENOENT (no candidate mapping); EFORMAT
 * (candidates, none with a valid header); EAGAIN (the context changed or was
 * being changed during every attempt); EFAULT (the payload cannot be read
 * although the header stayed the same); EDECODE; ENOMEM; ESYS.  When several
 * candidates fail, the error of the last one is returned.  *out is set only
 * on success.
 */
int otel_thread_ctx_inspect_process_read(pid_t pid, unsigned int attempts,
			  struct otel_thread_ctx_inspect_process_snapshot **out);

/*
 * otel_thread_ctx_inspect_process_read() without the search: reads the mapping whose header
 * is at `mapping` in process `pid` (a snapshot's mapping_address, kept by a
 * reader that polls the same process; the format lets a reader cache the
 * address once a mapping proved valid).  Same protocol, checks and errors;
 * ENOENT when nothing is mapped there any more (unpublished), EFORMAT when
 * what is there is not a valid header.  Parsing /proc/PID/maps is the
 * expensive part of otel_thread_ctx_inspect_process_read(); this skips it.
 */
int otel_thread_ctx_inspect_process_read_at(pid_t pid, uint64_t mapping, unsigned int attempts,
			     struct otel_thread_ctx_inspect_process_snapshot **out);

/*
 * Decodes `size` bytes of a ProcessContext payload into a new snapshot
 * (the mapping fields are 0).  Any bytes are safe to pass.
 * Errors: ENULL (out NULL, or payload NULL with size > 0); E2BIG (size above
 * OTEL_THREAD_CTX_PROCESS_PAYLOAD_MAX); EDECODE; ENOMEM.
 */
int otel_thread_ctx_inspect_process_decode(const void *payload, size_t size,
			    struct otel_thread_ctx_inspect_process_snapshot **out);

/* Frees a snapshot and everything it points to.  NULL is accepted. */
void otel_thread_ctx_inspect_process_snapshot_free(struct otel_thread_ctx_inspect_process_snapshot *snap);


/* How a module's code reaches the slot, and so how the inspector finds it. */
enum otel_thread_ctx_inspect_model {
	OTEL_THREAD_CTX_INSPECT_TLSDESC_STATIC = 1,  /* static offset */
	OTEL_THREAD_CTX_INSPECT_TLSDESC_DYNAMIC = 2, /* DTV walk */
	OTEL_THREAD_CTX_INSPECT_GENERAL_DYNAMIC = 3, /* DTV walk */
	OTEL_THREAD_CTX_INSPECT_INITIAL_EXEC = 4,    /* static offset */
	OTEL_THREAD_CTX_INSPECT_LOCAL_EXEC = 5,      /* static offset */
};

/* The C library of the process, which lays out the DTV. */
enum otel_thread_ctx_inspect_libc {
	OTEL_THREAD_CTX_INSPECT_LIBC_UNKNOWN = 0,
	OTEL_THREAD_CTX_INSPECT_LIBC_GLIBC = 1,
	OTEL_THREAD_CTX_INSPECT_LIBC_MUSL = 2,
};

/* A short name of a model ("tlsdesc-static", "initial-exec" ...), or
 * "unknown". */
const char *otel_thread_ctx_inspect_model_name(int model);

/* A loaded module that defines otel_thread_ctx_v1. */
struct otel_thread_ctx_inspect_module {
	const char *path;        /* as in /proc/PID/maps (a file deleted or
				  * replaced since ends in " (deleted)") */
	uint64_t base;           /* load bias */
	uint64_t st_value;       /* the slot's offset in the module's TLS block */
	int model;               /* enum otel_thread_ctx_inspect_model */
	/* Static models: slot address = thread pointer + tp_offset. */
	int64_t tp_offset;
	/* Dynamic models: slot address = DTV[module_id] + dtv_offset. */
	uint64_t module_id;
	uint64_t dtv_offset;
};

/* What otel_thread_ctx_inspect_open() found. */
struct otel_thread_ctx_inspect_info {
	pid_t pid;
	int libc; /* enum otel_thread_ctx_inspect_libc */
	/* The modules defining the slot, in address order (at least one).
	 * A thread's record is read from the first module whose slot is
	 * not NULL in that thread; when none has a record, the thread is
	 * EFAULT if some module's slot could not be read, else ENOCTX (the
	 * rule of the BPF reader too: otel_thread_ctx_inspect_bpf.h). */
	size_t module_count;
	const struct otel_thread_ctx_inspect_module *modules;
	/* The process context: OTEL_THREAD_CTX_OK and a snapshot, or the
	 * error otel_thread_ctx_inspect_process_read() returned and NULL. */
	int process_ctx_status;
	const struct otel_thread_ctx_inspect_process_snapshot *process_ctx;
};

/* Per-thread anomalies (struct otel_thread_ctx_inspect_thread.anomalies):
 * the record is still decoded by the format's rules, but the writer broke
 * them. */
#define OTEL_THREAD_CTX_INSPECT_OVERSIZED 1u /* attrs_data_size > 612 */
#define OTEL_THREAD_CTX_INSPECT_TRUNCATED_ENTRY 2u /* an entry cut off at the end */
#define OTEL_THREAD_CTX_INSPECT_HALF_IDS 4u /* one id all zero, the other not */

/*
 * The anomalies of record `r` (OTEL_THREAD_CTX_INSPECT_* bits), for a
 * reader that copied it by other means (the eBPF reader's samples): `r` as
 * otel_thread_ctx_record_decode() leaves it, its attributes clamped to 612
 * bytes, and `found_size` the attrs_data_size found in memory.  NULL gives 0.
 * The inspector sets otel_thread_ctx_inspect_thread.anomalies with it.
 * Since OTEL_THREAD_CTX_INSPECT_1.1.
 */
unsigned int otel_thread_ctx_inspect_anomalies(const struct otel_thread_ctx_record *r,
					       size_t found_size);

/* One thread, as read. */
struct otel_thread_ctx_inspect_thread {
	pid_t tid;
	char name[17];           /* /proc/PID/task/TID/comm, "" if unknown */
	/*
	 * OTEL_THREAD_CTX_OK: `record` holds a valid record.
	 * ENOCTX: the slot is NULL, or the thread has not allocated the
	 *   module's dynamic TLS block yet (it never touched the library).
 * ETIMEDOUT: the thread did not stop within
 *   OTEL_THREAD_CTX_INSPECT_STOP_TIMEOUT_MS (see Steps); it is
 *   detached all the same, and never stops for this read.
	 * ENOMEM: the inspector's tracer thread could not be started
	 *   (ESYS too, with the errno of pthread_create() in sys_errno).
	 * EINVALID: the record's valid byte is not 1 (a lost sample; the
	 *   header is in `record`).
	 * EFAULT: the record, or the slot of a module (its DTV entry, its
	 *   TLS block), is not readable memory (see info->modules).
	 * EFORMAT: the record pointer is not 2-aligned.
	 * ESRCH: the thread exited before or while it was read (or the
	 *   process did).
	 * EAGAIN: the process exec()ed since the inspector was opened, or
	 *   something could not be read and its modules changed since:
	 *   open a new inspector.
	 * EPERM: not allowed to attach (or traced by another tracer).
	 * ESYS: ptrace failed otherwise (errno in sys_errno).
	 */
	int status;
	int sys_errno;
	unsigned int anomalies;  /* OTEL_THREAD_CTX_INSPECT_* bits */
	/* The module whose slot was read (index in info->modules), and the
	 * slot's address; for ENOCTX, the first module whose slot is NULL
	 * (0 and 0 when none is). */
	unsigned int module;
	uint64_t thread_pointer;
	uint64_t slot_address;
	uint64_t record_address; /* the slot's value */
	uint16_t attrs_data_size; /* as found in the process, before clamping */
	struct otel_thread_ctx_record record;
};

typedef struct otel_thread_ctx_inspector otel_thread_ctx_inspector;

/*
 * Examines process `pid` as described above and stores a new inspector in
 * *out.  Attaches to no thread.
 * Errors: ENULL; ESRCH (no such process); EPERM (its maps or memory are not
 * readable: see Permissions); ENOSLOT (no loaded module defines the slot,
 * as far as the files can be read: a module whose file was deleted or
 * replaced since it was loaded is read only through /proc/PID/map_files,
 * see above);
 * EMODEL (a module defines it, but none is reached in a way this inspector
 * supports, or the process is of another architecture, or its C library
 * is unknown where the DTV is needed); EFAULT (a GOT entry or TLS
 * descriptor cannot be read); EAGAIN (the process exec()ed, or loaded or
 * unloaded a module, during the look: read again); ENOMEM; ESYS.  A
 * process that exits during the look gives ESRCH.  *out is set only on
 * success.
 */
int otel_thread_ctx_inspect_open(pid_t pid, otel_thread_ctx_inspector **out);

/* What open found; valid until otel_thread_ctx_inspect_close(). */
const struct otel_thread_ctx_inspect_info *
otel_thread_ctx_inspect_info(const otel_thread_ctx_inspector *insp);

/* How many names the process context's key map has: the key indices
 * readers honour (0 without a process context or key map). */
unsigned int otel_thread_ctx_inspect_key_count(const otel_thread_ctx_inspector *insp);

/* The name of attribute key `index` in the process context's key map, or
 * NULL (no process context, or no such index). */
const char *otel_thread_ctx_inspect_key_name(const otel_thread_ctx_inspector *insp,
					     unsigned int index);

/*
 * A walk of the attributes of `record` (a thread's, as read) by the
 * format's rules, as otel_thread_ctx_attr_iter_next() walks them, with the
 * key map of the process `insp` read (NULL: none, so every entry is
 * counted in it->unmapped): _next() gives each effective attribute (the
 * last duplicate of a key wins; an index the key map does not name is
 * left out and counted) and ENOATTR after the last, ENULL for a NULL
 * argument.  The walk needs nothing of libotel-thread-ctx.  `record` must
 * outlive the walk.  Since OTEL_THREAD_CTX_INSPECT_1.1.
 */
void otel_thread_ctx_inspect_attr_iter_init(struct otel_thread_ctx_attr_iter *it,
					    const otel_thread_ctx_inspector *insp,
					    const struct otel_thread_ctx_record *record);
int otel_thread_ctx_inspect_attr_iter_next(struct otel_thread_ctx_attr_iter *it,
					   struct otel_thread_ctx_attr *out);

/*
 * The name of thread `tid` of process `pid` as /proc/PID/task/TID/comm
 * gives it (at most 15 bytes, no newline) into name, NUL-terminated, with
 * neither ptrace nor an inspector: what a reader that samples threads by
 * other means (the eBPF sampler) labels them with.  OTEL_THREAD_CTX_OK;
 * ESRCH when there is no such thread (name ""); ENULL.  Since
 * OTEL_THREAD_CTX_INSPECT_1.1.
 */
int otel_thread_ctx_inspect_thread_name(pid_t pid, pid_t tid, char name[17]);

/*
 * Reads thread `tid` of the process into *out.  Returns 0 when the thread's
 * record was read (out->record), else a negative code: ENULL (insp or out
 * NULL; *out untouched), or the code out->status holds (ENOCTX: the thread
 * publishes nothing; the other status codes above).  `tid` must be a
 * thread of the inspected process (ESRCH otherwise).
 */
int otel_thread_ctx_inspect_thread(otel_thread_ctx_inspector *insp, pid_t tid,
				   struct otel_thread_ctx_inspect_thread *out);

/*
 * Reads every thread in /proc/PID/task, in that order, into out[0 ..
 * cap - 1], and stores in *count how many threads there were.  The result
 * is partial when *count > cap (only cap were read: call again with room
 * for *count, and some more for threads started meanwhile) or when an
 * entry's status is ETIMEDOUT (that thread's record was not read).  Each
 * entry has its own status.
 * Errors: ENULL (out NULL with cap > 0, or count NULL); ESRCH (the process
 * is gone); EPERM (its task list may not be read); ENOMEM; ESYS.
 */
int otel_thread_ctx_inspect_threads(otel_thread_ctx_inspector *insp,
				    struct otel_thread_ctx_inspect_thread *out, size_t cap,
				    size_t *count);

/* Frees an inspector.  NULL is accepted. */
void otel_thread_ctx_inspect_close(otel_thread_ctx_inspector *insp);

/*
 * eBPF readers
 * ------------
 * A BPF program reading thread contexts (otel_thread_ctx_reader.bpf.h) follows a
 * per-process description, struct otel_thread_ctx_bpf_proc (defined in
 * otel_thread_ctx_inspect_bpf.h), that user space computes here and puts in a map:
 * for each module defining the slot, an offset from the thread pointer
 * (static TLS) or a DTV index and offset (dynamic TLS), and the DTV layout
 * of the process's C library.
 *
 * The description holds while the process's modules stay as they are.  A
 * process that loads a module later (dlopen(), a plugin defining the slot)
 * or unloads one needs a new one: compare otel_thread_ctx_inspect_maps_signature()
 * with the one taken before otel_thread_ctx_inspect_open(), and when it
 * differs, open a new inspector and describe the process again.
 */
struct otel_thread_ctx_bpf_proc;

/*
 * Fills *out from what otel_thread_ctx_inspect_open() found.  At most
 * OTEL_THREAD_CTX_BPF_MAX_MODULES modules are described (with more,
 * OTEL_THREAD_CTX_BPF_PROC_TRUNCATED is set in out->flags).
 * Errors: ENULL; ENOSLOT (no module); EMODEL (a module's model has no BPF
 * description).
 */
int otel_thread_ctx_inspect_bpf_proc(const otel_thread_ctx_inspector *insp,
				     struct otel_thread_ctx_bpf_proc *out);

/*
 * A cheap signature of the files process `pid` maps from their start (the
 * modules it has loaded: address, device, inode and path of each), in
 * *signature.  It changes when the process loads or unloads a module, and
 * not when it maps anonymous memory or starts threads.
 * Errors: ENULL; ESRCH; EPERM (its maps may not be read); EFAULT (they
 * could not be read to the end); ENOMEM; ESYS.
 */
int otel_thread_ctx_inspect_maps_signature(pid_t pid, uint64_t *signature);

#ifdef __cplusplus
}
#endif

#endif /* OTEL_THREAD_CTX_INSPECT_H */
