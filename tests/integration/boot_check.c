/*
 * boot_check: one rank of a launched job (tutti_comm_init_env) for boot_check.sh. It inits,
 * checks an all-reduce of rank-dependent values against the sum computed here, destroys, and
 * prints one line: "boot_check rank R PASS init_s T" or "boot_check FAIL init: RESULT" (the
 * library's sentence is on stderr). Exit 0 only on PASS.
 */
#include <stdio.h>
#include <time.h>

#include "tutti.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(void) {
  tutti_comm_t comm;
  double t0 = now_s();
  tutti_result_t rc = tutti_comm_init_env(&comm);
  double t1 = now_s();
  if (rc != TUTTI_SUCCESS) {
    printf("boot_check FAIL init: %s after %.1f s\n", tutti_result_string(rc), t1 - t0);
    return 2;
  }
  int rank, n;
  tutti_comm_rank(comm, &rank);
  tutti_comm_size(comm, &n);
  long long x[2] = {rank + 1, 1000LL * rank}, y[2] = {0, 0};
  rc = tutti_allreduce(x, y, 2, TUTTI_INT64, TUTTI_SUM, comm);
  long long want0 = (long long)n * (n + 1) / 2, want1 = 1000LL * n * (n - 1) / 2;
  int ok = rc == TUTTI_SUCCESS && y[0] == want0 && y[1] == want1;
  if (tutti_comm_destroy(comm) != TUTTI_SUCCESS) ok = 0;
  if (!ok) {
    printf("boot_check rank %d FAIL allreduce: %s, got %lld %lld want %lld %lld\n", rank,
           tutti_result_string(rc), y[0], y[1], want0, want1);
    return 1;
  }
  printf("boot_check rank %d PASS init_s %.3f\n", rank, t1 - t0);
  return 0;
}
