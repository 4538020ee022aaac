/* SPDX-License-Identifier: MIT */
/*
 * QPN slots: the range of QPNs each process uses on a shared device, and the prefix of the CM
 * communication IDs it issues (share_group.h).
 *
 * Design notes
 * - QPN slots. Slots are ranges of UROCE_SHARE_SLOT_QPNS numbers:
 *   UROCE_SHARE_QPN_BASE(slot) = 0x100 + (slot << 11), slot 0..4095. A process's QPNs on an
 *   opened device are a block of UROCE_SHARE_PROC_SLOTS consecutive slots (16384 QPNs, so that
 *   one process can have thousands of QPs), the first a multiple of UROCE_SHARE_PROC_SLOTS,
 *   preferring the block pid mod 512. The blocks in use are listed in <rundir>/share/slots by
 *   their first slot ("slot pid start" lines, flock'd); a block held by a dead process is free
 *   again, and a collision (two pids equal modulo 512, or two devices opened by one process)
 *   takes the next free block. A member's slot is UROCE_SHARE_SLOT_OF(qpn_lo), its block's
 *   first; its CM puts it in the top 12 bits of every communication ID it issues, so that
 *   replies find their way back.
 */
#ifndef UROCE_HOST_IO_SHARE_SLOTS_H
#define UROCE_HOST_IO_SHARE_SLOTS_H


/*
 * Reserve a block of UROCE_SHARE_PROC_SLOTS QPN slots in <rundir>/share/slots for this process:
 * the block pid mod 512 when free, else the next free one. Returns 0 with *slot set to the
 * block's first slot, -EBUSY when all 512 blocks are taken by live processes, or a file error
 * (the caller may then fall back to the pid-derived block, unshared).
 */
int uroce_share_slot_take(const char *rundir, int *slot);
/* Release the block whose first slot is slot, taken by this process. Errors are ignored (a dead
 * holder is pruned anyway). */
void uroce_share_slot_put(const char *rundir, int slot);

#endif
