/* SPDX-License-Identifier: Apache-2.0 */
/* x86-64: the address of a thread-local variable in the calling thread,
 * computed with the TLS descriptor sequence of the x86-64 psABI ("gnu2"
 * dialect).  Included through src/tls.h, and by the inspector for
 * otel__tlsdesc_resolver_is_static(). */
#ifndef OTEL_ARCH_X86_64_TLSDESC_H
#define OTEL_ARCH_X86_64_TLSDESC_H

#include <stdint.h>

/*
 * OTEL__TLSDESC_ACCESSOR(fn, sym) defines `static inline void *fn(void)`,
 * the address of the thread-local `sym` (a string) in the calling thread.
 * The three instructions in the middle are the canonical TLSDESC access,
 * byte for byte what a compiler emits with -mtls-dialect=gnu2 and what every
 * linker pattern-matches when it relaxes the access to initial-exec or
 * local-exec in an executable:
 *
 *   48 8d 05 <rel32>            lea  sym@tlsdesc(%rip), %rax
 *   ff 10                       call *sym@tlscall(%rax)
 *   64 48 03 04 25 00 00 00 00  add  %fs:0, %rax
 *
 * The lea must target %rax (gold rewrites only 48 8d 05) and the call must be
 * exactly ff 10.  The resolver receives the descriptor's address in %rax and
 * returns in %rax the offset of the variable from the thread pointer; the add
 * turns it into the address.  Written in asm, the library stays on TLSDESC
 * with gcc, with clang before 19 (which cannot emit gnu2 on x86-64) and with
 * whatever -mtls-dialect or -ftls-model it is built with.
 *
 * The compiler does not know that this asm makes a call, so the asm does
 * itself what the compiler would do around one:
 *
 * - Red zone.  In a function the compiler believes is a leaf, it may keep
 *   data in the 128 bytes below %rsp.  The call pushes its return address
 *   there, and resolvers use the area below their own %rsp as well (glibc's
 *   _dl_tlsdesc_dynamic saves %rsi and %rdi at -16(%rsp)).  So %rsp first
 *   moves 128 bytes down.
 * - Stack alignment.  A called function is owed %rsp % 16 == 0 at the call
 *   (a resolver may call C: __tls_get_addr, malloc); here %rsp has whatever
 *   alignment the compiler left, so it is rounded down to 16.  The original
 *   %rsp is kept in a register of the compiler's choosing ([sp]), which the
 *   resolver gives back intact, and put back after the add.
 * - Unwind tables.  While %rsp is moved, the function's CFI rule for the
 *   canonical frame address, usually "%rsp + N", would be wrong, and a
 *   profiler unwinding from a sample taken in these instructions or inside
 *   the resolver would lose the stack.  So the compiler hands the asm the
 *   CFA itself (__builtin_dwarf_cfa()), and for the duration of the asm the
 *   CFI says "CFA = %r12": right whatever rule the compiler had, and whether
 *   or not it uses a frame pointer.  The register is fixed, not left to the
 *   compiler, because the rule must also hold while the resolver runs, and
 *   resolvers do change registers they restore before returning: glibc's
 *   _dl_tlsdesc_dynamic overwrites %rsi and %rdi (and, on its slow path,
 *   %rdx, %rcx, %r8-%r11, and %rbx from glibc 2.40), musl's %rcx and %rdx.
 *   None of them touches %r12-%r15, which C code they call (__tls_get_addr)
 *   saves with CFI of its own, so an unwinder recovers %r12 at every
 *   instruction.  (tests/unwind/ steps through the dynamic-TLS resolver and
 *   unwinds at each instruction.)  Only when the compiler emits CFI at all:
 *   __GCC_HAVE_DWARF2_CFI_ASM.
 * - Clobbers.  The TLSDESC convention is that the resolver preserves every
 *   register except %rax and the flags: hence "=&a" (early-clobbered, so
 *   that no input is in %rax) and "cc".  glibc bug 31372 breaks that
 *   convention before 2.40, in Debian 12's 2.36 among others:
 *   _dl_tlsdesc_dynamic, which runs for a dlopen()ed library that found no
 *   room in static TLS, reaches __tls_get_addr (and malloc and memset)
 *   without saving the vector registers, and %xmm0 and %xmm1 were seen
 *   overwritten.  So every vector register is declared clobbered, and, when
 *   the compiler may use AVX-512, the upper sixteen and the mask registers,
 *   which glibc's EVEX string functions use.  None of them is preserved
 *   across calls in the psABI anyway, and the library's functions hold no
 *   vector value across the access, so this costs nothing.  The integer
 *   registers are saved by every resolver, that one included.
 * - No "memory" clobber: the asm reads only the GOT and the thread's TLS
 *   block and writes no object the program can name.  Without volatile the
 *   compiler may merge two accesses in one function, which is right: the
 *   address is fixed for the thread.
 */
#ifdef __GCC_HAVE_DWARF2_CFI_ASM
#define OTEL__CFI(directive) directive "\n\t"
#define OTEL__CFA_DECL register void *otel__cfa_ __asm__("r12") = __builtin_dwarf_cfa();
#define OTEL__CFA_INPUT "r"(otel__cfa_)
#else
#define OTEL__CFI(directive)
#define OTEL__CFA_DECL
#define OTEL__CFA_INPUT
#endif

#ifdef __AVX512F__
#define OTEL__AVX512_CLOBBERS                                                   \
	, "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22",        \
	"xmm23", "xmm24", "xmm25", "xmm26", "xmm27", "xmm28", "xmm29",          \
	"xmm30", "xmm31", "k1", "k2", "k3", "k4", "k5", "k6", "k7"
