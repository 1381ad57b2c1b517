/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The TLSDESC call of the library's slot, bare, with known values in every
 * vector register, for tests/loading/vector-regs.c.  The sequence is the one
 * of arch/aarch64/tlsdesc.h (adrp/ldr x1/add/.tlsdesccall/blr x1, then
 * tpidr_el0), made from this module, whose descriptor the loader resolves
 * against the library's TLS block like the library's own.
 *
 * void *probe_tlsdesc(const unsigned char in[512], unsigned char out[512])
 *   loads v0..v31 from in, calls the resolver, stores v0..v31 to out right
 *   after it returns, and returns the slot's address.  The TLSDESC
 *   convention promises that the resolver changes x0, x1, x30 and the flags
 *   only (the library's accessor relies on it for every vector register);
 *   out shows what it really did.  `out` is kept on the stack across the
 *   call.  d8..d15 are callee-saved (AAPCS64), so they are saved and
 *   restored for the C caller.
 *
 * const void *probe_descriptor(void)
 *   the address of this module's descriptor for the slot.
 */
	.text
	.globl	probe_tlsdesc
	.type	probe_tlsdesc, %function
	.p2align 2
probe_tlsdesc:
	.cfi_startproc
	stp	x29, x30, [sp, #-96]!
	.cfi_def_cfa_offset 96
	.cfi_offset 29, -96
	.cfi_offset 30, -88
	mov	x29, sp
	stp	d8, d9, [sp, #16]
	stp	d10, d11, [sp, #32]
	stp	d12, d13, [sp, #48]
	stp	d14, d15, [sp, #64]
	str	x1, [sp, #80]
	ld1	{v0.16b, v1.16b, v2.16b, v3.16b}, [x0], #64
	ld1	{v4.16b, v5.16b, v6.16b, v7.16b}, [x0], #64
	ld1	{v8.16b, v9.16b, v10.16b, v11.16b}, [x0], #64
	ld1	{v12.16b, v13.16b, v14.16b, v15.16b}, [x0], #64
	ld1	{v16.16b, v17.16b, v18.16b, v19.16b}, [x0], #64
	ld1	{v20.16b, v21.16b, v22.16b, v23.16b}, [x0], #64
	ld1	{v24.16b, v25.16b, v26.16b, v27.16b}, [x0], #64
	ld1	{v28.16b, v29.16b, v30.16b, v31.16b}, [x0], #64
	adrp	x0, :tlsdesc:otel_thread_ctx_v1
	ldr	x1, [x0, #:tlsdesc_lo12:otel_thread_ctx_v1]
	add	x0, x0, #:tlsdesc_lo12:otel_thread_ctx_v1
	.tlsdesccall	otel_thread_ctx_v1
	blr	x1
	mrs	x8, tpidr_el0
	add	x0, x8, x0
	ldr	x1, [sp, #80]
	st1	{v0.16b, v1.16b, v2.16b, v3.16b}, [x1], #64
	st1	{v4.16b, v5.16b, v6.16b, v7.16b}, [x1], #64
	st1	{v8.16b, v9.16b, v10.16b, v11.16b}, [x1], #64
	st1	{v12.16b, v13.16b, v14.16b, v15.16b}, [x1], #64
	st1	{v16.16b, v17.16b, v18.16b, v19.16b}, [x1], #64
	st1	{v20.16b, v21.16b, v22.16b, v23.16b}, [x1], #64
	st1	{v24.16b, v25.16b, v26.16b, v27.16b}, [x1], #64
	st1	{v28.16b, v29.16b, v30.16b, v31.16b}, [x1], #64
	ldp	d8, d9, [sp, #16]
	ldp	d10, d11, [sp, #32]
	ldp	d12, d13, [sp, #48]
	ldp	d14, d15, [sp, #64]
	ldp	x29, x30, [sp], #96
	.cfi_def_cfa_offset 0
	.cfi_restore 29
	.cfi_restore 30
	ret
	.cfi_endproc
	.size	probe_tlsdesc, .-probe_tlsdesc

	.globl	probe_descriptor
	.type	probe_descriptor, %function
	.p2align 2
probe_descriptor:
	.cfi_startproc
	adrp	x0, :tlsdesc:otel_thread_ctx_v1
	add	x0, x0, #:tlsdesc_lo12:otel_thread_ctx_v1
	ret
	.cfi_endproc
	.size	probe_descriptor, .-probe_descriptor

	.section .note.GNU-stack,"",%progbits
