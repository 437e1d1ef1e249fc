/*
 * Contract checking: ranks that disagree on a call must all fail (none may hang, none may have
 * its buffer written past its count), and the ranks that see the disagreement must say which
 * field differs. Run on 3 ranks: mismatch_check count|dtype|op|root|coll.
 *
 * Over shm every rank must return TUTTI_ERR_INVALID_USAGE. Over tcp a rank whose only news is
 * a closed socket may return TUTTI_ERR_REMOTE instead. With different broadcast roots the two
 * would-be roots only send, so they may return success; their next call must then fail.
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

int main(int argc, char **argv) {
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
