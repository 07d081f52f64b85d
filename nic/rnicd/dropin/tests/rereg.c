/* SPDX-License-Identifier: BSD-2-Clause */
/* corners rereg: ibv_rereg_mr keeps the MR's keys (as mlx5; rdma-core's
 * pyverbs tests rely on it) while it moves the MR to new memory, another
 * PD or other rights, each seen at once by a peer's RDMA WRITE through
 * the old rkey; the argument checks give libibverbs' return codes; and a
 * QP moved to RESET leaves no completion of its former life in its CQ. */
#include "corners.h"

#define LEN 256

/* restate moves both QPs to RESET and back to RTS, connected again. */
static void restate(struct side *a, struct side *b)
{
	struct ibv_qp_attr r = {.qp_state = IBV_QPS_RESET};

	if (ibv_modify_qp(a->qp, &r, IBV_QP_STATE) || ibv_modify_qp(b->qp, &r, IBV_QP_STATE))
		die("modify to RESET");
	connect_pair(a, b);
}

static void inputs(struct ibv_mr *mr, struct ibv_pd *pd)
{
	char x;
	int rc;

	errno = 0;
	rc = ibv_rereg_mr(mr, 0, NULL, NULL, 0, 0);
	check(rc == IBV_REREG_MR_ERR_CMD && errno == EINVAL, "rereg with no flags: ERR_CMD, EINVAL (%d, %d)", rc,
	      errno);
	rc = ibv_rereg_mr(mr, 1 << 7, NULL, NULL, 0, 0);
	check(rc == IBV_REREG_MR_ERR_INPUT && errno == EINVAL, "rereg with an unknown flag: ERR_INPUT (%d)", rc);
	rc = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, NULL, LEN, 0);
	check(rc == IBV_REREG_MR_ERR_INPUT, "rereg of translation to NULL: ERR_INPUT (%d)", rc);
	rc = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, &x, 0, 0);
	check(rc == IBV_REREG_MR_ERR_INPUT, "rereg of translation to 0 bytes: ERR_INPUT (%d)", rc);
	rc = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, pd, NULL, 0, IBV_ACCESS_LOCAL_WRITE);
	check(rc == IBV_REREG_MR_ERR_INPUT, "rereg with access but no CHANGE_ACCESS: ERR_INPUT (%d)", rc);
	errno = 0;
	rc = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, IBV_ACCESS_REMOTE_WRITE);
	check(rc == IBV_REREG_MR_ERR_CMD && errno == EINVAL, "rereg to remote write without local write: ERR_CMD, EINVAL (%d, %d)",
	      rc, errno);
}

void test_rereg(const char *d0, const char *d1)
{
	static char src[PAGE], one[PAGE], two[PAGE];
	struct side a = {0}, b = {0};
	struct ibv_mr *smr, *mr;
	struct ibv_pd *pd2;
	struct ibv_wc wc;
	uint32_t lkey, rkey;
	int st, rc;

	side_open(&a, d0, NULL, NULL, NULL, 16, 8);
	side_open(&b, d1, NULL, NULL, NULL, 16, 8);
	connect_pair(&a, &b);
	smr = reg(a.pd, src, sizeof(src), IBV_ACCESS_LOCAL_WRITE);
	mr = reg(b.pd, one, LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	lkey = mr->lkey, rkey = mr->rkey;
	inputs(mr, b.pd);

	rc = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, two, LEN, 0);
	check(rc == 0 && mr->addr == two && mr->length == LEN && mr->lkey == lkey && mr->rkey == rkey,
	      "rereg to new memory: 0 (%d), the new address, the keys kept", rc);
	memset(src, 0x5a, LEN);
	st = rdma(&a, IBV_WR_RDMA_WRITE, smr, src, LEN, (uintptr_t)two, rkey);
	check(st == IBV_WC_SUCCESS && two[0] == 0x5a && two[LEN - 1] == 0x5a && one[0] == 0,
	      "RDMA WRITE through the old rkey lands in the new memory (status %d)", st);

	if (!(pd2 = ibv_alloc_pd(b.ctx)))
		die("ibv_alloc_pd");
	rc = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, 0);
	check(rc == 0 && mr->pd == pd2 && mr->rkey == rkey, "rereg to another PD: 0 (%d), mr->pd that PD", rc);
	check(ibv_dealloc_pd(pd2) == EBUSY, "ibv_dealloc_pd of the MR's new PD: EBUSY");
	post_recv(a.qp, NULL, smr, src, LEN); /* flushed by the error below */
	st = rdma(&a, IBV_WR_RDMA_WRITE, smr, src, LEN, (uintptr_t)two, rkey);
	check(st == IBV_WC_REM_ACCESS_ERR, "RDMA WRITE to an MR of another PD than the QP's: remote access error (%d)",
	      st);
	restate(&a, &b);
	check(ibv_poll_cq(a.cq, 1, &wc) == 0, "after RESET: no completion of before left in the CQ");

	rc = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD | IBV_REREG_MR_CHANGE_ACCESS, b.pd, NULL, 0,
			  IBV_ACCESS_LOCAL_WRITE);
	check(rc == 0 && mr->pd == b.pd, "rereg back to the QP's PD, without remote write: 0 (%d)", rc);
	check(ibv_dealloc_pd(pd2) == 0, "ibv_dealloc_pd of the PD the MR left: 0");
	st = rdma(&a, IBV_WR_RDMA_WRITE, smr, src, LEN, (uintptr_t)two, rkey);
	check(st == IBV_WC_REM_ACCESS_ERR, "RDMA WRITE after remote write was taken away: remote access error (%d)", st);
	restate(&a, &b);
	rc = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	memset(src, 0x77, LEN);
	st = rdma(&a, IBV_WR_RDMA_WRITE, smr, src, LEN, (uintptr_t)two, rkey);
	check(rc == 0 && st == IBV_WC_SUCCESS && two[0] == 0x77, "remote write given back: the WRITE lands (%d, %d)", rc,
	      st);

	pair_close(&a, &b);
	check(ibv_dereg_mr(mr) == 0, "ibv_dereg_mr of the re-registered MR: 0");
	ibv_dereg_mr(smr);
	side_free(&a);
	side_free(&b);
}
