/* SPDX-License-Identifier: BSD-2-Clause */
/* corners: shared helpers of the corner tests (see corners.c). */
#ifndef RNIC_CORNERS_H
#define RNIC_CORNERS_H

#define _GNU_SOURCE
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE 4096
/* TIMEOUT_MS bounds every wait for a completion or an event. */
#define TIMEOUT_MS 10000
#define ALL_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

extern int failures;

/* An RC endpoint: a context, PD, CQ and QP on one device. */
struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	union ibv_gid gid;
};

__attribute__((format(printf, 2, 3))) void check(int ok, const char *fmt, ...);
__attribute__((format(printf, 1, 2), noreturn)) void die(const char *fmt, ...);
long now_ms(void);
struct ibv_context *open_named(const char *name);
int wait_wc(struct ibv_cq *cq, struct ibv_wc *wc, int ms);
void side_open(struct side *s, const char *dev, struct ibv_comp_channel *ch, void *cq_ctx,
	       struct ibv_srq *srq, int cqe, int send_wr);
int to_rtr(struct side *s, uint32_t qpn, const union ibv_gid *gid, uint32_t flow_label);
void rtr_to_rts(struct side *s);
void to_rts(struct side *s, uint32_t qpn, const union ibv_gid *gid);
void connect_pair(struct side *a, struct side *b);
void pair_close(struct side *a, struct side *b);
void side_free(struct side *s);
struct ibv_mr *reg(struct ibv_pd *pd, void *addr, size_t len, int access);
int rdma(struct side *s, enum ibv_wr_opcode op, struct ibv_mr *lmr, void *laddr, uint32_t len,
	 uint64_t raddr, uint32_t rkey);
void post_recv(struct ibv_qp *qp, struct ibv_srq *srq, struct ibv_mr *mr, void *buf, uint32_t len);
void post_send(struct ibv_qp *qp, struct ibv_mr *mr, void *buf, uint32_t len, unsigned flags);
int fd_ready(int fd, int ms);
void set_nonblock(int fd);

void test_errors(const char *dev);
void test_channel(const char *d0, const char *d1);
void test_async(const char *d0, const char *d1);
void test_fork(const char *d0, const char *d1);
void test_fork_copy(const char *d0, const char *d1);
void test_mr(const char *d0, const char *d1);
void test_wr(const char *d0, const char *d1);
void test_ud(const char *d0, const char *d1);
void ud_open(struct side *s, const char *dev);
void test_mcast(const char *d0, const char *d1);
void test_cap(const char *d0, const char *d1);
void test_manyqps(const char *d0, const char *d1);
void test_cqchannels(const char *d0, const char *d1);
void test_flowlabel(const char *d0, const char *d1);
void test_udsl(const char *d0, const char *d1);
void test_asyncobj(const char *d0, const char *d1);
void test_verbs(const char *d0, const char *d1);
void test_rereg(const char *d0, const char *d1);
void test_ibta15(const char *d0, const char *d1);
void test_parity(const char *d0, const char *d1);
void test_mw(const char *d0, const char *d1);
void test_hostile(const char *d0, const char *d1);
void test_killed(const char *dev);
void test_nodaemon(void);

#endif
