/* SPDX-License-Identifier: MIT */
/*
 * The function tables of a context: ibv_context.ops (the data path the header inlines call)
 * and the verbs_context ops. As rdma-core's verbs_set_ops(&verbs_dummy_ops), every slot is
 * filled: a feature uroce lacks fails with EOPNOTSUPP (or NULL + errno) instead of a NULL
 * call in an application that does not check.
 */
#include <errno.h>

#include "compat/compat.h"
#include "compat/ibverbs_for_rdmacm.h"

_Static_assert(sizeof(struct verbs_context) == 648, "rdma-core v44 struct verbs_context");
_Static_assert(offsetof(struct verbs_context, context) == 320, "context at 320");
_Static_assert(offsetof(struct verbs_context, sz) == 312, "sz before context");
_Static_assert(offsetof(struct ibv_context, abi_compat) == 320, "ibv_context.abi_compat");

/* ---- ibv_context.ops stubs ----------------------------------------------------------------- */

/* The _compat_* slots: no application built against rdma-core calls them. */
static void *stub_compat(void)
{
	errno = EOPNOTSUPP;
	return NULL;
}

static int stub_compat_query_device(struct ibv_context *c, struct ibv_device_attr *a)
{
	return ibv_query_device(c, a);
}

static int stub_compat_query_port(struct ibv_context *c, uint8_t port,
				  struct _compat_ibv_port_attr *a)
{
	return (ibv_query_port)(c, port, a); /* the exported one, not the macro */
}

/* ---- verbs_context stubs ------------------------------------------------------------------- */

static struct ibv_mr *stub_alloc_null_mr(struct ibv_pd *pd)
{
	(void)pd;
	errno = EOPNOTSUPP;
	return NULL;
}

static int stub_read_counters(struct ibv_counters *c, uint64_t *v, uint32_t n, uint32_t flags)
{
	(void)c;
	(void)v;
	(void)n;
	(void)flags;
	return EOPNOTSUPP;
}

static int stub_attach_counters(struct ibv_counters *c, struct ibv_counter_attach_attr *a,
				struct ibv_flow *f)
{
	(void)c;
	(void)a;
	(void)f;
	return EOPNOTSUPP;
}

static struct ibv_counters *stub_create_counters(struct ibv_context *c,
						 struct ibv_counters_init_attr *a)
{
	(void)c;
	(void)a;
	errno = EOPNOTSUPP;
	return NULL;
}

static int stub_destroy_counters(struct ibv_counters *c)
{
	(void)c;
	return EOPNOTSUPP;
}

static struct ibv_mr *stub_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *dm, uint64_t off, size_t len,
				     unsigned int access)
{
	(void)pd;
	(void)dm;
	(void)off;
	(void)len;
	(void)access;
	errno = EOPNOTSUPP;
	return NULL;
}

static struct ibv_dm *stub_alloc_dm(struct ibv_context *c, struct ibv_alloc_dm_attr *a)
{
	(void)c;
	(void)a;
	errno = EOPNOTSUPP;
	return NULL;
}

static int stub_free_dm(struct ibv_dm *dm)
{
	(void)dm;
	return EOPNOTSUPP;
}

static int stub_modify_flow_action_esp(struct ibv_flow_action *a,
				       struct ibv_flow_action_esp_attr *attr)
{
	(void)a;
	(void)attr;
	return EOPNOTSUPP;
}

static int stub_destroy_flow_action(struct ibv_flow_action *a)
{
	(void)a;
	return EOPNOTSUPP;
}

static struct ibv_flow_action *stub_create_flow_action_esp(struct ibv_context *c,
							   struct ibv_flow_action_esp_attr *a)
{
	(void)c;
	(void)a;
	errno = EOPNOTSUPP;
	return NULL;
}

static int stub_modify_qp_rate_limit(struct ibv_qp *qp, struct ibv_qp_rate_limit_attr *a)
{
	(void)qp;
	(void)a;
	return EOPNOTSUPP;
}

static struct ibv_pd *stub_alloc_parent_domain(struct ibv_context *c,
					       struct ibv_parent_domain_init_attr *a)
{
	(void)c;
	(void)a;
	errno = EOPNOTSUPP;
	return NULL;
}

