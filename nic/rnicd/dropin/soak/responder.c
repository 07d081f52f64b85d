/* SPDX-License-Identifier: BSD-2-Clause */
/* The responder: lends its memory (data slots, message slots, an atomic
 * word per QP, each filled with a known pattern first), keeps `credits`
 * receives posted on every QP, and checks each message as it completes:
 * the k-th message of a QP must be exactly message_of(k) (kind, length,
 * immediate, every byte). For each it checked it sends a credit (a SEND
 * with immediate of no bytes, carrying how many it has checked), which
 * lets the requester send another. */
#include "soak.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#define CREDIT_WR (1ULL << 63)

struct responder {
	struct params p;
	struct side s;
	struct peer pr;
	uint64_t *consumed; /* messages checked, per QP */
	struct pieces *pc;  /* each receive buffer's scatter pieces: [q * credits + r] */
	uint64_t *rng;
	uint32_t *sending; /* credits posted and not completed, per QP */
	uint8_t *owed;     /* a credit waits for room in the QP's send queue */
	uint64_t messages, bytes, credits_out, deferred;
};

/* CREDIT_WRS: the send queue of a responder's QP, which holds only credits. */
#define CREDIT_WRS(p) ((p)->credits + 1)

static void post_recv(struct responder *r, uint32_t q, uint32_t i)
{
	const struct params *p = &r->p;
	struct pieces *pc = &r->pc[q * p->credits + i];
	uint8_t *buf = r->s.mem + resp_recv_buf(p, &r->s.lay, q, i);
	struct ibv_sge sge[MAX_SGE];
	struct ibv_recv_wr wr = {.wr_id = (uint64_t)q << 32 | i, .sg_list = sge}, *bad;
	int err;

	split(&r->rng[q], (uint32_t)r->s.lay.slot, MAX_SGE, pc);
	for (int k = 0; k < pc->n; k++)
		memset(buf + pc->off[k], 0xee, pc->len[k]);
	wr.num_sge = pieces_sge(pc, buf, r->s.mr->lkey, sge);
	if ((err = ibv_post_recv(r->s.qp[q], &wr, &bad)))
		die("QP %u: posting a receive: %s", q, strerror(err));
}

/* prefix is pc cut to its first len bytes. */
static struct pieces prefix(const struct pieces *pc, uint32_t len)
{
	struct pieces out = {0};

	for (int i = 0; i < pc->n && len; i++) {
		uint32_t l = pc->len[i] < len ? pc->len[i] : len;
		out.off[out.n] = pc->off[i];
		out.len[out.n++] = l;
		len -= l;
	}
	return out;
}

static void send_credit(struct responder *r, uint32_t q)
{
	struct ibv_send_wr wr = {.wr_id = CREDIT_WR | (uint64_t)q << 32,
				 .opcode = IBV_WR_SEND_WITH_IMM,
				 .send_flags = IBV_SEND_SIGNALED,
				 .imm_data = htonl((uint32_t)r->consumed[q])},
			   *bad;
	int err;

	if (r->sending[q] == CREDIT_WRS(&r->p)) {
		r->deferred += !r->owed[q];
		r->owed[q] = 1;
		return;
	}
	r->owed[q] = 0;
	if ((err = ibv_post_send(r->s.qp[q], &wr, &bad)))
		die("QP %u: posting credit %" PRIu64 ": %s", q, r->consumed[q], strerror(err));
	r->sending[q]++;
	r->credits_out++;
}

/* received checks the receive that completed as QP q's next message. */
static void received(struct responder *r, uint32_t q, uint32_t i, const struct ibv_wc *wc)
{
	const struct params *p = &r->p;
	uint64_t k = r->consumed[q];
	struct message m;
	struct pieces got;
	enum ibv_wc_opcode want;
	long bad;

	message_of(p, q, k, &m);
	if (wc->status != IBV_WC_SUCCESS)
		die("QP %u: receive for message %" PRIu64 " (%s, %u bytes) completed with %s", q, k, op_names[m.kind],
		    m.len, ibv_wc_status_str(wc->status));
	want = m.kind == OP_WRITE_IMM ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV;
	if (wc->opcode != want || !(wc->wc_flags & IBV_WC_WITH_IMM) != (m.kind == OP_SEND))
		die("QP %u: message %" PRIu64 " (%s) arrived as opcode %d, flags %#x: lost, reordered or duplicated", q,
		    k, op_names[m.kind], (int)wc->opcode, wc->wc_flags);
	if (wc->byte_len != m.len)
		die("QP %u: message %" PRIu64 " (%s) of %u bytes arrived with %u", q, k, op_names[m.kind], m.len,
		    wc->byte_len);
	if (m.kind != OP_SEND && ntohl(wc->imm_data) != m.imm)
		die("QP %u: message %" PRIu64 " (%s) brought immediate %#x, not %#x", q, k, op_names[m.kind],
		    ntohl(wc->imm_data), m.imm);
	if (m.kind == OP_WRITE_IMM)
		bad = pattern_check(r->s.mem + resp_msg_slot(p, &r->s.lay, q, (uint32_t)k), m.len, m.key, 0);
	else {
		got = prefix(&r->pc[q * p->credits + i], m.len);
		bad = pieces_check(r->s.mem + resp_recv_buf(p, &r->s.lay, q, i), &got, m.key, 0);
	}
	if (bad >= 0)
		die("QP %u: message %" PRIu64 " (%s, %u bytes): byte %ld differs", q, k, op_names[m.kind], m.len, bad);
	r->consumed[q]++;
	r->messages++;
	r->bytes += m.len;
	post_recv(r, q, i);
	send_credit(r, q);
}

