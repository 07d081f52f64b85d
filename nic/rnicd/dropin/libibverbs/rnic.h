/* SPDX-License-Identifier: BSD-2-Clause */
/* Internal declarations of rnic's drop-in libibverbs.so.1: the wire of
 * rnicd's control protocol (nic/rnicd/proto), the connection, and the
 * objects behind the public verbs structures. Nothing here is exported:
 * the library is built with -fvisibility=hidden and exports only the
 * symbols of libibverbs.map. */
#ifndef RNIC_DROPIN_H
#define RNIC_DROPIN_H

#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <infiniband/verbs.h>

#include "rn_container.h"
#include "rnicd_proto.h"

#define RNIC_EXPORT __attribute__((visibility("default")))

/* IBTA 1.5's FLUSH as rdma-core 45 and later name it; the headers this
 * library is built with (rdma-core 44) know ATOMIC WRITE only. The values
 * are the kernel ABI's, so a program built with newer headers and ours
 * agree. */
#define RNIC_WR_FLUSH 14 /* IBV_WR_FLUSH */
#define RNIC_QP_EX_WITH_FLUSH (1ULL << 11) /* IBV_QP_EX_WITH_FLUSH */
#define RNIC_ACCESS_FLUSH_GLOBAL (1U << 8) /* IBV_ACCESS_FLUSH_GLOBAL */
#define RNIC_ACCESS_FLUSH_PERSISTENT (1U << 9) /* IBV_ACCESS_FLUSH_PERSISTENT */
#define RNIC_FLUSH_GLOBAL 1U /* IBV_FLUSH_GLOBAL, a placement type */
#define RNIC_FLUSH_PERSISTENT 2U /* IBV_FLUSH_PERSISTENT */
#define RNIC_FLUSH_RANGE 0U /* IBV_FLUSH_RANGE, a selectivity level */
#define RNIC_FLUSH_MR 1U /* IBV_FLUSH_MR */
/* device_cap_flags_ex bits (IB_UVERBS_DEVICE_*) */
#define RNIC_DEVICE_FLUSH_GLOBAL (1ULL << 38)
#define RNIC_DEVICE_FLUSH_PERSISTENT (1ULL << 39)
#define RNIC_DEVICE_ATOMIC_WRITE (1ULL << 40)

/* ibv_wr_flush's entry in struct ibv_qp_ex of rdma-core 45 and later,
 * the member right after wr_atomic_write. */
typedef void (*rnic_wr_flush_fn)(struct ibv_qp_ex *qp, uint32_t rkey, uint64_t remote_addr, size_t len,
				 uint8_t type, uint8_t level);

/* The 33 names that also have an IBVERBS_1.0 compat entry (compat.c):
 * their definitions here are the default version, IBVERBS_1.1. "@@@"
 * makes a name the default where it is defined and leaves other objects
 * alone. */
#define RNIC_V11(n) __asm__(".symver " #n "," #n "@@@IBVERBS_1.1");
RNIC_V11(ibv_ack_async_event)
RNIC_V11(ibv_ack_cq_events)
RNIC_V11(ibv_alloc_pd)
RNIC_V11(ibv_attach_mcast)
RNIC_V11(ibv_close_device)
RNIC_V11(ibv_create_ah)
RNIC_V11(ibv_create_cq)
RNIC_V11(ibv_create_qp)
RNIC_V11(ibv_create_srq)
RNIC_V11(ibv_dealloc_pd)
RNIC_V11(ibv_dereg_mr)
RNIC_V11(ibv_destroy_ah)
RNIC_V11(ibv_destroy_cq)
RNIC_V11(ibv_destroy_qp)
RNIC_V11(ibv_destroy_srq)
RNIC_V11(ibv_detach_mcast)
RNIC_V11(ibv_free_device_list)
RNIC_V11(ibv_get_async_event)
RNIC_V11(ibv_get_cq_event)
RNIC_V11(ibv_get_device_guid)
RNIC_V11(ibv_get_device_list)
RNIC_V11(ibv_get_device_name)
RNIC_V11(ibv_modify_qp)
RNIC_V11(ibv_modify_srq)
RNIC_V11(ibv_open_device)
RNIC_V11(ibv_query_device)
RNIC_V11(ibv_query_gid)
RNIC_V11(ibv_query_pkey)
RNIC_V11(ibv_query_port)
RNIC_V11(ibv_query_qp)
RNIC_V11(ibv_query_srq)
RNIC_V11(ibv_reg_mr)
RNIC_V11(ibv_resize_cq)

