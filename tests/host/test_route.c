/* SPDX-License-Identifier: MIT */
/*
 * Route lookup (src/host/route.h).
 *
 *   test_route         unprivileged: loopback in the caller's namespace (127.0.0.1, 127.0.0.2,
 *                      ::1 and v4-mapped are local, on lo, with the namespace's hop limit and
 *                      lo's MTU), and the argument errors.
 *   test_route netns   as root (else exit 77): two namespaces of its own, urt-PID-h (the host
 *                      whose routes are looked up) and urt-PID-r (a router), joined by two veth
 *                      pairs, with addresses only from 198.18.0.0/15 and fd00:198:18::/48:
 *
 *                        h0 198.18.0.1/24 fd00:198:18::1/64 fe80::1   r0 .0.2  ::2  fe80::2
 *                        h1 198.18.1.1/24 fd00:198:18:1::1/64 mtu 9000  r1 .1.2  1::2
 *                        r's lo: 198.18.2.1, fd00:198:18:2::1 (the subnet behind the router)
 *
 *                      and in h: N = 2 via r0; N = 3 via r1 with hoplimit 7; N = 4 via r0 with
 *                      mtu 1400; N = 5 unreachable, 6 prohibit, 7 blackhole (198.18.N.0/24 and
 *                      fd00:198:18:N::/64); no default route. The checks run in a forked child
 *                      that setns()es into h; the parent removes both namespaces whatever the
 *                      child did (crash included), and on exit.
 *
 * Every kernel answer here is synchronous (addresses are added with nodad): no waiting at all.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "host/os/route.h"

/* "198.18.0.1", "fd00::1", "fe80::1%h0" (scope by interface name) or "::ffff:1.2.3.4". */
static struct sockaddr_storage addr(const char *s)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *in = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
	char buf[INET6_ADDRSTRLEN + IF_NAMESIZE];
	char *pct;

	memset(&ss, 0, sizeof(ss));
	snprintf(buf, sizeof(buf), "%s", s);
	pct = strchr(buf, '%');
	if (pct)
		*pct++ = '\0';
	if (inet_pton(AF_INET, buf, &in->sin_addr) == 1) {
		in->sin_family = AF_INET;
	} else if (inet_pton(AF_INET6, buf, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		if (pct) {
			in6->sin6_scope_id = if_nametoindex(pct);
			CHECKF(in6->sin6_scope_id, "no interface %s", pct);
		}
	} else {
		fprintf(stderr, "bad address in the test: %s\n", s);
		exit(1);
	}
	return ss;
}

static const char *addr_str(const struct sockaddr_storage *ss, char buf[INET6_ADDRSTRLEN + 16])
{
	const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;
	size_t n;

	if (ss->ss_family == AF_INET) {
		inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, buf,
			  INET6_ADDRSTRLEN);
		return buf;
	}
	if (ss->ss_family != AF_INET6) {
		snprintf(buf, INET6_ADDRSTRLEN + 16, "(family %d)", ss->ss_family);
		return buf;
	}
	inet_ntop(AF_INET6, &in6->sin6_addr, buf, INET6_ADDRSTRLEN);
	n = strlen(buf);
	if (in6->sin6_scope_id)
		snprintf(buf + n, INET6_ADDRSTRLEN + 16 - n, "%%%u", in6->sin6_scope_id);
	return buf;
}

/* Look up dst (from src, when not NULL). */
static int look(const char *dst, const char *src, struct uroce_route *rt)
{
	struct sockaddr_storage d = addr(dst), s;

	if (src)
		s = addr(src);
	memset(rt, 0xA5, sizeof(*rt));
	return uroce_route_lookup((struct sockaddr *)&d, src ? (struct sockaddr *)&s : NULL, rt);
}

struct want {
	const char *src;    /* as addr_str prints it: "fe80::1%IFINDEX" for a link-local one */
	const char *ifname; /* the expected out->ifindex */
	bool gateway;
	bool local;
	unsigned hop_limit;
	uint32_t mtu;
};

