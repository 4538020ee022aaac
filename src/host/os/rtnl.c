/* SPDX-License-Identifier: MIT */
/* rtnetlink requests and answers (rtnl.h), shared by the route and neighbour lookups. */
#include "host/os/rtnl.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

/* Start a request of type with a zeroed family header of hdrlen bytes; returns that header. */
void *uroce_rtnl_req_init(struct uroce_rtnl_req *r, uint16_t type, uint16_t flags, size_t hdrlen)
{
	memset(r, 0, sizeof(*r));
	r->nh.nlmsg_type = type;
	r->nh.nlmsg_flags = (uint16_t)(NLM_F_REQUEST | flags);
	r->nh.nlmsg_len = (uint32_t)NLMSG_LENGTH(hdrlen);
	return r->b + NLMSG_HDRLEN;
}

/* Append an attribute. Requests are built from fixed attributes that always fit. */
void uroce_rtnl_req_attr(struct uroce_rtnl_req *r, uint16_t type, const void *data, size_t len)
{
	size_t off = NLMSG_ALIGN(r->nh.nlmsg_len);
	struct rtattr a = {.rta_len = (unsigned short)RTA_LENGTH(len), .rta_type = type};

	if (off + RTA_SPACE(len) > sizeof(r->b))
		abort();
	memcpy(r->b + off, &a, sizeof(a));
	memcpy(r->b + off + RTA_LENGTH(0), data, len);
	r->nh.nlmsg_len = (uint32_t)(off + RTA_SPACE(len));
}

const void *uroce_rtnl_msg_data(const struct nlmsghdr *h)
{
	return (const uint8_t *)h + NLMSG_HDRLEN;
}

const void *uroce_rtnl_attr_data(const struct rtattr *a)
{
	return (const uint8_t *)a + RTA_LENGTH(0);
}

size_t uroce_rtnl_attr_len(const struct rtattr *a)
{
	return a->rta_len - RTA_LENGTH(0);
}

uint32_t uroce_rtnl_attr_u32(const struct rtattr *a)
{
	uint32_t v = 0;

	if (uroce_rtnl_attr_len(a) >= sizeof(v))
		memcpy(&v, uroce_rtnl_attr_data(a), sizeof(v));
	return v;
}

/* Index the attributes in [p, p + len) by type into tb[0..max] (later duplicates win). */
void uroce_rtnl_attr_parse(const struct rtattr **tb, unsigned max, const void *p, size_t len)
{
	memset(tb, 0, (max + 1) * sizeof(*tb));
	while (len >= sizeof(struct rtattr)) {
		const struct rtattr *a = p;
		size_t step = RTA_ALIGN(a->rta_len);

		if (a->rta_len < sizeof(*a) || a->rta_len > len)
			return;
		if (a->rta_type <= max)
			tb[a->rta_type] = a;
		if (step >= len)
			return;
		p = (const uint8_t *)p + step;
		len -= step;
	}
}

/* The attributes after a message's family header of hdrlen bytes. */
void uroce_rtnl_msg_attrs(const struct rtattr **tb, unsigned max, const struct nlmsghdr *h,
		      size_t hdrlen)
{
	size_t off = NLMSG_LENGTH(NLMSG_ALIGN(hdrlen));

	if (h->nlmsg_len < off)
		memset(tb, 0, (max + 1) * sizeof(*tb));
	else
		uroce_rtnl_attr_parse(tb, max, (const uint8_t *)h + off, h->nlmsg_len - off);
}

int uroce_rtnl_open(struct uroce_rtnl *nl, int timeout_ms)
{
	/* The kernel answers while handling sendto(); the timeout only guards against a bug. */
	struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};

	nl->seq = 0;
	nl->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (nl->fd < 0)
		return -errno;
	setsockopt(nl->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return 0;
}

void uroce_rtnl_close(struct uroce_rtnl *nl)
{
	close(nl->fd);
	nl->fd = -1;
}

int uroce_rtnl_talk(struct uroce_rtnl *nl, struct uroce_rtnl_req *req, uroce_rtnl_cb cb, void *arg)
{
	struct sockaddr_nl kern = {.nl_family = AF_NETLINK};
	bool dump = (req->nh.nlmsg_flags & NLM_F_DUMP) == NLM_F_DUMP;
	/* 32 KiB: the largest datagram a dump sends (netlink_dump caps max_recvmsg_len there). */
	union {
		struct nlmsghdr h;
		uint8_t b[32768];
	} buf;
	int r = 0;

	req->nh.nlmsg_seq = ++nl->seq;
	if (sendto(nl->fd, req, req->nh.nlmsg_len, 0, (struct sockaddr *)&kern, sizeof(kern)) < 0)
		return -errno;
	for (;;) {
		ssize_t n = recv(nl->fd, &buf, sizeof(buf), MSG_TRUNC);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;
		}
		if ((size_t)n > sizeof(buf))
			return -EMSGSIZE;
		size_t left = (size_t)n;

		for (struct nlmsghdr *h = &buf.h; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
			if (h->nlmsg_seq != nl->seq)
				continue; /* not ours: nothing else should arrive on this socket */
			if (h->nlmsg_type == NLMSG_DONE)
				return r;
			if (h->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = uroce_rtnl_msg_data(h);

				if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*e)))
					return -EBADMSG;
				return r ? r : e->error;
			}
			if (!r)
				r = cb(h, arg);
			if (!dump)
				return r;
		}
	}
}
