/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An object with code and data but no access to otel_thread_ctx_v1: given
 * alone, tests/tlsdesc/check-tlsdesc.py must fail ("no TLSDESC access found") rather
 * than pass on nothing.  Used by check-tlsdesc-selftest.py; never linked.
 */
	.text
	.globl	tlsdesc_noaccess
	.type	tlsdesc_noaccess, %function
tlsdesc_noaccess:
	ret
	.size	tlsdesc_noaccess, . - tlsdesc_noaccess

	.section .note.GNU-stack,"",%progbits
