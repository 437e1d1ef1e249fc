/*
 * Algorithms: each is a row of the table in algo.c, with one function per collective it
 * implements, written against transport.h and the kernels only.
 */
#ifndef TUTTI_ALGO_H
#define TUTTI_ALGO_H

#include <string.h>

#include "core/colls.h"
#include "core/internal.h"
#include "transport/transport.h"

/*
 * One call, checked by coll.c. count is per rank as in the API (sendcount for all-gather,
 * recvcount for reduce-scatter). Which fields the other kinds use, all counts and
 * displacements in elements, arrays of nranks entries:
 *   ALLGATHERV      count = sendcount, counts = recvcounts, displs
 *   REDUCE_SCATTERV counts = recvcounts, displs = their prefix sums (filled by coll.c)
 *   GATHERV         count = sendcount, counts = recvcounts, displs, root (arrays: root only)
 *   SCATTERV        counts = sendcounts, displs, count = recvcount, root (arrays: root only)
 *   ALLTOALLV       counts = sendcounts, displs = sdispls, rcounts, rdispls
 *   SEND / RECV     sendbuf / recvbuf, count, peer
 * The arrays are owned by the caller of the algorithm for the whole call. For v-kinds,
 * `count` of the whole operation is not meaningful; coll.c skips no-op calls itself.
 */
typedef struct tutti_coll_args {
  tutti_coll_t coll;
  const void *sendbuf;
  void *recvbuf;
  size_t count;
  tutti_dtype_t dtype;
  tutti_op_t op; /* always a built-in operation here: coll.c turns premul-sum into SUM */
  int root;
  size_t esize;
  int64_t deadline;
  const size_t *counts;
  const size_t *displs;
  const size_t *rcounts;
  const size_t *rdispls;
  int peer;                 /* send/recv: the peer, or TUTTI_ANY_SOURCE for a receive */
  int tag;                  /* send/recv: the message tag, or TUTTI_ANY_TAG for a receive */
  tutti_status_t *status;   /* recv: where the matched source and tag go, or NULL */
} tutti_coll_args_t;

typedef tutti_result_t (*tutti_algo_fn)(struct tutti_comm *comm, const tutti_coll_args_t *a);

struct tutti_tune_query;
struct tutti_cost_params;
/* Predicted seconds of a call (algo/tuner.c), negative where there is no model. */
typedef double (*tutti_cost_fn)(const struct tutti_tune_query *q,
                                const struct tutti_cost_params *c);

typedef struct tutti_algo {
  const char *name;
  const char *desc;
  tutti_algo_fn fn[TUTTI_COLL_COUNT]; /* NULL where the algorithm does not apply */
  tutti_cost_fn cost;                 /* NULL: never chosen by the model */
  int needs_cma; /* runs only where comm->cma (every rank on this host, reads allowed) */
  int needs_mbox; /* runs only where the one-shot payload fits a mailbox (tuner.c) */
} tutti_algo_t;

const tutti_algo_t *tutti__algo_table(int *count);
/* The algorithm called name; "auto" and "" give the first entry. NULL if unknown. */
const tutti_algo_t *tutti__algo_find(const char *name);
/* The algorithm comm runs for a (the tuner's pick, tuner.h). */
const tutti_algo_t *tutti__algo_select(struct tutti_comm *comm, const tutti_coll_args_t *a);

