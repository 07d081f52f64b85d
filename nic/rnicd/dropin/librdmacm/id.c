/* SPDX-License-Identifier: BSD-2-Clause */
/* rdma_cm ids: create/destroy, binding to a device by address, address
 * and route resolution (local: a RoCEv2 NIC of the daemon has the source
 * address; the destination must be reachable from it), listen, migrate,
 * options and the address accessors. */
#include "cm.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct cm_id *cm_ids;

/* cm_id_alloc makes an id on channel ch. Caller holds cm_mu. */
struct cm_id *cm_id_alloc(struct rdma_event_channel *ch, void *context, enum rdma_port_space ps,
			  enum ibv_qp_type qpt)
{
	struct cm_id *id = calloc(1, sizeof(*id));
	if (!id)
		return NULL;
	id->id.channel = ch;
	id->id.context = context;
	id->id.ps = ps;
	id->id.qp_type = qpt;
	id->dev = -1;
	id->refs = 1; /* the user's, until rdma_destroy_id */
	id->next = cm_ids;
	cm_ids = id;
	return id;
}

/* cm_id_unref drops a reference; the last frees the id. Caller holds cm_mu. */
void cm_id_unref(struct cm_id *id)
{
	struct cm_id **p;
	if (--id->refs > 0)
		return;
	for (p = &cm_ids; *p; p = &(*p)->next)
		if (*p == id) {
			*p = id->next;
			break;
		}
	if (id->sync && id->id.channel) {
		pthread_mutex_unlock(&cm_mu);
		rdma_destroy_event_channel(id->id.channel);
		pthread_mutex_lock(&cm_mu);
	}
	cm_mc_free(id);
	free(id);
}

static enum ibv_qp_type ps_qp_type(enum rdma_port_space ps)
{
	return ps == RDMA_PS_UDP || ps == RDMA_PS_IPOIB ? IBV_QPT_UD : IBV_QPT_RC;
}

CM_EXPORT int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
			     enum rdma_port_space ps)
{
	struct cm_id *c;
	int sync = !channel, err;
	if (!id)
		return cm_fail(EINVAL);
	if ((err = cm_init()))
		return cm_fail(err);
	if (ps != RDMA_PS_TCP && ps != RDMA_PS_UDP && ps != RDMA_PS_IB && ps != RDMA_PS_IPOIB)
		return cm_fail(EPROTONOSUPPORT);
	if (sync && !(channel = rdma_create_event_channel()))
		return -1;
	pthread_mutex_lock(&cm_mu);
	c = cm_id_alloc(channel, context, ps, ps_qp_type(ps));
	if (c)
		c->sync = sync;
	pthread_mutex_unlock(&cm_mu);
	if (!c) {
		if (sync)
			rdma_destroy_event_channel(channel);
		return cm_fail(ENOMEM);
	}
	*id = &c->id;
	return 0;
}

/* drop_queued removes id's queued events (not yet handed out). Caller
 * holds cm_mu. */
static void drop_queued(struct cm_id *id)
{
	struct cm_channel *ch = to_cch(id->id.channel);
	struct cm_event **p, *e;
	if (!ch)
		return;
	ch->tail = NULL;
	for (p = &ch->head; (e = *p);) {
		if (e->owner == id) {
			*p = e->next;
			cm_id_unref(id);
			free(e);
			continue;
		}
		ch->tail = e;
		p = &e->next;
	}
}

CM_EXPORT int rdma_destroy_id(struct rdma_cm_id *id)
{
	struct cm_id *c = to_cid(id);
	struct cbuf b = {0};
	if (!id)
		return cm_fail(EINVAL);
	cm_close_listeners(c);
	cm_unreserve(c);
	pthread_mutex_lock(&cm_mu);
	c->destroyed = 1;
	uint32_t req = c->req, conn = c->conn;
	int dev = c->dev, down = c->down_sent;
	c->req = 0;
	drop_queued(c);
	cm_timewait_arm(to_cch(c->id.channel)); /* its TIMEWAIT_EXIT will not come */
	pthread_mutex_unlock(&cm_mu);
	if (req && dev >= 0) { /* an unanswered request: refused */
		c_u32(&b, req);
		c_blob(&b, NULL, 0);
		cm_call(dev, RNICD_OP_CM_REJECT, &b, NULL, 0, NULL);
	} else if (conn && !down && dev >= 0) {
		b.n = 0;
		c_u32(&b, 0);
		c_u32(&b, conn);
		cm_async(c, dev, AS_DISCONNECT, RNICD_OP_CM_DISCONNECT, &b);
	}
	if (c->id.event)
		rdma_ack_cm_event(c->id.event);
	pthread_mutex_lock(&cm_mu);
	cm_id_unref(c);
	pthread_mutex_unlock(&cm_mu);
	return 0;
}

