/* SPDX-License-Identifier: BSD-2-Clause */
/* corners verbs: what rdma-core's own tests (pyverbs) read of a device and
 * expect of a QP, as rxe gives it: the kernel's device names, the extended
 * device attributes, the GID table, an ATOMIC WRITE QP made (IBTA 1.5's
 * operations are the RoCE device's) and a TSO one refused, and a receive queue that holds max_recv_wr receives and
 * no more (ENOMEM past it, room again as completions are polled), and
 * ibv_resize_cq. */
#include "corners.h"

/* libibverbs' private (IBVERBS_PRIVATE_34, driver.h, not installed);
 * ibv_devinfo and pyverbs call it. */
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index, int *type);

/* names: device i of the list is uverbs<i> with the kernel's paths. */
static void names(void)
{
	struct ibv_device **list;
	char want[IBV_SYSFS_PATH_MAX];
	int n;

	if (!(list = ibv_get_device_list(&n)) || n < 1)
		die("ibv_get_device_list");
	for (int i = 0; i < n; i++) {
		struct ibv_device *d = list[i];
		char dev[IBV_SYSFS_NAME_MAX];
		snprintf(dev, sizeof(dev), "uverbs%d", i);
		check(!strcmp(d->dev_name, dev), "device %d (%s): dev_name %s (want %s)", i, d->name, d->dev_name, dev);
		snprintf(want, sizeof(want), "/sys/class/infiniband_verbs/uverbs%d", i);
		check(!strcmp(d->dev_path, want), "device %d: dev_path %s (want %s)", i, d->dev_path, want);
		snprintf(want, sizeof(want), "/sys/class/infiniband/%s", d->name);
		check(!strcmp(d->ibdev_path, want), "device %d: ibdev_path %s (want %s)", i, d->ibdev_path, want);
	}
	ibv_free_device_list(list);
}

/* attrs_ex: ibv_query_device_ex repeats what ibv_query_device says where
 * the kernel does (pyverbs' test_phys_port_cnt_ex). */
static void attrs_ex(struct ibv_context *ctx)
{
	struct ibv_device_attr_ex x;
	struct ibv_device_attr a;

	if (ibv_query_device(ctx, &a) || ibv_query_device_ex(ctx, NULL, &x))
		die("ibv_query_device(_ex)");
	check(x.phys_port_cnt_ex == a.phys_port_cnt && a.phys_port_cnt == 1,
	      "phys_port_cnt_ex %u, phys_port_cnt %u (want 1, 1)", x.phys_port_cnt_ex, a.phys_port_cnt);
	check((uint32_t)x.device_cap_flags_ex == a.device_cap_flags,
	      "device_cap_flags_ex %#llx: device_cap_flags %#x below bit 32", (unsigned long long)x.device_cap_flags_ex,
	      a.device_cap_flags);
	check(!memcmp(&x.orig_attr, &a, sizeof(a)), "ibv_query_device_ex's orig_attr is ibv_query_device's");
}

/* gid_table: a RoCE port's table is rxe's 1024 slots, the NIC's address
 * first; an empty slot reads as libibverbs reads one (zero GID of type
 * IB/RoCE v1, ENODATA through ibv_query_gid_ex), past the table fails;
 * ibv_query_gid_table gives the populated entries. */
static void gid_table(struct ibv_context *ctx)
{
	struct ibv_gid_entry e, all[4];
	struct ibv_port_attr pa;
	union ibv_gid gid, zero = {0};
	unsigned tlen;
	int type = -1, err;
	ssize_t n;

	if (ibv_query_port(ctx, 1, &pa))
		die("ibv_query_port");
	tlen = (unsigned)pa.gid_tbl_len;
	check(tlen == 1024, "gid_tbl_len %u (want rxe's 1024)", tlen);
	err = ibv_query_gid_ex(ctx, 1, 0, &e, 0);
	check(err == 0 && e.gid_type == IBV_GID_TYPE_ROCE_V2, "GID 0: RoCE v2 (%d, type %u)", err, e.gid_type);
	memset(&gid, 0xaa, sizeof(gid));
	check(ibv_query_gid(ctx, 1, 1, &gid) == 0 && !memcmp(&gid, &zero, 16), "GID 1, empty: 0 and the zero GID");
	err = ibv_query_gid_type(ctx, 1, 1, &type);
	check(err == 0 && type == 0, "GID 1, empty: type IB/RoCE v1 (%d, %d)", err, type);
	err = ibv_query_gid_ex(ctx, 1, 1, &e, 0);
	check(err == ENODATA, "ibv_query_gid_ex of the empty GID 1: ENODATA (%d)", err);
	check(ibv_query_gid(ctx, 1, (int)tlen, &gid) == -1, "ibv_query_gid past the table: -1");
	err = ibv_query_gid_ex(ctx, 1, tlen, &e, 0);
	check(err == EINVAL, "ibv_query_gid_ex past the table: EINVAL (%d)", err);
	n = ibv_query_gid_table(ctx, all, 4, 0);
	check(n == 1 && all[0].gid_index == 0 && all[0].port_num == 1, "ibv_query_gid_table: the one entry (%zd)", n);
}

