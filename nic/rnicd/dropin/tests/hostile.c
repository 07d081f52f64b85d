/* SPDX-License-Identifier: BSD-2-Clause */
/* corners hostile: a client that does to the descriptors its library got
 * from the daemon what any program may do to its own descriptors: it
 * empties the ones it can read, fills the ones it can write, makes every
 * one blocking (F_SETFL without O_NONBLOCK), fills its completion
 * channel's fd as one fills an eventfd, and then never reads it while its
 * armed CQ fires again and again. It ends with _exit, holding a
 * registered MR, as a crashing program would. What it checks is only that
 * its own RDMA WRITEs still complete; the test driving it checks the
 * daemon: another program served meanwhile, this one reaped (its MR
 * unmapped), and SIGTERM still ending the daemon. */
#include "corners.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* HOSTILE_MR is the memory registered and left to the reaper. */
#define HOSTILE_MR (4 << 20)
/* FIRES is how many times the CQ fires unread: more than a socket's
 * worth of one-byte sends. */
#define FIRES 600

/* an eventfd's largest count: a write of it makes the next write wait */
static const uint64_t eventfd_full = 0xfffffffffffffffeULL;

/* kind_of names what fd is: "eventfd", "stream", or NULL for what the
 * hostile leaves alone (its control socket, epoll sets, files). */
static const char *kind_of(int fd)
{
	char path[64], target[64];
	int type;
	socklen_t len = sizeof(type);
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if ((n = readlink(path, target, sizeof(target) - 1)) < 0)
		return NULL;
	target[n] = 0;
	if (!strcmp(target, "anon_inode:[eventfd]"))
		return "eventfd";
	if (!strncmp(target, "socket:", 7) && !getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) &&
	    type == SOCK_STREAM)
		return "stream";
	return NULL;
}

/* abuse empties fd, fills it if it is a socket, and makes it blocking.
 * It works non-blocking itself, so as not to wait on what it abuses. */
static void abuse(int fd, const char *kind)
{
	char buf[4096];
	int fl;

	if ((fl = fcntl(fd, F_GETFL)) < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return;
	if (!strcmp(kind, "stream")) {
		while (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
			;
		for (int i = 0; i < 100000 && send(fd, buf, 8, MSG_DONTWAIT | MSG_NOSIGNAL) > 0; i++)
			;
	} else {
		while (read(fd, buf, 8) > 0)
			;
	}
	fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
}

/* abuse_all abuses every eventfd and stream socket open from fd from on;
 * it returns how many. */
static int abuse_all(int from)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		die("opendir /proc/self/fd");
	while ((e = readdir(d))) {
		int fd = atoi(e->d_name);
		const char *kind;
		if (fd < from || fd == dirfd(d) || !(kind = kind_of(fd)))
			continue;
		printf("  abusing fd %d (%s)\n", fd, kind);
		abuse(fd, kind);
		n++;
	}
	closedir(d);
	return n;
}

void test_hostile(const char *d0, const char *d1)
{
	struct side a = {0}, b = {0};
	struct ibv_comp_channel *ch;
	struct ibv_mr *amr, *bmr;
	char *abuf, *bbuf;
	int from, n, ok = 0, st = 0;

	setvbuf(stdout, NULL, _IOLBF, 0); /* a hang shows how far it got */
	signal(SIGPIPE, SIG_IGN); /* a daemon's end shut for writing is no reason to die */
	from = dup(0); /* the lowest descriptor free before the library's */
	close(from);
	a.ctx = open_named(d0);
	if (!(ch = ibv_create_comp_channel(a.ctx)))
		die("ibv_create_comp_channel");
	side_open(&a, d0, ch, NULL, NULL, 16, 16);
	side_open(&b, d1, NULL, NULL, NULL, 16, 16);
	connect_pair(&a, &b);
	if (!(abuf = aligned_alloc(PAGE, HOSTILE_MR)) || !(bbuf = aligned_alloc(PAGE, PAGE)))
		die("aligned_alloc");
	memset(abuf, 0x5a, HOSTILE_MR);
	amr = reg(a.pd, abuf, HOSTILE_MR, ALL_ACCESS);
	bmr = reg(b.pd, bbuf, PAGE, ALL_ACCESS);

	n = abuse_all(from);
	check(n > 0, "abused %d descriptors", n);
	if (write(ch->fd, &eventfd_full, sizeof(eventfd_full)) < 0) {
		/* the channel's fd need not be writable */
	}
	for (ok = 0; ok < FIRES; ok++) {
		if (ibv_req_notify_cq(a.cq, 0))
			die("ibv_req_notify_cq");
		if ((st = rdma(&a, IBV_WR_RDMA_WRITE, amr, abuf, 64, (uintptr_t)bbuf, bmr->rkey)) != IBV_WC_SUCCESS)
			break;
	}
	check(ok == FIRES, "%d of %d RDMA WRITEs completed with the channel never read (last status %d)", ok, FIRES, st);
	printf("hostile exits holding its MR\n");
	fflush(stdout);
	_exit(failures ? 1 : 0);
}
