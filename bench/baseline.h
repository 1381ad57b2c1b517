/* SPDX-License-Identifier: Apache-2.0 */
/* The baseline libraries built from bench/baseline.c. */
#ifndef OTEL_BENCH_BASELINE_H
#define OTEL_BENCH_BASELINE_H

/* Each swap stores `value` in the library's thread-local pointer and
 * returns what it held; each nop returns `value`. */
void *bench_ie_swap(void *value);
void *bench_desc_swap(void *value);
void *bench_gd_swap(void *value);
/* The same swap on otel_thread_ctx_v1, through the library's access
 * sequence (bench/baseline-own.c). */
void *bench_own_swap(void *value);
void *bench_ie_nop(void *value);
void *bench_desc_nop(void *value);
void *bench_gd_nop(void *value);

#endif /* OTEL_BENCH_BASELINE_H */
