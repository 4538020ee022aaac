/* SPDX-License-Identifier: MIT */
/*
 * QPN slots: the range of QPNs each process uses on a shared device, and the prefix of the CM
 * communication IDs it issues (share_group.h).
 *
 * Design notes
 * - QPN slots. A process's QPNs are one slot of UROCE_SHARE_SLOT_QPNS numbers:
 *   UROCE_SHARE_QPN_BASE(slot) = 0x100 + (slot << 11), slot 0..4095, preferring
 *   slot = pid & 0xFFF. The slots in use are listed in <rundir>/share/slots ("slot pid start"
 *   lines, flock'd); a slot held by a dead process is free again, and a collision (two pids
 *   equal modulo 4096, or two devices opened by one process) takes the next free slot. A
 *   member's slot is UROCE_SHARE_SLOT_OF(qpn_lo); its CM puts it in the top 12 bits of every
 *   communication ID it issues, so that replies find their way back.
 */
#ifndef UROCE_HOST_IO_SHARE_SLOTS_H
#define UROCE_HOST_IO_SHARE_SLOTS_H


/*
 * Reserve a QPN slot in <rundir>/share/slots for this process: pid & 0xFFF when free, else the
 * next free one. Returns 0 with *slot set, -EBUSY when all 4096 are taken by live processes, or
 * a file error (the caller may then fall back to the pid-derived slot, unshared).
 */
int uroce_share_slot_take(const char *rundir, int *slot);
/* Release a slot taken by this process. Errors are ignored (a dead holder is pruned anyway). */
void uroce_share_slot_put(const char *rundir, int slot);

#endif
