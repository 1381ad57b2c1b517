/* SPDX-License-Identifier: Apache-2.0 */
/* Runs the README's example (readme-example.py extracts it as printed): it
 * returns 0, registers its key first, and leaves nothing published. */
#include <stdio.h>
#include <string.h>

#include <otel_thread_ctx.h>

int handle_request(void);

int main(void)
{
	unsigned int index;
	int rc = handle_request();

	if (rc != OTEL_THREAD_CTX_OK) {
		printf("FAIL: handle_request() returned %d (%s)\n", rc, otel_thread_ctx_strerror(rc));
		return 1;
	}
	if (otel_thread_ctx_key_find("http.route", &index) != OTEL_THREAD_CTX_OK || index != 0) {
		printf("FAIL: the example's key is not registered at index 0\n");
		return 1;
	}
	if (otel_thread_ctx_v1 != NULL) {
		printf("FAIL: the example left something published\n");
		return 1;
	}
	printf("ok: the README's example runs as printed\n");
	return 0;
}
