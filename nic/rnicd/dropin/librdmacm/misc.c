/* SPDX-License-Identifier: BSD-2-Clause */
/* rdma_getaddrinfo / rdma_freeaddrinfo, rdma_create_ep /
 * rdma_destroy_ep, and what rnicd's CM does not offer: ECE
 * (EOPNOTSUPP) and rdma_notify (nothing to do: the daemon sends the RTU). */
#include "cm.h"

#include <netdb.h>
#include <stdlib.h>
#include <string.h>

static int copy_addr(const struct addrinfo *ai, struct sockaddr **out, socklen_t *len)
{
	if (!(*out = malloc(ai->ai_addrlen)))
		return ENOMEM;
	memcpy(*out, ai->ai_addr, ai->ai_addrlen);
	*len = ai->ai_addrlen;
	return 0;
}

/* resolve: getaddrinfo with rdma_getaddrinfo's hints as librdmacm
 * converts them: passive and numeric flags, the family, and a socket type
 * of the port space (datagram for UDP ids). */
static int resolve(const char *node, const char *service, const struct rdma_addrinfo *hints, struct addrinfo **out)
{
	struct addrinfo h = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
	if (hints) {
		h.ai_flags = (hints->ai_flags & RAI_PASSIVE ? AI_PASSIVE : 0) |
			     (hints->ai_flags & RAI_NUMERICHOST ? AI_NUMERICHOST : 0);
		if (hints->ai_family == AF_INET || hints->ai_family == AF_INET6)
			h.ai_family = hints->ai_family;
		if (hints->ai_port_space == RDMA_PS_UDP || hints->ai_qp_type == IBV_QPT_UD)
			h.ai_socktype = SOCK_DGRAM;
	}
	switch (getaddrinfo(node, service, &h, out)) {
	case 0:
		return 0;
	case EAI_MEMORY:
		return ENOMEM;
	case EAI_SYSTEM:
		return errno;
	default:
		return EADDRNOTAVAIL;
	}
}

static int copy_raw(const struct sockaddr *sa, socklen_t n, struct sockaddr **out, socklen_t *len)
{
	if (!(*out = malloc(n)))
		return ENOMEM;
	memcpy(*out, sa, n);
	*len = n;
	return 0;
}

/* fill: r's addresses: the node's or service's resolved address (the
 * source of a passive one, else the destination), or with neither given
 * the hints' destination; the hints' source where r has none. */
static int fill(struct rdma_addrinfo *r, const char *node, const char *service, const struct rdma_addrinfo *hints)
{
	struct addrinfo *ai = NULL;
	int passive = hints && (hints->ai_flags & RAI_PASSIVE), err = 0;
	if (node || service) {
		if ((err = resolve(node, service, hints, &ai)))
			return err;
		r->ai_family = ai->ai_family;
		err = passive ? copy_addr(ai, &r->ai_src_addr, &r->ai_src_len)
			      : copy_addr(ai, &r->ai_dst_addr, &r->ai_dst_len);
		freeaddrinfo(ai);
	} else if (hints->ai_dst_addr && hints->ai_dst_len) {
		r->ai_family = hints->ai_dst_addr->sa_family;
		err = copy_raw(hints->ai_dst_addr, hints->ai_dst_len, &r->ai_dst_addr, &r->ai_dst_len);
	}
	if (!err && !r->ai_src_len && hints && hints->ai_src_addr && hints->ai_src_len) {
		if (!r->ai_family)
			r->ai_family = hints->ai_src_addr->sa_family;
		err = copy_raw(hints->ai_src_addr, hints->ai_src_len, &r->ai_src_addr, &r->ai_src_len);
	}
	return err;
}

/* rdma_getaddrinfo: as librdmacm's, node and service may both be NULL when
 * hints give the addresses (libfabric's verbs provider passes a peer's
 * address so). */
CM_EXPORT int rdma_getaddrinfo(const char *node, const char *service, const struct rdma_addrinfo *hints,
			       struct rdma_addrinfo **res)
{
	struct rdma_addrinfo *r;
	int err;
	if (!res || (!node && !service && !hints))
		return cm_fail(EINVAL);
	if (!(r = calloc(1, sizeof(*r))))
		return cm_fail(ENOMEM);
	r->ai_flags = hints ? hints->ai_flags : 0;
	r->ai_family = hints ? hints->ai_family : 0;
	r->ai_port_space = hints && hints->ai_port_space ? hints->ai_port_space : RDMA_PS_TCP;
	r->ai_qp_type = hints && hints->ai_qp_type ? hints->ai_qp_type
			: r->ai_port_space == RDMA_PS_UDP ? IBV_QPT_UD : IBV_QPT_RC;
	if ((err = fill(r, node, service, hints))) {
		rdma_freeaddrinfo(r);
		return cm_fail(err);
	}
	*res = r;
	return 0;
}

CM_EXPORT void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	while (res) {
		struct rdma_addrinfo *n = res->ai_next;
		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res->ai_src_canonname);
		free(res->ai_dst_canonname);
		free(res->ai_route);
		free(res->ai_connect);
		free(res);
		res = n;
	}
}

static int ep_passive(struct cm_id *c, struct rdma_addrinfo *res, struct ibv_pd *pd,
		      struct ibv_qp_init_attr *attr)
{
	if (rdma_bind_addr(&c->id, res->ai_src_addr))
		return -1;
	c->id.pd = pd;
	if (attr) {
		if (!(c->child_attr = malloc(sizeof(*attr))))
			return cm_fail(ENOMEM);
		*c->child_attr = *attr;
	}
	return 0;
}

CM_EXPORT int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res, struct ibv_pd *pd,
			     struct ibv_qp_init_attr *qp_init_attr)
{
	struct rdma_cm_id *cid;
	int ret;
	if (!id || !res)
		return cm_fail(EINVAL);
	if (rdma_create_id(NULL, &cid, NULL, res->ai_port_space))
		return -1;
	if (res->ai_qp_type)
		cid->qp_type = res->ai_qp_type;
	if (qp_init_attr)
		qp_init_attr->qp_type = cid->qp_type;
	if (res->ai_flags & RAI_PASSIVE)
		ret = ep_passive(to_cid(cid), res, pd, qp_init_attr);
	else
		ret = rdma_resolve_addr(cid, res->ai_src_addr, res->ai_dst_addr, 2000) ||
		      rdma_resolve_route(cid, 2000) || (qp_init_attr && rdma_create_qp(cid, pd, qp_init_attr));
	if (ret) {
		int err = errno;
		rdma_destroy_ep(cid);
		return cm_fail(err);
	}
	*id = cid;
	return 0;
}

CM_EXPORT void rdma_destroy_ep(struct rdma_cm_id *id)
{
	if (!id)
		return;
	rdma_destroy_qp(id);
	rdma_destroy_srq(id);
	free(to_cid(id)->child_attr);
	to_cid(id)->child_attr = NULL;
	rdma_destroy_id(id);
}

CM_EXPORT int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	(void)event;
	return id ? 0 : cm_fail(EINVAL);
}

CM_EXPORT int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	(void)id, (void)ece;
	return cm_fail(EOPNOTSUPP);
}

CM_EXPORT int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	(void)id, (void)ece;
	return cm_fail(EOPNOTSUPP);
}

CM_EXPORT int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len)
{
	return rdma_reject(id, private_data, private_data_len);
}
