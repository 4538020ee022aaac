/* SPDX-License-Identifier: MIT */
/*
 * The engine fuzz target (fuzz_engine.c): input format and the seed-corpus generator.
 *
 * An input is a sequence of records, each fed to one engine of an RC pair in RTS (with a UD QP
 * beside it) through uroce_eng_rx(), the engines' output drained (and dropped, or looped back
 * between them) and their timers run after each:
 *
 *   byte 0     control:
 *                bit 0  0: to node B (the responder side), 1: to node A (the completer side)
 *                bit 1  set the BTH destination QP to the target QP
 *                bit 2  make RETH / AtomicETH point into the target's region: VA = IOVA +
 *                       (VA % length), R_Key = the region's
 *                bit 3  afterwards let the engines talk to each other for a while (loopback)
 *                bit 4  the packet arrived with ECN CE
 *                bit 5  target B's UD QP instead of its RC QP (with bit 1)
 *                bit 6  set the BTH PSN to the target's expected PSN + (PSN % 8)
 *                bit 7  target the node's UC QP instead of its RC QP (with bit 1; bit 5 wins)
 *   byte 1     virtual time to let pass afterwards, in units of 1.024 us (timers run)
 *   bytes 2-3  packet length, little-endian (cut to what is left)
 *   then the transport packet, BTH .. ICRC (the ICRC is not checked: the caller's job)
 *
 * After the records, and again after every timer has run, the liveness invariant (liveness.h)
 * must hold for the RC QPs of both nodes and B's UC and UD QPs, and A's requester, while work
 * of it is outstanding, must have something to send or a timer running.
 */
#ifndef UROCE_TESTS_SIM_FUZZ_ENGINE_H
#define UROCE_TESTS_SIM_FUZZ_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#define FUZZ_TO_A     0x01
#define FUZZ_FIX_QPN  0x02
#define FUZZ_FIX_RKEY 0x04
#define FUZZ_LOOPBACK 0x08
#define FUZZ_ECN      0x10
#define FUZZ_UD	      0x20
#define FUZZ_FIX_PSN  0x40
#define FUZZ_UC	      0x80

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Write a seed corpus of valid exchanges into dir (which must exist). Returns files written or
 * a negative errno. */
int fuzz_engine_make_corpus(const char *dir);

#endif
