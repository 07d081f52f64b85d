/* SPDX-License-Identifier: BSD-2-Clause */
/* corners fork: ibv_fork_init() changes nothing, as rdma-core's on a
 * kernel that copies pinned pages on fork: ibv_is_fork_initialized says
 * IBV_FORK_UNNEEDED, and a child gets its registered pages, heap pages
 * shared with malloc's data included. With RDMAV_USE_MADVISE, the old
 * way: registered pages are MADV_DONTFORK, absent from a child, and a
 * fork() and the child's exit leave the parent's registered memory and
 * its RDMA intact: a write the parent makes after the fork is what the
 * NIC reads (no copy-on-write page behind the NIC's back), a remote write
 * lands where the parent sees it (forkcopy checks that without it). */
#include "corners.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

/* child_status forks a child that exits 0 if the page at p is mapped in
 * it and holds c, 3 if it is not mapped, 4 if it holds something else;
 * it returns the child's status. exit, not _exit: the library's exit
 * handlers run in the child. */
static int child_status(const char *p, char c)
{
	int status = -1;
	pid_t pid;
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		if (msync((void *)((uintptr_t)p & ~(uintptr_t)(PAGE - 1)), PAGE, MS_ASYNC) != 0)
			exit(errno == ENOMEM ? 3 : 5);
		exit(p[0] == c ? 0 : 4);
	}
	waitpid(pid, &status, 0);
	return status;
}

void test_fork(const char *d0, const char *d1)
{
	struct side a = {0}, b = {0};
	char *buf, *lbuf, *small;
	struct ibv_mr *mr, *lmr, *smr;
	int status;

	unsetenv("RDMAV_USE_MADVISE");
	check(ibv_fork_init() == 0, "ibv_fork_init before any resource");
	check(ibv_is_fork_initialized() == IBV_FORK_UNNEEDED, "ibv_is_fork_initialized: unneeded (%d)",
	      ibv_is_fork_initialized());
	side_open(&a, d0, NULL, NULL, NULL, 16, 16);
	side_open(&b, d1, NULL, NULL, NULL, 16, 16);
	connect_pair(&a, &b);

	/* A small buffer from malloc: its page holds malloc's data too,
	 * which the child needs. */
	small = malloc(100);
	if (!small)
		die("malloc");
	memset(small, 's', 100);
	smr = reg(b.pd, small, 100, ALL_ACCESS);
	status = child_status(small, 's');
	check(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "after ibv_fork_init the child has a registered heap page, as the parent left it (status %#x)", status);
	check(ibv_dereg_mr(smr) == 0, "ibv_dereg_mr");
	free(small);

	/* The old way, asked for: whole pages of their own, never the
	 * stack or static data, as registered memory leaves the child. */
	setenv("RDMAV_USE_MADVISE", "1", 1);
	check(ibv_fork_init() == 0, "ibv_fork_init with RDMAV_USE_MADVISE");
	if (posix_memalign((void **)&buf, PAGE, 2 * PAGE) || posix_memalign((void **)&lbuf, PAGE, PAGE))
		die("posix_memalign");
	memset(buf, 'a', 2 * PAGE);
	mr = reg(b.pd, buf, 2 * PAGE, ALL_ACCESS);
	lmr = reg(a.pd, lbuf, PAGE, ALL_ACCESS);
	status = child_status(buf, 'a');
	check(WIFEXITED(status) && WEXITSTATUS(status) == 3,
	      "with RDMAV_USE_MADVISE a registered page is absent from the child (status %#x)", status);
	memset(buf, 'p', 16); /* the parent writes its registered page after the fork */
	memset(lbuf, 0, 64);
	check(rdma(&a, IBV_WR_RDMA_READ, lmr, lbuf, 16, (uintptr_t)buf, mr->rkey) == IBV_WC_SUCCESS &&
		      !memcmp(lbuf, "pppppppppppppppp", 16),
	      "RDMA READ after the fork sees the parent's write");
	memset(lbuf, 'w', 64);
	check(rdma(&a, IBV_WR_RDMA_WRITE, lmr, lbuf, 32, (uintptr_t)buf + PAGE + 5, mr->rkey) == IBV_WC_SUCCESS &&
		      !memcmp(buf + PAGE + 5, lbuf, 32) && buf[PAGE + 4] == 'a' && buf[PAGE + 37] == 'a',
	      "RDMA WRITE after the fork lands in the parent's memory, exactly");
	check(ibv_dereg_mr(mr) == 0 && ibv_dereg_mr(lmr) == 0, "ibv_dereg_mr after the fork");
	check(buf[0] == 'p' && buf[PAGE + 5] == 'w', "the memory keeps its contents after ibv_dereg_mr");
	status = child_status(buf, 'p');
	check(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "a deregistered page goes to the child again (status %#x)", status);
	free(buf);
	free(lbuf);
	pair_close(&a, &b);
	side_free(&a);
	side_free(&b);
}

