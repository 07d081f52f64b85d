/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * external_qp: rdma_cm with external QPs, both roles, as rdma-core's
 * test_rdmacm_async_traffic_external_qp drives it. Each side makes its own
 * RC QP with ibv_create_qp on the id's PD (no id->qp) and connects it by
 * number (conn_param.qp_num); it moves the QP itself with the attributes
 * rdma_init_qp_attr gives for INIT, RTR and RTS. The active side gets
 * RDMA_CM_EVENT_CONNECT_RESPONSE, not ESTABLISHED, and rdma_establish sends
 * the RTU. Checked: the CM never moves either QP (RESET until the program
 * moves it; RTS still after the disconnect), the attributes pair up (each
 * side's rq_psn is the other's sq_psn, dest_qp_num the other's QP), a SEND
 * each way arrives, and a qp_num of no QP of ours is refused. On iWARP
 * devices rdma_connect refuses an external QP (EOPNOTSUPP). Server and
 * client are ids of this one process, on two devices' addresses.
 *
 *   external_qp A0 A1
 *
 * Each check prints "ok ..." or "FAIL ..."; exit 0 when all passed, 1 when
 * one failed, 2 when the setup failed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <rdma/rdma_cma.h>

#include "cmtest.h"

#define TIMEOUT_MS 20000
#define MSG 64

/* next_event waits up to ms for ch's next event; NULL if none came. */
static struct rdma_cm_event *next_event(struct rdma_event_channel *ch, long ms)
{
	struct rdma_cm_event *ev;
	struct pollfd p = {.fd = ch->fd, .events = POLLIN};
	long end = now_ms() + ms;
	fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
	while (rdma_get_cm_event(ch, &ev)) {
		if (errno != EAGAIN)
			die("rdma_get_cm_event");
		if (now_ms() > end)
			return NULL;
		poll(&p, 1, 50);
	}
	return ev;
}

/* expect waits for an event of type t on ch, checks and acks it; returns
 * its id. */
static struct rdma_cm_id *expect(struct rdma_event_channel *ch, enum rdma_cm_event_type t, const char *what)
{
	struct rdma_cm_event *ev = next_event(ch, TIMEOUT_MS);
	struct rdma_cm_id *id;
	if (!ev) {
		printf("FAIL %s: no %s within %d ms\n", what, rdma_event_str(t), TIMEOUT_MS);
		exit(1);
	}
	id = ev->id;
	check(ev->event == t, "%s: %s (got %s, status %d)", what, rdma_event_str(t), rdma_event_str(ev->event),
	      ev->status);
	rdma_ack_cm_event(ev);
	return id;
}

/* A side's own QP, CQ and buffer, on its id's device and PD. */
struct side {
	const char *name;
	struct rdma_cm_id *id;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	char buf[2 * MSG];
	struct ibv_qp_attr rtr, rts; /* what rdma_init_qp_attr gave */
};

static void make_qp(struct side *s)
{
	struct ibv_qp_init_attr a = {.qp_type = IBV_QPT_RC,
				     .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1}};
	if (!s->id->pd)
		die("%s: the id has no PD", s->name);
	if (!(s->cq = ibv_create_cq(s->id->verbs, 8, NULL, NULL, 0)))
		die("%s: ibv_create_cq", s->name);
	a.send_cq = a.recv_cq = s->cq;
	if (!(s->qp = ibv_create_qp(s->id->pd, &a)))
		die("%s: ibv_create_qp", s->name);
	if (!(s->mr = ibv_reg_mr(s->id->pd, s->buf, sizeof(s->buf), IBV_ACCESS_LOCAL_WRITE)))
		die("%s: ibv_reg_mr", s->name);
}

static enum ibv_qp_state qp_state(struct side *s)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	if (ibv_query_qp(s->qp, &a, IBV_QP_STATE, &ia))
		die("%s: ibv_query_qp", s->name);
	return a.qp_state;
}

