/* SPDX-License-Identifier: MIT */
/*
 * Connection manager messages (IBTA vol 1 ch. 12; include/rdma/ibta_vol1_c12.h): REQ, MRA, REJ,
 * REP, RTU, DREQ, DREP, SIDR_REQ and SIDR_REP, as host-order structs, and their codecs over the
 * 232-byte CM message that follows the 24-byte MAD header (roce-reference.md 2.1, 2.2).
 *
 * Pure: no I/O, no allocation. Every struct owns a copy of the message's whole private-data
 * area (the length is fixed per message type: UROCE_CM_<MSG>_PRIV_LEN), so a decoded struct
 * does not point into the buffer it came from.
 *
 * Bit fields are listed MSB first, as on the wire. The encoders mask every value to its field
 * width and write zeros in reserved bits; the decoders ignore reserved bits.
 *
 * Return values, for every message:
 *   uroce_cm_<msg>_decode(out, p, len): UROCE_CM_MSG_LEN (232), or -EBADMSG when len < 232.
 *   uroce_cm_<msg>_encode(p, cap, in):  UROCE_CM_MSG_LEN (232), or -ENOSPC when cap < 232
 *                                      (nothing is written then).
 * p is the first byte of the CM message (MAD offset 24), not of the MAD.
 */
#ifndef UROCE_CM_MSG_H
#define UROCE_CM_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "wire/mad.h"

#define UROCE_CM_MSG_LEN 232 /* UMAD_LEN_DATA: the MAD after its 24-byte header */

/* Private-data areas: offset inside the CM message and length (roce-reference.md 2.2). */
#define UROCE_CM_REQ_PRIV_OFF	    140
#define UROCE_CM_REQ_PRIV_LEN	    92
#define UROCE_CM_MRA_PRIV_OFF	    10
#define UROCE_CM_MRA_PRIV_LEN	    222
#define UROCE_CM_REJ_PRIV_OFF	    84
#define UROCE_CM_REJ_PRIV_LEN	    148
#define UROCE_CM_REP_PRIV_OFF	    36
#define UROCE_CM_REP_PRIV_LEN	    196
#define UROCE_CM_RTU_PRIV_OFF	    8
#define UROCE_CM_RTU_PRIV_LEN	    224
#define UROCE_CM_DREQ_PRIV_OFF	    12
#define UROCE_CM_DREQ_PRIV_LEN	    220
#define UROCE_CM_DREP_PRIV_OFF	    8
#define UROCE_CM_DREP_PRIV_LEN	    224
#define UROCE_CM_SIDR_REQ_PRIV_OFF  16
#define UROCE_CM_SIDR_REQ_PRIV_LEN  216
#define UROCE_CM_SIDR_REP_PRIV_OFF  96
#define UROCE_CM_SIDR_REP_PRIV_LEN  136
#define UROCE_CM_ARI_LEN	    72 /* REJ additional reject information */
#define UROCE_CM_SIDR_INFO_LEN	    72 /* SIDR_REP additional information */

/* REQ transport service type (2 bits). */
enum uroce_cm_transport {
	UROCE_CM_TRANSPORT_RC = 0,
	UROCE_CM_TRANSPORT_UC = 1,
	UROCE_CM_TRANSPORT_RD = 2,
	UROCE_CM_TRANSPORT_XRC = 3,
};

/* MRA "message MRAed" and REJ "message rejected" (2 bits). */
enum uroce_cm_msg_ref {
	UROCE_CM_MSG_REF_REQ = 0,
	UROCE_CM_MSG_REF_REP = 1,
	UROCE_CM_MSG_REF_LAP = 2, /* MRA; for REJ, 2 means "other" */
};

