/*
 * contract_check: regressions of issue 11, written against tutti.h only. Run on 2 ranks:
 *
 *   tutti-run -n 2 contract_check CASE
 *
 *   group_many   a group over 70 communicators (dups) loses no request (item 2)
 *   group_order  y = sum(x), then z = sum(y) in one group gives z of the new y (item 3)
 *   group_bad    an invalid call inside a group makes tutti_group_end fail, with a sentence,
 *                while the group's valid calls still run (item 16)
 *   last_error   the first failure stays in tutti_comm_last_error after a later argument
 *                error (item 13)
 *   destroy_gone destroying communicators whose peer has already closed its sockets takes
 *                no waiting: each used to stall 2 s on a reset socket's stale send queue
 *   decisions    alltoallv with overlapping receive blocks and alltoall in place are
 *                INVALID_ARGUMENT; set_timeout with a request in flight is INVALID_USAGE;
 *                integer AVG wraps its sum in the element type (item 16)
 *
 * Every expected value is computed here from the inputs, independently of the library.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tutti.h"

static int rank = -1, failures;

#define CHECK(cond, ...)                                                                    \
  do {                                                                                      \
    if (!(cond)) {                                                                          \
      fprintf(stderr, "contract_check rank %d: FAIL (%s:%d): ", rank, __FILE__, __LINE__);  \
      fprintf(stderr, __VA_ARGS__);                                                         \
      fputc('\n', stderr);                                                                  \
      failures++;                                                                           \
    }                                                                                       \
  } while (0)

#define NCOMMS 70 /* past the old fixed limit of 64 communicators per group */

static void group_many(tutti_comm_t world) {
  tutti_comm_t c[NCOMMS];
  int32_t in[NCOMMS], out[NCOMMS];
  for (int i = 0; i < NCOMMS; i++) {
    tutti_result_t r = tutti_comm_dup(world, &c[i]);
    CHECK(r == TUTTI_SUCCESS, "dup %d: %s", i, tutti_comm_last_error(world));
    if (r != TUTTI_SUCCESS) exit(1);
  }
  /* Blocking calls on the first half, requests on the second: both kinds must run. */
  tutti_request_t req[NCOMMS] = {0};
  tutti_group_start();
  for (int i = 0; i < NCOMMS; i++) {
    in[i] = (rank + 1) * (i + 1);
    out[i] = -1;
    tutti_result_t r = i < NCOMMS / 2
                           ? tutti_allreduce(&in[i], &out[i], 1, TUTTI_INT32, TUTTI_SUM, c[i])
                           : tutti_iallreduce(&in[i], &out[i], 1, TUTTI_INT32, TUTTI_SUM, c[i],
                                              &req[i]);
    CHECK(r == TUTTI_SUCCESS, "call %d in the group: %s", i, tutti_result_string(r));
  }
  tutti_result_t r = tutti_group_end();
  CHECK(r == TUTTI_SUCCESS, "tutti_group_end over %d communicators: %s (%s)", NCOMMS,
        tutti_result_string(r), tutti_comm_last_error(c[NCOMMS - 1]));
  for (int i = 0; i < NCOMMS; i++) {
    if (req[i]) {
      tutti_result_t w = tutti_wait(req[i]);
      CHECK(w == TUTTI_SUCCESS, "wait %d: %s", i, tutti_result_string(w));
      tutti_request_free(req[i]);
    }
    CHECK(out[i] == 3 * (i + 1), "communicator %d: sum %d, expected %d", i, out[i], 3 * (i + 1));
  }
  for (int i = 0; i < NCOMMS; i++) tutti_comm_destroy(c[i]);
}

#define NGONE 8

