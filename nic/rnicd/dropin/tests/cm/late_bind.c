/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * late_bind.so: an LD_PRELOAD library that makes a server late to bind:
 * the LATE_BIND_CALL-th rdma_bind_addr of the process (default 2) first
 * sleeps LATE_BIND_MS milliseconds (default 300), then goes on to the
 * loaded librdmacm's. perftest -R's server binds its port twice, for its
 * exchange and for its data connection, and tells its client to connect
 * in between: this makes the client's connect reach the port before the
 * second bind every time, as a descheduled server does now and then on a
 * busy machine.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>
#include <rdma/rdma_cma.h>

static int env_int(const char *name, int def)
{
	const char *v = getenv(name);
	return v && *v ? atoi(v) : def;
}

int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	static int calls;
	int (*next)(struct rdma_cm_id *, struct sockaddr *) =
		(int (*)(struct rdma_cm_id *, struct sockaddr *))dlsym(RTLD_NEXT, "rdma_bind_addr");
	if (!next)
		abort();
	if (__atomic_add_fetch(&calls, 1, __ATOMIC_SEQ_CST) == env_int("LATE_BIND_CALL", 2))
		usleep((useconds_t)env_int("LATE_BIND_MS", 300) * 1000);
	return next(id, addr);
}
