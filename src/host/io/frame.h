/* SPDX-License-Identifier: MIT */
/*
 * Framing: a transmit descriptor as the pieces of the frame the peer receives (headers, the
 * payload in place, pad and ICRC), and a received packet rebuilt as its Ethernet frame. Shared by
 * the backends (which send the pieces) and the pcap tap (which writes whole frames).
 */
#ifndef UROCE_HOST_IO_FRAME_H
#define UROCE_HOST_IO_FRAME_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "host/io/backend.h"

/* Longest head: Ethernet + IPv6 + UDP + transport headers. */
#define UROCE_FRAME_HEAD_MAX (UROCE_ETH_LEN + UROCE_IPV6_LEN + UROCE_UDP_LEN + UROCE_TX_HDR_MAX)

/*
 * One outgoing packet as three pieces: head = [Ethernet][L3 (IPv4/IPv6/GRH)][UDP][BTH+ext],
 * then the payload in place, then tail = [pad zeros][ICRC]. The L3/L4 part is what the kernel
 * will write (for a UDP socket) or what goes on the wire (AF_PACKET): the ICRC is computed over
 * it. IPv4: DF, protocol 17, the given ID; the IPv4 header checksum and the UDP checksum are 0
 * until uroce_txframe_csum() writes them (the ICRC masks the one and does not cover the other).
 */
struct uroce_txframe {
	uint8_t head[UROCE_FRAME_HEAD_MAX];
	uint16_t head_len;
	uint16_t l3_off; /* = UROCE_ETH_LEN */
	uint16_t t_off;	 /* first byte of the BTH in head */
	uint8_t tail[8];
	uint8_t tail_len;  /* pad + 4 */
	uint32_t roce_len; /* BTH..ICRC */
	/* the ICRC's state after the pseudo-header (uroce_icrc_pseudo); not computed for a packet
	 * of up to UROCE_ICRC_ONE_CALL_MAX bytes, whose ICRC is one CRC call */
	uint32_t pseudo_crc;
};

/*
 * Build the pieces for d. smac: our MAC (may be zero); dport: v2 UDP destination port; ip_id:
 * the IPv4 ID the ICRC is computed with (0 for an IP_PMTUDISC_DO UDP socket).
 * GIDs are copied as they are (a v1 GRH may carry v4-mapped GIDs, as mlx5's v1 IPv4 entries).
 * Returns 0, or -EINVAL (unknown encap, header shorter than a BTH or longer than
 * UROCE_TX_HDR_MAX, pad > 3, payload_len without payload), -EMSGSIZE (longer than the IP
 * length field allows).
 */
int uroce_txframe_build(struct uroce_txframe *f, const struct uroce_tx_desc *d,
			const uint8_t smac[6], uint16_t dport, uint16_t ip_id);

/*
 * Build f for d as uroce_txframe_build would, for a RoCE v2 IPv4 packet that differs from prev
 * (built by either function, with IPv4 ID prev_id) only in its BTH and extension headers, its
 * payload and its IPv4 ID: same path, same RoCE length (the caller's promise). The headers are
 * copied and the ICRC's pseudo-header part follows from prev's by the ID alone. Returns 0, or
 * -EINVAL when d is not such a packet (not IPv4, another length, a bad header).
 */
int uroce_txframe_next(struct uroce_txframe *f, const struct uroce_txframe *prev, uint16_t prev_id,
		       const struct uroce_tx_desc *d, uint16_t ip_id);

/*
 * Write the checksums a v2 frame carries on the wire into f: the IPv4 header's (left 0 by
 * uroce_txframe_build: a UDP socket sends only BTH..ICRC, and the ICRC masks the field) and
 * the UDP checksum over the pieces. For the pcap tap's frames.
 */
void uroce_txframe_csum(struct uroce_txframe *f, const uint8_t *payload, uint32_t payload_len);

/* Copy the whole frame (head, payload, tail) into buf. Returns its length or -ENOSPC. */
ssize_t uroce_txframe_flatten(uint8_t *buf, size_t cap, const struct uroce_txframe *f,
			      const uint8_t *payload, uint32_t payload_len);

/*
 * Rebuild the Ethernet frame of a received packet (for the pcap tap): Ethernet (the desc's MACs,
 * zero for UDP), the L3 header from the GRH slot (IPv4 with the recovered ID; IPv6; the GRH),
 * the UDP header (ports, length, a computed checksum), then BTH..ICRC.
 * Returns the frame length, -ENOSPC, or -EINVAL for an unknown encap.
 */
ssize_t uroce_rxframe_build(uint8_t *buf, size_t cap, const struct uroce_rx_desc *d);

#endif
