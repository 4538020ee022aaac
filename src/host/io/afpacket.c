/* SPDX-License-Identifier: MIT */
/*
 * RoCE v1 over AF_PACKET: Ethernet frames with Ethertype 0x8915, a GRH, BTH..ICRC (IBTA A16).
 * Needs root or CAP_NET_RAW; without it open() fails with -EPERM and
 * uroce_backend_strerror() names the fix.
 *
 * Three sockets. The two transmit sockets are never bound (they receive nothing); each frame
 * names the interface and Ethertype 0x8915 in its sockaddr_ll. The receive socket is created with
 * protocol 0 (it receives nothing), gets a classic BPF socket filter (uroce_v1_filter_prog(),
 * share_prog.h), and only then is bound to (ETH_P_ALL, ifindex): the kernel drops every frame that
 * is not RoCE v1 or whose BTH destination QP is not one of this process's (cfg qpn_lo..qpn_hi), so
 * processes sharing the interface each receive their own frames only, and none is counted
 * DROP_NO_QP by a process that does not own its QP. QP1 (CM MADs): opened with
 * uroce_packet_open_shared(), the process is listed in the interface's v1 membership file and
 * its filter takes the QP1 frames that the file's claims give it (share_group.h); the file's
 * watch fd sits in the backend's epoll set (its fd), and rx_burst re-attaches the filter when the
 * file changes, looking every SHARE_CHECK_EVERY bursts and when a thread woken by that fd
 * (uroce_packet_woken) finds no frame. Opened with uroce_packet_ops.open, every QP1 frame is
 * taken.
 *
 * Local delivery, as a NIC does it: a frame sent to the interface's own MAC never comes back
 * from the wire. ETH_P_ALL (rather than 0x8915) is what makes the kernel show the receive socket
 * the frames leaving the interface (PACKET_OUTGOING, dev_queue_xmit_nit), including those of
 * this process's transmit sockets (the kernel never shows a socket its own transmissions, hence
 * separate sockets). An outgoing frame addressed to our own MAC is delivered like a received
 * one; the filter drops the other outgoing frames in the kernel (a peer's QPNs may fall in our
 * range), and finish_rx drops frames for other hosts (promiscuous mode). With the QPN filter
 * exactly one process, the owner of the destination QP, receives a frame sent to this host,
 * once. The price of ETH_P_ALL: the kernel clones each frame leaving the interface through the
 * taps for the filter of each process with the device open, as for a capture. Hence two
 * transmit sockets: frames to our own MAC go through the taps (selffd), frames to other hosts
 * skip the queueing layer and with it the taps (txfd, PACKET_QDISC_BYPASS; as on a RoCE NIC, a
 * capture on the interface does not show them; UROCE_PCAP does). Frames received go through
 * the filter without a copy. A loopback device (MAC all zeros, every destination MAC on it too)
 * is the exception: it brings each frame back up as received (PACKET_HOST), so its receive
 * socket ignores the outgoing copies (PACKET_IGNORE_OUTGOING), which would deliver every frame
 * twice.
 *
 * Transmit: sendmmsg, three iovecs per frame, [Ethernet + GRH + BTH/ext | payload in place |
 * pad + ICRC]; the destination MAC comes from the path (uroce_neigh_lookup, host layer).
 * Receive: recvmmsg into a ring of MTU-sized slots, uroce_frame_decode, ICRC check; the GRH slot
 * gets the GRH itself.
 *
 * Not done: RoCE v2 over AF_PACKET (framing exists in uroce_txframe_build; receiving it would race
 * the kernel's UDP stack); VLAN tags (the kernel strips them into auxdata, which is not read;
 * the filter does not look at auxdata either, so a frame of a VLAN on this interface whose tag
 * the NIC stripped reaches the socket as if untagged); POLLOUT on uroce_backend_fd() (the
 * receive socket, or the epoll set holding it) does not tell when the transmit socket has room
 * again.
 */
#include <errno.h>
#include <stdarg.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "host/config/io_counters.h"
#include "host/io/afpacket.h"
#include "host/io/backend.h"
#include "host/io/frame.h"
#include "host/io/rx_entry.h"
#include "host/io/share_group.h"
#include "host/io/share_prog.h"
#include "host/os/nocancel.h"
#include "wire/bytes.h"

#define SHARE_CHECK_EVERY 64

