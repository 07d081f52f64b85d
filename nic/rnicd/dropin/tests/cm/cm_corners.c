/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cm_corners: the corners of librdmacm that the unmodified Debian programs
 * do not reach, checked against the documented semantics (rdma-core 44's
 * man pages, <rdma/rdma_cma.h>) whatever library is loaded: rnic's drop-in
 * librdmacm.so.1 in the tests (nic/rnicd/dropin/librdmacm_test.go), under
 * AddressSanitizer. Server and client are ids of this one process, on two
 * devices' addresses.
 *
 *   cm_corners reject      A0 A1   reject with private data: REJECTED carries it
 *   cm_corners nolistener  A0 A1   connect to a port nobody listens on: REJECTED
 *                                   (the statuses of both: IB's REJ reason on RoCEv2,
 *                                   the kernel's errno on iWARP)
 *   cm_corners params      A0 A1   responder_resources/initiator_depth against the
 *                                   device's limits; RDMA_MAX_RESP_RES/RDMA_MAX_INIT_DEPTH
 *   cm_corners addrerror   A0 A1   an address no device reaches: ADDR_ERROR
 *   cm_corners nonblock    A0 A1   a non-blocking channel, poll(2), EAGAIN
 *   cm_corners backlog     A0 A1   64 connects pending on a listener, then accepted
 *   cm_corners orphan      A0 A1   a channel destroyed under a thread waiting on it:
 *                                   the thread stays blocked (as on a closed rdma_cm fd)
 *   cm_corners bind        A0 A1   rdma_bind_addr takes its port at once (port 0: an
 *                                   ephemeral one rdma_get_src_port shows before
 *                                   rdma_listen), reserved: EADDRINUSE for another bind
 *                                   of it, free again after rdma_destroy_id; an unbound
 *                                   id's rdma_resolve_addr and rdma_listen bind a port
 *   cm_corners loopback    A0 A1   127.0.0.1 and ::1 bind as the wildcard does (the
 *                                   NICs are on loopback), a connection to them (and
 *                                   to 0.0.0.0, this host) is established (the
 *                                   kernel's, with siw on lo)
 *   cm_corners getaddrinfo A0 A1   rdma_getaddrinfo: RAI_PASSIVE|RAI_NUMERICHOST, and
 *                                   neither node nor service with the hints' address
 *   cm_corners noloopback  A0 A1   no NIC on loopback (TAP mode): 127.0.0.1 has no device
 *                                   (ENODEV), 0.0.0.0 resolves to the first NIC
 *   cm_corners privdata    A0 A1   private data at the limits of rdma_connect, rdma_accept,
 *                                   rdma_reject (EINVAL one byte past), carried whole
 *   cm_corners timewait    A0 A1   TIMEWAIT_EXIT as the kernel's rdma_cm sends it on
 *                                   RoCE: after DISCONNECTED, once the CM's timewait
 *                                   (half a second) is over, to each side whose
 *                                   disconnect is through; none to an id destroyed
 *                                   before then, none at all on iWARP
 *   cm_corners killed      A0 A1   the daemon dies mid-connect: DEVICE_REMOVAL,
 *                                   ROUTE_ERROR, then ENODEV from rdma_get_cm_event
 *                                   rather than a wait for ever, no hang (prints "ready", then
 *                                   reads stdin's end before going on)
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
#include <pthread.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <rdma/rdma_cma.h>

#include "cmtest.h"

#define TIMEOUT_MS 20000

static const char *a0, *a1;

/* next_event waits (poll(2), bounded) for ch's next event. */
static struct rdma_cm_event *next_event(struct rdma_event_channel *ch)
{
	struct rdma_cm_event *ev;
	struct pollfd p = {.fd = ch->fd, .events = POLLIN};
	long end = now_ms() + TIMEOUT_MS;
	int fl = fcntl(ch->fd, F_GETFL);
	fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK);
	for (;;) {
		if (rdma_get_cm_event(ch, &ev) == 0)
			break;
		if (errno != EAGAIN)
			die("rdma_get_cm_event");
		if (now_ms() > end) {
			printf("FAIL no event within %d ms\n", TIMEOUT_MS);
			exit(1);
		}
		poll(&p, 1, 100);
	}
	fcntl(ch->fd, F_SETFL, fl);
	return ev;
}

/* expect waits for an event of type t on ch, checks it, and acks it
 * unless keep (then the caller acks). Returns the event's id. */
static struct rdma_cm_id *expect(struct rdma_event_channel *ch, enum rdma_cm_event_type t, const char *what)
{
	struct rdma_cm_event *ev = next_event(ch);
	struct rdma_cm_id *id = ev->id;
	check(ev->event == t, "%s: %s (got %s, status %d)", what, rdma_event_str(t), rdma_event_str(ev->event),
	      ev->status);
	rdma_ack_cm_event(ev);
	return id;
}

static void make_qp(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr a = {.qp_type = IBV_QPT_RC,
				     .cap = {.max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1, .max_recv_sge = 1}};
	if (rdma_create_qp(id, NULL, &a))
		die("rdma_create_qp");
}

/* client_to resolves id toward a0:port from a1, with a QP. */
static void client_to(struct rdma_event_channel *ch, struct rdma_cm_id *id, int port)
{
	struct sockaddr_in src = addr(a1, 0), dst = addr(a0, port);
	if (rdma_resolve_addr(id, (struct sockaddr *)&src, (struct sockaddr *)&dst, 2000))
		die("rdma_resolve_addr");
	expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED, "client");
	if (rdma_resolve_route(id, 2000))
		die("rdma_resolve_route");
	expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, "client");
	make_qp(id);
}

static struct rdma_cm_id *listener(struct rdma_event_channel *ch, int backlog, int *port)
{
	struct rdma_cm_id *l;
	struct sockaddr_in s = addr(a0, 0);
	if (rdma_create_id(ch, &l, NULL, RDMA_PS_TCP) || rdma_bind_addr(l, (struct sockaddr *)&s) ||
	    rdma_listen(l, backlog))
		die("listen");
	*port = ntohs(rdma_get_src_port(l));
	check(*port != 0, "rdma_get_src_port after listening on port 0: %d", *port);
	return l;
}

/* on_iwarp: id is bound to an iWARP device, whose CM reports a rejection
 * with the kernel's errno rather than IB's REJ reason. */
static int on_iwarp(const struct rdma_cm_id *id)
{
	return id->verbs && id->verbs->device->transport_type == IBV_TRANSPORT_IWARP;
}

