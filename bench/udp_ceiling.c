/* SPDX-License-Identifier: MIT */
/*
 * The ceiling of uroce's RoCE v2 data path on a given path: kernel UDP with GSO and GRO moving
 * RoCE-sized datagrams and doing the least uroce must do per byte, with no RDMA logic at all.
 *
 *   udp_ceiling recv ADDR PORT SEG [--no-crc]
 *   udp_ceiling send ADDR PORT SEG MS [--no-crc] [--corrupt-every N]
 *
 * Each datagram is SEG bytes, like a RoCE packet: a 12-byte header (a sequence number where a
 * BTH would be), payload, and a 4-byte CRC-32 over header and payload where the ICRC would be
 * (ISA-L, as uroce's ICRC). For MS milliseconds the sender cuts a 64 KiB source buffer into
 * payloads and sends them as UDP GSO sends of as many segments as fit 64 KiB, as uroce's UDP
 * backend does (two iovecs per segment: the payload in place, and the CRC of one segment with
 * the header of the next), computing each segment's CRC (unless --no-crc). The receiver takes
 * datagrams in with UDP GRO and recvmmsg, splits them, checks each CRC and copies each payload into
 * a 1 MiB buffer (where uroce would place an RDMA WRITE), so the payload is touched as in uroce:
 * the kernel's copy in and out, a CRC on each side, one copy into "registered memory".
 * --corrupt-every N changes a header byte after the CRC in every Nth segment (the receiver must
 * count those).
 *
 * The sender ends with a few short datagrams; the receiver stops at the first (or after 3 s
 * without data) and prints one line: payload Gbit/s from its first to its last data datagram,
 * segments, datagrams, CRC mismatches and sequence gaps (lost segments).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "ceiling_args.h"
#include "host/os/mono_clock.h"
#include "wire/bytes.h"
#include "wire/icrc.h"

#define HDR	 12
#define TRAILER	 4
#define MAX_SEGS 64
#define MAX_SEND 65507u
#define SRC_SIZE (64u << 10)
#define DST_SIZE (1u << 20)
#define RX_SLOTS 8
#define RX_SLOT	 (64u << 10)

static int usage(void)
{
	fputs("usage: udp_ceiling recv ADDR PORT SEG [--no-crc]\n"
	      "       udp_ceiling send ADDR PORT SEG MS [--no-crc] [--corrupt-every N]\n"
	      "SEG: datagram size, 17 to 8192 (a RoCE packet's: 1040 at MTU 1024, 4112 at 4096)\n",
	      stderr);
	return 2;
}

static int addr_of(const char *host, long port, struct sockaddr_in *a)
{
	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	a->sin_port = htons((uint16_t)port);
	return inet_pton(AF_INET, host, &a->sin_addr) == 1 ? 0 : -1;
}

static int do_send(const struct sockaddr_in *dst, uint32_t seg, double secs, bool crc,
		   long corrupt_every)
{
	/* jn[k]: segment k-1's CRC, then segment k's header */
	static uint8_t src[SRC_SIZE], jn[MAX_SEGS + 1][TRAILER + HDR];
	static struct iovec iov[2 * MAX_SEGS + 1];
	uint32_t pay = seg - HDR - TRAILER, nseg = MAX_SEND / seg, seq = 0, off = 0;
	uint64_t end, sent = 0;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0) {
		perror("udp_ceiling: socket");
		return 1;
	}
	int sz = 4 << 20;

	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	if (nseg > MAX_SEGS)
		nseg = MAX_SEGS;
	for (uint32_t i = 0; i < SRC_SIZE; i++)
		src[i] = (uint8_t)(i * 131u + 7u);
	end = uroce_mono_ns() + (uint64_t)(secs * 1e9);
	while (uroce_mono_ns() < end) {
		for (uint32_t k = 0; k < nseg; k++) {
			uint8_t *p;

			if (off + pay > SRC_SIZE)
				off = 0;
			p = src + off;
			uint8_t *hdr = jn[k] + TRAILER, *trl = jn[k + 1];

			memset(hdr, 0, HDR);
			uroce_put_be32(hdr, seq);
			uroce_put_be32(hdr + 4, off);
			if (crc) {
				uint32_t c = uroce_icrc_update(0, hdr, HDR);

				uroce_put_be32(trl, uroce_icrc_update(c, p, pay));
			}
			if (k == 0)
				iov[0] = (struct iovec){hdr, HDR};
			iov[2 * k + 1] = (struct iovec){p, pay};
			iov[2 * k + 2] =
				(struct iovec){trl, k + 1 < nseg ? TRAILER + HDR : TRAILER};
			if (corrupt_every && seq % (uint32_t)corrupt_every == 0)
				hdr[8] ^= 0x5A; /* after the CRC: the receiver must see it */
			seq++;
			off += pay;
		}
		struct {
			_Alignas(struct cmsghdr) char buf[CMSG_SPACE(sizeof(uint16_t))];
		} u;
		struct sockaddr_in to = *dst;
		struct msghdr m = {.msg_name = &to,
				   .msg_namelen = sizeof(to),
				   .msg_iov = iov,
				   .msg_iovlen = 2 * nseg + 1,
				   .msg_control = u.buf,
				   .msg_controllen = sizeof(u.buf)};
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		uint16_t gs = (uint16_t)seg;

		memset(u.buf, 0, sizeof(u.buf));
		c->cmsg_level = SOL_UDP;
		c->cmsg_type = UDP_SEGMENT;
		c->cmsg_len = CMSG_LEN(sizeof(gs));
		memcpy(CMSG_DATA(c), &gs, sizeof(gs));
		if (sendmsg(fd, &m, 0) < 0) {
			if (errno == ENOBUFS || errno == EAGAIN || errno == ECONNREFUSED)
				continue;
			perror("udp_ceiling: sendmsg");
			close(fd);
			return 1;
		}
		sent += (uint64_t)nseg * pay;
	}
	for (int i = 0; i < 5; i++) /* the end: datagrams shorter than a header */
		sendto(fd, "end", 3, 0, (const struct sockaddr *)dst, sizeof(*dst));
	printf("sent %llu payload bytes in %u-byte segments, %u per send\n",
	       (unsigned long long)sent, seg, nseg);
	close(fd);
	return 0;
}

