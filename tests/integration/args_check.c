/*
 * args_check: invalid arguments are refused with TUTTI_ERR_INVALID_ARGUMENT, leave the buffers
 * alone, and leave the communicator usable.
 *
 *   tutti-run -n 2 args_check        tutti-run -n 3 args_check
 *
 * Arguments are checked locally, before any communication, so every rank makes the same
 * sequence of invalid calls and none of them needs a partner. Where NCCL checks a buffer only
 * on the root (broadcast's sendbuf, reduce's recvbuf) each rank names itself root, so that the
 * call is invalid on every rank whichever way the library reads the contract. After each group
 * of invalid calls, and at the end, a correct all-reduce must still give the right answer.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tutti.h"

#define COUNT 5
#define MAX_RANKS 64
#define PATTERN 0x3C

static tutti_comm_t comm;
static int rank, nranks, failures, checks;
static int32_t sendbuf[COUNT * MAX_RANKS], recvbuf[COUNT * MAX_RANKS];

__attribute__((format(printf, 1, 2))) static void fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "args_check rank %d: FAIL: ", rank);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  failures++;
}

static void fill_pattern(void) {
  memset(sendbuf, PATTERN, sizeof sendbuf);
  memset(recvbuf, PATTERN, sizeof recvbuf);
}

static int untouched(const void *buf, size_t bytes) {
  const unsigned char *p = buf;
  for (size_t i = 0; i < bytes; i++)
    if (p[i] != PATTERN) return 0;
  return 1;
}

/* Checks one result against the expected code, and that both static buffers still hold the
 * pattern (each invalid call reads or writes at most them). */
static void expect(tutti_result_t got, tutti_result_t want, const char *what) {
  checks++;
  if (got != want)
    fail("%s: returned %s, expected %s", what, tutti_result_string(got),
         tutti_result_string(want));
  if (!untouched(sendbuf, sizeof sendbuf) || !untouched(recvbuf, sizeof recvbuf))
    fail("%s: a buffer was written by a refused call", what);
  fill_pattern();
}

#define EXPECT_INVALID(call) expect((call), TUTTI_ERR_INVALID_ARGUMENT, #call)

/* A correct all-reduce: proves the communicator still works after the refused calls. */
static void still_works(const char *after) {
  int32_t in[COUNT], out[COUNT];
  for (int i = 0; i < COUNT; i++) in[i] = rank * 10 + i;
  tutti_result_t rc = tutti_allreduce(in, out, COUNT, TUTTI_INT32, TUTTI_SUM, comm);
  checks++;
  if (rc != TUTTI_SUCCESS) {
    fprintf(stderr, "args_check rank %d: FAIL: all-reduce after %s: %s: %s\n", rank, after,
            tutti_result_string(rc), tutti_comm_last_error(comm));
    exit(1); /* the communicator is unusable: nothing further can be trusted */
  }
  for (int i = 0; i < COUNT; i++) {
    int32_t want = 10 * nranks * (nranks - 1) / 2 + nranks * i;
    if (out[i] != want) fail("all-reduce after %s: element %d is %d, expected %d", after, i,
                             out[i], want);
  }
}

