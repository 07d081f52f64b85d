/* SPDX-License-Identifier: BSD-2-Clause */
/* The verbs both sides share: opening a device with one PD, one CQ on a
 * completion channel, one MR over the side's memory and its RC QPs;
 * telling the other side about them; connecting; waiting for completions;
 * closing everything again (the soak checks that the daemon gets back to
 * where it was). */
#include "soak.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static struct ibv_context *open_device(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;

	if (!list)
		die("ibv_get_device_list: %s", strerror(errno));
	for (int i = 0; list[i] && !ctx; i++)
		if (!name || !strcmp(ibv_get_device_name(list[i]), name))
			if (!(ctx = ibv_open_device(list[i])))
				die("ibv_open_device %s: %s", ibv_get_device_name(list[i]), strerror(errno));
	ibv_free_device_list(list);
	if (!ctx)
		die("no RDMA device %s", name ? name : "at all");
	return ctx;
}

/* side_open opens dev and makes the objects of one side; its memory (the
 * layout already in s->lay) is one anonymous mapping, registered once. */
void side_open(struct side *s, const char *dev, int gid_index, const struct params *p, int cqe, uint32_t send_wr,
	       uint32_t recv_wr)
{
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		     IBV_ACCESS_REMOTE_ATOMIC;

	s->ctx = open_device(dev);
	if (ibv_query_device(s->ctx, &da) || ibv_query_port(s->ctx, 1, &pa))
		die("querying the device: %s", strerror(errno));
	if (cqe > da.max_cqe)
		die("a CQ of %d entries is more than the device's %d: fewer --qps or --depth", cqe, da.max_cqe);
	s->max_rd_atomic = (uint32_t)(da.max_qp_rd_atom < 16 ? da.max_qp_rd_atom : 16);
	s->gid_index = gid_index;
	s->lid = pa.lid;
	s->mtu = pa.active_mtu;
	if (ibv_query_gid(s->ctx, 1, gid_index, &s->gid))
		die("ibv_query_gid %d: %s", gid_index, strerror(errno));
	if (!(s->pd = ibv_alloc_pd(s->ctx)) || !(s->ch = ibv_create_comp_channel(s->ctx)) ||
	    !(s->cq = ibv_create_cq(s->ctx, cqe, NULL, s->ch, 0)))
		die("PD, channel, CQ of %d: %s", cqe, strerror(errno));
	if (ibv_req_notify_cq(s->cq, 0))
		die("ibv_req_notify_cq: %s", strerror(errno));
	s->mem = mmap(NULL, s->lay.total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s->mem == MAP_FAILED)
		die("mmap %zu bytes: %s", s->lay.total, strerror(errno));
	if (!(s->mr = ibv_reg_mr(s->pd, s->mem, s->lay.total, access)))
		die("ibv_reg_mr %zu bytes: %s", s->lay.total, strerror(errno));
	if (!(s->qp = calloc(p->qps, sizeof(*s->qp))))
		die("out of memory");
	for (uint32_t q = 0; q < p->qps; q++) {
		struct ibv_qp_init_attr qa = {
			.send_cq = s->cq,
			.recv_cq = s->cq,
			.cap = {.max_send_wr = send_wr, .max_recv_wr = recv_wr, .max_send_sge = MAX_SGE,
				.max_recv_sge = MAX_SGE},
			.qp_type = IBV_QPT_RC,
		};
		struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qp_access_flags = access};
		if (!(s->qp[q] = ibv_create_qp(s->pd, &qa)))
			die("QP %u: ibv_create_qp: %s", q, strerror(errno));
		if (ibv_modify_qp(s->qp[q], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
			die("QP %u to INIT: %s", q, strerror(errno));
	}
}

/* side_send_info: one line for the side (GID, LID, MTU, memory, rkey,
 * read/atomic depth), then one per QP (QPN, PSN). */
void side_send_info(struct side *s, FILE *f, uint32_t qps, uint32_t *psn)
{
	char gid[INET6_ADDRSTRLEN];

	inet_ntop(AF_INET6, s->gid.raw, gid, sizeof(gid));
	oob_send(f, "side %s %u %d %" PRIu64 " %u %u\n", gid, s->lid, (int)s->mtu, (uint64_t)(uintptr_t)s->mem,
		 s->mr->rkey, s->max_rd_atomic);
	for (uint32_t q = 0; q < qps; q++)
		oob_send(f, "qp %u %u %u\n", q, s->qp[q]->qp_num, psn[q]);
}

void side_recv_info(FILE *f, uint32_t qps, struct peer *pr)
{
	char line[256], gid[INET6_ADDRSTRLEN + 1];
	unsigned lid, rkey, rd;
	int mtu;

	oob_recv(f, line, sizeof(line));
	if (sscanf(line, "side %46s %u %d %" SCNu64 " %u %u", gid, &lid, &mtu, &pr->addr, &rkey, &rd) != 6 ||
	    inet_pton(AF_INET6, gid, pr->gid.raw) != 1)
		die("the other side said %s, not its side line", line);
	pr->lid = (uint16_t)lid;
	pr->mtu = (enum ibv_mtu)mtu;
	pr->rkey = rkey;
	pr->max_rd_atomic = rd;
	pr->qpn = calloc(qps, sizeof(*pr->qpn));
	pr->psn = calloc(qps, sizeof(*pr->psn));
	if (!pr->qpn || !pr->psn)
		die("out of memory");
	for (uint32_t q = 0; q < qps; q++) {
		unsigned n, qpn, psn;
		oob_recv(f, line, sizeof(line));
		if (sscanf(line, "qp %u %u %u", &n, &qpn, &psn) != 3 || n != q)
			die("the other side said %s, not QP %u's line", line, q);
		pr->qpn[q] = qpn;
		pr->psn[q] = psn;
	}
}

/* side_connect takes every QP to RTS towards its peer QP. A GRH is used
 * when the peer has a GID (RoCE, or InfiniBand across subnets). */
void side_connect(struct side *s, const struct params *p, const struct peer *pr, const uint32_t *my_psn)
{
	static const union ibv_gid zero;
	enum ibv_mtu mtu = pr->mtu < s->mtu ? pr->mtu : s->mtu;

	for (uint32_t q = 0; q < p->qps; q++) {
		struct ibv_qp_attr a = {
			.qp_state = IBV_QPS_RTR,
			.path_mtu = mtu,
			.dest_qp_num = pr->qpn[q],
			.rq_psn = pr->psn[q],
			.max_dest_rd_atomic = (uint8_t)s->max_rd_atomic,
			.min_rnr_timer = 12,
			.ah_attr = {.dlid = pr->lid, .port_num = 1},
		};
		if (memcmp(&pr->gid, &zero, sizeof(zero))) {
			a.ah_attr.is_global = 1;
			a.ah_attr.grh.dgid = pr->gid;
			a.ah_attr.grh.sgid_index = (uint8_t)s->gid_index;
			a.ah_attr.grh.hop_limit = 64;
		}
		if (ibv_modify_qp(s->qp[q], &a,
				  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
			die("QP %u to RTR: %s", q, strerror(errno));
		a = (struct ibv_qp_attr){
			.qp_state = IBV_QPS_RTS,
			.timeout = p->ack_timeout,
			.retry_cnt = 7,
			.rnr_retry = 7,
			.sq_psn = my_psn[q],
			.max_rd_atomic = (uint8_t)(pr->max_rd_atomic < s->max_rd_atomic ? pr->max_rd_atomic
											 : s->max_rd_atomic),
		};
		if (ibv_modify_qp(s->qp[q], &a,
				  IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
					  IBV_QP_MAX_QP_RD_ATOMIC))
			die("QP %u to RTS: %s", q, strerror(errno));
	}
}

/* side_poll: completions if there are any; else arm the CQ, look once more
 * (one may have come before the arming), and sleep on the channel. */
int side_poll(struct side *s, struct ibv_wc *wc, int n, int wait_ms)
{
	struct pollfd pfd = {.fd = s->ch->fd, .events = POLLIN};
	struct ibv_cq *cq;
	void *cq_ctx;
	int got;

	if ((got = ibv_poll_cq(s->cq, n, wc)) != 0)
		goto out;
	if (ibv_req_notify_cq(s->cq, 0))
		die("ibv_req_notify_cq: %s", strerror(errno));
	if ((got = ibv_poll_cq(s->cq, n, wc)) != 0)
		goto out;
	if (poll(&pfd, 1, wait_ms) < 0 && errno != EINTR)
		die("poll: %s", strerror(errno));
	if (pfd.revents & POLLIN) {
		if (ibv_get_cq_event(s->ch, &cq, &cq_ctx))
			die("ibv_get_cq_event: %s", strerror(errno));
		if (++s->events >= 64) {
			ibv_ack_cq_events(s->cq, (unsigned)s->events);
			s->events = 0;
		}
	}
	got = ibv_poll_cq(s->cq, n, wc);
out:
	if (got < 0)
		die("ibv_poll_cq failed");
	return got;
}

void side_close(struct side *s, uint32_t qps)
{
	for (uint32_t q = 0; q < qps; q++)
		if (ibv_destroy_qp(s->qp[q]))
			die("ibv_destroy_qp %u: %s", q, strerror(errno));
	free(s->qp);
	if (s->events)
		ibv_ack_cq_events(s->cq, (unsigned)s->events);
	if (ibv_dereg_mr(s->mr) || ibv_destroy_cq(s->cq) || ibv_destroy_comp_channel(s->ch) ||
	    ibv_dealloc_pd(s->pd) || ibv_close_device(s->ctx))
		die("closing the device: %s", strerror(errno));
	munmap(s->mem, s->lay.total);
}
