/*
 * Every algorithm x collective x dtype over thread ranks (transport/mem.c), at n = 1..9, 16,
 * 17 and 64, each result checked against tests/integration/ref.c, the independent reference
 * coll_check uses (inputs from (seed, rank, index), reductions recomputed in int64/double).
 * Small pipeline chunks and queues (trun_config) make the ring, the chain and the trees
 * pipeline, and the queues push back, at counts that keep the whole matrix to seconds.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ref.h"
#include "trun.h"

static const int sizes[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 64};
#define NSIZES (int)(sizeof sizes / sizeof sizes[0])

/* A (dtype, op) pair of the matrix. */
typedef struct dop {
  tutti_dtype_t dtype;
  tutti_op_t op;
} dop_t;

/* Small n: every dtype with SUM and every other op with a spread of dtypes; larger n: a few,
 * to keep 64-thread runs short (the counts, not the dtypes, are what grows with n). */
static int dops(int n, int reduces, dop_t *out) {
  int k = 0;
  if (!reduces) {
    static const tutti_dtype_t d[] = {TUTTI_INT8, TUTTI_FLOAT16, TUTTI_FLOAT32, TUTTI_FLOAT64};
    for (int i = 0; i < (n <= 9 ? 4 : 2); i++) out[k++] = (dop_t){d[i * (n <= 9 ? 1 : 3)], 0};
    return k;
  }
  if (n > 9) {
    static const dop_t big[] = {{TUTTI_INT32, TUTTI_SUM}, {TUTTI_FLOAT32, TUTTI_SUM},
                                {TUTTI_BFLOAT16, TUTTI_SUM}, {TUTTI_INT8, TUTTI_MAX},
                                {TUTTI_FLOAT64, TUTTI_PROD}, {TUTTI_FLOAT16, TUTTI_AVG}};
    memcpy(out, big, sizeof big);
    return (int)(sizeof big / sizeof big[0]);
  }
  for (int d = 0; d < REF_NUM_DTYPES; d++) out[k++] = (dop_t){(tutti_dtype_t)d, TUTTI_SUM};
  static const tutti_dtype_t some[] = {TUTTI_INT8, TUTTI_UINT64, TUTTI_FLOAT16, TUTTI_BFLOAT16,
                                       TUTTI_FLOAT32};
  for (int op = TUTTI_PROD; op <= TUTTI_AVG; op++)
    for (int i = 0; i < 5; i++) out[k++] = (dop_t){some[i], (tutti_op_t)op};
  return k;
}

/* One call of the matrix, as every rank runs it. */
typedef struct call {
  tutti_comm_t comm;
  int rank, n;
  const tutti_algo_t *algo;
  tutti_dtype_t dtype;
  tutti_op_t op;
  size_t count;
  int inplace;
  uint64_t seed;
  size_t es;
} call_t;

#define CHECK_OK(c, r, what)                                                                \
  do {                                                                                      \
    tutti_result_t r_ = (r);                                                                \
    if (r_ != TUTTI_SUCCESS)                                                                \
      harness_fail(__FILE__, __LINE__, "%s n=%d rank %d algo %s dtype %s count %zu: %s (%s)", \
                   what, (c)->n, (c)->rank, (c)->algo ? (c)->algo->name : "-",              \
                   ref_dtype_name((c)->dtype), (c)->count, tutti_result_string(r_),         \
                   tutti_comm_last_error((c)->comm));                                       \
  } while (0)

static void check_bytes(const call_t *c, const char *what, const void *got, const void *want,
                        size_t bytes) {
  if (memcmp(got, want, bytes) == 0) return;
  size_t i = 0;
  while (((const char *)got)[i] == ((const char *)want)[i]) i++;
  harness_fail(__FILE__, __LINE__, "%s n=%d rank %d algo %s dtype %s op %s count %zu%s: "
               "wrong byte %zu of %zu", what, c->n, c->rank, c->algo ? c->algo->name : "-",
               ref_dtype_name(c->dtype), ref_op_name(c->op), c->count,
               c->inplace ? " in place" : "", i, bytes);
}

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) harness_fail(__FILE__, __LINE__, "out of memory");
  return p;
}

static ref_case_t rcase(const call_t *c, ref_mode_t mode) {
  return (ref_case_t){c->dtype, c->op, mode, c->seed, c->n};
}

/* ---- The collectives ------------------------------------------------------------------ */

static void do_allreduce(const call_t *c) {
  ref_case_t rc = rcase(c, REF_EXACT);
  char *in = xmalloc(c->count * c->es), *out = c->inplace ? in : xmalloc(c->count * c->es);
  char *want = xmalloc(c->count * c->es);
  ref_fill(&rc, c->rank, 0, c->count, in);
  CHECK_OK(c, tutti_allreduce(in, out, c->count, c->dtype, c->op, c->comm), "allreduce");
  ref_expect_reduce(&rc, 0, c->count, want);
  check_bytes(c, "allreduce", out, want, c->count * c->es);
  if (out != in) free(out);
  free(in);
  free(want);
}

