//go:build verbs

// The C wrappers declared in shim.h. Nothing here keeps state or a pointer
// into Go memory beyond the call that received it.

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include "shim.h"

struct ibv_context *rn_open_device(const char *name)
{
	int n = 0;
	struct ibv_device **list = ibv_get_device_list(&n);
	struct ibv_context *ctx = NULL;
	int found = 0;

	if (!list)
		return NULL;
	for (int i = 0; i < n; i++) {
		if (strcmp(ibv_get_device_name(list[i]), name) == 0) {
			found = 1;
			ctx = ibv_open_device(list[i]);
			break;
		}
	}
	int saved = errno;
	ibv_free_device_list(list);
	errno = found ? saved : ENODEV;
	return ctx;
}

int rn_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr)
{
	return ibv_query_port(ctx, port, attr);
}

ssize_t rn_query_gid_table(struct ibv_context *ctx, struct ibv_gid_entry *entries, size_t max)
{
	return ibv_query_gid_table(ctx, entries, max, 0);
}

int rn_set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0)
		return -1;
	return fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

struct ibv_mr *rn_reg_mr(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova, int access, int use_iova)
{
	if (use_iova)
		return ibv_reg_mr_iova(pd, addr, len, iova, access);
	return ibv_reg_mr(pd, addr, len, access);
}

// The contexts carry rnic's object ids, not pointers: events name the
// object by id, and Go never turns an integer into a pointer.
struct ibv_cq *rn_create_cq(struct ibv_context *ctx, int cqe, uintptr_t id, struct ibv_comp_channel *ch)
{
	return ibv_create_cq(ctx, cqe, (void *)id, ch, 0);
}

struct ibv_qp *rn_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr, uintptr_t id)
{
	attr->qp_context = (void *)id;
	return ibv_create_qp(pd, attr);
}

struct ibv_srq *rn_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr, uintptr_t id)
{
	attr->srq_context = (void *)id;
	return ibv_create_srq(pd, attr);
}

// rn_post_send chains n (≤ RN_BATCH) work requests in C memory and posts
// them with one ibv_post_send; *bad is the index of the first WR not
// posted. The provider copies SGEs and inline data at post time, so the
// Go arrays need to live only for the call.
int rn_post_send(struct ibv_qp *qp, const struct rn_send_wr *wrs, int n,
		 const struct ibv_sge *sges, const uint8_t *inl, int *bad)
{
	struct ibv_send_wr w[RN_BATCH];
	struct ibv_sge inl_sge[RN_BATCH];
	struct ibv_send_wr *bad_wr = NULL;

	if (n <= 0 || n > RN_BATCH) {
		*bad = 0;
		return EINVAL;
	}
	memset(w, 0, sizeof(w[0]) * n);
	for (int i = 0; i < n; i++) {
		const struct rn_send_wr *s = &wrs[i];
		struct ibv_send_wr *d = &w[i];

		d->wr_id = s->wr_id;
		d->next = i + 1 < n ? &w[i + 1] : NULL;
		d->opcode = s->opcode;
		d->send_flags = s->flags;
		if (s->num_sge > 0) {
			d->sg_list = (struct ibv_sge *)&sges[s->sge_off];
			d->num_sge = s->num_sge;
		} else if (s->inline_len > 0) {
			inl_sge[i].addr = (uintptr_t)(inl + s->inline_off);
			inl_sge[i].length = s->inline_len;
			inl_sge[i].lkey = 0;
			d->sg_list = &inl_sge[i];
			d->num_sge = 1;
		}
		switch (s->opcode) {
		case IBV_WR_SEND_WITH_IMM:
		case IBV_WR_RDMA_WRITE_WITH_IMM:
			d->imm_data = htonl(s->imm);
			break;
		case IBV_WR_SEND_WITH_INV:
		case IBV_WR_LOCAL_INV:
			d->invalidate_rkey = s->inv_rkey;
			break;
		case IBV_WR_BIND_MW:
			d->bind_mw.mw = s->mw;
			d->bind_mw.rkey = s->rkey;
			d->bind_mw.bind_info.mr = s->mr;
			d->bind_mw.bind_info.addr = s->bind_addr;
			d->bind_mw.bind_info.length = s->bind_len;
			d->bind_mw.bind_info.mw_access_flags = s->bind_access;
			break;
		}
		switch (s->opcode) {
		case IBV_WR_RDMA_WRITE:
		case IBV_WR_RDMA_WRITE_WITH_IMM:
		case IBV_WR_RDMA_READ:
			d->wr.rdma.remote_addr = s->remote_addr;
			d->wr.rdma.rkey = s->rkey;
			break;
		case IBV_WR_ATOMIC_CMP_AND_SWP:
		case IBV_WR_ATOMIC_FETCH_AND_ADD:
			d->wr.atomic.remote_addr = s->remote_addr;
			d->wr.atomic.rkey = s->rkey;
			d->wr.atomic.compare_add = s->compare_add;
			d->wr.atomic.swap = s->swap;
			break;
		default:
			if (s->ah) {
				d->wr.ud.ah = s->ah;
				d->wr.ud.remote_qpn = s->remote_qpn;
				d->wr.ud.remote_qkey = s->remote_qkey;
			}
		}
	}
	int ret = ibv_post_send(qp, w, &bad_wr);
	*bad = ret && bad_wr ? (int)(bad_wr - w) : (ret ? 0 : n);
	return ret;
}

