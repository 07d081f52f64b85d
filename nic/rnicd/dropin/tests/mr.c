/* SPDX-License-Identifier: BSD-2-Clause */
/* corners mr: memory the application allocated itself (malloc'ed at odd
 * offsets, static, mmap'ed), several MRs on the same pages: remote writes
 * land at exactly the addressed bytes, neighbours untouched; the access
 * rights and bounds of each MR are enforced; deregistering one MR leaves
 * the others and the memory itself intact. */
#include "corners.h"

#include <sys/mman.h>

#define FILL 0xAA
#define BUFLEN (4 * PAGE)

static char sbuf[300]; /* static memory */

/* only_changed: buf[0..len) is FILL except [off, off+n), which is pat. */
static int only_changed(const unsigned char *buf, size_t len, size_t off, size_t n, const unsigned char *pat)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (i >= off && i < off + n ? buf[i] != pat[i - off] : buf[i] != FILL)
			return 0;
	return 1;
}

/* write_check: an RDMA WRITE of n pattern bytes to base+off through rkey
 * succeeds and changes exactly those bytes of the len bytes at base. */
static void write_check(struct side *a, struct ibv_mr *lmr, unsigned char *pat, unsigned char *base, size_t len,
			size_t off, size_t n, uint32_t rkey, const char *what)
{
	int st;

	memset(base, FILL, len);
	st = rdma(a, IBV_WR_RDMA_WRITE, lmr, pat, n, (uintptr_t)base + off, rkey);
	check(st == IBV_WC_SUCCESS && only_changed(base, len, off, n, pat), "%s: %zu bytes at +%zu, exactly (status %d)",
	      what, n, off, st);
}

/* refused: an RDMA WRITE the target must refuse completes with a remote
 * access error and changes nothing; the pair is spent (error state). */
static void refused(const char *d0, const char *d1, struct side *a, struct side *b, struct ibv_mr *lmr,
		    unsigned char *pat, unsigned char *base, size_t len, uint64_t raddr, uint32_t n, uint32_t rkey,
		    const char *what)
{
	int st;

	side_open(a, d0, NULL, NULL, NULL, 16, 16);
	side_open(b, d1, NULL, NULL, NULL, 16, 16);
	connect_pair(a, b);
	memset(base, FILL, len);
	st = rdma(a, IBV_WR_RDMA_WRITE, lmr, pat, n, raddr, rkey);
	check(st == IBV_WC_REM_ACCESS_ERR && only_changed(base, len, 0, 0, pat),
	      "%s: IBV_WC_REM_ACCESS_ERR, nothing written (status %d)", what, st);
	pair_close(a, b);
}

