/* SPDX-License-Identifier: BSD-2-Clause */
/* Connections through the daemon's CM: listen (a CM_GET_REQUEST kept in
 * flight per device listened on), accept, reject, connect, disconnect,
 * and the results and disconnects the daemon sends back as events. */
#include "cm.h"

#include <stdlib.h>
#include <string.h>

/* An asynchronous request in flight: its token and what it is for. */
struct cm_async_op {
	uint32_t token;
	enum cm_async_kind kind;
	int dev;
	struct cm_id *id;
	struct cm_async_op *next;
};

static struct cm_async_op *inflight;
static uint32_t next_token = 0x40000000; /* clear of any other user's tokens */

int cm_call(int dev, uint16_t op, struct cbuf *body, void *reply, size_t cap, size_t *len)
{
	uint8_t scratch[64];
	size_t n;
	if (body->err)
		return EINVAL;
	if (!reply)
		reply = scratch, cap = sizeof(scratch);
	return rnic_private_cm_call(cm_devs[dev].verbs, op, body->b, body->n, reply, cap, len ? len : &n);
}

/* cm_async sends op with body, whose first field is the token (written
 * here over the placeholder), registering the result's destination. */
int cm_async(struct cm_id *id, int dev, enum cm_async_kind kind, uint16_t op, struct cbuf *body)
{
	struct cm_async_op *a = calloc(1, sizeof(*a));
	int err;
	if (!a)
		return ENOMEM;
	pthread_mutex_lock(&cm_mu);
	a->token = next_token++;
	a->kind = kind;
	a->dev = dev;
	a->id = id;
	id->refs++;
	a->next = inflight;
	inflight = a;
	pthread_mutex_unlock(&cm_mu);
	for (int i = 0; i < 4; i++)
		body->b[i] = (uint8_t)(a->token >> (8 * i));
	err = cm_call(dev, op, body, NULL, 0, NULL);
	if (err) {
		struct cm_async_op **p;
		pthread_mutex_lock(&cm_mu);
		for (p = &inflight; *p; p = &(*p)->next)
			if (*p == a) {
				*p = a->next;
				break;
			}
		/* the result may have come while we were away: then it is gone */
		cm_id_unref(id);
		pthread_mutex_unlock(&cm_mu);
		free(a);
	}
	return err;
}

static struct cm_async_op *take_op(int dev, uint32_t token)
{
	for (struct cm_async_op **p = &inflight; *p; p = &(*p)->next)
		if ((*p)->token == token && (*p)->dev == dev) {
			struct cm_async_op *a = *p;
			*p = a->next;
			return a;
		}
	return NULL;
}

static struct cm_event *conn_event(struct cm_id *id, enum rdma_cm_event_type t, int status,
				   const uint8_t *pd, size_t pdn)
{
	struct cm_event *e = cm_event_new(id, t, status);
	if (!e)
		return NULL;
	memcpy(e->pd, pd, pdn);
	e->ev.param.conn.private_data = pdn ? e->pd : NULL;
	e->ev.param.conn.private_data_len = (uint8_t)pdn;
	e->ev.param.conn.responder_resources = 4;
	e->ev.param.conn.initiator_depth = 4;
	e->ev.param.conn.rnr_retry_count = 7;
	e->ev.param.conn.retry_count = 7;
	return e;
}

/* ud_event: an event of a UD id, its private data in param.ud (the
 * kernel's cma hands a SIDR_REQ's 180 bytes after its header, a SIDR_REP's
 * 136). */
static struct cm_event *ud_event(struct cm_id *id, enum rdma_cm_event_type t, int status,
				 const uint8_t *pd, size_t pdn)
{
	struct cm_event *e = cm_event_new(id, t, status);
	if (!e)
		return NULL;
	memcpy(e->pd, pd, pdn);
	e->ev.param.ud.private_data = pdn ? e->pd : NULL;
	e->ev.param.ud.private_data_len = (uint8_t)pdn;
	return e;
}

/* on_request: a connection request for listener l on device dev
 * (CMRequestInfo: its connection parameters, from our side, end it). */
