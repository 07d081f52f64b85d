/* SPDX-License-Identifier: BSD-2-Clause */
/* corners udsl: a UD receive reports the RoCE L3 header type of the
 * datagram in wc.sl, where mlx5 reports it (2 IPv4, 1 IPv6): UCX's
 * ud_verbs reads the DGID in the GRH area by it, and with 0 (what rxe
 * reports) drops every IPv4 datagram. ibv_cq_ex's read_sl says the same. */
#include "corners.h"

#define QKEY 0x11111111
#define L3_IPV6 1
#define L3_IPV4 2

static char abuf[128], bbuf[128];

static struct ibv_qp *ud_qp(struct side *s, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr qa = {0};
	struct ibv_qp_attr a = {0};
	struct ibv_qp *qp;

	qa.send_cq = qa.recv_cq = cq;
	qa.qp_type = IBV_QPT_UD;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	if (!(qp = ibv_create_qp(s->pd, &qa)))
		die("UD ibv_create_qp");
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qkey = QKEY;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		die("UD to INIT");
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		die("UD to RTR");
	a.qp_state = IBV_QPS_RTS;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		die("UD to RTS");
	return qp;
}

/* send_one sends 8 bytes from a to the UD QP dst at b's GID. */
static void send_one(struct side *a, struct ibv_mr *mr, const union ibv_gid *dgid, uint32_t dst)
{
	struct ibv_ah_attr aa = {0};
	struct ibv_sge sge = {.addr = (uintptr_t)abuf, .length = 8, .lkey = mr->lkey};
	struct ibv_send_wr wr = {0}, *bad;
	struct ibv_wc wc;
	struct ibv_ah *ah;

	aa.is_global = 1;
	aa.grh.dgid = *dgid;
	aa.grh.hop_limit = 64;
	aa.port_num = 1;
	if (!(ah = ibv_create_ah(a->pd, &aa)))
		die("ibv_create_ah");
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = dst;
	wr.wr.ud.remote_qkey = QKEY;
	if (ibv_post_send(a->qp, &wr, &bad) || !wait_wc(a->cq, &wc, TIMEOUT_MS) || wc.status != IBV_WC_SUCCESS)
		die("UD send");
	ibv_destroy_ah(ah);
}

/* read_sl_ex polls one completion from an extended CQ; its read_sl, or -1. */
static int read_sl_ex(struct ibv_cq_ex *cq)
{
	struct ibv_poll_cq_attr pa = {0};
	long end = now_ms() + TIMEOUT_MS;
	int r, sl = -1;

	while ((r = ibv_start_poll(cq, &pa)) == ENOENT && now_ms() < end)
		;
	if (r)
		return -1;
	if (cq->status == IBV_WC_SUCCESS)
		sl = ibv_wc_read_sl(cq);
	ibv_end_poll(cq);
	return sl;
}

void test_udsl(const char *d0, const char *d1)
{
	struct side a = {0}, b = {0};
	struct ibv_cq_init_attr_ex ce = {.cqe = 4, .wc_flags = IBV_WC_EX_WITH_SL};
	struct ibv_mr *amr, *bmr;
	struct ibv_cq_ex *bx;
	struct ibv_qp *bxqp;
	struct ibv_wc wc;
	int want, sl, got;

	a.ctx = open_named(d0);
	b.ctx = open_named(d1);
	if (!(a.pd = ibv_alloc_pd(a.ctx)) || !(b.pd = ibv_alloc_pd(b.ctx)) ||
	    !(a.cq = ibv_create_cq(a.ctx, 8, NULL, NULL, 0)) || !(b.cq = ibv_create_cq(b.ctx, 8, NULL, NULL, 0)))
		die("PDs and CQs");
	if (ibv_query_gid(a.ctx, 1, 0, &a.gid) || ibv_query_gid(b.ctx, 1, 0, &b.gid))
		die("ibv_query_gid");
	a.qp = ud_qp(&a, a.cq);
	b.qp = ud_qp(&b, b.cq);
	amr = reg(a.pd, abuf, sizeof(abuf), ALL_ACCESS);
	bmr = reg(b.pd, bbuf, sizeof(bbuf), ALL_ACCESS);
	/* an IPv4 GID is IPv4-mapped: ::ffff:a.b.c.d */
	want = b.gid.raw[10] == 0xff && b.gid.raw[11] == 0xff && !b.gid.global.subnet_prefix ? L3_IPV4 : L3_IPV6;

	post_recv(b.qp, NULL, bmr, bbuf, sizeof(bbuf));
	send_one(&a, amr, &b.gid, b.qp->qp_num);
	memset(&wc, 0, sizeof(wc));
	got = wait_wc(b.cq, &wc, TIMEOUT_MS);
	check(got && wc.status == IBV_WC_SUCCESS && wc.sl == want, "UD receive: wc.sl %u is the RoCE L3 header type %d (%s)",
	      wc.sl, want, want == L3_IPV4 ? "IPv4" : "IPv6");

	if (!(bx = ibv_create_cq_ex(b.ctx, &ce)))
		die("ibv_create_cq_ex");
	bxqp = ud_qp(&b, ibv_cq_ex_to_cq(bx));
	post_recv(bxqp, NULL, bmr, bbuf, sizeof(bbuf));
	send_one(&a, amr, &b.gid, bxqp->qp_num);
	sl = read_sl_ex(bx);
	check(sl == want, "ibv_wc_read_sl on an extended CQ: %d, want %d", sl, want);

	ibv_destroy_qp(bxqp);
	ibv_destroy_cq(ibv_cq_ex_to_cq(bx));
	ibv_dereg_mr(amr);
	ibv_dereg_mr(bmr);
	pair_close(&a, &b);
	side_free(&a);
	side_free(&b);
}
