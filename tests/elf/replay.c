/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Runs a fuzz target (fuzz-elf.c, tests/inspect/fuzz-record.c) on inputs,
 * without libFuzzer, for every compiler and configuration: the seed corpora
 * and hostile.py's files go through the code under test in the gcc, musl,
 * aarch64, sanitizer and valgrind builds too.
 *
 *   replay FILE|DIR...
 *
 * A directory stands for the files in it, in name order.  Each input is
 * passed in a heap block of exactly its size, so that a read past its end
 * is one AddressSanitizer or valgrind reports.  Exits 0 when every input
 * was handled (a bad input is handled when it is refused cleanly), 2 when
 * an input cannot be read or there is none; a bug crashes or aborts.
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* Defined by the targets that need to set something up once. */
__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Reads `path` whole into a block of its exact size; returns -1 on error. */
static int read_input(const char *path, uint8_t **data, size_t *size)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL, *exact;
	size_t n = 0, cap = 0, r;

	if (f == NULL) {
		perror(path);
		return -1;
	}
	do {
		if (n == cap) {
			uint8_t *nb = realloc(buf, cap = cap ? cap * 2 : 65536);

			if (nb == NULL) {
				fprintf(stderr, "%s: out of memory\n", path);
				fclose(f);
				free(buf);
				return -1;
			}
			buf = nb;
		}
		r = fread(buf + n, 1, cap - n, f);
		n += r;
	} while (r != 0);
	if (ferror(f)) {
		perror(path);
		fclose(f);
		free(buf);
		return -1;
	}
	fclose(f);
	exact = malloc(n ? n : 1);
	if (exact == NULL) {
		fprintf(stderr, "%s: out of memory\n", path);
		free(buf);
		return -1;
	}
	memcpy(exact, buf, n);
	free(buf);
	*data = exact;
	*size = n;
	return 0;
}

static int run_file(const char *path)
{
	uint8_t *data;
	size_t size;

	if (read_input(path, &data, &size) != 0)
		return -1;
	LLVMFuzzerTestOneInput(data, size);
	free(data);
	return 0;
}

/* Runs every input `path` names; returns how many, or -1 on error. */
static long run_path(const char *path)
{
	struct dirent **names;
	struct stat st;
	long count = 0;
	int n;

	if (stat(path, &st) != 0) {
		perror(path);
		return -1;
	}
	if (!S_ISDIR(st.st_mode))
		return run_file(path) == 0 ? 1 : -1;
	n = scandir(path, &names, NULL, alphasort);
	if (n < 0) {
		perror(path);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		size_t len = strlen(path) + strlen(names[i]->d_name) + 2;
		char *file = malloc(len);

		if (names[i]->d_name[0] != '.' && count >= 0) {
			if (file == NULL) {
				fprintf(stderr, "out of memory\n");
				count = -1;
			} else {
				snprintf(file, len, "%s/%s", path, names[i]->d_name);
				count = run_file(file) == 0 ? count + 1 : -1;
			}
		}
		free(file);
		free(names[i]);
	}
	free(names);
	return count;
}

int main(int argc, char **argv)
{
	long total = 0;

	if (LLVMFuzzerInitialize != NULL)
		LLVMFuzzerInitialize(&argc, &argv);
	for (int i = 1; i < argc; i++) {
		long n = run_path(argv[i]);

		if (n < 0)
			return 2;
		if (n == 0) {
			fprintf(stderr, "%s: no inputs\n", argv[i]);
			return 2;
		}
		total += n;
	}
	if (total == 0) {
		fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
		return 2;
	}
	printf("%ld inputs handled\n", total);
	return 0;
}
