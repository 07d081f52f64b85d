/* SPDX-License-Identifier: BSD-2-Clause */
/* Queue pairs: create, modify, query and destroy are round trips; the
 * send and receive rings (post.c, wr.c) are mapped at creation. */
#include "rnic.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* w_qp_cap / r_qp_cap: proto.PutQPCap (the order of struct ibv_qp_cap). */
static void w_qp_cap(struct wbuf *w, const struct ibv_qp_cap *c)
{
	w_u32(w, c->max_send_wr);
	w_u32(w, c->max_recv_wr);
	w_u32(w, c->max_send_sge);
	w_u32(w, c->max_recv_sge);
	w_u32(w, c->max_inline_data);
}

static void r_qp_cap(struct rbuf *r, struct ibv_qp_cap *c)
{
	c->max_send_wr = r_u32(r);
	c->max_recv_wr = r_u32(r);
	c->max_send_sge = r_u32(r);
	c->max_recv_sge = r_u32(r);
	c->max_inline_data = r_u32(r);
}

/* r_layout reads a proto.RingLayout and checks it as Validate does. */
int rnic_read_layout(struct rbuf *r, struct rnic_ring *sq, struct rnic_ring *rq)
{
	struct rnic_ring *rs[2] = {sq, rq};
	for (int i = 0; i < 2; i++) {
		rs[i]->slots = r_u32(r);
		rs[i]->slot_size = r_u32(r);
		rs[i]->cap = r_u32(r);
	}
	for (int i = 0; i < 2; i++) {
		struct rnic_ring *x = rs[i];
		uint32_t min = i == 0 ? RNICD_SEND_WQE_HEADER_LEN : RNICD_RECV_WQE_HEADER_LEN;
		if (x->slots == 0 && x->cap == 0)
			continue;
		if ((x->slots & (x->slots - 1)) || x->slots > RNICD_MAX_RING_SLOTS || x->cap == 0 || x->cap > x->slots ||
		    x->slot_size % RNICD_CACHE_LINE || x->slot_size < min || x->slot_size > RNICD_MAX_SLOT_SIZE)
			return EPROTO;
	}
	return 0;
}

/* rnic_place_rings reads the place of a create reply's rings laid out as
 * sq, rq (the rest of the reply r) and finds them in the session's ring
 * chunks, mapping their chunk from the reply's descriptors at *fdi if it
 * is new. The caller holds ring_mu. */
int rnic_place_rings(struct rnic_context *c, struct rbuf *r, struct rnic_reply *rep, int *fdi,
		     struct rnic_ring *sq, struct rnic_ring *rq, struct rnic_place *p, uint8_t **mem)
{
	size_t sqlen = (size_t)sq->slots * sq->slot_size;
	uint64_t len = RNICD_RING_HEADER_LEN + sqlen + (uint64_t)rq->slots * rq->slot_size;
	int err;
	if ((err = rnic_read_place(r, p, len)) || (err = r_done(r)))
		return err;
	if ((err = rnic_take_rings(c, p, rep, fdi, 0, mem)))
		return err;
	sq->base = *mem + RNICD_RING_HEADER_LEN;
	rq->base = *mem + RNICD_RING_HEADER_LEN + sqlen;
	return 0;
}

/* qp_reply reads a CREATE_QP reply into q; the caller holds ring_mu. */
static int qp_reply(struct rnic_context *c, struct rnic_qp *q, struct rnic_reply *rep)
{
	struct rbuf r;
	int fdi = 0, err;
	r_init(&r, rep->body, rep->len);
	q->h = r_u32(&r);
	q->qpx.qp_base.qp_num = r_u32(&r);
	r_qp_cap(&r, &q->cap);
	if ((err = rnic_read_layout(&r, &q->sq, &q->rq)))
		return err;
	if ((err = rnic_place_rings(c, &r, rep, &fdi, &q->sq, &q->rq, &q->place, &q->mem)))
		return err;
	if (fdi != rep->nfds)
		return EPROTO;
	q->bell = ld32(q->mem, RNICD_RING_BELL);
	q->sq_prod = ld32(q->mem, RNICD_RING_SQ_PROD);
	q->rq_prod = ld32(q->mem, RNICD_RING_RQ_PROD);
	q->rq_done = q->rq_prod;
	return 0;
}