/* Algorithm entry points (one file each). */
tutti_result_t tutti__oneshot_allreduce(struct tutti_comm *comm, const tutti_coll_args_t *a);
tutti_result_t tutti__oneshot_reduce(struct tutti_comm *comm, const tutti_coll_args_t *a);
tutti_result_t tutti__oneshot_reduce_scatter(struct tutti_comm *comm, const tutti_coll_args_t *a);
tutti_result_t tutti__oneshot_allgather(struct tutti_comm *comm, const tutti_coll_args_t *a);
tutti_result_t tutti__oneshot_broadcast(struct tutti_comm *comm, const tutti_coll_args_t *a);
tutti_result_t tutti__oneshot_barrier(struct tutti_comm *comm, const tutti_coll_args_t *a);
tutti_result_t tutti__cma_allreduce(struct tutti_comm *comm, const tutti_coll_args_t *a);
tutti_result_t tutti__cma_reduce_scatter(struct tutti_comm *comm, const tutti_coll_args_t *a);
tutti_result_t tutti__cma_allgather(struct tutti_comm *comm, const tutti_coll_args_t *a);
tutti_result_t tutti__cma_broadcast(struct tutti_comm *comm, const tutti_coll_args_t *a);
tutti_result_t tutti__ring_allgather(struct tutti_comm *comm, const tutti_coll_args_t *a);
tutti_result_t tutti__ring_allreduce(struct tutti_comm *comm, const tutti_coll_args_t *a);
tutti_result_t tutti__ring_reduce_scatter(struct tutti_comm *comm, const tutti_coll_args_t *a);
tutti_result_t tutti__chain_broadcast(struct tutti_comm *comm, const tutti_coll_args_t *a);
tutti_result_t tutti__chain_reduce(struct tutti_comm *comm, const tutti_coll_args_t *a);
tutti_result_t tutti__dissemination_barrier(struct tutti_comm *comm, const tutti_coll_args_t *a);
tutti_result_t tutti__ring_allgatherv(struct tutti_comm *comm, const tutti_coll_args_t *a);
tutti_result_t tutti__ring_reduce_scatterv(struct tutti_comm *comm, const tutti_coll_args_t *a);
tutti_result_t tutti__direct_gatherv(struct tutti_comm *comm, const tutti_coll_args_t *a);
tutti_result_t tutti__direct_scatterv(struct tutti_comm *comm, const tutti_coll_args_t *a);
tutti_result_t tutti__pairwise_alltoallv(struct tutti_comm *comm, const tutti_coll_args_t *a);
tutti_result_t tutti__rd_allreduce(struct tutti_comm *comm, const tutti_coll_args_t *a);
tutti_result_t tutti__bruck_allgather(struct tutti_comm *comm, const tutti_coll_args_t *a);
tutti_result_t tutti__rab_allreduce(struct tutti_comm *comm, const tutti_coll_args_t *a);
tutti_result_t tutti__rab_reduce_scatter(struct tutti_comm *comm, const tutti_coll_args_t *a);
tutti_result_t tutti__tree_allreduce(struct tutti_comm *comm, const tutti_coll_args_t *a);
tutti_result_t tutti__tree_broadcast(struct tutti_comm *comm, const tutti_coll_args_t *a);
tutti_result_t tutti__tree_reduce(struct tutti_comm *comm, const tutti_coll_args_t *a);
tutti_result_t tutti__det_allreduce(struct tutti_comm *comm, const tutti_coll_args_t *a);
tutti_result_t tutti__det_reduce_scatter(struct tutti_comm *comm, const tutti_coll_args_t *a);
tutti_result_t tutti__det_reduce_scatterv(struct tutti_comm *comm, const tutti_coll_args_t *a);
tutti_result_t tutti__det_reduce(struct tutti_comm *comm, const tutti_coll_args_t *a);
tutti_result_t tutti__hier_allreduce(struct tutti_comm *comm, const tutti_coll_args_t *a);
tutti_result_t tutti__hier_allgather(struct tutti_comm *comm, const tutti_coll_args_t *a);
tutti_result_t tutti__hier_reduce_scatter(struct tutti_comm *comm, const tutti_coll_args_t *a);
tutti_result_t tutti__hier_reduce(struct tutti_comm *comm, const tutti_coll_args_t *a);
tutti_result_t tutti__hier_broadcast(struct tutti_comm *comm, const tutti_coll_args_t *a);
tutti_result_t tutti__hier_barrier(struct tutti_comm *comm, const tutti_coll_args_t *a);

