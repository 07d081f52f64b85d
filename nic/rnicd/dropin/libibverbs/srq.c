/* SPDX-License-Identifier: BSD-2-Clause */
/* Shared receive queues: a ring like a QP's receive queue (post.c). */
#include "rnic.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* srq_reply reads a CREATE_SRQ reply into s; the caller holds ring_mu. */
static int srq_reply(struct rnic_context *c, struct rnic_srq *s, struct rnic_reply *rep)
{
	struct rnic_ring sq;
	struct rbuf r;
	int fdi = 0, err;
	r_init(&r, rep->body, rep->len);
	s->h = r_u32(&r);
	if ((err = rnic_read_layout(&r, &sq, &s->rq)))
		return err;
	if (sq.slots != 0 || s->rq.slots == 0)
		return EPROTO;
	if ((err = rnic_place_rings(c, &r, rep, &fdi, &sq, &s->rq, &s->place, &s->mem)))
		return err;
	if (fdi != rep->nfds)
		return EPROTO;
	s->bell = ld32(s->mem, RNICD_RING_BELL);
	s->prod = ld32(s->mem, RNICD_RING_RQ_PROD);
	s->done = s->prod;
	return 0;
}

RNIC_EXPORT struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	struct rnic_context *c = to_rctx(pd->context);
	struct rnic_reply rep;
	struct rnic_srq *s;
	struct wbuf w;
	int err;

	if (attr->attr.max_wr == 0 || attr->attr.max_sge == 0)
		return errno = EINVAL, NULL;
	if (!(s = calloc(1, sizeof(*s))))
		return errno = ENOMEM, NULL;
	w_init(&w);
	w_u32(&w, (to_rpd(pd))->h);
	w_u32(&w, attr->attr.max_wr);
	w_u32(&w, attr->attr.max_sge);
	pthread_mutex_lock(&c->ring_mu);
	if ((err = ctx_call(c, RNICD_OP_CREATE_SRQ, &w, NULL, 0, &rep))) {
		pthread_mutex_unlock(&c->ring_mu);
		free(s);
		return errno = err, NULL;
	}
	err = srq_reply(c, s, &rep);
	pthread_mutex_unlock(&c->ring_mu);
	rnic_close_fds(rep.fds, rep.nfds);
	if (err) {
		if (s->mem)
			rnic_release_rings(c, &s->place);
		rnic_handle_call(c, RNICD_OP_DESTROY_SRQ, s->h);
		free(s);
		return errno = err, NULL;
	}
	s->max_sge = attr->attr.max_sge;
	attr->attr.max_wr = s->rq.cap;
	s->srq.context = pd->context;
	s->srq.srq_context = attr->srq_context;
	s->srq.pd = pd;
	s->srq.handle = s->h;
	pthread_mutex_init(&s->srq.mutex, NULL);
	pthread_cond_init(&s->srq.cond, NULL);
	pthread_spin_init(&s->lock, PTHREAD_PROCESS_PRIVATE);
	rnic_obj_add(c, OBJ_SRQ, s->h, s);
	if (attr->attr.srq_limit && (err = ibv_modify_srq(&s->srq, &attr->attr, IBV_SRQ_LIMIT))) {
		ibv_destroy_srq(&s->srq);
		return errno = err, NULL;
	}
	return &s->srq;
}

RNIC_EXPORT int ibv_destroy_srq(struct ibv_srq *srq)
{
	struct rnic_srq *s = to_rsrq(srq);
	struct rnic_context *c = to_rctx(srq->context);
	int err = rnic_handle_call(c, RNICD_OP_DESTROY_SRQ, s->h);
	if (err && !c->conn.dead)
		return err;
	rnic_obj_del(c, OBJ_SRQ, s->h);
	rnic_release_rings(c, &s->place);
	rnic_release_rings(c, &s->retired_place);
	pthread_spin_destroy(&s->lock);
	pthread_mutex_destroy(&srq->mutex);
	pthread_cond_destroy(&srq->cond);
	free(s);
	return 0;
}

RNIC_EXPORT int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	struct rnic_srq *s = to_rsrq(srq);
	attr->max_wr = s->rq.cap;
	attr->max_sge = s->max_sge;
	attr->srq_limit = s->limit;
	return 0;
}

/* set_limit arms the SRQ's limit in the daemon (SRQ_LIMIT; 0 disarms). */
static int set_limit(struct rnic_srq *s, uint32_t limit)
{
	struct rnic_reply rep;
	struct wbuf w;
	int err;

	w_init(&w);
	w_u32(&w, s->h);
	w_u32(&w, limit);
	if ((err = ctx_call(to_rctx(s->srq.context), RNICD_OP_SRQ_LIMIT, &w, NULL, 0, &rep)))
		return err;
	rnic_close_fds(rep.fds, rep.nfds);
	s->limit = limit;
	return 0;
}

/* The size changes first (RESIZE_SRQ, srq_resize.c), then the limit is
 * armed within the new size. A resize below the armed limit is refused,
 * as rxe refuses it, unless the same call arms a new limit: the old one
 * is disarmed first then. */
RNIC_EXPORT int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int attr_mask)
{
	struct rnic_srq *s = to_rsrq(srq);
	int err;

	if (attr_mask & ~(IBV_SRQ_LIMIT | IBV_SRQ_MAX_WR))
		return EINVAL;
	if (attr_mask & IBV_SRQ_LIMIT && attr->srq_limit > (attr_mask & IBV_SRQ_MAX_WR ? attr->max_wr : s->rq.cap))
		return EINVAL;
	if (attr_mask & IBV_SRQ_MAX_WR) {
		if (attr_mask & IBV_SRQ_LIMIT && s->limit > attr->max_wr && (err = set_limit(s, 0)))
			return err;
		if ((err = rnic_resize_srq(s, attr->max_wr)))
			return err;
	}
	if (attr_mask & IBV_SRQ_LIMIT)
		return set_limit(s, attr->srq_limit);
	return 0;
}
