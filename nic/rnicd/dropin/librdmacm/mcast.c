/* SPDX-License-Identifier: BSD-2-Clause */
/* Multicast on rdma_cm ids: rdma_join_multicast(_ex), rdma_leave_multicast.
 *
 * On RoCE a join asks nothing of the network but the IGMP report, which
 * the NIC sends itself when its first QP attaches: the kernel's CM (cma.c,
 * cma_iboe_join_multicast) only builds the group's address handle and
 * queues MULTICAST_JOIN, and librdmacm attaches the id's QP when the
 * program takes that event. This library does the same without the
 * daemon. The event's ud param: the group's GID (::ffff:a.b.c.d for an
 * IPv4 group, as RoCEv2 maps it), the id's source GID index, hop limit 64,
 * the multicast QPN 0xFFFFFF and the port space's Q_Key (RDMA_UDP_QKEY);
 * its private_data is the join's context, as librdmacm hands it. As the
 * kernel, a join needs a bound or resolved UD id and an IPv4 group: an
 * IPv6 group on RoCEv2 is EOPNOTSUPP (the kernel's ENOTSUPP). A send-only
 * member's QP is not attached. rdma_leave_multicast detaches the id's QP
 * and forgets the group. */
#include "cm.h"

#include <stdlib.h>
#include <string.h>

struct cm_mc {
	struct sockaddr_storage addr;
	socklen_t len;
	union ibv_gid mgid;
	uint16_t flags;
	int pending; /* its MULTICAST_JOIN not yet taken */
	int left;
	struct cm_mc *next;
};

static socklen_t mc_len(const struct sockaddr *sa)
{
	if (!sa)
		return 0;
	return sa->sa_family == AF_INET ? sizeof(struct sockaddr_in)
	       : sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : 0;
}

/* sgid_index: the GID index of the IPv4 address a on the id's device. */
static int sgid_index(struct ibv_context *v, struct in_addr a)
{
	struct ibv_port_attr pa;
	union ibv_gid g;
	if (ibv_query_port(v, 1, &pa))
		return -1;
	for (int i = 0; i < pa.gid_tbl_len; i++) {
		if (ibv_query_gid(v, 1, i, &g))
			break;
		if (g.raw[10] == 0xff && g.raw[11] == 0xff && !memcmp(g.raw, (uint8_t[10]){0}, 10) &&
		    !memcmp(g.raw + 12, &a, 4))
			return i;
	}
	return -1;
}

/* join_event fills MULTICAST_JOIN's ud param. */
static void join_event(struct cm_event *e, const struct cm_mc *mc, int sgid, void *context)
{
	struct rdma_ud_param *ud = &e->ev.param.ud;
	ud->private_data = context;
	ud->ah_attr.is_global = 1;
	ud->ah_attr.grh.dgid = mc->mgid;
	ud->ah_attr.grh.sgid_index = (uint8_t)sgid;
	ud->ah_attr.grh.hop_limit = 64;
	ud->ah_attr.port_num = 1;
	ud->qp_num = 0xFFFFFF;
	ud->qkey = RDMA_UDP_QKEY;
}

/* join_check: whether id may join addr now (0, or the errno). Caller holds
 * cm_mu. */
static int join_check(struct cm_id *c, const struct sockaddr *addr)
{
	if (c->dev < 0 || (c->state != ST_BOUND && c->state != ST_ADDR_RESOLVED) || c->destroyed)
		return EINVAL;
	if (c->id.ps == RDMA_PS_IPOIB)
		return EOPNOTSUPP; /* its Q_Key is the IPoIB broadcast group's: not served */
	if (c->id.qp_type != IBV_QPT_UD)
		return EINVAL;
	if (addr->sa_family == AF_INET6)
		return EOPNOTSUPP;
	if (((const struct sockaddr_in *)addr)->sin_addr.s_addr == htonl(INADDR_ANY))
		return EINVAL;
	return 0;
}