/* corners forkcopy: a child of fork() gets its registered pages as they
 * were at the fork, and its own from then on: the parent writing them
 * right after fork() returns (a Python parent starts its next child;
 * malloc's bookkeeping shares the page with a small MR) changes nothing
 * the child sees, the child's writes stay its own, and the parent's RDMA
 * still lands in the parent's memory. */
void test_fork_copy(const char *d0, const char *d1)
{
	struct side a = {0}, b = {0};
	char *buf = malloc(3000), *lbuf;
	struct ibv_mr *mr, *lmr;
	int pipefd[2], status = -1;
	pid_t pid;
	char go;

	if (!buf || posix_memalign((void **)&lbuf, PAGE, PAGE) || pipe(pipefd))
		die("forkcopy: setup");
	side_open(&a, d0, NULL, NULL, NULL, 16, 16);
	side_open(&b, d1, NULL, NULL, NULL, 16, 16);
	connect_pair(&a, &b);
	memset(buf, 'a', 3000);
	mr = reg(b.pd, buf + 100, 64, ALL_ACCESS); /* a small MR inside a heap block */
	lmr = reg(a.pd, lbuf, PAGE, ALL_ACCESS);

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		int bad = 0;
		close(pipefd[1]);
		if (read(pipefd[0], &go, 1) != 1) /* the parent has written */
			_exit(3);
		for (int i = 0; i < 3000; i++)
			bad |= buf[i] != 'a';
		memset(buf, 'c', 3000);
		_exit(bad ? 4 : 0);
	}
	close(pipefd[0]);
	memset(buf, 'p', 3000); /* the parent writes at once, before the child looks */
	signal(SIGPIPE, SIG_IGN); /* a child gone already is checked below */
	if (write(pipefd[1], "g", 1) != 1)
		fprintf(stderr, "forkcopy: the child was gone before the parent wrote\n");
	close(pipefd[1]);
	waitpid(pid, &status, 0);
	check(WIFEXITED(status) && WEXITSTATUS(status) != 4, "forkcopy: the child sees its pages as they were at the fork, not the parent's later writes");
	check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "forkcopy: the child exits cleanly (status %#x)", status);
	check(buf[0] == 'p' && buf[2999] == 'p', "forkcopy: the child's writes stayed the child's");
	memset(lbuf, 'w', 64);
	check(rdma(&a, IBV_WR_RDMA_WRITE, lmr, lbuf, 32, (uintptr_t)buf + 110, mr->rkey) == IBV_WC_SUCCESS &&
		      !memcmp(buf + 110, lbuf, 32) && buf[109] == 'p' && buf[142] == 'p',
	      "forkcopy: RDMA WRITE after the fork lands in the parent's memory");
	check(ibv_dereg_mr(mr) == 0 && ibv_dereg_mr(lmr) == 0, "forkcopy: ibv_dereg_mr after the fork");
	free(buf);
	free(lbuf);
	pair_close(&a, &b);
	side_free(&a);
	side_free(&b);
}
