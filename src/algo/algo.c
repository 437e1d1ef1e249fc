/* The algorithm table and selection. */
#include <string.h>

#include "algo/algo.h"
#include "algo/tuner.h"
#include "core/internal.h"
#include "tune/online.h"

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
     tutti__cost_ring, 0, 0},
    {"cma",
     "ranks of one host read each other's buffers directly (process_vm_readv): all-reduce and "
     "reduce-scatter reduce one slice per rank in rank order, all-gather copies once, "
     "broadcast splits each copy between the root (process_vm_writev) and the receiver; "
     "needs TUTTI_CMA=1 and the kernel's permission, checked at init",
     {[TUTTI_COLL_ALLREDUCE] = tutti__cma_allreduce,
      [TUTTI_COLL_REDUCE_SCATTER] = tutti__cma_reduce_scatter,
      [TUTTI_COLL_ALLGATHER] = tutti__cma_allgather,
      [TUTTI_COLL_BROADCAST] = tutti__cma_broadcast},
     tutti__cost_cma, 1, 0},
    {"oneshot",
     "small messages between ranks of one host: every rank posts its input in its shared "
     "mailbox and reads its peers' in place, one step; reductions fold in rank order; "
     "broadcasts of any size, in mailbox-sized pieces",
     {[TUTTI_COLL_ALLREDUCE] = tutti__oneshot_allreduce,
      [TUTTI_COLL_REDUCE_SCATTER] = tutti__oneshot_reduce_scatter,
      [TUTTI_COLL_ALLGATHER] = tutti__oneshot_allgather,
      [TUTTI_COLL_BROADCAST] = tutti__oneshot_broadcast,
      [TUTTI_COLL_REDUCE] = tutti__oneshot_reduce,
      [TUTTI_COLL_BARRIER] = tutti__oneshot_barrier},
     tutti__cost_oneshot, 0, 1},
    {"direct",
     "gather and scatter: the root posts one message with every rank at once",
     {[TUTTI_COLL_GATHERV] = tutti__direct_gatherv,
      [TUTTI_COLL_SCATTERV] = tutti__direct_scatterv},
     NULL, 0, 0},
    {"recursive_doubling",
     "latency-optimal, for small messages: recursive-doubling all-reduce (log2 n exchanges of "
     "the whole vector; non-power-of-two n by folding pairs) and Bruck all-gather (ceil(log2 "
     "n) steps, any n)",
     {[TUTTI_COLL_ALLREDUCE] = tutti__rd_allreduce,
      [TUTTI_COLL_ALLGATHER] = tutti__bruck_allgather},
     tutti__cost_rd, 0, 0},
    {"rabenseifner",
     "halving-doubling: reduce-scatter by recursive halving, then (all-reduce) all-gather by "
     "recursive doubling; 2 log2 n messages, bandwidth like the ring; non-power-of-two n by "
     "folding pairs",
     {[TUTTI_COLL_ALLREDUCE] = tutti__rab_allreduce,
      [TUTTI_COLL_REDUCE_SCATTER] = tutti__rab_reduce_scatter},
     tutti__cost_rab, 0, 0},
    {"tree",
     "binary trees, pipelined in chunks: NCCL-style double binary tree for all-reduce (each "
     "tree reduces and broadcasts half the data), one tree for broadcast and reduce",
     {[TUTTI_COLL_ALLREDUCE] = tutti__tree_allreduce,
      [TUTTI_COLL_BROADCAST] = tutti__tree_broadcast,
      [TUTTI_COLL_REDUCE] = tutti__tree_reduce},
     tutti__cost_tree, 0, 0},
    {"deterministic",
     "rank-order reductions (TUTTI_DETERMINISTIC=1 runs it for every reduction): each block's "
     "owner folds all ranks' pieces in rank order, then copies the blocks out",
     {[TUTTI_COLL_ALLREDUCE] = tutti__det_allreduce,
      [TUTTI_COLL_REDUCE_SCATTER] = tutti__det_reduce_scatter,
      [TUTTI_COLL_REDUCE_SCATTERV] = tutti__det_reduce_scatterv,
      [TUTTI_COLL_REDUCE] = tutti__det_reduce},
     tutti__cost_det, 0, 0},
    {"hier",
     "hierarchical, for ranks on several hosts: the ranks of each host reduce-scatter, then "
     "one rank per host for each local index works across the hosts (all local ranks at "
     "once), then each host all-gathers (all-reduce; the same split for all-gather, "
     "reduce-scatter and reduce); broadcast and barrier as a chain or dissemination among "
     "the hosts' leaders, which serve their own hosts",
     {[TUTTI_COLL_ALLREDUCE] = tutti__hier_allreduce,
      [TUTTI_COLL_ALLGATHER] = tutti__hier_allgather,
      [TUTTI_COLL_REDUCE_SCATTER] = tutti__hier_reduce_scatter,
      [TUTTI_COLL_REDUCE] = tutti__hier_reduce,
      [TUTTI_COLL_BROADCAST] = tutti__hier_broadcast,
      [TUTTI_COLL_BARRIER] = tutti__hier_barrier},
     tutti__cost_hier, 0, 0},
    {"pairwise",
     "all-to-all in n-1 steps, each a send to rank+k and a receive from rank-k",
     {[TUTTI_COLL_ALLTOALLV] = tutti__pairwise_alltoallv},
     NULL, 0, 0},
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

const tutti_algo_t *tutti__algo_select(struct tutti_comm *comm, const tutti_coll_args_t *a) {
  /* Determinism is a promise about results, so it outranks every performance override. */
  if (comm->cfg.deterministic) {
    const tutti_algo_t *det = tutti__algo_find("deterministic");
    if (det->fn[a->coll]) return det;
  }
  size_t bytes = tutti__tune_bytes(a->coll, a->count, a->esize, comm->nranks);
  __typeof__(&comm->pick_cache[0]) pc = &comm->pick_cache[a->coll];
  if (pc->algo && pc->bytes == bytes) {
    tutti_online_slot_t *s = pc->online;
    /* The slot may have gone to another size since (32 sizes, then round-robin). */
    if (!s || s->coll != (int)a->coll || s->bytes != bytes || !tutti__online_tick(s))
      return pc->algo;
  }
  tutti_tune_query_t q;
  tutti__tune_query(comm, a, &q);
  tutti_pick_why_t why;
  const tutti_algo_t *pick = tutti__tune_pick(&q, comm->cfg.tune, comm->cfg.ntune,
                                              comm->cfg.algo, &why);
  tutti_online_slot_t *settled_slot = NULL;
  if (tutti__online_applies(comm->cfg.tune_online, (int)why, (int)a->coll, bytes)) {
    int settled;
    int reg = tutti__online_registered(comm, a->sendbuf, a->recvbuf);
    pick = tutti__online_pick(comm, &q, pick, reg, &settled);
    /* A trial or re-check: the next call may run another candidate (a re-check's calls
     * reach here through the cached slot's tick). */
    if (!settled) return pick;
    settled_slot = tutti__online_settled(comm, (int)a->coll, bytes);
  }
  pc->online = settled_slot;
  pc->bytes = bytes;
  pc->algo = pick;
  return pick;
}