struct ibv_mw *rn_alloc_mw(struct ibv_pd *pd, int type)
{
	return ibv_alloc_mw(pd, (enum ibv_mw_type)type);
}

int rn_dealloc_mw(struct ibv_mw *mw)
{
	return ibv_dealloc_mw(mw);
}

// rn_bind_mw binds a Type 1 window (ibv_bind_mw, a static inline) with
// the send flags and WR id given; mr NULL with len 0 unbinds. On success
// *rkey is the window's new rkey, which the provider chose.
int rn_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mr *mr, uint64_t wr_id,
	       uint32_t flags, uint64_t addr, uint64_t len, uint32_t access, uint32_t *rkey)
{
	struct ibv_mw_bind b;

	memset(&b, 0, sizeof(b));
	b.wr_id = wr_id;
	b.send_flags = flags;
	b.bind_info.mr = mr;
	b.bind_info.addr = addr;
	b.bind_info.length = len;
	b.bind_info.mw_access_flags = access;
	int ret = ibv_bind_mw(qp, mw, &b);
	if (ret == 0)
		*rkey = mw->rkey;
	return ret;
}

static int chain_recv(struct ibv_recv_wr *w, const struct rn_recv_wr *wrs, int n,
		      const struct ibv_sge *sges)
{
	if (n <= 0 || n > RN_BATCH)
		return EINVAL;
	for (int i = 0; i < n; i++) {
		w[i].wr_id = wrs[i].wr_id;
		w[i].next = i + 1 < n ? &w[i + 1] : NULL;
		w[i].sg_list = wrs[i].num_sge ? (struct ibv_sge *)&sges[wrs[i].sge_off] : NULL;
		w[i].num_sge = wrs[i].num_sge;
	}
	return 0;
}

int rn_post_recv(struct ibv_qp *qp, const struct rn_recv_wr *wrs, int n,
		 const struct ibv_sge *sges, int *bad)
{
	struct ibv_recv_wr w[RN_BATCH], *bad_wr = NULL;
	int ret = chain_recv(w, wrs, n, sges);

	if (ret) {
		*bad = 0;
		return ret;
	}
	ret = ibv_post_recv(qp, w, &bad_wr);
	*bad = ret && bad_wr ? (int)(bad_wr - w) : (ret ? 0 : n);
	return ret;
}

int rn_post_srq_recv(struct ibv_srq *srq, const struct rn_recv_wr *wrs, int n,
		     const struct ibv_sge *sges, int *bad)
{
	struct ibv_recv_wr w[RN_BATCH], *bad_wr = NULL;
	int ret = chain_recv(w, wrs, n, sges);

	if (ret) {
		*bad = 0;
		return ret;
	}
	ret = ibv_post_srq_recv(srq, w, &bad_wr);
	*bad = ret && bad_wr ? (int)(bad_wr - w) : (ret ? 0 : n);
	return ret;
}

// RXE_KERNEL_WITH_INV is where rxe's completions carry "invalidated":
// its provider copies the kernel's CQE, whose IB_WC_WITH_INVALIDATE is bit
// 2, libibverbs' IBV_WC_IP_CSUM_OK (libibverbs' WITH_INV is bit 3). Seen
// with rdma-core 44 on Linux 6.1: a SEND with Invalidate arrives with
// wc_flags 5 and the right invalidated_rkey. rxe offloads no checksums, so
// the bit means nothing else there.
#define RXE_KERNEL_WITH_INV (1u << 2)