/* A body being written: fixed buffer, little-endian fields. */
struct wbuf {
	uint8_t b[4096]; /* every request body is far smaller */
	size_t n;
	int overflow;
};

/* A body being read: never reads past the end; the first short field
 * sets err and every later one reads zero. */
struct rbuf {
	const uint8_t *b;
	size_t n, off;
	int err;
};

void w_init(struct wbuf *w);
void w_u8(struct wbuf *w, uint8_t v);
void w_u16(struct wbuf *w, uint16_t v);
void w_u32(struct wbuf *w, uint32_t v);
void w_u64(struct wbuf *w, uint64_t v);
void w_str(struct wbuf *w, const char *s);
void w_gid(struct wbuf *w, const uint8_t gid[16]);
void w_raw(struct wbuf *w, const void *p, size_t n);

void r_init(struct rbuf *r, const uint8_t *b, size_t n);
uint8_t r_u8(struct rbuf *r);
uint16_t r_u16(struct rbuf *r);
uint32_t r_u32(struct rbuf *r);
uint64_t r_u64(struct rbuf *r);
uint64_t r_int(struct rbuf *r);
/* r_str copies a length-prefixed string into out (cap bytes, NUL-ended). */
void r_str(struct rbuf *r, char *out, size_t cap);
void r_gid(struct rbuf *r, uint8_t gid[16]);
void r_raw(struct rbuf *r, void *p, size_t n);
/* r_done: 0 if every byte was read without error, else EPROTO. */
int r_done(const struct rbuf *r);

/* An asynchronous event as the daemon sent it (proto.Event). */
struct rnic_event {
	uint8_t type, object, port;
	uint32_t handle;
};

#define RNIC_EVQ 256

/* Empty polls of a CQ in a row before each further one yields the CPU. */
#ifndef RNIC_SPIN_POLLS
#define RNIC_SPIN_POLLS 16
#endif

/* The control connection of one context. Requests are serialised by mu
 * (one round trip at a time); events read meanwhile are queued and the
 * queue's eventfd made readable, so async_fd (an epoll set of the socket
 * and that eventfd) polls readable whenever an event may be had. */
struct rnic_conn {
	int fd;
	int evq_fd;
	pthread_mutex_t mu;
	uint32_t seq;
	int dead;
	int fatal_sent;
	int lost_fds; /* the last message received lost its descriptors (MSG_CTRUNC) */
	struct rnic_event evq[RNIC_EVQ];
	unsigned evq_head, evq_len;
	uint8_t rx[RNICD_MAX_MESSAGE];
	uint8_t txh[RNICD_HEADER_LEN + 4096];
};

/* The socket path: $RNIC_SOCKET, else $XDG_RUNTIME_DIR/rnic/rnicd.sock for
 * a user other than root, else /run/rnic/rnicd.sock (rnicd's own rule). */
void rnic_socket_path(char *out, size_t cap);
/* Connects and checks the daemon's credentials; fills errmsg on failure. */
int rnic_connect(const char *path, int *fd, char *errmsg, size_t cap);
int rnic_conn_init(struct rnic_conn *c, int fd);
void rnic_conn_close(struct rnic_conn *c);

/* rnic_call sends body w as a request op with fds, and waits for the
 * reply: its body into reply (cap bytes; *len set), its descriptors into
 * rfds (*nrfds, at most RNICD_MAX_FDS). Returns 0 or an errno value.
 * Caller holds c->mu. */
