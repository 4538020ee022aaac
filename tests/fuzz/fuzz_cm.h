/* SPDX-License-Identifier: MIT */
/*
 * The input format of fuzz_cm's IB CM engine part (fuzz_cm.c), shared with its seed generator
 * (make_corpus_cm.c).
 *
 * An input is a sequence of steps. A step is an op byte, FCM_OP(kind, f): the kind (enum
 * fcm_kind) in the low 4 bits, a 4-bit f in the high ones; then an argument byte; a FCM_MAD
 * step is followed by the 256-byte MAD. A step cut short ends the input.
 *
 * Slots: each connection the application is handed (a REQ or SIDR_REQ received, a REQ or
 * SIDR_REQ sent) takes the next of FCM_SLOTS slots, in order. A slot keeps the connection's comm
 * IDs, QPNs, CA GUID and GID after the connection is gone, so that MADs can still be patched to
 * name it. An action on a slot (arg % FCM_SLOTS) whose connection is gone, or never was, does
 * nothing. Once every slot is taken, a REQ or SIDR_REQ received is destroyed at once and a
 * CONNECT or SIDR_REQ step does nothing.
 */
#ifndef UROCE_TESTS_FUZZ_CM_H
#define UROCE_TESTS_FUZZ_CM_H

#define FCM_MAD_LEN 256
#define FCM_SLOTS   128

#define FCM_OP(kind, f) ((unsigned char)((kind) | (f) << 4))

enum fcm_kind {
	FCM_MAD,       /* a MAD received from a peer: f FCM_P_*, arg the slot patched in */
	FCM_REFLECT,   /* the MAD the engine sent arg & 15 sends before its latest, received back
			* by it: f FCM_P_*, arg >> 4 the slot patched in */
	FCM_ADVANCE,   /* now += (arg + 1) << (3 * f) ns; the timers due run */
	FCM_NEXT,      /* now = the next deadline, if there is one; the timers due run */
	FCM_CONNECT,   /* send a REQ (a new slot): f the timing; arg & 0x7F the local QPN's low
			* bits, arg & 0x80 to peer B */
	FCM_ACCEPT,    /* send_rep on slot arg: f the timing */
	FCM_REJECT,    /* send_rej on slot arg: f & 7 the reason (fcm_rej_reason), f & 8 with an
			* 8-byte ARI (the local CA GUID) */
	FCM_MRA,       /* send_mra on slot arg: service timeout (f & 7) * 4, f & 8 delayed */
	FCM_RTU,       /* send_rtu on slot arg */
	FCM_ESTABLISH, /* uroce_ibcm_establish on slot arg */
	FCM_DREQ,      /* send_dreq on slot arg: f 0 the connection's timing, else f the timing */
	FCM_DREP,      /* send_drep on slot arg */
	FCM_DESTROY,   /* uroce_ibcm_conn_destroy on slot arg */
	FCM_SIDR_REQ,  /* send_sidr_req (a new slot): f the timing, arg & 0x80 to peer B */
	FCM_SIDR_REP,  /* send_sidr_rep on slot arg: f the status */
	FCM_POLICY,    /* what the event handler does by itself from now on: arg FCM_AUTO_* */
};

/*
 * MAD and REFLECT: what f patches into the MAD (when it decodes), and who sends it.
 *   FCM_P_OURS    the field naming our connection (remote comm ID; a SIDR_REP's request ID)
 *                 := the slot's local comm ID;
 *   FCM_P_THEIRS  the field naming the peer's (local comm ID; a SIDR_REQ's request ID) := the
 *                 slot's remote comm ID;
 *   FCM_P_QPN     a DREQ's remote QPN := the slot's local QPN; a REQ's local QPN, CA GUID and
 *                 primary local GID, a REP's local QPN and CA GUID := the slot's remote ones;
 *   FCM_P_FROM_B  received from peer B (else A).
 */
#define FCM_P_OURS   0x1
#define FCM_P_THEIRS 0x2
#define FCM_P_QPN    0x4
#define FCM_P_FROM_B 0x8

/* The timing f gives CONNECT, ACCEPT, DREQ and SIDR_REQ: a timeout and 0 to 3 resends. */
static inline unsigned fcm_timeout_ms(unsigned f)
{
	static const unsigned ms[4] = {1, 20, 500, 4000};

	return ms[f & 3];
}

static inline unsigned fcm_max_retries(unsigned f)
{
	return (f >> 2) & 3;
}

/* REJECT reasons by f & 7: consumer defined, stale connection, timeout, no QP, invalid service
 * ID, no resources, unsupported, invalid transport type (the ib_cm.h numbers). */
static inline unsigned short fcm_rej_reason(unsigned f)
{
	static const unsigned short r[8] = {28, 10, 4, 1, 8, 3, 5, 9};

	return r[f & 7];
}

/*
 * POLICY arg bits. The event handler, by itself,
 *   FCM_AUTO_ACCEPT       answers REQ_RECEIVED with a REP;
 *   FCM_AUTO_RTU          answers REP_RECEIVED with an RTU;
 *   FCM_AUTO_DREP         answers DREQ_RECEIVED with a DREP;
 *   FCM_AUTO_SIDR         answers SIDR_REQ_RECEIVED with a SIDR_REP (and destroys);
 *   FCM_DESTROY_ON_DREQ   destroys the connection at DREQ_RECEIVED (which answers it);
 *   FCM_EARLY_DESTROY     destroys it at DREP_RECEIVED or DREQ_ERROR, in time-wait, not at
 *                         TIMEWAIT_EXIT;
 *   FCM_REFLECT_IN_EVENT  then gives the engine's latest MAD back to it from inside the
 *                         callback (uroce_ibcm_recv re-entered), up to 3 levels deep.
 * And one setting of the engine, read when it is made (at the first step that is not a
 * POLICY, or at the end of the input):
 *   FCM_TIMEWAIT_0        time-wait lasts 0 ms (UROCE_CM_TIMEWAIT_MS=0), not 10 ms.
 */
#define FCM_AUTO_ACCEPT	     0x01
#define FCM_AUTO_RTU	     0x02
#define FCM_AUTO_DREP	     0x04
#define FCM_AUTO_SIDR	     0x08
#define FCM_DESTROY_ON_DREQ  0x10
#define FCM_EARLY_DESTROY    0x20
#define FCM_TIMEWAIT_0	     0x40
#define FCM_REFLECT_IN_EVENT 0x80

#endif
