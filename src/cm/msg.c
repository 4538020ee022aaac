/* SPDX-License-Identifier: MIT */
/*
 * CM message codecs. Offsets and bit positions follow include/rdma/ibta_vol1_c12.h
 * (IBTA vol 1, 12.6); bit fields are MSB first within their bytes.
 */
#include <errno.h>
#include <string.h>

#include "cm/msg.h"
#include "wire/bytes.h"

_Static_assert(UROCE_MAD_HDR_LEN + UROCE_CM_MSG_LEN == UROCE_MAD_LEN, "MAD is 256 bytes");
_Static_assert(UROCE_CM_REQ_PRIV_OFF + UROCE_CM_REQ_PRIV_LEN == UROCE_CM_MSG_LEN, "REQ");
_Static_assert(UROCE_CM_MRA_PRIV_OFF + UROCE_CM_MRA_PRIV_LEN == UROCE_CM_MSG_LEN, "MRA");
_Static_assert(UROCE_CM_REJ_PRIV_OFF + UROCE_CM_REJ_PRIV_LEN == UROCE_CM_MSG_LEN, "REJ");
_Static_assert(UROCE_CM_REP_PRIV_OFF + UROCE_CM_REP_PRIV_LEN == UROCE_CM_MSG_LEN, "REP");
_Static_assert(UROCE_CM_RTU_PRIV_OFF + UROCE_CM_RTU_PRIV_LEN == UROCE_CM_MSG_LEN, "RTU");
_Static_assert(UROCE_CM_DREQ_PRIV_OFF + UROCE_CM_DREQ_PRIV_LEN == UROCE_CM_MSG_LEN, "DREQ");
_Static_assert(UROCE_CM_DREP_PRIV_OFF + UROCE_CM_DREP_PRIV_LEN == UROCE_CM_MSG_LEN, "DREP");
_Static_assert(UROCE_CM_SIDR_REQ_PRIV_OFF + UROCE_CM_SIDR_REQ_PRIV_LEN == UROCE_CM_MSG_LEN,
	       "SIDR_REQ");
_Static_assert(UROCE_CM_SIDR_REP_PRIV_OFF + UROCE_CM_SIDR_REP_PRIV_LEN == UROCE_CM_MSG_LEN,
	       "SIDR_REP");
_Static_assert(12 + UROCE_CM_ARI_LEN == UROCE_CM_REJ_PRIV_OFF, "REJ ARI ends at private data");
_Static_assert(24 + UROCE_CM_SIDR_INFO_LEN == UROCE_CM_SIDR_REP_PRIV_OFF, "SIDR_REP info");

#define REQ_PATH_LEN 44 /* primary path at 52, alternate at 96, private data at 140 */

/* A field of `bits` bits whose most significant bit is bit 7 - `msb_off` of byte b (MSB first). */
static inline uint8_t get_bits(uint8_t b, unsigned msb_off, unsigned bits)
{
	return (uint8_t)((unsigned)b >> (8 - msb_off - bits) & ((1u << bits) - 1));
}

static inline uint8_t put_bits(unsigned v, unsigned msb_off, unsigned bits)
{
	return (uint8_t)((v & ((1u << bits) - 1)) << (8 - msb_off - bits));
}

static inline void put_be24m(uint8_t *p, uint32_t v)
{
	uroce_put_be24(p, v & 0xFFFFFFu);
}

/* ---- REQ (IBTA 12.6.5) ---- */

static void path_decode(struct uroce_cm_path *c, const uint8_t *p)
{
	uint32_t w = uroce_get_be32(p + 36);

	c->local_lid = uroce_get_be16(p + 0);
	c->remote_lid = uroce_get_be16(p + 2);
	memcpy(c->local_gid, p + 4, 16);
	memcpy(c->remote_gid, p + 20, 16);
	c->flow_label = w >> 12;		 /* 20 bits, then 6 reserved */
	c->packet_rate = (uint8_t)(w & 0x3F); /* 6 bits */
	c->traffic_class = p[40];
	c->hop_limit = p[41];
	c->sl = get_bits(p[42], 0, 4);
	c->subnet_local = get_bits(p[42], 4, 1);
	c->local_ack_timeout = get_bits(p[43], 0, 5);
}

