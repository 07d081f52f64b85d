/* SPDX-License-Identifier: BSD-2-Clause */
/* corners fork: after ibv_fork_init(), a fork() and the child's exit leave
 * the parent's registered memory and its RDMA intact: a write the parent
 * makes after the fork is what the NIC reads (no copy-on-write page behind
 * the NIC's back), a remote write lands where the parent sees it. */
#include "corners.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

void test_fork(const char *d0, const char *d1)
{
	struct side a = {0}, b = {0};
	enum ibv_fork_status fs;
	char *buf, *lbuf;
	struct ibv_mr *mr, *lmr;
	int status = -1;
	pid_t pid;

	check(ibv_fork_init() == 0, "ibv_fork_init before any resource");
	fs = ibv_is_fork_initialized();
	check(fs == IBV_FORK_ENABLED || fs == IBV_FORK_UNNEEDED, "ibv_is_fork_initialized: enabled or unneeded (%d)",
	      fs);
	side_open(&a, d0, NULL, NULL, NULL, 16, 16);
	side_open(&b, d1, NULL, NULL, NULL, 16, 16);
	connect_pair(&a, &b);
	/* Registered memory is absent from the child (MADV_DONTFORK): only
	 * whole pages of their own, never the stack or static data. */
	if (posix_memalign((void **)&buf, PAGE, 2 * PAGE) || posix_memalign((void **)&lbuf, PAGE, PAGE))
		die("posix_memalign");
	memset(buf, 'a', 2 * PAGE);
	mr = reg(b.pd, buf, 2 * PAGE, ALL_ACCESS);
	lmr = reg(a.pd, lbuf, PAGE, ALL_ACCESS);

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0)
		exit(0); /* exit, not _exit: the library's exit handlers run in the child */
	waitpid(pid, &status, 0);
	check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child exits cleanly");

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
	free(buf);
	free(lbuf);
	pair_close(&a, &b);
	side_free(&a);
	side_free(&b);
}

/* corners forkcopy: without ibv_fork_init, a child of fork() gets its
 * registered pages as they were at the fork, and its own from then on: the
 * parent writing them right after fork() returns (a Python parent starts
 * its next child; malloc's bookkeeping shares the page with a small MR)
 * changes nothing the child sees, the child's writes stay its own, and
 * the parent's RDMA still lands in the parent's memory. */
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
