/* SPDX-License-Identifier: MIT */
/*
 * RoCE v2 over kernel UDP sockets: no privileges needed (DESIGN.md).
 *
 * One socket per configured local address, bound to (address, port). The kernel writes the IP
 * and UDP headers; we write BTH..ICRC and compute the ICRC over the pseudo-header the kernel will
 * send. The one field we cannot see is the IPv4 ID (roce-reference 1.12):
 *  - send: unconnected socket with IP_PMTUDISC_DO, so the kernel sends ID 0, and the ICRC is
 *    computed with ID 0;
 *  - receive: the ICRC is computed with ID 0 and the ID solved for (uroce_v2_rx_verify); a
 *    packet no ID explains is an ICRC drop. DF is assumed set (rxe and NICs set it).
 * IPv6 has no ID: plain ICRC check. Over IPv6 rxe sends a zero UDP checksum, which a socket
 * drops unless UDP_NO_CHECK6_RX is set.
 *
 * Batching: sendmmsg/recvmmsg, `batch` packets per call; each sent packet is three iovecs,
 * [BTH+ext headers | payload in place | pad + ICRC], so the payload is not copied. In a GSO
 * send, one packet's pad + ICRC and the next one's headers are one iovec (two per packet
 * instead of three: the kernel's copy walks fewer pieces; the bare-UDP ceiling, bench/, sends
 * about 5 % more so).
 * TOS/traffic class and TTL/hop limit: a socket's own values go without control messages, which
 * cost the kernel's send path about 50 ns to parse (see own_values); others go in control
 * messages, once per send.
 *
 * Segmentation offload. The kernel's per-datagram path (socket, route, IP, UDP, veth or the
 * NIC, and again on receive) costs far more than our own work per packet, so:
 *  - send (UDP GSO): consecutive packets of one burst to the same destination address and
 *    process (QPN slot: several QPs' turns may share a send), with the same TOS/TTL and the
 *    same length (the last may be shorter), go as one send with a UDP_SEGMENT control message:
 *    the kernel cuts it into one datagram per packet as late as it can (in the NIC, or never on
 *    veth and loopback). The kernel gives the segments IPv4 IDs
 *    0, 1, 2, ... (ID 0 for the send, as above, then one more per segment: inet_gso_segment),
 *    so packet k of a send has its ICRC computed with ID k. Grouping by QPN slot keeps the
 *    steering of shared devices right (the program sees the first segment only); grouping by
 *    QP instead split every send of several streaming QPs at each turn. A kernel or device that
 *    refuses GSO (EIO: no checksum offload) turns it off for that socket; a send refused for
 *    its size is sent again one datagram per packet.
 *  - receive (UDP GRO): a datagram carrying several packets (our GSO sends arriving whole over
 *    veth or loopback, or the kernel's GRO merging a flow) comes with its segment size; it is
 *    split into packets here, each checked on its own (IPv4 ID solved per packet). Segments of
 *    one datagram that do not fit the caller's array are handed out by the next rx_burst()
 *    calls, which receive nothing new until they are gone (the ring stays valid). While other
 *    members share the socket's group (other processes, or other contexts of this one: an
 *    application's and librdmacm's), GRO is off when the interface merges packets itself: a
 *    device's GRO may merge packets for several members' QPs (the kernel asks the socket the
 *    group's hash picks, not the steering program), and steering looks at the first packet
 *    only. Loopback, and an interface whose GRO is off (veth's default), merge nothing: their
 *    multi-packet datagrams are GSO sends, which the program steers whole with or without GRO,
 *    and ours hold one member's packets (above); receiving them whole saves the kernel a
 *    datagram per packet and us a system call per packet. The interface's GRO is asked again
 *    every MERGE_CHECK_EVERY group checks (`ethtool -K` changes it). (Packets arriving merged
 *    on another device, or merged before the interface changed its GRO, could still land at
 *    the wrong member: they are dropped there and retransmitted by their sender.)
 *
 * The UDP source port is the bound port for every packet (a socket sends from its own port), not
 * the path's entropy port; receivers accept any (roce-reference 1.9). See fixed_sport.
 *
 * Sharing (share_group.h): uroce_udp_open_shared() makes each socket a member of its address's
 * SO_REUSEPORT group, whose steering program hands every datagram straight to the socket of the
 * process owning the destination QP. The group's watch fd sits in our epoll set: with several
 * sockets, rx_burst checks the groups whose fd a sweep of the set (rx_ready) found ready, so a
 * busy data path (or an application busy-polling its CQ, which makes empty bursts all the time)
 * pays nothing while nothing changes, and a thread woken by a watch fd alone checks at once
 * (after an empty look at the hot socket, uroce_udp_woken);
 * with one socket, no sweep tells, and rx_burst checks its group every SHARE_CHECK_EVERY bursts,
 * empty or not (a progress thread woken by the watch fd alone finds it within that many quick
 * rounds).
 *
 * Not done: sending a non-zero IPv6 flow label (rxe sends 0; the ICRC masks it).
 */
#include <errno.h>
#include <stdarg.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "host/config/gid.h"
#include "host/config/io_counters.h"
#include "host/io/backend.h"
#include "host/io/frame.h"
#include "host/io/rx_entry.h"
#include "host/io/share_group.h"
#include "host/io/share_members.h"
#include "host/io/udp.h"
#include "host/io/v2_rx.h"
#include "host/os/ethtool.h"
#include "host/os/mono_clock.h"
#include "host/os/netif.h"
#include "host/os/nocancel.h"
#include "host/os/v4mapped.h"
#include "wire/bytes.h"

#ifndef UDP_NO_CHECK6_RX
#define UDP_NO_CHECK6_RX 102
#endif
#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif
#ifndef SOL_UDP
#define SOL_UDP 17
#endif

#define SHARE_CHECK_EVERY 64
/* Group checks between two looks at whether the interface merges packets (the top of the
 * file): two ioctls per this many times SHARE_CHECK_EVERY bursts. */
#define MERGE_CHECK_EVERY 16
/* The epoll set's data: a socket's index, with this bit for its share group's fd. */
#define EV_GROUP 0x100u
/* Receive buffer per socket (what the kernel accounts: payload plus skb overhead). */
#define UROCE_UDP_RCVBUF (32 << 20)
#define TX_CTL_LEN (2 * CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(uint16_t)))
#define RX_CTL_LEN (CMSG_SPACE(sizeof(struct in6_pktinfo)) + 3 * CMSG_SPACE(sizeof(int)) + 64)
/* One GSO send: the kernel's UDP_MAX_SEGMENTS (64 in Linux 6.1), and a UDP payload IPv4 allows. */
#define GSO_MAX_SEGS  64
#define GSO_MAX_BYTES 65507u
#define TX_BATCH_MIN  (4 * GSO_MAX_SEGS)
/* A receive slot when GRO is on: the largest datagram GRO builds (64 KiB). */
#define GRO_SLOT (64u << 10)

union sa {
	struct sockaddr sa;
	struct sockaddr_in in;
	struct sockaddr_in6 in6;
};

struct udp_sock {
	int fd;
	enum uroce_encap encap;
	uint8_t gid[16];		 /* the bound address: ours, or an IP multicast group */
	bool group;			 /* bound to a multicast group (uroce_udp_mcast_join) */
	struct uroce_share_group *share; /* NULL: bound alone */
	bool gso;			 /* send with UDP_SEGMENT */
	bool gro;			 /* UDP_GRO is on */
	uint8_t tos, ttl;	/* what it sends without control messages; ttl 0: default */
	uint8_t ttl_default;	/* the kernel's default TTL / hop limit */
	int last_tos, last_ttl; /* the last unicast send's; -1: none yet */
};

