/* SPDX-License-Identifier: MIT */
/*
 * Whole RoCE packets: the transport part (BTH, extension headers, payload, pad, ICRC) and the
 * frame around it (Ethernet, then GRH for RoCE v1 or IPv4/IPv6 + UDP for RoCE v2).
 *
 * Decoding is bounded and copies nothing: the payload pointer points into the caller's buffer and
 * is valid as long as that buffer is. Encoding writes into a caller buffer of a given capacity.
 */
#ifndef UROCE_WIRE_PACKET_H
#define UROCE_WIRE_PACKET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "wire/hdr.h"
#include "wire/opcode.h"

enum uroce_encap {
	UROCE_ENCAP_NONE = 0,
	UROCE_ENCAP_V1,	     /* Ethertype 0x8915, GRH */
	UROCE_ENCAP_V2_IPV4, /* IPv4, UDP 4791 */
	UROCE_ENCAP_V2_IPV6, /* IPv6, UDP 4791 */
};

/*
 * The transport packet, from the first byte of the BTH to the last byte of the ICRC.
 * Extension header fields are valid only when uroce_opinfo[bth.opcode].hdrs names them.
 */
struct uroce_tpkt {
	struct uroce_bth bth;
	struct uroce_deth deth;
	uint32_t feth;
	struct uroce_reth reth;
	struct uroce_atmeth atmeth;
	struct uroce_aeth aeth;
	uint64_t atmack;	/* AtomicAckETH: original remote value */
	uint32_t imm;		/* ImmDt, host order of the big-endian wire field */
	uint32_t ieth;		/* IETH: R_Key to invalidate */
	uint8_t cnp_resv[UROCE_CNP_LEN];
	const uint8_t *payload; /* decode: into the buffer; encode: source, payload_len bytes */
	uint32_t payload_len;	/* without the pad */
	uint32_t icrc;		/* decode: the value carried (sent least-significant byte first) */
};

/* A decoded frame. l3 points at the IPv4 header, IPv6 header or GRH inside the buffer. */
struct uroce_frame {
	enum uroce_encap encap;
	struct uroce_eth eth;
	struct uroce_ipv4 ip4; /* V2_IPV4 */
	struct uroce_ip6 ip6;  /* V2_IPV6: the IPv6 header; V1: the GRH */
	struct uroce_udp udp;  /* V2 */
	struct uroce_tpkt t;
	const uint8_t *l3;     /* decode only */
	const uint8_t *roce;   /* decode only: first byte of the BTH */
	uint32_t roce_len;     /* decode only: BTH..ICRC inclusive */
	uint32_t len;	       /* decode only: frame bytes up to the end of the ICRC */
	const char *err;       /* decode: why the frame was rejected (static string), else NULL */
};

/*
 * Decode a transport packet of len bytes (BTH to ICRC inclusive).
 * Returns 0, or -EBADMSG with *err set to a static reason: truncated headers, unknown opcode,
 * pad larger than the payload, payload on an opcode that carries none.
 */
int uroce_tpkt_decode(struct uroce_tpkt *t, const uint8_t *p, size_t len, const char **err);

/* Pad count for a payload length. */
static inline uint8_t uroce_pad_len(uint32_t payload_len)
{
	return (uint8_t)(-payload_len & 3);
}

/*
 * Write the BTH and the extension headers of t. The BTH pad count is computed from
 * t->payload_len (t->bth.pad is ignored). Returns the header length, -ENOSPC, or -EINVAL for an
 * unknown opcode.
 */
int uroce_tpkt_hdr_encode(uint8_t *p, size_t cap, const struct uroce_tpkt *t);

/* Headers, payload and zero pad, without the ICRC. Returns the length written. */
ssize_t uroce_tpkt_encode(uint8_t *p, size_t cap, const struct uroce_tpkt *t);

/*
 * Decode an Ethernet frame. Returns 0 for a well-formed RoCE packet; -ENOENT when the frame is
 * not RoCE (f->encap == UROCE_ENCAP_NONE); -EBADMSG when it is RoCE (v1 Ethertype, or UDP to
 * port 4791) but malformed, with f->err set. Bytes after the L3 length (Ethernet padding) are
 * ignored. IPv4 packets with options or fragmentation are rejected as malformed.
 * The ICRC is not checked here: see uroce_frame_icrc().
 * After -EBADMSG, f->encap says which encapsulation was recognised and f->roce is non-NULL only
 * when the transport part was reached (then the L2/L3/L4 structs are valid); after -ENOENT only
 * f->eth may be valid. Frames with two VLAN tags are not recognised (-ENOENT).
 */
int uroce_frame_decode(struct uroce_frame *f, const uint8_t *buf, size_t len);

/*
 * Encode f into buf: Ethernet, L3, L4 and the transport packet, then the ICRC. Lengths, the
 * Ethertype, IPv4 protocol and header checksum, IPv6/GRH next header, pad count and ICRC are
 * computed; every other field is written as given. Returns the frame length, -ENOSPC, or
 * -EINVAL for an unknown opcode, encapsulation or an IPv4 header with options, or -EMSGSIZE when
 * the packet does not fit the L3 length field.
 */
ssize_t uroce_frame_encode(uint8_t *buf, size_t cap, const struct uroce_frame *f);

/* The ICRC a decoded frame should carry (computed over its bytes). */
uint32_t uroce_frame_icrc(const struct uroce_frame *f);

#endif
