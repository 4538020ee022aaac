/* SPDX-License-Identifier: MIT */
/*
 * Multicast through uroce's libibverbs.so.1, over real sockets: ibv_attach_mcast and
 * ibv_detach_mcast with rdma-core's errors, the device limits ibv_query_device reports, a UD
 * send to a group (AH with the MGID, remote QPN 0xFFFFFF) reaching every attached QP of the
 * device with the group's address in the GRH slot, a detached QP getting nothing, and the
 * interface's IGMP membership (/proc/net/igmp) following the attachments, QP destruction
 * included.
 *   test_mcast DEVICE IPV4: the device's interface must carry IPV4 and be multicast-capable
 *   (mcast_netns.sh runs it on a veth in a namespace of its own). Exit 77 (skip) when the
 *   device cannot be opened.
 */
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <net/if.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verbs_kit.h"

#define UD_BUF 4096
#define QKEY   0x01234567u
#define GROUP  "239.18.0.9"

struct ud {
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t buf[UD_BUF];
};

/* Is GROUP a membership of interface ifname (/proc/net/igmp: the group's 32 bits as hex in
 * host order under the interface's line)? */
static bool igmp_member(const char *ifname)
{
	FILE *f = fopen("/proc/net/igmp", "r");
	char line[256], dev[64] = "", want[16];
	struct in_addr g;
	bool found = false;

	inet_pton(AF_INET, GROUP, &g);
	snprintf(want, sizeof(want), "%08X", g.s_addr);
	while (f && fgets(line, sizeof(line), f)) {
		char a[64], b[64];

		if (sscanf(line, "%63s %63s", a, b) != 2)
			continue;
		if (line[0] >= '0' && line[0] <= '9')
			snprintf(dev, sizeof(dev), "%s", b);
		else if (!strcmp(dev, ifname) && !strcmp(a, want))
			found = true;
	}
	if (f)
		fclose(f);
	return found;
}

static void make_ud(struct ibv_context *ctx, struct ibv_pd *pd, struct ud *u)
{
	struct ibv_qp_init_attr init = {.qp_type = IBV_QPT_UD,
					.cap = {.max_send_wr = 8, .max_recv_wr = 8,
						.max_send_sge = 1, .max_recv_sge = 1}};

	u->cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	u->mr = ibv_reg_mr(pd, u->buf, UD_BUF, IBV_ACCESS_LOCAL_WRITE);
	CHECK(u->cq && u->mr);
	init.send_cq = init.recv_cq = u->cq;
	u->qp = ibv_create_qp(pd, &init);
	CHECK(u->qp != NULL);
	if (u->qp)
		ud_to_rts(u->qp, QKEY);
}

static void post_recv(struct ud *u, uint64_t id)
{
	struct ibv_sge s = {.addr = (uintptr_t)u->buf, .length = UD_BUF, .lkey = u->mr->lkey};
	struct ibv_recv_wr w = {.wr_id = id, .sg_list = &s, .num_sge = 1}, *bad;

	CHECK_EQ(ibv_post_recv(u->qp, &w, &bad), 0);
}

static void send_group(struct ud *u, struct ibv_ah *ah, const char *msg)
{
	struct ibv_sge s = {.addr = (uintptr_t)u->buf, .length = (uint32_t)strlen(msg),
			    .lkey = u->mr->lkey};
	struct ibv_send_wr w = {.wr_id = 1, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND,
				.send_flags = IBV_SEND_SIGNALED},
			   *bad;
	struct ibv_wc wc;

	memcpy(u->buf, msg, strlen(msg));
	w.wr.ud.ah = ah;
	w.wr.ud.remote_qpn = 0xFFFFFF;
	w.wr.ud.remote_qkey = QKEY;
	CHECK_EQ(ibv_post_send(u->qp, &w, &bad), 0);
	CHECK(poll_one(u->cq, &wc) == IBV_WC_SUCCESS && wc.wr_id == 1);
}

/* u's next completion: msg received from src_qp, the GRH slot holding the IPv4 header sent to
 * the group (roce-reference 1.1: the 20-byte header at offset 20). */
static void check_recv(struct ud *u, const char *msg, uint32_t src_qp)
{
	struct ibv_wc wc;
	struct in_addr g;

	inet_pton(AF_INET, GROUP, &g);
	CHECK_EQ(poll_one(u->cq, &wc), IBV_WC_SUCCESS);
	CHECK_EQ(wc.opcode, IBV_WC_RECV);
	CHECK_EQ(wc.src_qp, src_qp);
	CHECK(wc.wc_flags & IBV_WC_GRH);
	CHECK_EQ(wc.byte_len, 40 + strlen(msg));
	CHECK_MEM_EQ(u->buf + 40, msg, strlen(msg));
	CHECK_MEM_EQ(u->buf + 20 + 16, &g, 4); /* the IPv4 destination: the group */
}

