/* SPDX-License-Identifier: BSD-2-Clause */
/* corners cqchannels: under a soft RLIMIT_NOFILE of 64, 1000 CQs on two
 * completion channels, all armed (a CQ costs no descriptor, a channel
 * one, as with the kernel's verbs). Receives complete on a few CQs deep
 * in the set, all before any event is taken, and poll(2) on the two
 * channel fds gives each expected event exactly once, on its channel,
 * with its CQ's context. Then two threads in ibv_get_cq_event on one
 * channel get distinct events, none lost; and a CQ destroyed with its
 * event not taken gives none, to itself or to the CQ given its slot.
 * Where no event may come, a channel's fd may still poll readable (a
 * spurious wakeup, channel.c): a non-blocking ibv_get_cq_event must then
 * say EAGAIN. */
#include "corners.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/resource.h>
#include <time.h>

#define NCQS 1000
#define SOFT_NOFILE 64
#define NTARGETS 8

/* CQs that get completions: both channels (CQ i is on channel i % 2,
 * slot i / 2), slots from 1 to 499 of each, 5 on channel 0. */
static const int targets[NTARGETS] = {999, 998, 640, 513, 130, 64, 4, 3};

static int is_target(int i)
{
	for (int t = 0; t < NTARGETS; t++)
		if (targets[t] == i)
			return 1;
	return 0;
}

static struct ibv_cq *cqs[NCQS];
static int ids[NCQS]; /* each CQ's context points at its index */

/* A peer on DEV0 for each target (one context for all): its QP sends
 * to a QP on DEV1 whose CQ is the target. */
struct link {
	struct side a, b;
	struct ibv_mr *smr, *rmr;
	char sbuf[64], rbuf[4][64];
};

static void link_open(struct link *l, const struct side *a0, struct ibv_context *ctx1, struct ibv_pd *pd1,
		      struct ibv_cq *cq)
{
	struct ibv_qp_init_attr qa = {0};

	l->a.ctx = a0->ctx;
	l->a.pd = a0->pd;
	side_open(&l->a, NULL, NULL, NULL, NULL, 16, 16);
	l->b.ctx = ctx1;
	l->b.pd = pd1;
	l->b.cq = cq;
	qa.send_cq = qa.recv_cq = cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	if (!(l->b.qp = ibv_create_qp(pd1, &qa)))
		die("ibv_create_qp on a target CQ");
	if (ibv_query_gid(ctx1, 1, 0, &l->b.gid))
		die("ibv_query_gid");
	connect_pair(&l->a, &l->b);
	l->smr = reg(l->a.pd, l->sbuf, sizeof(l->sbuf), ALL_ACCESS);
	l->rmr = reg(pd1, l->rbuf, sizeof(l->rbuf), ALL_ACCESS);
	for (int i = 0; i < 4; i++)
		post_recv(l->b.qp, NULL, l->rmr, l->rbuf[i], sizeof(l->rbuf[i]));
}

/* link_send sends one message; its receive completes on the target CQ. */
static void link_send(struct link *l) { post_send(l->a.qp, l->smr, l->sbuf, 8, 0); }

/* link_close leaves the target CQ (destroyed with the others). */
static void link_close(struct link *l)
{
	ibv_dereg_mr(l->smr);
	ibv_dereg_mr(l->rmr);
	if (l->b.qp)
		ibv_destroy_qp(l->b.qp);
	ibv_destroy_qp(l->a.qp);
	ibv_destroy_cq(l->a.cq);
}

/* drain polls cq's completions away (the receives that raised events). */
static int drain(struct ibv_cq *cq)
{
	struct ibv_wc wc[4];
	int n, total = 0;
	while ((n = ibv_poll_cq(cq, 4, wc)) > 0)
		total += n;
	return total;
}

/* collect takes events through poll(2) on both channels until want
 * came or nothing did for TIMEOUT_MS, counting them per CQ in got. */
