/* SPDX-License-Identifier: BSD-2-Clause */
/* ibv_modify_srq(IBV_SRQ_MAX_WR): the daemon takes every receive the
 * program posted, resizes its SRQ (refused below the receives it holds or
 * the armed limit, as rxe refuses) and gives the SRQ a new, empty ring of
 * the new size (RESIZE_SRQ) whose producer index goes on from this
 * library's, so the count of receives held (rqdepth.c) carries over. Posts
 * wait on the SRQ's lock meanwhile. The old ring stays mapped until the
 * next resize or the SRQ's end: a post that has just let the lock go may
 * still look at it (rnic_wait_recvs). */
#include "rnic.h"

/* swap_ring reads the reply into s. The caller holds ring_mu and s's
 * lock. */
static int swap_ring(struct rnic_context *c, struct rnic_srq *s, struct rnic_reply *rep)
{
	struct rnic_ring sq, rq;
	struct rnic_place place;
	uint8_t *mem = NULL;
	struct rbuf r;
	int fdi = 0, err;

	r_init(&r, rep->body, rep->len);
	if (r_u32(&r) != s->h)
		return EPROTO;
	if ((err = rnic_read_layout(&r, &sq, &rq)))
		return err;
	if (sq.slots != 0 || rq.slots == 0 || rq.slot_size != s->rq.slot_size)
		return EPROTO;
	if ((err = rnic_place_rings(c, &r, rep, &fdi, &sq, &rq, &place, &mem)))
		return err;
	if (fdi != rep->nfds || ld32(mem, RNICD_RING_RQ_PROD) != s->prod || ld32(mem, RNICD_RING_BELL) != s->bell) {
		rnic_release_rings(c, &place);
		return EPROTO;
	}
	s->retired_place = s->place;
	s->place = place;
	s->mem = mem;
	s->rq = rq;
	return 0;
}

int rnic_resize_srq(struct rnic_srq *s, uint32_t max_wr)
{
	struct rnic_context *c = to_rctx(s->srq.context);
	struct rnic_place old = {0};
	struct rnic_reply rep;
	struct wbuf w;
	int err;

	if (max_wr == 0 || max_wr > c->attr.max_srq_wr)
		return EINVAL;
	w_init(&w);
	w_u32(&w, s->h);
	w_u32(&w, max_wr);
	pthread_spin_lock(&s->lock);
	pthread_mutex_lock(&c->ring_mu);
	err = ctx_call(c, RNICD_OP_RESIZE_SRQ, &w, NULL, 0, &rep);
	if (!err) {
		struct rnic_place retired = s->retired_place;
		if (!(err = swap_ring(c, s, &rep)))
			old = retired;
		rnic_close_fds(rep.fds, rep.nfds);
	}
	pthread_mutex_unlock(&c->ring_mu);
	pthread_spin_unlock(&s->lock);
	rnic_release_rings(c, &old); /* the ring retired by the resize before */
	return err;
}
