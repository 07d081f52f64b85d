/* SPDX-License-Identifier: BSD-2-Clause */
/* Cleaning a CQ of a QP's completions when the QP goes to RESET or is
 * destroyed, as mlx4 and mlx5 do (their cq_clean): a QP reset and brought
 * up again must not find the flushes of its former life in its CQs
 * (rdma-core's pyverbs rereg tests restate QPs after an error and expect
 * their next completions to be new ones), and a destroyed QP's wr_ids
 * must not come back to a program that has freed what they name. The completions not yet polled lie in the
 * ring between the consumer index and the producer index the daemon
 * published; the others are moved up towards the producer index, keeping
 * their order, and the consumer index skips what was removed. The daemon
 * writes only at and beyond its producer index, so it can go on meanwhile. */
#include "rnic.h"

#include <string.h>

static inline uint8_t *wc_slot(struct rnic_cq *q, uint32_t i)
{
	return q->ring + RNICD_RING_HEADER_LEN + (size_t)(i & (q->slots - 1)) * RNICD_WC_SLOT_LEN;
}

static uint32_t slot_qpn(const uint8_t *s)
{
	uint32_t v;
	memcpy(&v, s + 28, 4); /* proto/wc.go: qpn, little-endian like the host */
	return v;
}

/* rnic_cq_clean removes qp's completions from q. A receive removed still
 * leaves its queue (an SRQ's count, rqdepth.c), as mlx5 frees its WQE. */
void rnic_cq_clean(struct rnic_cq *q, struct rnic_qp *qp)
{
	uint32_t qpn = qp->qpx.qp_base.qp_num, prod, i, dst;

	pthread_spin_lock(&q->lock);
	prod = ld32(q->ring, RNICD_CQ_PROD);
	if (prod - q->cons > q->slots) { /* a daemon writing nonsense */
		pthread_spin_unlock(&q->lock);
		return;
	}
	for (i = dst = prod; i != q->cons;) {
		uint8_t *s = wc_slot(q, --i);
		if (slot_qpn(s) == qpn) {
			if (s[9] & IBV_WC_RECV) /* proto/wc.go: the opcode */
				rnic_count_recv(qp);
			continue;
		}
		if (--dst != i)
			memcpy(wc_slot(q, dst), s, RNICD_WC_SLOT_LEN);
	}
	if (dst != q->cons) {
		q->cons = dst;
		st32(q->ring, RNICD_CQ_CONS, q->cons);
	}
	pthread_spin_unlock(&q->lock);
	rnic_cq_kick(q); /* room was made */
}
