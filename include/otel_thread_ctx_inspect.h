/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libotel-thread-ctx-inspect: read the thread contexts and the process
 * context of another process from outside, the way a ptrace-based profiler
 * or debugger does; it needs libc alone, not libotel-thread-ctx.
 * Reference: man 3 otel_thread_ctx_inspect_open, man 7 otel-thread-ctx.
 *
 * Reading needs the right to ptrace-attach to the process.  A thread is
 * stopped only while it is read, one at a time, and no call returns with a
 * thread attached.  Every byte read is treated as hostile.  An inspector is
 * used by one thread at a time; nothing here is async-signal-safe.
 * Functions return OTEL_THREAD_CTX_OK (0) or a negative code of enum
 * otel_thread_ctx_error or enum otel_thread_ctx_inspect_error, unless they
 * say otherwise.
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

/* The reading side's own codes (man 3 otel_thread_ctx_inspect_strerror).
 * Stable: codes are only added. */
enum otel_thread_ctx_inspect_error {
	/* Not permitted to read the process (ptrace access check). */
	OTEL_THREAD_CTX_EPERM = -1,
	/* The process publishes no process context. */
	OTEL_THREAD_CTX_ENOENT = -2,
	/* No such process or thread. */
	OTEL_THREAD_CTX_ESRCH = -3,
	/* The process changed under the read; nothing read is returned. */
	OTEL_THREAD_CTX_EAGAIN = -11,
	/* Memory of the process that should hold something cannot be read. */
	OTEL_THREAD_CTX_EFAULT = -14,
	/* The thread did not stop for the read in time. */
	OTEL_THREAD_CTX_ETIMEDOUT = -110,
	/* An invalid OTEL_CTX header, or a record pointer not 2-aligned. */
	OTEL_THREAD_CTX_EFORMAT = -4101,
	/* The payload is not a valid ProcessContext message. */
	OTEL_THREAD_CTX_EDECODE = -4102,
	/* No loaded module of the process defines otel_thread_ctx_v1. */
	OTEL_THREAD_CTX_ENOSLOT = -4103,
	/* The slot is reached in a way the inspector does not support. */
	OTEL_THREAD_CTX_EMODEL = -4104,
};

/* How long otel_thread_ctx_inspect_thread() waits for a thread to stop
 * (ten times as long while it is runnable). */
#define OTEL_THREAD_CTX_INSPECT_STOP_TIMEOUT_MS 1000

/* A static English description of a code of either enum; never NULL. */
const char *otel_thread_ctx_inspect_strerror(int error);

/* The process context (man 3 otel_thread_ctx_inspect_process_read) */

/* Attempts otel_thread_ctx_inspect_process_read() makes when it is given 0. */
#define OTEL_THREAD_CTX_INSPECT_PROCESS_READ_ATTEMPTS 100u

