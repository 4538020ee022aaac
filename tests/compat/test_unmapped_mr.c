/* SPDX-License-Identifier: MIT */
/*
 * Memory the application lost under a live registration, through uroce's libibverbs.so.1: a
 * region whose pages are unmapped (munmap), made inaccessible (mprotect PROT_NONE) or cut off
 * (a shared file mapping truncated: SIGBUS) while it is still registered. A NIC or Soft-RoCE
 * pins the pages and never notices; uroce reaches them by virtual address, and answers what rxe
 * answers for a copy that fails, never a signal in the application:
 * - a peer's WRITE, READ or atomic on it: NAK remote access error, the peer's WR completes with
 *   IBV_WC_REM_ACCESS_ERR, and the responder's QP goes to ERR with IBV_EVENT_QP_ACCESS_ERR;
 * - a local WR's own buffer gone (SEND or WRITE gather, one SGE or several, a READ response's
 *   or an atomic's destination): IBV_WC_LOC_PROT_ERR, the QP to ERR;
 * - a receive buffer gone: the receive completes with IBV_WC_LOC_PROT_ERR and the sender's SEND
 *   with IBV_WC_REM_OP_ERR (NAK remote operational error).
 * The program installs its own SIGSEGV and SIGBUS handler before it opens the device, as an
 * application may: none of the guarded faults reaches it, while its own fault on the same lost
 * memory does (uroce chains to it). After all that, a fresh pair of QPs still moves data.
 *
 * Two RC QPs of one context per case, connected to each other over RoCE v2 on the device's
 * IPv4 address (default uroce_lo and 127.0.0.1; argv[1], argv[2] override them). Exit 77 (skip)
 * when the device does not exist or cannot be opened here.
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "verbs_kit.h"

#define ACC                                                                             \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
	 IBV_ACCESS_REMOTE_ATOMIC)
#define PAGES 4

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static int gid_idx;
static union ibv_gid gid;
static size_t pg;

/* The application's own handler: counts, and jumps back when the program faults on purpose. */
static volatile sig_atomic_t app_faults;
static volatile sig_atomic_t app_armed;
static sigjmp_buf app_jb;

static void app_handler(int sig, siginfo_t *si, void *uc)
{
	(void)si;
	(void)uc;
	app_faults++;
	if (app_armed) {
		app_armed = 0;
		siglongjmp(app_jb, sig);
	}
	signal(sig, SIG_DFL); /* not expected: die of it */
}

static void app_handler_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = app_handler;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	CHECK_EQ(sigaction(SIGSEGV, &sa, NULL), 0);
	CHECK_EQ(sigaction(SIGBUS, &sa, NULL), 0);
}

/* A region of PAGES fresh pages, filled with byte fill, registered with ACC. */
struct region {
	uint8_t *p;
	struct ibv_mr *mr;
	int memfd; /* a shared file mapping (for truncation), or -1 */
};

static void region_make(struct region *r, uint8_t fill, bool file)
{
	r->memfd = -1;
	if (file) {
		r->memfd = memfd_create("unmapped_mr", MFD_CLOEXEC);
		CHECK(r->memfd >= 0);
		CHECK_EQ(ftruncate(r->memfd, (off_t)(PAGES * pg)), 0);
	}
	r->p = mmap(NULL, PAGES * pg, PROT_READ | PROT_WRITE,
		    file ? MAP_SHARED : MAP_PRIVATE | MAP_ANONYMOUS, r->memfd, 0);
	CHECK(r->p != MAP_FAILED);
	memset(r->p, fill, PAGES * pg);
	r->mr = ibv_reg_mr(pd, r->p, PAGES * pg, ACC);
	CHECK(r->mr != NULL);
}

/* How the memory goes while registered. */
enum loss { UNMAP, PROTECT, TRUNCATE };

/* Lose pages [first, first + n) of r. */
static void region_lose(struct region *r, enum loss how, int first, int n)
{
	uint8_t *at = r->p + (size_t)first * pg;

	switch (how) {
	case UNMAP:
		CHECK_EQ(munmap(at, (size_t)n * pg), 0);
		break;
	case PROTECT:
		CHECK_EQ(mprotect(at, (size_t)n * pg, PROT_NONE), 0);
		break;
	case TRUNCATE: /* the file ends before them: an access is SIGBUS */
		CHECK_EQ(ftruncate(r->memfd, (off_t)((size_t)first * pg)), 0);
		break;
	}
}

