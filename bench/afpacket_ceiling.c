/* SPDX-License-Identifier: MIT */
/*
 * The ceiling of uroce's RoCE v1 data path on a given path: raw Ethernet frames of a RoCE v1
 * packet's size through AF_PACKET sockets, doing the least uroce must do per frame and per byte,
 * with no RDMA logic at all.
 *
 *   afpacket_ceiling recv IFNAME PAYLOAD [--no-crc]
 *   afpacket_ceiling send IFNAME DSTMAC PAYLOAD MS [--no-crc] [--corrupt-every N]
 *
 * Each frame is a RoCE v1 packet's: an Ethernet header (Ethertype 0x8915), a 40-byte GRH, a
 * 12-byte header where the BTH would be (a sequence number and the payload's offset), PAYLOAD
 * bytes (the path's RoCE MTU: 1024 at MTU 1500, 4096 at 9000 and on loopback) and a 4-byte CRC-32
 * over GRH, header and payload where the ICRC would be (ISA-L, as uroce's ICRC). For MS
 * milliseconds the sender cuts a 64 KiB source buffer into payloads and sends 64 frames per
 * sendmmsg, three iovecs per frame, from a socket that skips the queueing layer, as uroce's
 * AF_PACKET backend sends to other hosts (src/host/io/afpacket.c). The receiver takes frames
 * with recvmmsg, 64 at a time, from a socket bound to the Ethertype on IFNAME, checks each CRC
 * and copies each payload into a 1 MiB buffer (where uroce would place an RDMA WRITE).
 * --corrupt-every N changes a header byte after the CRC in every Nth frame (the receiver must
 * count those).
 *
 * The sender ends with a few frames shorter than a header; the receiver stops at the first (or
 * after 3 s without data) and prints one line: payload Gbit/s from its first to its last data
 * frame, frames, CRC mismatches and sequence gaps (lost frames). Needs CAP_NET_RAW.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ceiling_args.h"
#include "host/os/mono_clock.h"
#include "wire/bytes.h"
#include "wire/hdr.h"
#include "wire/icrc.h"

#define ETH	  14
#define GRH	  40
#define HDR	  12
#define TRAILER	  4
#define HEAD	  (ETH + GRH + HDR)
#define BATCH	  64
#define MAX_FRAME 9216u
#define SRC_SIZE  (64u << 10)
#define DST_SIZE  (1u << 20)
#define MAX_PAY	  (MAX_FRAME - HEAD - TRAILER)
#define IDLE_MS	  3000

static int usage(void)
{
	fputs("usage: afpacket_ceiling recv IFNAME PAYLOAD [--no-crc]\n"
	      "       afpacket_ceiling send IFNAME DSTMAC PAYLOAD MS [--no-crc] [--corrupt-every "
	      "N]\n"
	      "PAYLOAD: bytes per frame, 1 to 9146 (the path's RoCE MTU: 1024 at MTU 1500, 4096 at "
	      "9000)\n",
	      stderr);
	return 2;
}

static int mac_of(const char *s, uint8_t mac[6])
{
	unsigned m[6];
	char end;

	if (sscanf(s, "%x:%x:%x:%x:%x:%x%c", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5], &end) != 6)
		return -1;
	for (int i = 0; i < 6; i++) {
		if (m[i] > 0xff)
			return -1;
		mac[i] = (uint8_t)m[i];
	}
	return 0;
}

/* An AF_PACKET socket bound to ifname for protocol proto (network order; 0: send only). */
static int packet_socket(const char *ifname, uint16_t proto, unsigned *ifindex)
{
	int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, proto);

	*ifindex = if_nametoindex(ifname);
	if (fd < 0 || !*ifindex) {
		fprintf(stderr, "afpacket_ceiling: %s: %s\n", fd < 0 ? "socket" : ifname,
			fd < 0 ? strerror(errno) : "no such interface");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	struct sockaddr_ll a = {
		.sll_family = AF_PACKET, .sll_protocol = proto, .sll_ifindex = (int)*ifindex};

	if (bind(fd, (const struct sockaddr *)&a, sizeof(a)) < 0) {
		perror("afpacket_ceiling: bind");
		close(fd);
		return -1;
	}
	return fd;
}

