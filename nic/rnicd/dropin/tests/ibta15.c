/* SPDX-License-Identifier: BSD-2-Clause */
/* corners ibta15: IBTA 1.5's ATOMIC WRITE and FLUSH through the qp_ex API,
 * as rdma-core 45 and later offer them (ibv_wr_atomic_write,
 * ibv_wr_flush): a RoCE device advertises both in device_cap_flags_ex,
 * takes QPs asking for them and MRs and QPs with the FLUSH access flags,
 * places an ATOMIC WRITE's 8 bytes and completes a FLUSH after the WRITE
 * before it; the misuses fail where libibverbs' providers fail them (at
 * wr_complete, or with the remote access error of a FLUSH the region does
 * not allow). An iWARP device has neither, and says so at every door. */
#include "corners.h"

#include <stddef.h>

/* rdma-core 45's names; the headers here are rdma-core 44's. */
#define WR_FLUSH 14
#define WC_FLUSH 8
#define QP_EX_WITH_FLUSH (1ULL << 11)
#define ACCESS_FLUSH_GLOBAL (1 << 8)
#define ACCESS_FLUSH_PERSISTENT (1 << 9)
#define FLUSH_GLOBAL 1
#define FLUSH_PERSISTENT 2
#define FLUSH_RANGE 0
#define FLUSH_MR 1
#define DEVICE_IBTA15 ((1ULL << 38) | (1ULL << 39) | (1ULL << 40)) /* FLUSH_GLOBAL, _PERSISTENT, ATOMIC_WRITE */

#define FLUSH_ACCESS (ACCESS_FLUSH_GLOBAL | ACCESS_FLUSH_PERSISTENT)

typedef void (*wr_flush_fn)(struct ibv_qp_ex *qp, uint32_t rkey, uint64_t remote_addr, size_t len, uint8_t type,
			    uint8_t level);

/* wr_flush is rdma-core 45's ibv_wr_flush: the member of struct ibv_qp_ex
 * after wr_atomic_write, beyond the end of rdma-core 44's structure. */
static void wr_flush(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr, size_t len, uint8_t type, uint8_t level)
{
	wr_flush_fn f;
	memcpy(&f, (const char *)x + sizeof(*x), sizeof(f));
	f(x, rkey, addr, len, type, level);
}

/* open_ex opens s on dev with an RC QP made by ibv_create_qp_ex asking for
 * ops; NULL QP (errno set) if refused. */
static void open_ex(struct side *s, const char *dev, uint64_t ops)
{
	struct ibv_qp_init_attr_ex qx = {0};

	if (!s->ctx)
		s->ctx = open_named(dev);
	if (!s->pd && !(s->pd = ibv_alloc_pd(s->ctx)))
		die("ibv_alloc_pd");
	if (!s->cq && !(s->cq = ibv_create_cq(s->ctx, 16, NULL, NULL, 0)))
		die("ibv_create_cq");
	qx.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	qx.pd = s->pd;
	qx.send_cq = qx.recv_cq = s->cq;
	qx.qp_type = IBV_QPT_RC;
	qx.cap.max_send_wr = qx.cap.max_recv_wr = 8;
	qx.cap.max_send_sge = qx.cap.max_recv_sge = 1;
	qx.send_ops_flags = ops;
	errno = 0;
	s->qp = ibv_create_qp_ex(s->ctx, &qx);
	if (ibv_query_gid(s->ctx, 1, 0, &s->gid))
		die("ibv_query_gid");
}

/* allow_flush lets s's QP take FLUSHes of both placement types (RTS→RTS). */
static void allow_flush(struct side *s)
{
	struct ibv_qp_attr a = {0};

	a.qp_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC | FLUSH_ACCESS;
	check(ibv_modify_qp(s->qp, &a, IBV_QP_ACCESS_FLAGS) == 0, "QP access flags with both FLUSH types");
}

