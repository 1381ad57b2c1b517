/* SPDX-License-Identifier: Apache-2.0 */
/* Internal to libotel-thread-ctx-inspect: never installed. */
#ifndef OTEL_INSPECT_INTERNAL_H
#define OTEL_INSPECT_INTERNAL_H

#include "format.h"
#include "otel_thread_ctx_inspect.h"
#include "otel_thread_ctx_inspect_bpf.h"

/* Where the slot is (inspect_bpf.c): the description the inspector builds
 * at open, walks for every thread, and hands to eBPF readers. */

/* *proc zeroed, with the libc and the DTV layout of C library `libc` on
 * this CPU (all 0 when it is unknown: then no module may need the DTV). */
void otel__inspect_dtv_layout(int libc, struct otel_thread_ctx_bpf_proc *proc);

/* How module m's slot is found, given the process's DTV layout: 0, or
 * EMODEL (a DTV walk without a known layout, a module id out of range). */
int otel__inspect_describe_module(const struct otel_thread_ctx_inspect_module *m,
				  const struct otel_thread_ctx_bpf_proc *layout,
				  struct otel_thread_ctx_bpf_module *out);

#endif /* OTEL_INSPECT_INTERNAL_H */
