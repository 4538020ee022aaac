/* SPDX-License-Identifier: MIT */
/* Link speed over SIOCETHTOOL: ETHTOOL_GLINKSETTINGS, else the deprecated ETHTOOL_GSET; the
 * driver name (ETHTOOL_GDRVINFO) to tell veth's constant from a speed. GRO: ETHTOOL_GGRO. */
#include "host/os/ethtool.h"

#include <errno.h>
#include <stdbool.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>

/* link_mode_masks_nwords is an __s8: at most 127 words for each of the three masks. */
#define LINK_MODE_WORDS_MAX 127

/* The settings and the three link-mode bitmaps the kernel writes after them. (A structure with
 * a flexible array member may be a union member, not a structure member.) */
union link_settings_buf {
	struct ethtool_link_settings s;
	uint32_t words[sizeof(struct ethtool_link_settings) / 4 + 3 * LINK_MODE_WORDS_MAX];
};

static int ethtool_ioctl(int sock, const char *ifname, void *data)
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, ifname, strlen(ifname) + 1);
	ifr.ifr_data = data;
	return ioctl(sock, SIOCETHTOOL, &ifr) == 0 ? 0 : -errno;
}

static int speed_result(uint32_t speed, unsigned *mbps)
{
	if (speed == 0 || speed == (uint32_t)SPEED_UNKNOWN)
		return -ENODATA;
	*mbps = speed;
	return 0;
}

static int get_link_settings(int sock, const char *ifname, unsigned *mbps)
{
	union link_settings_buf b;
	int nwords, err;

	/* Handshake: with 0 words the kernel answers with -(the number it wants) and no speed. */
	memset(&b, 0, sizeof(b));
	b.s.cmd = ETHTOOL_GLINKSETTINGS;
	err = ethtool_ioctl(sock, ifname, &b);
	if (err)
		return err;
	nwords = -b.s.link_mode_masks_nwords;
	if (nwords <= 0 || nwords > LINK_MODE_WORDS_MAX)
		return -EPROTO;
	memset(&b, 0, sizeof(b));
	b.s.cmd = ETHTOOL_GLINKSETTINGS;
	b.s.link_mode_masks_nwords = (int8_t)nwords;
	err = ethtool_ioctl(sock, ifname, &b);
	if (err)
		return err;
	if (b.s.link_mode_masks_nwords != nwords)
		return -EPROTO;
	return speed_result(b.s.speed, mbps);
}

/* Whether the interface's driver is veth, whose speed is a constant (see uroce_ethtool_speed). */
static bool is_veth(int sock, const char *ifname)
{
	struct ethtool_drvinfo d;

	memset(&d, 0, sizeof(d));
	d.cmd = ETHTOOL_GDRVINFO;
	return ethtool_ioctl(sock, ifname, &d) == 0 && !strncmp(d.driver, "veth", sizeof(d.driver));
}

static int get_settings_legacy(int sock, const char *ifname, unsigned *mbps)
{
	struct ethtool_cmd c;
	int err;

	memset(&c, 0, sizeof(c));
	c.cmd = ETHTOOL_GSET;
	err = ethtool_ioctl(sock, ifname, &c);
	if (err)
		return err;
	return speed_result(ethtool_cmd_speed(&c), mbps);
}

int uroce_ethtool_speed(int sock, const char *ifname, unsigned *mbps)
{
	int err;

	if (strlen(ifname) >= IFNAMSIZ)
		return -EINVAL;
	err = get_link_settings(sock, ifname, mbps);
	if (err == -EOPNOTSUPP)
		err = get_settings_legacy(sock, ifname, mbps);
	if (!err && is_veth(sock, ifname))
		err = -ENODATA;
	return err;
}

int uroce_ethtool_gro(int sock, unsigned ifindex)
{
	struct ethtool_value v;
	struct ifreq ifr;
	int err;

	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_ifindex = (int)ifindex;
	if (ioctl(sock, SIOCGIFNAME, &ifr) != 0)
		return -errno;
	memset(&v, 0, sizeof(v));
	v.cmd = ETHTOOL_GGRO;
	err = ethtool_ioctl(sock, ifr.ifr_name, &v);
	return err ? err : v.data != 0;
}