int main(int argc, char **argv)
{
	const char *devname = argc > 1 ? argv[1] : "uroce_v0";
	const char *ip4 = argc > 2 ? argv[2] : "198.18.0.1";
	struct ibv_context *ctx = open_device(devname);
	char ifname[IFNAMSIZ] = "";

	/* The device's interface: uroce_<ifname> for automatic devices. */
	snprintf(ifname, sizeof(ifname), "%s", strncmp(devname, "uroce_", 6) ? devname : devname + 6);

	struct ibv_device_attr da;

	CHECK_EQ(ibv_query_device(ctx, &da), 0);
	CHECK_EQ(da.max_mcast_grp, 64);
	CHECK_EQ(da.max_mcast_qp_attach, 56);
	CHECK_EQ(da.max_total_mcast_qp_attach, 64 * 56);

	int gid_idx = find_gid(ctx, ip4);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	static struct ud snd, r1, r2;

	CHECK(pd != NULL);
	make_ud(ctx, pd, &snd);
	make_ud(ctx, pd, &r1);
	make_ud(ctx, pd, &r2);

	union ibv_gid mgid = {.raw = {[10] = 0xff, [11] = 0xff}}, ucast = mgid;

	inet_pton(AF_INET, GROUP, mgid.raw + 12);
	inet_pton(AF_INET, ip4, ucast.raw + 12);

	/* rdma-core's errors: UD QPs only, multicast GIDs only, detach of what is not attached. */
	struct ibv_cq *rcq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	struct ibv_qp_init_attr rinit = {.qp_type = IBV_QPT_RC, .send_cq = rcq, .recv_cq = rcq,
					 .cap = {.max_send_wr = 1, .max_recv_wr = 1,
						 .max_send_sge = 1, .max_recv_sge = 1}};
	struct ibv_qp *rc = ibv_create_qp(pd, &rinit);

	CHECK(rc != NULL);
	CHECK_EQ(ibv_attach_mcast(rc, &mgid, 0), EINVAL);
	CHECK_EQ(ibv_attach_mcast(r1.qp, &ucast, 0), EINVAL);
	CHECK_EQ(ibv_detach_mcast(r1.qp, &mgid, 0), EINVAL);
	CHECK(!igmp_member(ifname));

	CHECK_EQ(ibv_attach_mcast(r1.qp, &mgid, 0), 0);
	CHECK_EQ(ibv_attach_mcast(r2.qp, &mgid, 0), 0);
	CHECKF(igmp_member(ifname), "%s is not a member of %s", ifname, GROUP);

	struct ibv_ah_attr aa = {.is_global = 1, .port_num = 1,
				 .grh = {.dgid = mgid, .sgid_index = (uint8_t)gid_idx,
					 .hop_limit = 1}};
	struct ibv_ah *ah = ibv_create_ah(pd, &aa);

	CHECK(ah != NULL);
	post_recv(&r1, 1);
	post_recv(&r2, 2);
	send_group(&snd, ah, "hello, group");
	check_recv(&r1, "hello, group", snd.qp->qp_num);
	check_recv(&r2, "hello, group", snd.qp->qp_num);

	/* Detached, r1 hears no more; r2 does. The engine hands one packet to every attached QP
	 * at once, so once r2 has it, r1 would have had it too. */
	CHECK_EQ(ibv_detach_mcast(r1.qp, &mgid, 0), 0);
	CHECK(igmp_member(ifname)); /* r2 still attached */
	post_recv(&r1, 3);
	post_recv(&r2, 4);
	send_group(&snd, ah, "second");
	check_recv(&r2, "second", snd.qp->qp_num);
	struct ibv_wc wc;

	CHECK_EQ(ibv_poll_cq(r1.cq, 1, &wc), 0);

	/* The last QP detached: the interface leaves the group. Attached again and destroyed:
	 * leaves too. */
	CHECK_EQ(ibv_detach_mcast(r2.qp, &mgid, 0), 0);
	CHECK(!igmp_member(ifname));
	CHECK_EQ(ibv_attach_mcast(r2.qp, &mgid, 0), 0);
	CHECK(igmp_member(ifname));
	CHECK_EQ(ibv_destroy_qp(r2.qp), 0);
	CHECK(!igmp_member(ifname));

	ibv_destroy_ah(ah);
	ibv_destroy_qp(rc);
	ibv_destroy_qp(snd.qp);
	ibv_destroy_qp(r1.qp);
	ibv_destroy_cq(rcq);
	ibv_destroy_cq(snd.cq);
	ibv_destroy_cq(r1.cq);
	ibv_destroy_cq(r2.cq);
	ibv_dereg_mr(snd.mr);
	ibv_dereg_mr(r1.mr);
	ibv_dereg_mr(r2.mr);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return check_exit_with("compat_mcast", verbs_kit_checks);
}
