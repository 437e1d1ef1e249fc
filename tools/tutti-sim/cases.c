/*
 * The calls tutti-sim makes and their checks. Inputs are small integers in float32, so every
 * sum is exact in any order at any rank count this runs (|sum| <= 16 n < 2^24); the expected
 * values come from the same formula, summed here over the ranks, never from the library.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

static const sim_coll_t colls[] = {
    {TUTTI_COLL_ALLREDUCE, "allreduce"},     {TUTTI_COLL_ALLGATHER, "allgather"},
    {TUTTI_COLL_REDUCE_SCATTER, "reduce_scatter"}, {TUTTI_COLL_BROADCAST, "broadcast"},
    {TUTTI_COLL_REDUCE, "reduce"},           {TUTTI_COLL_BARRIER, "barrier"},
    {TUTTI_COLL_ALLGATHERV, "allgatherv"},   {TUTTI_COLL_REDUCE_SCATTERV, "reduce_scatterv"},
    {TUTTI_COLL_GATHERV, "gatherv"},         {TUTTI_COLL_SCATTERV, "scatterv"},
    {TUTTI_COLL_ALLTOALLV, "alltoallv"},
};

const sim_coll_t *sim_colls(int *count) {
  *count = (int)(sizeof colls / sizeof colls[0]);
  return colls;
}

/* Rank r's input element i. */
static float val(int r, size_t i) { return (float)(((uint64_t)r * 131 + i * 7) % 17); }

static float sum_over(int n, size_t i) {
  double s = 0;
  for (int r = 0; r < n; r++) s += val(r, i);
  return (float)s;
}

/* Counts of the v-collectives: every third rank has none, the others count or count + 1. */
static size_t vcount(int i, size_t count) { return i % 3 == 0 ? 0 : count + (size_t)(i & 1); }

static size_t *prefix(int n, size_t count, size_t *total) {
  size_t *a = malloc(2 * (size_t)n * sizeof *a);
  if (!a) return NULL;
  size_t s = 0;
  for (int i = 0; i < n; i++) {
    a[i] = vcount(i, count);
    a[n + i] = s;
    s += a[i];
  }
  *total = s;
  return a;
}

/* First index where got differs from the value want(i), or -1. */
#define FIRST_WRONG(len, expr, got)                                                         \
  do {                                                                                      \
    for (size_t i = 0; i < (len); i++)                                                      \
      if ((got)[i] != (expr)) {                                                             \
        *wrong = (long)i;                                                                   \
        break;                                                                              \
      }                                                                                     \
  } while (0)

static int root_of(int n) { return n / 3; }

