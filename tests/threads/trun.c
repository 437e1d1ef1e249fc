/* Thread ranks for tests (trun.h). */
#include "trun.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/tuner.h"
#include "harness.h"
#include "transport/mem.h"

/* Enough for the reference's chunk arrays (ref.c: ~40 KiB) and the library's error paths,
 * with room for a sanitizer's larger frames. */
#define TRUN_STACK ((size_t)1 << 20)

typedef struct trun_rank {
  tutti_comm_t comm;
  int rank, n;
  trun_fn fn;
  void *arg;
} trun_rank_t;

static void *rank_main(void *p) {
  trun_rank_t *r = p;
  r->fn(r->comm, r->rank, r->n, r->arg);
  return NULL;
}

void trun_config(tutti_config_t *cfg) {
  char err[256];
  if (tutti__config_load(cfg, err, sizeof err) != TUTTI_SUCCESS)
    harness_fail(__FILE__, __LINE__, "config: %s", err);
  cfg->chunk_bytes = 64;
  cfg->shm_queue_bytes = 4096;
  cfg->timeout_s = 60;
}

void trun(int n, const tutti_config_t *cfg, trun_fn fn, void *arg) {
  tutti_comm_t *comms = calloc((size_t)n, sizeof *comms);
  trun_rank_t *ranks = calloc((size_t)n, sizeof *ranks);
  pthread_t *threads = calloc((size_t)n, sizeof *threads);
  if (!comms || !ranks || !threads) harness_fail(__FILE__, __LINE__, "out of memory");
  tutti_result_t res = tutti__comm_init_threads_cfg(comms, n, cfg);
  if (res != TUTTI_SUCCESS)
    harness_fail(__FILE__, __LINE__, "tutti_comm_init_threads(%d): %s", n,
                 tutti_result_string(res));
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, TRUN_STACK);
  for (int r = 0; r < n; r++) {
    ranks[r] = (trun_rank_t){comms[r], r, n, fn, arg};
    if (pthread_create(&threads[r], &attr, rank_main, &ranks[r]) != 0)
      harness_fail(__FILE__, __LINE__, "cannot start thread %d of %d", r, n);
  }
  pthread_attr_destroy(&attr);
  for (int r = 0; r < n; r++) pthread_join(threads[r], NULL);
  for (int r = 0; r < n; r++) tutti_comm_destroy(comms[r]);
  free(threads);
  free(ranks);
  free(comms);
}

int trun_force(tutti_comm_t comm, const tutti_algo_t *a, tutti_coll_t coll, size_t count,
               size_t esize) {
  if (!a->fn[coll]) return 0;
  tutti_coll_args_t args = {.coll = coll, .count = count, .esize = esize};
  tutti_tune_query_t q;
  tutti_pick_why_t why;
  tutti__tune_query(comm, &args, &q);
  if (tutti__tune_pick(&q, NULL, 0, a->name, &why) != a || why != TUTTI_PICK_FORCED) return 0;
  snprintf(comm->cfg.algo, sizeof comm->cfg.algo, "%s", a->name);
  memset(comm->pick_cache, 0, sizeof comm->pick_cache);
  return 1;
}