int rnic_call(struct rnic_conn *c, uint16_t op, const struct wbuf *w, const int *fds, int nfds,
	      uint8_t *reply, size_t cap, size_t *len, int *rfds, int *nrfds);
/* rnic_notice sends w as a notice (no reply). Caller holds c->mu. */
int rnic_notice(struct rnic_conn *c, uint16_t op, const struct wbuf *w);
/* rnic_poll_events reads whatever the socket holds without blocking,
 * queueing events. Caller holds c->mu. */
void rnic_poll_events(struct rnic_conn *c);
int rnic_status_errno(uint32_t st);

/* Device attributes (proto.PutDeviceAttr / PutPortAttr). */
struct rnic_dev_attr {
	char fw_ver[64]; /* ibv_device_attr.fw_ver's size: a longer one is cut */
	uint64_t node_guid, sys_image_guid, max_mr_size, page_size_cap;
	uint32_t vendor_id, vendor_part_id, hw_ver;
	uint64_t max_qp, max_qp_wr;
	uint32_t cap_flags;
	uint64_t max_sge, max_sge_rd, max_cq, max_cqe, max_mr, max_pd,
		max_qp_rd_atom, max_res_rd_atom, max_qp_init_rd_atom;
	uint8_t atomic_cap;
	uint64_t max_mw, max_ah, max_srq, max_srq_wr, max_srq_sge, max_pkeys;
	uint8_t local_ca_ack_delay, phys_port_cnt;
	uint64_t max_inline, max_msg_size;
	uint64_t cap_flags_ex; /* device_cap_flags_ex's bits above 31 */
	uint64_t max_mcast_grp, max_mcast_qp_attach, max_total_mcast_qp_attach;
};

struct rnic_port_attr {
	uint8_t state, max_mtu, active_mtu;
	uint64_t gid_tbl_len, max_msg_size, pkey_tbl_len;
	uint8_t phys_state, link_layer;
	uint64_t link_mtu;
	uint32_t bad_pkey_cntr, qkey_viol_cntr;
};

void r_dev_attr(struct rbuf *r, struct rnic_dev_attr *a);
struct rnic_context;
uint32_t rnic_gid_tbl_len(const struct rnic_context *c);
void r_port_attr(struct rbuf *r, struct rnic_port_attr *a);

struct rnic_device {
	struct ibv_device dev;
	char socket[108];
};

enum rnic_obj_kind { OBJ_QP = 1, OBJ_CQ = 2, OBJ_SRQ = 3 };

struct rnic_obj_ref {
	uint8_t kind;
	uint32_t handle;
	void *obj;
};

/* A ring chunk of the session's arena, mapped (chunks.c). */
struct rnic_chunk {
	uint32_t id;
	uint8_t *base;
	size_t len;
};

/* Where an object's rings lie (proto.RingPlace). */
struct rnic_place {
	uint32_t chunk;
	uint8_t own; /* the chunk is the object's alone: unmapped with it */
	uint64_t chunk_len, offset;
};

/* A context: the extended verbs_context (so the inline _ex verbs find
 * their ops), its connection and what OPEN said about the device.
 *
 * Lock order, outermost first; a thread holding one takes only those
 * below it:
 *   a CQ's lock (spinlock: a resize holds it over its round trip)
 *   ring_mu     (a create or resize, over its round trip and the mapping
 *                of a new chunk: replies naming a chunk arrive in order)
 *   conn.mu     (one round trip at a time; events read meanwhile are
 *                dispatched with it held: rdma_cm's to librdmacm's sink,
 *                which takes librdmacm's cm_mu below it)
 *   objs_mu, a channel's mu, the program-visible context->mutex and
 *   cq->mutex (leaves: nothing is taken under them)
 * The QP and SRQ spinlocks (sq_lock, rq_lock, an SRQ's lock) are leaves
 * too: posting takes nothing under them and rings the doorbell after
 * releasing them (rnic_ring_bell). librdmacm never calls into this library
 * with cm_mu held. */
