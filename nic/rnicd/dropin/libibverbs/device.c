/* SPDX-License-Identifier: BSD-2-Clause */
/* Devices: the list (the daemon's NICs, by STAT_DEVICES), opening one (a
 * connection of its own and OPEN), and the queries: device, port, GIDs
 * with their types, P_Keys, the node GUID. */
#include "rnic.h"

#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/mman.h>

static pthread_mutex_t devs_mu = PTHREAD_MUTEX_INITIALIZER;
/* Devices live for the process, as the real library's do: a context may
 * outlive the list it came from. */
static struct rnic_device **devs;
static size_t ndevs;

/* name_device fills the names the real library takes from the kernel:
 * uverbsN and its sysfs paths, N the device's 0-based index in the
 * daemon's list (rnic exec's namespace view presents the same numbering).
 * The library itself finds the daemon by d->socket, never by these. */
static void name_device(struct rnic_device *d, const char *name, uint64_t index)
{
	snprintf(d->dev.name, sizeof(d->dev.name), "%s", name);
	snprintf(d->dev.dev_name, sizeof(d->dev.dev_name), "uverbs%llu", (unsigned long long)index);
	snprintf(d->dev.dev_path, sizeof(d->dev.dev_path), "/sys/class/infiniband_verbs/uverbs%llu",
		 (unsigned long long)index);
	snprintf(d->dev.ibdev_path, sizeof(d->dev.ibdev_path), "/sys/class/infiniband/%.*s",
		 (int)(sizeof(d->dev.ibdev_path) - sizeof("/sys/class/infiniband/")), name);
}

static struct rnic_device *device_named(const char *name, const char *sock, uint64_t index)
{
	struct rnic_device *d, **nd;
	for (size_t i = 0; i < ndevs; i++)
		if (!strcmp(devs[i]->dev.name, name) && !strcmp(devs[i]->socket, sock)) {
			name_device(devs[i], name, index); /* a restarted daemon may list it elsewhere */
			return devs[i];
		}
	d = calloc(1, sizeof(*d));
	nd = realloc(devs, (ndevs + 1) * sizeof(*devs));
	if (!d || !nd) {
		free(d);
		if (nd)
			devs = nd;
		return NULL;
	}
	devs = nd;
	d->dev.node_type = IBV_NODE_CA;
	d->dev.transport_type = IBV_TRANSPORT_IB;
	name_device(d, name, index);
	snprintf(d->socket, sizeof(d->socket), "%s", sock);
	devs[ndevs++] = d;
	return d;
}

/* skip_stat_device reads one StatDevice, keeping only its name. */
static void read_stat_device(struct rbuf *r, char *name, size_t cap)
{
	uint8_t gid[16];
	char s[RNICD_MAX_NAME + 1];
	uint32_t n;
	r_str(r, name, cap);
	r_u8(r), r_u8(r), r_u32(r);
	n = r_u32(r);
	for (uint32_t i = 0; i < n && !r->err; i++)
		r_gid(r, gid);
	n = r_u32(r);
	for (uint32_t i = 0; i < n && !r->err; i++)
		r_str(r, s, sizeof(s)), r_u64(r);
}

/* list_names asks the daemon on conn for its devices, page by page, and
 * adds them to out (n of them). */
