/* Completion queues and completion channels. Polling reads the ring the
 * daemon fills, with no system call (a KICK_CQ notice only when the daemon
 * waits for room). A channel is an epoll set of its CQs' notify eventfds
 * (the daemon writes one when an armed CQ gets a completion) and of the
 * control socket, so a daemon that dies wakes ibv_get_cq_event, which
 * then fails instead of hanging. */
#include "rnic.h"

#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/mman.h>

int rnic_map_fd(int fd, size_t len, uint8_t **out)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return errno;
	*out = p;
	return 0;
}

RNIC_EXPORT struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	struct rnic_context *c = to_rctx(context);
	struct ibv_comp_channel *ch = calloc(1, sizeof(*ch));
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
	if (!ch)
		return errno = ENOMEM, NULL;
	ch->context = context;
	ch->fd = epoll_create1(EPOLL_CLOEXEC);
	if (ch->fd < 0 || epoll_ctl(ch->fd, EPOLL_CTL_ADD, c->conn.fd, &ev) < 0) {
		int err = errno;
		if (ch->fd >= 0)
			close(ch->fd);
		free(ch);
		return errno = err, NULL;
	}
	return ch;
}

RNIC_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	if (channel->refcnt)
		return EBUSY;
	close(channel->fd);
	free(channel);
	return 0;
}

/* cq_reply finds the CREATE_CQ reply's ring in the session's ring chunks
 * (mapping its chunk if the reply brings it) and takes the notify
 * eventfd, the reply's last descriptor. The caller holds ring_mu. */
static int cq_reply(struct rnic_context *c, struct rnic_cq *q, struct rnic_reply *rep)
{
	struct rbuf r;
	int fdi = 0, err;
	r_init(&r, rep->body, rep->len);
	q->h = r_u32(&r);
	q->slots = r_u32(&r);
	q->cap = r_u32(&r);
	if (q->slots == 0 || (q->slots & (q->slots - 1)) || q->slots > 1u << 21 || q->cap == 0 || q->cap > q->slots)
		return EPROTO;
	if ((err = rnic_read_place(&r, &q->place, RING_HDR + (uint64_t)q->slots * WC_SLOT)) || (err = r_done(&r)))
		return err;
	if ((err = rnic_take_rings(c, &q->place, rep, &fdi, 1, &q->ring)))
		return err;
	if (fdi != rep->nfds - 1)
		return EPROTO;
	q->notify_fd = rep->fds[fdi];
	rep->fds[fdi] = -1;
	q->cons = ld32(q->ring, CQ_CONS);
	return rnic_set_nonblock(q->notify_fd);
}

struct rnic_cq *rnic_create_cq(struct rnic_context *c, int cqe, struct ibv_comp_channel *ch)
{
	struct rnic_reply rep;
	struct rnic_cq *q;
	struct wbuf w;
	int err;

	if (cqe <= 0 || (uint64_t)cqe > c->attr.max_cqe)
		return errno = EINVAL, NULL;
	if (!(q = calloc(1, sizeof(*q))))
		return errno = ENOMEM, NULL;
	w_init(&w);
	w_u32(&w, (uint32_t)cqe);
	pthread_mutex_lock(&c->ring_mu);
	if ((err = ctx_call(c, OP_CREATE_CQ, &w, NULL, 0, &rep))) {
		pthread_mutex_unlock(&c->ring_mu);
		free(q);
		return errno = err, NULL;
	}
	q->notify_fd = -1;
	err = cq_reply(c, q, &rep);
	pthread_mutex_unlock(&c->ring_mu);
	if (!err && ch) {
		struct epoll_event ev = {.events = EPOLLIN, .data.ptr = q};
		if (epoll_ctl(ch->fd, EPOLL_CTL_ADD, q->notify_fd, &ev) < 0)
			err = errno;
	}
	rnic_close_fds(rep.fds, rep.nfds);
	if (err) {
		if (q->ring)
			rnic_release_rings(c, &q->place);
		if (q->notify_fd >= 0)
			close(q->notify_fd);
		rnic_handle_call(c, OP_DESTROY_CQ, q->h);
		free(q);
		return errno = err, NULL;
	}
	pthread_spin_init(&q->lock, PTHREAD_PROCESS_PRIVATE);
	q->cq.context = &c->vctx.context;
	q->cq.channel = ch;
	q->cq.cqe = (int)q->cap;
	q->cq.handle = q->h;
	pthread_mutex_init(&q->cq.mutex, NULL);
	pthread_cond_init(&q->cq.cond, NULL);
	if (ch) {
		pthread_mutex_lock(&c->vctx.context.mutex);
		ch->refcnt++;
		pthread_mutex_unlock(&c->vctx.context.mutex);
	}
	rnic_obj_add(c, OBJ_CQ, q->h, q);
	return q;
}

RNIC_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
					 struct ibv_comp_channel *channel, int comp_vector)
{
	struct rnic_cq *q;
	if (comp_vector < 0 || comp_vector >= context->num_comp_vectors)
		return errno = EINVAL, NULL;
	if (!(q = rnic_create_cq(to_rctx(context), cqe, channel)))
		return NULL;
	q->cq.cq_context = cq_context;
	return (struct ibv_cq *)&q->cq;
}

