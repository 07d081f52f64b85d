/* SPDX-License-Identifier: BSD-2-Clause */
/* corners async: affiliated asynchronous events through the context's
 * async fd: the SRQ limit, a CQ overrun. */
#include "corners.h"

#include <unistd.h>

/* next_event waits for one async event of type want, acknowledging every
 * event it reads; 1 if want came (ev then holds it). */
static int next_event(struct ibv_context *ctx, enum ibv_event_type want, struct ibv_async_event *ev)
{
	long end = now_ms() + TIMEOUT_MS;

	while (now_ms() < end) {
		if (!fd_ready(ctx->async_fd, (int)(end - now_ms())))
			return 0;
		if (ibv_get_async_event(ctx, ev))
			return 0;
		printf("  event %s\n", ibv_event_type_str(ev->event_type));
		ibv_ack_async_event(ev);
		if (ev->event_type == want)
			return 1;
	}
	return 0;
}

static void srq_limit(const char *d0, const char *d1)
{
	struct side a = {0}, b = {0};
	struct ibv_srq_init_attr si = {.attr = {.max_wr = 16, .max_sge = 1}};
	struct ibv_srq_attr sa = {0};
	struct ibv_async_event ev;
	static char sbuf[64], rbuf[4][64];
	struct ibv_mr *smr, *rmr;
	struct ibv_srq *srq;
	struct ibv_wc wc;
	int i, r, e;

	side_open(&a, d0, NULL, NULL, NULL, 16, 16);
	b.ctx = open_named(d1);
	if (!(b.pd = ibv_alloc_pd(b.ctx)) || !(srq = ibv_create_srq(b.pd, &si)))
		die("ibv_create_srq");
	side_open(&b, d1, NULL, NULL, srq, 16, 16);
	connect_pair(&a, &b);
	smr = reg(a.pd, sbuf, sizeof(sbuf), ALL_ACCESS);
	rmr = reg(b.pd, rbuf, sizeof(rbuf), ALL_ACCESS);
	for (i = 0; i < 4; i++)
		post_recv(NULL, srq, rmr, rbuf[i], sizeof(rbuf[i]));
	sa.srq_limit = 2;
	check(ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT) == 0, "ibv_modify_srq: arm the limit at 2");
	check(!fd_ready(b.ctx->async_fd, 0), "no async event before the limit is crossed");
	for (i = 0; i < 3; i++) {
		post_send(a.qp, smr, sbuf, 8, 0);
		if (!wait_wc(b.cq, &wc, TIMEOUT_MS) || wc.status != IBV_WC_SUCCESS)
			die("SEND %d to the SRQ", i);
	}
	check(next_event(b.ctx, IBV_EVENT_SRQ_LIMIT_REACHED, &ev) && ev.element.srq == srq,
	      "IBV_EVENT_SRQ_LIMIT_REACHED for the SRQ once fewer than 2 WQEs are left");
	sa.srq_limit = 99;
	r = ibv_query_srq(srq, &sa);
	check(r == 0 && sa.srq_limit == 0, "the limit disarms after its event (%d, limit %u)", r, sa.srq_limit);
	set_nonblock(b.ctx->async_fd);
	errno = 0;
	r = ibv_get_async_event(b.ctx, &ev);
	e = errno;
	check(r == -1 && e == EAGAIN, "a non-blocking async fd without events: -1, EAGAIN (%d, errno %d)", r, e);
	ibv_dereg_mr(smr);
	ibv_dereg_mr(rmr);
	pair_close(&a, &b);
	check(ibv_destroy_srq(srq) == 0, "ibv_destroy_srq");
	side_free(&a);
	side_free(&b);
}

/* write_signaled posts a signaled 8-byte RDMA WRITE of sbuf[8*i] to
 * tbuf[8*i], wr_id i. */
static int write_signaled(struct ibv_qp *qp, struct ibv_mr *smr, char *sbuf, struct ibv_mr *tmr, char *tbuf, int i)
{
	struct ibv_sge sge = {.addr = (uintptr_t)(sbuf + 8 * i), .length = 8, .lkey = smr->lkey};
	struct ibv_send_wr wr = {0}, *bad;

	wr.wr_id = (uint64_t)i;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = (uintptr_t)(tbuf + 8 * i);
	wr.wr.rdma.rkey = tmr->rkey;
	return ibv_post_send(qp, &wr, &bad);
}