/* A received datagram, parsed: where it came from, and how to cut it. */
struct rx_meta {
	struct uroce_v2_rx_in in; /* data and len: per packet */
	uint16_t seg;		  /* GRO segment size; 0: one packet */
	uint8_t drop;		  /* counter to bump instead (UROCE_IO_RX_DROP_*), 0: none */
};

#define MAX_SOCKS (UROCE_BACKEND_MAX_ADDRS + UROCE_UDP_MAX_GROUPS)

struct udp_be {
	struct uroce_backend b;
	struct udp_sock s[MAX_SOCKS]; /* the addresses' sockets, and groups' (any order) */
	int ns;
	int epfd;
	int ifindex;
	int batch;  /* datagrams per recvmmsg */
	int tbatch; /* packets per send burst */
	uint32_t slot;
	bool want_gro;	   /* GRO allowed (cfg); on per socket while the group has one member */
	bool gro_shared;   /* ... or always: the interface merges nothing (the top of the file) */
	bool loopback;	   /* the interface is a loopback device */
	bool gso_once_off; /* the next send goes one datagram per packet (a GSO send failed) */
	int rx_rr; /* socket to read first, round robin */
	int hot;		/* the socket that had the last datagram */
	uint64_t sweep_due;	/* when a receive call looks at every socket next (ns) */
	uint32_t sweep_ns;	/* the interval (rx_ready) */
	bool woken;		/* the fd polled readable: the next receive starts with hot */
	unsigned hot_wakes;	/* wakes since the last sweep that looked at hot alone */
	const struct uroce_share_cfg *share; /* during open only */
	unsigned share_tick;
	unsigned groups_ready; /* sockets whose group's fd the last sweep found ready */
	unsigned merge_tick; /* group checks since the last look at the interface's GRO */
	/* transmit scratch, batch entries each */
	struct uroce_txframe *tf;
	struct uroce_path *tpath; /* the path with the real source port */
	struct mmsghdr *gmsg;	  /* one per send (a GSO send covers several packets) */
	int *gsegs;		  /* packets in each send */
	struct iovec *tiov;	  /* three per packet */
	struct iovec *giov;	  /* GSO sends: two per packet and one (join_iovecs) */
	union sa *tname;
	uint8_t *tctl;
	/* receive ring */
	uint8_t *ring;
	struct mmsghdr *rmsg;
	struct iovec *riov;
	union sa *rname;
	uint8_t *rctl;
	struct rx_meta *rmeta;
	int rcount;    /* datagrams in the ring */
	int rnext;     /* the next one to split */
	uint32_t roff; /* where its next packet starts */
	struct uroce_ipid_cache cache;
};



static void gid_str(const uint8_t *g, char *buf, size_t len)
{
	if (uroce_gid_is_v4(g))
		inet_ntop(AF_INET, g + 12, buf, (socklen_t)len);
	else
		inet_ntop(AF_INET6, g, buf, (socklen_t)len);
}

static void udp_close(struct uroce_backend *bb)
{
	struct udp_be *b = (struct udp_be *)bb;

	for (int i = 0; i < b->ns; i++) {
		if (b->s[i].share)
			uroce_share_leave(b->s[i].share, b->s[i].fd); /* closes the fd */
		else
			close(b->s[i].fd);
	}
	if (b->epfd >= 0)
		close(b->epfd);
	free(b->tf);
	free(b->tpath);
	free(b->gmsg);
	free(b->gsegs);
	free(b->tiov);
	free(b->giov);
	free(b->tname);
	free(b->tctl);
	free(b->ring);
	free(b->rmsg);
	free(b->riov);
	free(b->rname);
	free(b->rctl);
	free(b->rmeta);
	free(b);
}

static void udp_forget(struct uroce_backend *bb)
{
	struct udp_be *b = (struct udp_be *)bb;

	for (int i = 0; i < b->ns; i++) {
		if (b->s[i].share)
			uroce_share_forget(b->s[i].share);
		b->s[i].share = NULL;
		close(b->s[i].fd);
		b->s[i].fd = -1;
	}
	if (b->epfd >= 0)
		close(b->epfd);
	b->epfd = -1;
}

static int setint(int fd, int level, int opt, int v)
{
	return setsockopt(fd, level, opt, &v, sizeof(v)) < 0 ? -errno : 0;
}

/* Is interface ifindex a loopback device (IFF_LOOPBACK)? */
static bool is_loopback(int ifindex)
{
	unsigned flags;

	return ifindex > 0 && uroce_netif_flags((unsigned)ifindex, &flags) == 0 &&
	       (flags & IFF_LOOPBACK);
}

/*
 * Whether every datagram holding several packets is one of our GSO sends: the interface is
 * loopback or does no GRO of its own (the top of the file). Asked over fd, a socket of the
 * interface's network namespace; an interface that cannot tell counts as merging.
 */
static bool merges_nothing(const struct udp_be *b, int fd)
{
	return b->loopback || (b->ifindex > 0 && uroce_ethtool_gro(fd, (unsigned)b->ifindex) == 0);
}

/* GRO on while the socket is alone in its group, or when nothing merges packets (the top of the
 * file). */
static void update_gro(const struct udp_be *b, struct udp_sock *s)
{
	bool on = b->want_gro && (!s->share || b->gro_shared || uroce_share_members(s->share) <= 1);

	if (on != s->gro && setint(s->fd, SOL_UDP, UDP_GRO, on) == 0)
		s->gro = on;
}

/*
 * Sends to a multicast group leave by the device's interface (IP_MULTICAST_IF), not by the
 * routing table's choice, which may have no route to 224.0.0.0/4 or ff00::/8 at all. The
 * kernel loops each one back to this host's members of the group (IP_MULTICAST_LOOP is on by
 * default), as rxe delivers to every attached QP of the node.
 */
static int set_mcast_if(int fd, bool v4, int ifindex)
{
	if (v4) {
		struct ip_mreqn m = {.imr_ifindex = ifindex};

		return setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &m, sizeof(m)) < 0 ? -errno : 0;
	}
	return setint(fd, IPPROTO_IPV6, IPV6_MULTICAST_IF, ifindex);
}

