/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the connection manager's codecs (src/cm). One input is tried as:
 *  1. a whole CM MAD (uroce_cm_mad_decode). When it decodes, encoding gives 256 bytes that decode
 *     again to an encoding identical to the first (reserved bits are dropped once, then stable);
 *  2. a REQ's private data: the 36-byte RDMA CM IP header (uroce_cma_hdr_decode), re-encoded to
 *     the same bytes but for the reserved low nibble of byte 1;
 *  3. a service ID (the first 8 bytes) split into port space and port and joined again;
 *  4. a MAD received twice by a fresh IB CM engine (cm/ibcm.h) that accepts every REQ and
 *     answers every DREQ, whose timers then all run out: it must not crash or leak, and no
 *     connection may be left half-open (issue 21): once no timer runs, each connection still
 *     held is ESTABLISHED; every other state must have had a timer that ends it.
 * Any broken invariant aborts (a crash for libFuzzer, a failure for the replay). Seeds: the CM
 * MADs of the captures in tests/vectors (corpus/cm).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cma.h"
#include "cm/ibcm.h"
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

static int fuzz_send(void *arg, const struct uroce_ibcm_addr *to, const uint8_t *mad)
{
	struct uroce_cm_mad m;

	(void)arg;
	(void)to;
	FUZZ_ASSERT(uroce_cm_mad_decode(&m, mad, UROCE_MAD_LEN) == UROCE_MAD_LEN);
	return 0;
}

/* The connections the engine handed out and the handler has not destroyed. */
#define MAX_CONNS 8
static struct uroce_ibcm_conn *conns[MAX_CONNS];
static int nconns;

static void conn_track(struct uroce_ibcm_conn *c)
{
	for (int i = 0; i < nconns; i++)
		if (conns[i] == c)
			return;
	FUZZ_ASSERT(nconns < MAX_CONNS);
	conns[nconns++] = c;
}

static void conn_destroy(struct uroce_ibcm_conn *c)
{
	for (int i = 0; i < nconns; i++)
		if (conns[i] == c)
			conns[i] = conns[--nconns];
	uroce_ibcm_conn_destroy(c, 0);
}

static void fuzz_event(void *arg, const struct uroce_ibcm_event *ev)
{
	static const struct uroce_ibcm_timing t = {.timeout_ms = 100, .max_retries = 2};
	struct uroce_cm_rep rep;

	(void)arg;
	memset(&rep, 0, sizeof(rep));
	switch (ev->type) {
	case UROCE_IBCM_EV_REQ_RECEIVED:
		conn_track(ev->conn);
		FUZZ_ASSERT(uroce_ibcm_send_rep(ev->conn, &rep, &t, 0) == 0);
		break;
	case UROCE_IBCM_EV_DREQ_RECEIVED:
		FUZZ_ASSERT(uroce_ibcm_send_drep(ev->conn, NULL, 0, 0) == 0);
		break;
	case UROCE_IBCM_EV_SIDR_REQ_RECEIVED:
		conn_track(ev->conn);
		conn_destroy(ev->conn);
		break;
	case UROCE_IBCM_EV_REP_RECEIVED:
	case UROCE_IBCM_EV_RTU_RECEIVED:
	case UROCE_IBCM_EV_REJ_RECEIVED:
	case UROCE_IBCM_EV_MRA_RECEIVED:
	case UROCE_IBCM_EV_REQ_ERROR:
	case UROCE_IBCM_EV_REP_ERROR:
	case UROCE_IBCM_EV_DREP_RECEIVED:
	case UROCE_IBCM_EV_DREQ_ERROR:
	case UROCE_IBCM_EV_TIMEWAIT_EXIT:
	case UROCE_IBCM_EV_SIDR_REP_RECEIVED:
	case UROCE_IBCM_EV_SIDR_REQ_ERROR:
		conn_destroy(ev->conn);
		break;
	}
}

static void fuzz_ibcm(const uint8_t *data, size_t size)
{
	static const struct uroce_ibcm_ops ops = {.send = fuzz_send, .event = fuzz_event};
	const struct uroce_ibcm_cfg cfg = {.ops = &ops, .comm_id_prefix = 1, .timewait_ms = 10};
	struct uroce_ibcm_addr from;
	struct uroce_ibcm *cm;

	memset(&from, 0, sizeof(from));
	nconns = 0;
	FUZZ_ASSERT(uroce_ibcm_create(&cfg, &cm) == 0);
	uroce_ibcm_recv(cm, &from, data, size, 0);
	uroce_ibcm_recv(cm, &from, data, size, 1);
	for (uint64_t now = 1; uroce_ibcm_next_deadline(cm) != UINT64_MAX;) {
		FUZZ_ASSERT(uroce_ibcm_next_deadline(cm) > now);
		now = uroce_ibcm_next_deadline(cm);
		uroce_ibcm_advance(cm, now);
	}
	FUZZ_ASSERT(uroce_ibcm_counter(cm, UROCE_IBCM_C_RX_MADS) == 2);
	for (int i = 0; i < nconns; i++) {
		if (uroce_ibcm_conn_state(conns[i]) != UROCE_IBCM_ESTABLISHED)
			fprintf(stderr, "connection left in %s with no timer\n",
				uroce_ibcm_state_name(uroce_ibcm_conn_state(conns[i])));
		FUZZ_ASSERT(uroce_ibcm_conn_state(conns[i]) == UROCE_IBCM_ESTABLISHED);
	}
	uroce_ibcm_destroy(cm);
}

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
	fuzz_ibcm(data, size);
	return 0;
}
