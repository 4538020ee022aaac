/* SPDX-License-Identifier: MIT */
/*
 * One line of text per RoCE frame, for people reading captures: encapsulation and addresses,
 * opcode, destination QP, PSN, the fields of the extension headers, the CM message of a QP1 MAD,
 * and the ICRC verdict. `uroce pcap-check` prints these lines; a live capture tap can print the
 * same ones.
 *
 * Every function takes a frame as uroce_frame_decode() left it, after it returned 0 or -EBADMSG
 * (f->encap is not UROCE_ENCAP_NONE). The frame's pointers (l3, roce, t.payload) point into the
 * caller's packet buffer, which must still be valid. Nothing here allocates or keeps a pointer.
 */
#ifndef UROCE_TOOLS_FRAME_PRINT_H
#define UROCE_TOOLS_FRAME_PRINT_H

#include <stdint.h>
#include <stdio.h>

#include "wire/packet.h"

enum uroce_frame_verdict {
	UROCE_VERDICT_OK,	 /* well formed, carries the ICRC computed over its bytes */
	UROCE_VERDICT_ICRC_BAD,	 /* well formed, carries another ICRC */
	UROCE_VERDICT_MALFORMED, /* rejected by the decoder: f->err says why */
};

/*
 * The verdict on f. For UROCE_VERDICT_ICRC_BAD and UROCE_VERDICT_OK, *computed (if not NULL) is
 * set to the ICRC computed over the frame; the carried one is f->t.icrc.
 */
enum uroce_frame_verdict uroce_frame_check(const struct uroce_frame *f, uint32_t *computed);

/*
 * "v2/IPv4 198.18.0.3 > 198.18.0.2": the encapsulation ("v1", "v2/IPv4", "v2/IPv6"), the
 * 802.1Q tag if any (" vlan 100 pcp 3"), then source > destination (IPv4 dotted, IPv6 and v1 GIDs
 * in RFC 5952 form). A v1 frame rejected while reading its GRH has no trustworthy GIDs: they are
 * left out. No newline.
 */
void uroce_frame_print_route(FILE *out, const struct uroce_frame *f);

/*
 * The whole line, newline included: the route, then for a well-formed frame
 *   OPCODE-NAME QP=0x000016 PSN=123 [SE] [AckReq] [FECN] [BECN] [pkey=0x....] [tver=N]
 *   [DETH(...)] [FETH(...)] [RETH(...)] [AtomicETH(...)] [AETH(...)] [AtomicAckETH(...)]
 *   [ImmDt(...)] [IETH(...)] [payload=N] [CM ConnectRequest (REQ)] ICRC ok
 * where the ICRC part is "ICRC ok" or "ICRC BAD (carried xxxxxxxx, computed yyyyyyyy)"; for a
 * malformed frame "MALFORMED: <reason>". Returns the verdict, as uroce_frame_check() does.
 */
enum uroce_frame_verdict uroce_frame_print(FILE *out, const struct uroce_frame *f);

#endif
