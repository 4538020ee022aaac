/* SPDX-License-Identifier: MIT */
/*
 * uroce's librdmacm.so.1 through Debian's <rdma/rdma_cma.h> and <rdma/rsocket.h>: the
 * rdma_getaddrinfo cases apps depend on (numeric IPv4/IPv6, passive and active, the wildcard,
 * port space and QP type, the error codes apps print with gai_strerror), rdma_freeaddrinfo of
 * chains, and the unsupported calls (rsockets, ECE) failing with EOPNOTSUPP.
 *
 * `test_rdmacm_abi --oracle` runs only the cases where uroce means to match rdma-core, for a
 * run over Debian's own librdmacm (with uroce's libibverbs preloaded, as rdma-core's
 * rdma_getaddrinfo first wants an RDMA device): the same expectations must hold there. It
 * exits 77 when that library does not start (no device found).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>

#include "check.h"

#define PORT 7471

static struct rdma_addrinfo hints_of(int flags, int family, int qp_type, int port_space)
{
	struct rdma_addrinfo h;

	memset(&h, 0, sizeof(h));
	h.ai_flags = flags;
	h.ai_family = family;
	h.ai_qp_type = qp_type;
	h.ai_port_space = port_space;
	return h;
}

/* addr is the IPv4 or IPv6 address text at port, and exactly as long as its sockaddr. */
static int is_addr(const struct sockaddr *sa, socklen_t len, const char *text, int port)
{
	unsigned char want[16];

	if (!sa)
		return 0;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		return len == sizeof(*in) && inet_pton(AF_INET, text, want) == 1 &&
		       !memcmp(&in->sin_addr, want, 4) && ntohs(in->sin_port) == port;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

		return len == sizeof(*in6) && inet_pton(AF_INET6, text, want) == 1 &&
		       !memcmp(&in6->sin6_addr, want, 16) && ntohs(in6->sin6_port) == port;
	}
	return 0;
}

/* What rdma-core never fills without ibacm, and the single result. */
static void check_plain(const struct rdma_addrinfo *r)
{
	CHECK(!r->ai_next);
	CHECK(!r->ai_src_canonname && !r->ai_dst_canonname);
	CHECK(!r->ai_route && !r->ai_route_len);
	CHECK(!r->ai_connect && !r->ai_connect_len);
}

static void test_active(void)
{
	struct rdma_addrinfo h = hints_of(0, 0, 0, 0), *r = NULL;
	int rc;

	/* Numeric IPv4, port space and QP type from the result (TCP stream: RC over PS_TCP). */
	rc = rdma_getaddrinfo("127.0.0.1", "7471", &h, &r);
	CHECKF(rc == 0, "rc %d", rc);
	if (!rc) {
		CHECK_EQ(r->ai_flags, 0);
		CHECK_EQ(r->ai_family, AF_INET);
		CHECK_EQ(r->ai_qp_type, IBV_QPT_RC);
		CHECK_EQ(r->ai_port_space, RDMA_PS_TCP);
		CHECK(!r->ai_src_addr && r->ai_src_len == 0);
		CHECK(is_addr(r->ai_dst_addr, r->ai_dst_len, "127.0.0.1", PORT));
		check_plain(r);
		rdma_freeaddrinfo(r);
	}

	/* NULL hints: the same. */
	r = NULL;
	rc = rdma_getaddrinfo("127.0.0.1", "7471", NULL, &r);
	CHECKF(rc == 0, "rc %d", rc);
	if (!rc) {
		CHECK(r->ai_flags == 0 && r->ai_family == AF_INET);
		CHECK(r->ai_qp_type == IBV_QPT_RC && r->ai_port_space == RDMA_PS_TCP);
		CHECK(is_addr(r->ai_dst_addr, r->ai_dst_len, "127.0.0.1", PORT));
		CHECK(!r->ai_src_addr);
		check_plain(r);
		rdma_freeaddrinfo(r);
	}

	/* Numeric IPv6; RAI_NUMERICHOST is not kept in the result's flags. */
	h = hints_of(RAI_NUMERICHOST, 0, 0, 0);
	r = NULL;
	rc = rdma_getaddrinfo("::1", "7471", &h, &r);
	CHECKF(rc == 0, "rc %d", rc);
	if (!rc) {
		CHECK(r->ai_flags == 0 && r->ai_family == AF_INET6);
		CHECK_EQ(r->ai_dst_len, sizeof(struct sockaddr_in6));
		CHECK(is_addr(r->ai_dst_addr, r->ai_dst_len, "::1", PORT));
		CHECK(!r->ai_src_addr);
		check_plain(r);
		rdma_freeaddrinfo(r);
	}

	/* No service: port 0. */
	h = hints_of(0, AF_INET, 0, RDMA_PS_TCP);
	r = NULL;
	rc = rdma_getaddrinfo("127.0.0.2", NULL, &h, &r);
	CHECKF(rc == 0, "rc %d", rc);
	if (!rc) {
		CHECK(is_addr(r->ai_dst_addr, r->ai_dst_len, "127.0.0.2", 0));
		rdma_freeaddrinfo(r);
	}

	/* An active request keeps the caller's source. */
	struct sockaddr_in src = {.sin_family = AF_INET, .sin_port = htons(5000)};

	inet_pton(AF_INET, "127.0.0.3", &src.sin_addr);
	h = hints_of(0, 0, 0, 0);
	h.ai_src_addr = (struct sockaddr *)&src;
	h.ai_src_len = sizeof(src);
	r = NULL;
	rc = rdma_getaddrinfo("127.0.0.1", "7471", &h, &r);
	CHECKF(rc == 0, "rc %d", rc);
	if (!rc) {
		CHECK(is_addr(r->ai_src_addr, r->ai_src_len, "127.0.0.3", 5000));
		CHECK(r->ai_src_addr != h.ai_src_addr); /* a copy: freed with the result */
		CHECK(is_addr(r->ai_dst_addr, r->ai_dst_len, "127.0.0.1", PORT));
		rdma_freeaddrinfo(r);
	}
}