static int list_devices(struct rnic_conn *c, const char *sock, struct ibv_device ***out, int *n)
{
	struct wbuf w;
	struct rbuf r;
	uint8_t *rep = malloc(RNICD_MAX_MESSAGE);
	uint64_t after = 0;
	int more = 1, err = 0;

	if (!rep)
		return ENOMEM;
	while (more && !err) {
		int fds[RNICD_MAX_FDS], nfds;
		size_t len;
		uint32_t cnt;
		w_init(&w);
		w_u64(&w, after);
		if ((err = rnic_call(c, RNICD_OP_STAT_DEVICES, &w, NULL, 0, rep, RNICD_MAX_MESSAGE, &len, fds, &nfds)))
			break;
		rnic_close_fds(fds, nfds);
		r_init(&r, rep, len);
		cnt = r_u32(&r);
		for (uint32_t i = 0; i < cnt && !r.err; i++) {
			char name[IBV_SYSFS_NAME_MAX];
			struct ibv_device **nl;
			struct rnic_device *d;
			read_stat_device(&r, name, sizeof(name));
			if (r.err)
				break;
			pthread_mutex_lock(&devs_mu);
			d = device_named(name, sock, after + i);
			pthread_mutex_unlock(&devs_mu);
			nl = realloc(*out, (size_t)(*n + 2) * sizeof(**out));
			if (!d || !nl) {
				if (nl)
					*out = nl;
				err = ENOMEM;
				break;
			}
			*out = nl;
			(*out)[(*n)++] = &d->dev;
			(*out)[*n] = NULL;
		}
		more = r_u8(&r);
		after += cnt;
		if (!err && r_done(&r))
			err = EPROTO;
	}
	free(rep);
	return err;
}

RNIC_EXPORT struct ibv_device **ibv_get_device_list(int *num)
{
	char sock[108], msg[256];
	struct ibv_device **l = calloc(1, sizeof(*l));
	struct rnic_conn *c;
	int fd, n = 0, err;

	if (num)
		*num = 0;
	if (!l)
		return errno = ENOMEM, NULL;
	rnic_socket_path(sock, sizeof(sock));
	if ((err = rnic_connect(sock, &fd, msg, sizeof(msg)))) {
		fprintf(stderr, "libibverbs (rnic): %s; start one with `rnicd --udp 127.0.0.2` "
				"or set RNIC_SOCKET\n", msg);
		return l; /* no daemon: no devices */
	}
	c = malloc(sizeof(*c));
	if (!c || rnic_conn_init(c, fd)) {
		free(c);
		close(fd);
		free(l);
		return errno = ENOMEM, NULL;
	}
	err = list_devices(c, sock, &l, &n);
	rnic_conn_close(c);
	free(c);
	if (err) {
		fprintf(stderr, "libibverbs (rnic): listing rnicd's devices at %s: %s\n", sock, strerror(err));
		l[0] = NULL;
		n = 0;
	}
	if (num)
		*num = n;
	return l;
}

RNIC_EXPORT void ibv_free_device_list(struct ibv_device **list) { free(list); }

RNIC_EXPORT const char *ibv_get_device_name(struct ibv_device *device) { return device->name; }

RNIC_EXPORT int ibv_get_device_index(struct ibv_device *device)
{
	int idx = -1;
	pthread_mutex_lock(&devs_mu);
	for (size_t i = 0; i < ndevs; i++)
		if (&devs[i]->dev == device)
			idx = (int)i;
	pthread_mutex_unlock(&devs_mu);
	return idx;
}

void r_dev_attr(struct rbuf *r, struct rnic_dev_attr *a)
{
	r_str(r, a->fw_ver, sizeof(a->fw_ver));
	a->node_guid = r_u64(r);
	a->sys_image_guid = r_u64(r);
	a->max_mr_size = r_u64(r);
	a->page_size_cap = r_u64(r);
	a->vendor_id = r_u32(r);
	a->vendor_part_id = r_u32(r);
	a->hw_ver = r_u32(r);
	a->max_qp = r_int(r);
	a->max_qp_wr = r_int(r);
	a->cap_flags = r_u32(r);
	uint64_t *ints1[] = {&a->max_sge, &a->max_sge_rd, &a->max_cq, &a->max_cqe, &a->max_mr, &a->max_pd,
			     &a->max_qp_rd_atom, &a->max_res_rd_atom, &a->max_qp_init_rd_atom};
	for (size_t i = 0; i < sizeof(ints1) / sizeof(ints1[0]); i++)
		*ints1[i] = r_int(r);
	a->atomic_cap = r_u8(r);
	uint64_t *ints2[] = {&a->max_mw, &a->max_ah, &a->max_srq, &a->max_srq_wr, &a->max_srq_sge, &a->max_pkeys};
	for (size_t i = 0; i < sizeof(ints2) / sizeof(ints2[0]); i++)
		*ints2[i] = r_int(r);
	a->local_ca_ack_delay = r_u8(r);
	a->phys_port_cnt = r_u8(r);
	a->max_inline = r_int(r);
	a->max_msg_size = r_u64(r);
	a->cap_flags_ex = r_u64(r);
	a->max_mcast_grp = r_int(r);
	a->max_mcast_qp_attach = r_int(r);
	a->max_total_mcast_qp_attach = r_int(r);
}