static int stub_dealloc_td(struct ibv_td *td)
{
	(void)td;
	return EOPNOTSUPP;
}

static struct ibv_td *stub_alloc_td(struct ibv_context *c, struct ibv_td_init_attr *a)
{
	(void)c;
	(void)a;
	errno = EOPNOTSUPP;
	return NULL;
}

static int stub_modify_cq(struct ibv_cq *cq, struct ibv_modify_cq_attr *a)
{
	(void)cq;
	(void)a;
	return EOPNOTSUPP;
}

static int stub_post_srq_ops(struct ibv_srq *srq, struct ibv_ops_wr *op, struct ibv_ops_wr **bad)
{
	(void)srq;
	*bad = op;
	return EOPNOTSUPP;
}

static int stub_destroy_rwq_ind_table(struct ibv_rwq_ind_table *t)
{
	(void)t;
	return EOPNOTSUPP;
}

static struct ibv_rwq_ind_table *stub_create_rwq_ind_table(struct ibv_context *c,
							   struct ibv_rwq_ind_table_init_attr *a)
{
	(void)c;
	(void)a;
	errno = EOPNOTSUPP;
	return NULL;
}

static int stub_destroy_wq(struct ibv_wq *wq)
{
	(void)wq;
	return EOPNOTSUPP;
}

static int stub_modify_wq(struct ibv_wq *wq, struct ibv_wq_attr *a)
{
	(void)wq;
	(void)a;
	return EOPNOTSUPP;
}

static struct ibv_wq *stub_create_wq(struct ibv_context *c, struct ibv_wq_init_attr *a)
{
	(void)c;
	(void)a;
	errno = EOPNOTSUPP;
	return NULL;
}

static int stub_query_rt_values(struct ibv_context *c, struct ibv_values_ex *v)
{
	(void)c;
	(void)v;
	return EOPNOTSUPP;
}

static int stub_destroy_flow(struct ibv_flow *f)
{
	(void)f;
	return EOPNOTSUPP;
}

static struct ibv_flow *stub_create_flow(struct ibv_qp *qp, struct ibv_flow_attr *a)
{
	(void)qp;
	(void)a;
	errno = EOPNOTSUPP;
	return NULL;
}

static struct ibv_qp *stub_open_qp(struct ibv_context *c, struct ibv_qp_open_attr *a)
{
	(void)c;
	(void)a;
	errno = EOPNOTSUPP;
	return NULL;
}

static int stub_get_srq_num(struct ibv_srq *srq, uint32_t *num)
{
	(void)srq;
	(void)num;
	return EOPNOTSUPP;
}

/* Basic SRQs only (the inline calls ibv_create_srq for those itself). */
static struct ibv_srq *op_create_srq_ex(struct ibv_context *c, struct ibv_srq_init_attr_ex *a)
{
	struct ibv_srq_init_attr init;

