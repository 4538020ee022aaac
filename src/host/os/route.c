/* SPDX-License-Identifier: MIT */
/*
 * Route lookup over rtnetlink (see route.h), as core/addr.c's addr4_resolve / addr6_resolve do
 * it inside the kernel: RTM_GETROUTE as `ip route get` sends it, RTM_GETADDR to learn which
 * interface holds a local address, RTM_GETLINK for the interface's name and MTU. One netlink
 * socket per call carries all of them, one request at a time.
 */
#include "host/os/route.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "host/os/v4mapped.h"
#include "host/os/rtnl.h"

#define DEFAULT_HOP_LIMIT 64

/* An address as the lookup uses it: v4-mapped IPv6 already turned into IPv4. */
struct ipaddr {
	int family;	  /* AF_INET or AF_INET6 */
	uint8_t addr[16]; /* IPv4 in the first 4 bytes, network order */
	uint32_t scope;	  /* IPv6 scope id (interface index), 0 when none */
};

static size_t addr_len(int family)
{
	return family == AF_INET ? 4 : 16;
}

static int to_ipaddr(const struct sockaddr *sa, struct ipaddr *a)
{
	memset(a, 0, sizeof(*a));
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)sa;

		a->family = AF_INET;
		memcpy(a->addr, &in->sin_addr, 4);
		return 0;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)sa;

		if (uroce_gid_is_v4(in6->sin6_addr.s6_addr)) {
			a->family = AF_INET;
			memcpy(a->addr, in6->sin6_addr.s6_addr + 12, 4);
			return 0;
		}
		a->family = AF_INET6;
		memcpy(a->addr, in6->sin6_addr.s6_addr, 16);
		a->scope = in6->sin6_scope_id;
		return 0;
	}
	return -EAFNOSUPPORT;
}

static void to_sockaddr(const struct ipaddr *a, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (a->family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)(void *)ss;

		in->sin_family = AF_INET;
		memcpy(&in->sin_addr, a->addr, 4);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)(void *)ss;

		in6->sin6_family = AF_INET6;
		memcpy(in6->sin6_addr.s6_addr, a->addr, 16);
		in6->sin6_scope_id = a->scope;
	}
}

static bool is_unspecified(const struct ipaddr *a)
{
	static const uint8_t zero[16];

	return memcmp(a->addr, zero, addr_len(a->family)) == 0;
}

static bool is_multicast(const struct ipaddr *a)
{
	return a->family == AF_INET ? (a->addr[0] & 0xF0) == 0xE0 : a->addr[0] == 0xFF;
}

static bool is_linklocal(const struct ipaddr *a)
{
	return a->family == AF_INET6 && a->addr[0] == 0xFE && (a->addr[1] & 0xC0) == 0x80;
}

/* ---- the requests --------------------------------------------------------------------------- */

struct route_reply {
	int type;     /* rtm_type */
	int oif;      /* RTA_OIF */
	bool prefsrc; /* RTA_PREFSRC present, in src */
	uint8_t src[16];
	bool gateway;	   /* RTA_GATEWAY or RTA_VIA */
	uint32_t hoplimit; /* RTAX_HOPLIMIT, 0 when unset */
	uint32_t mtu;	   /* RTAX_MTU, 0 when unset */
	int error;	   /* RTA_CACHEINFO's rta_error (kernels that answer unreachable routes) */
};

