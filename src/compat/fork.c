/* SPDX-License-Identifier: MIT */
/*
 * fork() support, as rdma-core has it on a kernel that copies DMA pages on fork (Linux 5.13
 * and later: ibv_is_fork_initialized() says IBV_FORK_UNNEEDED, libibverbs/memory.c).
 *
 * uroce pins nothing: the engine reaches registered memory by virtual address, in the process
 * that registered it. After fork() the parent's regions still name the parent's pages (a write
 * to a page the child shares breaks the copy-on-write for the parent, as for any of its stores),
 * and the child gets copies. So MADV_DONTFORK is never needed, and the calls that ask for it do
 * what rdma-core does when copy-on-fork makes them unneeded:
 * - ibv_fork_init() returns 0, before or after registrations (rdma-core's EINVAL for "too late"
 *   comes only when the madvise tracking is needed);
 * - RDMAV_FORK_SAFE / IBV_FORK_SAFE, which mean ibv_fork_init(), and RDMAV_HUGEPAGES_SAFE,
 *   which only sets the page size for that tracking, change nothing;
 * - ibv_dontfork_range() and ibv_dofork_range() return 0 and advise nothing: a child of a
 *   program that calls them still gets its copies.
 * What the child may do with the devices it inherits (orphans: no I/O, the parent's resources
 * left alone) is host/ctx.h's; rdma_cm ids it inherits have no last will (compat/rdmacm/will.c).
 */
#include "compat/compat.h"
#include "compat/rdma_core_driver.h"

int ibv_fork_init(void)
{
	return 0;
}

enum ibv_fork_status ibv_is_fork_initialized(void)
{
	return IBV_FORK_UNNEEDED;
}

int ibv_dontfork_range(void *base, size_t size)
{
	(void)base;
	(void)size;
	return 0;
}

int ibv_dofork_range(void *base, size_t size)
{
	(void)base;
	(void)size;
	return 0;
}