struct rnic_context {
	struct verbs_context vctx;
	struct rnic_conn conn;
	struct rnic_dev_attr attr;
	struct rnic_port_attr port;
	uint8_t gids[RNICD_MAX_GIDS][16];
	unsigned ngids;
	int iwarp; /* the device's transport is iWARP: its GIDs are no RoCE GIDs */
	/* the session doorbell (proto/bell.go): summary words, then leaves */
	uint64_t *bell_area;
	int bell_fd;
	/* the ring chunks mapped (chunks.c); under ring_mu */
	pthread_mutex_t ring_mu;
	struct rnic_chunk *chunks;
	size_t nchunks, capchunks;
	/* handle → object, for events; under objs_mu */
	pthread_mutex_t objs_mu;
	struct rnic_obj_ref *objs;
	size_t nobjs, capobjs;
	uint64_t qp_gen; /* bumped as a QP goes: CQs' QP caches (rqdepth.c) go stale */
};


void rnic_obj_add(struct rnic_context *c, uint8_t kind, uint32_t h, void *obj);
void rnic_obj_del(struct rnic_context *c, uint8_t kind, uint32_t h);
void *rnic_obj_find(struct rnic_context *c, uint8_t kind, uint32_t h);

/* ctx_call: lock, run a request whose body fill() wrote to c->conn.tx,
 * unlock. Convenience for the many one-shot requests. */
struct rnic_reply {
	uint8_t body[8192];
	size_t len;
	int fds[RNICD_MAX_FDS];
	int nfds;
};
int ctx_call(struct rnic_context *c, uint16_t op, struct wbuf *body, const int *fds, int nfds,
	     struct rnic_reply *rep);

/* Objects. */
struct rnic_pd {
	struct ibv_pd pd;
	uint32_t h;
};

struct rnic_mr {
	struct ibv_mr mr;
	uint32_t h;
	unsigned access;
};

/* A memory window: the daemon's handle; mw.rkey is its rkey at allocation,
 * then (type 1) as of its last ibv_bind_mw (mw.c). */
struct rnic_mw {
	struct ibv_mw mw;
	uint32_t h;
};

struct rnic_channel;

struct rnic_cq {
	struct ibv_cq_ex cq; /* ibv_cq is its prefix */
	uint32_t h;
	uint8_t *ring;
	struct rnic_place place;
	uint32_t slots, cap;
	struct rnic_channel *chan; /* its completion channel, or NULL */
	uint32_t chan_slot;	   /* its slot in the channel's event set */
	uint32_t cons;
	uint32_t empty_polls;
	pthread_spinlock_t lock;
	/* the completion being read by the _ex API (start_poll/next_poll) */
	struct ibv_wc cur;
	int cur_valid;
	int dead;
	/* the ring a resize replaced, kept mapped until the next resize or
	 * the CQ's end: a poller's unlocked look may still read it */
	struct rnic_place retired;
	/* the QP of the last receive completion polled (rqdepth.c) */
	uint32_t seen_qpn;
	struct rnic_qp *seen_qp;
	uint64_t seen_gen;
};

struct rnic_ring {
	uint32_t slots, slot_size, cap;
	uint8_t *base;
};

struct rnic_srq {
	struct ibv_srq srq;
	uint32_t h;
	uint8_t *mem;
	struct rnic_place place;
	struct rnic_place retired_place; /* the ring before the last resize (srq_resize.c) */
	struct rnic_ring rq;
	uint32_t bell; /* its bit in the session doorbell */
	uint32_t prod;
	/* receives polled from CQs: the SRQ holds prod - done (rqdepth.c) */
	uint32_t done;
	uint32_t max_sge;
	uint32_t limit; /* armed limit, 0 once the event came */
	pthread_spinlock_t lock;
};

struct rnic_ah {
	struct ibv_ah ah;
	uint32_t h;
};