static int route_cb(const struct nlmsghdr *h, void *arg)
{
	struct route_reply *rr = arg;
	const struct rtattr *tb[RTA_MAX + 1], *mx[RTAX_MAX + 1];
	struct rtmsg rtm;

	if (h->nlmsg_type != RTM_NEWROUTE || h->nlmsg_len < NLMSG_LENGTH(sizeof(rtm)))
		return -EBADMSG;
	memcpy(&rtm, uroce_rtnl_msg_data(h), sizeof(rtm));
	uroce_rtnl_msg_attrs(tb, RTA_MAX, h, sizeof(rtm));
	rr->type = rtm.rtm_type;
	if (tb[RTA_OIF])
		rr->oif = (int)uroce_rtnl_attr_u32(tb[RTA_OIF]);
	if (tb[RTA_PREFSRC] && uroce_rtnl_attr_len(tb[RTA_PREFSRC]) == addr_len(rtm.rtm_family)) {
		rr->prefsrc = true;
		memcpy(rr->src, uroce_rtnl_attr_data(tb[RTA_PREFSRC]), addr_len(rtm.rtm_family));
	}
	rr->gateway = tb[RTA_GATEWAY] || tb[RTA_VIA];
	if (tb[RTA_METRICS]) {
		uroce_rtnl_attr_parse(mx, RTAX_MAX, uroce_rtnl_attr_data(tb[RTA_METRICS]), uroce_rtnl_attr_len(tb[RTA_METRICS]));
		if (mx[RTAX_HOPLIMIT])
			rr->hoplimit = uroce_rtnl_attr_u32(mx[RTAX_HOPLIMIT]);
		if (mx[RTAX_MTU])
			rr->mtu = uroce_rtnl_attr_u32(mx[RTAX_MTU]);
	}
	if (tb[RTA_CACHEINFO] && uroce_rtnl_attr_len(tb[RTA_CACHEINFO]) >= sizeof(struct rta_cacheinfo)) {
		struct rta_cacheinfo ci;

		memcpy(&ci, uroce_rtnl_attr_data(tb[RTA_CACHEINFO]), sizeof(ci));
		rr->error = (int)ci.rta_error;
	}
	return 0;
}

/* `ip route get dst [from src] [oif oif]`. */
static int get_route(struct uroce_rtnl *nl, const struct ipaddr *dst, const struct ipaddr *src, int oif,
		     struct route_reply *rr)
{
	size_t len = addr_len(dst->family);
	struct uroce_rtnl_req req;
	struct rtmsg *rtm = uroce_rtnl_req_init(&req, RTM_GETROUTE, 0, sizeof(*rtm));

	rtm->rtm_family = (unsigned char)dst->family;
	rtm->rtm_dst_len = (unsigned char)(len * 8);
	uroce_rtnl_req_attr(&req, RTA_DST, dst->addr, len);
	if (src) {
		rtm->rtm_src_len = (unsigned char)(len * 8);
		uroce_rtnl_req_attr(&req, RTA_SRC, src->addr, len);
	}
	if (oif) {
		uint32_t o = (uint32_t)oif;

		uroce_rtnl_req_attr(&req, RTA_OIF, &o, sizeof(o));
	}
	memset(rr, 0, sizeof(*rr));
	return uroce_rtnl_talk(nl, &req, route_cb, rr);
}

struct addr_search {
	const struct ipaddr *addr;
	int ifindex; /* only this interface, or any when 0; then the first holder found */
	int found;   /* the interface holding addr, 0 when none */
};

static int addr_cb(const struct nlmsghdr *h, void *arg)
{
	struct addr_search *s = arg;
	const struct rtattr *tb[IFA_MAX + 1], *a;
	size_t len = addr_len(s->addr->family);
	struct ifaddrmsg ifa;
	uint32_t flags;

	if (h->nlmsg_type != RTM_NEWADDR || h->nlmsg_len < NLMSG_LENGTH(sizeof(ifa)))
		return 0;
	memcpy(&ifa, uroce_rtnl_msg_data(h), sizeof(ifa));
	if (s->found || ifa.ifa_family != s->addr->family)
		return 0;
	if (s->ifindex && (int)ifa.ifa_index != s->ifindex)
		return 0;
	uroce_rtnl_msg_attrs(tb, IFA_MAX, h, sizeof(ifa));
	flags = tb[IFA_FLAGS] ? uroce_rtnl_attr_u32(tb[IFA_FLAGS]) : ifa.ifa_flags;
	/* Not usable yet (or ever), as for ipv6_chk_addr: bind() would fail on it. */
	if ((flags & IFA_F_DADFAILED) || ((flags & IFA_F_TENTATIVE) && !(flags & IFA_F_OPTIMISTIC)))
		return 0;
	/* IFA_LOCAL is the local end of a point-to-point address; IFA_ADDRESS the peer then. */
	a = tb[IFA_LOCAL] ? tb[IFA_LOCAL] : tb[IFA_ADDRESS];
	if (a && uroce_rtnl_attr_len(a) == len && !memcmp(uroce_rtnl_attr_data(a), s->addr->addr, len))
		s->found = (int)ifa.ifa_index;
	return 0;
}

