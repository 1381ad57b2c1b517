/* SPDX-License-Identifier: Apache-2.0 */
/* The open() interposer of modules.c's fifo case (modules-open.c). */
#ifndef OTEL_TESTS_INSPECT_MODULES_OPEN_H
#define OTEL_TESTS_INSPECT_MODULES_OPEN_H

/* The name (a path's end) to swap for a FIFO at its first open; NULL: none. */
extern const char *modules_open_swap;
/* Set once the swap was made. */
extern int modules_open_swapped;
/* How many opens of /proc/PID/map_files/ were refused (always, EPERM). */
extern int modules_open_map_files_refused;

#endif