/* want_wc waits for one completion of id with status st and opcode op. */
static void want_wc(struct ibv_cq *cq, uint64_t id, enum ibv_wc_status st, int op)
{
	struct ibv_wc wc;

	if (wait_wc(cq, &wc, TIMEOUT_MS) != 1) {
		check(0, "completion of WR %llu: none", (unsigned long long)id);
		return;
	}
	check(wc.wr_id == id && wc.status == st && (st != IBV_WC_SUCCESS || (int)wc.opcode == op),
	      "WR %llu: %s, opcode %d (want WR %llu: %s, opcode %d)", (unsigned long long)wc.wr_id,
	      ibv_wc_status_str(wc.status), wc.opcode, (unsigned long long)id, ibv_wc_status_str(st), op);
}

/* misuse: what wr_complete refuses, the WR list posting nothing. */
static void misuse(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr, struct ibv_mr *lmr)
{
	uint64_t v = 1;
	int rc;

	ibv_wr_start(x);
	ibv_wr_atomic_write(x, rkey, addr + 4, &v);
	rc = ibv_wr_complete(x);
	check(rc == EINVAL, "ATOMIC WRITE to a misaligned address: EINVAL (%d)", rc);
	ibv_wr_start(x);
	ibv_wr_atomic_write(x, rkey, addr, &v);
	ibv_wr_set_sge(x, lmr->lkey, (uintptr_t)lmr->addr, 8);
	rc = ibv_wr_complete(x);
	check(rc == EINVAL, "ATOMIC WRITE with an SGE: EINVAL (%d)", rc);
	ibv_wr_start(x);
	wr_flush(x, rkey, addr, 8, 0, FLUSH_RANGE);
	rc = ibv_wr_complete(x);
	check(rc == EINVAL, "FLUSH of no placement type: EINVAL (%d)", rc);
	ibv_wr_start(x);
	wr_flush(x, rkey, addr, 8, FLUSH_GLOBAL, 2);
	rc = ibv_wr_complete(x);
	check(rc == EINVAL, "FLUSH of a reserved selectivity: EINVAL (%d)", rc);
}

