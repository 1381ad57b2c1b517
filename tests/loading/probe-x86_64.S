/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The TLSDESC call of the library's slot, bare, with known values in every
 * vector register, for tests/loading/vector-regs.c.  The sequence is the
 * canonical one (lea into %rax, call *(%rax)), made from this module, whose
 * descriptor the loader resolves against the library's TLS block like the
 * library's own.
 *
 * void *probe_tlsdesc(const unsigned char in[256], unsigned char out[256])
 *   loads %xmm0..%xmm15 from in, calls the resolver, stores %xmm0..%xmm15 to
 *   out right after it returns, and returns the slot's address.  The TLSDESC
 *   convention promises that the resolver changes %rax and the flags only;
 *   out shows what it really did.  `out` is kept on the stack, not in a
 *   register, so that a resolver that broke the convention for general
 *   registers too would not make the probe write elsewhere.  The push also
 *   gives the resolver the 16-byte stack alignment of a call.
 *
 * const void *probe_descriptor(void)
 *   the address of this module's descriptor for the slot (the lea alone).
 */
	.text
	.globl	probe_tlsdesc
	.type	probe_tlsdesc, @function
probe_tlsdesc:
	.cfi_startproc
	push	%rsi
	.cfi_adjust_cfa_offset 8
	movdqu	0(%rdi), %xmm0
	movdqu	16(%rdi), %xmm1
	movdqu	32(%rdi), %xmm2
	movdqu	48(%rdi), %xmm3
	movdqu	64(%rdi), %xmm4
	movdqu	80(%rdi), %xmm5
	movdqu	96(%rdi), %xmm6
	movdqu	112(%rdi), %xmm7
	movdqu	128(%rdi), %xmm8
	movdqu	144(%rdi), %xmm9
	movdqu	160(%rdi), %xmm10
	movdqu	176(%rdi), %xmm11
	movdqu	192(%rdi), %xmm12
	movdqu	208(%rdi), %xmm13
	movdqu	224(%rdi), %xmm14
	movdqu	240(%rdi), %xmm15
	lea	otel_thread_ctx_v1@tlsdesc(%rip), %rax
	call	*otel_thread_ctx_v1@tlscall(%rax)
	pop	%rsi
	.cfi_adjust_cfa_offset -8
	movdqu	%xmm0, 0(%rsi)
	movdqu	%xmm1, 16(%rsi)
	movdqu	%xmm2, 32(%rsi)
	movdqu	%xmm3, 48(%rsi)
	movdqu	%xmm4, 64(%rsi)
	movdqu	%xmm5, 80(%rsi)
	movdqu	%xmm6, 96(%rsi)
	movdqu	%xmm7, 112(%rsi)
	movdqu	%xmm8, 128(%rsi)
	movdqu	%xmm9, 144(%rsi)
	movdqu	%xmm10, 160(%rsi)
	movdqu	%xmm11, 176(%rsi)
	movdqu	%xmm12, 192(%rsi)
	movdqu	%xmm13, 208(%rsi)
	movdqu	%xmm14, 224(%rsi)
	movdqu	%xmm15, 240(%rsi)
	add	%fs:0, %rax
	ret
	.cfi_endproc
	.size	probe_tlsdesc, .-probe_tlsdesc

	.globl	probe_descriptor
	.type	probe_descriptor, @function
probe_descriptor:
	.cfi_startproc
	lea	otel_thread_ctx_v1@tlsdesc(%rip), %rax
	ret
	.cfi_endproc
	.size	probe_descriptor, .-probe_descriptor

	.section .note.GNU-stack,"",@progbits
