/* SPDX-License-Identifier: Apache-2.0 */
/* Starting the sampler in the eBPF checkers (storm-check.c, walk-check.c). */
#ifndef OTEL_TESTS_BPF_START_H
#define OTEL_TESTS_BPF_START_H

#include <signal.h>
#include <stdio.h>
#include <sys/types.h>

#include "sampler.h"

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