static int open_sock(struct udp_be *b, const struct uroce_backend_cfg *cfg, const uint8_t *gid)
{
	struct udp_sock *s = &b->s[b->ns];
	bool v4 = uroce_gid_is_v4(gid);
	char as[INET6_ADDRSTRLEN];
	union sa a;
	socklen_t alen;
	int fd, r = 0;

	gid_str(gid, as, sizeof(as));
	memset(&a, 0, sizeof(a));
	if (v4) {
		a.in.sin_family = AF_INET;
		a.in.sin_port = htons(b->b.port);
		memcpy(&a.in.sin_addr, gid + 12, 4);
		alen = sizeof(a.in);
		if (a.in.sin_addr.s_addr == 0) {
			uroce_backend_seterr(cfg,
			       "RoCE v2 over UDP: %s is not a usable local address: give the "
			       "device's own address",
			       as);
			return -EINVAL;
		}
	} else {
		static const uint8_t zero[16];

		a.in6.sin6_family = AF_INET6;
		a.in6.sin6_port = htons(b->b.port);
		memcpy(&a.in6.sin6_addr, gid, 16);
		alen = sizeof(a.in6);
		if (memcmp(gid, zero, 16) == 0) {
			uroce_backend_seterr(cfg,
			       "RoCE v2 over UDP: %s is not a usable local address: give the "
			       "device's own address",
			       as);
			return -EINVAL;
		}
		if (IN6_IS_ADDR_LINKLOCAL(&a.in6.sin6_addr)) {
			if (!b->ifindex) {
				uroce_backend_seterr(cfg,
				       "RoCE v2 over UDP: link-local address %s needs an "
				       "interface",
				       as);
				return -EINVAL;
			}
			a.in6.sin6_scope_id = (uint32_t)b->ifindex;
		}
	}
	fd = socket(v4 ? AF_INET : AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (v4) {
		/* DF and ID 0 (roce-reference 1.12). */
		r = setint(fd, IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DO);
		r = r ? r : setint(fd, IPPROTO_IP, IP_PKTINFO, 1);
		r = r ? r : setint(fd, IPPROTO_IP, IP_RECVTOS, 1);
		r = r ? r : setint(fd, IPPROTO_IP, IP_RECVTTL, 1);
	} else {
		r = setint(fd, IPPROTO_IPV6, IPV6_V6ONLY, 1);
		r = r ? r : setint(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, IPV6_PMTUDISC_DO);
		r = r ? r : setint(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, 1);
		r = r ? r : setint(fd, IPPROTO_IPV6, IPV6_RECVTCLASS, 1);
		r = r ? r : setint(fd, IPPROTO_IPV6, IPV6_RECVHOPLIMIT, 1);
		/* rxe sends UDP checksum 0 over IPv6 too. */
		r = r ? r : setint(fd, IPPROTO_UDP, UDP_NO_CHECK6_RX, 1);
	}
	if (r == 0 && b->ifindex)
		r = set_mcast_if(fd, v4, b->ifindex);
	if (r) {
		close(fd);
		return r;
	}
	/*
	 * Larger buffers help bursts; failure is harmless. A receiver that falls behind a few
	 * QPs' windows (512 PSNs each) overflows 4 MiB, and a lost first packet of a go-back
	 * costs a local ACK timeout (about 0.5 s with rdma_cm's): with CAP_NET_ADMIN, go past
	 * net.core.rmem_max; without it, SO_RCVBUF is capped by it.
	 */
	if (setint(fd, SOL_SOCKET, SO_RCVBUFFORCE, UROCE_UDP_RCVBUF))
		setint(fd, SOL_SOCKET, SO_RCVBUF, UROCE_UDP_RCVBUF);
	setint(fd, SOL_SOCKET, SO_SNDBUF, 4 << 20);
	if (b->share) {
		r = uroce_share_join(b->share, fd, &a.sa, alen, &s->share);
		if (r == -ENOTRECOVERABLE) {
			/* No membership file (read-only run-time directory?): bind alone. */
			r = setint(fd, SOL_SOCKET, SO_REUSEPORT, 0);
			r = r ? r : (bind(fd, &a.sa, alen) < 0 ? -errno : 0);
		}
	} else {
		r = bind(fd, &a.sa, alen) < 0 ? -errno : 0;
	}
	if (r == -EEXIST) {
		uroce_backend_seterr(cfg, "RoCE v2 over UDP: on %s, another process of the group uses QPNs %u..%u",
		       as, b->share->qpn_lo, b->share->qpn_hi);
		close(fd);
		return r;
	}
	if (r < 0) {
		char port[8];

		snprintf(port, sizeof(port), "%u", b->b.port);
		if (r == -EADDRINUSE)
			uroce_backend_seterr(cfg,
			       "RoCE v2 over UDP: port %s on %s is in use (a uroce process "
			       "of another user or run-time directory, or the kernel's rxe on "
			       "this address?)",
			       port, as);
		else if (r == -EADDRNOTAVAIL)
			uroce_backend_seterr(cfg, "RoCE v2 over UDP: %s is not an address of this host", as);
		else
			uroce_backend_seterr(cfg, "RoCE v2 over UDP: cannot bind %s: %s", as, strerror(-r));
		close(fd);
		return r;
	}
	struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)b->ns};
	struct epoll_event gev = {.events = EPOLLIN, .data.u32 = (uint32_t)b->ns | EV_GROUP};

	if (epoll_ctl(b->epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ||
	    (s->share && epoll_ctl(b->epfd, EPOLL_CTL_ADD, uroce_share_fd(s->share), &gev) < 0)) {
		r = -errno;
		if (s->share)
			uroce_share_leave(s->share, fd);
		else
			close(fd);
		s->share = NULL;
		return r;
	}
	s->fd = fd;
	s->encap = v4 ? UROCE_ENCAP_V2_IPV4 : UROCE_ENCAP_V2_IPV6;
	memcpy(s->gid, gid, 16);
	int v;
	socklen_t vl = sizeof(v);

	/* GSO is sent per message (UDP_SEGMENT control message); the option says it exists. */
	s->gso = !cfg->no_gso && getsockopt(fd, SOL_UDP, UDP_SEGMENT, &v, &vl) == 0;
	vl = sizeof(v);
	if (getsockopt(fd, v4 ? IPPROTO_IP : IPPROTO_IPV6, v4 ? IP_TTL : IPV6_UNICAST_HOPS, &v,
		       &vl) < 0 ||
	    v < 1 || v > 255)
		v = 64;
	s->ttl_default = (uint8_t)v;
	s->tos = s->ttl = 0;
	s->last_tos = s->last_ttl = -1;
	s->gro = false;
	if (b->ns == 0)
		b->gro_shared = merges_nothing(b, fd);
	update_gro(b, s);
	b->ns++;
	b->sweep_due = 0; /* a new socket: the next receive looks at it */
	return 0;
}

/* Receive entry j (rx_entry.h): its slot of the ring, its address and control buffers. */
static void rx_msg_reset(struct udp_be *b, int j)
{
	uroce_rx_entry_reset(&b->rmsg[j], sizeof(b->rname[j]), RX_CTL_LEN);
}

static void rx_msg_init(struct udp_be *b, int j)
{
	uroce_rx_entry_init(&b->rmsg[j], &b->riov[j], b->ring + (size_t)j * b->slot, b->slot,
			    &b->rname[j], sizeof(b->rname[j]), b->rctl + (size_t)j * RX_CTL_LEN,
			    RX_CTL_LEN);
}

static int open_backend(const struct uroce_backend_cfg *cfg, const struct uroce_share_cfg *share,
			struct uroce_backend **out)
{
	struct udp_be *b;
	int r;

	if (cfg->n_addrs < 1 || cfg->n_addrs > UROCE_BACKEND_MAX_ADDRS) {
		uroce_backend_seterr(cfg, "RoCE v2 over UDP: give 1 to 4 local addresses");
		return -EINVAL;
	}
	if (cfg->batch < 0 || cfg->batch > 1024) {
		uroce_backend_seterr(cfg, "RoCE v2 over UDP: batch must be 1..1024");
		return -EINVAL;
	}
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->b.ops = &uroce_udp_ops;
	b->b.port = cfg->port ? cfg->port : UROCE_UDP_PORT;
	b->b.fixed_sport = b->b.port;
	b->epfd = -1;
	b->batch = cfg->batch ? cfg->batch : UROCE_BACKEND_BATCH;
	b->slot = cfg->rx_slot ? cfg->rx_slot : UROCE_BACKEND_RX_SLOT;
	b->ifindex = cfg->ifindex;
	b->share = share;
	b->want_gro = !cfg->no_gro;
	if (b->want_gro && b->slot < GRO_SLOT)
		b->slot = GRO_SLOT; /* untouched pages of the ring cost no memory */
	if (!b->ifindex && cfg->ifname) {
		b->ifindex = (int)if_nametoindex(cfg->ifname);
		if (!b->ifindex) {
			uroce_backend_seterr(cfg, "RoCE v2 over UDP: no interface named %s", cfg->ifname);
			free(b);
			return -ENODEV;
		}
	}
	b->loopback = b->ifindex && is_loopback(b->ifindex);
	/* A send burst holds a few GSO sends' worth of packets, whatever the receive batch. */
	b->tbatch = b->batch < TX_BATCH_MIN ? TX_BATCH_MIN : b->batch;
	size_t nb = (size_t)b->batch, nt = (size_t)b->tbatch;

