/* SPDX-License-Identifier: BSD-2-Clause */
/* Protection domains and memory regions over memory the application
 * allocated itself.
 *
 * rnicd must read and write exactly the application's bytes, zero-copy.
 * The design (see MEMORY.md for the trade-offs): one sparse memfd, the
 * arena, per process, as large as the address space and sealed against
 * shrinking. File offset = virtual address: the page at address A lives
 * at offset A of the arena. Registering [addr, addr+len) moves every page
 * of the range that is not on the arena yet: its contents are copied into
 * the arena at the same offset and the arena page is mapped MAP_SHARED |
 * MAP_FIXED over the original, with the original's protection. Pages
 * already moved (an overlapping MR, a re-registration) are left alone, so
 * MRs over the same pages share them. The daemon maps the window of the
 * arena that covers the MR (REG_MR_WINDOW) and registers it at the
 * application's addresses. Because offset = address, an MR is always one
 * contiguous window, whatever its history. */
#include "rnic.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>

static pthread_mutex_t arena_mu = PTHREAD_MUTEX_INITIALIZER;
static int arena_fd = -1;
static ino_t arena_ino;
static pid_t arena_pid; /* the process the arena belongs to */
static off_t arena_size;
int rnic_fork_safe;

#define ARENA_NAME "rnic-arena"

static void read_fork_env(void);

static int arena_open(void)
{
	struct rlimit rl;
	struct stat st;
	int fd;
	if (arena_fd >= 0 && arena_pid == getpid())
		return 0;
	if (arena_fd >= 0) {
		/* A child of fork(): the parent's arena is the parent's (its
		 * pages at the same offsets would be overwritten by ours).
		 * The child gets one of its own; pages it inherited on the
		 * parent's arena count as not moved, so registering them
		 * moves them onto the child's arena and unshares them. */
		close(arena_fd);
		arena_fd = -1;
	}
	read_fork_env();
	fd = memfd_create(ARENA_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return errno;
	/* The whole user address space (57 bits with 5-level paging, else
	 * 47): sparse, so only moved pages take memory. Never past
	 * RLIMIT_FSIZE, which would raise SIGXFSZ; pages above the size
	 * cannot be registered (share_range). */
	arena_size = (off_t)1 << 57;
	if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && (off_t)rl.rlim_cur < arena_size)
		arena_size = (off_t)rl.rlim_cur & ~(off_t)0xfff;
	if (ftruncate(fd, arena_size) < 0 && (arena_size = (off_t)1 << 47, ftruncate(fd, arena_size) < 0))
		goto fail;
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) < 0 || fstat(fd, &st) < 0)
		goto fail;
	arena_fd = fd;
	arena_ino = st.st_ino;
	arena_pid = getpid();
	return 0;
fail:;
	int err = errno;
	close(fd);
	return err;
}

/* copy_pages copies whole pages, including bytes the program never
 * allocated or already freed: under AddressSanitizer those are poisoned,
 * and this copy is not the program's access to them. Word by word, so
 * that no (intercepted) memcpy is called. */
#ifdef __clang__
/* clang keeps the volatile loads as loads: no memcpy to keep it from */
#define RNIC_NO_MEMCPY_LOOP
#else
#define RNIC_NO_MEMCPY_LOOP __attribute__((optimize("no-tree-loop-distribute-patterns")))
#endif
__attribute__((no_sanitize_address)) RNIC_NO_MEMCPY_LOOP
static void copy_pages(void *dst, const void *src, size_t n)
{
	uint64_t *d = dst;
	const volatile uint64_t *s = src;
	for (size_t i = 0; i < n / sizeof(*d); i++)
		d[i] = s[i];
}

/* move_pages puts [s, s+n) on the arena, keeping contents and prot. */
static int move_pages(uintptr_t s, size_t n, int prot)
{
	void *tmp;
	if (!(prot & PROT_READ))
		return EFAULT; /* the NIC could not read it either */
	tmp = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, arena_fd, (off_t)s);
	if (tmp == MAP_FAILED)
		return errno;
	copy_pages(tmp, (void *)s, n);
	/* Between the copy and the remap a write by another thread to these
	 * pages is lost: registering memory that is being written is a race
	 * in the application with any NIC. */
	if (mmap((void *)s, n, prot, MAP_SHARED | MAP_FIXED, arena_fd, (off_t)s) == MAP_FAILED) {
		int err = errno;
		munmap(tmp, n);
		return err;
	}
	munmap(tmp, n);
	if (rnic_fork_safe)
		madvise((void *)s, n, MADV_DONTFORK);
	return 0;
}