static void test_reject(void)
{
	struct rdma_event_channel *sc = rdma_create_event_channel(), *cc = rdma_create_event_channel();
	struct rdma_cm_id *l, *c, *req;
	struct rdma_cm_event *ev;
	struct rdma_conn_param p = {.private_data = "hello", .private_data_len = 6, .retry_count = 7};
	int port;

	l = listener(sc, 1, &port);
	if (rdma_create_id(cc, &c, NULL, RDMA_PS_TCP))
		die("rdma_create_id");
	client_to(cc, c, port);
	if (rdma_connect(c, &p))
		die("rdma_connect");
	ev = next_event(sc);
	check(ev->event == RDMA_CM_EVENT_CONNECT_REQUEST && ev->listen_id == l, "CONNECT_REQUEST on the listener");
	check(ev->param.conn.private_data_len >= 6 && !memcmp(ev->param.conn.private_data, "hello", 6),
	      "the request carries the client's private data");
	req = ev->id;
	check(req != l && req->verbs != NULL, "the request has an id of its own, on a device");
	rdma_ack_cm_event(ev);
	check(rdma_reject(req, "nope", 5) == 0, "rdma_reject with private data");
	ev = next_event(cc);
	check(ev->event == RDMA_CM_EVENT_REJECTED, "client: REJECTED (got %s)", rdma_event_str(ev->event));
	if (on_iwarp(c))
		check(ev->status == -ECONNRESET, "iWARP: REJECTED's status is siw's -ECONNRESET for an MPA reject (got %d)",
		      ev->status);
	else
		check(ev->status == 28, "REJECTED's status is the consumer reject reason 28 (got %d)", ev->status);
	check(ev->param.conn.private_data_len >= 5 && ev->param.conn.private_data &&
		      !memcmp(ev->param.conn.private_data, "nope", 5),
	      "REJECTED carries the rejecter's private data (%d bytes)", ev->param.conn.private_data_len);
	rdma_ack_cm_event(ev);
	rdma_destroy_id(req);
	rdma_destroy_qp(c);
	rdma_destroy_id(c);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(sc);
	rdma_destroy_event_channel(cc);
}

/* ud_connect resolves the new UD id c toward a0:port and starts its
 * rdma_connect (SIDR) with private data "ud hi". */
static void ud_connect(struct rdma_event_channel *cc, struct rdma_cm_id *c, int port)
{
	struct sockaddr_in src = addr(a1, 0), dst = addr(a0, port);
	struct rdma_conn_param p = {.private_data = "ud hi", .private_data_len = 6};
	if (rdma_resolve_addr(c, (struct sockaddr *)&src, (struct sockaddr *)&dst, 2000))
		die("rdma_resolve_addr");
	expect(cc, RDMA_CM_EVENT_ADDR_RESOLVED, "UD client");
	if (rdma_resolve_route(c, 2000))
		die("rdma_resolve_route");
	expect(cc, RDMA_CM_EVENT_ROUTE_RESOLVED, "UD client");
	if (rdma_connect(c, &p))
		die("rdma_connect (UD)");
}

/* ud_request takes the UD listener l's next CONNECT_REQUEST and returns
 * its id. */
static struct rdma_cm_id *ud_request(struct rdma_event_channel *sc, struct rdma_cm_id *l)
{
	struct rdma_cm_event *ev = next_event(sc);
	struct rdma_cm_id *req = ev->id;
	check(ev->event == RDMA_CM_EVENT_CONNECT_REQUEST && ev->listen_id == l, "UD: CONNECT_REQUEST on the listener");
	check(ev->param.ud.private_data_len == 180 && !memcmp(ev->param.ud.private_data, "ud hi", 6),
	      "UD request: the SIDR_REQ's 180 bytes of private data (%d)", ev->param.ud.private_data_len);
	rdma_ack_cm_event(ev);
	return req;
}

/* test_ud: UD ids over SIDR: a rejected request is UNREACHABLE with the
 * SIDR status 2, an accepted one ESTABLISHED with the server QP's number,
 * RDMA_UDP_QKEY and a global AH; no listener is UNREACHABLE with 1. */
static void test_ud(void)
{
	struct rdma_event_channel *sc = rdma_create_event_channel(), *cc = rdma_create_event_channel();
	struct rdma_cm_id *l, *c, *req;
	struct rdma_cm_event *ev;
	struct sockaddr_in s = addr(a0, 0);
	struct ibv_qp_init_attr qa = {.qp_type = IBV_QPT_UD,
				      .cap = {.max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1, .max_recv_sge = 1}};
	int port;

	if (rdma_create_id(sc, &l, NULL, RDMA_PS_UDP) || rdma_bind_addr(l, (struct sockaddr *)&s) || rdma_listen(l, 4))
		die("UD listen");
	port = ntohs(rdma_get_src_port(l));
	/* rejected */
	if (rdma_create_id(cc, &c, NULL, RDMA_PS_UDP))
		die("rdma_create_id");
	ud_connect(cc, c, port);
	req = ud_request(sc, l);
	check(rdma_reject(req, "nope", 5) == 0, "rdma_reject on a UD request");
	ev = next_event(cc);
	check(ev->event == RDMA_CM_EVENT_UNREACHABLE && ev->status == 2,
	      "rejected UD request: UNREACHABLE, SIDR status 2 (got %s, %d)", rdma_event_str(ev->event), ev->status);
	rdma_ack_cm_event(ev);
	rdma_destroy_id(req);
	rdma_destroy_id(c);
	/* accepted */
	if (rdma_create_id(cc, &c, NULL, RDMA_PS_UDP))
		die("rdma_create_id");
	ud_connect(cc, c, port);
	req = ud_request(sc, l);
	if (rdma_create_qp(req, NULL, &qa))
		die("rdma_create_qp (UD)");
	check(rdma_accept(req, NULL) == 0, "rdma_accept on a UD request");
	ev = next_event(cc);
	check(ev->event == RDMA_CM_EVENT_ESTABLISHED, "accepted UD request: ESTABLISHED (got %s, %d)",
	      rdma_event_str(ev->event), ev->status);
	check(ev->param.ud.qp_num == req->qp->qp_num && ev->param.ud.qkey == 0x01234567,
	      "param.ud: the server QP %#x and RDMA_UDP_QKEY (got %#x, %#x)", req->qp->qp_num, ev->param.ud.qp_num,
	      ev->param.ud.qkey);
	check(ev->param.ud.ah_attr.is_global && ev->param.ud.ah_attr.port_num == 1, "param.ud.ah_attr: global, port 1");
	rdma_ack_cm_event(ev);
	rdma_destroy_qp(req);
	rdma_destroy_id(req);
	rdma_destroy_id(c);
	/* no listener */
	rdma_destroy_id(l);
	if (rdma_create_id(cc, &c, NULL, RDMA_PS_UDP))
		die("rdma_create_id");
	ud_connect(cc, c, port);
	ev = next_event(cc);
	check(ev->event == RDMA_CM_EVENT_UNREACHABLE && ev->status == 1,
	      "no UD listener: UNREACHABLE, SIDR status 1 (got %s, %d)", rdma_event_str(ev->event), ev->status);
	rdma_ack_cm_event(ev);
	rdma_destroy_id(c);
	rdma_destroy_event_channel(sc);
	rdma_destroy_event_channel(cc);
}

