/* SPDX-License-Identifier: BSD-2-Clause */
/* Multicast UD: ibv_attach_mcast and ibv_detach_mcast through rnicd
 * (ATTACH_MCAST, DETACH_MCAST). The NIC applies the rules (a UD QP, a
 * multicast GID, the limits), so its status comes back as the errno:
 * EINVAL, ENOMEM, EOPNOTSUPP on a device without multicast. */
#include "rnic.h"

static int mcast_call(struct ibv_qp *qp, uint16_t op, const union ibv_gid *gid, uint16_t lid)
{
	struct rnic_reply rep;
	struct wbuf w;
	int err;

	if (!qp || !gid)
		return EINVAL;
	w_init(&w);
	w_u32(&w, to_rqp(qp)->h);
	w_raw(&w, gid->raw, sizeof(gid->raw));
	w_u16(&w, lid);
	if ((err = ctx_call(to_rctx(qp->context), op, &w, NULL, 0, &rep)))
		return err;
	rnic_close_fds(rep.fds, rep.nfds);
	return 0;
}

RNIC_EXPORT int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return mcast_call(qp, RNICD_OP_ATTACH_MCAST, gid, lid);
}

RNIC_EXPORT int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return mcast_call(qp, RNICD_OP_DETACH_MCAST, gid, lid);
}
