/* SPDX-License-Identifier: BSD-2-Clause */
/* The field codec of rnicd's message bodies (proto/codec.go), as far as
 * the CM ops need it: little-endian integers, length-prefixed blobs and
 * addresses as a family byte and 16 bytes. */
#include "cm.h"
#include "rn_codec.h"

#include <string.h>

static void c_raw(struct cbuf *w, const void *p, size_t n)
{
	rn_put(w->b, sizeof(w->b), &w->n, &w->err, p, n);
}

static void c_le(struct cbuf *w, uint64_t v, int n)
{
	rn_put_le(w->b, sizeof(w->b), &w->n, &w->err, v, n);
}

void c_u8(struct cbuf *w, uint8_t v) { c_le(w, v, 1); }
void c_u16(struct cbuf *w, uint16_t v) { c_le(w, v, 2); }
void c_u32(struct cbuf *w, uint32_t v) { c_le(w, v, 4); }

void c_blob(struct cbuf *w, const void *p, size_t n)
{
	c_u32(w, (uint32_t)n);
	c_raw(w, p, n);
}

/* c_addr4 writes an IPv4 address (family 4) of sa, which is AF_INET or an
 * IPv4-mapped AF_INET6. */
void c_addr4(struct cbuf *w, const struct sockaddr *sa)
{
	uint8_t b[16] = {0};
	if (sa->sa_family == AF_INET)
		memcpy(b, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	else
		memcpy(b, ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr + 12, 4);
	c_u8(w, 4);
	c_raw(w, b, 16);
}

static const uint8_t *d_take(struct rdec *r, size_t n)
{
	return rn_take(r->b, r->n, &r->off, &r->err, n);
}

static uint64_t d_le(struct rdec *r, int n)
{
	return rn_take_le(r->b, r->n, &r->off, &r->err, n);
}

uint8_t d_u8(struct rdec *r) { return (uint8_t)d_le(r, 1); }
uint16_t d_u16(struct rdec *r) { return (uint16_t)d_le(r, 2); }
uint32_t d_u32(struct rdec *r) { return (uint32_t)d_le(r, 4); }

size_t d_blob(struct rdec *r, void *p, size_t cap)
{
	uint32_t n = d_u32(r);
	const uint8_t *s;
	if (n > cap) {
		r->err = 1;
		return 0;
	}
	s = d_take(r, n);
	if (!s)
		return 0;
	if (p)
		memcpy(p, s, n);
	return n;
}

void d_addrport(struct rdec *r, struct sockaddr_storage *ss)
{
	static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	uint8_t fam = d_u8(r);
	const uint8_t *b = d_take(r, 16);
	uint16_t port = d_u16(r);
	memset(ss, 0, sizeof(*ss));
	if (!b)
		return;
	if (fam == 4 || (fam == 6 && !memcmp(b, mapped, 12))) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
		s4->sin_family = AF_INET;
		memcpy(&s4->sin_addr, fam == 4 ? b : b + 12, 4);
		s4->sin_port = htons(port);
	} else if (fam == 6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
		s6->sin6_family = AF_INET6;
		memcpy(&s6->sin6_addr, b, 16);
		s6->sin6_port = htons(port);
	}
}
