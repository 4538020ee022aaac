/* SPDX-License-Identifier: MIT */
/* BTH and extension headers (IBTA 9.2-9.3; layouts in rxe_hdr.h). */
#include <errno.h>

#include "wire/bytes.h"
#include "wire/hdr.h"
#include "wire/opcode.h"

int uroce_bth_decode(struct uroce_bth *h, const uint8_t *p, size_t len)
{
	if (len < UROCE_BTH_LEN)
		return -EBADMSG;
	h->opcode = p[0];
	h->se = p[1] & 0x80;
	h->mig = p[1] & 0x40;
	h->pad = (p[1] >> 4) & 3;
	h->tver = p[1] & 0x0F;
	h->pkey = uroce_get_be16(p + 2);
	h->fecn = p[4] & 0x80;
	h->becn = p[4] & 0x40;
	h->resv6 = p[4] & 0x3F;
	h->dqpn = uroce_get_be24(p + 5);
	h->ackreq = p[8] & 0x80;
	h->resv7 = p[8] & 0x7F;
	h->psn = uroce_get_be24(p + 9);
	return UROCE_BTH_LEN;
}

int uroce_bth_encode(uint8_t *p, size_t cap, const struct uroce_bth *h)
{
	if (cap < UROCE_BTH_LEN)
		return -ENOSPC;
	p[0] = h->opcode;
	p[1] = (uint8_t)((h->se ? 0x80 : 0) | (h->mig ? 0x40 : 0) | (h->pad & 3) << 4 |
			 (h->tver & 0x0F));
	uroce_put_be16(p + 2, h->pkey);
	p[4] = (uint8_t)((h->fecn ? 0x80 : 0) | (h->becn ? 0x40 : 0) | (h->resv6 & 0x3F));
	uroce_put_be24(p + 5, h->dqpn);
	p[8] = (uint8_t)((h->ackreq ? 0x80 : 0) | (h->resv7 & 0x7F));
	uroce_put_be24(p + 9, h->psn);
	return UROCE_BTH_LEN;
}

int uroce_deth_decode(struct uroce_deth *h, const uint8_t *p, size_t len)
{
	if (len < UROCE_DETH_LEN)
		return -EBADMSG;
	h->qkey = uroce_get_be32(p);
	h->resv = p[4];
	h->src_qp = uroce_get_be24(p + 5);
	return UROCE_DETH_LEN;
}

int uroce_deth_encode(uint8_t *p, size_t cap, const struct uroce_deth *h)
{
	if (cap < UROCE_DETH_LEN)
		return -ENOSPC;
	uroce_put_be32(p, h->qkey);
	p[4] = h->resv;
	uroce_put_be24(p + 5, h->src_qp);
	return UROCE_DETH_LEN;
}

int uroce_reth_decode(struct uroce_reth *h, const uint8_t *p, size_t len)
{
	if (len < UROCE_RETH_LEN)
		return -EBADMSG;
	h->va = uroce_get_be64(p);
	h->rkey = uroce_get_be32(p + 8);
	h->len = uroce_get_be32(p + 12);
	return UROCE_RETH_LEN;
}

int uroce_reth_encode(uint8_t *p, size_t cap, const struct uroce_reth *h)
{
	if (cap < UROCE_RETH_LEN)
		return -ENOSPC;
	uroce_put_be64(p, h->va);
	uroce_put_be32(p + 8, h->rkey);
	uroce_put_be32(p + 12, h->len);
	return UROCE_RETH_LEN;
}

int uroce_atmeth_decode(struct uroce_atmeth *h, const uint8_t *p, size_t len)
{
	if (len < UROCE_ATMETH_LEN)
		return -EBADMSG;
	h->va = uroce_get_be64(p);
	h->rkey = uroce_get_be32(p + 8);
	h->swap_add = uroce_get_be64(p + 12);
	h->compare = uroce_get_be64(p + 20);
	return UROCE_ATMETH_LEN;
}

int uroce_atmeth_encode(uint8_t *p, size_t cap, const struct uroce_atmeth *h)
{
	if (cap < UROCE_ATMETH_LEN)
		return -ENOSPC;
	uroce_put_be64(p, h->va);
	uroce_put_be32(p + 8, h->rkey);
	uroce_put_be64(p + 12, h->swap_add);
	uroce_put_be64(p + 20, h->compare);
	return UROCE_ATMETH_LEN;
}

int uroce_aeth_decode(struct uroce_aeth *h, const uint8_t *p, size_t len)
{
	if (len < UROCE_AETH_LEN)
		return -EBADMSG;
	h->syndrome = p[0];
	h->msn = uroce_get_be24(p + 1);
	return UROCE_AETH_LEN;
}

int uroce_aeth_encode(uint8_t *p, size_t cap, const struct uroce_aeth *h)
{
	if (cap < UROCE_AETH_LEN)
		return -ENOSPC;
	p[0] = h->syndrome;
	uroce_put_be24(p + 1, h->msn);
	return UROCE_AETH_LEN;
}

int uroce_be64_decode(uint64_t *v, const uint8_t *p, size_t len)
{
	if (len < 8)
		return -EBADMSG;
	*v = uroce_get_be64(p);
	return 8;
}

int uroce_be64_encode(uint8_t *p, size_t cap, uint64_t v)
{
	if (cap < 8)
		return -ENOSPC;
	uroce_put_be64(p, v);
	return 8;
}

int uroce_be32_decode(uint32_t *v, const uint8_t *p, size_t len)
{
	if (len < 4)
		return -EBADMSG;
	*v = uroce_get_be32(p);
	return 4;
}

int uroce_be32_encode(uint8_t *p, size_t cap, uint32_t v)
{
	if (cap < 4)
		return -ENOSPC;
	uroce_put_be32(p, v);
	return 4;
}