static void test_passive(void)
{
	struct rdma_addrinfo h = hints_of(RAI_PASSIVE, 0, 0, 0), *r = NULL;
	int rc;

	/* A given node is the source. */
	rc = rdma_getaddrinfo("127.0.0.1", "7471", &h, &r);
	CHECKF(rc == 0, "rc %d", rc);
	if (!rc) {
		CHECK(r->ai_flags == RAI_PASSIVE && r->ai_family == AF_INET);
		CHECK(r->ai_qp_type == IBV_QPT_RC && r->ai_port_space == RDMA_PS_TCP);
		CHECK(is_addr(r->ai_src_addr, r->ai_src_len, "127.0.0.1", PORT));
		CHECK(!r->ai_dst_addr && r->ai_dst_len == 0);
		check_plain(r);
		rdma_freeaddrinfo(r);
	}

	/* NULL node: the wildcard, per family. */
	h = hints_of(RAI_PASSIVE, AF_INET, 0, 0);
	r = NULL;
	rc = rdma_getaddrinfo(NULL, "7471", &h, &r);
	CHECKF(rc == 0, "rc %d", rc);
	if (!rc) {
		CHECK(r->ai_flags == RAI_PASSIVE && r->ai_family == AF_INET);
		CHECK(is_addr(r->ai_src_addr, r->ai_src_len, "0.0.0.0", PORT));
		CHECK(!r->ai_dst_addr);
		rdma_freeaddrinfo(r);
	}
	h = hints_of(RAI_PASSIVE, AF_INET6, 0, 0);
	r = NULL;
	rc = rdma_getaddrinfo(NULL, "7471", &h, &r);
	CHECKF(rc == 0, "rc %d", rc);
	if (!rc) {
		CHECK(r->ai_flags == RAI_PASSIVE && r->ai_family == AF_INET6);
		CHECK(is_addr(r->ai_src_addr, r->ai_src_len, "::", PORT));
		CHECK(!r->ai_dst_addr);
		rdma_freeaddrinfo(r);
	}

	/* Numeric IPv6 passive, no service. */
	h = hints_of(RAI_PASSIVE | RAI_NUMERICHOST, 0, 0, 0);
	r = NULL;
	rc = rdma_getaddrinfo("::1", NULL, &h, &r);
	CHECKF(rc == 0, "rc %d", rc);
	if (!rc) {
		CHECK(r->ai_flags == RAI_PASSIVE && r->ai_family == AF_INET6);
		CHECK(is_addr(r->ai_src_addr, r->ai_src_len, "::1", 0));
		rdma_freeaddrinfo(r);
	}

	/* A resolved passive address wins over hints->ai_src_addr. */
	struct sockaddr_in src = {.sin_family = AF_INET, .sin_port = htons(5000)};

	inet_pton(AF_INET, "127.0.0.3", &src.sin_addr);
	h = hints_of(RAI_PASSIVE, 0, 0, 0);
	h.ai_src_addr = (struct sockaddr *)&src;
	h.ai_src_len = sizeof(src);
	r = NULL;
	rc = rdma_getaddrinfo("127.0.0.1", "7471", &h, &r);
	CHECKF(rc == 0, "rc %d", rc);
	if (!rc) {
		CHECK(is_addr(r->ai_src_addr, r->ai_src_len, "127.0.0.1", PORT));
		rdma_freeaddrinfo(r);
	}
}

