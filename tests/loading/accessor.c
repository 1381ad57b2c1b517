/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The library's TLSDESC access, the macro of arch/<cpu>/tlsdesc.h that every
 * access of the library is made from, compiled into functions that keep
 * values live across it, for tests/loading/vector-regs.c; and the means to
 * put hostile_resolver (hostile-<cpu>.S) in a TLS descriptor.
 *
 * The module is linked against the library: its descriptor for
 * otel_thread_ctx_v1 resolves against the library's TLS block, on the path
 * of the library's own (vector-regs.c checks it).  It is built with -O2
 * whatever the build type, so that the values stay in registers when the
 * asm statement lets them.
 *
 * Each accessor_* function returns how many of its values it lost across
 * the access (0: all kept) and stores the address the access computed in
 * *slot:
 *
 *   accessor_vectors   values in every vector register (%xmm0-%xmm15;
 *                      v0-v31) when the access starts, which the compiler
 *                      must move out of the registers the asm declares
 *                      clobbered and may leave in the others;
 *   accessor_integers  values in general registers, likewise;
 *   accessor_red_zone  (x86-64) values in the red zone of a leaf function,
 *                      which the asm must step over before it calls.
 */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__x86_64__)
#include "x86_64/tlsdesc.h"
#define VREG "+x"
#define NINT 8
#elif defined(__aarch64__)
#include "aarch64/tlsdesc.h"
#define VREG "+w"
#define NINT 16
#else
#error "the loading-path tests know x86-64 and aarch64 only"
#endif

OTEL__TLSDESC_ACCESSOR(slot_address, "otel_thread_ctx_v1")

typedef uint64_t vec __attribute__((vector_size(16)));

extern void hostile_resolver(void) __attribute__((visibility("hidden")));
extern uintptr_t hostile_next __attribute__((visibility("hidden")));
extern uint64_t hostile_calls __attribute__((visibility("hidden")));

/* Read at run time, so that no value is a constant the compiler could
 * make again after the access instead of keeping it. */
static volatile uint64_t seed = 0x0123456789abcdefu;

static vec vmake(uint64_t k)
{
	vec v = { seed * (2 * k + 1), ~seed ^ (k << 32 | k) };

	return v;
}

static int vlost(vec v, uint64_t k)
{
	vec want = vmake(k);

	return memcmp(&v, &want, sizeof(v)) != 0;
}

static uint64_t imake(uint64_t k)
{
	return seed * (4 * k + 3);
}

/* Values in vector registers, in the operands of empty asm statements (of
 * eight: an in-out operand counts twice, and an asm takes at most 30): the
 * compiler puts them there before the access and takes them from there
 * after it. */
#define PIN8(a, b, c, d, e, f, g, h)                                           \
	__asm__ volatile("" : VREG(a), VREG(b), VREG(c), VREG(d), VREG(e), VREG(f), \
			 VREG(g), VREG(h))
#define PIN16(a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p)                  \
	do {                                                                   \
		PIN8(a, b, c, d, e, f, g, h);                                  \
		PIN8(i, j, k, l, m, n, o, p);                                  \
	} while (0)

int accessor_vectors(void **slot)
{
	vec v0 = vmake(0), v1 = vmake(1), v2 = vmake(2), v3 = vmake(3), v4 = vmake(4),
	    v5 = vmake(5), v6 = vmake(6), v7 = vmake(7), v8 = vmake(8), v9 = vmake(9),
	    v10 = vmake(10), v11 = vmake(11), v12 = vmake(12), v13 = vmake(13),
	    v14 = vmake(14), v15 = vmake(15);
	int lost = 0;
#if defined(__aarch64__)
	/* Thirty-two registers: v8-v15 are callee-saved (their low halves),
	 * the others caller-saved. */
	vec v16 = vmake(16), v17 = vmake(17), v18 = vmake(18), v19 = vmake(19),
	    v20 = vmake(20), v21 = vmake(21), v22 = vmake(22), v23 = vmake(23),
	    v24 = vmake(24), v25 = vmake(25), v26 = vmake(26), v27 = vmake(27),
	    v28 = vmake(28), v29 = vmake(29), v30 = vmake(30), v31 = vmake(31);

	PIN16(v16, v17, v18, v19, v20, v21, v22, v23, v24, v25, v26, v27, v28, v29, v30, v31);
#endif
	PIN16(v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15);
	*slot = slot_address();
	PIN16(v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15);
#if defined(__aarch64__)
	PIN16(v16, v17, v18, v19, v20, v21, v22, v23, v24, v25, v26, v27, v28, v29, v30, v31);
	lost += vlost(v16, 16) + vlost(v17, 17) + vlost(v18, 18) + vlost(v19, 19) +
		vlost(v20, 20) + vlost(v21, 21) + vlost(v22, 22) + vlost(v23, 23) +
		vlost(v24, 24) + vlost(v25, 25) + vlost(v26, 26) + vlost(v27, 27) +
		vlost(v28, 28) + vlost(v29, 29) + vlost(v30, 30) + vlost(v31, 31);
#endif
	lost += vlost(v0, 0) + vlost(v1, 1) + vlost(v2, 2) + vlost(v3, 3) + vlost(v4, 4) +
		vlost(v5, 5) + vlost(v6, 6) + vlost(v7, 7) + vlost(v8, 8) + vlost(v9, 9) +
		vlost(v10, 10) + vlost(v11, 11) + vlost(v12, 12) + vlost(v13, 13) +
		vlost(v14, 14) + vlost(v15, 15);
	return lost;
}

