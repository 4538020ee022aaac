/* SPDX-License-Identifier: MIT */
#include <errno.h>

#include "wire/bytes.h"
#include "wire/mad.h"

int uroce_mad_hdr_decode(struct uroce_mad_hdr *h, const uint8_t *p, size_t len)
{
	if (len < UROCE_MAD_HDR_LEN)
		return -EBADMSG;
	h->base_version = p[0];
	h->mgmt_class = p[1];
	h->class_version = p[2];
	h->method = p[3];
	h->status = uroce_get_be16(p + 4);
	h->class_specific = uroce_get_be16(p + 6);
	h->tid = uroce_get_be64(p + 8);
	h->attr_id = uroce_get_be16(p + 16);
	h->resv = uroce_get_be16(p + 18);
	h->attr_mod = uroce_get_be32(p + 20);
	return UROCE_MAD_HDR_LEN;
}

int uroce_mad_hdr_encode(uint8_t *p, size_t cap, const struct uroce_mad_hdr *h)
{
	if (cap < UROCE_MAD_HDR_LEN)
		return -ENOSPC;
	p[0] = h->base_version;
	p[1] = h->mgmt_class;
	p[2] = h->class_version;
	p[3] = h->method;
	uroce_put_be16(p + 4, h->status);
	uroce_put_be16(p + 6, h->class_specific);
	uroce_put_be64(p + 8, h->tid);
	uroce_put_be16(p + 16, h->attr_id);
	uroce_put_be16(p + 18, h->resv);
	uroce_put_be32(p + 20, h->attr_mod);
	return UROCE_MAD_HDR_LEN;
}

const char *uroce_cm_attr_name(uint16_t attr_id)
{
	switch (attr_id) {
#define UROCE_CM_ATTR_NAME(name, val, label)                                                      \
	case val:                                                                                 \
		return label;
		UROCE_CM_ATTRS(UROCE_CM_ATTR_NAME)
#undef UROCE_CM_ATTR_NAME
	default:
		return NULL;
	}
}

const char *uroce_cm_attr_short(uint16_t attr_id)
{
	switch (attr_id) {
#define UROCE_CM_ATTR_SHORT(name, val, label)                                                     \
	case val:                                                                                 \
		return #name;
		UROCE_CM_ATTRS(UROCE_CM_ATTR_SHORT)
#undef UROCE_CM_ATTR_SHORT
	default:
		return NULL;
	}
}
