/* SPDX-License-Identifier: BSD-2-Clause */
/* The control connection to rnicd: the field codec of message bodies
 * (proto/codec.go), the socket, the daemon's credentials, request/reply
 * round trips and the queue of events that arrive in between. */
#include "rnic.h"
#include "rn_codec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sched.h>
#include <time.h>
#include <sys/un.h>

void w_init(struct wbuf *w) { w->n = 0; w->overflow = 0; }

void w_raw(struct wbuf *w, const void *p, size_t n)
{
	rn_put(w->b, sizeof(w->b), &w->n, &w->overflow, p, n);
}

static void w_le(struct wbuf *w, uint64_t v, int n)
{
	rn_put_le(w->b, sizeof(w->b), &w->n, &w->overflow, v, n);
}

void w_u8(struct wbuf *w, uint8_t v) { w_le(w, v, 1); }
void w_u16(struct wbuf *w, uint16_t v) { w_le(w, v, 2); }
void w_u32(struct wbuf *w, uint32_t v) { w_le(w, v, 4); }
void w_u64(struct wbuf *w, uint64_t v) { w_le(w, v, 8); }

void w_str(struct wbuf *w, const char *s)
{
	size_t n = strlen(s);
	w_u32(w, (uint32_t)n);
	w_raw(w, s, n);
}

/* A GID as the daemon's netip.Addr: family 6 and the 16 bytes (RoCEv2
 * GIDs of IPv4 addresses are IPv4-mapped, which the daemon keeps as
 * IPv6); the all-zero GID is "no address". */
void w_gid(struct wbuf *w, const uint8_t gid[16])
{
	static const uint8_t zero[16];
	w_u8(w, memcmp(gid, zero, 16) ? 6 : 0);
	w_raw(w, gid, 16);
}

void r_init(struct rbuf *r, const uint8_t *b, size_t n)
{
	r->b = b;
	r->n = n;
	r->off = 0;
	r->err = 0;
}

static const uint8_t *r_take(struct rbuf *r, size_t n)
{
	return rn_take(r->b, r->n, &r->off, &r->err, n);
}

static uint64_t r_le(struct rbuf *r, int n)
{
	return rn_take_le(r->b, r->n, &r->off, &r->err, n);
}

uint8_t r_u8(struct rbuf *r) { return (uint8_t)r_le(r, 1); }
uint16_t r_u16(struct rbuf *r) { return (uint16_t)r_le(r, 2); }
uint32_t r_u32(struct rbuf *r) { return (uint32_t)r_le(r, 4); }
uint64_t r_u64(struct rbuf *r) { return r_le(r, 8); }

/* r_int: a count or limit (proto Writer.Int): a uint64 within int32. */
uint64_t r_int(struct rbuf *r)
{
	uint64_t v = r_u64(r);
	if (v > 0x7fffffff) {
		r->err = 1;
		return 0;
	}
	return v;
}

void r_raw(struct rbuf *r, void *p, size_t n)
{
	const uint8_t *s = r_take(r, n);
	if (s)
		memcpy(p, s, n);
	else
		memset(p, 0, n);
}

void r_str(struct rbuf *r, char *out, size_t cap)
{
	uint32_t n = r_u32(r);
	const uint8_t *s = r_take(r, n);
	size_t k = 0;
	if (s && cap > 0) {
		k = n < cap - 1 ? n : cap - 1;
		memcpy(out, s, k);
	}
	if (cap > 0)
		out[k] = 0;
}

void r_gid(struct rbuf *r, uint8_t gid[16])
{
	uint8_t fam = r_u8(r);
	uint8_t b[16];
	r_raw(r, b, 16);
	memset(gid, 0, 16);
	if (fam == 6) {
		memcpy(gid, b, 16);
	} else if (fam == 4) {
		gid[10] = gid[11] = 0xff;
		memcpy(gid + 12, b, 4);
	}
}

int r_done(const struct rbuf *r) { return r->err || r->off != r->n ? EPROTO : 0; }

