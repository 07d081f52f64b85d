/* SPDX-License-Identifier: BSD-2-Clause */
/* corners parity: what Linux 6.1's rxe offers and a program moving from it
 * finds the same: rxe's device flags and max_pkeys, the one-entry P_Key
 * table, path_mig_state kept and an alternate path refused (EINVAL, as
 * Linux refuses it on Ethernet), pkey_index below max_pkeys, port_num again
 * in INIT->INIT, and an SRQ resized by ibv_modify_srq(IBV_SRQ_MAX_WR) with
 * its receives kept, refused below the receives it holds or its armed
 * limit. */
#include "corners.h"

/* flags: rxe's device_cap_flags but the memory-window ones, and max_pkeys. */
static void flags(struct ibv_context *ctx)
{
	const unsigned want = IBV_DEVICE_BAD_PKEY_CNTR | IBV_DEVICE_BAD_QKEY_CNTR | IBV_DEVICE_AUTO_PATH_MIG |
			      IBV_DEVICE_CHANGE_PHY_PORT | IBV_DEVICE_UD_AV_PORT_ENFORCE | IBV_DEVICE_SYS_IMAGE_GUID |
			      IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_SRQ_RESIZE | IBV_DEVICE_MEM_MGT_EXTENSIONS;
	struct ibv_device_attr a;
	struct ibv_port_attr pa;

	if (ibv_query_device(ctx, &a) || ibv_query_port(ctx, 1, &pa))
		die("ibv_query_device/port");
	check((a.device_cap_flags & want) == want, "device_cap_flags %#x lack %#x", a.device_cap_flags,
	      want & ~a.device_cap_flags);
	check(a.max_pkeys == 64 && pa.pkey_tbl_len == 1, "max_pkeys %u, pkey_tbl_len %u (want 64, 1 as rxe)",
	      a.max_pkeys, pa.pkey_tbl_len);
}

/* pkeys: index 0 is the full default P_Key, the only entry. */
static void pkeys(struct ibv_context *ctx)
{
	__be16 k = 0;

	check(ibv_query_pkey(ctx, 1, 0, &k) == 0 && be16toh(k) == 0xffff, "P_Key 0: %#x (want 0xffff)", be16toh(k));
	check(ibv_query_pkey(ctx, 1, 1, &k) != 0, "ibv_query_pkey of index 1 succeeded (the table has one entry)");
	check(ibv_get_pkey_index(ctx, 1, htobe16(0xffff)) == 0, "ibv_get_pkey_index(0xffff) is not 0");
}