static void completion(struct responder *r, const struct ibv_wc *wc)
{
	uint32_t q = (uint32_t)(wc->wr_id >> 32 & 0x7fffffff);

	if (q >= r->p.qps)
		die("a completion of an unknown work request %#" PRIx64, wc->wr_id);
	if (!(wc->wr_id & CREDIT_WR)) {
		received(r, q, (uint32_t)wc->wr_id, wc);
		return;
	}
	if (wc->status != IBV_WC_SUCCESS || wc->opcode != IBV_WC_SEND)
		die("QP %u: a credit completed with %s, opcode %d", q, ibv_wc_status_str(wc->status), (int)wc->opcode);
	r->credits_out--;
	r->sending[q]--;
	if (r->owed[q])
		send_credit(r, q);
}

/* fill_memory writes what the requester's model starts from. */
static void fill_memory(struct responder *r)
{
	const struct params *p = &r->p;

	for (uint32_t q = 0; q < p->qps; q++) {
		uint64_t word = key_of(p->seed, q, KEY_ATOMIC, 0);
		memcpy(r->s.mem + resp_atomic(p, &r->s.lay, q), &word, 8);
		for (uint32_t s = 0; s < p->depth; s++)
			pattern_fill(r->s.mem + resp_data_slot(p, &r->s.lay, q, s), p->max_size,
				     key_of(p->seed, q, KEY_INIT, s), 0);
	}
}

static void read_params(FILE *f, struct params *p)
{
	char line[256];
	unsigned qps, depth, credits, max, timeout, ack;

	oob_recv(f, line, sizeof(line));
	if (sscanf(line, "params %" SCNu64 " %" SCNu64 " %u %u %u %u %u %u", &p->ops, &p->seed, &qps, &depth, &credits,
		   &max, &timeout, &ack) != 8 || !qps || !depth || !credits)
		die("the requester said %s, not its params", line);
	p->qps = qps;
	p->depth = depth;
	p->credits = credits;
	p->max_size = max;
	p->timeout = timeout;
	p->ack_timeout = (uint8_t)ack;
}

/* serve checks messages until the requester says it is done (it says so
 * once every message has its credit); the out-of-band connection closing
 * first means the requester failed. */
static void serve(struct responder *r, FILE *f)
{
	struct ibv_wc wc[64];
	struct pollfd pfd = {.fd = fileno(f), .events = POLLIN};
	char line[256];
	uint64_t total;

	for (;;) {
		int n = side_poll(&r->s, wc, 64, 100);
		for (int k = 0; k < n; k++)
			completion(r, &wc[k]);
		if (n || poll(&pfd, 1, 0) <= 0)
			continue;
		oob_recv(f, line, sizeof(line));
		if (sscanf(line, "done %" SCNu64, &total) != 1)
			die("the requester said %s, not done", line);
		break;
	}
	/* The last credits' completions (the requester has them all). */
	double start = now_s();
	while (r->credits_out) {
		int n = side_poll(&r->s, wc, 64, 100);
		for (int k = 0; k < n; k++)
			completion(r, &wc[k]);
		if (now_s() - start > r->p.timeout)
			die("watchdog: %" PRIu64 " credits sent had no completion for %u s", r->credits_out, r->p.timeout);
	}
	oob_send(f, "ok %" PRIu64 " messages, %" PRIu64 " bytes checked, %" PRIu64 " credits deferred\n", r->messages,
		 r->bytes, r->deferred);
	printf("soak: ok: %" PRIu64 " messages, %" PRIu64 " bytes checked for %" PRIu64 " operations, %" PRIu64
	       " credits deferred (send queue full of unacknowledged credits)\n",
	       r->messages, r->bytes, total, r->deferred);
}

int run_responder(const char *dev, int gid_index, const char *port)
{
	struct responder r = {0};
	uint32_t *psn;
	FILE *f = fdopen(oob_listen(port), "r+");

	if (!f)
		die("fdopen: %s", strerror(errno));
	read_params(f, &r.p);
	layout_responder(&r.p, &r.s.lay);
	side_open(&r.s, dev, gid_index, &r.p, (int)(r.p.qps * (r.p.credits + CREDIT_WRS(&r.p)) + 16),
		  CREDIT_WRS(&r.p), r.p.credits);
	fill_memory(&r);
	r.consumed = calloc(r.p.qps, sizeof(*r.consumed));
	r.rng = calloc(r.p.qps, sizeof(*r.rng));
	r.pc = calloc((size_t)r.p.qps * r.p.credits, sizeof(*r.pc));
	r.sending = calloc(r.p.qps, sizeof(*r.sending));
	r.owed = calloc(r.p.qps, sizeof(*r.owed));
	psn = calloc(r.p.qps, sizeof(*psn));
	if (!r.consumed || !r.rng || !r.pc || !r.sending || !r.owed || !psn)
		die("out of memory");
	for (uint32_t q = 0; q < r.p.qps; q++) {
		r.rng[q] = key_of(r.p.seed ^ 1, q, KEY_RNG, 0);
		psn[q] = (uint32_t)key_of(r.p.seed ^ 1, q, KEY_PSN, 1) & 0xffffff;
		for (uint32_t i = 0; i < r.p.credits; i++)
			post_recv(&r, q, i);
	}
	side_send_info(&r.s, f, r.p.qps, psn);
	side_recv_info(f, r.p.qps, &r.pr);
	side_connect(&r.s, &r.p, &r.pr, psn);
	oob_send(f, "ready\n");
	serve(&r, f);
	side_close(&r.s, r.p.qps);
	free(r.consumed);
	free(r.rng);
	free(r.pc);
	free(r.sending);
	free(r.owed);
	free(r.pr.qpn);
	free(r.pr.psn);
	free(psn);
	fclose(f);
	return 0;
}