static void test_nolistener(void)
{
	struct rdma_event_channel *cc = rdma_create_event_channel();
	struct rdma_cm_id *c;
	struct rdma_cm_event *ev;
	int port;

	/* a port that was listened on a moment ago, and no more (the daemon
	 * gives its listener 2 s to come back first) */
	rdma_destroy_id(listener(cc, 1, &port));
	if (rdma_create_id(cc, &c, NULL, RDMA_PS_TCP))
		die("rdma_create_id");
	client_to(cc, c, port);
	if (rdma_connect(c, NULL))
		die("rdma_connect");
	ev = next_event(cc);
	check(ev->event == RDMA_CM_EVENT_REJECTED, "no listener: REJECTED (got %s)", rdma_event_str(ev->event));
	if (on_iwarp(c))
		check(ev->status == -ECONNREFUSED, "iWARP: status -ECONNREFUSED, the TCP connection refused (got %d)",
		      ev->status);
	else
		check(ev->status == 8, "status: invalid service ID, 8 (got %d)", ev->status);
	rdma_ack_cm_event(ev);
	rdma_destroy_qp(c);
	rdma_destroy_id(c);
	rdma_destroy_event_channel(cc);
}

static void test_addrerror(void)
{
	struct rdma_event_channel *cc = rdma_create_event_channel();
	struct rdma_cm_id *c;
	struct sockaddr_in src = addr(a1, 0), dst = addr("192.0.2.1", 7471), other = addr("127.254.254.254", 0);
	struct rdma_cm_event *ev;

	if (rdma_create_id(cc, &c, NULL, RDMA_PS_TCP))
		die("rdma_create_id");
	check(rdma_bind_addr(c, (struct sockaddr *)&other) == -1 && errno == EADDRNOTAVAIL,
	      "rdma_bind_addr to an address no device has: EADDRNOTAVAIL");
	check(rdma_resolve_route(c, 1000) == -1 && errno == EINVAL, "rdma_resolve_route before the address: EINVAL");
	check(rdma_resolve_addr(c, (struct sockaddr *)&src, (struct sockaddr *)&dst, 1000) == 0,
	      "rdma_resolve_addr toward a network no device reaches is started");
	ev = next_event(cc);
	check(ev->event == RDMA_CM_EVENT_ADDR_ERROR && ev->status < 0, "ADDR_ERROR (got %s, status %d)",
	      rdma_event_str(ev->event), ev->status);
	rdma_ack_cm_event(ev);
	check(rdma_connect(c, NULL) == -1 && errno == EINVAL, "rdma_connect without a route: EINVAL");
	rdma_destroy_id(c);
	rdma_destroy_event_channel(cc);
}

static void test_nonblock(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *l, *c, *req = NULL;
	struct rdma_cm_event *ev;
	struct pollfd p = {.events = POLLIN};
	int port, established = 0, got_req = 0, down = 0;
	long end;

	p.fd = ch->fd;
	fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
	check(rdma_get_cm_event(ch, &ev) == -1 && errno == EAGAIN, "empty non-blocking channel: EAGAIN");
	check(poll(&p, 1, 0) == 0, "empty channel: poll(2) says not readable");
	l = listener(ch, 4, &port);
	if (rdma_create_id(ch, &c, NULL, RDMA_PS_TCP))
		die("rdma_create_id");
	{
		struct sockaddr_in src = addr(a1, 0), dst = addr(a0, port);
		if (rdma_resolve_addr(c, (struct sockaddr *)&src, (struct sockaddr *)&dst, 2000))
			die("rdma_resolve_addr");
	}
	check(poll(&p, 1, TIMEOUT_MS) == 1 && (p.revents & POLLIN), "poll(2) wakes for ADDR_RESOLVED");
	check(rdma_get_cm_event(ch, &ev) == 0 && ev->event == RDMA_CM_EVENT_ADDR_RESOLVED, "ADDR_RESOLVED at once");
	rdma_ack_cm_event(ev);
	check(rdma_get_cm_event(ch, &ev) == -1 && errno == EAGAIN, "then EAGAIN again");
	if (rdma_resolve_route(c, 2000))
		die("rdma_resolve_route");
	check(poll(&p, 1, TIMEOUT_MS) == 1, "poll(2) wakes for ROUTE_RESOLVED");
	check(rdma_get_cm_event(ch, &ev) == 0 && ev->event == RDMA_CM_EVENT_ROUTE_RESOLVED, "ROUTE_RESOLVED");
	rdma_ack_cm_event(ev);
	make_qp(c);
	if (rdma_connect(c, NULL))
		die("rdma_connect");
	/* the request, our accept, both ESTABLISHEDs: all through poll(2);
	 * a wake-up without an event (EAGAIN) is allowed, a hang is not */
	for (end = now_ms() + TIMEOUT_MS; established < 2 && now_ms() < end;) {
		if (poll(&p, 1, 1000) != 1)
			continue;
		if (rdma_get_cm_event(ch, &ev)) {
			check(errno == EAGAIN, "a failed get on a readable channel says EAGAIN (errno %d)", errno);
			continue;
		}
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			req = ev->id;
			got_req = 1;
			make_qp(req);
			check(rdma_accept(req, NULL) == 0, "rdma_accept");
		} else {
			check(ev->event == RDMA_CM_EVENT_ESTABLISHED, "ESTABLISHED (got %s)", rdma_event_str(ev->event));
			established++;
		}
		rdma_ack_cm_event(ev);
	}
	check(got_req && established == 2, "both sides established through poll(2)");
	check(rdma_disconnect(c) == 0, "rdma_disconnect");
	for (end = now_ms() + TIMEOUT_MS; down < 2 && now_ms() < end;) {
		if (poll(&p, 1, 1000) == 1 && rdma_get_cm_event(ch, &ev) == 0) {
			down += ev->event == RDMA_CM_EVENT_DISCONNECTED;
			rdma_ack_cm_event(ev);
		}
	}
	check(down == 2, "DISCONNECTED on both sides");
	rdma_destroy_qp(req);
	rdma_destroy_id(req);
	rdma_destroy_qp(c);
	rdma_destroy_id(c);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(ch);
}

#define NBACK 64