void r_port_attr(struct rbuf *r, struct rnic_port_attr *a)
{
	a->state = r_u8(r);
	a->max_mtu = r_u8(r);
	a->active_mtu = r_u8(r);
	a->gid_tbl_len = r_int(r);
	a->max_msg_size = r_u64(r);
	a->pkey_tbl_len = r_int(r);
	a->phys_state = r_u8(r);
	a->link_layer = r_u8(r);
	a->link_mtu = r_int(r);
	a->bad_pkey_cntr = r_u32(r);
	a->qkey_viol_cntr = r_u32(r);
}

/* set_transport records the transport and node type OPEN reported on
 * the device (STAT_DEVICES, which made it, does not carry them; the real
 * library reads them from sysfs before any open). */
static int set_transport(struct rnic_context *c, struct rnic_device *d, uint8_t transport, uint8_t node)
{
	if (transport != IBV_TRANSPORT_IB && transport != IBV_TRANSPORT_IWARP)
		return EPROTO;
	if (node != IBV_NODE_CA && node != IBV_NODE_RNIC)
		return EPROTO;
	c->iwarp = transport == IBV_TRANSPORT_IWARP;
	pthread_mutex_lock(&devs_mu);
	d->dev.transport_type = (enum ibv_transport_type)transport;
	d->dev.node_type = (enum ibv_node_type)node;
	pthread_mutex_unlock(&devs_mu);
	return 0;
}

/* open_reply reads OPEN's reply into the context; a reply of another
 * version is a daemon of another build (it refuses ours first). */
static int open_reply(struct rnic_context *c, struct rnic_device *d, const struct rnic_reply *rep)
{
	struct rbuf r;
	char name[RNICD_MAX_NAME + 1];
	uint8_t transport, node;
	uint32_t n;
	int err;
	r_init(&r, rep->body, rep->len);
	if (r_u32(&r) != RNICD_VERSION)
		return EPROTO;
	r_str(&r, name, sizeof(name));
	r_dev_attr(&r, &c->attr);
	r_port_attr(&r, &c->port);
	n = r_u32(&r);
	if (n > RNICD_MAX_GIDS)
		return EPROTO;
	for (uint32_t i = 0; i < n; i++)
		r_gid(&r, c->gids[i]);
	c->ngids = n;
	transport = r_u8(&r);
	node = r_u8(&r);
	if ((err = r_done(&r)))
		return err;
	return set_transport(c, d, transport, node);
}

/* open_bell maps the session doorbell OPEN's reply carries (its memory,
 * its socket) and takes the socket. */
static int open_bell(struct rnic_context *c, struct rnic_reply *rep)
{
	uint8_t *mem;
	int err;
	if (rep->nfds != 2)
		return EPROTO;
	if ((err = rnic_map_fd(rep->fds[0], RNICD_BELL_AREA_LEN, &mem)))
		return err;
	c->bell_area = (uint64_t *)(void *)mem;
	c->bell_fd = rep->fds[1];
	rep->fds[1] = -1;
	return 0;
}

/* close_bell unmaps the session doorbell: nothing may post any more. */
static void close_bell(struct rnic_context *c)
{
	if (!c->bell_area)
		return;
	munmap(c->bell_area, RNICD_BELL_AREA_LEN);
	close(c->bell_fd);
	c->bell_area = NULL;
}

