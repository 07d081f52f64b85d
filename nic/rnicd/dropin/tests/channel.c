/* SPDX-License-Identifier: BSD-2-Clause */
/* corners channel: a completion channel's fd is pollable; an armed CQ
 * raises one event per arming, solicited-only arming ignores unsolicited
 * completions; a non-blocking channel says EAGAIN. */
#include "corners.h"

#include <unistd.h>

/* expect_event: one event on ch for cq with its context, acknowledged. */
static void expect_event(struct ibv_comp_channel *ch, struct ibv_cq *cq, void *cq_ctx, const char *what)
{
	struct ibv_cq *ecq = NULL;
	void *ectx = NULL;

	check(fd_ready(ch->fd, TIMEOUT_MS), "%s: the channel's fd polls readable", what);
	check(ibv_get_cq_event(ch, &ecq, &ectx) == 0 && ecq == cq && ectx == cq_ctx,
	      "%s: ibv_get_cq_event gives the CQ and its context", what);
	if (ecq)
		ibv_ack_cq_events(ecq, 1);
}

static void expect_recv(struct ibv_cq *cq, uint32_t len, const char *what)
{
	struct ibv_wc wc;

	check(wait_wc(cq, &wc, TIMEOUT_MS) && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV &&
		      wc.byte_len == len,
	      "%s: the receive completes (%u bytes)", what, len);
}

void test_channel(const char *d0, const char *d1)
{
	struct side a = {0}, b = {0};
	struct ibv_comp_channel *ch;
	static char sbuf[64], rbuf[8][64];
	struct ibv_mr *smr, *rmr;
	struct ibv_wc wc;
	int marker, i;

	side_open(&a, d0, NULL, NULL, NULL, 16, 16);
	b.ctx = open_named(d1);
	if (!(ch = ibv_create_comp_channel(b.ctx)))
		die("ibv_create_comp_channel");
	check(ch->fd >= 0, "ibv_create_comp_channel: an fd");
	side_open(&b, d1, ch, &marker, NULL, 16, 16);
	connect_pair(&a, &b);
	smr = reg(a.pd, sbuf, sizeof(sbuf), ALL_ACCESS);
	rmr = reg(b.pd, rbuf, sizeof(rbuf), ALL_ACCESS);
	for (i = 0; i < 8; i++)
		post_recv(b.qp, NULL, rmr, rbuf[i], sizeof(rbuf[i]));

	check(!fd_ready(ch->fd, 0), "nothing to read before any completion");
	check(ibv_req_notify_cq(b.cq, 0) == 0, "ibv_req_notify_cq");
	post_send(a.qp, smr, sbuf, 10, 0);
	expect_event(ch, b.cq, &marker, "armed, a SEND arrives");
	expect_recv(b.cq, 10, "armed");

	post_send(a.qp, smr, sbuf, 11, 0);
	expect_recv(b.cq, 11, "not armed");
	check(!fd_ready(ch->fd, 300), "not armed: no event");

	check(ibv_req_notify_cq(b.cq, 1) == 0, "ibv_req_notify_cq solicited-only");
	post_send(a.qp, smr, sbuf, 12, 0);
	expect_recv(b.cq, 12, "solicited-only, unsolicited SEND");
	check(!fd_ready(ch->fd, 300), "solicited-only: an unsolicited SEND raises no event");
	post_send(a.qp, smr, sbuf, 13, IBV_SEND_SOLICITED);
	expect_event(ch, b.cq, &marker, "solicited-only, solicited SEND");
	expect_recv(b.cq, 13, "solicited-only, solicited SEND");

	set_nonblock(ch->fd);
	{
		struct ibv_cq *ecq;
		void *ectx;
		int r, e;

		errno = 0;
		r = ibv_get_cq_event(ch, &ecq, &ectx);
		e = errno;
		check(r == -1 && e == EAGAIN, "a non-blocking channel without events: -1, EAGAIN (%d, errno %d)", r, e);
	}
	/* The sender's completions are unsignaled; nothing else is pending. */
	check(ibv_poll_cq(a.cq, 1, &wc) == 0, "unsignaled SENDs leave no completion");
	check(ibv_destroy_comp_channel(ch) == EBUSY, "ibv_destroy_comp_channel with a CQ on it: EBUSY");
	ibv_dereg_mr(smr);
	ibv_dereg_mr(rmr);
	pair_close(&a, &b);
	check(ibv_destroy_comp_channel(ch) == 0, "ibv_destroy_comp_channel once its CQ is gone");
	side_free(&a);
	side_free(&b);
}
