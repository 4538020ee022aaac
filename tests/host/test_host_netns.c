/* SPDX-License-Identifier: MIT */
/*
 * The GID table follows address changes: run inside netns.sh's namespace (interface v0, MAC
 * 02:00:00:00:00:01, 198.18.0.1/24). Opens the rtnetlink watch, changes addresses and the MTU
 * with ip(8), and checks that the watch reports each change and a rebuild shows it. No sleep:
 * the kernel queues the notification before `ip` returns.
 */
#include <errno.h>
#include <net/if.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "host/config/gid.h"
#include "host/os/netif.h"

/*
 * The watch's answer after a change: IPv6 address notifications can come from the kernel's
 * address-configuration work after `ip` returns, so wait (bounded) for the fd first.
 */
static int drain_after_change(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	poll(&p, 1, 2000);
	return uroce_netif_watch_drain(fd);
}

static int find_gid(const struct uroce_gid_entry *t, int n, const char *gid, enum uroce_gid_type ty)
{
	char s[UROCE_GID_STR_LEN];

	for (int i = 0; i < n; i++) {
		uroce_gid_str(t[i].gid, s);
		if (!strcmp(s, gid) && t[i].type == ty)
			return i;
	}
	return -1;
}

static int sh(const char *cmd)
{
	int st = system(cmd);

	CHECKF(st == 0, "%s: status %d", cmd, st);
	return st;
}

int main(void)
{
	static const char *const a3 = "0000:0000:0000:0000:0000:ffff:c612:0003";
	static const char *const ll = "fe80:0000:0000:0000:0000:00ff:fe00:0001";
	struct uroce_devdef dev = { .name = "t", .netdev = "v0", .roce = UROCE_ROCE_BOTH };
	struct uroce_devdef gone = {.name = "g", .netdev = "uroce-nosuch0", .roce = UROCE_ROCE_V2};
	struct uroce_gid_entry t[64];
	struct uroce_netif_list ifs;
	int fd, n, n0, i3;

	fd = uroce_netif_watch_open();
	CHECKF(fd >= 0, "watch_open: %d", fd);
	if (fd < 0)
		return check_exit("test_host_netns");
	CHECK(uroce_netif_watch_drain(fd) == 0); /* nothing happened yet */

	n0 = uroce_gid_table_build(&dev, t, 64);
	CHECKF(n0 >= 4, "build: %d", n0);
	CHECK(find_gid(t, n0, ll, UROCE_GID_V1) == 0 && find_gid(t, n0, ll, UROCE_GID_V2) == 1);
	CHECK(find_gid(t, n0, a3, UROCE_GID_V2) < 0);
	CHECK(n0 > 0 && t[0].ifindex == if_nametoindex("v0") && !strcmp(t[0].netdev, "v0"));

	sh("ip addr add 198.18.0.3/24 dev v0");
	CHECK(drain_after_change(fd) == 1);
	CHECK(uroce_netif_watch_drain(fd) == 0); /* drained */
	n = uroce_gid_table_build(&dev, t, 64);
	CHECKF(n == n0 + 2, "after add: %d entries, %d before", n, n0);
	i3 = find_gid(t, n, a3, UROCE_GID_V1);
	CHECKF(i3 >= 2 && t[i3].ipv4 && find_gid(t, n, a3, UROCE_GID_V2) == i3 + 1,
	       "198.18.0.3 at %d", i3);

	sh("ip addr del 198.18.0.3/24 dev v0");
	CHECK(drain_after_change(fd) == 1);
	n = uroce_gid_table_build(&dev, t, 64);
	CHECK(n == n0 && find_gid(t, n, a3, UROCE_GID_V1) < 0);

	sh("ip -6 addr add fd00:198:18::77/64 dev v0 nodad");
	CHECK(drain_after_change(fd) == 1);
	n = uroce_gid_table_build(&dev, t, 64);
	CHECK(find_gid(t, n, "fd00:0198:0018:0000:0000:0000:0000:0077", UROCE_GID_V2) > 0);
	sh("ip -6 addr del fd00:198:18::77/64 dev v0");
	CHECK(drain_after_change(fd) == 1);

	/* A link change (MTU) is reported, and the next scan has it. */
	sh("ip link set v0 mtu 1400");
	CHECK(drain_after_change(fd) == 1);
	CHECK(uroce_netif_scan(&ifs) == 0);
	CHECK(uroce_netif_find(&ifs, "v0") && uroce_netif_find(&ifs, "v0")->mtu == 1400);
	uroce_netif_list_free(&ifs);
	sh("ip link set v0 mtu 9000");
	CHECK(drain_after_change(fd) == 1);

	CHECK(uroce_gid_table_build(&gone, t, 64) == -ENODEV);
	CHECK(uroce_gid_table_build(&dev, t, 1) == -ENOSPC);
	close(fd);
	return check_exit("test_host_netns");
}
