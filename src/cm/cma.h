/* SPDX-License-Identifier: MIT */
/*
 * The RDMA CM IP service (IBTA Annex A11; core/cma.c; roce-reference.md 2.3): service IDs built
 * from an rdma_cm port space and port, and the 36-byte cma_hdr that rdma_cm puts at the start of
 * the REQ (and SIDR_REQ) private data. Pure: no I/O, no allocation.
 */
#ifndef UROCE_CM_CMA_H
#define UROCE_CM_CMA_H

#include <stddef.h>
#include <stdint.h>

/* Port spaces (librdmacm/rdma_cma.h enum rdma_port_space). */
enum uroce_rdma_ps {
	UROCE_RDMA_PS_IPOIB = 0x0002,
	UROCE_RDMA_PS_IB = 0x013F,
	UROCE_RDMA_PS_TCP = 0x0106,
	UROCE_RDMA_PS_UDP = 0x0111,
};

#define UROCE_RDMA_IB_IP_PS_MASK     0xFFFFFFFFFFFF0000ull
#define UROCE_RDMA_IB_IP_PORT_MASK   0x000000000000FFFFull
#define UROCE_RDMA_IB_IP_PS_TCP	     0x0000000001060000ull
#define UROCE_RDMA_IB_IP_PS_UDP	     0x0000000001110000ull
#define UROCE_RDMA_IB_IP_PS_IB	     0x00000000013F0000ull
/* What the kernel listens on for every IP port space (core/cma.c IB_CMA_SERVICE_ID). */
#define UROCE_IB_CMA_SERVICE_ID	     0x0000000001000000ull
#define UROCE_IB_CMA_SERVICE_ID_MASK 0xFFFFFFFFFF000000ull
#define UROCE_RDMA_UDP_QKEY	     0x01234567u

/* The service ID of (port space, port): (u64)ps << 16 | port (core/cma.c cma_get_service_id). */
static inline uint64_t uroce_cma_service_id(uint16_t ps, uint16_t port)
{
	return (uint64_t)ps << 16 | port;
}

/*
 * Split an RDMA IP service ID. Returns 0 with *ps (0x01PP) and *port set, or -EINVAL when sid is
 * not in the RDMA IP CM range (sid & UROCE_IB_CMA_SERVICE_ID_MASK != UROCE_IB_CMA_SERVICE_ID).
 * ps and port may be NULL.
 */
int uroce_cma_service_id_split(uint64_t sid, uint16_t *ps, uint16_t *port);

#define UROCE_CMA_HDR_LEN 36
#define UROCE_CMA_VERSION 0x00

/*
 * cma_hdr (core/cma.c struct cma_hdr): version, ip_version in the high nibble of byte 1, the
 * source port, then source and destination addresses of 16 bytes each. An IPv4 address takes
 * the last 4 bytes, after 12 zero bytes (union cma_ip_addr ip4.pad, ip4.addr).
 */
struct uroce_cma_hdr {
	uint8_t ip_version; /* 4 or 6 */
	uint16_t port;	    /* source port */
	union uroce_cma_addr {
		uint32_t ip4;	 /* host order: 198.18.0.3 is 0xC6120003 */
		uint8_t ip6[16]; /* wire order */
	} src, dst;
};

/*
 * Decode p[0..len). Returns 36; -EBADMSG when len < 36; -EINVAL when the version is not 0 or
 * the ip_version nibble is not 4 or 6 (the kernel drops such a REQ). For IPv4 the 12 pad bytes
 * and the reserved low nibble of byte 1 are ignored, as the kernel does.
 */
int uroce_cma_hdr_decode(struct uroce_cma_hdr *h, const uint8_t *p, size_t len);

/*
 * Encode h (version 0; for IPv4, 12 zero bytes before each address). Returns 36; -EINVAL when
 * h->ip_version is not 4 or 6; -ENOSPC when cap < 36. Nothing is written on error.
 */
int uroce_cma_hdr_encode(uint8_t *p, size_t cap, const struct uroce_cma_hdr *h);

#endif
