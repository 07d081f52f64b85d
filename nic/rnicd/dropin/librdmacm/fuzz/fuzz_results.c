/* SPDX-License-Identifier: BSD-2-Clause */
/* A fuzz driver for the library's decoders of what rnicd sends on the CM
 * ops: CM_RESULT (AsyncResult and its bodies: CMRequestInfo, CMConnInfo,
 * CMRejectInfo, CMUDPeerInfo), CM_DISCONNECTED and CM_INIT_QP_ATTR's reply (CMQPAttr), for connected and UD ids, fed to the sink with requests of
 * every kind in flight, so each body decoder is reached; the events they
 * make are then taken and acknowledged, the ids destroyed. gcc has no
 * libFuzzer: valid seeds, then random flips, truncations and extensions,
 * under AddressSanitizer and UBSan (leaks checked at exit). The daemon is
 * stubbed: the driver links the CM sources, not libibverbs. Given a
 * directory, every golden body the Go encoder wrote there is a seed too.
 * Usage: fuzz_results [ITERS [DIR]] */
#include "../cm.h"
#include "rn_corpus.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

pthread_mutex_t cm_mu = PTHREAD_MUTEX_INITIALIZER;
struct cm_dev cm_devs[CM_MAX_DEVS];
int cm_ndevs;
static int key;
/* the token of the last request sent: the library numbers them */
static uint32_t last_token;

int cm_init(void) { return 0; }
int cm_dev_of_addr(const struct sockaddr *sa) { return sa->sa_family == AF_INET ? 0 : -2; }
int cm_complete(struct cm_id *id) { return (void)id, 0; }
/* multicast (mcast.c) is local: no daemon body reaches it */
void cm_mc_taken(struct cm_event *e) { (void)e; }
void cm_mc_free(struct cm_id *c) { (void)c; }
/* a PD is the verbs library's (qp.c), which the driver does not link */
void cm_give_pd(struct cm_id *c) { (void)c; }
struct ibv_pd *cm_default_pd(int dev) { return (void)dev, NULL; }
struct ibv_pd *cm_default_pd_peek(int dev) { return (void)dev, NULL; }
int rnic_private_cm_poll(struct ibv_context *ctx) { return (void)ctx, 0; }
int rnic_private_cm_call(struct ibv_context *ctx, uint16_t op, const void *body, size_t n, void *reply,
			 size_t cap, size_t *len)
{
	const uint8_t *b = body;
	(void)ctx, (void)reply, (void)cap;
	/* an async request starts with its token (the driver's own have op 0) */
	if (n >= 4 && (op == 0 || op == RNICD_OP_CM_GET_REQUEST || op == RNICD_OP_CM_DISCONNECT))
		last_token = b[0] | b[1] << 8 | b[2] << 16 | (uint32_t)b[3] << 24;
	*len = 0;
	return 0;
}

static void put_u32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* result sends a CM_RESULT for token with status st and body b. */
static void result(uint32_t token, uint32_t st, const uint8_t *b, size_t n)
{
	uint8_t m[2048];
	if (n > sizeof(m) - 16)
		n = sizeof(m) - 16;
	put_u32(m, token), put_u32(m + 4, st), put_u32(m + 8, 0), put_u32(m + 12, (uint32_t)n);
	if (n)
		memcpy(m + 16, b, n);
	cm_sink(&key, RNICD_OP_CM_RESULT, m, 16 + n);
}

