/* SPDX-License-Identifier: MIT */
/*
 * Devices: their definitions in the run-time directory, the automatic devices, and what a
 * device derives from its interface (port state, MTUs, node GUID).
 *
 * Design notes
 * - One port (port 1) per device, on one network interface (its "netdev").
 * - `uroce link add` writes <rundir>/devices/<NAME>, a text file of "key value" lines
 *   ("netdev eth0", "roce v1,v2"; unknown keys are ignored for forward compatibility). It is
 *   created atomically and exclusively (temp file + link()), so two concurrent adds of one name
 *   cannot both succeed and readers never see a partial definition. `link del` (device_del.h)
 *   unlinks it and also removes the device's default RoCE mode and counters, so a later device
 *   of the same name starts afresh (as a re-created rxe device does).
 * - A netdev carries at most one device, as rxe refuses a second rxe on one netdev.
 * - Automatic devices: when no device is defined, every interface that is up and has an IPv4
 *   or IPv6 address (loopback included) gets a device named "uroce_" + interface name
 *   (characters a device name cannot hold become '_'), RoCE v2 only. As soon as one device is
 *   defined, only the defined devices exist.
 * - RoCE versions when `roce` is not given: v2, as `rdma link add ... type rxe` gives (and v2
 *   needs no privileges: UDP sockets; v1 needs AF_PACKET).
 * - Device names: 1..63 of [A-Za-z0-9_.-], not starting with '.' (the name is a file name in
 *   the run-time directory, so "." and ".." and hidden temp names must be impossible).
 * - MTU: active MTU as rxe (eth_mtu - 80 rounded down to an IB MTU, at most 4096) and path MTU as
 *   rdma_cm's iboe_get_mtu() (eth_mtu - 96, rounded down). Below 336 (active) or 352 (path) no
 *   IB MTU fits: the pure functions return -EINVAL. The device then reports an active MTU of 256
 *   with mtu_too_small set, exactly as rxe clamps (rxe_set_mtu), so verbs callers see a valid
 *   enum; rdma_cm path resolution over such a device has to fail (path_mtu < 0).
 * - Port rate (active width and speed): from the interface's ethtool speed, mapped as the
 *   kernel maps it for a RoCE device whose driver reports no lanes (ib_get_width_and_speed in
 *   drivers/infiniband/core/verbs.c; the ethtool ioctl carries no lanes). An interface that
 *   reports no speed (lo, a NIC without link) gets UROCE_ETH_SPEED_DEFAULT, see there.
 * - Node GUID: the EUI-64 of the MAC (flip the U/L bit, insert ff:fe), as rxe does. An all-zero
 *   MAC (loopback, interfaces without a link-layer address) would give 0200:00ff:fe00:0000 on
 *   every such device of every host; instead the GUID is a 64-bit FNV-1a hash of the device
 *   name with the modified-EUI-64 universal bit cleared (a local identifier) and the
 *   group bit cleared, and guid_from_name says so. It is stable across runs for one name.
 */
#ifndef UROCE_HOST_DEVICE_H
#define UROCE_HOST_DEVICE_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/os/netif.h"

#define UROCE_DEV_NAME_MAX 63
#define UROCE_DEV_AUTO_PREFIX "uroce_"
#define UROCE_DEV_PORT 1 /* the only port of a device */

/* RoCE versions a device supports: a bit mask. */
enum uroce_roce {
	UROCE_ROCE_V1 = 1,
	UROCE_ROCE_V2 = 2,
	UROCE_ROCE_BOTH = UROCE_ROCE_V1 | UROCE_ROCE_V2,
};

struct uroce_devdef {
	char name[UROCE_DEV_NAME_MAX + 1];
	char netdev[IF_NAMESIZE];
	unsigned roce;	/* enum uroce_roce bits, never 0 */
	bool automatic; /* made from an interface because no device is defined */
};

/* What a device derives from its interface right now. */
struct uroce_devinfo {
	bool netdev_present; /* the interface exists; when false nothing below is set */
	bool active;	     /* port state ACTIVE: interface up and running */
	unsigned ifindex;
	unsigned eth_mtu;
	int active_mtu;	     /* bytes: 256..4096 (256 also when mtu_too_small, as rxe) */
	int path_mtu;	     /* rdma_cm path MTU in bytes, or -EINVAL when none fits */
	bool mtu_too_small;  /* eth_mtu - 80 < 256: RoCE frames do not fit */
	uint8_t mac[6];
	uint8_t node_guid[8];
	bool guid_from_name; /* the MAC is all zero: GUID hashed from the device name */
	unsigned eth_speed_mbps; /* the interface's ethtool speed, 0 when it reports none */
	uint8_t ib_width;	 /* active_width code (enum uroce_ib_width), as ibv_query_port's */
	uint8_t ib_speed;	 /* active_speed code (enum uroce_ib_speed) */
};

/* IB link width codes (ibv_port_attr.active_width, the kernel's enum ib_port_width). */
enum uroce_ib_width {
	UROCE_IB_WIDTH_1X = 1,
	UROCE_IB_WIDTH_2X = 16,
	UROCE_IB_WIDTH_4X = 2,
	UROCE_IB_WIDTH_8X = 4,
	UROCE_IB_WIDTH_12X = 8,
};

