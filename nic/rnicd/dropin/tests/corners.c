/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * corners: the corners of libibverbs that the unmodified Debian programs do
 * not reach, checked against the documented semantics (the man pages of
 * rdma-core 44 and <infiniband/verbs.h>), whatever library is loaded: rnic's
 * drop-in libibverbs.so.1 in the tests (nic/rnicd/dropin), run under
 * AddressSanitizer.
 *
 *   corners errors   DEV0 DEV1   bad arguments -> the documented errno
 *   corners channel  DEV0 DEV1   completion channel: poll(2), solicited-only, EAGAIN
 *   corners async    DEV0 DEV1   async events: SRQ limit, CQ overrun
 *   corners fork     DEV0 DEV1   ibv_fork_init() unneeded; RDMAV_USE_MADVISE: DONTFORK
 *   corners forkcopy DEV0 DEV1   fork(): the child's pages as at the fork
 *   corners mr       DEV0 DEV1   unaligned and overlapping MRs: exact bytes, access checks
 *   corners wr       DEV0 DEV1   ibv_create_qp_ex + ibv_wr_* batches, ibv_create_cq_ex polling
 *   corners ud       DEV0 DEV1   UD: the GRH before the payload, an AH made from a completion
 *   corners cap      DEV0 DEV1   the send queue cap ibv_create_qp grants (rxe's rounding), inline use
 *   corners cqchannels DEV0 DEV1 1000 CQs on 2 channels under 64 descriptors: each event once
 *   corners verbs    DEV0 DEV1   what pyverbs reads: device names, _ex attributes, RQ depth
 *   corners rereg    DEV0 DEV1   ibv_rereg_mr keeps the keys; a QP's RESET cleans its CQs
 *   corners parity   DEV0 DEV1   rxe's flags, P_Keys, path_mig_state, port, SRQ resize
 *   corners mw       DEV0 DEV1   memory windows: type 1 and 2B binds, invalidation, bind errors
 *   corners killed   DEV0        the daemon dies under us: DEVICE_FATAL, errors, no hang
 *   corners hostile  DEV0 DEV1   blocking, filled, unread descriptors, then _exit with an MR
 *   corners nodaemon             no daemon: an empty device list
 *
 * Each check prints "ok ..." or "FAIL ..."; the exit status is 0 when every
 * check passed, 1 when one failed, 2 when the setup itself failed.
 *
 * The Go tests of nic/rnicd/dropin build and run it; by hand, from the
 * repository, with an rnicd serving rnic0 and rnic1:
 *
 *   make build lib-asan
 *   (cd nic/rnicd/dropin/tests && gcc -std=gnu11 -g -O1 -Wall -Wextra -Werror
 *       -fsanitize=address -fno-omit-frame-pointer -o /tmp/corners *.c -libverbs)
 *   RNIC_LIBDIR=lib/asan bin/rnic exec -- /tmp/corners mr rnic0 rnic1
 */
#include "corners.h"

#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <time.h>

int failures;

/* check records one check's result. */
void check(int ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s ", ok ? "ok" : "FAIL");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!ok)
		failures++;
}

/* die ends a test whose setup failed: nothing after it can be checked. */
void die(const char *fmt, ...)
{
	va_list ap;
	int e = errno;

	printf("SETUP FAILED: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf(" (errno %d: %s)\n", e, strerror(e));
	exit(2);
}

long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct ibv_context *open_named(const char *name)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int n, i;

	list = ibv_get_device_list(&n);
	if (!list)
		die("ibv_get_device_list");
	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!ctx)
		die("open device %s", name);
	return ctx;
}

/* wait_wc polls cq for one completion for at most ms; 1 if one came. */
int wait_wc(struct ibv_cq *cq, struct ibv_wc *wc, int ms)
{
	long end = now_ms() + ms;
	int n;

	do {
		n = ibv_poll_cq(cq, 1, wc);
		if (n < 0)
			return 0;
		if (n == 1)
			return 1;
	} while (now_ms() < end);
	return 0;
}

void side_open(struct side *s, const char *dev, struct ibv_comp_channel *ch, void *cq_ctx,
		      struct ibv_srq *srq, int cqe, int send_wr)
{
	struct ibv_qp_init_attr qa = {0};

	if (!s->ctx)
		s->ctx = open_named(dev);
	if (!s->pd && !(s->pd = ibv_alloc_pd(s->ctx)))
		die("ibv_alloc_pd");
	if (!(s->cq = ibv_create_cq(s->ctx, cqe, cq_ctx, ch, 0)))
		die("ibv_create_cq");
	qa.send_cq = qa.recv_cq = s->cq;
	qa.srq = srq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = send_wr;
	qa.cap.max_recv_wr = srq ? 0 : 16;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	if (!(s->qp = ibv_create_qp(s->pd, &qa)))
		die("ibv_create_qp");
	if (ibv_query_gid(s->ctx, 1, 0, &s->gid))
		die("ibv_query_gid");
}

/* to_rtr takes s's QP from RESET to RTR towards the QP qpn at gid, with
 * flow_label in its address vector; 0 or the errno of the RTR modify. */
