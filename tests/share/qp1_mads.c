/* SPDX-License-Identifier: MIT */
/* Crafted QP1 datagrams and frames (qp1_mads.h). */
#include <string.h>

#include "qp1_mads.h"

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

void gsi_payload(uint8_t *p, uint8_t cls, uint16_t attr, uint32_t w0, uint32_t w4, uint64_t sid)
{
	memset(p, 0, GSI_LEN);
	p[0] = 0x64; /* UD SEND only */
	p[2] = p[3] = 0xFF;
	p[7] = 1;		      /* destination QP 1 */
	put_be32(p + 8, 0x123456);    /* PSN */
	put_be32(p + 12, 0x80010000); /* DETH Q_Key */
	p[19] = 1;		      /* DETH source QP 1 */
	p[20] = 1;		      /* MAD base version */
	p[21] = cls;		      /* management class */
	p[22] = 2;		      /* class version */
	p[23] = 3;		      /* method: Send */
	put_be32(p + 28, 0xA1B2C3D4); /* TID */
	p[36] = (uint8_t)(attr >> 8); /* attribute ID */
	p[37] = (uint8_t)attr;
	put_be32(p + 44, w0);
	put_be32(p + 48, w4);
	put_be32(p + 52, (uint32_t)(sid >> 32));
	put_be32(p + 56, (uint32_t)sid);
	put_be32(p + GSI_LEN - 4, 0xDEADBEEF); /* ICRC */
}

uint32_t v1_frame(uint8_t *f, bool vlan, const uint8_t *payload, uint32_t plen)
{
	uint32_t e = vlan ? 18 : 14;

	memset(f, 0, e + 40);
	memcpy(f, "\x02\0\0\0\0\1\x02\0\0\0\0\2", 12);
	if (vlan) {
		f[12] = 0x81;
		f[15] = 0x07;
	}
	f[e - 2] = 0x89;
	f[e - 1] = 0x15;
	f[e] = 0x60;
	f[e + 4] = (uint8_t)(plen >> 8);
	f[e + 5] = (uint8_t)plen;
	f[e + 6] = 0x1B;
	f[e + 7] = 1;
	memcpy(f + e + 40, payload, plen);
	return e + 40 + plen;
}
