/* SPDX-License-Identifier: BSD-2-Clause */
/* The ibv_wr_* API of struct ibv_qp_ex: wr_start takes the send ring,
 * each ibv_wr_<op> claims the next slot and writes the WQE's header there,
 * the ibv_wr_set_* calls fill in its address, SGEs or inline data, and
 * wr_complete publishes every WQE at once (one producer store, one
 * doorbell at most) or, after any error, none of them. */
#include "rnic.h"

#include <string.h>

void rnic_put_send_hdr(uint8_t *s, uint64_t wr_id, uint8_t opcode, uint8_t flags);

static inline struct rnic_qp *to_q(struct ibv_qp_ex *x) { return to_rqp_ex(x); }


static void wr_start(struct ibv_qp_ex *x)
{
	struct rnic_qp *q = to_q(x);
	pthread_spin_lock(&q->sq_lock);
	q->wr_first = q->sq_prod;
	q->wr_slot = NULL;
	q->wr_err = 0;
	{
		uint32_t st = ld32(q->mem, RNICD_RING_STATE);
		if (st == IBV_QPS_RESET || st == IBV_QPS_INIT || st == IBV_QPS_RTR)
			q->wr_err = EINVAL;
	}
}

/* begin claims the next slot for a WQE of opcode, if q allows it. */
static uint8_t *begin(struct ibv_qp_ex *x, enum ibv_wr_opcode op, int allowed)
{
	struct rnic_qp *q = to_q(x);
	unsigned flags = x->wr_flags;
	q->wr_slot = NULL;
	if (q->wr_err)
		return NULL;
	if (!allowed || flags & ~(unsigned)(IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_INLINE)) {
		q->wr_err = EINVAL;
		return NULL;
	}
	if (q->sq_prod - ld32(q->mem, RNICD_RING_SQ_CONS) >= q->sq.cap) {
		q->wr_err = ENOMEM;
		return NULL;
	}
	q->wr_slot = q->sq.base + (size_t)(q->sq_prod & (q->sq.slots - 1)) * q->sq.slot_size;
	q->sq_prod++; /* private until wr_complete stores it */
	q->wr_op = op;
	rnic_put_send_hdr(q->wr_slot, x->wr_id, (uint8_t)op, (uint8_t)(flags & ~(unsigned)IBV_SEND_INLINE));
	return q->wr_slot;
}

static int is_rc(struct ibv_qp_ex *x) { return x->qp_base.qp_type == IBV_QPT_RC; }
static int not_ud(struct ibv_qp_ex *x) { return x->qp_base.qp_type != IBV_QPT_UD; }

static void rdma(struct ibv_qp_ex *x, enum ibv_wr_opcode op, int allowed, uint32_t rkey, uint64_t addr)
{
	uint8_t *s = begin(x, op, allowed);
	if (s) {
		put64(s + RNICD_SEND_REMOTE_ADDR, addr);
		put32(s + RNICD_SEND_RKEY, rkey);
	}
}

static void wr_rdma_write(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr)
{
	rdma(x, IBV_WR_RDMA_WRITE, not_ud(x), rkey, addr);
}

static void wr_rdma_write_imm(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr, __be32 imm)
{
	rdma(x, IBV_WR_RDMA_WRITE_WITH_IMM, not_ud(x), rkey, addr);
	if (to_q(x)->wr_slot)
		put32(to_q(x)->wr_slot + RNICD_SEND_IMM, be32toh(imm));
}

static void wr_rdma_read(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr)
{
	rdma(x, IBV_WR_RDMA_READ, is_rc(x), rkey, addr);
}

static void atomic(struct ibv_qp_ex *x, enum ibv_wr_opcode op, uint32_t rkey, uint64_t addr, uint64_t cmp_add,
		   uint64_t swap)
{
	struct rnic_context *c = to_rctx(x->qp_base.context);
	uint8_t *s;
	if (c->attr.atomic_cap == IBV_ATOMIC_NONE && !to_q(x)->wr_err)
		to_q(x)->wr_err = EOPNOTSUPP;
	s = begin(x, op, is_rc(x) && !(addr & 7));
	if (s) {
		put64(s + RNICD_SEND_REMOTE_ADDR, addr);
		put32(s + RNICD_SEND_RKEY, rkey);
		put64(s + RNICD_SEND_COMPARE_ADD, cmp_add);
		put64(s + RNICD_SEND_SWAP, swap);
	}
}

static void wr_atomic_cmp_swp(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr, uint64_t cmp, uint64_t swap)
{
	atomic(x, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, addr, cmp, swap);
}

static void wr_atomic_fetch_add(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr, uint64_t add)
{
	atomic(x, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, addr, add, 0);
}

static void wr_send(struct ibv_qp_ex *x) { begin(x, IBV_WR_SEND, 1); }

static void wr_send_imm(struct ibv_qp_ex *x, __be32 imm)
{
	uint8_t *s = begin(x, IBV_WR_SEND_WITH_IMM, 1);
	if (s)
		put32(s + RNICD_SEND_IMM, be32toh(imm));
}

