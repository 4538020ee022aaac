/* SPDX-License-Identifier: MIT */
/*
 * The RoCE v2 receive check, a pure function: a datagram as a UDP socket hands it over, verified
 * (ICRC; for IPv4 the IPv4 ID recovered from it, roce-reference 1.12) into a receive descriptor.
 */
#ifndef UROCE_HOST_IO_V2_RX_H
#define UROCE_HOST_IO_V2_RX_H

#include <stdint.h>

#include "host/io/backend.h"
#include "wire/icrc.h"

/*
 * Solvers for the IPv4 ID by transport length: UROCE_IPID_SETS sets of two, a length's set
 * picked by a multiplicative hash, the set's older solver replaced on a miss. Building a solver
 * costs about a microsecond, so the lengths of one stream must not evict each other: a GSO send's
 * segments after the first all need solving (their IDs are 1, 2, ...), and a message's full and
 * last packets alternate (4112 and 80 bytes for 8256-byte sends at MTU 4096, lengths whose low
 * bits are equal: the hash and the second way keep both).
 */
#define UROCE_IPID_SETS 16
struct uroce_ipid_cache {
	struct uroce_ipid_solver s[UROCE_IPID_SETS][2]; /* roce_len 0: empty */
	uint8_t older[UROCE_IPID_SETS];			/* the way to replace next */
	uint64_t builds;				/* solvers built (for tests) */
};

/*
 * What a UDP socket tells about a datagram, and the datagram (BTH..ICRC).
 * src/dst: GIDs (v4-mapped for IPv4).
 */
struct uroce_v2_rx_in {
	enum uroce_encap encap; /* V2_IPV4 or V2_IPV6 */
	const uint8_t *data;
	uint32_t len;
	uint8_t src[16];
	uint8_t dst[16];
	uint16_t sport;
	uint16_t dport;
	uint8_t tos; /* IPv4 TOS / IPv6 traffic class (0 when not reported) */
	uint8_t ttl; /* TTL / hop limit (64 when not reported) */
	int ifindex;
};

/*
 * Verify a v2 datagram and fill d (everything but pkt.sgid_index). IPv4: the ICRC is computed
 * with ID 0 and the ID solved for (cache: solvers by length, may be NULL to build one on the
 * stack); the GRH slot gets 20 zero bytes then a valid IPv4 header with that ID. IPv6: plain
 * ICRC check; the GRH slot is the IPv6 header (flow label 0: a socket does not report it).
 * Nothing else is checked (opcode, pad, keys: the engine's job).
 * Returns 0; -EBADMSG too short for a BTH and an ICRC (or too long for IP); -EILSEQ bad ICRC;
 * -EINVAL when in->encap is not v2.
 */
int uroce_v2_rx_verify(struct uroce_rx_desc *d, struct uroce_ipid_cache *cache,
		       const struct uroce_v2_rx_in *in);

#endif
