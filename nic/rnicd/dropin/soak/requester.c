/* SPDX-License-Identifier: BSD-2-Clause */
/* The requester: keeps depth operations in flight on every QP, each a
 * seeded random choice, and checks every completion: its status and
 * opcode, a READ's bytes against what the responder's slot must hold, an
 * atomic's old value against a model of the remote word. Messages (SEND,
 * SEND with immediate, WRITE with immediate) are checked by the responder,
 * which returns a credit for each; a message without its credit, like an
 * operation without its completion, trips the watchdog. At the end every
 * data slot and atomic word is read back once more. */
#include "soak.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define CREDIT_WR (1ULL << 63)
#define SWEEP_ATOMIC UINT32_MAX /* a sweep READ's slot: the atomic word */

/* op: one operation in flight (or a free place for one). */
struct op {
	int busy;
	int sweep; /* a READ of the final sweep, not counted among the ops */
	enum op_kind kind;
	uint64_t seq;
	uint32_t len;
	uint32_t slot; /* the responder's data slot (WRITE, READ) */
	uint32_t off;  /* where in the slot a READ begins */
	uint64_t key;  /* the pattern sent, or the one a READ must find */
	uint64_t expect; /* an atomic's old value */
	struct pieces pc;
	double posted;
};

/* qstate: one QP's state and its model of the responder's memory. */
struct qstate {
	uint64_t rng;
	uint64_t seq;     /* the next operation's sequence number */
	uint64_t msgs;    /* messages posted */
	uint64_t credits; /* messages the responder checked */
	double credit_at; /* when credits last moved, or the first message went unconfirmed */
	uint64_t atomic;  /* the remote word's value, once every atomic posted is done */
	uint32_t inflight;
	uint32_t sweep;   /* the final sweep's next data slot; depth: the atomic word; past it, done */
	struct op *ops;
	uint8_t *slot_busy;
	uint64_t *slot_key; /* what each data slot holds: a pattern's bytes [0, slot_len) */
	uint32_t *slot_len;
};

struct requester {
	const struct params *p;
	struct side s;
	struct peer pr;
	struct layout rl; /* the responder's layout */
	struct qstate *qs;
	uint64_t posted, done; /* operations (sweep READs apart) */
	uint64_t count[OP_KINDS], bytes[OP_KINDS];
	uint64_t sweeps;
	uint32_t max_sge;
};

static void init_qp(struct requester *r, uint32_t q)
{
	const struct params *p = r->p;
	struct qstate *st = &r->qs[q];

	st->rng = key_of(p->seed, q, KEY_RNG, 0);
	st->atomic = key_of(p->seed, q, KEY_ATOMIC, 0);
	st->ops = calloc(p->depth, sizeof(*st->ops));
	st->slot_busy = calloc(p->depth, 1);
	st->slot_key = calloc(p->depth, sizeof(*st->slot_key));
	st->slot_len = calloc(p->depth, sizeof(*st->slot_len));
	if (!st->ops || !st->slot_busy || !st->slot_key || !st->slot_len)
		die("out of memory");
	for (uint32_t s = 0; s < p->depth; s++) {
		st->slot_key[s] = key_of(p->seed, q, KEY_INIT, s);
		st->slot_len[s] = p->max_size;
	}
}

static void free_qp(struct qstate *st)
{
	free(st->ops);
	free(st->slot_busy);
	free(st->slot_key);
	free(st->slot_len);
}

static void post_credit_recv(struct requester *r, uint32_t q)
{
	struct ibv_recv_wr wr = {.wr_id = CREDIT_WR | (uint64_t)q << 32}, *bad;
	int err;

	if ((err = ibv_post_recv(r->s.qp[q], &wr, &bad)))
		die("QP %u: posting a credit receive: %s", q, strerror(err));
}

static uint32_t free_slot(struct qstate *st, uint32_t depth)
{
	uint32_t start = rng_below(&st->rng, depth);

	for (uint32_t i = 0; i < depth; i++)
		if (!st->slot_busy[(start + i) % depth])
			return (start + i) % depth;
	die("no free data slot with an operation slot free: a bug of the soak");
}

/* choose picks the next operation's kind: messages only while the
 * responder has a receive posted for one. */
static enum op_kind choose(struct requester *r, struct qstate *st, struct message *m)
{
	uint32_t x = rng_below(&st->rng, 100);

