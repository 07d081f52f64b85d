/* SPDX-License-Identifier: BSD-2-Clause */
/* The receive queue's depth. A QP's receives wait in two places: the
 * ring the library writes and, once the daemon has taken them, the NIC's
 * own queue; each holds up to max_recv_wr, so the ring's room alone would
 * let a program post twice what it asked for. As mlx5's library does, a
 * receive counts against the queue from its post until its completion is
 * polled: polling notes each receive completion on its QP (rq_done), and
 * a post finding rq_prod - rq_done at max_recv_wr fails with ENOMEM, as
 * rxe's does. A QP on an SRQ counts on the SRQ, whose depth is max_wr. */
#include "rnic.h"

/* qp_of finds the QP a completion of CQ q names: the CQ's cached one,
 * while no QP of the context has gone since, else by a scan of the
 * context's objects. The caller holds objs_mu (a QP being destroyed
 * leaves the table, and bumps qp_gen, under it). */
static struct rnic_qp *qp_of(struct rnic_context *c, struct rnic_cq *q, uint32_t qpn)
{
	if (q->seen_qp && q->seen_qpn == qpn && q->seen_gen == c->qp_gen)
		return q->seen_qp;
	q->seen_qp = NULL;
	for (size_t i = 0; i < c->nobjs; i++) {
		struct rnic_qp *p = c->objs[i].obj;
		if (c->objs[i].kind == OBJ_QP && p->qpx.qp_base.qp_num == qpn) {
			q->seen_qp = p;
			break;
		}
	}
	q->seen_qpn = qpn;
	q->seen_gen = c->qp_gen;
	return q->seen_qp;
}

/* count_done counts one receive done, never past those posted: a
 * completion that outlived a RESET (rnic_rq_forget) counts for nothing. */
static void count_done(uint32_t *done, const uint32_t *prod)
{
	uint32_t d = __atomic_load_n(done, __ATOMIC_RELAXED);
	do {
		if ((int32_t)(__atomic_load_n(prod, __ATOMIC_RELAXED) - d) <= 0)
			return;
	} while (!__atomic_compare_exchange_n(done, &d, d + 1, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
}

/* rnic_count_recv counts a receive of p done: on its SRQ if it has one. */
void rnic_count_recv(struct rnic_qp *p)
{
	struct rnic_srq *s = to_rsrq(p->qpx.qp_base.srq);
	if (s)
		count_done(&s->done, &s->prod);
	else
		count_done(&p->rq_done, &p->rq_prod);
}

/* rnic_note_recv counts a receive completion polled from q (whatever its
 * status: a flushed receive leaves the queue too) on its QP's queue. */
void rnic_note_recv(struct rnic_cq *q, const struct ibv_wc *wc)
{
	struct rnic_context *c;
	struct rnic_qp *p;

	if (!(wc->opcode & IBV_WC_RECV))
		return;
	c = to_rctx(q->cq.context);
	pthread_mutex_lock(&c->objs_mu);
	if ((p = qp_of(c, q, wc->qp_num)))
		rnic_count_recv(p);
	pthread_mutex_unlock(&c->objs_mu);
}

/* rnic_rq_full: a receive queue that has prod posted and done completed
 * holds depth receives. The caller holds the queue's lock. */
int rnic_rq_full(uint32_t prod, const uint32_t *done, uint32_t depth)
{
	return prod - __atomic_load_n(done, __ATOMIC_RELAXED) >= depth;
}

/* rnic_rq_forget empties the count: a QP moved to RESET loses its
 * receives without completions (an SRQ's stay in the SRQ). */
void rnic_rq_forget(struct rnic_qp *q)
{
	pthread_spin_lock(&q->rq_lock);
	__atomic_store_n(&q->rq_done, q->rq_prod, __ATOMIC_RELAXED);
	pthread_spin_unlock(&q->rq_lock);
}