/* to_state asks rdma_init_qp_attr for state st and applies it. */
static void to_state(struct side *s, enum ibv_qp_state st, struct ibv_qp_attr *keep)
{
	struct ibv_qp_attr a = {.qp_state = st};
	int mask = 0;
	int r = rdma_init_qp_attr(s->id, &a, &mask);
	check(r == 0 && a.qp_state == st && (mask & IBV_QP_STATE), "%s: rdma_init_qp_attr for state %d (%d, errno %d)",
	      s->name, st, r, r ? errno : 0);
	if (r)
		exit(1);
	check(ibv_modify_qp(s->qp, &a, mask) == 0, "%s: ibv_modify_qp to state %d with its attributes", s->name, st);
	if (keep)
		*keep = a;
}

static void post_recv(struct side *s)
{
	struct ibv_sge sge = {.addr = (uintptr_t)(s->buf + MSG), .length = MSG, .lkey = s->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = 2, .sg_list = &sge, .num_sge = 1}, *bad;
	if (ibv_post_recv(s->qp, &wr, &bad))
		die("%s: ibv_post_recv", s->name);
}

static void post_send(struct side *s, const char *text)
{
	struct ibv_sge sge = {.addr = (uintptr_t)s->buf, .length = MSG, .lkey = s->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = 1, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED}, *bad;
	snprintf(s->buf, MSG, "%s", text);
	if (ibv_post_send(s->qp, &wr, &bad))
		die("%s: ibv_post_send", s->name);
}

/* completion waits for s's next completion; its status, or -1. */
static int completion(struct side *s, uint64_t *wr_id)
{
	struct ibv_wc wc;
	long end = now_ms() + TIMEOUT_MS;
	for (;;) {
		int n = ibv_poll_cq(s->cq, 1, &wc);
		if (n < 0)
			die("%s: ibv_poll_cq", s->name);
		if (n == 1) {
			*wr_id = wc.wr_id;
			return wc.status;
		}
		if (now_ms() > end)
			return -1;
		usleep(1000);
	}
}

/* send_one sends text from a to b and checks both completions and the
 * bytes. */
static void send_one(struct side *a, struct side *b, const char *text)
{
	uint64_t id;
	int st;
	post_recv(b);
	post_send(a, text);
	st = completion(a, &id);
	check(st == IBV_WC_SUCCESS && id == 1, "%s: SEND completes (status %d)", a->name, st);
	st = completion(b, &id);
	check(st == IBV_WC_SUCCESS && id == 2, "%s: the receive completes (status %d)", b->name, st);
	check(!strcmp(b->buf + MSG, text), "%s: received \"%.*s\"", b->name, MSG, b->buf + MSG);
}

static void check_pair(struct side *c, struct side *s)
{
	check(c->rtr.dest_qp_num == s->qp->qp_num, "client's RTR dest_qp_num %u is the server's QP %u",
	      c->rtr.dest_qp_num, s->qp->qp_num);
	check(s->rtr.dest_qp_num == c->qp->qp_num, "server's RTR dest_qp_num %u is the client's QP %u",
	      s->rtr.dest_qp_num, c->qp->qp_num);
	check(c->rts.sq_psn == s->rtr.rq_psn, "client's sq_psn %#x is the server's rq_psn %#x", c->rts.sq_psn,
	      s->rtr.rq_psn);
	check(s->rts.sq_psn == c->rtr.rq_psn, "server's sq_psn %#x is the client's rq_psn %#x", s->rts.sq_psn,
	      c->rtr.rq_psn);
	check(c->rtr.path_mtu >= IBV_MTU_256 && c->rtr.path_mtu == s->rtr.path_mtu, "path MTU %d on both sides",
	      c->rtr.path_mtu);
	check(c->rtr.ah_attr.is_global && s->rtr.ah_attr.is_global, "RTR address vectors are global (RoCE)");
	check(c->rts.retry_cnt == 7 && c->rts.rnr_retry == 7 && c->rts.timeout != 0,
	      "client's RTS: retry %u, rnr_retry %u, timeout %u", c->rts.retry_cnt, c->rts.rnr_retry, c->rts.timeout);
	check(c->rtr.max_dest_rd_atomic >= 1 && c->rts.max_rd_atomic >= 1, "client's IRD %u and ORD %u",
	      c->rtr.max_dest_rd_atomic, c->rts.max_rd_atomic);
}

