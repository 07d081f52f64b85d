/* SPDX-License-Identifier: BSD-2-Clause */
/* Completion channels (proto/chanevents.go): one
 * descriptor per channel, none per CQ, as with the kernel's. The
 * channel's fd is the library's end of a Unix stream socketpair whose
 * other end the daemon keeps: it sends a byte on it when an armed CQ on
 * the channel fires, after it set the CQ's slot in the channel's event
 * set. The two ends are distinct open files, so the program may make its
 * fd blocking or not (fcntl) and the daemon's sends never wait on it.
 * ibv_get_cq_event reads the bytes, then takes the set into the
 * library's queue (chanqueue.c), and returns one CQ per call; while
 * events stay queued it leaves one byte unread, so that poll(2) on
 * the fd says readable as long as ibv_get_cq_event has an event to give.
 * The converse is not exact: a slot taken from the set between the
 * daemon's setting it and its send leaves the fd readable with no event
 * (a spurious wakeup: ibv_get_cq_event then waits, or says EAGAIN on an
 * O_NONBLOCK fd).
 * A blocking wait also watches the control socket, so a daemon that dies
 * wakes ibv_get_cq_event, which then fails instead of hanging. */
#include "rnic.h"

#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>


/* chan_reply takes CREATE_CHANNEL's reply: the event set in the session's
 * ring chunks (mapping its chunk if the reply brings it) and the socket,
 * the reply's last descriptor. The caller holds ring_mu. */
static int chan_reply(struct rnic_context *c, struct rnic_channel *ch, struct rnic_reply *rep)
{
	struct rbuf r;
	uint8_t *mem;
	int fdi = 0, err, fl;
	r_init(&r, rep->body, rep->len);
	if ((err = rnic_read_channel(&r, &ch->h, &ch->place)) ||
	    (err = rnic_take_rings(c, &ch->place, rep, &fdi, 1, &mem)))
		return err;
	ch->set = (uint64_t *)(void *)mem;
	if (fdi != rep->nfds - 1)
		return EPROTO;
	ch->ch.fd = rep->fds[fdi];
	rep->fds[fdi] = -1;
	/* The daemon made both ends non-blocking; this end is the
	 * program's, blocking until it chooses otherwise (fcntl), as with
	 * the kernel's channel. The daemon's end is its own open file. */
	if ((fl = fcntl(ch->ch.fd, F_GETFL)) < 0 || fcntl(ch->ch.fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
		return errno;
	return 0;
}

/* chan_undo frees what a failed create got. */
static void chan_undo(struct rnic_context *c, struct rnic_channel *ch)
{
	if (ch->ch.fd >= 0)
		close(ch->ch.fd);
	if (ch->set)
		rnic_release_rings(c, &ch->place);
	if (ch->h)
		rnic_handle_call(c, RNICD_OP_DESTROY_CHANNEL, ch->h);
	free(ch);
}

RNIC_EXPORT struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	struct rnic_context *c = to_rctx(context);
	struct rnic_channel *ch = calloc(1, sizeof(*ch));
	struct rnic_reply *rep = malloc(sizeof(*rep));
	struct wbuf w;
	int err;

	if (!ch || !rep) {
		free(ch);
		free(rep);
		return errno = ENOMEM, NULL;
	}
	ch->ch.context = context;
	ch->ch.fd = -1;
	w_init(&w);
	pthread_mutex_lock(&c->ring_mu);
	if (!(err = ctx_call(c, RNICD_OP_CREATE_CHANNEL, &w, NULL, 0, rep))) {
		err = chan_reply(c, ch, rep);
		rnic_close_fds(rep->fds, rep->nfds);
	}
	pthread_mutex_unlock(&c->ring_mu);
	free(rep);
	if (err) {
		chan_undo(c, ch);
		return errno = err, NULL;
	}
	pthread_mutex_init(&ch->mu, NULL);
	return &ch->ch;
}

RNIC_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	struct rnic_channel *ch = to_rchan(channel);
	struct rnic_context *c = to_rctx(channel->context);
	int busy, err;

	pthread_mutex_lock(&channel->context->mutex);
	busy = channel->refcnt;
	pthread_mutex_unlock(&channel->context->mutex);
	if (busy)
		return EBUSY;
	err = rnic_handle_call(c, RNICD_OP_DESTROY_CHANNEL, ch->h);
	if (err && !c->conn.dead)
		return err;
	close(channel->fd);
	rnic_release_rings(c, &ch->place);
	rnic_chan_free(ch);
	pthread_mutex_destroy(&ch->mu);
	free(ch);
	return 0;
}

