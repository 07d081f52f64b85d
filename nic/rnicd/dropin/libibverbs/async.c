/* SPDX-License-Identifier: BSD-2-Clause */
/* Asynchronous events: the daemon sends them on the control socket; they
 * are queued whenever a message is read there (rnic_call, or here) and
 * handed out by ibv_get_async_event. The context's async_fd is an epoll
 * set of the socket and the queue's eventfd, so poll(2) on it says when
 * an event may be had, with no thread of our own. A daemon that goes
 * away queues IBV_EVENT_DEVICE_FATAL once. */
#include "rnic.h"

#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>

/* pop takes the oldest queued event; caller holds the connection's lock. */
static int pop(struct rnic_conn *c, struct rnic_event *e)
{
	uint64_t v;
	if (c->evq_len == 0)
		return 0;
	*e = c->evq[c->evq_head];
	c->evq_head = (c->evq_head + 1) % RNIC_EVQ;
	if (--c->evq_len == 0 && read(c->evq_fd, &v, sizeof(v)) < 0) {
		/* already reset */
	}
	return 1;
}

/* element_of is the kind of object events of type t concern, as
 * libibverbs chooses the element by the type; 0 for a port or the device. */
static int element_of(enum ibv_event_type t)
{
	switch (t) {
	case IBV_EVENT_CQ_ERR:
		return OBJ_CQ;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		return OBJ_QP;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		return OBJ_SRQ;
	default:
		return 0;
	}
}

/* to_ibv fills out from e; 0 if the event's object is gone (destroyed
 * while the event was in flight) or is not of the kind its type concerns,
 * in which case it is dropped: every QP, CQ or SRQ event a consumer gets
 * carries its live object (a handler reads element.qp->qp_num). */
static int to_ibv(struct rnic_context *c, const struct rnic_event *e, struct ibv_async_event *out)
{
	int kind = element_of((enum ibv_event_type)e->type);
	memset(out, 0, sizeof(*out));
	out->event_type = (enum ibv_event_type)e->type;
	if (kind && e->object != kind)
		return 0;
	switch (kind) {
	case OBJ_QP:
		out->element.qp = rnic_obj_find(c, OBJ_QP, e->handle);
		return out->element.qp != NULL;
	case OBJ_CQ:
		out->element.cq = rnic_obj_find(c, OBJ_CQ, e->handle);
		return out->element.cq != NULL;
	case OBJ_SRQ:
		out->element.srq = rnic_obj_find(c, OBJ_SRQ, e->handle);
		if (out->element.srq && e->type == IBV_EVENT_SRQ_LIMIT_REACHED)
			(to_rsrq(out->element.srq))->limit = 0; /* the event disarms it */
		return out->element.srq != NULL;
	default:
		out->element.port_num = e->port;
		return 1;
	}
}

RNIC_EXPORT int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
	struct rnic_context *c = to_rctx(context);
	struct rnic_event e;
	struct epoll_event ev;
	int got, nonblock = fcntl(context->async_fd, F_GETFL) & O_NONBLOCK;

	for (;;) {
		pthread_mutex_lock(&c->conn.mu);
		rnic_poll_events(&c->conn);
		got = pop(&c->conn, &e);
		if (c->conn.dead && !c->conn.fatal_sent) {
			/* the socket stays readable (EOF): out of the set */
			epoll_ctl(context->async_fd, EPOLL_CTL_DEL, c->conn.fd, NULL);
			c->conn.fatal_sent = 1;
		}
		pthread_mutex_unlock(&c->conn.mu);
		if (got && to_ibv(c, &e, event))
			return 0;
		if (got)
			continue;
		if (nonblock) {
			errno = EAGAIN;
			return -1;
		}
		if (epoll_wait(context->async_fd, &ev, 1, -1) < 0 && errno != EINTR)
			return -1;
	}
}

RNIC_EXPORT void ibv_ack_async_event(struct ibv_async_event *event)
{
	/* Nothing waits for acks: destroying an object does not block on
	 * its unacknowledged events (they were copied out already). */
	(void)event;
}
