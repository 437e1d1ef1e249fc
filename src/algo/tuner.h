/*
 * The tuner: picks the algorithm of each collective call from an alpha-beta cost model, unless
 * TUTTI_TUNE or TUTTI_ALGO say otherwise. Its inputs are the same on every rank (collective,
 * total bytes, number of ranks, the hosts and ranks per host, the transport setting and the
 * chunk size), so every rank picks the same algorithm without talking to the others.
 */
#ifndef TUTTI_TUNER_H
#define TUTTI_TUNER_H

#include "algo/algo.h"
#include "tune/model.h"

/* Per-message latency and per-byte costs of one transport, in seconds. */
typedef struct tutti_cost_params {
  const char *transport;
  double alpha;       /* one message, start to end, nothing in it */
  double beta_copy;   /* one byte moved to a peer */
  double beta_reduce; /* one byte combined by a reduction kernel */
  /* The part of alpha that is a wake-up (ranks outnumber CPUs, else 0): a rank waits once
   * for a round of messages posted at once, not once per message (tuner.c, rounds_cost). */
  double wake;
  /* One byte moved to a peer that combines it where it arrives (tutti__sendrecv_reduce: the
   * ring's, the chain's and Rabenseifner's reductions): over a same-host queue, copied once,
   * into the queue; over the network, beta_copy. */
  double beta_in;
} tutti_cost_params_t;

/* The fallback parameters of the local link class (network 0) or the network one (network
 * 1), from the table in tuner.c: what the
 * model uses where nothing was measured. */
const tutti_cost_params_t *tutti__cost_params(int network);

/* The parameters of a link class derived from model m (NULL: the fallbacks) for a call whose
 * ranks each touch footprint bytes: in-cache bandwidths while that fits in L2, memory ones
 * above. Each quantity m lacks (0) keeps its fallback. */
void tutti__model_params(const tutti_model_t *m, int network, size_t footprint,
                         tutti_cost_params_t *out);

/* Bytes of a call as nccl-tests (and tutti-bench and TUTTI_TUNE) count them: the whole vector
 * of all-reduce, broadcast and reduce; the gathered result of all-gather; the input of
 * reduce-scatter. */
size_t tutti__tune_bytes(tutti_coll_t coll, size_t count, size_t esize, int nranks);

/* Everything a pick depends on. */
typedef struct tutti_tune_query {
  tutti_coll_t coll;
  size_t bytes;       /* tutti__tune_bytes */
  int nranks;
  int one_host;       /* every rank on one host */
  int network;        /* the data moves over the network link class (another host, or a
                       * network transport forced) */
  size_t chunk_bytes; /* TUTTI_CHUNK_SIZE */
  int cma;            /* single-copy reads between all ranks work (comm->cma) */
  size_t mbox_bytes;  /* one-shot mailbox capacity (tutti__mbox_capacity), 0: none */
  const tutti_model_t *model; /* the communicator's (comm->cfg.model); NULL: the fallbacks */
  int nhosts;         /* hosts (core/topo.h); 0 or 1: one host */
  int max_local;      /* ranks on the most crowded host */
} tutti_tune_query_t;

/* The query of comm for a call. */
void tutti__tune_query(const struct tutti_comm *comm, const tutti_coll_args_t *a,
                       tutti_tune_query_t *q);

/* The model's time in seconds for algo to run q, or a negative number when it has no model
 * for q's collective (or does not implement it). */
double tutti__tune_predict(const tutti_algo_t *algo, const tutti_tune_query_t *q);

/* Why a pick was made. */
typedef enum {
  TUTTI_PICK_TUNE,
  TUTTI_PICK_FORCED,
  TUTTI_PICK_MODEL,
  TUTTI_PICK_ONLY,
  TUTTI_PICK_FILE /* a rule of TUTTI_TUNE_FILE */
} tutti_pick_why_t;

/* The bytes one rank posts in its mailbox for a one-shot q. */
size_t tutti__oneshot_payload(const tutti_tune_query_t *q);

/* The algorithm for q, among those that can run there (single-copy ones only where q->cma,
 * one-shot ones only where the payload fits a mailbox):
 * the first TUTTI_TUNE rule that matches, else TUTTI_ALGO (forced, when
 * not "auto" and it implements the collective), else the first rule of the tuning file
 * (q->model) that matches, else the cheapest by the model (ties: the
 * first in the table), else the first algorithm that implements the collective. NULL when none
 * does. why may be NULL. */
const tutti_algo_t *tutti__tune_pick(const tutti_tune_query_t *q, const tutti_tune_rule_t *rules,
                                     int nrules, const char *forced, tutti_pick_why_t *why);

/* Cost functions referenced by the algorithm table (tutti_algo_t.cost). */
double tutti__cost_ring(const tutti_tune_query_t *q, const tutti_cost_params_t *c);
double tutti__cost_rd(const tutti_tune_query_t *q, const tutti_cost_params_t *c);
double tutti__cost_rab(const tutti_tune_query_t *q, const tutti_cost_params_t *c);
double tutti__cost_tree(const tutti_tune_query_t *q, const tutti_cost_params_t *c);
double tutti__cost_det(const tutti_tune_query_t *q, const tutti_cost_params_t *c);
double tutti__cost_oneshot(const tutti_tune_query_t *q, const tutti_cost_params_t *c);
double tutti__cost_cma(const tutti_tune_query_t *q, const tutti_cost_params_t *c);
double tutti__cost_hier(const tutti_tune_query_t *q, const tutti_cost_params_t *c);

/* The CMA all-reduce reads every peer's whole input (one-shot, one round fewer) while the
 * bytes it reads from peers stay under this; above, each rank reduces a slice. */
#define TUTTI_CMA_ONE_SHOT_BYTES ((size_t)128 << 10)
static inline int tutti__cma_one_shot(int nranks, size_t bytes) {
  return (size_t)(nranks - 1) * bytes <= TUTTI_CMA_ONE_SHOT_BYTES;
}

#endif