/* REJ reasons (include/rdma/ib_cm.h enum ib_cm_rej_reason; roce-reference.md 2.2). */
#define UROCE_CM_REJ_REASONS(X)                                                                   \
	X(NO_QP, 1)                                                                               \
	X(NO_EEC, 2)                                                                              \
	X(NO_RESOURCES, 3)                                                                        \
	X(TIMEOUT, 4)                                                                             \
	X(UNSUPPORTED, 5)                                                                         \
	X(INVALID_COMM_ID, 6)                                                                     \
	X(INVALID_COMM_INSTANCE, 7)                                                               \
	X(INVALID_SERVICE_ID, 8)                                                                  \
	X(INVALID_TRANSPORT_TYPE, 9)                                                              \
	X(STALE_CONN, 10)                                                                         \
	X(RDC_NOT_EXIST, 11)                                                                      \
	X(INVALID_GID, 12)                                                                        \
	X(INVALID_LID, 13)                                                                        \
	X(INVALID_SL, 14)                                                                         \
	X(INVALID_TRAFFIC_CLASS, 15)                                                              \
	X(INVALID_HOP_LIMIT, 16)                                                                  \
	X(INVALID_PACKET_RATE, 17)                                                                \
	X(INVALID_ALT_GID, 18)                                                                    \
	X(INVALID_ALT_LID, 19)                                                                    \
	X(INVALID_ALT_SL, 20)                                                                     \
	X(INVALID_ALT_TRAFFIC_CLASS, 21)                                                          \
	X(INVALID_ALT_HOP_LIMIT, 22)                                                              \
	X(INVALID_ALT_PACKET_RATE, 23)                                                            \
	X(PORT_CM_REDIRECT, 24)                                                                   \
	X(PORT_REDIRECT, 25)                                                                      \
	X(INVALID_MTU, 26)                                                                        \
	X(INSUFFICIENT_RESP_RESOURCES, 27)                                                        \
	X(CONSUMER_DEFINED, 28)                                                                   \
	X(INVALID_RNR_RETRY, 29)                                                                  \
	X(DUPLICATE_LOCAL_COMM_ID, 30)                                                            \
	X(INVALID_CLASS_VERSION, 31)                                                              \
	X(INVALID_FLOW_LABEL, 32)                                                                 \
	X(INVALID_ALT_FLOW_LABEL, 33)                                                             \
	X(VENDOR_OPTION_NOT_SUPPORTED, 35)

enum uroce_cm_rej_reason {
#define UROCE_CM_REJ_ENUM(name, val) UROCE_CM_REJ_##name = (val),
	UROCE_CM_REJ_REASONS(UROCE_CM_REJ_ENUM)
#undef UROCE_CM_REJ_ENUM
};

/* Name of a REJ reason ("INVALID_SERVICE_ID", ...), or NULL if unknown. */
const char *uroce_cm_rej_reason_name(uint16_t reason);

/* One path of a REQ (primary at message offset 52, alternate at 96; 44 bytes each). */
struct uroce_cm_path {
	uint16_t local_lid;  /* RoCE: 0xFFFF when hop limit > 1 */
	uint16_t remote_lid;
	uint8_t local_gid[16];
	uint8_t remote_gid[16];
	uint32_t flow_label;	   /* 20 bits */
	uint8_t packet_rate;	   /* 6 bits */
	uint8_t traffic_class;
	uint8_t hop_limit;
	uint8_t sl;		   /* 4 bits */
	uint8_t subnet_local;	   /* 1 bit */
	uint8_t local_ack_timeout; /* 5 bits */
};

struct uroce_cm_req {
	uint32_t local_comm_id;
	uint64_t service_id;
	uint64_t local_ca_guid;
	uint32_t local_qkey;
	uint32_t local_qpn;		/* 24 bits */
	uint8_t responder_resources;
	uint32_t local_eecn;		/* 24 bits */
	uint8_t initiator_depth;
	uint32_t remote_eecn;		/* 24 bits */
	uint8_t remote_cm_resp_timeout; /* 5 bits */
	uint8_t transport_type;		/* 2 bits, enum uroce_cm_transport */
	uint8_t e2e_flow_control;	/* 1 bit */
	uint32_t starting_psn;		/* 24 bits: the PSN the REQ's sender receives on */
	uint8_t local_cm_resp_timeout;	/* 5 bits */
	uint8_t retry_count;		/* 3 bits */
	uint16_t pkey;
	uint8_t path_mtu;		/* 4 bits, IB MTU enum (3 = 1024) */
	uint8_t rdc_exists;		/* 1 bit */
	uint8_t rnr_retry_count;	/* 3 bits */
	uint8_t max_cm_retries;		/* 4 bits */
	uint8_t srq;			/* 1 bit */
	uint8_t ext_transport_type;	/* 3 bits */
	struct uroce_cm_path primary;
	struct uroce_cm_path alternate;
	uint8_t private_data[UROCE_CM_REQ_PRIV_LEN]; /* starts with the cma_hdr under rdma_cm */
};

struct uroce_cm_mra {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t msg_mraed;	 /* 2 bits, enum uroce_cm_msg_ref */
	uint8_t service_timeout; /* 5 bits */
	uint8_t private_data[UROCE_CM_MRA_PRIV_LEN];
};

