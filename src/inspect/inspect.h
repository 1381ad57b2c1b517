/* SPDX-License-Identifier: Apache-2.0 */
/* Internal to libotel-thread-ctx-inspect: never installed. */
#ifndef OTEL_INSPECT_INTERNAL_H
#define OTEL_INSPECT_INTERNAL_H

#include "internal.h"
#include "otel_thread_ctx_inspect.h"

#endif /* OTEL_INSPECT_INTERNAL_H */
