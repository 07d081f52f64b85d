/* SPDX-License-Identifier: BSD-2-Clause */
/* Private entry points for rnic's drop-in librdmacm.so.1 (version node
 * RNIC_PRIVATE_1, not part of any public ABI): rdma_cm runs through the
 * daemon session of the context that owns the QP (the daemon binds QPs by
 * the session's handles), so the CM library sends its requests on this
 * connection and receives its events (CM_RESULT, CM_DISCONNECTED) through
 * a sink called wherever the connection is read. */
#include "rnic.h"

#include <stdlib.h>
#include <string.h>

static rnic_cm_sink_fn cm_sink;

/* rnic_private_cm_sink sets the function the CM events of every context
 * go to. It runs with the context's connection locked: it must only
 * queue, never call the daemon. */
RNIC_EXPORT void rnic_private_cm_sink(rnic_cm_sink_fn fn)
{
	__atomic_store_n(&cm_sink, fn, __ATOMIC_RELEASE);
}

void rnic_cm_deliver(struct rnic_conn *c, uint16_t op, const uint8_t *body, size_t n)
{
	rnic_cm_sink_fn fn = __atomic_load_n(&cm_sink, __ATOMIC_ACQUIRE);
	if (fn)
		fn(c, op, body, n);
}

/* rnic_private_cm_key is what the sink's first argument is for ctx. */
RNIC_EXPORT void *rnic_private_cm_key(struct ibv_context *ctx)
{
	return &to_rctx(ctx)->conn;
}

/* rnic_private_cm_fd is the context's socket, to poll for CM events. */
RNIC_EXPORT int rnic_private_cm_fd(struct ibv_context *ctx)
{
	return to_rctx(ctx)->conn.fd;
}

/* rnic_private_cm_call runs one request (op, body of n bytes) on the
 * context's connection; the reply's body goes to reply (cap bytes, *len).
 * Returns 0 or an errno value (EIO once the daemon is gone). */
RNIC_EXPORT int rnic_private_cm_call(struct ibv_context *ctx, uint16_t op, const void *body, size_t n,
				     void *reply, size_t cap, size_t *len)
{
	struct rnic_context *c = to_rctx(ctx);
	struct rnic_reply *rep = malloc(sizeof(*rep));
	struct wbuf *w = malloc(sizeof(*w));
	int err = ENOMEM;

	if (rep && w) {
		w_init(w);
		w_raw(w, body, n);
		err = ctx_call(c, op, w, NULL, 0, rep);
	}
	if (!err) {
		rnic_close_fds(rep->fds, rep->nfds);
		if (rep->len > cap)
			err = EPROTO;
		else {
			memcpy(reply, rep->body, rep->len);
			*len = rep->len;
		}
	}
	free(rep);
	free(w);
	return err;
}

/* rnic_private_cm_poll reads what the socket holds without blocking,
 * handing CM events to the sink. Returns EIO once the daemon is gone. */
RNIC_EXPORT int rnic_private_cm_poll(struct ibv_context *ctx)
{
	struct rnic_conn *c = &to_rctx(ctx)->conn;
	int dead;
	pthread_mutex_lock(&c->mu);
	rnic_poll_events(c);
	dead = c->dead;
	pthread_mutex_unlock(&c->mu);
	return dead ? EIO : 0;
}

/* rnic_private_qp_handle is the daemon's handle of qp. */
RNIC_EXPORT uint32_t rnic_private_qp_handle(struct ibv_qp *qp)
{
	return (to_rqp(qp))->h;
}