int to_rtr(struct side *s, uint32_t qpn, const union ibv_gid *gid, uint32_t flow_label)
{
	struct ibv_qp_attr a = {0};

	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("modify to INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = qpn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *gid;
	a.ah_attr.grh.flow_label = flow_label;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	return ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
						IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
}

/* rtr_to_rts takes s's QP from RTR to RTS. */
void rtr_to_rts(struct side *s)
{
	struct ibv_qp_attr a = {0};

	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		die("modify to RTS");
}

/* to_rts takes s's QP from RESET to RTS, connected to the QP qpn at gid. */
void to_rts(struct side *s, uint32_t qpn, const union ibv_gid *gid)
{
	if (to_rtr(s, qpn, gid, 0))
		die("modify to RTR");
	rtr_to_rts(s);
}

void connect_pair(struct side *a, struct side *b)
{
	to_rts(a, b->qp->qp_num, &b->gid);
	to_rts(b, a->qp->qp_num, &a->gid);
}

/* pair_close destroys the QP and CQ of both sides (PDs and contexts stay). */
void pair_close(struct side *a, struct side *b)
{
	ibv_destroy_qp(a->qp);
	ibv_destroy_qp(b->qp);
	ibv_destroy_cq(a->cq);
	ibv_destroy_cq(b->cq);
	a->qp = b->qp = NULL;
	a->cq = b->cq = NULL;
}

/* side_free releases what pair_close leaves: the PD and the context. */
void side_free(struct side *s)
{
	if (s->pd)
		ibv_dealloc_pd(s->pd);
	if (s->ctx)
		ibv_close_device(s->ctx);
	s->pd = NULL;
	s->ctx = NULL;
}

struct ibv_mr *reg(struct ibv_pd *pd, void *addr, size_t len, int access)
{
	struct ibv_mr *mr = ibv_reg_mr(pd, addr, len, access);

	if (!mr)
		die("ibv_reg_mr %p+%zu", addr, len);
	return mr;
}

/* rdma posts one signaled RDMA WRITE or READ and returns its status (-1: none came). */
int rdma(struct side *s, enum ibv_wr_opcode op, struct ibv_mr *lmr, void *laddr, uint32_t len,
		uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = {.addr = (uintptr_t)laddr, .length = len, .lkey = lmr->lkey};
	struct ibv_send_wr wr = {0}, *bad = NULL;
	struct ibv_wc wc;

	wr.wr_id = 7;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	if (ibv_post_send(s->qp, &wr, &bad))
		die("ibv_post_send");
	if (!wait_wc(s->cq, &wc, TIMEOUT_MS))
		return -1;
	return wc.status;
}

void post_recv(struct ibv_qp *qp, struct ibv_srq *srq, struct ibv_mr *mr, void *buf, uint32_t len)
{
	struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = len, .lkey = mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = 9, .sg_list = &sge, .num_sge = 1}, *bad = NULL;

	if (srq ? ibv_post_srq_recv(srq, &wr, &bad) : ibv_post_recv(qp, &wr, &bad))
		die("post receive");
}

void post_send(struct ibv_qp *qp, struct ibv_mr *mr, void *buf, uint32_t len, unsigned flags)
{
	struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = len, .lkey = mr->lkey};
	struct ibv_send_wr wr = {0}, *bad = NULL;

	wr.wr_id = 11;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = flags;
	if (ibv_post_send(qp, &wr, &bad))
		die("ibv_post_send SEND");
}

/* fd_ready polls fd for input for ms: 1 readable, 0 not. */
int fd_ready(int fd, int ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

void set_nonblock(int fd)
{
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0)
		die("O_NONBLOCK");
}

int main(int argc, char **argv)
{
	const char *t = argc > 1 ? argv[1] : "";
	const char *d0 = argc > 2 ? argv[2] : "rnic0", *d1 = argc > 3 ? argv[3] : "rnic1";

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(t, "errors"))
		test_errors(d0);
	else if (!strcmp(t, "channel"))
		test_channel(d0, d1);
	else if (!strcmp(t, "async"))
		test_async(d0, d1);
	else if (!strcmp(t, "fork"))
		test_fork(d0, d1);
	else if (!strcmp(t, "forkcopy"))
		test_fork_copy(d0, d1);
	else if (!strcmp(t, "mr"))
		test_mr(d0, d1);
	else if (!strcmp(t, "wr"))
		test_wr(d0, d1);
	else if (!strcmp(t, "ud"))
		test_ud(d0, d1);
	else if (!strcmp(t, "mcast"))
		test_mcast(d0, d1);
	else if (!strcmp(t, "cap"))
		test_cap(d0, d1);
	else if (!strcmp(t, "manyqps"))
		test_manyqps(d0, d1);
	else if (!strcmp(t, "cqchannels"))
		test_cqchannels(d0, d1);
	else if (!strcmp(t, "flowlabel"))
		test_flowlabel(d0, d1);
	else if (!strcmp(t, "udsl"))
		test_udsl(d0, d1);
	else if (!strcmp(t, "asyncobj"))
		test_asyncobj(d0, d1);
	else if (!strcmp(t, "verbs"))
		test_verbs(d0, d1);
	else if (!strcmp(t, "rereg"))
		test_rereg(d0, d1);
	else if (!strcmp(t, "ibta15"))
		test_ibta15(d0, d1);
	else if (!strcmp(t, "parity"))
		test_parity(d0, d1);
	else if (!strcmp(t, "mw"))
		test_mw(d0, d1);
	else if (!strcmp(t, "hostile"))
		test_hostile(d0, d1);
	else if (!strcmp(t, "killed"))
		test_killed(d0);
	else if (!strcmp(t, "nodaemon"))
		test_nodaemon();
	else {
		fprintf(stderr, "usage: corners errors|channel|async|fork|mr|wr|ud|cap|manyqps|cqchannels|flowlabel|udsl|asyncobj|verbs|rereg|ibta15|parity|mw|mcast|hostile|killed|nodaemon [DEV0 [DEV1]]\n");
		return 2;
	}
	printf("%d failed\n", failures);
	return failures ? 1 : 0;
}