static void destroy_gone(tutti_comm_t world) {
  tutti_comm_t c[NGONE];
  for (int i = 0; i < NGONE; i++) {
    tutti_result_t r = tutti_comm_dup(world, &c[i]);
    CHECK(r == TUTTI_SUCCESS, "dup %d: %s", i, tutti_comm_last_error(world));
    if (r != TUTTI_SUCCESS) exit(1);
    int32_t one = 1, sum = 0; /* connects the pair on this communicator */
    r = tutti_allreduce(&one, &sum, 1, TUTTI_INT32, TUTTI_SUM, c[i]);
    CHECK(r == TUTTI_SUCCESS && sum == 2, "allreduce on dup %d: %s, sum %d",
          i, tutti_result_string(r), (int)sum);
  }
  int32_t done = 1;
  if (rank == 1) {
    for (int i = 0; i < NGONE; i++) tutti_comm_destroy(c[i]);
    tutti_send(&done, 1, TUTTI_INT32, 0, world);
    return;
  }
  tutti_recv(&done, 1, TUTTI_INT32, 1, world);
  usleep(100000); /* rank 1's closed sockets answer anything more with a reset */
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (int i = 0; i < NGONE; i++) tutti_comm_destroy(c[i]);
  clock_gettime(CLOCK_MONOTONIC, &b);
  double s = (double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec);
  /* Normally milliseconds; the defect took 2 s per communicator. The bound only catches it. */
  CHECK(s < (double)NGONE, "destroying %d communicators whose peer is gone took %.2f s", NGONE, s);
}

static void group_order(tutti_comm_t c) {
  /* y = sum(x) = 3 (ranks contribute 1 and 2); z = sum(y) = 6. From the stale y (-100 on
   * both ranks) z would be -200. */
  for (int inplace = 0; inplace < 2; inplace++) {
    float x = (float)(rank + 1), y = -100.0f, z = 0.0f;
    float w[2] = {(float)rank, 5.0f}, wz = 0.0f;
    tutti_group_start();
    tutti_allreduce(&x, &y, 1, TUTTI_FLOAT32, TUTTI_SUM, c);
    if (inplace) {
      z = y; /* not read: the in-place case below overwrites it */
      tutti_allreduce(&y, &y, 1, TUTTI_FLOAT32, TUTTI_SUM, c);
    } else {
      tutti_allreduce(&y, &z, 1, TUTTI_FLOAT32, TUTTI_SUM, c);
    }
    /* An independent call after them must still be right (and may travel with them). */
    tutti_allreduce(w, &wz, 1, TUTTI_FLOAT32, TUTTI_SUM, c);
    tutti_result_t r = tutti_group_end();
    CHECK(r == TUTTI_SUCCESS, "group: %s", tutti_comm_last_error(c));
    float got = inplace ? y : z;
    CHECK(got == 6.0f, "%s: z = %g, expected 6 (sum over ranks of y = 3)",
          inplace ? "in place" : "separate output", got);
    if (!inplace) CHECK(y == 3.0f, "y = %g, expected 3", y);
    CHECK(wz == 1.0f, "independent all-reduce: %g, expected 1", wz);
  }
  /* Dependence on one rank only: the ranks must still agree on how to pack. */
  float a = 1.0f, b = -7.0f, d = 0.0f, e = 0.0f;
  tutti_group_start();
  tutti_allreduce(&a, &b, 1, TUTTI_FLOAT32, TUTTI_SUM, c);
  tutti_allreduce(rank == 0 ? &b : &a, &d, 1, TUTTI_FLOAT32, TUTTI_SUM, c);
  tutti_allreduce(&a, &e, 1, TUTTI_FLOAT32, TUTTI_SUM, c);
  tutti_result_t r = tutti_group_end();
  CHECK(r == TUTTI_SUCCESS, "one-sided dependence: %s", tutti_comm_last_error(c));
  CHECK(b == 2.0f && d == 3.0f && e == 2.0f, "one-sided dependence: b %g d %g e %g, expected "
        "2 3 2", b, d, e);
}

static void group_bad(tutti_comm_t c) {
  int32_t x = rank + 1, y = 0, junk = 0;
  tutti_group_start();
  tutti_result_t bad = tutti_allreduce(&junk, &junk, 1, (tutti_dtype_t)99, TUTTI_SUM, c);
  tutti_result_t good = tutti_allreduce(&x, &y, 1, TUTTI_INT32, TUTTI_SUM, c);
  tutti_result_t r = tutti_group_end();
  CHECK(bad == TUTTI_ERR_INVALID_ARGUMENT, "the invalid call returned %s",
        tutti_result_string(bad));
  CHECK(good == TUTTI_SUCCESS, "the valid call returned %s", tutti_result_string(good));
  CHECK(r == TUTTI_ERR_INVALID_ARGUMENT, "tutti_group_end after an invalid call returned %s",
        tutti_result_string(r));
  CHECK(strstr(tutti_comm_last_error(c), "dtype 99") != NULL, "no sentence: '%s'",
        tutti_comm_last_error(c));
  CHECK(y == 3, "the valid call of the group gave %d, expected 3", (int)y);
  /* The next group is clean again, and the communicator usable. */
  tutti_group_start();
  r = tutti_allreduce(&x, &y, 1, TUTTI_INT32, TUTTI_MAX, c);
  r = r == TUTTI_SUCCESS ? tutti_group_end() : r;
  CHECK(r == TUTTI_SUCCESS && y == 2, "next group: %s, max %d", tutti_result_string(r), (int)y);
}

