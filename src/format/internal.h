/* SPDX-License-Identifier: Apache-2.0 */
/* Internal to the library: never installed. */
#ifndef OTEL_INTERNAL_H
#define OTEL_INTERNAL_H

#include "otel_thread_ctx.h"

/* The library is built with -fvisibility=hidden; this marks the API.  The
 * version script (src/libotel-thread-ctx.map) decides what is exported. */
#define OTEL_EXPORT __attribute__((visibility("default")))

#endif /* OTEL_INTERNAL_H */