static void null_buffers(void) {
  int32_t *s = sendbuf, *r = recvbuf;
  EXPECT_INVALID(tutti_allgather(NULL, r, COUNT, TUTTI_INT32, comm));
  EXPECT_INVALID(tutti_allgather(s, NULL, COUNT, TUTTI_INT32, comm));
  EXPECT_INVALID(tutti_allreduce(NULL, r, COUNT, TUTTI_INT32, TUTTI_SUM, comm));
  EXPECT_INVALID(tutti_allreduce(s, NULL, COUNT, TUTTI_INT32, TUTTI_SUM, comm));
  EXPECT_INVALID(tutti_reduce_scatter(NULL, r, COUNT, TUTTI_INT32, TUTTI_SUM, comm));
  EXPECT_INVALID(tutti_reduce_scatter(s, NULL, COUNT, TUTTI_INT32, TUTTI_SUM, comm));
  EXPECT_INVALID(tutti_broadcast(NULL, r, COUNT, TUTTI_INT32, rank, comm)); /* own root */
  EXPECT_INVALID(tutti_broadcast(s, NULL, COUNT, TUTTI_INT32, 0, comm));
  EXPECT_INVALID(tutti_reduce(NULL, r, COUNT, TUTTI_INT32, TUTTI_SUM, 0, comm));
  EXPECT_INVALID(tutti_reduce(s, NULL, COUNT, TUTTI_INT32, TUTTI_SUM, rank, comm)); /* own root */

  /* The first refused call is this communicator's first error: it must be described. */
  const char *err = tutti_comm_last_error(comm);
  checks++;
  if (!err || !*err)
    fail("tutti_comm_last_error is empty after a refused call");
  else if (rank == 0)
    printf("args_check: last error after a NULL buffer: \"%s\"\n", err);
  still_works("NULL buffers");
}

static void bad_dtypes(void) {
  static const int bad[] = {99, -1};
  int32_t *s = sendbuf, *r = recvbuf;
  for (int i = 0; i < 2; i++) {
    tutti_dtype_t dt = (tutti_dtype_t)bad[i];
    EXPECT_INVALID(tutti_allgather(s, r, COUNT, dt, comm));
    EXPECT_INVALID(tutti_allreduce(s, r, COUNT, dt, TUTTI_SUM, comm));
    EXPECT_INVALID(tutti_reduce_scatter(s, r, COUNT, dt, TUTTI_SUM, comm));
    EXPECT_INVALID(tutti_broadcast(s, r, COUNT, dt, 0, comm));
    EXPECT_INVALID(tutti_reduce(s, r, COUNT, dt, TUTTI_SUM, 0, comm));
  }
  still_works("bad dtypes");
}

static void bad_ops_and_roots(void) {
  static const int bad_ops[] = {99, -1};
  int32_t *s = sendbuf, *r = recvbuf;
  for (int i = 0; i < 2; i++) {
    tutti_op_t op = (tutti_op_t)bad_ops[i];
    EXPECT_INVALID(tutti_allreduce(s, r, COUNT, TUTTI_INT32, op, comm));
    EXPECT_INVALID(tutti_reduce_scatter(s, r, COUNT, TUTTI_INT32, op, comm));
    EXPECT_INVALID(tutti_reduce(s, r, COUNT, TUTTI_INT32, op, 0, comm));
  }
  still_works("bad ops");
  const int bad_roots[] = {-1, nranks, nranks + 7};
  for (int i = 0; i < 3; i++) {
    EXPECT_INVALID(tutti_broadcast(s, r, COUNT, TUTTI_INT32, bad_roots[i], comm));
    EXPECT_INVALID(tutti_reduce(s, r, COUNT, TUTTI_INT32, TUTTI_SUM, bad_roots[i], comm));
  }
  still_works("bad roots");
}

/* Buffers that overlap other than in the call's in-place layout: every rank names itself
 * root where there is one, so each call is refused on every rank. Then the in-place layouts
 * themselves must be accepted (and work). */
