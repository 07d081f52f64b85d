/* SPDX-License-Identifier: BSD-2-Clause */
/* ibv_rereg_mr: the MR is re-registered in place by the daemon
 * (REREG_MR_WINDOW) and keeps its lkey and rkey, as on mlx5, so a peer
 * holding the rkey need not be told again. New memory is moved onto the
 * arena first, as ibv_reg_mr moves it. The argument checks and return
 * codes are libibverbs' (verbs.c): IBV_REREG_MR_ERR_INPUT for what it
 * refuses itself, IBV_REREG_MR_ERR_CMD for what the kernel (here the
 * daemon) refuses, errno saying why. */
#include "rnic.h"

/* bad_input: what libibverbs refuses before asking the kernel. */
static int bad_input(int flags, void *addr, size_t length, int access)
{
	if (flags & ~IBV_REREG_MR_FLAGS_SUPPORTED)
		return 1;
	if ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) && (!length || !addr))
		return 1;
	return access && !(flags & IBV_REREG_MR_CHANGE_ACCESS);
}

/* bad_cmd: what the kernel refuses (ib_uverbs_rereg_mr): no change asked,
 * a PD of another context, a range that wraps. */
static int bad_cmd(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr, size_t length)
{
	if (!flags)
		return 1;
	if ((flags & IBV_REREG_MR_CHANGE_PD) && (!pd || pd->context != mr->context))
		return 1;
	return (flags & IBV_REREG_MR_CHANGE_TRANSLATION) && (uintptr_t)addr + length < (uintptr_t)addr;
}

/* rereg_call asks the daemon; the reply's keys go into mr. */
static int rereg_call(struct rnic_mr *m, struct ibv_pd *pd, int translate, void *addr, size_t length,
		      unsigned access)
{
	struct rnic_context *c = to_rctx(m->mr.context);
	struct rnic_reply rep;
	struct wbuf w;
	struct rbuf r;
	int fd = -1, err;

	if (translate && (err = rnic_arena_share(addr, length, &fd)))
		return err;
	w_init(&w);
	w_u32(&w, m->h);
	w_u32(&w, translate ? 1 : 0); /* proto.ReregTranslation */
	w_u32(&w, (to_rpd(pd))->h);
	w_u32(&w, access & ~(unsigned)IBV_ACCESS_OPTIONAL_RANGE);
	w_u64(&w, translate ? (uintptr_t)addr : 0); /* the arena offset is the address */
	w_u64(&w, translate ? length : 0);
	w_u64(&w, translate ? (uintptr_t)addr : 0);
	if ((err = ctx_call(c, RNICD_OP_REREG_MR_WINDOW, &w, translate ? &fd : NULL, translate ? 1 : 0, &rep)))
		return err;
	rnic_close_fds(rep.fds, rep.nfds);
	r_init(&r, rep.body, rep.len);
	r_u32(&r);
	m->mr.lkey = r_u32(&r);
	m->mr.rkey = r_u32(&r);
	r_u64(&r), r_u64(&r);
	return r_done(&r);
}

RNIC_EXPORT int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr, size_t length,
			     int access)
{
	struct rnic_mr *m = to_rmr(mr);
	int translate = flags & IBV_REREG_MR_CHANGE_TRANSLATION;
	struct ibv_pd *npd;
	unsigned nacc;
	int err;

	if (bad_input(flags, addr, length, access))
		return errno = EINVAL, IBV_REREG_MR_ERR_INPUT;
	if (bad_cmd(mr, flags, pd, addr, length))
		return errno = EINVAL, IBV_REREG_MR_ERR_CMD;
	npd = flags & IBV_REREG_MR_CHANGE_PD ? pd : mr->pd;
	nacc = flags & IBV_REREG_MR_CHANGE_ACCESS ? (unsigned)access : m->access;
	if ((err = rereg_call(m, npd, translate, addr, length, nacc)))
		return errno = err, IBV_REREG_MR_ERR_CMD;
	mr->pd = npd;
	m->access = nacc;
	if (translate) {
		mr->addr = addr;
		mr->length = length;
	}
	return 0;
}
