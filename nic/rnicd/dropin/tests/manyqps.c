/* SPDX-License-Identifier: BSD-2-Clause */
/* manyqps: a program whose soft RLIMIT_NOFILE is 256 (C programs usually
 * run with 1024 and do not raise it) creates 1000 QPs through rnicd: a
 * QP costs the program no descriptor (its ring memfd is closed once
 * mapped; its drainer is rung through the session doorbell). Then a pair
 * created after them, whose bells lie beyond the first bitmap words, is
 * connected and an RDMA WRITE goes through it. A CQ costs no descriptor
 * either (protocol version 6: its events come through its completion
 * channel's socket), so twice as many CQs as the limit are created too
 * (the corner test cqchannels does more with them). The QPs' rings lie in the session's
 * ring chunks (protocol version 5), a memfd per 2 MiB chunk sent once: at
 * the limit, QPs are created until one needs a new chunk, whose memfd is
 * lost (EMFILE); once a descriptor is free the next QP fetches the chunk
 * (RING_CHUNK) and works. */
#include "corners.h"

#include <sys/resource.h>
#include <unistd.h>

#define NQPS 1000
#define SOFT_NOFILE 256

/* cqs_beyond_the_limit creates more CQs than the soft limit allows
 * descriptors: a CQ costs none (protocol version 6; version 5's eventfd
 * per CQ failed with EMFILE near the limit). */
static void cqs_beyond_the_limit(struct ibv_context *ctx)
{
	static struct ibv_cq *cqs[2 * SOFT_NOFILE];
	int n, err = 0;

	for (n = 0; n < 2 * SOFT_NOFILE; n++)
		if (!(cqs[n] = ibv_create_cq(ctx, 4, NULL, NULL, 0))) {
			err = errno;
			break;
		}
	check(n == 2 * SOFT_NOFILE, "%d CQs with a soft descriptor limit of %d (created %d: %s)", 2 * SOFT_NOFILE,
	      SOFT_NOFILE, n, strerror(err));
	while (n > 0)
		ibv_destroy_cq(cqs[--n]);
}

/* ring_mappings counts this process's mappings of rnicd's memfds (ring
 * chunks, the session doorbell). */
static int ring_mappings(void)
{
	char line[512];
	int n = 0;
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f)
		die("/proc/self/maps");
	while (fgets(line, sizeof(line), f))
		n += strstr(line, "memfd:rnic-mr") != NULL;
	fclose(f);
	return n;
}

/* qps_at_the_limit: with every descriptor taken, QPs are created until
 * one's reply brings a new chunk's memfd, which is lost (EMFILE); with one
 * descriptor free again a QP placed in that chunk fetches it and works.
 * The QP whose reply was lost stays the daemon's until the session ends,
 * holding its CQ and PD: they are busy, and go with the context. */
static void qps_at_the_limit(const char *dev, struct ibv_qp_init_attr *qa0)
{
	static struct ibv_qp *qps[1024]; /* 512 one-page rings fill a chunk */
	static int fillers[2 * SOFT_NOFILE];
	static struct ibv_cq *cq; /* static: busy, it outlives its destroy */
	static struct ibv_pd *pd;
	struct ibv_qp_attr attr = {.qp_state = IBV_QPS_INIT, .port_num = 1};
	struct ibv_qp_init_attr qa = *qa0;
	struct ibv_context *ctx = open_named(dev);
	struct ibv_qp *after;
	int n, nf = 0, err = 0;

	if (!(pd = ibv_alloc_pd(ctx)) || !(cq = ibv_create_cq(ctx, 16, NULL, NULL, 0)))
		die("PD, CQ");
	qa.send_cq = qa.recv_cq = cq;
	while (nf < 2 * SOFT_NOFILE && (fillers[nf] = dup(0)) >= 0)
		nf++;
	for (n = 0; n < 1024; n++)
		if (!(qps[n] = ibv_create_qp(pd, &qa))) {
			err = errno;
			break;
		}
	check(n < 1024 && err == EMFILE, "at the descriptor limit, QP %d (a new ring chunk) fails with EMFILE (%s)", n,
	      strerror(err));
	close(fillers[--nf]);
	after = ibv_create_qp(pd, &qa);
	check(after != NULL, "a QP in the chunk whose memfd was lost, once a descriptor is free (%s)",
	      after ? "ok" : strerror(errno));
	if (after) {
		check(ibv_modify_qp(after, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0,
		      "the QP in the fetched chunk moves to INIT");
		ibv_destroy_qp(after);
	}
	while (nf > 0)
		close(fillers[--nf]);
	while (n > 0)
		ibv_destroy_qp(qps[--n]);
	check(ibv_destroy_cq(cq) == EBUSY, "the CQ of the lost QP is busy until the session ends");
	ibv_close_device(ctx);
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
	/* a page of rings each: two 2 MiB chunks, and the doorbell */
	check(ring_mappings() <= 3, "%d QPs map %d areas of rnicd's memory, want at most 3 (two ring chunks, the doorbell)",
	      n, ring_mappings());
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
	cqs_beyond_the_limit(a.ctx);
	qps_at_the_limit(d0, &qa);
	while (n > 0)
		if (ibv_destroy_qp(qps[--n]))
			check(0, "destroy QP %d", n);
	ibv_destroy_cq(cq);
	pair_close(&a, &b);
	side_free(&a);
	side_free(&b);
}