static void expect_route(const char *dst, const char *src, const struct want *w)
{
	struct uroce_route rt;
	char got[INET6_ADDRSTRLEN + 16], want_src[INET6_ADDRSTRLEN + 16];
	struct sockaddr_storage ws = addr(w->src);
	int r = look(dst, src, &rt);
	unsigned ifindex = if_nametoindex(w->ifname);

	CHECKF(r == 0, "%s from %s: %d (%s)", dst, src ? src : "-", r, strerror(-r));
	if (r)
		return;
	if (ws.ss_family == AF_INET6 && ((struct sockaddr_in6 *)&ws)->sin6_addr.s6_addr[0] == 0xFE)
		((struct sockaddr_in6 *)&ws)->sin6_scope_id = ifindex;
	addr_str(&ws, want_src);
	addr_str(&rt.src, got);
	CHECKF(!strcmp(got, want_src), "%s: src %s, expected %s", dst, got, want_src);
	CHECKF(ifindex && rt.ifindex == (int)ifindex, "%s: ifindex %d, expected %u (%s)", dst,
	       rt.ifindex, ifindex, w->ifname);
	CHECKF(rt.gateway == w->gateway, "%s: gateway %d", dst, rt.gateway);
	CHECKF(rt.local == w->local, "%s: local %d", dst, rt.local);
	CHECKF(rt.hop_limit == w->hop_limit, "%s: hop_limit %u, expected %u", dst, rt.hop_limit,
	       w->hop_limit);
	CHECKF(rt.mtu == w->mtu, "%s: mtu %u, expected %u", dst, rt.mtu, w->mtu);
}

static void expect_err(const char *dst, const char *src, int err)
{
	struct uroce_route rt;
	int r = look(dst, src, &rt);

	CHECKF(r == err, "%s from %s: %d (%s), expected %d (%s)", dst, src ? src : "-", r,
	       strerror(-r), err, strerror(-err));
}

/* A sysctl as the kernel reports it (the oracle for the defaults). */
static unsigned sysctl_read(const char *path)
{
	FILE *f = fopen(path, "r");
	unsigned v = 0;

	CHECKF(f && fscanf(f, "%u", &v) == 1, "%s", path);
	if (f)
		fclose(f);
	return v;
}

static void sysctl_write(const char *path, unsigned v)
{
	FILE *f = fopen(path, "w");

	CHECKF(f && fprintf(f, "%u\n", v) > 0, "%s", path);
	if (f)
		CHECKF(fclose(f) == 0, "%s", path);
}

static uint32_t if_mtu(const char *ifname)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	CHECKF(fd >= 0 && ioctl(fd, SIOCGIFMTU, &ifr) == 0, "SIOCGIFMTU %s", ifname);
	if (fd >= 0)
		close(fd);
	return (uint32_t)ifr.ifr_mtu;
}

/* Is a an address of this host (can a socket bind to it)? */
static bool bindable(const char *a)
{
	struct sockaddr_storage ss = addr(a);
	int fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	bool ok = fd >= 0 && bind(fd, (struct sockaddr *)&ss, sizeof(ss)) == 0;

	if (fd >= 0)
		close(fd);
	return ok;
}

/* ---- unprivileged: loopback and argument errors --------------------------------------------- */

static void test_args(void)
{
	struct sockaddr_storage d = addr("127.0.0.1"), s;
	struct sockaddr_un un = {.sun_family = AF_UNIX};
	struct uroce_route rt;

	CHECK(uroce_route_lookup(NULL, NULL, &rt) == -EINVAL);
	CHECK(uroce_route_lookup((struct sockaddr *)&d, NULL, NULL) == -EINVAL);
	CHECK(uroce_route_lookup((struct sockaddr *)&un, NULL, &rt) == -EAFNOSUPPORT);
	CHECK(uroce_route_lookup((struct sockaddr *)&d, (struct sockaddr *)&un, &rt) ==
	      -EAFNOSUPPORT);
	memset(&s, 0, sizeof(s));
	s.ss_family = AF_PACKET;
	CHECK(uroce_route_lookup((struct sockaddr *)&s, NULL, &rt) == -EAFNOSUPPORT);

	expect_err("0.0.0.0", NULL, -EINVAL);
	expect_err("::", NULL, -EINVAL);
	expect_err("::ffff:0.0.0.0", NULL, -EINVAL);
	expect_err("224.0.0.1", NULL, -EINVAL);
	expect_err("239.255.0.1", NULL, -EINVAL);
	expect_err("::ffff:224.0.0.1", NULL, -EINVAL);
	expect_err("ff02::1", NULL, -EINVAL);
	expect_err("ff0e::1", NULL, -EINVAL);
	expect_err("fe80::1", NULL, -EINVAL);		/* link-local without a scope id */
	expect_err("127.0.0.1", "::1", -EINVAL);	/* families differ */
	expect_err("::1", "127.0.0.1", -EINVAL);	/* ... */
	expect_err("::1", "::ffff:127.0.0.1", -EINVAL); /* (that one is IPv4) */
}

