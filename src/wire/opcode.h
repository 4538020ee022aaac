/* SPDX-License-Identifier: MIT */
/*
 * The BTH opcode table (IBTA 9.2, table 38; rxe_opcode.c), one X-macro list that drives both
 * parsing and building: which extension headers each opcode carries (in wire order), whether it
 * carries payload, its place in a message (first/middle/last/only) and its role.
 */
#ifndef UROCE_WIRE_OPCODE_H
#define UROCE_WIRE_OPCODE_H

#include <stdbool.h>
#include <stdint.h>

/* Extension headers, in the order they follow the BTH on the wire. */
enum uroce_hdr_bit {
	UROCE_HDR_DETH = 1u << 0,   /* 8: Q_Key, SrcQP */
	UROCE_HDR_FETH = 1u << 1,   /* 4: flush type */
	UROCE_HDR_RETH = 1u << 2,   /* 16: VA, R_Key, DMA length */
	UROCE_HDR_ATMETH = 1u << 3, /* 28: VA, R_Key, swap/add, compare */
	UROCE_HDR_AETH = 1u << 4,   /* 4: syndrome, MSN */
	UROCE_HDR_ATMACK = 1u << 5, /* 8: original remote value */
	UROCE_HDR_IMMDT = 1u << 6,  /* 4: immediate data */
	UROCE_HDR_IETH = 1u << 7,   /* 4: R_Key to invalidate */
	UROCE_HDR_CNP = 1u << 8,    /* 16 reserved bytes of a RoCE v2 CNP */
};

#define UROCE_DETH_LEN	 8
#define UROCE_FETH_LEN	 4
#define UROCE_RETH_LEN	 16
#define UROCE_ATMETH_LEN 28
#define UROCE_AETH_LEN	 4
#define UROCE_ATMACK_LEN 8
#define UROCE_IMMDT_LEN	 4
#define UROCE_IETH_LEN	 4
#define UROCE_CNP_LEN	 16
#define UROCE_BTH_LEN	 12
#define UROCE_ICRC_LEN	 4

/* Opcode properties. */
enum uroce_op_flag {
	UROCE_OPF_FIRST = 1u << 0,   /* first packet of a message (ONLY = FIRST | LAST) */
	UROCE_OPF_MIDDLE = 1u << 1,
	UROCE_OPF_LAST = 1u << 2,
	UROCE_OPF_PAYLOAD = 1u << 3, /* may carry payload */
	UROCE_OPF_REQ = 1u << 4,     /* sent by a requester */
	UROCE_OPF_RESP = 1u << 5,    /* sent by a responder (ACK, read/atomic response) */
	UROCE_OPF_SEND = 1u << 6,
	UROCE_OPF_WRITE = 1u << 7,
	UROCE_OPF_READ = 1u << 8,
	UROCE_OPF_ATOMIC = 1u << 9,
	UROCE_OPF_IMM = 1u << 10,
	UROCE_OPF_INV = 1u << 11,
	UROCE_OPF_NEEDS_ACK = 1u << 12, /* RC request: the responder answers (ACK or response) */
	UROCE_OPF_FLUSH = 1u << 13,
	UROCE_OPF_ATOMIC_WRITE = 1u << 14,
};

#define UROCE_OPF_ONLY (UROCE_OPF_FIRST | UROCE_OPF_LAST)

/* Transport classes: the top three bits of the opcode. */
enum uroce_opclass {
	UROCE_OPCLASS_RC = 0x00,
	UROCE_OPCLASS_UC = 0x20,
	UROCE_OPCLASS_RD = 0x40,
	UROCE_OPCLASS_UD = 0x60,
	UROCE_OPCLASS_CNP = 0x80,
	UROCE_OPCLASS_XRC = 0xA0,
};

#define UROCE_F_RQ (UROCE_OPF_REQ | UROCE_OPF_NEEDS_ACK)
#define UROCE_F_SND (UROCE_OPF_SEND | UROCE_OPF_PAYLOAD)
#define UROCE_F_WR (UROCE_OPF_WRITE | UROCE_OPF_PAYLOAD)
#define UROCE_F_RR (UROCE_OPF_RESP | UROCE_OPF_READ | UROCE_OPF_PAYLOAD)

