/* SPDX-License-Identifier: MIT */
/* The wrappers the environment asks for on a backend: fault injection and the pcap tap. */
#ifndef UROCE_HOST_IO_WRAP_ENV_H
#define UROCE_HOST_IO_WRAP_ENV_H

#include <stddef.h>

#include "host/io/backend.h"
#include "host/io/pcap_sink.h"

/*
 * Apply the environment: UROCE_FAULTS (a fault injector) then UROCE_PCAP (a tap; the sink is
 * opened on first use into *sink, shared by later calls, and released by the caller with
 * uroce_pcap_sink_put). The tap sits under the fault injector so that it records what was
 * really sent. Returns 0, or -EINVAL (bad UROCE_FAULTS, message in err) or a file error.
 */
int uroce_backend_wrap_env(struct uroce_backend **b, struct uroce_pcap_sink **sink, char *err,
			   size_t errlen);

#endif
