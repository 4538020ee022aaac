/* SPDX-License-Identifier: MIT */
/*
 * Work requests for the transport engine's uroce_post_send/uroce_post_recv, built in one
 * expression: each builder returns the request by value with every field it does not take
 * zero, as a memset would leave it (next NULL: one request, not a chain).
 *
 * The request points at the caller's SGE array (sg_list), which must stay valid until it is
 * posted; the engine copies what it needs at post time. num_sge may be 0 (a zero-length
 * message; sg_list is then not read).
 */
#ifndef UROCE_TESTS_WR_H
#define UROCE_TESTS_WR_H

#include <stdint.h>

#include "transport/engine.h"

/* One SGE: length bytes at addr, in the memory region whose local key is lkey. */
static inline struct uroce_sge wr_sge(uint64_t addr, uint32_t length, uint32_t lkey)
{
	return (struct uroce_sge){.addr = addr, .length = length, .lkey = lkey};
}

/* A receive request scattering into sg_list[0..num_sge). */
static inline struct uroce_recv_wr wr_recv(uint64_t wr_id, struct uroce_sge *sg_list,
					   int num_sge)
{
	return (struct uroce_recv_wr){.wr_id = wr_id, .sg_list = sg_list, .num_sge = num_sge};
}

/*
 * A send-queue request of opcode op gathering from sg_list[0..num_sge), with send_flags
 * (UROCE_SEND_*). The opcode's own fields (immediate data, remote address, atomic operands, UD
 * address) are set by the builders below, or by the caller on the returned struct.
 */
static inline struct uroce_send_wr wr_op(enum uroce_wr_opcode op, uint64_t wr_id,
					 struct uroce_sge *sg_list, int num_sge, unsigned send_flags)
{
	return (struct uroce_send_wr){.wr_id = wr_id,
				      .sg_list = sg_list,
				      .num_sge = num_sge,
				      .opcode = op,
				      .send_flags = send_flags};
}

/* A SEND. */
static inline struct uroce_send_wr wr_send(uint64_t wr_id, struct uroce_sge *sg_list, int num_sge,
					   unsigned send_flags)
{
	return wr_op(UROCE_WR_SEND, wr_id, sg_list, num_sge, send_flags);
}

/* A SEND with immediate data imm (host order; the engine writes it big-endian). */
static inline struct uroce_send_wr wr_send_imm(uint64_t wr_id, struct uroce_sge *sg_list,
					       int num_sge, uint32_t imm, unsigned send_flags)
{
	struct uroce_send_wr wr = wr_op(UROCE_WR_SEND_WITH_IMM, wr_id, sg_list, num_sge, send_flags);

	wr.imm_data = imm;
	return wr;
}

/*
 * An RDMA request of opcode op (UROCE_WR_RDMA_WRITE, _WRITE_WITH_IMM or _READ) to remote_addr
 * in the remote region whose key is rkey. A WRITE_WITH_IMM's immediate data is set by the
 * caller (wr.imm_data).
 */
static inline struct uroce_send_wr wr_rdma(enum uroce_wr_opcode op, uint64_t wr_id,
					   struct uroce_sge *sg_list, int num_sge,
					   uint64_t remote_addr, uint32_t rkey, unsigned send_flags)
{
	struct uroce_send_wr wr = wr_op(op, wr_id, sg_list, num_sge, send_flags);

	wr.wr.rdma.remote_addr = remote_addr;
	wr.wr.rdma.rkey = rkey;
	return wr;
}

/* An RDMA WRITE of sg_list to remote_addr. */
static inline struct uroce_send_wr wr_write(uint64_t wr_id, struct uroce_sge *sg_list,
					    int num_sge, uint64_t remote_addr, uint32_t rkey,
					    unsigned send_flags)
{
	return wr_rdma(UROCE_WR_RDMA_WRITE, wr_id, sg_list, num_sge, remote_addr, rkey,
		       send_flags);
}

/* An RDMA READ from remote_addr into sg_list. */
static inline struct uroce_send_wr wr_read(uint64_t wr_id, struct uroce_sge *sg_list, int num_sge,
					   uint64_t remote_addr, uint32_t rkey, unsigned send_flags)
{
	return wr_rdma(UROCE_WR_RDMA_READ, wr_id, sg_list, num_sge, remote_addr, rkey,
		       send_flags);
}

/*
 * An atomic of opcode op (UROCE_WR_ATOMIC_CMP_AND_SWP or _FETCH_AND_ADD) on the 8 bytes at
 * remote_addr; the original value lands in the 8-byte SGE *sge.
 */
static inline struct uroce_send_wr wr_atomic(enum uroce_wr_opcode op, uint64_t wr_id,
					     struct uroce_sge *sge, uint64_t remote_addr,
					     uint32_t rkey, uint64_t compare_add, uint64_t swap,
					     unsigned send_flags)
{
	struct uroce_send_wr wr = wr_op(op, wr_id, sge, 1, send_flags);

	wr.wr.atomic.remote_addr = remote_addr;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = compare_add;
	wr.wr.atomic.swap = swap;
	return wr;
}

/* A UD SEND to QP remote_qpn behind address handle ah, with Q_Key remote_qkey. */
static inline struct uroce_send_wr wr_ud_send(uint64_t wr_id, struct uroce_sge *sg_list,
					      int num_sge, struct uroce_ah *ah, uint32_t remote_qpn,
					      uint32_t remote_qkey, unsigned send_flags)
{
	struct uroce_send_wr wr = wr_send(wr_id, sg_list, num_sge, send_flags);

	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = remote_qpn;
	wr.wr.ud.remote_qkey = remote_qkey;
	return wr;
}

/*
 * A BIND_MW: bind window mw to [addr, addr + length) of region mr with access, its R_Key's low
 * 8 bits becoming those of rkey (mr NULL and length 0: unbind a type 1 window).
 */
static inline struct uroce_send_wr wr_bind_mw(uint64_t wr_id, struct uroce_mw *mw,
					      struct uroce_mr *mr, uint64_t addr, uint64_t length,
					      unsigned access, uint32_t rkey, unsigned send_flags)
{
	struct uroce_send_wr wr = wr_op(UROCE_WR_BIND_MW, wr_id, NULL, 0, send_flags);

	wr.wr.bind_mw.mw = mw;
	wr.wr.bind_mw.mr = mr;
	wr.wr.bind_mw.addr = addr;
	wr.wr.bind_mw.length = length;
	wr.wr.bind_mw.access = access;
	wr.wr.bind_mw.rkey = rkey;
	return wr;
}

/* A LOCAL_INV of the window whose R_Key is rkey. */
static inline struct uroce_send_wr wr_local_inv(uint64_t wr_id, uint32_t rkey,
						unsigned send_flags)
{
	struct uroce_send_wr wr = wr_op(UROCE_WR_LOCAL_INV, wr_id, NULL, 0, send_flags);

	wr.invalidate_rkey = rkey;
	return wr;
}

/* A SEND with Invalidate: the receiver invalidates its window whose R_Key is rkey. */
static inline struct uroce_send_wr wr_send_inv(uint64_t wr_id, struct uroce_sge *sg_list,
					       int num_sge, uint32_t rkey, unsigned send_flags)
{
	struct uroce_send_wr wr = wr_op(UROCE_WR_SEND_WITH_INV, wr_id, sg_list, num_sge,
					send_flags);

	wr.invalidate_rkey = rkey;
	return wr;
}

#endif