/*
 * X(name, value, label, headers, flags). Labels follow Wireshark's "infiniband" dissector.
 * The per-class lists are written once and instantiated for RC and UC with their prefix.
 */
#define UROCE_SEND_WRITE_OPS(X, C, c, req)                                                        \
	X(C##_SEND_FIRST, c | 0x00, #C " Send First", 0, UROCE_F_SND | req | UROCE_OPF_FIRST)     \
	X(C##_SEND_MIDDLE, c | 0x01, #C " Send Middle", 0, UROCE_F_SND | req | UROCE_OPF_MIDDLE) \
	X(C##_SEND_LAST, c | 0x02, #C " Send Last", 0, UROCE_F_SND | req | UROCE_OPF_LAST)       \
	X(C##_SEND_LAST_IMM, c | 0x03, #C " Send Last Immediate", UROCE_HDR_IMMDT,               \
	  UROCE_F_SND | req | UROCE_OPF_LAST | UROCE_OPF_IMM)                                     \
	X(C##_SEND_ONLY, c | 0x04, #C " Send Only", 0, UROCE_F_SND | req | UROCE_OPF_ONLY)       \
	X(C##_SEND_ONLY_IMM, c | 0x05, #C " Send Only Immediate", UROCE_HDR_IMMDT,               \
	  UROCE_F_SND | req | UROCE_OPF_ONLY | UROCE_OPF_IMM)                                     \
	X(C##_WRITE_FIRST, c | 0x06, #C " RDMA Write First", UROCE_HDR_RETH,                     \
	  UROCE_F_WR | req | UROCE_OPF_FIRST)                                                     \
	X(C##_WRITE_MIDDLE, c | 0x07, #C " RDMA Write Middle", 0, UROCE_F_WR | req | UROCE_OPF_MIDDLE) \
	X(C##_WRITE_LAST, c | 0x08, #C " RDMA Write Last", 0, UROCE_F_WR | req | UROCE_OPF_LAST) \
	X(C##_WRITE_LAST_IMM, c | 0x09, #C " RDMA Write Last Immediate", UROCE_HDR_IMMDT,        \
	  UROCE_F_WR | req | UROCE_OPF_LAST | UROCE_OPF_IMM)                                      \
	X(C##_WRITE_ONLY, c | 0x0A, #C " RDMA Write Only", UROCE_HDR_RETH,                       \
	  UROCE_F_WR | req | UROCE_OPF_ONLY)                                                      \
	X(C##_WRITE_ONLY_IMM, c | 0x0B, #C " RDMA Write Only Immediate",                         \
	  UROCE_HDR_RETH | UROCE_HDR_IMMDT, UROCE_F_WR | req | UROCE_OPF_ONLY | UROCE_OPF_IMM)

#define UROCE_OPCODES(X)                                                                          \
	UROCE_SEND_WRITE_OPS(X, RC, 0x00, UROCE_F_RQ)                                              \
	X(RC_READ_REQ, 0x0C, "RC RDMA Read Request", UROCE_HDR_RETH,                              \
	  UROCE_F_RQ | UROCE_OPF_READ | UROCE_OPF_ONLY)                                          \
	X(RC_READ_RESP_FIRST, 0x0D, "RC RDMA Read Response First", UROCE_HDR_AETH,                \
	  UROCE_F_RR | UROCE_OPF_FIRST)                                                          \
	X(RC_READ_RESP_MIDDLE, 0x0E, "RC RDMA Read Response Middle", 0, UROCE_F_RR | UROCE_OPF_MIDDLE) \
	X(RC_READ_RESP_LAST, 0x0F, "RC RDMA Read Response Last", UROCE_HDR_AETH,                  \
	  UROCE_F_RR | UROCE_OPF_LAST)                                                           \
	X(RC_READ_RESP_ONLY, 0x10, "RC RDMA Read Response Only", UROCE_HDR_AETH,                  \
	  UROCE_F_RR | UROCE_OPF_ONLY)                                                           \
	X(RC_ACK, 0x11, "RC Acknowledge", UROCE_HDR_AETH, UROCE_OPF_RESP | UROCE_OPF_ONLY)        \
	X(RC_ATOMIC_ACK, 0x12, "RC Atomic Acknowledge", UROCE_HDR_AETH | UROCE_HDR_ATMACK,        \
	  UROCE_OPF_RESP | UROCE_OPF_ATOMIC | UROCE_OPF_ONLY)                                    \
	X(RC_CMP_SWAP, 0x13, "RC CmpSwap", UROCE_HDR_ATMETH,                                      \
	  UROCE_F_RQ | UROCE_OPF_ATOMIC | UROCE_OPF_ONLY)                                        \
	X(RC_FETCH_ADD, 0x14, "RC FetchAdd", UROCE_HDR_ATMETH,                                    \
	  UROCE_F_RQ | UROCE_OPF_ATOMIC | UROCE_OPF_ONLY)                                        \
	X(RC_SEND_LAST_INV, 0x16, "RC Send Last Invalidate", UROCE_HDR_IETH,                      \
	  UROCE_F_SND | UROCE_F_RQ | UROCE_OPF_LAST | UROCE_OPF_INV)                             \
	X(RC_SEND_ONLY_INV, 0x17, "RC Send Only Invalidate", UROCE_HDR_IETH,                      \
	  UROCE_F_SND | UROCE_F_RQ | UROCE_OPF_ONLY | UROCE_OPF_INV)                             \
	X(RC_FLUSH, 0x1C, "RC Flush", UROCE_HDR_FETH | UROCE_HDR_RETH,                            \
	  UROCE_F_RQ | UROCE_OPF_FLUSH | UROCE_OPF_ONLY)                                         \
	X(RC_ATOMIC_WRITE, 0x1D, "RC Atomic Write", UROCE_HDR_RETH,                               \
	  UROCE_F_RQ | UROCE_OPF_PAYLOAD | UROCE_OPF_ATOMIC_WRITE | UROCE_OPF_ONLY)              \
	UROCE_SEND_WRITE_OPS(X, UC, 0x20, UROCE_OPF_REQ)                                           \
	X(UD_SEND_ONLY, 0x64, "UD Send Only", UROCE_HDR_DETH,                                     \
	  UROCE_F_SND | UROCE_OPF_REQ | UROCE_OPF_ONLY)                                          \
	X(UD_SEND_ONLY_IMM, 0x65, "UD Send Only Immediate", UROCE_HDR_DETH | UROCE_HDR_IMMDT,     \
	  UROCE_F_SND | UROCE_OPF_REQ | UROCE_OPF_ONLY | UROCE_OPF_IMM)                          \
	X(CNP, 0x81, "CNP", UROCE_HDR_CNP, UROCE_OPF_ONLY)

enum uroce_opcode {
#define UROCE_OP_ENUM(name, val, label, hdrs, flags) UROCE_OP_##name = (val),
	UROCE_OPCODES(UROCE_OP_ENUM)
#undef UROCE_OP_ENUM
};

struct uroce_opinfo {
	const char *name;  /* NULL: opcode not valid on RoCE */
	uint16_t hdrs;     /* enum uroce_hdr_bit set */
	uint16_t flags;    /* enum uroce_op_flag set */
	uint8_t hdr_len;   /* BTH + extension headers, bytes */
};

/* Properties of every opcode 0..255; entries for unknown opcodes have name == NULL. */
extern const struct uroce_opinfo uroce_opinfo[256];

static inline bool uroce_op_valid(uint8_t op)
{
	return uroce_opinfo[op].name != 0;
}

static inline enum uroce_opclass uroce_op_class(uint8_t op)
{
	return (enum uroce_opclass)(op & 0xE0);
}

/* Length of the given extension header set, in bytes (BTH excluded). */
unsigned uroce_hdrs_len(unsigned hdrs);

#endif
