/* SPDX-License-Identifier: MIT */
/*
 * Codecs for the individual headers of a RoCE frame: Ethernet (+802.1Q), IPv4, IPv6 and the IB GRH
 * (same layout), UDP, BTH and the extension headers.
 *
 * Decoded headers are host-order structs that keep every bit of the wire header, reserved fields
 * included, so that decode followed by encode gives back the same bytes.
 *
 * Conventions (all functions): decoders take (struct *out, const uint8_t *p, size_t len) and return
 * the header length in bytes, or -EBADMSG when len is too short or a version field is wrong
 * (IPv4/IPv6); fields whose values are a receiver's policy (BTH TVer, reserved bits, P_Key) are
 * decoded as they are and checked by the transport;
 * encoders take (uint8_t *p, size_t cap, const struct *in) and return the bytes written, or
 * -ENOSPC when cap is too small. Nothing allocates, nothing keeps a pointer past the call unless
 * the field says so.
 */
#ifndef UROCE_WIRE_HDR_H
#define UROCE_WIRE_HDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define UROCE_ETH_LEN	     14
#define UROCE_VLAN_LEN	     4
#define UROCE_IPV4_LEN	     20 /* without options */
#define UROCE_IPV6_LEN	     40
#define UROCE_GRH_LEN	     40
#define UROCE_UDP_LEN	     8

#define UROCE_ETHERTYPE_IPV4 0x0800
#define UROCE_ETHERTYPE_IPV6 0x86DD
#define UROCE_ETHERTYPE_VLAN 0x8100
#define UROCE_ETHERTYPE_QINQ 0x88A8
#define UROCE_ETHERTYPE_ROCE 0x8915 /* RoCE v1 (IBTA annex A16) */
#define UROCE_IPPROTO_UDP    17
#define UROCE_GRH_NEXT_HDR   0x1B /* IB_GRH_NEXT_HDR: a BTH follows the GRH */
#define UROCE_UDP_PORT	     4791 /* ROCE_V2_UDP_DPORT */

/* Ethernet II header with an optional single 802.1Q (or 802.1ad) tag. */
struct uroce_eth {
	uint8_t dst[6];
	uint8_t src[6];
	bool vlan;	   /* a tag is present */
	uint16_t tpid;	   /* tag protocol id when vlan: 0x8100 or 0x88A8 */
	uint16_t tci;	   /* PCP(3) DEI(1) VID(12) when vlan */
	uint16_t ethertype; /* of the payload, after any tag */
};

/* IPv4 header. Options, if any, are skipped by the decoder and not kept. */
struct uroce_ipv4 {
	uint8_t ihl; /* header length in 32-bit words, >= 5 */
	uint8_t tos;
	uint16_t tot_len;
	uint16_t id;
	uint16_t frag; /* flags (3) and fragment offset (13): 0x4000 is DF */
	uint8_t ttl;
	uint8_t proto;
	uint16_t csum;
	uint8_t src[4];
	uint8_t dst[4];
};

/* IPv6 header, also used for the IB GRH (same layout: IPVer 6, next header 0x1B). */
struct uroce_ip6 {
	uint8_t version;  /* 6 */
	uint8_t tclass;
	uint32_t flow;	  /* 20 bits */
	uint16_t paylen;
	uint8_t next_hdr;
	uint8_t hop_limit;
	uint8_t src[16];  /* SGID for the GRH */
	uint8_t dst[16];  /* DGID for the GRH */
};

struct uroce_udp {
	uint16_t sport;
	uint16_t dport;
	uint16_t len;
	uint16_t csum;
};

/* Base transport header (12 bytes). */
struct uroce_bth {
	uint8_t opcode;
	bool se;	/* solicited event */
	bool mig;	/* MigReq: ConnectX sends 1, rxe 0; ignored without APM */
	uint8_t pad;	/* pad count 0..3 */
	uint8_t tver;	/* transport header version, must be 0 */
	uint16_t pkey;
	bool fecn;
	bool becn;
	uint8_t resv6;	/* 6 reserved bits after FECN/BECN */
	uint32_t dqpn;	/* 24 bits */
	bool ackreq;
	uint8_t resv7;	/* 7 reserved bits after AckReq */
	uint32_t psn;	/* 24 bits */
};

struct uroce_deth {
	uint32_t qkey;
	uint8_t resv;
	uint32_t src_qp; /* 24 bits */
};

