/* The algorithm table and selection. */
#include <string.h>

#include "algo/algo.h"

static const tutti_algo_t algos[] = {
    {"ring",
     "pipelined ring for all-gather, reduce-scatter and all-reduce (reduce-scatter then "
     "all-gather) and their variable-count forms; pipelined chain for broadcast and reduce; "
     "dissemination barrier",
     {[TUTTI_COLL_ALLGATHER] = tutti__ring_allgather,
      [TUTTI_COLL_ALLREDUCE] = tutti__ring_allreduce,
      [TUTTI_COLL_REDUCE_SCATTER] = tutti__ring_reduce_scatter,
      [TUTTI_COLL_BROADCAST] = tutti__chain_broadcast,
      [TUTTI_COLL_REDUCE] = tutti__chain_reduce,
      [TUTTI_COLL_BARRIER] = tutti__dissemination_barrier,
      [TUTTI_COLL_ALLGATHERV] = tutti__ring_allgatherv,
      [TUTTI_COLL_REDUCE_SCATTERV] = tutti__ring_reduce_scatterv},
     0},
    {"cma",
     "ranks of one host read each other's buffers directly (process_vm_readv): all-reduce and "
     "reduce-scatter reduce one slice per rank in rank order, all-gather and broadcast copy "
     "once; needs TUTTI_CMA=1 and the kernel's permission, checked at init",
     {[TUTTI_COLL_ALLREDUCE] = tutti__cma_allreduce,
      [TUTTI_COLL_REDUCE_SCATTER] = tutti__cma_reduce_scatter,
      [TUTTI_COLL_ALLGATHER] = tutti__cma_allgather,
      [TUTTI_COLL_BROADCAST] = tutti__cma_broadcast},
     1},
    {"direct",
     "gather and scatter: the root posts one message with every rank at once",
     {[TUTTI_COLL_GATHERV] = tutti__direct_gatherv,
      [TUTTI_COLL_SCATTERV] = tutti__direct_scatterv},
     0},
    {"pairwise",
     "all-to-all in n-1 steps, each a send to rank+k and a receive from rank-k",
     {[TUTTI_COLL_ALLTOALLV] = tutti__pairwise_alltoallv},
     0},
};

const tutti_algo_t *tutti__algo_table(int *count) {
  *count = (int)(sizeof algos / sizeof algos[0]);
  return algos;
}

const tutti_algo_t *tutti__algo_find(const char *name) {
  if (!name || !*name || !strcmp(name, "auto")) return &algos[0];
  for (size_t i = 0; i < sizeof algos / sizeof algos[0]; i++)
    if (!strcmp(algos[i].name, name)) return &algos[i];
  return NULL;
}

/* Whether algo can run on comm at all (the single-copy ones need every rank on this host and
 * the kernel's permission: the same on every rank, so every rank picks the same). */
static int usable(const struct tutti_comm *comm, const tutti_algo_t *algo, tutti_coll_t coll) {
  return algo->fn[coll] && (!algo->needs_cma || comm->cma);
}

/* Bytes a rank's output holds, the size the choice between algorithms depends on. */
static size_t out_bytes(const struct tutti_comm *comm, const tutti_coll_args_t *a) {
  size_t b = a->count * a->esize;
  return a->coll == TUTTI_COLL_ALLGATHER ? b * (size_t)comm->nranks : b;
}

const tutti_algo_t *tutti__algo_select(const struct tutti_comm *comm, const tutti_coll_args_t *a) {
  if (comm->cfg.algo[0] && strcmp(comm->cfg.algo, "auto")) {
    const tutti_algo_t *forced = tutti__algo_find(comm->cfg.algo);
    if (forced && usable(comm, forced, a->coll)) return forced;
  }
  /* Single copy wins once the message outweighs its three token exchanges. */
  if (usable(comm, &algos[1], a->coll) && out_bytes(comm, a) >= 64 * 1024) return &algos[1];
  for (size_t i = 0; i < sizeof algos / sizeof algos[0]; i++)
    if (algos[i].fn[a->coll]) return &algos[i];
  return NULL;
}

const char *tutti__coll_name(tutti_coll_t coll) {
  static const char *const names[TUTTI_COLL_COUNT] = {
      [TUTTI_COLL_ALLGATHER] = "allgather",
      [TUTTI_COLL_ALLREDUCE] = "allreduce",
      [TUTTI_COLL_REDUCE_SCATTER] = "reduce_scatter",
      [TUTTI_COLL_BROADCAST] = "broadcast",
      [TUTTI_COLL_REDUCE] = "reduce",
      [TUTTI_COLL_BARRIER] = "barrier",
      [TUTTI_COLL_ALLGATHERV] = "allgatherv",
      [TUTTI_COLL_REDUCE_SCATTERV] = "reduce_scatterv",
      [TUTTI_COLL_GATHERV] = "gatherv",
      [TUTTI_COLL_SCATTERV] = "scatterv",
      [TUTTI_COLL_ALLTOALLV] = "alltoallv",
      [TUTTI_COLL_SEND] = "send",
      [TUTTI_COLL_RECV] = "recv"};
  return coll < TUTTI_COLL_COUNT && names[coll] ? names[coll] : "?";
}
