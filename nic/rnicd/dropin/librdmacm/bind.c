/* SPDX-License-Identifier: BSD-2-Clause */
/* Binding an id to an address: the loopback address and the daemon's
 * port reservations.
 *
 * Ports: the kernel's rdma_bind_addr takes its port at once (cma_get_port:
 * an ephemeral one for port 0, which rdma_get_src_port shows before
 * rdma_listen; EADDRINUSE for a port bound already), from port spaces
 * that are the host's. Here the host is the daemon: CM_BIND reserves the
 * port for every client of it, CM_UNBIND gives it back (rdma_destroy_id).
 *
 * Loopback: rnic's NICs on 127.0.0.0/8 addresses live on the loopback
 * interface (as siw does when attached to lo), where the kernel finds a
 * bound address's device by the interface that has it (rdma_translate_ip,
 * cma_acquire_dev_by_src_ip). Every such NIC has 127.0.0.1 and ::1, so a
 * bind to them is bound to no one NIC, as the wildcard is: its listen
 * listens on every NIC on loopback, and the id keeps the address
 * (rdma_get_local_addr). libfabric's verbs provider binds "localhost" to
 * learn its domains' addresses and reads an id left without a device so
 * (vrb_fill_addr: every domain keeps its interface's address). A
 * connection to the loopback address goes to the first NIC on loopback
 * (inside it when the client is on it too). A host whose NICs are
 * elsewhere (TAP mode) has no RDMA device on lo: there the bind fails
 * ENODEV, as on a host with rxe on eth0 only. */
#include "cm.h"

#include <string.h>

/* cm_is_loopback: whether sa is the host's loopback address, 127.0.0.1 or
 * ::1 (or ::ffff:127.0.0.1). */
int cm_is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_addr.s_addr == htonl(INADDR_LOOPBACK);
	if (sa->sa_family != AF_INET6)
		return 0;
	const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
	if (IN6_IS_ADDR_LOOPBACK(a))
		return 1;
	return IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127 && a->s6_addr[13] == 0 && a->s6_addr[14] == 0 &&
	       a->s6_addr[15] == 1;
}

/* cm_loopback_dev: the first live NIC on a loopback address, or -1. Caller
 * holds cm_mu. */
int cm_loopback_dev(void)
{
	for (int i = 0; i < cm_ndevs; i++)
		if (!cm_devs[i].dead && (ntohl(cm_devs[i].addr.s_addr) >> 24) == 127)
			return i;
	return -1;
}

static int is_any(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_addr.s_addr == htonl(INADDR_ANY);
	return sa->sa_family == AF_INET6 && IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)sa)->sin6_addr);
}

/* cm_self_dst: whether dst names this host itself: the loopback address,
 * or the wildcard, which the kernel resolves to its first device
 * (cma_resolve_loopback). */
int cm_self_dst(const struct sockaddr *dst)
{
	return cm_is_loopback(dst) || is_any(dst);
}

/* cm_self_dev: the NIC a connection to dst (cm_self_dst) goes to: the
 * first NIC on loopback; for the wildcard, else the first live NIC; -1 for
 * none. Caller holds cm_mu. */
int cm_self_dev(const struct sockaddr *dst)
{
	int i = cm_loopback_dev();
	if (i >= 0 || !is_any(dst))
		return i;
	for (i = 0; i < cm_ndevs; i++)
		if (!cm_devs[i].dead)
			return i;
	return -1;
}

/* cm_wire_addr: the IPv4 address the daemon's CM reaches dst at: for this
 * host itself (cm_self_dst) its NIC's own, dst's (unmapped) otherwise.
 * The port is dst's. Caller holds cm_mu. */
void cm_wire_addr(const struct sockaddr *dst, struct sockaddr_in *out)
{
	int lo = cm_self_dst(dst) ? cm_self_dev(dst) : -1;
	memset(out, 0, sizeof(*out));
	out->sin_family = AF_INET;
	if (dst->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)dst;
		out->sin_port = s6->sin6_port;
		if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr))
			memcpy(&out->sin_addr, s6->sin6_addr.s6_addr + 12, 4);
	} else if (dst->sa_family == AF_INET) {
		out->sin_port = ((const struct sockaddr_in *)dst)->sin_port;
		out->sin_addr = ((const struct sockaddr_in *)dst)->sin_addr;
	}
	if (lo >= 0)
		out->sin_addr = cm_devs[lo].addr;
}

static uint8_t port_space(const struct cm_id *c)
{
	return c->id.ps == RDMA_PS_UDP || c->id.ps == RDMA_PS_IPOIB ? 1 : 0;
}

/* put_addr writes addr for CM_BIND: family 0 for the wildcard, else its
 * address (IPv4-mapped addresses as IPv4). */
static void put_addr(struct cbuf *b, const struct sockaddr *sa)
{
	uint8_t raw[16] = {0};
	uint8_t fam = 0;
	if (sa->sa_family == AF_INET && ((const struct sockaddr_in *)sa)->sin_addr.s_addr != htonl(INADDR_ANY)) {
		fam = 4;
		memcpy(raw, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
		if (IN6_IS_ADDR_V4MAPPED(a)) {
			fam = 4;
			memcpy(raw, a->s6_addr + 12, 4);
		} else if (!IN6_IS_ADDR_UNSPECIFIED(a)) {
			fam = 6;
			memcpy(raw, a->s6_addr, 16);
		}
	}
	c_u8(b, fam);
	for (int i = 0; i < 16; i++)
		c_u8(b, raw[i]);
}

/* cm_reserve reserves *port (0: an ephemeral one, written back) of c's port
 * space on addr through device dev's session (no lock held). 0, or an
 * errno as the kernel's cma_get_port: EADDRINUSE for a port bound to the
 * same address, EADDRNOTAVAIL with a wildcard on either side (or no
 * ephemeral port left), EACCES for a port below 1024. A daemon without CM_BIND
 * reserves nothing and leaves *port as it is: the port is then chosen by
 * rdma_listen, as before. */
int cm_reserve(struct cm_id *c, int dev, const struct sockaddr *addr, uint16_t *port)
{
	struct cbuf b = {0};
	uint8_t rep[8];
	size_t n = 0;
	struct rdec r = {.b = rep};
	int err;
	c_u8(&b, port_space(c));
	put_addr(&b, addr);
	c_u16(&b, *port);
	err = cm_call(dev, RNICD_OP_CM_BIND, &b, rep, sizeof(rep), &n);
	if (err == EOPNOTSUPP)
		return 0;
	if (err)
		return err == EBUSY ? EADDRINUSE : err;
	r.n = n;
	uint32_t h = d_u32(&r);
	uint16_t p = d_u16(&r);
	if (r.err)
		return EPROTO;
	pthread_mutex_lock(&cm_mu);
	c->binding = h;
	c->bind_dev = dev;
	pthread_mutex_unlock(&cm_mu);
	*port = p;
	return 0;
}

/* cm_unreserve gives c's reservation back (no lock held). */
void cm_unreserve(struct cm_id *c)
{
	struct cbuf b = {0};
	uint32_t h;
	int dev;
	pthread_mutex_lock(&cm_mu);
	h = c->binding, dev = c->bind_dev;
	c->binding = 0;
	pthread_mutex_unlock(&cm_mu);
	if (!h || cm_devs[dev].dead)
		return;
	c_u32(&b, h);
	cm_call(dev, RNICD_OP_CM_UNBIND, &b, NULL, 0, NULL);
}
