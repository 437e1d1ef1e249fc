/*
 * Single-copy all-gather and broadcast for ranks of one host (cma.h): the data moves once,
 * straight from the buffer of the rank that has it into the buffer of the rank that needs it.
 *
 *   all-gather: every rank reads every other rank's input into its output.
 *   broadcast:  the non-roots read the root's buffer.
 *
 * A rank returns only when no peer will read its buffers any more (a final token from each
 * reader), since the user may reuse them at once.
 */
#include <string.h>

#include "algo/cma.h"
#include "algo/patterns.h"

tutti_result_t tutti__cma_allgather(struct tutti_comm *comm, const tutti_coll_args_t *a) {
  int n = comm->nranks, me = comm->rank;
  size_t bytes = a->count * a->esize;
  cma_desc_t *d;
  TRY(tutti__cma_exchange_descs(comm, a, &d));
  char *out = a->recvbuf;
  if (a->sendbuf != out + (size_t)me * bytes) memcpy(out + (size_t)me * bytes, a->sendbuf, bytes);
  for (int k = 1; k < n; k++) {
    int from = tutti__mod(me + k, n);
    TRY(tutti__cma_read(comm, from, out + (size_t)from * bytes, d[from].send, bytes));
  }
  return tutti__cma_barrier_tokens(comm, a->deadline);
}

tutti_result_t tutti__cma_broadcast(struct tutti_comm *comm, const tutti_coll_args_t *a) {
  int n = comm->nranks, me = comm->rank, root = a->root;
  size_t bytes = a->count * a->esize;
  tutti_xfer_t *ops = comm->cma_ops;
  uint64_t token = comm->seq;
  if (me == root) {
    cma_desc_t mine = {(uint64_t)(uintptr_t)a->sendbuf, 0};
    if (a->sendbuf != a->recvbuf) memcpy(a->recvbuf, a->sendbuf, bytes);
    for (int k = 1; k < n; k++) {
      int to = tutti__mod(me + k, n);
      TRY(tutti__irecv(comm, &ops[2 * k], to, &comm->cma_tokens[to], sizeof token));
      TRY(tutti__isend(comm, &ops[2 * k + 1], to, &mine, sizeof mine));
    }
    /* The root's buffer is read until every rank says it is done. */
    for (int k = 1; k < n; k++) {
      TRY(tutti__wait(comm, &ops[2 * k + 1], a->deadline));
      TRY(tutti__wait(comm, &ops[2 * k], a->deadline));
    }
    return TUTTI_SUCCESS;
  }
  cma_desc_t rd;
  TRY(tutti__recv(comm, root, &rd, sizeof rd, a->deadline));
  TRY(tutti__cma_read(comm, root, a->recvbuf, rd.send, bytes));
  TRY(tutti__isend(comm, &ops[0], root, &token, sizeof token));
  return tutti__wait(comm, &ops[0], a->deadline);
}