	if (x < 20)
		return OP_WRITE;
	if (x < 45)
		return OP_READ;
	if (x < 80) {
		if (st->msgs - st->credits >= r->p->credits)
			return OP_READ;
		message_of(r->p, (uint32_t)(st - r->qs), st->msgs, m);
		return m->kind;
	}
	return x < 90 ? OP_FADD : OP_CSWAP;
}

/* prepare_read sets o up to read a part of data slot o->slot (all of it
 * in the sweep), into the local buffer poisoned first so that a READ that
 * moves nothing cannot pass. */
static void prepare_read(struct requester *r, struct qstate *st, struct op *o, uint8_t *buf, int whole)
{
	uint32_t held = st->slot_len[o->slot];

	o->len = whole ? held : random_size(&st->rng, held);
	o->off = whole ? 0 : rng_below(&st->rng, held - o->len + 1);
	o->key = st->slot_key[o->slot];
	split(&st->rng, o->len, r->max_sge, &o->pc);
	for (int i = 0; i < o->pc.n; i++)
		memset(buf + o->pc.off[i], 0xee, o->pc.len[i]);
}

/* post_op fills in o's work request and posts it. */
static void post_op(struct requester *r, uint32_t q, uint32_t i, struct op *o, const struct message *m)
{
	const struct params *p = r->p;
	struct qstate *st = &r->qs[q];
	uint8_t *buf = r->s.mem + req_buf(p, &r->s.lay, q, i);
	uint64_t *result = (uint64_t *)(r->s.mem + req_result(p, &r->s.lay, q, i));
	struct ibv_sge sge[MAX_SGE];
	struct ibv_send_wr wr = {.wr_id = (uint64_t)q << 32 | i, .sg_list = sge, .send_flags = IBV_SEND_SIGNALED},
			   *bad;
	uint64_t raddr = r->pr.addr;
	int err;

	switch (o->kind) {
	case OP_WRITE:
		o->slot = free_slot(st, p->depth);
		o->len = random_size(&st->rng, p->max_size);
		o->key = key_of(p->seed, q, KEY_OP, o->seq);
		split(&st->rng, o->len, r->max_sge, &o->pc);
		pieces_fill(buf, &o->pc, o->key, 0);
		st->slot_key[o->slot] = o->key;
		st->slot_len[o->slot] = o->len;
		wr.opcode = IBV_WR_RDMA_WRITE;
		wr.wr.rdma.remote_addr = raddr + resp_data_slot(p, &r->rl, q, o->slot);
		break;
	case OP_READ:
		if (o->slot == SWEEP_ATOMIC) {
			o->len = 8;
			o->pc = (struct pieces){.n = 1, .len = {8}};
			*result = ~st->atomic;
			wr.opcode = IBV_WR_RDMA_READ;
			wr.wr.rdma.remote_addr = raddr + resp_atomic(p, &r->rl, q);
			buf = (uint8_t *)result;
			break;
		}
		if (!o->sweep)
			o->slot = free_slot(st, p->depth);
		prepare_read(r, st, o, buf, o->sweep);
		wr.opcode = IBV_WR_RDMA_READ;
		wr.wr.rdma.remote_addr = raddr + resp_data_slot(p, &r->rl, q, o->slot) + o->off;
		break;
	case OP_SEND:
	case OP_SEND_IMM:
	case OP_WRITE_IMM:
		o->len = m->len;
		o->key = m->key;
		split(&st->rng, o->len, r->max_sge, &o->pc);
		pieces_fill(buf, &o->pc, o->key, 0);
		wr.opcode = o->kind == OP_SEND ? IBV_WR_SEND
			    : o->kind == OP_SEND_IMM ? IBV_WR_SEND_WITH_IMM
						     : IBV_WR_RDMA_WRITE_WITH_IMM;
		wr.imm_data = htonl(m->imm);
		wr.wr.rdma.remote_addr = raddr + resp_msg_slot(p, &r->rl, q, (uint32_t)st->msgs);
		if (st->msgs == st->credits)
			st->credit_at = now_s();
		st->msgs++;
		break;
	case OP_FADD:
	case OP_CSWAP:
		o->len = 8;
		o->expect = st->atomic;
		o->pc = (struct pieces){.n = 1, .len = {8}};
		*result = ~o->expect;
		buf = (uint8_t *)result;
		wr.wr.atomic.remote_addr = raddr + resp_atomic(p, &r->rl, q);
		wr.wr.atomic.rkey = r->pr.rkey;
		if (o->kind == OP_FADD) {
			wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
			wr.wr.atomic.compare_add = rng_next(&st->rng);
			st->atomic += wr.wr.atomic.compare_add;
		} else {
			/* Half the time the compare fails: the word must not change. */
			uint64_t cmp = rng_below(&st->rng, 2) ? st->atomic : st->atomic ^ (1 + rng_below(&st->rng, 1000));
			wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
			wr.wr.atomic.compare_add = cmp;
			wr.wr.atomic.swap = rng_next(&st->rng);
			if (cmp == st->atomic)
				st->atomic = wr.wr.atomic.swap;
		}
		break;
	default:
		die("unknown operation");
	}
	if (o->kind != OP_FADD && o->kind != OP_CSWAP)
		wr.wr.rdma.rkey = r->pr.rkey;
	wr.num_sge = pieces_sge(&o->pc, buf, r->s.mr->lkey, sge);
	o->busy = 1;
	o->posted = now_s();
	if (o->kind == OP_WRITE || (o->kind == OP_READ && o->slot != SWEEP_ATOMIC))
		st->slot_busy[o->slot] = 1;
	st->inflight++;
	if ((err = ibv_post_send(r->s.qp[q], &wr, &bad)))
		die("QP %u: posting %s seq %" PRIu64 ": %s", q, op_names[o->kind], o->seq, strerror(err));
}

