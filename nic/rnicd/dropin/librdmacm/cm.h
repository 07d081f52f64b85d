/* SPDX-License-Identifier: BSD-2-Clause */
/* Internal declarations of rnic's drop-in librdmacm.so.1: rdma_cm over
 * rnicd's CM ops (nic/rnicd/proto/cm.go), sent on the daemon session of
 * the rnic libibverbs context an id is bound to (the daemon binds QPs by
 * that session's handles). Nothing here is exported: the library is built
 * with -fvisibility=hidden and exports only librdmacm.map's symbols. No
 * thread of its own: whoever reads a context's socket (a verbs call, or
 * rdma_get_cm_event) hands CM events to the sink, which queues them on
 * the channel of their id. */
#ifndef RNIC_RDMACM_H
#define RNIC_RDMACM_H

#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include "rn_container.h"
#include "rnicd_proto.h"

#define CM_EXPORT __attribute__((visibility("default")))

/* rnic's libibverbs, version node RNIC_PRIVATE_1 (libibverbs/private.c). */
typedef void (*rnic_cm_sink_fn)(void *key, uint16_t op, const uint8_t *body, size_t n);
void rnic_private_cm_sink(rnic_cm_sink_fn fn);
void *rnic_private_cm_key(struct ibv_context *ctx);
int rnic_private_cm_fd(struct ibv_context *ctx);
int rnic_private_cm_call(struct ibv_context *ctx, uint16_t op, const void *body, size_t n, void *reply,
			 size_t cap, size_t *len);
int rnic_private_cm_poll(struct ibv_context *ctx);
uint32_t rnic_private_qp_handle(struct ibv_qp *qp);

/* Limits of librdmacm's own. */
enum {
	CM_MAX_REQ_PRIVATE = 56, /* a REQ's 92 after rdma_cm's 36-byte header */
	CM_MAX_DEVS = 16,
	/* requests pulled from the daemon's listener ahead of the program
	 * (its own queue holds 16): rdma_listen's backlog, 0 taking this */
	CM_DEFAULT_BACKLOG = 128,
	CM_MAX_BACKLOG = 1024,
	/* the IB CM's timewait on RoCE before TIMEWAIT_EXIT (timewait.c) */
	CM_TIMEWAIT_MS = 512,
};

/* Body codec (proto/codec.go): little-endian, length-prefixed blobs. */
struct cbuf {
	uint8_t b[512];
	size_t n;
	int err;
};
void c_u8(struct cbuf *w, uint8_t v);
void c_u16(struct cbuf *w, uint16_t v);
void c_u32(struct cbuf *w, uint32_t v);
void c_blob(struct cbuf *w, const void *p, size_t n);
void c_addr4(struct cbuf *w, const struct sockaddr *sa);

struct rdec {
	const uint8_t *b;
	size_t n, off;
	int err;
};
uint8_t d_u8(struct rdec *r);
uint16_t d_u16(struct rdec *r);
uint32_t d_u32(struct rdec *r);
/* d_blob: a blob of at most cap bytes into p; returns its length. */
size_t d_blob(struct rdec *r, void *p, size_t cap);
/* d_addrport: an address and port as a sockaddr (IPv4-mapped become v4). */
void d_addrport(struct rdec *r, struct sockaddr_storage *ss);

/* A device: an rnic libibverbs context, opened once for every id. */
struct cm_dev {
	struct ibv_context *verbs;
	void *key;
	int fd;
	struct in_addr addr; /* its first IPv4-mapped GID's address (RoCEv2 or iWARP) */
	int dead;
};

/* cm_mu guards everything below and every id. It is taken with a
 * libibverbs context's connection locked (the sink of CM events runs
 * while libibverbs reads the socket), so it is never held across a call
 * into libibverbs (cm_call, rdma_create_qp, ...): the order is the
 * connection's lock, then cm_mu. */
extern pthread_mutex_t cm_mu;
extern struct cm_dev cm_devs[CM_MAX_DEVS];
extern int cm_ndevs;
int cm_init(void);
int cm_dev_of_addr(const struct sockaddr *sa);
int cm_dev_of_verbs(struct ibv_context *v);

struct cm_id;
/* Binding (bind.c): loopback addresses and the daemon's port
 * reservations. */
int cm_is_loopback(const struct sockaddr *sa);
int cm_loopback_dev(void);
int cm_self_dst(const struct sockaddr *dst);
int cm_self_dev(const struct sockaddr *dst);
void cm_wire_addr(const struct sockaddr *dst, struct sockaddr_in *out);
int cm_reserve(struct cm_id *c, int dev, const struct sockaddr *addr, uint16_t *port);
void cm_unreserve(struct cm_id *c);

/* An event as handed out: the public event and the private data it
 * points to, until rdma_ack_cm_event. */
struct cm_mc;
struct cm_event {
	struct rdma_cm_event ev;
	uint8_t pd[RNICD_MAX_PRIVATE_DATA];
	struct cm_id *owner;
	struct cm_mc *mc; /* MULTICAST_JOIN: its group, until the program takes it */
	struct cm_event *next;
};

struct cm_channel {
	struct rdma_event_channel ch; /* ch.fd: epoll set of evfd and the devices' sockets */
	int evfd;
	int timerfd;   /* in ch.fd's set: the earliest timewait end of its ids */
	int waiters;   /* threads in rdma_get_cm_event */
	int destroyed; /* by rdma_destroy_event_channel, under a waiter */
	struct cm_event *head, *tail;
	struct cm_channel *next;
};