int accessor_integers(void **slot)
{
	uint64_t i0 = imake(0), i1 = imake(1), i2 = imake(2), i3 = imake(3), i4 = imake(4),
		 i5 = imake(5), i6 = imake(6), i7 = imake(7);
	int lost = 0;
#if NINT == 16
	uint64_t i8 = imake(8), i9 = imake(9), i10 = imake(10), i11 = imake(11),
		 i12 = imake(12), i13 = imake(13), i14 = imake(14), i15 = imake(15);

	__asm__ volatile("" : "+r"(i8), "+r"(i9), "+r"(i10), "+r"(i11), "+r"(i12), "+r"(i13),
			 "+r"(i14), "+r"(i15));
#endif
	__asm__ volatile("" : "+r"(i0), "+r"(i1), "+r"(i2), "+r"(i3), "+r"(i4), "+r"(i5),
			 "+r"(i6), "+r"(i7));
	*slot = slot_address();
	__asm__ volatile("" : "+r"(i0), "+r"(i1), "+r"(i2), "+r"(i3), "+r"(i4), "+r"(i5),
			 "+r"(i6), "+r"(i7));
#if NINT == 16
	__asm__ volatile("" : "+r"(i8), "+r"(i9), "+r"(i10), "+r"(i11), "+r"(i12), "+r"(i13),
			 "+r"(i14), "+r"(i15));
	lost += (i8 != imake(8)) + (i9 != imake(9)) + (i10 != imake(10)) + (i11 != imake(11)) +
		(i12 != imake(12)) + (i13 != imake(13)) + (i14 != imake(14)) +
		(i15 != imake(15));
#endif
	lost += (i0 != imake(0)) + (i1 != imake(1)) + (i2 != imake(2)) + (i3 != imake(3)) +
		(i4 != imake(4)) + (i5 != imake(5)) + (i6 != imake(6)) + (i7 != imake(7));
	return lost;
}

#if defined(__x86_64__)
/* A leaf function: the compiler keeps `kept` below %rsp, in the red zone,
 * without moving %rsp (the empty asm statements with a "memory" clobber
 * keep the stores before the access and the loads after it). */
int accessor_red_zone(void **slot)
{
	volatile uint64_t kept[12];
	int lost = 0;

	for (int i = 0; i < 12; i++)
		kept[i] = seed + (uint64_t)i;
	__asm__ volatile("" ::: "memory");
	*slot = slot_address();
	__asm__ volatile("" : : "r"(*slot) : "memory");
	for (int i = 0; i < 12; i++)
		lost += kept[i] != seed + (uint64_t)i;
	return lost;
}
#endif

/*
 * Puts hostile_resolver in the descriptor `desc` ({resolver, argument}, in
 * a GOT that RELRO may have made read-only: it is left writable), and the
 * resolver it had in hostile_next.  0, or -1 if the page cannot be made
 * writable, or -2 if the descriptor has another resolver than those before
 * (hostile_next is one for all).
 */
int hostile_install(volatile uintptr_t *desc)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = (uintptr_t)desc & ~(page - 1);
	uintptr_t hi = ((uintptr_t)(desc + 2) + page - 1) & ~(page - 1);

	if (desc[0] == (uintptr_t)hostile_resolver)
		return 0;
	if (hostile_next == 0)
		hostile_next = desc[0];
	else if (desc[0] != hostile_next)
		return -2;
	if (mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE) != 0)
		return -1;
	desc[0] = (uintptr_t)hostile_resolver;
	return 0;
}

/* Calls hostile_resolver made so far (some may be lost: see its file). */
uint64_t hostile_count(void)
{
	return __atomic_load_n(&hostile_calls, __ATOMIC_RELAXED);
}
