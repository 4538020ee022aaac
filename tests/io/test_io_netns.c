/* SPDX-License-Identifier: MIT */
/*
 * Backends across a veth pair between two network namespaces (netns.sh creates them, as root):
 * neighbour resolution (uroce_neigh_lookup, uroce_neigh_direct); RoCE v1 over AF_PACKET with
 * IPv4 and IPv6 GIDs, both ways, and a frame beyond the MTU refused and counted; RoCE v2 over
 * UDP, IPv4 and IPv6. Every opcode is checked on arrival.
 *
 *   test_io_netns NSA NSB IFA IFB PCAP   namespaces, their veth ends, and the file for the
 *                                        tap capture of the v1 traffic (netns.sh checks it)
 *
 * Waiting is poll() with a deadline; nothing sleeps.
 */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io_kit.h"
#include "host/config/io_counters.h"
#include "host/io/afpacket.h"
#include "host/io/pcap_sink.h"
#include "host/io/pcap_tap.h"
#include "host/io/udp.h"
#include "host/os/neigh.h"

static void enter_ns(const char *ns)
{
	char path[256];

	snprintf(path, sizeof(path), "/var/run/netns/%s", ns);
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || setns(fd, CLONE_NEWNET) < 0) {
		perror(path);
		exit(1);
	}
	close(fd);
}

/* Resolve gid's MAC on ifindex: the first lookup starts resolution, later ones succeed. */
static int resolve(int ifindex, const uint8_t gid[16], uint8_t mac[6], int *eagain)
{
	int mon = uroce_neigh_monitor_open();

	CHECK(mon >= 0);
	int r = -EAGAIN;

	for (int tries = 0; tries < 20; tries++) {
		r = uroce_neigh_lookup(ifindex, gid, mac);
		if (r != -EAGAIN)
			break;
		(*eagain)++;
		struct pollfd p = {.fd = mon, .events = POLLIN};

		poll(&p, 1, 1000); /* a neighbour update, or a bounded wait */
		uroce_neigh_monitor_drain(mon);
	}
	close(mon);
	return r;
}

static struct uroce_backend *open_in(const char *ns, const struct uroce_backend_ops *ops,
				     const char *ifname, const uint8_t (*addrs)[16], int n)
{
	struct uroce_backend_cfg cfg;
	struct uroce_backend *b = NULL;
	char err[256] = "";

	enter_ns(ns);
	memset(&cfg, 0, sizeof(cfg));
	cfg.ifname = ifname;
	if (n)
		memcpy(cfg.addrs, addrs, (size_t)n * 16);
	cfg.n_addrs = n;
	cfg.err = err;
	cfg.errlen = sizeof(err);
	int r = ops->open(&cfg, &b);

	CHECKF(r == 0, "open %s in %s: %d %s", ops->name, ns, r, err);
	return r == 0 ? b : NULL;
}

