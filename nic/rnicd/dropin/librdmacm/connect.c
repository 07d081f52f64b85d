/* SPDX-License-Identifier: BSD-2-Clause */
/* rdma_connect, rdma_accept, rdma_reject, rdma_disconnect, rdma_establish,
 * rdma_get_request and the waiting of synchronous ids (no channel given:
 * each call returns once its event came, as librdmacm's do). */
#include "cm.h"

#include <stdlib.h>
#include <string.h>

static const int expect_ok[] = {
	[RDMA_CM_EVENT_ADDR_RESOLVED] = 1, [RDMA_CM_EVENT_ROUTE_RESOLVED] = 1,
	[RDMA_CM_EVENT_ESTABLISHED] = 1,   [RDMA_CM_EVENT_DISCONNECTED] = 1,
	[RDMA_CM_EVENT_CONNECT_REQUEST] = 1, [RDMA_CM_EVENT_MULTICAST_JOIN] = 1,
	[RDMA_CM_EVENT_CONNECT_RESPONSE] = 1,
};

int cm_complete(struct cm_id *c)
{
	struct rdma_cm_event *ev;
	if (!c->sync)
		return 0;
	if (c->id.event) {
		rdma_ack_cm_event(c->id.event);
		c->id.event = NULL;
	}
	if (rdma_get_cm_event(c->id.channel, &ev))
		return -1;
	c->id.event = ev;
	if (ev->status > 0 || ev->event == RDMA_CM_EVENT_REJECTED)
		return cm_fail(ECONNREFUSED);
	if (ev->status < 0)
		return cm_fail(-ev->status);
	if ((unsigned)ev->event >= sizeof(expect_ok) / sizeof(expect_ok[0]) || !expect_ok[ev->event])
		return cm_fail(EIO);
	return 0;
}

/* put_param writes *p and the id's RDMA_OPTION_ID_ACK_TIMEOUT (0: the
 * CM's own), which the CM applies when it moves the QP to RTS, as the
 * kernel's rdma_cm does. */
static void put_param(struct cbuf *b, const struct rdma_conn_param *p, uint8_t ack_timeout)
{
	c_blob(b, p ? p->private_data : NULL, p && p->private_data ? p->private_data_len : 0);
	c_u8(b, p ? p->responder_resources : 0);
	c_u8(b, p ? p->initiator_depth : 0);
	c_u8(b, p ? p->retry_count : 0);
	c_u8(b, p ? p->rnr_retry_count : 0);
	c_u32(b, 0); /* access: rdma_cm's default */
	c_u8(b, ack_timeout);
}

/* conn_param: *param for the daemon, with responder_resources and
 * initiator_depth checked against the device's max_qp_rd_atom and
 * max_qp_init_rd_atom (EINVAL beyond them) and RDMA_MAX_RESP_RES /
 * RDMA_MAX_INIT_DEPTH replaced by those maxima, as librdmacm does before
 * the kernel sees them. NULL stays NULL (the daemon's defaults). */
static int conn_param(struct rdma_cm_id *id, const struct rdma_conn_param *param, struct rdma_conn_param *out,
		      const struct rdma_conn_param **use)
{
	struct ibv_device_attr a;
	*use = param;
	if (!param)
		return 0;
	if (!id->verbs || ibv_query_device(id->verbs, &a))
		return EINVAL;
	*out = *param;
	if (param->responder_resources == RDMA_MAX_RESP_RES)
		out->responder_resources = (uint8_t)(a.max_qp_rd_atom < 255 ? a.max_qp_rd_atom : 255);
	else if (param->responder_resources > a.max_qp_rd_atom)
		return EINVAL;
	if (param->initiator_depth == RDMA_MAX_INIT_DEPTH)
		out->initiator_depth = (uint8_t)(a.max_qp_init_rd_atom < 255 ? a.max_qp_init_rd_atom : 255);
	else if (param->initiator_depth > a.max_qp_init_rd_atom)
		return EINVAL;
	*use = out;
	return 0;
}

/* connect_ud: rdma_connect on a UD id resolves the listener's QP
 * (SIDR); ESTABLISHED carries it in param.ud. No QP is needed. */
