/*
 * The collective cases of cluster_check: a short list per collective (a few dtypes and ops, a
 * small and a medium count, out of place and in place, roots on other hosts), each checked in
 * full against tests/integration/ref.c. The list is short on purpose: the namespace cluster
 * runs it once per algorithm and placement, on a loaded machine; the full dtype x op matrix is
 * coll_check's job on one host.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster_check.h"
#include "ref.h"

#define RECV_BYTE 0x5A /* what a receive buffer holds before the call */

static tutti_comm_t comm;
static long n_cases;

typedef struct {
  const char *coll;
  ref_case_t ref;
  size_t count;
  int inplace, root;
  size_t es;
} kase_t;

static kase_t make(const char *coll, tutti_dtype_t dt, tutti_op_t op, ref_mode_t mode,
                   size_t count, int inplace, int root) {
  kase_t k = {.coll = coll, .count = count, .inplace = inplace, .root = root};
  k.ref.dtype = dt;
  k.ref.op = op;
  k.ref.mode = mode;
  k.ref.nranks = cc_nranks;
  /* The same sequence of cases on every rank gives every rank the same seed. */
  k.ref.seed = ref_hash(0xc105731ull, (int)n_cases, count);
  k.es = ref_dtype_size(dt);
  n_cases++;
  return k;
}

static const char *desc(const kase_t *k) {
  static char s[200];
  snprintf(s, sizeof s, "%s dtype=%s op=%s count=%zu inplace=%d root=%d", k->coll,
           ref_dtype_name(k->ref.dtype), ref_op_name(k->ref.op), k->count, k->inplace, k->root);
  return s;
}

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) cc_fail("out of memory (%zu bytes)", n);
  return p;
}

/* Fails at the first element of n where got and want differ. */
static void compare(const kase_t *k, const char *what, const unsigned char *got,
                    const unsigned char *want, size_t n) {
  if (memcmp(got, want, n * k->es) == 0) return;
  size_t i = 0;
  while (memcmp(got + i * k->es, want + i * k->es, k->es) == 0) i++;
  cc_fail("%s: %s: element %zu is %.9g, want %.9g", desc(k), what, i,
          ref_to_double(k->ref.dtype, got + i * k->es),
          ref_to_double(k->ref.dtype, want + i * k->es));
}

/* All ranks hold the same bytes (hashes all-gathered). */
static void same_everywhere(const kase_t *k, const void *buf, size_t bytes) {
  uint64_t h = ref_fnv1a(buf, bytes), all[CC_MAX_RANKS];
  cc_ok(tutti_allgather(&h, all, 1, TUTTI_UINT64, comm), comm, "all-gather of hashes");
  for (int r = 0; r < cc_nranks; r++)
    if (all[r] != h) cc_fail("%s: rank %d holds different bits", desc(k), r);
}

static void run_allreduce(tutti_dtype_t dt, tutti_op_t op, ref_mode_t mode, size_t count,
                          int inplace) {
  kase_t k = make("allreduce", dt, op, mode, count, inplace, -1);
  unsigned char *send = xmalloc(count * k.es), *recv = inplace ? send : xmalloc(count * k.es);
  ref_fill(&k.ref, cc_rank, 0, count, send);
  cc_ok(tutti_allreduce(send, recv, count, dt, op, comm), comm, desc(&k));
  if (mode == REF_EXACT) {
    unsigned char *want = xmalloc(count * k.es);
    ref_expect_reduce(&k.ref, 0, count, want);
    compare(&k, "result", recv, want, count);
    free(want);
  } else { /* random floats: within the rounding bound, and the same bits on every rank */
    double *want = xmalloc(count * sizeof *want), *tol = xmalloc(count * sizeof *tol);
    ref_reduce_approx(&k.ref, 0, count, want, tol);
    for (size_t i = 0; i < count; i++) {
      double got = ref_to_double(dt, recv + i * k.es), d = got - want[i];
      if (!(d <= tol[i] && -d <= tol[i]))
        cc_fail("%s: element %zu is %.17g, want %.17g +- %.3g", desc(&k), i, got, want[i],
                tol[i]);
    }
    same_everywhere(&k, recv, count * k.es);
    free(want);
    free(tol);
  }
  if (!inplace) free(recv);
  free(send);
}

