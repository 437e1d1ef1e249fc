/*
 * The collectives tutti-bench sweeps: how each is called (out of place or in place), how its
 * bus bandwidth is counted, and how one call is checked against an expectation computed here,
 * element by element, from the inputs every rank is known to have stored.
 */
#include <stdint.h>
#include "bench.h"

#include <string.h>

const struct bench_coll bench_colls[] = {
    {"allreduce", B_ALLREDUCE, 0, 1, 0, 2, 0},
    {"allgather", B_ALLGATHER, 0, 0, 1, 1, 0},
    {"reduce_scatter", B_REDUCE_SCATTER, 0, 1, 1, 1, 0},
    {"broadcast", B_BROADCAST, 1, 0, 0, 0, 0},
    {"reduce", B_REDUCE, 1, 1, 0, 0, 0},
    {"alltoall", B_ALLTOALL, 0, 0, 1, 1, 1},
    {"sendrecv", B_SENDRECV, 0, 0, 0, 0, 1},
    {"gather", B_GATHER, 1, 0, 1, 1, 1},
    {"scatter", B_SCATTER, 1, 0, 1, 1, 1},
};
const int bench_ncolls = (int)(sizeof(bench_colls) / sizeof(bench_colls[0]));

double bench_busbw_factor(const struct bench_coll *c, int n) {
  return c->bus_steps ? c->bus_steps * (double)(n - 1) / n : 1.0;
}

/* nccl-tests' sendrecv: every rank sends to the next and receives from the previous, at once. */
static tutti_result_t sendrecv(const struct bench_run *b, size_t count) {
  int n = b->nranks, to = (b->rank + 1) % n, from = (b->rank + n - 1) % n;
  if (n == 1) { /* no peer: the bytes only move within the rank */
    memcpy(b->recv, b->send, count * bench_esize(b->dt));
    return TUTTI_SUCCESS;
  }
  tutti_result_t r = tutti_group_start();
  if (r != TUTTI_SUCCESS)
    return r;
  tutti_result_t rs = tutti_send(b->send, count, b->dt, to, b->comm);
  tutti_result_t rr = tutti_recv(b->recv, count, b->dt, from, b->comm);
  r = tutti_group_end();
  return rs != TUTTI_SUCCESS ? rs : rr != TUTTI_SUCCESS ? rr : r;
}

tutti_result_t bench_call(const struct bench_run *b, const struct bench_coll *c, size_t count) {
  char *s = b->send, *r = b->recv;
  /* This rank's fragment inside the full buffer, where NCCL's in-place variants put it. */
  size_t off = (size_t)b->rank * count * bench_esize(b->dt);
  switch (c->kind) {
  case B_ALLREDUCE:
    return tutti_allreduce(b->inplace ? r : s, r, count, b->dt, b->op, b->comm);
  case B_ALLGATHER:
    return tutti_allgather(b->inplace ? r + off : s, r, count, b->dt, b->comm);
  case B_REDUCE_SCATTER:
    return b->inplace ? tutti_reduce_scatter(r, r + off, count, b->dt, b->op, b->comm)
                      : tutti_reduce_scatter(s, r, count, b->dt, b->op, b->comm);
  case B_BROADCAST:
    return tutti_broadcast(b->inplace ? r : s, r, count, b->dt, b->root, b->comm);
  case B_REDUCE:
    return tutti_reduce(b->inplace ? r : s, r, count, b->dt, b->op, b->root, b->comm);
  case B_ALLTOALL:
    return tutti_alltoall(s, r, count, b->dt, b->comm);
  case B_SENDRECV:
    return sendrecv(b, count);
  case B_GATHER:
    return tutti_gather(s, r, count, b->dt, b->root, b->comm);
  case B_SCATTER:
    return tutti_scatter(s, r, count, b->dt, b->root, b->comm);
  }
  return TUTTI_ERR_INVALID_ARGUMENT;
}

tutti_result_t bench_icall(const struct bench_run *b, const struct bench_coll *c, size_t count,
                           tutti_request_t *req) {
  char *s = b->send, *r = b->recv;
  size_t off = (size_t)b->rank * count * bench_esize(b->dt);
  switch (c->kind) {
  case B_ALLREDUCE:
    return tutti_iallreduce(b->inplace ? r : s, r, count, b->dt, b->op, b->comm, req);
  case B_ALLGATHER:
    return tutti_iallgather(b->inplace ? r + off : s, r, count, b->dt, b->comm, req);
  case B_REDUCE_SCATTER:
    return b->inplace ? tutti_ireduce_scatter(r, r + off, count, b->dt, b->op, b->comm, req)
                      : tutti_ireduce_scatter(s, r, count, b->dt, b->op, b->comm, req);
  case B_BROADCAST:
    return tutti_ibroadcast(b->inplace ? r : s, r, count, b->dt, b->root, b->comm, req);
  case B_REDUCE:
    return tutti_ireduce(b->inplace ? r : s, r, count, b->dt, b->op, b->root, b->comm, req);
  case B_ALLTOALL:
    return tutti_ialltoall(s, r, count, b->dt, b->comm, req);
  case B_GATHER:
    return tutti_igather(s, r, count, b->dt, b->root, b->comm, req);
  case B_SCATTER:
    return tutti_iscatter(s, r, count, b->dt, b->root, b->comm, req);
  case B_SENDRECV: /* two requests: tutti-bench runs it blocking (run_calls) */
    break;
  }
  return TUTTI_ERR_INVALID_ARGUMENT;
}