static int join(struct rdma_cm_id *id, const struct sockaddr *addr, uint16_t flags, void *context)
{
	struct cm_id *c = to_cid(id);
	struct cm_mc *mc;
	struct cm_event *e;
	struct in_addr src;
	socklen_t len = mc_len(addr);
	int err, sgid;

	if (!id || !len)
		return cm_fail(EINVAL);
	pthread_mutex_lock(&cm_mu);
	err = join_check(c, addr);
	src = c->dev >= 0 ? cm_devs[c->dev].addr : (struct in_addr){0};
	if (!err && id->route.addr.src_addr.sa_family == AF_INET &&
	    id->route.addr.src_sin.sin_addr.s_addr != htonl(INADDR_ANY))
		src = id->route.addr.src_sin.sin_addr;
	pthread_mutex_unlock(&cm_mu);
	if (err)
		return cm_fail(err);
	if ((sgid = sgid_index(id->verbs, src)) < 0)
		return cm_fail(EADDRNOTAVAIL);
	if (!(mc = calloc(1, sizeof(*mc))))
		return cm_fail(ENOMEM);
	memcpy(&mc->addr, addr, len);
	mc->len = len;
	mc->flags = flags;
	mc->mgid.raw[10] = mc->mgid.raw[11] = 0xff;
	memcpy(mc->mgid.raw + 12, &((const struct sockaddr_in *)addr)->sin_addr, 4);
	pthread_mutex_lock(&cm_mu);
	if (!(e = cm_event_new(c, RDMA_CM_EVENT_MULTICAST_JOIN, 0))) {
		pthread_mutex_unlock(&cm_mu);
		free(mc);
		return cm_fail(ENOMEM);
	}
	join_event(e, mc, sgid, context);
	e->mc = mc;
	mc->pending = 1;
	mc->next = c->mcs;
	c->mcs = mc;
	cm_event_queue(e);
	pthread_mutex_unlock(&cm_mu);
	return cm_complete(c);
}

CM_EXPORT int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, void *context)
{
	return join(id, addr, RDMA_MC_JOIN_FLAG_FULLMEMBER, context);
}

CM_EXPORT int rdma_join_multicast_ex(struct rdma_cm_id *id, struct rdma_cm_join_mc_attr_ex *attr, void *context)
{
	if (!attr)
		return cm_fail(EINVAL);
	if (attr->comp_mask >= RDMA_CM_JOIN_MC_ATTR_RESERVED)
		return cm_fail(ENOTSUP);
	if (!(attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_ADDRESS) || !(attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS) ||
	    attr->join_flags >= RDMA_MC_JOIN_FLAG_RESERVED)
		return cm_fail(EINVAL);
	return join(id, attr->addr, (uint16_t)attr->join_flags, context);
}

/* unlink_mc frees mc once it is left and its event was taken. Caller holds
 * cm_mu. */
static void unlink_mc(struct cm_id *c, struct cm_mc *mc)
{
	if (!mc->left || mc->pending)
		return;
	for (struct cm_mc **p = &c->mcs; *p; p = &(*p)->next)
		if (*p == mc) {
			*p = mc->next;
			break;
		}
	free(mc);
}

CM_EXPORT int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct cm_id *c = to_cid(id);
	struct cm_mc *mc;
	struct ibv_qp *qp;
	socklen_t len = mc_len(addr);
	int detach;

	if (!id || !len)
		return cm_fail(EINVAL);
	pthread_mutex_lock(&cm_mu);
	for (mc = c->mcs; mc; mc = mc->next)
		if (!mc->left && mc->len == len && !memcmp(&mc->addr, addr, len))
			break;
	if (!mc) {
		pthread_mutex_unlock(&cm_mu);
		return cm_fail(EADDRNOTAVAIL);
	}
	mc->left = 1;
	qp = id->qp;
	detach = qp && mc->flags != RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER;
	pthread_mutex_unlock(&cm_mu);
	if (detach) /* as librdmacm: a QP never attached answers EINVAL, ignored */
		ibv_detach_mcast(qp, &mc->mgid, 0);
	pthread_mutex_lock(&cm_mu);
	unlink_mc(c, mc);
	pthread_mutex_unlock(&cm_mu);
	return 0;
}

/* cm_mc_taken: the program takes a MULTICAST_JOIN: the id's QP joins the
 * group (librdmacm's ucma_process_join); if it cannot, the event becomes
 * MULTICAST_ERROR with the errno, negated, as status. No lock held. */
void cm_mc_taken(struct cm_event *e)
{
	struct cm_id *c = e->owner;
	struct cm_mc *mc;
	struct ibv_qp *qp;
	int attach, err = 0;

	pthread_mutex_lock(&cm_mu);
	mc = e->mc;
	e->mc = NULL;
	qp = c->id.qp;
	attach = mc && !mc->left && qp && mc->flags != RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER;
	pthread_mutex_unlock(&cm_mu);
	if (!mc)
		return;
	if (attach)
		err = ibv_attach_mcast(qp, &mc->mgid, 0);
	pthread_mutex_lock(&cm_mu);
	if (err) {
		e->ev.event = RDMA_CM_EVENT_MULTICAST_ERROR;
		e->ev.status = -err;
	}
	mc->pending = 0;
	unlink_mc(c, mc);
	pthread_mutex_unlock(&cm_mu);
}

/* cm_mc_free: the id goes; its groups with it. Caller holds cm_mu. */
void cm_mc_free(struct cm_id *c)
{
	while (c->mcs) {
		struct cm_mc *mc = c->mcs;
		c->mcs = mc->next;
		free(mc);
	}
}