static int connect_ud(struct cm_id *c, const struct rdma_conn_param *param)
{
	struct cbuf b = {0};
	struct sockaddr_in w;
	int err;
	if (param && param->private_data_len > 216 - 36) /* a SIDR_REQ's 180 after the CM header */
		return cm_fail(EINVAL);
	cm_wire_addr(&c->id.route.addr.dst_addr, &w);
	c_u32(&b, 0);
	c_addr4(&b, (struct sockaddr *)&w);
	c_u16(&b, ntohs(w.sin_port));
	c_blob(&b, param ? param->private_data : NULL, param && param->private_data ? param->private_data_len : 0);
	c->state = ST_CONNECT;
	if ((err = cm_async(c, c->dev, AS_RESOLVE_UD, RNICD_OP_CM_RESOLVE_UD, &b))) {
		c->state = ST_ROUTE_RESOLVED;
		return cm_fail(err);
	}
	return cm_complete(c);
}

CM_EXPORT int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *param)
{
	struct cm_id *c = to_cid(id);
	struct cbuf b = {0};
	struct rdma_conn_param fixed;
	const struct rdma_conn_param *param_used;
	struct sockaddr_in w;
	int err;
	int ext; /* an external QP: conn_param.qp_num, no id->qp */
	if (id && c->state == ST_ROUTE_RESOLVED && id->ps == RDMA_PS_UDP)
		return connect_ud(c, param);
	if (!id || c->state != ST_ROUTE_RESOLVED || (!id->qp && !param))
		return cm_fail(EINVAL);
	ext = !id->qp;
	if (id->qp_type != IBV_QPT_RC || (ext && cm_on_iwarp(c)))
		return cm_fail(EOPNOTSUPP); /* iWARP's CM takes no external QP */
	/* IB's REQ holds 56 bytes after rdma_cm's header; iWARP's MPA request
	 * takes a uint8_t's worth, of which the daemon carries 196 */
	if (param && param->private_data_len > (cm_on_iwarp(c) ? RNICD_MAX_PRIVATE_DATA : CM_MAX_REQ_PRIVATE))
		return cm_fail(EINVAL);
	if ((err = conn_param(id, param, &fixed, &param_used)))
		return cm_fail(err);
	c_u32(&b, 0);
	c_u32(&b, ext ? param->qp_num : rnic_private_qp_handle(id->qp));
	cm_wire_addr(&id->route.addr.dst_addr, &w);
	c_addr4(&b, (struct sockaddr *)&w);
	c_u16(&b, ntohs(w.sin_port));
	put_param(&b, param_used, c->ack_timeout);
	c->state = ST_CONNECT;
	if ((err = ext ? cm_async(c, c->dev, AS_CONNECT_EXT, RNICD_OP_CM_CONNECT_EXT, &b)
		       : cm_async(c, c->dev, AS_CONNECT, RNICD_OP_CM_CONNECT, &b))) {
		c->state = ST_ROUTE_RESOLVED;
		return cm_fail(err);
	}
	return cm_complete(c);
}

CM_EXPORT int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *param)
{
	struct cm_id *c = to_cid(id);
	struct cbuf b = {0};
	struct rdma_conn_param fixed;
	const struct rdma_conn_param *param_used = param;
	uint32_t req;
	int err;
	int ext; /* an external QP: conn_param.qp_num, no id->qp */
	if (!id || c->state != ST_REQ_RCVD || (!id->qp && (!param || id->qp_type != IBV_QPT_RC)))
		return cm_fail(EINVAL);
	ext = !id->qp;
	if (ext && cm_on_iwarp(c))
		return cm_fail(EOPNOTSUPP); /* iWARP's CM takes no external QP */
	if (param && param->private_data_len > RNICD_MAX_PRIVATE_DATA) /* a REP's, as ib_send_cm_rep */
		return cm_fail(EINVAL);
	if (id->qp_type != IBV_QPT_UD && (err = conn_param(id, param, &fixed, &param_used)))
		return cm_fail(err);
	pthread_mutex_lock(&cm_mu);
	req = c->req;
	c->req = 0;
	c->state = ST_ACCEPT;
	pthread_mutex_unlock(&cm_mu);
	c_u32(&b, 0);
	c_u32(&b, req);
	c_u32(&b, ext ? param->qp_num : rnic_private_qp_handle(id->qp));
	put_param(&b, param_used, c->ack_timeout);
	if ((err = cm_async(c, c->dev, AS_ACCEPT, ext ? RNICD_OP_CM_ACCEPT_EXT : RNICD_OP_CM_ACCEPT, &b)))
		return cm_fail(err);
	if (id->qp_type == IBV_QPT_UD)
		return 0; /* the SIDR_REP is sent; the server gets no ESTABLISHED */
	return cm_complete(c);
}