static void region_free(struct region *r)
{
	if (r->mr)
		CHECK_EQ(ibv_dereg_mr(r->mr), 0);
	munmap(r->p, PAGES * pg); /* whatever is left of it */
	if (r->memfd >= 0)
		close(r->memfd);
}

/* Two QPs of ours connected to each other, a the requester, b the responder. */
static void pair_make(struct end *a, struct end *b)
{
	const struct ibv_qp_cap cap = {
		.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 4, .max_recv_sge = 4};

	end_make(a, ctx, pd, NULL, 0, cap);
	end_make(b, ctx, pd, NULL, 0, cap);
	CHECK_BAIL();
	rc_to_rts(a->qp, ACC, b->qp->qp_num, gid_idx, &gid, 0);
	rc_to_rts(b->qp, ACC, a->qp->qp_num, gid_idx, &gid, 0);
}

/* Wait up to WAIT_MS for the async event type on qp; the events before it are taken too. */
static bool async_event(enum ibv_event_type type, struct ibv_qp *qp)
{
	uint64_t end = now_ms() + WAIT_MS;

	for (uint64_t t = now_ms(); t < end; t = now_ms()) {
		struct pollfd p = {.fd = ctx->async_fd, .events = POLLIN};
		struct ibv_async_event ev;

		if (poll(&p, 1, (int)(end - t)) != 1)
			break;
		if (ibv_get_async_event(ctx, &ev))
			return false;
		bool hit = ev.event_type == type && ev.element.qp == qp;

		ibv_ack_async_event(&ev);
		if (hit)
			return true;
	}
	return false;
}

/* Take every async event there is now (the previous case's). */
static void async_drain(void)
{
	struct pollfd p = {.fd = ctx->async_fd, .events = POLLIN};
	struct ibv_async_event ev;

	while (poll(&p, 1, 0) == 1 && ibv_get_async_event(ctx, &ev) == 0)
		ibv_ack_async_event(&ev);
}

static enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	CHECK_EQ(ibv_query_qp(qp, &a, IBV_QP_STATE, &ia), 0);
	return a.qp_state;
}

/* Post one signaled send WR on a: its completion's status. */
static int post_one(struct end *a, enum ibv_wr_opcode op, struct ibv_sge *sg, int nsg,
		    uint64_t raddr, uint32_t rkey)
{
	struct ibv_send_wr w = {.wr_id = 7, .sg_list = sg, .num_sge = nsg, .opcode = op,
				.send_flags = IBV_SEND_SIGNALED},
			   *bad;
	struct ibv_wc wc;

	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		w.wr.atomic.remote_addr = raddr;
		w.wr.atomic.rkey = rkey;
		w.wr.atomic.compare_add = 1;
	} else {
		w.wr.rdma.remote_addr = raddr;
		w.wr.rdma.rkey = rkey;
	}
	CHECK_EQ(ibv_post_send(a->qp, &w, &bad), 0);
	return poll_one(a->cq, &wc);
}

/*
 * A peer's request on b's region, whose pages [lost, lost + 1) are gone: the requester's WR
 * fails with REM_ACCESS_ERR and b's QP goes to ERR with QP_ACCESS_ERR.
 */
static void remote(const char *what, enum ibv_wr_opcode op, enum loss how, uint32_t len,
		   int lost)
{
	struct end a, b;
	struct region mine, theirs;

	fprintf(stderr, "remote %s\n", what);
	async_drain();
	pair_make(&a, &b);
	region_make(&mine, 0x11, false);
	region_make(&theirs, 0x22, how == TRUNCATE);
	CHECK_BAIL();
	region_lose(&theirs, how, lost, how == TRUNCATE ? PAGES - lost : 1);

	struct ibv_sge s = {.addr = (uintptr_t)mine.p, .length = len, .lkey = mine.mr->lkey};

	CHECKF(post_one(&a, op, &s, 1, (uintptr_t)theirs.p, theirs.mr->rkey) ==
		       IBV_WC_REM_ACCESS_ERR,
	       "%s", what);
	CHECKF(async_event(IBV_EVENT_QP_ACCESS_ERR, b.qp), "%s", what);
	CHECK_EQ(qp_state(b.qp), IBV_QPS_ERR);
	CHECK_EQ(qp_state(a.qp), IBV_QPS_ERR);
	/* A WRITE lands up to the lost page and no further. */
	if (op == IBV_WR_RDMA_WRITE && how == UNMAP && lost > 0)
		CHECK(theirs.p[0] == 0x11 && theirs.p[(size_t)lost * pg - 1] == 0x11);
	async_drain();
	region_free(&mine);
	region_free(&theirs);
	end_free(&a);
	end_free(&b);
}

