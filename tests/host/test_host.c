/* SPDX-License-Identifier: MIT */
/*
 * Host-layer unit tests: MTU rules, port rates from link speeds, names, EUI-64 and node GUIDs,
 * GID table layouts (from synthetic interfaces), device order, the run-time directory, default
 * RoCE modes and the counter files (writer API across processes, reader, and `uroce stats`
 * printing them).
 *   test_host UROCE   (UROCE: the uroce binary, for the printer checks)
 * Uses a mktemp -d run-time directory, removed at the end, and the loopback interface.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "host/config/device.h"
#include "host/config/device_del.h"
#include "host/config/gid.h"
#include "host/config/io_counters.h"
#include "host/config/mode.h"
#include "host/config/rundir.h"
#include "host/config/stats.h"
#include "host/config/sysfs_tree.h"
#include "host/config/tos.h"
#include "host/os/netif.h"

static char rundir[PATH_MAX];

static void test_mtu(void)
{
	static const struct {
		unsigned eth;
		int active, path;
	} cases[] = {
		{ 1500, 1024, 1024 }, { 9000, 4096, 4096 }, { 1280, 1024, 1024 },
		{ 576, 256, 256 },    { 68, -EINVAL, -EINVAL }, { 4176, 4096, 2048 },
		{ 4175, 2048, 2048 }, { 4192, 4096, 4096 }, { 336, 256, -EINVAL },
		{ 335, -EINVAL, -EINVAL }, { 352, 256, 256 }, { 351, 256, -EINVAL },
		{ 65536, 4096, 4096 }, { 0, -EINVAL, -EINVAL }, { 2128, 2048, 1024 },
		{ 2127, 1024, 1024 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		CHECKF(uroce_mtu_active(cases[i].eth) == cases[i].active, "active(%u) = %d",
		       cases[i].eth, uroce_mtu_active(cases[i].eth));
		CHECKF(uroce_mtu_path(cases[i].eth) == cases[i].path, "path(%u) = %d", cases[i].eth,
		       uroce_mtu_path(cases[i].eth));
	}
	CHECK(uroce_mtu_enum(256) == 1 && uroce_mtu_enum(1024) == 3 && uroce_mtu_enum(4096) == 5);
	CHECK(uroce_mtu_enum(1500) == 0);
}

/* The kernel's ib_get_width_and_speed() without lanes, at and around each limit; the rate
 * file's text for each; and the device facts from a synthetic interface. */
static void test_rate(void)
{
	static const struct {
		unsigned mbps;
		uint8_t width, speed;
		const char *rate;
	} cases[] = {
		/* 0: no speed reported, UROCE_ETH_SPEED_DEFAULT */
		{0, UROCE_IB_WIDTH_4X, UROCE_IB_SPEED_EDR, "100 Gb/sec (4X EDR)"},
		{10, UROCE_IB_WIDTH_1X, UROCE_IB_SPEED_SDR, "2.5 Gb/sec (1X SDR)"},
		{1000, UROCE_IB_WIDTH_1X, UROCE_IB_SPEED_SDR, "2.5 Gb/sec (1X SDR)"},
		{1001, UROCE_IB_WIDTH_1X, UROCE_IB_SPEED_FDR10, "10 Gb/sec (1X FDR10)"},
		{2500, UROCE_IB_WIDTH_1X, UROCE_IB_SPEED_FDR10, "10 Gb/sec (1X FDR10)"},
		{10000, UROCE_IB_WIDTH_1X, UROCE_IB_SPEED_FDR10, "10 Gb/sec (1X FDR10)"},
		{10001, UROCE_IB_WIDTH_4X, UROCE_IB_SPEED_DDR, "20 Gb/sec (4X DDR)"},
		{20000, UROCE_IB_WIDTH_4X, UROCE_IB_SPEED_DDR, "20 Gb/sec (4X DDR)"},
		{25000, UROCE_IB_WIDTH_1X, UROCE_IB_SPEED_EDR, "25 Gb/sec (1X EDR)"},
		{25001, UROCE_IB_WIDTH_4X, UROCE_IB_SPEED_FDR10, "40 Gb/sec (4X FDR10)"},
		{40000, UROCE_IB_WIDTH_4X, UROCE_IB_SPEED_FDR10, "40 Gb/sec (4X FDR10)"},
		{50000, UROCE_IB_WIDTH_2X, UROCE_IB_SPEED_EDR, "50 Gb/sec (2X EDR)"},
		{56000, UROCE_IB_WIDTH_4X, UROCE_IB_SPEED_EDR, "100 Gb/sec (4X EDR)"},
		{100000, UROCE_IB_WIDTH_4X, UROCE_IB_SPEED_EDR, "100 Gb/sec (4X EDR)"},
		{100001, UROCE_IB_WIDTH_4X, UROCE_IB_SPEED_HDR, "200 Gb/sec (4X HDR)"},
		{200000, UROCE_IB_WIDTH_4X, UROCE_IB_SPEED_HDR, "200 Gb/sec (4X HDR)"},
		{400000, UROCE_IB_WIDTH_4X, UROCE_IB_SPEED_NDR, "400 Gb/sec (4X NDR)"},
		{4000000000u, UROCE_IB_WIDTH_4X, UROCE_IB_SPEED_NDR, "400 Gb/sec (4X NDR)"},
	};
	struct uroce_netif nif = {.name = "eth9", .ifindex = 9, .flags = IFF_UP | IFF_RUNNING,
				  .mtu = 1500, .speed_mbps = 25000, .mac = {2, 0, 0, 0, 0, 9}};
	struct uroce_netif_list ifs = {.n = 1, .ifs = &nif};
	struct uroce_devdef def = {.name = "d9", .netdev = "eth9", .roce = UROCE_ROCE_V2};
	struct uroce_devinfo info;
	char buf[48], want[48];
	uint8_t w, sp;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		w = sp = 0xee;
		uroce_ib_rate_from_eth(cases[i].mbps, &w, &sp);
		CHECKF(w == cases[i].width && sp == cases[i].speed, "%u Mb/s: width %u speed %u",
		       cases[i].mbps, w, sp);
		snprintf(want, sizeof(want), "%s\n", cases[i].rate);
		uroce_sysfs_rate(w, sp, buf, sizeof(buf));
		CHECKF(!strcmp(buf, want), "%u Mb/s: rate '%s', expected '%s'", cases[i].mbps, buf,
		       cases[i].rate);
	}
	uroce_dev_info(&def, &ifs, &info);
	CHECK(info.netdev_present && info.eth_speed_mbps == 25000);
	CHECK(info.ib_width == UROCE_IB_WIDTH_1X && info.ib_speed == UROCE_IB_SPEED_EDR);
	nif.speed_mbps = 0;
	uroce_dev_info(&def, &ifs, &info);
	CHECK(info.eth_speed_mbps == 0);
	CHECK(info.ib_width == UROCE_IB_WIDTH_4X && info.ib_speed == UROCE_IB_SPEED_EDR);
}

