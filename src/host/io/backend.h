/* SPDX-License-Identifier: MIT */
/*
 * I/O backends: how transport packets leave and enter the process.
 *
 * A backend is a `const struct uroce_backend_ops` table (open, close, tx_burst, rx_burst, fd)
 * over an object that starts with `struct uroce_backend`. Real backends:
 *   uroce_udp_ops     (udp.h) RoCE v2 over kernel UDP sockets (IPv4 and IPv6), no privileges;
 *   uroce_packet_ops  (afpacket.h) RoCE v1 (and v2) over AF_PACKET; needs root or CAP_NET_RAW.
 * Wrappers, themselves backends, stack on any of them (wrap_env.h applies the environment's):
 *   uroce_faults_wrap()   (faults.h) loss, duplication, reordering, corruption on transmit;
 *   uroce_pcap_tap_wrap() (pcap_tap.h) writes every frame sent and received to a pcap file.
 * What they share: framing (frame.h), the RoCE v2 receive check (v2_rx.h), the counters
 * (host/config/io_counters.h).
 *
 * Data path contract. Nothing allocates per packet: every ring is allocated at open.
 * tx_burst() sends the packets in place: the payload goes to the kernel straight from the
 * memory uroce_tx_pkt.payload points at (iovecs, no copy); headers and the ICRC are built in the
 * backend's own per-batch scratch. rx_burst() fills caller descriptors whose data pointers point
 * into the backend's receive ring, valid until the next rx_burst() or close on that backend.
 *
 * Threads: a backend is used by one thread at a time (the device's progress thread). A pcap sink
 * may be shared by several taps (it locks).
 *
 * Errors: 0 or a negative errno; open() also writes a sentence naming the fix into cfg->err.
 */
#ifndef UROCE_HOST_IO_BACKEND_H
#define UROCE_HOST_IO_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "host/config/io_counters.h"
#include "transport/engine.h"
#include "wire/icrc.h"
#include "wire/packet.h"

/* ---- how one packet goes out ------------------------------------------------------------ */

/*
 * A resolved path, built by the host layer from an engine AV and its GID table.
 * Addresses are GIDs: an IPv6 address, a v4-mapped IPv4 address (::ffff:a.b.c.d), or for
 * RoCE v1 the GRH SGID/DGID. sgid must be one of the backend's local addresses (v2: the
 * address its socket is bound to, which is what the kernel puts in the IP header, and what the
 * ICRC covers).
 */
struct uroce_path {
	enum uroce_encap encap;
	uint8_t sgid[16];
	uint8_t dgid[16];
	uint8_t dmac[6];       /* V1 (and v2 over AF_PACKET): the next hop's MAC */
	uint16_t sport;	       /* V2: UDP source port, uroce_udp_sport(); see fixed_sport */
	uint8_t traffic_class; /* IPv4 TOS / IPv6 and GRH traffic class */
	uint8_t hop_limit;     /* TTL / hop limit; 0: the kernel's default (v2), 64 (v1) */
	uint32_t flow_label;   /* V1 GRH; v2/IPv6 sends 0 (as rxe; the ICRC masks it anyway) */
};

/*
 * The UDP source port for a QP pair (roce-reference 1.9; ib_verbs.h rdma_get_udp_sport):
 * flow_label, or when 0 rdma_calc_flow_label(lqpn, rqpn), folded into 0xC000..0xFFFF.
 */
uint16_t uroce_udp_sport(uint32_t lqpn, uint32_t rqpn, uint32_t flow_label);

/* ---- descriptors -------------------------------------------------------------------------- */

struct uroce_tx_desc {
	const struct uroce_tx_pkt *pkt; /* headers, payload in place, pad count */
	const struct uroce_path *path;
	uint32_t icrc_xor; /* XORed into the ICRC after it is computed (fault injection); 0 */
};

/*
 * A received packet. pkt is ready for uroce_eng_rx() except pkt.sgid_index, which the host
 * fills by looking pkt.dgid (our address the packet was sent to) up in the GID table with
 * pkt.encap. pkt.data points into the backend's ring.
 */
