/* SPDX-License-Identifier: MIT */
/*
 * The pcap tap: a wrapper backend that writes every frame sent and received to a capture file
 * (UROCE_PCAP; wrap_env.h), rebuilt whole so that the captures verify with `uroce pcap-check`.
 */
#ifndef UROCE_HOST_IO_PCAP_TAP_H
#define UROCE_HOST_IO_PCAP_TAP_H

#include "host/io/backend.h"
#include "host/io/pcap_sink.h"

/*
 * Wrap *b in a tap that writes every frame sent (as the peer will receive it, ICRC computed with
 * IPv4 ID 0, corruption included) and received (with the recovered IPv4 ID) to sink, so that
 * `uroce pcap-check` verifies every ICRC. The tap takes a reference on sink. Packets the
 * backend consumed without sending (tx_refused) are not recorded (beyond UROCE_TX_REFUSED_MAX
 * in one call they are). UDP frames get zero MACs; the v2 UDP checksum is computed.
 * Returns 0 or -ENOMEM (then *b is unchanged).
 */
int uroce_pcap_tap_wrap(struct uroce_backend **b, struct uroce_pcap_sink *sink);

#endif