void test_mr(const char *d0, const char *d1)
{
	struct side a = {0}, b = {0};
	static unsigned char pat[256], lbuf[256];
	unsigned char *buf, *m;
	uint32_t rkey1;
	struct ibv_mr *lmr, *rmr, *mr1, *mr2, *mr3, *mr4, *mr5, *mr6, *ro;
	size_t i;

	for (i = 0; i < sizeof(pat); i++)
		pat[i] = (unsigned char)(i * 7 + 1);
	if (posix_memalign((void **)&buf, PAGE, BUFLEN))
		die("posix_memalign");
	m = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		die("mmap");
	side_open(&a, d0, NULL, NULL, NULL, 16, 16);
	side_open(&b, d1, NULL, NULL, NULL, 16, 16);
	connect_pair(&a, &b);
	lmr = reg(a.pd, pat, sizeof(pat), ALL_ACCESS);
	rmr = reg(a.pd, lbuf, sizeof(lbuf), ALL_ACCESS);
	memset(buf, FILL, BUFLEN);
	mr1 = reg(b.pd, buf + 1, 100, ALL_ACCESS);	     /* odd start, inside page 0 */
	mr2 = reg(b.pd, buf + 50, 8000, ALL_ACCESS);	     /* overlaps mr1, spans pages 0-2 */
	mr3 = reg(b.pd, buf + PAGE - 1, 2, ALL_ACCESS);	     /* two bytes across a page boundary */
	mr4 = reg(b.pd, sbuf + 3, 200, ALL_ACCESS);	     /* static memory */
	mr5 = reg(b.pd, m + 7, 33, ALL_ACCESS);		     /* mmap'ed memory */
	mr6 = ibv_reg_mr_iova2(b.pd, buf + 2 * PAGE + 100, 100, 0x100000, ALL_ACCESS); /* its own iova */
	ro = reg(b.pd, buf + 3 * PAGE, 100, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!mr6)
		die("ibv_reg_mr_iova2");
	check(mr1->addr == buf + 1 && mr1->length == 100 && mr2->lkey != mr1->lkey && mr2->rkey != mr1->rkey,
	      "overlapping MRs: their own addresses and keys");

	write_check(&a, lmr, pat, buf, BUFLEN, 1 + 3, 20, mr1->rkey, "odd-aligned MR");
	write_check(&a, lmr, pat, buf, BUFLEN, 90, 11, mr1->rkey, "to the last byte of the MR");
	write_check(&a, lmr, pat, buf, BUFLEN, 90, 11, mr2->rkey, "the same bytes through the overlapping MR");
	write_check(&a, lmr, pat, buf, BUFLEN, PAGE - 100, 200, mr2->rkey, "across a page boundary");
	write_check(&a, lmr, pat, buf, BUFLEN, PAGE - 1, 2, mr3->rkey, "a 2-byte MR across pages");
	write_check(&a, lmr, pat, (unsigned char *)sbuf, sizeof(sbuf), 13, 50, mr4->rkey, "static memory");
	write_check(&a, lmr, pat, m, PAGE, 7, 33, mr5->rkey, "mmap'ed memory");
	memset(buf, FILL, BUFLEN);
	check(rdma(&a, IBV_WR_RDMA_WRITE, lmr, pat, 10, 0x100000 + 10, mr6->rkey) == IBV_WC_SUCCESS &&
		      only_changed(buf, BUFLEN, 2 * PAGE + 110, 10, pat),
	      "ibv_reg_mr_iova2: the iova addresses the MR's bytes");
	memcpy(buf + PAGE - 10, pat, 30);
	memset(lbuf, 0, sizeof(lbuf));
	check(rdma(&a, IBV_WR_RDMA_READ, rmr, lbuf, 30, (uintptr_t)buf + PAGE - 10, mr2->rkey) == IBV_WC_SUCCESS &&
		      !memcmp(lbuf, pat, 30),
	      "RDMA READ across a page boundary reads what the application wrote");
	pair_close(&a, &b);

	refused(d0, d1, &a, &b, lmr, pat, buf, BUFLEN, (uintptr_t)buf + 95, 10, mr1->rkey, "past the MR's end");
	refused(d0, d1, &a, &b, lmr, pat, buf, BUFLEN, (uintptr_t)buf + 3 * PAGE, 10, ro->rkey,
		"an MR without REMOTE_WRITE");
	rkey1 = mr1->rkey;
	check(ibv_dereg_mr(mr1) == 0, "ibv_dereg_mr of one of two overlapping MRs");
	refused(d0, d1, &a, &b, lmr, pat, buf, BUFLEN, (uintptr_t)buf + 10, 10, rkey1, "a deregistered MR's rkey");
	side_open(&a, d0, NULL, NULL, NULL, 16, 16);
	side_open(&b, d1, NULL, NULL, NULL, 16, 16);
	connect_pair(&a, &b);
	write_check(&a, lmr, pat, buf, BUFLEN, 60, 40, mr2->rkey, "the overlapping MR after the other's dereg");
	pair_close(&a, &b);

	check(ibv_dereg_mr(mr2) == 0 && ibv_dereg_mr(mr3) == 0 && ibv_dereg_mr(mr4) == 0 && ibv_dereg_mr(mr5) == 0 &&
		      ibv_dereg_mr(mr6) == 0 && ibv_dereg_mr(ro) == 0 && ibv_dereg_mr(lmr) == 0 && ibv_dereg_mr(rmr) == 0,
	      "ibv_dereg_mr of every MR");
	check(only_changed(buf, BUFLEN, 60, 40, pat) && m[7] == pat[0] && (unsigned char)sbuf[13] == pat[0],
	      "the memory keeps its contents after ibv_dereg_mr");
	memset(buf, 1, BUFLEN); /* and is still the application's to write */
	m[0] = 1;
	check(munmap(m, PAGE) == 0, "munmap of deregistered memory");
	free(buf);
	side_free(&a);
	side_free(&b);
}
