/*
 * init_time: each rank times tutti_comm_init_env (and, separately, a first barrier-like
 * all-reduce of one int) and prints "init_time rank R init_s X first_s Y main_at T", T being
 * the wall-clock time main was reached (process start, against the launch time). Run it under
 * tutti-run -n N and take the largest init_s: the slowest rank's init.
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
  struct timespec wall;
  clock_gettime(CLOCK_REALTIME, &wall);
  tutti_comm_t comm;
  double t0 = now_s();
  tutti_result_t rc = tutti_comm_init_env(&comm);
  double t1 = now_s();
  if (rc != TUTTI_SUCCESS) {
    fprintf(stderr, "init_time: init failed: %d\n", (int)rc);
    return 1;
  }
  int rank, x = 1, y = 0;
  tutti_comm_rank(comm, &rank);
  rc = tutti_allreduce(&x, &y, 1, TUTTI_INT32, TUTTI_SUM, comm);
  double t2 = now_s();
  printf("init_time rank %d init_s %.3f first_s %.3f main_at %.6f\n", rank, t1 - t0, t2 - t1,
         (double)wall.tv_sec + (double)wall.tv_nsec / 1e9);
  tutti_comm_destroy(comm);
  return rc == TUTTI_SUCCESS ? 0 : 1;
}
