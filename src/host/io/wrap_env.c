/* SPDX-License-Identifier: MIT */
/* The wrappers UROCE_FAULTS and UROCE_PCAP ask for (wrap_env.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/io/backend.h"
#include "host/io/faults.h"
#include "host/io/pcap_sink.h"
#include "host/io/pcap_tap.h"
#include "host/io/wrap_env.h"

int uroce_backend_wrap_env(struct uroce_backend **b, struct uroce_pcap_sink **sink, char *err,
			   size_t errlen)
{
	const char *faults = getenv("UROCE_FAULTS");
	const char *pcap = getenv("UROCE_PCAP");
	struct uroce_faults f;
	int r;

	/* Parse first so that a bad spec changes nothing. */
	if (faults && *faults) {
		r = uroce_faults_parse(&f, faults, err, errlen);
		if (r < 0)
			return r;
	}
	if (pcap && *pcap) {
		if (!*sink) {
			r = uroce_pcap_sink_open(sink, pcap);
			if (r < 0) {
				snprintf(err, errlen, "UROCE_PCAP: cannot write '%s': %s", pcap,
					 strerror(-r));
				return r;
			}
		}
		r = uroce_pcap_tap_wrap(b, *sink);
		if (r < 0)
			return r;
	}
	if (faults && *faults) {
		r = uroce_faults_wrap(b, &f);
		if (r < 0)
			return r;
	}
	return 0;
}