struct pkt_be {
	struct uroce_backend b;
	int fd;	  /* receive: ETH_P_ALL, filtered */
	int txfd; /* transmit to other hosts: unbound, PACKET_QDISC_BYPASS */
	int selffd; /* transmit to this host's own MAC: unbound, through the taps */
	int epfd; /* with a v1 membership file: fd and the file's watch; else -1 */
	struct uroce_share_group *share; /* NULL: no membership file */
	unsigned share_tick;
	bool woken; /* the next receive is a thread's woken by the fd (uroce_packet_woken) */
	struct sockaddr_ll txaddr;
	int ifindex;
	uint32_t mtu;
	int batch;
	uint32_t slot;
	struct uroce_txframe *tf;
	struct mmsghdr *tmsg;
	struct iovec *tiov;
	uint8_t *ring;
	struct mmsghdr *rmsg;
	struct iovec *riov;
	struct sockaddr_ll *rname;
};

static void pkt_close(struct uroce_backend *bb)
{
	struct pkt_be *b = (struct pkt_be *)bb;

	if (b->share)
		uroce_share_leave(b->share, b->fd); /* closes the fd */
	else if (b->fd >= 0)
		close(b->fd);
	if (b->epfd >= 0)
		close(b->epfd);
	if (b->txfd >= 0)
		close(b->txfd);
	if (b->selffd >= 0)
		close(b->selffd);
	free(b->tf);
	free(b->tmsg);
	free(b->tiov);
	free(b->ring);
	free(b->rmsg);
	free(b->riov);
	free(b->rname);
	free(b);
}

static void pkt_forget(struct uroce_backend *bb)
{
	struct pkt_be *b = (struct pkt_be *)bb;

	if (b->share)
		uroce_share_forget(b->share);
	b->share = NULL;
	if (b->fd >= 0)
		close(b->fd);
	if (b->epfd >= 0)
		close(b->epfd);
	if (b->txfd >= 0)
		close(b->txfd);
	if (b->selffd >= 0)
		close(b->selffd);
	b->fd = b->epfd = b->txfd = b->selffd = -1;
}

/* The filter without a membership file: cfg's QPNs, and every QP1 frame. */
static int attach_alone(const struct uroce_backend_cfg *cfg, int fd)
{
	/* No QPN range (0/0): every QPN, RoCE v1 frames only all the same (ETH_P_ALL). */
	struct sock_filter prog[UROCE_V1_FILTER_LEN];
	uint32_t lo = cfg->qpn_lo, hi = cfg->qpn_hi;

	if (!lo && !hi)
		hi = 0xFFFFFF;
	int len = uroce_v1_filter_prog(prog, UROCE_V1_FILTER_LEN, lo, hi, NULL, 0, -1);

	if (len < 0)
		return len;
	struct sock_fprog fp = {.len = (unsigned short)len, .filter = prog};

	return setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &fp, sizeof(fp)) < 0 ? -errno : 0;
}

/* Receive entry j (rx_entry.h): its slot of the ring and its address buffer. */
static void rx_msg_reset(struct pkt_be *b, int j)
{
	uroce_rx_entry_reset(&b->rmsg[j], sizeof(b->rname[j]), 0);
}

static void rx_msg_init(struct pkt_be *b, int j)
{
	uroce_rx_entry_init(&b->rmsg[j], &b->riov[j], b->ring + (size_t)j * b->slot, b->slot,
			    &b->rname[j], sizeof(b->rname[j]), NULL, 0);
}

static int open_backend(const struct uroce_backend_cfg *cfg, const struct uroce_share_cfg *share,
			struct uroce_backend **out)
{
	char ifname[IF_NAMESIZE] = "";
	struct ifreq ifr;
	int r;

	if (cfg->batch < 0 || cfg->batch > 1024) {
		uroce_backend_seterr(cfg, "RoCE v1 over AF_PACKET: batch must be 1..1024");
		return -EINVAL;
	}
	int ifindex = cfg->ifindex;