/* A line of /proc/self/maps. */
struct vma {
	uintptr_t start, end;
	uint64_t off;
	int prot, shared;
	unsigned long ino;
};

static int parse_vma(const char *line, struct vma *v)
{
	char perms[5];
	unsigned long start, end, off, ino;
	unsigned maj, min;
	if (sscanf(line, "%lx-%lx %4s %lx %x:%x %lu", &start, &end, perms, &off, &maj, &min, &ino) != 7)
		return 0;
	v->start = start, v->end = end, v->off = off, v->ino = ino;
	v->prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
		  (perms[2] == 'x' ? PROT_EXEC : 0);
	v->shared = perms[3] == 's';
	return 1;
}

static char *read_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "re");
	size_t cap = 1 << 16, n = 0;
	char *b = malloc(cap);
	if (!f || !b) {
		if (f)
			fclose(f);
		free(b);
		return NULL;
	}
	for (;;) {
		size_t k = fread(b + n, 1, cap - n - 1, f);
		n += k;
		if (k == 0)
			break;
		if (n + 1 == cap) {
			char *nb = realloc(b, cap *= 2);
			if (!nb) {
				free(b);
				fclose(f);
				return NULL;
			}
			b = nb;
		}
	}
	b[n] = 0;
	fclose(f);
	return b;
}

/* privatize makes [s, s+n), readable arena pages, private anonymous
 * memory with the same contents and prot: a copy moved over them. */
static int privatize(uintptr_t s, size_t n, int prot)
{
	void *tmp = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (tmp == MAP_FAILED)
		return errno;
	copy_pages(tmp, (void *)s, n);
	if (mprotect(tmp, n, prot) != 0 || mremap(tmp, n, n, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)s) == MAP_FAILED) {
		int err = errno;
		munmap(tmp, n);
		return err;
	}
	return 0;
}

/* evict_displaced: an arena mapping that mremap moved (glibc's realloc of
 * a large block does) still shows the file at its old address's offsets.
 * Before pages are moved onto [a, b) of the file, any such mapping of
 * those offsets becomes private memory, or the move would change it. */
static int evict_displaced(uintptr_t a, uintptr_t b)
{
	char *maps = read_maps(), *line, *save = NULL;
	struct vma v;
	int err = 0;
	if (!maps)
		return ENOMEM;
	for (line = strtok_r(maps, "\n", &save); line && !err; line = strtok_r(NULL, "\n", &save)) {
		if (!parse_vma(line, &v) || v.ino != arena_ino || v.off == v.start || !strstr(line, "/memfd:" ARENA_NAME))
			continue;
		if (v.off < b && v.off + (v.end - v.start) > a)
			err = privatize(v.start, v.end - v.start, v.prot);
	}
	free(maps);
	return err;
}

/* share_range moves the pages of [a, b) (page-aligned) onto the arena;
 * EFAULT if part of it is not mapped. Caller holds arena_mu. */
static int share_range(uintptr_t a, uintptr_t b)
{
	char *maps = read_maps(), *line, *save = NULL;
	uintptr_t at = a;
	int err = 0;
	struct vma v;

	if (!maps)
		return ENOMEM;
	if (b > (uintptr_t)arena_size) {
		free(maps);
		return EFAULT; /* beyond the arena (RLIMIT_FSIZE) */
	}
	if ((err = evict_displaced(a, b))) {
		free(maps);
		return err;
	}
	for (line = strtok_r(maps, "\n", &save); line && at < b && !err; line = strtok_r(NULL, "\n", &save)) {
		if (!parse_vma(line, &v) || v.end <= at)
			continue;
		if (v.start > at) {
			err = EFAULT; /* a hole */
			break;
		}
		uintptr_t e = v.end < b ? v.end : b;
		int ours = strstr(line, "/memfd:" ARENA_NAME) != NULL; /* this library's doing */
		int moved = ours && v.ino == arena_ino && v.off == v.start;
		if (!moved && v.shared && !ours) /* a parent's arena is ours to move away from */
			err = EOPNOTSUPP; /* see MEMORY.md: shared mappings stay where they are */
		else if (!moved)
			err = move_pages(at, e - at, v.prot);
		at = e;
	}
	if (!err && at < b)
		err = EFAULT;
	free(maps);
	return err;
}