static void path_encode(uint8_t *p, const struct uroce_cm_path *c)
{
	uroce_put_be16(p + 0, c->local_lid);
	uroce_put_be16(p + 2, c->remote_lid);
	memcpy(p + 4, c->local_gid, 16);
	memcpy(p + 20, c->remote_gid, 16);
	uroce_put_be32(p + 36, (c->flow_label & 0xFFFFFu) << 12 | (c->packet_rate & 0x3Fu));
	p[40] = c->traffic_class;
	p[41] = c->hop_limit;
	p[42] = (uint8_t)(put_bits(c->sl, 0, 4) | put_bits(c->subnet_local, 4, 1));
	p[43] = put_bits(c->local_ack_timeout, 0, 5);
}

int uroce_cm_req_decode(struct uroce_cm_req *r, const uint8_t *p, size_t len)
{
	if (len < UROCE_CM_MSG_LEN)
		return -EBADMSG;
	r->local_comm_id = uroce_get_be32(p + 0);
	r->service_id = uroce_get_be64(p + 8);
	r->local_ca_guid = uroce_get_be64(p + 16);
	r->local_qkey = uroce_get_be32(p + 28);
	r->local_qpn = uroce_get_be24(p + 32);
	r->responder_resources = p[35];
	r->local_eecn = uroce_get_be24(p + 36);
	r->initiator_depth = p[39];
	r->remote_eecn = uroce_get_be24(p + 40);
	r->remote_cm_resp_timeout = get_bits(p[43], 0, 5);
	r->transport_type = get_bits(p[43], 5, 2);
	r->e2e_flow_control = get_bits(p[43], 7, 1);
	r->starting_psn = uroce_get_be24(p + 44);
	r->local_cm_resp_timeout = get_bits(p[47], 0, 5);
	r->retry_count = get_bits(p[47], 5, 3);
	r->pkey = uroce_get_be16(p + 48);
	r->path_mtu = get_bits(p[50], 0, 4);
	r->rdc_exists = get_bits(p[50], 4, 1);
	r->rnr_retry_count = get_bits(p[50], 5, 3);
	r->max_cm_retries = get_bits(p[51], 0, 4);
	r->srq = get_bits(p[51], 4, 1);
	r->ext_transport_type = get_bits(p[51], 5, 3);
	path_decode(&r->primary, p + 52);
	path_decode(&r->alternate, p + 52 + REQ_PATH_LEN);
	memcpy(r->private_data, p + UROCE_CM_REQ_PRIV_OFF, UROCE_CM_REQ_PRIV_LEN);
	return UROCE_CM_MSG_LEN;
}

int uroce_cm_req_encode(uint8_t *p, size_t cap, const struct uroce_cm_req *r)
{
	if (cap < UROCE_CM_MSG_LEN)
		return -ENOSPC;
	memset(p, 0, UROCE_CM_MSG_LEN);
	uroce_put_be32(p + 0, r->local_comm_id);
	uroce_put_be64(p + 8, r->service_id);
	uroce_put_be64(p + 16, r->local_ca_guid);
	uroce_put_be32(p + 28, r->local_qkey);
	put_be24m(p + 32, r->local_qpn);
	p[35] = r->responder_resources;
	put_be24m(p + 36, r->local_eecn);
	p[39] = r->initiator_depth;
	put_be24m(p + 40, r->remote_eecn);
	p[43] = (uint8_t)(put_bits(r->remote_cm_resp_timeout, 0, 5) |
			  put_bits(r->transport_type, 5, 2) | put_bits(r->e2e_flow_control, 7, 1));
	put_be24m(p + 44, r->starting_psn);
	p[47] = (uint8_t)(put_bits(r->local_cm_resp_timeout, 0, 5) |
			  put_bits(r->retry_count, 5, 3));
	uroce_put_be16(p + 48, r->pkey);
	p[50] = (uint8_t)(put_bits(r->path_mtu, 0, 4) | put_bits(r->rdc_exists, 4, 1) |
			  put_bits(r->rnr_retry_count, 5, 3));
	p[51] = (uint8_t)(put_bits(r->max_cm_retries, 0, 4) | put_bits(r->srq, 4, 1) |
			  put_bits(r->ext_transport_type, 5, 3));
	path_encode(p + 52, &r->primary);
	path_encode(p + 52 + REQ_PATH_LEN, &r->alternate);
	memcpy(p + UROCE_CM_REQ_PRIV_OFF, r->private_data, UROCE_CM_REQ_PRIV_LEN);
	return UROCE_CM_MSG_LEN;
}