	if (!ifindex && cfg->ifname)
		ifindex = (int)if_nametoindex(cfg->ifname);
	if (!ifindex || !if_indextoname((unsigned)ifindex, ifname)) {
		uroce_backend_seterr(cfg, "RoCE v1 over AF_PACKET: no interface %s",
		       cfg->ifname ? cfg->ifname : "given");
		return -ENODEV;
	}
	/* Protocol 0: nothing is queued before bind() names ours. */
	int fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0) {
		r = -errno;
		if (r == -EPERM || r == -EACCES) {
			uroce_backend_seterr(cfg, "%s", UROCE_PACKET_EPERM_MSG);
			return -EPERM;
		}
		uroce_backend_seterr(cfg, "RoCE v1 over AF_PACKET: socket: %s", strerror(-r));
		return r;
	}
	struct pkt_be *b = calloc(1, sizeof(*b));

	if (!b) {
		close(fd);
		return -ENOMEM;
	}
	b->b.ops = &uroce_packet_ops;
	b->b.port = cfg->port ? cfg->port : UROCE_UDP_PORT;
	b->fd = fd;
	b->txfd = b->selffd = -1;
	b->epfd = -1;
	b->ifindex = ifindex;
	b->batch = cfg->batch ? cfg->batch : UROCE_BACKEND_BATCH;

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr) < 0) {
		r = -errno;
		uroce_backend_seterr(cfg, "RoCE v1 over AF_PACKET: %s: %s", ifname, strerror(-r));
		pkt_close(&b->b);
		return r;
	}
	bool loopback = ifr.ifr_hwaddr.sa_family == ARPHRD_LOOPBACK;

	if (ifr.ifr_hwaddr.sa_family != ARPHRD_ETHER && !loopback) {
		uroce_backend_seterr(
			cfg, "RoCE v1 over AF_PACKET: %s is neither Ethernet nor loopback", ifname);
		pkt_close(&b->b);
		return -EOPNOTSUPP;
	}
	memcpy(b->b.mac, ifr.ifr_hwaddr.sa_data, 6);
	if (ioctl(fd, SIOCGIFMTU, &ifr) < 0) {
		r = -errno;
		pkt_close(&b->b);
		return r;
	}
	b->mtu = (uint32_t)ifr.ifr_mtu;
	b->slot = cfg->rx_slot ? cfg->rx_slot : b->mtu + UROCE_ETH_LEN + UROCE_VLAN_LEN;

	/* The filter goes on before bind(): no frame is queued unfiltered. */
	r = share ? uroce_share_v1_join(share, fd, ifindex, &b->share) : -ENOTRECOVERABLE;
	if (r == -ENOTRECOVERABLE)
		r = attach_alone(cfg, fd);
	if (r == 0 && b->share) {
		struct epoll_event ev = {.events = EPOLLIN};

		b->epfd = epoll_create1(EPOLL_CLOEXEC);
		if (b->epfd < 0 || epoll_ctl(b->epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ||
		    epoll_ctl(b->epfd, EPOLL_CTL_ADD, uroce_share_fd(b->share), &ev) < 0)
			r = -errno;
	}
	if (r < 0) {
		if (r == -EEXIST)
			uroce_backend_seterr(cfg,
					     "RoCE v1 over AF_PACKET: another process on %s uses "
					     "QPNs %u..%u",
					     ifname, share->qpn_lo, share->qpn_hi);
		else if (r == -EINVAL)
			uroce_backend_seterr(cfg, "RoCE v1 over AF_PACKET: bad QPN range %#x..%#x",
					     cfg->qpn_lo, cfg->qpn_hi);
		else
			uroce_backend_seterr(cfg,
					     "RoCE v1 over AF_PACKET: cannot attach the QPN "
					     "filter: %s",
					     strerror(-r));
		pkt_close(&b->b);
		return r;
	}
	b->txfd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	b->selffd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (b->txfd < 0 || b->selffd < 0) {
		r = -errno;
		uroce_backend_seterr(cfg, "RoCE v1 over AF_PACKET: socket: %s", strerror(-r));
		pkt_close(&b->b);
		return r;
	}
	b->txaddr = (struct sockaddr_ll){
		.sll_family = AF_PACKET,
		.sll_protocol = htons(UROCE_ETHERTYPE_ROCE),
		.sll_ifindex = ifindex,
	};
	int sz = 4 << 20;
	int one = 1;

	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	setsockopt(b->txfd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	setsockopt(b->selffd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	/* A kernel without it sends through the queueing layer and the taps: slower, no less. */
	setsockopt(b->txfd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one));

	/* Outgoing frames are wanted (local delivery): no PACKET_IGNORE_OUTGOING, except on a
	 * loopback device, which brings every frame back up as received (PACKET_HOST: its MAC is
	 * all zeros, as is every destination MAC on it); the outgoing copy would deliver it twice.
	 */
	if (loopback && setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one)) < 0) {
		r = -errno;
		uroce_backend_seterr(cfg, "RoCE v1 over AF_PACKET: %s: PACKET_IGNORE_OUTGOING: %s",
				     ifname, strerror(-r));
		pkt_close(&b->b);
		return r;
	}
	struct sockaddr_ll sll = {
		.sll_family = AF_PACKET,
		.sll_protocol = htons(ETH_P_ALL),
		.sll_ifindex = ifindex,
	};

	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0) {
		r = -errno;
		uroce_backend_seterr(cfg, "RoCE v1 over AF_PACKET: cannot bind to %s: %s", ifname, strerror(-r));
		pkt_close(&b->b);
		return r;
	}
	size_t nb = (size_t)b->batch;

	b->tf = calloc(nb, sizeof(*b->tf));
	b->tmsg = calloc(nb, sizeof(*b->tmsg));
	b->tiov = calloc(3 * nb, sizeof(*b->tiov));
	b->ring = malloc(nb * b->slot);
	b->rmsg = calloc(nb, sizeof(*b->rmsg));
	b->riov = calloc(nb, sizeof(*b->riov));
	b->rname = calloc(nb, sizeof(*b->rname));
	if (!b->tf || !b->tmsg || !b->tiov || !b->ring || !b->rmsg || !b->riov || !b->rname) {
		pkt_close(&b->b);
		return -ENOMEM;
	}
	for (int j = 0; j < b->batch; j++)
		rx_msg_init(b, j);
	*out = &b->b;
	return 0;
}