static void test_names(void)
{
	char n63[64], n64[65];
	unsigned m = 0;

	memset(n63, 'a', 63);
	n63[63] = '\0';
	memset(n64, 'a', 64);
	n64[64] = '\0';
	CHECK(uroce_dev_name_check("rxe0") == 0);
	CHECK(uroce_dev_name_check("uroce_eth0.100-x") == 0);
	CHECK(uroce_dev_name_check(n63) == 0);
	CHECK(uroce_dev_name_check(n64) == -EINVAL);
	CHECK(uroce_dev_name_check("") == -EINVAL);
	CHECK(uroce_dev_name_check(".") == -EINVAL);
	CHECK(uroce_dev_name_check("..") == -EINVAL);
	CHECK(uroce_dev_name_check(".tmp.1.0") == -EINVAL);
	CHECK(uroce_dev_name_check("a/b") == -EINVAL);
	CHECK(uroce_dev_name_check("a b") == -EINVAL);
	CHECK(uroce_dev_name_check("a:b") == -EINVAL);
	CHECK(uroce_roce_parse("v1", &m) == 0 && m == UROCE_ROCE_V1);
	CHECK(uroce_roce_parse("v2", &m) == 0 && m == UROCE_ROCE_V2);
	CHECK(uroce_roce_parse("v1,v2", &m) == 0 && m == UROCE_ROCE_BOTH);
	CHECK(uroce_roce_parse("v2,v1", &m) == 0 && m == UROCE_ROCE_BOTH);
	CHECK(uroce_roce_parse("v3", &m) == -EINVAL);
	CHECK(uroce_roce_parse("", &m) == -EINVAL);
	CHECK(uroce_roce_parse("v1,", &m) == -EINVAL);
	CHECK(!strcmp(uroce_roce_str(UROCE_ROCE_BOTH), "v1,v2"));
}

static void test_guid(void)
{
	/* The example of roce-reference.md 1.11: MAC 40:8d:5c:35:bb:12 -> 428d:5cff:fe35:bb12. */
	static const uint8_t mac[6] = { 0x40, 0x8d, 0x5c, 0x35, 0xbb, 0x12 };
	static const uint8_t want[8] = { 0x42, 0x8d, 0x5c, 0xff, 0xfe, 0x35, 0xbb, 0x12 };
	static const uint8_t zero[8];
	uint8_t g[8], g2[8], g3[8];

	CHECK(!uroce_dev_node_guid("rxe0", mac, g));
	CHECK(!memcmp(g, want, 8));
	CHECK(uroce_dev_node_guid("uroce_lo", zero, g));
	CHECK(memcmp(g, zero, 8) != 0);
	CHECK((g[0] & 0x03) == 0); /* local, individual */
	CHECK(uroce_dev_node_guid("uroce_lo", zero, g2) && !memcmp(g, g2, 8)); /* stable */
	CHECK(uroce_dev_node_guid("uroce_lo2", zero, g3) && memcmp(g, g3, 8) != 0);
}

static void addr4(struct uroce_netif_addr *a, const char *s)
{
	memset(a, 0, sizeof(*a));
	a->family = AF_INET;
	CHECK(inet_pton(AF_INET, s, a->addr) == 1);
}

static void addr6(struct uroce_netif_addr *a, const char *s)
{
	memset(a, 0, sizeof(*a));
	a->family = AF_INET6;
	CHECK(inet_pton(AF_INET6, s, a->addr) == 1);
}

/* Check entry i: GID text, type, IPv4 flag. */
static void check_entry(const struct uroce_gid_entry *t, int i, const char *gid, int type, bool v4)
{
	char s[UROCE_GID_STR_LEN];

	uroce_gid_str(t[i].gid, s);
	CHECKF(!strcmp(s, gid), "entry %d: %s, expected %s", i, s, gid);
	CHECKF((int)t[i].type == type, "entry %d: type %d, expected %d", i, (int)t[i].type, type);
	CHECKF(t[i].ipv4 == v4, "entry %d: ipv4 flag", i);
	CHECKF(t[i].ifindex == 7 && !strcmp(t[i].netdev, "veth7"), "entry %d: netdev", i);
}

