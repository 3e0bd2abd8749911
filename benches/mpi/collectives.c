/* The Open MPI side of `cargo bench --bench host_backend`: MPI_Allreduce,
 * MPI_Allgather, MPI_Reduce_scatter_block and MPI_Alltoall on floats, each at
 * nccl-tests' size SIZE (the larger buffer of one rank, as nccl-bench's `bytes`),
 * WARMUP untimed then ITERS timed calls. Each call is timed on its own and the
 * slowest rank's time kept (an MPI_Allreduce of the times after each call, which
 * also lines the ranks up for the next). Prints one line per collective:
 * `<name> <median us> <mean us>` (rank 0).
 * Usage: mpirun -np 2 collectives SIZE ITERS WARMUP */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    long size = argc > 1 ? atol(argv[1]) : 64L << 20;
    int iters = argc > 2 ? atoi(argv[2]) : 20;
    int warmup = argc > 3 ? atoi(argv[3]) : 3;
    long count = size / (long)sizeof(float);
    /* nccl-tests' per-rank part: count / n rounded down to 16-byte groups. */
    long part = count / n / 4 * 4;
    float *send = malloc(count * sizeof(float));
    float *recv = malloc(count * sizeof(float));
    double *t = malloc(iters * sizeof(double));
    for (long i = 0; i < count; i++) send[i] = (float)((i + rank) % 7);
    memset(recv, 0, count * sizeof(float));
    const char *names[] = {"all_reduce", "all_gather", "reduce_scatter", "alltoall"};
    for (int c = 0; c < 4; c++) {
        for (int i = -warmup; i < iters; i++) {
            double start = MPI_Wtime();
            switch (c) {
            case 0: MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
            case 1: MPI_Allgather(send, (int)part, MPI_FLOAT, recv, (int)part, MPI_FLOAT, MPI_COMM_WORLD); break;
            case 2: MPI_Reduce_scatter_block(send, recv, (int)part, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
            case 3: MPI_Alltoall(send, (int)part, MPI_FLOAT, recv, (int)part, MPI_FLOAT, MPI_COMM_WORLD); break;
            }
            double us = (MPI_Wtime() - start) * 1e6;
            /* The slowest rank's time: a collective ends when every rank has it. */
            double slowest;
            MPI_Allreduce(&us, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            if (i >= 0) t[i] = slowest;
        }
        double sum = 0;
        for (int i = 0; i < iters; i++) sum += t[i];
        qsort(t, iters, sizeof(double), by_value);
        double median = iters % 2 ? t[iters / 2] : (t[iters / 2 - 1] + t[iters / 2]) / 2;
        if (rank == 0) printf("%s %.3f %.3f\n", names[c], median, sum / iters);
    }
    free(send);
    free(recv);
    free(t);
    MPI_Finalize();
    return 0;
}
