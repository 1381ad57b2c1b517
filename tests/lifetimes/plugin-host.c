/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A host that loads a tracer plugin built from the static library
 * (plugin.c), uses it on several threads, unloads it, and then lets those
 * threads exit, starts new ones and forks.  The library registered its
 * thread-exit cleanup (a pthread key destructor in the plugin's code) on
 * every thread that used it: unloading must take it away, or each of those
 * threads calls into unmapped code when it exits.
 *
 *   usage: plugin-host PLUGIN
 */
#include <dlfcn.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check-lite.h"

#define WORKERS 4

static int (*plugin_request)(unsigned int);
static sem_t use, used, unloaded;

static void *worker(void *arg)
{
	unsigned int i = (unsigned int)(uintptr_t)arg;
	int rc;

	sem_wait(&use);
	rc = plugin_request(i);
	ck_assert_msg(rc == 0, "worker %u: plugin_request returned %d", i, rc);
	sem_post(&used);
	/* Outlive the plugin: exit only once it is unloaded. */
	sem_wait(&unloaded);
	return NULL;
}

static void *bystander(void *arg)
{
	(void)arg;
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[WORKERS], late;
	void *plugin, *sym, *still;
	pid_t pid;
	int status;

	if (argc != 2) {
		fprintf(stderr, "usage: plugin-host PLUGIN\n");
		return 2;
	}
	sem_init(&use, 0, 0);
	sem_init(&used, 0, 0);
	sem_init(&unloaded, 0, 0);
	for (unsigned int i = 0; i < WORKERS; i++)
		ck_assert_msg(pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i) == 0, "pthread_create");

	plugin = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	ck_assert_msg(plugin != NULL, "dlopen(%s): %s", argv[1], dlerror());
	sym = dlsym(plugin, "plugin_request");
	ck_assert_msg(sym != NULL, "dlsym: %s", dlerror());
	memcpy(&plugin_request, &sym, sizeof(sym));
	ck_assert_msg(plugin_request(100) == 0, "plugin_request on the main thread");
	for (unsigned int i = 0; i < WORKERS; i++)
		sem_post(&use);
	for (unsigned int i = 0; i < WORKERS; i++)
		sem_wait(&used);

	ck_assert_msg(dlclose(plugin) == 0, "dlclose: %s", dlerror());
	still = dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD);
	if (still != NULL) {
		/* musl never unloads: what follows still runs, but proves less. */
		printf("note: the C library keeps the plugin loaded after dlclose()\n");
		dlclose(still);
	} else {
		printf("the plugin is unloaded\n");
	}

	/* The threads that used it exit now. */
	for (unsigned int i = 0; i < WORKERS; i++)
		sem_post(&unloaded);
	for (unsigned int i = 0; i < WORKERS; i++)
		ck_assert_msg(pthread_join(t[i], NULL) == 0, "pthread_join");
	printf("%d threads that used the plugin exited after the unload\n", WORKERS);

	/* New threads and a child, after the unload. */
	ck_assert_msg(pthread_create(&late, NULL, bystander, NULL) == 0 && pthread_join(late, NULL) == 0,
	      "a thread started after the unload");
	pid = fork();
	ck_assert_msg(pid >= 0, "fork");
	if (pid == 0)
		_exit(0);
	ck_assert_msg(waitpid(pid, &status, 0) == pid, "waitpid");
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "the child forked after the unload did not exit normally (status %#x)", status);
	printf("ok: threads exited, a thread started and a child forked after the unload\n");
	return 0;
}