/* After fork() the child would share the arena's pages with its parent
 * (they are MAP_SHARED): its writes to its copy of the heap would land in
 * the parent's memory, and the parent's in the child's. The child
 * therefore replaces each of them with a private copy, as a kernel that
 * handles fork for pinned pages copies them: the copy must hold the
 * pages as they were at the fork, and the parent goes on writing to them
 * as soon as fork returns (a forked Python child found its heap changing
 * under it and crashed), so the parent waits in its fork handler until
 * the child has copied (fork_gate). It reads /proc/self/maps with plain
 * system calls and static storage (the child of a threaded parent must
 * not rely on locks another thread held). */
enum { CHILD_BATCH = 1024 };
static struct {
	uintptr_t start, end;
	int prot;
} child_vmas[CHILD_BATCH];
static char child_buf[1 << 16];

/* fork_gate: a pipe from the child to its parent, open across one fork:
 * the child closes its write end once its pages are its own, and the
 * parent reads until then. -1 when there is no arena, or no pipe. */
static int fork_gate[2] = {-1, -1};

/* collect_shared_arena fills child_vmas with the arena's shared mappings
 * at their own offsets; it returns how many. */
static int collect_shared_arena(void)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC), n = 0;
	size_t have = 0;
	ssize_t k;
	if (fd < 0)
		return 0;
	while (n < CHILD_BATCH && (k = read(fd, child_buf + have, sizeof(child_buf) - 1 - have)) > 0) {
		char *line = child_buf, *nl;
		struct vma v;
		have += (size_t)k;
		child_buf[have] = 0;
		while (n < CHILD_BATCH && (nl = strchr(line, '\n'))) {
			*nl = 0;
			if (parse_vma(line, &v) && v.shared && v.ino == arena_ino && v.off == v.start &&
			    strstr(line, "/memfd:" ARENA_NAME))
				child_vmas[n].start = v.start, child_vmas[n].end = v.end, child_vmas[n++].prot = v.prot;
			line = nl + 1;
		}
		have = strlen(line);
		memmove(child_buf, line, have);
	}
	close(fd);
	return n;
}

/* copy_for_child makes [start, end) the child's own (privatize); a range
 * it cannot read is mapped privately from the arena instead
 * (copy-on-write of the file: the parent's later writes show through
 * until the child writes a page). It reports whether the range is no
 * longer a shared mapping of the arena. */
static int copy_for_child(uintptr_t start, uintptr_t end, int prot)
{
	size_t len = end - start;
	if ((prot & PROT_READ) && privatize(start, len, prot) == 0)
		return 1;
	return mmap((void *)start, len, prot, MAP_PRIVATE | MAP_FIXED, arena_fd, (off_t)start) != MAP_FAILED;
}

static void before_fork(void)
{
	if (arena_fd >= 0 && arena_pid == getpid() && pipe2(fork_gate, O_CLOEXEC) != 0)
		fork_gate[0] = fork_gate[1] = -1;
}

static void privatize_in_child(void)
{
	int n;
	if (arena_fd >= 0) {
		do {
			n = collect_shared_arena();
			for (int i = 0; i < n; i++)
				if (!copy_for_child(child_vmas[i].start, child_vmas[i].end, child_vmas[i].prot))
					n = 0; /* leave the rest shared rather than loop */
		} while (n == CHILD_BATCH);
	}
	if (fork_gate[0] >= 0) {
		close(fork_gate[0]);
		close(fork_gate[1]); /* the parent's read ends */
		fork_gate[0] = fork_gate[1] = -1;
	}
}