static int open_conn(struct rnic_context *c, struct rnic_device *d)
{
	struct wbuf w;
	struct rnic_reply *rep = malloc(sizeof(*rep));
	char msg[256];
	int fd, err;

	if (!rep)
		return ENOMEM;
	if ((err = rnic_connect(d->socket, &fd, msg, sizeof(msg)))) {
		fprintf(stderr, "libibverbs (rnic): %s\n", msg);
		free(rep);
		return err;
	}
	if ((err = rnic_conn_init(&c->conn, fd))) {
		close(fd);
		free(rep);
		return err;
	}
	w_init(&w);
	w_u32(&w, RNICD_VERSION);
	w_str(&w, d->dev.name);
	err = ctx_call(c, RNICD_OP_OPEN, &w, NULL, 0, rep);
	if (!err) {
		err = open_reply(c, d, rep);
		if (!err)
			err = open_bell(c, rep);
		rnic_close_fds(rep->fds, rep->nfds);
	}
	free(rep);
	if (err) {
		close_bell(c);
		rnic_conn_close(&c->conn);
	}
	return err;
}

/* async_set makes the context's async_fd: an epoll set of the socket (an
 * event may be waiting there) and the event queue's eventfd. */
static int async_set(struct rnic_context *c)
{
	struct epoll_event ev = {.events = EPOLLIN};
	int ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		return errno;
	ev.data.fd = c->conn.fd;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, c->conn.fd, &ev) < 0)
		goto fail;
	ev.data.fd = c->conn.evq_fd;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, c->conn.evq_fd, &ev) < 0)
		goto fail;
	c->vctx.context.async_fd = ep;
	return 0;
fail:
	close(ep);
	return errno;
}

static void set_ops(struct rnic_context *c)
{
	struct verbs_context *v = &c->vctx;
	v->sz = sizeof(*v);
	v->context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	v->context.ops.poll_cq = rnic_poll_cq;
	v->context.ops.req_notify_cq = rnic_req_notify_cq;
	v->context.ops.post_send = rnic_post_send;
	v->context.ops.post_recv = rnic_post_recv;
	v->context.ops.post_srq_recv = rnic_post_srq_recv;
	v->context.ops.alloc_mw = rnic_alloc_mw;
	v->context.ops.dealloc_mw = rnic_dealloc_mw;
	v->context.ops.bind_mw = rnic_bind_mw;
	v->query_port = rnic_query_port_ex;
	v->query_device_ex = rnic_query_device_ex;
	v->create_cq_ex = rnic_create_cq_ex;
	v->create_qp_ex = rnic_create_qp_ex;
}

RNIC_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct rnic_device *d = to_rdev(device);
	struct rnic_context *c = calloc(1, sizeof(*c));
	int err;

	if (!c)
		return errno = ENOMEM, NULL;
	if ((err = open_conn(c, d))) {
		free(c);
		return errno = err, NULL;
	}
	if ((err = async_set(c))) {
		close_bell(c);
		rnic_conn_close(&c->conn);
		free(c);
		return errno = err, NULL;
	}
	c->vctx.context.device = device;
	c->vctx.context.cmd_fd = c->conn.fd;
	c->vctx.context.num_comp_vectors = 1;
	pthread_mutex_init(&c->vctx.context.mutex, NULL);
	pthread_mutex_init(&c->objs_mu, NULL);
	pthread_mutex_init(&c->ring_mu, NULL);
	set_ops(c);
	return &c->vctx.context;
}

RNIC_EXPORT int ibv_close_device(struct ibv_context *context)
{
	struct rnic_context *c = to_rctx(context);
	close(context->async_fd);
	rnic_conn_close(&c->conn); /* the daemon reaps what is left */
	close_bell(c);
	rnic_close_chunks(c); /* the program destroyed its objects, or leaves them */
	pthread_mutex_destroy(&context->mutex);
	pthread_mutex_destroy(&c->objs_mu);
	pthread_mutex_destroy(&c->ring_mu);
	free(c->objs);
	free(c);
	return 0;
}

RNIC_EXPORT __be64 ibv_get_device_guid(struct ibv_device *device)
{
	struct rnic_context *c = calloc(1, sizeof(*c));
	__be64 g = 0;
	if (!c)
		return 0;
	if (open_conn(c, to_rdev(device)) == 0) {
		g = htobe64(c->attr.node_guid);
		close_bell(c);
		rnic_conn_close(&c->conn);
	}
	free(c);
	return g;
}