static void test_loopback(void)
{
	unsigned ttl = sysctl_read("/proc/sys/net/ipv4/ip_default_ttl");
	uint32_t mtu = if_mtu("lo");
	struct want w = {"127.0.0.1", "lo", false, true, ttl, mtu};

	expect_route("127.0.0.1", NULL, &w);
	expect_route("::ffff:127.0.0.1", NULL, &w); /* IPv4: src AF_INET too */
	expect_route("127.0.0.1", "127.0.0.1", &w);
	expect_route("127.0.0.1", "::ffff:127.0.0.1", &w);
	expect_route("127.0.0.1", "0.0.0.0", &w); /* the wildcard: no source */
	w.src = "127.0.0.2"; /* local by the 127/8 local route, held by no interface as such */
	expect_route("127.0.0.2", NULL, &w);
	w.src = "127.0.0.2";
	expect_route("127.0.0.1", "127.0.0.2", &w); /* local as __ip_dev_find sees it */
	expect_err("127.0.0.1", "198.18.255.254", -EADDRNOTAVAIL);

	if (!bindable("::1")) {
		printf("no ::1 here (IPv6 off?): IPv6 loopback checks skipped\n");
		return;
	}
	w = (struct want){
		"::1", "lo", false, true, sysctl_read("/proc/sys/net/ipv6/conf/lo/hop_limit"), mtu};
	expect_route("::1", NULL, &w);
	expect_route("::1", "::1", &w);
	expect_route("::1", "::", &w);
	expect_err("::1", "fd00:198:18:ffff::1", -EADDRNOTAVAIL);
}

/* ---- as root: namespaces, veths, a router --------------------------------------------------- */

static char ns_h[32], ns_r[32];
static pid_t ns_owner;

static void ns_cleanup(void)
{
	char cmd[128];

	if (getpid() != ns_owner)
		return; /* a forked child: the parent cleans up */
	snprintf(cmd, sizeof(cmd), "ip netns del %s 2>/dev/null; ip netns del %s 2>/dev/null", ns_h,
		 ns_r);
	if (system(cmd) < 0)
		perror("ip netns del");
}

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int sh(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	if (st != 0)
		fprintf(stderr, "%s: status %d\n", cmd, st);
	return st;
}

/* Build the namespaces. 0, 77 when this system cannot (no ip, no netns, no veth), or 1. */
static int ns_setup(void)
{
	static const char *const steps[] = {
		"ip -n H link set lo up",
		"ip -n R link set lo up",
		"ip -n H link add h0 type veth peer name r0 netns R",
		"ip -n H link add h1 mtu 9000 type veth peer name r1 mtu 9000 netns R",
		/* Only the addresses the test adds (no automatic link-local ones). */
		"ip -n H link set h0 addrgenmode none up",
		"ip -n H link set h1 addrgenmode none up",
		"ip -n R link set r0 addrgenmode none up",
		"ip -n R link set r1 addrgenmode none up",
		"ip netns exec R sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1",
		"ip -n H addr add 198.18.0.1/24 dev h0",
		"ip -n H addr add 198.18.1.1/24 dev h1",
		"ip -n H addr add fd00:198:18::1/64 dev h0 nodad",
		"ip -n H addr add fd00:198:18:1::1/64 dev h1 nodad",
		"ip -n H addr add fe80::1/64 dev h0 nodad",
		"ip -n R addr add 198.18.0.2/24 dev r0",
		"ip -n R addr add 198.18.1.2/24 dev r1",
		"ip -n R addr add fd00:198:18::2/64 dev r0 nodad",
		"ip -n R addr add fd00:198:18:1::2/64 dev r1 nodad",
		"ip -n R addr add fe80::2/64 dev r0 nodad",
		"ip -n R addr add 198.18.2.1/32 dev lo",
		"ip -n R addr add fd00:198:18:2::1/128 dev lo",
		"ip -n H route add 198.18.2.0/24 via 198.18.0.2",
		"ip -n H route add 198.18.3.0/24 via 198.18.1.2 hoplimit 7",
		"ip -n H route add 198.18.4.0/24 via 198.18.0.2 mtu 1400",
		"ip -n H route add unreachable 198.18.5.0/24",
		"ip -n H route add prohibit 198.18.6.0/24",
		"ip -n H route add blackhole 198.18.7.0/24",
		"ip -n H -6 route add fd00:198:18:2::/64 via fd00:198:18::2",
		"ip -n H -6 route add fd00:198:18:3::/64 via fd00:198:18:1::2 hoplimit 7",
		"ip -n H -6 route add fd00:198:18:4::/64 via fd00:198:18::2 mtu 1400",
		"ip -n H -6 route add unreachable fd00:198:18:5::/64",
		"ip -n H -6 route add prohibit fd00:198:18:6::/64",
		"ip -n H -6 route add blackhole fd00:198:18:7::/64",
	};
	char cmd[256];

	if (system("ip -V >/dev/null 2>&1") != 0) {
		printf("SKIP: no ip command\n");
		return 77;
	}
	if (sh("ip netns add %s", ns_h) != 0 || sh("ip netns add %s", ns_r) != 0) {
		printf("SKIP: cannot create a network namespace\n");
		return 77;
	}
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		/* H and R stand for the namespaces' names. */
		size_t o = 0;

		for (const char *p = steps[i]; *p && o + IF_NAMESIZE + 32 < sizeof(cmd); p++) {
			if ((*p == 'H' || *p == 'R') && p[-1] == ' ' && (p[1] == ' ' || !p[1]))
				o += (size_t)snprintf(cmd + o, sizeof(cmd) - o, "%s",
						      *p == 'H' ? ns_h : ns_r);
			else
				cmd[o++] = *p;
		}
		cmd[o] = '\0';
		if (sh("%s", cmd) != 0) {
			if (i == 2) {
				printf("SKIP: no veth support\n");
				return 77;
			}
			return 1;
		}
	}
	return 0;
}

