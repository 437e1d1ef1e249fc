/*
 * Pairwise exchange all-to-all: at step k = 1 .. n-1 each rank sends to the rank k to its
 * right and receives from the rank k to its left, so every step is a set of disjoint
 * send/receive pairs and cannot deadlock. Zero counts send nothing; both ends know them.
 */
#include <string.h>

#include "algo/algo.h"
#include "algo/patterns.h"

/*
 * sendcounts[j] (a->counts) elements at sendbuf + sdispls[j] (a->displs) go to rank j and
 * land there at recvbuf + rdispls[i] (a->rdispls), i being this rank; a->rcounts[i] equals
 * what rank i sends here. The buffers do not overlap.
 */
tutti_result_t tutti__pairwise_alltoallv(struct tutti_comm *comm, const tutti_coll_args_t *a) {
  int n = comm->nranks, r = comm->rank;
  size_t es = a->esize;
  const char *sb = a->sendbuf;
  char *rb = a->recvbuf;
  size_t own = a->counts[r] * es;
  if (own) memmove(rb + a->rdispls[r] * es, sb + a->displs[r] * es, own);
  for (int k = 1; k < n; k++) {
    int to = tutti__pairwise_to(r, k, n), from = tutti__pairwise_from(r, k, n);
    size_t slen = a->counts[to] * es, rlen = a->rcounts[from] * es;
    TRY(tutti__sendrecv(comm, to, slen ? sb + a->displs[to] * es : NULL, slen, from,
                        rlen ? rb + a->rdispls[from] * es : NULL, rlen, a->deadline));
  }
  return TUTTI_SUCCESS;
}
