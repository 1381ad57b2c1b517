/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A writer of thread contexts that does not use this project's code, as
 * another implementation of OTEP 4947 and 4719 would be: its own slot (a
 * TLS variable of the executable), its own records and its own process
 * context (a memfd with the header and a protobuf payload encoded here).
 * Each mode gets one thing wrong, or nothing ("good"), for
 * otel-thread-ctx-check --pid to find (doctor.py).
 *
 *   usage: foreign-writer MODE
 *
 * Two worker threads publish a record each; the main thread publishes
 * nothing.  It prints "ready" once everything is published and exits when
 * its standard input closes.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* The slot, as any writer defines it: exported where the build asks. */
__attribute__((visibility("default"))) __thread const void *otel_thread_ctx_v1;

static const char *mode;

static int is(const char *m)
{
	return strcmp(mode, m) == 0;
}

/* --- The process context ---------------------------------------------------- */

static size_t varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	do {
		p[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v != 0);
	return n;
}

/* A length-delimited field: tag, length, bytes. */
static size_t field(uint8_t *out, unsigned int number, const void *data, size_t n)
{
	size_t k = varint(out, (uint64_t)number << 3 | 2);

	k += varint(out + k, n);
	memcpy(out + k, data, n);
	return k + n;
}

/* KeyValue { key, value: AnyValue (already encoded) }. */
static size_t key_value(uint8_t *out, const char *key, const uint8_t *any, size_t any_len)
{
	size_t k = field(out, 1, key, strlen(key));

	return k + field(out + k, 2, any, any_len);
}

/* AnyValue { string_value }. */
static size_t any_string(uint8_t *out, const char *s)
{
	return field(out, 1, s, strlen(s));
}

static size_t payload(uint8_t *out)
{
	uint8_t any[512], kv[1024], values[512], resource[1024];
	size_t n = 0, a, k, v = 0, r;

	/* resource (1): Resource { attributes (1): service.name }. */
	a = any_string(any, "foreign-service");
	k = key_value(kv, "service.name", any, a);
	r = field(resource, 1, kv, k);
	n += field(out + n, 1, resource, r);
	/* attributes (2): the schema version and the key map. */
	a = any_string(any, "tlsdesc_v1_dev");
	k = key_value(kv, "threadlocal.schema_version", any, a);
	n += field(out + n, 2, kv, k);
	{
		uint8_t one[64], array[512];
		size_t o = any_string(one, "http.route"), arr;

		v += field(values + v, 1, one, o);
		arr = field(array, 5, values, v); /* AnyValue { array_value (5) } */
		k = key_value(kv, "threadlocal.attribute_key_map", array, arr);
		n += field(out + n, 2, kv, k);
	}
	return n;
}

/* Publishes a process context in a memfd named `name`. */
static void publish_process_context(const char *name)
{
	size_t size = 128 * 1024;
	int fd = memfd_create(name, MFD_CLOEXEC);
	uint8_t *m;
	uint32_t version = 2, payload_size;
	uint64_t at, now;
	struct timespec ts;

	if (fd < 0 || ftruncate(fd, (off_t)size) != 0) {
		perror("memfd");
		exit(1);
	}
	m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	payload_size = (uint32_t)payload(m + 32);
	if (is("big-payload"))
		payload_size = 70000; /* the bytes are there; the size is too large */
	at = (uint64_t)(uintptr_t)(m + 32);
	memcpy(m + 8, &version, 4);
	memcpy(m + 12, &payload_size, 4);
	memcpy(m + 24, &at, 8);
	clock_gettime(CLOCK_BOOTTIME, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	memcpy(m + 16, &now, 8);
	memcpy(m, "OTEL_CTX", 8);
}

/* --- Thread records --------------------------------------------------------- */

static uint8_t records[2][1024] __attribute__((aligned(16)));
static pthread_barrier_t ready;

static void *worker(void *arg)
{
	int i = (int)(intptr_t)arg;
	uint8_t *r = records[i] + (is("misaligned") ? 1 : 0);
	uint8_t trace[16], span[8];
	uint16_t size = 8;
	const char *value = "GET /a";

	for (int b = 0; b < 16; b++)
		trace[b] = (uint8_t)(0x10 * (i + 1) + b);
	for (int b = 0; b < 8; b++)
		span[b] = (uint8_t)(0xa0 + b);
	if (is("span-only"))
		memset(trace, 0, 16);
	if (is("flags-no-ids")) {
		memset(trace, 0, 16);
		memset(span, 0, 8);
	}
	memcpy(r, trace, 16);
	memcpy(r + 16, span, 8);
	r[24] = is("valid0") ? 0 : 1;
	r[25] = 1; /* sampled */
	/* One attribute: key 0 ("http.route"), 6 bytes. */
	r[28] = is("key-past-map") ? 5 : 0;
	r[29] = (uint8_t)strlen(value);
	memcpy(r + 30, value, strlen(value));
	if (is("attr-overrun"))
		r[29] = 40; /* the entry claims 40 bytes; attrs_data_size says 8 */
	memcpy(r + 26, &size, 2);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	otel_thread_ctx_v1 = r;
	pthread_barrier_wait(&ready);
	for (;;)
		pause();
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[2];
	char line[16];

	if (argc != 2) {
		fprintf(stderr, "usage: foreign-writer MODE\n");
		return 2;
	}
	mode = argv[1];
	if (is("misnamed"))
		publish_process_context("MY_OTEL_CTX");
	else
		publish_process_context("OTEL_CTX");
	if (is("two-contexts"))
		publish_process_context("OTEL_CTX");
	pthread_barrier_init(&ready, NULL, 3);
	for (int i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i) != 0)
			return 1;
	pthread_barrier_wait(&ready);
	printf("ready\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin) != NULL)
		;
	return 0;
}