/* pending_bytes is the number of wake-up bytes unread on fd. */
static int pending_bytes(int fd)
{
	int n = 0;
	if (ioctl(fd, FIONREAD, &n) < 0)
		return 0;
	return n;
}

/* drain reads n wake-up bytes, or fewer if fewer are there. MSG_DONTWAIT:
 * it never blocks, whatever the program made of O_NONBLOCK. */
static void drain(int fd, int n)
{
	char buf[256];
	while (n > 0) {
		ssize_t k = recv(fd, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf), MSG_DONTWAIT);
		if (k <= 0)
			return;
		n -= (int)k;
	}
}

/* take_fired takes the set into the queue, reading first all but one
 * of the bytes that are unread when it starts, and returns their number.
 * Only those bytes are ever read: each was sent before the take began,
 * for a slot set before it, so a slot the take misses came with a byte
 * sent after (left unread), or with a send that found the socket full
 * (its bytes left unread too, all but the one settle may read). The
 * byte kept back keeps the fd readable while the queue is looked at.
 * The caller holds ch->mu: only the library reads the socket. */
static int take_fired(struct rnic_channel *ch)
{
	int n = pending_bytes(ch->ch.fd);
	if (n > 1)
		drain(ch->ch.fd, n - 1);
	rnic_chan_collect(ch);
	return n;
}

/* settle reads the byte take_fired kept back once no event stays
 * queued; while events stay queued it stays, and poll(2) says readable. */
static void settle(struct rnic_channel *ch, int kept)
{
	if (ch->len == 0 && kept > 0)
		drain(ch->ch.fd, 1);
}

/* next_event returns the oldest event's CQ and its context, or NULL.
 * Cancellation is held off meanwhile: a thread cancelled in
 * ibv_get_cq_event (rping cancels its CQ thread there) must not leave
 * the mutex held or an event taken from the set and not queued. */
static struct rnic_cq *next_event(struct rnic_channel *ch, void **cq_context)
{
	struct rnic_cq *q;
	int old, kept;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	pthread_mutex_lock(&ch->mu);
	kept = take_fired(ch);
	if ((q = rnic_chan_pop(ch)))
		*cq_context = q->cq.cq_context;
	settle(ch, kept);
	pthread_mutex_unlock(&ch->mu);
	pthread_setcancelstate(old, NULL);
	return q;
}

void rnic_chan_detach(struct rnic_cq *q)
{
	struct rnic_channel *ch = q->chan;
	int old;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	pthread_mutex_lock(&ch->mu);
	/* Off first, then the set taken: a fire of its slot still there
	 * goes with it, not to the next CQ the daemon gives the slot. */
	rnic_chan_remove(ch, q);
	settle(ch, take_fired(ch));
	pthread_mutex_unlock(&ch->mu);
	pthread_setcancelstate(old, NULL);
}

/* wait_event waits until the channel's socket or the control socket
 * polls readable, or only looks when nonblock. It returns 0 (look for an
 * event again), EAGAIN (nonblock, nothing readable), EIO (the daemon is
 * gone) or poll's errno: EINTR too, as the kernel's read of the channel
 * fd gives it to a program whose signal handler is not SA_RESTART (qperf
 * ends a test on SIGALRM while it waits for a completion). */
static int wait_event(struct rnic_channel *ch, struct rnic_context *c, int nonblock)
{
	struct pollfd p[2] = {{.fd = ch->ch.fd, .events = POLLIN}, {.fd = c->conn.fd, .events = POLLIN}};
	int n = poll(p, 2, nonblock ? 0 : -1), dead, old;
	if (n < 0)
		return errno;
	if (p[1].revents) {
		/* an event to queue, or the daemon gone */
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
		pthread_mutex_lock(&c->conn.mu);
		rnic_poll_events(&c->conn);
		dead = c->conn.dead;
		pthread_mutex_unlock(&c->conn.mu);
		pthread_setcancelstate(old, NULL);
		if (dead)
			return EIO;
	}
	return nonblock && !(p[0].revents & POLLIN) ? EAGAIN : 0;
}

RNIC_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
	struct rnic_channel *ch = to_rchan(channel);
	struct rnic_context *c = to_rctx(channel->context);
	int nonblock = fcntl(channel->fd, F_GETFL) & O_NONBLOCK;
	struct rnic_cq *q;
	void *ctx = NULL;
	int err;

	for (int tries = 0;; tries++) {
		if ((q = next_event(ch, &ctx))) {
			*cq = ibv_cq_ex_to_cq(&q->cq);
			*cq_context = ctx;
			return 0;
		}
		if (nonblock && tries > 0)
			err = EAGAIN;
		else
			err = wait_event(ch, c, nonblock);
		if (err) {
			errno = err;
			return -1;
		}
	}
}
