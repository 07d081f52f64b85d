/* SPDX-License-Identifier: BSD-2-Clause */
/* corners wr: the extended verbs perftest does not use on rnic (it turns
 * them on only for devices it knows): an RC QP made with ibv_create_qp_ex
 * and posted to through ibv_wr_* (batches of mixed opcodes, inline data,
 * a refused batch, an aborted one), completions read through
 * ibv_create_cq_ex's ibv_start_poll/ibv_next_poll/ibv_end_poll. */
#include "corners.h"

#include <infiniband/verbs.h>

/* A completion as ibv_cq_ex reads it. */
struct xwc {
	uint64_t wr_id;
	enum ibv_wc_status status;
	enum ibv_wc_opcode opcode;
};

/* poll_ex reads up to max completions of cq within ms; how many came. */
static int poll_ex(struct ibv_cq_ex *cq, struct xwc *out, int max, int ms)
{
	struct ibv_poll_cq_attr attr = {0};
	long end = now_ms() + ms;
	int n = 0, ret;

	while (n < max && now_ms() < end) {
		ret = ibv_start_poll(cq, &attr);
		if (ret == ENOENT)
			continue;
		if (ret)
			return n;
		do {
			out[n].wr_id = cq->wr_id;
			out[n].status = cq->status;
			out[n].opcode = ibv_wc_read_opcode(cq);
			n++;
		} while (n < max && ibv_next_poll(cq) == 0);
		ibv_end_poll(cq);
	}
	return n;
}

static struct ibv_qp *create_qp_ex(struct side *s, int max_sge)
{
	struct ibv_qp_init_attr_ex qa = {0};

	qa.send_cq = qa.recv_cq = s->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 16;
	qa.cap.max_send_sge = max_sge;
	qa.cap.max_recv_sge = 1;
	qa.cap.max_inline_data = 32; /* the space of 2 SGEs: more would raise max_send_sge, as rxe does */
	qa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	qa.pd = s->pd;
	qa.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_READ |
			    IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	return ibv_create_qp_ex(s->ctx, &qa);
}

static struct ibv_cq_ex *open_ex_side(struct side *a, const char *dev)
{
	struct ibv_cq_init_attr_ex ca = {.cqe = 16, .wc_flags = IBV_WC_EX_WITH_BYTE_LEN};
	struct ibv_cq_ex *cq;

	a->ctx = open_named(dev);
	if (!(a->pd = ibv_alloc_pd(a->ctx)) || !(cq = ibv_create_cq_ex(a->ctx, &ca)))
		die("ibv_create_cq_ex");
	a->cq = ibv_cq_ex_to_cq(cq);
	if (!(a->qp = create_qp_ex(a, 2)))
		die("ibv_create_qp_ex");
	if (ibv_query_gid(a->ctx, 1, 0, &a->gid))
		die("ibv_query_gid");
	return cq;
}

/* Buffers: the requester's source and landing areas, the responder's target. */
static unsigned char src[64], land[64];
static uint64_t old, target[32];
static char rbuf[64];

static void write_and_send(struct ibv_qp_ex *qx, struct ibv_cq_ex *cq, struct side *b, struct ibv_mr *smr,
			   struct ibv_mr *tmr)
{
	unsigned char *t = (unsigned char *)target;
	struct xwc wc[2] = {0};
	struct ibv_wc rwc;
	int n;

	ibv_wr_start(qx);
	qx->wr_id = 1;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(qx, tmr->rkey, (uintptr_t)t + 9);
	ibv_wr_set_sge(qx, smr->lkey, (uintptr_t)src, 32);
	qx->wr_id = 2;
	qx->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	ibv_wr_send(qx);
	ibv_wr_set_inline_data(qx, "inline!", 7);
	check(ibv_wr_complete(qx) == 0, "ibv_wr_complete: RDMA WRITE + inline SEND in one batch");
	n = poll_ex(cq, wc, 2, TIMEOUT_MS);
	check(n == 2 && wc[0].wr_id == 1 && wc[0].status == IBV_WC_SUCCESS && wc[0].opcode == IBV_WC_RDMA_WRITE &&
		      wc[1].wr_id == 2 && wc[1].status == IBV_WC_SUCCESS && wc[1].opcode == IBV_WC_SEND,
	      "ibv_start_poll/ibv_next_poll: both completions in order (%d)", n);
	check(!memcmp(t + 9, src, 32) && t[8] == 0 && t[41] == 0, "the WRITE landed at +9, exactly");
	check(wait_wc(b->cq, &rwc, TIMEOUT_MS) && rwc.status == IBV_WC_SUCCESS && rwc.byte_len == 7 &&
		      !memcmp(rbuf, "inline!", 7),
	      "the inline SEND arrived");
}