static void enter_ns(const char *ns)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/var/run/netns/%s", ns);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNET) < 0) {
		perror(path);
		exit(1);
	}
	close(fd);
}

static void test_ns_v4(void)
{
	struct want w = {"198.18.0.1", "h0", false, false, 64, 1500};

	/* On-link, then through the router, from the namespace's own defaults. */
	expect_route("198.18.0.2", NULL, &w);
	expect_route("198.18.0.77", NULL, &w); /* no neighbour needed: a route, not a host */
	w.gateway = true;
	expect_route("198.18.2.1", NULL, &w);
	expect_route("::ffff:198.18.2.1", NULL, &w);
	expect_route("198.18.2.1", "198.18.0.1", &w);
	w.mtu = 1400;
	expect_route("198.18.4.1", NULL, &w);
	w = (struct want){"198.18.1.1", "h1", false, false, 64, 9000};
	expect_route("198.18.1.2", NULL, &w);
	w.gateway = true;
	w.hop_limit = 7;
	expect_route("198.18.3.1", NULL, &w);
	/* Another local source than the route's preferred one: kept, the route unchanged. */
	w = (struct want){"198.18.1.1", "h0", true, false, 64, 1500};
	expect_route("198.18.2.1", "198.18.1.1", &w);

	/* Local destinations: the veth that holds them, not lo. */
	w = (struct want){"198.18.1.1", "h1", false, true, 64, 9000};
	expect_route("198.18.1.1", NULL, &w);
	w = (struct want){"198.18.1.1", "h0", false, true, 64, 1500};
	expect_route("198.18.0.1", "198.18.1.1", &w);
	w = (struct want){"198.18.0.1", "h0", false, true, 64, 1500};
	expect_route("::ffff:198.18.0.1", NULL, &w);

	expect_err("198.18.5.1", NULL, -EHOSTUNREACH);		/* unreachable */
	expect_err("198.18.6.1", NULL, -EHOSTUNREACH);		/* prohibit */
	expect_err("198.18.7.1", NULL, -EHOSTUNREACH);		/* blackhole */
	expect_err("198.19.0.1", NULL, -ENETUNREACH);		/* no route, no default */
	expect_err("198.18.2.1", "198.18.0.2", -EADDRNOTAVAIL); /* the router's */
	expect_err("198.18.0.2", "198.18.9.9", -EADDRNOTAVAIL);
	expect_err("198.18.5.1", "198.18.9.9", -EADDRNOTAVAIL); /* src is checked first */

	/* The namespace's default TTL, read at each lookup. */
	sysctl_write("/proc/sys/net/ipv4/ip_default_ttl", 33);
	w = (struct want){"198.18.0.1", "h0", true, false, 33, 1500};
	expect_route("198.18.2.1", NULL, &w);
	w = (struct want){"198.18.1.1", "h1", true, false, 7, 9000}; /* the metric wins */
	expect_route("198.18.3.1", NULL, &w);
}