static void do_reduce(const call_t *c) {
  ref_case_t rc = rcase(c, REF_EXACT);
  int root = (int)(c->seed % (uint64_t)c->n);
  char *in = xmalloc(c->count * c->es), *out = c->inplace ? in : xmalloc(c->count * c->es);
  char *want = xmalloc(c->count * c->es);
  ref_fill(&rc, c->rank, 0, c->count, in);
  CHECK_OK(c, tutti_reduce(in, out, c->count, c->dtype, c->op, root, c->comm), "reduce");
  if (c->rank == root) {
    ref_expect_reduce(&rc, 0, c->count, want);
    check_bytes(c, "reduce", out, want, c->count * c->es);
  }
  if (out != in) free(out);
  free(in);
  free(want);
}

static void do_reduce_scatter(const call_t *c) {
  ref_case_t rc = rcase(c, REF_EXACT);
  size_t blk = c->count * c->es;
  char *in = xmalloc(blk * (size_t)c->n), *want = xmalloc(blk);
  char *out = c->inplace ? in + (size_t)c->rank * blk : xmalloc(blk);
  ref_fill(&rc, c->rank, 0, c->count * (size_t)c->n, in);
  CHECK_OK(c, tutti_reduce_scatter(in, out, c->count, c->dtype, c->op, c->comm),
           "reduce_scatter");
  ref_expect_reduce(&rc, (size_t)c->rank * c->count, c->count, want);
  check_bytes(c, "reduce_scatter", out, want, blk);
  if (!c->inplace) free(out);
  free(in);
  free(want);
}

/* Uneven counts, some zero, for the v-collectives. */
static size_t vcount(const call_t *c, int i) {
  return (size_t)((uint64_t)i * 7 + c->seed) % (c->count + 1);
}

static void do_reduce_scatterv(const call_t *c) {
  ref_case_t rc = rcase(c, REF_EXACT);
  size_t *counts = xmalloc((size_t)c->n * sizeof *counts), total = 0, off = 0;
  for (int i = 0; i < c->n; i++) {
    counts[i] = vcount(c, i);
    if (i < c->rank) off += counts[i];
    total += counts[i];
  }
  size_t mine = counts[c->rank];
  char *in = xmalloc(total * c->es), *out = xmalloc(mine * c->es), *want = xmalloc(mine * c->es);
  ref_fill(&rc, c->rank, 0, total, in);
  CHECK_OK(c, tutti_reduce_scatterv(in, out, counts, c->dtype, c->op, c->comm),
           "reduce_scatterv");
  ref_expect_reduce(&rc, off, mine, want);
  check_bytes(c, "reduce_scatterv", out, want, mine * c->es);
  free(in);
  free(out);
  free(want);
  free(counts);
}

static void do_allgather(const call_t *c) {
  ref_case_t rc = rcase(c, REF_RAW);
  size_t blk = c->count * c->es, all = blk * (size_t)c->n;
  char *out = xmalloc(all), *want = xmalloc(all);
  char *in = c->inplace ? out + (size_t)c->rank * blk : xmalloc(blk);
  for (int r = 0; r < c->n; r++) ref_fill(&rc, r, 0, c->count, want + (size_t)r * blk);
  memcpy(in, want + (size_t)c->rank * blk, blk);
  CHECK_OK(c, tutti_allgather(in, out, c->count, c->dtype, c->comm), "allgather");
  check_bytes(c, "allgather", out, want, all);
  if (!c->inplace) free(in);
  free(out);
  free(want);
}

static void do_broadcast(const call_t *c) {
  ref_case_t rc = rcase(c, REF_RAW);
  int root = (int)(c->seed % (uint64_t)c->n);
  char *buf = xmalloc(c->count * c->es), *want = xmalloc(c->count * c->es);
  char *out = c->inplace ? buf : xmalloc(c->count * c->es);
  ref_fill(&rc, root, 0, c->count, want);
  if (c->rank == root) memcpy(buf, want, c->count * c->es);
  CHECK_OK(c, tutti_broadcast(buf, out, c->count, c->dtype, root, c->comm), "broadcast");
  check_bytes(c, "broadcast", out, want, c->count * c->es);
  if (out != buf) free(out);
  free(buf);
  free(want);
}

/* Displacements with a one-element gap after each block, which must stay untouched. */
static size_t gapped_displs(const call_t *c, size_t *counts, size_t *displs) {
  size_t end = 0;
  for (int i = 0; i < c->n; i++) {
    counts[i] = vcount(c, i);
    displs[i] = end;
    end += counts[i] + 1;
  }
  return end;
}

