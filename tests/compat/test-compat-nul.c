/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otel_process_ctx_read() and a string value with a NUL byte inside,
 * published with the project's API (which takes counted strings): a C
 * string cannot express it, so the read fails, says why, and returns no
 * strings; without the NUL the same context reads back whole.  The NUL is
 * tried in each place a value can be: one of the seven fields, a further
 * resource attribute, a ProcessContext attribute.
 */
#include <stdio.h>
#include <string.h>

#include "check-lite.h"
#include "otel_thread_ctx_compat.h"
#include "otel_thread_ctx_process.h"

static const char *const seven[] = {
	"deployment.environment.name", "service.instance.id", "service.name",
	"service.version", "telemetry.sdk.language", "telemetry.sdk.version",
	"telemetry.sdk.name",
};

static struct otel_thread_ctx_process_attr str(const char *key, const char *value, size_t len)
{
	struct otel_thread_ctx_process_attr a;

	memset(&a, 0, sizeof(a));
	a.key = key;
	a.type = OTEL_THREAD_CTX_PROCESS_STRING;
	a.string = value;
	a.length = len;
	return a;
}

/* Publishes the seven fields and "extra.res", with the NUL (or not) in
 * resource attribute `at` (8: in the ProcessContext attribute). */
static void publish(int at, bool nul)
{
	struct otel_thread_ctx_process_attr res[8], extra[1];
	struct otel_thread_ctx_process_options o = OTEL_THREAD_CTX_PROCESS_OPTIONS_INIT;
	static const char with[] = "ab\0cd", without[] = "ab-cd";
	const char *v = nul ? with : without;

	for (int i = 0; i < 7; i++)
		res[i] = i == at ? str(seven[i], v, 5) : str(seven[i], "plain", 0);
	res[7] = at == 7 ? str("extra.res", v, 5) : str("extra.res", "plain", 0);
	extra[0] = at == 8 ? str("extra.attr", v, 5) : str("extra.attr", "plain", 0);
	o.attributes = extra;
	o.attribute_count = 1;
	ck_assert(otel_thread_ctx_process_unpublish() == OTEL_THREAD_CTX_OK);
	ck_assert(otel_thread_ctx_process_publish_with(res, 8, &o) == OTEL_THREAD_CTX_OK);
}

int main(void)
{
	for (int at = 0; at <= 8; at++) {
		otel_process_ctx_read_result r;

		publish(at, false);
		r = otel_process_ctx_read();
		ck_assert(r.success);
		if (r.success) {
			const char *s = at < 7 ? (&r.data.deployment_environment_name)[at]
				      : at == 7 ? r.data.resource_attributes[1]
						: r.data.extra_attributes[1];

			ck_assert(s != NULL && strcmp(s, "ab-cd") == 0);
			ck_assert(otel_process_ctx_read_drop(&r));
		}

		publish(at, true);
		r = otel_process_ctx_read();
		ck_assert(!r.success);
		ck_assert(r.error_message != NULL && strstr(r.error_message, "NUL") != NULL);
		ck_assert(r.data.service_name == NULL && r.data.resource_attributes == NULL &&
		      r.data.extra_attributes == NULL);
		if (r.success)
			otel_process_ctx_read_drop(&r);
	}
	ck_assert(otel_thread_ctx_process_unpublish() == OTEL_THREAD_CTX_OK);
	return 0;
}