int rnic_status_errno(uint32_t st)
{
	switch (st) {
	case RNICD_STATUS_OK:
		return 0;
	case RNICD_STATUS_BUSY:
		return EBUSY;
	case RNICD_STATUS_NO_MEMORY:
	case RNICD_STATUS_QUEUE_FULL:
	case RNICD_STATUS_LIMIT:
		return ENOMEM;
	case RNICD_STATUS_NOT_SUPPORTED:
	case RNICD_STATUS_UNKNOWN_OP:
		return EOPNOTSUPP;
	case RNICD_STATUS_PERMISSION:
		return EACCES;
	case RNICD_STATUS_NO_DEVICE:
	case RNICD_STATUS_NO_PROVIDER:
		return ENODEV;
	case RNICD_STATUS_VERSION:
		return EPROTO;
	case RNICD_STATUS_CLOSED:
	case RNICD_STATUS_INTERNAL:
		return EIO;
	case RNICD_STATUS_ADDR_NOT_AVAIL: /* an rdma_cm bind (proto/status.go) */
		return EADDRNOTAVAIL;
	case RNICD_STATUS_REJECTED:
		return ECONNREFUSED;
	default: /* invalid, invalid state, destroyed, bad message/handle, overrun */
		return EINVAL;
	}
}

void rnic_socket_path(char *out, size_t cap)
{
	const char *s = getenv("RNIC_SOCKET");
	const char *x = getenv("XDG_RUNTIME_DIR");
	if (s && *s) {
		snprintf(out, cap, "%s", s);
		return;
	}
	/* rnicd's rule (ibv.DefaultSocketPath): an unprivileged user's
	 * daemon is in its runtime directory */
	if (getuid() != 0 && x && *x) {
		snprintf(out, cap, "%s/rnic/rnicd.sock", x);
		return;
	}
	snprintf(out, cap, "/run/rnic/rnicd.sock");
}

/* overflow_uid is the uid the kernel shows for one this user namespace
 * does not map. */
static uid_t overflow_uid(void)
{
	unsigned v = 65534;
	FILE *f = fopen("/proc/sys/kernel/overflowuid", "re");

	if (f) {
		if (fscanf(f, "%u", &v) != 1)
			v = 65534;
		fclose(f);
	}
	return (uid_t)v;
}

/* pinned_in_view: in rnic exec's view of a user other than root, a root
 * daemon shows as the overflow uid; the view checked the socket from the
 * host's namespace and bound it onto its path, naming it in
 * RNIC_VIEW_SOCKET (nic/view/pin.go). That path alone may be served by the
 * overflow uid. */
static int pinned_in_view(const char *path, uid_t uid)
{
	const char *pinned = getenv("RNIC_VIEW_SOCKET");

	return pinned && *pinned && !strcmp(pinned, path) && uid == overflow_uid();
}

/* rnic_connect connects to the daemon at path and checks who it is: a
 * process of our own uid or root, as SO_PEERCRED says, before anything is
 * sent (a socket anyone could have bound must not get our memory). */
int rnic_connect(const char *path, int *out, char *errmsg, size_t cap)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct ucred cr;
	socklen_t crl = sizeof(cr);
	int fd, err;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(errmsg, cap, "socket path %s is too long", path);
		return ENAMETOOLONG;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		err = errno;
		snprintf(errmsg, cap, "socket: %s", strerror(err));
		return err;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = errno;
		snprintf(errmsg, cap, "no rnicd at %s (%s)", path, strerror(err));
		close(fd);
		return err;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crl) < 0 ||
	    (cr.uid != 0 && cr.uid != geteuid() && !pinned_in_view(path, cr.uid))) {
		snprintf(errmsg, cap, "%s is served by uid %u, neither root nor us: refused", path,
			 (unsigned)cr.uid);
		close(fd);
		return EACCES;
	}
	*out = fd;
	return 0;
}

int rnic_conn_init(struct rnic_conn *c, int fd)
{
	memset(c, 0, offsetof(struct rnic_conn, rx));
	c->fd = fd;
	c->evq_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (c->evq_fd < 0)
		return errno;
	pthread_mutex_init(&c->mu, NULL);
	return 0;
}

void rnic_conn_close(struct rnic_conn *c)
{
	close(c->fd);
	close(c->evq_fd);
	pthread_mutex_destroy(&c->mu);
}

void rnic_close_fds(const int *fds, int n)
{
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

int rnic_set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return errno;
	return 0;
}

static void mark_dead(struct rnic_conn *c)
{
	struct rnic_event e = {.type = IBV_EVENT_DEVICE_FATAL, .port = 0};
	if (c->dead)
		return;
	c->dead = 1;
	rnic_queue_event(c, &e);
}

void rnic_queue_event(struct rnic_conn *c, const struct rnic_event *e)
{
	uint64_t one = 1;
	if (c->evq_len == RNIC_EVQ) /* full: the oldest goes, as a kernel queue drops */
		c->evq_head = (c->evq_head + 1) % RNIC_EVQ, c->evq_len--;
	c->evq[(c->evq_head + c->evq_len) % RNIC_EVQ] = *e;
	c->evq_len++;
	if (write(c->evq_fd, &one, sizeof(one)) < 0) {
		/* the counter is saturated: it is readable anyway */
	}
}

