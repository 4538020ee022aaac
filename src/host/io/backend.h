/* SPDX-License-Identifier: MIT */
/*
 * I/O backends: how transport packets leave and enter the process.
 *
 * A backend is a `const struct uroce_backend_ops` table (open, close, tx_burst, rx_burst, fd)
 * over an object that starts with `struct uroce_backend`. Real backends:
 *   uroce_udp_ops     RoCE v2 over kernel UDP sockets (IPv4 and IPv6), no privileges needed;
 *   uroce_packet_ops  RoCE v1 (and v2) over AF_PACKET; needs root or CAP_NET_RAW.
 * Wrappers, themselves backends, stack on any of them:
 *   uroce_faults_wrap()  loss, duplication, reordering, corruption on transmit (UROCE_FAULTS);
 *   uroce_pcap_tap_wrap() writes every frame sent and received to a pcap file (UROCE_PCAP).
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
#ifndef UROCE_HOST_BACKEND_H
#define UROCE_HOST_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

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

/* The RoCE v2 UDP port this process uses: UROCE_PORT when set (tests), else 4791. */
uint16_t uroce_udp_port_env(void);

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

/* ---- counters ----------------------------------------------------------------------------- */

#define UROCE_IO_COUNTERS(X)                                                                   \
	X(TX_PKTS, "io_tx_pkts")     /* handed to the kernel */                                \
	X(TX_BYTES, "io_tx_bytes")   /* transport bytes, BTH..ICRC */                          \
	X(TX_ERR, "io_tx_err")	     /* the kernel refused one (skipped) */                    \
	X(TX_NO_SRC, "io_tx_no_src") /* path sgid/encap not served by the backend */           \
	X(TX_AGAIN, "io_tx_again")   /* socket buffer full: burst cut short */                 \
	X(TX_GSO, "io_tx_gso_sends") /* UDP GSO sends of 2+ packets (counted in TX_PKTS too) */  \
	X(RX_PKTS, "io_rx_pkts")     /* delivered by rx_burst */                               \
	X(RX_BYTES, "io_rx_bytes")                                                             \
	X(RX_GRO, "io_rx_gro_recvs") /* UDP GRO datagrams of 2+ packets (split; in RX_PKTS) */  \
	X(RX_DROP_MALFORMED, "io_rx_drop_malformed") /* too short, truncated, not decodable */ \
	X(RX_DROP_ICRC, "io_rx_drop_icrc") /* bad ICRC (IPv4 over UDP: no ID solves it) */     \
	X(RX_DROP_NOT_FOR_US, "io_rx_drop_not_for_us") /* other host's frame, own echo */      \
	X(RX_DROP_VERSION, "io_rx_drop_roce_version") /* a RoCE version the device lacks */    \
	X(RX_IPID_SOLVED, "io_rx_ipid_solved")	       /* IPv4 ID recovered non-zero */        \
	X(FAULT_LOST, "fault_lost")                                                            \
	X(FAULT_DUP, "fault_dup")                                                              \
	X(FAULT_REORDERED, "fault_reordered")                                                  \
	X(FAULT_CORRUPTED, "fault_corrupted")                                                  \
	X(PCAP_TX, "pcap_tx") /* frames written by a tap */                                    \
	X(PCAP_RX, "pcap_rx")                                                                  \
	X(PCAP_ERR, "pcap_err") /* frames a tap could not write */

enum uroce_io_counter {
#define UROCE_IO_CNT_ENUM(id, name) UROCE_IO_##id,
	UROCE_IO_COUNTERS(UROCE_IO_CNT_ENUM)
#undef UROCE_IO_CNT_ENUM
		UROCE_IO_CNT_MAX
};

extern const char *const uroce_io_counter_names[UROCE_IO_CNT_MAX];

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
	 * steers it: share.h). 0/0: no QPN filter (RoCE v1 frames only). */
	uint32_t qpn_lo, qpn_hi;
};

struct uroce_backend;

