/* SPDX-License-Identifier: BSD-2-Clause */
/* The random choices and byte patterns: every byte the soak moves is a
 * function of (seed, QP, what, n) and of its offset, so whoever holds the
 * bytes can tell whether they are right without a copy of the sender's. */
#include "soak.h"

#include <string.h>

const char *const op_names[OP_KINDS] = {"write", "write_imm", "read", "send", "send_imm", "fadd", "cswap"};

/* mix64 is splitmix64's finaliser: a bijection that spreads every input
 * bit over the output. */
uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

uint64_t key_of(uint64_t seed, uint32_t q, uint32_t kind, uint64_t n)
{
	return mix64(mix64(mix64(seed) ^ ((uint64_t)q << 8 | kind)) ^ n);
}

uint64_t rng_next(uint64_t *state)
{
	*state += 0x9e3779b97f4a7c15ULL;
	return mix64(*state);
}

uint32_t rng_below(uint64_t *state, uint32_t n)
{
	return n ? (uint32_t)(rng_next(state) % n) : 0;
}

/* random_size is log-uniform up to max, 0 included: as many messages of a
 * few bytes as of a few MiB, so a soak of a given count has both many
 * messages and large ones. */
uint32_t random_size(uint64_t *state, uint32_t max)
{
	uint32_t bits = 0, limit;

	while (bits < 32 && (1ULL << bits) <= max)
		bits++;
	limit = (uint32_t)((1ULL << rng_below(state, bits + 1)) - 1);
	if (limit > max)
		limit = max;
	return rng_below(state, limit + 1);
}

/* word_at is the pattern's 8 bytes at offset 8*w. */
static inline uint64_t word_at(uint64_t key, size_t w)
{
	return mix64(key + (uint64_t)w * 0x9e3779b97f4a7c15ULL);
}

static inline uint8_t byte_at(uint64_t key, size_t i)
{
	return (uint8_t)(word_at(key, i >> 3) >> ((i & 7) * 8));
}

/* store_le and load_le move a word as its bytes in pattern order (lowest
 * first) whatever the host's byte order. */
static inline void store_le(uint8_t *p, uint64_t v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	memcpy(p, &v, 8);
#else
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
#endif
}

static inline uint64_t load_le(const uint8_t *p)
{
	uint64_t v = 0;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	memcpy(&v, p, 8);
#else
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
#endif
	return v;
}

/* pattern_fill writes bytes [off, off+len) of key's pattern to dst. */
void pattern_fill(uint8_t *dst, size_t len, uint64_t key, size_t off)
{
	size_t i = 0;

	for (; i < len && ((off + i) & 7); i++)
		dst[i] = byte_at(key, off + i);
	for (; i + 8 <= len; i += 8)
		store_le(dst + i, word_at(key, (off + i) >> 3));
	for (; i < len; i++)
		dst[i] = byte_at(key, off + i);
}

long pattern_check(const uint8_t *src, size_t len, uint64_t key, size_t off)
{
	size_t i = 0;

	for (; i < len && ((off + i) & 7); i++)
		if (src[i] != byte_at(key, off + i))
			return (long)i;
	for (; i + 8 <= len; i += 8)
		if (load_le(src + i) != word_at(key, (off + i) >> 3))
			break;
	for (; i < len; i++)
		if (src[i] != byte_at(key, off + i))
			return (long)i;
	return -1;
}

/* message_of: the k-th message of QP q. Both sides compute it, so the
 * responder knows what each receive must bring without being told. */
void message_of(const struct params *p, uint32_t q, uint64_t k, struct message *m)
{
	uint64_t rng = key_of(p->seed, q, KEY_MSG, k);
	static const enum op_kind kinds[] = {OP_SEND, OP_SEND, OP_SEND_IMM, OP_WRITE_IMM, OP_WRITE_IMM};

	m->kind = kinds[rng_below(&rng, sizeof(kinds) / sizeof(kinds[0]))];
	m->len = random_size(&rng, p->max_size);
	m->imm = (uint32_t)rng_next(&rng);
	m->key = rng_next(&rng);
}

