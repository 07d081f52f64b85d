/* SPDX-License-Identifier: BSD-2-Clause */
/* corners killed: the daemon dies under a client with objects: the
 * context reports IBV_EVENT_DEVICE_FATAL, later calls fail or complete
 * without hanging (a blocking ibv_get_cq_event fails with EIO), and
 * everything can still be destroyed. The test
 * driving it kills the daemon between "ready" and the line it then sends
 * on stdin. And nodaemon: no daemon at all is an empty device list. */
#include "corners.h"

#include <unistd.h>

/* post_recv_any posts one receive and ignores the outcome. */
static void post_recv_any(struct ibv_qp *qp, struct ibv_mr *mr, char *buf)
{
	struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = 8, .lkey = mr->lkey};
	struct ibv_recv_wr wr = {.sg_list = &sge, .num_sge = 1}, *bad = NULL;

	(void)ibv_post_recv(qp, &wr, &bad);
}

static void wait_for_go(void)
{
	char line[16];

	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		die("stdin closed before the go");
}

void test_killed(const char *dev)
{
	struct side s = {0};
	struct ibv_async_event ev;
	struct ibv_comp_channel *ch;
	struct ibv_cq *ecq;
	void *ectx;
	static char buf[PAGE];
	struct ibv_mr *mr;
	struct ibv_wc wc;
	struct ibv_pd *pd;
	int got = 0, e, r;
	long end;

	s.ctx = open_named(dev);
	if (!(ch = ibv_create_comp_channel(s.ctx)))
		die("ibv_create_comp_channel");
	side_open(&s, dev, ch, NULL, NULL, 16, 16);
	if (ibv_req_notify_cq(s.cq, 0))
		die("ibv_req_notify_cq");
	mr = reg(s.pd, buf, sizeof(buf), ALL_ACCESS);
	wait_for_go();

	end = now_ms() + TIMEOUT_MS;
	while (!got && now_ms() < end && fd_ready(s.ctx->async_fd, (int)(end - now_ms()))) {
		if (ibv_get_async_event(s.ctx, &ev))
			break;
		printf("  event %s\n", ibv_event_type_str(ev.event_type));
		got = ev.event_type == IBV_EVENT_DEVICE_FATAL;
		ibv_ack_async_event(&ev);
	}
	check(got, "IBV_EVENT_DEVICE_FATAL once the daemon is gone");
	errno = 0;
	pd = ibv_alloc_pd(s.ctx);
	e = errno;
	check(pd == NULL && e != 0, "ibv_alloc_pd on a dead device: NULL with errno (%d)", e);
	check(ibv_poll_cq(s.cq, 1, &wc) <= 0 || wc.status != IBV_WC_SUCCESS,
	      "ibv_poll_cq on a dead device returns, with nothing successful");
	post_recv_any(s.qp, mr, buf);
	check(1, "ibv_post_recv on a dead device returns");
	errno = 0;
	r = ibv_get_cq_event(ch, &ecq, &ectx);
	e = errno;
	check(r == -1 && e == EIO, "a blocking ibv_get_cq_event on a dead device: -1, EIO (%d, errno %d)", r, e);
	ibv_destroy_qp(s.qp);
	ibv_destroy_cq(s.cq);
	check(ibv_destroy_comp_channel(ch) == 0, "ibv_destroy_comp_channel on a dead device");
	ibv_dereg_mr(mr);
	s.qp = NULL;
	s.cq = NULL;
	side_free(&s);
	check(1, "every object destroyed and the device closed without a hang");
}

void test_nodaemon(void)
{
	struct ibv_device **list;
	int n = -1;

	list = ibv_get_device_list(&n);
	check(list != NULL && n == 0 && list[0] == NULL, "no daemon: an empty list, not NULL (%d devices)", n);
	if (list)
		ibv_free_device_list(list);
}