static int collect(struct ibv_comp_channel *ch[2], int want, int got[NCQS])
{
	struct pollfd p[2] = {{.fd = ch[0]->fd, .events = POLLIN}, {.fd = ch[1]->fd, .events = POLLIN}};
	int n = 0;

	while (n < want && poll(p, 2, TIMEOUT_MS) > 0)
		for (int k = 0; k < 2; k++) {
			struct ibv_cq *cq;
			void *ctx;
			int i;
			if (!(p[k].revents & POLLIN))
				continue;
			if (ibv_get_cq_event(ch[k], &cq, &ctx)) {
				check(0, "channel %d polled readable, ibv_get_cq_event fails (%s)", k, strerror(errno));
				return n;
			}
			i = *(int *)ctx;
			check(i >= 0 && i < NCQS && cqs[i] == cq && i % 2 == k,
			      "an event on channel %d names CQ %d, one of the channel's, with its context", k, i);
			got[i]++;
			n++;
			ibv_ack_cq_events(cq, 1);
		}
	return n;
}

static void create_cqs(struct ibv_context *ctx, struct ibv_comp_channel *ch[2])
{
	int n, err = 0;

	for (n = 0; n < NCQS; n++) {
		ids[n] = n;
		if (!(cqs[n] = ibv_create_cq(ctx, 4, &ids[n], ch[n % 2], 0))) {
			err = errno;
			break;
		}
	}
	check(n == NCQS, "%d CQs on 2 channels with a soft descriptor limit of %d (created %d: %s)", NCQS,
	      SOFT_NOFILE, n, n < NCQS ? strerror(err) : "ok");
	if (n < NCQS)
		die("CQs");
	for (n = 0; n < NCQS; n++)
		if (ibv_req_notify_cq(cqs[n], 0))
			die("ibv_req_notify_cq CQ %d", n);
}

/* no_event: ch gives no event within ms. Its fd may poll readable with
 * none (a daemon's write for a slot already taken from the set, as a
 * spurious wakeup): then a non-blocking ibv_get_cq_event says EAGAIN. */
static int no_event(struct ibv_comp_channel *ch, int ms)
{
	struct ibv_cq *cq;
	void *ctx;
	int fl, r, e;

	if (!fd_ready(ch->fd, ms))
		return 1;
	fl = fcntl(ch->fd, F_GETFL);
	set_nonblock(ch->fd);
	errno = 0;
	r = ibv_get_cq_event(ch, &cq, &ctx);
	e = errno;
	if (fcntl(ch->fd, F_SETFL, fl) < 0)
		die("fcntl");
	if (r == 0)
		ibv_ack_cq_events(cq, 1);
	return r == -1 && e == EAGAIN;
}

/* each_once: every target's CQ raises one event, taken through poll(2)
 * after all fired, and nothing more comes. */
static void each_once(struct link *links, struct ibv_comp_channel *ch[2])
{
	static int got[NCQS];
	int n, bad = 0;

	for (int t = 0; t < NTARGETS; t++)
		link_send(&links[t]);
	for (int t = 0; t < NTARGETS; t++) {
		struct ibv_wc wc;
		check(wait_wc(cqs[targets[t]], &wc, TIMEOUT_MS) && wc.status == IBV_WC_SUCCESS,
		      "the receive on CQ %d completes", targets[t]);
	}
	n = collect(ch, NTARGETS, got);
	check(n == NTARGETS, "%d events through poll(2) on the channels, want %d", n, NTARGETS);
	for (int t = 0; t < NTARGETS; t++)
		check(got[targets[t]] == 1, "CQ %d (slot %d of channel %d): %d events, want 1", targets[t],
		      targets[t] / 2, targets[t] % 2, got[targets[t]]);
	for (int i = 0; i < NCQS; i++)
		bad += got[i] && !is_target(i);
	check(bad == 0, "no event for a CQ without a completion (%d)", bad);
	check(no_event(ch[0], 300) && no_event(ch[1], 0), "no more events on the channels");
}

struct taker {
	struct ibv_comp_channel *ch;
	int want, got[NTARGETS];
};

static void *taker_run(void *arg)
{
	struct taker *tk = arg;
	for (int k = 0; k < tk->want; k++) {
		struct ibv_cq *cq;
		void *ctx;
		tk->got[k] = -1;
		if (ibv_get_cq_event(tk->ch, &cq, &ctx) == 0) {
			tk->got[k] = *(int *)ctx;
			ibv_ack_cq_events(cq, 1);
		}
	}
	return NULL;
}

/* join waits for the takers; one still waiting after TIMEOUT_MS lost an
 * event, and nothing more can be checked. */