	(void)c;
	if ((a->comp_mask & ~(unsigned)(IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE)) ||
	    !(a->comp_mask & IBV_SRQ_INIT_ATTR_PD) ||
	    ((a->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) && a->srq_type != IBV_SRQT_BASIC)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	init.srq_context = a->srq_context;
	init.attr = a->attr;
	struct ibv_srq *srq = ibv_create_srq(a->pd, &init);

	if (srq)
		a->attr = init.attr;
	return srq;
}

static struct ibv_xrcd *stub_open_xrcd(struct ibv_context *c, struct ibv_xrcd_init_attr *a)
{
	(void)c;
	(void)a;
	errno = EOPNOTSUPP;
	return NULL;
}

static int stub_close_xrcd(struct ibv_xrcd *x)
{
	(void)x;
	return EOPNOTSUPP;
}

void uroce_compat_ctx_set_ops(struct compat_ctx *ctx)
{
	struct ibv_context_ops *o = &ctx->vctx.context.ops;
	struct verbs_context *v = &ctx->vctx;
	void *(*compat)(void) = stub_compat;

	o->_compat_query_device = stub_compat_query_device;
	o->_compat_query_port = stub_compat_query_port;
	o->_compat_alloc_pd = compat;
	o->_compat_dealloc_pd = compat;
	o->_compat_reg_mr = compat;
	o->_compat_rereg_mr = compat;
	o->_compat_dereg_mr = compat;
	o->alloc_mw = uroce_compat_alloc_mw;
	o->bind_mw = uroce_compat_bind_mw;
	o->dealloc_mw = uroce_compat_dealloc_mw;
	o->_compat_create_cq = compat;
	o->poll_cq = uroce_compat_poll_cq;
	o->req_notify_cq = uroce_compat_req_notify_cq;
	o->_compat_cq_event = compat;
	o->_compat_resize_cq = compat;
	o->_compat_destroy_cq = compat;
	o->_compat_create_srq = compat;
	o->_compat_modify_srq = compat;
	o->_compat_query_srq = compat;
	o->_compat_destroy_srq = compat;
	o->post_srq_recv = uroce_compat_post_srq_recv;
	o->_compat_create_qp = compat;
	o->_compat_query_qp = compat;
	o->_compat_modify_qp = compat;
	o->_compat_destroy_qp = compat;
	o->post_send = uroce_compat_post_send;
	o->post_recv = uroce_compat_post_recv;
	o->_compat_create_ah = compat;
	o->_compat_destroy_ah = compat;
	o->_compat_attach_mcast = compat;
	o->_compat_detach_mcast = compat;
	o->_compat_async_event = compat;

	v->query_port = uroce_compat_query_port_op;
	v->advise_mr = uroce_compat_advise_mr;
	v->alloc_null_mr = stub_alloc_null_mr;
	v->read_counters = stub_read_counters;
	v->attach_counters_point_flow = stub_attach_counters;
	v->create_counters = stub_create_counters;
	v->destroy_counters = stub_destroy_counters;
	v->reg_dm_mr = stub_reg_dm_mr;
	v->alloc_dm = stub_alloc_dm;
	v->free_dm = stub_free_dm;
	v->modify_flow_action_esp = stub_modify_flow_action_esp;
	v->destroy_flow_action = stub_destroy_flow_action;
	v->create_flow_action_esp = stub_create_flow_action_esp;
	v->modify_qp_rate_limit = stub_modify_qp_rate_limit;
	v->alloc_parent_domain = stub_alloc_parent_domain;
	v->dealloc_td = stub_dealloc_td;
	v->alloc_td = stub_alloc_td;
	v->modify_cq = stub_modify_cq;
	v->post_srq_ops = stub_post_srq_ops;
	v->destroy_rwq_ind_table = stub_destroy_rwq_ind_table;
	v->create_rwq_ind_table = stub_create_rwq_ind_table;
	v->destroy_wq = stub_destroy_wq;
	v->modify_wq = stub_modify_wq;
	v->create_wq = stub_create_wq;
	v->query_rt_values = stub_query_rt_values;
	v->create_cq_ex = uroce_compat_create_cq_ex;
	v->priv = NULL;
	v->query_device_ex = uroce_compat_query_device_ex_op;
	/* Old (libibverbs 1.1.8) applications look for the flow verbs at the placeholders. */
	v->ibv_destroy_flow = stub_destroy_flow;
	v->ABI_placeholder2 = (void (*)(void))stub_destroy_flow;
	v->ibv_create_flow = stub_create_flow;
	v->ABI_placeholder1 = (void (*)(void))stub_create_flow;
	v->open_qp = stub_open_qp;
	v->create_qp_ex = uroce_compat_create_qp_ex;
	v->get_srq_num = stub_get_srq_num;
	v->create_srq_ex = op_create_srq_ex;
	v->open_xrcd = stub_open_xrcd;
	v->close_xrcd = stub_close_xrcd;
}

int uroce_ibv_gsi_steer(struct ibv_context *c, const uint64_t *ids, int n)
{
	return uroce_ctx_gsi_steer(compat_uc(c), ids, n);
}

uint32_t uroce_ibv_slot(struct ibv_context *c)
{
	return uroce_ctx_slot(compat_uc(c));
}

void uroce_ibv_count_cm(struct ibv_context *c, const uint64_t *delta)
{
	uroce_ctx_count_cm(compat_uc(c), delta);
}

bool uroce_ibv_lockable_at_exit(void)
{
	return uroce_ctxs_lockable_at_exit();
}
