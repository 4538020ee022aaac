/* SPDX-License-Identifier: MIT */
/* Socket addresses, GIDs and RoCE versions for the RDMA CM (addr.c). */
#ifndef UROCE_RDMACM_ADDR_H
#define UROCE_RDMACM_ADDR_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

/* The GID of an IP address: v4-mapped for IPv4 (::ffff:a.b.c.d), the address for IPv6. */
void cma_gid_of_sa(const struct sockaddr *sa, uint8_t gid[16]);
/* True for 0.0.0.0, :: and an unknown family. */
bool cma_sa_any(const struct sockaddr *sa);
/* True for what the kernel's cma_any_addr takes as no address in particular: cma_sa_any's, and a
 * loopback address (127.0.0.0/8, ::1). An id bound to one has no device and listens on all, as
 * on Linux, where a device on the loopback interface is no exception. */
bool cma_sa_wildcard(const struct sockaddr *sa);
/* True for an IPv4 (224.0.0.0/4) or IPv6 (ff00::/8) multicast address. */
bool cma_sa_mcast(const struct sockaddr *sa);
uint16_t cma_sa_port(const struct sockaddr *sa); /* host order */
void cma_sa_set_port(struct sockaddr *sa, uint16_t port);
socklen_t cma_sa_len(const struct sockaddr *sa); /* 0 for an unknown family */

/* The index of gid with type (IBV_GID_TYPE_ROCE_V1/V2, or -1: any) in verbs' GID table, or
 * -ENOENT. */
int cma_gid_find(struct ibv_context *verbs, const uint8_t gid[16], int type);

/* The device's default RoCE mode (uroce mode; the kernel's configfs default_roce_mode) as an
 * ibv_gid_type: IBV_GID_TYPE_ROCE_V1 or _V2. */
int cma_default_gid_type(const char *dev);

/* The device's default RoCE TOS (the kernel's configfs default_roce_tos; 0 when unset or
 * unreadable), which an id without RDMA_OPTION_ID_TOS takes when its route is resolved. */
int cma_default_tos(const char *dev);

#endif