static void fill_device_attr(const struct rnic_dev_attr *a, struct ibv_device_attr *o)
{
	memset(o, 0, sizeof(*o));
	snprintf(o->fw_ver, sizeof(o->fw_ver), "%s", a->fw_ver);
	o->node_guid = htobe64(a->node_guid);
	o->sys_image_guid = htobe64(a->sys_image_guid);
	o->max_mr_size = a->max_mr_size;
	o->page_size_cap = a->page_size_cap;
	o->vendor_id = a->vendor_id;
	o->vendor_part_id = a->vendor_part_id;
	o->hw_ver = a->hw_ver;
	o->max_qp = (int)a->max_qp;
	o->max_qp_wr = (int)a->max_qp_wr;
	o->device_cap_flags = a->cap_flags; /* SRQ_RESIZE too: srq_resize.c */
	o->max_sge = (int)a->max_sge;
	o->max_sge_rd = (int)a->max_sge_rd;
	o->max_cq = (int)a->max_cq;
	o->max_cqe = (int)a->max_cqe;
	o->max_mr = (int)a->max_mr;
	o->max_pd = (int)a->max_pd;
	o->max_qp_rd_atom = (int)a->max_qp_rd_atom;
	o->max_res_rd_atom = (int)a->max_res_rd_atom;
	o->max_qp_init_rd_atom = (int)a->max_qp_init_rd_atom;
	o->atomic_cap = (enum ibv_atomic_cap)a->atomic_cap;
	o->max_mw = (int)a->max_mw;
	o->max_ah = (int)a->max_ah;
	o->max_srq = (int)a->max_srq;
	o->max_srq_wr = (int)a->max_srq_wr;
	o->max_srq_sge = (int)a->max_srq_sge;
	o->max_pkeys = (uint16_t)a->max_pkeys;
	o->max_mcast_grp = (int)a->max_mcast_grp;
	o->max_mcast_qp_attach = (int)a->max_mcast_qp_attach;
	o->max_total_mcast_qp_attach = (int)a->max_total_mcast_qp_attach;
	o->local_ca_ack_delay = a->local_ca_ack_delay;
	o->phys_port_cnt = a->phys_port_cnt;
}

RNIC_EXPORT int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *attr)
{
	fill_device_attr(&to_rctx(context)->attr, attr);
	return 0;
}

int rnic_query_device_ex(struct ibv_context *ctx, const struct ibv_query_device_ex_input *in,
			 struct ibv_device_attr_ex *attr, size_t size)
{
	struct rnic_context *c = to_rctx(ctx);
	struct ibv_device_attr_ex a;

	if (in && in->comp_mask)
		return EINVAL;
	if (size < sizeof(a.orig_attr))
		return EINVAL;
	memset(&a, 0, sizeof(a));
	fill_device_attr(&c->attr, &a.orig_attr);
	/* as the kernel fills them: the flags again (64 bits here, with
	 * IBTA 1.5's FLUSH and ATOMIC WRITE above bit 31), the port
	 * count (the original field is a byte), and nothing for ODP, TSO, RSS,
	 * tag matching, device memory, raw packets or timestamps */
	a.device_cap_flags_ex = a.orig_attr.device_cap_flags | c->attr.cap_flags_ex;
	a.phys_port_cnt_ex = a.orig_attr.phys_port_cnt;
	memcpy(attr, &a, size < sizeof(a) ? size : sizeof(a));
	if (size > sizeof(a))
		memset((char *)attr + sizeof(a), 0, size - sizeof(a));
	return 0;
}

/* query_port asks the daemon: the port's state is live (a TAP can go
 * down). */
