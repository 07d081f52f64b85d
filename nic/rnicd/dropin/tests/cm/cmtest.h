/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cmtest.h: what the rdma_cm test programs share: a check that prints "ok
 * ..." or "FAIL ..." and counts failures, a setup failure's exit (2),
 * a monotonic clock in milliseconds and an IPv4 address. Each program is
 * one translation unit that includes this once.
 */
#ifndef RNIC_CMTEST_H
#define RNIC_CMTEST_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/in.h>

static int failures;

__attribute__((format(printf, 2, 3))) static void check(int ok, const char *fmt, ...)
{
	va_list ap;
	printf("%s ", ok ? "ok" : "FAIL");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!ok)
		failures++;
}

__attribute__((format(printf, 1, 2), noreturn)) static void die(const char *fmt, ...)
{
	va_list ap;
	int e = errno;
	printf("SETUP FAILED: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf(" (errno %d: %s)\n", e, strerror(e));
	exit(2);
}

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct sockaddr_in addr(const char *ip, int port)
{
	struct sockaddr_in s = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	if (inet_pton(AF_INET, ip, &s.sin_addr) != 1)
		die("bad address %s", ip);
	return s;
}

#endif