static void wr_send_inv(struct ibv_qp_ex *x, uint32_t rkey)
{
	uint8_t *s = begin(x, IBV_WR_SEND_WITH_INV, is_rc(x));
	if (s)
		put32(s + RNICD_SEND_INV_RKEY, rkey);
}

static void fail(struct ibv_qp_ex *x, int err)
{
	if (!to_q(x)->wr_err)
		to_q(x)->wr_err = err;
}

static void wr_local_inv(struct ibv_qp_ex *x, uint32_t rkey)
{
	uint8_t *s = begin(x, IBV_WR_LOCAL_INV, not_ud(x));
	if (s)
		put32(s + RNICD_SEND_INV_RKEY, rkey);
}

static void wr_bind_mw(struct ibv_qp_ex *x, struct ibv_mw *mw, uint32_t rkey, const struct ibv_mw_bind_info *info)
{
	uint8_t *s = begin(x, IBV_WR_BIND_MW, !rnic_check_bind(&x->qp_base, mw, info));
	if (s)
		rnic_put_bind(s, mw, rkey, info);
}
static void wr_unsupported_tso(struct ibv_qp_ex *x, void *hdr, uint16_t sz, uint16_t mss)
{
	(void)hdr, (void)sz, (void)mss, fail(x, EOPNOTSUPP);
}
static void wr_unsupported_xrc(struct ibv_qp_ex *x, uint32_t srqn) { (void)srqn, fail(x, EOPNOTSUPP); }

/* A program built with rdma-core 45's headers finds ibv_wr_flush right
 * after wr_atomic_write: struct rnic_qp puts it there. */
_Static_assert(offsetof(struct rnic_qp, wr_flush) == offsetof(struct rnic_qp, qpx) + sizeof(struct ibv_qp_ex),
	       "wr_flush must follow struct ibv_qp_ex");

/* ibta15_ok: whether the device offers the IBTA 1.5 operation whose
 * extended flags are in want; without it the WR list fails EOPNOTSUPP. */
static int ibta15_ok(struct ibv_qp_ex *x, uint64_t want)
{
	if (to_rctx(x->qp_base.context)->attr.cap_flags_ex & want)
		return 1;
	fail(x, EOPNOTSUPP);
	return 0;
}

/* wr_atomic_write: 8 bytes, copied now as ibv_wr_atomic_write asks, go in
 * the swap word as they lie in memory (rxe sends them as they are); the
 * remote address must be 8-byte aligned. */
static void wr_atomic_write(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr, const void *value)
{
	uint8_t *s;
	if (!ibta15_ok(x, RNIC_DEVICE_ATOMIC_WRITE))
		return;
	s = begin(x, IBV_WR_ATOMIC_WRITE, is_rc(x) && !(addr & 7) && value);
	if (s) {
		uint64_t v;
		memcpy(&v, value, sizeof(v));
		put64(s + RNICD_SEND_REMOTE_ADDR, addr);
		put32(s + RNICD_SEND_RKEY, rkey);
		put64(s + RNICD_SEND_SWAP, v);
	}
}

/* wr_flush: the length rides in compare_add, the placement type and the
 * selectivity in swap (proto/wqe.go). */
static void wr_flush(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr, size_t len, uint8_t type, uint8_t level)
{
	const unsigned types = RNIC_FLUSH_GLOBAL | RNIC_FLUSH_PERSISTENT;
	int ok = is_rc(x) && type && !(type & ~types) && level <= RNIC_FLUSH_MR && len <= (1ULL << 31);
	uint8_t *s;
	if (!ibta15_ok(x, RNIC_DEVICE_FLUSH_GLOBAL | RNIC_DEVICE_FLUSH_PERSISTENT))
		return;
	s = begin(x, (enum ibv_wr_opcode)RNIC_WR_FLUSH, ok);
	if (s) {
		put64(s + RNICD_SEND_REMOTE_ADDR, addr);
		put32(s + RNICD_SEND_RKEY, rkey);
		put64(s + RNICD_SEND_COMPARE_ADD, len);
		put64(s + RNICD_SEND_SWAP, (uint64_t)type | (uint64_t)level << 8);
	}
}

static void wr_set_ud_addr(struct ibv_qp_ex *x, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey)
{
	uint8_t *s = to_q(x)->wr_slot;
	if (!s)
		return;
	if (x->qp_base.qp_type != IBV_QPT_UD || !ah || ah->pd != x->qp_base.pd || qpn > 0xffffff)
		return fail(x, EINVAL);
	put32(s + RNICD_SEND_AH, (to_rah(ah))->h);
	put32(s + RNICD_SEND_REMOTE_QPN, qpn);
	put32(s + RNICD_SEND_REMOTE_QKEY, qkey);
}

