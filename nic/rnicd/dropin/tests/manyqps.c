/* manyqps: a program whose soft RLIMIT_NOFILE is 256 (C programs usually
 * run with 1024 and do not raise it) creates 1000 QPs through rnicd: a
 * QP costs the program no descriptor (its ring memfd is closed once
 * mapped; its drainer is rung through the session doorbell). Then a pair
 * created after them, whose bells lie beyond the first bitmap words, is
 * connected and an RDMA WRITE goes through it. A CQ still costs a
 * descriptor (its notify eventfd): creating CQs past the limit fails with
 * EMFILE (the reply's descriptors could not be received) rather than
 * hanging the call that waits for it. */
#include "corners.h"

#include <sys/resource.h>

#define NQPS 1000
#define SOFT_NOFILE 256

/* cqs_past_the_limit creates CQs until one fails: with EMFILE, near the
 * limit; the context still works after it. */
static void cqs_past_the_limit(struct ibv_context *ctx)
{
	static struct ibv_cq *cqs[2 * SOFT_NOFILE];
	struct ibv_cq *after;
	int n, err = 0;

	for (n = 0; n < 2 * SOFT_NOFILE; n++)
		if (!(cqs[n] = ibv_create_cq(ctx, 4, NULL, NULL, 0))) {
			err = errno;
			break;
		}
	check(n < 2 * SOFT_NOFILE && err == EMFILE, "CQ %d past the descriptor limit fails with EMFILE (%s)", n,
	      strerror(err));
	while (n > 0)
		ibv_destroy_cq(cqs[--n]);
	after = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	check(after != NULL, "a CQ again once descriptors are free");
	if (after)
		ibv_destroy_cq(after);
}

void test_manyqps(const char *d0, const char *d1)
{
	struct rlimit rl;
	struct side a = {0}, b = {0};
	struct ibv_qp_init_attr qa = {0};
	static struct ibv_qp *qps[NQPS];
	static unsigned char src[64], dst[64];
	struct ibv_mr *smr, *dmr;
	struct ibv_cq *cq;
	int n = 0, st;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		die("getrlimit");
	rl.rlim_cur = SOFT_NOFILE;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		die("setrlimit");
	a.ctx = open_named(d0);
	if (!(a.pd = ibv_alloc_pd(a.ctx)) || !(cq = ibv_create_cq(a.ctx, 16, NULL, NULL, 0)))
		die("PD, CQ");
	qa.send_cq = qa.recv_cq = cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	for (n = 0; n < NQPS; n++)
		if (!(qps[n] = ibv_create_qp(a.pd, &qa)))
			break;
	check(n == NQPS, "%d QPs with a soft descriptor limit of %d (created %d: %s)", NQPS, SOFT_NOFILE, n,
	      n < NQPS ? strerror(errno) : "ok");
	side_open(&a, d0, NULL, NULL, NULL, 16, 16);
	side_open(&b, d1, NULL, NULL, NULL, 16, 16);
	connect_pair(&a, &b);
	memset(src, 0x5a, sizeof(src));
	smr = reg(a.pd, src, sizeof(src), ALL_ACCESS);
	dmr = reg(b.pd, dst, sizeof(dst), ALL_ACCESS);
	st = rdma(&a, IBV_WR_RDMA_WRITE, smr, src, sizeof(src), (uintptr_t)dst, dmr->rkey);
	check(st == IBV_WC_SUCCESS && !memcmp(src, dst, sizeof(dst)), "RDMA WRITE on the QP after %d others (status %d)",
	      n, st);
	ibv_dereg_mr(smr);
	ibv_dereg_mr(dmr);
	cqs_past_the_limit(a.ctx);
	while (n > 0)
		if (ibv_destroy_qp(qps[--n]))
			check(0, "destroy QP %d", n);
	ibv_destroy_cq(cq);
	pair_close(&a, &b);
	side_free(&a);
	side_free(&b);
}