/* The ibv_wr_* operations a QP may ask for: those wr.c posts, memory-window
 * binds and local invalidation among them. ATOMIC WRITE and FLUSH are added
 * where the device offers them (ibta15_ops); on a device without them, and
 * TSO (no raw packet QPs) anywhere, the QP is refused at creation, so a
 * program learns it there, as the tests of rdma-core expect. */
static const uint64_t send_ops_known =
	IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_SEND |
	IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
	IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW |
	IBV_QP_EX_WITH_SEND_WITH_INV;

/* ibta15_ops: the IBTA 1.5 operations a QP of a may ask for, those the
 * device's extended flags offer (a RoCE device has both, an iWARP one
 * neither), on RC only. */
static uint64_t ibta15_ops(struct rnic_context *c, const struct ibv_qp_init_attr_ex *a)
{
	uint64_t ops = 0;
	if (a->qp_type != IBV_QPT_RC)
		return 0;
	if (c->attr.cap_flags_ex & RNIC_DEVICE_ATOMIC_WRITE)
		ops |= IBV_QP_EX_WITH_ATOMIC_WRITE;
	if (c->attr.cap_flags_ex & (RNIC_DEVICE_FLUSH_GLOBAL | RNIC_DEVICE_FLUSH_PERSISTENT))
		ops |= RNIC_QP_EX_WITH_FLUSH;
	return ops;
}

