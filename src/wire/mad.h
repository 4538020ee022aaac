/* SPDX-License-Identifier: MIT */
/*
 * MAD common header (IBTA 13.4.2; include/rdma/ib_mad.h) and the names of the connection
 * manager's attributes. The CM message codecs themselves belong to src/cm.
 */
#ifndef UROCE_WIRE_MAD_H
#define UROCE_WIRE_MAD_H

#include <stddef.h>
#include <stdint.h>

#define UROCE_MAD_LEN	      256
#define UROCE_MAD_HDR_LEN     24
#define UROCE_MGMT_CLASS_CM   0x07
#define UROCE_GSI_QKEY	      0x80010000u
#define UROCE_GSI_QPN	      1

struct uroce_mad_hdr {
	uint8_t base_version;
	uint8_t mgmt_class;
	uint8_t class_version;
	uint8_t method; /* R bit (0x80) and method */
	uint16_t status;
	uint16_t class_specific;
	uint64_t tid;
	uint16_t attr_id;
	uint16_t resv;
	uint32_t attr_mod;
};

/* CM attribute IDs (include/rdma/ibta_vol1_c12.h). */
#define UROCE_CM_ATTRS(X)                                                                         \
	X(CLASS_PORT_INFO, 0x0001, "ClassPortInfo")                                               \
	X(REQ, 0x0010, "ConnectRequest")                                                          \
	X(MRA, 0x0011, "MsgRcptAck")                                                              \
	X(REJ, 0x0012, "ConnectReject")                                                           \
	X(REP, 0x0013, "ConnectReply")                                                            \
	X(RTU, 0x0014, "ReadyToUse")                                                              \
	X(DREQ, 0x0015, "DisconnectRequest")                                                      \
	X(DREP, 0x0016, "DisconnectReply")                                                        \
	X(SIDR_REQ, 0x0017, "ServiceIDResReq")                                                    \
	X(SIDR_REP, 0x0018, "ServiceIDResReqResp")                                                \
	X(LAP, 0x0019, "LoadAlternatePath")                                                       \
	X(APR, 0x001A, "AlternatePathResponse")

enum uroce_cm_attr {
#define UROCE_CM_ATTR_ENUM(name, val, label) UROCE_CM_ATTR_##name = (val),
	UROCE_CM_ATTRS(UROCE_CM_ATTR_ENUM)
#undef UROCE_CM_ATTR_ENUM
};

/* Returns 24, or -EBADMSG when len < 24. */
int uroce_mad_hdr_decode(struct uroce_mad_hdr *h, const uint8_t *p, size_t len);
/* Returns 24, or -ENOSPC. */
int uroce_mad_hdr_encode(uint8_t *p, size_t cap, const struct uroce_mad_hdr *h);

/* Wireshark's name of a CM attribute ("ConnectRequest", ...), or NULL if unknown. */
const char *uroce_cm_attr_name(uint16_t attr_id);
/* Short name ("REQ", "REP", ...), or NULL if unknown. */
const char *uroce_cm_attr_short(uint16_t attr_id);

#endif
