/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A TLSDESC resolver for tests/loading/vector-regs.c, the aarch64 twin of
 * hostile-x86_64.S.  On aarch64 the library's access relies on the TLSDESC
 * convention for every register but x0, x1, x30 and the flags
 * (arch/aarch64/tlsdesc.h), and glibc's and musl's resolvers keep it; so this
 * one keeps it too, and changes only what the convention lets it change.
 * AArch64 has no red zone, and the hardware checks the alignment of sp.
 *
 * hostile_resolver (hidden; accessor.c puts it in descriptors)
 *   takes the descriptor's address in x0, like any resolver, calls the real
 *   resolver, hostile_next, with it, and returns the offset that gives in
 *   x0; counts the call in hostile_calls (not atomically: threads may lose
 *   counts, and the test asks only that calls were made); and overwrites x1
 *   and the flags.
 */
	.text
	.globl	hostile_resolver
	.hidden	hostile_resolver
	.type	hostile_resolver, %function
	.p2align 2
hostile_resolver:
	.cfi_startproc
	stp	x29, x30, [sp, #-32]!
	.cfi_def_cfa_offset 32
	.cfi_offset 29, -32
	.cfi_offset 30, -24
	mov	x29, sp
	str	x2, [sp, #16]
	.cfi_offset 2, -16
	adrp	x1, hostile_calls
	ldr	x2, [x1, #:lo12:hostile_calls]
	add	x2, x2, #1
	str	x2, [x1, #:lo12:hostile_calls]
	ldr	x2, [sp, #16]
	.cfi_restore 2
	adrp	x1, hostile_next
	ldr	x1, [x1, #:lo12:hostile_next]
	blr	x1
	ldp	x29, x30, [sp], #32
	.cfi_restore 29
	.cfi_restore 30
	.cfi_def_cfa_offset 0
	mov	x1, #-1
	adds	x1, x1, #1
	ret
	.cfi_endproc
	.size	hostile_resolver, .-hostile_resolver

	.bss
	.p2align 3
	.globl	hostile_next
	.hidden	hostile_next
	.type	hostile_next, %object
	.size	hostile_next, 8
hostile_next:
	.zero	8
	.globl	hostile_calls
	.hidden	hostile_calls
	.type	hostile_calls, %object
	.size	hostile_calls, 8
hostile_calls:
	.zero	8

	.section .note.GNU-stack,"",%progbits