struct uroce_reth {
	uint64_t va;
	uint32_t rkey;
	uint32_t len;
};

struct uroce_atmeth {
	uint64_t va;
	uint32_t rkey;
	uint64_t swap_add;
	uint64_t compare;
};

/* AETH syndrome: bit 7 reserved, bits 6-5 type, bits 4-0 value (IBTA 9.7.5.1.x; rxe_hdr.h). */
struct uroce_aeth {
	uint8_t syndrome;
	uint32_t msn; /* 24 bits */
};

enum uroce_aeth_type {
	UROCE_AETH_ACK = 0x00,
	UROCE_AETH_RNR_NAK = 0x20,
	UROCE_AETH_RESERVED = 0x40,
	UROCE_AETH_NAK = 0x60,
};

#define UROCE_AETH_TYPE_MASK	 0x60
#define UROCE_AETH_VALUE_MASK	 0x1F
#define UROCE_AETH_ACK_UNLIMITED 0x1F
#define UROCE_NAK_PSN_SEQ_ERR	 0x60
#define UROCE_NAK_INVALID_REQ	 0x61
#define UROCE_NAK_REM_ACCESS	 0x62
#define UROCE_NAK_REM_OP_ERR	 0x63
#define UROCE_NAK_INV_RD_REQ	 0x64

int uroce_eth_decode(struct uroce_eth *e, const uint8_t *p, size_t len);
int uroce_eth_encode(uint8_t *p, size_t cap, const struct uroce_eth *e);
static inline int uroce_eth_len(const struct uroce_eth *e)
{
	return UROCE_ETH_LEN + (e->vlan ? UROCE_VLAN_LEN : 0);
}

/*
 * IPv4: -EBADMSG for version != 4, IHL < 5, a header longer than len, or tot_len shorter than
 * the header. tot_len may exceed len (the caller decides whether the packet is truncated).
 * Options are skipped: the return value is IHL * 4.
 */
int uroce_ipv4_decode(struct uroce_ipv4 *h, const uint8_t *p, size_t len);
/* Writes a 20-byte header (ihl must be 5, else -EINVAL); the checksum is written as given. */
int uroce_ipv4_encode(uint8_t *p, size_t cap, const struct uroce_ipv4 *h);
/* The RFC 791 header checksum of a 20-byte header whose checksum field is taken as zero. */
uint16_t uroce_ipv4_csum(const uint8_t *hdr20);

/* IPv6 and GRH: -EBADMSG for version != 6 or len < 40. */
int uroce_ip6_decode(struct uroce_ip6 *h, const uint8_t *p, size_t len);
int uroce_ip6_encode(uint8_t *p, size_t cap, const struct uroce_ip6 *h);

int uroce_udp_decode(struct uroce_udp *h, const uint8_t *p, size_t len);
int uroce_udp_encode(uint8_t *p, size_t cap, const struct uroce_udp *h);

int uroce_bth_decode(struct uroce_bth *h, const uint8_t *p, size_t len);
int uroce_bth_encode(uint8_t *p, size_t cap, const struct uroce_bth *h);

/* Extension headers: fixed sizes, see opcode.h. */
int uroce_deth_decode(struct uroce_deth *h, const uint8_t *p, size_t len);
int uroce_deth_encode(uint8_t *p, size_t cap, const struct uroce_deth *h);
int uroce_reth_decode(struct uroce_reth *h, const uint8_t *p, size_t len);
int uroce_reth_encode(uint8_t *p, size_t cap, const struct uroce_reth *h);
int uroce_atmeth_decode(struct uroce_atmeth *h, const uint8_t *p, size_t len);
int uroce_atmeth_encode(uint8_t *p, size_t cap, const struct uroce_atmeth *h);
int uroce_aeth_decode(struct uroce_aeth *h, const uint8_t *p, size_t len);
int uroce_aeth_encode(uint8_t *p, size_t cap, const struct uroce_aeth *h);
/* 32-bit fields: AtomicAckETH (64), ImmDt, IETH, FETH. */
int uroce_be64_decode(uint64_t *v, const uint8_t *p, size_t len);
int uroce_be64_encode(uint8_t *p, size_t cap, uint64_t v);
int uroce_be32_decode(uint32_t *v, const uint8_t *p, size_t len);
int uroce_be32_encode(uint8_t *p, size_t cap, uint32_t v);

#endif
