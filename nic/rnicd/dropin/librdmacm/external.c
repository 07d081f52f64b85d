/* SPDX-License-Identifier: BSD-2-Clause */
/* External QPs: an id without a QP of its own connects the program's RC
 * QP (rdma_connect / rdma_accept with conn_param.qp_num). The daemon's CM
 * never moves that QP: rdma_init_qp_attr hands the program the
 * attributes for RTR and RTS (CM_INIT_QP_ATTR), from the REQ on the passive
 * side before rdma_accept, from the REP on the active side after
 * RDMA_CM_EVENT_CONNECT_RESPONSE; rdma_establish then sends the RTU
 * (CM_ESTABLISH). */
#include "cm.h"

#include <string.h>

/* d_gid reads an address as proto's Addr writes it (a family byte, 16
 * bytes) into a GID: IPv4 as ::ffff:a.b.c.d. */
static void d_gid(struct rdec *r, union ibv_gid *g)
{
	uint8_t fam = d_u8(r);
	memset(g, 0, sizeof(*g));
	if (r->err || r->n - r->off < 16) {
		r->err = 1;
		return;
	}
	if (fam == 4) {
		g->raw[10] = g->raw[11] = 0xff;
		memcpy(g->raw + 12, r->b + r->off, 4);
	} else
		memcpy(g->raw, r->b + r->off, 16);
	r->off += 16;
}

/* cm_decode_qp_attr reads CMQPAttr into the attributes of state
 * a->qp_state (RTR or RTS) and their mask; EPROTO if short. */
int cm_decode_qp_attr(const uint8_t *b, size_t n, struct ibv_qp_attr *a, int *mask)
{
	struct rdec r = {.b = b, .n = n};
	struct ibv_qp_attr x = {.qp_state = a->qp_state};
	d_gid(&r, &x.ah_attr.grh.dgid);
	x.ah_attr.grh.sgid_index = d_u8(&r);
	x.ah_attr.grh.flow_label = d_u32(&r);
	x.ah_attr.grh.hop_limit = d_u8(&r);
	x.ah_attr.grh.traffic_class = d_u8(&r);
	x.ah_attr.sl = d_u8(&r);
	(void)d_u8(&r); /* the port: rnic's devices have one */
	for (int i = 0; i < 6; i++)
		(void)d_u8(&r); /* the MAC: the device resolves it */
	(void)d_u16(&r);        /* the UDP source port: the device's own */
	x.path_mtu = (enum ibv_mtu)d_u8(&r);
	x.dest_qp_num = d_u32(&r);
	x.rq_psn = d_u32(&r);
	x.sq_psn = d_u32(&r);
	x.max_dest_rd_atomic = d_u8(&r);
	x.max_rd_atomic = d_u8(&r);
	x.min_rnr_timer = d_u8(&r);
	x.timeout = d_u8(&r);
	x.retry_cnt = d_u8(&r);
	x.rnr_retry = d_u8(&r);
	if (r.err)
		return EPROTO;
	x.ah_attr.is_global = 1;
	x.ah_attr.port_num = 1;
	if (x.qp_state == IBV_QPS_RTR) {
		x.sq_psn = 0, x.max_rd_atomic = 0, x.timeout = 0, x.retry_cnt = 0, x.rnr_retry = 0;
		*mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	} else {
		struct ibv_qp_attr rts = {.qp_state = x.qp_state, .sq_psn = x.sq_psn, .max_rd_atomic = x.max_rd_atomic,
					  .timeout = x.timeout, .retry_cnt = x.retry_cnt, .rnr_retry = x.rnr_retry};
		x = rts;
		*mask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			IBV_QP_RNR_RETRY;
	}
	*a = x;
	return 0;
}

/* cm_ext_qp_attr: RTR or RTS (a->qp_state) for the QP that answers the
 * id's request, or that connects it once its REP came. */
int cm_ext_qp_attr(struct cm_id *c, struct ibv_qp_attr *a, int *mask)
{
	struct cbuf b = {0};
	uint8_t rep[128];
	size_t n;
	uint32_t h;
	int err;
	pthread_mutex_lock(&cm_mu);
	h = c->state == ST_REQ_RCVD ? c->req : c->awaiting_establish ? c->conn : 0;
	pthread_mutex_unlock(&cm_mu);
	if (!h || c->id.qp_type != IBV_QPT_RC)
		return EINVAL;
	c_u32(&b, h);
	if ((err = cm_call(c->dev, RNICD_OP_CM_INIT_QP_ATTR, &b, rep, sizeof(rep), &n)))
		return err;
	return cm_decode_qp_attr(rep, n, a, mask);
}

int cm_ext_establish(struct cm_id *c)
{
	struct cbuf b = {0};
	uint32_t h;
	int err;
	pthread_mutex_lock(&cm_mu);
	h = c->awaiting_establish ? c->conn : 0;
	c->awaiting_establish = 0;
	pthread_mutex_unlock(&cm_mu);
	if (!h)
		return cm_fail(EINVAL);
	c_u32(&b, h);
	if ((err = cm_call(c->dev, RNICD_OP_CM_ESTABLISH, &b, NULL, 0, NULL))) {
		pthread_mutex_lock(&cm_mu);
		c->awaiting_establish = 1;
		pthread_mutex_unlock(&cm_mu);
		return cm_fail(err);
	}
	pthread_mutex_lock(&cm_mu);
	c->state = ST_ESTABLISHED;
	pthread_mutex_unlock(&cm_mu);
	return 0;
}
