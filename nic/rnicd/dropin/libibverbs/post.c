/* SPDX-License-Identifier: BSD-2-Clause */
/* Posting: a WR is checked as the NIC would check it (so errors are
 * synchronous), written into the next slot of the ring (proto/wqe.go),
 * the producer index published, and the doorbell written only if the
 * daemon's drainer sleeps. INLINE data is gathered at post time. No
 * system call otherwise, nothing allocated. ibv_post_* return an errno
 * value and set *bad_wr to the first WR not posted. */
#include "rnic.h"

#include <sched.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>


/* rnic_ring_bell wakes the drainer of a ring if it sleeps: the ring's bit
 * in the session doorbell, then its summary bit (atomic ORs, so threads
 * posting to other QPs at once lose nothing), then a byte on the session's
 * doorbell socket (the daemon keeps the other end: nothing the program does
 * to this end's flags can make the daemon's reads wait).
 *
 * Callers ring after releasing the queue's lock: the send is a
 * system call, and under a spinlock it would make every other poster of
 * the queue spin through it. Nothing is lost by it: the caller's own
 * producer store is sequenced before this load of sleeping, whichever
 * thread rings; a poster that finds the drainer awake leaves it to see the
 * new index, and two posters may both ring (the daemon takes the bit
 * once). The QP or SRQ outlives the call, as verbs requires of a program
 * that posts and destroys. */
void rnic_ring_bell(struct rnic_context *c, uint8_t *mem, uint32_t bell)
{
	const char one = 1;
	uint32_t k = bell / 64;
	/* Memory order: the producer index was stored seq_cst before this
	 * seq_cst load, and the drainer stores sleeping = 1 (seq_cst) before
	 * it loads the producer indices again (proto/ring.go): in the single
	 * total order one of the two loads sees the other side's store, so
	 * either the drainer sees the new WQEs or this load sees it asleep. */
	if (!ld32(mem, RNICD_RING_SLEEPING) || bell >= RNICD_MAX_BELLS)
		return;
	__atomic_fetch_or(&c->bell_area[RNICD_BELL_SUMMARY_WORDS + k], (uint64_t)1 << (bell % 64), __ATOMIC_SEQ_CST);
	__atomic_fetch_or(&c->bell_area[k / 64], (uint64_t)1 << (k % 64), __ATOMIC_SEQ_CST);
	/* MSG_DONTWAIT: a full socket (EAGAIN) means the daemon has bytes
	 * to read before it takes the bits, this one among them; it never
	 * blocks the poster. MSG_NOSIGNAL: a daemon gone is no SIGPIPE. */
	if (send(c->bell_fd, &one, sizeof(one), MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
		/* full, or the daemon is gone: its reaping ends the QP */
	}
}

/* rnic_wait_recvs waits until the daemon has put the receive WQEs
 * before prod into the NIC, so a message arriving after post_recv
 * returns finds them (as on an in-process NIC): spinning first, then
 * napping, for at most a second. */
void rnic_wait_recvs(struct rnic_context *c, uint8_t *mem, uint32_t prod)
{
	struct timespec nap = {0, 20000};
	for (int i = 0; (int32_t)(ld32(mem, RNICD_RING_RQ_DONE) - prod) < 0; i++) {
		if (c->conn.dead || i > 200 + 50000)
			return;
		if (i < 200)
			sched_yield();
		else
			nanosleep(&nap, NULL);
	}
}

static inline uint8_t *slot(const struct rnic_ring *r, uint32_t i)
{
	return r->base + (size_t)(i & (r->slots - 1)) * r->slot_size;
}

static int opcode_ok(enum ibv_qp_type t, enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		return 1;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_LOCAL_INV:
	case IBV_WR_BIND_MW:
		return t != IBV_QPT_UD;
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
	case IBV_WR_SEND_WITH_INV:
		return t == IBV_QPT_RC;
	default:
		return 0;
	}
}