static void run_allgather(tutti_dtype_t dt, size_t count, int inplace) {
  kase_t k = make("allgather", dt, TUTTI_SUM, REF_RAW, count, inplace, -1);
  size_t n = (size_t)cc_nranks;
  unsigned char *recv = xmalloc(n * count * k.es);
  unsigned char *send = inplace ? recv + (size_t)cc_rank * count * k.es : xmalloc(count * k.es);
  memset(recv, RECV_BYTE, n * count * k.es);
  ref_fill(&k.ref, cc_rank, 0, count, send);
  cc_ok(tutti_allgather(send, recv, count, dt, comm), comm, desc(&k));
  unsigned char *want = xmalloc(n * count * k.es);
  for (int r = 0; r < cc_nranks; r++) ref_fill(&k.ref, r, 0, count, want + r * count * k.es);
  compare(&k, "result", recv, want, n * count);
  free(want);
  if (!inplace) free(send);
  free(recv);
}

static void run_reduce_scatter(tutti_dtype_t dt, tutti_op_t op, size_t count, int inplace) {
  kase_t k = make("reduce_scatter", dt, op, REF_EXACT, count, inplace, -1);
  size_t n = (size_t)cc_nranks;
  unsigned char *send = xmalloc(n * count * k.es);
  unsigned char *recv = inplace ? send + (size_t)cc_rank * count * k.es : xmalloc(count * k.es);
  ref_fill(&k.ref, cc_rank, 0, n * count, send);
  cc_ok(tutti_reduce_scatter(send, recv, count, dt, op, comm), comm, desc(&k));
  unsigned char *want = xmalloc(count * k.es);
  ref_expect_reduce(&k.ref, (size_t)cc_rank * count, count, want);
  compare(&k, "result", recv, want, count);
  free(want);
  if (!inplace) free(recv);
  free(send);
}

static void run_broadcast(tutti_dtype_t dt, size_t count, int inplace, int root) {
  kase_t k = make("broadcast", dt, TUTTI_SUM, REF_RAW, count, inplace, root);
  unsigned char *recv = xmalloc(count * k.es), *send = inplace ? recv : xmalloc(count * k.es);
  memset(recv, RECV_BYTE, count * k.es);
  if (cc_rank == root) ref_fill(&k.ref, root, 0, count, send);
  cc_ok(tutti_broadcast(send, recv, count, dt, root, comm), comm, desc(&k));
  unsigned char *want = xmalloc(count * k.es);
  ref_fill(&k.ref, root, 0, count, want);
  compare(&k, "result", recv, want, count);
  free(want);
  if (!inplace) free(send);
  free(recv);
}

static void run_reduce(tutti_dtype_t dt, tutti_op_t op, size_t count, int inplace, int root) {
  kase_t k = make("reduce", dt, op, REF_EXACT, count, inplace, root);
  unsigned char *send = xmalloc(count * k.es), *recv = inplace ? send : xmalloc(count * k.es);
  if (!inplace) memset(recv, RECV_BYTE, count * k.es);
  ref_fill(&k.ref, cc_rank, 0, count, send);
  cc_ok(tutti_reduce(send, recv, count, dt, op, root, comm), comm, desc(&k));
  unsigned char *want = xmalloc(count * k.es);
  if (cc_rank == root) {
    ref_expect_reduce(&k.ref, 0, count, want);
    compare(&k, "result", recv, want, count);
  } else if (inplace) { /* a non-root's buffer is its input, untouched */
    ref_fill(&k.ref, cc_rank, 0, count, want);
    compare(&k, "non-root buffer", recv, want, count);
  } else {
    memset(want, RECV_BYTE, count * k.es);
    compare(&k, "non-root recvbuf", recv, want, count);
  }
  free(want);
  if (!inplace) free(recv);
  free(send);
}

