/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The signal storm.  One thread publishes a new record in a tight loop, by
 * every path the API has (update of the attached context, update_attach of
 * another, update then attach, detach then update_attach); each record
 * describes its own sequence number.  Another thread interrupts it with
 * signals many thousands of times; the handler reads the record through
 * otel_thread_ctx_v1, exactly as a sampling profiler does, and checks that it
 * is either absent or the complete record of one sequence number.
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "common.h"

#define KEY_SEQ 1
#define KEY_PAD 2
#define KEY_EXTRA 9

static uint64_t span_of(uint64_t n)
{
	return (n * 0x9e3779b97f4a7c15u) | 1;
}

/* The record for sequence number n, built byte by byte, independently of
 * the library. */
static void expected(uint64_t n, struct otel_thread_ctx_record *r)
{
	uint64_t inv = ~n, span = span_of(n);
	char seq[24];
	int len = snprintf(seq, sizeof(seq), "%llu", (unsigned long long)n);
	size_t at = 0, pad = n % 97;

	memset(r, 0, sizeof(*r));
	memcpy(r->trace_id, &n, 8);
	memcpy(r->trace_id + 8, &inv, 8);
	memcpy(r->span_id, &span, 8);
	r->valid = 1;
	r->trace_flags = n & 1;
	r->attrs_data[at++] = KEY_SEQ;
	r->attrs_data[at++] = (uint8_t)len;
	memcpy(r->attrs_data + at, seq, (size_t)len);
	at += (size_t)len;
	r->attrs_data[at++] = KEY_PAD;
	r->attrs_data[at++] = (uint8_t)pad;
	for (size_t i = 0; i < pad; i++)
		r->attrs_data[at++] = (uint8_t)('a' + (n + i) % 26);
	if (n % 3 == 0) {
		r->attrs_data[at++] = KEY_EXTRA;
		r->attrs_data[at++] = 5;
		memcpy(r->attrs_data + at, "third", 5);
		at += 5;
	}
	r->attrs_data_size = (uint16_t)at;
}

/* The same record, through the API, as a draft of ctx. */
static int write_draft(otel_thread_ctx *ctx, uint64_t n)
{
	struct otel_thread_ctx_record r;
	int rc;

	expected(n, &r);
	rc = otel_thread_ctx_set_ids(ctx, r.trace_id, r.span_id, r.trace_flags);
	if (rc == 0)
		rc = otel_thread_ctx_set_attr(ctx, KEY_SEQ, r.attrs_data + 2, r.attrs_data[1]);
	if (rc == 0) {
		size_t at = 2u + r.attrs_data[1];

		rc = otel_thread_ctx_set_attr(ctx, KEY_PAD, r.attrs_data + at + 2,
					      r.attrs_data[at + 1]);
	}
	if (rc == 0)
		rc = n % 3 == 0 ? otel_thread_ctx_set_attr(ctx, KEY_EXTRA, "third", 5)
				: otel_thread_ctx_remove_attr(ctx, KEY_EXTRA);
	return rc;
}

/* Counted by the handler, on the writer thread; polled by the sender. */
static unsigned long reads_null, reads_invalid, reads_ok, reads_torn;
static uint64_t last_torn_seq;

static void count(unsigned long *counter)
{
	__atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
}

static unsigned long load(const unsigned long *counter)
{
	return __atomic_load_n(counter, __ATOMIC_RELAXED);
}

static void on_signal(int sig)
{
	const struct otel_thread_ctx_record *r = otel_thread_ctx_v1;
	struct otel_thread_ctx_record copy, want;
	uint64_t n;

	(void)sig;
	if (r == NULL) {
		count(&reads_null);
		return;
	}
	memcpy(&copy, r, offsetof(struct otel_thread_ctx_record, attrs_data));
	if (copy.valid != 1) {
		count(&reads_invalid);
		return;
	}
	if (copy.attrs_data_size > OTEL_THREAD_CTX_ATTRS_MAX) {
		count(&reads_torn);
		return;
	}
	memcpy(copy.attrs_data, r->attrs_data, copy.attrs_data_size);
	memcpy(&n, copy.trace_id, 8);
	expected(n, &want);
	if (memcmp(&copy, &want, offsetof(struct otel_thread_ctx_record, attrs_data)) != 0 ||
	    memcmp(copy.attrs_data, want.attrs_data, want.attrs_data_size) != 0) {
		count(&reads_torn);
		last_torn_seq = n;
		return;
	}
	count(&reads_ok);
}