/* modify: the QP attributes rxe takes and keeps, and those it refuses. */
static void modify(const char *d0, const char *d1)
{
	struct side a = {0}, b = {0};
	struct ibv_qp_attr at = {0}, q;
	struct ibv_qp_init_attr qi;
	struct ibv_qp *qp;
	int r;

	side_open(&a, d0, NULL, NULL, NULL, 16, 16);
	side_open(&b, d1, NULL, NULL, NULL, 16, 16);
	/* a fresh QP of a's: pkey_index 63 and 64, port 2 */
	{
		struct ibv_qp_init_attr ia = {.send_cq = a.cq, .recv_cq = a.cq, .qp_type = IBV_QPT_RC,
					      .cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1}};
		if (!(qp = ibv_create_qp(a.pd, &ia)))
			die("ibv_create_qp");
	}
	at.qp_state = IBV_QPS_INIT;
	at.port_num = 1;
	at.pkey_index = 64;
	r = ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	check(r == EINVAL, "pkey_index 64 (max_pkeys): %d (want EINVAL)", r);
	at.pkey_index = 63;
	r = ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	check(r == 0, "pkey_index 63: %d", r);
	r = ibv_query_qp(qp, &q, IBV_QP_PKEY_INDEX | IBV_QP_PORT, &qi);
	check(r == 0 && q.pkey_index == 63 && q.port_num == 1, "ibv_query_qp: %d, pkey_index %u, port %u", r,
	      q.pkey_index, q.port_num);
	at.port_num = 2;
	r = ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_PORT);
	check(r == EINVAL, "INIT->INIT to port 2: %d (want EINVAL)", r);
	at.port_num = 1;
	r = ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_PORT);
	check(r == 0, "INIT->INIT with port 1 again (CHANGE_PHY_PORT): %d", r);
	ibv_destroy_qp(qp);

	/* the pair: RTS with REARM, then ARMED; an alternate path refused */
	if (to_rtr(&a, b.qp->qp_num, &b.gid, 0))
		die("to RTR");
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_RTS;
	at.timeout = 14;
	at.retry_cnt = 7;
	at.rnr_retry = 7;
	at.max_rd_atomic = 1;
	at.path_mig_state = IBV_MIG_REARM;
	r = ibv_modify_qp(a.qp, &at, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
					     IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_PATH_MIG_STATE);
	check(r == 0, "RTR->RTS with path_mig_state REARM: %d", r);
	r = ibv_query_qp(a.qp, &q, IBV_QP_PATH_MIG_STATE, &qi);
	check(r == 0 && q.path_mig_state == IBV_MIG_REARM, "path_mig_state %d (want REARM)", q.path_mig_state);
	at.path_mig_state = IBV_MIG_ARMED;
	r = ibv_modify_qp(a.qp, &at, IBV_QP_STATE | IBV_QP_PATH_MIG_STATE);
	r = r ? r : ibv_query_qp(a.qp, &q, IBV_QP_PATH_MIG_STATE, &qi);
	check(r == 0 && q.path_mig_state == IBV_MIG_ARMED, "RTS->RTS path_mig_state ARMED: %d, %d", r,
	      q.path_mig_state);
	at.alt_ah_attr = q.ah_attr;
	at.alt_port_num = 1;
	at.alt_timeout = 14;
	r = ibv_modify_qp(a.qp, &at, IBV_QP_STATE | IBV_QP_ALT_PATH);
	check(r == EINVAL, "an alternate path on Ethernet: %d (want EINVAL)", r);
	pair_close(&a, &b);
	side_free(&a);
	side_free(&b);
}

/* post_n posts n receives to srq and returns how many it took. */
static int post_n(struct ibv_srq *srq, struct ibv_mr *mr, char (*buf)[64], int first, int n, int *err)
{
	for (int i = 0; i < n; i++) {
		struct ibv_sge sge = {.addr = (uintptr_t)buf[first + i], .length = 64, .lkey = mr->lkey};
		struct ibv_recv_wr wr = {.wr_id = (uint64_t)(first + i), .sg_list = &sge, .num_sge = 1}, *bad = NULL;
		if ((*err = ibv_post_srq_recv(srq, &wr, &bad)))
			return i;
	}
	*err = 0;
	return n;
}

static int srq_max_wr(struct ibv_srq *srq)
{
	struct ibv_srq_attr sa = {0};
	if (ibv_query_srq(srq, &sa))
		die("ibv_query_srq");
	return (int)sa.max_wr;
}

static int resize(struct ibv_srq *srq, uint32_t max_wr)
{
	struct ibv_srq_attr sa = {.max_wr = max_wr};
	return ibv_modify_srq(srq, &sa, IBV_SRQ_MAX_WR);
}

/* receive takes n messages of a on b's SRQ and checks that they used the
 * receives first .. first+n-1, in order, each with its message. */
static void receive(struct side *a, struct side *b, struct ibv_mr *smr, char *sbuf, char (*rbuf)[64], int first,
		    int n)
{
	struct ibv_wc wc;

	for (int i = first; i < first + n; i++) {
		snprintf(sbuf, 64, "message %d", i);
		post_send(a->qp, smr, sbuf, 64, 0);
		if (!wait_wc(b->cq, &wc, TIMEOUT_MS))
			die("no receive completion for message %d", i);
		check(wc.status == IBV_WC_SUCCESS && wc.wr_id == (uint64_t)i && !strcmp(rbuf[i], sbuf),
		      "message %d: status %d, wr_id %llu, %.64s", i, wc.status, (unsigned long long)wc.wr_id, rbuf[i]);
	}
}

