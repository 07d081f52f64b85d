/* Address handles, and the AH of a received UD datagram's sender. */
#include "rnic.h"

#include <stdlib.h>
#include <string.h>

RNIC_EXPORT struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct rnic_context *c = to_rctx(pd->context);
	struct rnic_reply rep;
	struct rnic_ah *a;
	struct wbuf w;
	struct rbuf r;
	int err;

	if (!attr->is_global)
		return errno = EINVAL, NULL; /* RoCE: the GRH is the address */
	w_init(&w);
	w_u32(&w, ((struct rnic_pd *)pd)->h);
	rnic_w_av(&w, attr);
	if ((err = ctx_call(c, OP_CREATE_AH, &w, NULL, 0, &rep)))
		return errno = err, NULL;
	rnic_close_fds(rep.fds, rep.nfds);
	if (!(a = calloc(1, sizeof(*a))))
		return errno = ENOMEM, NULL;
	r_init(&r, rep.body, rep.len);
	a->h = r_u32(&r);
	struct ibv_ah_attr norm;
	rnic_r_av(&r, &norm);
	if ((err = r_done(&r))) {
		rnic_destroy_handle(c, OP_DESTROY_AH, a->h);
		free(a);
		return errno = err, NULL;
	}
	a->ah.context = pd->context;
	a->ah.pd = pd;
	a->ah.handle = a->h;
	return &a->ah;
}

RNIC_EXPORT int ibv_destroy_ah(struct ibv_ah *ah)
{
	struct rnic_ah *a = (struct rnic_ah *)ah;
	struct rnic_context *c = to_rctx(ah->context);
	int err = rnic_destroy_handle(c, OP_DESTROY_AH, a->h);
	if (err && !c->conn.dead)
		return err;
	free(a);
	return 0;
}

/* ibv_init_ah_from_wc: the reply's address is the request's source: the
 * DGID is the GRH's source GID, the SGID the table entry of its
 * destination GID. */
RNIC_EXPORT int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num, struct ibv_wc *wc,
				    struct ibv_grh *grh, struct ibv_ah_attr *ah_attr)
{
	struct rnic_context *c = to_rctx(context);
	uint32_t flow;
	unsigned i;

	memset(ah_attr, 0, sizeof(*ah_attr));
	ah_attr->port_num = port_num;
	ah_attr->sl = wc->sl;
	if (!(wc->wc_flags & IBV_WC_GRH) || !grh)
		return errno = EINVAL, -1;
	for (i = 0; i < c->ngids && memcmp(c->gids[i], grh->dgid.raw, 16); i++)
		;
	if (i == c->ngids)
		return errno = ENOENT, -1;
	flow = be32toh(grh->version_tclass_flow);
	ah_attr->is_global = 1;
	ah_attr->grh.dgid = grh->sgid;
	ah_attr->grh.sgid_index = (uint8_t)i;
	ah_attr->grh.flow_label = flow & 0xfffff;
	ah_attr->grh.traffic_class = (uint8_t)(flow >> 20);
	ah_attr->grh.hop_limit = 0xff;
	return 0;
}

RNIC_EXPORT struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc, struct ibv_grh *grh,
						 uint8_t port_num)
{
	struct ibv_ah_attr a;
	if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &a))
		return NULL;
	return ibv_create_ah(pd, &a);
}