static void test_backlog(void)
{
	struct rdma_event_channel *sc = rdma_create_event_channel(), *cc = rdma_create_event_channel();
	struct rdma_cm_id *l, *c[NBACK], *r[NBACK];
	struct rdma_cm_event *ev;
	int port, nreq = 0, est = 0;

	l = listener(sc, NBACK, &port);
	for (int i = 0; i < NBACK; i++) {
		if (rdma_create_id(cc, &c[i], NULL, RDMA_PS_TCP))
			die("rdma_create_id");
		client_to(cc, c[i], port);
		if (rdma_connect(c[i], NULL))
			die("rdma_connect %d", i);
	}
	/* all 64 connects are pending before the listener looks at one */
	usleep(300000);
	while (nreq < NBACK) {
		ev = next_event(sc);
		if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
			check(0, "listener: %s instead of a request", rdma_event_str(ev->event));
			rdma_ack_cm_event(ev);
			break;
		}
		r[nreq] = ev->id;
		rdma_ack_cm_event(ev);
		make_qp(r[nreq]);
		if (rdma_accept(r[nreq], NULL))
			die("rdma_accept");
		nreq++;
	}
	check(nreq == NBACK, "%d of %d pending connects reached the listener", nreq, NBACK);
	while (est < NBACK) {
		ev = next_event(cc);
		if (ev->event != RDMA_CM_EVENT_ESTABLISHED) {
			check(0, "client: %s, status %d", rdma_event_str(ev->event), ev->status);
			rdma_ack_cm_event(ev);
			break;
		}
		est++;
		rdma_ack_cm_event(ev);
	}
	check(est == NBACK, "%d of %d clients established", est, NBACK);
	for (int i = 0; i < NBACK; i++) {
		rdma_destroy_qp(c[i]);
		rdma_destroy_id(c[i]);
	}
	for (int i = 0; i < nreq; i++) {
		rdma_destroy_qp(r[i]);
		rdma_destroy_id(r[i]);
	}
	rdma_destroy_id(l);
	rdma_destroy_event_channel(sc);
	rdma_destroy_event_channel(cc);
}

static volatile int orphan_returned, orphan_errno;

static void *orphan_wait(void *arg)
{
	struct rdma_cm_event *ev;
	int r = rdma_get_cm_event(arg, &ev);
	orphan_errno = r ? errno : 0;
	orphan_returned = 1;
	return NULL;
}

/* test_orphan: rping's event thread still waits in rdma_get_cm_event when
 * main destroys the channel and returns; CM traffic on the device then
 * must not make the waiter return an error (rping exits with it). */
static void test_orphan(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel(), *other = rdma_create_event_channel();
	struct rdma_cm_id *c;
	struct rdma_cm_event *ev;
	pthread_t th;
	int port;

	if (!ch || !other || pthread_create(&th, NULL, orphan_wait, ch))
		die("setup");
	usleep(100000);
	rdma_destroy_event_channel(ch);
	/* CM results on the devices' sockets: a connect nobody listens for */
	rdma_destroy_id(listener(other, 1, &port));
	if (rdma_create_id(other, &c, NULL, RDMA_PS_TCP))
		die("rdma_create_id");
	client_to(other, c, port);
	if (rdma_connect(c, NULL))
		die("rdma_connect");
	ev = next_event(other);
	rdma_ack_cm_event(ev);
	usleep(300000);
	check(!orphan_returned, "the orphaned waiter stays blocked (returned: errno %d)", orphan_errno);
	rdma_destroy_qp(c);
	rdma_destroy_id(c);
	rdma_destroy_event_channel(other);
	pthread_detach(th);
}

/* connected_pair connects a new client id (*c, on cc) to a new listener
 * on sc: *req is the server's id; both have seen ESTABLISHED. */
static void connected_pair(struct rdma_event_channel *sc, struct rdma_event_channel *cc, struct rdma_cm_id **l,
			   struct rdma_cm_id **c, struct rdma_cm_id **req)
{
	int port;
	*l = listener(sc, 1, &port);
	if (rdma_create_id(cc, c, NULL, RDMA_PS_TCP))
		die("rdma_create_id");
	client_to(cc, *c, port);
	if (rdma_connect(*c, NULL))
		die("rdma_connect");
	*req = expect(sc, RDMA_CM_EVENT_CONNECT_REQUEST, "listener");
	make_qp(*req);
	if (rdma_accept(*req, NULL))
		die("rdma_accept");
	expect(sc, RDMA_CM_EVENT_ESTABLISHED, "server");
	expect(cc, RDMA_CM_EVENT_ESTABLISHED, "client");
}

/* quiet_for says whether ch hands out no event for ms milliseconds; an
 * event that comes is reported and acked. */
static int quiet_for(struct rdma_event_channel *ch, long ms, const char *what)
{
	struct rdma_cm_event *ev;
	struct pollfd p = {.fd = ch->fd, .events = POLLIN};
	long end = now_ms() + ms;
	int fl = fcntl(ch->fd, F_GETFL), quiet = 1;
	fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK);
	while (now_ms() < end) {
		if (rdma_get_cm_event(ch, &ev) == 0) {
			printf("%s: unexpected %s\n", what, rdma_event_str(ev->event));
			rdma_ack_cm_event(ev);
			quiet = 0;
			break;
		}
		poll(&p, 1, 50);
	}
	fcntl(ch->fd, F_SETFL, fl);
	return quiet;
}

/* timewait_after: the next event of ch is TIMEWAIT_EXIT, not sooner than
 * half the kernel's 512 ms timewait after since (the event's latency on a
 * busy machine comes off the measured wait). */
static void timewait_after(struct rdma_event_channel *ch, long since, const char *what)
{
	struct rdma_cm_event *ev = next_event(ch);
	long waited = now_ms() - since;
	check(ev->event == RDMA_CM_EVENT_TIMEWAIT_EXIT, "%s: TIMEWAIT_EXIT follows DISCONNECTED (got %s)", what,
	      rdma_event_str(ev->event));
	check(waited >= 256, "%s: TIMEWAIT_EXIT after the CM's timewait, not with DISCONNECTED (%ld ms)", what,
	      waited);
	rdma_ack_cm_event(ev);
}

static void test_timewait(void)
{
	struct rdma_event_channel *sc = rdma_create_event_channel(), *cc = rdma_create_event_channel();
	struct rdma_cm_id *l, *c, *req;
	long t;
	int iwarp;

	/* kept alive: each side gets its TIMEWAIT_EXIT, after DISCONNECTED */
	connected_pair(sc, cc, &l, &c, &req);
	iwarp = on_iwarp(c);
	t = now_ms();
	check(rdma_disconnect(c) == 0, "the client disconnects");
	expect(cc, RDMA_CM_EVENT_DISCONNECTED, "client");
	expect(sc, RDMA_CM_EVENT_DISCONNECTED, "server");
	if (iwarp) {
		check(quiet_for(cc, 1500, "client") && quiet_for(sc, 10, "server"),
		      "iWARP: no TIMEWAIT_EXIT (the kernel's iw_cm has no timewait)");
	} else {
		check(quiet_for(sc, 50, "server"), "the server's timewait waits for its own rdma_disconnect");
		timewait_after(cc, t, "client");
		t = now_ms();
		check(rdma_disconnect(req) == 0, "the server answers with rdma_disconnect");
		timewait_after(sc, t, "server");
	}
	rdma_destroy_qp(req);
	rdma_destroy_id(req);
	rdma_destroy_qp(c);
	rdma_destroy_id(c);
	rdma_destroy_id(l);

	/* destroyed within the timewait: nothing more comes */
	connected_pair(sc, cc, &l, &c, &req);
	check(rdma_disconnect(c) == 0, "the client disconnects");
	expect(cc, RDMA_CM_EVENT_DISCONNECTED, "client");
	expect(sc, RDMA_CM_EVENT_DISCONNECTED, "server");
	check(rdma_disconnect(req) == 0, "the server answers with rdma_disconnect");
	rdma_destroy_qp(req);
	rdma_destroy_id(req);
	rdma_destroy_qp(c);
	rdma_destroy_id(c);
	check(quiet_for(cc, 1200, "client") && quiet_for(sc, 10, "server"),
	      "no TIMEWAIT_EXIT for ids destroyed in their timewait");
	rdma_destroy_id(l);
	rdma_destroy_event_channel(sc);
	rdma_destroy_event_channel(cc);
}

