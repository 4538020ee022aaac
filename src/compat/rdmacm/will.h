/* SPDX-License-Identifier: MIT */
/*
 * The CM's last will. When a process dies, the kernel's CM sends for each of its connections
 * what cm_destroy_id sends in the connection's state (on close of the rdma_cm fd): a REJ while it
 * is being set up, a DREQ once established, the DREP of a DREQ it received. So the peer sees
 * REJECTED or DISCONNECTED at once instead of waiting out its CM's retries (or, established,
 * never hearing of it). Our CM dies with the process, so a small watchdog process
 * (uroce-cm-will, started once per process that opens a device for the CM) does it instead: it
 * holds a shared table of ready-made MADs, one per connection that would send one (RoCE v2 and
 * RoCE v1), kept in step with the connection's state (cma_will_sync, from
 * uroce_ibcm_will_mad), waits until the pipe from this process reaches end of file (this
 * process has exited, been killed or exec'd), then sends each armed MAD twice, and again 20,
 * 100 and 500 ms later (will_main.c), and exits.
 *
 * Design notes
 * - Table: a memfd of struct cma_will_table, mapped shared. Slots are written under cma_lock
 *   (will.c); `armed` is set last and cleared first (also when a slot's MAD changes with the
 *   connection's state), so the watchdog never sends a half-written slot. A process killed in
 *   the instant between leaves that connection without a will.
 * - A slot holds the MAD and its addresses; the watchdog wraps it in a GSI UD SEND to QP1
 *   (BTH, DETH, ICRC) for the ephemeral UDP port its own socket is bound to: it must not join the
 *   device's SO_REUSEPORT group on the RoCE v2 port, whose steering program maps members by
 *   their order in the group (host/io/share_group.h). IPv4 ID 0 (receivers recover the ID).
 * - RoCE v1: the watchdog sends an Ethernet frame (Ethertype 0x8915, GRH, BTH..ICRC) through an
 *   AF_PACKET socket that this process opens (it has CAP_NET_RAW, or it could not run a RoCE v1
 *   device at all) and hands over at spawn on CMA_WILL_PACKET_FD, so the watchdog needs no
 *   privilege of its own. The socket is created with protocol 0 and never bound: it receives
 *   nothing. It is opened only when a device has RoCE v1 GIDs; without it (no privilege) RoCE v1
 *   connections have no will and the peer learns from its own timeouts. The slot carries the
 *   interface and the destination MAC, resolved when the slot is armed (the neighbour is fresh
 *   then: the connection was just set up through it); the source MAC is the interface's, read
 *   by the watchdog. A destination that is this host (another process on the device) gets the
 *   interface's own MAC, which the device's receive sockets take as a frame from the wire
 *   (afpacket.c).
 * - The watchdog is spawned (posix_spawn: no copy of this process's memory) and forks once so
 *   that it is not this process's child (an application's wait() never meets it).
 */
#ifndef UROCE_RDMACM_WILL_H
#define UROCE_RDMACM_WILL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define CMA_WILL_SLOTS 1024
#define CMA_WILL_TABLE_FD 3
#define CMA_WILL_PIPE_FD  4
#define CMA_WILL_PACKET_FD 5 /* RoCE v1: an AF_PACKET socket, or closed */
#define CMA_WILL_EXE	  "uroce-cm-will"

struct cma_will_slot {
	atomic_uint armed;
	uint16_t family; /* AF_INET, AF_INET6 (RoCE v2) or AF_PACKET (RoCE v1) */
	uint16_t port;	 /* the RoCE v2 UDP destination port */
	uint8_t tos;	 /* IP TOS, IPv6 or GRH traffic class */
	uint8_t src[16], dst[16]; /* IPv4 in the first 4 bytes; RoCE v1: the GIDs */
	/* RoCE v1 only. */
	int32_t ifindex;
	uint8_t hop_limit;
	bool dmac_own; /* the destination is this host: the interface's own MAC */
	uint8_t dmac[6];
	uint8_t mad[256];
};

struct cma_will_table {
	uint32_t magic; /* CMA_WILL_MAGIC */
	uint32_t nslots;
	struct cma_will_slot s[CMA_WILL_SLOTS];
};

#define CMA_WILL_MAGIC 0x75636d77u /* "ucmw" */

#endif
