/* SPDX-License-Identifier: BSD-2-Clause */
/* A fuzz driver for the library's decoders of what rnicd sends: message
 * bodies (device and port attributes, ring layouts, address vectors, QP
 * attributes through the field readers, CREATE_CHANNEL's and
 * CREATE_CQ_ON's replies), completion slots, and a completion channel's
 * event set (the daemon writes it: any bits at all). gcc has no
 * libFuzzer, so this is a mutation loop of its own: valid seeds, then
 * random bit flips, truncations and extensions, each input decoded under
 * AddressSanitizer. A decoder must never read past its input, whatever it
 * is given; it may only report an error. The seeds are its own and, given
 * a directory, every golden body the Go encoder wrote there. Built and
 * run by `make fuzz`. Usage: fuzz_decode [ITERS [SEED [DIR]]] */
#include "../rnic.h"
#include "rn_corpus.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void replies(const uint8_t *b, size_t n);
static void event_set(const uint8_t *b, size_t n);

static void decode_all(const uint8_t *b, size_t n)
{
	struct rbuf r;
	struct rnic_dev_attr da;
	struct rnic_port_attr pa;
	struct rnic_ring sq, rq;
	struct rnic_place place;
	struct ibv_ah_attr ah;
	struct ibv_wc wc;
	char s[64];
	uint8_t gid[16];

	r_init(&r, b, n);
	r_dev_attr(&r, &da);
	r_port_attr(&r, &pa);
	(void)r_done(&r);
	r_init(&r, b, n);
	(void)rnic_read_layout(&r, &sq, &rq);
	if (rnic_read_place(&r, &place, RNICD_RING_HEADER_LEN) == 0 &&
	    (place.offset % 4096 || place.offset + RNICD_RING_HEADER_LEN > place.chunk_len || place.chunk == 0)) {
		fprintf(stderr, "place %u+%llu of a %llu-byte chunk passes its check\n", place.chunk,
			(unsigned long long)place.offset, (unsigned long long)place.chunk_len);
		abort();
	}
	r_init(&r, b, n);
	rnic_r_av(&r, &ah);
	r_str(&r, s, sizeof(s));
	r_gid(&r, gid);
	(void)r_int(&r);
	(void)r_done(&r);
	if (n >= RNICD_WC_SLOT_LEN) {
		uint8_t slot[RNICD_WC_SLOT_LEN];
		memcpy(slot, b, RNICD_WC_SLOT_LEN); /* a slot is always RNICD_WC_SLOT_LEN bytes */
		rnic_wc_from_slot(slot, &wc);
	}
	replies(b, n);
	event_set(b, n);
}

/* replies decodes the input as CREATE_CHANNEL's and CREATE_CQ_ON's
 * replies: what is accepted is within bounds. */
static void replies(const uint8_t *b, size_t n)
{
	struct rbuf r;
	struct rnic_place place;
	struct rnic_cq q;
	uint32_t h;

	r_init(&r, b, n);
	if (rnic_read_channel(&r, &h, &place) == 0 &&
	    (h == 0 || place.offset % 4096 || place.offset + RNICD_BELL_AREA_LEN > place.chunk_len)) {
		fprintf(stderr, "channel %u at %llu of a %llu-byte chunk passes its check\n", h,
			(unsigned long long)place.offset, (unsigned long long)place.chunk_len);
		abort();
	}
	memset(&q, 0, sizeof(q));
	r_init(&r, b, n);
	if (rnic_read_cq(&r, &q) == 0 &&
	    (q.slots == 0 || (q.slots & (q.slots - 1)) || q.cap > q.slots ||
	     q.place.offset + RNICD_RING_HEADER_LEN + (uint64_t)q.slots * RNICD_WC_SLOT_LEN > q.place.chunk_len)) {
		fprintf(stderr, "CQ of %u slots at %llu passes its check\n", q.slots, (unsigned long long)q.place.offset);
		abort();
	}
}

/* The slots of the CQs on the fuzzed channel: the first, a few in the
 * first leaf words, the 4096th (slots past it name no CQ: dropped). */
static const uint32_t chan_slots[] = {0, 5, 63, 64, 499, 4095};
#define NCHAN_CQS (sizeof(chan_slots) / sizeof(chan_slots[0]))

/* event_set ORs the input's (word, value) pairs into an event set and
 * takes it as ibv_get_cq_event does, on a channel holding a few CQs,
 * twice (a CQ removed between the two): every event names one of the
 * channel's CQs, each CQ's events are counted once, and the queue ends
 * empty. */
static void event_set(const uint8_t *b, size_t n)
{
	static uint64_t set[RNICD_BELL_AREA_LEN / 8];
	static struct rnic_cq cqs[NCHAN_CQS];
	struct rnic_channel ch;
	struct rnic_cq bad = {0};
	struct rnic_cq *q;
	int popped = 0;

	memset(set, 0, sizeof(set));
	for (size_t i = 0; i + 10 <= n; i += 10) {
		uint16_t w = (uint16_t)(b[i] | b[i + 1] << 8);
		uint64_t v;
		memcpy(&v, b + i + 2, 8);
		set[w % (RNICD_BELL_AREA_LEN / 8)] |= v;
	}
	memset(&ch, 0, sizeof(ch));
	pthread_mutex_init(&ch.mu, NULL);
	ch.set = set;
	for (size_t i = 0; i < NCHAN_CQS; i++) {
		memset(&cqs[i], 0, sizeof(cqs[i]));
		cqs[i].chan_slot = chan_slots[i];
		if (rnic_chan_add(&ch, &cqs[i]))
			abort();
	}
	bad.chan_slot = 5; /* held */
	if (rnic_chan_add(&ch, &bad) != EPROTO)
		abort();
	bad.chan_slot = RNICD_MAX_BELLS; /* out of range */
	if (rnic_chan_add(&ch, &bad) != EPROTO)
		abort();
	for (int round = 0; round < 2; round++) {
		rnic_chan_collect(&ch);
		if (round == 0)
			rnic_chan_remove(&ch, &cqs[1]);
		while ((q = rnic_chan_pop(&ch))) {
			if (q < cqs || q >= cqs + NCHAN_CQS || q == &cqs[1])
				abort();
			popped++;
		}
		if (ch.len)
			abort();
		for (size_t i = 0; i < n && i < sizeof(set); i++) /* the daemon fires again */
			((uint8_t *)set)[(i * 131) % sizeof(set)] |= b[i];
	}
	if (popped > 2 * (int)NCHAN_CQS)
		abort();
	rnic_chan_free(&ch);
	pthread_mutex_destroy(&ch.mu);
}

