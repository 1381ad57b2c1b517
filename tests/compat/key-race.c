/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Two threads publishing the same attribute_key_map through
 * libotel-thread-ctx-compat at once: the one that reads the key registry's
 * count just before the other registers the map's names finds them
 * registered where the map puts them, and publishes.  (It was refused with
 * "attribute_key_map disagrees with the key registry", once in an aarch64
 * run.)  The interleaving is made certain here: this executable defines
 * otel_thread_ctx_key_count(), which the compat library calls through its
 * PLT (shared linkage only), and registers the map's first name right after
 * the real count is read, as the other thread would.  A name registered at
 * another index than the map's must still be refused.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "otel_thread_ctx.h"
#include "otel_thread_ctx_compat.h"

static const char *race_name; /* registered after the count is read, once */

/* The library's own otel_thread_ctx_key_count (dlsym gives an object
 * pointer; ISO C converts it through memcpy only). */
static unsigned int real_count(void)
{
	void *sym = dlsym(RTLD_NEXT, "otel_thread_ctx_key_count");
	unsigned int (*fn)(void);

	memcpy(&fn, &sym, sizeof(fn));
	return fn();
}

unsigned int otel_thread_ctx_key_count(void)
{
	unsigned int n = real_count();
	unsigned int at;

	if (race_name != NULL) {
		const char *name = race_name;

		race_name = NULL;
		if (otel_thread_ctx_key_register(name, &at) != OTEL_THREAD_CTX_OK)
			fprintf(stderr, "registering %s failed\n", name);
	}
	return n;
}

static int publish(const char **map, const char *version)
{
	const otel_thread_ctx_config_data config = { "tlsdesc_v1_dev", map };
	otel_process_ctx_data d = {
		"env", "instance", "service", version, "c", "0.1.0", "compat-test", NULL, NULL, &config,
	};
	otel_process_ctx_result r = otel_process_ctx_publish(&d);

	if (!r.success)
		printf("publish %s: %s\n", version, r.error_message);
	return r.success;
}

int main(void)
{
	static const char *map[] = { "http.route", "user.id", NULL };
	static const char *other[] = { "http.route", "user.id", "tenant", NULL };
	unsigned int at;
	int failures = 0;

	if (dlsym(RTLD_NEXT, "otel_thread_ctx_key_count") == NULL) {
		printf("skip: otel_thread_ctx_key_count is not interposable (a static link)\n");
		return 77;
	}
	/* The other publisher registers "http.route" at 0, where the map
	 * puts it, between the count (0) and the look-up. */
	race_name = "http.route";
	if (!publish(map, "1")) {
		printf("FAIL: a name registered where the map puts it, meanwhile, was refused\n");
		failures++;
	}
	if (otel_thread_ctx_key_find("user.id", &at) != OTEL_THREAD_CTX_OK || at != 1) {
		printf("FAIL: user.id is not at index 1\n");
		failures++;
	}
	/* "tenant" registered meanwhile at 3, after "elsewhere" took 2: the
	 * map wants it at 2, so the publication is refused. */
	if (otel_thread_ctx_key_register("elsewhere", &at) != OTEL_THREAD_CTX_OK || at != 2) {
		printf("FAIL: registering elsewhere gave %u\n", at);
		failures++;
	}
	race_name = "tenant";
	if (publish(other, "2")) {
		printf("FAIL: a name registered at another index than the map's was accepted\n");
		failures++;
	}
	otel_process_ctx_drop_current();
	if (failures == 0)
		printf("OK: the same map registered meanwhile is accepted, a name elsewhere refused\n");
	return failures ? 1 : 0;
}