/* cq_overrun: one send completion more than a CQ holds, none polled. As on
 * Linux rxe the completion that does not fit is lost, IBV_EVENT_CQ_ERR
 * names the CQ, the CQ keeps the ones it holds, and the QP goes on. */
static void cq_overrun(const char *d0, const char *d1)
{
	struct side a = {0}, b = {0};
	struct ibv_device_attr da;
	struct ibv_async_event ev;
	struct ibv_qp_attr qa = {0};
	struct ibv_qp_init_attr qi;
	static char sbuf[8 * 64], tbuf[8 * 64];
	struct ibv_mr *smr, *tmr;
	struct ibv_cq *small;
	struct ibv_wc wc[64];
	int i, n, r, got, in_order = 1;

	a.ctx = open_named(d0);
	if (ibv_query_device(a.ctx, &da) || !(small = ibv_create_cq(a.ctx, 1, NULL, NULL, 0)))
		die("ibv_create_cq 1");
	n = small->cqe;
	ibv_destroy_cq(small);
	if (n + 2 > da.max_qp_wr || n + 2 > 62) {
		check(1, "CQ overrun not checked: a CQ of 1 holds %d, more than a QP's %d WRs", n, da.max_qp_wr);
		side_free(&a);
		return;
	}
	side_open(&a, d0, NULL, NULL, NULL, 1, n + 4);
	side_open(&b, d1, NULL, NULL, NULL, 16, 16);
	connect_pair(&a, &b);
	for (i = 0; i < (int)sizeof(sbuf); i++)
		sbuf[i] = (char)(i * 7 + 1);
	smr = reg(a.pd, sbuf, sizeof(sbuf), ALL_ACCESS);
	tmr = reg(b.pd, tbuf, sizeof(tbuf), ALL_ACCESS);
	for (i = 0; i < n + 1; i++)
		if (write_signaled(a.qp, smr, sbuf, tmr, tbuf, i))
			die("ibv_post_send %d", i);
	check(next_event(a.ctx, IBV_EVENT_CQ_ERR, &ev) && ev.element.cq == a.cq,
	      "IBV_EVENT_CQ_ERR for a CQ of %d given %d completions", n, n + 1);
	got = ibv_poll_cq(a.cq, 64, wc);
	for (i = 0; i < got; i++)
		in_order = in_order && wc[i].wr_id == (uint64_t)i && wc[i].status == IBV_WC_SUCCESS;
	check(got == n && in_order, "the CQ keeps the %d completions it holds, the one more is lost (polled %d)", n, got);
	r = ibv_query_qp(a.qp, &qa, IBV_QP_STATE, &qi);
	check(r == 0 && qa.qp_state == IBV_QPS_RTS, "the QP stays in RTS after a lost send completion (%d, state %d)", r,
	      qa.qp_state);
	if (write_signaled(a.qp, smr, sbuf, tmr, tbuf, n + 1))
		die("ibv_post_send after the overrun");
	got = wait_wc(a.cq, wc, TIMEOUT_MS);
	check(got && wc[0].wr_id == (uint64_t)(n + 1) && wc[0].status == IBV_WC_SUCCESS,
	      "a WRITE after the overrun completes (wr_id %llu, %s)", got ? (unsigned long long)wc[0].wr_id : 0ULL,
	      got ? ibv_wc_status_str(wc[0].status) : "no completion");
	check(memcmp(tbuf, sbuf, 8 * (size_t)(n + 2)) == 0, "every WRITE landed, the lost completion's too");
	check(!fd_ready(a.ctx->async_fd, 0), "one IBV_EVENT_CQ_ERR for one overflow");
	ibv_dereg_mr(smr);
	ibv_dereg_mr(tmr);
	pair_close(&a, &b);
	side_free(&a);
	side_free(&b);
}

void test_async(const char *d0, const char *d1)
{
	srq_limit(d0, d1);
	cq_overrun(d0, d1);
}
