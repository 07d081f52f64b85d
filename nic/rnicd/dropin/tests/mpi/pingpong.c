/* SPDX-License-Identifier: BSD-2-Clause */
/* pingpong: an MPI ping-pong between ranks 0 and 1 whose every message is
 * checked, at sizes 1 B to 4 MiB (powers of two). Rank 0 sends a pattern
 * that depends on the size and the round; rank 1 checks it and answers
 * with its complement, which rank 0 checks in turn: a lost, stale or
 * truncated message fails the run. Rank 0 prints one line per size, then
 * the half round-trip latency at 8 B and the bandwidth at 4 MiB:
 *
 *	size 8 rounds 200 lat_us 12.34 bw_MBps 0.65
 *	...
 *	latency 8 B: 12.34 us
 *	bandwidth 4194304 B: 345.67 MB/s
 *	pingpong: ok, 23 sizes, 123456789 bytes checked
 *
 * It is a test program of rnic's drop-in tests (mpi_test.go), built with
 * mpicc and run by mpirun over UCX on rnic's NICs. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SIZE (4u << 20)
#define LAT_SIZE 8u

/* rounds: fewer round trips for the large sizes, so the whole run stays
 * short on a software NIC, enough for a stable figure. */
static int rounds(unsigned size)
{
	if (size >= (1u << 20))
		return 16;
	if (size >= (64u << 10))
		return 40;
	return 200;
}

/* pattern is byte i of round r at size n: every message differs from the
 * one before it at the same size, and from the same round at other sizes. */
static uint8_t pattern(unsigned n, int r, size_t i)
{
	return (uint8_t)(i * 131u + (unsigned)r * 17u + n * 7u + 1u);
}

static void fill(uint8_t *b, unsigned n, int r, uint8_t flip)
{
	for (size_t i = 0; i < n; i++)
		b[i] = pattern(n, r, i) ^ flip;
}

/* check aborts the job at the first byte that is not as sent. */
static void check(const uint8_t *b, unsigned n, int r, uint8_t flip, int rank)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t want = pattern(n, r, i) ^ flip;
		if (b[i] != want) {
			fprintf(stderr, "pingpong: rank %d: size %u round %d: byte %zu is %#x, want %#x\n", rank, n, r,
				i, b[i], want);
			MPI_Abort(MPI_COMM_WORLD, 3);
		}
	}
}

/* one_size runs the round trips of one size; rank 0 returns the seconds
 * they took. */
static double one_size(int rank, uint8_t *sbuf, uint8_t *rbuf, unsigned n, uint64_t *checked)
{
	int peer = 1 - rank, k = rounds(n);
	double t0;
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	for (int r = 0; r < k; r++) {
		if (rank == 0) {
			fill(sbuf, n, r, 0);
			MPI_Send(sbuf, (int)n, MPI_BYTE, peer, r, MPI_COMM_WORLD);
			MPI_Recv(rbuf, (int)n, MPI_BYTE, peer, r, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			check(rbuf, n, r, 0xFF, rank);
		} else {
			MPI_Recv(rbuf, (int)n, MPI_BYTE, peer, r, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			check(rbuf, n, r, 0, rank);
			fill(sbuf, n, r, 0xFF);
			MPI_Send(sbuf, (int)n, MPI_BYTE, peer, r, MPI_COMM_WORLD);
		}
		*checked += n;
	}
	return MPI_Wtime() - t0;
}

int main(int argc, char **argv)
{
	int rank, size, nsizes = 0;
	uint64_t checked = 0;
	double lat = 0, bw = 0;
	uint8_t *sbuf, *rbuf;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 2) {
		if (rank == 0)
			fprintf(stderr, "pingpong: needs exactly 2 ranks, got %d\n", size);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	sbuf = malloc(MAX_SIZE);
	rbuf = malloc(MAX_SIZE);
	if (!sbuf || !rbuf)
		MPI_Abort(MPI_COMM_WORLD, 2);
	for (unsigned n = 1; n <= MAX_SIZE; n *= 2, nsizes++) {
		double s = one_size(rank, sbuf, rbuf, n, &checked);
		double half_us = s / rounds(n) / 2 * 1e6;
		double mbps = 2.0 * n * rounds(n) / s / 1e6;
		if (rank != 0)
			continue;
		printf("size %u rounds %d lat_us %.2f bw_MBps %.2f\n", n, rounds(n), half_us, mbps);
		if (n == LAT_SIZE)
			lat = half_us;
		if (n == MAX_SIZE)
			bw = mbps;
	}
	if (rank == 0) {
		printf("latency %u B: %.2f us\n", LAT_SIZE, lat);
		printf("bandwidth %u B: %.2f MB/s\n", MAX_SIZE, bw);
		printf("pingpong: ok, %d sizes, %llu bytes checked\n", nsizes, (unsigned long long)checked * 2);
	}
	free(sbuf);
	free(rbuf);
	MPI_Finalize();
	return 0;
}
