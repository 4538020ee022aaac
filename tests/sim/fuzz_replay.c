/* SPDX-License-Identifier: MIT */
/*
 * Replay driver for the engine fuzz target: runs LLVMFuzzerTestOneInput over every regular file
 * of the directories (or the files) given, in name order, so the corpus is a regression test in
 * every build. Each input is passed in an exact-size buffer so ASan sees reads past its end.
 * Fails when a path cannot be read or nothing was replayed.
 * (Like tests/fuzz/replay.c, without its dependency on the host library.)
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_engine.h"

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long len;

	if (!f || fseek(f, 0, SEEK_END) || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
		perror(path);
		if (f)
			fclose(f);
		return -1;
	}
	buf = malloc(len ? (size_t)len : 1);
	if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len) {
		fprintf(stderr, "%s: cannot read\n", path);
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, (size_t)len);
	free(buf);
	return 0;
}

static int skip_dot(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

int main(int argc, char **argv)
{
	unsigned long n = 0;
	int bad = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s DIR|FILE...\n", argv[0]);
		return 2;
	}
	for (int a = 1; a < argc; a++) {
		struct stat st;
		struct dirent **ents;
		int k;

		if (stat(argv[a], &st) != 0) {
			perror(argv[a]);
			bad = 1;
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			bad |= replay_file(argv[a]) != 0;
			n++;
			continue;
		}
		k = scandir(argv[a], &ents, skip_dot, alphasort);
		if (k < 0) {
			perror(argv[a]);
			bad = 1;
			continue;
		}
		for (int i = 0; i < k; i++) {
			char path[4096];

			snprintf(path, sizeof(path), "%s/%s", argv[a], ents[i]->d_name);
			if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
				bad |= replay_file(path) != 0;
				n++;
			}
			free(ents[i]);
		}
		free(ents);
	}
	printf("replayed %lu inputs\n", n);
	return bad || n == 0 ? 1 : 0;
}