/* test_killed: a connect waits on a listener that does not answer; the
 * harness kills the daemon once we say ready (stdin closes then). */
static void test_killed(void)
{
	struct rdma_event_channel *sc = rdma_create_event_channel(), *cc = rdma_create_event_channel();
	struct rdma_cm_id *l, *c, *c2, *req;
	struct rdma_cm_event *ev;
	struct sockaddr_in src = addr(a1, 0), dst = addr(a0, 1);
	char b;
	int port;

	l = listener(sc, 1, &port);
	if (rdma_create_id(cc, &c, NULL, RDMA_PS_TCP) || rdma_create_id(cc, &c2, NULL, RDMA_PS_TCP))
		die("rdma_create_id");
	client_to(cc, c, port);
	if (rdma_resolve_addr(c2, (struct sockaddr *)&src, (struct sockaddr *)&dst, 2000))
		die("rdma_resolve_addr");
	expect(cc, RDMA_CM_EVENT_ADDR_RESOLVED, "second client");
	if (rdma_connect(c, NULL))
		die("rdma_connect");
	req = expect(sc, RDMA_CM_EVENT_CONNECT_REQUEST, "listener"); /* not answered */
	printf("ready\n");
	fflush(stdout);
	while (read(0, &b, 1) > 0) {
	}
	ev = next_event(cc);
	check(ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL, "the connecting id: DEVICE_REMOVAL (got %s)",
	      rdma_event_str(ev->event));
	rdma_ack_cm_event(ev);
	ev = next_event(cc);
	check(ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL, "the resolved id: DEVICE_REMOVAL (got %s)",
	      rdma_event_str(ev->event));
	rdma_ack_cm_event(ev);
	check(rdma_resolve_route(c2, 1000) == 0, "rdma_resolve_route on a removed device is started");
	expect(cc, RDMA_CM_EVENT_ROUTE_ERROR, "removed device");
	{
		/* nothing more can come: rather than wait for ever, the channel
		 * polls readable and a blocking rdma_get_cm_event fails */
		struct pollfd p = {.fd = cc->fd, .events = POLLIN};
		int r, e;
		check(poll(&p, 1, 2000) == 1, "with the daemon gone the channel polls readable");
		r = rdma_get_cm_event(cc, &ev);
		e = errno;
		check(r == -1 && e == ENODEV, "a blocking rdma_get_cm_event then fails ENODEV (%d, errno %d)", r, e);
	}
	ev = next_event(sc);
	check(ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL, "the listener's ids: DEVICE_REMOVAL (got %s)",
	      rdma_event_str(ev->event));
	rdma_ack_cm_event(ev);
	{
		int r = rdma_accept(req, NULL), e = errno;
		check(r == -1, "rdma_accept on a removed device fails (errno %d)", e);
	}
	rdma_destroy_id(req);
	rdma_destroy_qp(c);
	rdma_destroy_id(c);
	rdma_destroy_id(c2);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(sc);
	rdma_destroy_event_channel(cc);
}

/* test_params: responder_resources and initiator_depth against the
 * device's max_qp_rd_atom and max_qp_init_rd_atom: one more is EINVAL (when
 * a byte holds it), RDMA_MAX_RESP_RES and RDMA_MAX_INIT_DEPTH mean the
 * maxima (librdmacm's rules), and a connection made with them on both
 * sides has them in its QPs' max_dest_rd_atomic and max_rd_atomic. */
static void test_params(void)
{
	struct rdma_event_channel *sc = rdma_create_event_channel(), *cc = rdma_create_event_channel();
	struct rdma_conn_param most = {.responder_resources = RDMA_MAX_RESP_RES,
				       .initiator_depth = RDMA_MAX_INIT_DEPTH,
				       .retry_count = 7,
				       .rnr_retry_count = 7};
	struct rdma_cm_id *l, *c, *req;
	struct rdma_cm_event *ev;
	struct ibv_device_attr a;
	int port, ird, ord;

	l = listener(sc, 1, &port);
	if (rdma_create_id(cc, &c, NULL, RDMA_PS_TCP))
		die("rdma_create_id");
	client_to(cc, c, port);
	if (ibv_query_device(c->verbs, &a))
		die("ibv_query_device");
	ird = a.max_qp_rd_atom < 255 ? a.max_qp_rd_atom : 255;
	ord = a.max_qp_init_rd_atom < 255 ? a.max_qp_init_rd_atom : 255;
	check(ird >= 1 && ord >= 1, "max_qp_rd_atom %d, max_qp_init_rd_atom %d", a.max_qp_rd_atom, a.max_qp_init_rd_atom);
	if (ird < 255) {
		struct rdma_conn_param p = {.responder_resources = (uint8_t)(ird + 1), .initiator_depth = 1};
		int r = rdma_connect(c, &p), e = errno;
		check(r == -1 && e == EINVAL, "responder_resources %d > max_qp_rd_atom: EINVAL (got %d, errno %d)", ird + 1,
		      r, e);
	}
	if (ord < 255) {
		struct rdma_conn_param p = {.responder_resources = 1, .initiator_depth = (uint8_t)(ord + 1)};
		int r = rdma_connect(c, &p), e = errno;
		check(r == -1 && e == EINVAL, "initiator_depth %d > max_qp_init_rd_atom: EINVAL (got %d, errno %d)", ord + 1,
		      r, e);
	}
	if (rdma_connect(c, &most))
		die("rdma_connect with RDMA_MAX_RESP_RES, RDMA_MAX_INIT_DEPTH");
	ev = next_event(sc);
	check(ev->event == RDMA_CM_EVENT_CONNECT_REQUEST, "CONNECT_REQUEST (got %s)", rdma_event_str(ev->event));
	{
		/* the peer's view, swapped, as the kernel's rdma_cm reports it;
		 * iWARP's MPA carries no retry counts */
		struct rdma_conn_param *p = &ev->param.conn;
		int retry = on_iwarp(c) ? 0 : 7;
		check(p->responder_resources == ord && p->initiator_depth == ird && p->retry_count == retry &&
			      p->rnr_retry_count == retry,
		      "CONNECT_REQUEST's responder_resources %d, initiator_depth %d, retry_count %d, rnr_retry_count %d "
		      "(want %d, %d, %d, %d)",
		      p->responder_resources, p->initiator_depth, p->retry_count, p->rnr_retry_count, ord, ird, retry,
		      retry);
	}
	req = ev->id;
	rdma_ack_cm_event(ev);
	make_qp(req);
	check(rdma_accept(req, &most) == 0, "rdma_accept with RDMA_MAX_RESP_RES, RDMA_MAX_INIT_DEPTH");
	expect(cc, RDMA_CM_EVENT_ESTABLISHED, "client");
	expect(sc, RDMA_CM_EVENT_ESTABLISHED, "server");
	for (int i = 0; i < 2; i++) {
		struct ibv_qp *qp = i ? req->qp : c->qp;
		struct ibv_qp_attr qa;
		struct ibv_qp_init_attr qi;
		if (ibv_query_qp(qp, &qa, IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC, &qi))
			die("ibv_query_qp");
		check(qa.max_dest_rd_atomic == ird && qa.max_rd_atomic == ord,
		      "%s QP: max_dest_rd_atomic %d, max_rd_atomic %d (want %d, %d)", i ? "server" : "client",
		      qa.max_dest_rd_atomic, qa.max_rd_atomic, ird, ord);
	}
	check(rdma_disconnect(c) == 0, "rdma_disconnect");
	expect(cc, RDMA_CM_EVENT_DISCONNECTED, "client");
	expect(sc, RDMA_CM_EVENT_DISCONNECTED, "server");
	rdma_destroy_qp(req);
	rdma_destroy_id(req);
	rdma_destroy_qp(c);
	rdma_destroy_id(c);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(sc);
	rdma_destroy_event_channel(cc);
}

