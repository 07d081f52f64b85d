/* SPDX-License-Identifier: BSD-2-Clause */
/* corners asyncobj: every QP event carries its QP. QPs on an SRQ raise
 * QP_LAST_WQE_REACHED as they enter ERR; many are destroyed right after,
 * while their events are in flight, and one lives on. An event of a
 * destroyed QP must be dropped (the kernel drops them too), never handed
 * out without its QP: the daemon once passed such an event on as a port
 * event, to every process on the device, and UCX's async handler
 * dereferenced its NULL element.qp. */
#include "corners.h"

#define ROUNDS 1000

static int is_qp_event(enum ibv_event_type t)
{
	switch (t) {
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		return 1;
	default:
		return 0;
	}
}

static struct ibv_qp *srq_qp(struct ibv_pd *pd, struct ibv_cq *cq, struct ibv_srq *srq)
{
	struct ibv_qp_init_attr qa = {0};
	struct ibv_qp *qp;

	qa.send_cq = qa.recv_cq = cq;
	qa.srq = srq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 1;
	qa.cap.max_send_sge = 1;
	if (!(qp = ibv_create_qp(pd, &qa)))
		die("ibv_create_qp on the SRQ");
	return qp;
}

static void to_err(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		die("modify to ERR");
}

/* drain reads events until the live QP's LAST_WQE_REACHED; it counts QP
 * events without the live QP as theirs. 1 if the live one's came. */
static int drain(struct ibv_context *ctx, struct ibv_qp *live, int *stray)
{
	struct ibv_async_event ev;
	long end = now_ms() + TIMEOUT_MS;

	while (now_ms() < end) {
		if (!fd_ready(ctx->async_fd, (int)(end - now_ms())) || ibv_get_async_event(ctx, &ev))
			return 0;
		if (is_qp_event(ev.event_type) && ev.element.qp != live) {
			printf("  %s for QP %p (not the live QP %p)\n", ibv_event_type_str(ev.event_type),
			       (void *)ev.element.qp, (void *)live);
			(*stray)++;
		}
		ibv_ack_async_event(&ev);
		if (ev.event_type == IBV_EVENT_QP_LAST_WQE_REACHED && ev.element.qp == live)
			return 1;
	}
	return 0;
}

void test_asyncobj(const char *d0, const char *d1)
{
	struct ibv_srq_init_attr si = {.attr = {.max_wr = 4, .max_sge = 1}};
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct ibv_qp *live;
	int i, stray = 0, got;

	(void)d1;
	ctx = open_named(d0);
	if (!(pd = ibv_alloc_pd(ctx)) || !(cq = ibv_create_cq(ctx, 16, NULL, NULL, 0)) ||
	    !(srq = ibv_create_srq(pd, &si)))
		die("PD, CQ, SRQ");
	for (i = 0; i < ROUNDS; i++) {
		struct ibv_qp *qp = srq_qp(pd, cq, srq);
		to_err(qp);
		if (ibv_destroy_qp(qp))
			die("ibv_destroy_qp");
	}
	live = srq_qp(pd, cq, srq);
	to_err(live);
	got = drain(ctx, live, &stray);
	check(got, "QP_LAST_WQE_REACHED for the live QP on the SRQ, with its QP");
	check(stray == 0, "no QP event without its QP: %d of %d destroyed QPs' events came as such", stray, ROUNDS);
	ibv_destroy_qp(live);
	ibv_destroy_srq(srq);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
}
