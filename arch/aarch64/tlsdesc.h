/* SPDX-License-Identifier: Apache-2.0 */
/* aarch64: the address of a thread-local variable in the calling thread, computed
 * with the TLS descriptor sequence of the AAELF64 / sysvabi64 ABI.
 * Included through src/tls.h, and by the inspector for
 * otel__tlsdesc_resolver_is_static(). */
#ifndef OTEL_ARCH_AARCH64_TLSDESC_H
#define OTEL_ARCH_AARCH64_TLSDESC_H

#include <stdint.h>

/*
 * OTEL__TLSDESC_ACCESSOR(fn, sym) defines `static inline void *fn(void)`,
 * the address of the thread-local `sym` (a string) in the calling thread.
 * The ABI says the four instructions carrying the TLSDESC relocations "must
 * be emitted exactly ... with exactly the same registers": lld and mold
 * hard-code x0 when they relax the access in an executable.
 *
 *   90000000  adrp x0, :tlsdesc:sym
 *   f9400001  ldr  x1, [x0, #:tlsdesc_lo12:sym]
 *   91000000  add  x0, x0, #:tlsdesc_lo12:sym
 *             .tlsdesccall sym
 *   d63f0020  blr  x1
 *   d53bd048  mrs  x8, tpidr_el0
 *   8b000100  add  x0, x8, x0
 *
 * This is the sequence clang emits.  The resolver takes the descriptor's
 * address in x0 and returns the variable's offset from the thread pointer in
 * x0; adding tpidr_el0 gives the address.  The thread pointer is read after
 * the call, never kept across it, because a resolver may clobber x1 (older
 * gcc loads tpidr_el0 into x1 before the call and the resolver into another
 * register; that is neither what the ABI shows nor what this file emits).
 *
 * Clobbers, in the terms of the TLSDESC convention: the resolver may change
 * x0 (the result), x1, x30 (written by blr itself) and the condition flags;
 * everything else is preserved, vector registers included (glibc's
 * _dl_tlsdesc_dynamic saves q0-q31 and x1-x18 around __tls_get_addr; musl's
 * touches only x0-x2 and restores x1 and x2).  x8 is chosen for the thread
 * pointer, as clang does, and is declared clobbered.  Declaring x30 tells the
 * compiler the function is not a leaf, so it saves the link register.
 * When the compiler may use SVE, the Z and P registers are declared
 * clobbered too: a resolver that calls into C saves only the 128-bit Q views.
 * AArch64 has no red zone and compiled code keeps sp 16-byte aligned at all
 * times, so, unlike x86-64, the call needs no stack adjustment.  No "memory"
 * clobber and no volatile, for the reasons given for x86-64.
 */
#ifdef __ARM_FEATURE_SVE
#define OTEL__SVE_CLOBBERS                                                      \
	, "z0", "z1", "z2", "z3", "z4", "z5", "z6", "z7", "z8", "z9", "z10",    \
	"z11", "z12", "z13", "z14", "z15", "z16", "z17", "z18", "z19", "z20",   \
	"z21", "z22", "z23", "z24", "z25", "z26", "z27", "z28", "z29", "z30",   \
	"z31", "p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9",      \
	"p10", "p11", "p12", "p13", "p14", "p15"
#else
#define OTEL__SVE_CLOBBERS
#endif

#define OTEL__TLSDESC_ACCESSOR(fn, sym)                                         \
	static inline void *fn(void)                                            \
	{                                                                       \
		register void *x0 __asm__("x0");                                \
                                                                                \
		__asm__("adrp	x0, :tlsdesc:" sym "\n\t"                      \
			"ldr	x1, [x0, #:tlsdesc_lo12:" sym "]\n\t"         \
			"add	x0, x0, #:tlsdesc_lo12:" sym "\n\t"           \
			".tlsdesccall	" sym "\n\t"                          \
			"blr	x1\n\t"                                       \
			"mrs	x8, tpidr_el0\n\t"                            \
			"add	x0, x8, x0"                                     \
			: "=r"(x0)                                              \
			:                                                       \
			: "x1", "x8", "x30", "cc" OTEL__SVE_CLOBBERS);          \
		return x0;                                                      \
	}

/* The thread pointer (AAELF64: TLS variant I).  Not volatile: it is fixed
 * for the thread. */
static inline uintptr_t otel__thread_pointer(void)
{
	uintptr_t tp;

	__asm__("mrs	%0, tpidr_el0" : "=r"(tp));
	return tp;
}

/*
 * OTEL__TLSDESC_PROBE(name, sym): a function `name`, never called, that holds
 * the TLSDESC access to `sym` as the linker left it, for
 * otel__tlsdesc_is_static() to read.  Its instructions are the canonical
 * sequence.
 */
