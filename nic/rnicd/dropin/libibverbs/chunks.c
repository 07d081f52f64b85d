/* SPDX-License-Identifier: BSD-2-Clause */
/* The session's ring chunks (proto/arena.go): rnicd
 * places the rings of every QP, SRQ and CQ in a few memfd chunks and sends
 * each chunk's memfd with the first reply that names it. The library maps
 * a chunk once, whole, and keeps it until ibv_close_device; creating an
 * object in a mapped chunk maps nothing and destroying one unmaps nothing,
 * except a chunk of the object's own (rings larger than half a chunk).
 *
 * A create holds ring_mu over its round trip and the mapping of its
 * chunk: the replies of two threads' creates arrive in order, but the
 * thread whose reply names a chunk without its memfd must find it mapped
 * by the one that got it. */
#include "rnic.h"

#include <stdlib.h>
#include <unistd.h>
#include <sys/mman.h>

int rnic_read_place(struct rbuf *r, struct rnic_place *p, uint64_t size)
{
	p->chunk = r_u32(r);
	p->own = r_u8(r);
	p->chunk_len = r_u64(r);
	p->offset = r_u64(r);
	if (r->err)
		return EPROTO;
	if (p->chunk == 0 || p->own > 1)
		return EPROTO;
	if (p->own ? p->offset != 0 || p->chunk_len > RNICD_MAX_OWN_CHUNK || p->chunk_len % RNICD_ARENA_PAGE
		   : p->chunk_len != RNICD_ARENA_CHUNK_LEN)
		return EPROTO;
	if (p->offset % RNICD_ARENA_PAGE || p->offset > p->chunk_len || size > p->chunk_len - p->offset)
		return EPROTO;
	return 0;
}

static struct rnic_chunk *find_chunk(struct rnic_context *c, uint32_t id)
{
	for (size_t i = 0; i < c->nchunks; i++)
		if (c->chunks[i].id == id)
			return &c->chunks[i];
	return NULL;
}

/* add_chunk maps the memfd fd of chunk p->chunk into the table. */
static int add_chunk(struct rnic_context *c, const struct rnic_place *p, int fd, struct rnic_chunk **out)
{
	uint8_t *base;
	int err;
	if (c->nchunks == c->capchunks) {
		size_t cap = c->capchunks ? 2 * c->capchunks : 8;
		struct rnic_chunk *t = realloc(c->chunks, cap * sizeof(*t));
		if (!t)
			return ENOMEM;
		c->chunks = t;
		c->capchunks = cap;
	}
	if ((err = rnic_map_fd(fd, p->chunk_len, &base)))
		return err;
	*out = &c->chunks[c->nchunks++];
	**out = (struct rnic_chunk){.id = p->chunk, .base = base, .len = p->chunk_len};
	return 0;
}

/* fetch_chunk asks for the memfd of chunk p->chunk again (RING_CHUNK) and
 * maps it: its memfd went with an earlier reply this process failed to use
 * (its descriptors were lost at the descriptor limit, say). */
static int fetch_chunk(struct rnic_context *c, const struct rnic_place *p, struct rnic_chunk **out)
{
	struct rnic_reply *rep = malloc(sizeof(*rep));
	struct wbuf w;
	int err;
	if (!rep)
		return ENOMEM;
	w_init(&w);
	w_u32(&w, p->chunk);
	if (!(err = ctx_call(c, RNICD_OP_RING_CHUNK, &w, NULL, 0, rep))) {
		err = rep->nfds == 1 && rep->len == 0 ? add_chunk(c, p, rep->fds[0], out) : EPROTO;
		rnic_close_fds(rep->fds, rep->nfds);
	}
	free(rep);
	return err;
}

int rnic_take_rings(struct rnic_context *c, const struct rnic_place *p, struct rnic_reply *rep, int *fdi, int others,
		    uint8_t **mem)
{
	struct rnic_chunk *k = find_chunk(c, p->chunk);
	int n = rep->nfds - *fdi, err;
	if (n == others + 1 && !k) {
		/* New to this process: the reply brings its memfd. */
		err = add_chunk(c, p, rep->fds[*fdi], &k);
		close(rep->fds[*fdi]);
		rep->fds[(*fdi)++] = -1;
		if (err)
			return err;
	} else if (n == others && !k) {
		if ((err = fetch_chunk(c, p, &k)))
			return err;
	} else if (n != others || !k) {
		return EPROTO;
	}
	if (k->len != p->chunk_len)
		return EPROTO;
	*mem = k->base + p->offset;
	return 0;
}

void rnic_release_rings(struct rnic_context *c, const struct rnic_place *p)
{
	struct rnic_chunk *k;
	if (!p->own)
		return;
	pthread_mutex_lock(&c->ring_mu);
	if ((k = find_chunk(c, p->chunk))) {
		munmap(k->base, k->len);
		*k = c->chunks[--c->nchunks];
	}
	pthread_mutex_unlock(&c->ring_mu);
}

void rnic_close_chunks(struct rnic_context *c)
{
	for (size_t i = 0; i < c->nchunks; i++)
		munmap(c->chunks[i].base, c->chunks[i].len);
	free(c->chunks);
	c->chunks = NULL;
	c->nchunks = c->capchunks = 0;
}