/* port_of: the port of a sockaddr (either family), host order. */
static int port_of(const struct sockaddr *sa)
{
	return ntohs(sa->sa_family == AF_INET6 ? ((const struct sockaddr_in6 *)sa)->sin6_port
					       : ((const struct sockaddr_in *)sa)->sin_port);
}

static struct rdma_cm_id *new_id(struct rdma_event_channel *ch, enum rdma_port_space ps)
{
	struct rdma_cm_id *id;
	if (rdma_create_id(ch, &id, NULL, ps))
		die("rdma_create_id");
	return id;
}

/* bind_to binds a new id of ps to ip:port; its result (0, or errno). */
static int bind_to(struct rdma_event_channel *ch, enum rdma_port_space ps, const char *ip, int port,
		   struct rdma_cm_id **out)
{
	struct sockaddr_in s = addr(ip, port);
	*out = new_id(ch, ps);
	if (rdma_bind_addr(*out, (struct sockaddr *)&s) == 0)
		return 0;
	int e = errno;
	rdma_destroy_id(*out);
	*out = NULL;
	return e;
}

static void test_bind(void)
{
	struct rdma_event_channel *sc = rdma_create_event_channel(), *cc = rdma_create_event_channel();
	struct rdma_cm_id *l, *x, *c, *req;
	struct rdma_cm_event *ev;
	int port, err;

	check(bind_to(sc, RDMA_PS_TCP, a0, 0, &l) == 0, "rdma_bind_addr %s:0", a0);
	port = ntohs(rdma_get_src_port(l));
	check(port != 0 && port_of(rdma_get_local_addr(l)) == port,
	      "the port is taken by the bind, before rdma_listen: rdma_get_src_port %d", port);
	check(l->verbs != NULL, "a bind to a device's address binds to that device");
	err = bind_to(cc, RDMA_PS_TCP, a0, port, &x);
	check(err == EADDRINUSE, "a second bind of %s:%d: EADDRINUSE (got %s)", a0, port, strerror(err));
	err = bind_to(cc, RDMA_PS_TCP, "0.0.0.0", port, &x);
	check(err == EADDRNOTAVAIL, "a wildcard bind of the bound port: EADDRNOTAVAIL (got %s)", strerror(err));
	err = bind_to(cc, RDMA_PS_TCP, a0, 1000, &x);
	check(err == EACCES, "a port below 1024, unprivileged: EACCES (got %s)", strerror(err));
	if (x)
		rdma_destroy_id(x);
	err = bind_to(cc, RDMA_PS_UDP, a0, port, &x);
	check(err == 0, "the UDP port space is apart: a UDP id binds %s:%d (got %s)", a0, port, strerror(err));
	if (x)
		rdma_destroy_id(x);
	err = bind_to(cc, RDMA_PS_TCP, a1, port, &x);
	check(err == 0, "another address binds the same port (got %s)", strerror(err));
	if (x)
		rdma_destroy_id(x);
	if (rdma_listen(l, 1))
		die("rdma_listen");
	check(ntohs(rdma_get_src_port(l)) == port, "rdma_listen listens on the bound port");

	/* the port announced before rdma_listen is the one a client reaches */
	c = new_id(cc, RDMA_PS_TCP);
	client_to(cc, c, port);
	if (rdma_connect(c, NULL))
		die("rdma_connect");
	ev = next_event(sc);
	check(ev->event == RDMA_CM_EVENT_CONNECT_REQUEST, "a connect to the bound port reaches the listener (got %s)",
	      rdma_event_str(ev->event));
	req = ev->id;
	rdma_ack_cm_event(ev);
	rdma_reject(req, NULL, 0);
	expect(cc, RDMA_CM_EVENT_REJECTED, "client");
	rdma_destroy_id(req);
	rdma_destroy_qp(c);
	rdma_destroy_id(c);
	rdma_destroy_id(l);
	err = bind_to(cc, RDMA_PS_TCP, a0, port, &x);
	check(err == 0, "rdma_destroy_id gives the port back: it binds again (got %s)", strerror(err));
	if (x)
		rdma_destroy_id(x);

	check(bind_to(cc, RDMA_PS_TCP, "0.0.0.0", 0, &x) == 0 && x && rdma_get_src_port(x) != 0 && !x->verbs,
	      "a wildcard bind of port 0 gets a port and no device");
	if (x) {
		struct rdma_cm_id *y;
		port = ntohs(rdma_get_src_port(x));
		err = bind_to(cc, RDMA_PS_TCP, a0, port, &y);
		check(err == EADDRNOTAVAIL, "a bind of a port bound to the wildcard: EADDRNOTAVAIL (got %s)", strerror(err));
		rdma_destroy_id(x);
	}

	/* no bind: rdma_resolve_addr binds an ephemeral port, rdma_listen
	 * the wildcard and one */
	c = new_id(cc, RDMA_PS_TCP);
	struct sockaddr_in dst = addr(a0, 7471);
	if (rdma_resolve_addr(c, NULL, (struct sockaddr *)&dst, 2000))
		die("rdma_resolve_addr");
	expect(cc, RDMA_CM_EVENT_ADDR_RESOLVED, "unbound client");
	check(rdma_get_src_port(c) != 0, "rdma_resolve_addr of an unbound id binds a port: %d",
	      ntohs(rdma_get_src_port(c)));
	rdma_destroy_id(c);
	l = new_id(sc, RDMA_PS_TCP);
	err = rdma_listen(l, 1) ? errno : 0;
	check(err == 0 && rdma_get_src_port(l) != 0, "rdma_listen of an unbound id listens on a port: %d (%s)",
	      ntohs(rdma_get_src_port(l)), strerror(err));
	rdma_destroy_id(l);
	rdma_destroy_event_channel(sc);
	rdma_destroy_event_channel(cc);
}