static void one(const uint8_t *in, size_t n)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *l, *c, *u;
	struct rdma_cm_event *ev;
	struct cbuf b;
	uint32_t first = 0;

	fcntl(ch->fd, F_SETFL, O_NONBLOCK);
	rdma_create_id(ch, &l, NULL, RDMA_PS_TCP);
	rdma_create_id(ch, &c, NULL, RDMA_PS_TCP);
	rdma_create_id(ch, &u, NULL, RDMA_PS_UDP); /* a UD listener */
	to_cid(l)->listener[0] = 7;
	to_cid(u)->listener[0] = 8;
	to_cid(c)->dev = 0;
	/* the input as the body of each kind's result: a success, then
	 * failures (a rejected connect's or unreachable UD resolve's body is
	 * a CMRejectInfo); a UD listener's request too */
	for (int round = 0; round < 3; round++) {
		uint32_t from = 0;
		for (int k = AS_GET_REQUEST; k <= AS_CONNECT_EXT; k++) {
			memset(&b, 0, sizeof(b));
			c_u32(&b, 0);
			cm_async(to_cid(k == AS_GET_REQUEST ? l : c), 0, k, 0, &b);
			if (k == AS_GET_REQUEST)
				from = last_token;
			if (round == 0 && k == AS_GET_REQUEST)
				first = last_token;
		}
		memset(&b, 0, sizeof(b));
		c_u32(&b, 0);
		cm_async(to_cid(u), 0, AS_GET_REQUEST, 0, &b);
		for (uint32_t t = from; t <= last_token; t++)
			result(t, round == 2 ? RNICD_STATUS_UNREACHABLE : round ? RNICD_STATUS_REJECTED : RNICD_STATUS_OK, in, n);
	}
	cm_sink(&key, RNICD_OP_CM_DISCONNECTED, in, n);
	cm_sink(&key, RNICD_OP_CM_RESULT, in, n); /* and as a whole message */
	for (int st = IBV_QPS_RTR; st <= IBV_QPS_RTS; st++) { /* CM_INIT_QP_ATTR's reply (external.c) */
		struct ibv_qp_attr a = {.qp_state = st};
		int mask;
		cm_decode_qp_attr(in, n, &a, &mask);
	}
	while (rdma_get_cm_event(ch, &ev) == 0) {
		struct rdma_cm_id *id = ev->event == RDMA_CM_EVENT_CONNECT_REQUEST ? ev->id : NULL;
		if (ev->param.conn.private_data_len)
			(void)((volatile const uint8_t *)ev->param.conn.private_data)[ev->param.conn.private_data_len - 1];
		rdma_ack_cm_event(ev);
		if (id)
			rdma_destroy_id(id);
	}
	/* what is left in flight (the rearmed GET_REQUESTs, rejected
	 * decodes) ends with a failure */
	cm_rearm();
	for (uint32_t t = first; t <= last_token; t++)
		result(t, 1, NULL, 0);
	while (rdma_get_cm_event(ch, &ev) == 0)
		rdma_ack_cm_event(ev);
	to_cid(l)->listener[0] = 0;
	to_cid(u)->listener[0] = 0;
	rdma_destroy_id(u);
	rdma_destroy_id(c);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(ch);
}

static size_t seed(uint8_t *out, int which)
{
	struct cbuf w = {0};
	static const struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0x1234};
	switch (which) {
	case 0: /* CMRequestInfo */
		c_u32(&w, 9), c_blob(&w, "hello", 5);
		c_addr4(&w, (const struct sockaddr *)&a), c_u16(&w, 7174);
		c_addr4(&w, (const struct sockaddr *)&a), c_u16(&w, 4242);
		break;
	case 1: /* CMConnInfo */
		c_u32(&w, 3), c_blob(&w, "pd", 2);
		c_addr4(&w, (const struct sockaddr *)&a), c_u16(&w, 1);
		c_addr4(&w, (const struct sockaddr *)&a), c_u16(&w, 2), c_u32(&w, 0x11);
		break;
	case 2: /* CMUDPeerInfo */
		c_u32(&w, 0x123), c_u32(&w, 0x01234567), c_blob(&w, "ud", 2);
		c_addr4(&w, (const struct sockaddr *)&a), c_u16(&w, 1);
		c_addr4(&w, (const struct sockaddr *)&a), c_u16(&w, 7174);
		c_addr4(&w, (const struct sockaddr *)&a), c_u8(&w, 1), c_u8(&w, 64), c_u8(&w, 0), c_u32(&w, 0);
		break;
	default: /* CMRejectInfo, as a failure (odd first byte) */
		c_u16(&w, 0x1c01), c_blob(&w, "nope", 4);
		break;
	}
	memcpy(out, w.b, w.n);
	return w.n;
}

int main(int argc, char **argv)
{
	long iters = argc > 1 ? atol(argv[1]) : 100000;
	uint8_t buf[RN_CORPUS_FILE], in[RN_CORPUS_FILE];
	struct rn_corpus corpus = {0};
	unsigned s = 1;

	if (argc > 2 && rn_corpus_load(&corpus, argv[2]) < 0) {
		perror(argv[2]);
		return 2;
	}
	cm_ndevs = 1;
	cm_devs[0].key = &key;
	cm_devs[0].fd = -1;
	cm_devs[0].dead = 1; /* no socket to watch or read */
	for (long i = 0; i < iters; i++) {
		int k = (int)(i % (4 + corpus.len));
		size_t n;
		if (k < 4) {
			n = seed(buf, k);
		} else {
			n = corpus.n[k - 4];
			memcpy(buf, corpus.b[k - 4], n);
		}
		memcpy(in, buf, n);
		for (int m = rand_r(&s) % 8; m > 0; m--) {
			switch (rand_r(&s) % 3) {
			case 0:
				if (n)
					in[rand_r(&s) % n] ^= (uint8_t)(1u << (rand_r(&s) % 8));
				break;
			case 1:
				n = n ? (size_t)rand_r(&s) % n : 0;
				break;
			default:
				for (int k = rand_r(&s) % 16; k > 0 && n < sizeof(in); k--)
					in[n++] = (uint8_t)rand_r(&s);
			}
		}
		one(in, n);
	}
	printf("fuzz_results: %ld inputs (%d golden seeds)\n", iters, corpus.len);
	rn_corpus_free(&corpus);
	return 0;
}