static int check_init(struct rnic_context *c, struct ibv_qp_init_attr_ex *a)
{
	const uint32_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	if (!(a->comp_mask & IBV_QP_INIT_ATTR_PD) || !a->pd || !a->send_cq || !a->recv_cq)
		return EINVAL;
	if (a->comp_mask & ~known || ((a->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && a->create_flags))
		return EOPNOTSUPP;
	if (a->qp_type != IBV_QPT_RC && a->qp_type != IBV_QPT_UC && a->qp_type != IBV_QPT_UD)
		return EOPNOTSUPP; /* XRC, raw packet, driver QPs */
	if ((a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) && (a->send_ops_flags & ~(send_ops_known | ibta15_ops(c, a))))
		return EOPNOTSUPP;
	if (a->pd->context != &c->vctx.context || a->send_cq->context != a->pd->context ||
	    a->recv_cq->context != a->pd->context)
		return EINVAL;
	return 0;
}

/* grant_send_cap asks for the send queue rxe would grant: one WQE holds
 * max_send_sge SGEs or max_inline_data bytes, whichever is larger, so
 * both are raised to that space (rxe_qp_init_req; mlx5 rounds up too).
 * Programs rely on it: rdma_xclient posts a 16-byte inline SEND on a QP
 * created with max_inline_data 0 and one SGE. A raise stops at the
 * device's limit; a value asked beyond it is sent as asked, for the
 * daemon to refuse (EINVAL). */
static struct ibv_qp_cap grant_send_cap(const struct rnic_context *c, struct ibv_qp_cap cap)
{
	uint64_t wqe = (uint64_t)cap.max_send_sge * RNICD_SGE_LEN;
	if (wqe < cap.max_inline_data)
		wqe = cap.max_inline_data;
	if (cap.max_send_sge < c->attr.max_sge)
		cap.max_send_sge = (uint32_t)(wqe / RNICD_SGE_LEN < c->attr.max_sge ? wqe / RNICD_SGE_LEN : c->attr.max_sge);
	if (cap.max_inline_data < c->attr.max_inline)
		cap.max_inline_data = (uint32_t)(wqe < c->attr.max_inline ? wqe : c->attr.max_inline);
	return cap;
}

static struct rnic_qp *create_qp(struct rnic_context *c, struct ibv_qp_init_attr_ex *a)
{
	struct ibv_qp_cap cap;
	struct rnic_reply rep;
	struct rnic_qp *q;
	struct wbuf w;
	int err;

	if ((err = check_init(c, a)))
		return errno = err, NULL;
	if (!(q = calloc(1, sizeof(*q))))
		return errno = ENOMEM, NULL;
	w_init(&w);
	w_u32(&w, (to_rpd(a->pd))->h);
	w_u32(&w, (to_rcq(a->send_cq))->h);
	w_u32(&w, (to_rcq(a->recv_cq))->h);
	w_u32(&w, a->srq ? (to_rsrq(a->srq))->h : 0);
	w_u8(&w, (uint8_t)a->qp_type);
	w_u8(&w, a->sq_sig_all ? 1 : 0);
	cap = grant_send_cap(c, a->cap);
	w_qp_cap(&w, &cap);
	pthread_mutex_lock(&c->ring_mu);
	if ((err = ctx_call(c, RNICD_OP_CREATE_QP, &w, NULL, 0, &rep))) {
		pthread_mutex_unlock(&c->ring_mu);
		free(q);
		return errno = err, NULL;
	}
	err = qp_reply(c, q, &rep);
	pthread_mutex_unlock(&c->ring_mu);
	rnic_close_fds(rep.fds, rep.nfds);
	if (err) {
		if (q->mem)
			rnic_release_rings(c, &q->place);
		rnic_handle_call(c, RNICD_OP_DESTROY_QP, q->h);
		free(q);
		return errno = err, NULL;
	}
	return q;
}

static void init_qp(struct rnic_context *c, struct rnic_qp *q, struct ibv_qp_init_attr_ex *a)
{
	struct ibv_qp *b = &q->qpx.qp_base;
	b->context = &c->vctx.context;
	b->qp_context = a->qp_context;
	b->pd = a->pd;
	b->send_cq = a->send_cq;
	b->recv_cq = a->recv_cq;
	b->srq = a->srq;
	b->handle = q->h;
	b->state = IBV_QPS_RESET;
	b->qp_type = a->qp_type;
	q->sig_all = a->sq_sig_all != 0;
	pthread_mutex_init(&b->mutex, NULL);
	pthread_cond_init(&b->cond, NULL);
	pthread_spin_init(&q->sq_lock, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_init(&q->rq_lock, PTHREAD_PROCESS_PRIVATE);
	a->cap = q->cap; /* what the QP got, as the verbs report it */
	if (a->srq)
		a->cap.max_recv_wr = a->cap.max_recv_sge = 0;
	rnic_qp_ex_init(q);
	rnic_obj_add(c, OBJ_QP, q->h, q);
}

struct ibv_qp *rnic_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr)
{
	struct rnic_context *c = to_rctx(ctx);
	struct rnic_qp *q = create_qp(c, attr);
	if (!q)
		return NULL;
	init_qp(c, q, attr);
	return &q->qpx.qp_base;
}

RNIC_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex a;
	struct ibv_qp *qp;
	memset(&a, 0, sizeof(a));
	memcpy(&a, attr, sizeof(*attr));
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = pd;
	qp = rnic_create_qp_ex(pd->context, &a);
	if (qp)
		attr->cap = a.cap;
	return qp;
}

RNIC_EXPORT struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	return &(to_rqp(qp))->qpx;
}

/* w_ah_attr writes an address vector (proto.PutAV). RoCE needs the GRH:
 * without is_global the DGID is none, which the daemon refuses for
 * connected QPs as rxe does. */
