/* SPDX-License-Identifier: BSD-2-Clause */
/* The field codec of rnicd's message bodies (proto/codec.go) that both
 * drop-in libraries speak: little-endian integers appended to a bounded
 * buffer, and read back from a body without ever reading past its end.
 * Each library wraps these in its own buffer types; they are static inline
 * so that each keeps its own hidden copy. */
#ifndef RN_CODEC_H
#define RN_CODEC_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* rn_put appends n bytes of p to buf (cap bytes, *len of them used). A
 * write that does not fit sets *bad, and once *bad is set nothing more is
 * written. p may be NULL when n is 0 (no private data). */
static inline void rn_put(uint8_t *buf, size_t cap, size_t *len, int *bad, const void *p, size_t n)
{
	if (*bad || n > cap - *len) {
		*bad = 1;
		return;
	}
	if (n == 0)
		return;
	memcpy(buf + *len, p, n);
	*len += n;
}

/* rn_put_le appends the n low-order bytes of v, little-endian. */
static inline void rn_put_le(uint8_t *buf, size_t cap, size_t *len, int *bad, uint64_t v, int n)
{
	uint8_t b[8];
	for (int i = 0; i < n; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	rn_put(buf, cap, len, bad, b, (size_t)n);
}

/* rn_take returns the next n bytes of body b (len bytes, *off of them
 * read), or NULL when fewer are left: then *err is set, and once it is
 * set every later take fails too. */
static inline const uint8_t *rn_take(const uint8_t *b, size_t len, size_t *off, int *err, size_t n)
{
	if (*err || n > len - *off) {
		*err = 1;
		return NULL;
	}
	*off += n;
	return b + *off - n;
}

/* rn_take_le reads an n-byte little-endian integer (0 past the end). */
static inline uint64_t rn_take_le(const uint8_t *b, size_t len, size_t *off, int *err, int n)
{
	const uint8_t *p = rn_take(b, len, off, err, (size_t)n);
	uint64_t v = 0;
	if (!p)
		return 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

#endif