#else
#define OTEL__AVX512_CLOBBERS
#endif

#define OTEL__TLSDESC_ACCESSOR(fn, sym)                                         \
	static inline void *fn(void)                                            \
	{                                                                       \
		void *addr;                                                     \
		unsigned long saved_sp;                                         \
		OTEL__CFA_DECL                                                  \
                                                                                \
		__asm__("mov	%%rsp, %[sp]\n\t"                               \
			OTEL__CFI(".cfi_remember_state")                        \
			OTEL__CFI(".cfi_def_cfa %%r12, 0")                      \
			"lea	-128(%%rsp), %%rsp\n\t"                         \
			"and	$-16, %%rsp\n\t"                                \
			"lea	" sym "@tlsdesc(%%rip), %%rax\n\t"              \
			"call	*" sym "@tlscall(%%rax)\n\t"                    \
			"add	%%fs:0, %%rax\n\t"                              \
			"mov	%[sp], %%rsp"                                   \
			OTEL__CFI("\n\t.cfi_restore_state")                     \
			: "=&a"(addr), [sp] "=&r"(saved_sp)                     \
			: OTEL__CFA_INPUT                                       \
			: "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", \
			  "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",     \
			  "xmm12", "xmm13", "xmm14", "xmm15"                    \
			  OTEL__AVX512_CLOBBERS);                               \
		return addr;                                                    \
	}

/*
 * The thread pointer: %fs:0 holds the address of the thread control block,
 * which is the thread pointer itself (x86-64 psABI, TLS variant II).  Not
 * volatile: it is fixed for the thread.
 */
static inline uintptr_t otel__thread_pointer(void)
{
	uintptr_t tp;

	__asm__("mov	%%fs:0, %0" : "=r"(tp));
	return tp;
}

/*
 * OTEL__TLSDESC_PROBE(name, sym): a function `name`, never called, that holds
 * the TLSDESC access to `sym` as the linker left it, for
 * otel__tlsdesc_is_static() to read.  Its bytes are the canonical window.
 */
#define OTEL__TLSDESC_PROBE(name, sym)                                          \
	__asm__(".pushsection .text." name ",\"ax\",@progbits\n\t"             \
		".p2align 4\n\t"                                                \
		".globl	" name "\n\t"                                           \
		".hidden	" name "\n\t"                                   \
		".type	" name ", @function\n"                                  \
		name ":\n\t"                                                    \
		"lea	" sym "@tlsdesc(%rip), %rax\n\t"                        \
		"call	*" sym "@tlscall(%rax)\n\t"                             \
		"add	%fs:0, %rax\n\t"                                        \
		"ret\n\t"                                                       \
		".size	" name ", . - " name "\n\t"                             \
		".popsection");

/*
 * The bytes of a TLSDESC resolver that otel__tlsdesc_resolver_is_static()
 * looks at: an endbr64, then the body.
 */
#define OTEL__TLSDESC_RESOLVER_SIZE 9

/*
 * Whether the resolver whose first OTEL__TLSDESC_RESOLVER_SIZE bytes are at
 * `code` is the resolver of static TLS, the one the dynamic loader puts in a
 * descriptor whose argument is the variable's offset from the thread
 * pointer: `mov 8(%rax), %rax; ret` in glibc (_dl_tlsdesc_return) and musl
 * (__tlsdesc_static), after an endbr64 where the C library is built for
 * CET.  The eBPF profiler's TLS reader makes the same test on aarch64
 * (open-telemetry/opentelemetry-ebpf-profiler, tls/tlsdesc_aarch64.go).
 * Used by the writer (otel__tlsdesc_is_static(), below) on its own
 * descriptor and by the inspector (src/inspect/discovery.c) on the bytes it
 * read from a process.
 */
static inline int otel__tlsdesc_resolver_is_static(const unsigned char *code)
{
	static const unsigned char endbr64[4] = { 0xf3, 0x0f, 0x1e, 0xfa };
	static const unsigned char body[5] = { 0x48, 0x8b, 0x40, 0x08, 0xc3 };

	if (__builtin_memcmp(code, endbr64, sizeof(endbr64)) == 0)
		code += sizeof(endbr64);
	return __builtin_memcmp(code, body, sizeof(body)) == 0;
}

/*
 * Whether the TLS access at `code` (an OTEL__TLSDESC_PROBE) reaches static
 * TLS, where a variable lies at the same offset from the thread pointer in
 * every thread.  It does when the linker relaxed it (to local-exec or
 * initial-exec: the lea is gone), which it does only in an executable; or
 * when the descriptor names the resolver of static TLS
 * (otel__tlsdesc_resolver_is_static()).  Anything else (the dynamic-TLS
 * resolver, a lazy one, an unknown body) is "no": the caller then keeps to
 * the TLSDESC call.
 */
static inline int otel__tlsdesc_is_static(const unsigned char *code)
{
	static const unsigned char lea_rax[3] = { 0x48, 0x8d, 0x05 };
	const unsigned char *resolver;
	const void *const *desc;
	int32_t rel;

	if (__builtin_memcmp(code, lea_rax, sizeof(lea_rax)) != 0)
		return 1;
	__builtin_memcpy(&rel, code + 3, sizeof(rel));
	desc = (const void *const *)(const void *)(code + 7 + rel);
	resolver = (const unsigned char *)__atomic_load_n(&desc[0], __ATOMIC_RELAXED);
	return resolver != 0 && otel__tlsdesc_resolver_is_static(resolver);
}

#endif /* OTEL_ARCH_X86_64_TLSDESC_H */