static void last_error(tutti_comm_t c) {
  int32_t v = 1;
  /* An argument error first: it leaves the communicator usable; a later failure replaces it. */
  tutti_result_t r = tutti_allreduce(&v, &v, 1, TUTTI_INT32, (tutti_op_t)77, c);
  CHECK(r == TUTTI_ERR_INVALID_ARGUMENT && strstr(tutti_comm_last_error(c), "op 77"),
        "bad op: %s: %s", tutti_result_string(r), tutti_comm_last_error(c));
  /* A real failure: the ranks disagree on the count. */
  int32_t buf[4] = {0};
  r = tutti_allreduce(buf, buf, rank == 0 ? 2 : 3, TUTTI_INT32, TUTTI_SUM, c);
  CHECK(r == TUTTI_ERR_INVALID_USAGE || r == TUTTI_ERR_REMOTE, "mismatch returned %s",
        tutti_result_string(r));
  char first[1024];
  snprintf(first, sizeof first, "%s", tutti_comm_last_error(c));
  CHECK(strstr(first, "tutti_allreduce") && !strstr(first, "op 77"),
        "the failure did not replace the argument error: %s", first);
  /* Two later argument errors: the failure stays first, the latest error follows it. */
  tutti_allgather(NULL, buf, 1, TUTTI_INT32, c);
  r = tutti_broadcast(buf, buf, 1, TUTTI_INT32, 5, c);
  const char *now = tutti_comm_last_error(c);
  CHECK(r == TUTTI_ERR_INVALID_ARGUMENT, "bad root returned %s", tutti_result_string(r));
  CHECK(strncmp(now, first, strlen(first)) == 0, "the first failure is gone: '%s' (was '%s')",
        now, first);
  CHECK(strstr(now, "root 5") != NULL, "the later argument error is not reported: %s", now);
  CHECK(strstr(now, "sendbuf is NULL") == NULL, "an older later note was kept: %s", now);
}

