/* SPDX-License-Identifier: BSD-2-Clause */
/* soak: a verifying RC soak on the plain verbs API. Two processes, a
 * requester and a responder, connect N RC QPs (the out-of-band exchange is
 * a line of text per item over TCP) and the requester issues a seeded
 * random mix of RDMA WRITE, WRITE with immediate, READ, SEND, SEND with
 * immediate, fetch-and-add and compare-and-swap of random sizes, every
 * byte patterned from (seed, QP, sequence) and checked where it lands.
 * Nothing here is rnic's: it runs on any verbs provider. */
#ifndef SOAK_H
#define SOAK_H

#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>

/* MAX_SGE: a WR scatters or gathers over at most this many pieces. GAP: the
 * bytes left between two pieces of one buffer, so that a piece placed one
 * byte off shows. */
#define MAX_SGE 3
#define GAP 64

/* The kinds of operation the requester issues. */
enum op_kind {
	OP_WRITE,
	OP_WRITE_IMM,
	OP_READ,
	OP_SEND,
	OP_SEND_IMM,
	OP_FADD,
	OP_CSWAP,
	OP_KINDS
};

extern const char *const op_names[OP_KINDS];

/* params are what the requester's command line chose and the responder
 * learns from it: the shape of both sides' memory follows from them. */
struct params {
	uint64_t ops;      /* operations the requester issues */
	uint64_t seed;     /* of every random choice and pattern */
	uint32_t qps;      /* RC QPs */
	uint32_t depth;    /* operations in flight per QP (and the responder's data slots per QP) */
	uint32_t credits;  /* receives the responder keeps posted per QP: messages in flight */
	uint32_t max_size; /* the largest message, WRITE or READ, in bytes */
	uint32_t timeout;  /* the watchdog: seconds without the completion an operation waits for */
	uint8_t ack_timeout; /* the QPs' local ACK timeout (4.096 us * 2^n) */
};

/* layout: where each QP's pieces lie in one side's registered memory.
 * Every piece of a QP is a fixed offset from qp_base(q). */
struct layout {
	size_t slot;     /* one data or message slot: max_size rounded up */
	size_t buf;      /* one scatter/gather buffer: slot + room for the gaps */
	size_t per_qp;   /* one QP's share */
	size_t total;    /* the whole region */
};

/* Responder's QP share: atomic word (64 bytes), depth data slots, credits
 * message slots, credits receive buffers. Requester's: depth atomic result
 * words (64 bytes each), depth operation buffers. */
void layout_responder(const struct params *p, struct layout *l);
void layout_requester(const struct params *p, struct layout *l);
size_t resp_atomic(const struct params *p, const struct layout *l, uint32_t q);
size_t resp_data_slot(const struct params *p, const struct layout *l, uint32_t q, uint32_t s);
size_t resp_msg_slot(const struct params *p, const struct layout *l, uint32_t q, uint32_t k);
size_t resp_recv_buf(const struct params *p, const struct layout *l, uint32_t q, uint32_t r);
size_t req_result(const struct params *p, const struct layout *l, uint32_t q, uint32_t s);
size_t req_buf(const struct params *p, const struct layout *l, uint32_t q, uint32_t s);

/* pattern.c: the random numbers and the byte patterns. */
uint64_t mix64(uint64_t x);
uint64_t key_of(uint64_t seed, uint32_t q, uint32_t kind, uint64_t n);
uint64_t rng_next(uint64_t *state);
uint32_t rng_below(uint64_t *state, uint32_t n);
uint32_t random_size(uint64_t *state, uint32_t max);
void pattern_fill(uint8_t *dst, size_t len, uint64_t key, size_t off);
/* pattern_check returns the index of the first byte that differs, or -1. */
long pattern_check(const uint8_t *src, size_t len, uint64_t key, size_t off);

/* Pattern keys' kinds, so that no two uses of (seed, QP, n) share bytes. */
enum key_kind { KEY_OP = 1, KEY_MSG, KEY_INIT, KEY_ATOMIC, KEY_RNG, KEY_PSN };

/* message: what the requester's k-th message (a receive-consuming
 * operation) of QP q is; both sides derive it from (seed, q, k). */
struct message {
	enum op_kind kind; /* OP_SEND, OP_SEND_IMM or OP_WRITE_IMM */
	uint32_t len;
	uint32_t imm;
	uint64_t key;
};
void message_of(const struct params *p, uint32_t q, uint64_t k, struct message *m);

/* pieces: a buffer's bytes split into at most MAX_SGE pieces with GAP bytes
 * between them. */
struct pieces {
	int n;
	uint32_t len[MAX_SGE];
	uint32_t off[MAX_SGE]; /* each piece's place in the buffer */
};
void split(uint64_t *rng, uint32_t len, uint32_t max_sge, struct pieces *pc);
void pieces_fill(uint8_t *buf, const struct pieces *pc, uint64_t key, size_t off);
long pieces_check(const uint8_t *buf, const struct pieces *pc, uint64_t key, size_t off);
int pieces_sge(const struct pieces *pc, uint8_t *buf, uint32_t lkey, struct ibv_sge *sge);

/* oob.c: the out-of-band exchange, lines of text over TCP. */
int oob_listen(const char *port);
int oob_connect(const char *host, const char *port);
void oob_send(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* oob_recv reads one line into buf (without its newline); dies at EOF. */
void oob_recv(FILE *f, char *buf, size_t size);

/* side: one process's verbs objects. */
struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *mem;
	struct layout lay;
	struct ibv_qp **qp;
	union ibv_gid gid;
	uint16_t lid;
	enum ibv_mtu mtu;
	int gid_index;
	int events; /* completion events got but not yet acknowledged */
	uint32_t max_rd_atomic;
};

/* peer: what the other side told us. */
struct peer {
	union ibv_gid gid;
	uint16_t lid;
	enum ibv_mtu mtu;
	uint64_t addr;
	uint32_t rkey;
	uint32_t *qpn;
	uint32_t *psn;
	uint32_t max_rd_atomic;
};

/* verbs.c: opening, connecting, waiting and closing. */
void side_open(struct side *s, const char *dev, int gid_index, const struct params *p, int cqe, uint32_t send_wr,
	       uint32_t recv_wr);
void side_send_info(struct side *s, FILE *f, uint32_t qps, uint32_t *psn);
void side_recv_info(FILE *f, uint32_t qps, struct peer *pr);
void side_connect(struct side *s, const struct params *p, const struct peer *pr, const uint32_t *my_psn);
/* side_poll polls up to n completions, waiting on the channel (at most
 * wait_ms) when there are none; it returns how many it got. */
int side_poll(struct side *s, struct ibv_wc *wc, int n, int wait_ms);
void side_close(struct side *s, uint32_t qps);

/* die prints a message, "soak:" first, and exits 1. */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
double now_s(void);

int run_requester(const struct params *p, const char *dev, int gid_index, const char *host, const char *port);
int run_responder(const char *dev, int gid_index, const char *port);

#endif
