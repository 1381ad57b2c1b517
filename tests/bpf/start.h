/* SPDX-License-Identifier: Apache-2.0 */
/* Opening and starting the sampler in the eBPF checkers (storm-check.c,
 * walk-check.c), with their skip rules. */
#ifndef OTEL_TESTS_BPF_START_H
#define OTEL_TESTS_BPF_START_H

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "sampler.h"

/*
 * Opens the sampler for the checker `who` into *s: -1 once it is open; else
 * the checker's exit status, 77 (skip) under valgrind (its bpf() wrapper
 * checks whole bpf_attr unions, of which libbpf initialises the part each
 * command uses, and reports the rest as uninitialised; it sets LD_PRELOAD
 * for the programs it runs) and where BPF is refused, 1 for any other
 * failure, having said why.
 */
static inline int open_sampler(const struct otel_sampler_options *o, otel_sampler_event_fn fn,
			       struct otel_sampler **s, const char *who)
{
	char why[512];
	const char *preload = getenv("LD_PRELOAD");
	int rc;

	if (preload != NULL && strstr(preload, "vgpreload") != NULL) {
		printf("skip: under valgrind, whose bpf() wrapper reports libbpf's partly "
		       "initialised bpf_attr unions as errors\n");
		return 77;
	}
	rc = otel_sampler_open(o, fn, NULL, s, why, sizeof(why));
	if (rc == OTEL_SAMPLER_OK)
		return -1;
	if (rc == OTEL_SAMPLER_EPERM || rc == OTEL_SAMPLER_ENOBTF) {
		printf("skip: BPF is refused here: %s\n", why);
		return 77;
	}
	otel_sampler_print_log(stderr);
	fprintf(stderr, "%s: %s\n", who, why);
	return 1;
}

/*
 * Starts sampler s for the checker `who` of target pid: -1 once it samples;
 * else kills the target and gives the checker's exit status, 77 (skip) where
 * BPF is refused, 1 for any other failure, having said why.
 */
static inline int start_sampler(struct otel_sampler *s, pid_t pid, const char *who)
{
	char why[512];
	int rc = otel_sampler_start(s, why, sizeof(why));

	if (rc == OTEL_SAMPLER_OK)
		return -1;
	kill(pid, SIGKILL);
	if (rc == OTEL_SAMPLER_EPERM) {
		printf("skip: BPF is refused here: %s\n", why);
		return 77;
	}
	fprintf(stderr, "%s: %s\n", who, why);
	return 1;
}

#endif /* OTEL_TESTS_BPF_START_H */
