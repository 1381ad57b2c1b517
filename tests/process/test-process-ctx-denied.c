/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The fallbacks, on the library's real code paths: a seccomp filter, set in
 * a child of each test, makes the kernel refuse what an older or locked-down
 * system refuses: memfd_create() with MFD_NOEXEC_SEAL (kernels before 6.3),
 * memfd_create() at all, naming anonymous memory, process_vm_readv().
 * Skipped (77) where seccomp filters cannot be installed (qemu-user), which
 * a child made without the library's fork handlers finds out (probe.h): a
 * crash anywhere, the probe's included, fails the test.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "pctx.h"
#include "probe.h"

#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008u
#endif
#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#define PR_SET_VMA_ANON_NAME 0
#endif

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#endif

static struct published_ctx before, after;

/* One refusal: system call `nr` fails with `err`, always (arg < 0), or when
 * the low 32 bits of argument `arg` have a bit of `mask` set, or (mask 0)
 * equal `equal`. */
struct refusal {
	long nr;
	int arg;
	uint32_t mask, equal;
	int err;
};

static int refuse(const struct refusal *r, size_t n)
{
	struct sock_filter f[64];
	struct sock_fprog prog;
	unsigned short k = 0;

	f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, arch));
	f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 1, 0);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	for (size_t i = 0; i < n; i++) {
		uint32_t ret = SECCOMP_RET_ERRNO | ((uint32_t)r[i].err & SECCOMP_RET_DATA);

		f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
						      offsetof(struct seccomp_data, nr));
		if (r[i].arg < 0) {
			f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
							      (uint32_t)r[i].nr, 0, 1);
		} else {
			f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
							      (uint32_t)r[i].nr, 0, 3);
			/* Low word of a 64-bit argument (little-endian). */
			f[k++] = (struct sock_filter)BPF_STMT(
				BPF_LD | BPF_W | BPF_ABS,
				(uint32_t)(offsetof(struct seccomp_data, args) + 8 * (size_t)r[i].arg));
			if (r[i].mask != 0)
				f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K,
								      r[i].mask, 0, 1);
			else
				f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
								      r[i].equal, 0, 1);
		}
		f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, ret);
	}
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	prog.len = k;
	prog.filter = f;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

static const struct refusal no_noexec_seal = { __NR_memfd_create, 1, MFD_NOEXEC_SEAL, 0, EINVAL };
static const struct refusal no_memfd = { __NR_memfd_create, -1, 0, 0, ENOSYS };
static const struct refusal no_naming = { __NR_prctl, 0, 0, PR_SET_VMA, EINVAL };
static const struct refusal no_vm_read = { __NR_process_vm_readv, -1, 0, 0, EPERM };

/* Can this kernel name anonymous memory (CONFIG_ANON_VMA_NAME, 5.17+)? */
static int kernel_names_anonymous_memory(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	void *p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int ok;

	ck_assert_ptr_ne(p, MAP_FAILED);
	ok = prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, (unsigned long)p, (unsigned long)page,
		   (unsigned long)"probe") == 0;
	munmap(p, page);
	return ok;
}

static const struct otel_thread_ctx_process_attr *service(void)
{
	static struct otel_thread_ctx_process_attr a;

	a = str_attr("service.name", "locked-down");
	return &a;
}

static int read_back_ok(const void *mapping)
{
	struct otel_thread_ctx_inspect_process_snapshot *s = NULL;

	CHECK_RC(otel_thread_ctx_inspect_process_read(0, 0, &s), OTEL_THREAD_CTX_OK);
	CHECK(s->mapping_address == (uintptr_t)mapping);
	CHECK(strcmp(s->schema_version, "tlsdesc_v1_dev") == 0);
	CHECK(strcmp(resource_attr(s, "service.name")->string, "locked-down") == 0);
	CHECK(key_map_is_registry(s));
	otel_thread_ctx_inspect_process_snapshot_free(s);
	return 0;
}

static int noexec_seal_refused(void *arg)
{
	struct otel_thread_ctx_process_info info;
	char line[512];
	int fd;

	(void)arg;
	CHECK(refuse(&no_noexec_seal, 1) == 0);
	/* The filter works: the first attempt of the library fails. */
	fd = memfd_create("probe", MFD_CLOEXEC | MFD_NOEXEC_SEAL);
	CHECK(fd < 0 && errno == EINVAL);
	CHECK_RC(otel_thread_ctx_process_publish(service(), 1), OTEL_THREAD_CTX_OK);
	CHECK_RC(otel_thread_ctx_process_query(&info), OTEL_THREAD_CTX_OK);
	CHECK(info.published && info.memfd);
	maps_line(info.mapping, line, sizeof(line));
	CHECK(strstr(line, "/memfd:OTEL_CTX") != NULL);
	return read_back_ok(info.mapping);
}