/* split cuts len bytes into 1..max_sge pieces (one mostly; several one time
 * in four), GAP bytes apart in the buffer. */
void split(uint64_t *rng, uint32_t len, uint32_t max_sge, struct pieces *pc)
{
	uint32_t n = 1, at = 0, left = len;

	if (max_sge > MAX_SGE)
		max_sge = MAX_SGE;
	if (max_sge > 1 && len > 1 && rng_below(rng, 4) == 0)
		n = 2 + rng_below(rng, max_sge - 1);
	if (n > len)
		n = len ? len : 1;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t l = i + 1 == n ? left : 1 + rng_below(rng, left - (n - 1 - i));
		pc->len[i] = l;
		pc->off[i] = at + i * GAP;
		at += l;
		left -= l;
	}
	pc->n = (int)n;
}

void pieces_fill(uint8_t *buf, const struct pieces *pc, uint64_t key, size_t off)
{
	size_t at = off;

	for (int i = 0; i < pc->n; i++) {
		pattern_fill(buf + pc->off[i], pc->len[i], key, at);
		at += pc->len[i];
	}
}

long pieces_check(const uint8_t *buf, const struct pieces *pc, uint64_t key, size_t off)
{
	size_t at = 0;

	for (int i = 0; i < pc->n; i++) {
		long bad = pattern_check(buf + pc->off[i], pc->len[i], key, off + at);
		if (bad >= 0)
			return (long)at + bad;
		at += pc->len[i];
	}
	return -1;
}

/* pieces_sge describes the pieces as scatter/gather entries; a message of
 * no bytes has none. */
int pieces_sge(const struct pieces *pc, uint8_t *buf, uint32_t lkey, struct ibv_sge *sge)
{
	int n = 0;

	for (int i = 0; i < pc->n; i++) {
		if (!pc->len[i])
			continue;
		sge[n].addr = (uintptr_t)(buf + pc->off[i]);
		sge[n].length = pc->len[i];
		sge[n].lkey = lkey;
		n++;
	}
	return n;
}

/* The layouts. Every share begins page-aligned; the 64 bytes at its start
 * hold the atomic word (responder) or the results (requester). */
static size_t round_up(size_t n, size_t to)
{
	return (n + to - 1) / to * to;
}

static void layout_common(const struct params *p, struct layout *l)
{
	l->slot = round_up(p->max_size ? p->max_size : 1, 64);
	l->buf = l->slot + MAX_SGE * GAP;
}

void layout_responder(const struct params *p, struct layout *l)
{
	layout_common(p, l);
	l->per_qp = round_up(64 + (size_t)(p->depth + p->credits) * l->slot + (size_t)p->credits * l->buf, 4096);
	l->total = l->per_qp * p->qps;
}

void layout_requester(const struct params *p, struct layout *l)
{
	layout_common(p, l);
	l->per_qp = round_up(64 * (size_t)p->depth + (size_t)p->depth * l->buf, 4096);
	l->total = l->per_qp * p->qps;
}

size_t resp_atomic(const struct params *p, const struct layout *l, uint32_t q)
{
	(void)p;
	return l->per_qp * q;
}

size_t resp_data_slot(const struct params *p, const struct layout *l, uint32_t q, uint32_t s)
{
	(void)p;
	return l->per_qp * q + 64 + (size_t)s * l->slot;
}

size_t resp_msg_slot(const struct params *p, const struct layout *l, uint32_t q, uint32_t k)
{
	return l->per_qp * q + 64 + (size_t)(p->depth + k % p->credits) * l->slot;
}

size_t resp_recv_buf(const struct params *p, const struct layout *l, uint32_t q, uint32_t r)
{
	return l->per_qp * q + 64 + (size_t)(p->depth + p->credits) * l->slot + (size_t)r * l->buf;
}

size_t req_result(const struct params *p, const struct layout *l, uint32_t q, uint32_t s)
{
	(void)p;
	return l->per_qp * q + 64 * (size_t)s;
}

size_t req_buf(const struct params *p, const struct layout *l, uint32_t q, uint32_t s)
{
	return l->per_qp * q + 64 * (size_t)p->depth + (size_t)s * l->buf;
}