static void do_allgatherv(const call_t *c) {
  ref_case_t rc = rcase(c, REF_RAW);
  size_t *counts = xmalloc((size_t)c->n * sizeof(size_t) * 2), *displs = counts + c->n;
  size_t end = gapped_displs(c, counts, displs);
  char *out = xmalloc(end * c->es), *want = xmalloc(end * c->es);
  memset(want, 0x5a, end * c->es);
  memset(out, 0x5a, end * c->es);
  for (int r = 0; r < c->n; r++) ref_fill(&rc, r, 0, counts[r], want + displs[r] * c->es);
  char *in = c->inplace ? out + displs[c->rank] * c->es : xmalloc(counts[c->rank] * c->es);
  memcpy(in, want + displs[c->rank] * c->es, counts[c->rank] * c->es);
  CHECK_OK(c, tutti_allgatherv(in, counts[c->rank], out, counts, displs, c->dtype, c->comm),
           "allgatherv");
  check_bytes(c, "allgatherv", out, want, end * c->es);
  if (!c->inplace) free(in);
  free(out);
  free(want);
  free(counts);
}

static void do_gatherv(const call_t *c) {
  ref_case_t rc = rcase(c, REF_RAW);
  int root = (int)(c->seed % (uint64_t)c->n);
  size_t *counts = xmalloc((size_t)c->n * sizeof(size_t) * 2), *displs = counts + c->n;
  size_t end = gapped_displs(c, counts, displs);
  char *out = xmalloc(end * c->es), *want = xmalloc(end * c->es);
  char *in = xmalloc(counts[c->rank] * c->es);
  memset(want, 0x5a, end * c->es);
  memset(out, 0x5a, end * c->es);
  for (int r = 0; r < c->n; r++) ref_fill(&rc, r, 0, counts[r], want + displs[r] * c->es);
  memcpy(in, want + displs[c->rank] * c->es, counts[c->rank] * c->es);
  CHECK_OK(c, tutti_gatherv(in, counts[c->rank], out, counts, displs, c->dtype, root, c->comm),
           "gatherv");
  if (c->rank == root) check_bytes(c, "gatherv", out, want, end * c->es);
  free(in);
  free(out);
  free(want);
  free(counts);
}

static void do_scatterv(const call_t *c) {
  ref_case_t rc = rcase(c, REF_RAW);
  int root = (int)(c->seed % (uint64_t)c->n);
  size_t *counts = xmalloc((size_t)c->n * sizeof(size_t) * 2), *displs = counts + c->n;
  size_t end = gapped_displs(c, counts, displs), mine = counts[c->rank];
  char *src = xmalloc(end * c->es), *out = xmalloc(mine * c->es);
  ref_fill(&rc, root, 0, end, src);
  CHECK_OK(c, tutti_scatterv(src, counts, displs, out, mine, c->dtype, root, c->comm),
           "scatterv");
  check_bytes(c, "scatterv", out, src + displs[c->rank] * c->es, mine * c->es);
  free(src);
  free(out);
  free(counts);
}

/* Rank i sends count(i, j) elements to rank j, made from the pair's own reference stream. */
static size_t a2a_count(const call_t *c, int i, int j) {
  return (size_t)((uint64_t)(i * 3 + j * 5) + c->seed) % (c->count + 1);
}

static void do_alltoallv(const call_t *c) {
  ref_case_t rc = rcase(c, REF_RAW);
  int n = c->n, me = c->rank;
  size_t *a = xmalloc(4 * (size_t)n * sizeof *a), *sc = a, *sd = a + n, *rcn = a + 2 * n,
         *rd = a + 3 * n, st = 0, rt = 0;
  for (int j = 0; j < n; j++) {
    sc[j] = a2a_count(c, me, j);
    sd[j] = st;
    st += sc[j];
    rcn[j] = a2a_count(c, j, me);
    rd[j] = rt;
    rt += rcn[j];
  }
  char *in = xmalloc(st * c->es), *out = xmalloc(rt * c->es), *want = xmalloc(rt * c->es);
  for (int j = 0; j < n; j++) {
    ref_fill(&rc, me * n + j, 0, sc[j], in + sd[j] * c->es);
    ref_fill(&rc, j * n + me, 0, rcn[j], want + rd[j] * c->es);
  }
  CHECK_OK(c, tutti_alltoallv(in, sc, sd, out, rcn, rd, c->dtype, c->comm), "alltoallv");
  check_bytes(c, "alltoallv", out, want, rt * c->es);
  free(in);
  free(out);
  free(want);
  free(a);
}

static void do_barrier(const call_t *c) { CHECK_OK(c, tutti_barrier(c->comm), "barrier"); }