// rn_poll_cq polls up to n (≤ RN_BATCH) completions into out; rxe_flags
// set, it reads rxe's kernel-numbered "invalidated" flag as WITH_INV.
int rn_poll_cq(struct ibv_cq *cq, int n, struct rn_wc *out, int rxe_flags)
{
	struct ibv_wc wc[RN_BATCH];

	if (n > RN_BATCH)
		n = RN_BATCH;
	// Providers fill only the fields they define (libsiw leaves src_qp
	// and pkey_index alone): what they skip must read as zero, not as
	// stack garbage.
	memset(wc, 0, sizeof(wc[0]) * n);
	int got = ibv_poll_cq(cq, n, wc);
	for (int i = 0; i < got; i++) {
		if (rxe_flags && (wc[i].wc_flags & RXE_KERNEL_WITH_INV))
			wc[i].wc_flags = (wc[i].wc_flags & ~RXE_KERNEL_WITH_INV) | IBV_WC_WITH_INV;
		out[i].wr_id = wc[i].wr_id;
		out[i].status = wc[i].status;
		out[i].opcode = wc[i].opcode;
		out[i].vendor_err = wc[i].vendor_err;
		out[i].byte_len = wc[i].byte_len;
		out[i].imm = (wc[i].wc_flags & IBV_WC_WITH_IMM) ? ntohl(wc[i].imm_data) : 0;
		out[i].inv_rkey = (wc[i].wc_flags & IBV_WC_WITH_INV) ? wc[i].invalidated_rkey : 0;
		out[i].qp_num = wc[i].qp_num;
		out[i].src_qp = wc[i].src_qp;
		out[i].wc_flags = wc[i].wc_flags;
		out[i].pkey_index = wc[i].pkey_index;
		out[i].sl = wc[i].sl;
	}
	return got;
}

int rn_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	return ibv_req_notify_cq(cq, solicited_only);
}

// rn_get_cq_event takes one event off a (non-blocking) completion channel
// and acknowledges it at once, so destroying the CQ never waits on Go.
int rn_get_cq_event(struct ibv_comp_channel *ch, uintptr_t *id)
{
	struct ibv_cq *cq;
	void *ctx;

	if (ibv_get_cq_event(ch, &cq, &ctx))
		return -1;
	ibv_ack_cq_events(cq, 1);
	*id = (uintptr_t)ctx;
	return 0;
}

int rn_get_async_event(struct ibv_context *ctx, struct rn_async *out)
{
	struct ibv_async_event ev;

	if (ibv_get_async_event(ctx, &ev))
		return -1;
	memset(out, 0, sizeof(*out));
	out->type = ev.event_type;
	switch (ev.event_type) {
	case IBV_EVENT_CQ_ERR:
		out->cq = (uintptr_t)ev.element.cq->cq_context;
		break;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		out->qp = (uintptr_t)ev.element.qp->qp_context;
		break;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		out->srq = (uintptr_t)ev.element.srq->srq_context;
		break;
	case IBV_EVENT_PORT_ACTIVE:
	case IBV_EVENT_PORT_ERR:
	case IBV_EVENT_LID_CHANGE:
	case IBV_EVENT_PKEY_CHANGE:
	case IBV_EVENT_SM_CHANGE:
	case IBV_EVENT_CLIENT_REREGISTER:
	case IBV_EVENT_GID_CHANGE:
		out->port = ev.element.port_num;
		break;
	default:
		break;
	}
	ibv_ack_async_event(&ev);
	return 0;
}

int rn_create_id(struct rdma_event_channel *ch, uintptr_t ctx, struct rdma_cm_id **id)
{
	return rdma_create_id(ch, id, (void *)ctx, RDMA_PS_TCP);
}

void rn_set_id_context(struct rdma_cm_id *id, uintptr_t ctx)
{
	id->context = (void *)ctx;
}