#define OTEL__TLSDESC_PROBE(name, sym)                                          \
	__asm__(".pushsection .text." name ",\"ax\",@progbits\n\t"             \
		".p2align 4\n\t"                                                \
		".globl	" name "\n\t"                                           \
		".hidden	" name "\n\t"                                   \
		".type	" name ", %function\n"                                  \
		name ":\n\t"                                                    \
		"adrp	x0, :tlsdesc:" sym "\n\t"                               \
		"ldr	x1, [x0, #:tlsdesc_lo12:" sym "]\n\t"                  \
		"add	x0, x0, #:tlsdesc_lo12:" sym "\n\t"                    \
		".tlsdesccall	" sym "\n\t"                                   \
		"blr	x1\n\t"                                                \
		"mrs	x8, tpidr_el0\n\t"                                     \
		"add	x0, x8, x0\n\t"                                         \
		"ret\n\t"                                                       \
		".size	" name ", . - " name "\n\t"                             \
		".popsection");

/*
 * The bytes of a TLSDESC resolver that otel__tlsdesc_resolver_is_static()
 * looks at: two hints at most, then two instructions.
 */
#define OTEL__TLSDESC_RESOLVER_SIZE 16

/*
 * Whether the resolver whose first OTEL__TLSDESC_RESOLVER_SIZE bytes are at
 * `code` is the resolver of static TLS, the one the dynamic loader puts in a
 * descriptor whose argument is the variable's offset from the thread
 * pointer: `ldr x0, [x0, #8]; ret` in glibc (_dl_tlsdesc_return) and musl
 * (__tlsdesc_static), after at most two instructions of the HINT space
 * (none of which writes x0): the `bti c` of a C library built for BTI, or
 * the nop that stands for it in one that is not (Debian 12's glibc:
 * `nop; ldr x0, [x0, #8]; ret`).  The eBPF profiler's TLS reader decides
 * the same way (open-telemetry/opentelemetry-ebpf-profiler,
 * tls/tlsdesc_aarch64.go, tlsdescReturnsArg()).  Used by the writer
 * (otel__tlsdesc_is_static(), below) on its own descriptor and by the
 * inspector (src/inspect/discovery.c) on the bytes it read from a process.
 */
static inline int otel__tlsdesc_resolver_is_static(const unsigned char *code)
{
	uint32_t insn[OTEL__TLSDESC_RESOLVER_SIZE / 4];
	unsigned int i = 0;

	__builtin_memcpy(insn, code, sizeof(insn));
	while (i < 2 && (insn[i] & 0xfffff01fu) == 0xd503201fu) /* hint #imm */
		i++;
	return insn[i] == 0xf9400400u && insn[i + 1] == 0xd65f03c0u;
}

/*
 * Whether the TLS access at `code` (an OTEL__TLSDESC_PROBE) reaches static
 * TLS, where a variable lies at the same offset from the thread pointer in
 * every thread.  It does when the linker relaxed it (to local-exec or
 * initial-exec: the blr is a nop), which it does only in an executable; or
 * when the descriptor names the resolver of static TLS
 * (otel__tlsdesc_resolver_is_static()).  Anything else is "no": the caller
 * keeps to the TLSDESC call.
 */
static inline int otel__tlsdesc_is_static(const unsigned char *code)
{
	uint32_t insn[4];
	const unsigned char *resolver;
	const void *const *desc;
	uintptr_t page;
	int64_t imm;

	__builtin_memcpy(insn, code, sizeof(insn));
	if (insn[3] != 0xd63f0020u) /* blr x1 */
		return 1;
	/* adrp x0, page; add x0, x0, #lo12 (no shift) */
	if ((insn[0] & 0x9f00001fu) != 0x90000000u || (insn[2] & 0xffc003ffu) != 0x91000000u)
		return 0;
	imm = (int64_t)((((insn[0] >> 5) & 0x7ffffu) << 2) | ((insn[0] >> 29) & 3u));
	imm = (imm ^ 0x100000) - 0x100000; /* sign-extend 21 bits */
	page = ((uintptr_t)code & ~(uintptr_t)0xfff) + (uintptr_t)(imm * 4096);
	desc = (const void *const *)(page + ((insn[2] >> 10) & 0xfffu));
	resolver = (const unsigned char *)__atomic_load_n(&desc[0], __ATOMIC_RELAXED);
	return resolver != 0 && otel__tlsdesc_resolver_is_static(resolver);
}

#endif /* OTEL_ARCH_AARCH64_TLSDESC_H */