/* IB link speed codes per lane (ibv_port_attr.active_speed, the kernel's enum ib_port_speed). */
enum uroce_ib_speed {
	UROCE_IB_SPEED_SDR = 1,	  /* 2.5 Gbit/s */
	UROCE_IB_SPEED_DDR = 2,	  /* 5 */
	UROCE_IB_SPEED_QDR = 4,	  /* 10 */
	UROCE_IB_SPEED_FDR10 = 8, /* 10 */
	UROCE_IB_SPEED_FDR = 16,  /* 14 */
	UROCE_IB_SPEED_EDR = 32,  /* 25 */
	UROCE_IB_SPEED_HDR = 64,  /* 50 */
	UROCE_IB_SPEED_NDR = 128, /* 100 */
};

/*
 * Mbit/s assumed for an interface that reports no speed: 100000, which maps to 4X EDR. Such
 * interfaces are lo, veth (host/os/ethtool.h), virtio-net without a configured speed, and a
 * NIC whose link is down (where the rate does not matter). lo and veth move data at memory
 * speed, tens of Gbit/s, not over a wire. The kernel's own default (1000, 1X SDR: 2.5 Gbit/s)
 * would make UCX, which turns active_speed x active_width into its bandwidth model and weighs
 * transports and lanes by it, rank the device below its own TCP transport on the same
 * interface and add that as a second lane for large messages (it drops lanes more than
 * UCX_MULTI_LANE_MAX_RATIO, 4, times slower than the fastest). 4X EDR is also what the
 * 100 GbE RoCE NICs uroce stands in for report.
 */
#define UROCE_ETH_SPEED_DEFAULT 100000u

/*
 * IB width and speed codes of a RoCE port on an interface of speed mbps (Mbit/s; 0: none
 * reported, UROCE_ETH_SPEED_DEFAULT is used), as the kernel's ib_get_width_and_speed() maps
 * a speed without lanes: up to 1000 1X SDR, 10000 1X FDR10, 20000 4X DDR, 25000 1X EDR,
 * 40000 4X FDR10, 50000 2X EDR, 100000 4X EDR, 200000 4X HDR, above 4X NDR.
 */
void uroce_ib_rate_from_eth(unsigned mbps, uint8_t *width, uint8_t *speed);

/* 0 when name is a valid device name, else -EINVAL. */
int uroce_dev_name_check(const char *name);

/* Parse "v1", "v2", "v1,v2" or "v2,v1" into *mask. Returns 0 or -EINVAL. */
int uroce_roce_parse(const char *s, unsigned *mask);
/* "v1", "v2" or "v1,v2". */
const char *uroce_roce_str(unsigned mask);

/*
 * Define a device. Returns 0; -EINVAL for a bad name or mask; -ENODEV when the netdev does not
 * exist (in the caller's network namespace); -EPFNOSUPPORT when RoCE v1 is asked for on an
 * interface that carries no Ethernet frames (neither Ethernet nor loopback: a tunnel, a tun
 * device); -EEXIST when a device of that name is defined;
 * -EBUSY when another defined device uses the netdev (*other, if not NULL, gets its name); or a
 * run-time directory error (-EACCES, ...).
 */
int uroce_dev_add(const char *rundir, const struct uroce_devdef *def,
		  char other[UROCE_DEV_NAME_MAX + 1]);

/* <rundir>/devices/<name>, the definition file, into buf. 0 or -ENAMETOOLONG. */
int uroce_dev_path(const char *rundir, const char *name, char *buf, size_t cap);

/*
 * The devices that exist, in the order that defines their index (ibv_get_device_list, the
 * sysfs view's uverbsN, `uroce link show`, `uroce gids`): the defined ones by name, or the
 * automatic ones by interface index when none is defined; either way devices on a loopback
 * interface (IFF_LOOPBACK: uroce_lo) come after all others, so that a program that takes the
 * first device (perftest, ibv_rc_pingpong without -d) gets one that reaches other hosts. A
 * defined device whose interface is missing counts as not loopback.
 * ifs is the interface snapshot to use; NULL: interfaces are scanned here when needed.
 * *out is malloc'd (free() it; NULL when *n is 0). Returns 0 or a negative errno. Unreadable or
 * malformed definition files are skipped.
 */
int uroce_dev_list(const char *rundir, const struct uroce_netif_list *ifs,
		   struct uroce_devdef **out, int *n);

/* The device called name among uroce_dev_list()'s. Returns 0 or -ENODEV (or a list error). */
int uroce_dev_find(const char *rundir, const char *name, struct uroce_devdef *out);

/* Whether any device is defined (as opposed to automatic). Returns 1, 0 or a negative errno. */
int uroce_dev_any_defined(const char *rundir);

/* Fill *info for def from the interface snapshot ifs. */
void uroce_dev_info(const struct uroce_devdef *def, const struct uroce_netif_list *ifs,
		    struct uroce_devinfo *info);

/* Active MTU in bytes from the Ethernet MTU, as rxe: eth_mtu - 80 rounded down to
 * 256/512/1024/2048/4096. -EINVAL when below 256 + 80. */
int uroce_mtu_active(unsigned eth_mtu);
/* rdma_cm path MTU in bytes, as iboe_get_mtu(): eth_mtu - 96 rounded down. -EINVAL below 352. */
int uroce_mtu_path(unsigned eth_mtu);
/* IB MTU enum (1=256 ... 5=4096) of a byte count, or 0 when it is not one of those. */
int uroce_mtu_enum(int bytes);

/* Modified EUI-64 of a MAC (flip the U/L bit, insert ff:fe in the middle). */
void uroce_eui64(const uint8_t mac[6], uint8_t out[8]);
/* The node GUID of device name on an interface with this MAC. Returns true when it was hashed
 * from the name (all-zero MAC). */
bool uroce_dev_node_guid(const char *name, const uint8_t mac[6], uint8_t out[8]);

#endif
