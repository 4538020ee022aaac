/* SPDX-License-Identifier: MIT */
/*
 * Multicast groups of UD QPs (IBTA 10.5; rxe_mcast.c): which QPs each MGID's packets go to.
 * Attach and detach are control-path calls; the groups' table is allocated with the engine, so
 * the receive path (recv.c) only looks it up.
 */
#include <errno.h>
#include <string.h>

#include "transport/internal.h"

struct uroce_mcg *uroce_mcg_lookup(struct uroce_eng *e, const uint8_t mgid[16])
{
	for (uint32_t i = 0; i < e->nmcgs; i++)
		if (memcmp(e->mcgs[i].mgid, mgid, 16) == 0)
			return &e->mcgs[i];
	return NULL;
}

int uroce_mcast_attach(struct uroce_qp *qp, const uint8_t mgid[16])
{
	struct uroce_eng *e = qp->eng;

	if (qp->init.type != UROCE_QPT_UD || !uroce_gid_is_mcast(mgid))
		return -EINVAL;
	struct uroce_mcg *g = uroce_mcg_lookup(e, mgid);

	if (g) {
		for (uint32_t i = 0; i < g->nqp; i++)
			if (g->qp[i] == qp)
				return 0;
		if (g->nqp == UROCE_MAX_MCAST_QP_ATTACH)
			return -ENOMEM;
	} else {
		if (e->nmcgs == UROCE_MAX_MCAST_GRP)
			return -ENOMEM;
		g = &e->mcgs[e->nmcgs++];
		memcpy(g->mgid, mgid, 16);
		g->nqp = 0;
	}
	g->qp[g->nqp++] = qp;
	return 0;
}

/* Take qp out of group g; a group left empty goes (the last one moves into its place). */
static void mcg_remove(struct uroce_eng *e, struct uroce_mcg *g, uint32_t i)
{
	g->qp[i] = g->qp[--g->nqp];
	if (g->nqp == 0)
		*g = e->mcgs[--e->nmcgs];
}

int uroce_mcast_detach(struct uroce_qp *qp, const uint8_t mgid[16])
{
	struct uroce_mcg *g = uroce_mcg_lookup(qp->eng, mgid);

	for (uint32_t i = 0; g && i < g->nqp; i++) {
		if (g->qp[i] == qp) {
			mcg_remove(qp->eng, g, i);
			return 0;
		}
	}
	return -EINVAL;
}

void uroce_mcast_detach_all(struct uroce_qp *qp)
{
	struct uroce_eng *e = qp->eng;

	for (uint32_t k = 0; k < e->nmcgs;) {
		struct uroce_mcg *g = &e->mcgs[k];
		uint32_t n = e->nmcgs;

		for (uint32_t i = 0; i < g->nqp; i++) {
			if (g->qp[i] == qp) {
				mcg_remove(e, g, i);
				break;
			}
		}
		if (e->nmcgs == n)
			k++; /* else another group moved into slot k: look at it */
	}
}

int uroce_mcast_groups(const struct uroce_eng *e, uint8_t (*out)[16], int max)
{
	for (uint32_t i = 0; i < e->nmcgs && (int)i < max; i++)
		memcpy(out[i], e->mcgs[i].mgid, 16);
	return (int)e->nmcgs;
}
