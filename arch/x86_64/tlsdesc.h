/* SPDX-License-Identifier: Apache-2.0 */
/* x86-64: the address of otel_thread_ctx_v1 in the calling thread, computed
 * with the TLS descriptor sequence of the x86-64 psABI ("gnu2" dialect).
 * Included only through src/tls.h. */
#ifndef OTEL_ARCH_X86_64_TLSDESC_H
#define OTEL_ARCH_X86_64_TLSDESC_H

/*
 * The three instructions in the middle are the canonical TLSDESC access, byte
 * for byte what a compiler emits with -mtls-dialect=gnu2 and what every
 * linker pattern-matches when it relaxes the access to initial-exec or
 * local-exec in an executable:
 *
 *   48 8d 05 <rel32>            lea  otel_thread_ctx_v1@tlsdesc(%rip), %rax
 *   ff 10                       call *otel_thread_ctx_v1@tlscall(%rax)
 *   64 48 03 04 25 00 00 00 00  add  %fs:0, %rax
 *
 * The lea must target %rax (gold rewrites only 48 8d 05) and the call must be
 * exactly ff 10.  The resolver receives the descriptor's address in %rax and
 * returns in %rax the offset of the variable from the thread pointer; the add
 * turns it into the address.  Written in asm, the library stays on TLSDESC
 * with gcc, with clang before 19 (which cannot emit gnu2 on x86-64) and with
 * whatever -mtls-dialect or -ftls-model it is built with.
 *
 * Why a naked function and not an asm statement inside the callers: an asm
 * statement cannot tell the compiler that it makes a call, and on x86-64
 * that breaks four things at once.
 *
 * - Red zone.  In a function it believes is a leaf, the compiler may keep
 *   data in the 128 bytes below %rsp.  The call pushes its return address
 *   there, and resolvers use the area below their own %rsp as well (glibc's
 *   _dl_tlsdesc_dynamic saves %rsi and %rdi at -16(%rsp)).
 * - Stack alignment.  A called function is owed %rsp % 16 == 0 at the call
 *   (the resolver may call C: __tls_get_addr, malloc); inside an arbitrary
 *   function body %rsp has whatever alignment the compiler left.
 * - Clobbers.  The TLSDESC convention is that the resolver preserves every
 *   register except %rax and the flags, but glibc bug 31372 breaks it before
 *   2.40, in Debian 12's 2.36 among others: _dl_tlsdesc_dynamic, which runs
 *   for a dlopen()ed library that found no room in static TLS, reaches
 *   __tls_get_addr (and malloc and memset) without saving the vector
 *   registers; %xmm0 and %xmm1 were seen overwritten.  An asm statement would
 *   have to list every vector register, and the AVX-512 and mask registers
 *   when the compiler may use them.
 * - Unwind tables.  Realigning %rsp inside an asm statement makes the
 *   caller's CFI wrong for those instructions, and a profiler that unwinds
 *   from a sample taken there, or inside the resolver, loses the stack.
 *
 * A naked function has no prologue or epilogue; the compiler calls it like
 * any other function.  So no red-zone data is live across the call, %rsp is
 * 16-aligned at the call, and the caller already assumes every caller-saved
 * register is lost, the vector registers included: the ordinary call
 * convention covers bug 31372.  Entered with %rsp % 16 == 8, the function
 * moves %rsp down by 8 so that the resolver gets an aligned stack too, and
 * says so to the unwinder (.cfi_adjust_cfa_offset, when the compiler emits
 * CFI at all).  As far as the compiler knows, it returns the address in %rax
 * and clobbers what a call clobbers; what it really changes is %rax, the
 * flags, and whatever a buggy resolver changes.  noipa keeps gcc from
 * computing a narrower clobber set from the (empty) body it can see.
 */
#ifdef __GCC_HAVE_DWARF2_CFI_ASM
#define OTEL__CFI(directive) directive "\n\t"
#else
#define OTEL__CFI(directive)
#endif

#if defined(__clang__)
#define OTEL__NAKED __attribute__((naked, noinline, unused))
#else
#define OTEL__NAKED __attribute__((naked, noinline, noipa, unused))
#endif

OTEL__NAKED static void **otel__slot_address(void)
{
	__asm__("sub	$8, %rsp\n\t"
		OTEL__CFI(".cfi_adjust_cfa_offset 8")
		"lea	otel_thread_ctx_v1@tlsdesc(%rip), %rax\n\t"
		"call	*otel_thread_ctx_v1@tlscall(%rax)\n\t"
		"add	%fs:0, %rax\n\t"
		"add	$8, %rsp\n\t"
		OTEL__CFI(".cfi_adjust_cfa_offset -8")
		"ret");
}

#undef OTEL__NAKED
#undef OTEL__CFI

#endif /* OTEL_ARCH_X86_64_TLSDESC_H */