/* check_send applies the NIC's rules to wr on q. */
static int check_send(struct rnic_qp *q, const struct ibv_send_wr *wr, uint64_t *total)
{
	struct rnic_context *c = to_rctx(q->qpx.qp_base.context);
	uint32_t max_sge = q->cap.max_send_sge;
	int inl = wr->send_flags & IBV_SEND_INLINE;

	if (!opcode_ok(q->qpx.qp_base.qp_type, wr->opcode))
		return EINVAL;
	if (wr->send_flags & ~(unsigned)(IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_INLINE))
		return EINVAL;
	if (wr->opcode == IBV_WR_RDMA_READ && max_sge > c->attr.max_sge_rd)
		max_sge = (uint32_t)c->attr.max_sge_rd;
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > max_sge)
		return EINVAL;
	if (wr->opcode == IBV_WR_BIND_MW &&
	    (wr->num_sge || inl || rnic_check_bind(&q->qpx.qp_base, wr->bind_mw.mw, &wr->bind_mw.bind_info)))
		return EINVAL; /* a bind moves no data (rxe refuses the same) */
	*total = 0;
	for (int i = 0; i < wr->num_sge; i++)
		*total += wr->sg_list[i].length;
	if (*total > c->attr.max_msg_size)
		return EINVAL;
	if (inl && (*total > q->cap.max_inline_data || *total > q->sq.slot_size - RNICD_SEND_WQE_HEADER_LEN ||
		    wr->opcode == IBV_WR_RDMA_READ || wr->opcode > IBV_WR_SEND_WITH_IMM))
		return EINVAL;
	if (!inl && (uint32_t)wr->num_sge > (q->sq.slot_size - RNICD_SEND_WQE_HEADER_LEN) / RNICD_SGE_LEN)
		return EINVAL;
	if (wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP || wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		if (c->attr.atomic_cap == IBV_ATOMIC_NONE)
			return EOPNOTSUPP;
		if (wr->num_sge != 1 || wr->sg_list[0].length != 8 || wr->wr.atomic.remote_addr & 7)
			return EINVAL;
	}
	if (q->qpx.qp_base.qp_type == IBV_QPT_UD &&
	    (!wr->wr.ud.ah || wr->wr.ud.ah->pd != q->qpx.qp_base.pd || wr->wr.ud.remote_qpn > 0xffffff))
		return EINVAL; /* an AH of another PD would move the QP to ERR in the daemon */
	return 0;
}

/* rnic_put_send_hdr writes the fixed part of a send WQE. */
void rnic_put_send_hdr(uint8_t *s, uint64_t wr_id, uint8_t opcode, uint8_t flags)
{
	memset(s, 0, RNICD_SEND_WQE_HEADER_LEN);
	put64(s + RNICD_SEND_WRID, wr_id);
	s[RNICD_SEND_OPCODE] = opcode;
	s[RNICD_SEND_FLAGS] = flags;
}

static void write_send(struct rnic_qp *q, uint8_t *s, const struct ibv_send_wr *wr, uint64_t total)
{
	rnic_put_send_hdr(s, wr->wr_id, (uint8_t)wr->opcode, (uint8_t)wr->send_flags);
	if (wr->opcode == IBV_WR_BIND_MW) {
		rnic_put_bind(s, wr->bind_mw.mw, wr->bind_mw.rkey, &wr->bind_mw.bind_info);
		return;
	}
	if (wr->opcode == IBV_WR_SEND_WITH_INV || wr->opcode == IBV_WR_LOCAL_INV)
		put32(s + RNICD_SEND_INV_RKEY, wr->invalidate_rkey);
	else
		put32(s + RNICD_SEND_IMM, be32toh(wr->imm_data)); /* proto: host order of the wire value */
	switch (q->qpx.qp_base.qp_type) {
	case IBV_QPT_UD:
		put32(s + RNICD_SEND_AH, (to_rah(wr->wr.ud.ah))->h);
		put32(s + RNICD_SEND_REMOTE_QPN, wr->wr.ud.remote_qpn);
		put32(s + RNICD_SEND_REMOTE_QKEY, wr->wr.ud.remote_qkey);
		break;
	default:
		if (wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP || wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			put64(s + RNICD_SEND_REMOTE_ADDR, wr->wr.atomic.remote_addr);
			put32(s + RNICD_SEND_RKEY, wr->wr.atomic.rkey);
			put64(s + RNICD_SEND_COMPARE_ADD, wr->wr.atomic.compare_add);
			put64(s + RNICD_SEND_SWAP, wr->wr.atomic.swap);
		} else {
			put64(s + RNICD_SEND_REMOTE_ADDR, wr->wr.rdma.remote_addr);
			put32(s + RNICD_SEND_RKEY, wr->wr.rdma.rkey);
		}
	}
	if (wr->send_flags & IBV_SEND_INLINE) {
		uint8_t *p = s + RNICD_SEND_WQE_HEADER_LEN;
		for (int i = 0; i < wr->num_sge; i++) {
			memcpy(p, (void *)(uintptr_t)wr->sg_list[i].addr, wr->sg_list[i].length);
			p += wr->sg_list[i].length;
		}
		put32(s + RNICD_SEND_INLINE_LEN, (uint32_t)total);
		return;
	}
	put16(s + RNICD_SEND_NUM_SGE, (uint16_t)wr->num_sge);
	for (int i = 0; i < wr->num_sge; i++) {
		uint8_t *e = s + RNICD_SEND_WQE_HEADER_LEN + i * RNICD_SGE_LEN;
		put64(e + RNICD_SGE_ADDR, wr->sg_list[i].addr);
		put32(e + RNICD_SGE_LENGTH, wr->sg_list[i].length);
		put32(e + RNICD_SGE_LKEY, wr->sg_list[i].lkey);
	}
}