static socklen_t sa_len(const struct sockaddr *sa)
{
	switch (sa->sa_family) {
	case AF_INET:
		return sizeof(struct sockaddr_in);
	case AF_INET6:
		return sizeof(struct sockaddr_in6);
	}
	return 0;
}

/* set_dev binds id to device i: its verbs, port 1. Caller holds cm_mu. */
static void set_dev(struct cm_id *c, int i)
{
	c->dev = i;
	c->id.verbs = cm_devs[i].verbs;
	c->id.port_num = 1;
}

/* bind_dev: the device addr binds to: -1 for none (the wildcard, and the
 * loopback address when a NIC is on loopback: bind.c), else the NIC that
 * has it; -ENODEV (no NIC on loopback) or -EADDRNOTAVAIL (no NIC has it)
 * otherwise. Caller holds cm_mu. */
static int bind_dev(const struct sockaddr *addr)
{
	int i;
	if (cm_is_loopback(addr))
		return cm_loopback_dev() >= 0 ? -1 : -ENODEV;
	i = cm_dev_of_addr(addr);
	return i == -2 ? -EADDRNOTAVAIL : i;
}

static in_port_t *port_of(struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET6 ? &((struct sockaddr_in6 *)ss)->sin6_port : &((struct sockaddr_in *)ss)->sin_port;
}

/* first_dev: a live device to carry a reservation of the wildcard address
 * (the port spaces are the daemon's, any session of it will do), or -1. */
static int first_dev(void)
{
	for (int i = 0; i < cm_ndevs; i++)
		if (!cm_devs[i].dead)
			return i;
	return -1;
}

CM_EXPORT int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct cm_id *c = to_cid(id);
	struct sockaddr_storage ss = {0};
	uint16_t port;
	int i, via, err = 0;
	if (!id || !addr || !sa_len(addr) || addr->sa_family == AF_IB)
		return cm_fail(addr && addr->sa_family == AF_IB ? EAFNOSUPPORT : EINVAL);
	memcpy(&ss, addr, sa_len(addr));
	pthread_mutex_lock(&cm_mu);
	if (c->state != ST_IDLE) {
		pthread_mutex_unlock(&cm_mu);
		return cm_fail(EINVAL);
	}
	if ((i = bind_dev(addr)) < -1) {
		pthread_mutex_unlock(&cm_mu);
		return cm_fail(-i);
	}
	via = i >= 0 ? i : first_dev();
	c->state = ST_BOUND; /* claimed: another bind of the id fails EINVAL */
	pthread_mutex_unlock(&cm_mu);
	port = ntohs(*port_of(&ss));
	if (via >= 0)
		err = cm_reserve(c, via, addr, &port);
	pthread_mutex_lock(&cm_mu);
	if (err) {
		c->state = ST_IDLE;
		pthread_mutex_unlock(&cm_mu);
		return cm_fail(err);
	}
	if (i >= 0)
		set_dev(c, i);
	*port_of(&ss) = htons(port);
	memcpy(&id->route.addr.src_addr, &ss, sa_len(addr));
	pthread_mutex_unlock(&cm_mu);
	cm_give_pd(c);
	return 0;
}

/* reachable: whether a device at dev_addr reaches dst (as the daemon's CM
 * addresses it, cm_wire_addr): a NIC on loopback reaches loopback only
 * (and rnic never sends elsewhere from one). */
static int reachable(struct in_addr dev_addr, const struct sockaddr_in *dst)
{
	uint32_t d = ntohl(dst->sin_addr.s_addr);
	if (IN_MULTICAST(d)) /* a group: joined on the device's own address */
		return 1;
	if ((ntohl(dev_addr.s_addr) >> 24) == 127)
		return (d >> 24) == 127;
	return d != 0 && d != 0xffffffff;
}

/* pick_dev: the device for a connection to dst: the bound one, else the
 * loopback NIC for the loopback address, else the destination's own, else
 * the first that reaches it. Caller holds cm_mu. */
