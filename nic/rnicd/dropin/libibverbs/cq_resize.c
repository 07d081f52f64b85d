/* SPDX-License-Identifier: BSD-2-Clause */
/* ibv_resize_cq: the daemon gives the CQ a new ring of the new size
 * (RESIZE_CQ), the completions not yet polled moved to its start; the
 * CQ reads the new ring from then on and gives the old one back at its
 * next resize or its end (a poller's unlocked first look at the producer
 * index may still read it). Pollers wait on the CQ's lock meanwhile. As ibv_resize_cq(3) says, cqe is at
 * least what was asked; fewer than the completions waiting is EINVAL. */
#include "rnic.h"

#include <string.h>

/* swap_ring reads the reply into q: its new ring, which the caller maps
 * in place of the old one. The caller holds ring_mu and q's lock. */
static int swap_ring(struct rnic_context *c, struct rnic_cq *q, struct rnic_reply *rep)
{
	struct rnic_cq n = *q;
	struct rbuf r;
	int fdi = 0, err;

	r_init(&r, rep->body, rep->len);
	if ((err = rnic_read_cq(&r, &n)) || (err = rnic_take_rings(c, &n.place, rep, &fdi, 0, &n.ring)))
		return err;
	if (fdi != rep->nfds || n.h != q->h || n.chan_slot != q->chan_slot)
		return EPROTO;
	q->slots = n.slots;
	q->cap = n.cap;
	q->place = n.place;
	q->ring = n.ring;
	q->cons = ld32(q->ring, RNICD_CQ_CONS);
	q->cq.cqe = (int)q->cap;
	return 0;
}

RNIC_EXPORT int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
	struct rnic_cq *q = to_rcq(cq);
	struct rnic_context *c = to_rctx(cq->context);
	struct rnic_place old = {0};
	struct rnic_reply rep;
	struct wbuf w;
	int err;

	if (cqe <= 0 || (uint64_t)cqe > c->attr.max_cqe)
		return EINVAL;
	w_init(&w);
	w_u32(&w, q->h);
	w_u32(&w, (uint32_t)cqe);
	pthread_spin_lock(&q->lock);
	/* the daemon copies from the consumer index: publish it first */
	st32(q->ring, RNICD_CQ_CONS, q->cons);
	pthread_mutex_lock(&c->ring_mu);
	err = ctx_call(c, RNICD_OP_RESIZE_CQ, &w, NULL, 0, &rep);
	if (!err) {
		struct rnic_place was = q->place;
		if (!(err = swap_ring(c, q, &rep))) {
			old = q->retired;
			q->retired = was;
		}
		rnic_close_fds(rep.fds, rep.nfds);
	}
	pthread_mutex_unlock(&c->ring_mu);
	pthread_spin_unlock(&q->lock);
	rnic_release_rings(c, &old); /* the ring retired by the resize before */
	return err;
}