/* next_op sets up QP q's next operation in free place i, or returns 0
 * when the QP has nothing more to post. */
static int next_op(struct requester *r, uint32_t q, uint32_t i)
{
	struct qstate *st = &r->qs[q];
	struct op *o = &st->ops[i];
	struct message m;

	memset(o, 0, sizeof(*o));
	if (r->posted < r->p->ops) {
		o->kind = choose(r, st, &m);
		o->seq = st->seq++;
		r->posted++;
		post_op(r, q, i, o, &m);
		return 1;
	}
	if (r->done < r->p->ops || st->sweep > r->p->depth)
		return 0;
	/* The sweep: each data slot whole, once nothing else writes to it, then the atomic word. */
	if (st->sweep < r->p->depth && st->slot_busy[st->sweep])
		return 0;
	if (st->sweep == r->p->depth && st->inflight)
		return 0;
	o->kind = OP_READ;
	o->sweep = 1;
	o->seq = st->seq++;
	o->slot = st->sweep < r->p->depth ? st->sweep : SWEEP_ATOMIC;
	st->sweep++;
	post_op(r, q, i, o, NULL);
	return 1;
}

static void fill_qp(struct requester *r, uint32_t q)
{
	struct qstate *st = &r->qs[q];

	for (uint32_t i = 0; i < r->p->depth && st->inflight < r->p->depth; i++)
		if (!st->ops[i].busy && !next_op(r, q, i))
			break;
}

static enum ibv_wc_opcode wc_opcode_of(enum op_kind k)
{
	switch (k) {
	case OP_WRITE:
	case OP_WRITE_IMM:
		return IBV_WC_RDMA_WRITE;
	case OP_READ:
		return IBV_WC_RDMA_READ;
	case OP_SEND:
	case OP_SEND_IMM:
		return IBV_WC_SEND;
	case OP_FADD:
		return IBV_WC_FETCH_ADD;
	default:
		return IBV_WC_COMP_SWAP;
	}
}

