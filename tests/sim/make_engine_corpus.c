/* SPDX-License-Identifier: MIT */
/* Writes the engine fuzz target's seed corpus: make_engine_corpus DIR (see fuzz_engine.h). */
#include <stdio.h>

#include "fuzz_engine.h"

int main(int argc, char **argv)
{
	int n;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	n = fuzz_engine_make_corpus(argv[1]);
	if (n < 0) {
		fprintf(stderr, "%s: error %d\n", argv[1], n);
		return 1;
	}
	printf("%d files written to %s\n", n, argv[1]);
	return 0;
}
