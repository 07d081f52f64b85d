/* SPDX-License-Identifier: BSD-2-Clause */
/* corners errors: bad arguments give the return values and errno values
 * libibverbs documents, and objects in use refuse to go. */
#include "corners.h"

#include <fcntl.h>

static void devices_and_ports(struct ibv_context *ctx)
{
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	struct ibv_gid_entry ge;
	union ibv_gid gid;
	uint16_t pkey = 0;

	check(ibv_query_device(ctx, &da) == 0 && da.phys_port_cnt == 1 && da.max_qp > 0 && da.max_cqe > 0,
	      "ibv_query_device: one port, limits");
	check(ibv_query_port(ctx, 1, &pa) == 0 && pa.state == IBV_PORT_ACTIVE &&
		      pa.link_layer == IBV_LINK_LAYER_ETHERNET,
	      "ibv_query_port 1: ACTIVE, Ethernet");
	check(ibv_query_port(ctx, 2, &pa) == EINVAL, "ibv_query_port 2 (no such port): EINVAL");
	check(ibv_query_gid(ctx, 1, 0, &gid) == 0 && gid.raw[10] == 0xff && gid.raw[11] == 0xff,
	      "ibv_query_gid 0: an IPv4-mapped GID");
	check(ibv_query_gid(ctx, 1, pa.gid_tbl_len, &gid) == -1, "ibv_query_gid past gid_tbl_len: -1");
	check(ibv_query_gid_ex(ctx, 1, 0, &ge, 0) == 0 && ge.gid_type == IBV_GID_TYPE_ROCE_V2 && ge.port_num == 1,
	      "ibv_query_gid_ex 0: RoCEv2, port 1");
	check(ibv_query_pkey(ctx, 1, 0, &pkey) == 0 && pkey == 0xffff, "ibv_query_pkey 0: the default P_Key");
	check(ibv_query_pkey(ctx, 1, pa.pkey_tbl_len, &pkey) != 0, "ibv_query_pkey past pkey_tbl_len fails");
}

static struct ibv_qp *create_qp(struct ibv_pd *pd, struct ibv_cq *cq, uint32_t wr, uint32_t sge)
{
	struct ibv_qp_init_attr qa = {0};

	qa.send_cq = qa.recv_cq = cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = wr;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = sge;
	errno = 0;
	return ibv_create_qp(pd, &qa);
}

static void limits(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_xrcd_init_attr xa = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS, .fd = -1, .oflags = O_CREAT};
	struct ibv_device_attr da;
	static char buf[PAGE];
	struct ibv_mr *mr;
	void *p;
	int e;

	if (ibv_query_device(ctx, &da))
		die("ibv_query_device");
	/* Each call first, its errno read right after: a check's arguments
	 * are evaluated in no fixed order. */
	errno = 0;
	p = ibv_create_cq(ctx, da.max_cqe + 1, NULL, NULL, 0);
	e = errno;
	check(!p && e == EINVAL, "ibv_create_cq over max_cqe: NULL, EINVAL (errno %d)", e);
	p = create_qp(pd, cq, da.max_qp_wr + 1, 1);
	e = errno;
	check(!p && e == EINVAL, "ibv_create_qp over max_qp_wr: NULL, EINVAL (errno %d)", e);
	p = create_qp(pd, cq, 4, da.max_sge + 1);
	e = errno;
	check(!p && e == EINVAL, "ibv_create_qp over max_sge: NULL, EINVAL (errno %d)", e);
	errno = 0;
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_REMOTE_WRITE);
	e = errno;
	check(!mr && e == EINVAL, "ibv_reg_mr REMOTE_WRITE without LOCAL_WRITE: NULL, EINVAL (errno %d)", e);
	if (mr)
		ibv_dereg_mr(mr);
	errno = 0;
	p = ibv_alloc_mw(pd, (enum ibv_mw_type)0);
	e = errno;
	check(!p && e == EINVAL, "ibv_alloc_mw of type 0 (only 1 and 2 exist): NULL, EINVAL (errno %d)", e);
	errno = 0;
	p = ibv_open_xrcd(ctx, &xa);
	e = errno;
	check(!p && e == EOPNOTSUPP, "ibv_open_xrcd (no XRC): NULL, EOPNOTSUPP (errno %d)", e);
}

