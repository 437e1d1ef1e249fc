/*
 * shm_scale_check: many ranks of one host over the shared segment whose queues are opened
 * lazily from per-rank pools (src/transport/shm.c). Every rank runs
 *   - all-reduces (int64 sum) of a few sizes, from one element to past the largest queue, so
 *     the ring and tree algorithms open their queues and large ones wrap them;
 *   - an all-to-all of 16 KiB per peer, so every rank opens a queue to every other and its
 *     pool runs down to the smallest queues (the fall-back must still move every byte);
 *   - the all-reduce again, over the queues opened by now.
 * and checks every element against the value computed here from the rank count (each rank's
 * input is a function of its rank and the index). Prints "shm_scale_check: n=N ok" on rank 0.
 *
 *   tutti-run -n 48 shm_scale_check [--init-may-fail]
 *
 * --init-may-fail: a failed init prints "shm_scale_check: rank R: init refused: SENTENCE" and
 * exits 0, so that tutti-run lets every rank report (shm_small_check.sh counts them).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tutti.h"

static int fail(tutti_comm_t comm, int rank, const char *what) {
  fprintf(stderr, "shm_scale_check: rank %d: %s: %s\n", rank, what,
          comm ? tutti_comm_last_error(comm) : tutti_last_init_error());
  return 1;
}

/* Element i of rank r's all-reduce input, and the sum over n ranks. */
static int64_t input(int r, size_t i) { return (int64_t)(r + 1) * (int64_t)(i % 1009 + 1); }
static int64_t sum(int n, size_t i) { return (int64_t)n * (n + 1) / 2 * (int64_t)(i % 1009 + 1); }

static int allreduces(tutti_comm_t comm, int rank, int n) {
  static const size_t counts[] = {1, 1000, 300007};
  for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
    size_t count = counts[c];
    int64_t *in = malloc(count * sizeof *in), *out = malloc(count * sizeof *out);
    if (!in || !out) return fail(comm, rank, "out of memory");
    for (size_t i = 0; i < count; i++) in[i] = input(rank, i);
    if (tutti_allreduce(in, out, count, TUTTI_INT64, TUTTI_SUM, comm) != TUTTI_SUCCESS)
      return fail(comm, rank, "allreduce");
    for (size_t i = 0; i < count; i++)
      if (out[i] != sum(n, i)) {
        fprintf(stderr, "shm_scale_check: rank %d: allreduce of %zu: element %zu is %lld, not "
                "%lld\n", rank, count, i, (long long)out[i], (long long)sum(n, i));
        return 1;
      }
    free(in);
    free(out);
  }
  return 0;
}

/* Byte k of the block rank `from` sends rank `to`. */
static uint8_t block_byte(int from, int to, size_t k) {
  return (uint8_t)(from * 131 + to * 7 + k * 13 + (k >> 8));
}

static int alltoall(tutti_comm_t comm, int rank, int n) {
  const size_t per = 16384;
  uint8_t *in = malloc(per * (size_t)n), *out = malloc(per * (size_t)n);
  if (!in || !out) return fail(comm, rank, "out of memory");
  for (int to = 0; to < n; to++)
    for (size_t k = 0; k < per; k++) in[(size_t)to * per + k] = block_byte(rank, to, k);
  if (tutti_alltoall(in, out, per, TUTTI_UINT8, comm) != TUTTI_SUCCESS)
    return fail(comm, rank, "alltoall");
  for (int from = 0; from < n; from++)
    for (size_t k = 0; k < per; k++)
      if (out[(size_t)from * per + k] != block_byte(from, rank, k)) {
        fprintf(stderr, "shm_scale_check: rank %d: alltoall: byte %zu from rank %d is wrong\n",
                rank, k, from);
        return 1;
      }
  free(in);
  free(out);
  return 0;
}

int main(int argc, char **argv) {
  tutti_comm_t comm = NULL;
  int rank = -1, n = 0;
  if (tutti_comm_init_env(&comm) != TUTTI_SUCCESS) {
    if (argc > 1 && strcmp(argv[1], "--init-may-fail") == 0) {
      const char *r = getenv("TUTTI_RANK");
      printf("shm_scale_check: rank %s: init refused: %s\n", r ? r : "?", tutti_last_init_error());
      return 0;
    }
    return fail(NULL, rank, "init");
  }
  tutti_comm_rank(comm, &rank);
  tutti_comm_size(comm, &n);
  if (allreduces(comm, rank, n) || alltoall(comm, rank, n) || allreduces(comm, rank, n))
    return 1;
  tutti_comm_destroy(comm);
  if (rank == 0) printf("shm_scale_check: n=%d ok\n", n);
  return 0;
}
