/* SPDX-License-Identifier: MIT */
/*
 * uroce-cm-will: the watchdog of will.h. Started by librdmacm with the table on fd 3, the
 * read end of a pipe on fd 4 and, for RoCE v1, an AF_PACKET socket on fd 5; sends the armed
 * DREQs when the pipe reaches end of file.
 */
#include <errno.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "compat/rdmacm/will.h"
#include "wire/mad.h"
#include "wire/opcode.h"
#include "wire/packet.h"

/* The GSI UD SEND to QP1 carrying s's MAD, for UDP source port sport: BTH..ICRC into pkt. */
/* The transport part of f: slot s's MAD in a UD SEND Only from QP1 to QP1. */
static void gsi_send(struct uroce_frame *f, const struct cma_will_slot *s)
{
	f->t.bth.opcode = UROCE_OP_UD_SEND_ONLY;
	f->t.bth.pkey = 0xFFFF;
	f->t.bth.dqpn = UROCE_GSI_QPN;
	f->t.deth.qkey = UROCE_GSI_QKEY;
	f->t.deth.src_qp = UROCE_GSI_QPN;
	f->t.payload = s->mad;
	f->t.payload_len = sizeof(s->mad);
}

static ssize_t build(const struct cma_will_slot *s, uint16_t sport, uint8_t *pkt, size_t cap)
{
	struct uroce_frame f;
	uint8_t frame[512];
	size_t hdrs = 14 + (s->family == AF_INET ? 20 : 40) + 8;
	ssize_t n;

	memset(&f, 0, sizeof(f));
	if (s->family == AF_INET) {
		f.encap = UROCE_ENCAP_V2_IPV4;
		f.ip4.ihl = 5;
		f.ip4.tos = s->tos;
		f.ip4.frag = 0x4000; /* DF: IP_PMTUDISC_DO below, so the kernel sends ID 0 */
		f.ip4.ttl = 64;
		memcpy(f.ip4.src, s->src, 4);
		memcpy(f.ip4.dst, s->dst, 4);
	} else {
		f.encap = UROCE_ENCAP_V2_IPV6;
		f.ip6.version = 6;
		f.ip6.tclass = s->tos;
		f.ip6.hop_limit = 64;
		memcpy(f.ip6.src, s->src, 16);
		memcpy(f.ip6.dst, s->dst, 16);
	}
	f.udp.sport = sport;
	f.udp.dport = s->port;
	gsi_send(&f, s);
	n = uroce_frame_encode(frame, sizeof(frame), &f);
	if (n <= (ssize_t)hdrs || (size_t)n - hdrs > cap)
		return -1;
	memcpy(pkt, frame + hdrs, (size_t)n - hdrs);
	return n - (ssize_t)hdrs;
}

/* RoCE v1: the Ethernet frame (GRH, BTH, DETH, MAD, ICRC) through the packet socket. */
static void send_v1(const struct cma_will_slot *s)
{
	struct sockaddr_ll to = {.sll_family = AF_PACKET,
				 .sll_protocol = htons(UROCE_ETHERTYPE_ROCE),
				 .sll_ifindex = s->ifindex,
				 .sll_halen = 6};
	struct uroce_frame f;
	struct ifreq ifr;
	uint8_t frame[512];
	ssize_t n;

	memset(&ifr, 0, sizeof(ifr));
	if (!if_indextoname((unsigned)s->ifindex, ifr.ifr_name) ||
	    ioctl(CMA_WILL_PACKET_FD, SIOCGIFHWADDR, &ifr) < 0)
		return;
	memset(&f, 0, sizeof(f));
	f.encap = UROCE_ENCAP_V1;
	memcpy(f.eth.src, ifr.ifr_hwaddr.sa_data, 6);
	memcpy(f.eth.dst, s->dmac_own ? f.eth.src : s->dmac, 6);
	f.ip6.version = 6;
	f.ip6.tclass = s->tos;
	f.ip6.hop_limit = s->hop_limit;
	memcpy(f.ip6.src, s->src, 16);
	memcpy(f.ip6.dst, s->dst, 16);
	gsi_send(&f, s);
	n = uroce_frame_encode(frame, sizeof(frame), &f);
	memcpy(to.sll_addr, f.eth.dst, 6);
	/* Twice: a lost DREQ is not retried by anyone. */
	for (int i = 0; n > 0 && i < 2; i++)
		sendto(CMA_WILL_PACKET_FD, frame, (size_t)n, 0, (struct sockaddr *)&to, sizeof(to));
}

