/* SPDX-License-Identifier: BSD-2-Clause */
/* rsockets (rsocket.h) are not supported by rnic's librdmacm: every call
 * is exported, so programs linked against them load, and fails with
 * ENOSYS. */
#include "cm.h"

#include <rdma/rsocket.h>

#define NOSYS(ret) \
	do {       \
		errno = ENOSYS; \
		return ret; \
	} while (0)

CM_EXPORT int rsocket(int d, int t, int p) { (void)d, (void)t, (void)p; NOSYS(-1); }
CM_EXPORT int rbind(int s, const struct sockaddr *a, socklen_t l) { (void)s, (void)a, (void)l; NOSYS(-1); }
CM_EXPORT int rlisten(int s, int b) { (void)s, (void)b; NOSYS(-1); }
CM_EXPORT int raccept(int s, struct sockaddr *a, socklen_t *l) { (void)s, (void)a, (void)l; NOSYS(-1); }
CM_EXPORT int rconnect(int s, const struct sockaddr *a, socklen_t l) { (void)s, (void)a, (void)l; NOSYS(-1); }
CM_EXPORT int rshutdown(int s, int h) { (void)s, (void)h; NOSYS(-1); }
CM_EXPORT int rclose(int s) { (void)s; NOSYS(-1); }
CM_EXPORT ssize_t rrecv(int s, void *b, size_t n, int f) { (void)s, (void)b, (void)n, (void)f; NOSYS(-1); }
CM_EXPORT ssize_t rrecvfrom(int s, void *b, size_t n, int f, struct sockaddr *a, socklen_t *l)
{
	(void)s, (void)b, (void)n, (void)f, (void)a, (void)l;
	NOSYS(-1);
}
CM_EXPORT ssize_t rrecvmsg(int s, struct msghdr *m, int f) { (void)s, (void)m, (void)f; NOSYS(-1); }
CM_EXPORT ssize_t rsend(int s, const void *b, size_t n, int f) { (void)s, (void)b, (void)n, (void)f; NOSYS(-1); }
CM_EXPORT ssize_t rsendto(int s, const void *b, size_t n, int f, const struct sockaddr *a, socklen_t l)
{
	(void)s, (void)b, (void)n, (void)f, (void)a, (void)l;
	NOSYS(-1);
}
CM_EXPORT ssize_t rsendmsg(int s, const struct msghdr *m, int f) { (void)s, (void)m, (void)f; NOSYS(-1); }
CM_EXPORT ssize_t rread(int s, void *b, size_t n) { (void)s, (void)b, (void)n; NOSYS(-1); }
CM_EXPORT ssize_t rreadv(int s, const struct iovec *v, int n) { (void)s, (void)v, (void)n; NOSYS(-1); }
CM_EXPORT ssize_t rwrite(int s, const void *b, size_t n) { (void)s, (void)b, (void)n; NOSYS(-1); }
CM_EXPORT ssize_t rwritev(int s, const struct iovec *v, int n) { (void)s, (void)v, (void)n; NOSYS(-1); }
CM_EXPORT int rpoll(struct pollfd *f, nfds_t n, int t) { (void)f, (void)n, (void)t; NOSYS(-1); }
CM_EXPORT int rselect(int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *t)
{
	(void)n, (void)r, (void)w, (void)e, (void)t;
	NOSYS(-1);
}
CM_EXPORT int rgetpeername(int s, struct sockaddr *a, socklen_t *l) { (void)s, (void)a, (void)l; NOSYS(-1); }
CM_EXPORT int rgetsockname(int s, struct sockaddr *a, socklen_t *l) { (void)s, (void)a, (void)l; NOSYS(-1); }
CM_EXPORT int rsetsockopt(int s, int lv, int o, const void *v, socklen_t l)
{
	(void)s, (void)lv, (void)o, (void)v, (void)l;
	NOSYS(-1);
}
CM_EXPORT int rgetsockopt(int s, int lv, int o, void *v, socklen_t *l)
{
	(void)s, (void)lv, (void)o, (void)v, (void)l;
	NOSYS(-1);
}
CM_EXPORT int rfcntl(int s, int c, ...) { (void)s, (void)c; NOSYS(-1); }
CM_EXPORT off_t riomap(int s, void *b, size_t n, int p, int f, off_t o)
{
	(void)s, (void)b, (void)n, (void)p, (void)f, (void)o;
	NOSYS(-1);
}
CM_EXPORT int riounmap(int s, void *b, size_t n) { (void)s, (void)b, (void)n; NOSYS(-1); }
CM_EXPORT size_t riowrite(int s, const void *b, size_t n, off_t o, int f)
{
	(void)s, (void)b, (void)n, (void)o, (void)f;
	errno = ENOSYS;
	return 0;
}