static void read_and_fetch_add(struct ibv_qp_ex *qx, struct ibv_cq_ex *cq, struct ibv_mr *lmr, struct ibv_mr *omr,
			       struct ibv_mr *tmr)
{
	struct xwc wc[2] = {0};
	int n;

	target[16] = 5;
	ibv_wr_start(qx);
	qx->wr_id = 3;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_read(qx, tmr->rkey, (uintptr_t)target + 9);
	ibv_wr_set_sge(qx, lmr->lkey, (uintptr_t)land, 32);
	qx->wr_id = 4;
	ibv_wr_atomic_fetch_add(qx, tmr->rkey, (uintptr_t)&target[16], 10);
	ibv_wr_set_sge(qx, omr->lkey, (uintptr_t)&old, 8);
	check(ibv_wr_complete(qx) == 0, "ibv_wr_complete: RDMA READ + FETCH_AND_ADD in one batch");
	n = poll_ex(cq, wc, 2, TIMEOUT_MS);
	check(n == 2 && wc[0].wr_id == 3 && wc[0].status == IBV_WC_SUCCESS && wc[0].opcode == IBV_WC_RDMA_READ &&
		      wc[1].wr_id == 4 && wc[1].status == IBV_WC_SUCCESS && wc[1].opcode == IBV_WC_FETCH_ADD,
	      "READ and FETCH_ADD complete in order (%d)", n);
	check(!memcmp(land, src, 32), "the READ brought the written bytes");
	check(old == 5 && target[16] == 15, "FETCH_AND_ADD: old value 5 returned, 15 left (%llu, %llu)",
	      (unsigned long long)old, (unsigned long long)target[16]);
}

/* refused_batches: a batch with too many SGEs fails whole; an aborted
 * batch posts nothing. */
static void refused_batches(struct ibv_qp_ex *qx, struct ibv_cq_ex *cq, struct ibv_mr *smr, struct ibv_mr *tmr)
{
	struct ibv_sge sges[3] = {
		{(uintptr_t)src, 4, smr->lkey}, {(uintptr_t)src + 4, 4, smr->lkey}, {(uintptr_t)src + 8, 4, smr->lkey}};
	unsigned char before[sizeof(target)];
	struct xwc wc[1];
	int ret;

	memcpy(before, target, sizeof(target));
	ibv_wr_start(qx);
	qx->wr_id = 5;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(qx, tmr->rkey, (uintptr_t)target);
	ibv_wr_set_sge_list(qx, 3, sges);
	ret = ibv_wr_complete(qx);
	check(ret != 0, "ibv_wr_complete with 3 SGEs on a QP of 2: an error (%d)", ret);
	ibv_wr_start(qx);
	qx->wr_id = 6;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(qx, tmr->rkey, (uintptr_t)target);
	ibv_wr_set_sge(qx, smr->lkey, (uintptr_t)src, 8);
	ibv_wr_abort(qx);
	check(poll_ex(cq, wc, 1, 300) == 0 && !memcmp(before, target, sizeof(target)),
	      "a refused and an aborted batch post nothing");
}

void test_wr(const char *d0, const char *d1)
{
	struct side a = {0}, b = {0};
	struct ibv_mr *smr, *lmr, *omr, *tmr, *rmr;
	struct ibv_qp_ex *qx;
	struct ibv_cq_ex *cq;
	size_t i;

	for (i = 0; i < sizeof(src); i++)
		src[i] = (unsigned char)(i + 1);
	cq = open_ex_side(&a, d0);
	qx = ibv_qp_to_qp_ex(a.qp);
	check(qx != NULL, "ibv_qp_to_qp_ex");
	if (!qx)
		return;
	side_open(&b, d1, NULL, NULL, NULL, 16, 16);
	connect_pair(&a, &b);
	smr = reg(a.pd, src, sizeof(src), ALL_ACCESS);
	lmr = reg(a.pd, land, sizeof(land), ALL_ACCESS);
	omr = reg(a.pd, &old, sizeof(old), ALL_ACCESS);
	tmr = reg(b.pd, target, sizeof(target), ALL_ACCESS | IBV_ACCESS_REMOTE_ATOMIC);
	rmr = reg(b.pd, rbuf, sizeof(rbuf), ALL_ACCESS);
	post_recv(b.qp, NULL, rmr, rbuf, sizeof(rbuf));

	write_and_send(qx, cq, &b, smr, tmr);
	read_and_fetch_add(qx, cq, lmr, omr, tmr);
	refused_batches(qx, cq, smr, tmr);

	ibv_dereg_mr(smr);
	ibv_dereg_mr(lmr);
	ibv_dereg_mr(omr);
	ibv_dereg_mr(tmr);
	ibv_dereg_mr(rmr);
	pair_close(&a, &b);
	side_free(&a);
	side_free(&b);
}
