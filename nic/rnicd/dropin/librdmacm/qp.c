/* SPDX-License-Identifier: BSD-2-Clause */
/* QPs of ids: rdma_create_qp(_ex) on the id's device (a default PD and
 * completion queues made when the caller gives none, as librdmacm does),
 * moved to INIT for the CM to take on; rdma_init_qp_attr; SRQs; and the
 * rdma_create_ep convenience. */
#include "cm.h"

#include <stdlib.h>
#include <string.h>

static struct ibv_pd *default_pd[CM_MAX_DEVS];
/* not cm_mu: allocating reads the context's socket, whose CM events the
 * sink queues under cm_mu */
static pthread_mutex_t pd_mu = PTHREAD_MUTEX_INITIALIZER;

/* cm_default_pd returns device dev's default PD, allocated on first use.
 * No lock held. */
struct ibv_pd *cm_default_pd(int dev)
{
	struct ibv_pd *pd;
	pthread_mutex_lock(&pd_mu);
	if (!default_pd[dev])
		default_pd[dev] = ibv_alloc_pd(cm_devs[dev].verbs);
	pd = default_pd[dev];
	pthread_mutex_unlock(&pd_mu);
	return pd;
}

/* cm_default_pd_peek returns device dev's default PD if it has one
 * (rdma_listen made it), allocating none: the sink calls it. */
struct ibv_pd *cm_default_pd_peek(int dev)
{
	struct ibv_pd *pd;
	pthread_mutex_lock(&pd_mu);
	pd = default_pd[dev];
	pthread_mutex_unlock(&pd_mu);
	return pd;
}

static struct ibv_pd *pd_of(struct cm_id *c, struct ibv_pd *pd)
{
	if (pd)
		return pd;
	if (c->id.pd)
		return c->id.pd;
	return cm_default_pd(c->dev);
}

/* cm_give_pd gives an id bound to a device the device's default PD as
 * id->pd, as librdmacm does when an id gets its device (ucma_get_device):
 * programs (pyverbs' CMID) take it from there for their MRs and AHs
 * before any QP exists. No lock held. */
void cm_give_pd(struct cm_id *c)
{
	struct ibv_pd *pd;
	pthread_mutex_lock(&cm_mu);
	int want = c->dev >= 0 && !c->id.pd;
	pthread_mutex_unlock(&cm_mu);
	if (!want || !(pd = pd_of(c, NULL)))
		return;
	pthread_mutex_lock(&cm_mu);
	if (!c->id.pd)
		c->id.pd = pd;
	pthread_mutex_unlock(&cm_mu);
}

/* make_cqs gives the id a send and a receive CQ, each with a completion
 * channel, where attr names none. */
static int make_cqs(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *attr)
{
	if (!attr->send_cq) {
		if (!(id->send_cq_channel = ibv_create_comp_channel(id->verbs)) ||
		    !(id->send_cq = ibv_create_cq(id->verbs, (int)attr->cap.max_send_wr ? (int)attr->cap.max_send_wr : 1,
						  id, id->send_cq_channel, 0)))
			return -1;
		attr->send_cq = id->send_cq;
	}
	if (!attr->recv_cq) {
		if (!(id->recv_cq_channel = ibv_create_comp_channel(id->verbs)) ||
		    !(id->recv_cq = ibv_create_cq(id->verbs, (int)attr->cap.max_recv_wr ? (int)attr->cap.max_recv_wr : 1,
						  id, id->recv_cq_channel, 0)))
			return -1;
		attr->recv_cq = id->recv_cq;
	}
	return 0;
}

static void free_cqs(struct rdma_cm_id *id)
{
	if (id->send_cq)
		ibv_destroy_cq(id->send_cq);
	if (id->send_cq_channel)
		ibv_destroy_comp_channel(id->send_cq_channel);
	if (id->recv_cq)
		ibv_destroy_cq(id->recv_cq);
	if (id->recv_cq_channel)
		ibv_destroy_comp_channel(id->recv_cq_channel);
	id->send_cq = id->recv_cq = NULL;
	id->send_cq_channel = id->recv_cq_channel = NULL;
}

/* to_init moves an RC QP to INIT (the daemon's CM takes it on from
 * there, with the receives posted meanwhile); a UD QP to RTS with the
 * rdma_cm Q_Key. */
static int to_ready(struct cm_id *c, struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1, .pkey_index = 0};
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
	if (qp->qp_type != IBV_QPT_UD) {
		a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				    IBV_ACCESS_REMOTE_ATOMIC;
		return ibv_modify_qp(qp, &a, mask | IBV_QP_ACCESS_FLAGS);
	}
	a.qkey = RDMA_UDP_QKEY;
	if (ibv_modify_qp(qp, &a, mask | IBV_QP_QKEY))
		return -1;
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		return -1;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	(void)c;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

