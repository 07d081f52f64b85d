/* SPDX-License-Identifier: BSD-2-Clause */
/* setup: how long an unmodified libibverbs program takes to create N RC
 * QPs and take each to RTS (aimed at its neighbour, as after an exchange
 * of QPNs), then to destroy them, through the drop-in library and rnicd.
 * The CQs are shared by 1024 QPs. Printed: one line of figures, per QP;
 * of taking the QPs to RTS also this process's sleeps (voluntary context
 * switches: each a wake-up) and CPU time, which the load of a shared
 * machine does not change as it changes the time.
 *
 * usage: setup N
 */
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* usage returns the process's voluntary context switches and CPU µs. */
static void usage(double *sleeps, double *cpu_us)
{
	struct rusage u;
	getrusage(RUSAGE_SELF, &u);
	*sleeps = (double)u.ru_nvcsw;
	*cpu_us = (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e6 + u.ru_utime.tv_usec + u.ru_stime.tv_usec;
}

static int to_rts(struct ibv_qp *qp, uint32_t dest, const union ibv_gid *gid)
{
	struct ibv_qp_attr init = {.qp_state = IBV_QPS_INIT, .port_num = 1,
				   .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ};
	struct ibv_qp_attr rtr = {.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024, .dest_qp_num = dest,
				  .rq_psn = 1, .max_dest_rd_atomic = 1, .min_rnr_timer = 12,
				  .ah_attr = {.is_global = 1, .grh = {.dgid = *gid, .hop_limit = 64}, .port_num = 1}};
	struct ibv_qp_attr rts = {.qp_state = IBV_QPS_RTS, .sq_psn = 1, .timeout = 14, .retry_cnt = 7,
				  .rnr_retry = 7, .max_rd_atomic = 1};
	if (ibv_modify_qp(qp, &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return -1;
	if (ibv_modify_qp(qp, &rtr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	return ibv_modify_qp(qp, &rts, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					       IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 0;
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = list && list[0] ? ibv_open_device(list[0]) : NULL;
	struct ibv_qp **qps = calloc((size_t)n + 1, sizeof(*qps));
	struct ibv_cq **cqs = calloc((size_t)n / 1024 + 1, sizeof(*cqs));
	struct ibv_pd *pd;
	union ibv_gid gid;
	double t0, t1, t2, t3, s1, c1, s2, c2;

	if (n < 2 || !ctx || !qps || !cqs) {
		fprintf(stderr, "usage: setup N (N >= 2, a device)\n");
		return 2;
	}
	if (!(pd = ibv_alloc_pd(ctx)) || ibv_query_gid(ctx, 1, 0, &gid)) {
		perror("pd, gid");
		return 1;
	}
	t0 = now();
	for (int i = 0; i < n; i++) {
		struct ibv_qp_init_attr ia = {.qp_type = IBV_QPT_RC,
					      .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1}};
		if (i % 1024 == 0 && !(cqs[i / 1024] = ibv_create_cq(ctx, 4096, NULL, NULL, 0))) {
			perror("ibv_create_cq");
			return 1;
		}
		ia.send_cq = ia.recv_cq = cqs[i / 1024];
		if (!(qps[i] = ibv_create_qp(pd, &ia))) {
			fprintf(stderr, "ibv_create_qp %d: ", i);
			perror("");
			return 1;
		}
	}
	t1 = now();
	usage(&s1, &c1);
	for (int i = 0; i < n; i++)
		if (to_rts(qps[i], qps[(i ^ 1) < n ? (i ^ 1) : i]->qp_num, &gid)) {
			fprintf(stderr, "QP %d to RTS: ", i);
			perror("");
			return 1;
		}
	t2 = now();
	usage(&s2, &c2);
	for (int i = 0; i < n; i++)
		if (ibv_destroy_qp(qps[i])) {
			perror("ibv_destroy_qp");
			return 1;
		}
	t3 = now();
	for (int i = 0; i <= (n - 1) / 1024; i++)
		ibv_destroy_cq(cqs[i]);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	free(qps);
	free(cqs);
	printf("qps %d create_us %.2f connect_us %.2f destroy_us %.2f connect_sleeps %.2f connect_cpu_us %.2f\n", n,
	       (t1 - t0) / n * 1e6, (t2 - t1) / n * 1e6, (t3 - t2) / n * 1e6, (s2 - s1) / n, (c2 - c1) / n);
	return 0;
}
