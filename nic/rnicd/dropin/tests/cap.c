/* SPDX-License-Identifier: BSD-2-Clause */
/* corners cap: the send queue ibv_create_qp(_ex) grants and reports, as
 * rxe: one WQE holds max_send_sge SGEs or max_inline_data bytes,
 * whichever is larger, and both are raised to that space. Unmodified
 * programs rely on it (rdma_xclient posts a 16-byte inline SEND on a QP
 * created with max_inline_data 0 and one SGE). */
#include "corners.h"

/* RXE_MAX_INLINE_DATA: rnic's default limit, as rxe's */
#define MAX_INLINE 512

static struct ibv_qp *qp_with(struct ibv_pd *pd, struct ibv_cq *cq, uint32_t sge, uint32_t inl,
			      struct ibv_qp_cap *got)
{
	struct ibv_qp_init_attr qa = {0};
	struct ibv_qp *qp;

	qa.send_cq = qa.recv_cq = cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = sge;
	qa.cap.max_inline_data = inl;
	errno = 0;
	qp = ibv_create_qp(pd, &qa);
	*got = qa.cap;
	return qp;
}

/* granted checks what one creation reports, and that query_qp agrees. */
static void granted(struct ibv_pd *pd, struct ibv_cq *cq, uint32_t sge, uint32_t inl, uint32_t want_sge,
		    uint32_t want_inl)
{
	struct ibv_qp_cap got;
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	struct ibv_qp *qp = qp_with(pd, cq, sge, inl, &got);

	if (!qp) {
		check(0, "ibv_create_qp sge %u inline %u: errno %d", sge, inl, errno);
		return;
	}
	check(got.max_send_sge == want_sge && got.max_inline_data == want_inl,
	      "ibv_create_qp sge %u inline %u: reports sge %u inline %u (want %u, %u)", sge, inl,
	      got.max_send_sge, got.max_inline_data, want_sge, want_inl);
	check(ibv_query_qp(qp, &a, IBV_QP_CAP, &ia) == 0 && ia.cap.max_send_sge == got.max_send_sge &&
		      ia.cap.max_inline_data == got.max_inline_data && a.cap.max_inline_data == got.max_inline_data,
	      "ibv_query_qp sge %u inline %u: the cap ibv_create_qp reported", sge, inl);
	ibv_destroy_qp(qp);
}

static void grants(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr_ex qx = {0};
	struct ibv_device_attr da;
	struct ibv_qp_cap got;
	struct ibv_qp *qp;
	int e;

	if (ibv_query_device(ctx, &da))
		die("ibv_query_device");
	granted(pd, cq, 1, 0, 1, 16);
	granted(pd, cq, 0, 0, 0, 0);
	granted(pd, cq, 2, 100, 6, 100);
	granted(pd, cq, 4, 20, 4, 64);
	granted(pd, cq, (uint32_t)da.max_sge, 0, (uint32_t)da.max_sge, MAX_INLINE);
	granted(pd, cq, 1, MAX_INLINE, (uint32_t)da.max_sge, MAX_INLINE);
	qp = qp_with(pd, cq, 1, MAX_INLINE + 1, &got);
	e = errno;
	check(!qp && e == EINVAL, "ibv_create_qp inline %d, past the limit: NULL, EINVAL (errno %d)", MAX_INLINE + 1, e);
	if (qp)
		ibv_destroy_qp(qp);
	qp = qp_with(pd, cq, (uint32_t)da.max_sge + 1, 0, &got);
	e = errno;
	check(!qp && e == EINVAL, "ibv_create_qp sge %d, past max_sge: NULL, EINVAL (errno %d)", da.max_sge + 1, e);
	if (qp)
		ibv_destroy_qp(qp);

	qx.comp_mask = IBV_QP_INIT_ATTR_PD;
	qx.pd = pd;
	qx.send_cq = qx.recv_cq = cq;
	qx.qp_type = IBV_QPT_UD;
	qx.cap.max_send_wr = qx.cap.max_recv_wr = 4;
	qx.cap.max_send_sge = qx.cap.max_recv_sge = 3;
	qp = ibv_create_qp_ex(ctx, &qx);
	check(qp && qx.cap.max_send_sge == 3 && qx.cap.max_inline_data == 48,
	      "ibv_create_qp_ex UD sge 3 inline 0: reports sge %u inline %u (want 3, 48)", qx.cap.max_send_sge,
	      qx.cap.max_inline_data);
	if (qp)
		ibv_destroy_qp(qp);
}

/* inline_send posts len inline bytes from unregistered memory; 0 or the errno. */
static int inline_send(struct ibv_qp *qp, const char *data, uint32_t len)
{
	struct ibv_sge sge = {.addr = (uintptr_t)data, .length = len, .lkey = 0};
	struct ibv_send_wr wr = {0}, *bad = NULL;

	wr.wr_id = 13;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
	return ibv_post_send(qp, &wr, &bad);
}

/* granted_inline: rdma_xclient's case, a 16-byte inline SEND on a QP
 * created with max_inline_data 0 and one SGE, arrives; 17 bytes, past
 * what the QP reported, are refused. */
static void granted_inline(const char *d0, const char *d1)
{
	static char rbuf[PAGE];
	char msg[32] = "sixteen bytes!!";
	struct side a = {0}, b = {0};
	struct ibv_mr *mr;
	struct ibv_wc wc;
	int err;

	side_open(&a, d0, NULL, NULL, NULL, 16, 8);
	side_open(&b, d1, NULL, NULL, NULL, 16, 8);
	connect_pair(&a, &b);
	mr = reg(b.pd, rbuf, sizeof(rbuf), IBV_ACCESS_LOCAL_WRITE);
	post_recv(b.qp, NULL, mr, rbuf, sizeof(rbuf));
	err = inline_send(a.qp, msg, 16);
	check(err == 0, "16-byte inline SEND on a QP asked for inline 0, 1 SGE: posted (%d)", err);
	if (!err) {
		check(wait_wc(a.cq, &wc, TIMEOUT_MS) && wc.status == IBV_WC_SUCCESS && wc.wr_id == 13,
		      "inline SEND: completed at the sender");
		check(wait_wc(b.cq, &wc, TIMEOUT_MS) && wc.status == IBV_WC_SUCCESS && wc.byte_len == 16 &&
			      !memcmp(rbuf, msg, 16),
		      "inline SEND: the 16 bytes arrived");
	}
	err = inline_send(a.qp, msg, 17);
	check(err == EINVAL, "17-byte inline SEND, past the granted 16: EINVAL (%d)", err);
	pair_close(&a, &b);
	ibv_dereg_mr(mr);
	side_free(&a);
	side_free(&b);
}

void test_cap(const char *d0, const char *d1)
{
	struct ibv_context *ctx = open_named(d0);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = pd ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;

	if (!cq)
		die("ibv_alloc_pd / ibv_create_cq");
	grants(ctx, pd, cq);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	granted_inline(d0, d1);
}