static int pick_dev(struct cm_id *c, const struct sockaddr *dst, const struct sockaddr_in *wire)
{
	int i;
	if (c->dev >= 0)
		return c->dev;
	if (cm_self_dst(dst))
		return cm_self_dev(dst);
	if ((i = cm_dev_of_addr(dst)) >= 0)
		return i;
	for (i = 0; i < cm_ndevs; i++)
		if (!cm_devs[i].dead && reachable(cm_devs[i].addr, wire))
			return i;
	return -1;
}

static int is_unspecified(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_addr.s_addr == htonl(INADDR_ANY);
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)sa)->sin6_addr);
	return 1;
}

/* fill_src: the source address of a resolved id that was bound to none
 * (or the wildcard): the device's, or for a destination on this host
 * itself (loopback, wildcard) the loopback address of the destination's
 * family, as the kernel's route and cma_set_loopback give; the port stays.
 * Caller holds cm_mu. */
static void fill_src(struct cm_id *c, const struct sockaddr *dst)
{
	struct sockaddr_storage *src = &c->id.route.addr.src_storage;
	uint16_t port = src->ss_family ? *port_of(src) : 0;
	if (!is_unspecified((struct sockaddr *)src))
		return;
	memset(src, 0, sizeof(*src));
	if (cm_self_dst(dst) && dst->sa_family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)src;
		s6->sin6_family = AF_INET6;
		s6->sin6_addr = in6addr_loopback;
		s6->sin6_port = port;
		return;
	}
	struct sockaddr_in *s = (struct sockaddr_in *)src;
	s->sin_family = AF_INET;
	s->sin_addr = cm_devs[c->dev].addr;
	if (cm_self_dst(dst)) /* as cma_set_loopback */
		s->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	s->sin_port = port;
}

/* resolved: ADDR_RESOLVED (or ADDR_ERROR with status) for c, on device i
 * when ok. Caller holds cm_mu. */
static struct cm_event *resolved(struct cm_id *c, int i, int ok, int status)
{
	if (ok) {
		set_dev(c, i);
		fill_src(c, &c->id.route.addr.dst_addr);
		c->state = ST_ADDR_RESOLVED;
	}
	struct cm_event *e = cm_event_new(c, ok ? RDMA_CM_EVENT_ADDR_RESOLVED : RDMA_CM_EVENT_ADDR_ERROR, ok ? 0 : status);
	if (e)
		cm_event_queue(e);
	return e;
}

CM_EXPORT int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr, struct sockaddr *dst_addr,
				int timeout_ms)
{
	struct cm_id *c = to_cid(id);
	struct sockaddr_in wire;
	struct cm_event *e;
	int i, ok, unbound, status = -EHOSTUNREACH;
	(void)timeout_ms;
	if (!id || !dst_addr || !sa_len(dst_addr))
		return cm_fail(EINVAL);
	if (src_addr && src_addr->sa_family && rdma_bind_addr(id, src_addr) && errno != EINVAL)
		return -1;
	pthread_mutex_lock(&cm_mu);
	if (c->state != ST_IDLE && c->state != ST_BOUND) {
		pthread_mutex_unlock(&cm_mu);
		return cm_fail(EINVAL);
	}
	memcpy(&id->route.addr.dst_addr, dst_addr, sa_len(dst_addr));
	cm_wire_addr(dst_addr, &wire);
	i = pick_dev(c, dst_addr, &wire);
	ok = i >= 0 && !cm_devs[i].dead && reachable(cm_devs[i].addr, &wire);
	if (!ok && cm_is_loopback(dst_addr) && cm_loopback_dev() < 0)
		status = -ENODEV; /* no RDMA device on lo, as the kernel's */
	unbound = ok && c->state == ST_IDLE;
	if (unbound) /* the kernel binds it to the wildcard and a port now */
		c->state = ST_BOUND;
	pthread_mutex_unlock(&cm_mu);
	if (unbound) {
		struct sockaddr_storage any = {.ss_family = dst_addr->sa_family};
		uint16_t port = 0;
		int err = cm_reserve(c, i, (struct sockaddr *)&any, &port);
		if (err) {
			pthread_mutex_lock(&cm_mu);
			c->state = ST_IDLE;
			pthread_mutex_unlock(&cm_mu);
			return cm_fail(err);
		}
		pthread_mutex_lock(&cm_mu);
		any.ss_family = AF_INET;
		memcpy(&id->route.addr.src_storage, &any, sizeof(any));
		*port_of(&id->route.addr.src_storage) = htons(port);
		pthread_mutex_unlock(&cm_mu);
	}
	pthread_mutex_lock(&cm_mu);
	e = resolved(c, i, ok, status);
	pthread_mutex_unlock(&cm_mu);
	if (!e)
		return cm_fail(ENOMEM);
	if (ok)
		cm_give_pd(c);
	return cm_complete(c);
}