/* A's own buffer for op is gone (page 0 of its region): the WR fails with LOC_PROT_ERR. */
static void local(const char *what, enum ibv_wr_opcode op, uint32_t len, int nsg)
{
	struct end a, b;
	struct region mine, theirs;

	fprintf(stderr, "local %s\n", what);
	async_drain();
	pair_make(&a, &b);
	region_make(&mine, 0x33, false);
	region_make(&theirs, 0x44, false);
	CHECK_BAIL();
	/* With several SGEs the payload spans them: the lost page is the second SGE's. */
	struct ibv_sge s[2] = {
		{.addr = (uintptr_t)mine.p + pg, .length = len / 2, .lkey = mine.mr->lkey},
		{.addr = (uintptr_t)mine.p, .length = len - len / 2, .lkey = mine.mr->lkey},
	};

	if (nsg == 1) {
		s[0].addr = (uintptr_t)mine.p;
		s[0].length = len;
	}
	if (op == IBV_WR_SEND) {
		struct ibv_sge rs = {.addr = (uintptr_t)theirs.p, .length = (uint32_t)pg,
				     .lkey = theirs.mr->lkey};
		struct ibv_recv_wr rw = {.wr_id = 9, .sg_list = &rs, .num_sge = 1}, *rbad;

		CHECK_EQ(ibv_post_recv(b.qp, &rw, &rbad), 0);
	}
	region_lose(&mine, UNMAP, 0, 1);
	CHECKF(post_one(&a, op, s, nsg, (uintptr_t)theirs.p, theirs.mr->rkey) ==
		       IBV_WC_LOC_PROT_ERR,
	       "%s", what);
	CHECK_EQ(qp_state(a.qp), IBV_QPS_ERR);
	/* The responder's memory is untouched (an atomic's target aside: it ran there). */
	CHECK(theirs.p[8] == 0x44);
	if (op != IBV_WR_ATOMIC_FETCH_AND_ADD)
		CHECK(theirs.p[0] == 0x44);
	async_drain();
	region_free(&mine);
	region_free(&theirs);
	end_free(&a);
	end_free(&b);
}

/* b's receive buffer is gone: its receive fails with LOC_PROT_ERR, a's SEND with REM_OP_ERR. */
static void recv_lost(void)
{
	struct end a, b;
	struct region mine, theirs;
	struct ibv_wc wc;

	fprintf(stderr, "receive buffer lost\n");
	async_drain();
	pair_make(&a, &b);
	region_make(&mine, 0x55, false);
	region_make(&theirs, 0x66, false);
	CHECK_BAIL();
	struct ibv_sge rs = {.addr = (uintptr_t)theirs.p + pg - 64, .length = 2048,
			     .lkey = theirs.mr->lkey};
	struct ibv_recv_wr rw = {.wr_id = 9, .sg_list = &rs, .num_sge = 1}, *rbad;

	CHECK_EQ(ibv_post_recv(b.qp, &rw, &rbad), 0);
	region_lose(&theirs, UNMAP, 1, 1);
	struct ibv_sge s = {.addr = (uintptr_t)mine.p, .length = 2048, .lkey = mine.mr->lkey};

	CHECK_EQ(post_one(&a, IBV_WR_SEND, &s, 1, 0, 0), IBV_WC_REM_OP_ERR);
	CHECK_EQ(poll_one(b.cq, &wc), IBV_WC_LOC_PROT_ERR);
	CHECK_EQ(wc.wr_id, 9);
	CHECK_EQ(qp_state(b.qp), IBV_QPS_ERR);
	async_drain();
	region_free(&mine);
	region_free(&theirs);
	end_free(&a);
	end_free(&b);
}

