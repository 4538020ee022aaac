/* SPDX-License-Identifier: MIT */
/*
 * The IB connection manager's counters (cm_rx_mads, cm_stale_rejects, cm_conns_created, ...).
 * The list sits here, beneath both the CM engine (cm/ibcm.h), which counts them per process,
 * and the device counter files (stats.h), where librdmacm's CM thread adds each process's
 * counts, so that `uroce stats` shows them as the kernel's infiniband_cm sysfs counters are
 * shown. cm_conns_created - cm_conns_freed is the number of connections the CMs of the
 * device's processes hold (in any state, time-wait included), plus those of processes that
 * ended holding some.
 */
#ifndef UROCE_HOST_CONFIG_CM_COUNTERS_H
#define UROCE_HOST_CONFIG_CM_COUNTERS_H

#define UROCE_CM_COUNTERS(X)                                                                      \
	X(RX_MADS, "cm_rx_mads")                                                                  \
	X(TX_MADS, "cm_tx_mads")                                                                  \
	X(TX_ERRORS, "cm_tx_errors")                                                              \
	X(RX_MALFORMED, "cm_rx_malformed")           /* not a CM MAD we can decode */             \
	X(RX_UNKNOWN_ID, "cm_rx_unknown_comm_id")    /* no connection with that comm ID */        \
	X(RX_BAD_STATE, "cm_rx_wrong_state")         /* not allowed in the connection's state */  \
	X(RX_DUPLICATES, "cm_rx_duplicates")                                                      \
	X(RETRIES, "cm_retries")                                                                  \
	X(TIMEOUTS, "cm_timeouts")                                                                \
	X(STALE_REJECTS, "cm_stale_rejects")                                                      \
	X(CONNS_CREATED, "cm_conns_created")         /* connections allocated (REQ, SIDR) */      \
	X(CONNS_FREED, "cm_conns_freed")             /* and freed (idle, destroyed) */

enum uroce_cm_counter {
#define UROCE_CM_CNT_ENUM(id, name) UROCE_CM_CNT_##id,
	UROCE_CM_COUNTERS(UROCE_CM_CNT_ENUM)
#undef UROCE_CM_CNT_ENUM
		UROCE_CM_CNT_MAX
};

#endif
