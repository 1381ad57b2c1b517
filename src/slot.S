/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The thread-context slot, defined in assembly so that its ELF properties do
 * not depend on the C compiler, its version or its flags (-fvisibility,
 * -fdata-sections, -fno-zero-initialized-in-bss, -ftls-model ...):
 * STT_TLS, STB_GLOBAL, STV_DEFAULT, 8 bytes, 8-aligned, in .tbss.
 *
 * The 16 bytes after it belong to the library (struct otel__thread in
 * src/tls.h).  Being in the same input section, they follow the slot in every
 * thread's TLS block whatever the TLS model and the linker.  Only the 8-byte
 * slot is a symbol.
 */
	.section .tbss,"awT",@nobits
	.p2align 3
	.globl	otel_thread_ctx_v1
	.type	otel_thread_ctx_v1, @tls_object
	.size	otel_thread_ctx_v1, 8
otel_thread_ctx_v1:
	.zero	8
	.zero	16

	.section .note.GNU-stack,"",@progbits
