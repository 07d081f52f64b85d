/* SPDX-License-Identifier: BSD-2-Clause */
/* Completion queues. Polling reads the ring the daemon fills, with no
 * system call (a KICK_CQ notice only when the daemon waits for room). A
 * CQ costs no descriptor: its events come through its slot of its
 * completion channel (channel.c). */
#include "rnic.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

int rnic_map_fd(int fd, size_t len, uint8_t **out)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return errno;
	*out = p;
	return 0;
}

/* cq_reply takes CREATE_CQ_ON's reply: the ring in the session's ring
 * chunks (mapping its chunk if the reply brings it, its only descriptor).
 * The caller holds ring_mu. */
static int cq_reply(struct rnic_context *c, struct rnic_cq *q, struct rnic_reply *rep)
{
	struct rbuf r;
	int fdi = 0, err;
	r_init(&r, rep->body, rep->len);
	if ((err = rnic_read_cq(&r, q)) || (err = rnic_take_rings(c, &q->place, rep, &fdi, 0, &q->ring)))
		return err;
	if (fdi != rep->nfds)
		return EPROTO;
	q->cons = ld32(q->ring, RNICD_CQ_CONS);
	return 0;
}

/* cq_on makes q (created on the daemon's side, h set) one of ch's. */
static int cq_on(struct rnic_context *c, struct rnic_cq *q, struct ibv_comp_channel *ch)
{
	int err;
	if (!ch)
		return 0;
	if ((err = rnic_chan_add(to_rchan(ch), q)))
		return err;
	pthread_mutex_lock(&c->vctx.context.mutex);
	ch->refcnt++;
	pthread_mutex_unlock(&c->vctx.context.mutex);
	return 0;
}

struct rnic_cq *rnic_create_cq(struct rnic_context *c, int cqe, struct ibv_comp_channel *ch)
{
	struct rnic_reply rep;
	struct rnic_cq *q;
	struct wbuf w;
	int err;

	if (cqe <= 0 || (uint64_t)cqe > c->attr.max_cqe)
		return errno = EINVAL, NULL;
	if (!(q = calloc(1, sizeof(*q))))
		return errno = ENOMEM, NULL;
	w_init(&w);
	w_u32(&w, (uint32_t)cqe);
	w_u32(&w, ch ? (to_rchan(ch))->h : 0);
	pthread_mutex_lock(&c->ring_mu);
	if ((err = ctx_call(c, RNICD_OP_CREATE_CQ_ON, &w, NULL, 0, &rep))) {
		pthread_mutex_unlock(&c->ring_mu);
		free(q);
		return errno = err, NULL;
	}
	err = cq_reply(c, q, &rep);
	pthread_mutex_unlock(&c->ring_mu);
	rnic_close_fds(rep.fds, rep.nfds);
	if (!err)
		err = cq_on(c, q, ch);
	if (err) {
		if (q->ring)
			rnic_release_rings(c, &q->place);
		rnic_handle_call(c, RNICD_OP_DESTROY_CQ, q->h);
		free(q);
		return errno = err, NULL;
	}
	pthread_spin_init(&q->lock, PTHREAD_PROCESS_PRIVATE);
	q->cq.context = &c->vctx.context;
	q->cq.channel = ch;
	q->cq.cqe = (int)q->cap;
	q->cq.handle = q->h;
	pthread_mutex_init(&q->cq.mutex, NULL);
	pthread_cond_init(&q->cq.cond, NULL);
	rnic_obj_add(c, OBJ_CQ, q->h, q);
	return q;
}

RNIC_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
					 struct ibv_comp_channel *channel, int comp_vector)
{
	struct rnic_cq *q;
	if (comp_vector < 0 || comp_vector >= context->num_comp_vectors)
		return errno = EINVAL, NULL;
	if (!(q = rnic_create_cq(to_rctx(context), cqe, channel)))
		return NULL;
	q->cq.cq_context = cq_context;
	return ibv_cq_ex_to_cq(&q->cq);
}

RNIC_EXPORT int ibv_destroy_cq(struct ibv_cq *cq)
{
	struct rnic_cq *q = to_rcq(cq);
	struct rnic_context *c = to_rctx(cq->context);
	int err = rnic_handle_call(c, RNICD_OP_DESTROY_CQ, q->h);
	if (err && !c->conn.dead)
		return err;
	rnic_obj_del(c, OBJ_CQ, q->h);
	if (cq->channel) {
		rnic_chan_detach(q);
		pthread_mutex_lock(&cq->context->mutex);
		cq->channel->refcnt--;
		pthread_mutex_unlock(&cq->context->mutex);
	}
	rnic_release_rings(c, &q->place);
	rnic_release_rings(c, &q->retired);
	pthread_spin_destroy(&q->lock);
	pthread_mutex_destroy(&cq->mutex);
	pthread_cond_destroy(&cq->cond);
	free(q);
	return 0;
}

