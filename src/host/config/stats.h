/* SPDX-License-Identifier: MIT */
/*
 * Device counters shared by every process that uses a device: <rundir>/stats/<dev>.
 *
 * Design notes
 * - Counter names and order: the transport's UROCE_COUNTERS list (transport/engine.h), whose
 *   names follow rxe's hw_counters, then the I/O backends' UROCE_IO_COUNTERS (io_counters.h: what
 *   the sockets sent, received and dropped before the engine, such as io_rx_drop_icrc), then
 *   the connection manager's UROCE_CM_COUNTERS (cm_counters.h: cm_rx_mads, cm_stale_rejects,
 *   cm_conns_created, ...), which librdmacm's CM thread adds. Only
 *   the X-macros are used, so the host library does not link the transport.
 * - File format (native byte order and alignment: the file never leaves the host; version 1):
 *     0   char magic[8]   "UROCECNT"
 *     8   u32  version    1
 *     12  u32  count      number of counters
 *     16  u32  name_size  32 (bytes per name, NUL-padded)
 *     20  u32  names_off  64
 *     24  u32  values_off names_off + count * name_size, rounded up to 64
 *     28  u32  reserved   0, up to byte 63
 *     names_off   count x char[32]
 *     values_off  count x u64, one per name, in the same order
 *   The file is exactly values_off + 8 * count bytes.
 * - Writers map the file shared and add with relaxed 64-bit atomic adds, so any number of
 *   processes count into one file with no lock and no system call per increment. Readers map it
 *   read-only and load each value atomically (a value is never torn; the set is not a
 *   snapshot across counters, as with the kernel's hw_counters).
 * - Creation is atomic: the first opener writes a complete zeroed file under a temp name and
 *   link()s it into place; a concurrent opener that loses the race opens the winner's file. A
 *   file of another version or layout is never overwritten: uroce_stats_open() fails with
 *   -EPROTO. Writers find each counter by name, so a file made by a build with a different
 *   counter list still works (counters it lacks are not counted).
 * - Counts survive the processes (until `uroce link del` or a reboot), like rxe's counters
 *   outlive the QPs that incremented them.
 */
#ifndef UROCE_HOST_STATS_H
#define UROCE_HOST_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "host/config/cm_counters.h"
#include "host/config/io_counters.h"
#include "transport/engine.h"

#define UROCE_STATS_MAGIC "UROCECNT"
#define UROCE_STATS_VERSION 1
#define UROCE_STATS_NAME_SIZE 32
#define UROCE_STATS_MAX 4096 /* counters a file may hold (sanity bound for readers) */

struct uroce_stats; /* a writer's mapping of one device's file */

struct uroce_stat {
	char name[UROCE_STATS_NAME_SIZE];
	uint64_t value;
};

/* <rundir>/stats/<dev> into buf. 0 or -ENAMETOOLONG. */
int uroce_stats_path(const char *rundir, const char *dev, char *buf, size_t cap);

/*
 * Open dev's counters for adding, creating the file if needed (dev is not checked against the
 * device list: the caller has opened the device). Returns 0 with *out set; -EPROTO for a file
 * of another format; -EBADMSG for a damaged one; -EINVAL for a bad device name; or an I/O error.
 */
int uroce_stats_open(const char *rundir, const char *dev, struct uroce_stats **out);

/* Add n to counter c (atomic; any thread, any process). c out of range is ignored. */
void uroce_stats_add(struct uroce_stats *s, enum uroce_counter c, uint64_t n);

/* Add delta[c] to every counter c: for flushing an engine's counters since the last flush. */
void uroce_stats_add_all(struct uroce_stats *s, const uint64_t delta[UROCE_CNT_MAX]);

/* The same for the I/O backends' counters (io_counters.h: io_rx_drop_icrc, io_tx_err, ...). */
void uroce_stats_add_io(struct uroce_stats *s, const uint64_t delta[UROCE_IO_CNT_MAX]);

/* The same for the connection manager's counters (cm_counters.h). */
void uroce_stats_add_cm(struct uroce_stats *s, const uint64_t delta[UROCE_CM_CNT_MAX]);

/* Unmap and free. NULL is allowed. */
void uroce_stats_close(struct uroce_stats *s);

/*
 * Read dev's counters: *out (malloc'd, free() it) gets *n name/value pairs in file order.
 * Returns 0; -ENOENT when no process has counted yet (no file); -EBADMSG for a damaged file;
 * -EPROTO for another format; or an I/O error.
 */
int uroce_stats_read(const char *rundir, const char *dev, struct uroce_stat **out, int *n);

#endif