	b->tf = calloc(nt, sizeof(*b->tf));
	b->tpath = calloc(nt, sizeof(*b->tpath));
	b->gmsg = calloc(nt, sizeof(*b->gmsg));
	b->gsegs = calloc(nt, sizeof(*b->gsegs));
	b->rmeta = calloc(nb, sizeof(*b->rmeta));
	b->tiov = calloc(3 * nt, sizeof(*b->tiov));
	b->giov = calloc(3 * nt, sizeof(*b->giov));
	b->tname = calloc(nt, sizeof(*b->tname));
	b->tctl = calloc(nt, TX_CTL_LEN);
	b->ring = malloc(nb * b->slot);
	b->rmsg = calloc(nb, sizeof(*b->rmsg));
	b->riov = calloc(nb, sizeof(*b->riov));
	b->rname = calloc(nb, sizeof(*b->rname));
	b->rctl = calloc(nb, RX_CTL_LEN);
	b->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (!b->tf || !b->tpath || !b->gmsg || !b->gsegs || !b->tiov || !b->giov || !b->tname ||
	    !b->tctl || !b->ring || !b->rmsg || !b->riov || !b->rname || !b->rctl || !b->rmeta ||
	    b->epfd < 0) {
		r = b->epfd < 0 ? -errno : -ENOMEM;
		udp_close(&b->b);
		return r;
	}
	for (int j = 0; j < b->batch; j++)
		rx_msg_init(b, j);
	for (int i = 0; i < cfg->n_addrs; i++) {
		r = open_sock(b, cfg, cfg->addrs[i]);
		if (r < 0) {
			udp_close(&b->b);
			return r;
		}
	}
	b->share = NULL;
	*out = &b->b;
	return 0;
}

static int udp_open(const struct uroce_backend_cfg *cfg, struct uroce_backend **out)
{
	return open_backend(cfg, NULL, out);
}

int uroce_udp_open_shared(const struct uroce_backend_cfg *cfg, const struct uroce_share_cfg *share,
			  struct uroce_backend **out)
{
	if (!share || !share->rundir || share->qpn_lo > share->qpn_hi) {
		uroce_backend_seterr(cfg, "RoCE v2 over UDP: sharing needs a run-time directory and a QPN range");
		return -EINVAL;
	}
	return open_backend(cfg, share, out);
}

int uroce_udp_share_gsi(struct uroce_backend *bb, const struct uroce_share_cfg *share)
{
	struct udp_be *b = (struct udp_be *)uroce_backend_base(bb);
	int r = 0;

	if (b->b.ops != &uroce_udp_ops)
		return -EINVAL;
	for (int i = 0; i < b->ns && r == 0; i++)
		if (b->s[i].share)
			r = uroce_share_set_gsi(b->s[i].share, b->s[i].fd, share);
	return r;
}

/* The socket bound to gid, or -1. */
static int sock_of(const struct udp_be *b, const uint8_t *gid)
{
	for (int i = 0; i < b->ns; i++)
		if (memcmp(b->s[i].gid, gid, 16) == 0)
			return i;
	return -1;
}

static bool in_cfg(const struct uroce_backend_cfg *cfg, const uint8_t *gid)
{
	for (int k = 0; k < cfg->n_addrs; k++)
		if (memcmp(cfg->addrs[k], gid, 16) == 0)
			return true;
	return false;
}

/* Close socket i and move the last one into its place (its epoll index follows). */
static void drop_sock(struct udp_be *b, int i)
{
	struct udp_sock *s = &b->s[i];

	epoll_ctl(b->epfd, EPOLL_CTL_DEL, s->fd, NULL);
	if (s->share) {
		epoll_ctl(b->epfd, EPOLL_CTL_DEL, uroce_share_fd(s->share), NULL);
		uroce_share_leave(s->share, s->fd); /* closes the fd */
	} else {
		close(s->fd);
	}
	if (i != --b->ns) {
		struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
		struct epoll_event gev = {.events = EPOLLIN, .data.u32 = (uint32_t)i | EV_GROUP};

		*s = b->s[b->ns];
		epoll_ctl(b->epfd, EPOLL_CTL_MOD, s->fd, &ev);
		if (s->share)
			epoll_ctl(b->epfd, EPOLL_CTL_MOD, uroce_share_fd(s->share), &gev);
	}
	b->rx_rr = 0;
	b->hot = 0;
	b->sweep_due = 0;
}

int uroce_udp_rebind(struct uroce_backend *bb, const struct uroce_backend_cfg *cfg,
		     const struct uroce_share_cfg *share)
{
	struct udp_be *b = (struct udp_be *)uroce_backend_base(bb);
	int r = 0;

	if (!b || b->b.ops != &uroce_udp_ops || cfg->n_addrs < 1 ||
	    cfg->n_addrs > UROCE_BACKEND_MAX_ADDRS)
		return -EINVAL;
	for (int i = 0; i < b->ns;) {
		if (b->s[i].group || in_cfg(cfg, b->s[i].gid))
			i++;
		else
			drop_sock(b, i);
	}
	b->share = share;
	for (int k = 0; k < cfg->n_addrs && r == 0; k++)
		if (sock_of(b, cfg->addrs[k]) < 0)
			r = open_sock(b, cfg, cfg->addrs[k]);
	b->share = NULL;
	return r;
}

/* The socket bound to group, or -1. */
static int group_sock(const struct udp_be *b, const uint8_t *group)
{
	for (int i = 0; i < b->ns; i++)
		if (b->s[i].group && memcmp(b->s[i].gid, group, 16) == 0)
			return i;
	return -1;
}

static int membership(int fd, bool v4, const uint8_t *group, int ifindex, bool join)
{
	if (v4) {
		struct ip_mreqn m = {.imr_ifindex = ifindex};

		memcpy(&m.imr_multiaddr, group + 12, 4);
		return setsockopt(fd, IPPROTO_IP, join ? IP_ADD_MEMBERSHIP : IP_DROP_MEMBERSHIP, &m,
				  sizeof(m)) < 0
			       ? -errno
			       : 0;
	}
	struct ipv6_mreq m = {.ipv6mr_interface = (unsigned)ifindex};

	memcpy(&m.ipv6mr_multiaddr, group, 16);
	return setsockopt(fd, IPPROTO_IPV6, join ? IPV6_JOIN_GROUP : IPV6_LEAVE_GROUP, &m,
			  sizeof(m)) < 0
		       ? -errno
		       : 0;
}

/*
 * A socket of its own per group, bound to (group, port): the kernel hands a multicast datagram
 * to every socket bound to its address and port (no SO_REUSEPORT steering: each process of a
 * shared device that joined gets its copy), and a socket bound to the group gets nothing else.
 * SO_REUSEADDR lets the processes bind the same (group, port).
 */
