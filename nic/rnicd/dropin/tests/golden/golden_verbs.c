/* SPDX-License-Identifier: BSD-2-Clause */
/* The golden bodies of nic/rnicd/proto/testdata/golden, written by the Go
 * encoder, decoded by libibverbs' own decoders: every field must come out
 * as proto/golden_test.go put it in, so the C side and the daemon agree
 * on each body's layout, not only on the constants of rnicd_proto.h.
 * Built with the library's sources (it calls internal decoders) under
 * AddressSanitizer and UBSan by `make -C nic/rnicd/dropin/libibverbs
 * golden`, which a Go test runs; exits non-zero on the first mismatch.
 * Usage: golden_verbs DIR */
#include "../../libibverbs/rnic.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *dir;
static int failed;

#define CHECK(name, got, want)                                                                              \
	do {                                                                                                \
		unsigned long long g_ = (unsigned long long)(got), w_ = (unsigned long long)(want);         \
		if (g_ != w_) {                                                                             \
			fprintf(stderr, "%s: %s = %#llx, want %#llx\n", name, #got, g_, w_);               \
			failed = 1;                                                                         \
		}                                                                                           \
	} while (0)

/* load reads DIR/name.bin into an exact-size heap buffer (so that ASan
 * sees any read past its end). */
static uint8_t *load(const char *name, size_t *n)
{
	char path[4096];
	uint8_t tmp[8192], *b;
	FILE *f;
	snprintf(path, sizeof(path), "%s/%s.bin", dir, name);
	if (!(f = fopen(path, "rb"))) {
		perror(path);
		exit(2);
	}
	*n = fread(tmp, 1, sizeof(tmp), f);
	fclose(f);
	b = malloc(*n ? *n : 1);
	memcpy(b, tmp, *n);
	return b;
}

static void check_open(void)
{
	static const uint8_t gid2[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 2};
	struct rnic_dev_attr a;
	struct rnic_port_attr p;
	struct rbuf r;
	uint8_t gid[16];
	char name[RNICD_MAX_NAME + 1];
	size_t n;
	uint8_t *b = load("OPEN.reply.1", &n);
	uint32_t ngids;

	r_init(&r, b, n);
	CHECK("OPEN reply", r_u32(&r), RNICD_VERSION);
	r_str(&r, name, sizeof(name));
	CHECK("OPEN reply", strcmp(name, "rnic1"), 0);
	r_dev_attr(&r, &a);
	r_port_attr(&r, &p);
	ngids = r_u32(&r);
	CHECK("OPEN reply", ngids, 2);
	r_gid(&r, gid);
	r_gid(&r, gid);
	CHECK("OPEN reply", memcmp(gid, gid2, 16), 0);
	CHECK("OPEN reply", r_u8(&r), IBV_TRANSPORT_IWARP);
	CHECK("OPEN reply", r_u8(&r), IBV_NODE_RNIC);
	CHECK("OPEN reply", r_done(&r), 0);
	CHECK("OPEN reply", strcmp(a.fw_ver, "golden 1.0"), 0);
	CHECK("OPEN reply", a.node_guid, 0x0102030405060708ull);
	CHECK("OPEN reply", a.sys_image_guid, 0x1112131415161718ull);
	CHECK("OPEN reply", a.vendor_part_id, 0x5678);
	CHECK("OPEN reply", a.max_qp, 4096);
	CHECK("OPEN reply", a.cap_flags, 0x21c00);
	CHECK("OPEN reply", a.max_qp_init_rd_atom, 17);
	CHECK("OPEN reply", a.atomic_cap, 1);
	CHECK("OPEN reply", a.max_srq_sge, 30);
	CHECK("OPEN reply", a.max_inline, 256);
	CHECK("OPEN reply", a.max_msg_size, 1ull << 31);
	CHECK("OPEN reply", a.max_mcast_grp, 8191);
	CHECK("OPEN reply", a.max_mcast_qp_attach, 55);
	CHECK("OPEN reply", a.max_total_mcast_qp_attach, 0x6ffff);
	CHECK("OPEN reply", p.state, IBV_PORT_ACTIVE);
	CHECK("OPEN reply", p.active_mtu, IBV_MTU_1024);
	CHECK("OPEN reply", p.gid_tbl_len, 16);
	CHECK("OPEN reply", p.link_layer, IBV_LINK_LAYER_ETHERNET);
	CHECK("OPEN reply", p.link_mtu, 1500);
	CHECK("OPEN reply", p.bad_pkey_cntr, 0xffff);
	CHECK("OPEN reply", p.qkey_viol_cntr, 7);
	free(b);
}

static void check_place(const char *what, const struct rnic_place *p)
{
	CHECK(what, p->chunk, 3);
	CHECK(what, p->own, 0);
	CHECK(what, p->chunk_len, RNICD_ARENA_CHUNK_LEN);
	CHECK(what, p->offset, 5 * RNICD_ARENA_PAGE);
}

static void check_creates(void)
{
	struct rnic_ring sq, rq;
	struct rnic_place place;
	struct rnic_cq q;
	struct rbuf r;
	uint32_t h;
	size_t n;
	uint8_t *b = load("CREATE_CQ_ON.reply.1", &n);

	memset(&q, 0, sizeof(q));
	r_init(&r, b, n);
	CHECK("CREATE_CQ_ON reply", rnic_read_cq(&r, &q), 0);
	CHECK("CREATE_CQ_ON reply", q.h, 9);
	CHECK("CREATE_CQ_ON reply", q.slots, 64);
	CHECK("CREATE_CQ_ON reply", q.cap, 63);
	CHECK("CREATE_CQ_ON reply", q.chan_slot, 499);
	check_place("CREATE_CQ_ON reply", &q.place);
	free(b);

	b = load("CREATE_CHANNEL.reply.1", &n);
	r_init(&r, b, n);
	CHECK("CREATE_CHANNEL reply", rnic_read_channel(&r, &h, &place), 0);
	CHECK("CREATE_CHANNEL reply", h, 7);
	check_place("CREATE_CHANNEL reply", &place);
	free(b);

	b = load("CREATE_QP.reply.1", &n); /* QP, QPN and the caps, then as qp.c reads the rest */
	r_init(&r, b, n);
	CHECK("CREATE_QP reply", r_u32(&r), 11);
	CHECK("CREATE_QP reply", r_u32(&r), 0x123);
	CHECK("CREATE_QP reply", r_u32(&r), 128);
	CHECK("CREATE_QP reply", r_u32(&r), 256);
	CHECK("CREATE_QP reply", r_u32(&r), 4);
	CHECK("CREATE_QP reply", r_u32(&r), 2);
	CHECK("CREATE_QP reply", r_u32(&r), 220);
	CHECK("CREATE_QP reply", rnic_read_layout(&r, &sq, &rq), 0);
	CHECK("CREATE_QP reply", sq.slot_size, 320);
	CHECK("CREATE_QP reply", rq.slots, 256);
	CHECK("CREATE_QP reply", rq.slot_size, 64);
	CHECK("CREATE_QP reply",
	      rnic_read_place(&r, &place,
			      RNICD_RING_HEADER_LEN + (uint64_t)sq.slots * sq.slot_size + (uint64_t)rq.slots * rq.slot_size),
	      0);
	check_place("CREATE_QP reply", &place);
	CHECK("CREATE_QP reply", r_done(&r), 0);
	free(b);
}

/* ALLOC_MW's reply, as mw.c reads it: the handle, then the rkey. */
static void check_mw(void)
{
	struct rbuf r;
	size_t n;
	uint8_t *b = load("ALLOC_MW.reply.1", &n);

	r_init(&r, b, n);
	CHECK("ALLOC_MW reply", r_u32(&r), 14);
	CHECK("ALLOC_MW reply", r_u32(&r), 0x00abcd17);
	CHECK("ALLOC_MW reply", r_done(&r), 0);
	free(b);
}

static void check_ah(void)
{
	static const uint8_t gid2[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 2};
	struct ibv_ah_attr ah;
	struct rbuf r;
	size_t n;
	uint8_t *b = load("CREATE_AH.reply.1", &n);

	r_init(&r, b, n);
	CHECK("CREATE_AH reply", r_u32(&r), 13);
	rnic_r_av(&r, &ah);
	CHECK("CREATE_AH reply", r_done(&r), 0);
	CHECK("CREATE_AH reply", memcmp(ah.grh.dgid.raw, gid2, 16), 0);
	CHECK("CREATE_AH reply", ah.grh.sgid_index, 1);
	CHECK("CREATE_AH reply", ah.grh.flow_label, 0x12345);
	CHECK("CREATE_AH reply", ah.grh.hop_limit, 64);
	CHECK("CREATE_AH reply", ah.grh.traffic_class, 0x20);
	CHECK("CREATE_AH reply", ah.sl, 3);
	free(b);
}

/* The slots: a completion read by the poller, WQEs at the offsets the
 * posting code writes them. */
static void check_slots(void)
{
	struct ibv_wc wc;
	size_t n;
	uint8_t *b = load("slot.wc.1", &n);

	CHECK("completion slot", n, RNICD_WC_SLOT_LEN);
	rnic_wc_from_slot(b, &wc);
	CHECK("completion slot", wc.wr_id, 0x0102030405060708ull);
	CHECK("completion slot", wc.status, 5);
	CHECK("completion slot", wc.opcode, 128);
	CHECK("completion slot", wc.wc_flags, 3);
	CHECK("completion slot", wc.sl, 2);
	CHECK("completion slot", wc.vendor_err, 0x44);
	CHECK("completion slot", wc.byte_len, 4096);
	CHECK("completion slot", wc.imm_data, htobe32(0xdeadbeef));
	CHECK("completion slot", wc.qp_num, 0x123);
	CHECK("completion slot", wc.src_qp, 0x456);
	CHECK("completion slot", wc.pkey_index, 0x77);
	free(b);

	b = load("slot.send.1", &n);
	CHECK("send slot", get64(b + RNICD_SEND_WRID), 0x1112131415161718ull);
	CHECK("send slot", b[RNICD_SEND_OPCODE], 4);
	CHECK("send slot", b[RNICD_SEND_FLAGS], 2);
	CHECK("send slot", get16(b + RNICD_SEND_NUM_SGE), 2);
	CHECK("send slot", get32(b + RNICD_SEND_IMM), 0x0a0b0c0d);
	CHECK("send slot", get32(b + RNICD_SEND_INV_RKEY), 0x21);
	CHECK("send slot", get64(b + RNICD_SEND_REMOTE_ADDR), 0x7f0000002000ull);
	CHECK("send slot", get32(b + RNICD_SEND_RKEY), 0x2200);
	CHECK("send slot", get32(b + RNICD_SEND_AH), 13);
	CHECK("send slot", get64(b + RNICD_SEND_COMPARE_ADD), 5);
	CHECK("send slot", get64(b + RNICD_SEND_SWAP), 6);
	CHECK("send slot", get32(b + RNICD_SEND_REMOTE_QPN), 0x789);
	CHECK("send slot", get32(b + RNICD_SEND_REMOTE_QKEY), 0x11111111);
	CHECK("send slot", get32(b + RNICD_SEND_WQE_HEADER_LEN + RNICD_SGE_LEN + RNICD_SGE_LKEY), 0x1101);
	CHECK("send slot", get64(b + RNICD_SEND_WQE_HEADER_LEN + RNICD_SGE_LEN + RNICD_SGE_ADDR), 0x7f0000003000ull);
	free(b);

	/* A BIND_MW WQE: the bind in the other fields, as mw.c writes it. */
	b = load("slot.bind.1", &n);
	CHECK("bind slot", b[RNICD_SEND_OPCODE], IBV_WR_BIND_MW);
	CHECK("bind slot", get16(b + RNICD_SEND_NUM_SGE), 0);
	CHECK("bind slot", get32(b + RNICD_SEND_INV_RKEY), 0xabcdef01);
	CHECK("bind slot", get32(b + RNICD_SEND_RKEY), 0xabcdef02);
	CHECK("bind slot", get32(b + RNICD_SEND_IMM), 0x1100);
	CHECK("bind slot", get64(b + RNICD_SEND_REMOTE_ADDR), 0x7f0000005000ull);
	CHECK("bind slot", get64(b + RNICD_SEND_COMPARE_ADD), 4096);
	CHECK("bind slot", get64(b + RNICD_SEND_SWAP), 6);
	free(b);

	b = load("slot.recv.1", &n);
	CHECK("receive slot", get64(b + RNICD_RECV_WRID), 77);
	CHECK("receive slot", get32(b + RNICD_RECV_NUM_SGE), 1);
	CHECK("receive slot", get32(b + RNICD_RECV_WQE_HEADER_LEN + RNICD_SGE_LENGTH), 300);
	free(b);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: golden_verbs DIR\n");
		return 2;
	}
	dir = argv[1];
	check_open();
	check_creates();
	check_ah();
	check_mw();
	check_slots();
	if (failed)
		return 1;
	printf("golden_verbs: every golden body decodes as the Go encoder wrote it\n");
	return 0;
}
