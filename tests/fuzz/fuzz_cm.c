/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the connection manager's codecs (src/cm). One input is tried as:
 *  1. a whole CM MAD (uroce_cm_mad_decode). When it decodes, encoding gives 256 bytes that decode
 *     again to an encoding identical to the first (reserved bits are dropped once, then stable);
 *  2. a REQ's private data: the 36-byte RDMA CM IP header (uroce_cma_hdr_decode), re-encoded to
 *     the same bytes but for the reserved low nibble of byte 1;
 *  3. a service ID (the first 8 bytes) split into port space and port and joined again.
 * Any broken invariant aborts (a crash for libFuzzer, a failure for the replay). Seeds: the CM
 * MADs of the captures in tests/vectors (corpus/cm).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cma.h"
#include "cm/msg.h"
#include "wire/bytes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ASSERT(cond)                                                                    \
	do {                                                                                 \
		if (!(cond)) {                                                               \
			fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, __LINE__, \
				#cond);                                                      \
			abort();                                                             \
		}                                                                            \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct uroce_cm_mad m, m2;
	uint8_t e1[UROCE_MAD_LEN], e2[UROCE_MAD_LEN];

	if (uroce_cm_mad_decode(&m, data, size) == UROCE_MAD_LEN) {
		FUZZ_ASSERT(uroce_cm_mad_encode(e1, sizeof(e1), &m) == UROCE_MAD_LEN);
		FUZZ_ASSERT(uroce_cm_mad_decode(&m2, e1, sizeof(e1)) == UROCE_MAD_LEN);
		FUZZ_ASSERT(uroce_cm_mad_encode(e2, sizeof(e2), &m2) == UROCE_MAD_LEN);
		FUZZ_ASSERT(memcmp(e1, e2, sizeof(e1)) == 0);
		FUZZ_ASSERT(m2.hdr.attr_id == m.hdr.attr_id);
	}

	struct uroce_cma_hdr h;
	uint8_t c[UROCE_CMA_HDR_LEN];

	if (uroce_cma_hdr_decode(&h, data, size) == UROCE_CMA_HDR_LEN) {
		FUZZ_ASSERT(uroce_cma_hdr_encode(c, sizeof(c), &h) == UROCE_CMA_HDR_LEN);
		FUZZ_ASSERT(c[0] == data[0] && (c[1] & 0xF0) == (data[1] & 0xF0));
		if (h.ip_version == 6)
			FUZZ_ASSERT(memcmp(c + 2, data + 2, UROCE_CMA_HDR_LEN - 2) == 0);
		else
			FUZZ_ASSERT(memcmp(c + 2, data + 2, 2) == 0 &&
				    memcmp(c + 16, data + 16, 4) == 0 &&
				    memcmp(c + 32, data + 32, 4) == 0);
	}

	if (size >= 8) {
		uint64_t sid = uroce_get_be64(data);
		uint16_t ps, port;

		if (uroce_cma_service_id_split(sid, &ps, &port) == 0)
			FUZZ_ASSERT(uroce_cma_service_id(ps, port) == sid);
	}
	return 0;
}