static void on_request(struct cm_id *l, int dev, struct rdec *r)
{
	struct cm_id *c;
	struct cm_event *e = NULL;
	uint8_t pd[RNICD_MAX_PRIVATE_DATA], param[4];
	size_t pdn;
	uint32_t req = d_u32(r);

	pdn = d_blob(r, pd, sizeof(pd));
	if (l->destroyed || !(c = cm_id_alloc(l->id.channel, l->id.context, l->id.ps, l->id.qp_type)))
		return;
	c->req = req;
	c->dev = dev;
	c->id.verbs = cm_devs[dev].verbs;
	c->id.pd = cm_default_pd_peek(dev); /* as librdmacm's: programs make their QP on it */
	c->id.port_num = 1;
	c->state = ST_REQ_RCVD;
	c->sync = 0; /* a synchronous listener's children get their channel in rdma_get_request */
	d_addrport(r, &c->id.route.addr.src_storage);
	d_addrport(r, &c->id.route.addr.dst_storage);
	c->id.route.num_paths = 1;
	for (int i = 0; i < 4; i++)
		param[i] = d_u8(r);
	if (!r->err)
		e = l->id.qp_type == IBV_QPT_UD ? ud_event(c, RDMA_CM_EVENT_CONNECT_REQUEST, 0, pd, pdn)
						: conn_event(c, RDMA_CM_EVENT_CONNECT_REQUEST, 0, pd, pdn);
	if (r->err || !e) {
		cm_id_unref(c);
		return;
	}
	if (l->id.qp_type != IBV_QPT_UD) {
		/* as the kernel's rdma_cm reports them: the peer's initiator
		 * depth is our responder resources, and the other way round */
		e->ev.param.conn.responder_resources = param[0];
		e->ev.param.conn.initiator_depth = param[1];
		e->ev.param.conn.retry_count = param[2];
		e->ev.param.conn.rnr_retry_count = param[3];
	}
	e->ev.listen_id = &l->id;
	l->refs++;
	cm_event_queue(e);
}

/* on_established: CM_ACCEPT's or CM_CONNECT's result (CMConnInfo). */
static void on_established(struct cm_id *c, struct rdec *r)
{
	uint8_t pd[RNICD_MAX_PRIVATE_DATA];
	size_t pdn;
	struct cm_event *e;
	c->conn = d_u32(r);
	pdn = d_blob(r, pd, sizeof(pd));
	if (r->err)
		return;
	c->state = ST_ESTABLISHED;
	if ((e = conn_event(c, RDMA_CM_EVENT_ESTABLISHED, 0, pd, pdn)))
		cm_event_queue(e);
}

/* cm_on_response: CM_CONNECT_EXT's result (CMConnInfo) at the REP: the
 * external QP's connection awaits rdma_establish. */
void cm_on_response(struct cm_id *c, struct rdec *r)
{
	uint8_t pd[RNICD_MAX_PRIVATE_DATA];
	size_t pdn;
	struct cm_event *e;
	c->conn = d_u32(r);
	pdn = d_blob(r, pd, sizeof(pd));
	if (r->err)
		return;
	c->awaiting_establish = 1;
	if ((e = conn_event(c, RDMA_CM_EVENT_CONNECT_RESPONSE, 0, pd, pdn)))
		cm_event_queue(e);
}

/* on_resolved: CM_RESOLVE_UD's result (CMUDPeerInfo): ESTABLISHED with
 * the peer's QPN, Q_Key and the address handle attributes toward it. */
static void on_resolved(struct cm_id *c, struct rdec *r)
{
	uint8_t pd[RNICD_MAX_PRIVATE_DATA];
	struct sockaddr_storage ss;
	struct ibv_ah_attr ah = {0};
	const uint8_t *gid;
	uint8_t fam;
	uint32_t qpn = d_u32(r), qkey = d_u32(r);
	size_t pdn = d_blob(r, pd, sizeof(pd));
	struct cm_event *e;
	d_addrport(r, &ss); /* local, remote: the id's route has them */
	d_addrport(r, &ss);
	fam = d_u8(r); /* the DGID: family 4 (its IPv4 address) or 6 */
	gid = r->err || r->n - r->off < 16 ? NULL : r->b + r->off;
	r->off += gid ? 16 : 0;
	ah.grh.sgid_index = d_u8(r);
	ah.grh.hop_limit = d_u8(r);
	ah.grh.traffic_class = d_u8(r);
	ah.grh.flow_label = d_u32(r);
	if (r->err || !gid)
		return;
	if (fam == 4) { /* ::ffff:a.b.c.d */
		ah.grh.dgid.raw[10] = ah.grh.dgid.raw[11] = 0xff;
		memcpy(ah.grh.dgid.raw + 12, gid, 4);
	} else
		memcpy(ah.grh.dgid.raw, gid, 16);
	ah.is_global = 1;
	ah.port_num = 1;
	c->state = ST_ESTABLISHED;
	if (!(e = ud_event(c, RDMA_CM_EVENT_ESTABLISHED, 0, pd, pdn)))
		return;
	e->ev.param.ud.ah_attr = ah;
	e->ev.param.ud.qp_num = qpn;
	e->ev.param.ud.qkey = qkey;
	cm_event_queue(e);
}

void down_event(struct cm_id *c)
{
	struct cm_event *e;
	if (c->down_sent)
		return;
	c->down_sent = 1;
	c->state = ST_DOWN;
	if ((e = cm_event_new(c, RDMA_CM_EVENT_DISCONNECTED, 0)))
		cm_event_queue(e);
}