/* after_fork_parent waits until the child has copied its pages (or died):
 * the read ends when the child closes the write end. */
static void after_fork_parent(void)
{
	char b;
	if (fork_gate[0] < 0)
		return;
	close(fork_gate[1]);
	while (read(fork_gate[0], &b, 1) < 0 && errno == EINTR)
		;
	close(fork_gate[0]);
	fork_gate[0] = fork_gate[1] = -1;
}

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void register_atfork(void)
{
	/* If this fails the child shares the pages (MEMORY.md). */
	(void)pthread_atfork(before_fork, after_fork_parent, privatize_in_child);
}

int rnic_arena_share(void *addr, size_t len, int *fd)
{
	long pg = sysconf(_SC_PAGESIZE);
	uintptr_t a = (uintptr_t)addr & ~(uintptr_t)(pg - 1);
	uintptr_t b = ((uintptr_t)addr + len + (uintptr_t)pg - 1) & ~(uintptr_t)(pg - 1);
	int err;
	pthread_once(&atfork_once, register_atfork);
	pthread_mutex_lock(&arena_mu);
	err = arena_open();
	if (!err)
		err = share_range(a, b);
	*fd = arena_fd;
	pthread_mutex_unlock(&arena_mu);
	return err;
}

RNIC_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct rnic_context *c = to_rctx(context);
	struct rnic_reply rep;
	struct rnic_pd *p;
	struct wbuf w;
	struct rbuf r;
	int err;

	w_init(&w);
	if ((err = ctx_call(c, RNICD_OP_ALLOC_PD, &w, NULL, 0, &rep)))
		return errno = err, NULL;
	rnic_close_fds(rep.fds, rep.nfds);
	p = calloc(1, sizeof(*p));
	r_init(&r, rep.body, rep.len);
	if (p)
		p->h = r_u32(&r);
	if (!p || r_done(&r)) {
		free(p);
		return errno = p ? EPROTO : ENOMEM, NULL;
	}
	p->pd.context = context;
	p->pd.handle = p->h;
	return &p->pd;
}

/* rnic_handle_call makes request op whose body is handle h alone (the
 * destroy ops, ARM_CQ) and expects an empty reply. */
int rnic_handle_call(struct rnic_context *c, uint16_t op, uint32_t h)
{
	struct rnic_reply rep;
	struct wbuf w;
	int err;
	w_init(&w);
	w_u32(&w, h);
	err = ctx_call(c, op, &w, NULL, 0, &rep);
	if (!err)
		rnic_close_fds(rep.fds, rep.nfds);
	return err;
}

RNIC_EXPORT int ibv_dealloc_pd(struct ibv_pd *pd)
{
	struct rnic_pd *p = to_rpd(pd);
	int err = rnic_handle_call(to_rctx(pd->context), RNICD_OP_DEALLOC_PD, p->h);
	if (err && err != EIO)
		return err;
	free(p);
	return 0;
}

/* reg registers [addr, addr+len) at iova into m. */
static int reg(struct rnic_mr *m, struct ibv_pd *pd, void *addr, size_t len, uint64_t iova, unsigned access)
{
	struct rnic_context *c = to_rctx(pd->context);
	struct rnic_reply rep;
	struct wbuf w;
	struct rbuf r;
	int err, fd;

	if (len == 0 || (uintptr_t)addr + len < (uintptr_t)addr)
		return EINVAL;
	if ((err = rnic_arena_share(addr, len, &fd)))
		return err;
	w_init(&w);
	w_u32(&w, (to_rpd(pd))->h);
	w_u32(&w, access & ~(unsigned)IBV_ACCESS_OPTIONAL_RANGE);
	w_u64(&w, (uintptr_t)addr); /* the arena offset is the address */
	w_u64(&w, len);
	w_u64(&w, iova);
	if ((err = ctx_call(c, RNICD_OP_REG_MR_WINDOW, &w, &fd, 1, &rep)))
		return err;
	rnic_close_fds(rep.fds, rep.nfds);
	r_init(&r, rep.body, rep.len);
	m->h = r_u32(&r);
	m->mr.lkey = r_u32(&r);
	m->mr.rkey = r_u32(&r);
	r_u64(&r), r_u64(&r);
	if ((err = r_done(&r)))
		return err;
	m->mr.context = pd->context;
	m->mr.pd = pd;
	m->mr.addr = addr;
	m->mr.length = len;
	m->mr.handle = m->h;
	m->access = access;
	return 0;
}

