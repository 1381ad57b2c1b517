/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The inspector's one choice of CPU: a tracee's registers (regs.h: its
 * thread pointer, the ELF machine it reads) and the TLSDESC resolvers'
 * code it recognises (tlsdesc.h), of the architecture it is built for.
 * Internal.
 */
#ifndef OTEL_INSPECT_ARCH_H
#define OTEL_INSPECT_ARCH_H

#if defined(__x86_64__)
#include "x86_64/regs.h"
#include "x86_64/tlsdesc.h"
#elif defined(__aarch64__)
#include "aarch64/regs.h"
#include "aarch64/tlsdesc.h"
#else
#error "otel-thread-ctx: the inspector supports x86-64 and aarch64 only"
#endif

#endif /* OTEL_INSPECT_ARCH_H */