/* A ring of point-to-point messages in a group (all posted at once). */
static void do_sendrecv(const call_t *c) {
  if (c->n == 1) return; /* a rank cannot message itself */
  ref_case_t rc = rcase(c, REF_RAW);
  int to = (c->rank + 1) % c->n, from = (c->rank + c->n - 1) % c->n;
  char *in = xmalloc(c->count * c->es), *out = xmalloc(c->count * c->es),
       *want = xmalloc(c->count * c->es);
  ref_fill(&rc, c->rank, 0, c->count, in);
  ref_fill(&rc, from, 0, c->count, want);
  CHECK_OK(c, tutti_group_start(), "group_start");
  CHECK_OK(c, tutti_send(in, c->count, c->dtype, to, c->comm), "send");
  CHECK_OK(c, tutti_recv(out, c->count, c->dtype, from, c->comm), "recv");
  CHECK_OK(c, tutti_group_end(), "group_end");
  check_bytes(c, "send/recv", out, want, c->count * c->es);
  free(in);
  free(out);
  free(want);
}

/* ---- The matrix ----------------------------------------------------------------------- */

typedef struct kind {
  tutti_coll_t coll; /* TUTTI_COLL_SEND: point-to-point, no algorithm */
  int reduces, inplace_ok;
  void (*run)(const call_t *c);
} kind_t;

static atomic_int ncalls; /* calls rank 0 checked, for the summary line */

static void rank_matrix(tutti_comm_t comm, int rank, int n, void *arg) {
  const kind_t *k = arg;
  int nalgos;
  const tutti_algo_t *algos = tutti__algo_table(&nalgos);
  dop_t list[48];
  int nd = dops(n, k->reduces, list);
  static const size_t counts[] = {1, 5, 67, 1000};
  uint64_t seed = 1;
  for (int ai = 0; ai < (k->coll == TUTTI_COLL_SEND ? 1 : nalgos); ai++) {
    const tutti_algo_t *a = k->coll == TUTTI_COLL_SEND ? NULL : &algos[ai];
    for (int d = 0; d < nd; d++)
      for (int ci = 0; ci < 4; ci++) {
        /* The largest count (backpressure through 4 KiB queues) for one dtype only. */
        if (ci == 3 && d != 0) continue;
        call_t c = {comm, rank, n, a, list[d].dtype, list[d].op, counts[ci],
                    k->inplace_ok && ci == 1, seed++, ref_dtype_size(list[d].dtype)};
        if (a && !trun_force(comm, a, k->coll, c.count, c.es)) continue;
        k->run(&c);
        if (rank == 0) atomic_fetch_add(&ncalls, 1);
      }
  }
}

static void matrix(const kind_t *k) {
  tutti_config_t cfg;
  trun_config(&cfg);
  /* ref.c builds a table on first use: build it here, before any thread reads it. */
  ref_case_t warm = {TUTTI_INT8, TUTTI_SUM, REF_EXACT, 0, 1};
  char b;
  ref_fill(&warm, 0, 0, 1, &b);
  for (int i = 0; i < NSIZES; i++) trun(sizes[i], &cfg, rank_matrix, (void *)k);
  printf("  %s: %d calls checked at %d rank counts\n", tutti__coll_name(k->coll),
         atomic_load(&ncalls), NSIZES);
  fflush(stdout);
  if (atomic_load(&ncalls) == 0) harness_fail(__FILE__, __LINE__, "no call ran");
}

#define MATRIX_TEST(name, coll, reduces, inplace)                                           \
  TEST(name) {                                                                              \
    static const kind_t k = {coll, reduces, inplace, do_##name};                            \
    matrix(&k);                                                                             \
  }

MATRIX_TEST(allreduce, TUTTI_COLL_ALLREDUCE, 1, 1)
MATRIX_TEST(reduce, TUTTI_COLL_REDUCE, 1, 1)
MATRIX_TEST(reduce_scatter, TUTTI_COLL_REDUCE_SCATTER, 1, 1)
MATRIX_TEST(reduce_scatterv, TUTTI_COLL_REDUCE_SCATTERV, 1, 0)
MATRIX_TEST(allgather, TUTTI_COLL_ALLGATHER, 0, 1)
MATRIX_TEST(allgatherv, TUTTI_COLL_ALLGATHERV, 0, 1)
MATRIX_TEST(broadcast, TUTTI_COLL_BROADCAST, 0, 1)
MATRIX_TEST(gatherv, TUTTI_COLL_GATHERV, 0, 0)
MATRIX_TEST(scatterv, TUTTI_COLL_SCATTERV, 0, 0)
MATRIX_TEST(alltoallv, TUTTI_COLL_ALLTOALLV, 0, 0)
MATRIX_TEST(barrier, TUTTI_COLL_BARRIER, 0, 0)
MATRIX_TEST(sendrecv, TUTTI_COLL_SEND, 0, 0)

int main(int argc, char **argv) { return harness_main(argc, argv); }
