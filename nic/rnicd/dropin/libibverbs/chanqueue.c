/* SPDX-License-Identifier: BSD-2-Clause */
/* A completion channel's CQs by slot and its queue of events
 * (proto/chanevents.go). The event set lies in memory the daemon writes:
 * a fired slot out of range, or naming no CQ of the channel (destroyed,
 * or never created), is counted and dropped. Nothing here blocks or makes
 * a system call, so the fuzz driver runs it on random sets. */
#include "rnic.h"

#include <stdlib.h>
#include <string.h>

int rnic_read_channel(struct rbuf *r, uint32_t *h, struct rnic_place *p)
{
	int err;
	*h = r_u32(r);
	if ((err = rnic_read_place(r, p, RNICD_BELL_AREA_LEN)))
		return err;
	if ((err = r_done(r)))
		return err;
	return *h == 0 ? EPROTO : 0;
}

int rnic_read_cq(struct rbuf *r, struct rnic_cq *q)
{
	int err;
	q->h = r_u32(r);
	q->slots = r_u32(r);
	q->cap = r_u32(r);
	if (q->slots == 0 || (q->slots & (q->slots - 1)) || q->slots > RNICD_MAX_RING_SLOTS || q->cap == 0 || q->cap > q->slots)
		return EPROTO;
	if ((err = rnic_read_place(r, &q->place, RNICD_RING_HEADER_LEN + (uint64_t)q->slots * RNICD_WC_SLOT_LEN)))
		return err;
	q->chan_slot = r_u32(r);
	return r_done(r);
}

/* grow makes the tables hold slot s: capacities are powers of two, the
 * queue's ring is laid out anew from its head. */
static int grow(struct rnic_channel *ch, uint32_t s)
{
	uint32_t cap = ch->cap ? ch->cap : 64;
	struct rnic_cq **cqs;
	uint32_t *pending, *fifo;

	while (cap <= s)
		cap *= 2;
	cqs = calloc(cap, sizeof(*cqs));
	pending = calloc(cap, sizeof(*pending));
	fifo = calloc(cap, sizeof(*fifo));
	if (!cqs || !pending || !fifo) {
		free(cqs), free(pending), free(fifo);
		return ENOMEM;
	}
	if (ch->cap) {
		memcpy(cqs, ch->cqs, ch->cap * sizeof(*cqs));
		memcpy(pending, ch->pending, ch->cap * sizeof(*pending));
	}
	for (uint32_t i = 0; i < ch->len; i++)
		fifo[i] = ch->fifo[(ch->head + i) % ch->cap];
	free(ch->cqs), free(ch->pending), free(ch->fifo);
	ch->cqs = cqs, ch->pending = pending, ch->fifo = fifo;
	ch->cap = cap;
	ch->head = 0;
	return 0;
}

int rnic_chan_add(struct rnic_channel *ch, struct rnic_cq *q)
{
	uint32_t s = q->chan_slot;
	int err = 0;
	if (s >= RNICD_MAX_BELLS)
		return EPROTO;
	pthread_mutex_lock(&ch->mu);
	if (s >= ch->cap)
		err = grow(ch, s);
	if (!err && ch->cqs[s])
		err = EPROTO; /* the daemon gave a slot held */
	if (!err) {
		ch->cqs[s] = q;
		q->chan = ch;
	}
	pthread_mutex_unlock(&ch->mu);
	return err;
}

/* unqueue takes slot s out of the queue, keeping the others' order. */
static void unqueue(struct rnic_channel *ch, uint32_t s)
{
	uint32_t k = 0;
	for (uint32_t i = 0; i < ch->len; i++) {
		uint32_t v = ch->fifo[(ch->head + i) % ch->cap];
		if (v != s)
			ch->fifo[(ch->head + k++) % ch->cap] = v;
	}
	ch->len = k;
	ch->pending[s] = 0;
}

void rnic_chan_remove(struct rnic_channel *ch, struct rnic_cq *q)
{
	uint32_t s = q->chan_slot;
	if (s < ch->cap && ch->cqs[s] == q) {
		ch->cqs[s] = NULL;
		if (ch->pending[s])
			unqueue(ch, s);
	}
	q->chan = NULL;
}

static void queue(struct rnic_channel *ch, uint32_t s)
{
	if (s >= ch->cap || !ch->cqs[s]) {
		ch->dropped++;
		return;
	}
	if (ch->pending[s]++ == 0)
		ch->fifo[(ch->head + ch->len++) % ch->cap] = s;
}

/* rnic_chan_collect swaps each set summary word with 0, then each leaf word a summary
 * bit names, and queues every slot found: the daemon sets the leaf bit
 * before the summary bit, and sends on the channel's socket after both. */
void rnic_chan_collect(struct rnic_channel *ch)
{
	uint64_t *leaves = ch->set + RNICD_BELL_SUMMARY_WORDS;
	for (uint32_t w = 0; w < RNICD_BELL_SUMMARY_WORDS; w++) {
		uint64_t sum = __atomic_exchange_n(&ch->set[w], 0, __ATOMIC_SEQ_CST);
		while (sum) {
			uint32_t k = w * 64 + (uint32_t)__builtin_ctzll(sum);
			uint64_t leaf = __atomic_exchange_n(&leaves[k], 0, __ATOMIC_SEQ_CST);
			sum &= sum - 1;
			while (leaf) {
				queue(ch, k * 64 + (uint32_t)__builtin_ctzll(leaf));
				leaf &= leaf - 1;
			}
		}
	}
}

struct rnic_cq *rnic_chan_pop(struct rnic_channel *ch)
{
	uint32_t s;
	if (ch->len == 0)
		return NULL;
	s = ch->fifo[ch->head];
	ch->head = (ch->head + 1) % ch->cap;
	ch->len--;
	if (--ch->pending[s] > 0) /* more for this CQ: after the others */
		ch->fifo[(ch->head + ch->len++) % ch->cap] = s;
	return ch->cqs[s];
}

void rnic_chan_free(struct rnic_channel *ch)
{
	free(ch->cqs), free(ch->pending), free(ch->fifo);
	ch->cqs = NULL, ch->pending = NULL, ch->fifo = NULL;
	ch->cap = ch->head = ch->len = 0;
}