static int pkt_open(const struct uroce_backend_cfg *cfg, struct uroce_backend **out)
{
	return open_backend(cfg, NULL, out);
}

int uroce_packet_open_shared(const struct uroce_backend_cfg *cfg,
			     const struct uroce_share_cfg *share, struct uroce_backend **out)
{
	if (!share || !share->rundir || share->qpn_lo > share->qpn_hi) {
		uroce_backend_seterr(cfg, "RoCE v1 over AF_PACKET: sharing needs a run-time "
					  "directory and a QPN range");
		return -EINVAL;
	}
	return open_backend(cfg, share, out);
}

int uroce_packet_share_gsi(struct uroce_backend *bb, const struct uroce_share_cfg *share)
{
	struct pkt_be *b = (struct pkt_be *)uroce_backend_base(bb);

	if (b->b.ops != &uroce_packet_ops)
		return -EINVAL;
	return b->share ? uroce_share_set_gsi(b->share, b->fd, share) : 0;
}

static int pkt_fd(const struct uroce_backend *bb)
{
	const struct pkt_be *b = (const struct pkt_be *)bb;

	return b->epfd >= 0 ? b->epfd : b->fd;
}

void uroce_packet_woken(struct uroce_backend *bb)
{
	struct pkt_be *b = (struct pkt_be *)uroce_backend_base(bb);

	if (b && b->b.ops == &uroce_packet_ops)
		b->woken = true;
}

/*
 * Membership changes (the filter follows the file): never per packet, nor per empty burst of a
 * busy-polling thread (a system call each); a thread woken by the fd that finds no frame was
 * woken by the file's watch.
 */
static void share_tick(struct pkt_be *b, int got)
{
	bool woken = b->woken;

	b->woken = false;
	if (b->share && ((woken && got == 0) || ++b->share_tick >= SHARE_CHECK_EVERY)) {
		b->share_tick = 0;
		uroce_share_check(b->share, b->fd);
	}
}

static int pkt_tx(struct uroce_backend *bb, const struct uroce_tx_desc *d, int n)
{
	struct pkt_be *b = (struct pkt_be *)bb;
	int i = 0;

	b->b.tx_refused_n = 0;
	while (i < n) {
		int cnt = 0;
		bool to_self = false; /* the batch's socket: selffd, else txfd */

		while (i + cnt < n && cnt < b->batch) {
			const struct uroce_tx_desc *x = &d[i + cnt];
			struct uroce_txframe *f = &b->tf[cnt];
			bool self = memcmp(x->path->dmac, b->b.mac, 6) == 0;

			if (cnt == 0)
				to_self = self;
			else if (self != to_self)
				break;
			if (x->path->encap != UROCE_ENCAP_V1 ||
			    uroce_txframe_build(f, x, b->b.mac, b->b.port, 0) < 0)
				break;
			struct iovec *iov = &b->tiov[3 * cnt];
			struct msghdr *m = &b->tmsg[cnt].msg_hdr;

			iov[0].iov_base = f->head;
			iov[0].iov_len = f->head_len;
			iov[1].iov_base = (void *)(uintptr_t)x->pkt->payload; /* only read */
			iov[1].iov_len = x->pkt->payload_len;
			iov[2].iov_base = f->tail;
			iov[2].iov_len = f->tail_len;
			memset(m, 0, sizeof(*m));
			m->msg_name = &b->txaddr;
			m->msg_namelen = sizeof(b->txaddr);
			m->msg_iov = iov;
			m->msg_iovlen = 3;
			cnt++;
		}
		if (cnt == 0) {
			b->b.cnt[d[i].path->encap != UROCE_ENCAP_V1 ? UROCE_IO_TX_NO_SRC
								    : UROCE_IO_TX_ERR]++;
			uroce_backend_refused(&b->b, i++);
			continue;
		}
		int r = uroce_sendmmsg(to_self ? b->selffd : b->txfd, b->tmsg, (unsigned)cnt,
				       MSG_DONTWAIT);

		if (r < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS ||
			    errno == EINTR) {
				b->b.cnt[UROCE_IO_TX_AGAIN]++;
				return i;
			}
			if (errno == EBADF || errno == ENOTSOCK || errno == EFAULT)
				return i ? i : -errno;
			b->b.cnt[UROCE_IO_TX_ERR]++; /* EMSGSIZE (beyond the MTU), ENETDOWN, ... */
			uroce_backend_refused(&b->b, i++);
			continue;
		}
		for (int j = 0; j < r; j++)
			b->b.cnt[UROCE_IO_TX_BYTES] += b->tf[j].roce_len;
		b->b.cnt[UROCE_IO_TX_PKTS] += (uint64_t)r;
		i += r;
	}
	return i;
}

