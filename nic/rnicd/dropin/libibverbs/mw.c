/* SPDX-License-Identifier: BSD-2-Clause */
/* Memory windows: ibv_alloc_mw and ibv_dealloc_mw are calls to the daemon
 * (ALLOC_MW, DEALLOC_MW); a bind, type 1 (ibv_bind_mw) or type 2B
 * (IBV_WR_BIND_MW, ibv_wr_bind_mw), is a BIND_MW WQE in the send ring that
 * the NIC executes in order with the QP's other work (proto/wqe.go: the
 * window's rkey in inv_rkey, the new rkey in rkey, the MR's lkey in imm,
 * the range in remote_addr and compare_add, the rights in swap). The
 * bind rules are the NIC's: a bind that breaks one completes with
 * IBV_WC_MW_BIND_ERR. */
#include "rnic.h"

#include <stdlib.h>
#include <sys/random.h>

static inline struct rnic_mw *to_rmw(struct ibv_mw *mw) { return rn_container_of(mw, struct rnic_mw, mw); }

struct ibv_mw *rnic_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct rnic_context *c = to_rctx(pd->context);
	struct rnic_reply rep;
	struct rnic_mw *m;
	struct wbuf w;
	struct rbuf r;
	int err;

	w_init(&w);
	w_u32(&w, to_rpd(pd)->h);
	w_u32(&w, (uint32_t)type);
	if ((err = ctx_call(c, RNICD_OP_ALLOC_MW, &w, NULL, 0, &rep)))
		return errno = err, NULL;
	rnic_close_fds(rep.fds, rep.nfds);
	m = calloc(1, sizeof(*m));
	r_init(&r, rep.body, rep.len);
	if (m) {
		m->h = r_u32(&r);
		m->mw.rkey = r_u32(&r);
	}
	if (!m || r_done(&r)) {
		if (m) /* the daemon made it: free it there too */
			rnic_handle_call(c, RNICD_OP_DEALLOC_MW, m->h);
		free(m);
		return errno = m ? EPROTO : ENOMEM, NULL;
	}
	m->mw.context = pd->context;
	m->mw.pd = pd;
	m->mw.handle = m->h;
	m->mw.type = type;
	return &m->mw;
}

int rnic_dealloc_mw(struct ibv_mw *mw)
{
	struct rnic_mw *m = to_rmw(mw);
	int err = rnic_handle_call(to_rctx(mw->context), RNICD_OP_DEALLOC_MW, m->h);
	if (err && err != EIO)
		return err;
	free(m);
	return 0;
}

/* rnic_check_bind applies at post time what libibverbs and rxe check
 * there: a window and MR of this context, an MR given for a range, a
 * window of the QP's PD. */
int rnic_check_bind(struct ibv_qp *qp, const struct ibv_mw *mw, const struct ibv_mw_bind_info *info)
{
	if (!mw || mw->context != qp->context || (info->mr && info->mr->context != qp->context))
		return EINVAL;
	if (!info->mr && (info->addr || info->length))
		return EINVAL;
	if (qp->qp_type != IBV_QPT_RC && qp->qp_type != IBV_QPT_UC)
		return EINVAL;
	return 0;
}

void rnic_put_bind(uint8_t *s, const struct ibv_mw *mw, uint32_t rkey, const struct ibv_mw_bind_info *info)
{
	put32(s + RNICD_SEND_INV_RKEY, mw->rkey);
	put32(s + RNICD_SEND_RKEY, rkey);
	put32(s + RNICD_SEND_IMM, info->mr ? info->mr->lkey : 0);
	put64(s + RNICD_SEND_REMOTE_ADDR, info->addr);
	put64(s + RNICD_SEND_COMPARE_ADD, info->length);
	put64(s + RNICD_SEND_SWAP, info->mw_access_flags);
}

/* next_rkey returns rkey with a new key byte. A type 1 window's next rkey
 * is the library's to choose (ibv_bind_mw sets mw->rkey at post time);
 * rxe increments it, which lets a peer that saw one rkey guess the next:
 * here the byte is random, drawn from the kernel, and only if that fails
 * incremented. */
static uint32_t next_rkey(uint32_t rkey)
{
	uint8_t b = 0;
	if (getrandom(&b, sizeof(b), GRND_NONBLOCK) != (ssize_t)sizeof(b))
		b = 0;
	if (b == 0)
		b = 1;
	return (rkey & ~0xffu) | ((rkey + b) & 0xffu);
}

int rnic_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *mw_bind)
{
	struct ibv_send_wr wr = {0}, *bad = NULL;
	int err;

	if (mw_bind->bind_info.mw_access_flags & IBV_ACCESS_ZERO_BASED)
		return EINVAL; /* o10-36.2.2, refused at post time as rxe does */
	wr.wr_id = mw_bind->wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = mw_bind->send_flags;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = next_rkey(mw->rkey);
	wr.bind_mw.bind_info = mw_bind->bind_info;
	if ((err = rnic_post_send(qp, &wr, &bad)))
		return err;
	mw->rkey = wr.bind_mw.rkey; /* as rxe: the program undoes it after an error completion */
	return 0;
}