static void test_gid_layout(void)
{
	static const char *const ll = "fe80:0000:0000:0000:0000:00ff:fe00:0001";
	static const char *const v4 = "0000:0000:0000:0000:0000:ffff:c612:0001";
	static const char *const v6 = "fd00:0198:0018:0000:0000:0000:0000:0001";
	static const char *const ll2 = "fe80:0000:0000:0000:0000:0000:0000:1234";
	struct uroce_netif_addr addrs[5];
	struct uroce_netif nif = {
		.name = "veth7", .ifindex = 7, .flags = IFF_UP | IFF_RUNNING, .mtu = 1500,
		.mac = { 2, 0, 0, 0, 0, 1 }, .naddrs = 5, .addrs = addrs,
	};
	struct uroce_gid_entry t[16];
	int n;

	/* As the kernel lists them: IPv6 global, then link-local (one is the EUI-64 one). */
	addr6(&addrs[0], "fd00:198:18::1");
	addr4(&addrs[1], "198.18.0.1");
	addr6(&addrs[2], "fe80::ff:fe00:1");
	addr6(&addrs[3], "fe80::1234");
	addr6(&addrs[4], "fd00:198:18::1"); /* a duplicate: skipped, as ib_cache_gid_add does */

	n = uroce_gid_table_from_netif(&nif, UROCE_ROCE_BOTH, t, 16);
	CHECKF(n == 8, "dual: %d entries", n);
	if (n == 8) { /* mlx5 layout */
		check_entry(t, 0, ll, UROCE_GID_V1, false);
		check_entry(t, 1, ll, UROCE_GID_V2, false);
		check_entry(t, 2, v4, UROCE_GID_V1, true);
		check_entry(t, 3, v4, UROCE_GID_V2, true);
		check_entry(t, 4, v6, UROCE_GID_V1, false);
		check_entry(t, 5, v6, UROCE_GID_V2, false);
		check_entry(t, 6, ll2, UROCE_GID_V1, false);
		check_entry(t, 7, ll2, UROCE_GID_V2, false);
	}
	n = uroce_gid_table_from_netif(&nif, UROCE_ROCE_V2, t, 16);
	CHECKF(n == 4, "v2: %d entries", n);
	if (n == 4) { /* rxe layout */
		check_entry(t, 0, ll, UROCE_GID_V2, false);
		check_entry(t, 1, v4, UROCE_GID_V2, true);
		check_entry(t, 2, v6, UROCE_GID_V2, false);
		check_entry(t, 3, ll2, UROCE_GID_V2, false);
	}
	n = uroce_gid_table_from_netif(&nif, UROCE_ROCE_V1, t, 16);
	CHECKF(n == 4, "v1: %d entries", n);
	if (n == 4) {
		check_entry(t, 0, ll, UROCE_GID_V1, false);
		check_entry(t, 1, v4, UROCE_GID_V1, true);
	}
	/* Too small a table: the first max entries, and -ENOSPC. */
	memset(t, 0, sizeof(t));
	CHECK(uroce_gid_table_from_netif(&nif, UROCE_ROCE_BOTH, t, 3) == -ENOSPC);
	check_entry(t, 2, v4, UROCE_GID_V1, true);
	CHECK(t[3].type == 0);
	CHECK(!strcmp(uroce_gid_type_str(UROCE_GID_V1), "v1"));
}

static void test_rundir(void)
{
	char p[PATH_MAX], buf[64];
	size_t len;
	struct stat st;

	CHECK(uroce_rundir_join(p, sizeof(p), "%s/a/b/c/f", rundir) == 0);
	CHECK(uroce_rundir_write(p, "one\n", 4, true) == 0);
	CHECK(uroce_rundir_read(p, buf, sizeof(buf), &len) == 0 && len == 4 &&
	      !strcmp(buf, "one\n"));
	CHECK(uroce_rundir_write(p, "two", 3, true) == -EEXIST);
	CHECK(uroce_rundir_read(p, buf, sizeof(buf), &len) == 0 && !strcmp(buf, "one\n"));
	CHECK(uroce_rundir_write(p, "three", 5, false) == 0);
	CHECK(uroce_rundir_read(p, buf, sizeof(buf), &len) == 0 && !strcmp(buf, "three"));
	CHECK(uroce_rundir_read(p, buf, 5, &len) == -EFBIG);
	CHECK(uroce_rundir_join(buf, 8, "%s", "123456789") == -ENAMETOOLONG);
	CHECK(uroce_rundir_join(p, sizeof(p), "%s/a/b", rundir) == 0);
	{
		mode_t um = umask(0);

		umask(um);
		CHECK(stat(p, &st) == 0 && (st.st_mode & 0777) == (uroce_rundir_dir_mode() & ~um));
	}
	/* No temp file left behind. */
	CHECK(uroce_rundir_join(p, sizeof(p), "%s/a/b/c/.tmp.%ld.0", rundir, (long)getpid()) == 0);
	CHECK(access(p, F_OK) != 0);
	/* A file where a directory should be. */
	CHECK(uroce_rundir_join(p, sizeof(p), "%s/a/b/c/f/g", rundir) == 0);
	CHECK(uroce_rundir_write(p, "x", 1, false) == -ENOTDIR);
	/* remove: the file and the emptied directories up to the top. */
	CHECK(uroce_rundir_join(p, sizeof(p), "%s/a/b/c/f", rundir) == 0);
	{
		char top[PATH_MAX];

		CHECK(uroce_rundir_join(top, sizeof(top), "%s/a", rundir) == 0);
		CHECK(uroce_rundir_remove(p, top) == 0);
		CHECK(access(top, F_OK) == 0);
		CHECK(uroce_rundir_join(p, sizeof(p), "%s/a/b", rundir) == 0);
		CHECK(access(p, F_OK) != 0);
		CHECK(rmdir(top) == 0);
	}
	/* Location rules. */
	setenv("UROCE_RUNDIR", "/x/y", 1);
	CHECK(uroce_rundir_path(p, sizeof(p)) == 0 && !strcmp(p, "/x/y"));
	setenv("UROCE_RUNDIR", "", 1);
	setenv("XDG_RUNTIME_DIR", "/run/user/1000", 1);
	CHECK(uroce_rundir_path(p, sizeof(p)) == 0);
	CHECK(!strcmp(p, geteuid() == 0 ? "/run/uroce" : "/run/user/1000/uroce"));
	if (geteuid() != 0) {
		unsetenv("XDG_RUNTIME_DIR");
		CHECK(uroce_rundir_path(p, sizeof(p)) == -ENOENT);
	}
	setenv("UROCE_RUNDIR", rundir, 1);
}

