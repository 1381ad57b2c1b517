/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OTEL_TESTS_FOREIGN_H
#define OTEL_TESTS_FOREIGN_H

#include <stdint.h>

#define FOREIGN_SENTINEL_WORDS 8
#define FOREIGN_SENTINEL UINT64_C(0x5a5a0123c3c3fedc)
#define FOREIGN_API __attribute__((visibility("default")))

/* The other module's slot and its sentinels, in the calling thread. */
FOREIGN_API void **foreign_slot(void);
FOREIGN_API uint64_t *foreign_sentinels(void);

#endif