static int test_netns(const char *nsa, const char *nsb, const char *ifa, const char *ifb,
		      const char *pcap)
{
	uint8_t a4[16], b4[16], a6[16], b6[16];
	uint8_t aa[2][16], ba[2][16];

	gid4(a4, "198.18.0.1");
	gid4(b4, "198.18.0.2");
	gid6(a6, "fd00:198:18::1");
	gid6(b6, "fd00:198:18::2");
	memcpy(aa[0], a4, 16);
	memcpy(aa[1], a6, 16);
	memcpy(ba[0], b4, 16);
	memcpy(ba[1], b6, 16);

	struct uroce_backend *pa = open_in(nsa, &uroce_packet_ops, ifa, NULL, 0);
	int ifindex_a = (int)if_nametoindex(ifa);
	struct uroce_backend *pb = open_in(nsb, &uroce_packet_ops, ifb, NULL, 0);

	if (!pa || !pb)
		return check_exit_with("io_netns", io_kit_checks);

	/* v1 first, while the neighbour tables are empty: resolution must be triggered. */
	uint8_t mac4[6], mac6[6], macll[6], ll_b[16];
	int eagain4 = 0, eagain6 = 0;

	enter_ns(nsa);
	CHECK(resolve(ifindex_a, b4, mac4, &eagain4) == 0);
	CHECK(resolve(ifindex_a, b6, mac6, &eagain6) == 0);
	printf("netns: neighbour resolution: IPv4 after %d EAGAIN, IPv6 after %d\n", eagain4,
	       eagain6);
	CHECK(eagain4 >= 1 && eagain6 >= 1); /* the first lookup found nothing */
	CHECK(memcmp(mac4, pb->mac, 6) == 0 && memcmp(mac6, pb->mac, 6) == 0);
	/* A second lookup is immediate. */
	CHECK(uroce_neigh_lookup(ifindex_a, b4, mac4) == 0);
	/* Link-local GID from the MAC (EUI-64): direct, no lookup. */
	memset(ll_b, 0, 16);
	ll_b[0] = 0xFE;
	ll_b[1] = 0x80;
	ll_b[8] = pb->mac[0] ^ 2;
	ll_b[9] = pb->mac[1];
	ll_b[10] = pb->mac[2];
	ll_b[11] = 0xFF;
	ll_b[12] = 0xFE;
	ll_b[13] = pb->mac[3];
	ll_b[14] = pb->mac[4];
	ll_b[15] = pb->mac[5];
	CHECK(uroce_neigh_direct(ll_b, macll) == 0 && memcmp(macll, pb->mac, 6) == 0);
	{
		uint8_t mc[16], m[6];

		gid6(mc, "ff02::1:ff00:2");
		CHECK(uroce_neigh_direct(mc, m) == 0 && m[0] == 0x33 && m[5] == 0x02);
		gid4(mc, "239.1.2.3");
		CHECK(uroce_neigh_direct(mc, m) == 0 && m[0] == 1 && m[2] == 0x5E && m[3] == 1);
		CHECK(uroce_neigh_direct(b4, m) == -ENOENT);
	}

	struct uroce_pcap_sink *sink = NULL;

	CHECK(uroce_pcap_sink_open(&sink, pcap) == 0);
	CHECK(uroce_pcap_tap_wrap(&pa, sink) == 0);
	CHECK(uroce_pcap_tap_wrap(&pb, sink) == 0);
	uroce_pcap_sink_put(sink);

	struct uroce_path v1 = {.encap = UROCE_ENCAP_V1,
				.traffic_class = 0x20,
				.hop_limit = 1,
				.flow_label = 0x12345};

	memcpy(v1.sgid, a4, 16); /* an IPv4 RoCE v1 GID, as mlx5 index 2 */
	memcpy(v1.dgid, b4, 16);
	memcpy(v1.dmac, mac4, 6);
	every_opcode(pa, pb, &v1, 1, "v1 AF_PACKET, IPv4 GIDs, veth");
	memcpy(v1.sgid, a6, 16);
	memcpy(v1.dgid, b6, 16);
	memcpy(v1.dmac, mac6, 6);
	v1.hop_limit = 0;
	every_opcode(pa, pb, &v1, 64, "v1 AF_PACKET, IPv6 GIDs, veth");
	/* And back, with the MAC the frames came from. */
	{
		struct uroce_path r1 = v1;

		memcpy(r1.sgid, b6, 16);
		memcpy(r1.dgid, a6, 16);
		memcpy(r1.dmac, pa->mac, 6);
		every_opcode(pb, pa, &r1, 64, "v1 AF_PACKET, back");
	}
	/* A frame larger than the MTU is refused and counted, not fatal. */
	{
		static struct sent big;
		static uint8_t bigpay[9600]; /* beyond the veth MTU of 9000 */
		struct uroce_tx_desc d = {&big.pkt, &v1, 0};

		make_pkt(&big, UROCE_OP_RC_SEND_ONLY, 1, 0);
		big.pkt.payload = bigpay;
		big.pkt.payload_len = sizeof(bigpay);
		uint64_t e0 = uroce_backend_counter(pa, UROCE_IO_TX_ERR);

		CHECK(uroce_backend_tx(pa, &d, 1) == 1);
		CHECK(uroce_backend_counter(pa, UROCE_IO_TX_ERR) == e0 + 1);
		CHECK(pa->tx_refused_n == 1 && pa->tx_refused[0] == 0);
		CHECK(uroce_backend_counter(pa, UROCE_IO_PCAP_TX) ==
		      uroce_backend_counter(pa, UROCE_IO_TX_PKTS));
	}
	uroce_backend_close(pa);
	uroce_backend_close(pb);

	/* v2 across the namespaces, IPv4 and IPv6. */
	struct uroce_backend *ua = open_in(nsa, &uroce_udp_ops, ifa, (const uint8_t(*)[16])aa, 2);
	struct uroce_backend *ub = open_in(nsb, &uroce_udp_ops, ifb, (const uint8_t(*)[16])ba, 2);

	if (!ua || !ub)
		return check_exit_with("io_netns", io_kit_checks);
	struct uroce_path p = {.encap = UROCE_ENCAP_V2_IPV4, .traffic_class = 0x02};

	memcpy(p.sgid, a4, 16);
	memcpy(p.dgid, b4, 16);
	p.sport = uroce_udp_sport(5, 6, 0);
	every_opcode(ua, ub, &p, 64, "v2/IPv4 across netns");
	p.encap = UROCE_ENCAP_V2_IPV6;
	memcpy(p.sgid, b6, 16);
	memcpy(p.dgid, a6, 16);
	p.hop_limit = 5;
	every_opcode(ub, ua, &p, 5, "v2/IPv6 across netns");
	uroce_backend_close(ua);
	uroce_backend_close(ub);
	return check_exit_with("io_netns", io_kit_checks);
}

int main(int argc, char **argv)
{
	if (argc != 6) {
		fprintf(stderr, "usage: test_io_netns NSA NSB IFA IFB PCAP\n");
		return 2;
	}
	io_kit_init();
	return test_netns(argv[1], argv[2], argv[3], argv[4], argv[5]);
}
