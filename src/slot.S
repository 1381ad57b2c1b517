/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The thread-context slot and the library's own per-thread state, defined in
 * assembly so that their ELF properties do not depend on the C compiler, its
 * version or its flags (-fvisibility, -fdata-sections,
 * -fno-zero-initialized-in-bss, -ftls-model ...).
 *
 * otel_thread_ctx_v1: STT_TLS, STB_GLOBAL, STV_DEFAULT, 8 bytes, 8-aligned,
 * in .tbss: what readers look for.
 *
 * otel__thread_state: STT_TLS, STV_HIDDEN, 32 bytes (struct otel__thread in
 * src/tls.h), right after the slot in the same input section, so that in
 * every TLS model and with every linker it lies 8 bytes past the library's
 * own slot.  Hidden: the library reaches it whatever other module defines
 * otel_thread_ctx_v1, and it never appears in .dynsym.
 */
	.section .tbss,"awT",@nobits
	.p2align 3
	.globl	otel_thread_ctx_v1
	.type	otel_thread_ctx_v1, @tls_object
	.size	otel_thread_ctx_v1, 8
otel_thread_ctx_v1:
	.zero	8
	.globl	otel__thread_state
	.hidden	otel__thread_state
	.type	otel__thread_state, @tls_object
	.size	otel__thread_state, 32
otel__thread_state:
	.zero	32

	.section .note.GNU-stack,"",@progbits