RNIC_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
					    unsigned int access)
{
	struct rnic_mr *m = calloc(1, sizeof(*m));
	int err;
	if (!m)
		return errno = ENOMEM, NULL;
	if ((err = reg(m, pd, addr, length, iova, access))) {
		free(m);
		return errno = err, NULL;
	}
	return &m->mr;
}

#undef ibv_reg_mr
RNIC_EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, (uintptr_t)addr, (unsigned)access);
}

#undef ibv_reg_mr_iova
RNIC_EXPORT struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
					   int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, iova, (unsigned)access);
}

/* dofork_after_dereg: with registered pages MADV_DONTFORK (see
 * ibv_fork_init), a deregistered MR's pages go to a child of fork again,
 * as the real library's dereg gives them back (ibv_dofork_range): left
 * MADV_DONTFORK, the heap pages a program reuses after it freed the
 * buffer were missing in every child. A page another MR still covers goes
 * too: the child gets its own copy of it (privatize_in_child). */
static void dofork_after_dereg(void *addr, size_t len)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), a = (uintptr_t)addr & ~(page - 1);
	if (!rnic_fork_safe || !len)
		return;
	madvise((void *)a, ((uintptr_t)addr + len + page - 1) / page * page - a, MADV_DOFORK);
}

RNIC_EXPORT int ibv_dereg_mr(struct ibv_mr *mr)
{
	struct rnic_mr *m = to_rmr(mr);
	int err = rnic_handle_call(to_rctx(mr->context), RNICD_OP_DEREG_MR, m->h);
	if (err && err != EIO)
		return err;
	/* The pages stay on the arena: the application still uses them,
	 * and another MR may cover them. */
	dofork_after_dereg(mr->addr, mr->length);
	free(m);
	return 0;
}

/* Fork. The atfork handlers above give a child its own copy of the
 * registered pages as they were at the fork: what a kernel that copies
 * pinned pages on fork does (Linux 5.13 on, rxe's kernels included). On
 * such a kernel rdma-core's ibv_fork_init does nothing and
 * ibv_is_fork_initialized says IBV_FORK_UNNEEDED, whatever was called;
 * only RDMAV_USE_MADVISE brings back the old way, registered pages
 * MADV_DONTFORK (a child does not get them at all). So here. Marking them
 * whenever a program asked for fork support left every later child
 * without the heap pages that small MRs share with malloc: rdma-core's
 * test_fork calls ibv_fork_init, and the Python players its later tests
 * fork died on their first touch of an object there. */
static int env_on(const char *name)
{
	const char *e = getenv(name);
	return e && strcmp(e, "0") != 0; /* rdma-core's reading */
}

RNIC_EXPORT int ibv_fork_init(void)
{
	if (env_on("RDMAV_USE_MADVISE"))
		rnic_fork_safe = 1;
	return 0;
}

/* read_fork_env: RDMAV_FORK_SAFE (or IBV_FORK_SAFE) asks for
 * ibv_fork_init, as rdma-core reads them when it starts. */
static void read_fork_env(void)
{
	if (getenv("RDMAV_FORK_SAFE") || getenv("IBV_FORK_SAFE"))
		ibv_fork_init();
}

RNIC_EXPORT enum ibv_fork_status ibv_is_fork_initialized(void)
{
	return IBV_FORK_UNNEEDED;
}

RNIC_EXPORT int ibv_dontfork_range(void *base, size_t size)
{
	if (!rnic_fork_safe)
		return 0;
	return madvise(base, size, MADV_DONTFORK) ? errno : 0;
}

RNIC_EXPORT int ibv_dofork_range(void *base, size_t size)
{
	if (!rnic_fork_safe)
		return 0;
	return madvise(base, size, MADV_DOFORK) ? errno : 0;
}