static size_t seed(uint8_t *b, int which)
{
	struct wbuf w;
	w_init(&w);
	switch (which) {
	case 0: /* device + port attributes as OPEN sends them */
		w_str(&w, "rnic 0.1");
		for (int i = 0; i < 4; i++)
			w_u64(&w, 1u << i);
		for (int i = 0; i < 3; i++)
			w_u32(&w, 7);
		w_u64(&w, 100), w_u64(&w, 100), w_u32(&w, 0x38c0);
		for (int i = 0; i < 9; i++)
			w_u64(&w, 32);
		w_u8(&w, 2);
		for (int i = 0; i < 6; i++)
			w_u64(&w, 16);
		w_u8(&w, 15), w_u8(&w, 1), w_u64(&w, 64), w_u64(&w, 1u << 31);
		w_u8(&w, 4), w_u8(&w, 5), w_u8(&w, 3), w_u64(&w, 1), w_u64(&w, 1u << 31), w_u64(&w, 1);
		w_u8(&w, 5), w_u8(&w, 2), w_u64(&w, 1500);
		break;
	case 1: /* a ring layout and its place in the arena */
		for (int i = 0; i < 2; i++)
			w_u32(&w, 64), w_u32(&w, 128), w_u32(&w, 64);
		w_u32(&w, 1), w_u8(&w, 0), w_u64(&w, 2 << 20), w_u64(&w, 8192);
		break;
	case 3: /* CREATE_CHANNEL's reply */
		w_u32(&w, 7), w_u32(&w, 1), w_u8(&w, 0), w_u64(&w, 2 << 20), w_u64(&w, 12288);
		break;
	case 4: /* CREATE_CQ_ON's reply */
		w_u32(&w, 9), w_u32(&w, 64), w_u32(&w, 63);
		w_u32(&w, 1), w_u8(&w, 0), w_u64(&w, 2 << 20), w_u64(&w, 16384), w_u32(&w, 499);
		break;
	case 5: /* an event set: the summary and leaf words of the CQs' slots */
		w_u16(&w, 0), w_u64(&w, 0xff), w_u16(&w, 16), w_u64(&w, 1ull << 5 | 1ull << 63);
		w_u16(&w, 17), w_u64(&w, 1), w_u16(&w, 16 + 7), w_u64(&w, 1ull << 51);
		w_u16(&w, 1), w_u64(&w, 1), w_u16(&w, 16 + 64), w_u64(&w, 1ull << 63);
		w_u16(&w, 15), w_u64(&w, 1ull << 63), w_u16(&w, 16 + 1023), w_u64(&w, 1ull << 63);
		break;
	default: /* an address vector and more */
		w_gid(&w, (const uint8_t[16]){0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 2});
		w_u8(&w, 0), w_u32(&w, 0), w_u8(&w, 64), w_u8(&w, 0), w_u8(&w, 0), w_u8(&w, 1);
		w_raw(&w, "\0\0\0\0\0\0", 6), w_u16(&w, 0), w_str(&w, "name");
		break;
	}
	memcpy(b, w.b, w.n);
	return w.n;
}

int main(int argc, char **argv)
{
	long iters = argc > 1 ? atol(argv[1]) : 200000;
	uint8_t base[RN_CORPUS_FILE], *in;
	struct rn_corpus corpus = {0};
	srand(argc > 2 ? (unsigned)atoi(argv[2]) : 1);
	if (argc > 3 && rn_corpus_load(&corpus, argv[3]) < 0) {
		perror(argv[3]);
		return 2;
	}
	for (long i = 0; i < iters; i++) {
		int k = (int)(i % (7 + corpus.len));
		size_t n;
		if (k < 7) {
			n = seed(base, k);
		} else {
			n = corpus.n[k - 7];
			memcpy(base, corpus.b[k - 7], n);
		}
		switch (rand() % 4) {
		case 0: /* truncate */
			n = (size_t)rand() % (n + 1);
			break;
		case 1: /* extend with noise */
			for (int k = rand() % 64; k > 0 && n < sizeof(base); k--)
				base[n++] = (uint8_t)rand();
			break;
		default: /* flip bytes */
			for (int k = 1 + rand() % 8; k > 0 && n > 0; k--)
				base[(size_t)rand() % n] = (uint8_t)rand();
		}
		/* an exact-size heap copy, so that ASan sees any overread */
		in = malloc(n ? n : 1);
		memcpy(in, base, n);
		decode_all(in, n);
		free(in);
	}
	printf("fuzz_decode: %ld inputs (%d golden seeds), no fault\n", iters, corpus.len);
	rn_corpus_free(&corpus);
	return 0;
}
