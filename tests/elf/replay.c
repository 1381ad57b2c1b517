/* SPDX-License-Identifier: Apache-2.0 */
/* Runs the fuzz target (fuzz-elf.c) on each file named on the command line,
 * for compilers without libFuzzer.  Exits 0 when every input was handled
 * (a bad input is handled when it is refused cleanly); a bug crashes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		FILE *f = fopen(argv[i], "rb");
		unsigned char *buf = NULL;
		size_t n = 0, cap = 0, r;

		if (f == NULL) {
			perror(argv[i]);
			return 2;
		}
		do {
			if (n == cap) {
				unsigned char *nb = realloc(buf, cap = cap ? cap * 2 : 65536);

				if (nb == NULL) {
					fprintf(stderr, "out of memory\n");
					return 2;
				}
				buf = nb;
			}
			r = fread(buf + n, 1, cap - n, f);
			n += r;
		} while (r != 0);
		fclose(f);
		LLVMFuzzerTestOneInput(buf, n);
		free(buf);
	}
	printf("%d inputs handled\n", argc - 1);
	return 0;
}