int uroce_udp_mcast_join(struct uroce_backend *bb, const uint8_t group[16])
{
	struct udp_be *b = (struct udp_be *)uroce_backend_base(bb);

	if (!b || b->b.ops != &uroce_udp_ops || !uroce_gid_is_mcast(group) || !b->ifindex)
		return -EINVAL;
	if (group_sock(b, group) >= 0)
		return 0;
	if (b->ns == MAX_SOCKS)
		return -ENOSPC;
	bool v4 = uroce_gid_is_v4(group);
	union sa a;
	socklen_t alen;
	int fd = socket(v4 ? AF_INET : AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), r;

	if (fd < 0)
		return -errno;
	memset(&a, 0, sizeof(a));
	if (v4) {
		a.in.sin_family = AF_INET;
		a.in.sin_port = htons(b->b.port);
		memcpy(&a.in.sin_addr, group + 12, 4);
		alen = sizeof(a.in);
		r = setint(fd, IPPROTO_IP, IP_PKTINFO, 1);
		r = r ? r : setint(fd, IPPROTO_IP, IP_RECVTOS, 1);
		r = r ? r : setint(fd, IPPROTO_IP, IP_RECVTTL, 1);
	} else {
		a.in6.sin6_family = AF_INET6;
		a.in6.sin6_port = htons(b->b.port);
		memcpy(&a.in6.sin6_addr, group, 16);
		a.in6.sin6_scope_id = (uint32_t)b->ifindex;
		alen = sizeof(a.in6);
		r = setint(fd, IPPROTO_IPV6, IPV6_V6ONLY, 1);
		r = r ? r : setint(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, 1);
		r = r ? r : setint(fd, IPPROTO_IPV6, IPV6_RECVTCLASS, 1);
		r = r ? r : setint(fd, IPPROTO_IPV6, IPV6_RECVHOPLIMIT, 1);
		r = r ? r : setint(fd, IPPROTO_UDP, UDP_NO_CHECK6_RX, 1);
	}
	r = r ? r : setint(fd, SOL_SOCKET, SO_REUSEADDR, 1);
	if (r == 0 && bind(fd, &a.sa, alen) < 0)
		r = -errno;
	r = r ? r : membership(fd, v4, group, b->ifindex, true);
	struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)b->ns};

	if (r == 0 && epoll_ctl(b->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		r = -errno;
	if (r) {
		close(fd);
		return r;
	}
	if (setint(fd, SOL_SOCKET, SO_RCVBUFFORCE, UROCE_UDP_RCVBUF))
		setint(fd, SOL_SOCKET, SO_RCVBUF, UROCE_UDP_RCVBUF);
	struct udp_sock *s = &b->s[b->ns++];

	b->sweep_due = 0;
	*s = (struct udp_sock){.fd = fd,
			       .encap = v4 ? UROCE_ENCAP_V2_IPV4 : UROCE_ENCAP_V2_IPV6,
			       .group = true};
	memcpy(s->gid, group, 16);
	return 0;
}

int uroce_udp_mcast_leave(struct uroce_backend *bb, const uint8_t group[16])
{
	struct udp_be *b = (struct udp_be *)uroce_backend_base(bb);

	if (!b || b->b.ops != &uroce_udp_ops)
		return -EINVAL;
	int i = group_sock(b, group);

	if (i < 0)
		return -ENOENT;
	/* Closing the socket drops the membership (IGMP/MLD leave when it was the host's last);
	 * what it queued goes with it. Datagrams already in the ring stay there (parsed). */
	drop_sock(b, i);
	return 0;
}

static int udp_fd(const struct uroce_backend *bb)
{
	return ((const struct udp_be *)bb)->epfd;
}

static int find_sock(const struct udp_be *b, const struct uroce_path *p)
{
	for (int i = 0; i < b->ns; i++)
		if (!b->s[i].group && b->s[i].encap == p->encap &&
		    memcmp(b->s[i].gid, p->sgid, 16) == 0)
			return i;
	return -1;
}

static void add_cmsg(struct msghdr *m, size_t *used, int level, int type, const void *v,
		     size_t len)
{
	struct cmsghdr *c = (struct cmsghdr *)((uint8_t *)m->msg_control + *used);

	c->cmsg_level = level;
	c->cmsg_type = type;
	c->cmsg_len = CMSG_LEN(len);
	memcpy(CMSG_DATA(c), v, len);
	*used += CMSG_SPACE(len);
	m->msg_controllen = *used;
}

static void add_cmsg_int(struct msghdr *m, size_t *used, int level, int type, int v)
{
	add_cmsg(m, used, level, type, &v, sizeof(v));
}

/*
 * TOS and TTL as control messages (options tos_opt and ttl_opt of level): TTL 0 asks for the
 * default, which a unicast send from a socket sending its own TTL must give as a number.
 */
static void add_ctl(struct msghdr *m, size_t *used, const struct udp_sock *s, bool mc, int level,
		    int tos_opt, int ttl_opt, uint8_t tos, uint8_t ttl)
{
	add_cmsg_int(m, used, level, tos_opt, tos);
	if (ttl)
		add_cmsg_int(m, used, level, ttl_opt, ttl);
	else if (s->ttl && !mc)
		add_cmsg_int(m, used, level, ttl_opt, s->ttl_default);
}

/*
 * A send's TOS and TTL (ttl 0: the default) become socket s's own when the send before it on s
 * wanted the same, or when it wants the default TTL back, so that a stream of sends over one
 * path carries no control messages. Only the first send of a call may change them: the ones
 * before it in the call count on the socket's values. Multicast sends are not counted (their
 * default TTL is another option's). Returns whether s now sends these values by itself.
 */
static bool own_values(struct udp_sock *s, bool first, uint8_t tos, uint8_t ttl)
{
	bool v4 = s->encap == UROCE_ENCAP_V2_IPV4;
	bool again = s->last_tos == tos && s->last_ttl == ttl;

	s->last_tos = tos;
	s->last_ttl = ttl;
	if (tos == s->tos && ttl == s->ttl)
		return true;
	if (!first || !(again || (ttl == 0 && s->ttl != 0)))
		return false;
	if (tos != s->tos &&
	    setint(s->fd, v4 ? IPPROTO_IP : IPPROTO_IPV6, v4 ? IP_TOS : IPV6_TCLASS, tos) < 0)
		return false;
	s->tos = tos;
	if (ttl != s->ttl && setint(s->fd, v4 ? IPPROTO_IP : IPPROTO_IPV6,
				    v4 ? IP_TTL : IPV6_UNICAST_HOPS, ttl ? ttl : -1) < 0)
		return false;
	s->ttl = ttl;
	return true;
}

/* Packet j's three iovecs: headers, payload in place, pad + ICRC. */
static void set_iovecs(struct udp_be *b, int j, const struct uroce_tx_pkt *p)
{
	struct uroce_txframe *f = &b->tf[j];
	struct iovec *iov = &b->tiov[3 * j];

	iov[0].iov_base = f->head + f->t_off;
	iov[0].iov_len = (size_t)(f->head_len - f->t_off);
	iov[1].iov_base = (void *)(uintptr_t)p->payload; /* the kernel only reads it */
	iov[1].iov_len = p->payload_len;
	iov[2].iov_base = f->tail;
	iov[2].iov_len = f->tail_len;
}

/*
 * Frame packet j for d, its ICRC computed with IPv4 ID ip_id, with its three iovecs; returns 0
 * or the error that makes the packet unsendable.
 */
static int prep_tx(struct udp_be *b, int j, const struct uroce_tx_desc *d, uint16_t ip_id)
{
	struct uroce_txframe *f = &b->tf[j];
	const struct uroce_tx_pkt *p = d->pkt;
	struct uroce_path *path = &b->tpath[j];
	struct uroce_tx_desc x = {p, path, d->icrc_xor};

	/* The kernel sends from the bound port: the ICRC covers that one, not path->sport. */
	*path = *d->path;
	path->sport = b->b.port;
	int r = uroce_txframe_build(f, &x, b->b.mac, b->b.port, ip_id);

	if (r < 0)
		return r;
	set_iovecs(b, j, p);
	return 0;
}

/*
 * Frame packet j, which follows packet j - 1 (IPv4 ID prev_id) in a GSO send with the same
 * length: headers copied, the pseudo-header's ICRC state from the ID alone (uroce_txframe_next).
 * Returns 0, or what prep_tx returns for a packet it cannot treat so.
 */
static int prep_next(struct udp_be *b, int j, const struct uroce_tx_desc *d, uint16_t prev_id,
		     uint16_t ip_id)
{
	struct uroce_txframe *f = &b->tf[j];
	const struct uroce_tx_pkt *p = d->pkt;

	if (uroce_txframe_next(f, &b->tf[j - 1], prev_id, d, ip_id) < 0)
		return prep_tx(b, j, d, ip_id);
	set_iovecs(b, j, p);
	return 0;
}

/* Fill send g, starting at packet j: its address, TOS and TTL (one per send, not per packet). */
static void prep_msg(struct udp_be *b, struct udp_sock *s, int g, int j, bool v4)
{
	const struct uroce_path *path = &b->tpath[j];
	uint8_t tos = path->traffic_class, ttl = path->hop_limit;
	struct msghdr *m = &b->gmsg[g].msg_hdr;
	union sa *a = &b->tname[g];
	size_t used = 0;

	memset(m, 0, sizeof(*m));
	m->msg_iov = &b->tiov[3 * j];
	m->msg_iovlen = 3;
	m->msg_name = a;
	m->msg_control = b->tctl + (size_t)g * TX_CTL_LEN;
	memset(a, 0, sizeof(*a));
	if (v4) {
		a->in.sin_family = AF_INET;
		a->in.sin_port = htons(b->b.port);
		memcpy(&a->in.sin_addr, path->dgid + 12, 4);
		m->msg_namelen = sizeof(a->in);
		bool mc = IN_MULTICAST(ntohl(a->in.sin_addr.s_addr));

		if (mc || !own_values(s, g == 0, tos, ttl))
			add_ctl(m, &used, s, mc, IPPROTO_IP, IP_TOS, IP_TTL, tos, ttl);
	} else {
		a->in6.sin6_family = AF_INET6;
		a->in6.sin6_port = htons(b->b.port);
		memcpy(&a->in6.sin6_addr, path->dgid, 16);
		if (IN6_IS_ADDR_LINKLOCAL(&a->in6.sin6_addr) ||
		    IN6_IS_ADDR_MC_LINKLOCAL(&a->in6.sin6_addr))
			a->in6.sin6_scope_id = (uint32_t)b->ifindex;
		m->msg_namelen = sizeof(a->in6);
		bool mc = IN6_IS_ADDR_MULTICAST(&a->in6.sin6_addr);

		if (mc || !own_values(s, g == 0, tos, ttl))
			add_ctl(m, &used, s, mc, IPPROTO_IPV6, IPV6_TCLASS, IPV6_HOPLIMIT, tos,
				ttl);
	}
}

/*
 * Are QPNs a and b owned by one process of a shared device (one QPN slot, share_slots.h)? The steering
 * program sees a GSO send's first segment only. QP0/QP1 and the QPNs below the first slot join
 * only their own QPN.
 */
static bool same_owner(uint32_t a, uint32_t b)
{
	if (a < UROCE_SHARE_QPN_BASE(0) || b < UROCE_SHARE_QPN_BASE(0))
		return a == b;
	return UROCE_SHARE_SLOT_OF(a) == UROCE_SHARE_SLOT_OF(b);
}

/* May b follow a in one GSO send (lengths aside)? Same address, owner, TOS and TTL. */
static bool same_flow(const struct uroce_tx_desc *a, const struct uroce_tx_desc *b)
{
	/* A group's packets go one datagram each: the kernel's multicast loop-back and every
	 * member's socket see a GSO send whole otherwise. */
	return !uroce_gid_is_mcast(a->path->dgid) && same_owner(a->pkt->dst_qpn, b->pkt->dst_qpn) &&
	       a->path->traffic_class == b->path->traffic_class &&
	       a->path->hop_limit == b->path->hop_limit &&
	       memcmp(a->path->dgid, b->path->dgid, 16) == 0;
}

/*
 * The iovecs of a GSO send of packets j..j+m-1 (m > 1), in b->giov from 3 * j: the first
 * packet's headers, then per packet its payload and its pad + ICRC joined with the next packet's
 * headers, which are copied into the frame's head just before them (the bytes of the IP and UDP
 * headers there, which the kernel writes itself and nothing reads again). Returns the count.
 */
static size_t join_iovecs(struct udp_be *b, int j, int m)
{
	struct iovec *v = &b->giov[3 * j];
	size_t nv = 0;

	v[nv++] = b->tiov[3 * j];
	for (int k = j; k < j + m; k++) {
		const struct uroce_txframe *f = &b->tf[k];

		v[nv++] = b->tiov[3 * k + 1];
		if (k + 1 == j + m) {
			v[nv++] = b->tiov[3 * k + 2];
			break;
		}
		struct uroce_txframe *nx = &b->tf[k + 1];
		uint8_t *at = nx->head + nx->t_off - f->tail_len; /* t_off >= 42 > tail_len */

		memcpy(at, f->tail, f->tail_len);
		v[nv++] = (struct iovec){at, (size_t)f->tail_len + b->tiov[3 * (k + 1)].iov_len};
	}
	return nv;
}

/*
 * Prepare up to a batch of d[0..n) (all for socket si) as sends: b->gmsg[0..*nsend) with
 * b->gsegs[] packets each, the IPv4 ID of each packet in ids[]. Returns the packets prepared;
 * 0 when d[0] cannot be framed.
 */
static int prep_sends(struct udp_be *b, int si, const struct uroce_tx_desc *d, int n, int *nsend,
		      uint16_t *ids)
{
	const struct udp_sock *s = &b->s[si];
	bool v4 = s->encap == UROCE_ENCAP_V2_IPV4, gso = s->gso && !b->gso_once_off;
	int cnt = 0, ng = 0, first = 0;
	uint32_t seglen = 0, bytes = 0;
	bool open = false; /* the current send takes more segments */

	while (cnt < n && cnt < b->tbatch && (cnt == 0 || find_sock(b, d[cnt].path) == si)) {
		uint32_t len = (uint32_t)uroce_tx_pkt_len(d[cnt].pkt); /* one segment */
		bool join = gso && open && cnt - first < GSO_MAX_SEGS && len <= seglen &&
			    bytes + len <= GSO_MAX_BYTES && same_flow(&d[first], &d[cnt]);
		/* Segment k of a GSO send leaves with IPv4 ID k (see the top of the file). */
		uint16_t id = join && v4 ? (uint16_t)(cnt - first) : 0;

		int r = join && v4 && len == seglen ? prep_next(b, cnt, &d[cnt], ids[cnt - 1], id)
						    : prep_tx(b, cnt, &d[cnt], id);

		if (r < 0)
			break;
		ids[cnt] = id;
		if (join) {
			b->gsegs[ng - 1]++;
			bytes += len;
			open = len == seglen; /* a shorter one is the last */
		} else {
			b->gsegs[ng++] = 1;
			first = cnt;
			seglen = bytes = len;
			open = true;
		}
		cnt++;
	}
	for (int g = 0, j = 0; g < ng; j += b->gsegs[g++]) {
		struct msghdr *m = &b->gmsg[g].msg_hdr;

		prep_msg(b, &b->s[si], g, j, v4);
		if (b->gsegs[g] == 1)
			continue;
		uint16_t gs = (uint16_t)uroce_tx_pkt_len(d[j].pkt);
		size_t used = m->msg_controllen;

		m->msg_iov = &b->giov[3 * j];
		m->msg_iovlen = join_iovecs(b, j, b->gsegs[g]);
		add_cmsg(m, &used, SOL_UDP, UDP_SEGMENT, &gs, sizeof(gs));
	}
	*nsend = ng;
	return cnt;
}

static int udp_tx(struct uroce_backend *bb, const struct uroce_tx_desc *d, int n)
{
	struct udp_be *b = (struct udp_be *)bb;
	int i = 0;

	b->b.tx_refused_n = 0;
	if (n > UROCE_TX_BURST_MAX)
		n = UROCE_TX_BURST_MAX;
	memset(b->b.tx_ip_id, 0, (size_t)n * sizeof(b->b.tx_ip_id[0]));
	while (i < n) {
		int si = find_sock(b, d[i].path), ng = 0;

		if (si < 0) {
			b->b.cnt[UROCE_IO_TX_NO_SRC]++;
			uroce_backend_refused(&b->b, i++);
			continue;
		}
		int cnt = prep_sends(b, si, d + i, n - i, &ng, b->b.tx_ip_id + i);

		if (cnt == 0) {
			b->b.cnt[UROCE_IO_TX_ERR]++; /* this packet cannot be framed */
			uroce_backend_refused(&b->b, i++);
			continue;
		}
		bool was_gso = b->gsegs[0] > 1;
		int r = uroce_sendmmsg(b->s[si].fd, b->gmsg, (unsigned)ng, MSG_DONTWAIT);

		b->gso_once_off = false;
		if (r < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS ||
			    errno == EINTR) {
				b->b.cnt[UROCE_IO_TX_AGAIN]++;
				return i;
			}
			if (errno == EBADF || errno == ENOTSOCK || errno == EFAULT)
				return i ? i : -errno;
			if (was_gso) {
				/* EIO: the route's device cannot checksum for GSO; no more GSO on
				 * this socket. Else (too big for the path, ...): these once more, one
				 * datagram per packet, where the error falls on the packet at fault. */
				if (errno == EIO || errno == EOPNOTSUPP || errno == ENOPROTOOPT)
					b->s[si].gso = false;
				else
					b->gso_once_off = true;
				continue;
			}
			/* No route, too big, ...: this packet is lost; go on with the next. */
			b->b.cnt[UROCE_IO_TX_ERR]++;
			uroce_backend_refused(&b->b, i++);
			continue;
		}
		for (int g = 0, j = 0; g < r; j += b->gsegs[g++]) {
			for (int k = j; k < j + b->gsegs[g]; k++)
				b->b.cnt[UROCE_IO_TX_BYTES] += b->tf[k].roce_len;
			b->b.cnt[UROCE_IO_TX_PKTS] += (uint64_t)b->gsegs[g];
			if (b->gsegs[g] > 1)
				b->b.cnt[UROCE_IO_TX_GSO]++;
			i += b->gsegs[g];
		}
	}
	return i;
}