static void add_dev(const char *name, const char *netdev, unsigned roce, int want)
{
	struct uroce_devdef d = { .roce = roce };
	int err;

	snprintf(d.name, sizeof(d.name), "%s", name);
	snprintf(d.netdev, sizeof(d.netdev), "%s", netdev);
	err = uroce_dev_add(rundir, &d, NULL);
	CHECKF(err == want, "add %s on %s: %d, expected %d", name, netdev, err, want);
}

static void test_devices_and_mode(void)
{
	struct uroce_devdef *v, d;
	char p[PATH_MAX], buf[64];
	int n, ver = 0;

	/* No definition: automatic devices, loopback included. */
	CHECK(uroce_dev_any_defined(rundir) == 0);
	CHECK(uroce_dev_find(rundir, "uroce_lo", &d) == 0 && d.automatic &&
	      !strcmp(d.netdev, "lo") && d.roce == UROCE_ROCE_V2);
	CHECK(uroce_mode_get(rundir, "uroce_lo", 1, &ver) == 0 && ver == 2);

	add_dev("t_lo", "lo", UROCE_ROCE_V2, 0);
	add_dev("t_lo", "lo", UROCE_ROCE_V2, -EEXIST);
	add_dev("t_other", "lo", UROCE_ROCE_V2, -EBUSY);
	add_dev("t_x", "uroce-nonexistent0", UROCE_ROCE_V2, -ENODEV);
	add_dev("bad/name", "lo", UROCE_ROCE_V2, -EINVAL);
	add_dev("t_y", "lo", 0, -EINVAL);
	add_dev("t_y", "lo", 4, -EINVAL);
	CHECK(uroce_dev_any_defined(rundir) == 1);
	CHECK(uroce_dev_find(rundir, "uroce_lo", &d) == -ENODEV); /* defined ones only now */
	CHECK(uroce_dev_list(rundir, NULL, &v, &n) == 0 && n == 1 && !v[0].automatic);
	free(v);

	/* Mode: default v2; set 1; the file holds exactly the configfs string. */
	CHECK(uroce_mode_get(rundir, "t_lo", 1, &ver) == 0 && ver == 2);
	CHECK(uroce_mode_set(rundir, "t_lo", 1, 1) == -EINVAL); /* v2-only device */
	CHECK(uroce_mode_get(rundir, "t_lo", 2, &ver) == -EINVAL);
	CHECK(uroce_mode_set(rundir, "t_lo", 0, 2) == -EINVAL);
	CHECK(uroce_mode_get(rundir, "nodev", 1, &ver) == -ENODEV);
	CHECK(uroce_mode_set(rundir, "nodev", 1, 2) == -ENODEV);
	CHECK(uroce_mode_set(rundir, "t_lo", 1, 2) == 0);
	CHECK(uroce_mode_path(rundir, "t_lo", 1, p, sizeof(p)) == 0);
	CHECK(uroce_rundir_read(p, buf, sizeof(buf), NULL) == 0 && !strcmp(buf, "RoCE v2\n"));

	CHECK(uroce_dev_del(rundir, "t_lo") == 0);
	CHECK(access(p, F_OK) != 0); /* the mode went with the device */
	CHECK(uroce_dev_del(rundir, "t_lo") == -ENODEV);
	CHECK(uroce_dev_del(rundir, "../x") == -EINVAL);

	add_dev("t_dual", "lo", UROCE_ROCE_BOTH, 0);
	CHECK(uroce_mode_get(rundir, "t_dual", 1, &ver) == 0 && ver == 2);
	CHECK(uroce_mode_set(rundir, "t_dual", 1, 1) == 0);
	CHECK(uroce_mode_path(rundir, "t_dual", 1, p, sizeof(p)) == 0);
	CHECK(uroce_rundir_read(p, buf, sizeof(buf), NULL) == 0 && !strcmp(buf, "IB/RoCE v1\n"));
	CHECK(uroce_mode_get(rundir, "t_dual", 1, &ver) == 0 && ver == 1);
	CHECK(uroce_mode_set(rundir, "t_dual", 1, 3) == -EINVAL);
	CHECK(uroce_mode_get(rundir, "t_dual", 1, &ver) == 0 && ver == 1); /* unchanged */
	/* Written without the newline, as `echo -n` into configfs: still read. */
	CHECK(uroce_rundir_write(p, "RoCE v2", 7, false) == 0);
	CHECK(uroce_mode_get(rundir, "t_dual", 1, &ver) == 0 && ver == 2);
	CHECK(uroce_rundir_write(p, "RoCE v3\n", 8, false) == 0);
	CHECK(uroce_mode_get(rundir, "t_dual", 1, &ver) == -EBADMSG);
	CHECK(unlink(p) == 0); /* cleared: the default again */
	CHECK(uroce_mode_get(rundir, "t_dual", 1, &ver) == 0 && ver == 2);

	/* TOS: default 0; set; the file holds what configfs shows; it goes with the device. */
	CHECK(uroce_tos_get(rundir, "t_dual", 1, &ver) == 0 && ver == 0);
	CHECK(uroce_tos_set(rundir, "t_dual", 1, 256) == -EINVAL);
	CHECK(uroce_tos_set(rundir, "t_dual", 1, -1) == -EINVAL);
	CHECK(uroce_tos_set(rundir, "t_dual", 2, 1) == -EINVAL);
	CHECK(uroce_tos_get(rundir, "t_dual", 2, &ver) == -EINVAL);
	CHECK(uroce_tos_set(rundir, "nodev", 1, 1) == -ENODEV);
	CHECK(uroce_tos_get(rundir, "nodev", 1, &ver) == -ENODEV);
	CHECK(uroce_tos_set(rundir, "t_dual", 1, 96) == 0);
	CHECK(uroce_tos_get(rundir, "t_dual", 1, &ver) == 0 && ver == 96);
	CHECK(uroce_tos_path(rundir, "t_dual", 1, p, sizeof(p)) == 0);
	CHECK(uroce_rundir_read(p, buf, sizeof(buf), NULL) == 0 && !strcmp(buf, "96\n"));
	CHECK(uroce_rundir_write(p, "255", 3, false) == 0);
	CHECK(uroce_tos_get(rundir, "t_dual", 1, &ver) == 0 && ver == 255);
	static const char *const bad_tos[] = {"256\n", "", "x", "-1", "1\n\n", "0x10", "1000"};

	for (size_t i = 0; i < sizeof(bad_tos) / sizeof(bad_tos[0]); i++) {
		CHECK(uroce_rundir_write(p, bad_tos[i], strlen(bad_tos[i]), false) == 0);
		CHECKF(uroce_tos_get(rundir, "t_dual", 1, &ver) == -EBADMSG, "'%s'", bad_tos[i]);
	}
	CHECK(uroce_tos_set(rundir, "t_dual", 1, 0) == 0);
	CHECK(uroce_mode_set(rundir, "t_dual", 1, 1) == 0);
	CHECK(uroce_dev_del(rundir, "t_dual") == 0);
	CHECK(access(p, F_OK) != 0); /* the TOS went with the device */
	CHECK(uroce_rundir_join(p, sizeof(p), "%s/rdma_cm/t_dual", rundir) == 0);
	CHECK(access(p, F_OK) != 0); /* and so did its directory, mode file and all */
	add_dev("t_dual", "lo", UROCE_ROCE_BOTH, 0);
	CHECK(uroce_tos_set(rundir, "t_dual", 1, 7) == 0); /* a TOS and no mode file */
	CHECK(uroce_dev_del(rundir, "t_dual") == 0);
	CHECK(access(p, F_OK) != 0);

	add_dev("t_v1", "lo", UROCE_ROCE_V1, 0);
	CHECK(uroce_mode_get(rundir, "t_v1", 1, &ver) == 0 && ver == 1);
	CHECK(uroce_mode_set(rundir, "t_v1", 1, 2) == -EINVAL);
	CHECK(uroce_mode_path(rundir, "t_v1", 1, p, sizeof(p)) == 0);
	CHECK(access(p, F_OK) != 0); /* a failed set writes nothing */
	CHECK(uroce_mode_set(rundir, "t_v1", 1, 1) == 0);
	CHECK(uroce_mode_get(rundir, "t_v1", 1, &ver) == 0 && ver == 1);
	CHECK(uroce_dev_del(rundir, "t_v1") == 0);
	CHECK(uroce_dev_any_defined(rundir) == 0);
}