static int query_port(struct rnic_context *c, uint8_t port, struct ibv_port_attr *o)
{
	struct wbuf w;
	struct rnic_reply *rep;
	struct rnic_port_attr p;
	struct rbuf r;
	int err;

	if (port != 1)
		return EINVAL;
	if (!(rep = malloc(sizeof(*rep))))
		return ENOMEM;
	w_init(&w);
	w_u8(&w, port);
	err = ctx_call(c, RNICD_OP_QUERY_PORT, &w, NULL, 0, rep);
	if (!err) {
		rnic_close_fds(rep->fds, rep->nfds);
		r_init(&r, rep->body, rep->len);
		r_port_attr(&r, &p);
		err = r_done(&r);
	}
	free(rep);
	if (err)
		return err;
	memset(o, 0, sizeof(*o));
	o->state = (enum ibv_port_state)p.state;
	o->max_mtu = (enum ibv_mtu)p.max_mtu;
	o->active_mtu = (enum ibv_mtu)p.active_mtu;
	o->gid_tbl_len = (int)rnic_gid_tbl_len(c);
	o->port_cap_flags = IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS;
	o->max_msg_sz = p.max_msg_size > UINT32_MAX ? UINT32_MAX : (uint32_t)p.max_msg_size;
	o->pkey_tbl_len = (uint16_t)p.pkey_tbl_len;
	o->max_vl_num = 1;
	o->active_width = 1; /* 1X */
	o->active_speed = 1; /* SDR: a software NIC claims nothing faster */
	o->phys_state = p.phys_state;
	o->link_layer = p.link_layer;
	o->bad_pkey_cntr = p.bad_pkey_cntr;
	o->qkey_viol_cntr = p.qkey_viol_cntr;
	return 0;
}

int rnic_query_port_ex(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr, size_t len)
{
	struct ibv_port_attr a;
	int err = query_port(to_rctx(ctx), port, &a);
	if (err)
		return err;
	memcpy(attr, &a, len < sizeof(a) ? len : sizeof(a));
	return 0;
}

#undef ibv_query_port
/* The exported ibv_query_port of binaries built before the verbs_context
 * path: the old structure ends with flags (no port_cap_flags2). */
RNIC_EXPORT int ibv_query_port(struct ibv_context *context, uint8_t port_num,
			       struct _compat_ibv_port_attr *port_attr)
{
	return rnic_query_port_ex(context, port_num, (struct ibv_port_attr *)port_attr,
				  offsetof(struct ibv_port_attr, flags) + 1);
}

/* The GID table as the kernel shows a RoCE port's: rxe's 1024 slots, the
 * NIC's addresses first and the rest empty. An empty slot reads as the
 * zero GID of type IB/RoCE v1 (libibverbs' ibv_query_gid and
 * ibv_query_gid_type), and ENODATA through ibv_query_gid_ex; past the
 * table is an error. An iWARP port's table is its addresses alone, as
 * siw's. */
enum { ROCE_GID_TBL_LEN = 1024 };

uint32_t rnic_gid_tbl_len(const struct rnic_context *c)
{
	return c->iwarp || c->ngids > ROCE_GID_TBL_LEN ? c->ngids : ROCE_GID_TBL_LEN;
}

RNIC_EXPORT int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index, union ibv_gid *gid)
{
	struct rnic_context *c = to_rctx(context);
	if (port_num != 1 || index < 0 || (unsigned)index >= rnic_gid_tbl_len(c))
		return -1;
	if ((unsigned)index < c->ngids)
		memcpy(gid->raw, c->gids[index], 16);
	else
		memset(gid->raw, 0, 16);
	return 0;
}

/* rdma-core's enum ibv_gid_type_sysfs (driver.h, not installed). */
enum { GID_TYPE_SYSFS_IB_ROCE_V1 = 0, GID_TYPE_SYSFS_ROCE_V2 = 1 };

RNIC_EXPORT int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
				   int *type)
{
	struct rnic_context *c = to_rctx(context);
	if (port_num != 1 || index >= rnic_gid_tbl_len(c))
		return errno = EINVAL, -1;
	/* an iWARP port's GIDs are plain ones, as siw's sysfs says ("IB/RoCE
	 * v1"); so is an empty slot, as libibverbs says */
	*type = c->iwarp || index >= c->ngids ? GID_TYPE_SYSFS_IB_ROCE_V1 : GID_TYPE_SYSFS_ROCE_V2;
	return 0;
}