/* ---- ring.c: ring phases over any ordered group of ranks -------------------------------- */

/* An ordered group of ranks: a ring runs ranks[0] -> ranks[1] -> ... -> ranks[n-1] -> ranks[0]
 * and this rank is ranks[pos]. The flat ring is every rank, host by host (core/topo.h); the
 * hierarchical algorithms run rings over the ranks of one host and over one rank per host. */
typedef struct tutti_group {
  const int *ranks;
  int n;
  int pos;
} tutti_group_t;

/* A run of elements. */
typedef struct tutti_seg {
  size_t off, len;
} tutti_seg_t;

/* Where the group's n blocks lie, in elements from the phase's buffer: the block of position
 * b is block i = perm[b] (perm NULL: i = b), which is
 *   segs set:  the segments segs[seg_first[i] .. seg_first[i + 1]) (seg_first: n + 1 entries;
 *              a block may have none);
 *   lens set:  lens[i] elements at offs[i];
 *   per set:   per elements at i * per;
 *   else:      block i of count split as evenly as possible (tutti__block_range).
 * Blocks never overlap; every rank of the group must describe the same layout. */
typedef struct tutti_ring_layout {
  size_t count;
  size_t per;
  int n;
  const size_t *offs;
  const size_t *lens;
  const int *perm;
  const tutti_seg_t *segs;
  const int *seg_first;
} tutti_ring_layout_t;

/* Ring all-gather over g: on entry w holds this position's block, on return every block.
 * n - 1 steps; each moves one block to the right neighbour in chunks of TUTTI_CHUNK_SIZE. */
tutti_result_t tutti__ring_group_allgather(struct tutti_comm *comm, const tutti_coll_args_t *a,
                                           const tutti_group_t *g, const tutti_ring_layout_t *l,
                                           char *w);
/* Ring reduce-scatter over g: every position's input is `in` (read, at the blocks' places);
 * partial sums go to w at the same places (w may be in), and on return w holds the complete
 * reduction of this position's block (AVG not yet divided). With g->n == 1 nothing moves and
 * nothing is copied. tmp holds one chunk. */
tutti_result_t tutti__ring_group_reduce_scatter(struct tutti_comm *comm,
                                                const tutti_coll_args_t *a,
                                                const tutti_group_t *g,
                                                const tutti_ring_layout_t *l, const char *in,
                                                char *w, char *tmp);

/* ---- fold.c: the non-power-of-two fold of recursive doubling and halving ---------------- */

/* With rem = n - tutti__pow2_floor(n): the even rank of each pair below 2*rem sends the
 * count elements at w to the odd one, which combines them with its own (`own`, count
 * elements) into w, the lower rank's data first; tmp holds count elements. Other ranks do
 * nothing. The even ranks then wait for their partner's result (tutti__fold_out). */
tutti_result_t tutti__fold_in(struct tutti_comm *comm, const tutti_coll_args_t *a, char *w,
                              const char *own, size_t count, char *tmp, int rem);
/* The even rank of each pair below 2*rem receives len bytes from its partner into buf after
 * its fold_in send completed; the odd rank sends them. Other ranks do nothing. */
tutti_result_t tutti__fold_out(struct tutti_comm *comm, const tutti_coll_args_t *a, char *buf,
                               size_t len, int rem);
/* The same with every rank number read as a place in ord's order (ranks host by host,
 * core/topo.h; NULL: the ranks themselves), for algorithms whose result does not depend on
 * which rank sits where: pairs then share a host wherever placement allows. */
struct tutti_topo;
tutti_result_t tutti__fold_in_order(struct tutti_comm *comm, const tutti_coll_args_t *a,
                                    char *w, const char *own, size_t count, char *tmp, int rem,
                                    const struct tutti_topo *ord);
tutti_result_t tutti__fold_out_order(struct tutti_comm *comm, const tutti_coll_args_t *a,
                                     char *buf, size_t len, int rem, const struct tutti_topo *ord);

