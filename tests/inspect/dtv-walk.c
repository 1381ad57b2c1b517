/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The slot walk of otel_thread_ctx_inspect_bpf.h (the inspector's and the
 * BPF reader's one rule) in dynamic TLS, against DTVs laid out the way glibc
 * and musl lay them out on this CPU, at their exact bounds: the DTV's last
 * entry (module id == its count) is read, the entry after it is not, even
 * where memory holds a block address there; module id 0 and the blocks not
 * allocated yet (0, and glibc's all ones) are no TLS; an unreadable DTV is
 * UNREADABLE.  The walk reads a memory image of this program's own making,
 * with the layout the inspector computes for each C library
 * (otel__inspect_dtv_layout(), src/inspect/inspect_bpf.c); the image is
 * built from what each C library's sources define, written here again:
 *
 *   the DTV pointer   x86-64: the TCB's second word (thread pointer + 8),
 *                     both; aarch64: glibc the TCB's first word (tp + 0),
 *                     musl the thread descriptor's last word (tp - 8)
 *   glibc             the pointer is to dtv[0] (the generation) of an array
 *                     of 16-byte dtv_t, whose dtv[-1] holds its length;
 *                     module i's block address at dtv[i]
 *   musl              the pointer is to an array of pointers whose entry 0
 *                     is the count; module i's block address at entry i
 *
 * No process is read: it runs in every configuration, under qemu-user too.
 */
#include <stdint.h>
#include <string.h>

#include "check-lite.h"
#include "otel_thread_ctx_inspect.h"

/* src/inspect/inspect.h (the static inspector library holds it). */
void otel__inspect_dtv_layout(int libc, struct otel_thread_ctx_bpf_proc *proc);

/* The image: [IMAGE_BASE, IMAGE_BASE + sizeof(image)); a read outside it
 * fails, as a read of unmapped memory does. */
#define IMAGE_BASE 0x7f0000100000ull
static uint8_t image[8192];
static unsigned long reads_outside;

static int image_read(uint64_t addr, uint64_t *v)
{
	if (addr < IMAGE_BASE || addr - IMAGE_BASE > sizeof(image) - sizeof(*v)) {
		reads_outside++;
		return -1;
	}
	memcpy(v, image + (addr - IMAGE_BASE), sizeof(*v));
	return 0;
}

static void image_write(uint64_t addr, uint64_t v)
{
	ck_assert_msg(addr >= IMAGE_BASE && addr - IMAGE_BASE <= sizeof(image) - sizeof(v),
	      "the image has no address 0x%llx", (unsigned long long)addr);
	memcpy(image + (addr - IMAGE_BASE), &v, sizeof(v));
}

#include "otel_thread_ctx_inspect_bpf.h"

/* Where things are in the image. */
#define TP (IMAGE_BASE + 0x400)      /* the thread pointer */
#define DTV_ARRAY (IMAGE_BASE + 0x1000)
#define BLOCKS (IMAGE_BASE + 0x1800) /* module i's block: BLOCKS + i * 0x40 */
#define COUNT 5                      /* the DTV's entries (modules 1 .. 5) */
#define SLOT_OFFSET 0x18
/* What module i's slot holds: a record pointer. */
#define RECORD_OF(i) (0x7f0000001000ull + (i) * 0x100)

struct libc_layout {
	const char *name;
	int libc;
	int64_t dtv_at; /* the DTV pointer's place, from the thread pointer */
	uint64_t dtv;   /* what that pointer holds */
	uint64_t count_addr;
	uint32_t entry; /* bytes per entry */
	uint64_t unallocated;
};

static struct libc_layout layout_of(int libc)
{
	struct libc_layout l;

	memset(&l, 0, sizeof(l));
	l.libc = libc;
	if (libc == OTEL_THREAD_CTX_INSPECT_LIBC_GLIBC) {
		l.name = "glibc";
		l.entry = 16;
		l.dtv = DTV_ARRAY + 16; /* &dtv[0]; dtv[-1] is the array's first */
		l.count_addr = DTV_ARRAY;
		l.unallocated = ~0ull; /* TLS_DTV_UNALLOCATED */
#if defined(__x86_64__)
		l.dtv_at = 8;
#else
		l.dtv_at = 0;
#endif
	} else {
		l.name = "musl";
		l.entry = 8;
		l.dtv = DTV_ARRAY; /* entry 0 is the count */
		l.count_addr = DTV_ARRAY;
		l.unallocated = 0;
#if defined(__x86_64__)
		l.dtv_at = 8;
#else
		l.dtv_at = -8;
#endif
	}
	return l;
}

/* A thread whose DTV has COUNT entries, each with a block; the entry past
 * the last holds a block address too, which only a walk past the bound
 * would take. */
static void build(const struct libc_layout *l)
{
	memset(image, 0, sizeof(image));
	image_write(TP + (uint64_t)l->dtv_at, l->dtv);
	image_write(l->count_addr, COUNT);
	for (uint64_t i = 1; i <= COUNT + 1; i++) {
		image_write(l->dtv + i * l->entry, BLOCKS + i * 0x40);
		image_write(BLOCKS + i * 0x40 + SLOT_OFFSET, RECORD_OF(i));
	}
}

/* The walk of otel_thread_ctx_inspect_bpf.h for module `id`, its reads
 * made in the image: the status, and *slot (0 when the walk did not get
 * that far). */
static uint64_t walk_dtv_gen; /* the module's dtv_gen */

static int walk(const struct otel_thread_ctx_bpf_proc *proc, uint32_t id, uint64_t *slot)
{
	struct otel_thread_ctx_bpf_module m;
	struct otel_thread_ctx_bpf_walk w;
	int rc;

	memset(&m, 0, sizeof(m));
	m.kind = OTEL_THREAD_CTX_BPF_KIND_DTV;
	m.module_id = id;
	m.dtv_offset = SLOT_OFFSET;
	m.dtv_gen = walk_dtv_gen;
	rc = otel_thread_ctx_bpf_walk_start(&w, proc, &m, TP);
	for (int n = 0; n < OTEL_THREAD_CTX_BPF_WALK_READS && rc == OTEL_THREAD_CTX_BPF_WALK_READ;
	     n++) {
		uint64_t v = 0;
		int failed = image_read(w.addr, &v);

		rc = otel_thread_ctx_bpf_walk_next(&w, proc, &m, v, failed);
	}
	ck_assert_msg(rc != OTEL_THREAD_CTX_BPF_WALK_READ, "module %u: the walk asks for more than %d reads",
	      id, OTEL_THREAD_CTX_BPF_WALK_READS);
	ck_assert_msg(rc != OTEL_THREAD_CTX_BPF_OK || w.record == RECORD_OF(id),
	      "module %u: record 0x%llx read, not 0x%llx", id, (unsigned long long)w.record,
	      (unsigned long long)RECORD_OF(id));
	*slot = w.slot;
	return rc;
}

static void check_libc(int libc)
{
	struct libc_layout l = layout_of(libc);
	struct otel_thread_ctx_bpf_proc proc;
	uint64_t slot;
	int rc;

	otel__inspect_dtv_layout(libc, &proc);
	ck_assert_msg(proc.dtv_entry_size != 0, "%s: the inspector has no DTV layout", l.name);
	build(&l);
	reads_outside = 0;
	for (uint32_t id = 1; id <= COUNT; id++) {
		rc = walk(&proc, id, &slot);
		ck_assert_msg(rc == OTEL_THREAD_CTX_BPF_OK && slot == BLOCKS + id * 0x40 + SLOT_OFFSET,
		      "%s: module %u of %u: status %d, slot 0x%llx, not 0x%llx", l.name, id, COUNT, rc,
		      (unsigned long long)slot, (unsigned long long)(BLOCKS + id * 0x40 + SLOT_OFFSET));
	}
	/* One past the count: the thread's DTV predates the module. */
	rc = walk(&proc, COUNT + 1, &slot);
	ck_assert_msg(rc == OTEL_THREAD_CTX_BPF_NO_TLS, "%s: module %u of %u: status %d, not NO_TLS", l.name,
	      COUNT + 1, COUNT, rc);
	rc = walk(&proc, 0, &slot);
	ck_assert_msg(rc == OTEL_THREAD_CTX_BPF_NO_TLS, "%s: module 0: status %d, not NO_TLS", l.name, rc);
	ck_assert_msg(reads_outside == 0, "%s: %lu reads outside the image", l.name, reads_outside);

	if (libc == OTEL_THREAD_CTX_INSPECT_LIBC_GLIBC) {
		/* The DTV's generation (dtv[0]) against the module's: an
		 * entry older than the module is no TLS. */
		image_write(l.dtv, 7);
		walk_dtv_gen = 8;
		rc = walk(&proc, 1, &slot);
		ck_assert_msg(rc == OTEL_THREAD_CTX_BPF_NO_TLS, "%s: generation 7 < 8: status %d", l.name, rc);
		walk_dtv_gen = 7;
		rc = walk(&proc, 1, &slot);
		ck_assert_msg(rc == OTEL_THREAD_CTX_BPF_OK, "%s: generation 7 >= 7: status %d", l.name, rc);
		walk_dtv_gen = 0;
	}

	/* A block not allocated yet. */
	image_write(l.dtv + 2 * l.entry, l.unallocated);
	rc = walk(&proc, 2, &slot);
	ck_assert_msg(rc == OTEL_THREAD_CTX_BPF_NO_TLS, "%s: an unallocated block (0x%llx): status %d", l.name,
	      (unsigned long long)l.unallocated, rc);

	/* A count that says fewer modules: the same entry is now past it. */
	image_write(l.count_addr, COUNT - 2);
	rc = walk(&proc, COUNT, &slot);
	ck_assert_msg(rc == OTEL_THREAD_CTX_BPF_NO_TLS, "%s: module %u of %u: status %d, not NO_TLS", l.name,
	      COUNT, COUNT - 2, rc);
	rc = walk(&proc, COUNT - 2, &slot);
	ck_assert_msg(rc == OTEL_THREAD_CTX_BPF_OK, "%s: module %u of %u: status %d", l.name, COUNT - 2,
	      COUNT - 2, rc);

	/* A DTV pointer into unmapped memory, and none. */
	image_write(TP + (uint64_t)l.dtv_at, IMAGE_BASE + sizeof(image) + 0x1000);
	rc = walk(&proc, 1, &slot);
	ck_assert_msg(rc == OTEL_THREAD_CTX_BPF_UNREADABLE, "%s: an unreadable DTV: status %d", l.name, rc);
	image_write(TP + (uint64_t)l.dtv_at, 0);
	rc = walk(&proc, 1, &slot);
	ck_assert_msg(rc == OTEL_THREAD_CTX_BPF_UNREADABLE, "%s: no DTV: status %d", l.name, rc);
	printf("%s: modules 1 to %u of a %u-entry DTV found, %u and 0 not; unallocated blocks and "
	       "unreadable DTVs refused\n",
	       l.name, COUNT, COUNT, COUNT + 1);
}

int main(void)
{
	check_libc(OTEL_THREAD_CTX_INSPECT_LIBC_GLIBC);
	check_libc(OTEL_THREAD_CTX_INSPECT_LIBC_MUSL);
	return 0;
}
