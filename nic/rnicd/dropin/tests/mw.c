/* SPDX-License-Identifier: BSD-2-Clause */
/* corners mw: memory windows. B binds windows over a buffer registered
 * with MW_BIND alone (no remote rights: every remote right comes from a
 * window), and A reaches it through them: a type 1 window bound with
 * ibv_bind_mw and unbound by a zero-length bind, a type 2B window bound
 * with IBV_WR_BIND_MW and freed by LOCAL_INV, by A's SEND_WITH_INV and by
 * ibv_dealloc_mw. After each, A's access through the dead rkey is a remote
 * access error. Each bind rule broken completes with IBV_WC_MW_BIND_ERR. */
#include "corners.h"

#define WIN PAGE

static char win[4 * PAGE] __attribute__((aligned(PAGE)));
/* A's memory: what it writes from (src) and reads into (dst), one MR. */
static char abuf[2 * PAGE];
static char *const src = abuf, *const dst = abuf + PAGE;

/* restate moves both QPs to RESET and back to RTS, connected again: an
 * error completion leaves them in ERR. */
static void restate(struct side *a, struct side *b)
{
	struct ibv_qp_attr r = {.qp_state = IBV_QPS_RESET};

	if (ibv_modify_qp(a->qp, &r, IBV_QP_STATE) || ibv_modify_qp(b->qp, &r, IBV_QP_STATE))
		die("modify to RESET");
	connect_pair(a, b);
}

/* bind2 posts a BIND_MW of mw to len bytes at addr of mr and returns its
 * completion's status (-1: none), *wc_op its opcode. */
static int bind2(struct side *s, struct ibv_mw *mw, struct ibv_mr *mr, void *addr, size_t len, unsigned access,
		 uint32_t rkey, int *wc_op)
{
	struct ibv_send_wr wr = {0}, *bad = NULL;
	struct ibv_wc wc;

	wr.wr_id = 21;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info.mr = mr;
	wr.bind_mw.bind_info.addr = (uintptr_t)addr;
	wr.bind_mw.bind_info.length = len;
	wr.bind_mw.bind_info.mw_access_flags = access;
	if (ibv_post_send(s->qp, &wr, &bad))
		die("ibv_post_send BIND_MW");
	if (!wait_wc(s->cq, &wc, TIMEOUT_MS))
		return -1;
	if (wc_op)
		*wc_op = wc.opcode;
	return wc.status;
}

static int local_inv(struct side *s, uint32_t rkey)
{
	struct ibv_send_wr wr = {0}, *bad = NULL;
	struct ibv_wc wc;

	wr.wr_id = 22;
	wr.opcode = IBV_WR_LOCAL_INV;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.invalidate_rkey = rkey;
	if (ibv_post_send(s->qp, &wr, &bad))
		die("ibv_post_send LOCAL_INV");
	if (!wait_wc(s->cq, &wc, TIMEOUT_MS) || wc.opcode != IBV_WC_LOCAL_INV)
		return -1;
	return wc.status;
}

static void attrs(struct side *b)
{
	struct ibv_device_attr da;
	struct ibv_mw *mw;

	if (ibv_query_device(b->ctx, &da))
		die("ibv_query_device");
	check(da.max_mw > 0 && (da.device_cap_flags & IBV_DEVICE_MEM_WINDOW) &&
		      (da.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B),
	      "device: max_mw %d, MEM_WINDOW and MEM_WINDOW_TYPE_2B", da.max_mw);
	errno = 0;
	mw = ibv_alloc_mw(b->pd, (enum ibv_mw_type)3);
	check(!mw && errno == EINVAL, "ibv_alloc_mw of type 3: NULL, EINVAL (errno %d)", errno);
	if (mw)
		ibv_dealloc_mw(mw);
}

