/* SPDX-License-Identifier: Apache-2.0 */
/* What the key registry, the publisher and the reader share.  Internal. */
#ifndef OTEL_PROCESS_CTX_INTERNAL_H
#define OTEL_PROCESS_CTX_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "otel_process_ctx.h"

/*
 * The lock of the registry and the publisher (one lock, so that a key
 * registration and the republication it causes are one step).  Held across
 * fork() by the fork handlers of process_ctx.c.
 */
void otel__pctx_lock(void);
void otel__pctx_unlock(void);

/* Key names for the payload: the name at index i (registered or being
 * registered), and its length.  Called with the lock held. */
const char *otel__key_at(unsigned int i, size_t *len);

/*
 * The registry is about to hold `count` keys (the last one staged, not yet
 * visible to lookups): republishes the process context with them, if it is
 * published.  Called with the lock held.  On error nothing changed and the
 * key must not be registered.
 */
int otel__pctx_keys_changed(unsigned int count);

/*
 * For the reader, when process_vm_readv() is refused for this process:
 * copies the header at `mapping` and the payload it leads to, if `mapping`
 * is the one this library publishes, under the lock (so that nothing
 * changes or is freed during the copy).  *payload is malloc()ed.
 * Returns OK, ENOENT (not this library's mapping), or ENOMEM.
 */
int otel__pctx_copy_own(uint64_t mapping, struct otel_process_ctx_header *header,
			void **payload);

#endif /* OTEL_PROCESS_CTX_INTERNAL_H */