/* ---- MRA (12.6.6) ---- */

int uroce_cm_mra_decode(struct uroce_cm_mra *m, const uint8_t *p, size_t len)
{
	if (len < UROCE_CM_MSG_LEN)
		return -EBADMSG;
	m->local_comm_id = uroce_get_be32(p + 0);
	m->remote_comm_id = uroce_get_be32(p + 4);
	m->msg_mraed = get_bits(p[8], 0, 2);
	m->service_timeout = get_bits(p[9], 0, 5);
	memcpy(m->private_data, p + UROCE_CM_MRA_PRIV_OFF, UROCE_CM_MRA_PRIV_LEN);
	return UROCE_CM_MSG_LEN;
}

int uroce_cm_mra_encode(uint8_t *p, size_t cap, const struct uroce_cm_mra *m)
{
	if (cap < UROCE_CM_MSG_LEN)
		return -ENOSPC;
	memset(p, 0, UROCE_CM_MSG_LEN);
	uroce_put_be32(p + 0, m->local_comm_id);
	uroce_put_be32(p + 4, m->remote_comm_id);
	p[8] = put_bits(m->msg_mraed, 0, 2);
	p[9] = put_bits(m->service_timeout, 0, 5);
	memcpy(p + UROCE_CM_MRA_PRIV_OFF, m->private_data, UROCE_CM_MRA_PRIV_LEN);
	return UROCE_CM_MSG_LEN;
}

/* ---- REJ (12.6.7) ---- */

int uroce_cm_rej_decode(struct uroce_cm_rej *r, const uint8_t *p, size_t len)
{
	if (len < UROCE_CM_MSG_LEN)
		return -EBADMSG;
	r->local_comm_id = uroce_get_be32(p + 0);
	r->remote_comm_id = uroce_get_be32(p + 4);
	r->msg_rejected = get_bits(p[8], 0, 2);
	r->reject_info_len = get_bits(p[9], 0, 7);
	r->reason = uroce_get_be16(p + 10);
	memcpy(r->ari, p + 12, UROCE_CM_ARI_LEN);
	memcpy(r->private_data, p + UROCE_CM_REJ_PRIV_OFF, UROCE_CM_REJ_PRIV_LEN);
	return UROCE_CM_MSG_LEN;
}

int uroce_cm_rej_encode(uint8_t *p, size_t cap, const struct uroce_cm_rej *r)
{
	if (cap < UROCE_CM_MSG_LEN)
		return -ENOSPC;
	memset(p, 0, UROCE_CM_MSG_LEN);
	uroce_put_be32(p + 0, r->local_comm_id);
	uroce_put_be32(p + 4, r->remote_comm_id);
	p[8] = put_bits(r->msg_rejected, 0, 2);
	p[9] = put_bits(r->reject_info_len, 0, 7);
	uroce_put_be16(p + 10, r->reason);
	memcpy(p + 12, r->ari, UROCE_CM_ARI_LEN);
	memcpy(p + UROCE_CM_REJ_PRIV_OFF, r->private_data, UROCE_CM_REJ_PRIV_LEN);
	return UROCE_CM_MSG_LEN;
}