static void type1(struct side *a, struct side *b, struct ibv_mr *amr, struct ibv_mr *bmr)
{
	struct ibv_mw_bind mb = {.wr_id = 23, .send_flags = IBV_SEND_SIGNALED};
	struct ibv_mw *mw = ibv_alloc_mw(b->pd, IBV_MW_TYPE_1);
	struct ibv_wc wc;
	uint32_t old, rkey;
	int st;

	if (!mw)
		die("ibv_alloc_mw type 1");
	old = mw->rkey;
	mb.bind_info = (struct ibv_mw_bind_info){.mr = bmr, .addr = (uintptr_t)win, .length = WIN,
						 .mw_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE};
	st = ibv_bind_mw(b->qp, mw, &mb);
	rkey = mw->rkey;
	check(st == 0 && rkey != old && (rkey >> 8) == (old >> 8), "ibv_bind_mw: 0 (%d), a new key byte in mw->rkey (%#x -> %#x)",
	      st, old, rkey);
	memset(&wc, 0, sizeof(wc));
	st = wait_wc(b->cq, &wc, TIMEOUT_MS);
	check(st && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_BIND_MW && wc.wr_id == 23,
	      "type 1 bind completes: IBV_WC_BIND_MW (status %d, opcode %d)", wc.status, wc.opcode);
	memset(src, 0x3c, WIN);
	st = rdma(a, IBV_WR_RDMA_WRITE, amr, src, WIN, (uintptr_t)win, rkey);
	check(st == IBV_WC_SUCCESS && win[0] == 0x3c && win[WIN - 1] == 0x3c && win[WIN] == 0,
	      "RDMA WRITE through the type 1 window (status %d)", st);
	st = rdma(a, IBV_WR_RDMA_READ, amr, dst, 64, (uintptr_t)win + 64, rkey);
	check(st == IBV_WC_SUCCESS && dst[0] == 0x3c, "RDMA READ through the type 1 window (status %d)", st);
	check(ibv_dereg_mr(bmr) != 0, "ibv_dereg_mr of an MR with a bound window fails");

	mb.bind_info.mw_access_flags |= IBV_ACCESS_ZERO_BASED;
	check(ibv_bind_mw(b->qp, mw, &mb) == EINVAL, "ibv_bind_mw zero-based: EINVAL (o10-36.2.2)");
	mb.bind_info = (struct ibv_mw_bind_info){.mr = bmr};
	memset(&wc, 0, sizeof(wc));
	st = ibv_bind_mw(b->qp, mw, &mb) == 0 && wait_wc(b->cq, &wc, TIMEOUT_MS);
	check(st && wc.status == IBV_WC_SUCCESS, "zero-length ibv_bind_mw unbinds (status %d)", wc.status);
	st = rdma(a, IBV_WR_RDMA_READ, amr, dst, 64, (uintptr_t)win, rkey);
	check(st == IBV_WC_REM_ACCESS_ERR, "RDMA READ through the unbound window: remote access error (%d)", st);
	restate(a, b);
	check(ibv_dealloc_mw(mw) == 0, "ibv_dealloc_mw of the type 1 window");
}

static void type2(struct side *a, struct side *b, struct ibv_mr *amr, struct ibv_mr *bmr)
{
	struct ibv_send_wr wr = {0}, *bad = NULL;
	struct ibv_mw *mw = ibv_alloc_mw(b->pd, IBV_MW_TYPE_2);
	struct ibv_wc wc;
	uint32_t rkey;
	int st, op = -1;

	if (!mw)
		die("ibv_alloc_mw type 2");
	rkey = ibv_inc_rkey(mw->rkey);
	st = bind2(b, mw, bmr, win + PAGE, WIN, IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE, rkey, &op);
	check(st == IBV_WC_SUCCESS && op == IBV_WC_BIND_MW, "IBV_WR_BIND_MW of a type 2B window (status %d)", st);
	memset(src, 0x7e, WIN);
	st = rdma(a, IBV_WR_RDMA_WRITE, amr, src, WIN, (uintptr_t)win + PAGE, rkey);
	check(st == IBV_WC_SUCCESS && win[PAGE] == 0x7e && win[2 * PAGE - 1] == 0x7e,
	      "RDMA WRITE through the type 2B window's rkey, the consumer's (status %d)", st);
	st = rdma(a, IBV_WR_RDMA_WRITE, amr, src, 64, (uintptr_t)win + 2 * PAGE - 32, rkey);
	check(st == IBV_WC_REM_ACCESS_ERR, "RDMA WRITE past the window's end: remote access error (%d)", st);
	restate(a, b);

	/* LOCAL_INV frees the window: it can be bound again. */
	check(local_inv(b, rkey) == IBV_WC_SUCCESS, "LOCAL_INV of the window's rkey");
	st = rdma(a, IBV_WR_RDMA_READ, amr, dst, 64, (uintptr_t)win + PAGE, rkey);
	check(st == IBV_WC_REM_ACCESS_ERR, "RDMA READ after LOCAL_INV: remote access error (%d)", st);
	restate(a, b);

	/* SEND_WITH_INV from A invalidates it at B. */
	mw->rkey = rkey; /* the program tracks its type 2B window's rkey */
	rkey = ibv_inc_rkey(rkey);
	check(bind2(b, mw, bmr, win + PAGE, WIN, IBV_ACCESS_REMOTE_READ, rkey, NULL) == IBV_WC_SUCCESS,
	      "the window, invalidated, is bound again");
	post_recv(b->qp, NULL, bmr, win + 3 * PAGE, 64);
	wr.wr_id = 24;
	wr.opcode = IBV_WR_SEND_WITH_INV;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.invalidate_rkey = rkey;
	if (ibv_post_send(a->qp, &wr, &bad))
		die("ibv_post_send SEND_WITH_INV");
	check(wait_wc(a->cq, &wc, TIMEOUT_MS) && wc.status == IBV_WC_SUCCESS, "SEND_WITH_INV completes");
	memset(&wc, 0, sizeof(wc));
	st = wait_wc(b->cq, &wc, TIMEOUT_MS);
	check(st && wc.status == IBV_WC_SUCCESS && (wc.wc_flags & IBV_WC_WITH_INV) && wc.invalidated_rkey == rkey,
	      "its receive: IBV_WC_WITH_INV, the window's rkey (%#x, want %#x)", wc.invalidated_rkey, rkey);
	st = rdma(a, IBV_WR_RDMA_READ, amr, dst, 64, (uintptr_t)win + PAGE, rkey);
	check(st == IBV_WC_REM_ACCESS_ERR, "RDMA READ after SEND_WITH_INV: remote access error (%d)", st);
	restate(a, b);

	/* Deallocating a bound window kills its rkey (as rxe). */
	mw->rkey = rkey;
	rkey = ibv_inc_rkey(rkey);
	check(bind2(b, mw, bmr, win + PAGE, WIN, IBV_ACCESS_REMOTE_READ, rkey, NULL) == IBV_WC_SUCCESS,
	      "bound a third time");
	check(ibv_dealloc_mw(mw) == 0, "ibv_dealloc_mw of a bound type 2B window: 0");
	st = rdma(a, IBV_WR_RDMA_READ, amr, dst, 64, (uintptr_t)win + PAGE, rkey);
	check(st == IBV_WC_REM_ACCESS_ERR, "RDMA READ through a deallocated window: remote access error (%d)", st);
	restate(a, b);
}