/* Neither node nor service: the hints themselves, addresses copied. */
static void test_hints_only(void)
{
	struct sockaddr_in src = {.sin_family = AF_INET, .sin_port = htons(1)};
	struct sockaddr_in6 dst = {.sin6_family = AF_INET6, .sin6_port = htons(2)};
	struct rdma_addrinfo h = hints_of(RAI_PASSIVE | RAI_NOROUTE, AF_INET6, IBV_QPT_UD,
					  RDMA_PS_UDP),
			     *r = NULL;
	int rc;

	inet_pton(AF_INET, "10.1.2.3", &src.sin_addr);
	inet_pton(AF_INET6, "fe80::1", &dst.sin6_addr);
	h.ai_src_addr = (struct sockaddr *)&src;
	h.ai_src_len = sizeof(src);
	h.ai_dst_addr = (struct sockaddr *)&dst;
	h.ai_dst_len = sizeof(dst);
	rc = rdma_getaddrinfo(NULL, NULL, &h, &r);
	CHECKF(rc == 0, "rc %d", rc);
	if (!rc) {
		CHECK_EQ(r->ai_flags, (RAI_PASSIVE | RAI_NOROUTE)); /* all of the hints' flags */
		CHECK_EQ(r->ai_family, AF_INET6);
		CHECK(r->ai_qp_type == IBV_QPT_UD && r->ai_port_space == RDMA_PS_UDP);
		CHECK(is_addr(r->ai_src_addr, r->ai_src_len, "10.1.2.3", 1));
		CHECK(is_addr(r->ai_dst_addr, r->ai_dst_len, "fe80::1", 2));
		CHECK(r->ai_src_addr != h.ai_src_addr && r->ai_dst_addr != h.ai_dst_addr);
		check_plain(r);
		rdma_freeaddrinfo(r);
	}

	h = hints_of(0, 0, 0, 0);
	r = NULL;
	rc = rdma_getaddrinfo(NULL, NULL, &h, &r);
	CHECKF(rc == 0, "rc %d", rc);
	if (!rc) {
		CHECK(r->ai_flags == 0 && r->ai_family == 0 && r->ai_qp_type == 0);
		CHECK(!r->ai_src_addr && !r->ai_dst_addr && !r->ai_src_len && !r->ai_dst_len);
		rdma_freeaddrinfo(r);
	}
}

static void test_port_space(void)
{
	static const struct {
		int qp_type, port_space;       /* hints */
		int want_qp, want_ps, want_rc; /* result */
	} cases[] = {
		{0, RDMA_PS_UDP, IBV_QPT_UD, RDMA_PS_UDP, 0},
		{IBV_QPT_UD, 0, IBV_QPT_UD, RDMA_PS_UDP, 0},
		{IBV_QPT_RC, 0, IBV_QPT_RC, RDMA_PS_TCP, 0},
		{0, RDMA_PS_TCP, IBV_QPT_RC, RDMA_PS_TCP, 0},
		{0, RDMA_PS_IPOIB, IBV_QPT_UD, RDMA_PS_IPOIB, 0},
		{0, RDMA_PS_IB, IBV_QPT_RC, RDMA_PS_IB, 0},
		{IBV_QPT_UD, RDMA_PS_IB, IBV_QPT_UD, RDMA_PS_IB, 0},
		{IBV_QPT_UC, 0, IBV_QPT_UC, RDMA_PS_TCP, 0},
		/* A datagram QP in the TCP port space, and the reverse: getaddrinfo refuses. */
		{IBV_QPT_UD, RDMA_PS_TCP, 0, 0, EAI_SOCKTYPE},
		{IBV_QPT_RC, RDMA_PS_UDP, 0, 0, EAI_SOCKTYPE},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rdma_addrinfo h = hints_of(0, 0, cases[i].qp_type, cases[i].port_space);
		struct rdma_addrinfo *r = NULL;
		int rc = rdma_getaddrinfo("127.0.0.1", "7471", &h, &r);

		CHECKF(rc == cases[i].want_rc, "case %zu: rc %d", i, rc);
		if (rc)
			continue;
		CHECKF(r->ai_qp_type == cases[i].want_qp, "case %zu: qp type %d", i, r->ai_qp_type);
		CHECKF(r->ai_port_space == cases[i].want_ps, "case %zu: port space %#x", i,
		       r->ai_port_space);
		CHECK(is_addr(r->ai_dst_addr, r->ai_dst_len, "127.0.0.1", PORT));
		rdma_freeaddrinfo(r);
	}
}

