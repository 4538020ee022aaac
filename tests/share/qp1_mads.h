/* SPDX-License-Identifier: MIT */
/*
 * Crafted QP1 (GSI) traffic for the device-sharing tests: CM MADs as RoCE v2 UDP payloads and as
 * RoCE v1 frames, with the fields the steering program and the v1 socket filters look at (class,
 * attribute, comm IDs, service ID) set as asked.
 */
#ifndef UROCE_TESTS_SHARE_QP1_MADS_H
#define UROCE_TESTS_SHARE_QP1_MADS_H

#include <stdbool.h>
#include <stdint.h>

#define GSI_LEN (12 + 8 + 256 + 4) /* BTH, DETH, MAD, ICRC: a RoCE v2 UDP payload */

/* CM attribute IDs (IBTA 12.6). */
#define CM_REQ	    0x10
#define CM_MRA	    0x11
#define CM_REJ	    0x12
#define CM_REP	    0x13
#define CM_RTU	    0x14
#define CM_DREQ	    0x15
#define CM_DREP	    0x16
#define CM_SIDR_REQ 0x17
#define CM_SIDR_REP 0x18
#define CM_LAP	    0x19

/* RDMA CM's service ID for a TCP port space port. */
#define SID_TCP(port) (0x0000000001060000ull | (port))

/* A comm ID as the CM of QPN slot `slot` issues it (the slot in its top 12 bits). */
static inline uint32_t comm_id(uint32_t slot, uint32_t low)
{
	return slot << 20 | (low & 0xFFFFF);
}

/*
 * Write into p (GSI_LEN bytes) a UD SEND to QP1 carrying a MAD of class cls, attribute attr,
 * whose CM message has w0 at offset 0 (local comm ID, SIDR request ID), w4 at 4 (remote comm ID)
 * and sid at 8 (service ID). The ICRC is not computed (0xDEADBEEF: a receiving process counts an
 * ICRC drop).
 */
void gsi_payload(uint8_t *p, uint8_t cls, uint16_t attr, uint32_t w0, uint32_t w4, uint64_t sid);

/*
 * Write into f the RoCE v1 frame carrying payload[0..plen): Ethernet (802.1Q tagged, VID 7,
 * when vlan) from 02:00:00:00:00:02 to 02:00:00:00:00:01, then a GRH with zero GIDs. f needs
 * 18 + 40 + plen bytes. Returns the frame's length.
 */
uint32_t v1_frame(uint8_t *f, bool vlan, const uint8_t *payload, uint32_t plen);

#endif
