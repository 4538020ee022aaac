/* SPDX-License-Identifier: MIT */
/*
 * Capture files: a bounded reader for classic pcap (both byte orders, micro- and nanosecond
 * timestamps) and pcapng (SHB, IDB, EPB, SPB; other blocks skipped), and a classic pcap writer.
 *
 * The reader works over a caller-owned buffer holding the whole file; packet pointers point into
 * it. It never reads outside the buffer, whatever the file says.
 */
#ifndef UROCE_HOST_PCAP_H
#define UROCE_HOST_PCAP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define UROCE_LINKTYPE_ETHERNET 1
#define UROCE_PCAPNG_MAX_IFS	64
#define UROCE_FILE_MAX		(1ull << 30) /* uroce_file_load refuses larger files */

struct uroce_pcap_rd {
	const uint8_t *buf;
	size_t len;
	size_t off;
	int ng;		    /* pcapng */
	int swapped;	    /* file byte order differs from host order */
	uint32_t tsdiv;	    /* timestamp units per second (classic pcap) */
	uint32_t linktype;  /* classic pcap; for pcapng, of the first interface */
	uint32_t ng_ifs;    /* pcapng interfaces seen */
	uint32_t ng_link[UROCE_PCAPNG_MAX_IFS];
	uint64_t ng_tsdiv[UROCE_PCAPNG_MAX_IFS];
	const char *err;    /* static reason after an error */
};

struct uroce_pcap_pkt {
	const uint8_t *data;
	uint32_t caplen;  /* bytes present */
	uint32_t origlen; /* bytes on the wire */
	uint64_t ts_ns;   /* nanoseconds since the epoch */
	uint32_t linktype;
};

/*
 * Start reading buf[0..len). Returns 0, or -EBADMSG with r->err set (not a capture file,
 * truncated header, unsupported version).
 */
int uroce_pcap_open(struct uroce_pcap_rd *r, const uint8_t *buf, size_t len);

/*
 * The next packet. Returns 1 with *p filled, 0 at the clean end of the file, or -EBADMSG with
 * r->err set (truncated record, length beyond the file, bad block).
 */
int uroce_pcap_next(struct uroce_pcap_rd *r, struct uroce_pcap_pkt *p);

/* Read a whole file into a malloc'd buffer. Returns 0, or a negative errno (-EFBIG beyond
 * UROCE_FILE_MAX, -EIO on a read error, or open()'s errno). */
int uroce_file_load(const char *path, uint8_t **buf, size_t *len);

/* Classic pcap writer (Ethernet link type, nanosecond timestamps). Returns 0 or -errno. */
int uroce_pcap_write_header(FILE *f);
int uroce_pcap_write_packet(FILE *f, uint64_t ts_ns, const uint8_t *data, uint32_t len);

#endif
