/* SPDX-License-Identifier: MIT */
/*
 * rtnetlink requests, one at a time on a socket of the caller's network namespace: build a
 * request (header, family header, attributes), send it, hand each answer message to a callback
 * (one for a request, all up to NLMSG_DONE for a dump), and index an answer's attributes.
 * Used by the route lookup (route.c) and the neighbour lookup (neigh.c). Not called per packet.
 */
#ifndef UROCE_HOST_RTNL_H
#define UROCE_HOST_RTNL_H

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <stddef.h>
#include <stdint.h>

struct uroce_rtnl {
	int fd;
	uint32_t seq;
};

/* One request: the netlink header, the family header and a few attributes. */
struct uroce_rtnl_req {
	union {
		struct nlmsghdr nh;
		uint8_t b[256];
	};
};

/* Open a NETLINK_ROUTE socket whose receive waits at most timeout_ms. 0 or -errno. */
int uroce_rtnl_open(struct uroce_rtnl *nl, int timeout_ms);
void uroce_rtnl_close(struct uroce_rtnl *nl);

/* Start a request of type with a zeroed family header of hdrlen bytes; returns that header. */
void *uroce_rtnl_req_init(struct uroce_rtnl_req *r, uint16_t type, uint16_t flags, size_t hdrlen);
/* Append an attribute (requests are built from fixed attributes that always fit). */
void uroce_rtnl_req_attr(struct uroce_rtnl_req *r, uint16_t type, const void *data, size_t len);

/*
 * Called with each answer message (not NLMSG_ERROR or NLMSG_DONE). Returns 0, or a negative
 * errno that becomes the request's result (the rest of the answer is still read).
 */
typedef int (*uroce_rtnl_cb)(const struct nlmsghdr *h, void *arg);

/*
 * Send req and hand its answer to cb: one message for a request, everything up to NLMSG_DONE
 * for a dump. Returns 0, the kernel's error (NLMSG_ERROR), cb's error, -ETIMEDOUT, or a socket
 * errno.
 */
int uroce_rtnl_talk(struct uroce_rtnl *nl, struct uroce_rtnl_req *req, uroce_rtnl_cb cb,
		    void *arg);

const void *uroce_rtnl_msg_data(const struct nlmsghdr *h);
const void *uroce_rtnl_attr_data(const struct rtattr *a);
size_t uroce_rtnl_attr_len(const struct rtattr *a);
/* The attribute as a u32 (0 when shorter). */
uint32_t uroce_rtnl_attr_u32(const struct rtattr *a);
/* Index the attributes in [p, p + len) by type into tb[0..max] (later duplicates win). */
void uroce_rtnl_attr_parse(const struct rtattr **tb, unsigned max, const void *p, size_t len);
/* The attributes after a message's family header of hdrlen bytes. */
void uroce_rtnl_msg_attrs(const struct rtattr **tb, unsigned max, const struct nlmsghdr *h,
			  size_t hdrlen);

#endif