CM_EXPORT int rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *attr)
{
	struct cm_id *c = to_cid(id);
	struct ibv_qp_init_attr_ex a;
	struct ibv_qp *qp;
	int err;
	if (!id || !attr || !id->verbs || c->dev < 0)
		return cm_fail(EINVAL);
	if (id->qp)
		return cm_fail(EINVAL);
	a = *attr;
	if (!(a.comp_mask & IBV_QP_INIT_ATTR_PD) || !a.pd) {
		a.pd = pd_of(c, NULL);
		a.comp_mask |= IBV_QP_INIT_ATTR_PD;
	}
	if (!a.pd || a.pd->context != id->verbs)
		return cm_fail(EINVAL);
	if (make_cqs(id, &a))
		goto fail;
	if (!a.srq)
		a.srq = id->srq;
	if (!(qp = ibv_create_qp_ex(id->verbs, &a)))
		goto fail;
	if (to_ready(c, qp)) {
		err = errno;
		ibv_destroy_qp(qp);
		errno = err;
		goto fail;
	}
	id->qp = qp;
	id->pd = a.pd;
	attr->cap = a.cap;
	return 0;
fail:
	err = errno;
	free_cqs(id);
	return cm_fail(err ? err : ENOMEM);
}

CM_EXPORT int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr)
{
	struct ibv_qp_init_attr_ex a;
	int ret;
	if (!id || !qp_init_attr)
		return cm_fail(EINVAL);
	memset(&a, 0, sizeof(a));
	memcpy(&a, qp_init_attr, sizeof(*qp_init_attr));
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = pd ? pd : pd_of(to_cid(id), NULL);
	ret = rdma_create_qp_ex(id, &a);
	if (!ret) {
		qp_init_attr->cap = a.cap;
		qp_init_attr->send_cq = a.send_cq;
		qp_init_attr->recv_cq = a.recv_cq;
	}
	return ret;
}

CM_EXPORT void rdma_destroy_qp(struct rdma_cm_id *id)
{
	if (!id || !id->qp)
		return;
	ibv_destroy_qp(id->qp);
	id->qp = NULL;
	free_cqs(id);
}

CM_EXPORT int rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *qp_attr, int *qp_attr_mask)
{
	struct cm_id *c = to_cid(id);
	int err;
	if (!id || !qp_attr || !qp_attr_mask || c->dev < 0)
		return cm_fail(EINVAL);
	/* RTR and RTS: for an external QP, from the REQ or REP (external.c);
	 * rnicd's CM moves the QPs of ids itself */
	if (qp_attr->qp_state == IBV_QPS_RTR || qp_attr->qp_state == IBV_QPS_RTS)
		return (err = cm_ext_qp_attr(c, qp_attr, qp_attr_mask)) ? cm_fail(err) : 0;
	memset(qp_attr, 0, sizeof(*qp_attr));
	qp_attr->qp_state = IBV_QPS_INIT;
	qp_attr->port_num = 1;
	qp_attr->pkey_index = 0;
	*qp_attr_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
	if (id->qp_type == IBV_QPT_UD) {
		qp_attr->qkey = RDMA_UDP_QKEY;
		*qp_attr_mask |= IBV_QP_QKEY;
	} else {
		qp_attr->qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
		*qp_attr_mask |= IBV_QP_ACCESS_FLAGS;
	}
	return 0;
}

CM_EXPORT int rdma_create_srq_ex(struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr)
{
	struct ibv_srq_init_attr a;
	struct ibv_pd *pd;
	if (!id || !attr || to_cid(id)->dev < 0)
		return cm_fail(EINVAL);
	pd = (attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) && attr->pd ? attr->pd : pd_of(to_cid(id), NULL);
	memset(&a, 0, sizeof(a));
	a.srq_context = attr->srq_context;
	a.attr = attr->attr;
	if (!pd || !(id->srq = ibv_create_srq(pd, &a)))
		return -1;
	attr->attr = a.attr;
	return 0;
}

CM_EXPORT int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex a;
	int ret;
	if (!attr)
		return cm_fail(EINVAL);
	memset(&a, 0, sizeof(a));
	a.srq_context = attr->srq_context;
	a.attr = attr->attr;
	a.comp_mask = pd ? IBV_SRQ_INIT_ATTR_PD : 0;
	a.pd = pd;
	ret = rdma_create_srq_ex(id, &a);
	if (!ret)
		attr->attr = a.attr;
	return ret;
}

CM_EXPORT void rdma_destroy_srq(struct rdma_cm_id *id)
{
	if (!id || !id->srq)
		return;
	ibv_destroy_srq(id->srq);
	id->srq = NULL;
}