static void on_event(struct rnic_conn *c, uint16_t op, const uint8_t *body, size_t n)
{
	struct rbuf r;
	struct rnic_event e;
	if (op != RNICD_OP_EVENT) { /* events of other concerns: rdma_cm's go to librdmacm */
		rnic_cm_deliver(c, op, body, n);
		return;
	}
	r_init(&r, body, n);
	e.type = r_u8(&r);
	e.object = r_u8(&r);
	e.handle = r_u32(&r);
	e.port = r_u8(&r);
	if (r_done(&r) == 0)
		rnic_queue_event(c, &e);
}

/* recv_one receives one message (blocking unless dontwait): 0 and the
 * header fields, EAGAIN, or EIO once the daemon is gone. */
static int recv_one(struct rnic_conn *c, int dontwait, uint8_t hdr[RNICD_HEADER_LEN], size_t *n,
		    int *fds, int *nfds)
{
	char cbuf[CMSG_SPACE(sizeof(int) * RNICD_MAX_FDS)];
	struct iovec iov = {.iov_base = c->rx, .iov_len = sizeof(c->rx)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
	ssize_t got;

	if (c->dead)
		return EIO;
	do
		got = recvmsg(c->fd, &mh, MSG_CMSG_CLOEXEC | (dontwait ? MSG_DONTWAIT : 0));
	while (got < 0 && errno == EINTR);
	if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return EAGAIN;
	*nfds = 0;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		int k = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (int i = 0; i < k; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (*nfds < RNICD_MAX_FDS)
				fds[(*nfds)++] = fd;
			else
				close(fd);
		}
	}
	if (got <= 0) {
		rnic_close_fds(fds, *nfds);
		mark_dead(c);
		return EIO;
	}
	c->lost_fds = 0;
	if ((size_t)got < RNICD_HEADER_LEN || (mh.msg_flags & MSG_TRUNC)) {
		rnic_close_fds(fds, *nfds);
		*nfds = 0;
		*n = 0;
		memset(hdr, 0, RNICD_HEADER_LEN);
		return 0; /* a message we cannot read: skipped */
	}
	if (mh.msg_flags & MSG_CTRUNC) {
		/* The process is at its descriptor limit: the message is
		 * readable, its descriptors are not. A reply must still end
		 * its call (with EMFILE), or the call would wait forever. */
		rnic_close_fds(fds, *nfds);
		*nfds = 0;
		c->lost_fds = 1;
	}
	memcpy(hdr, c->rx, RNICD_HEADER_LEN);
	*n = (size_t)got - RNICD_HEADER_LEN;
	return 0;
}

/* REPLY_SPIN_NS is how long a call polls for its reply before it blocks.
 * A round trip in which both ends sleep in the kernel pays two wake-ups
 * of idle CPUs, ~25 us each on a virtual machine (CI runners), against a
 * few microseconds of work in the daemon, which polls for the next
 * request in the same way (server/readspin.go). Bounded: a slow call
 * costs this much CPU more, no more. */
#define REPLY_SPIN_NS 50000

static int64_t mono_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* recv_reply receives the next message for a call: polled for
 * REPLY_SPIN_NS, then waited for. */
static int recv_reply(struct rnic_conn *c, uint8_t hdr[RNICD_HEADER_LEN], size_t *n, int *fds, int *nfds)
{
	int64_t deadline = mono_ns() + REPLY_SPIN_NS;
	int err;
	do {
		if ((err = recv_one(c, 1, hdr, n, fds, nfds)) != EAGAIN)
			return err;
		sched_yield();
	} while (mono_ns() < deadline);
	return recv_one(c, 0, hdr, n, fds, nfds);
}

static uint32_t le32(const uint8_t *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }

/* dispatch handles a message that is not the reply being waited for. */
static void dispatch(struct rnic_conn *c, const uint8_t *hdr, size_t n, int *fds, int nfds)
{
	rnic_close_fds(fds, nfds);
	if (hdr[RNICD_HDR_KIND] == RNICD_KIND_EVENT)
		on_event(c, (uint16_t)(hdr[RNICD_HDR_OP] | hdr[RNICD_HDR_OP + 1] << 8), c->rx + RNICD_HEADER_LEN, n);
}