static int do_recv(const struct sockaddr_in *me, uint32_t seg, bool crc)
{
	static uint8_t slot[RX_SLOTS][RX_SLOT], dst[DST_SIZE];
	static struct {
		_Alignas(struct cmsghdr) char buf[CMSG_SPACE(sizeof(int))];
	} ctl[RX_SLOTS];
	struct mmsghdr mm[RX_SLOTS];
	struct iovec iov[RX_SLOTS];
	uint32_t pay = seg - HDR - TRAILER, next = 0;
	uint64_t bytes = 0, segs = 0, dgrams = 0, bad = 0, gaps = 0, first = 0, last = 0;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), one = 1, sz = 32 << 20, gro;
	bool done = false;

	if (fd < 0 || bind(fd, (const struct sockaddr *)me, sizeof(*me)) < 0) {
		perror("udp_ceiling: bind");
		return 1;
	}
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	if (setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof(one)) < 0)
		perror("udp_ceiling: UDP_GRO (receiving one datagram per packet)");
	printf("listening\n");
	fflush(stdout);
	while (!done) {
		struct pollfd pf = {.fd = fd, .events = POLLIN};

		if (poll(&pf, 1, 3000) != 1)
			break; /* 3 s without anything: the sender is gone */
		for (int i = 0; i < RX_SLOTS; i++) {
			iov[i] = (struct iovec){slot[i], RX_SLOT};
			mm[i].msg_hdr = (struct msghdr){.msg_iov = &iov[i],
							.msg_iovlen = 1,
							.msg_control = ctl[i].buf,
							.msg_controllen = sizeof(ctl[i].buf)};
		}
		int n = recvmmsg(fd, mm, RX_SLOTS, MSG_DONTWAIT, NULL);

		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			perror("udp_ceiling: recvmmsg");
			break;
		}
		for (int i = 0; i < n && !done; i++) {
			uint32_t len = mm[i].msg_len, gs = len;

			for (struct cmsghdr *c = CMSG_FIRSTHDR(&mm[i].msg_hdr); c;
			     c = CMSG_NXTHDR(&mm[i].msg_hdr, c)) {
				if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
					memcpy(&gro, CMSG_DATA(c), sizeof(gro));
					gs = (uint32_t)gro;
				}
			}
			if (len < HDR + TRAILER) {
				done = true;
				break;
			}
			if (!first)
				first = uroce_mono_ns();
			dgrams++;
			if (gs != seg || len % seg) {
				bad++; /* not what the sender sends */
				continue;
			}
			for (uint32_t o = 0; o < len; o += seg) {
				const uint8_t *p = slot[i] + o;
				uint32_t seq = uroce_get_be32(p), at = uroce_get_be32(p + 4);

				if (crc &&
				    uroce_icrc_update(uroce_icrc_update(0, p, HDR), p + HDR, pay) !=
					    uroce_get_be32(p + HDR + pay)) {
					bad++;
					continue;
				}
				if (seq != next)
					gaps++;
				next = seq + 1;
				memcpy(dst + (at % (DST_SIZE - pay)), p + HDR, pay);
				bytes += pay;
				segs++;
			}
			last = uroce_mono_ns();
		}
	}
	double s = last > first ? (double)(last - first) / 1e9 : 0;

	printf("received %.2f Gbit/s of payload (%llu bytes in %.2f s), %llu segments in %llu "
	       "datagrams, crc_bad %llu, gaps %llu\n",
	       s > 0 ? (double)bytes * 8 / s / 1e9 : 0.0, (unsigned long long)bytes, s,
	       (unsigned long long)segs, (unsigned long long)dgrams, (unsigned long long)bad,
	       (unsigned long long)gaps);
	close(fd);
	return segs ? 0 : 1;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a;
	bool crc = true, send = argc > 1 && !strcmp(argv[1], "send");
	long port, seg, corrupt = 0;
	double secs = 0;
	int fixed = send ? 6 : 5;

	if (argc < fixed || (!send && strcmp(argv[1], "recv")))
		return usage();
	port = ceiling_number(argv[3], 1, 65535);
	seg = ceiling_number(argv[4], HDR + TRAILER + 1, 8192);
	if (port < 0 || seg < 0 || addr_of(argv[2], port, &a))
		return usage();
	if (send) {
		long ms = ceiling_number(argv[5], 1, 3600000);

		if (ms < 0)
			return usage();
		secs = (double)ms / 1000;
	}
	if (ceiling_options(argc, argv, fixed, send, &crc, &corrupt))
		return usage();
	if (send)
		return do_send(&a, (uint32_t)seg, secs, crc, corrupt);
	return do_recv(&a, (uint32_t)seg, crc);
}