/* The interface that holds addr (on ifindex only, when not 0). 0 when none does. */
static int addr_holder(struct uroce_rtnl *nl, const struct ipaddr *addr, int ifindex, int *holder)
{
	struct addr_search s = {.addr = addr, .ifindex = ifindex};
	struct uroce_rtnl_req req;
	struct ifaddrmsg *ifa = uroce_rtnl_req_init(&req, RTM_GETADDR, NLM_F_DUMP, sizeof(*ifa));
	int r;

	ifa->ifa_family = (unsigned char)addr->family;
	r = uroce_rtnl_talk(nl, &req, addr_cb, &s);
	*holder = s.found;
	return r;
}

struct link_info {
	char name[IF_NAMESIZE];
	uint32_t mtu;
};

static int link_cb(const struct nlmsghdr *h, void *arg)
{
	struct link_info *li = arg;
	const struct rtattr *tb[IFLA_MAX + 1];

	if (h->nlmsg_type != RTM_NEWLINK || h->nlmsg_len < NLMSG_LENGTH(sizeof(struct ifinfomsg)))
		return -EBADMSG;
	uroce_rtnl_msg_attrs(tb, IFLA_MAX, h, sizeof(struct ifinfomsg));
	if (tb[IFLA_MTU])
		li->mtu = uroce_rtnl_attr_u32(tb[IFLA_MTU]);
	if (tb[IFLA_IFNAME]) {
		size_t n = uroce_rtnl_attr_len(tb[IFLA_IFNAME]);

		if (n >= sizeof(li->name))
			n = sizeof(li->name) - 1;
		memcpy(li->name, uroce_rtnl_attr_data(tb[IFLA_IFNAME]), n);
		li->name[n] = '\0';
	}
	return 0;
}

static int get_link(struct uroce_rtnl *nl, int ifindex, struct link_info *li)
{
	struct uroce_rtnl_req req;
	struct ifinfomsg *ifi = uroce_rtnl_req_init(&req, RTM_GETLINK, 0, sizeof(*ifi));

	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = ifindex;
	memset(li, 0, sizeof(*li));
	return uroce_rtnl_talk(nl, &req, link_cb, li);
}

/* ---- the rest ------------------------------------------------------------------------------- */

/*
 * Is src an address of this host? An address of an interface; for IPv4 also anything the local
 * table calls local (127.0.0.2), as __ip_dev_find accepts.
 */
static int check_local(struct uroce_rtnl *nl, const struct ipaddr *src)
{
	struct route_reply rr;
	int holder, r;

	r = addr_holder(nl, src, is_linklocal(src) ? (int)src->scope : 0, &holder);
	if (r < 0 || holder)
		return r;
	if (src->family == AF_INET6)
		return -EADDRNOTAVAIL;
	r = get_route(nl, src, NULL, 0, &rr);
	if (r == 0 && rr.type == RTN_LOCAL)
		return 0;
	return r == 0 || r == -ENETUNREACH || r == -EHOSTUNREACH || r == -EACCES || r == -EINVAL
		       ? -EADDRNOTAVAIL
		       : r;
}

/* The source address the kernel picks for a UDP socket connected to dst (ip6_route_get_saddr). */
static int udp_source(const struct ipaddr *dst, int oif, struct ipaddr *src)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int fd, r = 0;

	fd = socket(dst->family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	to_sockaddr(dst, &ss);
	if (dst->family == AF_INET6) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)(void *)&ss;

		in6->sin6_port = htons(9);
		in6->sin6_scope_id = (uint32_t)oif;
		len = sizeof(*in6);
	} else {
		struct sockaddr_in *in = (struct sockaddr_in *)(void *)&ss;

		in->sin_port = htons(9);
		len = sizeof(*in);
	}
	if (connect(fd, (struct sockaddr *)&ss, len) < 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		r = -errno;
	else
		r = to_ipaddr((const struct sockaddr *)&ss, src);
	close(fd);
	return r;
}

/* A positive integer sysctl, or dflt when it cannot be read. */
static unsigned read_sysctl(const char *path, unsigned dflt)
{
	char buf[32];
	char *end;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return dflt;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return dflt;
	buf[n] = '\0';
	unsigned long v = strtoul(buf, &end, 10);

	return end != buf && v > 0 && v <= 255 ? (unsigned)v : dflt;
}

/* The namespace's default hop limit for packets leaving by ifname. */
static unsigned default_hop_limit(int family, const char *ifname)
{
	char path[96];

	if (family == AF_INET)
		return read_sysctl("/proc/sys/net/ipv4/ip_default_ttl", DEFAULT_HOP_LIMIT);
	if (!ifname[0])
		return DEFAULT_HOP_LIMIT;
	snprintf(path, sizeof(path), "/proc/sys/net/ipv6/conf/%s/hop_limit", ifname);
	return read_sysctl(path, DEFAULT_HOP_LIMIT);
}

