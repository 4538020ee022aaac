/* SPDX-License-Identifier: MIT */
/*
 * RoCE v1 over AF_PACKET: Ethernet frames with Ethertype 0x8915, a GRH, BTH..ICRC (IBTA A16).
 * Needs root or CAP_NET_RAW; without it open() fails with -EPERM and
 * uroce_backend_strerror() names the fix.
 *
 * The socket is created with protocol 0 (it receives nothing) and bound to (ETH_P 0x8915,
 * ifindex), so no frame of another protocol or interface ever reaches it. Our own transmissions
 * are not looped back (PACKET_IGNORE_OUTGOING, and PACKET_OUTGOING is dropped in case the kernel
 * lacks it). Frames for other hosts (promiscuous mode) are dropped as not for us.
 *
 * Transmit: sendmmsg, three iovecs per frame, [Ethernet + GRH + BTH/ext | payload in place |
 * pad + ICRC]; the destination MAC comes from the path (uroce_neigh_lookup, host layer).
 * Receive: recvmmsg into a ring of MTU-sized slots, uroce_frame_decode, ICRC check; the GRH slot
 * gets the GRH itself.
 *
 * Not done: RoCE v2 over AF_PACKET (framing exists in uroce_txframe_build; receiving it would need
 * ETH_P_ALL + a BPF filter and would race the kernel's UDP stack); VLAN tags (the kernel strips
 * them into auxdata, which is not read).
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
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "host/backend.h"
#include "wire/bytes.h"

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif

struct pkt_be {
	struct uroce_backend b;
	int fd;
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

	if (b->fd >= 0)
		close(b->fd);
	free(b->tf);
	free(b->tmsg);
	free(b->tiov);
	free(b->ring);
	free(b->rmsg);
	free(b->riov);
	free(b->rname);
	free(b);
}


static int pkt_open(const struct uroce_backend_cfg *cfg, struct uroce_backend **out)
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
	b->ifindex = ifindex;
	b->batch = cfg->batch ? cfg->batch : UROCE_BACKEND_BATCH;

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr) < 0 || ifr.ifr_hwaddr.sa_family != ARPHRD_ETHER) {
		r = ifr.ifr_hwaddr.sa_family != ARPHRD_ETHER ? -EOPNOTSUPP : -errno;
		uroce_backend_seterr(cfg, "RoCE v1 over AF_PACKET: %s is not an Ethernet interface", ifname);
		pkt_close(&b->b);
		return r;
	}
	memcpy(b->b.mac, ifr.ifr_hwaddr.sa_data, 6);
	if (ioctl(fd, SIOCGIFMTU, &ifr) < 0) {
		r = -errno;
		pkt_close(&b->b);
		return r;
	}
	b->mtu = (uint32_t)ifr.ifr_mtu;
	b->slot = cfg->rx_slot ? cfg->rx_slot : b->mtu + UROCE_ETH_LEN + UROCE_VLAN_LEN;

	int one = 1;

	/* Best effort: older kernels lack it, and outgoing frames are also filtered below. */
	setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one));
	int sz = 4 << 20;

	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));

	struct sockaddr_ll sll = {
		.sll_family = AF_PACKET,
		.sll_protocol = htons(UROCE_ETHERTYPE_ROCE),
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
	*out = &b->b;
	return 0;
}

static int pkt_fd(const struct uroce_backend *bb)
{
	return ((const struct pkt_be *)bb)->fd;
}

static int pkt_tx(struct uroce_backend *bb, const struct uroce_tx_desc *d, int n)
{
	struct pkt_be *b = (struct pkt_be *)bb;
	int i = 0;

	b->b.tx_refused_n = 0;
	while (i < n) {
		int cnt = 0;

		while (i + cnt < n && cnt < b->batch) {
			const struct uroce_tx_desc *x = &d[i + cnt];
			struct uroce_txframe *f = &b->tf[cnt];

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
		int r = sendmmsg(b->fd, b->tmsg, (unsigned)cnt, MSG_DONTWAIT);

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

	if (sll->sll_pkttype == PACKET_OUTGOING || sll->sll_pkttype == PACKET_OTHERHOST)
		return UROCE_IO_RX_DROP_NOT_FOR_US;
	if (b->rmsg[j].msg_hdr.msg_flags & MSG_TRUNC)
		return UROCE_IO_RX_DROP_MALFORMED;
	if (uroce_frame_decode(&f, buf, b->rmsg[j].msg_len) != 0 || f.encap != UROCE_ENCAP_V1)
		return UROCE_IO_RX_DROP_MALFORMED;
	if (uroce_frame_icrc(&f) != f.t.icrc)
		return UROCE_IO_RX_DROP_ICRC;
	memset(d, 0, sizeof(*d));
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
	for (int j = 0; j < n; j++) {
		struct msghdr *m = &b->rmsg[j].msg_hdr;

		b->riov[j].iov_base = b->ring + (size_t)j * b->slot;
		b->riov[j].iov_len = b->slot;
		memset(m, 0, sizeof(*m));
		m->msg_iov = &b->riov[j];
		m->msg_iovlen = 1;
		m->msg_name = &b->rname[j];
		m->msg_namelen = sizeof(b->rname[j]);
	}
	int r = recvmmsg(b->fd, b->rmsg, (unsigned)n, MSG_DONTWAIT, NULL);

	if (r < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ENETDOWN)
			return 0;
		return -errno;
	}
	for (int j = 0; j < r; j++) {
		int drop = finish_rx(b, j, &out[got]);

		if (drop) {
			b->b.cnt[drop]++;
			continue;
		}
		b->b.cnt[UROCE_IO_RX_PKTS]++;
		b->b.cnt[UROCE_IO_RX_BYTES] += out[got].pkt.len;
		got++;
	}
	return got;
}

const struct uroce_backend_ops uroce_packet_ops = {
	.name = "packet",
	.open = pkt_open,
	.close = pkt_close,
	.tx_burst = pkt_tx,
	.rx_burst = pkt_rx,
	.fd = pkt_fd,
};
