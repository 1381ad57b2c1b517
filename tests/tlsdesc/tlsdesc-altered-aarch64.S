/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Deliberately altered TLSDESC accesses to otel_thread_ctx_v1, for the test of
 * tests/tlsdesc/check-tlsdesc.py (check-tlsdesc-selftest.py knows what the comparison
 * must say about each function).  Each looks plausible, and each would be
 * relaxed wrongly or not at all by some linker, or is another TLS model.
 * Assembled with the build's compiler; never linked.
 */
#define CASE(name) .globl name; .type name, %function; name:
#define END(name) ret; .size name, . - name

	.text

/* The canonical sequence: the comparison must accept it. */
CASE(case_canonical)
	adrp	x0, :tlsdesc:otel_thread_ctx_v1
	ldr	x1, [x0, #:tlsdesc_lo12:otel_thread_ctx_v1]
	add	x0, x0, #:tlsdesc_lo12:otel_thread_ctx_v1
	.tlsdesccall otel_thread_ctx_v1
	blr	x1
	mrs	x8, tpidr_el0
	add	x0, x8, x0
END(case_canonical)

/* The descriptor's address in another register: lld and mold hard-code x0
 * when they relax. */
CASE(case_adrp_x2)
	adrp	x2, :tlsdesc:otel_thread_ctx_v1
	ldr	x1, [x2, #:tlsdesc_lo12:otel_thread_ctx_v1]
	add	x0, x2, #:tlsdesc_lo12:otel_thread_ctx_v1
	.tlsdesccall otel_thread_ctx_v1
	blr	x1
	mrs	x8, tpidr_el0
	add	x0, x8, x0
END(case_adrp_x2)

/* The thread pointer read before the blr. */
CASE(case_mrs_before_blr)
	adrp	x0, :tlsdesc:otel_thread_ctx_v1
	ldr	x1, [x0, #:tlsdesc_lo12:otel_thread_ctx_v1]
	add	x0, x0, #:tlsdesc_lo12:otel_thread_ctx_v1
	mrs	x8, tpidr_el0
	.tlsdesccall otel_thread_ctx_v1
	blr	x1
	add	x0, x8, x0
END(case_mrs_before_blr)

/* What gcc 12 emits: the thread pointer in x1 across the call, the
 * resolver loaded into x2. */
CASE(case_gcc12)
	mrs	x1, tpidr_el0
	adrp	x0, :tlsdesc:otel_thread_ctx_v1
	ldr	x2, [x0, #:tlsdesc_lo12:otel_thread_ctx_v1]
	add	x0, x0, #:tlsdesc_lo12:otel_thread_ctx_v1
	.tlsdesccall otel_thread_ctx_v1
	blr	x2
	add	x0, x1, x0
END(case_gcc12)

/* An instruction inside the window, before the blr. */
CASE(case_insn_before_blr)
	adrp	x0, :tlsdesc:otel_thread_ctx_v1
	ldr	x1, [x0, #:tlsdesc_lo12:otel_thread_ctx_v1]
	add	x0, x0, #:tlsdesc_lo12:otel_thread_ctx_v1
	nop
	.tlsdesccall otel_thread_ctx_v1
	blr	x1
	mrs	x8, tpidr_el0
	add	x0, x8, x0
END(case_insn_before_blr)

/* The same bytes without .tlsdesccall: no R_AARCH64_TLSDESC_CALL, so a
 * relaxing linker leaves a blr to whatever the ldr now loads. */
CASE(case_call_unmarked)
	adrp	x0, :tlsdesc:otel_thread_ctx_v1
	ldr	x1, [x0, #:tlsdesc_lo12:otel_thread_ctx_v1]
	add	x0, x0, #:tlsdesc_lo12:otel_thread_ctx_v1
	blr	x1
	mrs	x8, tpidr_el0
	add	x0, x8, x0
END(case_call_unmarked)

/* The same sum with its operands swapped. */
CASE(case_add_swapped)
	adrp	x0, :tlsdesc:otel_thread_ctx_v1
	ldr	x1, [x0, #:tlsdesc_lo12:otel_thread_ctx_v1]
	add	x0, x0, #:tlsdesc_lo12:otel_thread_ctx_v1
	.tlsdesccall otel_thread_ctx_v1
	blr	x1
	mrs	x8, tpidr_el0
	add	x0, x0, x8
END(case_add_swapped)

/* General dynamic: the legacy model, __tls_get_addr (gcc -mtls-dialect=trad).
 * Written with .reloc: clang's assembler has no :tlsgd: operators. */
CASE(case_general_dynamic)
	.reloc	., R_AARCH64_TLSGD_ADR_PAGE21, otel_thread_ctx_v1
	.inst	0x90000000	/* adrp x0, :tlsgd:otel_thread_ctx_v1 */
	.reloc	., R_AARCH64_TLSGD_ADD_LO12_NC, otel_thread_ctx_v1
	.inst	0x91000000	/* add x0, x0, :tlsgd_lo12:otel_thread_ctx_v1 */
	bl	__tls_get_addr
	nop
END(case_general_dynamic)

/* Initial exec. */
CASE(case_initial_exec)
	adrp	x0, :gottprel:otel_thread_ctx_v1
	ldr	x0, [x0, #:gottprel_lo12:otel_thread_ctx_v1]
	mrs	x1, tpidr_el0
	add	x0, x1, x0
END(case_initial_exec)

/* Local exec. */
CASE(case_local_exec)
	mrs	x0, tpidr_el0
	add	x0, x0, #:tprel_hi12:otel_thread_ctx_v1, lsl #12
	add	x0, x0, #:tprel_lo12_nc:otel_thread_ctx_v1
END(case_local_exec)

/* A window cut short by the end of its section. */
	.section .text.truncated,"ax",%progbits
	.globl	case_truncated
	.type	case_truncated, %function
case_truncated:
	adrp	x0, :tlsdesc:otel_thread_ctx_v1
	ldr	x1, [x0, #:tlsdesc_lo12:otel_thread_ctx_v1]
	add	x0, x0, #:tlsdesc_lo12:otel_thread_ctx_v1
	.tlsdesccall otel_thread_ctx_v1
	blr	x1
	.size	case_truncated, . - case_truncated

	.section .note.GNU-stack,"",%progbits