static void overlaps(void) {
  int32_t *b = sendbuf;
  EXPECT_INVALID(tutti_allreduce(b, b + 1, COUNT, TUTTI_INT32, TUTTI_SUM, comm));
  EXPECT_INVALID(tutti_allreduce(b + 1, b, COUNT, TUTTI_INT32, TUTTI_SUM, comm));
  EXPECT_INVALID(tutti_allgather(b + rank * COUNT + 1, b, COUNT, TUTTI_INT32, comm));
  EXPECT_INVALID(tutti_reduce_scatter(b, b + rank * COUNT + 1, COUNT, TUTTI_INT32, TUTTI_SUM,
                                      comm));
  EXPECT_INVALID(tutti_broadcast(b, b + 2, COUNT, TUTTI_INT32, rank, comm));
  EXPECT_INVALID(tutti_reduce(b + 3, b, COUNT, TUTTI_INT32, TUTTI_SUM, rank, comm));
  EXPECT_INVALID(tutti_alltoall(b, b, COUNT, TUTTI_INT32, comm));
  EXPECT_INVALID(tutti_gather(b + rank * COUNT + 1, b, COUNT, TUTTI_INT32, rank, comm));
  EXPECT_INVALID(tutti_scatter(b, b + rank * COUNT + 1, COUNT, TUTTI_INT32, rank, comm));
  still_works("overlapping buffers");

  /* The in-place layouts: all-gather from this rank's block, reduce-scatter into it. */
  int32_t *g = recvbuf;
  for (int i = 0; i < COUNT; i++) g[rank * COUNT + i] = rank * 100 + i;
  tutti_result_t rc = tutti_allgather(g + rank * COUNT, g, COUNT, TUTTI_INT32, comm);
  checks++;
  if (rc != TUTTI_SUCCESS) fail("in-place all-gather refused: %s", tutti_comm_last_error(comm));
  for (int r = 0; r < nranks && rc == TUTTI_SUCCESS; r++)
    for (int i = 0; i < COUNT; i++)
      if (g[r * COUNT + i] != r * 100 + i)
        fail("in-place all-gather: element %d of block %d is %d", i, r, g[r * COUNT + i]);
  for (int i = 0; i < COUNT * nranks; i++) g[i] = i;
  rc = tutti_reduce_scatter(g, g + rank * COUNT, COUNT, TUTTI_INT32, TUTTI_SUM, comm);
  checks++;
  if (rc != TUTTI_SUCCESS) fail("in-place reduce-scatter refused: %s", tutti_comm_last_error(comm));
  for (int i = 0; i < COUNT && rc == TUTTI_SUCCESS; i++)
    if (g[rank * COUNT + i] != nranks * (rank * COUNT + i))
      fail("in-place reduce-scatter: element %d is %d", i, g[rank * COUNT + i]);
  fill_pattern();
}

static void null_comm(void) {
  int32_t *s = sendbuf, *r = recvbuf;
  int v = -5;
  EXPECT_INVALID(tutti_allgather(s, r, COUNT, TUTTI_INT32, NULL));
  EXPECT_INVALID(tutti_allreduce(s, r, COUNT, TUTTI_INT32, TUTTI_SUM, NULL));
  EXPECT_INVALID(tutti_reduce_scatter(s, r, COUNT, TUTTI_INT32, TUTTI_SUM, NULL));
  EXPECT_INVALID(tutti_broadcast(s, r, COUNT, TUTTI_INT32, 0, NULL));
  EXPECT_INVALID(tutti_reduce(s, r, COUNT, TUTTI_INT32, TUTTI_SUM, 0, NULL));
  EXPECT_INVALID(tutti_barrier(NULL));
  EXPECT_INVALID(tutti_comm_rank(NULL, &v));
  EXPECT_INVALID(tutti_comm_size(NULL, &v));
  checks++;
  if (v != -5) fail("tutti_comm_rank/size(NULL, &v) wrote v");
  EXPECT_INVALID(tutti_comm_rank(comm, NULL));
  EXPECT_INVALID(tutti_comm_size(comm, NULL));
  /* NCCL answers ncclCommDestroy(NULL) and ncclCommAbort(NULL) with success (free(NULL)
   * style); the brief asks for INVALID_ARGUMENT. Either is accepted; a crash is not. */
  tutti_result_t d = tutti_comm_destroy(NULL), a = tutti_comm_abort(NULL);
  checks += 2;
  if (d != TUTTI_SUCCESS && d != TUTTI_ERR_INVALID_ARGUMENT)
    fail("tutti_comm_destroy(NULL) returned %s", tutti_result_string(d));
  if (a != TUTTI_SUCCESS && a != TUTTI_ERR_INVALID_ARGUMENT)
    fail("tutti_comm_abort(NULL) returned %s", tutti_result_string(a));
  if (rank == 0)
    printf("args_check: tutti_comm_destroy(NULL) -> %s, tutti_comm_abort(NULL) -> %s\n",
           tutti_result_string(d), tutti_result_string(a));
  still_works("NULL communicator");
}

