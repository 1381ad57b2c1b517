/* SPDX-License-Identifier: Apache-2.0 */
/* What the test sees of the other module's thread-locals (foreign-slot.S). */
#include <stdint.h>

#include "foreign.h"

extern __thread uint64_t foreign_sentinel[FOREIGN_SENTINEL_WORDS];
extern __thread void *otel_thread_ctx_v1;

FOREIGN_API void **foreign_slot(void)
{
	return &otel_thread_ctx_v1;
}

FOREIGN_API uint64_t *foreign_sentinels(void)
{
	return foreign_sentinel;
}