struct uroce_rx_desc {
	struct uroce_rx_pkt pkt;
	int ifindex;	/* interface it arrived on (v2: IP_PKTINFO), 0 when unknown */
	uint16_t sport; /* V2 UDP ports */
	uint16_t dport;
	uint16_t ip_id;	   /* V2_IPV4: the IPv4 ID, recovered from the ICRC on UDP sockets */
	uint8_t tclass;	   /* IPv4 TOS, IPv6 or GRH traffic class, as received */
	uint8_t hop_limit; /* TTL or hop limit as received */
	uint8_t smac[6];   /* AF_PACKET only: Ethernet addresses */
	uint8_t dmac[6];
};

/* ---- the backend object and its ops ------------------------------------------------------ */

#define UROCE_BACKEND_MAX_ADDRS 4
#define UROCE_BACKEND_BATCH	32   /* default packets per system call */
#define UROCE_BACKEND_RX_SLOT	4352 /* default receive slot: 4096 MTU + every header */

struct uroce_backend_cfg {
	const char *ifname; /* interface (packet: required unless ifindex; udp: optional) */
	int ifindex;	    /* 0: from ifname */
	uint8_t addrs[UROCE_BACKEND_MAX_ADDRS]
		     [16]; /* udp: local addresses as GIDs, one socket each */
	int n_addrs;
	uint16_t port;	  /* udp: 0 means 4791 (tests use another port) */
	int batch;	  /* 0: UROCE_BACKEND_BATCH */
	uint32_t rx_slot; /* bytes per receive slot; 0: UROCE_BACKEND_RX_SLOT (packet: MTU) */
	bool no_gso;	  /* udp: send one datagram per packet (no UDP_SEGMENT) */
	bool no_gro;	  /* udp: no UDP_GRO on the sockets */
	char *err;	  /* optional: a sentence on why open failed */
	size_t errlen;
	/* packet: this process's QPNs on the device; the kernel drops frames for other QPNs
	 * (QP1 aside: every process gets it, unless opened with uroce_packet_open_shared, which
	 * steers it: share_group.h). 0/0: no QPN filter (RoCE v1 frames only). */
	uint32_t qpn_lo, qpn_hi;
};

struct uroce_backend;

struct uroce_backend_ops {
	const char *name;
	/* A sentence naming the fix when open() fails with -EPERM or -EACCES, or NULL. */
	const char *eperm_msg;
	/* Errors: -EINVAL bad cfg, -EPERM missing privilege, -EADDRNOTAVAIL, -ENODEV, -ENOMEM, or
	 * the failing system call's errno. */
	int (*open)(const struct uroce_backend_cfg *cfg, struct uroce_backend **out);
	void (*close)(struct uroce_backend *b);
	/*
	 * In a forked child: close the child's copies of the backend's descriptors without a word
	 * to the device's share group (the sockets stay the parent's members) and set them to -1,
	 * so that the backend does no I/O and close() only frees memory. NULL: no descriptors.
	 */
	void (*forget)(struct uroce_backend *b);
	/*
	 * Send d[0..n). Returns how many descriptors were consumed (0..n), in order; the caller
	 * offers the rest again later. A packet the kernel refuses outright (no route, too big,
	 * unknown source) is consumed and counted in TX_ERR/TX_NO_SRC; a full socket buffer ends
	 * the burst early (TX_AGAIN). Negative only for a broken backend (-EBADF, ...).
	 */
	int (*tx_burst)(struct uroce_backend *b, const struct uroce_tx_desc *d, int n);
	/*
	 * Receive up to n packets without blocking: ICRC verified, dropped ones counted. Returns
	 * how many descriptors were filled (0 when nothing is pending), or a negative errno.
	 * Fewer than n only when the backend holds nothing more that it already took from the
	 * kernel (the rest of a GRO datagram): callers then sleep on fd(), which is not readable
	 * for such packets.
	 */
	int (*rx_burst)(struct uroce_backend *b, struct uroce_rx_desc *out, int n);
	/* A file descriptor that poll() reports readable when rx_burst has work. */
	int (*fd)(const struct uroce_backend *b);
};