/* bind_err binds a fresh type 2B window of pd as given and expects
 * IBV_WC_MW_BIND_ERR. */
static void bind_err(struct side *a, struct side *b, struct ibv_pd *pd, struct ibv_mr *mr, size_t len,
		     unsigned access, const char *what)
{
	struct ibv_mw *mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	int st;

	if (!mw)
		die("ibv_alloc_mw");
	st = bind2(b, mw, mr, win, len, access, ibv_inc_rkey(mw->rkey), NULL);
	check(st == IBV_WC_MW_BIND_ERR, "%s: IBV_WC_MW_BIND_ERR (%d)", what, st);
	restate(a, b);
	if (ibv_dealloc_mw(mw))
		die("ibv_dealloc_mw");
}

static void errors(struct side *a, struct side *b, struct ibv_mr *bmr)
{
	struct ibv_mr *nobind = reg(b->pd, win, sizeof(win), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	struct ibv_mr *nolw = reg(b->pd, win, sizeof(win), IBV_ACCESS_MW_BIND);
	struct ibv_pd *pd2 = ibv_alloc_pd(b->ctx);
	struct ibv_mw *mw;
	uint32_t rkey;

	if (!pd2)
		die("ibv_alloc_pd");
	bind_err(a, b, b->pd, nobind, WIN, IBV_ACCESS_REMOTE_READ, "bind to an MR without MW_BIND (C10-73)");
	bind_err(a, b, b->pd, nolw, WIN, IBV_ACCESS_REMOTE_WRITE,
		 "writable window on an MR without LOCAL_WRITE (C10-74)");
	bind_err(a, b, b->pd, bmr, sizeof(win) + 1, IBV_ACCESS_REMOTE_READ, "range past the MR (C10-75)");
	bind_err(a, b, pd2, bmr, WIN, IBV_ACCESS_REMOTE_READ, "window of another PD than the QP's (C10-72)");

	if (!(mw = ibv_alloc_mw(b->pd, IBV_MW_TYPE_2)))
		die("ibv_alloc_mw");
	rkey = ibv_inc_rkey(mw->rkey);
	check(bind2(b, mw, bmr, win, WIN, IBV_ACCESS_REMOTE_READ, rkey, NULL) == IBV_WC_SUCCESS, "bound once");
	mw->rkey = rkey;
	check(bind2(b, mw, bmr, win, WIN, IBV_ACCESS_REMOTE_READ, ibv_inc_rkey(rkey), NULL) == IBV_WC_MW_BIND_ERR,
	      "a bound type 2B window bound again: IBV_WC_MW_BIND_ERR (o10-37.2.30)");
	restate(a, b);
	check(ibv_dealloc_mw(mw) == 0, "ibv_dealloc_mw");
	ibv_dereg_mr(nobind);
	ibv_dereg_mr(nolw);
	ibv_dealloc_pd(pd2);
}

void test_mw(const char *d0, const char *d1)
{
	struct side a = {0}, b = {0};
	struct ibv_mr *amr, *bmr;

	side_open(&a, d0, NULL, NULL, NULL, 16, 8);
	side_open(&b, d1, NULL, NULL, NULL, 16, 8);
	connect_pair(&a, &b);
	amr = reg(a.pd, abuf, sizeof(abuf), IBV_ACCESS_LOCAL_WRITE);
	bmr = reg(b.pd, win, sizeof(win), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	attrs(&b);
	type1(&a, &b, amr, bmr);
	type2(&a, &b, amr, bmr);
	errors(&a, &b, bmr);
	check(ibv_dereg_mr(bmr) == 0, "ibv_dereg_mr once its windows are gone");
	ibv_dereg_mr(amr);
	pair_close(&a, &b);
	side_free(&a);
	side_free(&b);
}
