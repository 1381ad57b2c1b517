/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A TLSDESC resolver that does, on every call, everything glibc's
 * _dl_tlsdesc_dynamic may do on x86-64, for tests/loading/vector-regs.c.
 * The real one does it only on a thread's first access to dynamic TLS, and
 * not at all from glibc 2.40 on; arch/x86_64/tlsdesc.h guards against each
 * of these, and this resolver makes a call site that does not fail every
 * time, on every TLS path.
 *
 * hostile_resolver (hidden; accessor.c puts it in descriptors)
 *   takes the descriptor's address in %rax, like any resolver, and
 *   - traps (ud2, SIGILL) unless the call site aligned the stack: the psABI
 *     owes a called function %rsp % 16 == 8 at entry, and a resolver may
 *     call C (__tls_get_addr, malloc);
 *   - fills the 128 bytes below its %rsp, its red zone, which the psABI
 *     lets any function use (glibc's saves %rsi and %rdi there): a call
 *     site that left its own red zone below %rsp loses what it kept there;
 *   - calls the real resolver, hostile_next, with %rax as it came, and keeps
 *     the offset it returns in %rax;
 *   - counts the call in hostile_calls (not atomically: threads may lose
 *     counts, and the test asks only that calls were made);
 *   - overwrites %xmm0-%xmm15 and the flags, as glibc bug 31372 overwrites
 *     vector registers: everything else is kept, as the convention says.
 */
	.text
	.globl	hostile_resolver
	.hidden	hostile_resolver
	.type	hostile_resolver, @function
	.p2align 4
hostile_resolver:
	.cfi_startproc
	testb	$7, %spl
	jnz	1f
	testb	$8, %spl
	jz	1f
	movq	$-1, -8(%rsp)
	movq	$-1, -16(%rsp)
	movq	$-1, -24(%rsp)
	movq	$-1, -32(%rsp)
	movq	$-1, -40(%rsp)
	movq	$-1, -48(%rsp)
	movq	$-1, -56(%rsp)
	movq	$-1, -64(%rsp)
	movq	$-1, -72(%rsp)
	movq	$-1, -80(%rsp)
	movq	$-1, -88(%rsp)
	movq	$-1, -96(%rsp)
	movq	$-1, -104(%rsp)
	movq	$-1, -112(%rsp)
	movq	$-1, -120(%rsp)
	movq	$-1, -128(%rsp)
	/* The real resolver is owed the same alignment. */
	sub	$8, %rsp
	.cfi_adjust_cfa_offset 8
	call	*hostile_next(%rip)
	add	$8, %rsp
	.cfi_adjust_cfa_offset -8
	addq	$1, hostile_calls(%rip)
	pcmpeqd	%xmm0, %xmm0
	pcmpeqd	%xmm1, %xmm1
	pcmpeqd	%xmm2, %xmm2
	pcmpeqd	%xmm3, %xmm3
	pcmpeqd	%xmm4, %xmm4
	pcmpeqd	%xmm5, %xmm5
	pcmpeqd	%xmm6, %xmm6
	pcmpeqd	%xmm7, %xmm7
	pcmpeqd	%xmm8, %xmm8
	pcmpeqd	%xmm9, %xmm9
	pcmpeqd	%xmm10, %xmm10
	pcmpeqd	%xmm11, %xmm11
	pcmpeqd	%xmm12, %xmm12
	pcmpeqd	%xmm13, %xmm13
	pcmpeqd	%xmm14, %xmm14
	pcmpeqd	%xmm15, %xmm15
	cmp	%rsp, %rax
	ret
1:	ud2
	.cfi_endproc
	.size	hostile_resolver, .-hostile_resolver

	.bss
	.p2align 3
	.globl	hostile_next
	.hidden	hostile_next
	.type	hostile_next, @object
	.size	hostile_next, 8
hostile_next:
	.zero	8
	.globl	hostile_calls
	.hidden	hostile_calls
	.type	hostile_calls, @object
	.size	hostile_calls, 8
hostile_calls:
	.zero	8

	.section .note.GNU-stack,"",@progbits