/* Write a definition file of device name on netdev into run-time directory r. */
static void write_def(const char *r, const char *name, const char *netdev)
{
	char path[PATH_MAX], text[64];
	int len = snprintf(text, sizeof(text), "netdev %s\nroce v2\n", netdev);

	CHECK(uroce_dev_path(r, name, path, sizeof(path)) == 0);
	CHECK(uroce_rundir_write(path, text, (size_t)len, true) == 0);
}

/* Device order: loopback devices last; automatic ones by interface index, defined ones by name,
 * whatever order the snapshot lists the interfaces in. */
static void test_dev_order(void)
{
	struct uroce_netif_addr a[3];
	struct uroce_netif nifs[3] = {
		{.name = "lo", .ifindex = 1, .flags = IFF_UP | IFF_RUNNING | IFF_LOOPBACK,
		 .naddrs = 1, .addrs = &a[0]},
		{.name = "eth1", .ifindex = 3, .flags = IFF_UP | IFF_RUNNING, .naddrs = 1,
		 .addrs = &a[1]},
		{.name = "eth0", .ifindex = 2, .flags = IFF_UP | IFF_RUNNING, .naddrs = 1,
		 .addrs = &a[2]},
	};
	struct uroce_netif_list ifs = {.n = 3, .ifs = nifs};
	struct uroce_devdef *v = NULL;
	char r[PATH_MAX], dir[PATH_MAX];
	int n = 0;

	addr4(&a[0], "127.0.0.1");
	addr4(&a[1], "198.18.1.1");
	addr4(&a[2], "198.18.2.1");
	CHECK(uroce_rundir_join(r, sizeof(r), "%s/order", rundir) == 0);
	CHECK(uroce_dev_list(r, &ifs, &v, &n) == 0 && n == 3);
	if (n == 3)
		CHECKF(!strcmp(v[0].name, "uroce_eth0") && !strcmp(v[1].name, "uroce_eth1") &&
			       !strcmp(v[2].name, "uroce_lo"),
		       "automatic order: %s %s %s", v[0].name, v[1].name, v[2].name);
	free(v);

	/* Defined: by name, the one on lo last; one whose interface is gone is not loopback. */
	CHECK(uroce_rundir_join(dir, sizeof(dir), "%s/devices", r) == 0);
	CHECK(uroce_rundir_mkdirs(dir) == 0);
	write_def(r, "a_lo", "lo");
	write_def(r, "b_eth1", "eth1");
	write_def(r, "c_eth0", "eth0");
	write_def(r, "d_gone", "gone0");
	CHECK(uroce_dev_list(r, &ifs, &v, &n) == 0 && n == 4);
	if (n == 4)
		CHECKF(!strcmp(v[0].name, "b_eth1") && !strcmp(v[1].name, "c_eth0") &&
			       !strcmp(v[2].name, "d_gone") && !strcmp(v[3].name, "a_lo"),
		       "defined order: %s %s %s %s", v[0].name, v[1].name, v[2].name, v[3].name);
	free(v);
}