/* loopback_connect connects a client id to dst (the loopback address of a
 * family) and the listener l's request, and checks both ends. */
static void loopback_connect(struct rdma_event_channel *sc, struct rdma_event_channel *cc, struct sockaddr *dst,
			     const char *what)
{
	struct rdma_cm_id *c = new_id(cc, RDMA_PS_TCP), *req;
	struct rdma_cm_event *ev;
	if (rdma_resolve_addr(c, NULL, dst, 2000))
		die("rdma_resolve_addr %s", what);
	expect(cc, RDMA_CM_EVENT_ADDR_RESOLVED, what);
	check(c->verbs != NULL, "%s: resolved to a device", what);
	check(rdma_get_local_addr(c)->sa_family == dst->sa_family, "%s: the source is of the destination's family",
	      what);
	if (rdma_resolve_route(c, 2000))
		die("rdma_resolve_route");
	expect(cc, RDMA_CM_EVENT_ROUTE_RESOLVED, what);
	make_qp(c);
	if (rdma_connect(c, NULL))
		die("rdma_connect");
	ev = next_event(sc);
	check(ev->event == RDMA_CM_EVENT_CONNECT_REQUEST, "%s: the listener gets the request (got %s)", what,
	      rdma_event_str(ev->event));
	req = ev->id;
	rdma_ack_cm_event(ev);
	make_qp(req);
	if (rdma_accept(req, NULL))
		die("rdma_accept");
	expect(sc, RDMA_CM_EVENT_ESTABLISHED, what);
	expect(cc, RDMA_CM_EVENT_ESTABLISHED, what);
	rdma_disconnect(c);
	expect(cc, RDMA_CM_EVENT_DISCONNECTED, what);
	expect(sc, RDMA_CM_EVENT_DISCONNECTED, what);
	rdma_destroy_qp(req);
	rdma_destroy_id(req);
	rdma_destroy_qp(c);
	rdma_destroy_id(c);
}

static void test_loopback(void)
{
	struct rdma_event_channel *sc = rdma_create_event_channel(), *cc = rdma_create_event_channel();
	struct rdma_cm_id *l = new_id(sc, RDMA_PS_TCP), *l6 = new_id(sc, RDMA_PS_TCP);
	struct sockaddr_in lo = addr("127.0.0.1", 0);
	struct sockaddr_in6 lo6 = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
	int port;

	int err = rdma_bind_addr(l, (struct sockaddr *)&lo) ? errno : 0;
	check(err == 0, "rdma_bind_addr 127.0.0.1 (%s)", strerror(err));
	port = ntohs(rdma_get_src_port(l));
	check(port != 0, "127.0.0.1:0 gets a port: %d", port);
	check(((struct sockaddr_in *)rdma_get_local_addr(l))->sin_addr.s_addr == htonl(INADDR_LOOPBACK),
	      "the id keeps the loopback address");
	check(l->verbs == NULL, "bound to no one device, as the wildcard (every NIC is on loopback)");
	if (rdma_listen(l, 4))
		die("rdma_listen 127.0.0.1");
	lo.sin_port = htons((uint16_t)port);
	loopback_connect(sc, cc, (struct sockaddr *)&lo, "127.0.0.1");
	/* the wildcard destination is this host, as the kernel's
	 * cma_resolve_loopback has it */
	struct sockaddr_in any = addr("0.0.0.0", port);
	loopback_connect(sc, cc, (struct sockaddr *)&any, "0.0.0.0");

	err = rdma_bind_addr(l6, (struct sockaddr *)&lo6) ? errno : 0;
	check(err == 0, "rdma_bind_addr ::1 (%s)", strerror(err));
	port = ntohs(rdma_get_src_port(l6));
	check(port != 0 && rdma_get_local_addr(l6)->sa_family == AF_INET6, "[::1]:0 gets a port: %d", port);
	if (rdma_listen(l6, 4))
		die("rdma_listen ::1");
	lo6.sin6_port = htons((uint16_t)port);
	loopback_connect(sc, cc, (struct sockaddr *)&lo6, "::1");
	rdma_destroy_id(l6);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(sc);
	rdma_destroy_event_channel(cc);
}

static void test_getaddrinfo(void)
{
	struct rdma_addrinfo hints = {.ai_flags = RAI_PASSIVE | RAI_NUMERICHOST}, *res = NULL, *res2 = NULL;
	struct rdma_cm_id *id = new_id(NULL, RDMA_PS_TCP);

	check(rdma_getaddrinfo(a0, NULL, &hints, &res) == 0 && res && res->ai_src_addr && !res->ai_dst_addr &&
		      res->ai_family == AF_INET && res->ai_port_space == RDMA_PS_TCP,
	      "RAI_PASSIVE|RAI_NUMERICHOST %s: a source address", a0);
	if (res)
		check(rdma_bind_addr(id, res->ai_src_addr) == 0 && id->verbs, "its source address binds to a device");
	hints.ai_flags = 0;
	hints.ai_dst_addr = res ? res->ai_src_addr : NULL;
	hints.ai_dst_len = res ? res->ai_src_len : 0;
	check(rdma_getaddrinfo(NULL, NULL, &hints, &res2) == 0 && res2 && res2->ai_dst_addr &&
		      res2->ai_dst_len == hints.ai_dst_len && !memcmp(res2->ai_dst_addr, hints.ai_dst_addr, res2->ai_dst_len),
	      "neither node nor service: the hints' destination");
	rdma_freeaddrinfo(res2);
	res2 = NULL;
	check(rdma_getaddrinfo(NULL, NULL, NULL, &res2) == -1 && errno == EINVAL, "nothing at all: EINVAL");
	hints = (struct rdma_addrinfo){.ai_flags = RAI_NUMERICHOST};
	check(rdma_getaddrinfo("localhost", NULL, &hints, &res2) != 0, "RAI_NUMERICHOST refuses a name");
	rdma_freeaddrinfo(res);
	rdma_destroy_id(id);
}

/* pattern fills n bytes with a pattern of seed; matches checks one. */
static void pattern(uint8_t *b, int n, int seed)
{
	for (int i = 0; i < n; i++)
		b[i] = (uint8_t)(seed + 7 * i);
}

static int matches(const void *p, int n, int seed)
{
	uint8_t want[256];
	pattern(want, n, seed);
	return p && !memcmp(p, want, (size_t)n);
}

/* privdata_round connects with conn bytes of private data, then the
 * listener rejects with rej bytes (rej >= 0) or accepts with acc bytes,
 * each within the transport's limits, and checks what each side got. */