tutti_result_t sim_run(tutti_comm_t comm, int rank, int n, tutti_coll_t coll, size_t count,
                       long *wrong) {
  tutti_result_t res = TUTTI_ERR_INTERNAL;
  size_t nn = (size_t)n, total = 0;
  size_t *v = NULL;
  float *in = NULL, *out = NULL;
  int root = root_of(n);
  *wrong = -1;
  if (coll == TUTTI_COLL_ALLGATHERV || coll == TUTTI_COLL_REDUCE_SCATTERV ||
      coll == TUTTI_COLL_GATHERV || coll == TUTTI_COLL_SCATTERV) {
    v = prefix(n, count, &total);
    if (!v) return TUTTI_ERR_SYSTEM;
  }
  size_t in_len = count, out_len = count;
  switch (coll) {
  case TUTTI_COLL_ALLGATHER: out_len = count * nn; break;
  case TUTTI_COLL_REDUCE_SCATTER: in_len = count * nn; break;
  case TUTTI_COLL_ALLGATHERV: in_len = v[rank]; out_len = total; break;
  case TUTTI_COLL_REDUCE_SCATTERV: in_len = total; out_len = v[rank]; break;
  case TUTTI_COLL_GATHERV: in_len = v[rank]; out_len = total; break;
  case TUTTI_COLL_SCATTERV: in_len = total; out_len = v[rank]; break;
  case TUTTI_COLL_ALLTOALLV: in_len = out_len = count * nn; break;
  default: break;
  }
  in = malloc((in_len ? in_len : 1) * sizeof *in);
  out = malloc((out_len ? out_len : 1) * sizeof *out);
  if (!in || !out) {
    res = TUTTI_ERR_SYSTEM;
    goto out;
  }
  for (size_t i = 0; i < in_len; i++) in[i] = val(rank, i);
  for (size_t i = 0; i < out_len; i++) out[i] = -1;
  switch (coll) {
  case TUTTI_COLL_ALLREDUCE:
    res = tutti_allreduce(in, out, count, TUTTI_FLOAT32, TUTTI_SUM, comm);
    if (res == TUTTI_SUCCESS) FIRST_WRONG(count, sum_over(n, i), out);
    break;
  case TUTTI_COLL_REDUCE:
    res = tutti_reduce(in, out, count, TUTTI_FLOAT32, TUTTI_SUM, root, comm);
    if (res == TUTTI_SUCCESS && rank == root) FIRST_WRONG(count, sum_over(n, i), out);
    break;
  case TUTTI_COLL_REDUCE_SCATTER:
    res = tutti_reduce_scatter(in, out, count, TUTTI_FLOAT32, TUTTI_SUM, comm);
    if (res == TUTTI_SUCCESS) FIRST_WRONG(count, sum_over(n, (size_t)rank * count + i), out);
    break;
  case TUTTI_COLL_ALLGATHER:
    res = tutti_allgather(in, out, count, TUTTI_FLOAT32, comm);
    if (res == TUTTI_SUCCESS) FIRST_WRONG(out_len, val((int)(i / count), i % count), out);
    break;
  case TUTTI_COLL_BROADCAST:
    for (size_t i = 0; i < count; i++) in[i] = rank == root ? val(root, i) : -2;
    res = tutti_broadcast(in, out, count, TUTTI_FLOAT32, root, comm);
    if (res == TUTTI_SUCCESS) FIRST_WRONG(count, val(root, i), out);
    break;
  case TUTTI_COLL_BARRIER: res = tutti_barrier(comm); break;
  case TUTTI_COLL_ALLGATHERV:
  case TUTTI_COLL_GATHERV: {
    res = coll == TUTTI_COLL_ALLGATHERV
              ? tutti_allgatherv(in, in_len, out, v, v + n, TUTTI_FLOAT32, comm)
              : tutti_gatherv(in, in_len, out, v, v + n, TUTTI_FLOAT32, root, comm);
    if (res != TUTTI_SUCCESS || (coll == TUTTI_COLL_GATHERV && rank != root)) break;
    for (int r = 0; r < n && *wrong < 0; r++)
      for (size_t j = 0; j < v[r]; j++)
        if (out[v[n + r] + j] != val(r, j)) {
          *wrong = (long)(v[n + r] + j);
          break;
        }
    break;
  }
  case TUTTI_COLL_REDUCE_SCATTERV:
    res = tutti_reduce_scatterv(in, out, v, TUTTI_FLOAT32, TUTTI_SUM, comm);
    if (res == TUTTI_SUCCESS) FIRST_WRONG(out_len, sum_over(n, v[n + rank] + i), out);
    break;
  case TUTTI_COLL_SCATTERV:
    for (size_t i = 0; i < in_len; i++) in[i] = rank == root ? val(root, i) : -2;
    res = tutti_scatterv(in, v, v + n, out, out_len, TUTTI_FLOAT32, root, comm);
    if (res == TUTTI_SUCCESS) FIRST_WRONG(out_len, val(root, v[n + rank] + i), out);
    break;
  case TUTTI_COLL_ALLTOALLV: {
    /* Block j of rank r's input goes to rank j: values r's, at j * count. */
    size_t *a = malloc(2 * nn * sizeof *a);
    if (!a) {
      res = TUTTI_ERR_SYSTEM;
      break;
    }
    for (int j = 0; j < n; j++) {
      a[j] = count;
      a[n + j] = (size_t)j * count;
    }
    res = tutti_alltoallv(in, a, a + n, out, a, a + n, TUTTI_FLOAT32, comm);
    free(a);
    if (res == TUTTI_SUCCESS)
      FIRST_WRONG(out_len, val((int)(i / count), (size_t)rank * count + i % count), out);
    break;
  }
  default: break;
  }
out:
  free(in);
  free(out);
  free(v);
  return res;
}