struct rnic_qp {
	struct ibv_qp_ex qpx; /* ibv_qp is its prefix */
	/* ibv_qp_ex's next member in newer headers: a program built with
	 * them calls ibv_wr_flush through it (checked in wr.c) */
	rnic_wr_flush_fn wr_flush;
	uint32_t h;
	struct ibv_qp_cap cap;
	uint8_t *mem;
	struct rnic_place place;
	struct rnic_ring sq, rq;
	uint32_t bell; /* its bit in the session doorbell */
	uint32_t sq_prod, rq_prod;
	/* receives polled from the CQ: the RQ holds rq_prod - rq_done (rqdepth.c) */
	uint32_t rq_done;
	pthread_spinlock_t sq_lock, rq_lock;
	/* ibv_wr_* state: WRs written since wr_start, the slot being built */
	int sig_all;
	uint32_t wr_first;
	uint8_t *wr_slot;
	enum ibv_wr_opcode wr_op;
	int wr_err;
};

/* From the public structures to the library's objects (rn_container.h). */
static inline struct rnic_context *to_rctx(struct ibv_context *c)
{
	return rn_container_of(c, struct rnic_context, vctx.context);
}
static inline struct rnic_device *to_rdev(struct ibv_device *d) { return rn_container_of(d, struct rnic_device, dev); }
static inline struct rnic_pd *to_rpd(struct ibv_pd *pd) { return rn_container_of(pd, struct rnic_pd, pd); }
static inline struct rnic_mr *to_rmr(struct ibv_mr *mr) { return rn_container_of(mr, struct rnic_mr, mr); }
static inline struct rnic_ah *to_rah(struct ibv_ah *ah) { return rn_container_of(ah, struct rnic_ah, ah); }
static inline struct rnic_srq *to_rsrq(struct ibv_srq *srq) { return rn_container_of(srq, struct rnic_srq, srq); }
/* An ibv_cq is the prefix of the ibv_cq_ex a CQ embeds (ibv_cq_ex_to_cq
 * casts the other way): both lead to the CQ. */
static inline struct rnic_cq *to_rcq_ex(struct ibv_cq_ex *cq) { return rn_container_of(cq, struct rnic_cq, cq); }
static inline struct rnic_cq *to_rcq(struct ibv_cq *cq) { return to_rcq_ex((struct ibv_cq_ex *)(void *)cq); }
static inline struct rnic_qp *to_rqp_ex(struct ibv_qp_ex *qp) { return rn_container_of(qp, struct rnic_qp, qpx); }
static inline struct rnic_qp *to_rqp(struct ibv_qp *qp) { return rn_container_of(qp, struct rnic_qp, qpx.qp_base); }
struct rnic_channel;
static inline struct rnic_channel *to_rchan(struct ibv_comp_channel *ch);

/* cqclean.c */
void rnic_cq_clean(struct rnic_cq *q, struct rnic_qp *qp);

/* rqdepth.c: the receive queue's depth, counted as mlx5 counts it */
void rnic_note_recv(struct rnic_cq *q, const struct ibv_wc *wc);
void rnic_count_recv(struct rnic_qp *p);
int rnic_rq_full(uint32_t prod, const uint32_t *done, uint32_t depth);
void rnic_rq_forget(struct rnic_qp *q);


/* A completion channel (proto/chanevents.go): the
 * library's end of the daemon's wake-up socket (the program's channel->fd) and an event set in the
 * session's arena with the doorbell's layout, one slot per CQ on the
 * channel. Fired slots are taken from the set into a queue of the
 * library's, from which ibv_get_cq_event returns one CQ per call. The
 * tables are indexed by slot and grow with the highest slot held; the
 * queue holds each slot at most once, with its count of events. */