static void decisions(tutti_comm_t c) {
  int n = 2;
  /* alltoallv: receive blocks 0..1 and 1..2 overlap at element 1. */
  int32_t s[4] = {1, 2, 3, 4}, d[4] = {0};
  size_t cnt[2] = {2, 2}, sdsp[2] = {0, 2}, rdsp[2] = {0, 1};
  tutti_result_t r = tutti_alltoallv(s, cnt, sdsp, d, cnt, rdsp, TUTTI_INT32, c);
  CHECK(r == TUTTI_ERR_INVALID_ARGUMENT && strstr(tutti_comm_last_error(c), "overlap"),
        "alltoallv with overlapping receive blocks: %s: %s", tutti_result_string(r),
        tutti_comm_last_error(c));
  /* Reordered but disjoint receive blocks stay valid. */
  size_t rdsp_ok[2] = {2, 0};
  r = tutti_alltoallv(s, cnt, sdsp, d, cnt, rdsp_ok, TUTTI_INT32, c);
  CHECK(r == TUTTI_SUCCESS, "alltoallv with reordered blocks: %s", tutti_comm_last_error(c));
  /* Rank i's block j (elements 2j, 2j+1 of s) lands on rank j at block rdsp_ok[i]. */
  for (int i = 0; i < n && r == TUTTI_SUCCESS; i++)
    for (int k = 0; k < 2; k++) {
      int32_t want = (int32_t)(2 * rank + k + 1); /* every rank sends the same s */
      CHECK(d[rdsp_ok[i] + (size_t)k] == want, "alltoallv element %zu: %d, expected %d",
            rdsp_ok[i] + (size_t)k, (int)d[rdsp_ok[i] + (size_t)k], (int)want);
    }
  /* alltoall has no in-place form. */
  r = tutti_alltoall(s, s, 2, TUTTI_INT32, c);
  CHECK(r == TUTTI_ERR_INVALID_ARGUMENT, "alltoall in place: %s", tutti_result_string(r));
  /* set_timeout with a request in flight: rank 1 joins the all-reduce only when rank 0,
   * through a second communicator, says it has tried. */
  tutti_comm_t side;
  r = tutti_comm_dup(c, &side);
  CHECK(r == TUTTI_SUCCESS, "dup: %s", tutti_comm_last_error(c));
  if (r != TUTTI_SUCCESS) return;
  int32_t one = 1, sum = 0;
  if (rank == 0) {
    tutti_request_t q;
    r = tutti_iallreduce(&one, &sum, 1, TUTTI_INT32, TUTTI_SUM, c, &q);
    CHECK(r == TUTTI_SUCCESS, "iallreduce: %s", tutti_result_string(r));
    tutti_result_t t = tutti_comm_set_timeout(c, 30.0);
    CHECK(t == TUTTI_ERR_INVALID_USAGE && strstr(tutti_comm_last_error(c), "in flight"),
          "set_timeout with a request in flight: %s: %s", tutti_result_string(t),
          tutti_comm_last_error(c));
    tutti_send(&one, 1, TUTTI_INT32, 1, side); /* now rank 1 may join */
    r = tutti_wait(q);
    tutti_request_free(q);
    CHECK(r == TUTTI_SUCCESS && sum == 2, "the request after the refusal: %s, sum %d",
          tutti_result_string(r), (int)sum);
  } else {
    int32_t go;
    tutti_recv(&go, 1, TUTTI_INT32, 0, side);
    r = tutti_allreduce(&one, &sum, 1, TUTTI_INT32, TUTTI_SUM, c);
    CHECK(r == TUTTI_SUCCESS && sum == 2, "allreduce: %s, sum %d", tutti_result_string(r),
          (int)sum);
  }
  tutti_comm_destroy(side);
  r = tutti_comm_set_timeout(c, 30.0);
  CHECK(r == TUTTI_SUCCESS, "set_timeout when idle: %s", tutti_result_string(r));
  /* Integer AVG wraps the sum in the element type, then truncates toward zero. */
  int8_t a8 = 100, o8 = 0;
  r = tutti_allreduce(&a8, &o8, 1, TUTTI_INT8, TUTTI_AVG, c);
  CHECK(r == TUTTI_SUCCESS && o8 == (int8_t)((int8_t)(100 + 100) / 2),
        "int8 AVG of 100: %d (expected the documented %d)", (int)o8,
        (int)(int8_t)((int8_t)(100 + 100) / 2));
  CHECK(o8 == -28, "int8 AVG of 100 on 2 ranks: %d, documented as -28", (int)o8);
  int32_t a32[2] = {rank ? 4 : 3, rank ? -4 : -3}, o32[2];
  r = tutti_allreduce(a32, o32, 2, TUTTI_INT32, TUTTI_AVG, c);
  CHECK(r == TUTTI_SUCCESS && o32[0] == 3 && o32[1] == -3, "int32 AVG of (3, 4), (-3, -4): "
        "%d %d, expected 3 -3", (int)o32[0], (int)o32[1]);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  alarm(120); /* a hang is a failure, not a stuck run */
  if (argc != 2) return 2;
  tutti_comm_t c;
  if (tutti_comm_init_env(&c) != TUTTI_SUCCESS) return 1;
  int n;
  tutti_comm_rank(c, &rank);
  tutti_comm_size(c, &n);
  if (n != 2) return 2;
  const char *k = argv[1];
  if (!strcmp(k, "group_many"))
    group_many(c);
  else if (!strcmp(k, "destroy_gone"))
    destroy_gone(c);
  else if (!strcmp(k, "group_order"))
    group_order(c);
  else if (!strcmp(k, "group_bad"))
    group_bad(c);
  else if (!strcmp(k, "last_error"))
    last_error(c);
  else if (!strcmp(k, "decisions"))
    decisions(c);
  else
    return 2;
  printf("contract_check %s rank %d: %s\n", k, rank, failures ? "FAIL" : "PASS");
  tutti_comm_destroy(c);
  return failures ? 1 : 0;
}