CM_EXPORT int rdma_reject(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len)
{
	struct cm_id *c = to_cid(id);
	struct cbuf b = {0};
	uint32_t req;
	int err;
	if (!id || c->state != ST_REQ_RCVD)
		return cm_fail(EINVAL);
	/* a REJ's 148, as ib_send_cm_rej; on iWARP too, as far as the daemon
	 * carries a reject's private data back (proto.MaxRejectPrivateData),
	 * rather than cut it short */
	if (private_data && private_data_len > RNICD_MAX_REJECT_PRIVATE_DATA)
		return cm_fail(EINVAL);
	pthread_mutex_lock(&cm_mu);
	req = c->req;
	c->req = 0;
	c->state = ST_DOWN;
	pthread_mutex_unlock(&cm_mu);
	c_u32(&b, req);
	c_blob(&b, private_data, private_data ? private_data_len : 0);
	err = cm_call(c->dev, RNICD_OP_CM_REJECT, &b, NULL, 0, NULL);
	return err ? cm_fail(err) : 0;
}

CM_EXPORT int rdma_disconnect(struct rdma_cm_id *id)
{
	struct cm_id *c = to_cid(id);
	struct cbuf b = {0};
	int err;
	if (!id)
		return cm_fail(EINVAL);
	pthread_mutex_lock(&cm_mu);
	if (c->state == ST_DOWN && c->down_sent) { /* the peer's DREQ came first: answered */
		timewait_exit(c);
		pthread_mutex_unlock(&cm_mu);
		return 0;
	}
	if (c->state != ST_ESTABLISHED) {
		pthread_mutex_unlock(&cm_mu);
		return cm_fail(EINVAL);
	}
	c->state = ST_DISCONNECT;
	pthread_mutex_unlock(&cm_mu);
	c_u32(&b, 0);
	c_u32(&b, c->conn);
	err = cm_async(c, c->dev, AS_DISCONNECT, RNICD_OP_CM_DISCONNECT, &b);
	if (err == EINVAL) { /* the peer's DREQ took the connection first */
		pthread_mutex_lock(&cm_mu);
		down_event(c);
		timewait_exit(c);
		pthread_mutex_unlock(&cm_mu);
		return 0;
	}
	return err ? cm_fail(err) : 0;
}

/* rdma_establish: for an id with a QP the daemon's CM sent the RTU itself
 * and reported ESTABLISHED: nothing is left to do. After an external QP's
 * CONNECT_RESPONSE it sends the RTU; no event follows, as with the
 * kernel's rdma_cm. */
CM_EXPORT int rdma_establish(struct rdma_cm_id *id)
{
	if (!id)
		return cm_fail(EINVAL);
	if (id->qp)
		return 0;
	return cm_ext_establish(to_cid(id));
}

CM_EXPORT int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
	struct cm_id *l = to_cid(listen);
	struct rdma_cm_event *ev;
	struct cm_id *c;
	if (!listen || !id || !l->sync)
		return cm_fail(EINVAL);
	if (rdma_get_cm_event(listen->channel, &ev))
		return -1;
	if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		rdma_ack_cm_event(ev);
		return cm_fail(EIO);
	}
	c = to_cid(ev->id);
	if (rdma_migrate_id(&c->id, NULL)) {
		rdma_reject(&c->id, NULL, 0);
		rdma_ack_cm_event(ev);
		return -1;
	}
	c->id.event = ev;
	if (l->child_attr && rdma_create_qp(&c->id, listen->pd, l->child_attr)) {
		rdma_reject(&c->id, NULL, 0);
		rdma_destroy_id(&c->id);
		return -1;
	}
	*id = &c->id;
	return 0;
}