const char *uroce_cm_rej_reason_name(uint16_t reason)
{
	switch (reason) {
#define UROCE_CM_REJ_NAME(name, val)                                                              \
	case val:                                                                                 \
		return #name;
		UROCE_CM_REJ_REASONS(UROCE_CM_REJ_NAME)
#undef UROCE_CM_REJ_NAME
	default:
		return NULL;
	}
}

/* ---- REP (12.6.8) ---- */

int uroce_cm_rep_decode(struct uroce_cm_rep *r, const uint8_t *p, size_t len)
{
	if (len < UROCE_CM_MSG_LEN)
		return -EBADMSG;
	r->local_comm_id = uroce_get_be32(p + 0);
	r->remote_comm_id = uroce_get_be32(p + 4);
	r->local_qkey = uroce_get_be32(p + 8);
	r->local_qpn = uroce_get_be24(p + 12);
	r->local_eecn = uroce_get_be24(p + 16);
	r->starting_psn = uroce_get_be24(p + 20);
	r->responder_resources = p[24];
	r->initiator_depth = p[25];
	r->target_ack_delay = get_bits(p[26], 0, 5);
	r->failover_accepted = get_bits(p[26], 5, 2);
	r->e2e_flow_control = get_bits(p[26], 7, 1);
	r->rnr_retry_count = get_bits(p[27], 0, 3);
	r->srq = get_bits(p[27], 3, 1);
	r->local_ca_guid = uroce_get_be64(p + 28);
	memcpy(r->private_data, p + UROCE_CM_REP_PRIV_OFF, UROCE_CM_REP_PRIV_LEN);
	return UROCE_CM_MSG_LEN;
}

int uroce_cm_rep_encode(uint8_t *p, size_t cap, const struct uroce_cm_rep *r)
{
	if (cap < UROCE_CM_MSG_LEN)
		return -ENOSPC;
	memset(p, 0, UROCE_CM_MSG_LEN);
	uroce_put_be32(p + 0, r->local_comm_id);
	uroce_put_be32(p + 4, r->remote_comm_id);
	uroce_put_be32(p + 8, r->local_qkey);
	put_be24m(p + 12, r->local_qpn);
	put_be24m(p + 16, r->local_eecn);
	put_be24m(p + 20, r->starting_psn);
	p[24] = r->responder_resources;
	p[25] = r->initiator_depth;
	p[26] = (uint8_t)(put_bits(r->target_ack_delay, 0, 5) |
			  put_bits(r->failover_accepted, 5, 2) | put_bits(r->e2e_flow_control, 7, 1));
	p[27] = (uint8_t)(put_bits(r->rnr_retry_count, 0, 3) | put_bits(r->srq, 3, 1));
	uroce_put_be64(p + 28, r->local_ca_guid);
	memcpy(p + UROCE_CM_REP_PRIV_OFF, r->private_data, UROCE_CM_REP_PRIV_LEN);
	return UROCE_CM_MSG_LEN;
}

/* ---- RTU, DREQ, DREP (12.6.9, 12.6.10, 12.6.11) ---- */

int uroce_cm_rtu_decode(struct uroce_cm_rtu *r, const uint8_t *p, size_t len)
{
	if (len < UROCE_CM_MSG_LEN)
		return -EBADMSG;
	r->local_comm_id = uroce_get_be32(p + 0);
	r->remote_comm_id = uroce_get_be32(p + 4);
	memcpy(r->private_data, p + UROCE_CM_RTU_PRIV_OFF, UROCE_CM_RTU_PRIV_LEN);
	return UROCE_CM_MSG_LEN;
}

int uroce_cm_rtu_encode(uint8_t *p, size_t cap, const struct uroce_cm_rtu *r)
{
	if (cap < UROCE_CM_MSG_LEN)
		return -ENOSPC;
	uroce_put_be32(p + 0, r->local_comm_id);
	uroce_put_be32(p + 4, r->remote_comm_id);
	memcpy(p + UROCE_CM_RTU_PRIV_OFF, r->private_data, UROCE_CM_RTU_PRIV_LEN);
	return UROCE_CM_MSG_LEN;
}

