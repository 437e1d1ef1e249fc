/*
 * Contract checking: ranks that disagree on a call must all fail (none may hang, none may have
 * its buffer written past its count), and the ranks that see the disagreement must say which
 * field differs. Run on 3 ranks: mismatch_check count|dtype|op|root|coll.
 *
 * Over shm every rank must return TUTTI_ERR_INVALID_USAGE. Over tcp a rank whose only news is
 * a closed socket may return TUTTI_ERR_REMOTE instead. With different broadcast roots the two
 * would-be roots only send, so they may return success; their next call must then fail.
 *
 *   mismatch_check reduce_root|bcast_root BYTES
 *
 * runs a reduce or broadcast of BYTES bytes where rank 1 names root 1 and the others root 0
 * (any number of ranks): every rank must fail well before the deadline, and a rank that
 * reports the disagreement itself must name both roots. A reduce's roots (ranks 0 and 1,
 * which wait) must fail in the call itself; every other rank in the call or, where it could
 * finish before the other root started the call, in its next call.
 *
 *   mismatch_check allgather_count BYTES
 *
 * an all-gather of BYTES bytes a rank where rank 1 sends one element more (any number of
 * ranks; with TUTTI_ALGO=oneshot past a mailbox it goes in pieces, one one-shot call each):
 * every rank must fail with TUTTI_ERR_INVALID_USAGE in the call, well before the deadline,
 * and write nothing past the output its own count gives.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tutti.h"

enum { N = 64, GUARD = 0x5A };

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Different roots at a given size, on any number of ranks (issue 11, item 6). */
static int rooted(const char *kind, size_t bytes, int tcp) {
  tutti_comm_t c;
  int r, n;
  if (tutti_comm_init_env(&c) != TUTTI_SUCCESS) return 1;
  tutti_comm_rank(c, &r);
  tutti_comm_size(c, &n);
  int reduce = !strcmp(kind, "reduce_root"), root = r == 1 ? 1 : 0;
  size_t count = bytes / 4;
  float *x = malloc(count * sizeof *x), *y = malloc(count * sizeof *y);
  if (!x || !y) return 1;
  for (size_t i = 0; i < count; i++) x[i] = (float)(r + 1);
  memset(y, 0, count * sizeof *y);
  double t0 = now();
  tutti_result_t res = reduce ? tutti_reduce(x, y, count, TUTTI_FLOAT32, TUTTI_SUM, root, c)
                              : tutti_broadcast(r == root ? x : y, y, count, TUTTI_FLOAT32, root, c);
  double dt = now() - t0;
  char err[1024];
  snprintf(err, sizeof err, "%s", tutti_comm_last_error(c));
  printf("mismatch_check %s %zu rank %d (root %d): %s after %.3f s: %s\n", kind, bytes, r, root,
         tutti_result_string(res), dt, err);
  /* A reduce's roots wait, so they must fail in the call. Any other rank may finish before
   * the rank that names the other root has even started the call (a broadcast's receivers
   * read root 0 only; would-be roots and leaves only send); its next call must fail. */
  int ok = 1, may_finish = reduce ? r >= 2 : 1, in_call = res != TUTTI_SUCCESS;
  if (res == TUTTI_SUCCESS && may_finish) {
    res = tutti_barrier(c);
    snprintf(err, sizeof err, "%s", tutti_comm_last_error(c));
    printf("mismatch_check %s rank %d: next call: %s: %s\n", kind, r, tutti_result_string(res),
           err);
  }
  if (res == TUTTI_SUCCESS) {
    printf("mismatch_check %s rank %d: FAIL: the call succeeded\n", kind, r);
    ok = 0;
  } else if (res != TUTTI_ERR_INVALID_USAGE && !(tcp && res == TUTTI_ERR_REMOTE)) {
    printf("mismatch_check %s rank %d: FAIL: expected invalid usage\n", kind, r);
    ok = 0;
  } else if (in_call && strstr(err, "root") == NULL && strstr(err, "gave up") == NULL) {
    printf("mismatch_check %s rank %d: FAIL: the error names neither the roots nor the rank "
           "that saw them\n", kind, r);
    ok = 0;
  }
  if (strstr(err, "with root") && !(strstr(err, "root 0") && strstr(err, "root 1"))) {
    printf("mismatch_check %s rank %d: FAIL: the error does not name both roots\n", kind, r);
    ok = 0;
  }
  /* The deadline is 20 s: a stall to it is the defect. Failing takes milliseconds. */
  if (dt > 5.0) {
    printf("mismatch_check %s rank %d: FAIL: took %.1f s\n", kind, r, dt);
    ok = 0;
  }
  tutti_comm_destroy(c);
  free(x);
  free(y);
  printf("mismatch_check %s %zu rank %d of %d: %s\n", kind, bytes, r, n, ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}

static int allgather_count(size_t bytes) {
  tutti_comm_t c;
  int r, n;
  if (tutti_comm_init_env(&c) != TUTTI_SUCCESS) return 1;
  tutti_comm_rank(c, &r);
  tutti_comm_size(c, &n);
  size_t count = bytes / 4 + (r == 1), out = count * 4 * (size_t)n, slack = 4096;
  float *x = malloc(count * sizeof *x);
  unsigned char *y = malloc(out + slack);
  if (!x || !y) return 1;
  for (size_t i = 0; i < count; i++) x[i] = (float)(r + 1);
  memset(y, GUARD, out + slack);
  double t0 = now();
  tutti_result_t res = tutti_allgather(x, y, count, TUTTI_FLOAT32, c);
  double dt = now() - t0;
  printf("mismatch_check allgather_count %zu rank %d (count %zu): %s after %.3f s: %s\n", bytes,
         r, count, tutti_result_string(res), dt, tutti_comm_last_error(c));
  int ok = res == TUTTI_ERR_INVALID_USAGE && dt < 5.0;
  for (size_t i = out; i < out + slack && ok; i++)
    if (y[i] != GUARD) {
      printf("mismatch_check allgather_count rank %d: FAIL: byte %zu past the output written\n",
             r, i);
      ok = 0;
    }
  if (res != TUTTI_ERR_INVALID_USAGE)
    printf("mismatch_check allgather_count rank %d: FAIL: expected invalid usage\n", r);
  tutti_comm_destroy(c);
  free(x);
  free(y);
  printf("mismatch_check allgather_count %zu rank %d of %d: %s\n", bytes, r, n,
         ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}

int main(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "allgather_count"))
    return allgather_count(strtoull(argv[2], NULL, 0));
  if (argc == 3) {
    const char *t = getenv("TUTTI_TRANSPORT");
    return rooted(argv[1], strtoull(argv[2], NULL, 0), t && !strcmp(t, "tcp"));
  }
  if (argc != 2) return 2;
  const char *kind = argv[1];
  const char *transport = getenv("TUTTI_TRANSPORT");
  int tcp = transport && !strcmp(transport, "tcp");
  tutti_comm_t c;
  int r, n;
  if (tutti_comm_init_env(&c) != TUTTI_SUCCESS) return 1;
  tutti_comm_rank(c, &r);
  tutti_comm_size(c, &n);
  if (n != 3) return 2;
  /* Buffers are bigger than any count used; the tail must stay untouched. */
  unsigned char buf[N * 8];
  memset(buf, GUARD, sizeof buf);
  size_t count = 4, limit = 4 * 4;
  double t0 = now();
  tutti_result_t res;
  if (!strcmp(kind, "count")) {
    count = r == 1 ? 5 : 4;
    limit = count * 4;
    res = tutti_allreduce(buf, buf, count, TUTTI_FLOAT32, TUTTI_SUM, c);
  } else if (!strcmp(kind, "dtype")) {
    limit = r == 2 ? 32 : 16;
    res = tutti_allreduce(buf, buf, 4, r == 2 ? TUTTI_FLOAT64 : TUTTI_FLOAT32, TUTTI_SUM, c);
  } else if (!strcmp(kind, "op")) {
    res = tutti_allreduce(buf, buf, 4, TUTTI_INT32, r == 0 ? TUTTI_MAX : TUTTI_SUM, c);
  } else if (!strcmp(kind, "root")) {
    res = tutti_broadcast(buf, buf, 4, TUTTI_FLOAT32, r == 1 ? 1 : 0, c);
  } else if (!strcmp(kind, "coll")) {
    limit = r == 0 ? 4 * 4 * 3 : 16;
    res = r == 0 ? tutti_allgather(buf, buf, 4, TUTTI_FLOAT32, c)
                 : tutti_allreduce(buf, buf, 4, TUTTI_FLOAT32, TUTTI_SUM, c);
  } else {
    return 2;
  }
  double dt = now() - t0;
  printf("mismatch_check %s rank %d: %s after %.3f s: %s\n", kind, r, tutti_result_string(res),
         dt, tutti_comm_last_error(c));
  int ok = 1;
  for (size_t i = limit; i < sizeof buf; i++)
    if (buf[i] != GUARD) {
      printf("mismatch_check %s rank %d: FAIL: byte %zu past the count was written\n", kind, r,
             i);
      ok = 0;
      break;
    }
  if (res == TUTTI_SUCCESS && !strcmp(kind, "root")) {
    /* A would-be root: the disagreement must surface on the next call. */
    res = tutti_barrier(c);
    printf("mismatch_check root rank %d: next call: %s: %s\n", r, tutti_result_string(res),
           tutti_comm_last_error(c));
  }
  if (res == TUTTI_SUCCESS) {
    printf("mismatch_check %s rank %d: FAIL: the call succeeded\n", kind, r);
    ok = 0;
  } else if (res != TUTTI_ERR_INVALID_USAGE && !(tcp && res == TUTTI_ERR_REMOTE)) {
    printf("mismatch_check %s rank %d: FAIL: expected invalid usage\n", kind, r);
    ok = 0;
  }
  if (dt > 5.0) {
    printf("mismatch_check %s rank %d: FAIL: took %.1f s\n", kind, r, dt);
    ok = 0;
  }
  tutti_comm_destroy(c);
  printf("mismatch_check %s rank %d: %s\n", kind, r, ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