START_TEST(without_noexec_seal_the_memfd_is_made_without_it)
{
	run_isolated(noexec_seal_refused, NULL);
}
END_TEST

static int memfd_refused(void *arg)
{
	int naming = *(const int *)arg;
	struct otel_thread_ctx_process_info info;
	char line[512], flags[512];
	int rc;

	CHECK(refuse(&no_memfd, 1) == 0);
	CHECK(memfd_create("probe", MFD_CLOEXEC) < 0 && errno == ENOSYS);
	rc = otel_thread_ctx_process_publish(service(), 1);
	CHECK_RC(otel_thread_ctx_process_query(&info), OTEL_THREAD_CTX_OK);
	if (!naming) {
		/* Neither memfd nor a name: nothing a reader could find. */
		printf("this kernel cannot name anonymous memory: expecting EMAP\n");
		CHECK_RC(rc, OTEL_THREAD_CTX_EMAP);
		CHECK(!info.published);
		CHECK(otel_ctx_mappings() == 0);
		return 0;
	}
	printf("anonymous memory can be named: expecting [anon:OTEL_CTX]\n");
	CHECK_RC(rc, OTEL_THREAD_CTX_OK);
	CHECK(info.published && !info.memfd);
	maps_line(info.mapping, line, sizeof(line));
	CHECK(strstr(line, " [anon:OTEL_CTX]") != NULL);
	vm_flags(info.mapping, flags, sizeof(flags));
	CHECK(strstr(flags, " dc") != NULL);
	return read_back_ok(info.mapping);
}

START_TEST(without_memfd_the_mapping_is_named_anonymous_memory)
{
	int naming = kernel_names_anonymous_memory();

	run_isolated(memfd_refused, &naming);
}
END_TEST

static int memfd_and_naming_refused(void *arg)
{
	const struct refusal both[] = { no_memfd, no_naming };
	struct otel_thread_ctx_inspect_process_snapshot *s = NULL;
	struct otel_thread_ctx_process_info info;
	unsigned int idx;

	(void)arg;
	CHECK(refuse(both, 2) == 0);
	CHECK_RC(otel_thread_ctx_process_publish(service(), 1), OTEL_THREAD_CTX_EMAP);
	CHECK_RC(otel_thread_ctx_process_query(&info), OTEL_THREAD_CTX_OK);
	CHECK(!info.published);
	CHECK(otel_ctx_mappings() == 0);
	CHECK_RC(otel_thread_ctx_process_update(service(), 1), OTEL_THREAD_CTX_ENOTPUBLISHED);
	CHECK_RC(otel_thread_ctx_inspect_process_read(0, 0, &s), OTEL_THREAD_CTX_ENOENT);
	/* The registry is unaffected, and registering publishes nothing. */
	CHECK_RC(otel_thread_ctx_key_register("tag.denied.key", &idx), OTEL_THREAD_CTX_OK);
	CHECK(strcmp(otel_thread_ctx_key_name(idx), "tag.denied.key") == 0);
	/* Trying again fails the same way, without leaking anything. */
	CHECK_RC(otel_thread_ctx_process_publish(service(), 1), OTEL_THREAD_CTX_EMAP);
	return 0;
}

START_TEST(without_memfd_and_naming_publish_is_EMAP)
{
	run_isolated(memfd_and_naming_refused, NULL);
}
END_TEST

/* Published, then memfd and naming go away: a forked child cannot make a
 * mapping, so it publishes nothing; the parent's publication stays. */
static int child_without_mapping(void *arg)
{
	const struct refusal both[] = { no_memfd, no_naming };
	struct otel_thread_ctx_process_info info;
	int status;
	pid_t pid;

	(void)arg;
	CHECK_RC(otel_thread_ctx_process_publish(service(), 1), OTEL_THREAD_CTX_OK);
	snapshot_own(&before);
	CHECK(refuse(both, 2) == 0);
	fflush(NULL);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		if (otel_thread_ctx_process_query(&info) != OTEL_THREAD_CTX_OK || info.published)
			_exit(1);
		if (otel_ctx_mappings() != 0)
			_exit(2);
		if (otel_thread_ctx_process_update(service(), 1) != OTEL_THREAD_CTX_ENOTPUBLISHED)
			_exit(3);
		if (otel_thread_ctx_process_publish(service(), 1) != OTEL_THREAD_CTX_EMAP)
			_exit(4);
		_exit(0);
	}
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	snapshot_own(&after);
	CHECK(same_publication(&before, &after));
	/* Updating needs no new mapping: still works here. */
	CHECK_RC(otel_thread_ctx_process_update(service(), 1), OTEL_THREAD_CTX_OK);
	return read_back_ok(before.info.mapping);
}