static volatile sig_atomic_t stop;

struct writer_result {
	uint64_t records;
	int rc;
};

static void *writer(void *arg)
{
	struct writer_result *res = arg;
	otel_thread_ctx *cur = NULL, *other = NULL, *prev;
	uint64_t n = 1;
	int rc = otel_thread_ctx_create(&cur);

	if (rc == 0)
		rc = otel_thread_ctx_create(&other);
	if (rc == 0)
		rc = write_draft(cur, n);
	if (rc == 0)
		rc = otel_thread_ctx_update_attach(cur, &prev);
	while (rc == 0 && !stop) {
		n++;
		switch (n % 5) {
		case 0:
		case 2: /* a new record for the attached context */
			rc = write_draft(cur, n);
			if (rc == 0)
				rc = otel_thread_ctx_update(cur);
			break;
		case 1: /* switch to the other context and its new data at once */
			rc = write_draft(other, n);
			if (rc == 0)
				rc = otel_thread_ctx_update_attach(other, &prev);
			other = prev, cur = otel_thread_ctx_current();
			break;
		case 3: /* commit while detached, then attach */
			rc = write_draft(other, n);
			if (rc == 0)
				rc = otel_thread_ctx_update(other);
			if (rc == 0)
				rc = otel_thread_ctx_attach(other, &prev);
			other = prev, cur = otel_thread_ctx_current();
			break;
		case 4: /* unpublish for a moment */
			rc = otel_thread_ctx_detach(&prev);
			if (rc == 0)
				rc = write_draft(cur, n);
			if (rc == 0)
				rc = otel_thread_ctx_update_attach(cur, &prev);
			break;
		}
	}
	if (rc == 0)
		rc = otel_thread_ctx_detach(&prev);
	otel_thread_ctx_destroy(cur);
	otel_thread_ctx_destroy(other);
	res->records = n;
	res->rc = rc;
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

START_TEST(no_torn_reads_under_a_signal_storm)
{
	unsigned long want = env_count("OTEL_TEST_SIGNALS", 100000);
	struct writer_result res = { 0, -1 };
	struct sigaction sa;
	unsigned long sent = 0, handled;
	pthread_t t;
	double start;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);

	ck_assert_int_eq(pthread_create(&t, NULL, writer, &res), 0);
	start = now_s();
	for (;;) {
		handled = load(&reads_null) + load(&reads_invalid) + load(&reads_ok) +
			  load(&reads_torn);
		if (handled >= want || now_s() - start > 120)
			break;
		ck_assert_int_eq(pthread_kill(t, SIGUSR1), 0);
		sent++;
	}
	stop = 1;
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	signal(SIGUSR1, SIG_DFL);

	printf("signal-storm: %lu signals sent, %lu reads: %lu complete, %lu empty, "
	       "%lu invalid, %lu torn; %llu records published\n",
	       sent, reads_ok + reads_null + reads_invalid + reads_torn, reads_ok, reads_null,
	       reads_invalid, reads_torn, (unsigned long long)res.records);
	ck_assert_msg(res.rc == 0, "writer failed: %s", otel_thread_ctx_strerror(res.rc));
	ck_assert_msg(reads_torn == 0, "%lu torn reads (last: sequence %llu)", reads_torn,
		      (unsigned long long)last_torn_seq);
	/* Pointer swap with two records: a reader never finds valid != 1. */
	ck_assert_uint_eq(reads_invalid, 0);
	/* The storm must have landed inside the writer's work. */
	ck_assert_uint_ge(reads_ok, want / 4);
	ck_assert_uint_gt(res.records, 1000);
}
END_TEST

Suite *test_suite(void)
{
	const struct test_case cases[] = {
		{ "storm", no_torn_reads_under_a_signal_storm },
	};

	return MAKE_SUITE("signal-storm", cases, 300);
}