/* send_ops: a QP asking for ibv_wr_atomic_write is made (the RoCE
 * device executes it: corners ibta15), one asking for TSO (no raw packet
 * QPs) is refused with EOPNOTSUPP, and one asking for what every device
 * has is made. */
static void send_ops(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr_ex qx = {0};
	struct ibv_qp *qp;

	qx.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	qx.pd = pd;
	qx.send_cq = qx.recv_cq = cq;
	qx.qp_type = IBV_QPT_RC;
	qx.cap.max_send_wr = qx.cap.max_recv_wr = 4;
	qx.cap.max_send_sge = qx.cap.max_recv_sge = 1;
	qx.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_ATOMIC_WRITE;
	qp = ibv_create_qp_ex(ctx, &qx);
	check(qp != NULL, "ibv_create_qp_ex with ATOMIC_WRITE: made (errno %d)", qp ? 0 : errno);
	if (qp)
		ibv_destroy_qp(qp);
	qx.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_TSO;
	errno = 0;
	qp = ibv_create_qp_ex(ctx, &qx);
	check(!qp && errno == EOPNOTSUPP, "ibv_create_qp_ex with TSO: NULL, EOPNOTSUPP (errno %d)", errno);
	if (qp)
		ibv_destroy_qp(qp);
	qx.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	qp = ibv_create_qp_ex(ctx, &qx);
	check(qp != NULL, "ibv_create_qp_ex with RDMA_WRITE and FETCH_AND_ADD: made (errno %d)", qp ? 0 : errno);
	if (qp)
		ibv_destroy_qp(qp);
}

/* try_recv posts one receive of buf; 0 or the errno, bad_wr checked. */
static int try_recv(struct ibv_qp *qp, struct ibv_mr *mr, char *buf)
{
	struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = 64, .lkey = mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = 5, .sg_list = &sge, .num_sge = 1}, *bad = NULL;
	int err = ibv_post_recv(qp, &wr, &bad);

	if (err && bad != &wr)
		check(0, "ibv_post_recv failed (%d) without bad_wr at the WR", err);
	return err;
}

/* fill posts receives until one fails; how many were posted. */
static uint32_t fill(struct ibv_qp *qp, struct ibv_mr *mr, char *buf, uint32_t most, int *err)
{
	uint32_t n = 0;

	while (n <= most && !(*err = try_recv(qp, mr, buf)))
		n++;
	return n;
}

/* reset_to_init moves s's QP to RESET and back to INIT. */
static void reset_to_init(struct side *s)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RESET};

	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE))
		die("modify to RESET");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("modify to INIT");
}

/* rq_full: the receive queue holds max_recv_wr receives (rxe and mlx5:
 * ENOMEM past it, pyverbs' test_full_rq_bad_flow); the receives of
 * messages that came, once polled, make room again; a list posted into
 * less room stops at the first WR that does not fit; RESET empties it. */