/* own_exchange.c: the first exchange of an out-of-place all-gather, fused with the copy of
 * this rank's block (a->sendbuf, a->count elements) into `own`, its place in the output:
 * sends it to `to` while receiving rlen bytes from `from` into rbuf, chunk by chunk, each
 * chunk copied into place right after it went into the queue. */
tutti_result_t tutti__own_exchange(struct tutti_comm *comm, const tutti_coll_args_t *a, int to,
                                   char *own, int from, char *rbuf, size_t rlen);

/* memmove unless the two are the same place (in place) or empty. */
static inline void tutti__copy_if_apart(void *dst, const void *src, size_t bytes) {
  if (bytes && dst != src) memmove(dst, src, bytes);
}

/* ---- pipeline.c: bounded windows of outstanding sends ---------------------------------- */

#define TUTTI_SENDQ_SLOTS 8

/* Up to TUTTI_SENDQ_SLOTS sends in flight; posting into a busy slot first waits for the send
 * that used it, so memory tied to a slot can be reused safely once acquired. */
typedef struct tutti_sendq {
  tutti_xfer_t op[TUTTI_SENDQ_SLOTS];
  int used[TUTTI_SENDQ_SLOTS];
  int next;
} tutti_sendq_t;

void tutti__sendq_init(tutti_sendq_t *q);
/* Returns the next slot in *slot once its previous send has completed. */
tutti_result_t tutti__sendq_acquire(struct tutti_comm *comm, tutti_sendq_t *q, int64_t deadline,
                                    int *slot);
/* Posts a send in the slot just acquired. */
tutti_result_t tutti__sendq_post(struct tutti_comm *comm, tutti_sendq_t *q, int slot, int peer,
                                 const void *buf, size_t len);
/* Waits for every send of q. */
tutti_result_t tutti__sendq_drain(struct tutti_comm *comm, tutti_sendq_t *q, int64_t deadline);
/* Blocking receive: post and wait. */
tutti_result_t tutti__recv(struct tutti_comm *comm, int peer, void *buf, size_t len,
                           int64_t deadline);

/* Sends slen bytes to `to` and receives rlen bytes from `from`, both at once; a zero length
 * skips that side (both ends of a pair agree on it). Waits for both. */
tutti_result_t tutti__sendrecv(struct tutti_comm *comm, int to, const void *sbuf, size_t slen,
                               int from, void *rbuf, size_t rlen, int64_t deadline);
/* tutti__sendrecv whose count received elements of a's dtype combine into dst: dst[i] =
 * own[i] op received[i] (received[i] op own[i] where !own_first; dst may be own, not sbuf:
 * the send may still read it). Read where they arrive where from's transport allows it
 * (tutti__irecv_reduce), else received into tmp first (count elements of room). slen 0: a
 * receive only. */
tutti_result_t tutti__sendrecv_reduce(struct tutti_comm *comm, const tutti_coll_args_t *a, int to,
                                      const void *sbuf, size_t slen, int from, void *dst,
                                      const void *own, int own_first, void *tmp, size_t count);

/* The pipelined chunk for a core with l2_bytes of L2 (0: unknown): a quarter of it, the
 * power of two at or below, within 64 KiB .. 1 MiB; `fallback` when l2_bytes is 0. A step of
 * the ring, chain or single-copy reduction keeps about four chunks live (the queue's or the
 * peer's, this rank's input, the output, the next chunk arriving), so a quarter keeps a step
 * in L2; smaller chunks cost a hand-off each. TUTTI_CHUNK_SIZE, when set, wins. */
size_t tutti__chunk_for_cache(size_t l2_bytes, size_t fallback);

/* Elements per pipelined chunk for this element size (at least 1). */
static inline size_t tutti__chunk_elems(const struct tutti_comm *comm, size_t esize) {
  size_t n = comm->cfg.chunk_bytes / esize;
  return n ? n : 1;
}

#endif