static void zero_counts(void) {
  /* Count 0 is a valid no-op on every rank, even with NULL buffers. */
  expect(tutti_allgather(NULL, NULL, 0, TUTTI_INT32, comm), TUTTI_SUCCESS, "allgather count 0");
  expect(tutti_allreduce(NULL, NULL, 0, TUTTI_FLOAT32, TUTTI_SUM, comm), TUTTI_SUCCESS,
         "allreduce count 0");
  expect(tutti_reduce_scatter(NULL, NULL, 0, TUTTI_INT8, TUTTI_MAX, comm), TUTTI_SUCCESS,
         "reduce_scatter count 0");
  expect(tutti_broadcast(NULL, NULL, 0, TUTTI_UINT64, nranks - 1, comm), TUTTI_SUCCESS,
         "broadcast count 0");
  expect(tutti_reduce(NULL, NULL, 0, TUTTI_FLOAT64, TUTTI_AVG, 0, comm), TUTTI_SUCCESS,
         "reduce count 0");
  still_works("count 0");
}

static void result_strings(void) {
  const char *seen[TUTTI_IN_PROGRESS + 1];
  for (int c = TUTTI_SUCCESS; c <= TUTTI_IN_PROGRESS; c++) {
    const char *s = tutti_result_string((tutti_result_t)c);
    seen[c] = s;
    checks++;
    if (!s || !*s) {
      fail("tutti_result_string(%d) is empty", c);
      continue;
    }
    for (int p = 0; p < c; p++)
      if (seen[p] && strcmp(seen[p], s) == 0)
        fail("tutti_result_string(%d) and (%d) are both \"%s\"", p, c, s);
  }
  static const int bad[] = {99, -1, TUTTI_IN_PROGRESS + 1};
  for (int i = 0; i < 3; i++) {
    const char *s = tutti_result_string((tutti_result_t)bad[i]);
    checks++;
    if (!s || !*s) {
      fail("tutti_result_string(%d) is empty or NULL", bad[i]);
      continue;
    }
    for (int c = TUTTI_SUCCESS; c <= TUTTI_IN_PROGRESS; c++)
      if (seen[c] && strcmp(seen[c], s) == 0)
        fail("tutti_result_string(%d) names a valid code: \"%s\"", bad[i], s);
    if (rank == 0 && i == 0) printf("args_check: tutti_result_string(99) = \"%s\"\n", s);
  }
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  alarm(120); /* a refused call that communicates and hangs is a failure, not a stuck run */
  tutti_result_t rc = tutti_comm_init_env(&comm);
  if (rc != TUTTI_SUCCESS) {
    fprintf(stderr, "args_check: tutti_comm_init_env: %s\n", tutti_result_string(rc));
    return 1;
  }
  if (tutti_comm_rank(comm, &rank) != TUTTI_SUCCESS ||
      tutti_comm_size(comm, &nranks) != TUTTI_SUCCESS || nranks > MAX_RANKS) {
    fprintf(stderr, "args_check: tutti_comm_rank/size failed or too many ranks\n");
    return 1;
  }
  fill_pattern();
  result_strings();
  null_buffers();
  bad_dtypes();
  bad_ops_and_roots();
  null_comm();
  zero_counts();
  overlaps();
  still_works("everything");

  rc = tutti_barrier(comm);
  if (rc != TUTTI_SUCCESS) fail("final barrier: %s", tutti_result_string(rc));
  rc = tutti_comm_destroy(comm);
  if (rc != TUTTI_SUCCESS) fail("tutti_comm_destroy: %s", tutti_result_string(rc));
  if (failures) {
    fprintf(stderr, "args_check rank %d: %d of %d checks FAILED\n", rank, failures, checks);
    return 1;
  }
  if (rank == 0) printf("args_check: %d checks passed (n=%d)\n", checks, nranks);
  return 0;
}