/*
 * The kernel's answer for a route that exists but must not be used: ip_route_output_key
 * returns -EHOSTUNREACH (unreachable), -EACCES (prohibit) or -EINVAL (blackhole); older IPv6
 * kernels answered with the route, its type and the error in RTA_CACHEINFO instead.
 */
static int route_error(int r, const struct route_reply *rr)
{
	if (r == -EACCES || r == -EINVAL)
		return -EHOSTUNREACH; /* our request is well formed: prohibit or blackhole */
	if (r < 0)
		return r;
	switch (rr->type) {
	case RTN_UNREACHABLE:
		return rr->error == -ENETUNREACH ? -ENETUNREACH : -EHOSTUNREACH;
	case RTN_PROHIBIT:
	case RTN_BLACKHOLE:
		return -EHOSTUNREACH;
	case RTN_THROW:
		return -ENETUNREACH;
	default:
		return 0;
	}
}

static int lookup(struct uroce_rtnl *nl, const struct ipaddr *dst, const struct ipaddr *src, int oif,
		  struct uroce_route *out)
{
	struct route_reply rr;
	struct link_info li;
	struct ipaddr s = {0}; /* udp_source fills it; gcc 12 -O2 cannot tell */
	int r;

	if (src) {
		r = check_local(nl, src);
		if (r < 0)
			return r;
	}
	r = route_error(get_route(nl, dst, src, oif, &rr), &rr);
	if (r < 0)
		return r;
	out->local = rr.type == RTN_LOCAL;
	out->gateway = rr.gateway;
	out->ifindex = rr.oif;
	if (out->local) {
		/* The kernel answers "dev lo": name the interface that holds the address. */
		int holder;

		r = addr_holder(nl, dst, is_linklocal(dst) ? oif : 0, &holder);
		if (r < 0)
			return r;
		if (holder)
			out->ifindex = holder;
	}
	if (src) {
		s = *src;
	} else if (out->local) {
		s = *dst;
	} else if (rr.prefsrc) {
		memset(&s, 0, sizeof(s));
		s.family = dst->family;
		memcpy(s.addr, rr.src, addr_len(dst->family));
	} else {
		r = udp_source(dst, oif, &s);
		if (r < 0)
			return r;
	}
	s.scope = is_linklocal(&s) ? (uint32_t)out->ifindex : 0;
	to_sockaddr(&s, &out->src);
	memset(&li, 0, sizeof(li));
	if (out->ifindex) {
		r = get_link(nl, out->ifindex, &li);
		if (r < 0)
			return r;
	}
	out->mtu = rr.mtu ? rr.mtu : li.mtu;
	out->hop_limit = (uint8_t)(rr.hoplimit && rr.hoplimit <= 255
					   ? rr.hoplimit
					   : default_hop_limit(dst->family, li.name));
	return 0;
}

int uroce_route_lookup(const struct sockaddr *dst, const struct sockaddr *src,
		       struct uroce_route *out)
{
	struct ipaddr d = {0}, s = {0};
	struct uroce_rtnl nl;
	int oif = 0, r;

	if (!dst || !out)
		return -EINVAL;
	r = to_ipaddr(dst, &d);
	if (r < 0)
		return r;
	if (is_unspecified(&d) || is_multicast(&d))
		return -EINVAL;
	if (src) {
		r = to_ipaddr(src, &s);
		if (r < 0)
			return r;
		if (s.family != d.family)
			return -EINVAL;
		if (is_unspecified(&s))
			src = NULL; /* bound to the wildcard: no source chosen */
	}
	if (is_linklocal(&d)) {
		oif = (int)d.scope;
		if (!oif && src && is_linklocal(&s))
			oif = (int)s.scope;
		if (!oif)
			return -EINVAL; /* which link? (cma_check_linklocal) */
		if (src && is_linklocal(&s) && !s.scope)
			s.scope = (uint32_t)oif;
	}
	r = uroce_rtnl_open(&nl, 2000);
	if (r < 0)
		return r;
	memset(out, 0, sizeof(*out));
	r = lookup(&nl, &d, src ? &s : NULL, oif, out);
	uroce_rtnl_close(&nl);
	return r;
}
