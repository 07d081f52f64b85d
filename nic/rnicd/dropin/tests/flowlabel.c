/* SPDX-License-Identifier: BSD-2-Clause */
/* corners flowlabel: an address vector whose flow label does not fit 20
 * bits (UCX puts ~0 in every one) is taken, its low 20 bits kept, as
 * providers do: in ibv_create_ah and in an RC QP's RTR, which then
 * carries traffic. */
#include "corners.h"

#define ALL_ONES 0xFFFFFFFFu
#define LOW20 0xFFFFFu

static char lbuf[64], rbuf[64];

static void ah_flow(struct side *a, const union ibv_gid *dgid)
{
	struct ibv_ah_attr aa = {0};
	struct ibv_ah *ah;

	aa.is_global = 1;
	aa.grh.dgid = *dgid;
	aa.grh.flow_label = ALL_ONES;
	aa.grh.hop_limit = 255;
	aa.port_num = 1;
	ah = ibv_create_ah(a->pd, &aa);
	check(ah != NULL, "ibv_create_ah with flow_label ~0 (errno %d)", ah ? 0 : errno);
	if (ah)
		ibv_destroy_ah(ah);
}

void test_flowlabel(const char *d0, const char *d1)
{
	struct side a = {0}, b = {0};
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;
	struct ibv_mr *lmr, *rmr;
	int err;

	side_open(&a, d0, NULL, NULL, NULL, 16, 16);
	side_open(&b, d1, NULL, NULL, NULL, 16, 16);
	ah_flow(&a, &b.gid);
	err = to_rtr(&a, b.qp->qp_num, &b.gid, ALL_ONES);
	check(err == 0, "RC modify to RTR with flow_label ~0 (err %d)", err);
	if (err)
		die("no RTR");
	memset(&qa, 0, sizeof(qa));
	err = ibv_query_qp(a.qp, &qa, IBV_QP_AV, &qi);
	check(err == 0 && qa.ah_attr.grh.flow_label == LOW20, "ibv_query_qp: the flow label's low 20 bits (%d, %#x)", err,
	      qa.ah_attr.grh.flow_label);
	rtr_to_rts(&a);
	to_rts(&b, a.qp->qp_num, &a.gid);
	lmr = reg(a.pd, lbuf, sizeof(lbuf), ALL_ACCESS);
	rmr = reg(b.pd, rbuf, sizeof(rbuf), ALL_ACCESS);
	memcpy(lbuf, "flow label", 10);
	err = rdma(&a, IBV_WR_RDMA_WRITE, lmr, lbuf, 10, (uintptr_t)rbuf, rmr->rkey);
	check(err == IBV_WC_SUCCESS && !memcmp(rbuf, "flow label", 10),
	      "an RDMA WRITE over the QP with flow_label ~0 lands (status %d)", err);
	ibv_dereg_mr(lmr);
	ibv_dereg_mr(rmr);
	pair_close(&a, &b);
	side_free(&a);
	side_free(&b);
}
