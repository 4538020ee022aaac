/* SPDX-License-Identifier: MIT */
/*
 * A capture file that the pcap taps of a process write to: reference-counted, locked, buffered
 * so that the file holds whole records whenever it is written to.
 */
#ifndef UROCE_HOST_IO_PCAP_SINK_H
#define UROCE_HOST_IO_PCAP_SINK_H

#include <stdint.h>

/* A capture file shared by the taps of a process; reference-counted, locked. */
struct uroce_pcap_sink;

/* Create (truncate) path and write the pcap header. Returns 0 or -errno. */
int uroce_pcap_sink_open(struct uroce_pcap_sink **out, const char *path);
/* Take another reference (for a tap that writes to s). */
void uroce_pcap_sink_get(struct uroce_pcap_sink *s);
/* Drop a reference; the last one flushes and closes the file. */
void uroce_pcap_sink_put(struct uroce_pcap_sink *s);
/* Flush buffered frames to the file. */
int uroce_pcap_sink_flush(struct uroce_pcap_sink *s);
/* Add a frame (len < 1 MiB), time-stamped ts_ns (CLOCK_REALTIME). The file holds whole records
 * whenever it is written to. Returns 0, -EMSGSIZE or -EIO. */
int uroce_pcap_sink_write(struct uroce_pcap_sink *s, uint64_t ts_ns, const uint8_t *data,
			  uint32_t len);

#endif