int uroce_cm_dreq_decode(struct uroce_cm_dreq *d, const uint8_t *p, size_t len)
{
	if (len < UROCE_CM_MSG_LEN)
		return -EBADMSG;
	d->local_comm_id = uroce_get_be32(p + 0);
	d->remote_comm_id = uroce_get_be32(p + 4);
	d->remote_qpn = uroce_get_be24(p + 8);
	memcpy(d->private_data, p + UROCE_CM_DREQ_PRIV_OFF, UROCE_CM_DREQ_PRIV_LEN);
	return UROCE_CM_MSG_LEN;
}

int uroce_cm_dreq_encode(uint8_t *p, size_t cap, const struct uroce_cm_dreq *d)
{
	if (cap < UROCE_CM_MSG_LEN)
		return -ENOSPC;
	uroce_put_be32(p + 0, d->local_comm_id);
	uroce_put_be32(p + 4, d->remote_comm_id);
	put_be24m(p + 8, d->remote_qpn);
	p[11] = 0;
	memcpy(p + UROCE_CM_DREQ_PRIV_OFF, d->private_data, UROCE_CM_DREQ_PRIV_LEN);
	return UROCE_CM_MSG_LEN;
}

int uroce_cm_drep_decode(struct uroce_cm_drep *d, const uint8_t *p, size_t len)
{
	if (len < UROCE_CM_MSG_LEN)
		return -EBADMSG;
	d->local_comm_id = uroce_get_be32(p + 0);
	d->remote_comm_id = uroce_get_be32(p + 4);
	memcpy(d->private_data, p + UROCE_CM_DREP_PRIV_OFF, UROCE_CM_DREP_PRIV_LEN);
	return UROCE_CM_MSG_LEN;
}

int uroce_cm_drep_encode(uint8_t *p, size_t cap, const struct uroce_cm_drep *d)
{
	if (cap < UROCE_CM_MSG_LEN)
		return -ENOSPC;
	uroce_put_be32(p + 0, d->local_comm_id);
	uroce_put_be32(p + 4, d->remote_comm_id);
	memcpy(p + UROCE_CM_DREP_PRIV_OFF, d->private_data, UROCE_CM_DREP_PRIV_LEN);
	return UROCE_CM_MSG_LEN;
}

/* ---- SIDR_REQ, SIDR_REP (12.11.1, 12.11.2) ---- */

int uroce_cm_sidr_req_decode(struct uroce_cm_sidr_req *s, const uint8_t *p, size_t len)
{
	if (len < UROCE_CM_MSG_LEN)
		return -EBADMSG;
	s->request_id = uroce_get_be32(p + 0);
	s->pkey = uroce_get_be16(p + 4);
	s->service_id = uroce_get_be64(p + 8);
	memcpy(s->private_data, p + UROCE_CM_SIDR_REQ_PRIV_OFF, UROCE_CM_SIDR_REQ_PRIV_LEN);
	return UROCE_CM_MSG_LEN;
}

int uroce_cm_sidr_req_encode(uint8_t *p, size_t cap, const struct uroce_cm_sidr_req *s)
{
	if (cap < UROCE_CM_MSG_LEN)
		return -ENOSPC;
	uroce_put_be32(p + 0, s->request_id);
	uroce_put_be16(p + 4, s->pkey);
	uroce_put_be16(p + 6, 0);
	uroce_put_be64(p + 8, s->service_id);
	memcpy(p + UROCE_CM_SIDR_REQ_PRIV_OFF, s->private_data, UROCE_CM_SIDR_REQ_PRIV_LEN);
	return UROCE_CM_MSG_LEN;
}

