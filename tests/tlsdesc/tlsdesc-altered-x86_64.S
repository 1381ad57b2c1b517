/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Deliberately altered TLSDESC accesses to otel_thread_ctx_v1, for the test of
 * tests/tlsdesc/check-tlsdesc.py (check-tlsdesc-selftest.py knows what the comparison
 * must say about each function).  Each looks plausible, and each would be
 * relaxed wrongly or not at all by some linker, or is another TLS model.
 * Assembled with the build's compiler; never linked.
 */
#define CASE(name) .globl name; .type name, @function; name:
#define END(name) ret; .size name, . - name

	.text

/* The canonical sequence: the comparison must accept it. */
CASE(case_canonical)
	lea	otel_thread_ctx_v1@tlsdesc(%rip), %rax
	call	*otel_thread_ctx_v1@tlscall(%rax)
	add	%fs:0, %rax
END(case_canonical)

/* The lea into another register: gold rewrites only 48 8d 05. */
CASE(case_lea_rdi)
	lea	otel_thread_ctx_v1@tlsdesc(%rip), %rdi
	call	*otel_thread_ctx_v1@tlscall(%rax)
	add	%fs:0, %rax
END(case_lea_rdi)

/* LLVM's older form, lea into a register then mov to %rax: mold knows it,
 * bfd and gold do not. */
CASE(case_lea_mov)
	lea	otel_thread_ctx_v1@tlsdesc(%rip), %rdi
	mov	%rdi, %rax
	call	*otel_thread_ctx_v1@tlscall(%rax)
	add	%fs:0, %rax
END(case_lea_mov)

/* An instruction inside the window, between the lea and the call. */
CASE(case_insn_before_call)
	lea	otel_thread_ctx_v1@tlsdesc(%rip), %rax
	nop
	call	*otel_thread_ctx_v1@tlscall(%rax)
	add	%fs:0, %rax
END(case_insn_before_call)

/* An instruction inside the window, between the call and the add. */
CASE(case_insn_before_add)
	lea	otel_thread_ctx_v1@tlsdesc(%rip), %rax
	call	*otel_thread_ctx_v1@tlscall(%rax)
	nop
	add	%fs:0, %rax
END(case_insn_before_add)

/* The same bytes without the TLSDESC_CALL marker: no linker can relax the
 * call, which then jumps through a rewritten GOT slot. */
CASE(case_call_unmarked)
	lea	otel_thread_ctx_v1@tlsdesc(%rip), %rax
	call	*(%rax)
	add	%fs:0, %rax
END(case_call_unmarked)

/* The thread pointer through another register: right, but not the pinned
 * sequence. */
CASE(case_tp_through_rdx)
	lea	otel_thread_ctx_v1@tlsdesc(%rip), %rax
	call	*otel_thread_ctx_v1@tlscall(%rax)
	mov	%fs:0, %rdx
	add	%rdx, %rax
END(case_tp_through_rdx)

/* A descriptor for slot + 8: the next member of the per-thread block reached
 * as if it were the symbol. */
CASE(case_addend)
	lea	otel_thread_ctx_v1@tlsdesc+8(%rip), %rax
	call	*otel_thread_ctx_v1@tlscall(%rax)
	add	%fs:0, %rax
END(case_addend)

/* General dynamic: the legacy model, __tls_get_addr. */
CASE(case_general_dynamic)
	.byte	0x66
	lea	otel_thread_ctx_v1@tlsgd(%rip), %rdi
	.value	0x6666
	rex64
	call	__tls_get_addr@PLT
END(case_general_dynamic)

/* Initial exec. */
CASE(case_initial_exec)
	mov	otel_thread_ctx_v1@gottpoff(%rip), %rax
	add	%fs:0, %rax
END(case_initial_exec)

/* Local exec. */
CASE(case_local_exec)
	mov	%fs:0, %rax
	lea	otel_thread_ctx_v1@tpoff(%rax), %rax
END(case_local_exec)

/* Local dynamic. */
CASE(case_local_dynamic)
	lea	otel_thread_ctx_v1@tlsld(%rip), %rdi
	call	__tls_get_addr@PLT
	lea	otel_thread_ctx_v1@dtpoff(%rax), %rax
END(case_local_dynamic)

/* A window cut short by the end of its section. */
	.section .text.truncated,"ax",@progbits
	.globl	case_truncated
	.type	case_truncated, @function
case_truncated:
	lea	otel_thread_ctx_v1@tlsdesc(%rip), %rax
	call	*otel_thread_ctx_v1@tlscall(%rax)
	.size	case_truncated, . - case_truncated

	.section .note.GNU-stack,"",@progbits
