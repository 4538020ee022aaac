/* SPDX-License-Identifier: MIT */
/*
 * The CM's last will. When a process dies, the kernel's CM sends a DREQ for each of its
 * connections (cm_destroy_id on close of the rdma_cm fd), so the peer sees DISCONNECTED. Our
 * CM dies with the process, so a small watchdog process (uroce-cm-will, started once per
 * process that opens a device for the CM) does it instead: it holds a shared table of ready-made
 * RoCE v2 DREQ datagrams, one per established connection, waits until the pipe from this
 * process reaches end of file (this process has exited, been killed or exec'd), then sends each
 * armed datagram twice and exits.
 *
 * Design notes
 * - Table: a memfd of struct cma_will_table, mapped shared. Slots are written under cma_lock
 *   (will.c); `armed` is set last and cleared first, so the watchdog never sends a half-written
 *   slot (it reads only after this process is gone anyway).
 * - A slot holds the DREQ MAD and its addresses; the watchdog wraps it in a GSI UD SEND to QP1
 *   (BTH, DETH, ICRC) for the ephemeral UDP port its own socket is bound to: it must not join the
 *   device's SO_REUSEPORT group on the RoCE v2 port, whose steering program maps members by
 *   their order in the group (host/io/share_group.h). IPv4 ID 0 (receivers recover the ID).
 * - RoCE v1 connections have no will (the watchdog would need a raw socket): the peer then only
 *   learns from its own timeouts.
 * - The watchdog is spawned (posix_spawn: no copy of this process's memory) and forks once so
 *   that it is not this process's child (an application's wait() never meets it).
 */
#ifndef UROCE_RDMACM_WILL_H
#define UROCE_RDMACM_WILL_H

#include <stdatomic.h>
#include <stdint.h>

#define CMA_WILL_SLOTS 1024
#define CMA_WILL_TABLE_FD 3
#define CMA_WILL_PIPE_FD  4
#define CMA_WILL_EXE	  "uroce-cm-will"

struct cma_will_slot {
	atomic_uint armed;
	uint16_t family; /* AF_INET or AF_INET6 */
	uint16_t port;	 /* the RoCE v2 UDP destination port */
	uint8_t tos;
	uint8_t src[16], dst[16]; /* IPv4 in the first 4 bytes */
	uint8_t mad[256];
};

struct cma_will_table {
	uint32_t magic; /* CMA_WILL_MAGIC */
	uint32_t nslots;
	struct cma_will_slot s[CMA_WILL_SLOTS];
};

#define CMA_WILL_MAGIC 0x75636d77u /* "ucmw" */

#endif