static void wr_set_sge_list(struct ibv_qp_ex *x, size_t n, const struct ibv_sge *sge)
{
	struct rnic_qp *q = to_q(x);
	uint8_t *s = q->wr_slot;
	uint64_t total = 0;
	if (!s)
		return;
	if (n > q->cap.max_send_sge || n > (q->sq.slot_size - RNICD_SEND_WQE_HEADER_LEN) / RNICD_SGE_LEN ||
	    q->wr_op == IBV_WR_ATOMIC_WRITE || q->wr_op == (enum ibv_wr_opcode)RNIC_WR_FLUSH)
		return fail(x, EINVAL); /* those two carry no SGE */
	for (size_t i = 0; i < n; i++) {
		uint8_t *e = s + RNICD_SEND_WQE_HEADER_LEN + i * RNICD_SGE_LEN;
		put64(e + RNICD_SGE_ADDR, sge[i].addr);
		put32(e + RNICD_SGE_LENGTH, sge[i].length);
		put32(e + RNICD_SGE_LKEY, sge[i].lkey);
		total += sge[i].length;
	}
	if ((q->wr_op == IBV_WR_ATOMIC_CMP_AND_SWP || q->wr_op == IBV_WR_ATOMIC_FETCH_AND_ADD) && (n != 1 || total != 8))
		return fail(x, EINVAL);
	put16(s + RNICD_SEND_NUM_SGE, (uint16_t)n);
}

static void wr_set_sge(struct ibv_qp_ex *x, uint32_t lkey, uint64_t addr, uint32_t length)
{
	struct ibv_sge sge = {.addr = addr, .length = length, .lkey = lkey};
	wr_set_sge_list(x, 1, &sge);
}

static void wr_set_inline_data_list(struct ibv_qp_ex *x, size_t n, const struct ibv_data_buf *buf)
{
	struct rnic_qp *q = to_q(x);
	uint8_t *s = q->wr_slot;
	size_t total = 0;
	if (!s)
		return;
	for (size_t i = 0; i < n; i++)
		total += buf[i].length;
	if (total > q->cap.max_inline_data || total > q->sq.slot_size - RNICD_SEND_WQE_HEADER_LEN || q->wr_op == IBV_WR_RDMA_READ ||
	    q->wr_op > IBV_WR_SEND_WITH_IMM)
		return fail(x, EINVAL);
	total = 0;
	for (size_t i = 0; i < n; i++) {
		memcpy(s + RNICD_SEND_WQE_HEADER_LEN + total, buf[i].addr, buf[i].length);
		total += buf[i].length;
	}
	s[RNICD_SEND_FLAGS] |= IBV_SEND_INLINE;
	put32(s + RNICD_SEND_INLINE_LEN, (uint32_t)total);
}

static void wr_set_inline_data(struct ibv_qp_ex *x, void *addr, size_t length)
{
	struct ibv_data_buf b = {.addr = addr, .length = length};
	wr_set_inline_data_list(x, 1, &b);
}

static int wr_complete(struct ibv_qp_ex *x)
{
	struct rnic_qp *q = to_q(x);
	int err = q->wr_err, posted = 0;
	if (err)
		q->sq_prod = q->wr_first;
	else if (q->sq_prod != q->wr_first) {
		st32(q->mem, RNICD_RING_SQ_PROD, q->sq_prod);
		posted = 1;
	}
	pthread_spin_unlock(&q->sq_lock);
	if (posted) /* after the unlock: see rnic_ring_bell */
		rnic_ring_bell(to_rctx(q->qpx.qp_base.context), q->mem, q->bell);
	return err;
}

static void wr_abort(struct ibv_qp_ex *x)
{
	struct rnic_qp *q = to_q(x);
	q->sq_prod = q->wr_first;
	pthread_spin_unlock(&q->sq_lock);
}

void rnic_qp_ex_init(struct rnic_qp *q)
{
	struct ibv_qp_ex *x = &q->qpx;
	x->wr_atomic_cmp_swp = wr_atomic_cmp_swp;
	x->wr_atomic_fetch_add = wr_atomic_fetch_add;
	x->wr_bind_mw = wr_bind_mw;
	x->wr_local_inv = wr_local_inv;
	x->wr_rdma_read = wr_rdma_read;
	x->wr_rdma_write = wr_rdma_write;
	x->wr_rdma_write_imm = wr_rdma_write_imm;
	x->wr_send = wr_send;
	x->wr_send_imm = wr_send_imm;
	x->wr_send_inv = wr_send_inv;
	x->wr_send_tso = wr_unsupported_tso;
	x->wr_set_ud_addr = wr_set_ud_addr;
	x->wr_set_xrc_srqn = wr_unsupported_xrc;
	x->wr_set_inline_data = wr_set_inline_data;
	x->wr_set_inline_data_list = wr_set_inline_data_list;
	x->wr_set_sge = wr_set_sge;
	x->wr_set_sge_list = wr_set_sge_list;
	x->wr_start = wr_start;
	x->wr_complete = wr_complete;
	x->wr_abort = wr_abort;
	x->wr_atomic_write = wr_atomic_write;
	q->wr_flush = wr_flush;
}
