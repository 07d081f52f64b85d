/* SPDX-License-Identifier: BSD-2-Clause */
/* The extended CQ (ibv_create_cq_ex): start_poll takes the CQ and reads
 * the oldest completion, next_poll consumes it and reads the next,
 * end_poll consumes the last one read and publishes the consumer index
 * once for the whole batch. The read_* calls return fields of the
 * completion being read. No completion timestamps: a CQ asking for them
 * is refused with EOPNOTSUPP. */
#include "rnic.h"


static inline struct rnic_cq *to_q(struct ibv_cq_ex *x) { return to_rcq_ex(x); }

/* load reads the completion at the consumer index, if there is one. */
static int load(struct rnic_cq *q)
{
	uint32_t avail = ld32(q->ring, RNICD_CQ_PROD) - q->cons;
	if (avail == 0 || avail > q->slots)
		return ENOENT;
	rnic_wc_from_slot(q->ring + RNICD_RING_HEADER_LEN + (size_t)(q->cons & (q->slots - 1)) * RNICD_WC_SLOT_LEN, &q->cur);
	rnic_note_recv(q, &q->cur);
	q->cq.wr_id = q->cur.wr_id;
	q->cq.status = q->cur.status;
	return 0;
}

static int start_poll(struct ibv_cq_ex *x, struct ibv_poll_cq_attr *attr)
{
	struct rnic_cq *q = to_q(x);
	if (attr && attr->comp_mask)
		return EINVAL;
	if (ld32(q->ring, RNICD_CQ_PROD) == q->cons) {
		rnic_cq_idle(q);
		return ENOENT;
	}
	pthread_spin_lock(&q->lock);
	if (load(q)) {
		pthread_spin_unlock(&q->lock);
		return ENOENT;
	}
	q->cur_valid = 1;
	q->empty_polls = 0;
	return 0;
}

static int next_poll(struct ibv_cq_ex *x)
{
	struct rnic_cq *q = to_q(x);
	q->cons++;
	q->cur_valid = load(q) == 0;
	return q->cur_valid ? 0 : ENOENT;
}

static void end_poll(struct ibv_cq_ex *x)
{
	struct rnic_cq *q = to_q(x);
	/* the completion start_poll or next_poll read is consumed now */
	if (q->cur_valid)
		q->cons++;
	q->cur_valid = 0;
	st32(q->ring, RNICD_CQ_CONS, q->cons);
	pthread_spin_unlock(&q->lock);
	rnic_cq_kick(q);
}

static enum ibv_wc_opcode read_opcode(struct ibv_cq_ex *x) { return to_q(x)->cur.opcode; }
static uint32_t read_vendor_err(struct ibv_cq_ex *x) { return to_q(x)->cur.vendor_err; }
static uint32_t read_byte_len(struct ibv_cq_ex *x) { return to_q(x)->cur.byte_len; }
static __be32 read_imm_data(struct ibv_cq_ex *x) { return to_q(x)->cur.imm_data; }
static uint32_t read_qp_num(struct ibv_cq_ex *x) { return to_q(x)->cur.qp_num; }
static uint32_t read_src_qp(struct ibv_cq_ex *x) { return to_q(x)->cur.src_qp; }
static unsigned int read_wc_flags(struct ibv_cq_ex *x) { return to_q(x)->cur.wc_flags; }
static uint32_t read_slid(struct ibv_cq_ex *x) { return to_q(x)->cur.slid; }
static uint8_t read_sl(struct ibv_cq_ex *x) { return to_q(x)->cur.sl; }
static uint8_t read_dlid_path_bits(struct ibv_cq_ex *x) { return to_q(x)->cur.dlid_path_bits; }

struct ibv_cq_ex *rnic_create_cq_ex(struct ibv_context *ctx, struct ibv_cq_init_attr_ex *attr)
{
	const uint32_t masks = IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD;
	const uint32_t flags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED | IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN;
	struct ibv_cq_ex *x;
	struct rnic_cq *q;

	if (attr->comp_mask & ~masks || ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) && attr->flags & ~flags))
		return errno = EOPNOTSUPP, NULL;
	if (attr->wc_flags & ~(uint64_t)IBV_WC_STANDARD_FLAGS)
		return errno = EOPNOTSUPP, NULL;
	if (attr->comp_vector >= (uint32_t)ctx->num_comp_vectors || attr->cqe > 0x7fffffff)
		return errno = EINVAL, NULL;
	if (!(q = rnic_create_cq(to_rctx(ctx), (int)attr->cqe, attr->channel)))
		return NULL;
	x = &q->cq;
	x->cq_context = attr->cq_context;
	x->comp_mask = 0;
	x->start_poll = start_poll;
	x->next_poll = next_poll;
	x->end_poll = end_poll;
	x->read_opcode = read_opcode;
	x->read_vendor_err = read_vendor_err;
	x->read_byte_len = read_byte_len;
	x->read_imm_data = read_imm_data;
	x->read_qp_num = read_qp_num;
	x->read_src_qp = read_src_qp;
	x->read_wc_flags = read_wc_flags;
	x->read_slid = read_slid;
	x->read_sl = read_sl;
	x->read_dlid_path_bits = read_dlid_path_bits;
	return x;
}