/* qp_states: illegal transitions and posting in RESET are refused. */
static void qp_states(struct ibv_pd *pd, struct ibv_cq *cq, struct ibv_mr *mr, char *buf)
{
	struct ibv_qp_attr a = {0};
	struct ibv_qp_init_attr ia;
	struct ibv_qp *qp = create_qp(pd, cq, 4, 1);
	struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = 8, .lkey = mr->lkey};
	struct ibv_send_wr swr = {.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND}, *sbad = NULL;
	struct ibv_recv_wr rwr = {.sg_list = &sge, .num_sge = 1}, *rbad = NULL;

	if (!qp)
		die("ibv_create_qp");
	check(ibv_query_qp(qp, &a, IBV_QP_STATE | IBV_QP_CAP, &ia) == 0 && a.qp_state == IBV_QPS_RESET &&
		      ia.qp_type == IBV_QPT_RC && ia.cap.max_send_wr >= 4,
	      "ibv_query_qp: a new QP is in RESET with its capabilities");
	a.qp_state = IBV_QPS_RTR;
	check(ibv_modify_qp(qp, &a, IBV_QP_STATE) == EINVAL, "ibv_modify_qp RESET->RTR: EINVAL");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	check(ibv_modify_qp(qp, &a, IBV_QP_STATE) == EINVAL,
	      "ibv_modify_qp RESET->INIT without its required attributes: EINVAL");
	check(ibv_post_send(qp, &swr, &sbad) != 0 && sbad == &swr, "ibv_post_send in RESET: an error, bad_wr set");
	check(ibv_post_recv(qp, &rwr, &rbad) != 0 && rbad == &rwr, "ibv_post_recv in RESET: an error, bad_wr set");
	check(ibv_destroy_cq(cq) == EBUSY, "ibv_destroy_cq with a QP on it: EBUSY");
	check(ibv_destroy_qp(qp) == 0, "ibv_destroy_qp");
}

void test_errors(const char *dev)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_comp_channel *ch;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	static char buf[PAGE];
	int n = -1;

	list = ibv_get_device_list(&n);
	check(list && n >= 2 && !list[n], "ibv_get_device_list: both NICs, NULL-terminated (%d)", n);
	if (list) {
		check(n > 0 && ibv_get_device_guid(list[0]) != 0, "ibv_get_device_guid: not zero");
		ibv_free_device_list(list);
	}
	ctx = open_named(dev);
	devices_and_ports(ctx);
	if (!(pd = ibv_alloc_pd(ctx)) || !(ch = ibv_create_comp_channel(ctx)))
		die("ibv_alloc_pd / ibv_create_comp_channel");
	if (!(cq = ibv_create_cq(ctx, 16, NULL, ch, 0)))
		die("ibv_create_cq");
	limits(ctx, pd, cq);
	mr = reg(pd, buf, sizeof(buf), ALL_ACCESS);
	qp_states(pd, cq, mr, buf);
	check(ibv_dealloc_pd(pd) == EBUSY, "ibv_dealloc_pd with an MR in it: EBUSY");
	check(ibv_destroy_comp_channel(ch) == EBUSY, "ibv_destroy_comp_channel with a CQ on it: EBUSY");
	check(ibv_dereg_mr(mr) == 0, "ibv_dereg_mr");
	check(ibv_destroy_cq(cq) == 0, "ibv_destroy_cq");
	check(ibv_destroy_comp_channel(ch) == 0, "ibv_destroy_comp_channel");
	check(ibv_dealloc_pd(pd) == 0, "ibv_dealloc_pd");
	check(ibv_close_device(ctx) == 0, "ibv_close_device");
}
