/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The key registry as the process-context publisher sees it (keys.c).
 * Internal.  The registry knows nothing of the publisher: the publisher
 * asks to hear of new keys (otel__keys_on_change()), so the two are not a
 * circle.
 */
#ifndef OTEL_KEYS_H
#define OTEL_KEYS_H

#include <stddef.h>

/*
 * The lock of the registry, which the publisher shares, so that a key
 * registration and the republication it causes are one step.  Held across
 * fork(): the first lock installs fork handlers that take it before the
 * fork and release it after, in the child after the child hook below.
 */
void otel__keys_lock(void);
void otel__keys_unlock(void);

/* False when the fork handlers could not be installed (no memory): then
 * the publisher refuses to publish (a child could inherit the lock held). */
int otel__keys_fork_safe(void);

/* `hook`, or NULL, runs in the child of a fork(), lock held, before the
 * lock is released.  Set with the lock held. */
void otel__keys_on_fork_child(void (*hook)(void));

/* Key names for the payload: the name at index i (registered, or being
 * registered), and its length.  Lock held. */
const char *otel__key_at(unsigned int i, size_t *len);

/*
 * `hook`, or NULL, is called, lock held, when the registry is about to hold
 * `count` keys (the last one staged, not yet visible to lookups).  A
 * non-zero return is an error code: nothing changes and the key is not
 * registered.  Set with the lock held.
 */
void otel__keys_on_change(int (*hook)(unsigned int count));

#endif /* OTEL_KEYS_H */