/* What the kernel says about received datagram j of socket s; mt->drop when it is unusable. */
static void parse_rx(struct udp_be *b, const struct udp_sock *s, int j, struct rx_meta *mt)
{
	struct msghdr *m = &b->rmsg[j].msg_hdr;
	const union sa *a = &b->rname[j];
	struct uroce_v2_rx_in *in = &mt->in;
	bool have_dst = false;

	memset(mt, 0, sizeof(*mt));
	in->encap = s->encap;
	in->ttl = 64;
	if (m->msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
		mt->drop = UROCE_IO_RX_DROP_MALFORMED;
		return;
	}
	for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
		int v;

		if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
			struct in_pktinfo pi;

			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			uroce_gid_from_v4(in->dst, &pi.ipi_addr);
			in->ifindex = pi.ipi_ifindex;
			have_dst = true;
		} else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) {
			in->tos = CMSG_DATA(c)[0];
		} else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TTL) {
			memcpy(&v, CMSG_DATA(c), sizeof(v));
			in->ttl = (uint8_t)v;
		} else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO) {
			struct in6_pktinfo pi;

			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			memcpy(in->dst, &pi.ipi6_addr, 16);
			in->ifindex = (int)pi.ipi6_ifindex;
			have_dst = true;
		} else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_TCLASS) {
			memcpy(&v, CMSG_DATA(c), sizeof(v));
			in->tos = (uint8_t)v;
		} else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_HOPLIMIT) {
			memcpy(&v, CMSG_DATA(c), sizeof(v));
			in->ttl = (uint8_t)v;
		} else if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
			memcpy(&v, CMSG_DATA(c), sizeof(v));
			mt->seg = v > 0 && v <= 0xFFFF ? (uint16_t)v : 0;
		}
	}
	if (!have_dst) {
		memcpy(in->dst, s->gid, 16);
	} else if (memcmp(in->dst, s->gid, 16) != 0) {
		mt->drop = UROCE_IO_RX_DROP_NOT_FOR_US;
		return;
	}
	if (s->encap == UROCE_ENCAP_V2_IPV4) {
		if (a->sa.sa_family != AF_INET) {
			mt->drop = UROCE_IO_RX_DROP_MALFORMED;
			return;
		}
		uroce_gid_from_v4(in->src, &a->in.sin_addr);
		in->sport = ntohs(a->in.sin_port);
	} else {
		if (a->sa.sa_family != AF_INET6) {
			mt->drop = UROCE_IO_RX_DROP_MALFORMED;
			return;
		}
		memcpy(in->src, &a->in6.sin6_addr, 16);
		in->sport = ntohs(a->in6.sin6_port);
	}
	in->dport = b->b.port;
	/* A datagram of several packets: the segment size must cut it into at least two. */
	if (mt->seg && mt->seg >= b->rmsg[j].msg_len)
		mt->seg = 0;
	if (mt->seg)
		b->b.cnt[UROCE_IO_RX_GRO]++;
}