static void send_slot(const struct cma_will_slot *s)
{
	struct sockaddr_storage src = {0}, dst = {0};
	socklen_t len;
	uint8_t pkt[320];
	uint16_t sport;
	ssize_t n;
	int fd;

	if (s->family == AF_PACKET) {
		send_v1(s);
		return;
	}
	if (s->family == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)&src, *b = (struct sockaddr_in *)&dst;

		a->sin_family = b->sin_family = AF_INET;
		b->sin_port = htons(s->port);
		memcpy(&a->sin_addr, s->src, 4);
		memcpy(&b->sin_addr, s->dst, 4);
		len = sizeof(*a);
	} else {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&src, *b = (struct sockaddr_in6 *)&dst;

		a->sin6_family = b->sin6_family = AF_INET6;
		b->sin6_port = htons(s->port);
		memcpy(&a->sin6_addr, s->src, 16);
		memcpy(&b->sin6_addr, s->dst, 16);
		len = sizeof(*a);
	}
	fd = socket(s->family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	if (s->family == AF_INET) {
		int pmtu = IP_PMTUDISC_DO;

		setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu));
	}
	/* An ephemeral port: the ICRC covers it, so the packet is built after the bind. */
	if (bind(fd, (struct sockaddr *)&src, len) == 0 &&
	    getsockname(fd, (struct sockaddr *)&src, &len) == 0) {
		sport = ntohs(s->family == AF_INET ? ((struct sockaddr_in *)&src)->sin_port
						   : ((struct sockaddr_in6 *)&src)->sin6_port);
		n = build(s, sport, pkt, sizeof(pkt));
		/* Twice: a lost DREQ is not retried by anyone. */
		for (int i = 0; n > 0 && i < 2; i++)
			sendto(fd, pkt, (size_t)n, 0, (struct sockaddr *)&dst, len);
	}
	close(fd);
}

int main(void)
{
	const struct cma_will_table *t;
	pid_t p;
	char c;

	/* Not the application's child: the first process exits at once (librdmacm reaps it). */
	p = fork();
	if (p != 0)
		return p < 0 ? 1 : 0;
	setsid();
	t = mmap(NULL, sizeof(*t), PROT_READ, MAP_SHARED, CMA_WILL_TABLE_FD, 0);
	if (t == MAP_FAILED || t->magic != CMA_WILL_MAGIC)
		return 1;
	close(CMA_WILL_TABLE_FD);
	for (;;) {
		ssize_t n = read(CMA_WILL_PIPE_FD, &c, 1);

		if (n == 0)
			break;
		if (n < 0 && errno != EINTR)
			break;
	}
	/*
	 * The kernel's CM resends what gets no answer; the watchdog hears no answers, so it sends
	 * every message again over half a second. The first copies may come while the processes
	 * sharing the peer's device (this process's own, when the peer is local) re-sort their
	 * steering after this death, and reach the wrong one (io/share_group.h); duplicates are
	 * harmless (a DREQ or REJ for a connection already gone is answered or dropped).
	 */
	static const long resend_ms[] = {0, 20, 100, 500};
	long at = 0;

	for (size_t k = 0; k < sizeof(resend_ms) / sizeof(resend_ms[0]); k++) {
		struct timespec ts = {0, (resend_ms[k] - at) * 1000000L};

		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
		at = resend_ms[k];
		for (uint32_t i = 0; i < t->nslots && i < CMA_WILL_SLOTS; i++)
			if (atomic_load(&t->s[i].armed))
				send_slot(&t->s[i]);
	}
	return 0;
}