/* A decoded process context; it owns everything it points to. */
struct otel_thread_ctx_inspect_process_snapshot {
	/* From the mapping (0 from otel_thread_ctx_inspect_process_decode()). */
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
	/* threadlocal.attribute_key_map: keys[i] names key index i. */
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

/* Reads the process context of `pid` (0: this process) into a new snapshot
 * *out, retrying torn copies up to `attempts` times (0: the default).
 * Errors: ENULL; ESRCH; EPERM; ENOENT; EFORMAT; EAGAIN; EFAULT; EDECODE;
 * ENOMEM; ESYS. */
int otel_thread_ctx_inspect_process_read(pid_t pid, unsigned int attempts,
			  struct otel_thread_ctx_inspect_process_snapshot **out);

/* otel_thread_ctx_inspect_process_read() of the mapping whose header is at
 * `mapping` (a snapshot's mapping_address), without the search.
 * Errors: ENULL; ESRCH; EPERM; ENOENT (nothing mapped there any more);
 * EFORMAT; EAGAIN; EFAULT; EDECODE; ENOMEM; ESYS. */
int otel_thread_ctx_inspect_process_read_at(pid_t pid, uint64_t mapping, unsigned int attempts,
			     struct otel_thread_ctx_inspect_process_snapshot **out);

/* Decodes `size` bytes of a ProcessContext payload (any bytes are safe)
 * into a new snapshot.  Errors: ENULL; E2BIG; EDECODE; ENOMEM. */
int otel_thread_ctx_inspect_process_decode(const void *payload, size_t size,
			    struct otel_thread_ctx_inspect_process_snapshot **out);

/* Frees a snapshot (NULL: nothing). */
void otel_thread_ctx_inspect_process_snapshot_free(struct otel_thread_ctx_inspect_process_snapshot *snap);


/* Threads (man 3 otel_thread_ctx_inspect_open, otel_thread_ctx_inspect_thread) */

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

/* A short static name of a model ("initial-exec" ...), or "unknown". */
const char *otel_thread_ctx_inspect_model_name(int model);

/* A loaded module that defines otel_thread_ctx_v1. */
struct otel_thread_ctx_inspect_module {
	const char *path;        /* as in /proc/PID/maps */
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
	/* The modules defining the slot, in address order (at least one);
	 * a thread's record is read from the first whose slot is not NULL. */
	size_t module_count;
	const struct otel_thread_ctx_inspect_module *modules;
	/* OTEL_THREAD_CTX_OK and the process context, or the error its read
	 * gave and NULL. */
	int process_ctx_status;
	const struct otel_thread_ctx_inspect_process_snapshot *process_ctx;
};

/* Rules of the format the writer of a record broke (anomalies bits). */
#define OTEL_THREAD_CTX_INSPECT_OVERSIZED 1u /* attrs_data_size > 612 */
#define OTEL_THREAD_CTX_INSPECT_TRUNCATED_ENTRY 2u /* an entry cut off at the end */
#define OTEL_THREAD_CTX_INSPECT_HALF_IDS 4u /* one id all zero, the other not */

/* The anomalies of a decoded record `r` whose attrs_data_size in memory was
 * `found_size` (NULL: 0).  Since OTEL_THREAD_CTX_INSPECT_1.1. */
unsigned int otel_thread_ctx_inspect_anomalies(const struct otel_thread_ctx_record *r,
					       size_t found_size);

/* One thread, as read. */
struct otel_thread_ctx_inspect_thread {
	pid_t tid;
	char name[17];           /* /proc/PID/task/TID/comm, "" if unknown */
	int status;              /* what otel_thread_ctx_inspect_thread() returns */
	int sys_errno;           /* errno of a system call that failed */
	unsigned int anomalies;  /* OTEL_THREAD_CTX_INSPECT_* bits */
	/* The module whose slot was read (index in info->modules). */
	unsigned int module;
	uint64_t thread_pointer;
	uint64_t slot_address;
	uint64_t record_address; /* the slot's value */
	uint16_t attrs_data_size; /* as found in the process, before clamping */
	struct otel_thread_ctx_record record;
};

typedef struct otel_thread_ctx_inspector otel_thread_ctx_inspector;

/* Examines process `pid` (attaching to no thread) into a new inspector.
 * Errors: ENULL; ESRCH; EPERM; ENOSLOT; EMODEL; EFAULT; EAGAIN; ENOMEM;
 * ESYS. */
int otel_thread_ctx_inspect_open(pid_t pid, otel_thread_ctx_inspector **out);

/* What open found; valid until otel_thread_ctx_inspect_close(). */
const struct otel_thread_ctx_inspect_info *
otel_thread_ctx_inspect_info(const otel_thread_ctx_inspector *insp);

/* How many names the process's key map has (0: none). */
unsigned int otel_thread_ctx_inspect_key_count(const otel_thread_ctx_inspector *insp);

/* The name of key `index` in the process's key map, or NULL; chosen by
 * that process: escape it before printing it. */
const char *otel_thread_ctx_inspect_key_name(const otel_thread_ctx_inspector *insp,
					     unsigned int index);

/* A walk of the attributes of a thread's `record` (which must outlive it)
 * with the key map of the process `insp` read, as otel_thread_ctx_attr_iter_*
 * walks: _next() returns ENULL, or ENOATTR after the last.  Since
 * OTEL_THREAD_CTX_INSPECT_1.1. */
void otel_thread_ctx_inspect_attr_iter_init(struct otel_thread_ctx_attr_iter *it,
					    const otel_thread_ctx_inspector *insp,
					    const struct otel_thread_ctx_record *record);
int otel_thread_ctx_inspect_attr_iter_next(struct otel_thread_ctx_attr_iter *it,
					   struct otel_thread_ctx_attr *out);

/* The name (comm) of thread `tid` of process `pid`, without ptrace.
 * Errors: ENULL; ESRCH (name "").  Since OTEL_THREAD_CTX_INSPECT_1.1. */
int otel_thread_ctx_inspect_thread_name(pid_t pid, pid_t tid, char name[17]);

/* Reads thread `tid` of the process into *out; out->status holds the result
 * too.  Errors: ENULL; ENOCTX; ETIMEDOUT; EINVALID; EFAULT; EFORMAT; ESRCH;
 * EAGAIN; EPERM; ENOMEM; ESYS. */
int otel_thread_ctx_inspect_thread(otel_thread_ctx_inspector *insp, pid_t tid,
				   struct otel_thread_ctx_inspect_thread *out);

/* Reads every thread into out[0 .. cap - 1], each with its own status, and
 * stores how many there were in *count.  Partial when *count > cap, or for
 * an entry whose status is ETIMEDOUT.  Errors: ENULL; ESRCH; EPERM; ENOMEM;
 * ESYS. */
int otel_thread_ctx_inspect_threads(otel_thread_ctx_inspector *insp,
				    struct otel_thread_ctx_inspect_thread *out, size_t cap,
				    size_t *count);

/* Ends the inspector's tracer thread and frees it (NULL: nothing). */
void otel_thread_ctx_inspect_close(otel_thread_ctx_inspector *insp);

/* eBPF readers (man 3 otel_thread_ctx_inspect_bpf_proc): the description
 * of a process a BPF program follows, in otel_thread_ctx_inspect_bpf.h. */
struct otel_thread_ctx_bpf_proc;

/* Fills *out with the description the inspector built; valid until the
 * process loads or unloads a module.  Errors: ENULL; ENOSLOT; EMODEL. */
int otel_thread_ctx_inspect_bpf_proc(const otel_thread_ctx_inspector *insp,
				     struct otel_thread_ctx_bpf_proc *out);

/* A signature of the modules process `pid` has loaded: it changes when
 * one is loaded or unloaded.  Errors: ENULL; ESRCH; EPERM; EFAULT; ENOMEM;
 * ESYS. */
int otel_thread_ctx_inspect_maps_signature(pid_t pid, uint64_t *signature);

/* The same signature of the process, as open() began to read it: a reader
 * that describes a process needs no walk of its maps of its own.
 * Errors: ENULL.  Since OTEL_THREAD_CTX_INSPECT_1.1. */
int otel_thread_ctx_inspect_signature(const otel_thread_ctx_inspector *insp,
				      uint64_t *signature);

#ifdef __cplusplus
}
#endif

#endif /* OTEL_THREAD_CTX_INSPECT_H */
