/* SPDX-License-Identifier: BSD-2-Clause */
/* corners mcast: multicast UD through the drop-in. The device reports
 * rxe's limits; ibv_attach_mcast refuses a GID that is not multicast and
 * ibv_detach_mcast a QP that is not attached (EINVAL); a datagram to the
 * group with remote QPN 0xFFFFFF reaches both QPs attached on the other
 * NIC, the group in the GRH area's destination; an attached QP cannot be
 * destroyed (EBUSY, as the kernel's uverbs); once detached a QP gets
 * nothing more while the other still does. */
#include "corners.h"

#include <unistd.h>

#define QKEY 0x11111111

static char sbuf[256], rbuf[2][256];

static void mc_send(struct side *s, struct ibv_ah *ah, struct ibv_mr *mr, uint32_t len)
{
	struct ibv_sge sge = {.addr = (uintptr_t)sbuf, .length = len, .lkey = mr->lkey};
	struct ibv_send_wr wr = {0}, *bad;
	struct ibv_wc wc;

	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = 0xFFFFFF;
	wr.wr.ud.remote_qkey = QKEY;
	if (ibv_post_send(s->qp, &wr, &bad))
		die("multicast ibv_post_send");
	check(wait_wc(s->cq, &wc, TIMEOUT_MS) && wc.status == IBV_WC_SUCCESS, "the send to the group completes");
}

/* received checks that receiver i got the datagram "payload" of len
 * bytes, sent to group. */
static void received(struct side *r, int i, const union ibv_gid *group, const char *payload, uint32_t len)
{
	struct ibv_wc wc;
	int got = wait_wc(r->cq, &wc, TIMEOUT_MS);
	check(got && wc.status == IBV_WC_SUCCESS && wc.byte_len == 40 + len && !memcmp(rbuf[i] + 40, payload, len) &&
		      !memcmp(rbuf[i] + 36, group->raw + 12, 4),
	      "receiver %d: the datagram, the group as the GRH area's destination", i);
}

void test_mcast(const char *d0, const char *d1)
{
	struct side s = {0}, r[2] = {{0}};
	struct ibv_device_attr da;
	struct ibv_ah_attr aa = {0};
	struct ibv_mr *smr, *rmr[2];
	union ibv_gid group = {0}, unicast;
	struct ibv_ah *ah;
	struct ibv_wc wc;
	int pid = getpid();

	ud_open(&s, d0);
	check(ibv_query_device(s.ctx, &da) == 0 && da.max_mcast_grp == 8192 && da.max_mcast_qp_attach == 56 &&
		      da.max_total_mcast_qp_attach == 8192 * 56,
	      "max_mcast_grp / max_mcast_qp_attach / max_total_mcast_qp_attach are rxe's 8192 / 56 / 458752");
	/* a group of its own per run: ::ffff:230.77.x.y */
	group.raw[10] = group.raw[11] = 0xff;
	group.raw[12] = 230, group.raw[13] = 77, group.raw[14] = (uint8_t)(pid >> 8), group.raw[15] = (uint8_t)pid | 1;
	smr = reg(s.pd, sbuf, sizeof(sbuf), ALL_ACCESS);
	for (int i = 0; i < 2; i++) {
		ud_open(&r[i], d1);
		rmr[i] = reg(r[i].pd, rbuf[i], sizeof(rbuf[i]), ALL_ACCESS);
	}
	unicast = r[0].gid;
	check(ibv_attach_mcast(r[0].qp, &unicast, 0) == EINVAL, "ibv_attach_mcast to a unicast GID: EINVAL");
	check(ibv_detach_mcast(r[0].qp, &group, 0) == EINVAL, "ibv_detach_mcast of a QP not attached: EINVAL");
	for (int i = 0; i < 2; i++) {
		check(ibv_attach_mcast(r[i].qp, &group, 0) == 0, "receiver %d attaches", i);
		post_recv(r[i].qp, NULL, rmr[i], rbuf[i], sizeof(rbuf[i]));
	}
	aa.is_global = 1;
	aa.grh.dgid = group;
	aa.grh.hop_limit = 64;
	aa.port_num = 1;
	if (!(ah = ibv_create_ah(s.pd, &aa)))
		die("ibv_create_ah to the group");
	memcpy(sbuf, "to both", 7);
	mc_send(&s, ah, smr, 7);
	received(&r[0], 0, &group, "to both", 7);
	received(&r[1], 1, &group, "to both", 7);

	check(ibv_destroy_qp(r[0].qp) == EBUSY, "destroying an attached QP: EBUSY");
	check(ibv_detach_mcast(r[0].qp, &group, 0) == 0, "receiver 0 detaches");
	for (int i = 0; i < 2; i++)
		post_recv(r[i].qp, NULL, rmr[i], rbuf[i], sizeof(rbuf[i]));
	memcpy(sbuf, "to one", 6);
	mc_send(&s, ah, smr, 6);
	received(&r[1], 1, &group, "to one", 6);
	check(!wait_wc(r[0].cq, &wc, 300), "a detached QP receives nothing");
	check(ibv_detach_mcast(r[1].qp, &group, 0) == 0, "receiver 1 detaches");

	ibv_destroy_ah(ah);
	ibv_dereg_mr(smr);
	for (int i = 0; i < 2; i++) {
		ibv_dereg_mr(rmr[i]);
		ibv_destroy_qp(r[i].qp);
		ibv_destroy_cq(r[i].cq);
		side_free(&r[i]);
	}
	ibv_destroy_qp(s.qp);
	ibv_destroy_cq(s.cq);
	side_free(&s);
}