struct uroce_backend_ops {
	const char *name;
	/* Errors: -EINVAL bad cfg, -EPERM missing privilege, -EADDRNOTAVAIL, -ENODEV, -ENOMEM, or
	 * the failing system call's errno. */
	int (*open)(const struct uroce_backend_cfg *cfg, struct uroce_backend **out);
	void (*close)(struct uroce_backend *b);
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

extern const struct uroce_backend_ops uroce_udp_ops;
extern const struct uroce_backend_ops uroce_packet_ops;

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

/* The sum of a counter over a backend and everything it wraps. */
uint64_t uroce_backend_counter(const struct uroce_backend *b, enum uroce_io_counter c);

/* The real backend under any wrappers. */
struct uroce_backend *uroce_backend_base(struct uroce_backend *b);

/*
 * A sentence for an open() error of ops: the fix for -EPERM on AF_PACKET
 * ("RoCE v1 needs raw sockets: run as root or grant CAP_NET_RAW (setcap cap_net_raw+ep)"),
 * else strerror's text.
 */
const char *uroce_backend_strerror(const struct uroce_backend_ops *ops, int err);

#define UROCE_PACKET_EPERM_MSG \
	"RoCE v1 needs raw sockets: run as root or grant CAP_NET_RAW (setcap cap_net_raw+ep)"

/* ---- framing helpers (shared by the backends and the pcap tap) ---------------------------- */

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
	uint32_t pseudo_crc; /* the ICRC's state after the pseudo-header (uroce_icrc_pseudo) */
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

/* ---- the v2 receive path, as a pure function ---------------------------------------------- */

/* Solvers for the IPv4 ID by transport length, a small direct-mapped cache. */
#define UROCE_IPID_CACHE 32
struct uroce_ipid_cache {
	struct uroce_ipid_solver s[UROCE_IPID_CACHE]; /* roce_len 0: empty */
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

/* ---- fault injection ----------------------------------------------------------------------- */

struct uroce_faults {
	double loss;	/* probability a packet is not sent */
	double dup;	/* ... is sent twice */
	double reorder; /* ... is held back and sent after the next one */
	double corrupt; /* ... has one ICRC bit flipped after the ICRC was computed */
	uint64_t seed;	/* 0: a fixed default */
};

/*
 * Parse "loss=0.05,dup=0.01,reorder=0.02,corrupt=0.001,seed=N" (any subset, any order; an empty
 * string means no faults). Probabilities are decimals in [0, 1].
 * Returns 0, or -EINVAL with a sentence in err naming the bad item.
 */
int uroce_faults_parse(struct uroce_faults *f, const char *spec, char *err, size_t errlen);

/*
 * Wrap *b in a fault injector (on transmit; receive passes through). On success *b is the
 * wrapper, which owns the old *b. Returns 0 or -ENOMEM (then *b is unchanged).
 * Reordering copies the held packet (up to 16 KiB of payload; longer ones are not reordered); the
 * held packet leaves after the next packet sent, or at the next rx_burst at the latest.
 */
int uroce_faults_wrap(struct uroce_backend **b, const struct uroce_faults *f);

/* ---- pcap tap ------------------------------------------------------------------------------ */

/* A capture file shared by the taps of a process; reference-counted, locked. */
struct uroce_pcap_sink;

/* Create (truncate) path and write the pcap header. Returns 0 or -errno. */
int uroce_pcap_sink_open(struct uroce_pcap_sink **out, const char *path);
/* Drop a reference; the last one flushes and closes the file. */
void uroce_pcap_sink_put(struct uroce_pcap_sink *s);
/* Flush buffered frames to the file. */
int uroce_pcap_sink_flush(struct uroce_pcap_sink *s);
/* Add a frame (len < 1 MiB), time-stamped ts_ns (CLOCK_REALTIME). The file holds whole records
 * whenever it is written to. Returns 0, -EMSGSIZE or -EIO. */
int uroce_pcap_sink_write(struct uroce_pcap_sink *s, uint64_t ts_ns, const uint8_t *data,
			  uint32_t len);

/*
 * Wrap *b in a tap that writes every frame sent (as the peer will receive it, ICRC computed with
 * IPv4 ID 0, corruption included) and received (with the recovered IPv4 ID) to sink, so that
 * `uroce pcap-check` verifies every ICRC. The tap takes a reference on sink. Packets the
 * backend consumed without sending (tx_refused) are not recorded (beyond UROCE_TX_REFUSED_MAX
 * in one call they are). UDP frames get zero MACs; the v2 UDP checksum is computed.
 * Returns 0 or -ENOMEM (then *b is unchanged).
 */
int uroce_pcap_tap_wrap(struct uroce_backend **b, struct uroce_pcap_sink *sink);

/*
 * Apply the environment: UROCE_FAULTS (a fault injector) then UROCE_PCAP (a tap; the sink is
 * opened on first use into *sink, shared by later calls, and released by the caller with
 * uroce_pcap_sink_put). The tap sits under the fault injector so that it records what was
 * really sent. Returns 0, or -EINVAL (bad UROCE_FAULTS, message in err) or a file error.
 */
int uroce_backend_wrap_env(struct uroce_backend **b, struct uroce_pcap_sink **sink, char *err,
			   size_t errlen);

#endif