static int send_msg(struct rnic_conn *c, uint16_t op, uint8_t kind, const struct wbuf *w,
		    const int *fds, int nfds)
{
	char cbuf[CMSG_SPACE(sizeof(int) * RNICD_MAX_FDS)];
	uint8_t *h = c->txh;
	struct iovec iov = {.iov_base = h, .iov_len = RNICD_HEADER_LEN + w->n};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	uint32_t seq = kind == RNICD_KIND_REQUEST ? ++c->seq : 0;
	ssize_t sent;

	if (w->overflow || nfds > RNICD_MAX_FDS)
		return EINVAL;
	if (c->dead)
		return EIO;
	memset(h, 0, RNICD_HEADER_LEN);
	h[RNICD_HDR_OP] = (uint8_t)op, h[RNICD_HDR_OP + 1] = (uint8_t)(op >> 8);
	h[RNICD_HDR_KIND] = kind, h[RNICD_HDR_NFDS] = (uint8_t)nfds;
	for (int i = 0; i < 4; i++) {
		h[RNICD_HDR_SEQ + i] = (uint8_t)(seq >> (8 * i));
		h[RNICD_HDR_BODY_LEN + i] = (uint8_t)(w->n >> (8 * i));
	}
	memcpy(h + RNICD_HEADER_LEN, w->b, w->n);
	if (nfds > 0) {
		struct cmsghdr *cm;
		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
	}
	do
		sent = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
	while (sent < 0 && errno == EINTR);
	if (sent < 0) {
		mark_dead(c);
		return EIO;
	}
	return 0;
}

int rnic_notice(struct rnic_conn *c, uint16_t op, const struct wbuf *w)
{
	return send_msg(c, op, RNICD_KIND_NOTICE, w, NULL, 0);
}

/* report_version prints the daemon's refusal of this library's protocol
 * version (OPEN's StatusVersion reply, whose body is the message): the
 * errno alone (EPROTO) would not say that the library and rnicd are of
 * different builds. */
static void report_version(const uint8_t *body, size_t n)
{
	struct rbuf r;
	char msg[RNICD_MAX_ERROR_LEN + 1];
	r_init(&r, body, n);
	r_str(&r, msg, sizeof(msg));
	fprintf(stderr, "libibverbs (rnic): this library speaks rnicd protocol version %d; %s\n", RNICD_VERSION,
		r.err ? "rnicd refused it" : msg);
}

int rnic_call(struct rnic_conn *c, uint16_t op, const struct wbuf *w, const int *fds, int nfds,
	      uint8_t *reply, size_t cap, size_t *len, int *rfds, int *nrfds)
{
	uint8_t hdr[RNICD_HEADER_LEN];
	int got[RNICD_MAX_FDS], ngot, err;
	uint32_t st;
	size_t n;

	*nrfds = 0;
	if ((err = send_msg(c, op, RNICD_KIND_REQUEST, w, fds, nfds)))
		return err;
	for (;;) {
		if ((err = recv_reply(c, hdr, &n, got, &ngot)))
			return err;
		if (hdr[RNICD_HDR_KIND] != RNICD_KIND_REPLY || le32(hdr + RNICD_HDR_SEQ) != c->seq) {
			if (!c->lost_fds)
				dispatch(c, hdr, n, got, ngot);
			continue;
		}
		st = le32(hdr + RNICD_HDR_STATUS);
		if (c->lost_fds && st == RNICD_STATUS_OK)
			return EMFILE; /* what the daemon made for it stays its until the session ends */
		if (st != RNICD_STATUS_OK) {
			rnic_close_fds(got, ngot);
			if (st == RNICD_STATUS_VERSION)
				report_version(c->rx + RNICD_HEADER_LEN, n);
			return rnic_status_errno(st);
		}
		if (n > cap) {
			rnic_close_fds(got, ngot);
			return EPROTO;
		}
		memcpy(reply, c->rx + RNICD_HEADER_LEN, n);
		*len = n;
		memcpy(rfds, got, sizeof(int) * (size_t)ngot);
		*nrfds = ngot;
		return 0;
	}
}

void rnic_poll_events(struct rnic_conn *c)
{
	uint8_t hdr[RNICD_HEADER_LEN];
	int fds[RNICD_MAX_FDS], nfds;
	size_t n;
	while (recv_one(c, 1, hdr, &n, fds, &nfds) == 0)
		if (!c->lost_fds)
			dispatch(c, hdr, n, fds, nfds);
}

int ctx_call(struct rnic_context *c, uint16_t op, struct wbuf *body, const int *fds, int nfds,
	     struct rnic_reply *rep)
{
	int err;
	pthread_mutex_lock(&c->conn.mu);
	err = rnic_call(&c->conn, op, body, fds, nfds, rep->body, sizeof(rep->body), &rep->len,
			rep->fds, &rep->nfds);
	pthread_mutex_unlock(&c->conn.mu);
	return err;
}