RNIC_EXPORT int ibv_destroy_cq(struct ibv_cq *cq)
{
	struct rnic_cq *q = (struct rnic_cq *)cq;
	struct rnic_context *c = to_rctx(cq->context);
	int err = rnic_handle_call(c, OP_DESTROY_CQ, q->h);
	if (err && !c->conn.dead)
		return err;
	rnic_obj_del(c, OBJ_CQ, q->h);
	if (cq->channel) {
		epoll_ctl(cq->channel->fd, EPOLL_CTL_DEL, q->notify_fd, NULL);
		pthread_mutex_lock(&cq->context->mutex);
		cq->channel->refcnt--;
		pthread_mutex_unlock(&cq->context->mutex);
	}
	close(q->notify_fd);
	rnic_release_rings(c, &q->place);
	pthread_spin_destroy(&q->lock);
	pthread_mutex_destroy(&cq->mutex);
	pthread_cond_destroy(&cq->cond);
	free(q);
	return 0;
}

static uint32_t get32(const uint8_t *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }

static uint64_t get64(const uint8_t *p) { return get32(p) | (uint64_t)get32(p + 4) << 32; }

/* wc_from_slot decodes a completion slot (proto/wc.go) into wc. The
 * immediate is kept as the wire has it (network order), as ibv_wc wants. */
void rnic_wc_from_slot(const uint8_t *s, struct ibv_wc *wc)
{
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = get64(s);
	wc->status = (enum ibv_wc_status)s[8];
	wc->opcode = (enum ibv_wc_opcode)s[9];
	wc->wc_flags = s[10];
	wc->vendor_err = get32(s + 12);
	wc->byte_len = get32(s + 16);
	if (wc->wc_flags & IBV_WC_WITH_INV)
		wc->invalidated_rkey = get32(s + 24);
	else
		wc->imm_data = htobe32(get32(s + 20));
	wc->qp_num = get32(s + 28);
	wc->src_qp = get32(s + 32);
	wc->pkey_index = (uint16_t)(s[36] | s[37] << 8);
}

/* kick tells the daemon there is room again, if it waits for it. */
void rnic_cq_kick(struct rnic_cq *q)
{
	uint32_t m = ld32(q->ring, CQ_MOVER);
	struct rnic_context *c;
	struct wbuf w;
	if (!(m & MOVER_WANTS_SPACE) ||
	    !__atomic_compare_exchange_n(ring_u32(q->ring, CQ_MOVER), &m, m & ~(uint32_t)MOVER_WANTS_SPACE, 0,
					 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		return;
	c = to_rctx(q->cq.context);
	w_init(&w);
	w_u32(&w, q->h);
	pthread_mutex_lock(&c->conn.mu);
	rnic_notice(&c->conn, OP_KICK_CQ, &w);
	pthread_mutex_unlock(&c->conn.mu);
}

int rnic_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	struct rnic_cq *q = (struct rnic_cq *)cq;
	uint32_t avail;
	int k = 0;

	if (n <= 0)
		return 0;
	if (ld32(q->ring, CQ_PROD) == q->cons) {
		rnic_cq_idle(q);
		return 0;
	}
	pthread_spin_lock(&q->lock);
	avail = ld32(q->ring, CQ_PROD) - q->cons;
	if (avail > q->slots)
		avail = 0; /* a daemon writing nonsense */
	for (; k < n && (uint32_t)k < avail; k++) {
		rnic_wc_from_slot(q->ring + RING_HDR + (size_t)(q->cons & (q->slots - 1)) * WC_SLOT, &wc[k]);
		q->cons++;
	}
	if (k > 0)
		st32(q->ring, CQ_CONS, q->cons);
	q->empty_polls = 0;
	pthread_spin_unlock(&q->lock);
	if (k > 0)
		rnic_cq_kick(q);
	return k;
}

int rnic_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	struct rnic_cq *q = (struct rnic_cq *)cq;
	uint32_t none = ARM_NONE;
	int want_sol, mover_sol;

	if (solicited_only)
		/* an arm for any completion stays one */
		__atomic_compare_exchange_n(ring_u32(q->ring, CQ_ARM), &none, ARM_SOLICITED, 0, __ATOMIC_SEQ_CST,
					    __ATOMIC_SEQ_CST);
	else
		st32(q->ring, CQ_ARM, ARM_NEXT);
	want_sol = ld32(q->ring, CQ_ARM) == ARM_SOLICITED;
	mover_sol = (ld32(q->ring, CQ_MOVER) & MOVER_SOLICITED) != 0;
	if (want_sol != mover_sol)
		/* the daemon's CQ is armed for the other kind: re-arm it
		 * before returning, so the arm is in force */
		return rnic_handle_call(to_rctx(cq->context), OP_ARM_CQ, q->h);
	return 0;
}

RNIC_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
	struct rnic_context *c = to_rctx(channel->context);
	int nonblock = fcntl(channel->fd, F_GETFL) & O_NONBLOCK;
	struct epoll_event ev;
	uint64_t v;

	for (;;) {
		int n = epoll_wait(channel->fd, &ev, 1, nonblock ? 0 : -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0) {
			errno = EAGAIN;
			return -1;
		}
		if (ev.data.ptr) {
			struct rnic_cq *q = ev.data.ptr;
			if (read(q->notify_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
				return -1;
			*cq = (struct ibv_cq *)&q->cq;
			*cq_context = q->cq.cq_context;
			return 0;
		}
		/* the control socket: an event to queue, or the daemon gone */
		pthread_mutex_lock(&c->conn.mu);
		rnic_poll_events(&c->conn);
		n = c->conn.dead;
		pthread_mutex_unlock(&c->conn.mu);
		if (n) {
			errno = EIO;
			return -1;
		}
		if (nonblock) {
			errno = EAGAIN;
			return -1;
		}
	}
}

RNIC_EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += nevents;
	pthread_cond_signal(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}