/* srq: grown with receives posted on the old ring and the new, shrunk,
 * refused below what it holds and below its limit; every receive kept. */
static void srq(const char *d0, const char *d1)
{
	struct side a = {0}, b = {0};
	struct ibv_srq_init_attr si = {.attr = {.max_wr = 4, .max_sge = 1}};
	static char sbuf[64], rbuf[32][64];
	struct ibv_srq_attr sa = {0};
	struct ibv_mr *smr, *rmr;
	struct ibv_srq *s;
	int n, err, r;

	side_open(&a, d0, NULL, NULL, NULL, 64, 64);
	b.ctx = open_named(d1);
	if (!(b.pd = ibv_alloc_pd(b.ctx)) || !(s = ibv_create_srq(b.pd, &si)))
		die("ibv_create_srq");
	side_open(&b, d1, NULL, NULL, s, 64, 16);
	connect_pair(&a, &b);
	smr = reg(a.pd, sbuf, sizeof(sbuf), ALL_ACCESS);
	rmr = reg(b.pd, rbuf, sizeof(rbuf), ALL_ACCESS);

	n = post_n(s, rmr, rbuf, 0, 5, &err);
	check(n == 4 && err == ENOMEM, "an SRQ of 4: %d posted, then %d (want 4, ENOMEM)", n, err);
	r = resize(s, 12);
	check(r == 0 && srq_max_wr(s) == 12, "grow to 12: %d, max_wr %d", r, srq_max_wr(s));
	n = post_n(s, rmr, rbuf, 4, 9, &err);
	check(n == 8 && err == ENOMEM, "grown: 8 more posted, then %d (%d; want 8, ENOMEM)", err, n);
	receive(&a, &b, smr, sbuf, rbuf, 0, 12);

	r = resize(s, 2);
	check(r == 0 && srq_max_wr(s) == 2, "shrink to 2: %d, max_wr %d", r, srq_max_wr(s));
	n = post_n(s, rmr, rbuf, 12, 3, &err);
	check(n == 2 && err == ENOMEM, "shrunk: %d posted, then %d (want 2, ENOMEM)", n, err);
	r = resize(s, 1);
	check(r == EINVAL && srq_max_wr(s) == 2, "shrink below the 2 receives held: %d (want EINVAL)", r);
	r = resize(s, 1u << 30);
	check(r == EINVAL, "grow past max_srq_wr: %d (want EINVAL)", r);
	receive(&a, &b, smr, sbuf, rbuf, 12, 2);

	r = resize(s, 16);
	sa.srq_limit = 8;
	r = r ? r : ibv_modify_srq(s, &sa, IBV_SRQ_LIMIT);
	check(r == 0, "grow to 16 and arm the limit at 8: %d", r);
	r = resize(s, 6);
	check(r == EINVAL, "shrink below the armed limit: %d (want EINVAL)", r);
	sa.max_wr = 6;
	sa.srq_limit = 3;
	r = ibv_modify_srq(s, &sa, IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT);
	check(r == 0 && srq_max_wr(s) == 6, "shrink to 6 arming the limit at 3 in the same call: %d", r);
	n = post_n(s, rmr, rbuf, 14, 6, &err);
	check(n == 6 && err == 0, "%d of 6 posted (%d)", n, err);
	receive(&a, &b, smr, sbuf, rbuf, 14, 6);

	ibv_dereg_mr(smr);
	ibv_dereg_mr(rmr);
	pair_close(&a, &b);
	check(ibv_destroy_srq(s) == 0, "ibv_destroy_srq");
	side_free(&a);
	side_free(&b);
}

void test_parity(const char *d0, const char *d1)
{
	struct ibv_context *ctx = open_named(d0);

	flags(ctx);
	pkeys(ctx);
	ibv_close_device(ctx);
	modify(d0, d1);
	srq(d0, d1);
}