static void test_ns_v6(void)
{
	struct want w = {"fd00:198:18::1", "h0", false, false, 64, 1500};

	expect_route("fd00:198:18::2", NULL, &w);
	w.gateway = true;
	expect_route("fd00:198:18:2::1", NULL, &w);
	w.mtu = 1400;
	expect_route("fd00:198:18:4::1", NULL, &w);
	w = (struct want){"fd00:198:18:1::1", "h1", false, false, 64, 9000};
	expect_route("fd00:198:18:1::2", NULL, &w);
	w.gateway = true;
	w.hop_limit = 7;
	expect_route("fd00:198:18:3::1", NULL, &w);
	w = (struct want){"fd00:198:18:1::1", "h0", true, false, 64, 1500};
	expect_route("fd00:198:18:2::1", "fd00:198:18:1::1", &w);

	/* Link-local: the scope id picks the link; the source gets it too. */
	w = (struct want){"fe80::1", "h0", false, false, 64, 1500};
	expect_route("fe80::2%h0", NULL, &w);
	expect_route("fe80::2", "fe80::1%h0", &w); /* the scope from the source */
	expect_route("fe80::2%h0", "fe80::1", &w);
	expect_err("fe80::2%h0", "fe80::1%h1", -EADDRNOTAVAIL); /* not on h1 */
	expect_err("fe80::2%h0", "fe80::2", -EADDRNOTAVAIL);

	/* Local destinations. */
	w = (struct want){"fd00:198:18:1::1", "h1", false, true, 64, 9000};
	expect_route("fd00:198:18:1::1", NULL, &w);
	w = (struct want){"fe80::1", "h0", false, true, 64, 1500};
	expect_route("fe80::1%h0", NULL, &w);
	w = (struct want){"fd00:198:18:1::1", "h0", false, true, 64, 1500};
	expect_route("fd00:198:18::1", "fd00:198:18:1::1", &w);

	expect_err("fd00:198:18:5::1", NULL, -EHOSTUNREACH);
	expect_err("fd00:198:18:6::1", NULL, -EHOSTUNREACH);
	expect_err("fd00:198:18:7::1", NULL, -EHOSTUNREACH);
	expect_err("fd00:198:19::1", NULL, -ENETUNREACH);
	expect_err("fd00:198:18:2::1", "fd00:198:18::2", -EADDRNOTAVAIL);
	expect_err("fd00:198:18:2::1", "fd00:198:18:9::9", -EADDRNOTAVAIL);

	/* The interface's hop limit, per interface. */
	sysctl_write("/proc/sys/net/ipv6/conf/h1/hop_limit", 44);
	w = (struct want){"fd00:198:18:1::1", "h1", false, false, 44, 9000};
	expect_route("fd00:198:18:1::2", NULL, &w);
	w = (struct want){"fd00:198:18::1", "h0", true, false, 64, 1500};
	expect_route("fd00:198:18:2::1", NULL, &w);
}

static int test_netns(void)
{
	sigset_t sigs, old;
	int st, r;
	pid_t pid;

	if (geteuid() != 0) {
		printf("SKIP: needs root to create network namespaces\n");
		return 77;
	}
	ns_owner = getpid();
	snprintf(ns_h, sizeof(ns_h), "urt-%d-h", (int)ns_owner);
	snprintf(ns_r, sizeof(ns_r), "urt-%d-r", (int)ns_owner);
	/* Interrupted, the parent still removes the namespaces once the child is gone. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	sigprocmask(SIG_BLOCK, &sigs, &old);
	atexit(ns_cleanup);
	r = ns_setup();
	if (r)
		return r;
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		enter_ns(ns_h);
		test_ns_v4();
		CHECK_BAIL();
		test_ns_v6();
		exit(check_exit("host_route_netns"));
	}
	while (waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR) {
			perror("waitpid");
			return 1;
		}
	}
	if (!WIFEXITED(st)) {
		fprintf(stderr, "checks died: status %#x\n", st);
		return 1;
	}
	return WEXITSTATUS(st);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "netns"))
		return test_netns();
	test_args();
	test_loopback();
	return check_exit("host_route");
}
