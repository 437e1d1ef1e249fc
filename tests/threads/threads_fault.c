/*
 * Failures over thread ranks (transport/mem.c): abort from another thread, a timeout, a peer
 * that destroys its communicator during a call, ranks that disagree on a call, bad arguments;
 * and non-blocking calls driven by the progress threads. Every wait must end within seconds
 * with an error on every rank, never a hang (elapsed times are checked against 10x bounds).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "trun.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static tutti_result_t allreduce4(tutti_comm_t comm, size_t count) {
  float in[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[8];
  return tutti_allreduce(in, out, count, TUTTI_FLOAT32, TUTTI_SUM, comm);
}

/* ---- Abort from another thread --------------------------------------------------------- */

typedef struct abort_ctx {
  tutti_result_t res[3], later[3];
  double secs[3];
} abort_ctx_t;

static void *aborter(void *comm) {
  usleep(200 * 1000);
  if (tutti_comm_abort((tutti_comm_t)comm) != TUTTI_SUCCESS) _exit(3);
  return NULL;
}

static void abort_rank(tutti_comm_t comm, int rank, int n, void *arg) {
  (void)n;
  abort_ctx_t *c = arg;
  pthread_t t;
  if (rank == 0 && pthread_create(&t, NULL, aborter, comm) != 0) _exit(3);
  if (rank == 1) usleep(1000 * 1000); /* joins after the abort */
  double t0 = now_s();
  c->res[rank] = allreduce4(comm, 4);
  c->secs[rank] = now_s() - t0;
  c->later[rank] = allreduce4(comm, 4);
  if (rank == 0) pthread_join(t, NULL);
}

TEST(abort_from_another_thread) {
  tutti_config_t cfg;
  trun_config(&cfg);
  abort_ctx_t c;
  memset(&c, 0, sizeof c);
  trun(3, &cfg, abort_rank, &c);
  ASSERT_EQ(c.res[0], TUTTI_ERR_ABORTED);
  for (int r = 0; r < 3; r++) {
    ASSERT(c.res[r] != TUTTI_SUCCESS);
    ASSERT(c.later[r] != TUTTI_SUCCESS);
    ASSERT(c.secs[r] < 10);
  }
}

/* ---- Timeout --------------------------------------------------------------------------- */

typedef struct timeout_ctx {
  tutti_result_t res[3];
  double secs[3];
  char err[3][512];
} timeout_ctx_t;

static void timeout_rank(tutti_comm_t comm, int rank, int n, void *arg) {
  (void)n;
  timeout_ctx_t *c = arg;
  if (rank == 2) return; /* never calls */
  double t0 = now_s();
  c->res[rank] = allreduce4(comm, 4);
  c->secs[rank] = now_s() - t0;
  snprintf(c->err[rank], sizeof c->err[rank], "%s", tutti_comm_last_error(comm));
}

TEST(timeout_names_the_silent_rank) {
  tutti_config_t cfg;
  trun_config(&cfg);
  cfg.timeout_s = 0.5;
  timeout_ctx_t c;
  memset(&c, 0, sizeof c);
  trun(3, &cfg, timeout_rank, &c);
  for (int r = 0; r < 2; r++) {
    if (c.res[r] != TUTTI_ERR_TIMEOUT) fprintf(stderr, "  rank %d: %s\n", r, c.err[r]);
    ASSERT_EQ(c.res[r], TUTTI_ERR_TIMEOUT);
    ASSERT(c.secs[r] < 10);
  }
  /* The first to time out waited its deadline; a rank that started late may hear of it
   * sooner. */
  ASSERT(c.secs[0] >= 0.4 || c.secs[1] >= 0.4);
  /* Whichever rank timed out first says what it waited for; the other names that rank. */
  ASSERT(strstr(c.err[0], "timed out") || strstr(c.err[1], "timed out"));
}

/* ---- A peer destroys its communicator during a call ------------------------------------ */

static void *destroyer(void *comm) {
  usleep(100 * 1000);
  tutti_comm_destroy((tutti_comm_t)comm);
  return NULL;
}

TEST(peer_destroys_during_call) {
  tutti_comm_t comms[2];
  ASSERT_EQ(tutti_comm_init_threads(comms, 2), TUTTI_SUCCESS);
  pthread_t t;
  ASSERT(pthread_create(&t, NULL, destroyer, comms[1]) == 0);
  tutti_comm_set_timeout(comms[0], 60);
  double t0 = now_s();
  tutti_result_t res = allreduce4(comms[0], 4);
  double secs = now_s() - t0;
  pthread_join(t, NULL);
  ASSERT_EQ(res, TUTTI_ERR_REMOTE);
  ASSERT(secs < 10);
  ASSERT(strstr(tutti_comm_last_error(comms[0]), "destroyed its communicator"));
  tutti_comm_destroy(comms[0]);
}

/* ---- Ranks that disagree on a call ------------------------------------------------------ */

typedef struct mismatch_ctx {
  tutti_result_t res[4];
} mismatch_ctx_t;

static void mismatch_rank(tutti_comm_t comm, int rank, int n, void *arg) {
  (void)n;
  mismatch_ctx_t *c = arg;
  c->res[rank] = allreduce4(comm, rank == 3 ? 5 : 4);
}

TEST(disagreement_fails_every_rank) {
  tutti_config_t cfg;
  trun_config(&cfg);
  mismatch_ctx_t c;
  memset(&c, 0, sizeof c);
  trun(4, &cfg, mismatch_rank, &c);
  for (int r = 0; r < 4; r++) ASSERT_EQ(c.res[r], TUTTI_ERR_INVALID_USAGE);
}

/* ---- Bad arguments ---------------------------------------------------------------------- */

TEST(init_threads_bad_arguments) {
  tutti_comm_t comms[2];
  ASSERT_EQ(tutti_comm_init_threads(NULL, 2), TUTTI_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(tutti_comm_init_threads(comms, 0), TUTTI_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(tutti_comm_init_threads(comms, -3), TUTTI_ERR_INVALID_ARGUMENT);
}

/* ---- Non-blocking calls: the progress threads drive the queues -------------------------- */

static atomic_int nb_bad;

static void nb_rank(tutti_comm_t comm, int rank, int n, void *arg) {
  (void)arg;
  enum { K = 8, COUNT = 300 };
  static _Thread_local float in[K][COUNT], out[K][COUNT];
  tutti_request_t req[K];
  for (int k = 0; k < K; k++) {
    for (int i = 0; i < COUNT; i++) in[k][i] = (float)(rank + k + i % 5);
    if (tutti_iallreduce(in[k], out[k], COUNT, TUTTI_FLOAT32, TUTTI_SUM, comm, &req[k]))
      atomic_fetch_add(&nb_bad, 1);
  }
  for (int k = 0; k < K; k++) {
    if (tutti_wait(req[k]) != TUTTI_SUCCESS) atomic_fetch_add(&nb_bad, 1);
    tutti_request_free(req[k]);
    for (int i = 0; i < COUNT; i++)
      if (out[k][i] != (float)(n * (n - 1) / 2 + n * (k + i % 5))) {
        atomic_fetch_add(&nb_bad, 1);
        break;
      }
  }
}

TEST(nonblocking_over_threads) {
  tutti_config_t cfg;
  trun_config(&cfg);
  trun(5, &cfg, nb_rank, NULL);
  ASSERT_EQ(atomic_load(&nb_bad), 0);
}

int main(int argc, char **argv) { return harness_main(argc, argv); }