static void rq_full(const char *d0, const char *d1)
{
	static char buf[PAGE];
	struct side a = {0}, b = {0};
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr qa;
	struct ibv_mr *amr, *bmr;
	struct ibv_wc wc;
	uint32_t max, n;
	int err, got = 0;

	side_open(&a, d0, NULL, NULL, NULL, 64, 8);
	side_open(&b, d1, NULL, NULL, NULL, 64, 8);
	connect_pair(&a, &b);
	amr = reg(a.pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	bmr = reg(b.pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	if (ibv_query_qp(b.qp, &qa, IBV_QP_CAP, &ia))
		die("ibv_query_qp");
	max = ia.cap.max_recv_wr;
	n = fill(b.qp, bmr, buf, max, &err);
	check(n == max && err == ENOMEM, "%u receives posted on a %u-deep RQ, then ENOMEM (%d)", n, max, err);

	for (int i = 0; i < 3; i++)
		post_send(a.qp, amr, buf, 8, IBV_SEND_SIGNALED);
	for (int i = 0; i < 3; i++)
		got += wait_wc(b.cq, &wc, TIMEOUT_MS) && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV;
	check(got == 3, "3 SENDs received (%d)", got);
	n = fill(b.qp, bmr, buf, max, &err);
	check(n == 3 && err == ENOMEM, "3 receives polled: 3 more posted (%u), then ENOMEM (%d)", n, err);

	post_send(a.qp, amr, buf, 8, IBV_SEND_SIGNALED);
	check(wait_wc(b.cq, &wc, TIMEOUT_MS) && wc.status == IBV_WC_SUCCESS, "a fourth SEND received");
	{
		struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = 64, .lkey = bmr->lkey};
		struct ibv_recv_wr w2 = {.wr_id = 2, .sg_list = &sge, .num_sge = 1};
		struct ibv_recv_wr w1 = {.wr_id = 1, .sg_list = &sge, .num_sge = 1, .next = &w2}, *bad = NULL;
		err = ibv_post_recv(b.qp, &w1, &bad);
		check(err == ENOMEM && bad == &w2, "a list of 2 into room for 1: ENOMEM (%d) at the second WR", err);
	}

	reset_to_init(&b);
	n = fill(b.qp, bmr, buf, max, &err);
	check(n == max && err == ENOMEM, "after RESET: %u receives posted again (want %u), then ENOMEM (%d)", n, max,
	      err);
	pair_close(&a, &b);
	ibv_dereg_mr(amr);
	ibv_dereg_mr(bmr);
	side_free(&a);
	side_free(&b);
}

/* send_n posts n signaled SENDs of 8 bytes, wr_id first.. onwards. */
static void send_n(struct ibv_qp *qp, struct ibv_mr *mr, char *buf, int n, uint64_t first)
{
	for (int i = 0; i < n; i++) {
		struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = 8, .lkey = mr->lkey};
		struct ibv_send_wr wr = {.wr_id = first + (uint64_t)i, .sg_list = &sge, .num_sge = 1,
					 .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED},
				   *bad = NULL;
		if (ibv_post_send(qp, &wr, &bad))
			die("ibv_post_send");
	}
}

/* try_srq_recv posts one receive on srq; 0 or the errno. */
static int try_srq_recv(struct ibv_srq *srq, struct ibv_mr *mr, char *buf)
{
	struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = 64, .lkey = mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = 6, .sg_list = &sge, .num_sge = 1}, *bad = NULL;
	int err = ibv_post_srq_recv(srq, &wr, &bad);

	if (err && bad != &wr)
		check(0, "ibv_post_srq_recv failed (%d) without bad_wr at the WR", err);
	return err;
}

static uint32_t fill_srq(struct ibv_srq *srq, struct ibv_mr *mr, char *buf, uint32_t most, int *err)
{
	uint32_t n = 0;

	while (n <= most && !(*err = try_srq_recv(srq, mr, buf)))
		n++;
	return n;
}

/* srq_full: an SRQ holds max_wr receives (ENOMEM past it), polled
 * receives make room, and so do those whose QP went before they were
 * polled. */
