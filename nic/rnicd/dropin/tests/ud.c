/* SPDX-License-Identifier: BSD-2-Clause */
/* corners ud: UD datagrams carry the GRH in the first 40 bytes of the
 * receive buffer; the address handle made from a received completion
 * (ibv_init_ah_from_wc, ibv_create_ah_from_wc) reaches the sender. */
#include "corners.h"

#define QKEY 0x11111111

/* ud_open: a UD QP at RTS with Q_Key QKEY on dev (also corners mcast). */
void ud_open(struct side *s, const char *dev)
{
	struct ibv_qp_init_attr qa = {0};
	struct ibv_qp_attr a = {0};

	s->ctx = open_named(dev);
	if (!(s->pd = ibv_alloc_pd(s->ctx)) || !(s->cq = ibv_create_cq(s->ctx, 16, NULL, NULL, 0)))
		die("ibv_alloc_pd / ibv_create_cq");
	qa.send_cq = qa.recv_cq = s->cq;
	qa.qp_type = IBV_QPT_UD;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 8;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	if (!(s->qp = ibv_create_qp(s->pd, &qa)) || ibv_query_gid(s->ctx, 1, 0, &s->gid))
		die("UD ibv_create_qp");
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qkey = QKEY;
	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		die("UD to INIT");
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE))
		die("UD to RTR");
	a.qp_state = IBV_QPS_RTS;
	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		die("UD to RTS");
}

static void ud_send(struct side *s, struct ibv_ah *ah, uint32_t qpn, struct ibv_mr *mr, void *buf, uint32_t len)
{
	struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = len, .lkey = mr->lkey};
	struct ibv_send_wr wr = {0}, *bad;

	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qpn;
	wr.wr.ud.remote_qkey = QKEY;
	if (ibv_post_send(s->qp, &wr, &bad))
		die("UD ibv_post_send");
}

static char abuf[128], bbuf[128];

void test_ud(const char *d0, const char *d1)
{
	struct side a = {0}, b = {0};
	struct ibv_ah_attr aa = {0};
	struct ibv_mr *amr, *bmr;
	struct ibv_ah *ah, *back;
	struct ibv_wc wc, rwc;
	int got;

	ud_open(&a, d0);
	ud_open(&b, d1);
	amr = reg(a.pd, abuf, sizeof(abuf), ALL_ACCESS);
	bmr = reg(b.pd, bbuf, sizeof(bbuf), ALL_ACCESS);
	aa.is_global = 1;
	aa.grh.dgid = b.gid;
	aa.grh.hop_limit = 64;
	aa.port_num = 1;
	if (!(ah = ibv_create_ah(a.pd, &aa)))
		die("ibv_create_ah");
	post_recv(b.qp, NULL, bmr, bbuf, sizeof(bbuf));
	memcpy(abuf + 64, "datagram", 8);
	ud_send(&a, ah, b.qp->qp_num, amr, abuf + 64, 8);
	got = wait_wc(b.cq, &rwc, TIMEOUT_MS);
	check(got && rwc.status == IBV_WC_SUCCESS && rwc.opcode == IBV_WC_RECV && (rwc.wc_flags & IBV_WC_GRH) &&
		      rwc.byte_len == 40 + 8 && rwc.src_qp == a.qp->qp_num && !memcmp(bbuf + 40, "datagram", 8),
	      "UD receive: GRH flag, 40 + 8 bytes, the sender's QPN, payload after the GRH");
	check(wait_wc(a.cq, &wc, TIMEOUT_MS) && wc.status == IBV_WC_SUCCESS, "UD send completes");
	if (!got)
		die("no UD receive");

	memset(&aa, 0, sizeof(aa));
	check(ibv_init_ah_from_wc(b.ctx, 1, &rwc, (struct ibv_grh *)bbuf, &aa) == 0 && aa.is_global &&
		      !memcmp(&aa.grh.dgid, &a.gid, sizeof(a.gid)),
	      "ibv_init_ah_from_wc: a global AH back to the sender's GID");
	back = ibv_create_ah_from_wc(b.pd, &rwc, (struct ibv_grh *)bbuf, 1);
	check(back != NULL, "ibv_create_ah_from_wc");
	if (back) {
		post_recv(a.qp, NULL, amr, abuf, 64);
		memcpy(bbuf + 64, "reply", 5);
		ud_send(&b, back, rwc.src_qp, bmr, bbuf + 64, 5);
		check(wait_wc(a.cq, &wc, TIMEOUT_MS) && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV &&
			      wc.byte_len == 40 + 5 && !memcmp(abuf + 40, "reply", 5),
		      "the reply through the AH from the completion arrives");
		check(wait_wc(b.cq, &wc, TIMEOUT_MS) && wc.status == IBV_WC_SUCCESS, "the reply's send completes");
		check(ibv_destroy_ah(back) == 0, "ibv_destroy_ah");
	}
	ibv_destroy_ah(ah);
	ibv_dereg_mr(amr);
	ibv_dereg_mr(bmr);
	pair_close(&a, &b);
	side_free(&a);
	side_free(&b);
}