/* cm_on_iwarp: the id is bound to an iWARP device. */
int cm_on_iwarp(const struct cm_id *c)
{
	const struct ibv_context *v = c->dev >= 0 ? cm_devs[c->dev].verbs : NULL;
	return v && v->device->transport_type == IBV_TRANSPORT_IWARP;
}

/* iw_reject_status: REJECTED's status on an iWARP id, as the kernel's
 * cma_iw_handler passes the driver's: -ECONNREFUSED when nobody listened
 * (the TCP connection was refused; the daemon says "invalid service ID",
 * 8), else -ECONNRESET (siw's for an MPA Reply with R). */
static int iw_reject_status(uint16_t reason)
{
	return reason == 8 ? -ECONNREFUSED : -ECONNRESET;
}

/* rejected: REJECTED with the REJ's reason as the status and its private
 * data (148 bytes, as the kernel hands them; an MPA reject's own length),
 * from the result's CMRejectInfo; without one, a consumer reject (28)
 * without data. On iWARP the status is the kernel's errno instead. */
static struct cm_event *rejected(struct cm_id *c, struct rdec *r)
{
	uint8_t pd[RNICD_MAX_PRIVATE_DATA];
	uint16_t reason = 28;
	size_t pdn = 0;
	if (r->n) {
		reason = d_u16(r);
		pdn = d_blob(r, pd, RNICD_MAX_REJECT_PRIVATE_DATA);
		if (r->err)
			reason = 28, pdn = 0;
	}
	return conn_event(c, RDMA_CM_EVENT_REJECTED, cm_on_iwarp(c) ? iw_reject_status(reason) : reason, pd, pdn);
}

/* failed: an async request's error as the kernel's event. */
static void failed(struct cm_async_op *a, uint32_t st, struct rdec *res)
{
	struct cm_event *e = NULL;
	struct cm_id *c = a->id;
	switch (a->kind) {
	case AS_CONNECT:
	case AS_CONNECT_EXT:
		c->state = ST_ROUTE_RESOLVED;
		if (st == RNICD_STATUS_REJECTED)
			e = rejected(c, res);
		else
			e = cm_event_new(c, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT);
		break;
	case AS_ACCEPT:
		e = cm_event_new(c, RDMA_CM_EVENT_CONNECT_ERROR, -ECONNRESET);
		break;
	case AS_RESOLVE_UD:
		/* as cma_sidr_rep_handler: a negative SIDR_REP's status, or a
		 * timeout */
		c->state = ST_ROUTE_RESOLVED;
		if (st == RNICD_STATUS_UNREACHABLE) {
			uint16_t status = d_u16(res);
			e = cm_event_new(c, RDMA_CM_EVENT_UNREACHABLE, res->err ? 1 : status);
		} else
			e = cm_event_new(c, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT);
		break;
	case AS_DISCONNECT:
		down_event(c);
		timewait_exit(c);
		break;
	case AS_GET_REQUEST:
		break; /* the listener closed */
	}
	if (e)
		cm_event_queue(e);
}

/* cm_on_result: CM_RESULT (AsyncResult) from device dev. Caller holds cm_mu. */
void cm_on_result(int dev, const uint8_t *body, size_t n)
{
	struct rdec r = {.b = body, .n = n};
	struct rdec res;
	struct cm_async_op *a;
	uint32_t token = d_u32(&r), st = d_u32(&r);
	size_t bn;

	d_blob(&r, NULL, 1 << 16); /* the message */
	bn = d_u32(&r);
	if (r.err || bn != r.n - r.off || !(a = take_op(dev, token)))
		return;
	res = (struct rdec){.b = r.b + r.off, .n = bn};
	if (a->id->destroyed)
		;
	else if (st != RNICD_STATUS_OK)
		failed(a, st, &res);
	else if (a->kind == AS_GET_REQUEST) {
		on_request(a->id, dev, &res);
		a->id->rearm[dev]++;
	} else if (a->kind == AS_ACCEPT && a->id->id.qp_type == IBV_QPT_UD)
		a->id->state = ST_ESTABLISHED; /* the SIDR_REP went: no event */
	else if (a->kind == AS_ACCEPT || a->kind == AS_CONNECT)
		on_established(a->id, &res);
	else if (a->kind == AS_CONNECT_EXT)
		cm_on_response(a->id, &res);
	else if (a->kind == AS_RESOLVE_UD)
		on_resolved(a->id, &res);
	else if (a->kind == AS_DISCONNECT) {
		down_event(a->id);
		timewait_exit(a->id);
	}
	cm_id_unref(a->id);
	free(a);
}