struct rnic_channel {
	struct ibv_comp_channel ch; /* first: what the program holds */
	uint32_t h;
	uint64_t *set; /* RNICD_BELL_SUMMARY_WORDS summary words, then the leaves */
	struct rnic_place place;
	pthread_mutex_t mu; /* everything below */
	struct rnic_cq **cqs; /* by slot; NULL: no CQ */
	uint32_t *pending;    /* events queued, by slot */
	uint32_t *fifo;	      /* slots with events queued, oldest first (a ring of cap) */
	uint32_t cap, head, len;
	uint64_t dropped; /* fired slots that named no CQ of the channel */
};

static inline struct rnic_channel *to_rchan(struct ibv_comp_channel *ch)
{
	return rn_container_of(ch, struct rnic_channel, ch);
}


/* Slot fields (the RNICD_SEND_*, RNICD_RECV_*, RNICD_SGE_* and RNICD_WC_*
 * offsets of rnicd_proto.h) are little-endian, as this host is; slots are
 * byte arrays, so the fields go through memcpy, never a cast. */
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the ring slots are little-endian; this code reads and writes host-order fields"
#endif
static inline void put16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }
static inline void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static inline void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static inline uint16_t get16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return v;
}
static inline uint32_t get32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}
static inline uint64_t get64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

/* The ring header's indices and flags are shared with the daemon, which
 * accesses them with Go's sync/atomic (sequentially consistent); these
 * use __ATOMIC_SEQ_CST for the same single total order, which the
 * doorbell handshake (rnic_ring_bell) and the CQ's arm (proto/ring.go)
 * rely on. A slot is written with plain stores before the producer
 * index's store publishes it, and read with plain loads after the load
 * of the daemon's producer index (seq_cst orders them as release and
 * acquire would). Each header field is 4-byte aligned in its own cache
 * line (RNICD_CACHE_LINE), so the accesses are lock-free. */
static inline uint32_t *ring_u32(uint8_t *base, size_t off) { return (uint32_t *)(void *)(base + off); }
static inline uint32_t ld32(uint8_t *base, size_t off)
{
	return __atomic_load_n(ring_u32(base, off), __ATOMIC_SEQ_CST);
}
static inline void st32(uint8_t *base, size_t off, uint32_t v)
{
	__atomic_store_n(ring_u32(base, off), v, __ATOMIC_SEQ_CST);
}

/* rnic_cq_idle: a poll found the CQ empty. A program spinning on an empty
 * CQ competes for the CPU with the daemon that would fill it (rxe's work
 * runs in the kernel instead): after a few empty polls in a row, each one
 * gives the CPU away. Polls that find completions make no system call. */
static inline void rnic_cq_idle(struct rnic_cq *q)
{
	if (++q->empty_polls > RNIC_SPIN_POLLS)
		sched_yield();
}

int rnic_map_fd(int fd, size_t len, uint8_t **out);
/* The completion channel's parts (channel.c). rnic_read_channel decodes
 * CREATE_CHANNEL's reply, rnic_read_cq CREATE_CQ_ON's. rnic_chan_add puts
 * q on its slot (ENOMEM, or EPROTO for a slot out of range or held),
 * rnic_chan_remove takes it off with the events queued for it.
 * rnic_chan_collect takes the fired slots from the set into the queue,
 * rnic_chan_pop returns the oldest queued event's CQ (or NULL); the
 * caller of these three holds ch->mu. rnic_chan_detach is
 * rnic_chan_remove for a CQ being destroyed, with ch->mu and the
 * channel's socket taken care of (channel.c). */
int rnic_read_channel(struct rbuf *r, uint32_t *h, struct rnic_place *p);
int rnic_read_cq(struct rbuf *r, struct rnic_cq *q);
int rnic_chan_add(struct rnic_channel *ch, struct rnic_cq *q);
void rnic_chan_remove(struct rnic_channel *ch, struct rnic_cq *q);
void rnic_chan_collect(struct rnic_channel *ch);
struct rnic_cq *rnic_chan_pop(struct rnic_channel *ch);
void rnic_chan_free(struct rnic_channel *ch);
void rnic_chan_detach(struct rnic_cq *q);
struct rnic_cq *rnic_create_cq(struct rnic_context *c, int cqe, struct ibv_comp_channel *ch);
void rnic_wc_from_slot(const uint8_t *s, struct ibv_wc *wc);
void rnic_cq_kick(struct rnic_cq *q);
void rnic_close_fds(const int *fds, int n);
int rnic_set_nonblock(int fd);

