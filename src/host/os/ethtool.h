/* SPDX-License-Identifier: MIT */
/*
 * The link speed an interface reports through ethtool (what `ethtool IFNAME` prints as
 * "Speed:"), for the port rate a RoCE device derives from its interface; and whether it merges
 * received packets (GRO), for the RoCE v2 backend's sockets.
 *
 * Design notes
 * - SIOCETHTOOL with ETHTOOL_GLINKSETTINGS, the kernel's current interface: a first call with
 *   no link-mode words returns how many the kernel wants (negated), a second call with that
 *   many returns the settings. Kernels older than 4.6 lack it (-EOPNOTSUPP): then the
 *   deprecated ETHTOOL_GSET, whose speed is split into 16-bit halves.
 * - Neither call needs a privilege, and neither reports lanes (only the ethtool netlink
 *   interface does): callers map the speed alone.
 * - What interfaces report on Linux 6.x: a physical NIC its negotiated speed, or SPEED_UNKNOWN
 *   while its link is down; tun/tap 10 Mbit/s unless set with `ethtool -s IFNAME speed N`; lo,
 *   dummy and most tunnels implement no link settings at all (-EOPNOTSUPP).
 * - veth reports 10000 whatever its peer is, and `ethtool -s` cannot change it: a constant of
 *   the driver, not a link's speed (a veth pair moves data at memory speed, well above it).
 *   It is returned as no speed (-ENODATA), so that it gets the same assumed rate as lo. (The
 *   kernel's rxe on a veth does report 10 Gbit/s; but taken as a real rate it would put a
 *   uroce device level with UCX's own tcp transport on the same veth, and UCX then splits
 *   large messages across both.)
 */
#ifndef UROCE_HOST_ETHTOOL_H
#define UROCE_HOST_ETHTOOL_H

/*
 * The speed of interface ifname in Mbit/s into *mbps, asked over sock (any AF_INET or AF_INET6
 * datagram socket of the interface's network namespace). Returns 0; -ENODATA when the
 * interface reports no speed (SPEED_UNKNOWN or 0: a NIC without link) or is a veth (see
 * above); -EOPNOTSUPP when it has
 * no link settings (lo); -ENODEV when there is no such interface; -EINVAL for a name longer
 * than IFNAMSIZ - 1; or another negative errno of the ioctl.
 */
int uroce_ethtool_speed(int sock, const char *ifname, unsigned *mbps);

/*
 * Whether interface ifindex merges received packets (GRO, `ethtool -k`'s
 * generic-receive-offload; the kernel turns hardware GRO off with it), asked over sock as
 * above: 1 on, 0 off, -ENODEV when there is no such interface, or another negative errno.
 * Needs no privilege.
 */
int uroce_ethtool_gro(int sock, unsigned ifindex);

#endif