/* bad_qp_num: rdma_connect naming no QP of this process fails. */
static void bad_qp_num(struct rdma_event_channel *cc, const char *a0, const char *a1, int port)
{
	struct rdma_cm_id *id;
	struct sockaddr_in src = addr(a1, 0), dst = addr(a0, port);
	struct rdma_conn_param p = {.qp_num = 0xfffff0, .retry_count = 7, .rnr_retry_count = 7};
	struct rdma_cm_event *ev;
	int r;
	if (rdma_create_id(cc, &id, NULL, RDMA_PS_TCP) || rdma_resolve_addr(id, (struct sockaddr *)&src, (struct sockaddr *)&dst, 2000))
		die("bad_qp_num: resolve");
	expect(cc, RDMA_CM_EVENT_ADDR_RESOLVED, "bad qp_num");
	if (rdma_resolve_route(id, 2000))
		die("bad_qp_num: rdma_resolve_route");
	expect(cc, RDMA_CM_EVENT_ROUTE_RESOLVED, "bad qp_num");
	r = rdma_connect(id, &p);
	ev = r ? NULL : next_event(cc, 2000);
	check(r != 0 || (ev && ev->event != RDMA_CM_EVENT_CONNECT_RESPONSE && ev->event != RDMA_CM_EVENT_ESTABLISHED),
	      "rdma_connect with qp_num %#x, no QP of ours, fails (%d, errno %d)", p.qp_num, r, r ? errno : 0);
	if (ev)
		rdma_ack_cm_event(ev);
	rdma_destroy_id(id);
}