/* context ops */
int rnic_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
int rnic_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int rnic_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
int rnic_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
int rnic_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
struct ibv_cq_ex *rnic_create_cq_ex(struct ibv_context *ctx, struct ibv_cq_init_attr_ex *attr);
int rnic_query_device_ex(struct ibv_context *ctx, const struct ibv_query_device_ex_input *in,
			 struct ibv_device_attr_ex *attr, size_t size);
int rnic_query_port_ex(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr, size_t len);
struct ibv_qp *rnic_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr);
void rnic_qp_ex_init(struct rnic_qp *q);
int rnic_read_layout(struct rbuf *r, struct rnic_ring *sq, struct rnic_ring *rq);
int rnic_place_rings(struct rnic_context *c, struct rbuf *r, struct rnic_reply *rep, int *fdi,
		     struct rnic_ring *sq, struct rnic_ring *rq, struct rnic_place *p, uint8_t **mem);

/* The ring chunks (chunks.c). rnic_read_place reads a proto.RingPlace and
 * checks that rings of size bytes lie inside its chunk. rnic_take_rings
 * returns the rings at p, mapping its chunk if it is new: from
 * rep->fds[*fdi] (advancing *fdi) when the reply has one more descriptor
 * there than the others it carries, else fetched with RING_CHUNK. The
 * caller holds ring_mu.
 * rnic_release_rings unmaps an own chunk; rnic_close_chunks every one. */
int rnic_read_place(struct rbuf *r, struct rnic_place *p, uint64_t size);
int rnic_take_rings(struct rnic_context *c, const struct rnic_place *p, struct rnic_reply *rep, int *fdi, int others,
		    uint8_t **mem);
void rnic_release_rings(struct rnic_context *c, const struct rnic_place *p);
void rnic_close_chunks(struct rnic_context *c);
void rnic_w_av(struct wbuf *w, const struct ibv_ah_attr *ah);
void rnic_r_av(struct rbuf *r, struct ibv_ah_attr *ah);
void rnic_ring_bell(struct rnic_context *c, uint8_t *mem, uint32_t bell);
void rnic_wait_recvs(struct rnic_context *c, uint8_t *mem, uint32_t prod);
int rnic_resize_srq(struct rnic_srq *s, uint32_t max_wr);
void rnic_refresh_state(struct rnic_qp *q);

/* Memory windows (mw.c): the context ops ibv_alloc_mw, ibv_dealloc_mw and
 * ibv_bind_mw call, and the BIND_MW WQE both posting paths write. */
struct ibv_mw *rnic_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int rnic_dealloc_mw(struct ibv_mw *mw);
int rnic_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *mw_bind);
int rnic_check_bind(struct ibv_qp *qp, const struct ibv_mw *mw, const struct ibv_mw_bind_info *info);
void rnic_put_bind(uint8_t *s, const struct ibv_mw *mw, uint32_t rkey, const struct ibv_mw_bind_info *info);

/* Memory: the arena (memory.c). */
int rnic_arena_share(void *addr, size_t len, int *fd);
int rnic_handle_call(struct rnic_context *c, uint16_t op, uint32_t h);
extern int rnic_fork_safe;

/* Events: the daemon's event, as ibv_async_event (async.c). */
void rnic_queue_event(struct rnic_conn *c, const struct rnic_event *e);

/* rdma_cm events go to librdmacm's sink (private.c). */
typedef void (*rnic_cm_sink_fn)(void *key, uint16_t op, const uint8_t *body, size_t n);
void rnic_cm_deliver(struct rnic_conn *c, uint16_t op, const uint8_t *body, size_t n);

#endif