static void test_errors(int oracle)
{
	struct rdma_addrinfo h, *r = NULL;
	int rc;

	/* Nothing to resolve: rdma-core's ERR(EINVAL), -1, which is EAI_BADFLAGS to the apps. */
	errno = 0;
	rc = rdma_getaddrinfo(NULL, NULL, NULL, &r);
	CHECKF(rc == -1 && rc == EAI_BADFLAGS && errno == EINVAL, "rc %d errno %d", rc, errno);
	CHECK(!r);

	/* A host name where a numeric one is demanded. */
	h = hints_of(RAI_NUMERICHOST, 0, 0, 0);
	rc = rdma_getaddrinfo("localhost", "7471", &h, &r);
	CHECKF(rc == EAI_NONAME, "rc %d", rc);
	h = hints_of(RAI_PASSIVE | RAI_NUMERICHOST, 0, 0, 0);
	rc = rdma_getaddrinfo("not-an-address", NULL, &h, &r);
	CHECKF(rc == EAI_NONAME, "rc %d", rc);

	/* An unknown service name; an IPv4 literal for an IPv6-only request; a bad family. */
	h = hints_of(0, 0, 0, 0);
	rc = rdma_getaddrinfo("127.0.0.1", "no-such-service-uroce", &h, &r);
	CHECKF(rc == EAI_SERVICE, "rc %d", rc);
	h = hints_of(0, AF_INET6, 0, 0);
	rc = rdma_getaddrinfo("127.0.0.1", "7471", &h, &r);
	CHECKF(rc == EAI_ADDRFAMILY, "rc %d", rc);
	h = hints_of(0, AF_UNIX, 0, 0);
	rc = rdma_getaddrinfo("127.0.0.1", "7471", &h, &r);
	CHECKF(rc == EAI_FAMILY, "rc %d", rc);
	CHECK(!r);

	/* AF_IB without RAI_FAMILY is "any family". */
	h = hints_of(0, AF_IB, 0, 0);
	rc = rdma_getaddrinfo("127.0.0.1", "7471", &h, &r);
	CHECKF(rc == 0, "rc %d", rc);
	if (!rc) {
		CHECK_EQ(r->ai_family, AF_INET);
		rdma_freeaddrinfo(r);
		r = NULL;
	}
	if (oracle)
		return;

	/* uroce only. AF_IB addresses asked for: RoCE has none (rdma-core makes a sockaddr_ib of
	 * a numeric IPv6 result). */
	h = hints_of(RAI_FAMILY | RAI_NUMERICHOST, AF_IB, 0, 0);
	rc = rdma_getaddrinfo("::1", "7471", &h, &r);
	CHECKF(rc == EAI_FAMILY, "rc %d", rc);
	h = hints_of(RAI_FAMILY | RAI_PASSIVE, AF_IB, 0, 0);
	rc = rdma_getaddrinfo(NULL, NULL, &h, &r);
	CHECKF(rc == EAI_FAMILY, "rc %d", rc);
	CHECK(!r);
	/* No result pointer (rdma-core would crash). */
	errno = 0;
	rc = rdma_getaddrinfo("127.0.0.1", "7471", NULL, NULL);
	CHECKF(rc == -1 && errno == EINVAL, "rc %d errno %d", rc, errno);
}

/* rdma_freeaddrinfo frees every pointer field along the ai_next chain (ASan/valgrind see a
 * leak or a double free otherwise). */
static void test_free_chain(void)
{
	struct rdma_addrinfo h = hints_of(RAI_PASSIVE, AF_INET, 0, 0), *a = NULL, *b = NULL,
			     *c = NULL;

	rdma_freeaddrinfo(NULL);
	CHECK_EQ(rdma_getaddrinfo(NULL, "7471", &h, &a), 0);
	h = hints_of(0, 0, 0, 0);
	CHECK_EQ(rdma_getaddrinfo("127.0.0.1", "7471", &h, &b), 0);
	CHECK_EQ(rdma_getaddrinfo("::1", "7472", &h, &c), 0);
	if (!a || !b || !c)
		return;
	a->ai_next = b;
	b->ai_next = c;
	b->ai_src_canonname = strdup("src");
	b->ai_dst_canonname = strdup("dst");
	c->ai_route = calloc(1, 64);
	c->ai_route_len = 64;
	c->ai_connect = calloc(1, 56);
	c->ai_connect_len = 56;
	rdma_freeaddrinfo(a);
}

