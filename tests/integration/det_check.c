/*
 * det_check: TUTTI_DETERMINISTIC=1 makes every reduction fold the ranks in rank order,
 * ((x0 op x1) op x2) ... element by element. Each rank regenerates every rank's random float
 * inputs and computes that fold itself, in the dtype's own arithmetic, and all-reduce (out of
 * place and in place), reduce-scatter and reduce must equal it bit for bit. ctest runs it
 * with different TUTTI_ALGO and TUTTI_CHUNK_SIZE values: all equal to the same reference means
 * bitwise equal across algorithms, sizes and chunkings.
 *
 *   tutti-run -n 5 det_check            every result equals the rank-order fold
 *   tutti-run -n 5 det_check --differs  (without TUTTI_DETERMINISTIC) some result differs,
 *                                       which shows the comparison can fail
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tutti.h"

static tutti_comm_t comm;
static int rank, nranks;

static void check_call(tutti_result_t rc, const char *what) {
  if (rc == TUTTI_SUCCESS) return;
  fprintf(stderr, "det_check rank %d: %s returned %s: %s\n", rank, what,
          tutti_result_string(rc), comm ? tutti_comm_last_error(comm) : "");
  exit(1);
}

static uint64_t mix(uint64_t seed, int r, size_t i) {
  uint64_t x = seed ^ ((uint64_t)r << 48) ^ (uint64_t)i * 0x9E3779B97F4A7C15ull;
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/* Uniform in [-1, 1), with all 53 (or 24) bits of the mantissa in play. */
static double input(uint64_t seed, int r, size_t i) {
  return (double)(mix(seed, r, i) >> 11) * 0x1p-52 - 1.0;
}

static void fill(tutti_dtype_t dt, uint64_t seed, int r, size_t first, size_t n, void *buf) {
  for (size_t i = 0; i < n; i++) {
    if (dt == TUTTI_FLOAT32)
      ((float *)buf)[i] = (float)input(seed, r, first + i);
    else
      ((double *)buf)[i] = input(seed, r, first + i);
  }
}

/* The rank-order fold of element i in the dtype's arithmetic. */
static void expect(tutti_dtype_t dt, tutti_op_t op, uint64_t seed, size_t i, void *out) {
  if (dt == TUTTI_FLOAT32) {
    volatile float acc = (float)input(seed, 0, i);
    for (int r = 1; r < nranks; r++) {
      float x = (float)input(seed, r, i);
      acc = op == TUTTI_MAX ? (x > acc ? x : acc) : acc + x;
    }
    if (op == TUTTI_AVG) acc = acc / (float)nranks;
    *(float *)out = acc;
  } else {
    volatile double acc = input(seed, 0, i);
    for (int r = 1; r < nranks; r++) {
      double x = input(seed, r, i);
      acc = op == TUTTI_MAX ? (x > acc ? x : acc) : acc + x;
    }
    if (op == TUTTI_AVG) acc = acc / (double)nranks;
    *(double *)out = acc;
  }
}

static long differing; /* elements that differ from the rank-order fold */

static void compare(const char *what, tutti_dtype_t dt, tutti_op_t op, uint64_t seed,
                    const void *got, size_t first, size_t n, size_t count) {
  size_t es = dt == TUTTI_FLOAT32 ? 4 : 8;
  long bad = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char e[8];
    expect(dt, op, seed, first + i, e);
    if (memcmp((const char *)got + i * es, e, es) != 0 && bad++ == 0 && getenv("DET_VERBOSE"))
      fprintf(stderr, "det_check rank %d: %s %s op %d count %zu: element %zu differs\n", rank,
              what, dt == TUTTI_FLOAT32 ? "float32" : "float64", (int)op, count, first + i);
  }
  differing += bad;
}

static void run(tutti_dtype_t dt, tutti_op_t op, size_t count) {
  size_t es = dt == TUTTI_FLOAT32 ? 4 : 8;
  uint64_t seed = 0xde7e2000ull + count * 131 + (size_t)dt * 7 + (size_t)op;
  char *send = malloc(count * es * (size_t)nranks), *recv = malloc(count * es * (size_t)nranks);
  if (!send || !recv) {
    fprintf(stderr, "det_check rank %d: out of memory\n", rank);
    exit(1);
  }
  /* All-reduce, out of place and in place. */
  fill(dt, seed, rank, 0, count, send);
  check_call(tutti_allreduce(send, recv, count, dt, op, comm), "tutti_allreduce");
  compare("allreduce", dt, op, seed, recv, 0, count, count);
  fill(dt, seed, rank, 0, count, recv);
  check_call(tutti_allreduce(recv, recv, count, dt, op, comm), "tutti_allreduce in place");
  compare("allreduce in place", dt, op, seed, recv, 0, count, count);
  /* Reduce-scatter of n blocks of count: rank r gets elements r*count ... */
  fill(dt, seed, rank, 0, count * (size_t)nranks, send);
  check_call(tutti_reduce_scatter(send, recv, count, dt, op, comm), "tutti_reduce_scatter");
  compare("reduce_scatter", dt, op, seed, recv, (size_t)rank * count, count, count);
  /* Reduce to the last rank. */
  fill(dt, seed, rank, 0, count, send);
  check_call(tutti_reduce(send, recv, count, dt, op, nranks - 1, comm), "tutti_reduce");
  if (rank == nranks - 1) compare("reduce", dt, op, seed, recv, 0, count, count);
  free(send);
  free(recv);
}

int main(int argc, char **argv) {
  int differs = argc > 1 && !strcmp(argv[1], "--differs");
  check_call(tutti_comm_init_env(&comm), "tutti_comm_init_env");
  check_call(tutti_comm_rank(comm, &rank), "tutti_comm_rank");
  check_call(tutti_comm_size(comm, &nranks), "tutti_comm_size");
  static const size_t counts[] = {1, 7, 1023, 65537, 300007};
  static const tutti_op_t ops[] = {TUTTI_SUM, TUTTI_AVG, TUTTI_MAX};
  long cases = 0;
  for (int d = 0; d < 2; d++)
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
      for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++, cases++)
        run(d ? TUTTI_FLOAT64 : TUTTI_FLOAT32, ops[o], counts[c]);
  int64_t mine = differing, total = 0;
  check_call(tutti_allreduce(&mine, &total, 1, TUTTI_INT64, TUTTI_SUM, comm), "tutti_allreduce");
  int ok = differs ? total > 0 : total == 0;
  if (rank == 0)
    printf("det_check: %ld cases x 4 calls, %lld elements differ from the rank-order fold "
           "(n=%d, TUTTI_DETERMINISTIC=%s, TUTTI_ALGO=%s): %s\n",
           cases, (long long)total, nranks, getenv("TUTTI_DETERMINISTIC") ?: "unset",
           getenv("TUTTI_ALGO") ?: "unset", ok ? "ok" : "FAILED");
  check_call(tutti_comm_destroy(comm), "tutti_comm_destroy");
  return ok ? 0 : 1;
}