/* check_op checks a completed operation's result. */
static void check_op(struct requester *r, uint32_t q, uint32_t i, struct op *o, const struct ibv_wc *wc)
{
	const struct params *p = r->p;
	struct qstate *st = &r->qs[q];
	uint8_t *buf = r->s.mem + req_buf(p, &r->s.lay, q, i);
	uint64_t result = *(uint64_t *)(r->s.mem + req_result(p, &r->s.lay, q, i));
	const char *name = o->sweep ? "final read" : op_names[o->kind];
	long bad;

	if (!o->busy)
		die("QP %u: a completion (status %s, opcode %d) for work request %u, which has none in flight: a "
		    "duplicate",
		    q, ibv_wc_status_str(wc->status), (int)wc->opcode, i);
	if (wc->status != IBV_WC_SUCCESS)
		die("QP %u: %s seq %" PRIu64 " (%u bytes) completed with %s (vendor error %u)", q, name, o->seq, o->len,
		    ibv_wc_status_str(wc->status), wc->vendor_err);
	if (wc->opcode != wc_opcode_of(o->kind))
		die("QP %u: %s seq %" PRIu64 " completed as opcode %d", q, name, o->seq, (int)wc->opcode);
	if (o->kind == OP_READ && o->slot == SWEEP_ATOMIC) {
		if (result != st->atomic)
			die("QP %u: the atomic word holds %#" PRIx64 " at the end, not %#" PRIx64, q, result,
			    st->atomic);
	} else if (o->kind == OP_READ) {
		if ((bad = pieces_check(buf, &o->pc, o->key, o->off)) >= 0)
			die("QP %u: %s seq %" PRIu64 " of data slot %u [%u, +%u): byte %ld differs", q, name, o->seq,
			    o->slot, o->off, o->len, bad);
	} else if (o->kind == OP_FADD || o->kind == OP_CSWAP) {
		if (result != o->expect)
			die("QP %u: %s seq %" PRIu64 " returned %#" PRIx64 ", the word held %#" PRIx64, q, name,
			    o->seq, result, o->expect);
	}
	if (o->kind == OP_WRITE || (o->kind == OP_READ && o->slot != SWEEP_ATOMIC))
		st->slot_busy[o->slot] = 0;
	o->busy = 0;
	st->inflight--;
	if (o->sweep) {
		r->sweeps++;
		return;
	}
	r->done++;
	r->count[o->kind]++;
	r->bytes[o->kind] += o->len;
}

static void credit(struct requester *r, uint32_t q, const struct ibv_wc *wc)
{
	struct qstate *st = &r->qs[q];

	if (wc->status != IBV_WC_SUCCESS)
		die("QP %u: the credit receive after message %" PRIu64 " completed with %s", q, st->credits,
		    ibv_wc_status_str(wc->status));
	if (wc->opcode != IBV_WC_RECV || !(wc->wc_flags & IBV_WC_WITH_IMM) || wc->byte_len)
		die("QP %u: a credit came as opcode %d, flags %#x, %u bytes", q, (int)wc->opcode, wc->wc_flags,
		    wc->byte_len);
	/* A credit says how many messages the responder has checked: more than
	 * the last one said (several at once when it had to wait for room), and
	 * no more than were sent. */
	uint32_t upto = ntohl(wc->imm_data), last = (uint32_t)st->credits;
	if (upto - last - 1 >= (uint32_t)(st->msgs - st->credits))
		die("QP %u: a credit for %u messages after %" PRIu64 " of %" PRIu64 " sent: confirmed twice or unsent", q,
		    upto, st->credits, st->msgs);
	st->credits += upto - last;
	st->credit_at = now_s();
	post_credit_recv(r, q);
}

/* watchdog names the oldest operation (or unconfirmed message) older
 * than the timeout, and stops the soak. */
static void watchdog(struct requester *r, double t)
{
	for (uint32_t q = 0; q < r->p->qps; q++) {
		struct qstate *st = &r->qs[q];
		for (uint32_t i = 0; i < r->p->depth; i++) {
			struct op *o = &st->ops[i];
			if (o->busy && t - o->posted > r->p->timeout)
				die("watchdog: QP %u: %s seq %" PRIu64 " (%u bytes) has had no completion for %.0f s", q,
				    o->sweep ? "final read" : op_names[o->kind], o->seq, o->len, t - o->posted);
		}
		if (st->msgs > st->credits && t - st->credit_at > r->p->timeout)
			die("watchdog: QP %u: message %" PRIu64 " (of %" PRIu64 " sent) unconfirmed by the responder for "
			    "%.0f s",
			    q, st->credits, st->msgs, t - st->credit_at);
	}
}

static int finished(struct requester *r)
{
	if (r->done < r->p->ops)
		return 0;
	for (uint32_t q = 0; q < r->p->qps; q++)
		if (r->qs[q].inflight || r->qs[q].sweep <= r->p->depth || r->qs[q].msgs != r->qs[q].credits)
			return 0;
	return 1;
}

static void progress(struct requester *r, double start, double *last)
{
	double t = now_s();

	if (t - *last < 10)
		return;
	*last = t;
	fprintf(stderr, "soak: %" PRIu64 " of %" PRIu64 " operations done, %.0f ops/s\n", r->done, r->p->ops,
		(double)r->done / (t - start));
}