static int sq_ready(struct rnic_qp *q)
{
	uint32_t st = ld32(q->mem, RNICD_RING_STATE);
	return st != IBV_QPS_RESET && st != IBV_QPS_INIT && st != IBV_QPS_RTR;
}

int rnic_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct rnic_qp *q = to_rqp(qp);
	int err = 0, posted = 0;
	uint64_t total;

	if (!sq_ready(q) && !to_rctx(qp->context)->conn.dead)
		rnic_refresh_state(q);
	pthread_spin_lock(&q->sq_lock);
	if (!sq_ready(q) || to_rctx(qp->context)->conn.dead)
		err = EINVAL;
	for (; wr && !err; wr = wr->next, posted++) {
		if ((err = check_send(q, wr, &total)))
			break;
		if (q->sq_prod - ld32(q->mem, RNICD_RING_SQ_CONS) >= q->sq.cap) {
			err = ENOMEM;
			break;
		}
		write_send(q, slot(&q->sq, q->sq_prod), wr, total);
		st32(q->mem, RNICD_RING_SQ_PROD, ++q->sq_prod);
	}
	pthread_spin_unlock(&q->sq_lock);
	if (posted) /* after the unlock: see rnic_ring_bell */
		rnic_ring_bell(to_rctx(q->qpx.qp_base.context), q->mem, q->bell);
	if (err)
		*bad = wr;
	return err;
}

/* put_recv writes receive WRs into ring r (a QP's or an SRQ's), of a
 * queue depth deep with done receives completed (rqdepth.c). */
static int put_recv(struct rnic_ring *r, uint8_t *mem, uint32_t *prod, const uint32_t *done, uint32_t depth,
		    uint32_t max_sge, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad, int *posted)
{
	for (; wr; wr = wr->next) {
		uint8_t *s;
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > max_sge ||
		    (uint32_t)wr->num_sge > (r->slot_size - RNICD_RECV_WQE_HEADER_LEN) / RNICD_SGE_LEN) {
			*bad = wr;
			return EINVAL;
		}
		if (*prod - ld32(mem, RNICD_RING_RQ_CONS) >= r->cap || rnic_rq_full(*prod, done, depth)) {
			*bad = wr;
			return ENOMEM;
		}
		s = slot(r, *prod);
		put64(s + RNICD_RECV_WRID, wr->wr_id);
		put32(s + RNICD_RECV_NUM_SGE, (uint32_t)wr->num_sge);
		put32(s + RNICD_RECV_RESVD, 0);
		for (int i = 0; i < wr->num_sge; i++) {
			uint8_t *e = s + RNICD_RECV_WQE_HEADER_LEN + i * RNICD_SGE_LEN;
			put64(e + RNICD_SGE_ADDR, wr->sg_list[i].addr);
			put32(e + RNICD_SGE_LENGTH, wr->sg_list[i].length);
			put32(e + RNICD_SGE_LKEY, wr->sg_list[i].lkey);
		}
		st32(mem, RNICD_RING_RQ_PROD, ++*prod);
		(*posted)++;
	}
	return 0;
}

int rnic_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct rnic_qp *q = to_rqp(qp);
	struct rnic_context *c = to_rctx(qp->context);
	uint32_t st, prod;
	int err, posted = 0;

	if (qp->srq) {
		*bad = wr;
		return EINVAL;
	}
	pthread_spin_lock(&q->rq_lock);
	st = ld32(q->mem, RNICD_RING_STATE);
	if (st == IBV_QPS_RESET || c->conn.dead) {
		pthread_spin_unlock(&q->rq_lock);
		*bad = wr;
		return EINVAL;
	}
	err = put_recv(&q->rq, q->mem, &q->rq_prod, &q->rq_done, q->cap.max_recv_wr, q->cap.max_recv_sge, wr, bad,
		       &posted);
	prod = q->rq_prod;
	pthread_spin_unlock(&q->rq_lock);
	if (posted)
		rnic_ring_bell(c, q->mem, q->bell);
	/* In INIT nothing can arrive yet (the daemon takes the ring before
	 * it moves the QP on); later a message may come at once. */
	if (posted && st != IBV_QPS_INIT)
		rnic_wait_recvs(c, q->mem, prod);
	return err;
}

int rnic_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct rnic_srq *s = to_rsrq(srq);
	struct rnic_context *c = to_rctx(srq->context);
	uint32_t prod;
	int err, posted = 0;

	if (c->conn.dead) {
		*bad = wr;
		return EINVAL;
	}
	pthread_spin_lock(&s->lock);
	err = put_recv(&s->rq, s->mem, &s->prod, &s->done, s->rq.cap, s->max_sge, wr, bad, &posted);
	prod = s->prod;
	pthread_spin_unlock(&s->lock);
	if (posted) {
		rnic_ring_bell(c, s->mem, s->bell);
		rnic_wait_recvs(c, s->mem, prod);
	}
	return err;
}
