/* SPDX-License-Identifier: Apache-2.0 */
/*
 * This project's libraries and the reference implementation's names in one
 * process (project issue 19): a caller written against this project's API
 * and a caller written against the reference's each reach their own
 * implementation, whichever library the loader holds first.
 *
 *   clash linked FIRST
 *       the callers are linked into this program with the libraries, in
 *       the link order meson.build gives; FIRST ("standin" or "otel") is the
 *       library that must come first in the loader's list.
 *   clash dlopen FIRST STANDIN_LIB OTEL_LIB INSPECT_LIB NATIVE_MODULE REFERENCE_MODULE
 *       this program links neither: it dlopen()s the libraries
 *       RTLD_NOW | RTLD_GLOBAL, FIRST's first, then the two callers as
 *       modules (each linked against its own library).
 *
 * In both, the same sequence: the reference caller alone; the native
 * caller publishes; the reference caller runs while the native context is
 * published; the project's reader still finds the native context; the
 * native caller unpublishes; the reference caller runs again.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "compat-util.h"
#include "check-lite.h"

#ifdef CLASH_LINKED
#include "callers.h"
#include "standin.h"
#else
/* The functions of callers.h and standin.h, found with dlsym(). */
static int (*native_publish)(const char *);
static int (*native_check)(const char *);
static int (*native_unpublish)(void);
static int (*reference_caller_run)(const char *);
static int (*standin_calls)(int);
#define STANDIN_PUBLISH 0

static void *open_lib(const char *path, int flags)
{
	void *h = dlopen(path, flags);

	ck_assert_msg(h != NULL, "dlopen %s: %s", path, dlerror());
	return h;
}

static void *sym(void *handle, const char *name)
{
	void *p = dlsym(handle, name);

	ck_assert_msg(p != NULL, "dlsym %s: %s", name, dlerror());
	return p;
}

/* A function pointer from dlsym() (ISO C has no cast between the two). */
#define SYM(dst, handle, name)                                                 \
	do {                                                                   \
		void *sym_ = sym(handle, name);                                \
		memcpy(&(dst), &sym_, sizeof(sym_));                           \
	} while (0)
#endif

#define STANDIN_SONAME "libref-standin.so"
#define OTEL_SONAME "libotel-thread-ctx.so"

static void check_order(const char *first)
{
	int standin = link_position(STANDIN_SONAME);
	int otel = link_position(OTEL_SONAME);

	ck_assert_msg(standin >= 0 && otel >= 0, "both libraries are loaded (stand-in at %d, otel at %d)",
	      standin, otel);
	if (strcmp(first, "standin") == 0)
		ck_assert_msg(standin < otel, "the stand-in comes first (%d, %d)", standin, otel);
	else
		ck_assert_msg(otel < standin, "libotel-thread-ctx comes first (%d, %d)", otel, standin);
	printf("loader order: %s at %d, %s at %d\n", STANDIN_SONAME, standin, OTEL_SONAME, otel);
}

static void run(void)
{
	int rc;

	ck_assert_msg(otel_ctx_mappings() == 0, "no mapping at start");
	rc = reference_caller_run("reference-alone");
	ck_assert_msg(rc == 0, "reference caller alone: check at caller-reference.c:%d", rc);
	ck_assert_msg(standin_calls(STANDIN_PUBLISH) == 1, "the stand-in served the publish");
	ck_assert_msg(otel_ctx_mappings() == 0, "the reference caller mapped nothing");

	rc = native_publish("native");
	ck_assert_msg(rc == 0, "native publish: check at caller-native.c:%d", rc);
	rc = reference_caller_run("reference-beside-native");
	ck_assert_msg(rc == 0, "reference caller beside the native context: caller-reference.c:%d", rc);
	ck_assert_msg(standin_calls(STANDIN_PUBLISH) == 2, "the stand-in served the second publish");
	rc = native_check("native");
	ck_assert_msg(rc == 0, "the native context is intact: caller-native.c:%d", rc);
	rc = native_unpublish();
	ck_assert_msg(rc == 0, "native unpublish: caller-native.c:%d", rc);

	rc = reference_caller_run("reference-after-native");
	ck_assert_msg(rc == 0, "reference caller after the native one: caller-reference.c:%d", rc);
	ck_assert_msg(standin_calls(STANDIN_PUBLISH) == 3, "the stand-in served the third publish");
	ck_assert_msg(otel_ctx_mappings() == 0, "no mapping at the end");
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
#ifdef CLASH_LINKED
	ck_assert_msg(argc == 3 && strcmp(argv[1], "linked") == 0, "usage: clash linked standin|otel");
	check_order(argv[2]);
#else
	void *standin, *module;
	const char *first;

	ck_assert_msg(argc == 8 && strcmp(argv[1], "dlopen") == 0,
	      "usage: clash dlopen standin|otel STANDIN OTEL INSPECT NATIVE REFERENCE");
	first = argv[2];
	if (strcmp(first, "standin") == 0) {
		standin = open_lib(argv[3], RTLD_NOW | RTLD_GLOBAL);
		open_lib(argv[4], RTLD_NOW | RTLD_GLOBAL);
		open_lib(argv[5], RTLD_NOW | RTLD_GLOBAL);
	} else {
		open_lib(argv[4], RTLD_NOW | RTLD_GLOBAL);
		open_lib(argv[5], RTLD_NOW | RTLD_GLOBAL);
		standin = open_lib(argv[3], RTLD_NOW | RTLD_GLOBAL);
	}
	check_order(first);
	SYM(standin_calls, standin, "standin_calls");
	module = open_lib(argv[6], RTLD_NOW | RTLD_LOCAL);
	SYM(native_publish, module, "native_publish");
	SYM(native_check, module, "native_check");
	SYM(native_unpublish, module, "native_unpublish");
	module = open_lib(argv[7], RTLD_NOW | RTLD_LOCAL);
	SYM(reference_caller_run, module, "reference_caller_run");
#endif
	run();
	printf("ok: each caller reached its own implementation\n");
	return 0;
}
