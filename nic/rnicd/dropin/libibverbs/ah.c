/* SPDX-License-Identifier: BSD-2-Clause */
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
	w_u32(&w, (to_rpd(pd))->h);
	rnic_w_av(&w, attr);
	if ((err = ctx_call(c, RNICD_OP_CREATE_AH, &w, NULL, 0, &rep)))
		return errno = err, NULL;
	rnic_close_fds(rep.fds, rep.nfds);
	if (!(a = calloc(1, sizeof(*a))))
		return errno = ENOMEM, NULL;
	r_init(&r, rep.body, rep.len);
	a->h = r_u32(&r);
	struct ibv_ah_attr norm;
	rnic_r_av(&r, &norm);
	if ((err = r_done(&r))) {
		rnic_handle_call(c, RNICD_OP_DESTROY_AH, a->h);
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
	struct rnic_ah *a = to_rah(ah);
	struct rnic_context *c = to_rctx(ah->context);
	int err = rnic_handle_call(c, RNICD_OP_DESTROY_AH, a->h);
	if (err && !c->conn.dead)
		return err;
	free(a);
	return 0;
}

/* grh_addrs reads the sender's and the receiver's GIDs and the traffic
 * class and flow label from the 40 bytes before a UD message. RoCEv2 has
 * no GRH: like rxe, the area holds the IPv6 header (laid out as a GRH),
 * or 20 zero bytes and the IPv4 header (union rdma_network_hdr). */
static void grh_addrs(const struct ibv_grh *grh, uint8_t src[16], uint8_t dst[16], uint8_t *tclass, uint32_t *flow)
{
	static const uint8_t zero[20];
	const uint8_t *b = (const uint8_t *)grh;
	if (!memcmp(b, zero, 20) && b[20] >> 4 == 4) {
		const uint8_t *ip = b + 20;
		memset(src, 0, 16), memset(dst, 0, 16);
		src[10] = src[11] = dst[10] = dst[11] = 0xff; /* IPv4-mapped GIDs */
		memcpy(src + 12, ip + 12, 4);
		memcpy(dst + 12, ip + 16, 4);
		*tclass = ip[1];
		*flow = 0;
		return;
	}
	memcpy(src, grh->sgid.raw, 16);
	memcpy(dst, grh->dgid.raw, 16);
	*tclass = (uint8_t)(be32toh(grh->version_tclass_flow) >> 20);
	*flow = be32toh(grh->version_tclass_flow) & 0xfffff;
}

/* ibv_init_ah_from_wc: the reply's address is the request's source: the
 * DGID is the sender's GID, the SGID the table entry of the GID the
 * message was sent to. */
RNIC_EXPORT int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num, struct ibv_wc *wc,
				    struct ibv_grh *grh, struct ibv_ah_attr *ah_attr)
{
	struct rnic_context *c = to_rctx(context);
	uint8_t src[16], dst[16], tclass;
	uint32_t flow;
	unsigned i;

	memset(ah_attr, 0, sizeof(*ah_attr));
	ah_attr->port_num = port_num;
	ah_attr->sl = wc->sl;
	if (!(wc->wc_flags & IBV_WC_GRH) || !grh)
		return errno = EINVAL, -1;
	grh_addrs(grh, src, dst, &tclass, &flow);
	for (i = 0; i < c->ngids && memcmp(c->gids[i], dst, 16); i++)
		;
	if (i == c->ngids)
		return errno = ENOENT, -1;
	ah_attr->is_global = 1;
	memcpy(ah_attr->grh.dgid.raw, src, 16);
	ah_attr->grh.sgid_index = (uint8_t)i;
	ah_attr->grh.flow_label = flow;
	ah_attr->grh.traffic_class = tclass;
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