static void run(struct requester *r)
{
	struct ibv_wc wc[64];
	double start = now_s(), last = start, dog = start;

	while (!finished(r)) {
		for (uint32_t q = 0; q < r->p->qps; q++)
			fill_qp(r, q);
		int n = side_poll(&r->s, wc, 64, 200);
		for (int k = 0; k < n; k++) {
			uint32_t q = (uint32_t)(wc[k].wr_id >> 32 & 0x7fffffff);
			if (q >= r->p->qps)
				die("a completion of an unknown work request %#" PRIx64, wc[k].wr_id);
			if (wc[k].wr_id & CREDIT_WR)
				credit(r, q, &wc[k]);
			else if ((uint32_t)wc[k].wr_id < r->p->depth)
				check_op(r, q, (uint32_t)wc[k].wr_id, &r->qs[q].ops[(uint32_t)wc[k].wr_id], &wc[k]);
			else
				die("a completion of an unknown work request %#" PRIx64, wc[k].wr_id);
		}
		if (now_s() - dog >= 1) {
			dog = now_s();
			watchdog(r, dog);
			progress(r, start, &last);
		}
	}
}

static void summary(struct requester *r, double secs, const char *reply)
{
	uint64_t bytes = 0;

	printf("soak: ok: %" PRIu64 " operations on %u QPs, seed %" PRIu64 ", sizes 0..%u, depth %u\n", r->done,
	       r->p->qps, r->p->seed, r->p->max_size, r->p->depth);
	for (int k = 0; k < OP_KINDS; k++) {
		printf("soak:   %-9s %10" PRIu64 " ops %14" PRIu64 " bytes\n", op_names[k], r->count[k], r->bytes[k]);
		bytes += r->bytes[k];
	}
	printf("soak:   final reads %" PRIu64 " (every data slot and atomic word checked once more)\n", r->sweeps);
	printf("soak:   responder: %s\n", reply);
	printf("soak: ops %" PRIu64 " bytes %" PRIu64 " seconds %.2f ops/s %.0f MB/s %.1f\n", r->done, bytes, secs,
	       (double)r->done / secs, (double)bytes / secs / 1e6);
}

int run_requester(const struct params *p, const char *dev, int gid_index, const char *host, const char *port)
{
	struct requester r = {.p = p};
	char line[256];
	uint32_t *psn = calloc(p->qps, sizeof(*psn));
	FILE *f;
	double start;

	r.qs = calloc(p->qps, sizeof(*r.qs));
	if (!psn || !r.qs || !(f = fdopen(oob_connect(host, port), "r+")))
		die("out of memory");
	oob_send(f, "params %" PRIu64 " %" PRIu64 " %u %u %u %u %u %u\n", p->ops, p->seed, p->qps, p->depth,
		 p->credits, p->max_size, p->timeout, p->ack_timeout);
	layout_requester(p, &r.s.lay);
	layout_responder(p, &r.rl);
	side_open(&r.s, dev, gid_index, p, (int)(p->qps * (p->depth + p->credits) + 16), p->depth, p->credits);
	r.max_sge = MAX_SGE;
	for (uint32_t q = 0; q < p->qps; q++) {
		init_qp(&r, q);
		psn[q] = (uint32_t)key_of(p->seed, q, KEY_PSN, 1) & 0xffffff;
		for (uint32_t c = 0; c < p->credits; c++)
			post_credit_recv(&r, q);
	}
	side_send_info(&r.s, f, p->qps, psn);
	side_recv_info(f, p->qps, &r.pr);
	side_connect(&r.s, p, &r.pr, psn);
	oob_recv(f, line, sizeof(line));
	if (strcmp(line, "ready"))
		die("the responder said %s, not ready", line);
	start = now_s();
	run(&r);
	double secs = now_s() - start;
	oob_send(f, "done %" PRIu64 "\n", r.done);
	oob_recv(f, line, sizeof(line));
	if (strncmp(line, "ok ", 3))
		die("the responder said %s", line);
	summary(&r, secs, line + 3);
	side_close(&r.s, p->qps);
	for (uint32_t q = 0; q < p->qps; q++)
		free_qp(&r.qs[q]);
	free(r.qs);
	free(r.pr.qpn);
	free(r.pr.psn);
	free(psn);
	fclose(f);
	return 0;
}
