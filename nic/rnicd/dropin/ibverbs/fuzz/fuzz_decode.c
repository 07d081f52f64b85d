/* A fuzz driver for the library's decoders of what rnicd sends: message
 * bodies (device and port attributes, ring layouts, address vectors, QP
 * attributes through the field readers) and completion slots. gcc has no
 * libFuzzer, so this is a mutation loop of its own: valid seeds, then
 * random bit flips, truncations and extensions, each input decoded under
 * AddressSanitizer. A decoder must never read past its input, whatever it
 * is given; it may only report an error. Built and run by `make fuzz`. */
#include "../rnic.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	if (rnic_read_place(&r, &place, RING_HDR) == 0 &&
	    (place.offset % 4096 || place.offset + RING_HDR > place.chunk_len || place.chunk == 0)) {
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
	if (n >= WC_SLOT) {
		uint8_t slot[WC_SLOT];
		memcpy(slot, b, WC_SLOT); /* a slot is always WC_SLOT bytes */
		rnic_wc_from_slot(slot, &wc);
	}
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
	uint8_t base[4096], *in;
	srand(argc > 2 ? (unsigned)atoi(argv[2]) : 1);
	for (long i = 0; i < iters; i++) {
		size_t n = seed(base, (int)(i % 3));
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
	printf("fuzz_decode: %ld inputs, no fault\n", iters);
	return 0;
}
