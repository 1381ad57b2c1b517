/* SPDX-License-Identifier: Apache-2.0 */
/* A module that defines the slot but has no code reaching it: no dynamic
 * relocation against it tells a reader where it is in a thread. */
__attribute__((visibility("default"))) __thread const void *otel_thread_ctx_v1;
