/* SPDX-License-Identifier: MIT */
/*
 * Fault injection: a wrapper backend that loses, duplicates, reorders and corrupts packets on
 * transmit, from a seeded generator (UROCE_FAULTS; wrap_env.h).
 */
#ifndef UROCE_HOST_IO_FAULTS_H
#define UROCE_HOST_IO_FAULTS_H

#include <stddef.h>
#include <stdint.h>

#include "host/io/backend.h"

struct uroce_faults {
	double loss;	/* probability a packet is not sent */
	double dup;	/* ... is sent twice */
	double reorder; /* ... is held back and sent after the next one */
	double corrupt; /* ... has one ICRC bit flipped after the ICRC was computed */
	uint64_t seed;	/* 0: a fixed default */
};

/*
 * Parse "loss=0.05,dup=0.01,reorder=0.02,corrupt=0.001,seed=N" (any subset, any order; an empty
 * string means no faults). Probabilities are decimals in [0, 1].
 * Returns 0, or -EINVAL with a sentence in err naming the bad item.
 */
int uroce_faults_parse(struct uroce_faults *f, const char *spec, char *err, size_t errlen);

/*
 * Wrap *b in a fault injector (on transmit; receive passes through). On success *b is the
 * wrapper, which owns the old *b. Returns 0 or -ENOMEM (then *b is unchanged).
 * Reordering copies the held packet (up to 16 KiB of payload; longer ones are not reordered); the
 * held packet leaves after the next packet sent, or at the next rx_burst at the latest.
 */
int uroce_faults_wrap(struct uroce_backend **b, const struct uroce_faults *f);

#endif
