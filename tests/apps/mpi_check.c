/* SPDX-License-Identifier: MIT */
/*
 * An MPI job that checks what it moves, for tests/apps/mpi.sh: every rank contributes a vector
 * to an MPI_Allreduce (sum) and checks the result element by element; then each rank sends a
 * 1 MiB patterned buffer to the next rank around a ring and checks the one it receives from the
 * previous rank; then a broadcast from the last rank. Rank 0 prints one line when every rank
 * passed; a mismatch prints where and aborts the job (non-zero exit).
 * Built by the test with the MPI's own compiler wrapper (mpicc.openmpi, mpicc.mpich).
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define VEC_LEN (1 << 16)	   /* 512 KiB of int64 per rank */
#define RING_BYTES (1 << 20)

static int64_t *vec_alloc(void)
{
	int64_t *v = malloc(VEC_LEN * sizeof(*v));

	if (!v) {
		fprintf(stderr, "mpi_check: out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	return v;
}

static void mismatch(int rank, const char *what, long at, long long got, long long want)
{
	fprintf(stderr, "mpi_check: rank %d: %s: element %ld is %lld, expected %lld\n", rank, what,
		at, got, want);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

static unsigned char pattern(int sender, long i)
{
	return (unsigned char)(sender * 131 + i * 7 + (i >> 8));
}

int main(int argc, char **argv)
{
	int rank, size;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);

	/* Allreduce: rank r gives r * 1000003 + i at i; the sum is known in closed form. */
	int64_t *in = vec_alloc(), *out = vec_alloc();

	for (long i = 0; i < VEC_LEN; i++)
		in[i] = (int64_t)rank * 1000003 + i;
	MPI_Allreduce(in, out, VEC_LEN, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
	for (long i = 0; i < VEC_LEN; i++) {
		int64_t want = (int64_t)size * (size - 1) / 2 * 1000003 + (int64_t)size * i;

		if (out[i] != want)
			mismatch(rank, "allreduce", i, out[i], want);
	}

	/* Ring: send to rank + 1, receive from rank - 1. */
	unsigned char *tx = malloc(RING_BYTES), *rx = malloc(RING_BYTES);
	int next = (rank + 1) % size, prev = (rank + size - 1) % size;

	if (!tx || !rx) {
		fprintf(stderr, "mpi_check: out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	for (long i = 0; i < RING_BYTES; i++)
		tx[i] = pattern(rank, i);
	MPI_Sendrecv(tx, RING_BYTES, MPI_BYTE, next, 7, rx, RING_BYTES, MPI_BYTE, prev, 7,
		     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	for (long i = 0; i < RING_BYTES; i++)
		if (rx[i] != pattern(prev, i))
			mismatch(rank, "ring", i, rx[i], pattern(prev, i));

	/* Broadcast of the last rank's buffer. */
	if (rank == size - 1)
		for (long i = 0; i < VEC_LEN; i++)
			in[i] = -(int64_t)i * 3;
	MPI_Bcast(in, VEC_LEN, MPI_INT64_T, size - 1, MPI_COMM_WORLD);
	for (long i = 0; i < VEC_LEN; i++)
		if (in[i] != -(int64_t)i * 3)
			mismatch(rank, "bcast", i, in[i], -(long long)i * 3);

	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0)
		printf("mpi_check: %d ranks: allreduce, ring and bcast ok\n", size);
	free(in);
	free(out);
	free(tx);
	free(rx);
	MPI_Finalize();
	return 0;
}
