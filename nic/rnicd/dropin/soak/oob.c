/* SPDX-License-Identifier: BSD-2-Clause */
/* The out-of-band exchange: lines of text over one TCP connection, so the
 * two sides may be different hosts, byte orders or builds. */
#include "soak.h"

#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

void die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("soak: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* oob_listen accepts one connection on port (any address) and returns it. */
int oob_listen(const char *port)
{
	struct addrinfo hints = {.ai_family = AF_INET6, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *ai;
	int one = 1, zero = 0, ls, fd, err;

	if ((err = getaddrinfo(NULL, port, &hints, &ai)))
		die("port %s: %s", port, gai_strerror(err));
	if ((ls = socket(ai->ai_family, ai->ai_socktype, 0)) < 0)
		die("socket: %s", strerror(errno));
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(ls, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero)); /* IPv4 too */
	if (bind(ls, ai->ai_addr, ai->ai_addrlen) || listen(ls, 1))
		die("listening on port %s: %s", port, strerror(errno));
	freeaddrinfo(ai);
	printf("soak: listening on port %s\n", port);
	fflush(stdout);
	if ((fd = accept(ls, NULL, NULL)) < 0)
		die("accept: %s", strerror(errno));
	close(ls);
	return fd;
}

/* oob_connect connects to host:port, trying for a few seconds while the
 * responder is not yet listening. */
int oob_connect(const char *host, const char *port)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai, *a;
	int fd = -1, err;

	if ((err = getaddrinfo(host, port, &hints, &ai)))
		die("%s:%s: %s", host, port, gai_strerror(err));
	for (int tries = 0; fd < 0 && tries < 100; tries++) {
		for (a = ai; a && fd < 0; a = a->ai_next) {
			if ((fd = socket(a->ai_family, a->ai_socktype, 0)) < 0)
				continue;
			if (connect(fd, a->ai_addr, a->ai_addrlen)) {
				err = errno;
				close(fd);
				fd = -1;
			}
		}
		if (fd < 0)
			usleep(100 * 1000);
	}
	freeaddrinfo(ai);
	if (fd < 0)
		die("connecting to %s:%s: %s", host, port, strerror(err));
	return fd;
}

void oob_send(FILE *f, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	if (fflush(f))
		die("out-of-band send: %s", strerror(errno));
}

void oob_recv(FILE *f, char *buf, size_t size)
{
	if (!fgets(buf, (int)size, f))
		die("the other side closed the out-of-band connection");
	buf[strcspn(buf, "\n")] = 0;
}