/* wc_from_slot decodes a completion slot (proto/wc.go) into wc. The
 * immediate is kept as the wire has it (network order), as ibv_wc wants. */
void rnic_wc_from_slot(const uint8_t *s, struct ibv_wc *wc)
{
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = get64(s + RNICD_WC_WRID);
	wc->status = (enum ibv_wc_status)s[RNICD_WC_STATUS];
	wc->opcode = (enum ibv_wc_opcode)s[RNICD_WC_OPCODE];
	wc->wc_flags = s[RNICD_WC_FLAGS];
	wc->sl = s[RNICD_WC_SL]; /* UD: the RoCE L3 header type, as mlx5 reports it */
	wc->vendor_err = get32(s + RNICD_WC_VENDOR_ERR);
	wc->byte_len = get32(s + RNICD_WC_BYTE_LEN);
	if (wc->wc_flags & IBV_WC_WITH_INV)
		wc->invalidated_rkey = get32(s + RNICD_WC_INV_RKEY);
	else
		wc->imm_data = htobe32(get32(s + RNICD_WC_IMM));
	wc->qp_num = get32(s + RNICD_WC_QPN);
	wc->src_qp = get32(s + RNICD_WC_SRC_QP);
	wc->pkey_index = get16(s + RNICD_WC_PKEY_INDEX);
}

/* kick tells the daemon there is room again, if it waits for it. */
void rnic_cq_kick(struct rnic_cq *q)
{
	uint32_t m = ld32(q->ring, RNICD_CQ_MOVER);
	struct rnic_context *c;
	struct wbuf w;
	if (!(m & RNICD_MOVER_WANTS_SPACE) ||
	    !__atomic_compare_exchange_n(ring_u32(q->ring, RNICD_CQ_MOVER), &m, m & ~(uint32_t)RNICD_MOVER_WANTS_SPACE, 0,
					 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		return;
	c = to_rctx(q->cq.context);
	w_init(&w);
	w_u32(&w, q->h);
	pthread_mutex_lock(&c->conn.mu);
	rnic_notice(&c->conn, RNICD_OP_KICK_CQ, &w);
	pthread_mutex_unlock(&c->conn.mu);
}

int rnic_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	struct rnic_cq *q = to_rcq(cq);
	uint32_t avail;
	int k = 0;

	if (n <= 0)
		return 0;
	if (ld32(q->ring, RNICD_CQ_PROD) == q->cons) {
		rnic_cq_idle(q);
		return 0;
	}
	pthread_spin_lock(&q->lock);
	avail = ld32(q->ring, RNICD_CQ_PROD) - q->cons;
	if (avail > q->slots)
		avail = 0; /* a daemon writing nonsense */
	for (; k < n && (uint32_t)k < avail; k++) {
		rnic_wc_from_slot(q->ring + RNICD_RING_HEADER_LEN + (size_t)(q->cons & (q->slots - 1)) * RNICD_WC_SLOT_LEN, &wc[k]);
		rnic_note_recv(q, &wc[k]);
		q->cons++;
	}
	if (k > 0)
		st32(q->ring, RNICD_CQ_CONS, q->cons);
	q->empty_polls = 0;
	pthread_spin_unlock(&q->lock);
	if (k > 0)
		rnic_cq_kick(q);
	return k;
}

int rnic_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	struct rnic_cq *q = to_rcq(cq);
	uint32_t none = RNICD_ARM_NONE;
	int want_sol, mover_sol;

	if (solicited_only)
		/* an arm for any completion stays one */
		__atomic_compare_exchange_n(ring_u32(q->ring, RNICD_CQ_ARM), &none, RNICD_ARM_SOLICITED, 0, __ATOMIC_SEQ_CST,
					    __ATOMIC_SEQ_CST);
	else
		st32(q->ring, RNICD_CQ_ARM, RNICD_ARM_NEXT);
	want_sol = ld32(q->ring, RNICD_CQ_ARM) == RNICD_ARM_SOLICITED;
	mover_sol = (ld32(q->ring, RNICD_CQ_MOVER) & RNICD_MOVER_SOLICITED) != 0;
	if (want_sol != mover_sol)
		/* the daemon's CQ is armed for the other kind: re-arm it
		 * before returning, so the arm is in force */
		return rnic_handle_call(to_rctx(cq->context), RNICD_OP_ARM_CQ, q->h);
	return 0;
}

RNIC_EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += nevents;
	pthread_cond_signal(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}
