/* SPDX-License-Identifier: MIT */
/*
 * Invariant CRC (IBTA 7.8.1, annex A16/A17; rxe_icrc.c): CRC-32 (zlib's) over
 * 8 x 0xFF || masked L3 || masked UDP || BTH with byte 4 = 0xFF || the rest up to the ICRC.
 * Masked to ones: IPv4 TOS, TTL, header checksum; IPv6/GRH traffic class, flow label, hop limit;
 * UDP checksum. The result goes on the wire least-significant byte first.
 *
 * Computed with ISA-L's crc32_gzip_refl. All functions are pure.
 */
#ifndef UROCE_WIRE_ICRC_H
#define UROCE_WIRE_ICRC_H

#include <stddef.h>
#include <stdint.h>

#include "wire/packet.h"

/*
 * The CRC state after the pseudo-header and the BTH.
 * l3l4: for V2_IPV4 a 20-byte IPv4 header followed by the 8-byte UDP header (28 bytes);
 *       for V2_IPV6 the 40-byte IPv6 header and the UDP header (48 bytes);
 *       for V1 the 40-byte GRH.
 * The IPv4 header must have no options. bth: the 12 BTH bytes.
 * Returns 0 for UROCE_ENCAP_NONE (a caller bug).
 */
uint32_t uroce_icrc_begin(enum uroce_encap encap, const uint8_t *l3l4, const uint8_t *bth);

/*
 * uroce_icrc_begin in two steps: the CRC state after the pseudo-header alone (8 x 0xFF, the
 * masked L3/L4 headers, as above), then after the BTH that follows it.
 */
uint32_t uroce_icrc_pseudo(enum uroce_encap encap, const uint8_t *l3l4);
uint32_t uroce_icrc_bth(uint32_t crc, const uint8_t *bth);

/*
 * The pseudo-header state of a RoCE v2 IPv4 packet that differs from another only in its IPv4 ID,
 * from the other's state crc and x = the two IDs XORed: the CRC is affine in the ID, so the
 * segments of a UDP GSO send (IDs 0, 1, 2, ...) need not each run the CRC over the headers.
 */
uint32_t uroce_icrc_pseudo_v4_id(uint32_t crc, uint16_t x);

/* The longest masked pseudo-header: 8 x 0xFF, IPv6 and UDP. */
#define UROCE_ICRC_PSEUDO_MAX (8 + 40 + 8)

/*
 * Packets up to this many bytes from the BTH to the ICRC are best checked with one CRC call over
 * a copy of the pseudo-header and the packet: an ISA-L call costs about 10 ns however short its
 * input, more than the copy, and a packet in pieces takes three or four.
 */
#define UROCE_ICRC_ONE_CALL_MAX 192

/*
 * For one CRC call over a copy: the masked pseudo-header of encap (l3l4 as for
 * uroce_icrc_begin), then hdr[0 .. hdr_len) with the BTH (its first 12 bytes) masked, into out,
 * which holds UROCE_ICRC_PSEUDO_MAX + hdr_len bytes. Returns the bytes written, 0 for
 * UROCE_ENCAP_NONE; uroce_icrc_update(0, out, n), continued over the rest of the packet, is the
 * ICRC. hdr_len >= 12.
 */
size_t uroce_icrc_bytes(enum uroce_encap encap, const uint8_t *l3l4, const uint8_t *hdr,
			size_t hdr_len, uint8_t *out);

/* Continue over the bytes after the BTH (extension headers, payload, pad). */
uint32_t uroce_icrc_update(uint32_t crc, const uint8_t *p, size_t len);

/*
 * One call: the ICRC for the transport packet roce[0 .. len) (len excludes the ICRC), in one CRC
 * call over a copy up to UROCE_ICRC_ONE_CALL_MAX bytes.
 */
uint32_t uroce_icrc(enum uroce_encap encap, const uint8_t *l3l4, const uint8_t *roce, size_t len);

/*
 * Recovering the IPv4 Identification of a RoCE v2 packet received on a UDP socket
 * (roce-reference.md 1.12). For a fixed length the ICRC is affine in the 16-bit ID:
 * icrc(id) = icrc(0) ^ L(id), with L linear and injective. A solver is built per transport length
 * (BTH..ICRC inclusive) and reused for every packet of that length.
 */
struct uroce_ipid_solver {
	uint32_t roce_len;
	uint32_t col[16];   /* L(1 << i) */
	uint32_t basis[16]; /* reduced columns, by pivot order */
	uint16_t comb[16];  /* which ID bits make each reduced column */
	uint32_t pivot[16]; /* one-bit masks */
};

/* Build the solver for transport packets of roce_len bytes (BTH through ICRC inclusive). */
void uroce_ipid_solver_init(struct uroce_ipid_solver *s, uint32_t roce_len);

/*
 * Given the ICRC computed with ID 0 and the ICRC received, find the ID that makes them agree.
 * Returns 0 and *id, or -EBADMSG when no ID does (the packet is corrupt).
 */
int uroce_ipid_solve(const struct uroce_ipid_solver *s, uint32_t icrc_id0, uint32_t icrc_wire,
		     uint16_t *id);

#endif