static void srq_full(const char *d0, const char *d1)
{
	static char buf[PAGE];
	struct ibv_srq_init_attr sa = {.attr = {.max_wr = 8, .max_sge = 1}};
	struct ibv_comp_channel *ch;
	struct ibv_srq_attr q;
	struct side a = {0}, b = {0};
	struct ibv_mr *amr, *bmr;
	struct ibv_srq *srq;
	struct ibv_wc wc;
	struct ibv_cq *ecq;
	void *ectx;
	uint32_t n;
	int err, got = 0;

	b.ctx = open_named(d1);
	if (!(b.pd = ibv_alloc_pd(b.ctx)) || !(srq = ibv_create_srq(b.pd, &sa)) || ibv_query_srq(srq, &q) ||
	    !(ch = ibv_create_comp_channel(b.ctx)))
		die("SRQ setup");
	side_open(&a, d0, NULL, NULL, NULL, 16, 8);
	side_open(&b, d1, ch, NULL, srq, 16, 8);
	connect_pair(&a, &b);
	amr = reg(a.pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	bmr = reg(b.pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	n = fill_srq(srq, bmr, buf, q.max_wr, &err);
	check(n == q.max_wr && err == ENOMEM, "%u receives posted on a %u-deep SRQ, then ENOMEM (%d)", n, q.max_wr, err);
	send_n(a.qp, amr, buf, 3, 1);
	for (int i = 0; i < 3; i++)
		got += wait_wc(b.cq, &wc, TIMEOUT_MS) && wc.status == IBV_WC_SUCCESS;
	check(got == 3, "3 SENDs received through the SRQ (%d)", got);
	n = fill_srq(srq, bmr, buf, q.max_wr, &err);
	check(n == 3 && err == ENOMEM, "3 receives polled: 3 more posted on the SRQ (%u), then ENOMEM (%d)", n, err);

	/* one more SEND, its completion in b's CQ (the event says so), not
	 * polled when b's QP goes */
	if (ibv_req_notify_cq(b.cq, 0))
		die("ibv_req_notify_cq");
	send_n(a.qp, amr, buf, 1, 9);
	check(fd_ready(ch->fd, TIMEOUT_MS) && ibv_get_cq_event(ch, &ecq, &ectx) == 0, "the fourth SEND's event");
	ibv_ack_cq_events(b.cq, 1);
	ibv_destroy_qp(b.qp);
	b.qp = NULL;
	err = try_srq_recv(srq, bmr, buf);
	check(err == 0, "its QP destroyed with the receive not polled: room for one more on the SRQ (%d)", err);
	check(try_srq_recv(srq, bmr, buf) == ENOMEM, "and no more");

	ibv_destroy_qp(a.qp);
	ibv_destroy_cq(a.cq);
	ibv_destroy_cq(b.cq);
	ibv_destroy_srq(srq);
	ibv_destroy_comp_channel(ch);
	ibv_dereg_mr(amr);
	ibv_dereg_mr(bmr);
	side_free(&a);
	side_free(&b);
}

/* recv_id posts one receive of 64 bytes of buf with wr_id id. */
static void recv_id(struct ibv_qp *qp, struct ibv_mr *mr, char *buf, uint64_t id)
{
	struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = 64, .lkey = mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = id, .sg_list = &sge, .num_sge = 1}, *bad = NULL;

	if (ibv_post_recv(qp, &wr, &bad))
		die("ibv_post_recv");
}

/* resize: ibv_resize_cq down and up (cqe at least what was asked), not
 * below the completions waiting (EINVAL, which stay), and those waiting
 * polled in order from the resized CQ, which goes on working, events
 * included. The CQ is the receiver's: once the sender has its SENDs
 * completed and an RDMA READ answered after them, the receiver's engine
 * has completed every receive (it serves a QP's requests in order), and
 * the resize counts what the engine completed. */
static void resize(const char *d0, const char *d1)
{
	static char buf[PAGE], rbuf[PAGE];
	struct ibv_comp_channel *ch;
	struct side a = {0}, b = {0};
	struct ibv_mr *amr, *bmr;
	struct ibv_wc wc;
	struct ibv_cq *ecq;
	void *ectx;
	int err, st, got = 0, inorder = 1;

	b.ctx = open_named(d1);
	if (!(ch = ibv_create_comp_channel(b.ctx)))
		die("ibv_create_comp_channel");
	side_open(&a, d0, NULL, NULL, NULL, 64, 16);
	side_open(&b, d1, ch, &b, NULL, 4, 8);
	connect_pair(&a, &b);
	amr = reg(a.pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	bmr = reg(b.pd, rbuf, sizeof(rbuf), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	for (int i = 0; i < 10; i++)
		recv_id(b.qp, bmr, rbuf, 100 + (uint64_t)i);

	err = ibv_resize_cq(b.cq, 1);
	check(err == 0 && b.cq->cqe >= 1, "ibv_resize_cq 4 -> 1: 0 (%d), cqe %d", err, b.cq->cqe);
	err = ibv_resize_cq(b.cq, 16);
	check(err == 0 && b.cq->cqe >= 16, "ibv_resize_cq 1 -> 16: 0 (%d), cqe %d", err, b.cq->cqe);
	send_n(a.qp, amr, buf, 10, 1);
	for (int i = 0; i < 10; i++)
		got += wait_wc(a.cq, &wc, TIMEOUT_MS) && wc.status == IBV_WC_SUCCESS;
	st = rdma(&a, IBV_WR_RDMA_READ, amr, buf, 8, (uintptr_t)rbuf, bmr->rkey);
	check(got == 10 && st == IBV_WC_SUCCESS, "10 SENDs completed (%d), an RDMA READ after them (%d)", got, st);
	err = ibv_resize_cq(b.cq, 4);
	check(err == EINVAL && b.cq->cqe >= 16, "ibv_resize_cq to 4 with 10 completions waiting: EINVAL (%d)", err);
	err = ibv_resize_cq(b.cq, 32);
	check(err == 0 && b.cq->cqe >= 32, "ibv_resize_cq 16 -> 32 with 10 waiting: 0 (%d), cqe %d", err, b.cq->cqe);
	got = 0;
	for (int i = 0; i < 10; i++) {
		if (!wait_wc(b.cq, &wc, TIMEOUT_MS))
			break;
		got++;
		inorder &= wc.wr_id == 100 + (uint64_t)i && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV;
	}
	check(got == 10 && inorder && ibv_poll_cq(b.cq, 1, &wc) == 0,
	      "the 10 waiting completions polled in order from the resized CQ (%d), then none", got);

	if (ibv_req_notify_cq(b.cq, 0))
		die("ibv_req_notify_cq");
	recv_id(b.qp, bmr, rbuf, 200);
	send_n(a.qp, amr, buf, 1, 20);
	check(fd_ready(ch->fd, TIMEOUT_MS) && ibv_get_cq_event(ch, &ecq, &ectx) == 0 && ecq == b.cq && ectx == &b,
	      "a completion event of the resized CQ");
	ibv_ack_cq_events(b.cq, 1);
	check(wait_wc(b.cq, &wc, TIMEOUT_MS) && wc.wr_id == 200, "its completion polled");
	pair_close(&a, &b);
	ibv_dereg_mr(amr);
	ibv_dereg_mr(bmr);
	side_free(&a);
	ibv_dealloc_pd(b.pd);
	ibv_destroy_comp_channel(ch);
	ibv_close_device(b.ctx);
}

/* query_after_modify: ibv_query_qp gives back what the modifies set
 * (connect_pair's values, corners.c to_rts). */
static void query_after_modify(const char *d0, const char *d1)
{
	struct side a = {0}, b = {0};
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr q;
	int all = IBV_QP_STATE | IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
		  IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		  IBV_QP_RQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER | IBV_QP_SQ_PSN |
		  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_DEST_QPN | IBV_QP_CAP;

	side_open(&a, d0, NULL, NULL, NULL, 16, 8);
	side_open(&b, d1, NULL, NULL, NULL, 16, 8);
	connect_pair(&a, &b);
	memset(&q, 0xee, sizeof(q));
	if (ibv_query_qp(a.qp, &q, all, &ia))
		die("ibv_query_qp");
	check(q.qp_state == IBV_QPS_RTS && q.cur_qp_state == IBV_QPS_RTS, "query: state RTS (%d, cur %d)", q.qp_state,
	      q.cur_qp_state);
	check(q.path_mtu == IBV_MTU_1024 && q.dest_qp_num == b.qp->qp_num && q.rq_psn == 0 && q.sq_psn == 0,
	      "query: path_mtu %d, dest_qp_num %#x (want %#x), PSNs %u %u", q.path_mtu, q.dest_qp_num, b.qp->qp_num,
	      q.rq_psn, q.sq_psn);
	check(q.max_rd_atomic == 1 && q.max_dest_rd_atomic == 1 && q.min_rnr_timer == 1 && q.timeout == 14 &&
		      q.retry_cnt == 7 && q.rnr_retry == 7,
	      "query: rd_atomic %u/%u, rnr timer %u, timeout %u, retry %u, rnr retry %u", q.max_rd_atomic,
	      q.max_dest_rd_atomic, q.min_rnr_timer, q.timeout, q.retry_cnt, q.rnr_retry);
	check(q.qp_access_flags == (IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC) &&
		      q.pkey_index == 0 && q.port_num == 1,
	      "query: access %#x, pkey_index %u, port %u", q.qp_access_flags, q.pkey_index, q.port_num);
	check(q.ah_attr.is_global == 1 && !memcmp(&q.ah_attr.grh.dgid, &b.gid, 16) && q.ah_attr.grh.hop_limit == 64 &&
		      q.ah_attr.port_num == 1 && q.ah_attr.grh.sgid_index == 0,
	      "query: AV is_global %u, dgid the peer's, hop limit %u, port %u, sgid_index %u", q.ah_attr.is_global,
	      q.ah_attr.grh.hop_limit, q.ah_attr.port_num, q.ah_attr.grh.sgid_index);
	check(ia.qp_type == IBV_QPT_RC && ia.send_cq == a.cq && ia.recv_cq == a.cq && ia.cap.max_send_wr >= 8 &&
		      ia.cap.max_recv_wr >= 16 && q.cap.max_recv_wr == ia.cap.max_recv_wr,
	      "query: init_attr type %d, CQs, cap %u/%u", ia.qp_type, ia.cap.max_send_wr, ia.cap.max_recv_wr);
	pair_close(&a, &b);
	side_free(&a);
	side_free(&b);
}

/* destroy_clean: a destroyed QP's completions leave its CQ, as mlx5's
 * destroy cleans them, and another QP's stay: receives posted and flushed
 * by ERR, the QP destroyed before they are polled (libfabric's rxm
 * crashed on a flush of a QP it had destroyed and freed). */
static void destroy_clean(const char *d0)
{
	struct side a = {0}, b = {0};
	struct ibv_qp_attr e = {.qp_state = IBV_QPS_ERR};
	struct ibv_qp_init_attr qa = {0};
	struct ibv_wc wc[8];
	char *buf = calloc(1, 4 * PAGE);
	struct ibv_mr *mr;
	int n, got = 0;

	side_open(&a, d0, NULL, NULL, NULL, 32, 4);
	b.ctx = a.ctx, b.pd = a.pd, b.cq = a.cq;
	qa.send_cq = qa.recv_cq = a.cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	if (!buf || !(b.qp = ibv_create_qp(a.pd, &qa)))
		die("destroy_clean: a second QP");
	mr = reg(a.pd, buf, 4 * PAGE, ALL_ACCESS);
	reset_to_init(&a);
	reset_to_init(&b);
	for (int i = 0; i < 3; i++) {
		post_recv(a.qp, NULL, mr, buf + i * 64, 64);
		post_recv(b.qp, NULL, mr, buf + PAGE + i * 64, 64);
	}
	if (ibv_modify_qp(a.qp, &e, IBV_QP_STATE) || ibv_modify_qp(b.qp, &e, IBV_QP_STATE))
		die("destroy_clean: modify to ERR");
	uint32_t gone = a.qp->qp_num, kept = b.qp->qp_num;
	if (ibv_destroy_qp(a.qp))
		die("destroy_clean: ibv_destroy_qp");
	a.qp = NULL;
	for (long end = now_ms() + 1000; now_ms() < end;) {
		if ((n = ibv_poll_cq(a.cq, 8, wc)) < 0)
			die("destroy_clean: ibv_poll_cq");
		for (int i = 0; i < n; i++) {
			check(wc[i].qp_num != gone, "destroy_clean: a completion of the destroyed QP %#x polled", gone);
			if (wc[i].qp_num == kept)
				got++;
		}
		if (got == 3)
			break;
	}
	check(got == 3, "destroy_clean: %d of the other QP's 3 flushes polled, want 3", got);
	ibv_destroy_qp(b.qp);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(a.cq);
	free(buf);
	side_free(&a);
}

void test_verbs(const char *d0, const char *d1)
{
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;

	names();
	ctx = open_named(d0);
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
	if (!cq)
		die("ibv_alloc_pd / ibv_create_cq");
	attrs_ex(ctx);
	gid_table(ctx);
	send_ops(ctx, pd, cq);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	query_after_modify(d0, d1);
	rq_full(d0, d1);
	srq_full(d0, d1);
	resize(d0, d1);
	destroy_clean(d0);
}