START_TEST(a_child_that_cannot_map_publishes_nothing)
{
	run_isolated(child_without_mapping, NULL);
}
END_TEST

/* process_vm_readv() refused: the reader copies its own process's mapping
 * directly, under the lock, and nothing else. */
static int vm_read_refused(void *arg)
{
	struct otel_thread_ctx_inspect_process_snapshot *s = NULL;
	struct otel_thread_ctx_process_header *foreign;
	struct otel_thread_ctx_process_info info;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	static const char payload[] = "";
	int fd, status;
	pid_t pid;

	(void)arg;
	CHECK_RC(otel_thread_ctx_process_publish(service(), 1), OTEL_THREAD_CTX_OK);
	CHECK_RC(otel_thread_ctx_process_query(&info), OTEL_THREAD_CTX_OK);
	/* Another publisher's valid mapping, created later (lower, so found
	 * first): it cannot be copied safely without process_vm_readv(). */
	fd = memfd_create("OTEL_CTX", MFD_CLOEXEC);
	CHECK(fd >= 0 && ftruncate(fd, (off_t)page) == 0);
	foreign = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	CHECK(foreign != MAP_FAILED);
	memcpy(foreign->signature, "OTEL_CTX", 8);
	foreign->version = 2;
	foreign->payload_size = 1;
	foreign->payload = (uint64_t)(uintptr_t)payload;
	foreign->monotonic_published_at_ns = 1;

	CHECK(refuse(&no_vm_read, 1) == 0);
	CHECK(read_back_ok(info.mapping) == 0);
	CHECK_RC(otel_thread_ctx_inspect_process_read_at(0, (uintptr_t)info.mapping, 0, &s), OTEL_THREAD_CTX_OK);
	CHECK(s->retries == 0);
	otel_thread_ctx_inspect_process_snapshot_free(s);
	CHECK_RC(otel_thread_ctx_inspect_process_read_at(0, (uintptr_t)foreign, 0, &s), OTEL_THREAD_CTX_EPERM);
	/* Another process cannot be read at all. */
	fflush(NULL);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		pause();
		_exit(0);
	}
	CHECK_RC(otel_thread_ctx_inspect_process_read(pid, 0, &s), OTEL_THREAD_CTX_EPERM);
	kill(pid, SIGKILL);
	CHECK(waitpid(pid, &status, 0) == pid);
	/* Unpublished, only the foreign one is left: EPERM, not a guess. */
	CHECK_RC(otel_thread_ctx_process_unpublish(), OTEL_THREAD_CTX_OK);
	CHECK_RC(otel_thread_ctx_inspect_process_read(0, 0, &s), OTEL_THREAD_CTX_EPERM);
	return 0;
}

START_TEST(without_process_vm_readv_the_own_mapping_is_copied_directly)
{
	run_isolated(vm_read_refused, NULL);
}
END_TEST

/* Whether seccomp filters work here: 0, or the errno with which a child
 * (made without the library, probe.h) is refused an allow-all one. */
static int seccomp_refusal(void)
{
	pid_t pid = probe_fork();

	if (pid == 0)
		_exit(refuse(NULL, 0) == 0 ? 0 : errno);
	return probe_wait(pid, "whether seccomp filters can be installed");
}

Suite *test_suite(void)
{
	const struct test_case cases[] = {
		{ "without_noexec_seal_the_memfd_is_made_without_it",
		  without_noexec_seal_the_memfd_is_made_without_it },
		{ "without_memfd_the_mapping_is_named_anonymous_memory",
		  without_memfd_the_mapping_is_named_anonymous_memory },
		{ "without_memfd_and_naming_publish_is_EMAP", without_memfd_and_naming_publish_is_EMAP },
		{ "a_child_that_cannot_map_publishes_nothing",
		  a_child_that_cannot_map_publishes_nothing },
		{ "without_process_vm_readv_the_own_mapping_is_copied_directly",
		  without_process_vm_readv_the_own_mapping_is_copied_directly },
	};

	int refused = seccomp_refusal();

	if (refused != 0) {
		printf("SKIP: seccomp filters cannot be installed here (qemu-user?): %s\n",
		       strerror(refused));
		exit(77);
	}
	return MAKE_SUITE("process-ctx-denied", cases, 60);
}