static void fill_gid_entry(struct rnic_context *c, uint32_t i, struct ibv_gid_entry *e, size_t size)
{
	struct ibv_gid_entry g = {.gid_index = i, .port_num = 1,
				  .gid_type = c->iwarp ? IBV_GID_TYPE_IB : IBV_GID_TYPE_ROCE_V2};
	memcpy(g.gid.raw, c->gids[i], 16);
	memcpy(e, &g, size < sizeof(g) ? size : sizeof(g));
}

RNIC_EXPORT int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num, uint32_t gid_index,
				  struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size)
{
	struct rnic_context *c = to_rctx(context);
	if (flags || entry_size < offsetof(struct ibv_gid_entry, ndev_ifindex))
		return EINVAL;
	if (port_num != 1 || gid_index >= rnic_gid_tbl_len(c))
		return EINVAL;
	if (gid_index >= c->ngids)
		return ENODATA; /* an empty slot */
	fill_gid_entry(c, gid_index, entry, entry_size);
	return 0;
}

RNIC_EXPORT ssize_t _ibv_query_gid_table(struct ibv_context *context, struct ibv_gid_entry *entries,
					 size_t max_entries, uint32_t flags, size_t entry_size)
{
	struct rnic_context *c = to_rctx(context);
	size_t n = 0;
	if (flags || entry_size < offsetof(struct ibv_gid_entry, ndev_ifindex))
		return -EINVAL;
	if (max_entries < c->ngids)
		return -EINVAL;
	for (; n < c->ngids; n++)
		fill_gid_entry(c, (uint32_t)n, (struct ibv_gid_entry *)((char *)entries + n * entry_size),
			       entry_size);
	return (ssize_t)n;
}

/* One P_Key: the default partition, full member (the only one RoCE has). */
RNIC_EXPORT int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index, __be16 *pkey)
{
	(void)context;
	if (port_num != 1 || index != 0)
		return -1;
	*pkey = htobe16(0xffff);
	return 0;
}

RNIC_EXPORT int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num, __be16 pkey)
{
	(void)context;
	if (port_num == 1 && (be16toh(pkey) & 0x7fff) == 0x7fff)
		return 0;
	return -EINVAL;
}

void rnic_obj_add(struct rnic_context *c, uint8_t kind, uint32_t h, void *obj)
{
	pthread_mutex_lock(&c->objs_mu);
	if (c->nobjs == c->capobjs) {
		size_t cap = c->capobjs ? 2 * c->capobjs : 16;
		struct rnic_obj_ref *n = realloc(c->objs, cap * sizeof(*n));
		if (!n) {
			pthread_mutex_unlock(&c->objs_mu);
			return; /* events of this object will name no object */
		}
		c->objs = n;
		c->capobjs = cap;
	}
	c->objs[c->nobjs++] = (struct rnic_obj_ref){kind, h, obj};
	pthread_mutex_unlock(&c->objs_mu);
}

void rnic_obj_del(struct rnic_context *c, uint8_t kind, uint32_t h)
{
	pthread_mutex_lock(&c->objs_mu);
	for (size_t i = 0; i < c->nobjs; i++)
		if (c->objs[i].kind == kind && c->objs[i].handle == h) {
			c->objs[i] = c->objs[--c->nobjs];
			break;
		}
	if (kind == OBJ_QP)
		c->qp_gen++; /* no CQ may still point at it (rqdepth.c) */
	pthread_mutex_unlock(&c->objs_mu);
}

void *rnic_obj_find(struct rnic_context *c, uint8_t kind, uint32_t h)
{
	void *o = NULL;
	pthread_mutex_lock(&c->objs_mu);
	for (size_t i = 0; i < c->nobjs; i++)
		if (c->objs[i].kind == kind && c->objs[i].handle == h)
			o = c->objs[i].obj;
	pthread_mutex_unlock(&c->objs_mu);
	return o;
}