/* Rank r's input at element j of its send buffer: small integers, different between ranks and
 * between neighbouring elements, so a missed rank or a misplaced fragment shows. A product gets
 * only 1s and 2s so that it stays exact (2^nranks) in every float type. */
static double input(const struct bench_run *b, const struct bench_coll *c, int r, size_t j) {
  unsigned v = (unsigned)(((size_t)r * 5 + j * 3) % 7);
  return c->reduces && b->op == TUTTI_PROD ? 1 + (v & 1) : v;
}

/* The reduction over all ranks of element j, computed in double (exact for these inputs). */
static double reduced(const struct bench_run *b, const struct bench_coll *c, size_t j) {
  double acc = input(b, c, 0, j);
  for (int k = 1; k < b->nranks; k++) {
    double v = input(b, c, k, j);
    switch (b->op) {
    case TUTTI_SUM: case TUTTI_AVG: acc += v; break;
    case TUTTI_PROD: acc *= v; break;
    case TUTTI_MIN: acc = v < acc ? v : acc; break;
    case TUTTI_MAX: acc = v > acc ? v : acc; break;
    case TUTTI_BAND: acc = (double)((int64_t)acc & (int64_t)v); break;
    case TUTTI_BOR: acc = (double)((int64_t)acc | (int64_t)v); break;
    case TUTTI_BXOR: acc = (double)((int64_t)acc ^ (int64_t)v); break;
    default: break; /* user operations are not benchmarked */
    }
  }
  if (b->op == TUTTI_AVG) /* integers truncate; the sum is never negative here */
    acc = bench_dtype_is_float(b->dt) ? acc / b->nranks : (double)(long long)(acc / b->nranks);
  return acc;
}

/* Whether got is wrong. Exact results are compared after a round trip through the dtype (so
 * an integer sum wraps as it does in the library); a float average only within a few ulps,
 * since sum/n need not be representable and may be computed as sum * (1/n). */
static int wrong_value(const struct bench_run *b, const struct bench_coll *c, double got,
                       double want) {
  if (c->reduces && b->op == TUTTI_AVG && bench_dtype_is_float(b->dt)) {
    double tol = b->dt == TUTTI_FLOAT16    ? 2e-3
                 : b->dt == TUTTI_BFLOAT16 ? 1.6e-2
                 : b->dt == TUTTI_FLOAT32  ? 1e-6
                                           : 1e-12;
    double d = got - want, scale = want > 1 ? want : 1;
    return !(d <= tol * scale && -d <= tol * scale); /* NaN is wrong too */
  }
  char tmp[8];
  bench_set(tmp, 0, b->dt, want);
  return !(got == bench_get(tmp, 0, b->dt));
}

tutti_result_t bench_check(const struct bench_run *b, const struct bench_coll *c, size_t count,
                           double *wrong) {
  size_t es = bench_esize(b->dt), n = (size_t)b->nranks, off = (size_t)b->rank * count;
  int root_side = b->rank == b->root;
  size_t in_count = c->kind == B_REDUCE_SCATTER || c->kind == B_ALLTOALL ||
                            (c->kind == B_SCATTER && root_side) ? count * n : count;
  size_t out_count = c->kind == B_ALLGATHER || c->kind == B_ALLTOALL ||
                             (c->kind == B_GATHER && root_side) ? count * n : count;
  /* Where this rank's input lives for the call bench_call makes, and where its result lands. */
  char *in = b->inplace ? b->recv : b->send, *out = b->recv;
  if (b->inplace && c->kind == B_ALLGATHER)
    in = b->recv + off * es;
  if (b->inplace && c->kind == B_REDUCE_SCATTER)
    out = b->recv + off * es;
  /* All-ones bytes (NaN, -1, or the maximum) in the output first, so an element the call never
   * wrote cannot pass for a result. In place, the input is written over them below. */
  memset(b->recv, 0xff, (c->kind == B_REDUCE_SCATTER ? in_count : out_count) * es);
  if (c->kind == B_GATHER && !root_side)
    out_count = 0; /* only the root receives */
  for (size_t j = 0; j < in_count; j++)
    bench_set(in, j, b->dt, input(b, c, b->rank, j));

  tutti_result_t r = bench_call(b, c, count);
  if (r != TUTTI_SUCCESS)
    return r;

  size_t bad = 0;
  if (c->kind == B_REDUCE && b->rank != b->root) {
    /* Only the root's recvbuf may be written; out of place ours must still be all ones. */
    static const unsigned char ones[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    for (size_t j = 0; !b->inplace && j < count; j++)
      bad += memcmp(out + j * es, ones, es) != 0;
    *wrong = (double)bad;
    return TUTTI_SUCCESS;
  }
  for (size_t j = 0; j < out_count; j++) {
    double want;
    switch (c->kind) {
    case B_ALLGATHER: want = input(b, c, (int)(j / count), j % count); break;
    case B_BROADCAST: want = input(b, c, b->root, j); break;
    case B_GATHER: want = input(b, c, (int)(j / count), j % count); break;
    case B_SCATTER: want = input(b, c, b->root, off + j); break;
    case B_SENDRECV: want = input(b, c, (b->rank + b->nranks - 1) % b->nranks, j); break;
    case B_ALLTOALL: /* block i came from rank i: its elements meant for this rank */
      want = input(b, c, (int)(j / count), off + j % count);
      break;
    case B_REDUCE_SCATTER: want = reduced(b, c, off + j); break;
    default: want = reduced(b, c, j); break;
    }
    bad += wrong_value(b, c, bench_get(out, j, b->dt), want);
  }
  *wrong = (double)bad;
  return TUTTI_SUCCESS;
}
