/*
 * Direct gather and scatter: the root exchanges one message with every other rank, all
 * posted at once, so the transfers proceed in parallel and no rank waits on another's turn.
 * Zero-length blocks send nothing; both ends know the length, so they agree.
 */
#include <string.h>

#include "algo/algo.h"

/* Posts the root's transfer with every rank that has a non-empty block (its own block is
 * copied locally), then waits for all of them. xs has room for nranks transfers. */
static tutti_result_t root_exchange(struct tutti_comm *comm, const tutti_coll_args_t *a,
                                    int to_root, tutti_xfer_t *xs) {
  int n = comm->nranks, r = comm->rank;
  size_t es = a->esize;
  for (int i = 0; i < n; i++) {
    size_t len = a->counts[i] * es;
    if (i == r || !len) continue;
    if (to_root)
      TRY(tutti__irecv(comm, &xs[i], i, (char *)a->recvbuf + a->displs[i] * es, len));
    else
      TRY(tutti__isend(comm, &xs[i], i, (const char *)a->sendbuf + a->displs[i] * es, len));
  }
  /* The local copy overlaps the transfers; memmove because in place is allowed. */
  size_t own = a->counts[r] * es;
  if (own) {
    char *dst = to_root ? (char *)a->recvbuf + a->displs[r] * es : (char *)a->recvbuf;
    const char *src = to_root ? (const char *)a->sendbuf
                              : (const char *)a->sendbuf + a->displs[r] * es;
    if (dst != src) memmove(dst, src, own);
  }
  for (int i = 0; i < n; i++)
    if (i != r && a->counts[i]) TRY(tutti__wait(comm, &xs[i], a->deadline));
  return TUTTI_SUCCESS;
}

/* A non-root rank's one message to or from the root; nothing when its count is 0. */
static tutti_result_t leaf_exchange(struct tutti_comm *comm, const tutti_coll_args_t *a,
                                    int to_root) {
  size_t len = a->count * a->esize;
  if (!len) return TUTTI_SUCCESS;
  tutti_xfer_t x;
  if (to_root)
    TRY(tutti__isend(comm, &x, a->root, a->sendbuf, len));
  else
    TRY(tutti__irecv(comm, &x, a->root, a->recvbuf, len));
  return tutti__wait(comm, &x, a->deadline);
}

static tutti_result_t direct(struct tutti_comm *comm, const tutti_coll_args_t *a, int to_root) {
  if (comm->rank != a->root) return leaf_exchange(comm, a, to_root);
  tutti_xfer_t *xs;
  TRY(tutti__scratch(comm, (size_t)comm->nranks * sizeof *xs, (void **)&xs));
  return root_exchange(comm, a, to_root, xs);
}

/*
 * Gather: rank i's a->count elements land at the root's recvbuf + displs[i] (counts[i] ==
 * rank i's count). In place at the root when its sendbuf is already there.
 */
tutti_result_t tutti__direct_gatherv(struct tutti_comm *comm, const tutti_coll_args_t *a) {
  return direct(comm, a, 1);
}

/*
 * Scatter: the root's counts[i] elements at sendbuf + displs[i] go to rank i's recvbuf
 * (a->count elements there). In place at the root when its recvbuf is its own block.
 */
tutti_result_t tutti__direct_scatterv(struct tutti_comm *comm, const tutti_coll_args_t *a) {
  return direct(comm, a, 0);
}
