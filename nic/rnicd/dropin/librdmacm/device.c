/* SPDX-License-Identifier: BSD-2-Clause */
/* The devices: every rnic device opened once, on first use, with its
 * address (the IPv4 address of its first IPv4-mapped GID: a RoCEv2 NIC's,
 * after the link-local GID 0 of a NIC on a TAP, or an iWARP NIC's TCP
 * address the daemon reports the same way); rdma_get_devices. */
#include "cm.h"

#include <stdlib.h>
#include <string.h>

pthread_mutex_t cm_mu = PTHREAD_MUTEX_INITIALIZER;
struct cm_dev cm_devs[CM_MAX_DEVS];
int cm_ndevs;
static int cm_inited, cm_init_err;

static int is_v4_mapped(const union ibv_gid *g)
{
	static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	return memcmp(g->raw, prefix, sizeof(prefix)) == 0;
}

/* dev_addr: the IPv4 address of v's first IPv4-mapped GID (port 1), as
 * the kernel's rdma_cm finds a RoCE device by its netdev's address;
 * 0.0.0.0 if it has none. */
static struct in_addr dev_addr(struct ibv_context *v)
{
	struct ibv_port_attr pa;
	union ibv_gid gid;
	struct in_addr a = {0};
	int n = 1;
	if (ibv_query_port(v, 1, &pa) == 0 && pa.gid_tbl_len > 0)
		n = pa.gid_tbl_len;
	for (int i = 0; i < n; i++)
		if (ibv_query_gid(v, 1, i, &gid) == 0 && is_v4_mapped(&gid)) {
			memcpy(&a, gid.raw + 12, 4);
			break;
		}
	return a;
}

static void open_devs(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);

	if (!list) {
		cm_init_err = errno ? errno : ENODEV;
		return;
	}
	for (int i = 0; list[i] && cm_ndevs < CM_MAX_DEVS; i++) {
		struct ibv_context *v = ibv_open_device(list[i]);
		struct cm_dev *d = &cm_devs[cm_ndevs];
		if (!v)
			continue;
		d->verbs = v;
		d->key = rnic_private_cm_key(v);
		d->fd = rnic_private_cm_fd(v);
		d->addr = dev_addr(v);
		cm_ndevs++;
	}
	ibv_free_device_list(list);
	if (cm_ndevs == 0)
		cm_init_err = ENODEV;
	rnic_private_cm_sink(cm_sink);
}

/* cm_init opens the devices once. Takes cm_mu. */
int cm_init(void)
{
	pthread_mutex_lock(&cm_mu);
	if (!cm_inited) {
		cm_inited = 1;
		open_devs();
	}
	pthread_mutex_unlock(&cm_mu);
	return cm_init_err;
}

static int is_any(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_addr.s_addr == htonl(INADDR_ANY);
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)sa)->sin6_addr);
	return 0;
}

/* cm_dev_of_addr: the device whose address sa is; -1 for the wildcard
 * address, -2 for an address no device has. */
int cm_dev_of_addr(const struct sockaddr *sa)
{
	struct in_addr a;
	if (is_any(sa))
		return -1;
	if (sa->sa_family == AF_INET)
		a = ((const struct sockaddr_in *)sa)->sin_addr;
	else if (sa->sa_family == AF_INET6 &&
		 IN6_IS_ADDR_V4MAPPED(&((const struct sockaddr_in6 *)sa)->sin6_addr))
		memcpy(&a, ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr + 12, 4);
	else
		return -2;
	for (int i = 0; i < cm_ndevs; i++)
		if (cm_devs[i].addr.s_addr == a.s_addr)
			return i;
	return -2;
}

int cm_dev_of_verbs(struct ibv_context *v)
{
	for (int i = 0; i < cm_ndevs; i++)
		if (cm_devs[i].verbs == v)
			return i;
	return -1;
}

CM_EXPORT struct ibv_context **rdma_get_devices(int *num_devices)
{
	struct ibv_context **l;
	int err = cm_init();
	if (err && cm_ndevs == 0) {
		if (num_devices)
			*num_devices = 0;
		l = calloc(1, sizeof(*l));
		if (!l)
			errno = ENOMEM;
		return l;
	}
	l = calloc((size_t)cm_ndevs + 1, sizeof(*l));
	if (!l) {
		errno = ENOMEM;
		return NULL;
	}
	for (int i = 0; i < cm_ndevs; i++)
		l[i] = cm_devs[i].verbs;
	if (num_devices)
		*num_devices = cm_ndevs;
	return l;
}

CM_EXPORT void rdma_free_devices(struct ibv_context **list) { free(list); }
