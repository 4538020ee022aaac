/* SPDX-License-Identifier: MIT */
/*
 * The I/O backends' counters (io_rx_drop_icrc, io_tx_err, fault_corrupted, ...): what the sockets
 * sent, received and dropped before the engine. The list sits here, beneath both the backends,
 * which count into struct uroce_backend's cnt[], and the device counter files (stats.h), which
 * name them after the engine's.
 */
#ifndef UROCE_HOST_CONFIG_IO_COUNTERS_H
#define UROCE_HOST_CONFIG_IO_COUNTERS_H

#include <stdint.h>

#define UROCE_IO_COUNTERS(X)                                                                   \
	X(TX_PKTS, "io_tx_pkts")     /* handed to the kernel */                                \
	X(TX_BYTES, "io_tx_bytes")   /* transport bytes, BTH..ICRC */                          \
	X(TX_ERR, "io_tx_err")	     /* the kernel refused one (skipped) */                    \
	X(TX_NO_SRC, "io_tx_no_src") /* path sgid/encap not served by the backend */           \
	X(TX_AGAIN, "io_tx_again")   /* socket buffer full: burst cut short */                 \
	X(TX_GSO, "io_tx_gso_sends") /* UDP GSO sends of 2+ packets (counted in TX_PKTS too) */  \
	X(RX_PKTS, "io_rx_pkts")     /* delivered by rx_burst */                               \
	X(RX_BYTES, "io_rx_bytes")                                                             \
	X(RX_GRO, "io_rx_gro_recvs") /* UDP GRO datagrams of 2+ packets (split; in RX_PKTS) */  \
	X(RX_DROP_MALFORMED, "io_rx_drop_malformed") /* too short, truncated, not decodable */ \
	X(RX_DROP_ICRC, "io_rx_drop_icrc") /* bad ICRC (IPv4 over UDP: no ID solves it) */     \
	X(RX_DROP_NOT_FOR_US, "io_rx_drop_not_for_us") /* other host's frame, own echo */      \
	X(RX_DROP_VERSION, "io_rx_drop_roce_version") /* a RoCE version the device lacks */    \
	X(RX_IPID_SOLVED, "io_rx_ipid_solved")	       /* IPv4 ID recovered non-zero */        \
	X(FAULT_LOST, "fault_lost")                                                            \
	X(FAULT_DUP, "fault_dup")                                                              \
	X(FAULT_REORDERED, "fault_reordered")                                                  \
	X(FAULT_CORRUPTED, "fault_corrupted")                                                  \
	X(PCAP_TX, "pcap_tx") /* frames written by a tap */                                    \
	X(PCAP_RX, "pcap_rx")                                                                  \
	X(PCAP_ERR, "pcap_err") /* frames a tap could not write */

enum uroce_io_counter {
#define UROCE_IO_CNT_ENUM(id, name) UROCE_IO_##id,
	UROCE_IO_COUNTERS(UROCE_IO_CNT_ENUM)
#undef UROCE_IO_CNT_ENUM
		UROCE_IO_CNT_MAX
};

extern const char *const uroce_io_counter_names[UROCE_IO_CNT_MAX];

#endif