#define UROCE_TX_REFUSED_MAX 16
#define UROCE_TX_BURST_MAX   256

/* The common head of every backend object. */
struct uroce_backend {
	const struct uroce_backend_ops *ops;
	struct uroce_backend *inner; /* wrappers: the backend they wrap, else NULL */
	uint16_t port;		     /* v2 UDP destination port it sends to */
	/*
	 * Non-zero: the UDP source port of every packet sent, whatever path->sport says. A kernel
	 * UDP socket sends from the port it is bound to, so the udp backend sends from `port`
	 * (receivers accept any source port: roce-reference 1.9). ECMP entropy would need a pool of
	 * sending sockets on other ports: not done.
	 */
	uint16_t fixed_sport;
	/*
	 * The last tx_burst's consumed-but-not-sent descriptors (TX_ERR, TX_NO_SRC), as indices
	 * into its d[]; tx_refused_n may exceed UROCE_TX_REFUSED_MAX (only the first are listed).
	 * Real backends fill it; the pcap tap reads it so as not to record what never left.
	 */
	int tx_refused_n;
	uint16_t tx_refused[UROCE_TX_REFUSED_MAX];
	/*
	 * The IPv4 ID each descriptor of the last tx_burst left with, for the pcap tap: 0 except
	 * for the segments of a udp GSO send (segment k: k). A backend that fills it consumes at
	 * most UROCE_TX_BURST_MAX descriptors per call; wrappers leave it 0.
	 */
	uint16_t tx_ip_id[UROCE_TX_BURST_MAX];
	uint8_t mac[6]; /* the interface's MAC (zero for udp) */
	uint64_t cnt[UROCE_IO_CNT_MAX];
};

static inline int uroce_backend_tx(struct uroce_backend *b, const struct uroce_tx_desc *d, int n)
{
	return b->ops->tx_burst(b, d, n);
}

static inline int uroce_backend_rx(struct uroce_backend *b, struct uroce_rx_desc *out, int n)
{
	return b->ops->rx_burst(b, out, n);
}

static inline int uroce_backend_fd(const struct uroce_backend *b)
{
	return b->ops->fd(b);
}

/* For backends: note that d[i] of the current tx_burst was consumed without being sent. */
static inline void uroce_backend_refused(struct uroce_backend *b, int i)
{
	if (b->tx_refused_n < UROCE_TX_REFUSED_MAX)
		b->tx_refused[b->tx_refused_n] = (uint16_t)i;
	b->tx_refused_n++;
}

/* Close a backend and every backend it wraps. NULL is allowed. */
/* For backend open functions: a sentence on why open failed into cfg->err, if given. */
__attribute__((format(printf, 2, 3))) void uroce_backend_seterr(const struct uroce_backend_cfg *cfg,
								const char *fmt, ...);

void uroce_backend_close(struct uroce_backend *b);
/* In a forked child: ops->forget for a backend and every backend it wraps. NULL is allowed. */
void uroce_backend_forget(struct uroce_backend *b);

/* The sum of a counter over a backend and everything it wraps. */
uint64_t uroce_backend_counter(const struct uroce_backend *b, enum uroce_io_counter c);

/* For wrappers: the fd of the backend they wrap (their ops->fd). */
int uroce_backend_inner_fd(const struct uroce_backend *b);

/* The real backend under any wrappers. */
struct uroce_backend *uroce_backend_base(struct uroce_backend *b);

/*
 * A sentence for an open() error of ops: ops->eperm_msg for -EPERM or -EACCES when it has one
 * (AF_PACKET: UROCE_PACKET_EPERM_MSG, afpacket.h), else strerror's text.
 */
const char *uroce_backend_strerror(const struct uroce_backend_ops *ops, int err);

#endif
