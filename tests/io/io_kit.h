/* SPDX-License-Identifier: MIT */
/*
 * The I/O test kit: what the I/O backend test programs (test_io_*.c) share. Packets with known
 * contents built by our codec, receiving from a backend with a deadline (poll(), never a sleep),
 * and checking each arrival, byte for byte and header by header, against what was sent.
 *
 * The kit's functions record failures with check.h's CHECK. check.h counts per file, so a
 * program ends with `return check_exit_with(NAME, io_kit_checks)`, which adds the kit's counts
 * to its own.
 * Single-threaded, like the programs: the kit keeps its buffers in static storage.
 */
#ifndef UROCE_TESTS_IO_KIT_H
#define UROCE_TESTS_IO_KIT_H

#include <stddef.h>
#include <stdint.h>

#include "check.h"
#include "host/io/backend.h"
#include "wire/packet.h"

/* The largest payload the kit sends. */
#define MAXPAY 4096

/* Stands in for registered memory: payloads point into it. io_kit_init fills it. */
extern uint8_t payload_mem[MAXPAY + 64];

/* Fill payload_mem with its pattern. Call first, in main. */
void io_kit_init(void);

/* The kit's CHECK count and failures so far (for check_exit_with). */
void io_kit_checks(long *count, int *failures);

/* CLOCK_MONOTONIC in milliseconds. */
uint64_t mono_ms(void);

/* g = the GID of IPv4 address s (v4-mapped) / of IPv6 address s. Abort on a bad address. */
void gid4(uint8_t g[16], const char *s);
void gid6(uint8_t g[16], const char *s);

/* ---- packets ---------------------------------------------------------------------------- */

/* A packet as sent: the backend's descriptor and the transport packet it was encoded from. */
struct sent {
	struct uroce_tx_pkt pkt;
	struct uroce_tpkt t;
};

/*
 * Build into s a packet of opcode op with PSN psn and plen bytes of payload (from payload_mem)
 * to QPN dqpn (make_pkt: 0x123), source QPN 0x42. Every extension header the opcode carries gets
 * fixed, recognisable values; AckReq and SE follow PSN bits 0 and 1. Aborts if op cannot be
 * encoded.
 */
void make_pkt_to(struct sent *s, uint8_t op, uint32_t psn, uint32_t plen, uint32_t dqpn);
void make_pkt(struct sent *s, uint8_t op, uint32_t psn, uint32_t plen);

/*
 * Write into out the transport bytes of s (BTH to ICRC) as a RoCE v2 UDP payload from src to
 * dst (IPv4 GIDs), ports sport -> dport, with the ICRC computed for IPv4 ID id; return their
 * length. With frame, also the IPv4 packet (IP header on) into frame and its length into
 * *frame_len. out and frame need room for them.
 */
size_t v4_datagram(uint8_t *out, const struct sent *s, const uint8_t *src, const uint8_t *dst,
		   uint16_t sport, uint16_t dport, uint16_t id, uint8_t *frame, size_t *frame_len);

/* ---- receiving -------------------------------------------------------------------------- */

typedef void (*rx_fn)(const struct uroce_rx_desc *d, void *ctx);

/*
 * Receive from b, handing each packet to fn(d, ctx), until want packets were handed (want < 0:
 * no limit), more(b, ctx) returns 0 after a burst, or timeout_ms have passed when a burst comes
 * back empty (timeout_ms 0: the first empty burst); waits in poll() on b's fd. Returns the
 * number handed to fn. A receive error is a failed check.
 */
int rx_until(struct uroce_backend *b, int want, rx_fn fn, void *ctx, int timeout_ms,
	     int (*more)(struct uroce_backend *, void *));

/* What on_collect checks arrivals against: the packets sent and how they were sent. */
struct collect {
	struct sent *sent;
	int n;
	int idx; /* the next packet expected */
	enum uroce_encap encap;
	const uint8_t *sgid, *dgid;
	uint16_t want_sport;
	uint16_t want_dport;
	int want_hop; /* < 0: any */
	uint8_t want_tclass;
	int ce;			  /* ECN CE marks seen */
	const uint16_t *want_ids; /* the IPv4 ID of each packet; NULL: all 0 */
};

/*
 * An rx_fn (ctx: struct collect): checks d against sent[idx] (bytes, encapsulation, GIDs, ports,
 * hop limit, traffic class, IPv4 ID, the ICRC against uroce_frame_encode's, the GRH slot) and
 * moves idx on; counts CE marks.
 */
void on_collect(const struct uroce_rx_desc *d, void *ctx);

/*
 * Send d[0..n) from a (3 s at most), recording in ids[] the IPv4 ID each packet left with
 * (packets of one length back to back may leave as one GSO send: IDs 0, 1, ...). With c,
 * packets are received on b into c as they go, so that b's receive buffer never overflows.
 */
void send_burst(struct uroce_backend *a, const struct uroce_tx_desc *d, int n, uint16_t *ids,
		struct uroce_backend *b, struct collect *c, const char *what);

/*
 * Send one packet of every valid opcode (odd and even payload lengths, every pad) and one
 * 4 KiB SEND from a to b over path, and check each on arrival (on_collect), want_hop the hop
 * limit expected (< 0: any). Every packet carries CE when path's traffic class has ECN bits 11.
 * what names the case in messages.
 */
void every_opcode(struct uroce_backend *a, struct uroce_backend *b, const struct uroce_path *path,
		  int want_hop, const char *what);

/* ---- loopback ----------------------------------------------------------------------------- */

/*
 * Open a UDP backend on interface lo bound to addrs[0..n) on port; NULL if it fails (reported
 * on stderr, except -EADDRINUSE: callers try the next port, since tests run in parallel).
 */
struct uroce_backend *open_udp(const uint8_t (*addrs)[16], int n, uint16_t port);

/* What on_count saw. Set last_psn to -1 before counting. */
struct count_ctx {
	int n;
	uint16_t last_id;
	uint32_t last_len;
	uint8_t bitmap[1024 / 8]; /* PSNs below 1024 seen */
	int dups;		  /* PSNs below 1024 seen again */
	int inversions;		  /* packets with a lower PSN than the one before */
	int last_psn;
};

/* An rx_fn (ctx: struct count_ctx) that counts packets by PSN without checking them. */
void on_count(const struct uroce_rx_desc *d, void *ctx);

#endif