CM_EXPORT int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	struct cm_id *c = to_cid(id);
	struct cm_event *e;
	int ok;
	(void)timeout_ms;
	if (!id)
		return cm_fail(EINVAL);
	pthread_mutex_lock(&cm_mu);
	if (c->state != ST_ADDR_RESOLVED) {
		pthread_mutex_unlock(&cm_mu);
		return cm_fail(EINVAL);
	}
	ok = !cm_devs[c->dev].dead;
	if (ok) {
		c->state = ST_ROUTE_RESOLVED;
		id->route.num_paths = 1;
	}
	e = cm_event_new(c, ok ? RDMA_CM_EVENT_ROUTE_RESOLVED : RDMA_CM_EVENT_ROUTE_ERROR, ok ? 0 : -ENODEV);
	if (e)
		cm_event_queue(e);
	pthread_mutex_unlock(&cm_mu);
	if (!e)
		return cm_fail(ENOMEM);
	return cm_complete(c);
}

CM_EXPORT int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel)
{
	struct cm_id *c = to_cid(id);
	struct rdma_event_channel *old, *sync = NULL;
	if (!id)
		return cm_fail(EINVAL);
	if (!channel && !(sync = channel = rdma_create_event_channel()))
		return -1;
	pthread_mutex_lock(&cm_mu);
	old = id->channel;
	/* queued events move with the id */
	struct cm_channel *from = to_cch(old);
	struct cm_event **p, *e, *moved = NULL, **mt = &moved;
	for (p = from ? &from->head : NULL; p && (e = *p);) {
		if (e->owner == c) {
			*p = e->next;
			e->next = NULL;
			*mt = e;
			mt = &e->next;
			continue;
		}
		p = &e->next;
	}
	if (from) {
		from->tail = NULL;
		for (e = from->head; e; e = e->next)
			from->tail = e;
	}
	id->channel = channel;
	while ((e = moved)) {
		moved = e->next;
		e->next = NULL;
		c->refs--; /* cm_event_queue keeps the event's reference */
		c->refs++;
		cm_event_queue(e);
	}
	cm_timewait_arm(from); /* a timewait goes with the id */
	cm_timewait_arm(to_cch(channel));
	int was_sync = c->sync;
	c->sync = sync != NULL;
	pthread_mutex_unlock(&cm_mu);
	if (was_sync)
		rdma_destroy_event_channel(old);
	return 0;
}

CM_EXPORT int rdma_set_option(struct rdma_cm_id *id, int level, int optname, void *optval, size_t optlen)
{
	struct cm_id *c = to_cid(id);
	if (!id || !optval)
		return cm_fail(EINVAL);
	if (level == RDMA_OPTION_ID && optname == RDMA_OPTION_ID_TOS && optlen == sizeof(uint8_t))
		c->tos = *(uint8_t *)optval;
	else if (level == RDMA_OPTION_ID && optname == RDMA_OPTION_ID_REUSEADDR && optlen == sizeof(int))
		c->reuse = *(int *)optval;
	else if (level == RDMA_OPTION_ID && optname == RDMA_OPTION_ID_AFONLY && optlen == sizeof(int))
		return 0;
	else if (level == RDMA_OPTION_ID && optname == RDMA_OPTION_ID_ACK_TIMEOUT && optlen == sizeof(uint8_t))
		c->ack_timeout = *(uint8_t *)optval;
	else if (level == RDMA_OPTION_IB && optname == RDMA_OPTION_IB_PATH)
		return 0; /* RoCEv2: the path is the IP route */
	else
		return cm_fail(ENOSYS);
	return 0;
}

CM_EXPORT uint16_t rdma_get_src_port(struct rdma_cm_id *id)
{
	struct sockaddr *s = &id->route.addr.src_addr;
	return s->sa_family == AF_INET6 ? ((struct sockaddr_in6 *)s)->sin6_port : ((struct sockaddr_in *)s)->sin_port;
}

CM_EXPORT uint16_t rdma_get_dst_port(struct rdma_cm_id *id)
{
	struct sockaddr *s = &id->route.addr.dst_addr;
	return s->sa_family == AF_INET6 ? ((struct sockaddr_in6 *)s)->sin6_port : ((struct sockaddr_in *)s)->sin_port;
}
