/* SPDX-License-Identifier: MIT */
/*
 * The pcap sink (host/io/pcap_sink.h) writes its file at record boundaries only, and all of it.
 *
 *   test_io_pcap_sink
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "host/io/pcap.h"
#include "host/io/pcap_sink.h"

/*
 * The pcap sink writes its file at record boundaries only: 300 frames of 60 to 9060 bytes
 * (several times its buffer), the file's size after each is the header plus a whole number
 * of records, and it grows on the way (not all at close); after the last reference goes, all
 * 300 read back in order.
 */
static int test_sink(void)
{
	enum { N = 300 };
	static uint8_t frame[9100];
	static size_t ends[N + 1];
	char path[] = "/tmp/uroce-sink-XXXXXX";
	int fd = mkstemp(path), grew = 0;
	struct uroce_pcap_sink *sink;

	CHECK(fd >= 0);
	if (fd < 0)
		return check_exit("io sink");
	close(fd);
	CHECK(uroce_pcap_sink_open(&sink, path) == 0);
	ends[0] = 24;
	for (int i = 0; i < N; i++) {
		uint32_t len = 60 + (uint32_t)(i * 7919 % 9001);
		struct stat st;
		int k = 0;

		memset(frame, i & 0xFF, len);
		CHECK(uroce_pcap_sink_write(sink, 1700000000000000000ull + (uint64_t)i, frame,
					    len) == 0);
		ends[i + 1] = ends[i] + 16 + len;
		CHECK(stat(path, &st) == 0);
		while (k <= i + 1 && ends[k] < (size_t)st.st_size)
			k++;
		CHECKF(k <= i + 1 && ends[k] == (size_t)st.st_size,
		       "after frame %d the file is %lld bytes, not at a record's end", i,
		       (long long)st.st_size);
		if (k > i + 1 || ends[k] != (size_t)st.st_size)
			break;
		grew += st.st_size > 24;
	}
	CHECKF(grew > 0, "the file grew only at close");
	CHECK(uroce_pcap_sink_write(sink, 0, frame, 1u << 20) == -EMSGSIZE);
	uroce_pcap_sink_put(sink);

	uint8_t *buf;
	size_t len;
	struct uroce_pcap_rd r;
	struct uroce_pcap_pkt pk;
	int n = 0;

	CHECK(uroce_file_load(path, &buf, &len) == 0 && len == ends[N]);
	CHECK(uroce_pcap_open(&r, buf, len) == 0);
	while (uroce_pcap_next(&r, &pk) == 1) {
		CHECK(pk.caplen == 60 + (uint32_t)(n * 7919 % 9001) && pk.data[0] == (n & 0xFF));
		n++;
	}
	CHECKF(n == N, "read back %d frames of %d", n, N);
	free(buf);
	unlink(path);
	return check_exit("io sink");
}

int main(void)
{
	return test_sink();
}