static int finish_rx(struct pkt_be *b, int j, struct uroce_rx_desc *d)
{
	const struct sockaddr_ll *sll = &b->rname[j];
	const uint8_t *buf = b->ring + (size_t)j * b->slot;
	struct uroce_frame f;
	static const struct uroce_rx_desc zero;

	if (sll->sll_pkttype == PACKET_OTHERHOST)
		return UROCE_IO_RX_DROP_NOT_FOR_US;
	if (b->rmsg[j].msg_hdr.msg_flags & MSG_TRUNC || b->rmsg[j].msg_len < UROCE_ETH_LEN)
		return UROCE_IO_RX_DROP_MALFORMED;
	/* Leaving the interface: ours to take only when sent to this host (local delivery). */
	if (sll->sll_pkttype == PACKET_OUTGOING && memcmp(buf, b->b.mac, 6) != 0)
		return UROCE_IO_RX_DROP_NOT_FOR_US;
	if (uroce_frame_decode(&f, buf, b->rmsg[j].msg_len) != 0 || f.encap != UROCE_ENCAP_V1)
		return UROCE_IO_RX_DROP_MALFORMED;
	if (uroce_frame_icrc(&f) != f.t.icrc)
		return UROCE_IO_RX_DROP_ICRC;
	*d = zero; /* not memset: see uroce_v2_rx_verify */
	d->pkt.data = f.roce;
	d->pkt.len = f.roce_len;
	d->pkt.encap = UROCE_ENCAP_V1;
	memcpy(d->pkt.sgid, f.ip6.src, 16);
	memcpy(d->pkt.dgid, f.ip6.dst, 16);
	memcpy(d->pkt.grh, f.l3, UROCE_GRH_LEN);
	d->ifindex = sll->sll_ifindex;
	d->tclass = f.ip6.tclass;
	d->hop_limit = f.ip6.hop_limit;
	memcpy(d->smac, f.eth.src, 6);
	memcpy(d->dmac, f.eth.dst, 6);
	return 0;
}

static int pkt_rx(struct uroce_backend *bb, struct uroce_rx_desc *out, int n)
{
	struct pkt_be *b = (struct pkt_be *)bb;
	int got = 0;

	if (n > b->batch)
		n = b->batch;
	if (n <= 0)
		return 0;
	int r = uroce_recvmmsg(b->fd, b->rmsg, (unsigned)n, MSG_DONTWAIT);

	if (r < 0) {
		r = -errno;
		rx_msg_reset(b, 0);
		share_tick(b, 0);
		if (r == -EAGAIN || r == -EWOULDBLOCK || r == -EINTR || r == -ENETDOWN)
			return 0;
		return r;
	}
	for (int j = 0; j < r; j++) {
		int drop = finish_rx(b, j, &out[got]);

		rx_msg_reset(b, j);
		if (drop) {
			b->b.cnt[drop]++;
			continue;
		}
		b->b.cnt[UROCE_IO_RX_PKTS]++;
		b->b.cnt[UROCE_IO_RX_BYTES] += out[got].pkt.len;
		got++;
	}
	share_tick(b, got);
	return got;
}

const struct uroce_backend_ops uroce_packet_ops = {
	.name = "packet",
	.eperm_msg = UROCE_PACKET_EPERM_MSG,
	.open = pkt_open,
	.close = pkt_close,
	.forget = pkt_forget,
	.tx_burst = pkt_tx,
	.rx_burst = pkt_rx,
	.fd = pkt_fd,
};