/* Cut the received datagrams into packets, from where the last call stopped, into out[0..n). */
static int split_rx(struct udp_be *b, struct uroce_rx_desc *out, int n)
{
	int got = 0;

	while (got < n && b->rnext < b->rcount) {
		const struct rx_meta *mt = &b->rmeta[b->rnext];
		uint32_t len = b->rmsg[b->rnext].msg_len;
		struct uroce_v2_rx_in in = mt->in;

		if (mt->drop) {
			b->b.cnt[mt->drop]++;
			b->rnext++;
			b->roff = 0;
			continue;
		}
		in.data = b->ring + (size_t)b->rnext * b->slot + b->roff;
		in.len = mt->seg && len - b->roff > mt->seg ? mt->seg : len - b->roff;
		b->roff += in.len;
		if (b->roff >= len) {
			b->rnext++;
			b->roff = 0;
		}
		int r = uroce_v2_rx_verify(&out[got], &b->cache, &in);

		if (r < 0) {
			b->b.cnt[r == -EILSEQ ? UROCE_IO_RX_DROP_ICRC : UROCE_IO_RX_DROP_MALFORMED]++;
			continue;
		}
		if (out[got].ip_id)
			b->b.cnt[UROCE_IO_RX_IPID_SOLVED]++;
		b->b.cnt[UROCE_IO_RX_PKTS]++;
		b->b.cnt[UROCE_IO_RX_BYTES] += out[got].pkt.len;
		got++;
	}
	return got;
}