void rnic_w_av(struct wbuf *w, const struct ibv_ah_attr *ah)
{
	static const uint8_t zero[16];
	const struct ibv_global_route *g = &ah->grh;
	w_gid(w, ah->is_global ? g->dgid.raw : zero);
	w_u8(w, ah->is_global ? g->sgid_index : 0);
	w_u32(w, ah->is_global ? g->flow_label : 0);
	w_u8(w, ah->is_global ? g->hop_limit : 0);
	w_u8(w, ah->is_global ? g->traffic_class : 0);
	w_u8(w, ah->sl);
	w_u8(w, ah->port_num);
	w_raw(w, zero, 6); /* DMAC: the daemon resolves it */
	w_u16(w, 0);	   /* UDP source port: the daemon picks it */
}

void rnic_r_av(struct rbuf *r, struct ibv_ah_attr *ah)
{
	uint8_t mac[6];
	memset(ah, 0, sizeof(*ah));
	r_gid(r, ah->grh.dgid.raw);
	ah->grh.sgid_index = r_u8(r);
	ah->grh.flow_label = r_u32(r);
	ah->grh.hop_limit = r_u8(r);
	ah->grh.traffic_class = r_u8(r);
	ah->sl = r_u8(r);
	ah->port_num = r_u8(r);
	r_raw(r, mac, 6);
	r_u16(r);
	ah->is_global = 1;
}

static void w_qp_attr(struct wbuf *w, const struct ibv_qp_attr *a, int mask)
{
	(void)mask; /* every field is sent; the daemon reads those of mask */
	w_u8(w, (uint8_t)a->qp_state);
	w_u8(w, (uint8_t)a->cur_qp_state);
	w_u8(w, (uint8_t)a->path_mtu);
	w_u32(w, a->qkey);
	w_u32(w, a->rq_psn);
	w_u32(w, a->sq_psn);
	w_u32(w, a->dest_qp_num);
	w_u32(w, (uint32_t)a->qp_access_flags);
	w_qp_cap(w, &a->cap);
	rnic_w_av(w, &a->ah_attr);
	w_u16(w, a->pkey_index);
	w_u8(w, a->en_sqd_async_notify ? 1 : 0);
	w_u8(w, a->max_rd_atomic);
	w_u8(w, a->max_dest_rd_atomic);
	w_u8(w, a->min_rnr_timer);
	w_u8(w, a->port_num);
	w_u8(w, a->timeout);
	w_u8(w, a->retry_cnt);
	w_u8(w, a->rnr_retry);
	w_u8(w, (uint8_t)a->path_mig_state);
}

static void r_qp_attr(struct rbuf *r, struct ibv_qp_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = (enum ibv_qp_state)r_u8(r);
	a->cur_qp_state = (enum ibv_qp_state)r_u8(r);
	a->path_mtu = (enum ibv_mtu)r_u8(r);
	a->qkey = r_u32(r);
	a->rq_psn = r_u32(r);
	a->sq_psn = r_u32(r);
	a->dest_qp_num = r_u32(r);
	a->qp_access_flags = (int)r_u32(r);
	r_qp_cap(r, &a->cap);
	rnic_r_av(r, &a->ah_attr);
	a->pkey_index = r_u16(r);
	a->sq_draining = r_u8(r);
	a->max_rd_atomic = r_u8(r);
	a->max_dest_rd_atomic = r_u8(r);
	a->min_rnr_timer = r_u8(r);
	a->port_num = r_u8(r);
	a->timeout = r_u8(r);
	a->retry_cnt = r_u8(r);
	a->rnr_retry = r_u8(r);
	a->path_mig_state = (enum ibv_mig_state)r_u8(r);
}

