/* SPDX-License-Identifier: BSD-2-Clause */
/* soak's command line. Without HOST it is the responder, waiting on
 * --port for one requester; with HOST the requester, which chooses every
 * parameter and tells the responder. */
#include "soak.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

/* usage prints the help, on stdout when asked for (--help, exit 0), else
 * on stderr (exit 2). */
static void usage(int code)
{
	fputs("usage: soak [-d DEV] [-g GID_INDEX] [-p PORT]                     (responder)\n"
	      "       soak [-d DEV] [-g GID_INDEX] [-p PORT] [-n OPS] [-q QPS] [-D DEPTH] [-c CREDITS]\n"
	      "            [-s MAX_SIZE] [-S SEED] [-w SECONDS] [-t ACK_TIMEOUT] HOST  (requester)\n"
	      "\n"
	      "A verifying RC soak: the requester issues OPS operations (default 20000), a seeded\n"
	      "random mix of RDMA WRITE, WRITE with immediate, READ, SEND, SEND with immediate,\n"
	      "fetch-and-add and compare-and-swap, over QPS RC QPs (16), DEPTH in flight on each (8),\n"
	      "of log-uniform random sizes from 0 to MAX_SIZE bytes (1048576), sometimes over several\n"
	      "SGEs; every byte is a pattern of (SEED, QP, sequence) checked where it lands, atomics\n"
	      "against a model of the remote word. CREDITS (4): receives the responder keeps posted\n"
	      "per QP. An operation or message without its completion for SECONDS (60) stops it\n"
	      "(the watchdog). ACK_TIMEOUT (17): the QPs' local ACK timeout, 4.096 us * 2^N (537 ms:\n"
	      "up to 128 MiB may wait in flight behind a slow or lossy link).\n"
	      "Exits 0 when every operation completed and checked, 1 on the first failure (named:\n"
	      "QP, operation, sequence), 2 on bad usage.\n",
	      code ? stderr : stdout);
	exit(code);
}

static unsigned long long number(const char *s, unsigned long long min, unsigned long long max)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);

	if (!*s || *end || v < min || v > max) {
		fprintf(stderr, "soak: %s is not a number from %llu to %llu\n", s, min, max);
		usage(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"ib-dev", required_argument, NULL, 'd'}, {"gid-idx", required_argument, NULL, 'g'},
		{"port", required_argument, NULL, 'p'},   {"ops", required_argument, NULL, 'n'},
		{"qps", required_argument, NULL, 'q'},    {"depth", required_argument, NULL, 'D'},
		{"credits", required_argument, NULL, 'c'}, {"max-size", required_argument, NULL, 's'},
		{"seed", required_argument, NULL, 'S'},   {"watchdog", required_argument, NULL, 'w'},
		{"ack-timeout", required_argument, NULL, 't'}, {"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct params p = {.ops = 20000, .seed = 1, .qps = 16, .depth = 8, .credits = 4, .max_size = 1 << 20,
			   .timeout = 60, .ack_timeout = 17};
	const char *dev = NULL, *port = "18600";
	int gid_index = 0, c;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((c = getopt_long(argc, argv, "d:g:p:n:q:D:c:s:S:w:t:h", opts, NULL)) != -1) {
		switch (c) {
		case 'd': dev = optarg; break;
		case 'g': gid_index = (int)number(optarg, 0, 1023); break;
		case 'p': port = optarg; break;
		case 'n': p.ops = number(optarg, 0, ~0ULL); break;
		case 'q': p.qps = (uint32_t)number(optarg, 1, 4096); break;
		case 'D': p.depth = (uint32_t)number(optarg, 1, 1024); break;
		case 'c': p.credits = (uint32_t)number(optarg, 1, 1024); break;
		case 's': p.max_size = (uint32_t)number(optarg, 0, 1U << 30); break;
		case 'S': p.seed = number(optarg, 0, ~0ULL); break;
		case 'w': p.timeout = (uint32_t)number(optarg, 1, 86400); break;
		case 't': p.ack_timeout = (uint8_t)number(optarg, 0, 31); break;
		case 'h': usage(0); break;
		default: usage(2);
		}
	}
	if (optind + 1 < argc)
		usage(2);
	if (optind == argc)
		return run_responder(dev, gid_index, port);
	return run_requester(&p, dev, gid_index, argv[optind], port);
}
