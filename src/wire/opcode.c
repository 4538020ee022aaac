/* SPDX-License-Identifier: MIT */
#include "wire/opcode.h"

/* Sum of the header sizes named in a header set; usable in constant expressions. */
#define HDRS_LEN(h)                                                                               \
	(((h) & UROCE_HDR_DETH ? UROCE_DETH_LEN : 0) + ((h) & UROCE_HDR_FETH ? UROCE_FETH_LEN : 0) + \
	 ((h) & UROCE_HDR_RETH ? UROCE_RETH_LEN : 0) +                                            \
	 ((h) & UROCE_HDR_ATMETH ? UROCE_ATMETH_LEN : 0) +                                        \
	 ((h) & UROCE_HDR_AETH ? UROCE_AETH_LEN : 0) +                                            \
	 ((h) & UROCE_HDR_ATMACK ? UROCE_ATMACK_LEN : 0) +                                        \
	 ((h) & UROCE_HDR_IMMDT ? UROCE_IMMDT_LEN : 0) +                                          \
	 ((h) & UROCE_HDR_IETH ? UROCE_IETH_LEN : 0) + ((h) & UROCE_HDR_CNP ? UROCE_CNP_LEN : 0))

const struct uroce_opinfo uroce_opinfo[256] = {
#define UROCE_OP_INFO(name_, val, label, hdrs_, flags_)                                           \
	[val] = { .name = label,                                                                  \
		  .hdrs = (hdrs_),                                                                \
		  .flags = (flags_),                                                              \
		  .hdr_len = UROCE_BTH_LEN + HDRS_LEN(hdrs_) },
	UROCE_OPCODES(UROCE_OP_INFO)
#undef UROCE_OP_INFO
};

unsigned uroce_hdrs_len(unsigned hdrs)
{
	return HDRS_LEN(hdrs);
}