static void roce(const char *d0, const char *d1)
{
	static char src[PAGE], dst[PAGE] __attribute__((aligned(8))), other[PAGE];
	const uint64_t ops = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_ATOMIC_WRITE | QP_EX_WITH_FLUSH;
	const char value[8] = "ATOMIC!";
	struct side a = {0}, b = {0};
	struct ibv_mr *smr, *dmr, *gmr;
	struct ibv_qp_ex *x;
	uint64_t raddr;

	open_ex(&a, d0, ops);
	open_ex(&b, d1, ops);
	if (!a.qp || !b.qp)
		die("ibv_create_qp_ex with ATOMIC_WRITE and FLUSH (errno %d)", errno);
	connect_pair(&a, &b);
	allow_flush(&b);
	x = ibv_qp_to_qp_ex(a.qp);
	memset(src, 'w', sizeof(src));
	smr = reg(a.pd, src, sizeof(src), IBV_ACCESS_LOCAL_WRITE);
	dmr = reg(b.pd, dst, sizeof(dst), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | FLUSH_ACCESS);
	raddr = (uintptr_t)dst;
	misuse(x, dmr->rkey, raddr, smr);

	/* ATOMIC WRITE, a WRITE, then a FLUSH of that WRITE's range: all
	 * three complete in order, and the bytes are there. */
	ibv_wr_start(x);
	x->wr_id = 1, x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_write(x, dmr->rkey, raddr + 8, value);
	x->wr_id = 2;
	ibv_wr_rdma_write(x, dmr->rkey, raddr + 64);
	ibv_wr_set_sge(x, smr->lkey, (uintptr_t)src, 256);
	x->wr_id = 3;
	wr_flush(x, dmr->rkey, raddr + 64, 256, FLUSH_GLOBAL | FLUSH_PERSISTENT, FLUSH_RANGE);
	check(ibv_wr_complete(x) == 0, "ATOMIC WRITE, WRITE, FLUSH posted");
	want_wc(a.cq, 1, IBV_WC_SUCCESS, IBV_WC_ATOMIC_WRITE);
	want_wc(a.cq, 2, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	want_wc(a.cq, 3, IBV_WC_SUCCESS, WC_FLUSH);
	check(!memcmp(dst + 8, value, 8), "the ATOMIC WRITE's 8 bytes landed as they were (%.8s)", dst + 8);
	check(!memcmp(dst + 64, src, 256), "the WRITE before the FLUSH landed");

	/* A FLUSH of the whole region names it by its rkey alone. */
	ibv_wr_start(x);
	x->wr_id = 4;
	wr_flush(x, dmr->rkey, 0, 0, FLUSH_PERSISTENT, FLUSH_MR);
	check(ibv_wr_complete(x) == 0, "FLUSH of the whole MR posted");
	want_wc(a.cq, 4, IBV_WC_SUCCESS, WC_FLUSH);

	/* Persistence asked of a region that grants global visibility only:
	 * the responder's remote access error. */
	gmr = reg(b.pd, other, sizeof(other), IBV_ACCESS_LOCAL_WRITE | ACCESS_FLUSH_GLOBAL);
	ibv_wr_start(x);
	x->wr_id = 5;
	wr_flush(x, gmr->rkey, (uintptr_t)other, 8, FLUSH_PERSISTENT, FLUSH_RANGE);
	check(ibv_wr_complete(x) == 0, "FLUSH the region does not allow posted");
	want_wc(a.cq, 5, IBV_WC_REM_ACCESS_ERR, 0);

	ibv_dereg_mr(gmr);
	ibv_dereg_mr(dmr);
	ibv_dereg_mr(smr);
	pair_close(&a, &b);
	side_free(&a);
	side_free(&b);
}

/* iwarp: no RFC has ATOMIC WRITE or FLUSH, and the device says so. */
static void iwarp(const char *d0)
{
	static char buf[PAGE];
	struct ibv_device_attr_ex x;
	struct side s = {0};
	struct ibv_mr *mr;

	open_ex(&s, d0, IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_ATOMIC_WRITE);
	check(!s.qp && errno == EOPNOTSUPP, "iWARP: a QP with ATOMIC_WRITE refused, EOPNOTSUPP (%d)", errno);
	if (s.qp)
		ibv_destroy_qp(s.qp);
	open_ex(&s, d0, IBV_QP_EX_WITH_RDMA_WRITE | QP_EX_WITH_FLUSH);
	check(!s.qp && errno == EOPNOTSUPP, "iWARP: a QP with FLUSH refused, EOPNOTSUPP (%d)", errno);
	if (s.qp)
		ibv_destroy_qp(s.qp);
	if (ibv_query_device_ex(s.ctx, NULL, &x))
		die("ibv_query_device_ex");
	check(!(x.device_cap_flags_ex & DEVICE_IBTA15), "iWARP: no FLUSH or ATOMIC WRITE flag (%#llx)",
	      (unsigned long long)x.device_cap_flags_ex);
	errno = 0;
	mr = ibv_reg_mr(s.pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE | ACCESS_FLUSH_GLOBAL);
	check(!mr && errno == EOPNOTSUPP, "iWARP: an MR with FLUSH_GLOBAL refused, EOPNOTSUPP (%d)", errno);
	if (mr)
		ibv_dereg_mr(mr);
	ibv_destroy_cq(s.cq);
	s.cq = NULL;
	side_free(&s);
}

void test_ibta15(const char *d0, const char *d1)
{
	struct ibv_device_attr_ex x;
	struct ibv_context *ctx = open_named(d0);
	int is_iwarp = ctx->device->transport_type == IBV_TRANSPORT_IWARP;

	if (ibv_query_device_ex(ctx, NULL, &x))
		die("ibv_query_device_ex");
	ibv_close_device(ctx);
	if (is_iwarp) {
		iwarp(d0);
		return;
	}
	check((x.device_cap_flags_ex & DEVICE_IBTA15) == DEVICE_IBTA15,
	      "RoCE: FLUSH_GLOBAL, FLUSH_PERSISTENT and ATOMIC_WRITE in device_cap_flags_ex (%#llx)",
	      (unsigned long long)x.device_cap_flags_ex);
	roce(d0, d1);
}
