/*
 * tutti_comm_abort from another thread: run on 3 ranks under tutti-run. Rank 0 blocks in an
 * all-reduce that rank 1 joins late; a second thread aborts rank 0's communicator. Rank 0 must
 * return TUTTI_ERR_ABORTED promptly, rank 2 (already waiting) and rank 1 (arriving late) must
 * fail with an error instead of hanging, and every later call must fail too.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tutti.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void *aborter(void *arg) {
  usleep(300 * 1000);
  tutti_result_t r = tutti_comm_abort((tutti_comm_t)arg);
  if (r != TUTTI_SUCCESS) {
    fprintf(stderr, "abort_check: tutti_comm_abort returned %s\n", tutti_result_string(r));
    exit(1);
  }
  return NULL;
}

#define CHECK(cond, ...)                                                                    \
  do {                                                                                      \
    if (!(cond)) {                                                                          \
      fprintf(stderr, "abort_check rank %d: FAIL: ", rank);                                 \
      fprintf(stderr, __VA_ARGS__);                                                         \
      fputc('\n', stderr);                                                                  \
      exit(1);                                                                              \
    }                                                                                       \
  } while (0)

int main(void) {
  tutti_comm_t comm;
  int rank = -1, size;
  if (tutti_comm_init_env(&comm) != TUTTI_SUCCESS) return 1;
  tutti_comm_rank(comm, &rank);
  tutti_comm_size(comm, &size);
  CHECK(size == 3, "run with 3 ranks, not %d", size);
  float buf[1024];
  for (int i = 0; i < 1024; i++) buf[i] = (float)rank;
  CHECK(tutti_allreduce(buf, buf, 1024, TUTTI_FLOAT32, TUTTI_SUM, comm) == TUTTI_SUCCESS,
        "warm-up all-reduce failed: %s", tutti_comm_last_error(comm));
  CHECK(buf[7] == 3.0f, "warm-up all-reduce gave %g", (double)buf[7]);

  pthread_t th;
  if (rank == 0) pthread_create(&th, NULL, aborter, comm);
  if (rank == 1) usleep(1500 * 1000); /* joins after the abort */
  double t0 = now();
  tutti_result_t r = tutti_allreduce(buf, buf, 1024, TUTTI_FLOAT32, TUTTI_SUM, comm);
  double dt = now() - t0;
  printf("abort_check rank %d: all-reduce returned \"%s\" after %.3f s: %s\n", rank,
         tutti_result_string(r), dt, tutti_comm_last_error(comm));
  if (rank == 0) {
    pthread_join(th, NULL);
    CHECK(r == TUTTI_ERR_ABORTED, "expected TUTTI_ERR_ABORTED");
    /* Bounds catch hangs (TUTTI_TIMEOUT is 20 s), not slowness: normally ~0.3 s. */
    CHECK(dt < 6.0, "abort took %.3f s to take effect", dt);
  } else {
    CHECK(r != TUTTI_SUCCESS, "all-reduce succeeded without rank 0");
    CHECK(dt < 8.0, "noticing rank 0's abort took %.3f s", dt);
    CHECK(strstr(tutti_comm_last_error(comm), "rank") != NULL, "last error names no rank");
  }
  CHECK(tutti_allreduce(buf, buf, 1024, TUTTI_FLOAT32, TUTTI_SUM, comm) != TUTTI_SUCCESS,
        "a collective after the failure succeeded");
  t0 = now();
  CHECK(tutti_comm_destroy(comm) == TUTTI_SUCCESS, "destroy failed");
  CHECK(now() - t0 < 5.0, "destroy took %.3f s", now() - t0);
  printf("abort_check rank %d: PASS\n", rank);
  return 0;
}
