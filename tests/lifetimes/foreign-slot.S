/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Another module's definition of the slot, as another tracer's library or an
 * executable may have it: the exported 8-byte otel_thread_ctx_v1, and right
 * after it, in the same section, thread-locals of that module's own
 * (foreign_sentinel: a known pattern in every thread).  Linked into the test
 * executable, or into a library loaded ahead of otel-thread-ctx.
 */
	.section .tdata,"awT",@progbits
	.p2align 3
	.globl	otel_thread_ctx_v1
	.type	otel_thread_ctx_v1, @tls_object
	.size	otel_thread_ctx_v1, 8
otel_thread_ctx_v1:
	.quad	0
	.globl	foreign_sentinel
	.hidden	foreign_sentinel
	.type	foreign_sentinel, @tls_object
	.size	foreign_sentinel, 64
foreign_sentinel:
	.rept	8
	.quad	0x5a5a0123c3c3fedc
	.endr

	.section .note.GNU-stack,"",@progbits