static void privdata_round(int conn, int rej, int acc)
{
	struct rdma_event_channel *sc = rdma_create_event_channel(), *cc = rdma_create_event_channel();
	struct rdma_cm_id *l, *c = new_id(cc, RDMA_PS_TCP), *req;
	struct rdma_cm_event *ev;
	uint8_t b[256];
	int port;
	struct rdma_conn_param p = {0};

	l = listener(sc, 1, &port);
	client_to(cc, c, port);
	pattern(b, conn + 1, 1);
	p.private_data = b;
	p.private_data_len = (uint8_t)(conn + 1);
	check(rdma_connect(c, &p) == -1 && errno == EINVAL, "rdma_connect with %d bytes of private data: EINVAL",
	      conn + 1);
	p.private_data_len = (uint8_t)conn;
	if (rdma_connect(c, &p))
		die("rdma_connect with %d bytes", conn);
	ev = next_event(sc);
	check(ev->event == RDMA_CM_EVENT_CONNECT_REQUEST && ev->param.conn.private_data_len >= conn &&
		      matches(ev->param.conn.private_data, conn, 1),
	      "CONNECT_REQUEST carries the %d bytes (got %d)", conn, ev->param.conn.private_data_len);
	req = ev->id;
	rdma_ack_cm_event(ev);
	if (rej >= 0) {
		pattern(b, rej + 1, 2);
		check(rdma_reject(req, b, (uint8_t)(rej + 1)) == -1 && errno == EINVAL,
		      "rdma_reject with %d bytes: EINVAL", rej + 1);
		check(rdma_reject(req, b, (uint8_t)rej) == 0, "rdma_reject with %d bytes", rej);
		ev = next_event(cc);
		check(ev->event == RDMA_CM_EVENT_REJECTED && ev->param.conn.private_data_len >= rej &&
			      matches(ev->param.conn.private_data, rej, 2),
		      "REJECTED carries the %d bytes (got %s, %d)", rej, rdma_event_str(ev->event),
		      ev->param.conn.private_data_len);
		rdma_ack_cm_event(ev);
	} else {
		make_qp(req);
		pattern(b, acc + 1, 3);
		p.private_data = b;
		p.private_data_len = (uint8_t)(acc + 1);
		check(rdma_accept(req, &p) == -1 && errno == EINVAL, "rdma_accept with %d bytes: EINVAL", acc + 1);
		p.private_data_len = (uint8_t)acc;
		if (rdma_accept(req, &p))
			die("rdma_accept");
		ev = next_event(cc);
		check(ev->event == RDMA_CM_EVENT_ESTABLISHED && ev->param.conn.private_data_len >= acc &&
			      matches(ev->param.conn.private_data, acc, 3),
		      "ESTABLISHED carries the %d bytes (got %s, %d)", acc, rdma_event_str(ev->event),
		      ev->param.conn.private_data_len);
		rdma_ack_cm_event(ev);
		expect(sc, RDMA_CM_EVENT_ESTABLISHED, "server");
		rdma_disconnect(c);
		expect(cc, RDMA_CM_EVENT_DISCONNECTED, "client");
		expect(sc, RDMA_CM_EVENT_DISCONNECTED, "server");
		rdma_destroy_qp(req);
	}
	rdma_destroy_id(req);
	rdma_destroy_qp(c);
	rdma_destroy_id(c);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(sc);
	rdma_destroy_event_channel(cc);
}

/* test_privdata: the private data limits, as the kernel's: a REQ's 56
 * bytes after rdma_cm's header, a REP's 196, a REJ's 148 (IB CM on
 * RoCEv2); MPA's on iWARP, of which the daemon carries 196 (a reject's
 * 148). */
static void test_privdata(void)
{
	struct rdma_cm_id *probe = new_id(NULL, RDMA_PS_TCP);
	struct sockaddr_in s = addr(a0, 0);
	int iw;
	if (rdma_bind_addr(probe, (struct sockaddr *)&s))
		die("rdma_bind_addr");
	iw = on_iwarp(probe);
	rdma_destroy_id(probe);
	privdata_round(iw ? 196 : 56, 148, -1);
	privdata_round(iw ? 196 : 56, -1, 196);
}

/* test_noloopback: NICs none of which is on loopback (TAP mode): the
 * loopback address has no RDMA device, as on a host with rxe on eth0
 * only; the wildcard destination still resolves to this host's first NIC
 * (cma_resolve_loopback). */
static void test_noloopback(void)
{
	struct rdma_event_channel *cc = rdma_create_event_channel();
	struct rdma_cm_id *c = new_id(cc, RDMA_PS_TCP);
	struct sockaddr_in lo = addr("127.0.0.1", 0), lo_dst = addr("127.0.0.1", 7471), any = addr("0.0.0.0", 7471);
	struct rdma_cm_event *ev;

	check(rdma_bind_addr(c, (struct sockaddr *)&lo) == -1 && errno == ENODEV, "rdma_bind_addr 127.0.0.1: ENODEV");
	check(rdma_resolve_addr(c, NULL, (struct sockaddr *)&lo_dst, 2000) == 0, "rdma_resolve_addr 127.0.0.1 starts");
	ev = next_event(cc);
	check(ev->event == RDMA_CM_EVENT_ADDR_ERROR && ev->status == -ENODEV,
	      "127.0.0.1: ADDR_ERROR, status -ENODEV (got %s, %d)", rdma_event_str(ev->event), ev->status);
	rdma_ack_cm_event(ev);
	check(rdma_resolve_addr(c, NULL, (struct sockaddr *)&any, 2000) == 0, "rdma_resolve_addr 0.0.0.0 starts");
	ev = next_event(cc);
	check(ev->event == RDMA_CM_EVENT_ADDR_RESOLVED && c->verbs != NULL, "0.0.0.0: ADDR_RESOLVED on a NIC (got %s)",
	      rdma_event_str(ev->event));
	rdma_ack_cm_event(ev);
	rdma_destroy_id(c);
	rdma_destroy_event_channel(cc);
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		void (*fn)(void);
	} tests[] = {{"reject", test_reject},     {"nolistener", test_nolistener}, {"addrerror", test_addrerror},
		     {"nonblock", test_nonblock}, {"backlog", test_backlog},       {"orphan", test_orphan},
		     {"killed", test_killed}, {"ud", test_ud},             {"params", test_params},
		     {"bind", test_bind},     {"loopback", test_loopback}, {"getaddrinfo", test_getaddrinfo},
		     {"privdata", test_privdata}, {"noloopback", test_noloopback},
		     {"timewait", test_timewait}};
	if (argc != 4) {
		fprintf(stderr, "usage: cm_corners TEST ADDR0 ADDR1\n");
		return 2;
	}
	a0 = argv[2];
	a1 = argv[3];
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
		if (!strcmp(argv[1], tests[i].name)) {
			tests[i].fn();
			return failures ? 1 : 0;
		}
	fprintf(stderr, "cm_corners: no test %s\n", argv[1]);
	return 2;
}