/* cm_on_disconnected: CM_DISCONNECTED (Handle of the connection). */
void cm_on_disconnected(int dev, const uint8_t *body, size_t n)
{
	struct rdec r = {.b = body, .n = n};
	uint32_t h = d_u32(&r);
	if (r.err)
		return;
	for (struct cm_id *c = cm_ids; c; c = c->next)
		if (c->dev == dev && c->conn == h && !c->destroyed) {
			down_event(c);
			return;
		}
}

static int get_request(struct cm_id *l, int dev)
{
	struct cbuf b = {0};
	c_u32(&b, 0);
	c_u32(&b, l->listener[dev]);
	return cm_async(l, dev, AS_GET_REQUEST, RNICD_OP_CM_GET_REQUEST, &b);
}

/* cm_rearm sends the CM_GET_REQUESTs listeners wait for (no lock held). */
void cm_rearm(void)
{
	for (;;) {
		struct cm_id *l = NULL;
		int dev = -1;
		pthread_mutex_lock(&cm_mu);
		for (struct cm_id *c = cm_ids; c && !l; c = c->next)
			for (int i = 0; i < cm_ndevs && !l; i++)
				if (c->rearm[i] && !c->destroyed && c->listener[i] && !cm_devs[i].dead)
					l = c, dev = i;
		if (l) {
			l->rearm[dev]--;
			l->refs++;
		}
		pthread_mutex_unlock(&cm_mu);
		if (!l)
			return;
		get_request(l, dev);
		pthread_mutex_lock(&cm_mu);
		cm_id_unref(l);
		pthread_mutex_unlock(&cm_mu);
	}
}

static int listen_dev(struct cm_id *c, int i, uint16_t *port)
{
	struct cbuf b = {0};
	uint8_t rep[8];
	size_t n;
	int err;
	struct rdec r = {.b = rep};
	c_u16(&b, *port);
	if ((err = cm_call(i, c->id.qp_type == IBV_QPT_UD ? RNICD_OP_CM_LISTEN_UD : RNICD_OP_CM_LISTEN, &b, rep, sizeof(rep), &n)))
		return err;
	r.n = n;
	c->listener[i] = d_u32(&r);
	*port = d_u16(&r);
	return r.err ? EPROTO : 0;
}

CM_EXPORT int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	struct cm_id *c = to_cid(id);
	struct sockaddr_in *s = (struct sockaddr_in *)&id->route.addr.src_addr;
	uint16_t port;
	int err = 0, n = 0;
	if (!id)
		return cm_fail(EINVAL);
	if (id->qp_type != IBV_QPT_RC && id->ps != RDMA_PS_UDP)
		return cm_fail(EOPNOTSUPP); /* RDMA_PS_IPOIB: its Q_Key is a multicast group's; not served */
	if (c->state == ST_IDLE) { /* as the kernel's: bound to the wildcard and a port first */
		struct sockaddr_in any = {.sin_family = AF_INET};
		if (rdma_bind_addr(id, (struct sockaddr *)&any))
			return -1;
	}
	if (c->state != ST_BOUND)
		return cm_fail(EINVAL);
	port = ntohs(s->sin_port);
	for (int i = 0; i < cm_ndevs && !err; i++) {
		if ((c->dev >= 0 && i != c->dev) || cm_devs[i].dead)
			continue;
		if (cm_is_loopback((struct sockaddr *)s) && (ntohl(cm_devs[i].addr.s_addr) >> 24) != 127)
			continue; /* the loopback address: the NICs on loopback */
		if ((err = listen_dev(c, i, &port)) == 0) {
			cm_default_pd(i); /* for the ids of its requests (on_request) */
			n++;
		}
	}
	if (err) {
		cm_close_listeners(c);
		return cm_fail(err == EBUSY ? EADDRINUSE : err);
	}
	if (n == 0)
		return cm_fail(ENODEV);
	s->sin_port = htons(port);
	cm_trace("listening on port %u", port);
	c->backlog = backlog <= 0 ? CM_DEFAULT_BACKLOG : backlog < CM_MAX_BACKLOG ? backlog : CM_MAX_BACKLOG;
	c->state = ST_LISTEN;
	pthread_mutex_lock(&cm_mu);
	for (int i = 0; i < cm_ndevs; i++)
		if (c->listener[i])
			c->rearm[i] = c->backlog;
	pthread_mutex_unlock(&cm_mu);
	cm_rearm();
	return 0;
}

void cm_close_listeners(struct cm_id *c)
{
	for (int i = 0; i < cm_ndevs; i++) {
		struct cbuf b = {0};
		uint32_t h = c->listener[i];
		if (!h)
			continue;
		c->listener[i] = 0;
		c_u32(&b, h);
		cm_call(i, RNICD_OP_CM_CLOSE_LISTENER, &b, NULL, 0, NULL);
	}
}