/*
 * How long receive calls look at the socket that had the last datagram alone before one looks
 * at them all (a sweep: one epoll_wait instead of an empty recvmmsg on each). A busy-polling
 * application asks many times per packet, and its peer's next packet nearly always comes to
 * the same socket: a look at that one is the recvmmsg that takes the packet, one system call on
 * the round trip's path, where a sweep first would be two (and a packet arriving during a sweep
 * waits for it). The interval doubles, from the least to the most, with each sweep that finds
 * no other socket ready, and is the least again after one that does: a datagram on another
 * socket waits up to the interval more, once after a long quiet there, and traffic on several
 * sockets at once keeps it short. A thread woken by the sockets (uroce_udp_woken) looks at the
 * socket that had the last datagram first, which is where the peer's reply nearly always is,
 * and sweeps when nothing is there: the wake was for another socket or a group's fd. A sweep
 * comes at least every UDP_HOT_WAKES wakes, so that a group's fd is looked at while datagrams
 * keep coming to the hot socket.
 */
#define UDP_SWEEP_MIN_NS 4000u
#define UDP_SWEEP_MAX_NS 64000u
#define UDP_HOT_WAKES	 16u

void uroce_udp_woken(struct uroce_backend *bb)
{
	struct udp_be *b = (struct udp_be *)uroce_backend_base(bb);

	if (!b || b->b.ops != &uroce_udp_ops)
		return;
	if (b->hot < b->ns && b->hot_wakes < UDP_HOT_WAKES) {
		b->woken = true;
		b->hot_wakes++;
	} else {
		b->sweep_due = 0;
	}
}

/* Which sockets have datagrams (see above). Returns a bit mask of socket indexes. */
static unsigned rx_ready(struct udp_be *b)
{
	struct epoll_event ev[2 * MAX_SOCKS];
	unsigned mask = 0, sockets = 0;

	if (b->ns == 1)
		return 1; /* recvmmsg tells */
	uint64_t now = uroce_mono_ns();

	if (b->hot < b->ns && now < b->sweep_due)
		return 1u << b->hot;
	int k = uroce_epoll_ready(b->epfd, ev, 2 * MAX_SOCKS);

	b->hot_wakes = 0;
	if (k < 0)
		return (1u << b->ns) - 1; /* EINTR: try them all */
	for (int i = 0; i < k; i++) {
		unsigned bit = 1u << (ev[i].data.u32 & 0xFF);

		mask |= bit; /* a group's fd: a harmless extra look at its socket */
		if (ev[i].data.u32 & EV_GROUP)
			b->groups_ready |= bit; /* udp_rx checks the group */
		else
			sockets |= bit;
	}
	uint32_t next = b->sweep_ns * 2;

	if (b->hot >= b->ns || (sockets & ~(1u << b->hot)) || next < UDP_SWEEP_MIN_NS)
		next = UDP_SWEEP_MIN_NS;
	b->sweep_ns = next < UDP_SWEEP_MAX_NS ? next : UDP_SWEEP_MAX_NS;
	b->sweep_due = now + b->sweep_ns;
	return mask;
}

/* Receive into the ring's slots from *slot0 up to slots, from the sockets in ready (a mask of
 * indexes), moving *slot0 on. 0, or a negative errno when a socket failed before anything came. */
static int recv_ready(struct udp_be *b, unsigned ready, int slots, int *slot0)
{
	for (int k = 0; k < b->ns && *slot0 < slots; k++) {
		/* rx_rr < ns (a socket closed resets it): no division on every receive call. */
		int si = b->rx_rr + k < b->ns ? b->rx_rr + k : b->rx_rr + k - b->ns;
		const struct udp_sock *s = &b->s[si];
		int cnt = slots - *slot0;

		if (!(ready & (1u << si)))
			continue;

		int r = uroce_recvmmsg(s->fd, b->rmsg + *slot0, (unsigned)cnt, MSG_DONTWAIT);

		if (r < 0) {
			rx_msg_reset(b, *slot0);
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
				continue;
			/* ICMP errors reported on the socket, and the like: not fatal. */
			if (errno == ECONNREFUSED || errno == EHOSTUNREACH || errno == ENETUNREACH)
				continue;
			if (*slot0)
				break;
			return -errno;
		}
		for (int j = *slot0; j < *slot0 + r; j++) {
			parse_rx(b, s, j, &b->rmeta[j]);
			rx_msg_reset(b, j);
		}
		*slot0 += r;
		b->hot = si;
	}
	return 0;
}

static int udp_rx(struct uroce_backend *bb, struct uroce_rx_desc *out, int n)
{
	struct udp_be *b = (struct udp_be *)bb;
	int slot0 = 0;

	/* Packets of datagrams already received come first; the ring must stay as it is. */
	if (b->rnext < b->rcount)
		return split_rx(b, out, n);
	/* At most a batch of datagrams per call; n still bounds the packets handed out (a GRO
	 * datagram holds up to 64), and returning fewer than n must mean nothing is held back:
	 * callers stop asking then, and sleep on the sockets, which are no longer readable. */
	int slots = n < b->batch ? n : b->batch;
	int r;

	if (b->woken) {
		/* Woken: the hot socket first, then a sweep if nothing was there. */
		b->woken = false;
		r = recv_ready(b, 1u << b->hot, slots, &slot0);
		if (r == 0 && slot0 == 0) {
			b->sweep_due = 0;
			r = recv_ready(b, rx_ready(b) & ~(1u << b->hot), slots, &slot0);
		}
	} else {
		r = recv_ready(b, rx_ready(b), slots, &slot0);
	}
	if (r < 0)
		return r;
	b->rcount = slot0;
	b->rnext = 0;
	b->roff = 0;
	b->rx_rr = b->rx_rr + 1 < b->ns ? b->rx_rr + 1 : 0;
	/* Group changes (a member died, joined, left), never looked for per burst: with several
	 * sockets, the groups whose fd a sweep found ready; with one (no sweeps), its group every
	 * SHARE_CHECK_EVERY bursts. */
	unsigned check = b->groups_ready, regro = check;

	b->groups_ready = 0;
	if (++b->share_tick >= SHARE_CHECK_EVERY) {
		b->share_tick = 0;
		if (b->ns > 0 && ++b->merge_tick >= MERGE_CHECK_EVERY) {
			b->merge_tick = 0;
			b->gro_shared = merges_nothing(b, b->s[0].fd);
			regro = ~0u;
		}
		if (b->ns == 1) {
			check |= 1u;
			regro |= 1u;
		}
	}
	for (int i = 0; regro && i < b->ns; i++) {
		if (!b->s[i].share || !(regro & (1u << i)))
			continue;
		if (check & (1u << i))
			uroce_share_check(b->s[i].share, b->s[i].fd);
		update_gro(b, &b->s[i]); /* someone may have joined or left */
	}
	return split_rx(b, out, n);
}

const struct uroce_backend_ops uroce_udp_ops = {
	.name = "udp",
	.open = udp_open,
	.close = udp_close,
	.forget = udp_forget,
	.tx_burst = udp_tx,
	.rx_burst = udp_rx,
	.fd = udp_fd,
};