/* The application's own fault on lost memory reaches its own handler. */
static void app_fault(void)
{
	uint8_t *p = mmap(NULL, pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int before = app_faults;

	CHECK(p != MAP_FAILED);
	app_armed = 1;
	if (sigsetjmp(app_jb, 1) == 0) {
		*(volatile uint8_t *)p = 1;
		CHECKF(false, "the store into PROT_NONE memory did not fault");
	}
	CHECK_EQ(app_faults, before + 1);
	munmap(p, pg);
}

/* Nothing is stuck: a fresh pair moves a 3-page WRITE byte for byte. */
static void still_works(void)
{
	struct end a, b;
	struct region mine, theirs;

	pair_make(&a, &b);
	region_make(&mine, 0x77, false);
	region_make(&theirs, 0x00, false);
	CHECK_BAIL();
	for (size_t i = 0; i < 3 * pg; i++)
		mine.p[i] = (uint8_t)(i * 13 + 5);
	struct ibv_sge s = {.addr = (uintptr_t)mine.p, .length = (uint32_t)(3 * pg),
			    .lkey = mine.mr->lkey};

	CHECK_EQ(post_one(&a, IBV_WR_RDMA_WRITE, &s, 1, (uintptr_t)theirs.p, theirs.mr->rkey),
		 IBV_WC_SUCCESS);
	CHECK_MEM_EQ(theirs.p, mine.p, 3 * pg);
	async_drain();
	region_free(&mine);
	region_free(&theirs);
	end_free(&a);
	end_free(&b);
}

int main(int argc, char **argv)
{
	const char *devname = argc > 1 ? argv[1] : "uroce_lo";
	const char *ip4 = argc > 2 ? argv[2] : "127.0.0.1";

	pg = (size_t)sysconf(_SC_PAGESIZE);
	app_handler_install();
	ctx = open_device(devname);
	gid_idx = find_gid(ctx, ip4);
	pd = ibv_alloc_pd(ctx);
	CHECK(pd != NULL);
	if (pd && gid_idx >= 0 && ibv_query_gid(ctx, 1, gid_idx, &gid) == 0) {
		/* Lost from the start of the access, and in the middle of a multi-packet one. */
		remote("write unmapped", IBV_WR_RDMA_WRITE, UNMAP, 1024, 0);
		remote("write unmapped, third page", IBV_WR_RDMA_WRITE, UNMAP, (uint32_t)(3 * pg), 2);
		remote("write protected", IBV_WR_RDMA_WRITE, PROTECT, 512, 0);
		remote("read unmapped", IBV_WR_RDMA_READ, UNMAP, 1024, 0);
		remote("read unmapped, second page", IBV_WR_RDMA_READ, UNMAP, (uint32_t)(3 * pg), 1);
		remote("read truncated (SIGBUS)", IBV_WR_RDMA_READ, TRUNCATE, 2048, 0);
		remote("write truncated (SIGBUS)", IBV_WR_RDMA_WRITE, TRUNCATE, (uint32_t)(2 * pg), 1);
		remote("atomic unmapped", IBV_WR_ATOMIC_FETCH_AND_ADD, UNMAP, 8, 0);
		remote("atomic protected", IBV_WR_ATOMIC_FETCH_AND_ADD, PROTECT, 8, 0);
		local("send gather", IBV_WR_SEND, 1024, 1);
		local("send gather, second SGE", IBV_WR_SEND, 1024, 2);
		local("write gather", IBV_WR_RDMA_WRITE, (uint32_t)(2 * pg), 1);
		local("read response scatter", IBV_WR_RDMA_READ, 2048, 1);
		local("atomic result", IBV_WR_ATOMIC_FETCH_AND_ADD, 8, 1);
		recv_lost();
		CHECK_EQ(app_faults, 0); /* no guarded fault reached the application */
		app_fault();
		still_works();
		CHECK_EQ(ibv_dealloc_pd(pd), 0);
	}
	CHECK_EQ(ibv_close_device(ctx), 0);
	return check_exit_with("verbs_unmapped_mr", verbs_kit_checks);
}