struct uroce_cm_rej {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t msg_rejected;	 /* 2 bits, enum uroce_cm_msg_ref */
	uint8_t reject_info_len; /* 7 bits: bytes of ari that are meaningful */
	uint16_t reason;	 /* enum uroce_cm_rej_reason */
	uint8_t ari[UROCE_CM_ARI_LEN];
	uint8_t private_data[UROCE_CM_REJ_PRIV_LEN];
};

struct uroce_cm_rep {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint32_t local_qkey;
	uint32_t local_qpn;	   /* 24 bits */
	uint32_t local_eecn;	   /* 24 bits */
	uint32_t starting_psn;	   /* 24 bits: the PSN the REP's sender receives on */
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t target_ack_delay;  /* 5 bits */
	uint8_t failover_accepted; /* 2 bits */
	uint8_t e2e_flow_control;  /* 1 bit */
	uint8_t rnr_retry_count;   /* 3 bits */
	uint8_t srq;		   /* 1 bit */
	uint64_t local_ca_guid;
	uint8_t private_data[UROCE_CM_REP_PRIV_LEN];
};

struct uroce_cm_rtu {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t private_data[UROCE_CM_RTU_PRIV_LEN];
};

struct uroce_cm_dreq {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint32_t remote_qpn; /* 24 bits: remote QPN/EECN */
	uint8_t private_data[UROCE_CM_DREQ_PRIV_LEN];
};

struct uroce_cm_drep {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t private_data[UROCE_CM_DREP_PRIV_LEN];
};

struct uroce_cm_sidr_req {
	uint32_t request_id;
	uint16_t pkey;
	uint64_t service_id;
	uint8_t private_data[UROCE_CM_SIDR_REQ_PRIV_LEN]; /* starts with the cma_hdr under rdma_cm */
};

struct uroce_cm_sidr_rep {
	uint32_t request_id;
	uint8_t status;
	uint8_t info_len; /* bytes of info that are meaningful */
	uint32_t qpn;	  /* 24 bits */
	uint64_t service_id;
	uint32_t qkey;
	uint8_t info[UROCE_CM_SIDR_INFO_LEN];
	uint8_t private_data[UROCE_CM_SIDR_REP_PRIV_LEN];
};

/* The codecs (contract at the top of this file). */
#define UROCE_CM_MSGS(X)                                                                          \
	X(REQ, req)                                                                               \
	X(MRA, mra)                                                                               \
	X(REJ, rej)                                                                               \
	X(REP, rep)                                                                               \
	X(RTU, rtu)                                                                               \
	X(DREQ, dreq)                                                                             \
	X(DREP, drep)                                                                             \
	X(SIDR_REQ, sidr_req)                                                                     \
	X(SIDR_REP, sidr_rep)

#define UROCE_CM_MSG_PROTO(NAME, name)                                                            \
	int uroce_cm_##name##_decode(struct uroce_cm_##name *out, const uint8_t *p, size_t len);  \
	int uroce_cm_##name##_encode(uint8_t *p, size_t cap, const struct uroce_cm_##name *in);
UROCE_CM_MSGS(UROCE_CM_MSG_PROTO)
#undef UROCE_CM_MSG_PROTO

/* A whole CM MAD: the common header and the message its attribute ID names. */
struct uroce_cm_mad {
	struct uroce_mad_hdr hdr; /* hdr.attr_id selects the member of u */
	union {
		struct uroce_cm_req req;
		struct uroce_cm_mra mra;
		struct uroce_cm_rej rej;
		struct uroce_cm_rep rep;
		struct uroce_cm_rtu rtu;
		struct uroce_cm_dreq dreq;
		struct uroce_cm_drep drep;
		struct uroce_cm_sidr_req sidr_req;
		struct uroce_cm_sidr_rep sidr_rep;
	} u;
};

/*
 * Decode a 256-byte MAD. Returns UROCE_MAD_LEN (256); -EBADMSG when len < 256; -EPROTO when the
 * management class is not CM (0x07); -EOPNOTSUPP for a CM attribute without a codec here
 * (ClassPortInfo, LAP, APR, unknown IDs). After -EPROTO or -EOPNOTSUPP, m->hdr is valid.
 * Base version, class version and method are not checked: that is the caller's policy.
 */
int uroce_cm_mad_decode(struct uroce_cm_mad *m, const uint8_t *p, size_t len);

/*
 * Encode m->hdr and the member of m->u that m->hdr.attr_id names. Returns 256, -ENOSPC when
 * cap < 256, or -EOPNOTSUPP for an attribute without a codec (nothing is written then).
 */
int uroce_cm_mad_encode(uint8_t *p, size_t cap, const struct uroce_cm_mad *m);

#endif