static int do_send(const char *ifname, const uint8_t dst[6], uint32_t pay, double secs, bool crc,
		   long corrupt_every)
{
	static uint8_t src[SRC_SIZE], head[BATCH][HEAD], trl[BATCH][TRAILER];
	static struct iovec iov[BATCH][3];
	static struct mmsghdr mm[BATCH];
	uint32_t seq = 0, off = 0;
	uint64_t end, sent = 0;
	unsigned ifindex;
	int fd = packet_socket(ifname, 0, &ifindex), one = 1, sz = 4 << 20;
	struct ifreq ifr = {0};

	if (fd < 0)
		return 1;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr) < 0) {
		perror("afpacket_ceiling: SIOCGIFHWADDR");
		close(fd);
		return 1;
	}
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one));
	for (uint32_t i = 0; i < SRC_SIZE; i++)
		src[i] = (uint8_t)(i * 131u + 7u);
	for (int k = 0; k < BATCH; k++) {
		uint8_t *h = head[k];

		memcpy(h, dst, 6);
		memcpy(h + 6, ifr.ifr_hwaddr.sa_data, 6);
		uroce_put_be16(h + 12, UROCE_ETHERTYPE_ROCE);
		memset(h + ETH, 0, GRH + HDR);
		h[ETH] = 0x60;	   /* IP version 6 */
		h[ETH + 6] = 0x1b; /* next header: the BTH */
		h[ETH + 7] = 0x40; /* hop limit */
		uroce_put_be16(h + ETH + 4, (uint16_t)(HDR + pay + TRAILER));
		iov[k][0] = (struct iovec){h, HEAD};
		iov[k][2] = (struct iovec){trl[k], TRAILER};
		mm[k].msg_hdr = (struct msghdr){.msg_iov = iov[k], .msg_iovlen = 3};
	}
	end = uroce_mono_ns() + (uint64_t)(secs * 1e9);
	while (uroce_mono_ns() < end) {
		for (int k = 0; k < BATCH; k++) {
			uint8_t *h = head[k] + ETH + GRH, *p;

			if (off + pay > SRC_SIZE)
				off = 0;
			p = src + off;
			uroce_put_be32(h, seq);
			uroce_put_be32(h + 4, off);
			h[8] = 0;
			if (crc) {
				uint32_t c = uroce_icrc_update(0, head[k] + ETH, GRH + HDR);

				uroce_put_be32(trl[k], uroce_icrc_update(c, p, pay));
			}
			if (corrupt_every && seq % (uint32_t)corrupt_every == 0)
				h[8] ^= 0x5A; /* after the CRC: the receiver must see it */
			iov[k][1] = (struct iovec){p, pay};
			seq++;
			off += pay;
		}
		/* Frames the socket did not take (a full send buffer) are sent again next turn with
		 * new sequence numbers: the receiver counts them as gaps, as lost frames. */
		int n = sendmmsg(fd, mm, BATCH, 0);

		if (n < 0) {
			if (errno == ENOBUFS || errno == EAGAIN || errno == EINTR)
				continue;
			perror("afpacket_ceiling: sendmmsg");
			close(fd);
			return 1;
		}
		sent += (uint64_t)n * pay;
	}
	uint8_t stop[ETH + 3];

	memcpy(stop, head[0], ETH);
	memcpy(stop + ETH, "end", 3);
	for (int i = 0; i < 5; i++) /* the end: frames shorter than a header */
		send(fd, stop, sizeof(stop), 0);
	printf("sent %llu payload bytes in frames of %u bytes of payload, %d per call\n",
	       (unsigned long long)sent, pay, BATCH);
	close(fd);
	return 0;
}

static int do_recv(const char *ifname, uint32_t pay, bool crc)
{
	static uint8_t slot[BATCH][MAX_FRAME], dst[DST_SIZE];
	static struct mmsghdr mm[BATCH];
	static struct iovec iov[BATCH];
	uint32_t next = 0, flen = HEAD + pay + TRAILER;
	uint64_t bytes = 0, frames = 0, bad = 0, gaps = 0, first = 0, last = 0;
	unsigned ifindex;
	int fd = packet_socket(ifname, htons(UROCE_ETHERTYPE_ROCE), &ifindex), sz = 32 << 20;
	bool done = false;

	if (fd < 0)
		return 1;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	printf("listening\n");
	fflush(stdout);
	while (!done) {
		struct pollfd pf = {.fd = fd, .events = POLLIN};

		if (poll(&pf, 1, IDLE_MS) != 1)
			break; /* 3 s without anything: the sender is gone */
		for (int i = 0; i < BATCH; i++) {
			iov[i] = (struct iovec){slot[i], MAX_FRAME};
			mm[i].msg_hdr = (struct msghdr){.msg_iov = &iov[i], .msg_iovlen = 1};
		}
		int n = recvmmsg(fd, mm, BATCH, MSG_DONTWAIT, NULL);

		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			perror("afpacket_ceiling: recvmmsg");
			break;
		}
		uint64_t now = uroce_mono_ns(); /* one clock read per batch */

		for (int i = 0; i < n; i++) {
			const uint8_t *f = slot[i], *h = f + ETH + GRH;
			uint32_t len = mm[i].msg_len;

			if (len < HEAD) {
				done = true;
				break;
			}
			if (!first)
				first = now;
			last = now;
			if (len != flen) {
				bad++; /* not what the sender sends */
				continue;
			}
			if (crc &&
			    uroce_icrc_update(uroce_icrc_update(0, f + ETH, GRH + HDR), h + HDR,
					      pay) != uroce_get_be32(h + HDR + pay)) {
				bad++;
				continue;
			}
			uint32_t seq = uroce_get_be32(h), at = uroce_get_be32(h + 4);

			if (seq != next)
				gaps++;
			next = seq + 1;
			memcpy(dst + (at % (DST_SIZE - pay)), h + HDR, pay);
			bytes += pay;
			frames++;
		}
	}
	double s = last > first ? (double)(last - first) / 1e9 : 0;

	printf("received %.2f Gbit/s of payload (%llu bytes in %.2f s), %llu frames, crc_bad %llu, "
	       "gaps %llu\n",
	       s > 0 ? (double)bytes * 8 / s / 1e9 : 0.0, (unsigned long long)bytes, s,
	       (unsigned long long)frames, (unsigned long long)bad, (unsigned long long)gaps);
	close(fd);
	return frames ? 0 : 1;
}

int main(int argc, char **argv)
{
	bool crc = true, send = argc > 1 && !strcmp(argv[1], "send");
	uint8_t dst[6];
	long pay, corrupt = 0, ms = 0;
	int fixed = send ? 6 : 4, a = 3;

	if (argc < fixed || (!send && strcmp(argv[1], "recv")))
		return usage();
	if (send && mac_of(argv[a++], dst))
		return usage();
	pay = ceiling_number(argv[a++], 1, MAX_PAY);
	if (pay < 0 || (send && (ms = ceiling_number(argv[a], 1, 3600000)) < 0))
		return usage();
	if (ceiling_options(argc, argv, fixed, send, &crc, &corrupt))
		return usage();
	if (send)
		return do_send(argv[2], dst, (uint32_t)pay, (double)ms / 1000, crc, corrupt);
	return do_recv(argv[2], (uint32_t)pay, crc);
}