RNIC_EXPORT int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask)
{
	struct rnic_qp *q = to_rqp(qp);
	struct rnic_reply rep;
	struct wbuf w;
	struct rbuf r;
	uint8_t st;
	int err;

	w_init(&w);
	w_u32(&w, q->h);
	w_u32(&w, (uint32_t)attr_mask);
	w_qp_attr(&w, attr, attr_mask);
	/* the error is returned and left in errno, as rdma-core's command
	 * write leaves it (qperf prints strerror(errno)) */
	if ((err = ctx_call(to_rctx(qp->context), RNICD_OP_MODIFY_QP, &w, NULL, 0, &rep)))
		return errno = err;
	rnic_close_fds(rep.fds, rep.nfds);
	r_init(&r, rep.body, rep.len);
	st = r_u8(&r);
	if ((err = r_done(&r)))
		return errno = err;
	qp->state = (enum ibv_qp_state)st;
	if (st == IBV_QPS_RESET) {
		/* its completions go from its CQs, its receives from the count */
		rnic_cq_clean(to_rcq(qp->send_cq), q);
		if (qp->recv_cq != qp->send_cq)
			rnic_cq_clean(to_rcq(qp->recv_cq), q);
		rnic_rq_forget(q);
	}
	return 0;
}

/* rnic_refresh_state asks the daemon for q's state, which it also stores
 * in the rings. The rings' copy is a cache: it may lag a move the CM made
 * in the daemon (the iWARP engine's RTS at the peer's RTR), so a post
 * that finds the QP not ready asks before it fails. */
void rnic_refresh_state(struct rnic_qp *q)
{
	struct rnic_reply rep;
	struct wbuf w;

	w_init(&w);
	w_u32(&w, q->h);
	if (ctx_call(to_rctx(q->qpx.qp_base.context), RNICD_OP_QP_STATE, &w, NULL, 0, &rep) == 0)
		rnic_close_fds(rep.fds, rep.nfds);
}

RNIC_EXPORT int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
			     struct ibv_qp_init_attr *init_attr)
{
	struct rnic_qp *q = to_rqp(qp);
	struct rnic_reply rep;
	struct wbuf w;
	struct rbuf r;
	int err;

	(void)attr_mask; /* every attribute is returned */
	w_init(&w);
	w_u32(&w, q->h);
	if ((err = ctx_call(to_rctx(qp->context), RNICD_OP_QUERY_QP, &w, NULL, 0, &rep)))
		return err;
	rnic_close_fds(rep.fds, rep.nfds);
	r_init(&r, rep.body, rep.len);
	r_qp_attr(&r, attr);
	if ((err = r_done(&r)))
		return err;
	qp->state = attr->qp_state;
	if (init_attr) {
		memset(init_attr, 0, sizeof(*init_attr));
		init_attr->qp_context = qp->qp_context;
		init_attr->send_cq = qp->send_cq;
		init_attr->recv_cq = qp->recv_cq;
		init_attr->srq = qp->srq;
		init_attr->cap = attr->cap;
		init_attr->qp_type = qp->qp_type;
		init_attr->sq_sig_all = q->sig_all;
	}
	return 0;
}

RNIC_EXPORT int ibv_destroy_qp(struct ibv_qp *qp)
{
	struct rnic_qp *q = to_rqp(qp);
	struct rnic_context *c = to_rctx(qp->context);
	int err = rnic_handle_call(c, RNICD_OP_DESTROY_QP, q->h);
	if (err && !c->conn.dead)
		return err;
	/* Its completions go from its CQs, as mlx5's destroy cleans them: a
	 * program frees what its wr_ids point at once the QP is gone, and
	 * libfabric's rxm crashed polling a flush of a destroyed QP (the
	 * daemon moved them all into the rings before replying). Receives
	 * removed leave their SRQ's count (cqclean.c). */
	rnic_cq_clean(to_rcq(qp->send_cq), q);
	if (qp->recv_cq != qp->send_cq)
		rnic_cq_clean(to_rcq(qp->recv_cq), q);
	rnic_obj_del(c, OBJ_QP, q->h);
	rnic_release_rings(c, &q->place);
	pthread_spin_destroy(&q->sq_lock);
	pthread_spin_destroy(&q->rq_lock);
	pthread_mutex_destroy(&qp->mutex);
	pthread_cond_destroy(&qp->cond);
	free(q);
	return 0;
}
