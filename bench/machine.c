/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The machine the benchmark runs on, which the report describes: the CPU
 * this program is pinned to, the cpu model, kernel and C library, the load
 * average at the start and at the end; and the memory the memory and churn
 * tests read: resident memory and the heap in use.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#ifdef __GLIBC__
#include <gnu/libc-version.h>
#endif

#include "bench.h"

cpu_set_t all_cpus;
int pinned_cpu = -1;

void pin(void)
{
	cpu_set_t one;

	if (sched_getaffinity(0, sizeof(all_cpus), &all_cpus) != 0)
		return;
	for (int c = CPU_SETSIZE - 1; c >= 0; c--) {
		if (CPU_ISSET(c, &all_cpus)) {
			CPU_ZERO(&one);
			CPU_SET(c, &one);
			if (sched_setaffinity(0, sizeof(one), &one) == 0)
				pinned_cpu = c;
			return;
		}
	}
}

char cpu_model[128] = "unknown";
char kernel[sizeof(((struct utsname *)0)->release) * 3 + 8] = "unknown";
char libc_version[128] = "unknown";
double load_start[3], load_end[3];
long online_cpus;

void read_loadavg(double load[3])
{
	FILE *f = fopen("/proc/loadavg", "r");

	load[0] = load[1] = load[2] = -1;
	if (f == NULL)
		return;
	if (fscanf(f, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3)
		load[0] = load[1] = load[2] = -1;
	fclose(f);
}

void read_machine(void)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	struct utsname u;
	char line[512];

	if (f != NULL) {
		while (fgets(line, sizeof(line), f) != NULL) {
			char *colon = strchr(line, ':');

			/* x86: "model name"; aarch64 kernels give no name. */
			if (colon != NULL && strncmp(line, "model name", 10) == 0) {
				snprintf(cpu_model, sizeof(cpu_model), "%s", colon + 2);
				cpu_model[strcspn(cpu_model, "\n")] = '\0';
				break;
			}
		}
		fclose(f);
	}
	if (uname(&u) == 0)
		snprintf(kernel, sizeof(kernel), "%s %s %s", u.sysname, u.release, u.machine);
#ifdef __GLIBC__
	snprintf(libc_version, sizeof(libc_version), "glibc %s", gnu_get_libc_version());
#else
	snprintf(libc_version, sizeof(libc_version), "not glibc (musl?)");
#endif
	online_cpus = sysconf(_SC_NPROCESSORS_ONLN);
	read_loadavg(load_start);
}

/* Resident memory in KiB.  smaps_rollup walks the page tables, so it is
 * exact at the moment it is read; statm, the fallback, is from counters
 * that older kernels update lazily per thread. */
long rss_kib(void)
{
	char line[256];
	long kib = -1;
	FILE *f = fopen("/proc/self/smaps_rollup", "r");

	if (f != NULL) {
		while (fgets(line, sizeof(line), f) != NULL)
			if (sscanf(line, "Rss: %ld kB", &kib) == 1)
				break;
		fclose(f);
		if (kib >= 0)
			return kib;
	}
	f = fopen("/proc/self/statm", "r");
	if (f != NULL) {
		long size, resident;

		if (fscanf(f, "%ld %ld", &size, &resident) == 2)
			kib = resident * (sysconf(_SC_PAGESIZE) / 1024);
		fclose(f);
	}
	return kib;
}

/* Bytes the allocator has handed out and not got back; -1 if unknown. */
long long heap_in_use(void)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
	struct mallinfo2 mi = mallinfo2();

	return (long long)(mi.uordblks + mi.hblkhd);
#else
	return -1;
#endif
}
