/*
 * What the hierarchical algorithms (hier_*.c) share: the groups and block layouts of their
 * two levels, built from the communicator's topology (core/topo.h).
 *
 * The two levels: the ranks of one host (the local group, ordered by local index), and for
 * each index j below the largest host's size L, one rank per host (the index-j group,
 * ordered by host). Index j of host h is covered by its local rank j % k_h (k_h: the host's
 * size): on a host of L ranks rank j covers index j alone; on a smaller host some ranks cover
 * several indices and so carry the share of the ranks the host lacks. Every rank runs the
 * index groups it covers in increasing j; a group's members all cover j, and each is blocked
 * only by groups of lower j, so the waits cannot form a cycle.
 */
#ifndef TUTTI_HIER_H
#define TUTTI_HIER_H

#include "algo/algo.h"
#include "core/topo.h"

typedef struct tutti_hier {
  const tutti_topo_t *t;
  int nhosts, max_local; /* H and L */
  int host, local, nlocal; /* this rank's host, local index, and its host's size */
  tutti_group_t local_group;
  int *index_ranks;    /* nhosts: the members of an index group (tutti__hier_index_group) */
  tutti_seg_t *segs;   /* nranks + max_local segments for one layout */
  int *seg_first;      /* nranks + max_local + 1 */
  int *children;       /* max_local + 1: a broadcast's receivers */
  tutti_xfer_t *xfers; /* max(nhosts, max_local): one gather's transfers */
} tutti_hier_t;

/* Fills h for comm; its arrays live in the topology's working memory, allocated on the
 * communicator's first hierarchical call. Fails only when out of memory. */
tutti_result_t tutti__hier_begin(struct tutti_comm *comm, tutti_hier_t *h);

/* The rank that covers index j on host host. */
static inline int tutti__hier_cover(const tutti_hier_t *h, int host, int j) {
  return tutti__topo_rank(h->t, host, j % tutti__topo_nlocal(h->t, host));
}
/* The first index this rank covers; the next is j + h->nlocal, while below h->max_local. */
#define TUTTI_HIER_FOR_INDEX(h, j) for (int j = (h)->local; j < (h)->max_local; j += (h)->nlocal)

/* The index-j group: its members in host order (h->index_ranks), this rank at its host. */
void tutti__hier_index_group(tutti_hier_t *h, int j, tutti_group_t *g);

/* Local layout of slices: count elements cut into L slices (tutti__block_range); local
 * position i's block is the slices it covers. */
void tutti__hier_local_slices(tutti_hier_t *h, size_t count, tutti_ring_layout_t *l);
/* Local layout of rank blocks (per elements at rank * per): local position i's block is the
 * blocks of rank (host g, index j) for each index j that i covers and each host g that has a
 * rank j. Together the positions hold every rank's block once. */
void tutti__hier_local_blocks(tutti_hier_t *h, size_t per, tutti_ring_layout_t *l);
/* The same for part of each rank block: len elements from off within it. */
void tutti__hier_local_block_parts(tutti_hier_t *h, size_t per, size_t off, size_t len,
                                   tutti_ring_layout_t *l);
/* Index-j layout of rank blocks: host g's block is rank (g, j)'s, empty where g has no
 * rank j. */
void tutti__hier_index_blocks(tutti_hier_t *h, int j, size_t per, tutti_ring_layout_t *l);

/* A transfer each way with one peer, and whether each was posted. The pipelined forms
 * (hier_pipe.c, hier_allgather.c, hier_reduce_scatter.c) post their cross-host exchanges
 * as arrays of these, to complete them later while local phases run. */
typedef struct tutti_hier_pair {
  tutti_xfer_t send, recv;
  unsigned char sent, received;
} tutti_hier_pair_t;
/* Completes every posted transfer of the n pairs at x, and marks them not posted. */
tutti_result_t tutti__hier_wait_pairs(struct tutti_comm *comm, tutti_hier_pair_t *x, size_t n,
                                      int64_t deadline);
/* Pieces a pipelined form cuts bytes into: none below TUTTI_HIER_PIECE_MIN, at most
 * TUTTI_HIER_PIECES. Depends on bytes only: every rank cuts alike. */
#define TUTTI_HIER_PIECE_MIN (256 * 1024)
#define TUTTI_HIER_PIECES 8
int tutti__hier_pipe_pieces(size_t bytes);

/* What a reduction does with slice j once its index group has reduce-scattered it (this
 * member's piece of its len elements holds the sum over every rank): all-gather it back, or
 * send the pieces toward a root. */
typedef tutti_result_t (*tutti_hier_slice_fn)(struct tutti_comm *comm, const tutti_coll_args_t *a,
                                              const tutti_group_t *g, char *slice, size_t len,
                                              void *ctx);
/* The first two levels of the hierarchical reductions: a ring reduce-scatter of a->sendbuf
 * into w by slices among the host's ranks, then for each index j this rank covers (in
 * increasing j) a ring reduce-scatter of slice j across hosts, AVG finished on this member's
 * piece, and done(..., ctx) on it. tmp holds one chunk. */
tutti_result_t tutti__hier_reduce_slices(struct tutti_comm *comm, const tutti_coll_args_t *a,
                                         tutti_hier_t *h, char *w, char *tmp,
                                         tutti_hier_slice_fn done, void *ctx);

/* The all-reduce's latency path (hier_small.c): local ranks hand their vector to their
 * host's leader (local rank 0), the leaders exchange their hosts' sums all to all in one
 * network round and each folds them in host order, and the leaders hand the result back.
 * Taken when tutti__hier_small says so: at most TUTTI_HIER_SMALL_BYTES, where each leader
 * sending the whole vector to every other costs less than the ring phases' 2(L-1) + 2(H-1)
 * steps, and at most TUTTI_HIER_SMALL_HOSTS hosts, where H-1 messages per leader stay one
 * round. Depends only on the call's size and the topology: every rank decides alike. */
#define TUTTI_HIER_SMALL_BYTES 4096
#define TUTTI_HIER_SMALL_HOSTS 16
int tutti__hier_small(const tutti_hier_t *h, size_t bytes);
tutti_result_t tutti__hier_small_allreduce(struct tutti_comm *comm, const tutti_coll_args_t *a,
                                           tutti_hier_t *h);

/* The all-reduce's bandwidth path (hier_pipe.c): the vector in tutti__hier_pipe_pieces
 * pieces, each through a local ring reduce-scatter, direct reduce-scatter and all-gather
 * across the hosts (one rank per host per slice), and a local ring all-gather, with piece
 * k's cross-host phase in flight while the local phases of pieces k+1 and k-1 run. */
tutti_result_t tutti__hier_pipe_allreduce(struct tutti_comm *comm, const tutti_coll_args_t *a,
                                          tutti_hier_t *h);

#endif