#define CHECK_EOPNOTSUPP(call)                                                  \
	do {                                                                    \
		errno = 0;                                                      \
		CHECKF((call) == -1 && errno == EOPNOTSUPP, "errno %d", errno); \
	} while (0)

static void test_unsupported(void)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	socklen_t len = sizeof(sin);
	char buf[16] = {0};
	struct iovec iov = {.iov_base = buf, .iov_len = sizeof(buf)};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	struct pollfd pfd = {.fd = 0, .events = POLLIN};
	fd_set rfds;
	struct timeval tv = {0, 0};
	int val = 0;
	socklen_t vlen = sizeof(val);

	FD_ZERO(&rfds);
	CHECK_EOPNOTSUPP(rsocket(AF_INET, SOCK_STREAM, 0));
	CHECK_EOPNOTSUPP(rbind(3, (struct sockaddr *)&sin, len));
	CHECK_EOPNOTSUPP(rlisten(3, 1));
	CHECK_EOPNOTSUPP(raccept(3, (struct sockaddr *)&sin, &len));
	CHECK_EOPNOTSUPP(rconnect(3, (struct sockaddr *)&sin, len));
	CHECK_EOPNOTSUPP(rshutdown(3, SHUT_RDWR));
	CHECK_EOPNOTSUPP(rclose(3));
	CHECK_EOPNOTSUPP(rrecv(3, buf, sizeof(buf), 0));
	CHECK_EOPNOTSUPP(rrecvfrom(3, buf, sizeof(buf), 0, (struct sockaddr *)&sin, &len));
	CHECK_EOPNOTSUPP(rrecvmsg(3, &msg, 0));
	CHECK_EOPNOTSUPP(rsend(3, buf, sizeof(buf), 0));
	CHECK_EOPNOTSUPP(rsendto(3, buf, sizeof(buf), 0, (struct sockaddr *)&sin, len));
	CHECK_EOPNOTSUPP(rsendmsg(3, &msg, 0));
	CHECK_EOPNOTSUPP(rread(3, buf, sizeof(buf)));
	CHECK_EOPNOTSUPP(rreadv(3, &iov, 1));
	CHECK_EOPNOTSUPP(rwrite(3, buf, sizeof(buf)));
	CHECK_EOPNOTSUPP(rwritev(3, &iov, 1));
	CHECK_EOPNOTSUPP(rpoll(&pfd, 1, 0));
	CHECK_EOPNOTSUPP(rselect(1, &rfds, NULL, NULL, &tv));
	CHECK_EOPNOTSUPP(rgetpeername(3, (struct sockaddr *)&sin, &len));
	CHECK_EOPNOTSUPP(rgetsockname(3, (struct sockaddr *)&sin, &len));
	CHECK_EOPNOTSUPP(rsetsockopt(3, SOL_RDMA, RDMA_SQSIZE, &val, sizeof(val)));
	CHECK_EOPNOTSUPP(rgetsockopt(3, SOL_RDMA, RDMA_SQSIZE, &val, &vlen));
	CHECK_EOPNOTSUPP(rfcntl(3, F_SETFL, O_NONBLOCK));
	CHECK_EOPNOTSUPP(riomap(3, buf, sizeof(buf), PROT_WRITE, 0, -1));
	CHECK_EOPNOTSUPP(riounmap(3, buf, sizeof(buf)));
	errno = 0;
	CHECKF(riowrite(3, buf, sizeof(buf), 0, 0) == (size_t)-1 && errno == EOPNOTSUPP, "errno %d",
	       errno);

	/* ECE, before even looking at the id. */
	CHECK_EOPNOTSUPP(rdma_set_local_ece(NULL, NULL));
	CHECK_EOPNOTSUPP(rdma_get_remote_ece(NULL, NULL));
}

int main(int argc, char **argv)
{
	int oracle = argc > 1 && !strcmp(argv[1], "--oracle");

	if (oracle) {
		struct rdma_addrinfo *r = NULL;

		/* rdma-core initialises its device list first: -1/ENODEV without a device. */
		errno = 0;
		if (rdma_getaddrinfo("127.0.0.1", "7471", NULL, &r) == -1) {
			printf("SKIP: Debian's librdmacm does not start here: %s\n",
			       strerror(errno));
			return 77;
		}
		rdma_freeaddrinfo(r);
	}
	test_active();
	test_passive();
	test_hints_only();
	test_port_space();
	test_errors(oracle);
	test_free_chain();
	if (!oracle)
		test_unsupported();
	return check_exit(oracle ? "rdmacm_addrinfo (Debian's librdmacm)" : "rdmacm_addrinfo");
}