int main(int argc, char **argv)
{
	struct rdma_event_channel *sc, *cc;
	struct rdma_cm_id *l;
	struct side srv = {.name = "server"}, cli = {.name = "client"};
	struct sockaddr_in s, src, dst;
	struct rdma_conn_param p = {.responder_resources = 1, .initiator_depth = 1, .retry_count = 7, .rnr_retry_count = 7};
	struct rdma_cm_event *ev;
	int port;
	if (argc != 3) {
		fprintf(stderr, "usage: external_qp ADDR0 ADDR1\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!(sc = rdma_create_event_channel()) || !(cc = rdma_create_event_channel()))
		die("rdma_create_event_channel");
	s = addr(argv[1], 0);
	if (rdma_create_id(sc, &l, NULL, RDMA_PS_TCP) || rdma_bind_addr(l, (struct sockaddr *)&s) || rdma_listen(l, 4))
		die("listen");
	port = ntohs(rdma_get_src_port(l));

	/* active: resolve, its own QP, connect by number */
	src = addr(argv[2], 0), dst = addr(argv[1], port);
	if (rdma_create_id(cc, &cli.id, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(cli.id, (struct sockaddr *)&src, (struct sockaddr *)&dst, 2000))
		die("rdma_resolve_addr");
	expect(cc, RDMA_CM_EVENT_ADDR_RESOLVED, "client");
	if (rdma_resolve_route(cli.id, 2000))
		die("rdma_resolve_route");
	expect(cc, RDMA_CM_EVENT_ROUTE_RESOLVED, "client");
	make_qp(&cli);
	p.qp_num = cli.qp->qp_num;
	if (cli.id->verbs->device->transport_type == IBV_TRANSPORT_IWARP) {
		int r = rdma_connect(cli.id, &p);
		check(r != 0 && errno == EOPNOTSUPP, "iWARP: rdma_connect with an external QP: EOPNOTSUPP (%d, errno %d)", r,
		      r ? errno : 0);
		ibv_destroy_qp(cli.qp), ibv_dereg_mr(cli.mr), ibv_destroy_cq(cli.cq);
		rdma_destroy_id(cli.id), rdma_destroy_id(l);
		rdma_destroy_event_channel(sc), rdma_destroy_event_channel(cc);
		return failures ? 1 : 0;
	}
	check(rdma_connect(cli.id, &p) == 0, "client: rdma_connect with conn_param.qp_num %u and no id->qp (errno %d)",
	      p.qp_num, errno);

	/* passive: its own QP moved to RTS before rdma_accept */
	srv.id = expect(sc, RDMA_CM_EVENT_CONNECT_REQUEST, "server");
	make_qp(&srv);
	to_state(&srv, IBV_QPS_INIT, NULL);
	to_state(&srv, IBV_QPS_RTR, &srv.rtr);
	to_state(&srv, IBV_QPS_RTS, &srv.rts);
	post_recv(&srv); /* the client's first SEND may come before its ESTABLISHED here */
	p.qp_num = srv.qp->qp_num;
	check(rdma_accept(srv.id, &p) == 0, "server: rdma_accept with conn_param.qp_num %u and no id->qp (errno %d)",
	      p.qp_num, errno);

	/* active: CONNECT_RESPONSE, its QP untouched; then its moves and the RTU */
	expect(cc, RDMA_CM_EVENT_CONNECT_RESPONSE, "client");
	check(qp_state(&cli) == IBV_QPS_RESET, "client: its QP is still in RESET at CONNECT_RESPONSE (state %d)",
	      qp_state(&cli));
	to_state(&cli, IBV_QPS_INIT, NULL);
	to_state(&cli, IBV_QPS_RTR, &cli.rtr);
	to_state(&cli, IBV_QPS_RTS, &cli.rts);
	check_pair(&cli, &srv);
	check(rdma_establish(cli.id) == 0, "client: rdma_establish (errno %d)", errno);
	expect(sc, RDMA_CM_EVENT_ESTABLISHED, "server");
	ev = next_event(cc, 300);
	check(!ev, "client: no event after rdma_establish (got %s)", ev ? rdma_event_str(ev->event) : "none");
	if (ev)
		rdma_ack_cm_event(ev);

	/* traffic both ways on the program's own QPs */
	{
		uint64_t id;
		int st;
		post_send(&cli, "from the client");
		st = completion(&cli, &id);
		check(st == IBV_WC_SUCCESS, "client: SEND completes (status %d)", st);
		st = completion(&srv, &id);
		check(st == IBV_WC_SUCCESS && !strcmp(srv.buf + MSG, "from the client"),
		      "server: received \"%.*s\" (status %d)", MSG, srv.buf + MSG, st);
	}
	send_one(&srv, &cli, "from the server");

	/* the disconnect leaves the external QPs alone */
	check(rdma_disconnect(cli.id) == 0, "client: rdma_disconnect (errno %d)", errno);
	expect(cc, RDMA_CM_EVENT_DISCONNECTED, "client");
	expect(sc, RDMA_CM_EVENT_DISCONNECTED, "server");
	check(qp_state(&cli) == IBV_QPS_RTS && qp_state(&srv) == IBV_QPS_RTS,
	      "the CM moved neither external QP at the disconnect (states %d, %d)", qp_state(&cli), qp_state(&srv));

	bad_qp_num(cc, argv[1], argv[2], port);

	ibv_destroy_qp(cli.qp), ibv_destroy_qp(srv.qp);
	ibv_dereg_mr(cli.mr), ibv_dereg_mr(srv.mr);
	ibv_destroy_cq(cli.cq), ibv_destroy_cq(srv.cq);
	rdma_destroy_id(cli.id), rdma_destroy_id(srv.id), rdma_destroy_id(l);
	rdma_destroy_event_channel(sc), rdma_destroy_event_channel(cc);
	return failures ? 1 : 0;
}