static void join(pthread_t th[2])
{
	struct timespec end;
	clock_gettime(CLOCK_REALTIME, &end);
	end.tv_sec += TIMEOUT_MS / 1000;
	for (int i = 0; i < 2; i++)
		if (pthread_timedjoin_np(th[i], NULL, &end)) {
			check(0, "thread %d took its events within %d ms", i, TIMEOUT_MS);
			printf("%d failed\n", failures);
			exit(1);
		}
}

/* two_threads: channel 0's five targets, re-armed, fire while two
 * threads wait in ibv_get_cq_event on it, one for three events, one for
 * two; the five are distinct. */
static void two_threads(struct link *links, struct ibv_comp_channel *ch)
{
	struct taker tk[2] = {{.ch = ch, .want = 3}, {.ch = ch, .want = 2}};
	static int seen[NCQS];
	pthread_t th[2];
	int bad = 0, n = 0;

	for (int t = 0; t < NTARGETS; t++)
		drain(cqs[targets[t]]);
	for (int i = 0; i < 2; i++)
		if (pthread_create(&th[i], NULL, taker_run, &tk[i]))
			die("pthread_create");
	for (int t = 0; t < NTARGETS; t++)
		if (targets[t] % 2 == 0) {
			ibv_req_notify_cq(cqs[targets[t]], 0);
			link_send(&links[t]);
			n++;
		}
	join(th);
	for (int i = 0; i < 2; i++)
		for (int k = 0; k < tk[i].want; k++) {
			int v = tk[i].got[k];
			if (v < 0 || v >= NCQS || v % 2 || !is_target(v) || seen[v]++)
				bad++;
		}
	check(n == 5 && bad == 0, "two threads in ibv_get_cq_event took channel 0's %d events, each once (%d amiss)",
	      n, bad);
}

/* destroyed_unseen: a CQ destroyed with its event not taken gives it to
 * no one: not to ibv_get_cq_event, not to the CQ the daemon gives its
 * slot next. */
static void destroyed_unseen(struct link *l, struct ibv_context *ctx, struct ibv_comp_channel *ch)
{
	static int id = -1;
	struct ibv_cq *cq = l->b.cq, *after;
	struct ibv_wc wc;

	drain(cq);
	ibv_req_notify_cq(cq, 0);
	link_send(l);
	check(wait_wc(cq, &wc, TIMEOUT_MS), "the receive on CQ 999 completes");
	check(fd_ready(ch->fd, TIMEOUT_MS), "its event: channel 1 polls readable");
	ibv_destroy_qp(l->b.qp);
	l->b.qp = NULL;
	check(ibv_destroy_cq(cq) == 0, "CQ 999 destroyed with its event not taken");
	cqs[999] = NULL;
	if (!(after = ibv_create_cq(ctx, 4, &id, ch, 0)))
		die("a CQ in the freed slot");
	ibv_req_notify_cq(after, 0);
	check(no_event(ch, 300), "no event on channel 1: none for the CQ destroyed, none for the CQ given its slot");
	ibv_destroy_cq(after);
}

void test_cqchannels(const char *d0, const char *d1)
{
	static struct link links[NTARGETS];
	struct ibv_comp_channel *ch[2];
	struct side a0 = {0};
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		die("getrlimit");
	rl.rlim_cur = SOFT_NOFILE;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		die("setrlimit");
	a0.ctx = open_named(d0);
	if (!(a0.pd = ibv_alloc_pd(a0.ctx)))
		die("ibv_alloc_pd");
	ctx = open_named(d1);
	if (!(pd = ibv_alloc_pd(ctx)))
		die("ibv_alloc_pd");
	for (int k = 0; k < 2; k++)
		if (!(ch[k] = ibv_create_comp_channel(ctx)))
			die("ibv_create_comp_channel");
	create_cqs(ctx, ch);
	for (int t = 0; t < NTARGETS; t++)
		link_open(&links[t], &a0, ctx, pd, cqs[targets[t]]);
	each_once(links, ch);
	two_threads(links, ch[0]);
	destroyed_unseen(&links[0], ctx, ch[1]);
	for (int t = 0; t < NTARGETS; t++)
		link_close(&links[t]);
	for (int i = 0; i < NCQS; i++)
		if (cqs[i] && ibv_destroy_cq(cqs[i]))
			check(0, "destroy CQ %d", i);
	check(ibv_destroy_comp_channel(ch[0]) == 0 && ibv_destroy_comp_channel(ch[1]) == 0,
	      "the channels destroyed once their CQs are gone");
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	side_free(&a0);
}
