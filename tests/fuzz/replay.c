/* SPDX-License-Identifier: MIT */
/*
 * Replay driver: runs LLVMFuzzerTestOneInput over every file of the directories (or the files)
 * given, in name order, so the fuzz corpus is a regression test in every build (gcc included).
 * A broken invariant aborts inside the target. Fails when nothing was replayed or a path cannot
 * be read, so a missing corpus does not pass silently.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "host/io/pcap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	int rc = uroce_file_load(path, &buf, &len);

	if (rc) {
		fprintf(stderr, "%s: cannot read (%d)\n", path, rc);
		return -1;
	}
	/* An exact-size copy, so ASan sees any read past the input. */
	uint8_t *exact = malloc(len ? len : 1);

	if (len)
		memcpy(exact, buf, len);
	free(buf);
	LLVMFuzzerTestOneInput(exact, len);
	free(exact);
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
		struct dirent **ents;
		int k = scandir(argv[a], &ents, skip_dot, alphasort);

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