/* Block j of rank r's input goes to rank j: rank r's elements j*count .. (j+1)*count-1. */
static void run_alltoall(tutti_dtype_t dt, size_t count) {
  kase_t k = make("alltoall", dt, TUTTI_SUM, REF_RAW, count, 0, -1);
  size_t n = (size_t)cc_nranks, bytes = n * count * k.es;
  unsigned char *send = xmalloc(bytes), *recv = xmalloc(bytes), *want = xmalloc(bytes);
  ref_fill(&k.ref, cc_rank, 0, n * count, send);
  memset(recv, RECV_BYTE, bytes);
  cc_ok(tutti_alltoall(send, recv, count, dt, comm), comm, desc(&k));
  for (int r = 0; r < cc_nranks; r++)
    ref_fill(&k.ref, r, (size_t)cc_rank * count, count, want + r * count * k.es);
  compare(&k, "result", recv, want, n * count);
  free(want);
  free(recv);
  free(send);
}

/* No rank leaves a barrier before the last one entered it: each round one rank (a different
 * one, so on different hosts) arrives 30 ms late; the entry instants are all-gathered after. */
static void run_barrier(void) {
  for (int round = 0; round < 3; round++) {
    kase_t k = make("barrier", TUTTI_FLOAT64, TUTTI_SUM, REF_RAW, 0, 0, -1);
    int late = (round * 5 + 1) % cc_nranks;
    if (cc_rank == late) usleep(30000);
    double enter = cc_now();
    cc_ok(tutti_barrier(comm), comm, "tutti_barrier");
    double leave = cc_now(), all[CC_MAX_RANKS];
    cc_ok(tutti_allgather(&enter, all, 1, TUTTI_FLOAT64, comm), comm, "all-gather of instants");
    for (int r = 0; r < cc_nranks; r++)
      if (all[r] > leave)
        cc_fail("%s round %d: left at %.6f, before rank %d entered at %.6f", desc(&k), round,
                leave, r, all[r]);
  }
}

long cc_run_colls(tutti_comm_t c, size_t small, size_t medium) {
  comm = c;
  n_cases = 0;
  int n = cc_nranks, last = n - 1, one = 1 % n;
  size_t per_rank = medium / (size_t)n + 1;

  run_allreduce(TUTTI_FLOAT32, TUTTI_SUM, REF_EXACT, small, 0);
  run_allreduce(TUTTI_FLOAT32, TUTTI_SUM, REF_EXACT, medium, 0);
  run_allreduce(TUTTI_FLOAT32, TUTTI_SUM, REF_EXACT, medium, 1);
  run_allreduce(TUTTI_INT32, TUTTI_MAX, REF_EXACT, small, 0);
  run_allreduce(TUTTI_BFLOAT16, TUTTI_AVG, REF_EXACT, small, 1);
  run_allreduce(TUTTI_FLOAT64, TUTTI_PROD, REF_EXACT, small, 0);
  run_allreduce(TUTTI_FLOAT32, TUTTI_SUM, REF_RANDOM, medium, 0);

  run_allgather(TUTTI_UINT8, small, 0);
  run_allgather(TUTTI_FLOAT16, small, 1);
  run_allgather(TUTTI_FLOAT32, per_rank, 0);
  run_allgather(TUTTI_FLOAT32, per_rank, 1);

  run_reduce_scatter(TUTTI_FLOAT32, TUTTI_SUM, small, 0);
  run_reduce_scatter(TUTTI_INT64, TUTTI_MIN, small, 1);
  run_reduce_scatter(TUTTI_FLOAT32, TUTTI_SUM, per_rank, 0);
  run_reduce_scatter(TUTTI_BFLOAT16, TUTTI_SUM, per_rank, 1);

  run_broadcast(TUTTI_UINT8, small, 0, one);
  run_broadcast(TUTTI_FLOAT32, medium, 0, last);
  run_broadcast(TUTTI_FLOAT32, medium, 1, 0);

  run_reduce(TUTTI_FLOAT32, TUTTI_SUM, small, 0, one);
  run_reduce(TUTTI_INT32, TUTTI_MAX, small, 1, last);
  run_reduce(TUTTI_FLOAT32, TUTTI_SUM, medium, 0, last);
  run_reduce(TUTTI_FLOAT32, TUTTI_SUM, medium, 1, 0);

  run_alltoall(TUTTI_UINT32, 7);
  run_alltoall(TUTTI_FLOAT32, per_rank);

  run_barrier();
  return n_cases;
}