enum cm_state {
	ST_IDLE, ST_BOUND, ST_ADDR_QUERY, ST_ADDR_RESOLVED, ST_ROUTE_RESOLVED, ST_LISTEN,
	ST_CONNECT, ST_REQ_RCVD, ST_ACCEPT, ST_ESTABLISHED, ST_DISCONNECT, ST_DOWN,
};

struct cm_id {
	struct rdma_cm_id id; /* first: the public id is ours */
	enum cm_state state;
	int dev;                        /* index in cm_devs, -1: none yet */
	uint32_t listener[CM_MAX_DEVS]; /* daemon listener handles, 0: none */
	int rearm[CM_MAX_DEVS];         /* CM_GET_REQUESTs to send for that device */
	uint32_t req;                   /* the daemon's request handle (child ids) */
	uint32_t conn;                  /* the daemon's connection handle */
	uint32_t binding;               /* the daemon's port reservation, 0: none */
	int bind_dev;                   /* the device whose session holds it */
	int down_sent, timewait_sent, removal_sent, destroyed;
	long long timewait_due; /* CLOCK_MONOTONIC ms when TIMEWAIT_EXIT is due, 0: none */
	int refs;     /* events handed out or queued, async ops in flight */
	uint8_t tos, ack_timeout;
	int reuse;
	int sync;     /* no channel given: calls wait for their event */
	int backlog;
	struct ibv_qp_init_attr *child_attr; /* rdma_create_ep on a listener */
	/* an external QP (conn_param.qp_num, no id->qp): the REP came and
	 * c->conn names the connection rdma_establish completes */
	int awaiting_establish;
	struct cm_mc *mcs;                   /* multicast groups joined (mcast.c) */
	struct cm_id *next;
};

/* From the public structures to the library's objects (rn_container.h). */
static inline struct cm_id *to_cid(struct rdma_cm_id *id) { return rn_container_of(id, struct cm_id, id); }
static inline struct cm_channel *to_cch(struct rdma_event_channel *c)
{
	return rn_container_of(c, struct cm_channel, ch);
}
static inline struct cm_event *to_cev(struct rdma_cm_event *e) { return rn_container_of(e, struct cm_event, ev); }

extern struct cm_id *cm_ids;
extern struct cm_channel *cm_channels;

/* Events (channel.c). Caller holds cm_mu. */
struct cm_event *cm_event_new(struct cm_id *id, enum rdma_cm_event_type type, int status);
void cm_event_queue(struct cm_event *e);
void cm_id_unref(struct cm_id *id);
struct cm_id *cm_id_alloc(struct rdma_event_channel *ch, void *context, enum rdma_port_space ps,
			  enum ibv_qp_type qpt);
/* cm_complete: for a synchronous id, waits for its event (into id.event);
 * 0, or -1 with errno when the event says the call failed. */
int cm_complete(struct cm_id *id);
void cm_sink(void *key, uint16_t op, const uint8_t *body, size_t n);
int cm_channel_watch(struct cm_channel *ch);

/* Asynchronous requests (conn.c). */
enum cm_async_kind { AS_GET_REQUEST = 1, AS_ACCEPT, AS_CONNECT, AS_DISCONNECT, AS_RESOLVE_UD, AS_CONNECT_EXT };
int cm_async(struct cm_id *id, int dev, enum cm_async_kind kind, uint16_t op, struct cbuf *body);
void cm_on_result(int dev, const uint8_t *body, size_t n);
void cm_on_disconnected(int dev, const uint8_t *body, size_t n);
void cm_rearm(void);
/* cm_call sends a synchronous request on device dev (no lock held). */
int cm_call(int dev, uint16_t op, struct cbuf *body, void *reply, size_t cap, size_t *len);
void cm_close_listeners(struct cm_id *id);
int cm_on_iwarp(const struct cm_id *c);
void down_event(struct cm_id *c);

/* External QPs (external.c): rdma_init_qp_attr's RTR and RTS attributes
 * from the daemon, and rdma_establish. No lock held. */
int cm_ext_qp_attr(struct cm_id *c, struct ibv_qp_attr *a, int *mask);
int cm_ext_establish(struct cm_id *c);
int cm_decode_qp_attr(const uint8_t *b, size_t n, struct ibv_qp_attr *a, int *mask);
/* the connection's CM_RESULT at the REP: CONNECT_RESPONSE (conn.c). Caller holds cm_mu. */
void cm_on_response(struct cm_id *c, struct rdec *r);

/* cm_give_pd: id->pd once the id has a device (qp.c). No lock held. */
void cm_give_pd(struct cm_id *c);
/* A device's default PD, which ids get as id->pd (qp.c): made (no lock
 * held), or only looked up (the sink, giving it to a request's id). */
struct ibv_pd *cm_default_pd(int dev);
struct ibv_pd *cm_default_pd_peek(int dev);

/* Multicast (mcast.c). */
void cm_mc_taken(struct cm_event *e);
void cm_mc_free(struct cm_id *c);

/* TIMEWAIT_EXIT after the CM's timewait (timewait.c). Caller holds cm_mu. */
void timewait_exit(struct cm_id *c);
void cm_timewait_arm(struct cm_channel *ch);
void cm_timewait_fire(struct cm_channel *ch);

/* cm_trace: a line on stderr when RNIC_CM_TRACE is set (trace.c). */
__attribute__((format(printf, 1, 2))) void cm_trace(const char *fmt, ...);

/* errno + return -1, as librdmacm's calls do */
static inline int cm_fail(int err)
{
	errno = err;
	return -1;
}

#endif