int uroce_cm_sidr_rep_decode(struct uroce_cm_sidr_rep *s, const uint8_t *p, size_t len)
{
	if (len < UROCE_CM_MSG_LEN)
		return -EBADMSG;
	s->request_id = uroce_get_be32(p + 0);
	s->status = p[4];
	s->info_len = p[5];
	s->qpn = uroce_get_be24(p + 8);
	s->service_id = uroce_get_be64(p + 12);
	s->qkey = uroce_get_be32(p + 20);
	memcpy(s->info, p + 24, UROCE_CM_SIDR_INFO_LEN);
	memcpy(s->private_data, p + UROCE_CM_SIDR_REP_PRIV_OFF, UROCE_CM_SIDR_REP_PRIV_LEN);
	return UROCE_CM_MSG_LEN;
}

int uroce_cm_sidr_rep_encode(uint8_t *p, size_t cap, const struct uroce_cm_sidr_rep *s)
{
	if (cap < UROCE_CM_MSG_LEN)
		return -ENOSPC;
	uroce_put_be32(p + 0, s->request_id);
	p[4] = s->status;
	p[5] = s->info_len;
	uroce_put_be16(p + 6, 0);
	put_be24m(p + 8, s->qpn);
	p[11] = 0;
	uroce_put_be64(p + 12, s->service_id);
	uroce_put_be32(p + 20, s->qkey);
	memcpy(p + 24, s->info, UROCE_CM_SIDR_INFO_LEN);
	memcpy(p + UROCE_CM_SIDR_REP_PRIV_OFF, s->private_data, UROCE_CM_SIDR_REP_PRIV_LEN);
	return UROCE_CM_MSG_LEN;
}

/* ---- Whole MADs ---- */

int uroce_cm_mad_decode(struct uroce_cm_mad *m, const uint8_t *p, size_t len)
{
	const uint8_t *msg;
	int rc;

	if (len < UROCE_MAD_LEN)
		return -EBADMSG;
	msg = p + UROCE_MAD_HDR_LEN;
	rc = uroce_mad_hdr_decode(&m->hdr, p, len);
	if (rc < 0)
		return rc;
	if (m->hdr.mgmt_class != UROCE_MGMT_CLASS_CM)
		return -EPROTO;
	switch (m->hdr.attr_id) {
#define UROCE_CM_MAD_DEC(NAME, name)                                                              \
	case UROCE_CM_ATTR_##NAME:                                                                \
		rc = uroce_cm_##name##_decode(&m->u.name, msg, UROCE_CM_MSG_LEN);                 \
		break;
		UROCE_CM_MSGS(UROCE_CM_MAD_DEC)
#undef UROCE_CM_MAD_DEC
	default:
		return -EOPNOTSUPP;
	}
	return rc < 0 ? rc : UROCE_MAD_LEN;
}

static int cm_attr_has_codec(uint16_t attr_id)
{
	switch (attr_id) {
#define UROCE_CM_MAD_HAS(NAME, name)                                                              \
	case UROCE_CM_ATTR_##NAME:                                                                \
		return 1;
		UROCE_CM_MSGS(UROCE_CM_MAD_HAS)
#undef UROCE_CM_MAD_HAS
	default:
		return 0;
	}
}

int uroce_cm_mad_encode(uint8_t *p, size_t cap, const struct uroce_cm_mad *m)
{
	uint8_t *msg;
	int rc;

	if (!cm_attr_has_codec(m->hdr.attr_id))
		return -EOPNOTSUPP;
	if (cap < UROCE_MAD_LEN)
		return -ENOSPC;
	msg = p + UROCE_MAD_HDR_LEN;
	rc = uroce_mad_hdr_encode(p, cap, &m->hdr);
	if (rc < 0)
		return rc;
	switch (m->hdr.attr_id) {
#define UROCE_CM_MAD_ENC(NAME, name)                                                              \
	case UROCE_CM_ATTR_##NAME:                                                                \
		rc = uroce_cm_##name##_encode(msg, UROCE_CM_MSG_LEN, &m->u.name);                 \
		break;
		UROCE_CM_MSGS(UROCE_CM_MAD_ENC)
#undef UROCE_CM_MAD_ENC
	default:
		return -EOPNOTSUPP;
	}
	return rc < 0 ? rc : UROCE_MAD_LEN;
}
