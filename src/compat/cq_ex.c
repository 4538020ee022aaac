/* SPDX-License-Identifier: MIT */
/*
 * The poll API of an extended CQ (struct ibv_cq_ex): ibv_start_poll, ibv_next_poll,
 * ibv_end_poll and the ibv_wc_read_* ops, which the header inlines call through the
 * function pointers in the CQ.
 *
 * start_poll and next_poll take completions from the engine COMPAT_CQ_EX_BATCH at a time into
 * the CQ's buffer (uroce_compat_cq_take: the context lock and the pacing of ibv_poll_cq, so an
 * application that polls drives progress), and then step through the buffer without a lock.
 * The read ops look at the current completion only. As in rxe, the CQ's poll lock is held from
 * a start_poll that finds a completion until end_poll, so another thread's ibv_poll_cq or
 * ibv_resize_cq waits for the session (not with IBV_CREATE_CQ_ATTR_SINGLE_THREADED).
 */
#include <arpa/inet.h>
#include <errno.h>

#include "compat/compat.h"

static struct compat_cq *cq_of(struct ibv_cq_ex *ex)
{
	return compat_container_of(ex, struct compat_cq, ex);
}

static const struct uroce_wc *cur(struct ibv_cq_ex *ex)
{
	struct compat_cq *cq = cq_of(ex);

	return &cq->buf[cq->pos];
}

/* Make buf[pos] the current completion, taking more from the engine when the buffer is used
 * up. 0, or ENOENT when there is none. */
static int load(struct compat_cq *cq)
{
	const struct uroce_wc *w;

	if (cq->pos == cq->n) {
		cq->pos = 0;
		cq->n = uroce_compat_cq_take(cq, COMPAT_CQ_EX_BATCH, cq->buf);
		if (!cq->n) {
			cq->has_cur = false;
			return ENOENT;
		}
	}
	w = &cq->buf[cq->pos];
	cq->has_cur = true;
	cq->ex.status = (enum ibv_wc_status)w->status;
	cq->ex.wr_id = w->wr_id;
	return 0;
}

static int start_poll(struct ibv_cq_ex *ex, struct ibv_poll_cq_attr *attr)
{
	struct compat_cq *cq = cq_of(ex);
	int err;

	if (attr && attr->comp_mask)
		return EINVAL; /* no poll attribute is defined */
	if (!cq->single_threaded)
		pthread_mutex_lock(&cq->poll_lock);
	err = load(cq);
	if (err) {
		/* No session: the application does not call end_poll after ENOENT. */
		if (!cq->single_threaded)
			pthread_mutex_unlock(&cq->poll_lock);
		return err;
	}
	cq->in_poll = true;
	return 0;
}

static int next_poll(struct ibv_cq_ex *ex)
{
	struct compat_cq *cq = cq_of(ex);

	if (!cq->in_poll)
		return EINVAL;
	if (cq->has_cur)
		cq->pos++; /* the current one is consumed */
	return load(cq);
}

static void end_poll(struct ibv_cq_ex *ex)
{
	struct compat_cq *cq = cq_of(ex);

	/* pyverbs, among others, calls end_poll after a start_poll that found nothing: no-op. */
	if (!cq->in_poll)
		return;
	if (cq->has_cur)
		cq->pos++;
	cq->has_cur = false;
	cq->in_poll = false;
	if (!cq->single_threaded)
		pthread_mutex_unlock(&cq->poll_lock);
}

static enum ibv_wc_opcode read_opcode(struct ibv_cq_ex *ex)
{
	return (enum ibv_wc_opcode)cur(ex)->opcode;
}

static uint32_t read_vendor_err(struct ibv_cq_ex *ex)
{
	return cur(ex)->vendor_err;
}

static uint32_t read_byte_len(struct ibv_cq_ex *ex)
{
	return cur(ex)->byte_len;
}

/* The immediate data in network order, or the invalidated rkey (ibv_wc_read_invalidated_rkey
 * reads it through this op) as struct ibv_wc holds it. */
static __be32 read_imm_data(struct ibv_cq_ex *ex)
{
	const struct uroce_wc *w = cur(ex);

	if (w->wc_flags & UROCE_WC_WITH_INV)
		return (__be32)w->invalidated_rkey;
	return htonl(w->imm_data);
}

static uint32_t read_qp_num(struct ibv_cq_ex *ex)
{
	return cur(ex)->qp_num;
}

static uint32_t read_src_qp(struct ibv_cq_ex *ex)
{
	return cur(ex)->src_qp;
}

static unsigned int read_wc_flags(struct ibv_cq_ex *ex)
{
	return cur(ex)->wc_flags;
}

/* RoCE has no LIDs: 0, as ibv_poll_cq reports. */
static uint32_t read_slid(struct ibv_cq_ex *ex)
{
	(void)ex;
	return 0;
}

static uint8_t read_sl(struct ibv_cq_ex *ex)
{
	return cur(ex)->sl;
}

static uint8_t read_dlid_path_bits(struct ibv_cq_ex *ex)
{
	(void)ex;
	return 0;
}

void uroce_compat_cq_ex_init(struct compat_cq *cq, uint64_t wc_flags)
{
	struct ibv_cq_ex *ex = &cq->ex;

	cq->is_ex = true;
	ex->comp_mask = 0;
	ex->start_poll = start_poll;
	ex->next_poll = next_poll;
	ex->end_poll = end_poll;
	ex->read_opcode = read_opcode;
	ex->read_vendor_err = read_vendor_err;
	ex->read_wc_flags = read_wc_flags;
	/* As rxe, an op is there when its flag was asked for (create refuses the flags uroce
	 * does not honour: timestamps, CVLAN, flow tag, tag matching). */
	if (wc_flags & IBV_WC_EX_WITH_BYTE_LEN)
		ex->read_byte_len = read_byte_len;
	if (wc_flags & IBV_WC_EX_WITH_IMM)
		ex->read_imm_data = read_imm_data;
	if (wc_flags & IBV_WC_EX_WITH_QP_NUM)
		ex->read_qp_num = read_qp_num;
	if (wc_flags & IBV_WC_EX_WITH_SRC_QP)
		ex->read_src_qp = read_src_qp;
	if (wc_flags & IBV_WC_EX_WITH_SLID)
		ex->read_slid = read_slid;
	if (wc_flags & IBV_WC_EX_WITH_SL)
		ex->read_sl = read_sl;
	if (wc_flags & IBV_WC_EX_WITH_DLID_PATH_BITS)
		ex->read_dlid_path_bits = read_dlid_path_bits;
}
