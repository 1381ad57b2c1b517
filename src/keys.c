/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The attribute key registry: the names behind key indices 0..255, which
 * the process context publishes as threadlocal.attribute_key_map.
 *
 * Append-only.  Names live in static storage and never change once
 * visible, so lookups need no lock: a name is written completely, then the
 * count that makes it visible is stored with release order; readers load
 * the count with acquire order and look at indices below it only.  A signal
 * handler that interrupts a registration sees the old count, hence only
 * complete names.  Registration is serialised by this module's lock, which
 * the process-context publisher shares, so that the republication a new key
 * causes is part of the same step (keys.h).
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <string.h>

#include "internal.h"
#include "keys.h"
#include "utf8.h"

#define KEY_SLOTS (OTEL_THREAD_CTX_KEY_MAX + 1)

static char names[KEY_SLOTS][OTEL_THREAD_CTX_KEY_NAME_MAX + 1];
static uint8_t lengths[KEY_SLOTS];
static unsigned int count;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int (*change_hook)(unsigned int count);
static void (*fork_child_hook)(void);
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static int fork_safe;

/* The lock is never held in a child: taken before fork(), released after. */
static void before_fork(void)
{
	pthread_mutex_lock(&lock);
}

static void after_fork_parent(void)
{
	pthread_mutex_unlock(&lock);
}

static void after_fork_child(void)
{
	if (fork_child_hook != NULL)
		fork_child_hook();
	pthread_mutex_unlock(&lock);
}

static void install_fork_handlers(void)
{
	fork_safe = pthread_atfork(before_fork, after_fork_parent, after_fork_child) == 0;
}

void otel__keys_lock(void)
{
	pthread_once(&fork_once, install_fork_handlers);
	pthread_mutex_lock(&lock);
}

int otel__keys_fork_safe(void)
{
	pthread_once(&fork_once, install_fork_handlers);
	return fork_safe;
}

void otel__keys_on_fork_child(void (*hook)(void))
{
	fork_child_hook = hook;
}

void otel__keys_unlock(void)
{
	pthread_mutex_unlock(&lock);
}

void otel__keys_on_change(int (*hook)(unsigned int count))
{
	change_hook = hook;
}

static unsigned int visible_count(void)
{
	return __atomic_load_n(&count, __ATOMIC_ACQUIRE);
}

/* Index of `name` (len bytes) among the first n keys, or -1. */
static int lookup(const char *name, size_t len, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		if (lengths[i] == len && memcmp(names[i], name, len) == 0)
			return (int)i;
	}
	return -1;
}

const char *otel__key_at(unsigned int i, size_t *len)
{
	*len = lengths[i];
	return names[i];
}

OTEL_EXPORT int otel_thread_ctx_key_register(const char *name, unsigned int *index)
{
	unsigned int n;
	size_t len;
	int at, err;

	if (name == NULL || index == NULL)
		return OTEL_THREAD_CTX_ENULL;
	len = strnlen(name, OTEL_THREAD_CTX_KEY_NAME_MAX + 1);
	if (len == 0 || len > OTEL_THREAD_CTX_KEY_NAME_MAX || !otel__utf8_valid(name, len))
		return OTEL_THREAD_CTX_ENAME;

	otel__keys_lock();
	n = count;
	at = lookup(name, len, n);
	if (at >= 0) {
		otel__keys_unlock();
		*index = (unsigned int)at;
		return OTEL_THREAD_CTX_OK;
	}
	if (n == KEY_SLOTS) {
		otel__keys_unlock();
		return OTEL_THREAD_CTX_EKEYS;
	}
	/* Staged in slot n, invisible until the count says otherwise. */
	memcpy(names[n], name, len);
	names[n][len] = '\0';
	lengths[n] = (uint8_t)len;
	err = change_hook != NULL ? change_hook(n + 1) : OTEL_THREAD_CTX_OK;
	if (err == OTEL_THREAD_CTX_OK)
		__atomic_store_n(&count, n + 1, __ATOMIC_RELEASE);
	otel__keys_unlock();
	if (err == OTEL_THREAD_CTX_OK)
		*index = n;
	return err;
}

OTEL_EXPORT int otel_thread_ctx_key_find(const char *name, unsigned int *index)
{
	size_t len;
	int at;

	if (name == NULL || index == NULL)
		return OTEL_THREAD_CTX_ENULL;
	len = strnlen(name, OTEL_THREAD_CTX_KEY_NAME_MAX + 1);
	at = len > OTEL_THREAD_CTX_KEY_NAME_MAX ? -1 : lookup(name, len, visible_count());
	if (at < 0)
		return OTEL_THREAD_CTX_EUNKNOWNKEY;
	*index = (unsigned int)at;
	return OTEL_THREAD_CTX_OK;
}

OTEL_EXPORT const char *otel_thread_ctx_key_name(unsigned int index)
{
	return index < visible_count() ? names[index] : NULL;
}

OTEL_EXPORT unsigned int otel_thread_ctx_key_count(void)
{
	return visible_count();
}
