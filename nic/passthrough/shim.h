//go:build verbs

// The C side of the cgo boundary: thin wrappers over the libibverbs and
// librdmacm calls Go cannot make directly (static inline functions and
// macros: ibv_post_send, ibv_post_recv, ibv_poll_cq, ibv_req_notify_cq,
// ibv_query_port, ibv_reg_mr) and the conversions that touch C unions
// (work requests, completions, rdma_cm events), so that Go only ever sees
// flat structs. Data-path wrappers take batches: one cgo call posts a chain
// of work requests or polls an array of completions.

#ifndef RNIC_PASSTHROUGH_SHIM_H
#define RNIC_PASSTHROUGH_SHIM_H

#include <stdint.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

// RN_BATCH is the most work requests one rn_post_send/rn_post_recv call
// chains; Go splits longer lists.
#define RN_BATCH 16

// rn_send_wr is a send work request without unions. Its SGEs are
// sges[sge_off : sge_off+num_sge]; an inline WR whose bytes Go gave
// directly has num_sge 0 and its data at inl[inline_off : inline_off+inline_len].
struct rn_send_wr {
	uint64_t wr_id;
	uint64_t remote_addr;
	uint64_t compare_add;
	uint64_t swap;
	struct ibv_ah *ah;
	uint32_t opcode;
	uint32_t flags;
	uint32_t imm;      // host order; sent big-endian
	uint32_t inv_rkey; // SEND_WITH_INV, LOCAL_INV
	uint32_t rkey;
	uint32_t remote_qpn;
	uint32_t remote_qkey;
	uint32_t sge_off;
	uint32_t num_sge;
	uint32_t inline_off;
	uint32_t inline_len;
	// BIND_MW: the window and MR, the range, the rights and the new rkey
	// (in rkey).
	struct ibv_mw *mw;
	struct ibv_mr *mr;
	uint64_t bind_addr;
	uint64_t bind_len;
	uint32_t bind_access;
};

struct rn_recv_wr {
	uint64_t wr_id;
	uint32_t sge_off;
	uint32_t num_sge;
};

// rn_wc is a work completion without unions, immediate data in host order.
struct rn_wc {
	uint64_t wr_id;
	uint32_t status;
	uint32_t opcode;
	uint32_t vendor_err;
	uint32_t byte_len;
	uint32_t imm;
	uint32_t inv_rkey;
	uint32_t qp_num;
	uint32_t src_qp;
	uint32_t wc_flags;
	uint32_t pkey_index;
	uint32_t sl;
};

// rn_async is an asynchronous event: its type and the context (rnic's
// object id) of the CQ, QP or SRQ it concerns, or the port.
struct rn_async {
	uint32_t type;
	uint32_t port;
	uintptr_t cq, qp, srq;
};

// rn_addr is a socket address without sockaddr's variants: family is
// AF_INET or AF_INET6 (or 0: none), addr the IPv6 or IPv4-mapped address.
struct rn_addr {
	uint16_t family;
	uint16_t port;
	uint8_t addr[16];
};

// rn_cm_event is an rdma_cm event, copied out so it can be acknowledged
// at once (its private data lives in the event).
struct rn_cm_event {
	uint32_t event;
	int32_t status;
	uintptr_t id_ctx;     // the context of the id (a connect request: the listener's)
	struct rdma_cm_id *id; // a connect request: the new id
	uint32_t qp_num;
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t retry_count;
	uint8_t rnr_retry_count;
	uint8_t private_data_len;
	uint8_t private_data[256];
	char device[64];       // the id's device, "" when not bound yet
	struct rn_addr local, remote;
};

struct ibv_context *rn_open_device(const char *name);
int rn_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr);
ssize_t rn_query_gid_table(struct ibv_context *ctx, struct ibv_gid_entry *entries, size_t max);
int rn_set_nonblock(int fd);

struct ibv_mr *rn_reg_mr(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova, int access, int use_iova);
struct ibv_cq *rn_create_cq(struct ibv_context *ctx, int cqe, uintptr_t id, struct ibv_comp_channel *ch);
struct ibv_qp *rn_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr, uintptr_t id);
struct ibv_srq *rn_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr, uintptr_t id);

struct ibv_mw *rn_alloc_mw(struct ibv_pd *pd, int type);
int rn_dealloc_mw(struct ibv_mw *mw);
int rn_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mr *mr, uint64_t wr_id,
	       uint32_t flags, uint64_t addr, uint64_t len, uint32_t access, uint32_t *rkey);

int rn_post_send(struct ibv_qp *qp, const struct rn_send_wr *wrs, int n,
		 const struct ibv_sge *sges, const uint8_t *inl, int *bad);
int rn_post_recv(struct ibv_qp *qp, const struct rn_recv_wr *wrs, int n,
		 const struct ibv_sge *sges, int *bad);
int rn_post_srq_recv(struct ibv_srq *srq, const struct rn_recv_wr *wrs, int n,
		     const struct ibv_sge *sges, int *bad);
int rn_poll_cq(struct ibv_cq *cq, int n, struct rn_wc *out, int rxe_flags);
int rn_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int rn_get_cq_event(struct ibv_comp_channel *ch, uintptr_t *id);
int rn_get_async_event(struct ibv_context *ctx, struct rn_async *out);

int rn_create_id(struct rdma_event_channel *ch, uintptr_t ctx, struct rdma_cm_id **id);
void rn_set_id_context(struct rdma_cm_id *id, uintptr_t ctx);
int rn_bind_addr(struct rdma_cm_id *id, const struct rn_addr *a);
int rn_resolve_addr(struct rdma_cm_id *id, const struct rn_addr *dst, int timeout_ms);
int rn_get_cm_event(struct rdma_event_channel *ch, struct rn_cm_event *out);
void rn_id_addrs(struct rdma_cm_id *id, struct rn_addr *local, struct rn_addr *remote);
const char *rn_id_device(struct rdma_cm_id *id);
int rn_connect(struct rdma_cm_id *id, uint32_t qpn, const void *pd, uint8_t pdlen,
	       uint8_t rr, uint8_t id_depth, uint8_t retry, uint8_t rnr_retry, int accept);

#endif
