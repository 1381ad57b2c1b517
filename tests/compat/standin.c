/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The stand-in for the reference implementation: a shared library that
 * exports the reference's four functions with their signatures
 * (reference/otel_process_ctx.h), built with default visibility as the
 * reference's sources are.  It publishes nothing: it counts the calls and
 * keeps the last service name, which is all the tests need to tell which
 * implementation a caller reached.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otel_process_ctx.h"
#include "standin.h"

static int calls[STANDIN_FUNCTIONS];
static char service_name[256];
static bool published;

int standin_calls(enum standin_function which)
{
	return calls[which];
}

const char *standin_service_name(void)
{
	return service_name;
}

otel_process_ctx_result otel_process_ctx_publish(const otel_process_ctx_data *data)
{
	otel_process_ctx_result r = { false, "stand-in: data is NULL" };

	calls[STANDIN_PUBLISH]++;
	if (data == NULL || data->service_name == NULL)
		return r;
	snprintf(service_name, sizeof(service_name), "%s", data->service_name);
	published = true;
	r.success = true;
	r.error_message = NULL;
	return r;
}

bool otel_process_ctx_drop_current(void)
{
	calls[STANDIN_DROP_CURRENT]++;
	published = false;
	return true;
}

otel_process_ctx_read_result otel_process_ctx_read(void)
{
	otel_process_ctx_read_result r;

	calls[STANDIN_READ]++;
	memset(&r, 0, sizeof(r));
	if (!published) {
		r.error_message = "stand-in: nothing published";
		return r;
	}
	r.data.service_name = strdup(service_name);
	r.success = r.data.service_name != NULL;
	if (!r.success)
		r.error_message = "stand-in: out of memory";
	return r;
}

bool otel_process_ctx_read_drop(otel_process_ctx_read_result *result)
{
	calls[STANDIN_READ_DROP]++;
	if (result == NULL || !result->success)
		return false;
	free((void *)result->data.service_name);
	memset(result, 0, sizeof(*result));
	result->error_message = "stand-in: dropped";
	return true;
}
