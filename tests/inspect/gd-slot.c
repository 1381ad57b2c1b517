/* SPDX-License-Identifier: Apache-2.0 */
/* A module that only defines the slot and reaches it the legacy
 * general-dynamic way (compiled with -ftls-model=global-dynamic and, where
 * the compiler has the choice, the traditional TLS dialect), so that the
 * dynamic linker resolves DTPMOD64 and DTPOFF64 relocations against it.
 * The inspector must then find the slot through the DTV. */
#include <stddef.h>

__attribute__((visibility("default"))) __thread const void *otel_thread_ctx_v1;

__attribute__((visibility("default"))) const void **gd_slot_address(void)
{
	return &otel_thread_ctx_v1;
}