// to_sockaddr builds a sockaddr from a; an IPv4-mapped address becomes
// AF_INET.
static socklen_t to_sockaddr(const struct rn_addr *a, struct sockaddr_storage *ss)
{
	static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	memset(ss, 0, sizeof(*ss));
	if (a->family == AF_INET || memcmp(a->addr, v4mapped, 12) == 0) {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;
		in->sin_family = AF_INET;
		in->sin_port = htons(a->port);
		memcpy(&in->sin_addr, a->addr + 12, 4);
		return sizeof(*in);
	}
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
	in6->sin6_family = AF_INET6;
	in6->sin6_port = htons(a->port);
	memcpy(&in6->sin6_addr, a->addr, 16);
	return sizeof(*in6);
}

static void from_sockaddr(const struct sockaddr *sa, struct rn_addr *a)
{
	memset(a, 0, sizeof(*a));
	if (!sa)
		return;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
		a->family = AF_INET;
		a->port = ntohs(in->sin_port);
		a->addr[10] = a->addr[11] = 0xff;
		memcpy(a->addr + 12, &in->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
		a->family = AF_INET6;
		a->port = ntohs(in6->sin6_port);
		memcpy(a->addr, &in6->sin6_addr, 16);
	}
}

int rn_bind_addr(struct rdma_cm_id *id, const struct rn_addr *a)
{
	struct sockaddr_storage ss;

	to_sockaddr(a, &ss);
	return rdma_bind_addr(id, (struct sockaddr *)&ss);
}

int rn_resolve_addr(struct rdma_cm_id *id, const struct rn_addr *dst, int timeout_ms)
{
	struct sockaddr_storage ss;

	to_sockaddr(dst, &ss);
	return rdma_resolve_addr(id, NULL, (struct sockaddr *)&ss, timeout_ms);
}

void rn_id_addrs(struct rdma_cm_id *id, struct rn_addr *local, struct rn_addr *remote)
{
	from_sockaddr(rdma_get_local_addr(id), local);
	from_sockaddr(rdma_get_peer_addr(id), remote);
}

const char *rn_id_device(struct rdma_cm_id *id)
{
	if (!id->verbs)
		return "";
	return ibv_get_device_name(id->verbs->device);
}

// rn_get_cm_event takes one event off a (non-blocking) event channel,
// copies what rnic uses and acknowledges it, so destroying an id never
// waits on Go.
int rn_get_cm_event(struct rdma_event_channel *ch, struct rn_cm_event *out)
{
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(ch, &ev))
		return -1;
	memset(out, 0, sizeof(*out));
	out->event = ev->event;
	out->status = ev->status;
	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
		out->id_ctx = (uintptr_t)ev->listen_id->context;
		out->id = ev->id;
	} else {
		out->id_ctx = (uintptr_t)ev->id->context;
	}
	switch (ev->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
	case RDMA_CM_EVENT_ESTABLISHED:
	case RDMA_CM_EVENT_REJECTED:
		out->qp_num = ev->param.conn.qp_num;
		out->responder_resources = ev->param.conn.responder_resources;
		out->initiator_depth = ev->param.conn.initiator_depth;
		out->retry_count = ev->param.conn.retry_count;
		out->rnr_retry_count = ev->param.conn.rnr_retry_count;
		if (ev->param.conn.private_data && ev->param.conn.private_data_len) {
			out->private_data_len = ev->param.conn.private_data_len;
			memcpy(out->private_data, ev->param.conn.private_data, out->private_data_len);
		}
		break;
	default:
		break;
	}
	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
		const char *dev = rn_id_device(ev->id);
		strncpy(out->device, dev, sizeof(out->device) - 1);
		rn_id_addrs(ev->id, &out->local, &out->remote);
	}
	rdma_ack_cm_event(ev);
	return 0;
}

// rn_connect is rdma_connect (accept = 0) or rdma_accept (accept = 1) for
// a QP the program created itself: conn_param names it by number.
int rn_connect(struct rdma_cm_id *id, uint32_t qpn, const void *pd, uint8_t pdlen,
	       uint8_t rr, uint8_t id_depth, uint8_t retry, uint8_t rnr_retry, int accept)
{
	struct rdma_conn_param p;

	memset(&p, 0, sizeof(p));
	p.private_data = pdlen ? pd : NULL;
	p.private_data_len = pdlen;
	p.responder_resources = rr;
	p.initiator_depth = id_depth;
	p.retry_count = retry;
	p.rnr_retry_count = rnr_retry;
	p.qp_num = qpn;
	if (accept)
		return rdma_accept(id, &p);
	return rdma_connect(id, &p);
}