/* Run cmd, return its stdout (static buffer) and *status. */
static const char *run(const char *cmd, int *status)
{
	static char out[65536];
	size_t n = 0;
	FILE *f = popen(cmd, "r");

	out[0] = '\0';
	*status = -1;
	if (!f)
		return out;
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = '\0';
	int st = pclose(f);

	*status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	return out;
}

/* The value printed on the line "  NAME   VALUE" of a `uroce stats` output, or -1. */
static long long printed(const char *out, const char *name)
{
	char key[64];
	const char *p;
	char *end;
	long long v;

	snprintf(key, sizeof(key), "\n  %s ", name);
	p = strstr(out, key);
	if (!p)
		return -1;
	p += strlen(key);
	while (*p == ' ')
		p++;
	v = strtoll(p, &end, 10);
	return end != p && *end == '\n' ? v : -1;
}

static void test_stats(const char *uroce)
{
	struct uroce_stats *s = NULL, *s2 = NULL;
	struct uroce_stat *v;
	uint64_t delta[UROCE_CNT_MAX] = { 0 };
	char cmd[PATH_MAX + 64], p[PATH_MAX];
	const char *out;
	int n, st;

	add_dev("t_stats", "lo", UROCE_ROCE_V2, 0);
	CHECK(uroce_stats_read(rundir, "t_stats", &v, &n) == -ENOENT);
	snprintf(cmd, sizeof(cmd), "'%s' stats t_stats", uroce);
	out = run(cmd, &st);
	CHECKF(st == 0 && !strcmp(out, "t_stats: no counters yet\n"), "stats before: %d '%s'", st,
	       out);

	CHECK(uroce_stats_open(rundir, "t_stats", &s) == 0);
	CHECK(uroce_stats_open(rundir, "t_stats", &s2) == 0); /* a second opener shares the file */
	if (!s || !s2)
		return;
	uroce_stats_add(s, UROCE_CNT_SENT_PKTS, 5);
	uroce_stats_add(s2, UROCE_CNT_SENT_PKTS, 2);
	uroce_stats_add(s, UROCE_CNT_CNP_RCVD, 1);
	uroce_stats_add(s, (enum uroce_counter)UROCE_CNT_MAX, 1); /* ignored */
	delta[UROCE_CNT_RCVD_NAKS] = 3;
	delta[UROCE_CNT_SENT_PKTS] = 1;
	uroce_stats_add_all(s2, delta);
	/* The I/O backends' counters follow the engine's. */
	uint64_t io[UROCE_IO_CNT_MAX] = { 0 };

	io[UROCE_IO_RX_DROP_ICRC] = 4;
	io[UROCE_IO_TX_GSO] = 9;
	uroce_stats_add_io(s, io);
	io[UROCE_IO_TX_GSO] = 1;
	uroce_stats_add_io(s2, io);
	/* Then the connection manager's. */
	uint64_t cm[UROCE_CM_CNT_MAX] = { 0 };

	cm[UROCE_CM_CNT_CONNS_CREATED] = 6;
	cm[UROCE_CM_CNT_STALE_REJECTS] = 0;
	uroce_stats_add_cm(s, cm);
	cm[UROCE_CM_CNT_CONNS_FREED] = 5;
	uroce_stats_add_cm(s2, cm);
	/* Another process adds too. */
	pid_t pid = fork();

	if (pid == 0) {
		struct uroce_stats *c;

		if (uroce_stats_open(rundir, "t_stats", &c))
			_exit(1);
		for (int i = 0; i < 1000; i++)
			uroce_stats_add(c, UROCE_CNT_RCVD_PKTS, 1);
		uroce_stats_close(c);
		_exit(0);
	}
	for (int i = 0; i < 1000; i++)
		uroce_stats_add(s, UROCE_CNT_RCVD_PKTS, 1);
	int wst = 0;

	CHECK(pid > 0 && waitpid(pid, &wst, 0) == pid && WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
	uroce_stats_close(s);
	uroce_stats_close(s2);
	uroce_stats_close(NULL);

	CHECK(uroce_stats_read(rundir, "t_stats", &v, &n) == 0 &&
	      n == UROCE_CNT_MAX + UROCE_IO_CNT_MAX + UROCE_CM_CNT_MAX);
	if (n == UROCE_CNT_MAX + UROCE_IO_CNT_MAX + UROCE_CM_CNT_MAX) {
		const struct uroce_stat *icrc = &v[UROCE_CNT_MAX + UROCE_IO_RX_DROP_ICRC],
					*gso = &v[UROCE_CNT_MAX + UROCE_IO_TX_GSO];
		const struct uroce_stat *cm0 = &v[UROCE_CNT_MAX + UROCE_IO_CNT_MAX];

		CHECK(!strcmp(cm0[UROCE_CM_CNT_CONNS_CREATED].name, "cm_conns_created") &&
		      cm0[UROCE_CM_CNT_CONNS_CREATED].value == 12);
		CHECK(!strcmp(cm0[UROCE_CM_CNT_CONNS_FREED].name, "cm_conns_freed") &&
		      cm0[UROCE_CM_CNT_CONNS_FREED].value == 5);
		CHECK(!strcmp(cm0[UROCE_CM_CNT_STALE_REJECTS].name, "cm_stale_rejects") &&
		      cm0[UROCE_CM_CNT_STALE_REJECTS].value == 0);

		CHECK(!strcmp(icrc->name, "io_rx_drop_icrc") && icrc->value == 8);
		CHECK(!strcmp(gso->name, "io_tx_gso_sends") && gso->value == 10);
		CHECK(!strcmp(v[UROCE_CNT_SENT_PKTS].name, "sent_pkts") &&
		      v[UROCE_CNT_SENT_PKTS].value == 8);
		CHECK(!strcmp(v[UROCE_CNT_RCVD_PKTS].name, "rcvd_pkts") &&
		      v[UROCE_CNT_RCVD_PKTS].value == 2000);
		CHECK(!strcmp(v[UROCE_CNT_RCVD_NAKS].name, "rcvd_naks") &&
		      v[UROCE_CNT_RCVD_NAKS].value == 3);
		CHECK(!strcmp(v[UROCE_CNT_CNP_RCVD].name, "cnp_rcvd") &&
		      v[UROCE_CNT_CNP_RCVD].value == 1);
		CHECK(v[UROCE_CNT_SEND_ERR].value == 0);
	}
	free(v);

	/* The printer. */
	out = run(cmd, &st);
	CHECKF(st == 0, "stats: status %d", st);
	CHECKF(!strncmp(out, "t_stats port 1:\n", 16), "stats heading: '%.40s'", out);
	CHECK(printed(out, "sent_pkts") == 8);
	CHECK(printed(out, "rcvd_pkts") == 2000);
	CHECK(printed(out, "rcvd_naks") == 3);
	CHECK(printed(out, "cnp_rcvd") == 1);
	CHECK(printed(out, "send_err") == 0);
	CHECK(printed(out, "io_rx_drop_icrc") == 8);
	CHECK(printed(out, "cm_conns_created") == 12);
	CHECK(printed(out, "no_such_counter") == -1);
	snprintf(cmd, sizeof(cmd), "'%s' stats no_such_dev 2>/dev/null", uroce);
	out = run(cmd, &st);
	CHECKF(st == 1 && !*out, "stats of an unknown device: %d", st);

	/* A damaged file and a foreign one: the reader refuses them, the writer never overwrites.
	 */
	CHECK(uroce_stats_path(rundir, "t_stats", p, sizeof(p)) == 0);
	CHECK(truncate(p, 100) == 0);
	CHECK(uroce_stats_read(rundir, "t_stats", &v, &n) == -EBADMSG);
	CHECK(uroce_stats_open(rundir, "t_stats", &s) == -EBADMSG);
	snprintf(cmd, sizeof(cmd), "'%s' stats t_stats 2>&1", uroce);
	out = run(cmd, &st);
	CHECKF(st == 1 && strstr(out, "damaged counter file"), "damaged: %d '%s'", st, out);
	CHECK(uroce_rundir_write(p, "something else entirely, long enough to have a header....."
				    "..........",
				 68, false) == 0);
	CHECK(uroce_stats_read(rundir, "t_stats", &v, &n) == -EPROTO);
	CHECK(uroce_stats_open(rundir, "t_stats", &s) == -EPROTO);
	/* link del removes the counters. */
	CHECK(uroce_dev_del(rundir, "t_stats") == 0);
	CHECK(access(p, F_OK) != 0);
}

/* ---- the kernel's sysfs entries of a device ------------------------------------------------ */

struct sysfs_seen {
	int dirs, files, links, gid_files, type_files, errors;
	char state[32], rate[48], type0[16], type1[16], ndev1[16], link[64], ibdev[16], guid[24];
	bool parent_first; /* every entry's parent directory came before it */
	char dirs_seen[64][96];
	int n_dirs_seen;
};

static bool seen_dir(struct sysfs_seen *s, const char *path, size_t len)
{
	if (len == 0)
		return true; /* the class root */
	for (int i = 0; i < s->n_dirs_seen; i++)
		if (strlen(s->dirs_seen[i]) == len && !strncmp(s->dirs_seen[i], path, len))
			return true;
	return false;
}

static int sysfs_collect(void *arg, enum uroce_sysfs_kind kind, const char *path, const char *text)
{
	struct sysfs_seen *s = arg;
	const char *slash = strrchr(path, '/');

	if (!seen_dir(s, path, slash ? (size_t)(slash - path) : 0))
		s->parent_first = false;
#define KEEP(suffix, field)                                                         \
	if (strlen(path) >= strlen(suffix) &&                                        \
	    !strcmp(path + strlen(path) - strlen(suffix), suffix))                   \
	snprintf(s->field, sizeof(s->field), "%s", text)
	switch (kind) {
	case UROCE_SYSFS_DIR:
		s->dirs++;
		if (s->n_dirs_seen < 64 && strlen(path) < 96)
			snprintf(s->dirs_seen[s->n_dirs_seen++], 96, "%s", path);
		break;
	case UROCE_SYSFS_FILE:
		s->files++;
		s->gid_files += strstr(path, "/ports/1/gids/") != NULL;
		s->type_files += strstr(path, "/gid_attrs/types/") != NULL;
		KEEP("/ports/1/state", state);
		KEEP("/ports/1/rate", rate);
		KEEP("/gid_attrs/types/0", type0);
		KEEP("/gid_attrs/types/1", type1);
		KEEP("/gid_attrs/ndevs/1", ndev1);
		KEEP("uverbs3/ibdev", ibdev);
		KEEP("/node_guid", guid);
		break;
	case UROCE_SYSFS_LINK:
		s->links++;
		KEEP("/device/net/veth7", link);
		break;
	}
#undef KEEP
	return 0;
}

static int sysfs_stop(void *arg, enum uroce_sysfs_kind kind, const char *path, const char *text)
{
	(void)kind;
	(void)path;
	(void)text;
	return ++*(int *)arg == 5 ? -ENOSPC : 0;
}

static void test_sysfs_tree(void)
{
	struct uroce_devdef def = {.name = "sv0", .netdev = "veth7", .roce = UROCE_ROCE_BOTH};
	struct uroce_devinfo info = {.netdev_present = true, .active = true, .ib_width = 1,
				     .ib_speed = 1,
				     .node_guid = {0x02, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x55}};
	struct uroce_gid_entry gids[2] = {
		{.type = UROCE_GID_V1, .netdev = "veth7"},
		{.type = UROCE_GID_V2, .netdev = "veth7"},
	};
	struct uroce_sysfs_dev d = {.def = &def, .info = &info, .gids = gids, .n_gids = 2,
				    .index = 3};
	struct sysfs_seen s = {.parent_first = true};
	char rate[48];
	int calls = 0;

	gids[0].gid[0] = gids[1].gid[0] = 0xfe;
	gids[0].gid[1] = gids[1].gid[1] = 0x80;
	CHECK_EQ(uroce_sysfs_classes(sysfs_collect, &s), 0);
	CHECK_EQ(uroce_sysfs_device(&d, sysfs_collect, &s), 0);
	CHECK(s.parent_first);
	CHECK_EQ(s.gid_files, UROCE_GID_TABLE_MAX); /* every slot, as the kernel */
	CHECK_EQ(s.type_files, 2);		    /* only the occupied ones */
	CHECK_EQ(s.links, 1);
	CHECK(!strcmp(s.state, "4: ACTIVE\n"));
	CHECK(!strcmp(s.rate, "2.5 Gb/sec (1X SDR)\n"));
	CHECK(!strcmp(s.type0, "IB/RoCE v1\n"));
	CHECK(!strcmp(s.type1, "RoCE v2\n"));
	CHECK(!strcmp(s.ndev1, "veth7\n"));
	CHECK(!strcmp(s.link, "/sys/class/net/veth7"));
	CHECK(!strcmp(s.ibdev, "sv0\n"));
	CHECK(!strcmp(s.guid, "0211:22ff:fe33:4455\n"));

	/* A port that is down, and a device whose interface is gone: no link, no GIDs. */
	info.active = false;
	memset(&s, 0, sizeof(s));
	s.parent_first = true;
	CHECK_EQ(uroce_sysfs_device(&d, sysfs_collect, &s), 0);
	CHECK(!strcmp(s.state, "1: DOWN\n"));
	info.netdev_present = false;
	d.n_gids = 0;
	memset(&s, 0, sizeof(s));
	s.parent_first = true;
	CHECK_EQ(uroce_sysfs_classes(sysfs_collect, &s), 0);
	CHECK_EQ(uroce_sysfs_device(&d, sysfs_collect, &s), 0);
	CHECK_EQ(s.links, 0);
	CHECK_EQ(s.type_files, 0);
	CHECK(s.parent_first);

	/* The walk stops at the emitter's first error and returns it. */
	CHECK_EQ(uroce_sysfs_device(&d, sysfs_stop, &calls), -ENOSPC);
	CHECK_EQ(calls, 5);

	/* The kernel's rate_show() strings. */
	CHECK(!strcmp(uroce_sysfs_rate(2, 32, rate, sizeof(rate)), "100 Gb/sec (4X EDR)\n"));
	CHECK(!strcmp(uroce_sysfs_rate(1, 16, rate, sizeof(rate)), "14 Gb/sec (1X FDR)\n"));
	CHECK(!strcmp(uroce_sysfs_rate(2, 1, rate, sizeof(rate)), "10 Gb/sec (4X SDR)\n"));
	CHECK(!strcmp(uroce_sysfs_rate(1, 64, rate, sizeof(rate)), "50 Gb/sec (1X HDR)\n"));
	CHECK(!strcmp(uroce_sysfs_rate(16, 1, rate, sizeof(rate)), "5 Gb/sec (2X SDR)\n"));
}

int main(int argc, char **argv)
{
	const char *tmp = getenv("TMPDIR");
	char cmd[PATH_MAX + 16];

	if (argc != 2) {
		fprintf(stderr, "usage: test_host UROCE\n");
		return 2;
	}
	snprintf(rundir, sizeof(rundir), "%s/uroce-host.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(rundir)) {
		perror("mkdtemp");
		return 1;
	}
	setenv("UROCE_RUNDIR", rundir, 1);
	test_mtu();
	test_rate();
	test_names();
	test_guid();
	test_gid_layout();
	test_sysfs_tree();
	test_rundir();
	test_devices_and_mode();
	test_dev_order();
	test_stats(argv[1]);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", rundir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", rundir);
	return check_exit("test_host");
}
